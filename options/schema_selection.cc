#include "options/schema_parts.h"

#include "database/recovery_target.h"
#include "engine/backup/exclude.h"
#include "options/setters.h"
#include "util/units.h"

namespace stripeback::options {
namespace {

using namespace setters;

Result<void> add_exclude(const Option& o, Settings& s, std::string_view v) {
  if (auto r = engine::ExcludeRules::check(v); !r) return r.error().wrap("option " + util::option_word(o.key));
  s.exclude.emplace_back(v);
  return ok();
}

// A duration back from now (2d, 36h, 90m, HH:MM) or a time with a date, as --target-time
// takes it (2026-12-07T14:45:32Z).
Result<void> set_not_backed_up_since(const Option& o, Settings& s, std::string_view v) {
  const bool is_time = v.find('-', 1) != std::string_view::npos || v.find('T') != std::string_view::npos;
  if (is_time) {
    SB_ASSIGN(int64_t ns, database::parse_target_time(v, util::option_word(o.key)));
    s.not_backed_up_since_ns = ns;
    s.not_backed_up_for.reset();
    return ok();
  }
  auto d = util::parse_duration(v, util::option_word(o.key));
  if (!d)
    return bad(o, "wants a duration back from now (2d, 36h, 90m, HH:MM) or a time with a date "
                  "(2026-12-07T14:45:32Z); got " + quoted(v));
  s.not_backed_up_for = *d;
  s.not_backed_up_since_ns.reset();
  return ok();
}
void reset_not_backed_up_since(Settings& s) {
  s.not_backed_up_since_ns.reset();
  s.not_backed_up_for.reset();
}

// clang-format off
const Option kSelection[] = {
  {"exclude", "--exclude", Type::list, kBackup,
   "leave out what matches this glob (repeatable): a PATTERN without '/' matches the name of "
   "any file or directory below a SOURCE ('*.tmp', 'pgsql_tmp*'); one with '/' matches the "
   "path relative to the SOURCE ('/cache', 'logs/*.old'); '*' and '?' stop at '/', '**' "
   "spans directories, '[a-z]' is a class, a trailing '/' matches directories only. An "
   "excluded directory is not read at all. Excluded paths are counted in the summary "
   "(--json: excluded, excluded_paths); see docs/selection.md",
   "Selection", "PATTERN", {}, 0, 0, add_exclude, reset<&Settings::exclude>},
  {"exclude_from", "--exclude-from", Type::list, kBackup,
   "read --exclude patterns from FILE, one a line (blank lines and lines starting with '#' "
   "are skipped); repeatable. A FILE that cannot be read fails the backup, naming it",
   "Selection", "FILE", {}, 0, 0, add<&Settings::exclude_from>, reset<&Settings::exclude_from>},
  {"not_backed_up_since", "--not-backed-up-since", Type::text, kBackup,
   "skip every file that a complete (or partial) backup begun since then holds with the size "
   "and modification time it has now: a DURATION back from now (2d, 36h, 90m) or a TIME with a "
   "date (2026-12-07T14:45:32Z). A rerun so backs up only what earlier runs did not finish; "
   "this backup alone does not hold the skipped files (--json: skipped_backed_up)",
   "Selection", "DURATION|TIME", {}, 0, 0, set_not_backed_up_since, reset_not_backed_up_since},
};
// clang-format on

}  // namespace

std::span<const Option> selection_options() { return kSelection; }

}  // namespace stripeback::options
