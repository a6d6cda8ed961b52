// backup --pg against a real PostgreSQL 15 cluster (docs/postgresql.md): a backup while
// pgbench writes exits 0 with the cluster's backup mode recorded (LSNs, WAL range, label)
// and what base backups leave out left out; a session that dies between pg_backup_start
// and pg_backup_stop fails the backup, recorded failed; bad usage is refused before the
// server is touched.
#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/integration/it_util.h"
#include "tests/support/pg_cluster.h"

namespace stripeback::it {
namespace {

namespace fs = std::filesystem;
using stripeback::testing::PgCluster;

class PgBackup : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PgCluster::skip_reason(); !why.empty()) GTEST_SKIP() << why;
    cluster_ = std::make_unique<PgCluster>();
    ASSERT_TRUE(cluster_->ok()) << cluster_->error();
    ASSERT_TRUE(cluster_->start()) << cluster_->error();
  }
  std::string conninfo() const {
    return cluster_->conninfo();
  }
  RunResult psql(const std::string& sql) const { return cluster_->psql(sql); }

  std::unique_ptr<PgCluster> cluster_;
  stripeback::testing::TempDir tmp_{"sbit-pgbackup"};
};

TEST_F(PgBackup, BackupWhilePgbenchWritesRecordsTheBackupModeAndLeavesOutRuntimeFiles) {
  ASSERT_TRUE(cluster_->pgbench_init(2)) << cluster_->error();
  // A leftover temporary file and a relation cache: never part of a base backup.
  const std::string data = cluster_->data_dir();
  make_file(data + "/base/pgsql_tmp_leftover", 4096, 7);
  auto bench = cluster_->pgbench_run(8, 2);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  RunResult b = sb({"backup", data, "--to", tmp_ / "pieces", "--catalog", tmp_ / "cat",
                    "--json", "--pg", conninfo(), "--check-logical", "--tag", "nightly"},
                   {}, std::chrono::minutes(5));
  bench->wait();
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  EXPECT_EQ(j["status"].as_string(), "complete") << b.describe();
  EXPECT_TRUE(j["hot"].as_bool()) << b.describe();
  EXPECT_EQ(j["changed_files"].size(), 0u) << b.describe();
  const Json& pg = j["postgres"];
  EXPECT_EQ(pg["timeline"].as_u64(), 1u) << b.describe();
  EXPECT_FALSE(pg["start_lsn"].as_string().empty()) << b.describe();
  EXPECT_FALSE(pg["stop_lsn"].as_string().empty()) << b.describe();
  EXPECT_EQ(pg["start_wal"].as_string().size(), 24u) << b.describe();
  EXPECT_LE(pg["start_wal"].as_string(), pg["stop_wal"].as_string()) << b.describe();
  EXPECT_TRUE(contains(pg["label"].as_string(), "nightly")) << b.describe();
  // archive_mode is off in this cluster: the WAL is not kept, and the backup says so.
  EXPECT_TRUE(contains(b.err, "archive_mode is off")) << b.describe();
  EXPECT_EQ(b.err.find("corrupt"), std::string::npos) << b.describe();

  // The server's own record of the backup agrees: its backup_label names the same start.
  const std::string id = std::to_string(j["backup_id"].as_u64().value_or(0));
  RunResult files = sb({"list", "--backup", id, "--files", "--json", "--catalog", tmp_ / "cat"});
  SB_ASSERT_EXIT(files, 0);
  bool has_wal_dir = false, has_relation = false;
  const Json listing = parse_json(files);
  for (const auto& f : listing["files"].items()) {
    const std::string p = f["path"].as_string();
    const std::string rel = p.substr(data.size());
    EXPECT_EQ(rel.rfind("/pg_wal/0", 0), std::string::npos) << "a WAL segment was copied: " << p;
    EXPECT_NE(rel, "/postmaster.pid");
    EXPECT_NE(rel, "/postmaster.opts");
    EXPECT_EQ(rel.find("pgsql_tmp"), std::string::npos) << p;
    has_wal_dir = has_wal_dir || rel == "/pg_wal";
    has_relation = has_relation || rel.rfind("/base/", 0) == 0;
  }
  EXPECT_TRUE(has_wal_dir) << "pg_wal/ itself is kept, empty";
  EXPECT_TRUE(has_relation);

  RunResult l = sb({"list", "--backup", id, "--catalog", tmp_ / "cat"});
  SB_ASSERT_EXIT(l, 0);
  EXPECT_TRUE(contains(l.out, "is hot: ")) << l.describe();
  EXPECT_TRUE(contains(l.out, "PostgreSQL backup mode from " + pg["start_lsn"].as_string()))
      << l.describe();
  RunResult lj = sb({"list", "--backup", id, "--json", "--catalog", tmp_ / "cat"});
  SB_ASSERT_EXIT(lj, 0);
  const Json all = parse_json(lj);
  const Json& listed = all["backups"][0];
  EXPECT_TRUE(listed["hot"].as_bool()) << lj.describe();
  EXPECT_EQ(listed["postgres"]["stop_lsn"].as_string(), pg["stop_lsn"].as_string());

  // The mode ended: the server is not in backup mode any more, so a second one starts.
  RunResult again = sb({"backup", data, "--to", tmp_ / "pieces", "--catalog", tmp_ / "cat",
                        "--json", "--pg", conninfo()},
                       {}, std::chrono::minutes(5));
  SB_ASSERT_EXIT(again, 0);
}

TEST_F(PgBackup, SessionKilledBetweenStartAndStopFailsTheBackup) {
  ASSERT_TRUE(cluster_->pgbench_init(1)) << cluster_->error();
  // Slow enough (2 MiB/s over some 25 MiB) to find and end its session while it copies.
  auto child = sb_start({"backup", cluster_->data_dir(), "--to", tmp_ / "pieces", "--catalog",
                         tmp_ / "cat", "--json", "--pg", conninfo(), "--channels", "1",
                         "--rate", "2M"},
                        {}, std::chrono::minutes(5));
  ASSERT_TRUE(child->started());
  bool killed = false;
  for (int i = 0; i < 200 && !killed; ++i) {
    RunResult k = psql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE query LIKE 'SELECT pg_backup_start%' AND state = 'idle' "
        "AND pid <> pg_backend_pid()");
    killed = k.exited(0) && k.out.rfind("1", 0) == 0;
    if (!killed) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // (idle: pg_backup_start has returned, the copy runs.)
  ASSERT_TRUE(killed) << "the backup's session was never seen in backup mode";
  RunResult b = child->wait();
  SB_ASSERT_EXIT(b, 1);
  EXPECT_TRUE(contains(b.err, "backup mode could not be ended")) << b.describe();
  EXPECT_TRUE(contains(b.err, "without its backup_label")) << b.describe();
  RunResult l = sb({"list", "--json", "--catalog", tmp_ / "cat"});
  SB_ASSERT_EXIT(l, 0);
  ASSERT_EQ(parse_json(l)["backups"].size(), 1u) << l.describe();
  EXPECT_EQ(parse_json(l)["backups"][0]["status"].as_string(), "failed") << l.describe();
  // PostgreSQL ended the mode with the session: a new backup starts.
  RunResult again = sb({"backup", cluster_->data_dir(), "--to", tmp_ / "pieces2", "--catalog",
                        tmp_ / "cat", "--json", "--pg", conninfo()},
                       {}, std::chrono::minutes(5));
  SB_ASSERT_EXIT(again, 0);
}

TEST_F(PgBackup, BadUsageIsRefusedNamingTheCause) {
  const std::string data = cluster_->data_dir();
  const std::string to = tmp_ / "pieces", cat = tmp_ / "cat";
  // Not the data directory of the cluster the connection reaches.
  fs::create_directories(tmp_ / "other");
  RunResult r = sb({"backup", tmp_ / "other", "--to", to, "--catalog", cat, "--pg", conninfo()});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "is not the data directory")) << r.describe();
  // No server there.
  r = sb({"backup", data, "--to", to, "--catalog", cat, "--pg",
          "host=" + std::string(tmp_ / "nothing") + " user=postgres connect_timeout=2"});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "cannot connect to PostgreSQL")) << r.describe();
  // Two sources, and a validation.
  r = sb({"backup", data, tmp_ / "other", "--to", to, "--catalog", cat, "--pg", conninfo()});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "one SOURCE")) << r.describe();
  r = sb({"backup", "--validate", data, "--catalog", cat, "--pg", conninfo()});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "--pg is a backup")) << r.describe();
  // Nothing was written, and the server is not left in backup mode.
  EXPECT_FALSE(fs::exists(to)) << "a refused backup wrote pieces";
  RunResult mode = psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_backup_start%'");
  EXPECT_TRUE(mode.exited(0) && mode.out.rfind("0", 0) == 0) << mode.describe();
}

}  // namespace
}  // namespace stripeback::it
