// A real PostgreSQL 15 cluster for tests (Debian's postgresql-15): made with initdb as the
// postgres user in a temporary directory, started on a Unix socket there (no TCP), filled
// with pgbench, stopped and removed when the object goes.
//
// Tests call PgCluster::skip_reason() and skip with it when it is not empty (PostgreSQL is
// not installed, or the tests do not run as root and cannot become postgres).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/support/run.h"

namespace stripeback::testing {

class PgCluster {
 public:
  // Why clusters cannot be made here; empty when they can.
  static std::string skip_reason();
  // The directory of PostgreSQL's programs (initdb, pg_ctl, pgbench, pg_checksums, ...).
  static std::string bin_dir();

  // A cluster with data checksums and pgbench data at `scale`, stopped, made once per test
  // program and kept until it ends; null (with why in *error) when it could not be made.
  static PgCluster* shared(int scale, std::string* error);

  // initdb into a new temporary directory (with data checksums unless told otherwise).
  explicit PgCluster(bool checksums = true);
  ~PgCluster();
  PgCluster(const PgCluster&) = delete;
  PgCluster& operator=(const PgCluster&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }  // why initdb or start failed
  const std::string& data_dir() const { return data_; }
  const std::string& socket_dir() const { return root_; }

  // A libpq connection string to this cluster (backup --pg).
  std::string conninfo() const { return "host=" + root_ + " user=postgres dbname=postgres"; }

  bool start();
  bool stop();
  // Runs one of PostgreSQL's programs as the postgres user.
  RunResult run(const std::string& program, const std::vector<std::string>& args,
                std::chrono::milliseconds timeout = std::chrono::minutes(5)) const;
  // pgbench -i at `scale` (about 15 MB per unit) into database postgres; the cluster runs.
  bool pgbench_init(int scale);
  // Starts pgbench writing for `seconds` with `clients`, returning the process.
  std::unique_ptr<Subprocess> pgbench_run(int seconds, int clients) const;
  // psql -XAtq -c `sql` in database postgres, on this cluster's socket directory and `port`
  // (another cluster started there with this one's programs, a restored copy, has its own).
  RunResult psql(const std::string& sql, const std::string& port = "5432") const;
  // Waits (up to `limit`) until PostgreSQL's archiver has archived `segment` or a later one
  // (pg_stat_archiver.last_archived_wal).
  bool wait_archived(const std::string& segment,
                     std::chrono::seconds limit = std::chrono::seconds(60)) const;
  // Gives `path` and everything below it to the postgres user (what PostgreSQL's own
  // commands, archive_command among them, must write).
  static bool give_to_postgres(const std::string& path);
  // Copies the data directory (the cluster stopped) to a new directory, owned by postgres.
  std::string copy_data(const std::string& name) const;
  // Runs pg_checksums --check on `data` (a stopped cluster's data directory): the file and
  // block number of every page it reports, and its exit code in *exit_code.
  std::set<std::pair<std::string, uint64_t>> pg_checksums_failures(const std::string& data,
                                                                   int* exit_code = nullptr) const;

 private:
  std::string root_, data_;
  bool ok_ = false, running_ = false;
  std::string error_;
};

}  // namespace stripeback::testing
