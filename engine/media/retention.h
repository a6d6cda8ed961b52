// Retention: which backups a policy no longer needs (docs/media-management.md).
//
// A policy is `redundancy N` (keep N full copies of every file) or `recovery-window DAYS`
// (keep what a restore to any moment of the last DAYS days needs). The rules, per file
// path, over the restorable backups (complete or partial, not expired) that hold it, newest
// first (by start time):
//   redundancy N: the N newest backups holding a whole copy of it (a plain full backup, a
//     level 0, or a level 1 that had to back it up whole) are kept, and every backup
//     holding it that is newer than the oldest of those (incremental restore points).
//   recovery-window D: every backup holding it that began within the window, and the
//     newest one that began before it (a restore to the window's first moment needs it).
// Then, always:
//   - the newest copy of every file is kept (whatever the policy: N >= 1, D >= 0);
//   - a backup the operator keeps (stripeback keep, keep.h) is kept until its date or
//     forever;
//   - a kept backup keeps what it depends on: the parent of each of its files (level 1),
//     and the backup a file skipped by --optimize is held by, transitively;
//   - a backup still running (no end record, its process may be alive) is never obsolete.
// Obsolete are the other backups: restorable ones no rule keeps, failed ones, and ones
// whose job died before its end record (their pieces are orphans). Damaged backups are left
// alone (their records cannot say what they held), and expired ones are removed by
// `delete expired`, not here.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "stripeback/result.h"

namespace stripeback::engine {

struct RetentionPolicy {
  enum class Kind { none, redundancy, window } kind = Kind::none;
  uint32_t redundancy = 0;
  double window_days = 0;
  std::string str() const;  // "redundancy 2", "recovery-window 3", "none"
};

// "redundancy N" or "recovery-window DAYS" (DAYS may have a fraction); invalid_argument
// otherwise, saying what is expected.
Result<RetentionPolicy> parse_policy(const std::string& text);

struct ObsoleteBackup {
  uint64_t id = 0;
  std::string reason;  // why nothing keeps it
};

// How long an interrupted backup (its job died before its end record) is kept for
// `backup --resume` before it is obsolete, unless `configure resume-window DAYS` says.
inline constexpr double kDefaultResumeWindowDays = 7;
// A number of days (a fraction allowed), from 0 to kMaxDays: `what` names it in the error.
// The one parser of recovery-window and resume-window.
inline constexpr double kMaxDays = 100000;
Result<double> parse_days(const std::string& text, const std::string& what);

// The backups `policy` no longer needs at `now_ns` (see above), in id order. `running`
// says whether a backup without an end record may still be running. An interrupted backup
// that began less than `resume_window_days` ago is kept: it can still be resumed.
std::vector<ObsoleteBackup> find_obsolete(
    const std::vector<catalog::Backup>& backups, const RetentionPolicy& policy, int64_t now_ns,
    const std::function<bool(const catalog::Backup&)>& running,
    double resume_window_days = kDefaultResumeWindowDays);

}  // namespace stripeback::engine
