// Locked backups (backup --lock-days, S3 Object Lock) against the S3 test gateway: every
// piece and the catalog autobackup are written locked; the backup's lock is in its JSON,
// in `list` and, after a catalog rebuild from the bucket, still there; delete obsolete
// keeps a locked backup and says until when, and the gateway itself refuses to delete a
// locked piece; a bucket without Object Lock, or a destination that is not in S3, is
// refused before anything is written; configure refuses a recovery window shorter than
// the lock. And the unfinished multipart uploads a killed backup leaves are aborted by
// the next backup.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>

#include "tests/s3/bucket_fixture.h"

namespace stripeback::it {
namespace {

using Clock = std::chrono::system_clock;

class S3LockedBucket : public S3BucketTest {
 protected:
  testing::ObjectLock bucket_lock() const override { return testing::ObjectLock::yes; }
};

// Seconds since the epoch of "2026-12-08T10:00:00Z".
int64_t utc_seconds(const std::string& text) {
  std::tm tm{};
  if (!strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
}

TEST_F(S3LockedBucket, LockedPiecesSurviveDeleteObsoleteAndARebuildKnowsTheLock) {
  TempDir t("sbs3l");
  make_file(t / "src/a.dbf", 12 << 20, 81);  // several parts of 5 MiB
  make_file(t / "src/b.txt", 3000, 82);
  const std::string dest = "s3://" + bucket_ + "/l";
  auto run = [&](std::vector<std::string> args) { return sb(std::move(args), env()); };
  const int64_t before = now_seconds();
  RunResult br = run({"backup", t / "src", "--to", dest, "--catalog", t / "cat", "--lock-days",
                      "1", "--lock-mode", "governance", "--s3-part-size", "5M", "--json"});
  SB_ASSERT_EXIT(br, 0);
  Json j = parse_json(br);
  ASSERT_EQ(j["lock_mode"].as_string(), "governance") << br.out;
  // One day after the end of the backup.
  const int64_t until = utc_seconds(j["locked_until"].as_string());
  EXPECT_GE(until, before + 86400) << br.out;
  EXPECT_LE(until, now_seconds() + 86400 + 5) << br.out;

  // Each piece is locked in the store until then, and so is the catalog autobackup.
  const auto keys = keys_under("l");
  size_t pieces = 0, catalogs = 0;
  for (const auto& k : keys) {
    pieces += k.ends_with(".sbp");
    catalogs += k.ends_with(".sbcat");
    auto head = testing::s3_curl(ep_, "HEAD", testing::s3_path(bucket_, k));
    ASSERT_EQ(head.status, 200) << head.describe();
    EXPECT_EQ(head.header("x-amz-object-lock-mode"), "GOVERNANCE") << k << head.describe();
    auto date = head.header("x-amz-object-lock-retain-until-date");
    ASSERT_TRUE(date.has_value()) << head.describe();
    EXPECT_GE(utc_seconds(*date), before + 86400) << k << ": " << *date;
  }
  EXPECT_EQ(pieces, 2u) << ::testing::PrintToString(keys);
  EXPECT_EQ(catalogs, 1u) << ::testing::PrintToString(keys);

  // list shows the lock.
  RunResult lj = run({"list", "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(lj, 0);
  const Json listed = parse_json(lj);
  const Json& backups = listed["backups"];
  ASSERT_EQ(backups.size(), 1u) << lj.out;
  EXPECT_EQ(backups[0]["locked_until"].as_string(), j["locked_until"].as_string()) << lj.out;
  RunResult lt = run({"list", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(lt, 0);
  EXPECT_TRUE(contains(lt.out, "backup 1 is locked until " + j["locked_until"].as_string() +
                                   " (governance)"))
      << lt.out;

  // A second backup makes the first obsolete; delete obsolete keeps it, saying until when,
  // and removes none of its objects.
  SB_ASSERT_EXIT(run({"configure", "retention", "redundancy", "1", "--catalog", t / "cat"}), 0);
  SB_ASSERT_EXIT(run({"backup", t / "src", "--to", dest, "--catalog", t / "cat"}), 0);
  const auto all = keys_under("l");
  RunResult del = run({"delete", "obsolete", "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(del, 0);
  Json d = parse_json(del);
  ASSERT_EQ(d["locked"].size(), 1u) << del.out;
  EXPECT_EQ(d["locked"][0]["backup_id"].as_u64(), 1u) << del.out;
  EXPECT_EQ(d["locked"][0]["locked_until"].as_string(), j["locked_until"].as_string());
  for (const auto& p : d["pieces"].items())
    EXPECT_FALSE(p["name"].as_string().starts_with("sb1-")) << "backup 1's piece planned: " << del.out;
  const auto after_report = keys_under("l");
  for (const auto& k : keys) {
    if (!k.ends_with(".sbp")) continue;
    EXPECT_NE(std::find(after_report.begin(), after_report.end(), k), after_report.end())
        << k << " was deleted";
  }
  RunResult dt = run({"delete", "obsolete", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(dt, 0);
  EXPECT_TRUE(contains(dt.out, "backup 1 is locked until " + j["locked_until"].as_string() +
                                   " (governance): it and its pieces stay"))
      << dt.out;
  EXPECT_GE(keys_under("l").size(), all.size() - 1) << "at most the older autobackup goes";

  // The gateway itself refuses to delete a locked piece's version.
  std::string why;
  auto versions = testing::s3_list_versions(ep_, bucket_, &why);
  ASSERT_TRUE(versions.has_value()) << why;
  std::string piece_version, piece_key;
  for (const auto& v : *versions)
    if (v.key == keys.front() || (v.key.ends_with(".sbp") && piece_key.empty())) {
      piece_key = v.key;
      piece_version = v.version_id;
    }
  ASSERT_FALSE(piece_key.empty());
  auto refused = testing::s3_curl(ep_, "DELETE",
                                  testing::s3_path(bucket_, piece_key) + "?versionId=" + piece_version);
  EXPECT_EQ(refused.status, 403) << refused.describe();

  // A catalog rebuilt from the bucket alone knows the lock.
  RunResult rb = run({"catalog", "rebuild", "--from", dest, "--catalog", t / "cat2"});
  SB_ASSERT_EXIT(rb, 0);
  RunResult l2 = run({"list", "--catalog", t / "cat2", "--json"});
  SB_ASSERT_EXIT(l2, 0);
  bool found = false;
  const Json rebuilt = parse_json(l2);
  for (const auto& b : rebuilt["backups"].items())
    if (b["backup_id"].as_u64() == 1u) {
      found = true;
      EXPECT_EQ(b["lock_mode"].as_string(), "governance") << l2.out;
      EXPECT_GE(utc_seconds(b["locked_until"].as_string()), before + 86400) << l2.out;
    }
  EXPECT_TRUE(found) << l2.out;

  // And the backup restores.
  RunResult rr = run({"restore", "--to", t / "out", "--catalog", t / "cat", "--backup", "1"});
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(t / "out", t / "src"));
}

TEST_F(S3BucketTest, LockDaysOnABucketWithoutObjectLockIsRefusedBeforeAnythingIsWritten) {
  TempDir t("sbs3l");
  make_file(t / "src/a.txt", 1000, 91);
  RunResult br = sb({"backup", t / "src", "--to", "s3://" + bucket_ + "/n", "--catalog",
                     t / "cat", "--lock-days", "7"},
                    env());
  EXPECT_TRUE(br.exited(1) || br.exited(2)) << br.describe();
  EXPECT_TRUE(contains(br.err, "bucket '" + bucket_ + "'")) << br.err;
  EXPECT_TRUE(contains(br.err, "does not have Object Lock enabled")) << br.err;
  EXPECT_TRUE(contains(br.err, "--lock-days")) << br.err;
  EXPECT_TRUE(keys_under("n").empty());
  EXPECT_TRUE(uploads_under("n").empty());
}

// A backup killed in the middle of a multipart upload leaves the upload unfinished; the
// next backup to the destination aborts it and says so.
TEST_F(S3BucketTest, TheNextBackupAbortsTheUnfinishedUploadsOfAKilledOne) {
  TempDir t("sbs3l");
  make_file(t / "src/big.dbf", 64 << 20, 92);
  const std::string dest = "s3://" + bucket_ + "/k";
  auto child = sb_start({"backup", t / "src", "--to", dest, "--catalog", t / "cat", "--channels",
                         "1", "--rate", "8M", "--s3-part-size", "5M"},
                        env());
  const auto t0 = std::chrono::steady_clock::now();
  while (uploads_under("k").empty() &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_FALSE(uploads_under("k").empty()) << "no multipart upload began within 30 s";
  child->kill(SIGKILL);
  (void)child->wait();
  ASSERT_FALSE(uploads_under("k").empty());

  make_file(t / "src2/small.txt", 4000, 93);
  RunResult br = sb({"backup", t / "src2", "--to", dest, "--catalog", t / "cat"}, env());
  SB_ASSERT_EXIT(br, 0);
  EXPECT_TRUE(contains(br.out + br.err, "1 unfinished upload(s) of pieces of backups that did not "
                                         "complete were aborted in '" + dest + "'"))
      << br.describe();
  EXPECT_TRUE(uploads_under("k").empty()) << ::testing::PrintToString(uploads_under("k"));
}

// Not S3: the lock needs a medium that has one, and a recovery window at least as long.
TEST(LockOptions, ADirectoryDestinationAndAShortRecoveryWindowAreRefused) {
  TempDir t("sblock");
  make_file(t / "src/a.txt", 100, 94);
  RunResult br = sb({"backup", t / "src", "--to", t / "dest", "--catalog", t / "cat",
                     "--lock-days", "3"});
  SB_EXPECT_EXIT(br, 2);
  EXPECT_TRUE(contains(br.err, "--lock-days")) << br.err;
  EXPECT_TRUE(contains(br.err, t / "dest")) << br.err;
  RunResult mode = sb({"backup", t / "src", "--to", t / "dest", "--catalog", t / "cat",
                       "--lock-mode", "governance"});
  SB_EXPECT_EXIT(mode, 2);
  EXPECT_TRUE(contains(mode.err, "--lock-mode goes with --lock-days")) << mode.err;

  SB_ASSERT_EXIT(sb({"configure", "lock-days", "30", "--catalog", t / "cat"}), 0);
  RunResult shorter = sb({"configure", "retention", "recovery-window", "7", "--catalog", t / "cat"});
  SB_EXPECT_EXIT(shorter, 2);
  EXPECT_TRUE(contains(shorter.err, "shorter than the lock of 30 day(s)")) << shorter.err;
  SB_ASSERT_EXIT(sb({"configure", "retention", "recovery-window", "30", "--catalog", t / "cat"}), 0);
  RunResult longer = sb({"configure", "lock-days", "31", "--catalog", t / "cat"});
  SB_EXPECT_EXIT(longer, 2);
  EXPECT_TRUE(contains(longer.err, "recovery-window 30")) << longer.err;
  RunResult bad = sb({"configure", "lock-mode", "forever", "--catalog", t / "cat"});
  SB_EXPECT_EXIT(bad, 2);
}

}  // namespace
}  // namespace stripeback::it
