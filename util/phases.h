// A job as a list of named phases over one state: each phase is a short function that
// reads and fills the job's state, and the job function is the list. A new option belongs
// to the phase that acts on it, not to the job function.
//
//   const Phase<BackupJob> kBackup[] = {{"check", check}, {"plan", plan}, ...};
//   SB_TRY(run_phases(job, kBackup));
//
// A phase returns Next::stop when the job is complete without the phases after it (a dry
// run, nothing to do); an error ends the job as it is (its message is not rewritten, so
// what users see does not depend on how the job is cut into phases). The state records the
// phase that runs (`phase`), for messages and the status of a running job.
#pragma once

#include <span>
#include <string_view>

#include "stripeback/result.h"

namespace stripeback::util {

enum class Next : bool { go_on, stop };

template <class Job>
struct Phase {
  std::string_view name;
  Result<Next> (*run)(Job&);
};

// Runs `phases` in order on `job` until one fails or says stop. `Job` has a member
// `std::string_view phase` set to the name of the phase running.
template <class Job>
Result<void> run_phases(Job& job, std::span<const Phase<Job>> phases) {
  for (const auto& p : phases) {
    job.phase = p.name;
    SB_ASSIGN(Next next, p.run(job));
    if (next == Next::stop) break;
  }
  return ok();
}

}  // namespace stripeback::util
