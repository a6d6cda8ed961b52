#include "tests/support/pg_cluster.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

namespace stripeback::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBin = "/usr/lib/postgresql/15/bin";

bool chown_postgres(const std::string& path) {
  const passwd* pw = ::getpwnam("postgres");
  return pw != nullptr && ::chown(path.c_str(), pw->pw_uid, pw->pw_gid) == 0;
}

}  // namespace

std::string PgCluster::bin_dir() { return kBin; }

std::string PgCluster::skip_reason() {
  if (!fs::exists(std::string(kBin) + "/initdb"))
    return "PostgreSQL 15 is not installed (apt-get install postgresql-15; "
           "scripts/install-deps.sh does it)";
  if (::getpwnam("postgres") == nullptr) return "there is no postgres user to run PostgreSQL as";
  if (::geteuid() != 0) return "the tests must run as root to start PostgreSQL as postgres";
  return "";
}

PgCluster* PgCluster::shared(int scale, std::string* error) {
  static std::unique_ptr<PgCluster> cluster;
  static std::string why;
  if (!cluster && why.empty()) {
    cluster = std::make_unique<PgCluster>(true);
    if (!cluster->ok() || !cluster->start() || !cluster->pgbench_init(scale) || !cluster->stop()) {
      why = cluster->error();
      cluster.reset();
    }
  }
  if (!cluster) *error = why;
  return cluster.get();
}

PgCluster::PgCluster(bool checksums) {
  char tmpl[] = "/var/tmp/sbpg.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    error_ = "mkdtemp failed";
    return;
  }
  root_ = tmpl;
  data_ = root_ + "/data";
  if (!chown_postgres(root_)) {
    error_ = "unable to give " + root_ + " to postgres";
    return;
  }
  std::vector<std::string> args{"-D", data_, "-A", "trust", "-U", "postgres", "--no-sync"};
  if (checksums) args.push_back("--data-checksums");
  RunResult r = run("initdb", args);
  if (!r.exited(0)) {
    error_ = "initdb failed: " + r.describe();
    return;
  }
  ok_ = true;
}

PgCluster::~PgCluster() {
  if (running_) stop();
  if (!root_.empty() && std::getenv("STRIPEBACK_KEEP_TEST_DIRS") == nullptr) {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
}

RunResult PgCluster::run(const std::string& program, const std::vector<std::string>& args,
                         std::chrono::milliseconds timeout) const {
  std::vector<std::string> argv{"/usr/sbin/runuser", "-u", "postgres", "--",
                                std::string(kBin) + "/" + program};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o;
  o.timeout = timeout;
  return testing::run(argv, o);
}

bool PgCluster::start() {
  RunResult r = run("pg_ctl", {"-D", data_, "-w", "-l", root_ + "/server.log", "-o",
                               "-k " + root_ + " -c listen_addresses='' -c fsync=off", "start"});
  if (!r.exited(0)) {
    error_ = "pg_ctl start failed: " + r.describe();
    return false;
  }
  running_ = true;
  return true;
}

bool PgCluster::stop() {
  RunResult r = run("pg_ctl", {"-D", data_, "-w", "-m", "fast", "stop"});
  running_ = false;
  if (!r.exited(0)) {
    error_ = "pg_ctl stop failed: " + r.describe();
    return false;
  }
  return true;
}

RunResult PgCluster::psql(const std::string& sql, const std::string& port) const {
  return run("psql", {"-h", root_, "-p", port, "-U", "postgres", "-d", "postgres", "-XAtq", "-c", sql});
}

bool PgCluster::wait_archived(const std::string& segment, std::chrono::seconds limit) const {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    RunResult s = psql("SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver");
    if (s.exited(0) && s.out.substr(0, 24) >= segment) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

bool PgCluster::give_to_postgres(const std::string& path) {
  const passwd* pw = ::getpwnam("postgres");
  if (pw == nullptr || ::lchown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0) return false;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return true;
  for (const auto& e : fs::recursive_directory_iterator(path, ec))
    if (::lchown(e.path().c_str(), pw->pw_uid, pw->pw_gid) != 0) return false;
  return !ec;
}

bool PgCluster::pgbench_init(int scale) {
  RunResult r = run("pgbench", {"-i", "-q", "-s", std::to_string(scale), "-h", root_, "-U",
                                "postgres", "postgres"});
  if (!r.exited(0)) {
    error_ = "pgbench -i failed: " + r.describe();
    return false;
  }
  return true;
}

std::unique_ptr<Subprocess> PgCluster::pgbench_run(int seconds, int clients) const {
  return std::make_unique<Subprocess>(std::vector<std::string>{
      "/usr/sbin/runuser", "-u", "postgres", "--", std::string(kBin) + "/pgbench", "-n", "-T",
      std::to_string(seconds), "-c", std::to_string(clients), "-h", root_, "-U", "postgres",
      "postgres"});
}

std::set<std::pair<std::string, uint64_t>> PgCluster::pg_checksums_failures(
    const std::string& data, int* exit_code) const {
  RunResult r = run("pg_checksums", {"--check", "-D", data});
  if (exit_code) *exit_code = r.exit_code;
  // Lines: checksum verification failed in file "F", block N: calculated checksum ...
  const std::string text = r.out + r.err;
  const std::string mark = "checksum verification failed in file \"";
  std::set<std::pair<std::string, uint64_t>> out;
  for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + 1)) {
    const size_t name = at + mark.size();
    const size_t quote = text.find('"', name);
    const size_t block = text.find("block ", quote);
    if (quote == std::string::npos || block == std::string::npos) break;
    out.insert({text.substr(name, quote - name), std::stoull(text.substr(block + 6))});
  }
  return out;
}

std::string PgCluster::copy_data(const std::string& name) const {
  const std::string to = root_ + "/" + name;
  fs::copy(data_, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  for (const auto& e : fs::recursive_directory_iterator(to)) chown_postgres(e.path().string());
  chown_postgres(to);
  ::chmod(to.c_str(), 0700);
  return to;
}

}  // namespace stripeback::testing
