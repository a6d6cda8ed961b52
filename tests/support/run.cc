#include "tests/support/run.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>

extern char** environ;

namespace stripeback::testing {
namespace {

std::string read_all(int fd) {
  std::string s;
  if (fd < 0) return s;
  char buf[65536];
  off_t off = 0;
  while (true) {
    ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    s.append(buf, static_cast<size_t>(n));
    off += n;
  }
  return s;
}

int make_capture(const char* name) {
  int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) ADD_FAILURE() << "memfd_create failed: " << std::strerror(errno);
  return fd;
}

std::vector<std::string> make_env(const RunOptions& opts) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& [k, v] : opts.env) overridden = overridden || k == name;
    if (!overridden) env.push_back(entry);
  }
  for (const auto& [k, v] : opts.env)
    if (v) env.push_back(k + "=" + *v);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string RunResult::describe() const {
  std::ostringstream os;
  os << "command:";
  for (const auto& a : argv) os << ' ' << a;
  os << "\n";
  if (timed_out)
    os << "timed out and was killed\n";
  else if (term_signal != 0)
    os << "killed by signal " << term_signal << "\n";
  else
    os << "exit code " << exit_code << "\n";
  os << "--- stdout ---\n" << (out.size() > 8000 ? out.substr(0, 8000) + "...\n" : out);
  os << "--- stderr ---\n" << (err.size() > 8000 ? err.substr(0, 8000) + "...\n" : err);
  return os.str();
}

Subprocess::Subprocess(std::vector<std::string> argv, const RunOptions& opts)
    : argv_(std::move(argv)), deadline_(std::chrono::steady_clock::now() + opts.timeout) {
  if (argv_.empty()) {
    ADD_FAILURE() << "Subprocess: empty command line";
    return;
  }
  out_fd_ = make_capture("stdout");
  err_fd_ = make_capture("stderr");
  if (out_fd_ < 0 || err_fd_ < 0) return;

  std::vector<std::string> args = argv_;
  std::vector<std::string> env = make_env(opts);
  auto c_args = c_strings(args);
  auto c_env = c_strings(env);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd_, 1);
  posix_spawn_file_actions_adddup2(&fa, err_fd_, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, args[0].c_str(), &fa, &attr, c_args.data(), c_env.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    ADD_FAILURE() << "unable to start '" << args[0] << "': " << std::strerror(rc);
    return;
  }
  pid_ = pid;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !done_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

void Subprocess::reaped(int status) {
  done_ = true;
  status_ = status;
}

bool Subprocess::running() {
  if (pid_ <= 0 || done_) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped(status);
    return false;
  }
  return true;
}

void Subprocess::kill(int sig) {
  if (pid_ > 0 && !done_) ::kill(pid_, sig);
}

RunResult Subprocess::wait() {
  RunResult res;
  res.argv = argv_;
  if (pid_ <= 0) return res;
  auto pause = std::chrono::microseconds(200);
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline_) {
      timed_out_ = true;
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      reaped(status);
      break;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(20));
  }
  res.timed_out = timed_out_;
  if (WIFEXITED(status_)) res.exit_code = WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) res.term_signal = WTERMSIG(status_);
  res.out = read_all(out_fd_);
  res.err = read_all(err_fd_);
  return res;
}

RunResult run(std::vector<std::string> argv, const RunOptions& opts) {
  Subprocess p(std::move(argv), opts);
  return p.wait();
}

}  // namespace stripeback::testing
