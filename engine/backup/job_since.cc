// backup --not-backed-up-since (docs/selection.md): the planned files a restorable backup
// begun since the given time holds as they are now are taken out of the plan, so a rerun
// finishes what earlier runs did not back up.
#include <algorithm>
#include <map>
#include <set>

#include "engine/backup/backup_job_state.h"

namespace stripeback::engine::backup_internal {

Result<Next> skip_backed_up(BackupJob& job) {
  if (!job.opts.not_backed_up_since_ns) return Next::go_on;
  const int64_t since = *job.opts.not_backed_up_since_ns;
  std::map<std::string, const FileTask*> wanted;
  for (const auto& f : job.plan.files) wanted[f.path] = &f;
  // A copy counts when its backup is restorable (complete, or partial: every file a partial
  // backup records is whole, and a --partial run is what a rerun finishes), began at or
  // after `since`, and recorded the file with the size and modification time it has now.
  // The content itself is not read to compare.
  std::set<std::string> held;
  for (const auto& b : job.cat.backups()) {
    if (b.begin.start_time_ns < since || !b.usable()) continue;
    for (const auto& rec : b.files) {
      auto w = wanted.find(rec.path);
      if (w == wanted.end()) continue;
      if ((rec.mode & 0170000) == 0100000 && rec.size == w->second->size &&
          rec.mtime_ns == w->second->mtime_ns)
        held.insert(rec.path);
    }
  }
  if (held.empty()) return Next::go_on;
  std::vector<FileTask> keep;
  for (auto& f : job.plan.files) {
    if (held.count(f.path)) job.plan.total_bytes -= f.size;
    else keep.push_back(std::move(f));
  }
  job.plan.files = std::move(keep);
  job.planned = job.plan.files.size();
  job.sum.skipped_backed_up.assign(held.begin(), held.end());
  return Next::go_on;
}

}  // namespace stripeback::engine::backup_internal
