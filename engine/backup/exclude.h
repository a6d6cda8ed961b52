// Exclusion patterns of a backup (backup --exclude, --exclude-from; docs/selection.md).
//
// A pattern is a glob: `*` matches any run of characters but `/`, `?` one character but
// `/`, `[...]` one character of a class (`[a-z]`, `[!0-9]` or `[^0-9]` for the others,
// `]` first is literal), `\` takes the next character literally, and a whole component
// `**` matches any number of path components, none included.
//   - A pattern without `/` is matched against the name of every entry below a source, at
//     any depth: `*.tmp`, `pgsql_tmp*`, `lost+found`.
//   - A pattern with `/` is matched against the whole path of the entry relative to the
//     source it was found under; a leading `/` says so explicitly (`/cache` is only the
//     source's own `cache`), and `logs/*.old` too is anchored there (`**/logs/*.old`
//     matches at any depth).
//   - A trailing `/` matches directories only (`cache/`).
// A directory that matches is left out with everything below it, and is not read at all.
// A SOURCE itself is never excluded: it was named.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::engine {

class ExcludeRules {
 public:
  ExcludeRules() = default;
  // invalid_argument naming the pattern and what is wrong with it (empty, an unclosed
  // `[`, a trailing `\`, an empty component as in `a//b`).
  static Result<ExcludeRules> make(const std::vector<std::string>& patterns);
  static Result<void> check(std::string_view pattern);

  // The pattern that leaves out the entry at `rel` (its path relative to its source,
  // components joined by `/`, no leading `/`), or null. `is_dir`: the entry is a directory
  // (directory-only patterns may match it).
  const std::string* match(std::string_view rel, bool is_dir) const;
  bool empty() const { return patterns_.empty(); }

 private:
  struct Pattern {
    std::string text;                   // as given
    std::vector<std::string> segments;  // a name pattern has one
    bool anchored = false;
    bool dir_only = false;
  };
  std::vector<Pattern> patterns_;
};

// Whether `name` (one path component) matches the glob `glob` (one pattern component, no
// `/`); a malformed glob matches nothing (ExcludeRules::check refuses it first).
bool glob_matches(std::string_view glob, std::string_view name);

}  // namespace stripeback::engine
