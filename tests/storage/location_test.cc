// Location parsing and joining (see location.h).
#include "storage/location.h"

#include "backends/nfs/url.h"
#include "engine/wiring/backends.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace stripeback::storage {

// Failed comparisons show the spelling.
void PrintTo(const Location& l, std::ostream* os) {
  *os << (l.scheme.empty() ? std::string("local") : l.scheme) << " '" << l.str() << "'";
}

namespace {

using Strings = std::vector<std::string>;

// The built-in backends' grammars (nfs, tape) are what these tests read.
const bool kRegistered = (engine::register_builtin_backends(), true);

// The backends' names as Location::scheme holds them.
namespace Scheme {
const std::string local, nfs = "nfs", tape = "tape";
}  // namespace Scheme

// The servers of a location: an NFS location's list, a drive's address.
Strings servers(const Location& l) {
  if (l.scheme == "nfs") return nfs::servers_of(l);
  return l.authority.empty() ? Strings{} : Strings{l.authority};
}
// The server for a thread that picks the i-th (round robin over the servers).
std::string server(const Location& l, size_t i) {
  Strings all = servers(l);
  return all[i % all.size()];
}

// The parsed location, or a failed test and an empty Location.
Location parsed(std::string_view text) {
  auto r = Location::parse(text);
  if (!r.has_value()) {
    ADD_FAILURE() << "'" << text << "' did not parse: " << r.error().what;
    return Location{};
  }
  return *r;
}

// parse(text) fails with `code`, and its message quotes the text and contains `part`.
void expect_error(std::string_view text, Errc code, std::string_view part) {
  SCOPED_TRACE("parsing '" + std::string(text) + "'");
  auto r = Location::parse(text);
  ASSERT_FALSE(r.has_value()) << "parsed as '" << r->str() << "'";
  EXPECT_EQ(r.error().code, code) << errc_name(r.error().code) << ": " << r.error().what;
  EXPECT_NE(r.error().what.find(part), std::string::npos)
      << "'" << r.error().what << "' does not say '" << part << "'";
  EXPECT_NE(r.error().what.find("'" + std::string(text) + "'"), std::string::npos)
      << "'" << r.error().what << "' does not quote the text";
}

void expect_invalid(std::string_view text, std::string_view part) {
  expect_error(text, Errc::invalid_argument, part);
}

TEST(LocationLocal, AbsolutePath) {
  Location l = parsed("/var/backups/db");
  EXPECT_EQ(l.scheme, Scheme::local);
  EXPECT_TRUE(l.is_local());
  EXPECT_EQ(l.path, "/var/backups/db");
  EXPECT_TRUE(servers(l).empty());
  EXPECT_TRUE(l.query.empty());
  EXPECT_EQ(l.str(), "/var/backups/db");
}

TEST(LocationLocal, RelativePathStaysRelative) {
  EXPECT_EQ(parsed("relative/dir").path, "relative/dir");
  EXPECT_EQ(parsed("db").path, "db");
  EXPECT_EQ(parsed(".").path, ".");
  EXPECT_EQ(parsed("./x").path, "./x");
  EXPECT_EQ(parsed("../up").path, "../up");
  EXPECT_TRUE(parsed("relative/dir").is_local());
}

TEST(LocationLocal, TrailingSlashesGo) {
  EXPECT_EQ(parsed("/var/backups/").path, "/var/backups");
  EXPECT_EQ(parsed("/var/backups///").path, "/var/backups");
  EXPECT_EQ(parsed("relative/dir/").path, "relative/dir");
  EXPECT_EQ(parsed("./").path, ".");
}

TEST(LocationLocal, SlashRunsBecomeOne) {
  EXPECT_EQ(parsed("//var///backups//db").path, "/var/backups/db");
  EXPECT_EQ(parsed("a//b").path, "a/b");
}

TEST(LocationLocal, RootStaysRoot) {
  EXPECT_EQ(parsed("/").path, "/");
  EXPECT_EQ(parsed("//").path, "/");
  EXPECT_EQ(parsed("///").path, "/");
  EXPECT_EQ(parsed("/").str(), "/");
}

TEST(LocationLocal, ColonsWithoutSchemeSlashesArePaths) {
  for (const char* text : {"a:b", "C:/backups", "file:x", "nfs:/x", "host:/export", "1x://a"}) {
    SCOPED_TRACE(text);
    Location l = parsed(text);
    EXPECT_TRUE(l.is_local());
  }
  EXPECT_EQ(parsed("host:/export").path, "host:/export");
  EXPECT_EQ(parsed("1x://a").path, "1x:/a");
}

TEST(LocationLocal, QuestionMarkAndHashArePartOfTheName) {
  EXPECT_EQ(parsed("/a?b/c#d").path, "/a?b/c#d");
  EXPECT_TRUE(parsed("/a?b").query.empty());
}

TEST(LocationLocal, LocalDoesNotParse) {
  Location l = Location::local("nfs://host/x");
  EXPECT_TRUE(l.is_local());
  EXPECT_EQ(l.path, "nfs:/host/x");  // normalized like a parsed local path
  EXPECT_TRUE(Location::local("tape:x").is_local());
  EXPECT_EQ(Location::local("tape:x").path, "tape:x");
  EXPECT_EQ(Location::local("xyz://a").path, "xyz:/a");
}

TEST(LocationLocal, LocalNormalizesLikeParse) {
  for (const char* text : {"/", "//", "/a//b/", "rel//x/", ".", "/var/backups"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(Location::local(text), parsed(text));
  }
}

// --- has_scheme ----------------------------------------------------------------------------

TEST(HasScheme, UrlsAndTape) {
  for (const char* text : {"nfs://h/x", "nfs://", "tape:/dev/sg0", "tape:iscsi://h/i/0", "tape:",
                           "xyz://a", "ftp://x", "file:///x", "NFS://h/x", "a+b.c-d://x", "s3://b"})
    EXPECT_TRUE(has_scheme(text)) << text;
}

TEST(HasScheme, PathsAreNot) {
  for (const char* text : {"", "/x", "rel", "./nfs://x", "nfs:/x", "nfs:", "tape", "C:\\x", "://x",
                           "1x://a", "a b://c", "/nfs://x"})
    EXPECT_FALSE(has_scheme(text)) << text;
}

TEST(HasScheme, AgreesWithParse) {
  for (const char* text : {"/x", "rel", "nfs://h/x", "tape:/dev/sg0", "nfs:/x", "C:/x"}) {
    auto r = Location::parse(text);
    ASSERT_TRUE(r.has_value()) << text;
    EXPECT_EQ(has_scheme(text), !r->is_local()) << text;
  }
}

// --- nfs -----------------------------------------------------------------------------------

TEST(LocationNfs, OneServer) {
  Location l = parsed("nfs://filer/export/dir");
  EXPECT_EQ(l.scheme, Scheme::nfs);
  EXPECT_FALSE(l.is_local());
  EXPECT_EQ(servers(l), Strings{"filer"});
  EXPECT_EQ(l.path, "/export/dir");
  EXPECT_EQ(l.query, "");
  EXPECT_EQ(l.str(), "nfs://filer/export/dir");
}

TEST(LocationNfs, SeveralServersInOrder) {
  Location l = parsed("nfs://b.example,a.example,10.0.0.7/export");
  EXPECT_EQ(servers(l), (Strings{"b.example", "a.example", "10.0.0.7"}));
  EXPECT_EQ(l.path, "/export");
  EXPECT_EQ(l.str(), "nfs://b.example,a.example,10.0.0.7/export");
}

TEST(LocationNfs, Ports) {
  Location l = parsed("nfs://h1:2049,h2,h3:12049/x");
  EXPECT_EQ(servers(l), (Strings{"h1:2049", "h2", "h3:12049"}));
  EXPECT_EQ(servers(parsed("nfs://h:65535/x")), Strings{"h:65535"});
}

TEST(LocationNfs, Ipv6InBrackets) {
  EXPECT_EQ(servers(parsed("nfs://[::1]:2049/x")), Strings{"[::1]:2049"});
  Location l = parsed("nfs://[fe80::1],[2001:db8::7]:2049,h/x");
  EXPECT_EQ(servers(l), (Strings{"[fe80::1]", "[2001:db8::7]:2049", "h"}));
  EXPECT_EQ(l.path, "/x");
  EXPECT_EQ(servers(parsed("nfs://[::ffff:10.0.0.1]/x")), Strings{"[::ffff:10.0.0.1]"});
}

TEST(LocationNfs, RootPath) {
  EXPECT_EQ(parsed("nfs://h").path, "/");
  EXPECT_EQ(parsed("nfs://h/").path, "/");
  EXPECT_EQ(parsed("nfs://h//").path, "/");
  EXPECT_EQ(parsed("nfs://h").str(), "nfs://h/");
}

TEST(LocationNfs, PathIsNormalized) {
  EXPECT_EQ(parsed("nfs://h//export///dir/").path, "/export/dir");
  EXPECT_EQ(parsed("nfs://h/./export/./dir/.").path, "/export/dir");
  EXPECT_EQ(parsed("nfs://h/export/dir/"), parsed("nfs://h//export/dir"));
}

TEST(LocationNfs, QueryKeptVerbatim) {
  Location l = parsed("nfs://h/export?nfsport=2049&mountport=20048");
  EXPECT_EQ(l.path, "/export");
  EXPECT_EQ(l.query, "nfsport=2049&mountport=20048");
  EXPECT_EQ(l.str(), "nfs://h/export?nfsport=2049&mountport=20048");
  EXPECT_EQ(parsed("nfs://h/x?uid=0&gid=100&version=3").query, "uid=0&gid=100&version=3");
  EXPECT_EQ(parsed("nfs://h/x?&uid=5&&").query, "&uid=5&&");
  EXPECT_EQ(parsed("nfs://h/x?mountport=2&nfsport=1").query, "mountport=2&nfsport=1");
  EXPECT_EQ(parsed("nfs://h/x?nfsport=0&mountport=0").query, "nfsport=0&mountport=0");
}

TEST(LocationNfs, EmptyQueryIsNoQuery) {
  Location l = parsed("nfs://h/x?");
  EXPECT_EQ(l.query, "");
  EXPECT_EQ(l, parsed("nfs://h/x"));
  EXPECT_EQ(l.str(), "nfs://h/x");
}

TEST(LocationNfs, QueryOnTheRoot) {
  Location l = parsed("nfs://h?uid=1");
  EXPECT_EQ(servers(l), Strings{"h"});
  EXPECT_EQ(l.path, "/");
  EXPECT_EQ(l.query, "uid=1");
  EXPECT_EQ(l.str(), "nfs://h/?uid=1");
  EXPECT_EQ(parsed("nfs://h/?uid=1"), l);
}

TEST(LocationNfs, LegacyJoinedQuery) {
  Location l = parsed("nfs://h/dir?nfsport=1&mountport=2/name");
  EXPECT_EQ(servers(l), Strings{"h"});
  EXPECT_EQ(l.path, "/dir/name");
  EXPECT_EQ(l.query, "nfsport=1&mountport=2");
  EXPECT_EQ(l.str(), "nfs://h/dir/name?nfsport=1&mountport=2");
  EXPECT_EQ(l, parsed("nfs://h/dir/name?nfsport=1&mountport=2"));
}

TEST(LocationNfs, LegacyJoinedQuerySeveralComponents) {
  Location l = parsed("nfs://a,b/dir?uid=3/x//y/");
  EXPECT_EQ(servers(l), (Strings{"a", "b"}));
  EXPECT_EQ(l.path, "/dir/x/y");
  EXPECT_EQ(l.query, "uid=3");
  EXPECT_EQ(parsed("nfs://h?uid=3/x").path, "/x");
  EXPECT_EQ(parsed("nfs://h/?uid=3/x").path, "/x");
}

TEST(LocationNfs, LegacyJoinedEmptyQuery) {
  Location l = parsed("nfs://h/dir?/name");
  EXPECT_EQ(l.path, "/dir/name");
  EXPECT_EQ(l.query, "");
}

TEST(LocationNfs, QuestionMarkAfterTheQueryBelongsToThePath) {
  Location l = parsed("nfs://h/dir?uid=1/na?me");
  EXPECT_EQ(l.path, "/dir/na?me");
  EXPECT_EQ(l.query, "uid=1");
}

TEST(LocationNfs, ServerRoundRobin) {
  Location l = parsed("nfs://a,b,c/x");
  EXPECT_EQ(server(l, 0), "a");
  EXPECT_EQ(server(l, 1), "b");
  EXPECT_EQ(server(l, 2), "c");
  EXPECT_EQ(server(l, 3), "a");
  EXPECT_EQ(server(l, 7), "b");
  EXPECT_EQ(server(parsed("nfs://only/x"), 5), "only");
}

// --- tape ----------------------------------------------------------------------------------

TEST(LocationTape, Iscsi) {
  Location l = parsed("tape:iscsi://portal.example:3260/iqn.2026-11.org.example:tape1/0");
  EXPECT_EQ(l.scheme, Scheme::tape);
  EXPECT_FALSE(l.is_local());
  EXPECT_EQ(servers(l), Strings{"iscsi://portal.example:3260/iqn.2026-11.org.example:tape1/0"});
  EXPECT_EQ(l.path, "");
  EXPECT_EQ(l.query, "");
  EXPECT_EQ(l.str(), "tape:iscsi://portal.example:3260/iqn.2026-11.org.example:tape1/0");
}

TEST(LocationTape, IscsiWithoutPortAndIpv6Portal) {
  EXPECT_EQ(servers(parsed("tape:iscsi://10.0.0.5/iqn.x/12")), Strings{"iscsi://10.0.0.5/iqn.x/12"});
  EXPECT_EQ(servers(parsed("tape:iscsi://[::1]:3260/iqn.x/2")),
            Strings{"iscsi://[::1]:3260/iqn.x/2"});
}

TEST(LocationTape, DevicePaths) {
  Location sg = parsed("tape:/dev/sg3");
  EXPECT_EQ(sg.scheme, Scheme::tape);
  EXPECT_EQ(servers(sg), Strings{"/dev/sg3"});
  EXPECT_EQ(sg.path, "");
  EXPECT_EQ(sg.str(), "tape:/dev/sg3");
  EXPECT_EQ(servers(parsed("tape:/dev/nst0")), Strings{"/dev/nst0"});
  EXPECT_EQ(servers(parsed("tape:/dev/tape/by-id/scsi-HP_Ultrium-nst")),
            Strings{"/dev/tape/by-id/scsi-HP_Ultrium-nst"});
  EXPECT_EQ(servers(parsed("tape:/dev//sg1")), Strings{"/dev/sg1"});
}

TEST(LocationTape, JoinedEntry) {
  Location drive = parsed("tape:/dev/sg0");
  Location e = drive.join("users01.dbf");
  EXPECT_EQ(e.scheme, Scheme::tape);
  EXPECT_EQ(servers(e), Strings{"/dev/sg0"});
  EXPECT_EQ(e.path, "/users01.dbf");
  EXPECT_EQ(e.name(), "users01.dbf");
  EXPECT_EQ(e.str(), "tape:/dev/sg0#users01.dbf");
  EXPECT_EQ(parsed(e.str()), e);
  EXPECT_EQ(e.parent(), drive);
}

TEST(LocationTape, ParsedEntry) {
  Location e = parsed("tape:iscsi://h:3260/iqn.x/1#db/users");
  EXPECT_EQ(servers(e), Strings{"iscsi://h:3260/iqn.x/1"});
  EXPECT_EQ(e.path, "/db/users");
  EXPECT_EQ(e.name(), "users");
  EXPECT_EQ(e.parent().path, "/db");
  EXPECT_EQ(e.parent().parent().path, "");
  EXPECT_EQ(e.str(), "tape:iscsi://h:3260/iqn.x/1#db/users");
  EXPECT_EQ(parsed("tape:/dev/sg0#//a//b/").path, "/a/b");
  EXPECT_EQ(parsed("tape:/dev/sg0#a#b").path, "/a#b");
}

TEST(LocationTape, DriveItself) {
  Location d = parsed("tape:/dev/sg0");
  EXPECT_EQ(d.name(), "");
  EXPECT_EQ(d.parent(), d);
  EXPECT_EQ(d.join(""), d);
  EXPECT_EQ(d.join("/"), d);
  EXPECT_EQ(server(d, 0), "/dev/sg0");
  EXPECT_EQ(server(d, 3), "/dev/sg0");
}

// --- join, parent, name --------------------------------------------------------------------

TEST(LocationJoin, Local) {
  EXPECT_EQ(parsed("/a").join("b").path, "/a/b");
  EXPECT_EQ(parsed("/").join("b").path, "/b");
  EXPECT_EQ(parsed("/a").join("b/c").path, "/a/b/c");
  EXPECT_EQ(parsed("/a").join("b//c/").path, "/a/b/c");
  EXPECT_EQ(parsed("/a").join("/b").path, "/a/b");
  EXPECT_EQ(parsed("/a").join(""), parsed("/a"));
  EXPECT_EQ(parsed("/a").join("/"), parsed("/a"));
  EXPECT_EQ(parsed("rel").join("b").path, "rel/b");
  EXPECT_EQ(parsed(".").join("b").path, "./b");
  EXPECT_TRUE(parsed("/a").join("b").is_local());
  EXPECT_EQ(Location::local("").join("b").path, "b");
}

TEST(LocationJoin, NfsKeepsServersAndQuery) {
  Location base = parsed("nfs://a:2049,b/export?nfsport=2049&mountport=20048");
  Location l = base.join("db/users01.dbf");
  EXPECT_EQ(l.scheme, Scheme::nfs);
  EXPECT_EQ(servers(l), (Strings{"a:2049", "b"}));
  EXPECT_EQ(l.path, "/export/db/users01.dbf");
  EXPECT_EQ(l.query, "nfsport=2049&mountport=20048");
  EXPECT_EQ(l.str(), "nfs://a:2049,b/export/db/users01.dbf?nfsport=2049&mountport=20048");
  EXPECT_EQ(parsed(l.str()), l);
}

TEST(LocationJoin, NfsRoot) {
  EXPECT_EQ(parsed("nfs://h").join("x").path, "/x");
  EXPECT_EQ(parsed("nfs://h/").join("x/y").str(), "nfs://h/x/y");
  EXPECT_EQ(parsed("nfs://h/a").join("./b/.").path, "/a/b");
}

TEST(LocationJoin, TwiceEqualsOnce) {
  Location base = parsed("nfs://h/x?uid=1");
  EXPECT_EQ(base.join("a").join("b"), base.join("a/b"));
  Location local = parsed("/x");
  EXPECT_EQ(local.join("a").join("b"), local.join("a/b"));
  Location tape = parsed("tape:/dev/sg0");
  EXPECT_EQ(tape.join("a").join("b"), tape.join("a/b"));
}

TEST(LocationParent, Local) {
  EXPECT_EQ(parsed("/a/b").parent().path, "/a");
  EXPECT_EQ(parsed("/a").parent().path, "/");
  EXPECT_EQ(parsed("/").parent().path, "/");
  EXPECT_EQ(parsed("a/b").parent().path, "a");
  EXPECT_EQ(parsed("a").parent().path, ".");
  EXPECT_EQ(parsed("./a").parent().path, ".");
  EXPECT_EQ(parsed("../a").parent().path, "..");
  EXPECT_EQ(parsed(".").parent().path, "..");
  EXPECT_EQ(parsed("..").parent().path, "../..");
  EXPECT_EQ(parsed("a/..").parent().path, "a/../..");
  EXPECT_TRUE(parsed("/a/b").parent().is_local());
}

TEST(LocationParent, NfsKeepsServersAndQuery) {
  Location l = parsed("nfs://a,b/x/y?uid=1").parent();
  EXPECT_EQ(servers(l), (Strings{"a", "b"}));
  EXPECT_EQ(l.path, "/x");
  EXPECT_EQ(l.query, "uid=1");
  EXPECT_EQ(l.str(), "nfs://a,b/x?uid=1");
  EXPECT_EQ(l.parent().path, "/");
  EXPECT_EQ(l.parent().parent().path, "/");
  EXPECT_EQ(l.parent().query, "uid=1");
}

TEST(LocationParent, UndoesJoin) {
  for (const char* text :
       {"/a", "/", "rel", "nfs://h/x?uid=1", "nfs://h", "tape:/dev/sg0", "tape:/dev/sg0#e"}) {
    SCOPED_TRACE(text);
    Location l = parsed(text);
    EXPECT_EQ(l.join("n").parent(), l);
    EXPECT_EQ(l.join("n").name(), "n");
  }
}

TEST(LocationName, LastComponent) {
  EXPECT_EQ(parsed("/a/b").name(), "b");
  EXPECT_EQ(parsed("/a").name(), "a");
  EXPECT_EQ(parsed("/").name(), "");
  EXPECT_EQ(parsed("a").name(), "a");
  EXPECT_EQ(parsed("a/b/").name(), "b");
  EXPECT_EQ(parsed("nfs://h/x/y?uid=1").name(), "y");
  EXPECT_EQ(parsed("nfs://h").name(), "");
  EXPECT_EQ(parsed("tape:/dev/sg0").name(), "");
  EXPECT_EQ(parsed("tape:/dev/sg0#e").name(), "e");
}

// --- round trips ---------------------------------------------------------------------------

TEST(LocationRoundTrip, CanonicalSpellingsReadBackTheSame) {
  for (const char* text : {"/",
                           "/a",
                           "/var/backups/db",
                           "rel",
                           "rel/x",
                           ".",
                           "..",
                           "./x",
                           "C:/x",
                           "a:b",
                           "/a?b#c",
                           "nfs://h/",
                           "nfs://h/a",
                           "nfs://h:2049/a/b",
                           "nfs://a,b:1,[::1]:2049/x?nfsport=1&mountport=2",
                           "nfs://h/x?uid=1&gid=2",
                           "nfs://h/x?&uid=1&",
                           "nfs://h/?version=3",
                           "nfs://h/dir?uid=1/na?me",
                           "nfs://h/?/a?b",
                           "tape:/dev/sg0",
                           "tape:/dev/nst1",
                           "tape:/dev/sg0#e",
                           "tape:/dev/sg0#a/b",
                           "tape:/dev/sg0#a#b",
                           "tape:iscsi://h:3260/iqn.2026-11.org.example:t/1",
                           "tape:iscsi://[::1]/iqn.x/0#db/users01.dbf"}) {
    SCOPED_TRACE(text);
    Location l = parsed(text);
    EXPECT_EQ(l.str(), text);
    EXPECT_EQ(parsed(l.str()), l);
  }
}

TEST(LocationRoundTrip, OtherSpellingsBecomeCanonical) {
  const std::pair<const char*, const char*> cases[] = {
      {"//a//b/", "/a/b"},
      {"rel/", "rel"},
      {"nfs://h", "nfs://h/"},
      {"nfs://h//x/./y/", "nfs://h/x/y"},
      {"nfs://h/x?", "nfs://h/x"},
      {"nfs://h?uid=1", "nfs://h/?uid=1"},
      {"nfs://h/d?nfsport=1&mountport=2/n", "nfs://h/d/n?nfsport=1&mountport=2"},
      {"nfs://h/d?/n", "nfs://h/d/n"},
      {"tape:/dev//sg0", "tape:/dev/sg0"},
      {"tape:/dev/sg0#/x/", "tape:/dev/sg0#x"},
      {"tape:/dev/sg0#./x", "tape:/dev/sg0#x"},
  };
  for (const auto& [text, canonical] : cases) {
    SCOPED_TRACE(text);
    Location l = parsed(text);
    EXPECT_EQ(l.str(), canonical);
    EXPECT_EQ(parsed(canonical), l);
  }
}

TEST(LocationRoundTrip, JoinedLocations) {
  std::vector<Location> all;
  for (const char* base : {"/", "/a", "rel", "nfs://h", "nfs://a,b:2049/x?nfsport=1&mountport=2",
                           "nfs://[::1]/e?uid=0", "tape:/dev/sg0", "tape:iscsi://h:3260/iqn.x/1"}) {
    Location l = parsed(base);
    for (const char* name : {"n", "a/b", "db/users01.dbf", "with space", "na?me", "x?y/z?w", "h#sh",
                             "a=b&c", "?", "#"})
      all.push_back(l.join(name));
  }
  for (const auto& l : all) {
    SCOPED_TRACE(l.str());
    EXPECT_EQ(parsed(l.str()), l);
    EXPECT_EQ(parsed(l.parent().str()), l.parent());
  }
}

TEST(LocationRoundTrip, QuestionMarkInAnNfsPath) {
  Location l = parsed("nfs://h/dir?nfsport=1&mountport=2").join("na?me");
  EXPECT_EQ(l.path, "/dir/na?me");
  EXPECT_EQ(l.str(), "nfs://h/dir?nfsport=1&mountport=2/na?me");
  EXPECT_EQ(parsed(l.str()), l);

  Location bare = parsed("nfs://h/dir").join("na?me").join("x");
  EXPECT_EQ(bare.path, "/dir/na?me/x");
  EXPECT_EQ(bare.query, "");
  EXPECT_EQ(bare.str(), "nfs://h/dir?/na?me/x");
  EXPECT_EQ(parsed(bare.str()), bare);

  Location top = parsed("nfs://h").join("a?b");
  EXPECT_EQ(top.str(), "nfs://h/?/a?b");
  EXPECT_EQ(parsed(top.str()), top);
}

// --- bad input -----------------------------------------------------------------------------

TEST(LocationErrors, Empty) { expect_invalid("", "empty"); }

TEST(LocationErrors, UnknownScheme) {
  auto r = Location::parse("xyz://a");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_EQ(r.error().what,
            "unsupported location 'xyz://a': unknown scheme 'xyz' (use a path, nfs://host/path, "
            "tape:... or s3://bucket/prefix)");
  expect_invalid("ftp://x", "unknown scheme 'ftp'");
  expect_invalid("file:///x", "unknown scheme 'file'");
  expect_invalid("NFS://h/x", "unknown scheme 'NFS'");
  expect_invalid("s3+tls://bucket/x", "unknown scheme 's3+tls'");
}

TEST(LocationErrors, NfsWithoutServer) {
  expect_invalid("nfs:///x", "no server address");
  expect_invalid("nfs://", "no server address");
  expect_invalid("nfs://?uid=1", "no server address");
}

TEST(LocationErrors, NfsEmptyServerInTheList) {
  expect_invalid("nfs://a,,b/x", "empty server address");
  expect_invalid("nfs://a,/x", "empty server address");
  expect_invalid("nfs://,a/x", "empty server address");
  expect_invalid("nfs://,/x", "empty server address");
}

TEST(LocationErrors, NfsBadServer) {
  expect_invalid("nfs://h:/x", "port '' is not a number");
  expect_invalid("nfs://h:abc/x", "port 'abc' is not a number");
  expect_invalid("nfs://h:0/x", "port '0' is not a number from 1 to 65535");
  expect_invalid("nfs://h:65536/x", "port '65536'");
  expect_invalid("nfs://h:-1/x", "port '-1'");
  expect_invalid("nfs://a,h:2x/x", "server 'h:2x'");
  expect_invalid("nfs://:2049/x", "no host name");
  expect_invalid("nfs://::1/x", "in brackets");
  expect_invalid("nfs://fe80::1:2049/x", "in brackets");
  expect_invalid("nfs://[::1/x", "closing ']'");
  expect_invalid("nfs://[::1]x/x", "expected ':port' after ']'");
  expect_invalid("nfs://[]/x", "not an IPv6 address");
  expect_invalid("nfs://[zz]/x", "not an IPv6 address");
  expect_invalid("nfs://[::1]:0/x", "port '0'");
  expect_invalid("nfs://user@h/x", "user names or passwords");
  expect_invalid("nfs://h h/x", "' ' is not allowed in a host name");
}

TEST(LocationErrors, NfsDotDot) {
  expect_invalid("nfs://h/a/../b", "'..'");
  expect_invalid("nfs://h/a?uid=1/../b", "'..'");
}

TEST(LocationErrors, NfsQuery) {
  expect_invalid("nfs://h/x?foo=1", "unknown option 'foo'");
  expect_invalid("nfs://h/x?uid=1&NFSPORT=2", "unknown option 'NFSPORT'");
  expect_invalid("nfs://h/x?nfsport=abc&mountport=1", "option nfsport=abc is not a number");
  expect_invalid("nfs://h/x?nfsport=70000&mountport=1", "option nfsport=70000");
  expect_invalid("nfs://h/x?nfsport=&mountport=1", "option nfsport=");
  expect_invalid("nfs://h/x?nfsport", "option nfsport=");
  expect_invalid("nfs://h/x?uid=-1", "option uid=-1 is not a number");
  expect_invalid("nfs://h/x?gid=2147483648", "option gid=2147483648");
  expect_invalid("nfs://h/x?nfsport=2049", "both nfsport and mountport");
  expect_invalid("nfs://h/x?mountport=20048", "both nfsport and mountport");
  expect_invalid("nfs://h/x?nfsport=1&mountport=0", "both nfsport and mountport");
  expect_invalid("nfs://h/x?version=2", "unknown NFS version '2'");
  expect_invalid("nfs://h/d?foo=1/name", "unknown option 'foo'");
}

TEST(LocationErrors, NfsVersion4IsUnsupported) {
  expect_error("nfs://h/x?version=4", Errc::unsupported, "version 4 is not supported");
  expect_error("nfs://h/x?version=4.1", Errc::unsupported, "version 4 is not supported");
}

TEST(LocationErrors, TapeWithNothingAfterThePrefix) {
  expect_invalid("tape:", "nothing after 'tape:'");
}

TEST(LocationErrors, TapeNeitherIscsiNorDevice) {
  expect_invalid("tape:foo", "neither an iscsi:// URL nor a /dev/ device");
  expect_invalid("tape:sg0", "neither");
  expect_invalid("tape:iscsi:/h/iqn/0", "neither");
  expect_invalid("tape:ISCSI://h/iqn/0", "neither");
  expect_invalid("tape:/tmp/sg0", "neither");
  expect_invalid("tape:#x", "no drive address before '#'");
}

TEST(LocationErrors, TapeBadIscsiUrl) {
  expect_invalid("tape:iscsi://", "no iSCSI portal address");
  expect_invalid("tape:iscsi:///iqn.x/0", "no iSCSI portal address");
  expect_invalid("tape:iscsi://h:3260", "missing the target IQN and LUN");
  expect_invalid("tape:iscsi://h:3260/", "missing the target IQN");
  expect_invalid("tape:iscsi://h:3260//0", "missing the target IQN");
  expect_invalid("tape:iscsi://h:3260/iqn.x", "missing the LUN");
  expect_invalid("tape:iscsi://h:3260/iqn.x/", "missing the LUN");
  expect_invalid("tape:iscsi://h:3260/iqn.x/abc", "LUN 'abc' is not a number");
  expect_invalid("tape:iscsi://h:3260/iqn.x/1/2", "LUN '1/2' is not a number");
  expect_invalid("tape:iscsi://h:3260/iqn.x/-1", "LUN '-1'");
  expect_invalid("tape:iscsi://h:3260/iqn.x/+1", "LUN '+1'");
  expect_invalid("tape:iscsi://h:3260/iqn.x/70000", "LUN '70000'");
  expect_invalid("tape:iscsi://h:3260/iqn.x/1?x=y", "LUN '1?x=y'");
  expect_invalid("tape:iscsi://h:port/iqn.x/1", "port 'port'");
  expect_invalid("tape:iscsi://u%p@h/iqn.x/1", "user names or passwords");
  expect_invalid("tape:iscsi://h/iqn x/1", "'iqn x' is not an iSCSI target name");
  // Every iSCSI message shows the expected shape.
  expect_invalid("tape:iscsi://h:3260/iqn.x", "tape:iscsi://HOST[:PORT]/IQN/LUN");
}

TEST(LocationErrors, TapeBadDevice) {
  expect_invalid("tape:/dev/", "no device name after /dev/");
  expect_invalid("tape:/dev//", "no device name after /dev/");
  expect_invalid("tape:/dev/../etc/passwd", "'.' and '..' are not allowed");
  expect_invalid("tape:/dev/./sg0", "'.' and '..' are not allowed");
}

TEST(LocationErrors, TapeBadEntry) {
  expect_invalid("tape:/dev/sg0#", "no entry name after '#'");
  expect_invalid("tape:/dev/sg0#/", "no entry name after '#'");
  expect_invalid("tape:/dev/sg0#.", "no entry name after '#'");
  expect_invalid("tape:/dev/sg0#../x", "'..' is not allowed in a tape entry name");
  expect_invalid("tape:iscsi://h/iqn.x/1#", "no entry name after '#'");
  expect_invalid("tape:iscsi://h/iqn.x/#e", "missing the LUN");
}

}  // namespace
}  // namespace stripeback::storage
