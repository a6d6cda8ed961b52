#include "util/units.h"

#include <gtest/gtest.h>

namespace stripeback::util {
namespace {

TEST(ParseSize, AcceptsUnits) {
  EXPECT_EQ(*parse_size("4096"), 4096u);
  EXPECT_EQ(*parse_size("1M"), 1u << 20);
  EXPECT_EQ(*parse_size("256k"), 256u << 10);
  EXPECT_EQ(*parse_size("2GiB"), 2ull << 30);
  EXPECT_EQ(*parse_size("1T"), 1ull << 40);
}

TEST(ParseSize, RejectsGarbageWithMessage) {
  for (const char* bad : {"", "M", "-1", "1X", "99999999999999999999", "17179869184T"}) {
    auto r = parse_size(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().what.find("invalid size"), std::string::npos);
  }
}

}  // namespace
}  // namespace stripeback::util
