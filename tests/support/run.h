// Runs a program as a child process for integration tests: captures its stdout and stderr
// (through memory files, so a chatty child can never block on a full pipe), its exit code
// or the signal that ended it, and enforces a timeout so a hung child fails the test
// instead of hanging it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace stripeback::testing {

struct RunResult {
  std::vector<std::string> argv;
  int exit_code = -1;      // the exit status when the child exited, else -1
  int term_signal = 0;     // the signal that ended the child, else 0
  bool timed_out = false;  // killed by us after the timeout
  std::string out, err;

  bool exited(int code) const { return term_signal == 0 && !timed_out && exit_code == code; }
  // The command line, how it ended and its output: for failure messages.
  std::string describe() const;
};

struct RunOptions {
  // Environment changes on top of ours: a value sets the variable, nullopt removes it.
  std::vector<std::pair<std::string, std::optional<std::string>>> env;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

// A started child process. The destructor kills (SIGKILL) and reaps a child still running.
class Subprocess {
 public:
  // Starts argv[0] (a path; no PATH search) with stdin from /dev/null. A failure to start is
  // reported with ADD_FAILURE and leaves started() false.
  explicit Subprocess(std::vector<std::string> argv, const RunOptions& opts = {});
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Whether the child is still running (reaps it, without blocking, when it has ended).
  bool running();
  // Sends `sig` to the child if it has not been reaped yet.
  void kill(int sig);
  // Waits for the child (killing it once the timeout has passed) and collects its output.
  RunResult wait();

 private:
  void reaped(int status);

  std::vector<std::string> argv_;
  std::chrono::steady_clock::time_point deadline_;
  pid_t pid_ = -1;
  bool done_ = false;
  bool timed_out_ = false;
  int status_ = 0;
  int out_fd_ = -1, err_fd_ = -1;
};

// Starts argv and waits for it.
RunResult run(std::vector<std::string> argv, const RunOptions& opts = {});

}  // namespace stripeback::testing
