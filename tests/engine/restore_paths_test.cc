#include <gtest/gtest.h>

#include "engine/restore_job.h"

namespace stripeback::engine {
namespace {

TEST(SafeComponents, SplitsAbsolutePaths) {
  auto c = safe_components("/data/db/users01.dbf");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(*c, (std::vector<std::string>{"data", "db", "users01.dbf"}));
}

TEST(SafeComponents, RefusesPathsThatCouldEscape) {
  for (const char* p : {"", "relative/x", "/a/../b", "/a/./b", "/a//b", "/", "/a/"}) {
    auto c = safe_components(p);
    EXPECT_FALSE(c.has_value()) << "'" << p << "' accepted";
    if (!c) {
      EXPECT_NE(c.error().what.find("unsafe path"), std::string::npos);
    }
  }
}

TEST(SafeComponents, NfsHostIsCheckedLikeAnyComponent) {
  auto c = safe_components("nfs://filer1/export/db/users01.dbf");
  ASSERT_TRUE(c.has_value()) << c.error().what;
  EXPECT_EQ(*c, (std::vector<std::string>{"filer1", "export", "db", "users01.dbf"}));
  for (const char* p : {"nfs://../x/evil", "nfs://..,x/x/evil", "nfs://./x/evil",
                        "nfs://.,a/x/evil"}) {
    auto r = safe_components(p);
    EXPECT_FALSE(r.has_value()) << "'" << p << "' accepted";
    if (!r) {
      EXPECT_NE(r.error().what.find("unsafe path"), std::string::npos);
    }
  }
}

TEST(SafeComponents, NulAndSlashInAComponentAreRefused) {
  EXPECT_FALSE(safe_component(std::string("a\0b", 3)));
  EXPECT_FALSE(safe_component("a/b"));
  EXPECT_FALSE(safe_component(".."));
  EXPECT_FALSE(safe_component(""));
  EXPECT_TRUE(safe_component("..."));
  EXPECT_TRUE(safe_component(std::string(255, 'x')));
  EXPECT_FALSE(safe_components(std::string("/a\0/b", 5)).has_value());
}

}  // namespace
}  // namespace stripeback::engine
