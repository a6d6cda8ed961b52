// S3BucketTest: the fixture of the tests that run the stripeback binary against the S3 test
// gateway (tests/support/s3_server.h): a bucket of its own per test, emptied and deleted
// after it, the child's S3 settings, and the keys under a prefix.
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "tests/integration/it_util.h"
#include "tests/support/s3_server.h"

namespace stripeback::it {

class S3BucketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    auto ep = testing::s3_server(&why);
    if (!ep) GTEST_SKIP() << "no S3 test gateway: " << why;
    ep_ = *ep;
    bucket_ = testing::s3_create_bucket(ep_, testing::ObjectLock::no, &why);
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
  // The keys under `prefix`/ (one page of ListObjectsV2 is enough for a test's few).
  std::vector<std::string> keys_under(const std::string& prefix) {
    auto r = testing::s3_curl(ep_, "GET",
                              testing::s3_path(bucket_) + "?list-type=2&prefix=" + prefix + "%2F");
    EXPECT_EQ(r.status, 200) << r.describe();
    std::vector<std::string> keys;
    std::regex key("<Key>([^<]*)</Key>");
    for (std::sregex_iterator it(r.body.begin(), r.body.end(), key), end; it != end; ++it)
      keys.push_back((*it)[1]);
    return keys;
  }

  testing::S3Endpoint ep_;
  std::string bucket_;
};

}  // namespace stripeback::it
