// The S3 test gateway works as the S3 tests need it: objects go in and come back whole, a
// COMPLIANCE-locked version cannot be deleted, and a wrong Content-MD5 is refused.
#include "tests/support/s3_server.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace stripeback::testing {
namespace {

// The base64 MD5 of `data`: the Content-MD5 header Object Lock uploads need.
std::string content_md5(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_md5(), nullptr);
  unsigned char b64[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
  const int n = EVP_EncodeBlock(b64, digest, static_cast<int>(len));
  return std::string(reinterpret_cast<const char*>(b64), static_cast<size_t>(n));
}

std::string random_bytes(size_t n) {
  std::mt19937_64 gen(n);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

// An ISO 8601 UTC time `ahead` from now, to the second.
std::string utc_in(std::chrono::seconds ahead) {
  const std::time_t t =
      std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() + ahead);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

class S3Server : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    auto ep = s3_server(&why);
    if (!ep) GTEST_SKIP() << "no S3 test gateway: " << why;
    ep_ = *ep;
  }
  // Writes `data` to a file of the test's temporary directory for curl -T.
  std::string file_with(const std::string& name, const std::string& data) {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path, std::ios::binary) << data;
    return path;
  }

  S3Endpoint ep_;
  TempDir dir_;
};

TEST_F(S3Server, AnObjectOfSomeMiBComesBackByteForByte) {
  std::string error;
  const std::string bucket = s3_create_bucket(ep_, ObjectLock::no, &error);
  ASSERT_FALSE(bucket.empty()) << error;
  const std::string data = random_bytes(5 * 1024 * 1024 + 123);
  const std::string key = "dir/piece 0001.sbp";

  const S3Response put = s3_curl(ep_, "PUT", s3_path(bucket, key), {"-T", file_with("obj", data)});
  ASSERT_EQ(put.status, 200) << put.describe();

  const S3Response head = s3_curl(ep_, "HEAD", s3_path(bucket, key));
  ASSERT_EQ(head.status, 200) << head.describe();
  EXPECT_EQ(head.header("content-length"), std::to_string(data.size())) << head.describe();

  const S3Response get = s3_curl(ep_, "GET", s3_path(bucket, key));
  ASSERT_EQ(get.status, 200) << get.describe();
  ASSERT_EQ(get.body.size(), data.size());
  EXPECT_TRUE(get.body == data) << "the object read back differs from what was written";

  const auto listed = s3_list_versions(ep_, bucket, &error);
  ASSERT_TRUE(listed.has_value()) << error;
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].key, key);
  EXPECT_EQ((*listed)[0].size, data.size());

  EXPECT_TRUE(s3_delete_bucket(ep_, bucket, &error)) << error;
  EXPECT_EQ(s3_curl(ep_, "HEAD", s3_path(bucket)).status, 404);
}

TEST_F(S3Server, ObjectLockRefusesToDeleteALockedVersion) {
  std::string error;
  const std::string bucket = s3_create_bucket(ep_, ObjectLock::yes, &error);
  ASSERT_FALSE(bucket.empty()) << error;
  const std::string data = random_bytes(64 * 1024);
  const S3Response put =
      s3_curl(ep_, "PUT", s3_path(bucket, "locked"),
              {"-T", file_with("locked", data), "-H", "Content-MD5: " + content_md5(data), "-H",
               "x-amz-object-lock-mode: COMPLIANCE", "-H",
               "x-amz-object-lock-retain-until-date: " + utc_in(std::chrono::hours(24))});
  ASSERT_EQ(put.status, 200) << put.describe();
  const auto version = put.header("x-amz-version-id");
  ASSERT_TRUE(version.has_value() && !version->empty()) << put.describe();

  const S3Response head = s3_curl(ep_, "HEAD", s3_path(bucket, "locked"));
  EXPECT_EQ(head.header("x-amz-object-lock-mode"), "COMPLIANCE") << head.describe();

  const S3Response del =
      s3_curl(ep_, "DELETE", s3_path(bucket, "locked") + "?versionId=" + *version);
  EXPECT_EQ(del.status, 403) << del.describe();
  const S3Response still =
      s3_curl(ep_, "GET", s3_path(bucket, "locked") + "?versionId=" + *version);
  ASSERT_EQ(still.status, 200) << still.describe();
  EXPECT_TRUE(still.body == data) << "the locked version changed";

  EXPECT_FALSE(s3_empty_bucket(ep_, bucket, &error))
      << "emptying a bucket with a locked version succeeded";
}

TEST_F(S3Server, AnObjectWithAWrongContentMd5IsRefused) {
  std::string error;
  const std::string bucket = s3_create_bucket(ep_, ObjectLock::no, &error);
  ASSERT_FALSE(bucket.empty()) << error;
  const S3Response put =
      s3_curl(ep_, "PUT", s3_path(bucket, "x"),
              {"-T", file_with("x", "abc"), "-H", "Content-MD5: " + content_md5("abd")});
  EXPECT_EQ(put.status, 400) << put.describe();
  EXPECT_NE(put.body.find("BadDigest"), std::string::npos) << put.describe();
  EXPECT_TRUE(s3_delete_bucket(ep_, bucket, &error)) << error;
}

}  // namespace
}  // namespace stripeback::testing
