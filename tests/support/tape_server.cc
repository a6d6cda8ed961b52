#include "tests/support/tape_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>

#include "tests/support/run.h"

#ifndef STRIPEBACK_SOURCE_DIR
#error "STRIPEBACK_SOURCE_DIR must be defined"
#endif

namespace stripeback::testing {
namespace {

struct State {
  TapeServerOptions opts;
  bool tried = false;
  std::vector<std::string> urls;
  std::string skip;
  int ctl = 0, port = 0;
  std::string dir;
};

State& state() {
  static State s;
  return s;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

RunResult script(const std::string& verb) {
  State& s = state();
  RunOptions o;
  o.env = {{"SB_TAPE_CTL", std::to_string(s.ctl)},
           {"SB_TAPE_PORT", std::to_string(s.port)},
           {"SB_TAPE_DIR", s.dir},
           {"SB_TAPE_DRIVES", std::to_string(s.opts.drives)},
           {"SB_TAPE_SIZE", std::to_string(s.opts.size_mib)}};
  o.timeout = std::chrono::seconds(30);
  return run({"/bin/bash", std::string(STRIPEBACK_SOURCE_DIR) + "/scripts/tape-server.sh", verb}, o);
}

class Env : public ::testing::Environment {
 public:
  void TearDown() override { TapeServer::stop(); }
};

}  // namespace

void TapeServer::configure(const TapeServerOptions& opts) {
  state().opts = opts;
  ::testing::AddGlobalTestEnvironment(new Env);
}

const std::vector<std::string>& TapeServer::urls() {
  State& s = state();
  if (s.tried) return s.urls;
  s.tried = true;
  if (::access("/usr/sbin/tgtd", X_OK) != 0 && ::access("/usr/bin/tgtd", X_OK) != 0) {
    s.skip = "tgtd is not installed (Debian package tgt)";
    return s.urls;
  }
  if (::geteuid() != 0) {
    s.skip = "tgtd needs root";
    return s.urls;
  }
  // A port picked here can be taken by someone else before tgtd binds it: try again then.
  RunResult r;
  for (int attempt = 0; attempt < 3; ++attempt) {
    s.ctl = 2000 + static_cast<int>((::getpid() + attempt * 7919) % 30000);  // tgtd: <= 32767
    s.port = free_port();
    s.dir = "/tmp/sbtape-" + std::to_string(::getpid());
    r = script("start");
    if (r.exited(0)) break;
    script("stop");
  }
  if (!r.exited(0)) {
    s.skip = "tape test service did not start: " + r.err;
    return s.urls;
  }
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) s.urls.push_back(line);
  return s.urls;
}

const std::string& TapeServer::skip_reason() { return state().skip; }

void TapeServer::stop() {
  State& s = state();
  if (!s.tried || s.urls.empty()) return;
  script("stop");
  s.urls.clear();
}

int TapeServer::control_port() { return state().ctl; }

std::string TapeServer::image(int drive) {
  return state().dir + "/tape" + std::to_string(drive) + ".img";
}

int TapeServer::tgtadm(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/sbin/tgtadm", "-C", std::to_string(state().ctl)};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv).exit_code;
}

}  // namespace stripeback::testing
