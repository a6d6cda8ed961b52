// The C API with s3:// locations against the S3 test gateway: an embedder that links the
// shared library and reaches the gateway with options only (s3_endpoint, s3_region, and the
// credentials from the AWS_* environment) backs up to s3://BUCKET/PREFIX and restores the
// same bytes; a bucket that does not exist fails the job, its message naming the bucket.
// Only sb_* is visible to this program: the gateway helpers come from the test support.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "stripeback/stripeback.h"
#include "tests/support/s3_server.h"
#include "tests/support/temp_dir.h"

namespace stripeback::testing {
namespace {

namespace fs = std::filesystem;

// The files of the source tree: one written in parts (12 MiB with 5 MiB parts), a small
// one, an empty one.
struct SourceFile {
  const char* name;
  uint64_t size;
};
constexpr SourceFile kFiles[] = {{"big.dbf", 12u << 20}, {"sub/small.txt", 70001}, {"empty", 0}};

class CApiS3 : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    auto ep = s3_server(&why);
    if (!ep) GTEST_SKIP() << "no S3 test gateway: " << why;
    ep_ = *ep;
    bucket_ = s3_create_bucket(ep_, ObjectLock::no, &why);
    ASSERT_FALSE(bucket_.empty()) << why;
    // The keys come from the environment, as docs/embedding.md says; the endpoint and the
    // region only from the options, so nothing else can have reached the gateway.
    ::setenv("AWS_ACCESS_KEY_ID", ep_.access_key.c_str(), 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", ep_.secret_key.c_str(), 1);
    for (const char* name : {"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL",
                             "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION",
                             "AWS_CA_BUNDLE"})
      ::unsetenv(name);
    ::setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent", 1);
    ::setenv("AWS_CONFIG_FILE", "/nonexistent", 1);
  }
  void TearDown() override {
    std::string why;
    if (!bucket_.empty()) {
      EXPECT_TRUE(s3_delete_bucket(ep_, bucket_, &why)) << why;
    }
  }

  // Options with the gateway's endpoint and region set.
  sb_options* s3_options() const {
    sb_options* o = sb_options_new();
    EXPECT_NE(o, nullptr);
    EXPECT_EQ(sb_options_set(o, "s3_endpoint", ep_.url.c_str()), SB_OK) << sb_options_errmsg(o);
    EXPECT_EQ(sb_options_set(o, "s3_region", ep_.region.c_str()), SB_OK) << sb_options_errmsg(o);
    return o;
  }

  // Runs one job; its status, with the job's message in *message.
  static sb_status run_job(sb_catalog* cat, sb_operation op, const sb_options* o,
                           std::string* message, std::string* state = nullptr) {
    sb_job* job = nullptr;
    sb_status st = sb_job_new(cat, op, o, &job);
    if (st != SB_OK) {
      *message = sb_options_errmsg(o);
      return st;
    }
    st = sb_job_run(job);
    *message = sb_job_errmsg(job);
    if (state) *state = sb_job_state(job);
    sb_job_free(job);
    return st;
  }

  // The keys under `prefix`/ (one page of ListObjectsV2).
  std::vector<std::string> keys_under(const std::string& prefix) const {
    auto r = s3_curl(ep_, "GET", s3_path(bucket_) + "?list-type=2&prefix=" + prefix + "%2F");
    EXPECT_EQ(r.status, 200) << r.describe();
    std::vector<std::string> keys;
    static const std::regex key("<Key>([^<]*)</Key>");
    for (std::sregex_iterator it(r.body.begin(), r.body.end(), key), end; it != end; ++it)
      keys.push_back((*it)[1]);
    return keys;
  }

  S3Endpoint ep_;
  std::string bucket_;
};

TEST_F(CApiS3, BackupToS3WithOptionsOnlyRestoresTheSameBytes) {
  TempDir t("sbcapis3");
  const std::string src = t / "src";
  fs::create_directories(src + "/sub");
  uint32_t seed = 81;
  for (const auto& f : kFiles) write_pattern_file(src + "/" + f.name, f.size, seed++);

  sb_catalog* cat = nullptr;
  ASSERT_EQ(sb_catalog_open((t / "cat").c_str(), SB_CATALOG_CREATE, &cat), SB_OK)
      << sb_catalog_errmsg(cat);
  const std::string dest = "s3://" + bucket_ + "/capi";
  sb_options* b = s3_options();
  ASSERT_EQ(sb_options_set(b, "source", src.c_str()), SB_OK);
  ASSERT_EQ(sb_options_set(b, "destination", dest.c_str()), SB_OK);
  ASSERT_EQ(sb_options_set_int(b, "channels", 2), SB_OK);
  ASSERT_EQ(sb_options_set(b, "s3_part_size", "5M"), SB_OK) << sb_options_errmsg(b);
  std::string message, state;
  ASSERT_EQ(run_job(cat, SB_OP_BACKUP, b, &message, &state), SB_OK) << message;
  EXPECT_EQ(state, "complete");

  // The pieces (one per channel) and the catalog's autobackup are objects under the prefix.
  size_t pieces = 0;
  for (const auto& k : keys_under("capi")) pieces += k.ends_with(".sbp");
  EXPECT_EQ(pieces, 2u) << ::testing::PrintToString(keys_under("capi"));

  sb_options* r = s3_options();
  const std::string target = t / "out";
  ASSERT_EQ(sb_options_set(r, "target", target.c_str()), SB_OK);
  ASSERT_EQ(run_job(cat, SB_OP_RESTORE, r, &message, &state), SB_OK) << message;
  EXPECT_EQ(state, "complete");
  for (const auto& f : kFiles) {
    const std::string orig = src + "/" + f.name;
    const std::string copy = target + orig;  // the target, then the original absolute path
    ASSERT_TRUE(fs::exists(copy)) << copy;
    EXPECT_EQ(fs::file_size(copy), f.size) << copy;
    EXPECT_TRUE(read_file(copy) == read_file(orig)) << copy << " differs from " << orig;
  }

  // The same restore without the S3 options: the settings are the job's own, and with none
  // given and none in the environment the job says which one is missing.
  sb_options* bare = sb_options_new();
  ASSERT_EQ(sb_options_set(bare, "target", (t / "out2").c_str()), SB_OK);
  EXPECT_NE(run_job(cat, SB_OP_RESTORE, bare, &message), SB_OK);
  EXPECT_NE(message.find("'s3_region'"), std::string::npos) << message;

  sb_options_free(bare);
  sb_options_free(r);
  sb_options_free(b);
  sb_catalog_free(cat);
}

TEST_F(CApiS3, BackupToABucketThatDoesNotExistFailsNamingIt) {
  TempDir t("sbcapis3");
  fs::create_directories(t / "src");
  write_pattern_file(t / "src/a.txt", 1000, 91);
  sb_catalog* cat = nullptr;
  ASSERT_EQ(sb_catalog_open((t / "cat").c_str(), SB_CATALOG_CREATE, &cat), SB_OK);
  const std::string missing = bucket_ + "-missing";
  sb_options* b = s3_options();
  ASSERT_EQ(sb_options_set(b, "source", (t / "src").c_str()), SB_OK);
  ASSERT_EQ(sb_options_set(b, "destination", ("s3://" + missing + "/p").c_str()), SB_OK);
  std::string message;
  EXPECT_NE(run_job(cat, SB_OP_BACKUP, b, &message), SB_OK);
  EXPECT_NE(message.find("'" + missing + "'"), std::string::npos) << message;
  EXPECT_TRUE(keys_under("p").empty());
  sb_options_free(b);
  sb_catalog_free(cat);
}

}  // namespace
}  // namespace stripeback::testing
