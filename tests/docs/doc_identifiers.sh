#!/usr/bin/env bash
# Docs that stay true: every code name that docs/*.md, README.md and the comments of the
# headers mention must still be in the code. Usage: doc_identifiers.sh SOURCE_DIR
#
# What counts as a code name (anything else is not checked: prose, flags, paths, JSON keys,
# environment variables, shell commands):
#   - a qualified name, `Catalog::open`, `engine::place_of(text)`: the code spells it
#     `Catalog::open`, or `open` is a word of a source that declares `Catalog` (class,
#     struct, enum, using, namespace). Names in std:: are not checked;
#   - a call, `open_frame()`, `ReadFile.submit(read)`: a name directly followed by "("
#     (not "(s)", "(es)" or a number, as in "flock(2)"); it must be a word of some source.
#     Upper-case names (`CRC32C(...)`, `LOCATE(10)`) are notation or macros, not checked;
#   - a CamelCase type alone in backticks, `StorageCaps`: a word of some source.
# Docs (README.md, docs/**/*.md) give names in backticks or in fenced blocks (diagrams,
# examples); the comments of every header (*.h) may give them without backticks.
# "Source" is every *.h, *.cc, *.c, *.cpp, *.sh, CMakeLists.txt and CMakePresets.json under
# SOURCE_DIR (build*/, .git and tests/docs left out) with its comments removed, so a name
# that only a comment still mentions counts as gone. Other projects' names that the docs
# mention and the code does not use are listed in external_identifiers.txt, one a line.
# Prints each stale name with the file and line that mention it; exits 1 if there is one.
set -euo pipefail
root=$(cd "${1:?usage: doc_identifiers.sh SOURCE_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
cd "$root"
mapfile -d '' sources < <(find . \( -name .git -o -name 'build*' -o -path ./tests/docs \) -prune \
  -o -type f \( -name '*.h' -o -name '*.cc' -o -name '*.c' -o -name '*.cpp' -o -name '*.sh' \
  -o -name CMakeLists.txt -o -name CMakePresets.json \) -printf '%P\0' | sort -z)
mapfile -d '' docs < <(find README.md docs -name '*.md' -print0 | sort -z)
mapfile -d '' headers < <(find . \( -name .git -o -name 'build*' \) -prune -o -name '*.h' \
  -printf '%P\0' | sort -z)
export SB_ALLOW=$here/external_identifiers.txt SB_NSOURCES=${#sources[@]} SB_NDOCS=${#docs[@]}
exec perl - "${sources[@]}" "${docs[@]}" "${headers[@]}" <<'PERL'
use strict;
use warnings;

my ($nsources, $ndocs) = ($ENV{SB_NSOURCES}, $ENV{SB_NDOCS});
my @sources = @ARGV[0 .. $nsources - 1];
my @docs = @ARGV[$nsources .. $nsources + $ndocs - 1];
my @headers = @ARGV[$nsources + $ndocs .. $#ARGV];

sub slurp {
  open(my $f, '<', $_[0]) or die "doc_identifiers: unable to read '$_[0]': $!\n";
  local $/;
  return <$f>;
}

# Code without its comments (string literals kept; a comment becomes a space).
my $string = qr/"(?:\\.|[^"\\\n])*"|(?<![\w'])'(?:\\.|[^'\\\n])'/;
sub code_of {
  my ($path, $text) = @_;
  if ($path =~ /\.(?:h|cc|c|cpp)$/) {
    $text =~ s{($string)|//[^\n]*|/\*.*?\*/}{defined $1 ? $1 : ' '}gse;
  } else {
    $text =~ s/(^|\s)#[^\n]*/$1/g;
  }
  return $text;
}

my %in;         # word => { source index => 1 }
my %declares;   # type or namespace => { index of a source that declares it => 1 }
my %qualified;  # A::b as the code spells it => 1
for my $i (0 .. $#sources) {
  my $code = code_of($sources[$i], slurp($sources[$i]));
  $in{$_}{$i} = 1 for $code =~ /\b([A-Za-z_]\w*)\b/g;
  $declares{$_}{$i} = 1
    for $code =~ /\b(?:class|struct|union|enum(?:\s+class)?|using)\s+(?:\[\[\w+\]\]\s*)?(\w+)/g;
  $declares{$_}{$i} = 1 for map { split /::/ } $code =~ /\bnamespace\s+([\w:]+)/g;
  $qualified{$_} = 1 for $code =~ /\b((?:\w+::)+~?\w+)/g;
}

my %allowed;
for (split /\n/, slurp($ENV{SB_ALLOW})) {
  s/#.*//; s/^\s+|\s+$//g;
  $allowed{$_} = 1 if length;
}

# Why `name` is stale, or undef when the code still has it.
sub stale {
  my ($name) = @_;
  my @parts = split /::/, $name;
  my $last = $parts[-1];
  return undef if $allowed{$name} || $parts[0] eq 'std';
  return $in{$last} ? undef : "no source has '$last'" if @parts == 1;
  my $owner = $parts[-2];
  return undef if $qualified{"${owner}::$last"};
  return undef if grep { $declares{$owner}{$_} } keys %{$in{$last} || {}};
  return "no source spells '${owner}::$last' or declares '$owner' and has '$last'";
}

# The code names in `text`: qualified names and calls; `alone` also takes a CamelCase word.
sub names_in {
  my ($text, $alone) = @_;
  my @names;
  while ($text =~ /(?<![\w\$\-])((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)(?=(\((?!e?s\)|\d+\))|::|))/g) {
    my ($name, $after) = ($1, $2);
    next if $name !~ /[a-z]/ && $name !~ /::/;  # LOCATE(10), CRC32C(...): notation, macros
    push @names, $name if $name =~ /::/ || $after eq '(';
  }
  push @names, $text if $alone && $text =~ /^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$/;
  return @names;
}

my (%checked, @found);
my $mentions = 0;
sub check {
  my ($where, @names) = @_;
  for my $name (@names) {
    $checked{$name} = 1;
    $mentions++;
    my $why = stale($name);
    push @found, "$where: '$name': $why" if defined $why;
  }
}

for my $doc (@docs) {
  my ($n, $fenced) = (0, 0);
  for my $line (split /\n/, slurp($doc)) {
    $n++;
    if ($line =~ /^\s*```/) { $fenced = !$fenced; next; }
    if ($fenced) { check("$doc:$n", names_in($line, 0)); next; }
    check("$doc:$n", names_in($1, 1)) while $line =~ /`([^`]+)`/g;
  }
}

for my $header (@headers) {
  my $text = slurp($header);
  while ($text =~ m{$string|//([^\n]*)|/\*(.*?)\*/}gs) {
    my $comment = defined $1 ? $1 : $2;
    next unless defined $comment;
    my $n = 1 + (substr($text, 0, $-[0]) =~ tr/\n//);
    for my $line (split /\n/, $comment) {
      (my $plain = $line) =~ s/`[^`]*`/ /g;
      check("$header:$n", names_in($plain, 0));
      check("$header:$n", names_in($1, 1)) while $line =~ /`([^`]+)`/g;
      $n++;
    }
  }
}

printf "doc_identifiers: %d code names (%d mentions) in %d docs and %d headers checked "
  . "against %d sources\n", scalar(keys %checked), $mentions, scalar(@docs), scalar(@headers),
  scalar(@sources);
if (@found) {
  print STDERR "doc_identifiers: names that the code no longer has (reword the text, or list\n",
               "  another project's API in tests/docs/external_identifiers.txt):\n";
  print STDERR "  $_\n" for @found;
  exit 1;
}
PERL
