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

}  // namespace
}  // namespace stripeback::engine
