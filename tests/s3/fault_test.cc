// The stripeback binary against the S3 test gateway through a fault-injecting proxy
// (tests/support/s3_fault_proxy.h): 503 SlowDown answers, reset connections, lost answers and
// truncated bodies are retried and the jobs complete with the right bytes; faults beyond the
// attempts fail the job naming the object and the cause, and the catalog then names no piece
// the store does not hold whole.
#include <algorithm>
#include <regex>

#include "tests/s3/bucket_fixture.h"
#include "tests/support/s3_fault_proxy.h"

namespace stripeback::it {
namespace {

using testing::S3Fault;
using testing::S3FaultProxy;
using Rule = testing::S3FaultRule;

class S3Faults : public S3BucketTest {
 protected:
  // The child's S3 settings with the proxy as the endpoint (for the commands that take no
  // --s3-endpoint).
  Env env_via(const S3FaultProxy& proxy) const {
    Env e = env();
    for (auto& [name, value] : e)
      if (name == "AWS_ENDPOINT_URL") value = proxy.url();
    return e;
  }
  // The sum of an S3 counter over the channels of a job's --json document.
  static uint64_t s3_counter(const Json& job, const std::string& name) {
    uint64_t n = 0;
    for (const auto& c : job["channels"].items())
      if (const Json* s = c.find("s3")) n += (*s)[name].as_u64().value_or(0);
    return n;
  }
  // Multipart uploads begun in the bucket and neither completed nor aborted.
  std::string unfinished_uploads() {
    std::string keys;
    for (const auto& k : uploads_under("")) keys += k + " ";
    return keys;
  }
  // Checks that every piece the catalog records exists in the bucket with the size it
  // records; returns their keys.
  std::vector<std::string> check_recorded_pieces(const std::string& catalog) {
    RunResult lr = sb({"list", "--catalog", catalog, "--json"}, env());
    EXPECT_TRUE(lr.exited(0)) << lr.describe();
    std::vector<std::string> keys;
    const Json list = parse_json(lr);
    for (const auto& b : list["backups"].items()) {
      for (const auto& p : b["piece_list"].items()) {
        const std::string& loc = p["location"].as_string();
        const std::string prefix = "s3://" + bucket_ + "/";
        EXPECT_EQ(loc.rfind(prefix, 0), 0u) << loc;
        const std::string key = loc.substr(prefix.size()) + "/" + p["name"].as_string();
        auto head = testing::s3_curl(ep_, "HEAD", testing::s3_path(bucket_, key));
        EXPECT_EQ(head.status, 200)
            << "piece " << key << " of backup " << b["id"].as_u64().value_or(0)
            << " is recorded and not in the store: " << head.describe();
        EXPECT_EQ(head.header("content-length"), std::to_string(*p["bytes"].as_u64()))
            << key << ": " << head.describe();
        keys.push_back(key);
      }
    }
    return keys;
  }
};

// A backup whose part uploads are answered SlowDown, whose first CreateMultipartUpload and
// first PutObject find their connection reset, and whose first CompleteMultipartUpload
// answer is lost (the gateway completed it): the job completes, every object whole; the
// restore, through truncated and reset GETs, gives the sources' bytes.
TEST_F(S3Faults, InjectedSlowDownResetsAndLostAnswersAreRetriedByBackupAndRestore) {
  TempDir t("sbs3f");
  make_file(t / "src/a.dbf", 12 << 20, 81);  // 3 parts of 5 MiB
  make_file(t / "src/b.dbf", 11 << 20, 82);
  make_file(t / "src/c.txt", 3000, 83);
  S3FaultProxy proxy(ep_.url);
  const size_t slow =
      proxy.add(Rule(S3Fault::slow_down, "PUT", "partNumber=").after(1).one_in(2).at_most(3));
  const size_t create_reset = proxy.add(Rule(S3Fault::reset, "POST", "?uploads"));
  const size_t put_reset = proxy.add(Rule(S3Fault::reset, "PUT").lacking("partNumber="));
  const size_t complete_lost = proxy.add(Rule(S3Fault::lose_answer, "POST", "uploadId="));
  const std::string dest = "s3://" + bucket_ + "/f";
  RunResult br =
      sb({"backup", t / "src", "--to", dest, "--channels", "2", "--catalog", t / "cat",
          "--s3-endpoint", proxy.url(), "--s3-part-size", "5M", "--s3-timeout", "10s", "--json"},
         env());
  SB_ASSERT_EXIT(br, 0) << proxy.journal();
  Json j = parse_json(br);
  EXPECT_EQ(j["status"].as_string(), "complete") << br.out;
  EXPECT_TRUE(warnings_with(j, "autobackup").empty()) << br.out;
  EXPECT_EQ(proxy.injected(slow), 3u) << proxy.journal();
  EXPECT_EQ(proxy.injected(create_reset), 1u) << proxy.journal();
  EXPECT_EQ(proxy.injected(put_reset), 1u) << proxy.journal();
  EXPECT_EQ(proxy.injected(complete_lost), 1u) << proxy.journal();
  // A piece's upload (its start, parts and completion) runs on its channel's thread: those
  // retries show in the channels' S3 counters. The catalog's copy is written by the job.
  EXPECT_GE(s3_counter(j, "retries"),
            proxy.injected(slow) + proxy.injected(create_reset) + proxy.injected(complete_lost))
      << br.out << proxy.journal();

  // Both pieces and the catalog's copy are whole objects; no upload is left unfinished.
  EXPECT_EQ(check_recorded_pieces(t / "cat").size(), 2u);
  size_t catalogs = 0;
  for (const auto& k : keys_under("f")) catalogs += k.ends_with(".sbcat");
  EXPECT_EQ(catalogs, 1u);
  EXPECT_EQ(unfinished_uploads(), "");

  // The restore's reads of the pieces' data (its channels' reads, of more than 64 KiB each):
  // four answers cut short, one connection reset in the middle of an answer.
  proxy.clear_rules();
  const size_t cut = proxy.add(Rule(S3Fault::truncate, "GET", ".sbp").at_most(4).cut_to(64 << 10));
  const size_t get_reset =
      proxy.add(Rule(S3Fault::reset_in_body, "GET", ".sbp").after(1).cut_to(64 << 10));
  RunResult rr = sb({"restore", "--to", t / "out", "--catalog", t / "cat", "--channels", "2",
                     "--s3-endpoint", proxy.url(), "--s3-timeout", "10s", "--json"},
                    env());
  SB_ASSERT_EXIT(rr, 0) << proxy.journal();
  EXPECT_TRUE(restored_tree(t / "out", t / "src"));
  EXPECT_EQ(proxy.injected(cut), 4u) << proxy.journal();
  EXPECT_EQ(proxy.injected(get_reset), 1u) << proxy.journal();
  EXPECT_GE(s3_counter(parse_json(rr), "retries"), 5u) << rr.out << proxy.journal();
}

// Every part upload answered SlowDown, with 2 attempts allowed: the backup fails, naming the
// object and the cause; the unfinished upload is aborted, the object does not exist, and the
// catalog records no piece the store does not hold with the recorded size.
TEST_F(S3Faults, SlowDownBeyondTheAttemptsFailsTheBackupNamingTheObject) {
  TempDir t("sbs3f");
  make_file(t / "src/a.dbf", 12 << 20, 91);
  make_file(t / "src/b.txt", 4000, 92);
  S3FaultProxy proxy(ep_.url);
  const size_t slow = proxy.add(Rule(S3Fault::slow_down, "PUT", "partNumber=").at_most(0));
  const std::string dest = "s3://" + bucket_ + "/s";
  RunResult br = sb({"backup", t / "src", "--to", dest, "--channels", "2", "--catalog", t / "cat",
                     "--s3-endpoint", proxy.url(), "--s3-part-size", "5M", "--s3-attempts", "2",
                     "--s3-timeout", "10s"},
                    env());
  EXPECT_TRUE(br.exited(1)) << br.describe();
  // "unable to write 's3://BUCKET/s/PIECE.sbp': UploadPart 'BUCKET/s/PIECE.sbp' part N:
  // SlowDown (HTTP 503): ... (2 attempts, the most allowed)"
  const std::regex named("'s3://" + bucket_ +
                         "/(s/[^']*\\.sbp)'.*SlowDown \\(HTTP 503\\).*\\(2 attempts, the most "
                         "allowed\\)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(br.err, m, named)) << br.describe() << proxy.journal();
  const std::string failed_key = m[1];
  EXPECT_GE(proxy.injected(slow), 2u) << proxy.journal();

  RunResult lr = sb({"list", "--catalog", t / "cat"}, env());
  SB_ASSERT_EXIT(lr, 0);
  EXPECT_TRUE(contains(lr.out, "failed")) << lr.out;
  EXPECT_FALSE(contains(lr.out, "complete")) << lr.out;
  const std::vector<std::string> recorded = check_recorded_pieces(t / "cat");
  EXPECT_EQ(std::count(recorded.begin(), recorded.end(), failed_key), 0) << failed_key;
  auto head = testing::s3_curl(ep_, "HEAD", testing::s3_path(bucket_, failed_key));
  EXPECT_EQ(head.status, 404) << head.describe();
  EXPECT_EQ(unfinished_uploads(), "");
}

// Validate and crosscheck --deep read every piece through answers cut short and pass; a
// restore whose every read is cut short fails within its attempts, naming the object.
TEST_F(S3Faults, TruncatedReadsAreRetriedAndBeyondTheAttemptsFailTheRestore) {
  TempDir t("sbs3f");
  make_file(t / "src/a.dbf", 7 << 20, 101);
  make_file(t / "src/b.txt", 5000, 102);
  const std::string dest = "s3://" + bucket_ + "/t";
  SB_ASSERT_EXIT(sb({"backup", t / "src", "--to", dest, "--catalog", t / "cat"}, env()), 0);

  // The reads of the pieces' data (more than 64 KiB each), not only of their headers.
  S3FaultProxy proxy(ep_.url);
  const size_t cut = proxy.add(Rule(S3Fault::truncate, "GET", ".sbp").at_most(3).cut_to(64 << 10));
  RunResult vr =
      sb({"validate", "--catalog", t / "cat", "--s3-endpoint", proxy.url(), "--json"}, env());
  SB_EXPECT_EXIT(vr, 0) << proxy.journal();
  EXPECT_EQ(proxy.injected(cut), 3u) << proxy.journal();
  EXPECT_GE(s3_counter(parse_json(vr), "retries"), 3u) << vr.out << proxy.journal();

  proxy.clear_rules();
  const size_t deep_cut =
      proxy.add(Rule(S3Fault::truncate, "GET", ".sbp").at_most(2).cut_to(64 << 10));
  RunResult cc = sb({"crosscheck", "--deep", "--catalog", t / "cat"}, env_via(proxy));
  SB_EXPECT_EXIT(cc, 0) << proxy.journal();
  EXPECT_TRUE(contains(cc.out, "(deep): 2 available, 0 expired")) << cc.out;
  EXPECT_EQ(proxy.injected(deep_cut), 2u) << proxy.journal();

  // Every read cut short, the first ones (of the pieces' headers) included.
  proxy.clear_rules();
  const size_t all_cut = proxy.add(Rule(S3Fault::truncate, "GET", ".sbp").at_most(0).cut_to(100));
  RunResult rr = sb({"restore", "--to", t / "out", "--catalog", t / "cat", "--s3-endpoint",
                     proxy.url(), "--s3-attempts", "2", "--s3-timeout", "10s"},
                    env());
  EXPECT_TRUE(rr.exited(1)) << rr.describe();
  const std::regex named("'" + dest +
                         "/[^']*\\.sbp'.*truncated answer.*\\(2 attempts, the most allowed\\)");
  EXPECT_TRUE(std::regex_search(rr.err, named)) << rr.describe() << proxy.journal();
  EXPECT_GE(proxy.injected(all_cut), 2u) << proxy.journal();
}

}  // namespace
}  // namespace stripeback::it
