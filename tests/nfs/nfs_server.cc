#include "tests/nfs/nfs_server.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/support/run.h"

namespace stripeback::it {
namespace {
NfsServer* g_server = nullptr;
}

NfsServer& NfsServer::get() { return *g_server; }

std::string NfsServer::script(const std::string& arg, int* rc) const {
  stripeback::testing::RunOptions o;
  o.env = {{"SB_NFS_STATE", state_}};
  o.timeout = std::chrono::seconds(60);
  stripeback::testing::Subprocess p({"/bin/bash", std::string(STRIPEBACK_SOURCE_DIR) +
                                                       "/scripts/nfs-server.sh", arg}, o);
  auto r = p.wait();
  *rc = r.exit_code;
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return r.exit_code == 0 ? out : r.err;
}

void NfsServer::SetUp() {
  g_server = this;
  state_ = "/tmp/sbtest-nfs-" + std::to_string(::getpid());
  int rc = 0;
  std::string out = script("start", &rc);
  if (rc != 0) {
    reason_ = out.empty() ? "scripts/nfs-server.sh start failed" : out;
    return;
  }
  url_ = out;
  export_dir_ = state_ + "/export";
}

void NfsServer::TearDown() {
  int rc = 0;
  if (!state_.empty()) script("stop", &rc);
}

std::string NfsServer::query() const {
  auto q = url_.find('?');
  return q == std::string::npos ? "" : url_.substr(q);
}

std::string NfsServer::url_of(const std::string& rel) const {
  std::string base = url_.substr(0, url_.find('?'));
  return base + (rel.empty() ? "" : "/" + rel) + query();
}

int NfsServer::pid() const {
  std::ifstream f(state_ + "/ganesha.pid");
  int pid = -1;
  f >> pid;
  return pid;
}

bool NfsServer::restart() {
  int rc = 0;
  script("kill", &rc);
  script("start", &rc);
  return rc == 0;
}

// SIGSTOP takes effect on each thread only when it next runs; a request that arrives in
// between could still be answered. Waits (up to 2 s) until every thread of the server is
// stopped ('T' in /proc/PID/task/TID/stat), so what follows meets a stopped server.
void NfsServer::pause() {
  const int p = pid();
  ::kill(p, SIGSTOP);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < until) {
    bool all = true;
    std::error_code ec;
    for (const auto& t : std::filesystem::directory_iterator(
             "/proc/" + std::to_string(p) + "/task", ec)) {
      std::ifstream f(t.path() / "stat");
      std::string line;
      std::getline(f, line);
      const auto close = line.rfind(')');
      if (close == std::string::npos || close + 2 >= line.size()) continue;
      const char state = line[close + 2];
      if (state != 'T' && state != 't') all = false;
    }
    if (all) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}
void NfsServer::resume() { ::kill(pid(), SIGCONT); }

}  // namespace stripeback::it
