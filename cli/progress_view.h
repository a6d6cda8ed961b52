// How the CLI shows a job's live progress (docs/monitoring.md): a redrawn block of lines on
// a terminal, one JSON line per second for scripts, and the status file `stripeback status`
// reads. One snapshot structure (engine/monitor/progress.h) feeds them all.
#pragma once

#include <memory>
#include <string>

#include "cli/commands.h"
#include "engine/monitor/progress.h"
#include "util/json.h"

namespace stripeback::cli {

// The fields of one job in `status --json` and in --progress-json lines.
void snapshot_json(util::JsonWriter& w, const engine::ProgressSnapshot& s);
// The lines drawn on a terminal for `s` (job line, then one per channel).
std::string progress_lines(const engine::ProgressSnapshot& s);

// Runs the sinks the flags ask for while a job runs; stops them (clearing the terminal
// lines) when finished() is called or the object goes.
class ProgressView {
 public:
  ProgressView(const CommonFlags& c, const std::string& operation, const std::string& tag,
               const std::string& catalog_dir);
  ~ProgressView();
  engine::JobProgress* progress() { return &job_; }
  // Why the status endpoint could not be started (--status-listen), or empty.
  const std::string& error() const { return error_; }
  // The job returned: the verdict goes in the last snapshot, and the sinks stop.
  void finished(const std::string& verdict);

 private:
  struct Impl;
  engine::JobProgress job_;
  std::string error_;
  std::unique_ptr<Impl> impl_;
};

int run_status_cmd(const CommonFlags& c, bool watch, bool prune);

}  // namespace stripeback::cli
