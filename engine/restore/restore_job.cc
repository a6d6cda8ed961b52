#include "engine/restore/restore_job.h"

#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine/media/catalog_seal.h"
#include "engine/restore/restore_phases.h"
#include "util/phases.h"

namespace stripeback::engine {
namespace {

// A restore and a validation run the same phases, except that a validation has no target
// (it writes nothing) and records in the catalog which frames it checked.
const util::Phase<RestoreJob> kRestore[] = {
    {"check options", check_options},     {"choose backups", choose_backups},
    {"check target", check_target},       {"plan files", plan_files},
    {"open target", open_target},         {"set up channels", set_up_channels},
    {"channels", choose_restore_channels}, {"compare in place", compare_in_place}, {"chunk files", chunk_files},
    {"run channels", run_channels},       {"finish target", finish_target},
    {"summary", summarize}};
const util::Phase<RestoreJob> kValidate[] = {
    {"check options", check_options},     {"choose backups", choose_backups},
    {"check paths", check_paths},         {"plan files", plan_files},
    {"set up channels", set_up_channels}, {"channels", choose_restore_channels},
    {"select frames", select_frames},
    {"chunk files", chunk_files},         {"oldest first", oldest_first},
    {"run channels", run_channels},       {"audit pieces", audit_pieces},
    {"record checks", record_checks},     {"summary", summarize}};
// A preview runs the job's phases up to its plan and tallies it (restore_preview.h).
const util::Phase<RestoreJob> kPreviewRestore[] = {
    {"check options", check_options},     {"choose backups", choose_backups},
    {"check target", check_target},       {"plan files", plan_files},
    {"set up channels", set_up_channels}, {"chunk files", chunk_files},
    {"preview", tally_preview}};
const util::Phase<RestoreJob> kPreviewValidate[] = {
    {"check options", check_options},     {"choose backups", choose_backups},
    {"check paths", check_paths},         {"plan files", plan_files},
    {"set up channels", set_up_channels}, {"select frames", select_frames},
    {"chunk files", chunk_files},         {"preview", tally_preview}};

Result<RestoreSummary> restore_once(const RestoreOptions& opts, catalog::Catalog& cat) {
  RestoreJob job(opts, cat);
  std::span<const util::Phase<RestoreJob>> phases = kRestore;
  if (opts.verify_only) phases = kValidate;
  SB_TRY(util::run_phases(job, phases));
  return std::move(job.sum);
}

// The files of sum.failed_files that have an older copy to try: their paths go to
// again.paths, and the copies that failed to again.skip.
std::vector<FailedFile> files_to_retry(const RestoreOptions& opts,
                                       const std::vector<catalog::Backup>& backups,
                                       const RestoreSummary& sum, RestoreOptions& again) {
  again.paths.clear();
  std::vector<FailedFile> retry;
  for (const FailedFile& f : sum.failed_files) {
    again.skip[f.path].insert(f.backup_id);
    const bool older = std::any_of(backups.begin(), backups.end(), [&](const catalog::Backup& b) {
      return b.usable() && b.id < f.backup_id && !again.skip[f.path].count(b.id) &&
             (!opts.tag || b.begin.tag == *opts.tag) &&
             std::any_of(b.files.begin(), b.files.end(),
                         [&](const catalog::FileRecord& r) { return r.path == f.path; });
    });
    if (older) {
      again.paths.push_back(f.path);
      retry.push_back(f);
    }
  }
  return retry;
}

// Merges into `sum` the round `next` that restored older copies of the files `retry`.
// `newest`: the failure of each file's newest copy, the one its error in `sum` is.
void merge_round(RestoreSummary& sum, const std::vector<FailedFile>& retry,
                 RestoreSummary& next, const std::map<std::string, FailedFile>& newest) {
  std::map<std::string, const FailedFile*> failed_again;
  for (const FailedFile& f : next.failed_files) failed_again[f.path] = &f;
  std::vector<FailedFile> still;
  for (const FailedFile& f : sum.failed_files) {
    const bool retried = std::any_of(retry.begin(), retry.end(),
                                     [&](const FailedFile& r) { return r.path == f.path; });
    if (!retried || failed_again.count(f.path)) {
      if (!retried) still.push_back(f);
      continue;
    }
    // Restored from an older copy: the failure of its newest copy is now a fallback (f is
    // the failure of the copy before this one, which may be older still).
    auto n = newest.find(f.path);
    const FailedFile& first = n == newest.end() ? f : n->second;
    auto e = std::find(sum.errors.begin(), sum.errors.end(), first.error);
    if (e != sum.errors.end()) {
      sum.error_codes.erase(sum.error_codes.begin() + (e - sum.errors.begin()));
      sum.errors.erase(e);
    }
    uint64_t used = 0;
    for (uint64_t id : next.backups_used) used = std::max(used, id);
    for (const auto& c : next.fallbacks)
      if (c.file == f.path) used = c.used_backup;
    sum.fallbacks.push_back({f.path, first.backup_id, used,
                             "backup " + std::to_string(first.backup_id) + ": " + first.error});
  }
  // Files that failed again: their older copy's failure replaces nothing yet; try older.
  for (const FailedFile& f : next.failed_files) still.push_back(f);
  for (size_t i = 0; i < next.errors.size(); ++i) {
    const std::string& e = next.errors[i];
    if (std::none_of(next.failed_files.begin(), next.failed_files.end(),
                     [&](const FailedFile& f) { return f.error == e; }))
      sum.add_error({next.error_codes[i], 0, e});
  }
  sum.files += next.files;
  sum.bytes += next.bytes;
  sum.piece_bytes_read += next.piece_bytes_read;
  for (uint64_t id : next.backups_used)
    if (std::find(sum.backups_used.begin(), sum.backups_used.end(), id) == sum.backups_used.end())
      sum.backups_used.push_back(id);
  for (auto& w : next.warnings) sum.warnings.push_back(std::move(w));
  sum.failed_files = std::move(still);
}

}  // namespace

Result<RestorePreview> preview_restore(const RestoreOptions& opts, catalog::Catalog& cat) {
  SB_TRY(prepare_catalog_seal(cat, opts.keys.get()));
  RestoreJob job(opts, cat);
  job.previewing = true;
  std::span<const util::Phase<RestoreJob>> phases = kPreviewRestore;
  if (opts.verify_only) phases = kPreviewValidate;
  SB_TRY(util::run_phases(job, phases));
  return std::move(job.preview);
}

Result<RestoreSummary> run_restore(const RestoreOptions& opts, catalog::Catalog& cat) {
  SB_TRY(prepare_catalog_seal(cat, opts.keys.get()));
  SB_ASSIGN(RestoreSummary sum, restore_once(opts, cat));
  // Fallback: each file that failed from its newest copy is restored again from the next
  // newest copy, until one succeeds or none is left.
  if (!opts.fallback || opts.backup_id || opts.verify_only) return sum;
  RestoreOptions again = opts;
  again.progress = nullptr;
  if (opts.auto_channels && sum.channels_chosen) {  // the older copies: the same count
    again.auto_channels = false;
    again.channels = sum.channels_chosen;
  }
  const auto backups = cat.backups();
  // A file that fails again keeps the error of its newest copy in the summary.
  std::map<std::string, FailedFile> newest;
  for (const FailedFile& f : sum.failed_files) newest.emplace(f.path, f);
  for (int round = 0; round < 16 && !sum.failed_files.empty(); ++round) {
    if (opts.cancel && opts.cancel->load()) break;
    const std::vector<FailedFile> retry = files_to_retry(opts, backups, sum, again);
    if (again.paths.empty()) break;
    auto next = restore_once(again, cat);
    if (!next) {
      sum.warnings.push_back("restoring older copies of the files that failed: " + next.error().what);
      break;
    }
    merge_round(sum, retry, *next, newest);
  }
  for (const auto& fb : sum.fallbacks)
    sum.warnings.push_back("'" + fb.file + "' was restored from backup " +
                           std::to_string(fb.used_backup) + ", not from its newest copy (" +
                           fb.reason + ")");
  sum.status = sum.errors.empty() ? "complete" : "failed";
  return sum;
}

}  // namespace stripeback::engine
