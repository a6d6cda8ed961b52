// The stripeback binary with s3:// destinations against the S3 test gateway: a backup of a
// tree with a multipart object, small and empty files restores identically and validates;
// its pieces are objects under the prefix; a missing bucket is refused by name; crosscheck,
// catalog rebuild and delete obsolete work on the objects; a restore of one path and a delta
// restore read only the frames they need; the catalog's autobackup object rebuilds the
// catalog; a killed backup resumed to the bucket keeps the objects of its finished pieces
// (they are not written again); objects are written encrypted with the gateway's KMS key and
// in a storage class when asked; a gateway stopped mid-backup fails the job within its
// attempts, recording no piece.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <regex>
#include <thread>

#include "tests/s3/bucket_fixture.h"

namespace stripeback::it {
namespace {

// The tests' own name for the shared fixture, with what tells one write of an object from
// another.
class S3Storage : public S3BucketTest {
 protected:
  // The objects under `prefix`/: key -> LastModified and ETag.
  std::map<std::string, std::string> objects_under(const std::string& prefix) {
    auto r = testing::s3_curl(ep_, "GET",
                              testing::s3_path(bucket_) + "?list-type=2&prefix=" + prefix + "%2F");
    EXPECT_EQ(r.status, 200) << r.describe();
    std::map<std::string, std::string> out;
    static const std::regex entry(
        "<Contents><Key>([^<]*)</Key><LastModified>([^<]*)</LastModified><ETag>([^<]*)</ETag>");
    for (std::sregex_iterator it(r.body.begin(), r.body.end(), entry), end; it != end; ++it)
      out[(*it)[1]] = std::string((*it)[2]) + " " + std::string((*it)[3]);
    return out;
  }
};

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

// Objects written with SSE-KMS (the gateway's test key) and an explicit storage class: the
// backup restores byte for byte, and every object under the prefix (pieces, some written in
// parts, and the catalog's autobackup) is encrypted with that key as HEAD shows, and in that
// class where the gateway shows it. A key or a class the gateway does not know fails the
// backup, naming the location.
TEST_F(S3Storage, SseKmsAndAStorageClassReachEveryObject) {
  if (ep_.kms_key_id.empty())
    GTEST_SKIP() << "the S3 test gateway has no KMS test key: it was started by an older "
                    "scripts/s3-server.sh (stop and start it again)";
  TempDir t("sbs3");
  make_file(t / "src/big.dbf", 24 << 20, 81);  // 5 parts of 5M
  make_file(t / "src/small.txt", 3000, 82);
  const std::string dest = "s3://" + bucket_ + "/kms";
  RunResult br = sb({"backup", t / "src", "--to", dest, "--catalog", t / "cat", "--channels", "2",
                     "--s3-part-size", "5M", "--s3-sse", "aws:kms", "--s3-sse-kms-key-id",
                     ep_.kms_key_id, "--s3-storage-class", "STANDARD"},
                    env());
  SB_ASSERT_EXIT(br, 0);
  RunResult rr = sb({"restore", "--to", t / "out", "--catalog", t / "cat"}, env());
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(t / "out", t / "src"));

  auto keys = keys_under("kms");
  size_t pieces = 0, catalogs = 0, classed = 0;
  for (const auto& k : keys) {
    SCOPED_TRACE(k);
    pieces += k.ends_with(".sbp");
    catalogs += k.ends_with(".sbcat");
    auto head = testing::s3_curl(ep_, "HEAD", testing::s3_path(bucket_, k));
    ASSERT_EQ(head.status, 200) << head.describe();
    EXPECT_EQ(head.header("x-amz-server-side-encryption"), "aws:kms") << head.headers;
    EXPECT_EQ(head.header("x-amz-server-side-encryption-aws-kms-key-id"), ep_.kms_key_id)
        << head.headers;
    // The gateway shows the class of objects put whole, not of those completed from parts
    // (their ETag ends "-N").
    if (std::regex_search(head.header("etag").value_or(""), std::regex("-[0-9]+\"?$"))) continue;
    EXPECT_EQ(head.header("x-amz-storage-class"), "STANDARD") << head.headers;
    ++classed;
  }
  EXPECT_EQ(pieces, 2u) << ::testing::PrintToString(keys);
  EXPECT_EQ(catalogs, 1u) << ::testing::PrintToString(keys);
  EXPECT_GE(classed, 1u) << "no object put whole";

  // A class the gateway's placement does not define is refused by it, failing the backup.
  RunResult cold = sb({"backup", t / "src", "--to", "s3://" + bucket_ + "/cold", "--catalog",
                       t / "cat", "--s3-storage-class", "GLACIER"},
                      env());
  EXPECT_TRUE(cold.exited(1) || cold.exited(2)) << cold.describe();
  EXPECT_TRUE(contains(cold.err, "s3://" + bucket_ + "/cold")) << cold.err;
  EXPECT_TRUE(contains(cold.err, "InvalidArgument")) << cold.err;
  EXPECT_TRUE(keys_under("cold").empty());

  RunResult bad = sb({"backup", t / "src", "--to", "s3://" + bucket_ + "/nokey", "--catalog",
                      t / "cat", "--s3-sse", "aws:kms", "--s3-sse-kms-key-id", "no-such-key"},
                     env());
  EXPECT_TRUE(bad.exited(1) || bad.exited(2)) << bad.describe();
  EXPECT_TRUE(contains(bad.err, "s3://" + bucket_ + "/nokey")) << bad.err;
  EXPECT_TRUE(contains(bad.err, "no-such-key")) << bad.err;
}

// Restores that need only some of the objects' bytes: one path of the backup, and a delta
// restore over a target that differs in one block, which reads that block's frame (a
// ranged GET) and writes only it.
TEST_F(S3Storage, ARestoreOfOnePathAndADeltaRestoreReadOnlyWhatTheyNeed) {
  TempDir t("sbs3");
  const std::string src = t / "src";
  make_file(src + "/big.dbf", 24 << 20, 91);
  make_file(src + "/small/a.txt", 1234, 92);
  make_file(src + "/small/b.txt", 70000, 93);
  const std::string dest = "s3://" + bucket_ + "/part";
  auto run = [&](std::vector<std::string> args) { return sb(std::move(args), env()); };
  SB_ASSERT_EXIT(run({"backup", src, "--to", dest, "--catalog", t / "cat"}), 0);

  // One path: that file alone, identical, and little of the pieces read.
  RunResult one = run({"restore", "--to", t / "one", "--catalog", t / "cat", "--json",
                       src + "/small/a.txt"});
  SB_ASSERT_EXIT(one, 0);
  Json oj = parse_json(one);
  EXPECT_EQ(oj["files"].as_u64(), 1u) << one.out;
  EXPECT_LT(*oj["piece_bytes_read"].as_u64(), 1u << 20) << one.out;
  EXPECT_TRUE(restored_exactly(t / "one", {src + "/small/a.txt"}));

  // A whole restore, then 4 KiB of the big file changed in the target: the delta restore
  // updates that file in place, leaves the other two, and reads about one frame.
  SB_ASSERT_EXIT(run({"restore", "--to", t / "all", "--catalog", t / "cat"}), 0);
  const std::string copy = restored_path(t / "all", src + "/big.dbf");
  {
    const std::string junk(4096, 'x');
    int fd = ::open(copy.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), 10 << 20),
              static_cast<ssize_t>(junk.size()));
    ::close(fd);
  }
  ASSERT_FALSE(same_file(src + "/big.dbf", copy));
  RunResult delta = run({"restore", "--delta", "--to", t / "all", "--catalog", t / "cat",
                         "--json"});
  SB_ASSERT_EXIT(delta, 0);
  Json dj = parse_json(delta);
  EXPECT_EQ(dj["delta"]["files_compared"].as_u64(), 3u) << delta.out;
  EXPECT_EQ(dj["delta"]["updated"].as_u64(), 1u) << delta.out;
  EXPECT_EQ(dj["delta"]["unchanged"].as_u64(), 2u) << delta.out;
  EXPECT_EQ(dj["delta"]["restored_whole"].as_u64(), 0u) << delta.out;
  EXPECT_LE(*dj["delta"]["bytes_differing"].as_u64(), 1u << 20) << delta.out;
  EXPECT_LE(*dj["piece_bytes_read"].as_u64(), 2u << 20) << delta.out;
  uint64_t received = 0;
  for (const auto& c : dj["channels"].items())
    if (const Json* s3 = c.find("s3")) received += (*s3)["bytes_received"].as_u64().value_or(0);
  EXPECT_GT(received, 0u) << delta.out;
  EXPECT_LT(received, 4u << 20) << "the objects were read whole: " << delta.out;
  EXPECT_TRUE(restored_tree(t / "all", src));
}

// The catalog's autobackup is an object beside the pieces; a catalog rebuilt from the
// bucket takes the backup from it (with its tag, which the pieces cannot tell) and
// restores by that tag.
TEST_F(S3Storage, TheCatalogAutobackupObjectRebuildsTheCatalog) {
  TempDir t("sbs3");
  make_file(t / "src/a.dbf", 6 << 20, 101);
  make_file(t / "src/b.txt", 500, 102);
  const std::string dest = "s3://" + bucket_ + "/ab";
  auto run = [&](std::vector<std::string> args) { return sb(std::move(args), env()); };
  SB_ASSERT_EXIT(run({"backup", t / "src", "--to", dest, "--catalog", t / "cat", "--tag",
                      "nightly"}),
                 0);
  std::string autobackup;
  for (const auto& k : keys_under("ab"))
    if (k.ends_with(".sbcat")) autobackup = k.substr(k.rfind('/') + 1);
  ASSERT_TRUE(autobackup.starts_with("sb-catalog-")) << autobackup;

  RunResult rb = run({"catalog", "rebuild", "--from", dest, "--catalog", t / "cat2", "--json"});
  SB_ASSERT_EXIT(rb, 0);
  Json j = parse_json(rb);
  ASSERT_EQ(j["media"].size(), 1u) << rb.out;
  EXPECT_TRUE(contains(j["media"][0]["autobackup"].as_string(), autobackup)) << rb.out;
  EXPECT_EQ(j["media"][0]["pieces_read"].as_u64(), 0u) << "all known from the autobackup";
  ASSERT_EQ(j["backups"].size(), 1u) << rb.out;
  EXPECT_EQ(j["backups"][0]["from"].as_string(), "autobackup");
  EXPECT_TRUE(j["backups"][0]["added"].as_bool());
  EXPECT_EQ(j["backups"][0]["status"].as_string(), "complete");

  RunResult rr = run({"restore", "--to", t / "out", "--catalog", t / "cat2", "--tag", "nightly"});
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(t / "out", t / "src"));
}

// A backup killed (SIGKILL at its third durable piece) and resumed to the same bucket:
// the resume completes it, reading only what the kept pieces do not hold; the objects of
// the pieces finished before the kill are kept as they were (same LastModified and ETag:
// not written again), and the restore is identical.
TEST_F(S3Storage, AResumedBackupKeepsTheObjectsOfPiecesFinishedBeforeTheKill) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  TempDir t("sbs3");
  const std::string src = t / "src";
  make_file(src + "/one.dbf", 40 << 20, 111);
  const std::string dest = "s3://" + bucket_ + "/res";
  const std::vector<std::string> args{"backup", src, "--to", dest, "--catalog", t / "cat",
                                      "--channels", "1", "--max-open-files", "1",
                                      "--checkpoint-interval", "8M", "--s3-part-size", "5M"};
  Env crash = env();
  crash.emplace_back("STRIPEBACK_CRASH_AT", "piece-synced:3");
  RunResult killed = sb(args, crash);
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed.describe();
  const auto before = objects_under("res");
  size_t pieces_before = 0;
  for (const auto& [k, v] : before) pieces_before += k.ends_with(".sbp");
  ASSERT_GE(pieces_before, 2u) << ::testing::PrintToString(before);
  // Any rewrite after this has a later LastModified.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));

  std::vector<std::string> again = args;
  again.insert(again.end(), {"--resume", "last", "--json"});
  RunResult r = sb(again, env());
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(j["status"].as_string(), "complete") << r.out;
  const uint64_t kept = *j["resumed"]["bytes_kept"].as_u64();
  EXPECT_GE(kept, 14u << 20) << "two checkpoints of 8 MiB were durable: " << r.out;
  EXPECT_EQ(*j["bytes_read"].as_u64() + kept, 40u << 20) << "nothing kept is read again";

  // The recorded pieces of the killed run are still the objects it wrote.
  const auto after = objects_under("res");
  RunResult files = sb({"list", "--catalog", t / "cat", "--backup", "1", "--files", "--json"},
                       env());
  SB_ASSERT_EXIT(files, 0);
  size_t unchanged = 0, unrecorded = 0;
  for (const auto& [k, v] : before) {
    if (!k.ends_with(".sbp")) continue;
    auto it = after.find(k);
    if (!contains(files.out, k.substr(k.rfind('/') + 1))) {
      // The piece finished as the kill came was never recorded: the resume removes it.
      EXPECT_EQ(it, after.end()) << k << " is not recorded and was left";
      ++unrecorded;
      continue;
    }
    ASSERT_NE(it, after.end()) << k << " is recorded and gone";
    EXPECT_EQ(it->second, v) << k << " was written again";
    unchanged += it->second == v;
  }
  EXPECT_EQ(unrecorded, 1u) << "the kill came after the third piece was complete";
  EXPECT_GE(unchanged, 2u) << "before: " << ::testing::PrintToString(before)
                           << "\nafter: " << ::testing::PrintToString(after);
  EXPECT_GT(after.size(), unchanged) << "the resume wrote pieces of its own";

  RunResult rr = sb({"restore", "--to", t / "out", "--catalog", t / "cat"}, env());
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(t / "out", src));
}

// Frames read one after the other go out as few large GETs: a restore of 32 MiB of 1 MiB
// frames makes a handful of requests, not one per frame, and restores the same bytes.
TEST_F(S3Storage, ARestoreReadsContiguousFramesWithFewRequests) {
  TempDir t("sbs3");
  make_file(t / "src/a.dbf", 32 << 20, 75);
  const std::string dest = "s3://" + bucket_ + "/g";
  SB_ASSERT_EXIT(sb({"backup", t / "src", "--to", dest, "--catalog", t / "cat", "--channels",
                     "1", "--buffer-size", "1M"},
                    env()),
                 0);
  RunResult rr = sb({"restore", "--to", t / "out", "--catalog", t / "cat", "--channels", "1",
                     "--json"},
                    env());
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(t / "out", t / "src"));
  uint64_t requests = 0;
  const Json j = parse_json(rr);
  for (const auto& c : j["channels"].items())
    if (const Json* s3 = c.find("s3")) requests += (*s3)["requests"].as_u64().value_or(0);
  EXPECT_GT(requests, 0u) << rr.out;
  EXPECT_LE(requests, 12u) << "32 frames of 1 MiB: " << rr.out;
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
