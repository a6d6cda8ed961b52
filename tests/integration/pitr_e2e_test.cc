// The database administrator's whole round trip (docs/postgresql.md), against a real
// PostgreSQL 15 cluster: archive_command is stripeback archive-push; a backup --pg is taken
// while pgbench writes; a marker row and the time T; more transactions and a second
// marker; the WAL switched and archived; the cluster destroyed; restore --target-time T
// --target-action promote. PostgreSQL starts, recovers through archive-get to T and
// promotes: the first marker is there, the second is not, pgbench's balances agree and
// pg_amcheck finds nothing.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/integration/it_util.h"
#include "tests/support/pg_cluster.h"

namespace stripeback::it {
namespace {

namespace fs = std::filesystem;
using stripeback::testing::PgCluster;
using stripeback::testing::read_file;

// What the postgres user runs: stripeback with `args`, as PostgreSQL's own commands would.
RunResult sb_as_postgres(const std::vector<std::string>& args,
                         std::chrono::milliseconds timeout = std::chrono::minutes(5)) {
  std::vector<std::string> argv{"/usr/sbin/runuser", "-u", "postgres", "--", binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  stripeback::testing::RunOptions o;
  o.timeout = timeout;
  return stripeback::testing::run(argv, o);
}

class PitrEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PgCluster::skip_reason(); !why.empty()) GTEST_SKIP() << why;
    std::string unreachable;
    ASSERT_TRUE(binary_reachable_by_postgres(&unreachable)) << unreachable;
    ASSERT_TRUE(PgCluster::give_to_postgres(t_.path()));
    cluster_ = std::make_unique<PgCluster>();
    ASSERT_TRUE(cluster_->ok()) << cluster_->error();
  }
  void TearDown() override {
    // A restored cluster a failed check left running.
    if (cluster_ && !restored_.empty() && fs::exists(restored_ + "/postmaster.pid"))
      cluster_->run("pg_ctl", {"-D", restored_, "-w", "-m", "immediate", "stop"});
  }
  // The restored cluster runs on the same socket directory and port as the original did.
  RunResult psql(const std::string& sql) const { return cluster_->psql(sql); }
  std::string value(const std::string& sql) const {
    RunResult r = psql(sql);
    EXPECT_TRUE(r.exited(0)) << r.describe();
    std::string v = r.out;
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
    return v;
  }
  // Waits until `sql` answers `want` (or `limit` passes); the last answer.
  std::string wait_for(const std::string& sql, const std::string& want,
                       std::chrono::seconds limit = std::chrono::seconds(120)) const {
    const auto end = std::chrono::steady_clock::now() + limit;
    std::string got;
    while (std::chrono::steady_clock::now() < end) {
      RunResult r = psql(sql);
      got = r.out;
      while (!got.empty() && got.back() == '\n') got.pop_back();
      if (r.exited(0) && got == want) return got;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return got;
  }

  TempDir t_{"sbit-pitr-e2e"};
  std::unique_ptr<PgCluster> cluster_;
  std::string restored_;
};

TEST_F(PitrEndToEnd, RestoreToATimeRecoversToItAndPromotes) {
  const std::string cat = t_ / "cat", pieces = t_ / "pieces", socket = cluster_->socket_dir();
  const std::string data = cluster_->data_dir();
  // The archive: a catalog and a destination the postgres user writes, zstd and a key.
  RunResult k = sb_as_postgres({"keygen", t_ / "key"});
  SB_ASSERT_EXIT(k, 0);
  for (const auto& kv : std::vector<std::pair<std::string, std::string>>{
           {"destination", pieces}, {"compression", "low"}, {"key-file", t_ / "key"}}) {
    RunResult c = sb_as_postgres({"configure", kv.first, kv.second, "--catalog", cat});
    SB_ASSERT_EXIT(c, 0);
  }
  {
    std::ofstream conf(data + "/postgresql.auto.conf", std::ios::app);
    conf << "archive_mode = on\n"
         << "archive_command = '" << binary() << " archive-push --catalog " << cat << " %p'\n";
  }
  ASSERT_TRUE(cluster_->start()) << cluster_->error();
  ASSERT_TRUE(cluster_->pgbench_init(2)) << cluster_->error();

  // A hot backup while pgbench writes.
  auto bench = cluster_->pgbench_run(12, 2);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  RunResult b = sb_as_postgres({"backup", data, "--catalog", cat, "--json", "--pg",
                                cluster_->conninfo()});
  RunResult bench_done = bench->wait();
  SB_ASSERT_EXIT(b, 0);
  EXPECT_TRUE(bench_done.exited(0)) << bench_done.describe();
  const Json backup = parse_json(b);
  EXPECT_TRUE(backup["hot"].as_bool()) << b.describe();
  // The backup waited for the archiver: its last segment is archived.
  EXPECT_FALSE(contains(b.err, "has not archived")) << b.describe();

  // The first marker, then T, then more work and the second marker.
  RunResult m1 = psql("CREATE TABLE marker (name text PRIMARY KEY); INSERT INTO marker VALUES ('first')");
  SB_ASSERT_EXIT(m1, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string target =
      value("SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')");
  ASSERT_FALSE(target.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto more = cluster_->pgbench_run(3, 2);
  more->wait();
  RunResult m2 = psql("INSERT INTO marker VALUES ('second')");
  SB_ASSERT_EXIT(m2, 0);
  const std::string last = value("SELECT pg_walfile_name(pg_switch_wal())");
  ASSERT_EQ(last.size(), 24u) << last;
  EXPECT_TRUE(cluster_->wait_archived(last, std::chrono::seconds(120)))
      << "PostgreSQL did not archive " << last << " through archive-push";
  EXPECT_EQ(value("SELECT failed_count FROM pg_stat_archiver"), "0");

  // The cluster is lost.
  ASSERT_TRUE(cluster_->stop()) << cluster_->error();
  fs::remove_all(data);
  ASSERT_FALSE(fs::exists(data));

  // Restore to T, as the postgres user, into a new directory.
  const std::string to = t_ / "restored";
  fs::create_directories(to);
  ASSERT_TRUE(PgCluster::give_to_postgres(to));
  RunResult r = sb_as_postgres({"restore", "--to", to, "--catalog", cat, "--target-time", target,
                                "--target-action", "promote"});
  SB_ASSERT_EXIT(r, 0);
  const std::string restored = to + data;
  restored_ = restored;
  ASSERT_TRUE(fs::exists(restored + "/recovery.signal")) << r.describe();
  ASSERT_TRUE(fs::exists(restored + "/backup_label")) << r.describe();

  RunResult up = cluster_->run("pg_ctl", {"-D", restored, "-w", "-t", "180", "-l", t_ / "restored.log",
                                          "-o", "-k " + socket + " -c listen_addresses=''", "start"});
  ASSERT_TRUE(up.exited(0)) << up.describe() << "\n" << read_file(t_ / "restored.log");
  EXPECT_EQ(wait_for("SELECT pg_is_in_recovery()", "f"), "f")
      << "the restored cluster did not promote:\n" << read_file(t_ / "restored.log");
  EXPECT_EQ(value("SELECT string_agg(name, ',' ORDER BY name) FROM marker"), "first")
      << read_file(t_ / "restored.log");
  // pgbench's transactions are whole: every delta is in each of the three balances.
  const std::string sums = value(
      "SELECT (SELECT sum(abalance) FROM pgbench_accounts) || ',' || "
      "(SELECT sum(bbalance) FROM pgbench_branches) || ',' || "
      "(SELECT sum(tbalance) FROM pgbench_tellers) || ',' || "
      "(SELECT coalesce(sum(delta), 0) FROM pgbench_history)");
  const std::string first = sums.substr(0, sums.find(','));
  EXPECT_EQ(sums, first + "," + first + "," + first + "," + first) << sums;
  EXPECT_NE(value("SELECT count(*) FROM pgbench_history"), "0");
  RunResult check = cluster_->run("pg_amcheck", {"-h", socket, "-U", "postgres", "--install-missing",
                                                 "--heapallindexed", "postgres"});
  EXPECT_TRUE(check.exited(0)) << check.describe();
  EXPECT_EQ(check.out, "") << check.describe();
  RunResult down = cluster_->run("pg_ctl", {"-D", restored, "-w", "-m", "fast", "stop"});
  EXPECT_TRUE(down.exited(0)) << down.describe();
}

}  // namespace
}  // namespace stripeback::it
