// S3BucketTest: the fixture of the tests that run the stripeback binary against the S3 test
// gateway (tests/support/s3_server.h): a bucket of its own per test (with Object Lock when
// a subclass asks), emptied and deleted after it, the child's S3 settings, and the keys and
// unfinished uploads under a prefix, listed with curl apart from the code under test.
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "tests/integration/it_util.h"
#include "tests/support/s3_server.h"

namespace stripeback::it {

class S3BucketTest : public ::testing::Test {
 protected:
  // A bucket with Object Lock (and so versioning) enabled, or a plain one.
  virtual testing::ObjectLock bucket_lock() const { return testing::ObjectLock::no; }

  void SetUp() override {
    std::string why;
    auto ep = testing::s3_server(&why);
    if (!ep) GTEST_SKIP() << "no S3 test gateway: " << why;
    ep_ = *ep;
    bucket_ = testing::s3_create_bucket(ep_, bucket_lock(), &why);
    ASSERT_FALSE(bucket_.empty()) << why;
  }
  void TearDown() override {
    std::string why;
    if (!bucket_.empty()) {
      EXPECT_TRUE(testing::s3_delete_bucket(ep_, bucket_, &why)) << why;
    }
  }
  // The child's S3 settings: the gateway's endpoint and keys, nothing from the shared files.
  Env env() const {
    return {{"AWS_ENDPOINT_URL", ep_.url},
            {"AWS_REGION", ep_.region},
            {"AWS_ACCESS_KEY_ID", ep_.access_key},
            {"AWS_SECRET_ACCESS_KEY", ep_.secret_key},
            {"AWS_SESSION_TOKEN", std::nullopt},
            {"AWS_PROFILE", std::nullopt},
            {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
            {"AWS_CONFIG_FILE", "/nonexistent"}};
  }
  // The values of <`tag`> in an S3 listing's body, in order.
  static std::vector<std::string> values_of(const std::string& body, const std::string& tag) {
    std::vector<std::string> out;
    std::regex re("<" + tag + ">([^<]*)</" + tag + ">");
    for (std::sregex_iterator it(body.begin(), body.end(), re), end; it != end; ++it)
      out.push_back((*it)[1]);
    return out;
  }
  // The keys under `prefix`/ (one page of ListObjectsV2 is enough for a test's few).
  std::vector<std::string> keys_under(const std::string& prefix) {
    auto r = testing::s3_curl(ep_, "GET",
                              testing::s3_path(bucket_) + "?list-type=2&prefix=" + prefix + "%2F");
    EXPECT_EQ(r.status, 200) << r.describe();
    return values_of(r.body, "Key");
  }
  // The keys of the multipart uploads begun and neither completed nor aborted under
  // `prefix`/ (empty: in the whole bucket).
  std::vector<std::string> uploads_under(const std::string& prefix) {
    const std::string query = prefix.empty() ? "?uploads=" : "?prefix=" + prefix + "%2F&uploads=";
    auto r = testing::s3_curl(ep_, "GET", testing::s3_path(bucket_) + query);
    EXPECT_EQ(r.status, 200) << r.describe();
    return values_of(r.body, "Key");
  }

  testing::S3Endpoint ep_;
  std::string bucket_;
};

}  // namespace stripeback::it
