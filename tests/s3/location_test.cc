// The S3 location grammar: what s3://BUCKET/PREFIX accepts, how it splits, and what it
// refuses, with the reason.
#include <gtest/gtest.h>

#include <string>

#include "backends/s3/url.h"

namespace stripeback::s3 {
namespace {

std::string why(std::string_view text) {
  auto r = parse_location(text);
  return r ? std::string("accepted") : r.error().what;
}

TEST(S3Location, SplitsBucketAndPrefix) {
  auto at = parse_location("s3://backups/nightly/db1");
  ASSERT_TRUE(at) << at.error().what;
  EXPECT_EQ(at->scheme, "s3");
  EXPECT_EQ(bucket_of(*at), "backups");
  EXPECT_EQ(key_of(*at), "nightly/db1");
  EXPECT_EQ(at->str(), "s3://backups/nightly/db1");
  EXPECT_EQ(key_of(at->join("sb-1-2.piece")), "nightly/db1/sb-1-2.piece");
}

TEST(S3Location, TheBucketAloneIsItsRoot) {
  for (const char* text : {"s3://backups", "s3://backups/", "s3://backups//"}) {
    auto at = parse_location(text);
    ASSERT_TRUE(at) << text << ": " << at.error().what;
    EXPECT_EQ(key_of(*at), "") << text;
    EXPECT_EQ(key_of(at->join("x")), "x") << text;
  }
}

TEST(S3Location, RunsOfSlashesAreOne) {
  auto at = parse_location("s3://backups//a///b/");
  ASSERT_TRUE(at);
  EXPECT_EQ(key_of(*at), "a/b");
}

TEST(S3Location, BadBucketNamesSayWhy) {
  EXPECT_NE(why("s3:///x").find("no bucket"), std::string::npos);
  EXPECT_NE(why("s3://ab/x").find("3 to 63"), std::string::npos);
  EXPECT_NE(why("s3://" + std::string(64, 'a')).find("3 to 63"), std::string::npos);
  EXPECT_NE(why("s3://Backups/x").find("lower-case"), std::string::npos);
  EXPECT_NE(why("s3://my_bucket").find("lower-case"), std::string::npos);
  EXPECT_NE(why("s3://-bucket").find("start and end"), std::string::npos);
  EXPECT_NE(why("s3://bucket-").find("start and end"), std::string::npos);
  EXPECT_NE(why("s3://a..b").find(".."), std::string::npos);
  EXPECT_NE(why("s3://192.168.1.10").find("IP address"), std::string::npos);
  EXPECT_EQ(why("s3://my.bucket-01"), "accepted");
}

TEST(S3Location, NoQueryDotComponentsOrControlCharacters) {
  EXPECT_NE(why("s3://backups/x?region=eu").find("no query"), std::string::npos);
  EXPECT_NE(why("s3://backups/x#frag").find("no query"), std::string::npos);
  EXPECT_NE(why("s3://backups/a/../b").find("'..'"), std::string::npos);
  EXPECT_NE(why("s3://backups/./b").find("'..'"), std::string::npos);
  EXPECT_NE(why(std::string("s3://backups/a\nb")).find("control"), std::string::npos);
  EXPECT_NE(why("http://backups/x").find("expected s3://"), std::string::npos);
}

TEST(S3Location, KeysKeepSpacesAndUnicode) {
  auto at = parse_location("s3://backups/db files/naïve+1");
  ASSERT_TRUE(at) << at.error().what;
  EXPECT_EQ(key_of(*at), "db files/naïve+1");
}

}  // namespace
}  // namespace stripeback::s3
