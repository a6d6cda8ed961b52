// The S3 client's configuration: which source wins for each setting, profile selection, the
// messages for what is missing (never holding a secret), endpoint URLs and part sizes.
#include "backends/s3/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/support/temp_dir.h"

namespace stripeback::s3 {
namespace {

constexpr const char* kFileSecret = "fileSECRETfileSECRETfileSECRET0000000000";
constexpr const char* kEnvSecret = "envSECRETenvSECRETenvSECRET00000000000000";

// A HOME with ~/.aws/credentials and ~/.aws/config.
struct Home {
  testing::TempDir dir{"sbs3cfg"};
  Home(const std::string& credentials, const std::string& config) {
    ::mkdir((dir / ".aws").c_str(), 0700);
    std::ofstream(dir / ".aws/credentials") << credentials;
    std::ofstream(dir / ".aws/config") << config;
  }
  Environment env() const { return {{"HOME", dir.path()}}; }
};

// The secret in the files below is kFileSecret.
const std::string kCredentials =
    "# shared credentials\n"
    "[default]\n"
    "aws_access_key_id = AKIDDEFAULT\n"
    "aws_secret_access_key = fileSECRETfileSECRETfileSECRET0000000000\n"
    "\n"
    "[backup]\n"
    "aws_access_key_id=AKIDBACKUP\n"
    "aws_secret_access_key=fileSECRETfileSECRETfileSECRET0000000000\n"
    "aws_session_token = TOKENBACKUP\n";

const std::string kConfig =
    "[default]\n"
    "region = eu-west-1\n"
    "[profile backup]\n"
    "region = ap-south-1\n"
    "s3 =\n"
    "  addressing_style = path\n"
    "[profile gateway]\n"
    "region = default\n"
    "endpoint_url = http://rgw.example:7480\n"
    "aws_access_key_id = AKIDGATEWAY\n"
    "aws_secret_access_key = fileSECRETfileSECRETfileSECRET0000000000\n";

TEST(S3Config, TheDefaultProfileOfTheSharedFilesGivesKeysRegionAndTheAwsEndpoint) {
  Home home(kCredentials, kConfig);
  auto c = resolve_config({}, home.env());
  ASSERT_TRUE(c) << c.error().what;
  EXPECT_EQ(c->credentials.access_key, "AKIDDEFAULT");
  EXPECT_EQ(c->credentials.secret_key, kFileSecret);
  EXPECT_EQ(c->region, "eu-west-1");
  EXPECT_EQ(c->endpoint.base_url(), "https://s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(c->addressing, Addressing::host);
  EXPECT_NE(
      c->credentials_source.find("profile 'default' of '" + home.dir.path() + "/.aws/credentials'"),
      std::string::npos)
      << c->credentials_source;
  EXPECT_EQ(c->attempts, 10u);
  EXPECT_EQ(c->attempt_timeout, std::chrono::seconds(60));
  EXPECT_EQ(c->part_size, 16 * kMiB);
  EXPECT_EQ(c->parts_in_flight, 4u);
  EXPECT_EQ(c->checksum, ChecksumKind::md5);
}

TEST(S3Config, TheEnvironmentWinsOverTheFiles) {
  Home home(kCredentials, kConfig);
  Environment env = home.env();
  env["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  env["AWS_SECRET_ACCESS_KEY"] = kEnvSecret;
  env["AWS_SESSION_TOKEN"] = "TOKENENV";
  env["AWS_DEFAULT_REGION"] = "us-west-2";
  env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:22080";
  auto c = resolve_config({}, env);
  ASSERT_TRUE(c) << c.error().what;
  EXPECT_EQ(c->credentials.access_key, "AKIDENV");
  EXPECT_EQ(c->credentials.session_token, "TOKENENV");
  EXPECT_EQ(c->region, "us-west-2");
  EXPECT_EQ(c->endpoint.base_url(), "http://127.0.0.1:22080");
  EXPECT_EQ(c->addressing, Addressing::path);
  EXPECT_EQ(c->credentials_source, "the environment (AWS_ACCESS_KEY_ID)");
  env["AWS_REGION"] = "ca-central-1";  // over AWS_DEFAULT_REGION
  c = resolve_config({}, env);
  ASSERT_TRUE(c) << c.error().what;
  EXPECT_EQ(c->region, "ca-central-1");
}

TEST(S3Config, ExplicitSettingsWinOverTheEnvironment) {
  Home home(kCredentials, kConfig);
  Environment env = home.env();
  env["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  env["AWS_SECRET_ACCESS_KEY"] = kEnvSecret;
  env["AWS_REGION"] = "us-west-2";
  env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:22080";
  S3Flags f;
  f.profile = "backup";
  f.region = "sa-east-1";
  f.endpoint = "https://minio.example:9000/";
  f.url_style = "host";
  f.part_size = 64 * kMiB;
  f.checksum = "crc32c";
  f.attempts = 3;
  auto c = resolve_config(f, env);
  ASSERT_TRUE(c) << c.error().what;
  EXPECT_EQ(c->credentials.access_key, "AKIDBACKUP");  // the profile given, not the env's keys
  EXPECT_EQ(c->credentials.session_token, "TOKENBACKUP");
  EXPECT_EQ(c->region, "sa-east-1");
  EXPECT_EQ(c->endpoint.base_url(), "https://minio.example:9000");
  EXPECT_EQ(c->addressing, Addressing::host);
  EXPECT_EQ(c->part_size, 64 * kMiB);
  EXPECT_EQ(c->checksum, ChecksumKind::crc32c);
  EXPECT_EQ(c->attempts, 3u);
}

TEST(S3Config, AwsProfileSelectsTheProfileItsRegionAndItsAddressingStyle) {
  Home home(kCredentials, kConfig);
  Environment env = home.env();
  env["AWS_PROFILE"] = "backup";
  auto c = resolve_config({}, env);
  ASSERT_TRUE(c) << c.error().what;
  EXPECT_EQ(c->credentials.access_key, "AKIDBACKUP");
  EXPECT_EQ(c->region, "ap-south-1");
  EXPECT_EQ(c->addressing, Addressing::path);  // "s3 =\n  addressing_style = path"
  env["AWS_PROFILE"] = "gateway";              // keys and endpoint from the config file alone
  c = resolve_config({}, env);
  ASSERT_TRUE(c) << c.error().what;
  EXPECT_EQ(c->credentials.access_key, "AKIDGATEWAY");
  EXPECT_EQ(c->endpoint.base_url(), "http://rgw.example:7480");
  EXPECT_EQ(c->region, "default");
}

TEST(S3Config, FilesNamedByTheEnvironmentReplaceTheOnesInHome) {
  Home home(kCredentials, kConfig);
  testing::TempDir other("sbs3cfg");
  std::ofstream(other / "creds") << "[default]\naws_access_key_id = AKIDOTHER\n"
                                    "aws_secret_access_key = "
                                 << kFileSecret << "\n";
  std::ofstream(other / "conf") << "[default]\nregion = eu-north-1\n";
  Environment env = home.env();
  env["AWS_SHARED_CREDENTIALS_FILE"] = other / "creds";
  env["AWS_CONFIG_FILE"] = other / "conf";
  auto c = resolve_config({}, env);
  ASSERT_TRUE(c) << c.error().what;
  EXPECT_EQ(c->credentials.access_key, "AKIDOTHER");
  EXPECT_EQ(c->region, "eu-north-1");
}

TEST(S3Config, MissingCredentialsSayWhereTheyWereLookedForAndHoldNoSecret) {
  testing::TempDir empty("sbs3cfg");
  Environment env{{"HOME", empty.path()}, {"AWS_ENDPOINT_URL", "http://127.0.0.1:22080"}};
  auto c = resolve_config({}, env);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, Errc::invalid_argument);
  const std::string& what = c.error().what;
  EXPECT_NE(what.find("no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
                      "give a profile of ~/.aws/credentials (--s3-profile)"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("'" + empty.path() + "/.aws/credentials' (no such file)"), std::string::npos)
      << what;
  // Half the keys: the message names the missing variable, and not the secret given.
  env["AWS_SECRET_ACCESS_KEY"] = kEnvSecret;
  c = resolve_config({}, env);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().what.find("AWS_SECRET_ACCESS_KEY is set but not AWS_ACCESS_KEY_ID"),
            std::string::npos)
      << c.error().what;
  EXPECT_EQ(c.error().what.find(kEnvSecret), std::string::npos);
}

TEST(S3Config, AProfileGivenThatNoFileHasIsAnErrorNamingTheFiles) {
  Home home(kCredentials, kConfig);
  S3Flags f;
  f.profile = "nightly";
  auto c = resolve_config(f, home.env());
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().what.find("--s3-profile: no profile 'nightly' in '" + home.dir.path() +
                                "/.aws/credentials' or '" + home.dir.path() + "/.aws/config'"),
            std::string::npos)
      << c.error().what;
  EXPECT_EQ(c.error().what.find(kFileSecret), std::string::npos);
}

TEST(S3Config, NoRegionAndNoEndpointIsAnErrorNamingTheWaysToGiveOne) {
  Home home(kCredentials, "");
  auto c = resolve_config({}, home.env());
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().what.find("no S3 region: set AWS_REGION, give --s3-region"),
            std::string::npos)
      << c.error().what;
  // A gateway of one's own takes any region: us-east-1 unless told.
  Environment env = home.env();
  env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:22080";
  auto g = resolve_config({}, env);
  ASSERT_TRUE(g) << g.error().what;
  EXPECT_EQ(g->region, "us-east-1");
}

TEST(S3Config, BadSettingsAreRefusedNamingTheOption) {
  Home home(kCredentials, kConfig);
  auto why = [&](S3Flags f) {
    auto c = resolve_config(f, home.env());
    return c ? std::string("accepted") : c.error().what;
  };
  S3Flags f;
  f.part_size = 4 * kMiB;
  EXPECT_NE(why(f).find("--s3-part-size: a part size of 4194304 bytes is outside S3's limits"),
            std::string::npos)
      << why(f);
  f = {};
  f.part_size = (uint64_t{5} << 30) + 1;
  EXPECT_NE(why(f).find("outside S3's limits"), std::string::npos) << why(f);
  f = {};
  f.checksum = "sha1";
  EXPECT_NE(why(f).find("--s3-checksum: 'sha1' is not md5, crc32c or none"), std::string::npos);
  f = {};
  f.url_style = "dns";
  EXPECT_NE(why(f).find("--s3-url-style"), std::string::npos);
  f = {};
  f.sse = "aes";
  EXPECT_NE(why(f).find("--s3-sse: 'aes' is not AES256 or aws:kms"), std::string::npos);
  f = {};
  f.sse_kms_key_id = "key-1";
  EXPECT_NE(why(f).find("--s3-sse-kms-key-id"), std::string::npos);
  f = {};
  f.attempts = 0;
  EXPECT_NE(why(f).find("--s3-attempts"), std::string::npos);
  f = {};
  f.region = "EU West";
  EXPECT_NE(why(f).find("--s3-region: 'EU West' is not a region name"), std::string::npos);
  f = {};
  f.sse = "aws:kms";
  f.sse_kms_key_id = "arn:aws:kms:eu-west-1:1:key/abc";
  f.storage_class = "STANDARD_IA";
  auto c = resolve_config(f, home.env());
  ASSERT_TRUE(c) << c.error().what;
  EXPECT_EQ(c->sse, Sse::kms);
  EXPECT_EQ(c->storage_class, "STANDARD_IA");
}

TEST(S3Config, EndpointUrlsAreSchemeHostAndPortOnly) {
  auto e = parse_endpoint("https://S3.Example.com");
  ASSERT_TRUE(e) << e.error().what;
  EXPECT_EQ(e->host, "s3.example.com");
  EXPECT_EQ(e->port, 0);
  EXPECT_EQ(e->authority(), "s3.example.com");
  e = parse_endpoint("http://127.0.0.1:22080/");
  ASSERT_TRUE(e) << e.error().what;
  EXPECT_EQ(e->authority(), "127.0.0.1:22080");
  e = parse_endpoint("https://host:443");
  ASSERT_TRUE(e) << e.error().what;
  EXPECT_EQ(e->authority(), "host");  // the scheme's own port is not written in Host
  e = parse_endpoint("http://[::1]:9000");
  ASSERT_TRUE(e) << e.error().what;
  EXPECT_EQ(e->authority(), "[::1]:9000");

  auto why = [](std::string_view url) {
    auto r = parse_endpoint(url);
    return r ? std::string("accepted") : r.error().what;
  };
  EXPECT_NE(why("s3.example.com").find("expected http://HOST[:PORT]"), std::string::npos);
  EXPECT_NE(why("ftp://host").find("not http or https"), std::string::npos);
  EXPECT_NE(why("http://").find("no host"), std::string::npos);
  EXPECT_NE(why("http://host:0").find("port"), std::string::npos);
  EXPECT_NE(why("http://host:99999").find("port"), std::string::npos);
  EXPECT_NE(why("http://host:").find("port"), std::string::npos);
  EXPECT_NE(why("http://host/bucket").find("has a path"), std::string::npos);
  EXPECT_NE(why("http://host?x=1").find("query"), std::string::npos);
  EXPECT_NE(why("http://ho st").find("host"), std::string::npos);
  const std::string user = why("https://AKID:SECRETPW@host");
  EXPECT_NE(user.find("user name"), std::string::npos) << user;
  EXPECT_EQ(user.find("SECRETPW"), std::string::npos) << user;
}

TEST(S3Config, PartSizesDoubleSoNoObjectNeedsMoreThanTenThousandParts) {
  S3Config c;
  constexpr uint64_t kGiB = uint64_t{1} << 30, kTiB = uint64_t{1} << 40;
  EXPECT_EQ(*c.part_size_for(0), 16 * kMiB);
  EXPECT_EQ(*c.part_size_for(100 * kGiB), 16 * kMiB);  // 6400 parts
  EXPECT_EQ(*c.part_size_for(1 * kTiB), 128 * kMiB);   // 104.9 MiB needed
  EXPECT_EQ(*c.part_size_for(5 * kTiB), 1 * kGiB);     // 524.3 MiB needed
  for (uint64_t size : {1 * kTiB, 5 * kTiB, 10000 * 16 * kMiB + 1, 40 * kTiB}) {
    const uint64_t part = *c.part_size_for(size);
    EXPECT_LE((size + part - 1) / part, kMaxParts) << size;
    EXPECT_LE(part, kMaxPartSize);
  }
  EXPECT_EQ(*c.part_size_for(kMaxParts * kMaxPartSize), kMaxPartSize);
  auto too_big = c.part_size_for(kMaxParts * kMaxPartSize + 1);
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code, Errc::invalid_argument);
}

}  // namespace
}  // namespace stripeback::s3
