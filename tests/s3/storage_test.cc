// The stripeback binary with s3:// destinations against the S3 test gateway: a backup of a
// tree with a multipart object, small and empty files restores identically and validates;
// its pieces are objects under the prefix; a missing bucket is refused by name; crosscheck,
// catalog rebuild and delete obsolete work on the objects; a gateway stopped mid-backup
// fails the job within its attempts, recording no piece.
#include <signal.h>

#include <chrono>
#include <regex>
#include <thread>

#include "tests/s3/bucket_fixture.h"

namespace stripeback::it {
namespace {

// The tests' own name for the shared fixture.
class S3Storage : public S3BucketTest {};

TEST_F(S3Storage, BackupToS3RestoresIdenticallyAndValidates) {
  TempDir t("sbs3");
  make_file(t / "src/big.dbf", 40 << 20, 31);  // several parts of the default 16 MiB
  make_file(t / "src/small/a.txt", 1234, 32);
  make_file(t / "src/small/b.txt", 70000, 33, 0600);
  make_file(t / "src/empty", 0, 34);
  const std::string dest = "s3://" + bucket_ + "/p";
  RunResult br = sb({"backup", t / "src", "--to", dest, "--channels", "2", "--catalog",
                     t / "cat", "--json"},
                    env());
  SB_ASSERT_EXIT(br, 0);
  Json j = parse_json(br);
  ASSERT_EQ(j["status"].as_string(), "complete") << br.describe();
  EXPECT_EQ(j["files"].as_u64(), 4u);
  for (const auto& c : j["channels"].items()) {
    const Json* s = c.find("s3");
    ASSERT_NE(s, nullptr) << br.out;
    EXPECT_GT(*(*s)["requests"].as_u64(), 0u);
  }

  // The pieces (one per channel) and the catalog's copy are objects under the prefix.
  auto keys = keys_under("p");
  size_t pieces = 0, catalogs = 0;
  for (const auto& k : keys) {
    EXPECT_EQ(k.rfind("p/", 0), 0u) << k;
    pieces += k.ends_with(".sbp");
    catalogs += k.ends_with(".sbcat");
  }
  EXPECT_EQ(pieces, 2u) << ::testing::PrintToString(keys);
  EXPECT_EQ(catalogs, 1u) << ::testing::PrintToString(keys);

  RunResult rr = sb({"restore", "--to", t / "out", "--catalog", t / "cat", "--channels", "2"},
                    env());
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(t / "out", t / "src"));

  RunResult vr = sb({"validate", "--catalog", t / "cat"}, env());
  SB_EXPECT_EXIT(vr, 0);

  RunResult lr = sb({"list", "--catalog", t / "cat"}, env());
  SB_ASSERT_EXIT(lr, 0);
  EXPECT_TRUE(contains(lr.out, "complete"));
  EXPECT_TRUE(contains(lr.out, dest));
}

TEST_F(S3Storage, BackupToAMissingBucketFailsNamingIt) {
  TempDir t("sbs3");
  make_file(t / "src/a.txt", 100, 41);
  const std::string missing = bucket_ + "-missing";
  RunResult br = sb({"backup", t / "src", "--to", "s3://" + missing + "/p", "--catalog",
                     t / "cat"},
                    env());
  EXPECT_TRUE(br.exited(1) || br.exited(2)) << br.describe();
  EXPECT_TRUE(contains(br.err, "'" + missing + "'"));
}

TEST_F(S3Storage, BackupWithoutCredentialsFailsSayingWhatIsMissing) {
  TempDir t("sbs3");
  make_file(t / "src/a.txt", 100, 51);
  Env e = env();
  for (auto& [name, value] : e)
    if (name == "AWS_ACCESS_KEY_ID" || name == "AWS_SECRET_ACCESS_KEY") value = std::nullopt;
  RunResult br = sb({"backup", t / "src", "--to", "s3://" + bucket_ + "/p", "--catalog",
                     t / "cat"},
                    e);
  EXPECT_TRUE(br.exited(1) || br.exited(2)) << br.describe();
  EXPECT_TRUE(contains(br.err, "s3://" + bucket_ + "/p"));
  EXPECT_TRUE(keys_under("p").empty());
}

// The media maintenance commands on pieces that are objects: crosscheck (a HEAD of each
// piece) and crosscheck --deep (every byte read), a catalog rebuilt from the bucket alone,
// and delete obsolete removing the objects of the backup retention no longer needs; a level
// 1 chain on the bucket restores identically after that.
TEST_F(S3Storage, CrosscheckRebuildAndDeleteObsoleteWorkOnObjects) {
  TempDir t("sbs3");
  make_file(t / "src/a.dbf", 24 << 20, 61);
  make_file(t / "src/b.txt", 5000, 62);
  const std::string dest = "s3://" + bucket_ + "/m";
  auto run = [&](std::vector<std::string> args) { return sb(std::move(args), env()); };
  SB_ASSERT_EXIT(run({"backup", t / "src", "--to", dest, "--catalog", t / "cat"}), 0);

  RunResult cc = run({"crosscheck", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(cc, 0);
  EXPECT_TRUE(contains(cc.out, "available, 0 expired")) << cc.out;
  RunResult deep = run({"crosscheck", "--deep", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(deep, 0);
  EXPECT_TRUE(contains(deep.out, "(deep)")) << deep.out;

  // A catalog made again from the objects alone knows the backup, complete.
  RunResult rb = run({"catalog", "rebuild", "--from", dest, "--catalog", t / "cat2"});
  SB_ASSERT_EXIT(rb, 0);
  RunResult l2 = run({"list", "--catalog", t / "cat2"});
  SB_ASSERT_EXIT(l2, 0);
  EXPECT_TRUE(contains(l2.out, "complete")) << l2.out;
  EXPECT_TRUE(contains(l2.out, dest)) << l2.out;

  // Redundancy 1: once a level 0 and a level 1 exist, the first backup is obsolete, and
  // deleting it removes its objects.
  SB_ASSERT_EXIT(run({"configure", "retention", "redundancy", "1", "--catalog", t / "cat"}), 0);
  SB_ASSERT_EXIT(run({"backup", t / "src", "--to", dest, "--level", "0", "--catalog", t / "cat"}),
                 0);
  make_file(t / "src/b.txt", 6000, 63);
  SB_ASSERT_EXIT(run({"backup", t / "src", "--to", dest, "--level", "1", "--catalog", t / "cat"}),
                 0);
  const size_t before = keys_under("m").size();
  RunResult del = run({"delete", "obsolete", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(del, 0);
  EXPECT_TRUE(contains(del.out, "1 backup(s) deleted")) << del.out;
  const size_t after = keys_under("m").size();
  EXPECT_LT(after, before) << "the obsolete backup's objects are gone";

  RunResult rr = run({"restore", "--to", t / "out", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(t / "out", t / "src"));
}

// The gateway's process id, from scripts/s3-server.sh status ("rgw PID"), or 0.
pid_t gateway_pid() {
  const std::string script = std::string(STRIPEBACK_SOURCE_DIR) + "/scripts/s3-server.sh";
  RunResult st = testing::run({"/bin/bash", script, "status"});
  std::smatch m;
  static const std::regex rgw("rgw ([0-9]+)");
  return std::regex_search(st.out, m, rgw) ? static_cast<pid_t>(std::stol(m[1])) : 0;
}

// A gateway that stops answering in the middle of a backup (SIGSTOP): the job fails within
// its attempts x (timeout + backoff), naming the store and the cause, and the catalog
// records no piece: the backup is failed, and after the gateway comes back nothing of it
// can be restored as if it were complete.
TEST_F(S3Storage, AStoppedGatewayFailsTheBackupWithinItsDeadlineRecordingNoPiece) {
  const pid_t rgw = gateway_pid();
  ASSERT_GT(rgw, 0) << "no gateway process";
  TempDir t("sbs3");
  make_file(t / "src/big.dbf", 96 << 20, 71);
  const auto t0 = std::chrono::steady_clock::now();
  auto child = sb_start({"backup", t / "src", "--to", "s3://" + bucket_ + "/stop", "--catalog",
                         t / "cat", "--channels", "1", "--rate", "16M", "--s3-part-size", "5M",
                         "--s3-timeout", "2s", "--s3-attempts", "3", "--json"},
                        env());
  // Stopped once the backup has read something, so the stop falls inside its uploads.
  bool reading = false;
  while (!reading && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
    RunResult st = sb({"status", "--catalog", t / "cat", "--json"});
    if (st.exited(0)) {
      Json jobs = parse_json(st)["jobs"];
      reading = jobs.size() == 1 && jobs[0]["bytes_done"].as_u64().value_or(0) > (8u << 20);
    }
    if (!reading) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(reading) << "the backup read nothing within 30 s";
  ::kill(rgw, SIGSTOP);
  const auto stopped = std::chrono::steady_clock::now();
  RunResult r = child->wait();
  const auto took = std::chrono::steady_clock::now() - stopped;
  ::kill(rgw, SIGCONT);
  SB_EXPECT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.out + r.err, "s3://" + bucket_ + "/stop")) << r.describe();
  // 3 attempts of 2 s and the backoff between them (at most 5 s each), with room for a
  // loaded machine.
  EXPECT_LT(took, std::chrono::seconds(45));
  RunResult lr = sb({"list", "--catalog", t / "cat"}, env());
  SB_ASSERT_EXIT(lr, 0);
  EXPECT_TRUE(contains(lr.out, "failed")) << lr.out;
  EXPECT_FALSE(contains(lr.out, "complete")) << lr.out;
}

}  // namespace
}  // namespace stripeback::it
