// The ransomware alarm's phase (alarm.h, docs/security.md): the backup's file profiles made
// from what its channels counted, compared with those of the newest earlier complete backup
// that profiled the same files; when a rule fires, that backup is kept and the summary and
// the live status say why.
#include <map>
#include <set>

#include "engine/backup/backup_job_state.h"
#include "engine/media/keep.h"
#include "util/option_words.h"

namespace stripeback::engine::backup_internal {
namespace {

// The profiles of the files this job read whole and recorded. A file some of whose sections
// a resumed backup kept from before its interruption is left out: their figures are gone.
catalog::FileProfiles profile_of(const BackupJob& job) {
  std::set<std::string> recorded, resumed;
  for (const auto& f : job.files) recorded.insert(f.path);
  for (const auto& u : job.kept_units) resumed.insert(u.unit->file->path);
  std::map<std::string, catalog::FileProfile> by_path;
  for (const auto& o : job.outcomes)
    for (const auto& u : o.units) {
      const std::string& path = u.unit->file->path;
      if (!recorded.count(path) || resumed.count(path)) continue;
      catalog::FileProfile& p = by_path[path];
      p.pages_checked += u.pages_checked;
      p.pages_failed += u.pages_failed;
      p.bytes_raw += u.bytes_raw;
      p.bytes_stored += u.bytes_stored;
    }
  catalog::FileProfiles out;
  out.backup_id = job.id;
  for (auto& [path, p] : by_path) {
    if (p.pages_checked == 0 && p.bytes_stored == 0) continue;
    p.path = path;
    out.files.push_back(std::move(p));
  }
  return out;
}

// The comparison with the newest earlier complete backup that profiled some of the same
// files, or nullopt when there is none.
std::optional<Suspicion> compare_with_earlier(const BackupJob& job) {
  const auto backups = job.cat.backups();
  for (auto b = backups.rbegin(); b != backups.rend(); ++b) {
    if (b->id >= job.id || b->status_name() != "complete") continue;
    auto earlier = job.cat.file_profiles(b->id);
    if (!earlier) continue;
    if (auto s = compare_profiles(*earlier, job.profile, *job.opts.alarm)) return s;
  }
  return std::nullopt;
}

}  // namespace

Result<Next> sound_alarm(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  BackupSummary& sum = job.sum;
  const bool failed = job.status == catalog::BackupStatus::failed && !job.corruption_failed;
  if (opts.validate_only || failed) return Next::go_on;
  job.profile = profile_of(job);
  if (!opts.alarm || job.profile.files.empty()) return Next::go_on;
  auto s = compare_with_earlier(job);
  if (!s) return Next::go_on;
  sum.alarm_compared_with = s->previous_backup;
  if (!s->fired()) return Next::go_on;
  // The earlier backup is the clean copy: no retention may take it while this is looked at.
  if (auto k = keep_backup(job.cat, s->previous_backup, catalog::Keep::Kind::forever))
    s->previous_kept = true;
  else
    s->keep_error = k.error().what;
  // This backup is recorded as it is: its copy of the damaged files is the evidence, so the
  // pages --max-corrupt would fail it for do not.
  if (job.corruption_failed) {
    job.status = job.status_unless_corrupt;
    sum.error.clear();
    sum.error_code = Errc::io;
    sum.warnings.push_back(std::to_string(sum.pages.corrupt.size()) +
                           " corrupt page(s) exceed " +
                           util::option_value_word("max_corrupt", std::to_string(opts.max_corrupt)) +
                           "; the backup is recorded all the same as the evidence of the alarm");
  }
  if (opts.progress) opts.progress->set_suspicious(suspicion_line(*s));
  sum.suspicious = std::move(*s);
  return Next::go_on;
}

}  // namespace stripeback::engine::backup_internal
