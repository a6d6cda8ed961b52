#include "backends/nfs/url.h"

#include <gtest/gtest.h>

namespace stripeback::nfs {
namespace {

TEST(NfsUrl, ParsesServerPathAndPorts) {
  auto u = parse_nfs_url("nfs://127.0.0.1/srv/export/dir/?nfsport=22049&mountport=22050");
  ASSERT_TRUE(u) << u.error().what;
  ASSERT_EQ(u->servers.size(), 1u);
  EXPECT_EQ(u->servers[0], "127.0.0.1");
  EXPECT_EQ(u->path, "/srv/export/dir");
  EXPECT_EQ(u->nfsport, 22049u);
  EXPECT_EQ(u->mountport, 22050u);
  EXPECT_EQ(u->str(), "nfs://127.0.0.1/srv/export/dir?nfsport=22049&mountport=22050");
}

TEST(NfsUrl, PathAppendedAfterTheQueryBelongsToThePath) {
  auto u = parse_nfs_url("nfs://h/export?nfsport=1&mountport=2/sub/file.dbf");
  ASSERT_TRUE(u) << u.error().what;
  EXPECT_EQ(u->path, "/export/sub/file.dbf");
  EXPECT_EQ(u->mountport, 2u);
}

// Regression (found by fuzz_nfs_url): a path with a '?' (a file named "what?.dbf") was
// spelled by str() with the '?' before the options, so the URL read back as a shorter path
// with an unknown option. The options now go before the first component holding a '?'.
TEST(NfsUrl, QuestionMarkInThePathSurvivesTheCanonicalSpelling) {
  for (const char* url : {"nfs://h/export?nfsport=1&mountport=2/sub/what?.dbf",
                          "nfs://h/export?/what?.dbf", "nfs://h/?/a?b/c?d",
                          "nfs://h,g/?uid=0/?"}) {
    auto u = parse_nfs_url(url);
    ASSERT_TRUE(u) << u.error().what;
    auto again = parse_nfs_url(u->str());
    ASSERT_TRUE(again) << u->str() << ": " << again.error().what;
    EXPECT_EQ(again->path, u->path) << u->str();
    EXPECT_EQ(again->servers, u->servers) << u->str();
    EXPECT_EQ(again->query(), u->query()) << u->str();
    EXPECT_EQ(again->str(), u->str());
  }
  auto u = parse_nfs_url("nfs://h/export?nfsport=1&mountport=2");
  ASSERT_TRUE(u);
  u->path += "/what?.dbf";  // a directory's child, as the planner builds it
  EXPECT_EQ(u->str(), "nfs://h/export?nfsport=1&mountport=2/what?.dbf");
  auto child = parse_nfs_url(u->str());
  ASSERT_TRUE(child) << child.error().what;
  EXPECT_EQ(child->path, "/export/what?.dbf");
  EXPECT_EQ(child->mountport, 2u);
  u->path = "/what?";
  EXPECT_EQ(u->str(), "nfs://h/?nfsport=1&mountport=2/what?");
}

TEST(NfsUrl, SeveralServersForMultipath) {
  auto u = parse_nfs_url("nfs://10.0.0.1,10.0.1.1/export");
  ASSERT_TRUE(u) << u.error().what;
  EXPECT_EQ(u->servers, (std::vector<std::string>{"10.0.0.1", "10.0.1.1"}));
  EXPECT_EQ(u->libnfs_url("10.0.1.1", "/export"), "nfs://10.0.1.1/export");
}

TEST(NfsUrl, VersionFourIsRefusedAsUnsupported) {
  auto u = parse_nfs_url("nfs://h/export?version=4");
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().code, Errc::unsupported);
  EXPECT_NE(u.error().what.find("version 4 is not supported"), std::string::npos)
      << u.error().what;
  EXPECT_TRUE(parse_nfs_url("nfs://h/export?version=3"));
}

TEST(NfsUrl, BadUrlsNameTheUrlAndTheCause) {
  struct Case {
    const char* url;
    const char* cause;
  } cases[] = {
      {"http://h/x", "does not start with nfs://"},
      {"nfs://h", "no path"},
      {"nfs://h:2049/x", "host:port"},
      {"nfs:///x", "empty server"},
      {"nfs://h/x?nfsport=abc&mountport=1", "not a number"},
      {"nfs://h/x?nfsport=1", "both nfsport and mountport"},
      {"nfs://h/x?speed=fast", "unknown option 'speed'"},
      {"nfs://h/x/../y", "'..'"},
      {"nfs://[::1]/x", "IPv6 server addresses are not supported"},
      {"nfs://[:D]/[:D]", "IPv6 server addresses are not supported"},
  };
  for (const auto& c : cases) {
    auto u = parse_nfs_url(c.url);
    ASSERT_FALSE(u) << c.url;
    EXPECT_EQ(u.error().code, Errc::invalid_argument) << c.url;
    EXPECT_NE(u.error().what.find(c.url), std::string::npos) << u.error().what;
    EXPECT_NE(u.error().what.find(c.cause), std::string::npos) << u.error().what;
  }
}

TEST(NfsUrl, ParentOf) {
  EXPECT_EQ(parent_of("/a/b"), "/a");
  EXPECT_EQ(parent_of("/a"), "/");
  EXPECT_EQ(parent_of("/"), "/");
}

}  // namespace
}  // namespace stripeback::nfs
