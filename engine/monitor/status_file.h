// The status file of a running job: how `stripeback status`, in another process, sees it
// (docs/monitoring.md). The job rewrites `<catalog>/jobs/<host>.<pid>.status` in place at
// most a few times a second from its progress publisher (progress.h): no lock, no sync, a
// few hundred bytes; it removes the file when it ends. A reader tells a running job from a
// dead one (its process is gone, or is another process by now) and from a stalled one (no
// progress for longer than the job's hang-after, or the process is stopped). A process
// that runs several jobs (a C API embedder) names its later ones `<host>.<pid>-<n>.status`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/monitor/progress.h"
#include "stripeback/result.h"

namespace stripeback::engine {

class StatusFile {
 public:
  // Creates the jobs directory and the file; errors name them.
  static Result<std::unique_ptr<StatusFile>> create(const std::string& catalog_dir);
  ~StatusFile();  // removes the file
  void write(const ProgressSnapshot& s);
  const std::string& path() const { return path_; }

 private:
  StatusFile() = default;
  std::string path_;
  int fd_ = -1;
  uint64_t proc_start_ = 0;
};

struct JobStatus {
  std::string id;     // "<host>.<pid>": the file's name
  std::string state;  // "running", "stalled" or "dead"
  std::string why;    // for stalled and dead: what was seen
  ProgressSnapshot snap;  // as last written; state_s of each channel as of now
  // The file as read (device, inode, modification time): it is removed only while it is
  // still that file, not one a new job of the same name has made since.
  uint64_t dev = 0, ino = 0;
  int64_t mtime_ns = 0;
};

// An entry of the jobs directory that is not a status file one can read: a directory, a
// FIFO, a link, a file too large or not in the format, an empty file of a gone process.
struct SkippedJobEntry {
  std::string path;  // <catalog>/jobs/<name>
  std::string why;   // lower case, e.g. "is a FIFO, not a regular file"
  // A regular file, empty or not in the format, whose name is that of a process of this
  // host that is gone: what a job killed before its first update, or a system that went
  // down, leaves. `status --prune` removes it.
  bool left_by_gone_process = false;
};

// A status file is a few hundred bytes; anything larger is not one and is not read.
inline constexpr size_t kMaxStatusFileSize = size_t{1} << 20;

struct JobStatuses {
  std::vector<JobStatus> jobs;         // oldest first
  std::vector<SkippedJobEntry> skipped;   // in name order
};

// Every job with a status file in the catalog. Files are opened without following links and
// without blocking, only regular files up to kMaxStatusFileSize are read, and nothing
// throws. A file caught half rewritten is read again after a short pause shared by all such
// files; one still not in the format then is skipped (silently when its name is that of a
// process of this host that is running: a job that has not written yet).
JobStatuses read_job_statuses(const std::string& catalog_dir);

// Parses the text of a status file; the error says what is wrong, lower case. Lines after
// the `end=1` line are the tail of a longer earlier text and are ignored.
Result<void> parse_status_text(const std::string& text, ProgressSnapshot* s, uint64_t* proc_start);

// Why the status file of the dead job `j` is of no more use, or empty: `j` was writing a
// backup that has ended in the catalog (complete, partial or failed), or that a later job
// has resumed since. `backups` is the catalog's picture.
std::string dead_job_over(const JobStatus& j, const std::vector<catalog::Backup>& backups);

// Removes the status file of `j` if it is still the file that was read; errors name it.
Result<void> remove_job_status(const std::string& catalog_dir, const JobStatus& j);

// Removes a skipped entry left by a gone process if it is still a regular file; errors
// name it.
Result<void> remove_skipped(const SkippedJobEntry& e);

// Removes the status files of the dead jobs that were writing backup `backup_id` (a resume
// of it has begun): the ids removed.
std::vector<std::string> remove_dead_jobs_of(const std::string& catalog_dir, uint64_t backup_id);

}  // namespace stripeback::engine
