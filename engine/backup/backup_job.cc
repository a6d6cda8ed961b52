#include "engine/backup/backup_job.h"

#include "engine/backup/backup_job_state.h"
#include "engine/media/catalog_seal.h"
#include "util/phases.h"

namespace stripeback::engine {
namespace backup_internal {
namespace {

// The backup, phase by phase. Up to `begin` nothing is in the catalog, and a failure is the
// job's error; from `run channels` on, a failure is the backup's status in the summary.
const util::Phase<BackupJob> kBackupPhases[] = {
    {"check", check_options},             // the options alone (job_check.cc)
    {"plan", plan_sources},               // the sources walked, their page validator
    {"open targets", open_targets},       // a directory, drives, or none (job_targets.cc)
    {"resume", find_resume},              // the resume point, earlier jobs' leftovers
    {"since", skip_backed_up},            // --not-backed-up-since (job_since.cc)
    {"parents", choose_parents},          // level 1 parents, --optimize (job_parents.cc)
    {"channels", choose_job_channels},    // --channels auto (job_auto_channels.cc)
    {"sets", make_job_sets},              // units, sets and buffers (job_sets.cc)
    {"begin", begin_job},                 // the catalog's begin record (job_targets.cc)
    {"run channels", run_channels},       // one thread per channel (job_channels.cc)
    {"gather", gather_outcomes},          // the channels' outcomes (job_summary.cc)
    {"files", assemble_records},          // the file records
    {"judge", judge_outcome},             // complete, partial or failed
    {"alarm", sound_alarm},               // file profiles compared (job_alarm.cc)
    {"hot", end_hot_mode},                // --hot, --pg: the backup mode ends (job_record.cc)
    {"page checks", record_page_checks},  // recorded; a validation ends here (job_record.cc)
    {"record", record_backup},            // pieces and files into the catalog
    {"clean up", clean_up},               // a failed backup's pieces
    {"lock", extend_locks},               // --lock-days: the pieces' locks moved on
    {"end", end_job},                     // the end record
    {"autobackup", write_autobackup},     // the catalog's copy beside the pieces
};

}  // namespace
}  // namespace backup_internal

Result<BackupSummary> run_backup(const BackupOptions& opts, catalog::Catalog& cat) {
  SB_TRY(prepare_catalog_seal(cat, opts.keys.get()));
  backup_internal::BackupJob job(opts, cat);
  SB_TRY(util::run_phases<backup_internal::BackupJob>(job, backup_internal::kBackupPhases));
  return std::move(job.sum);
}

}  // namespace stripeback::engine
