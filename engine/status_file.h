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

#include "engine/progress.h"
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
};

// Every job with a status file in the catalog, oldest first. A file that stays unreadable
// (being rewritten) is skipped.
std::vector<JobStatus> read_job_statuses(const std::string& catalog_dir);

}  // namespace stripeback::engine
