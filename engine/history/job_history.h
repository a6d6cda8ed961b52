// What a job leaves in the catalog's history (catalog/job_record.h, docs/monitoring.md#job-
// history): its totals, its verdict and the I/O figures of its channels and files, taken
// from the job's summary. Pure: the caller appends the record (Catalog::add_job).
#pragma once

#include <cstdint>
#include <string>

#include "catalog/job_record.h"
#include "engine/backup/backup_job.h"
#include "engine/restore/restore_job.h"

namespace stripeback::engine {

// When the job ran (wall clock, ns since the epoch) and what it was given.
struct JobSpan {
  int64_t start_ns = 0, end_ns = 0;
  std::string tag;
  bool cancelled = false;  // the job was interrupted (SIGINT, SIGTERM)
};

// type "backup" or "validate-sources" (backup --validate).
catalog::JobRecord backup_job_record(const BackupSummary& s, const JobSpan& span);
// type "restore" or "validate".
catalog::JobRecord restore_job_record(const RestoreSummary& s, const JobSpan& span);
// A job that stopped before it began (bad input, a destination it cannot use): status
// "failed" with `message`, no figures.
catalog::JobRecord failed_job_record(const std::string& type, const std::string& message,
                                     const JobSpan& span);

}  // namespace stripeback::engine
