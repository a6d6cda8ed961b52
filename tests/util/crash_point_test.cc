// crash_point() kills the process only at the armed point and count. Each case runs in a
// death-test child that arms the point through the test-hook API before its first call
// (this process itself never arms one).
#include "util/crash_point.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace stripeback::util {
namespace {

void run_with(const char* spec, int calls_of_b) {
  if (!test_hooks::set_crash_at(spec)) ::_exit(3);
  crash_point("a");
  for (int i = 0; i < calls_of_b; ++i) crash_point("b");
  ::_exit(0);
}

TEST(CrashPointDeathTest, KillsAtTheFirstCallByDefault) {
  EXPECT_EXIT(run_with("b", 1), ::testing::KilledBySignal(SIGKILL), "");
}

TEST(CrashPointDeathTest, KillsAtTheNthCall) {
  EXPECT_EXIT(run_with("b:3", 2), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(run_with("b:3", 3), ::testing::KilledBySignal(SIGKILL), "");
}

TEST(CrashPointDeathTest, OtherPointsAndAnEmptySpecDoNothing) {
  EXPECT_EXIT(run_with("c", 5), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(run_with("", 5), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(run_with("bb", 5), ::testing::ExitedWithCode(0), "");
}

TEST(CrashPointDeathTest, ArmingAgainRestartsTheCountAndAnEmptySpecDisarms) {
  auto twice = [](const char* second) {
    if (!test_hooks::set_crash_at("b:2")) ::_exit(3);
    crash_point("b");
    if (!test_hooks::set_crash_at(second)) ::_exit(3);
    crash_point("b");
    ::_exit(0);
  };
  EXPECT_EXIT(twice("b:2"), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(twice(""), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(twice("b"), ::testing::KilledBySignal(SIGKILL), "");
}

TEST(CrashPoint, AMalformedSpecIsRefusedSayingWhyAndArmsNothing) {
  for (const char* spec : {"b:0", "b:x", "b:", "b:-1", ":3", "b:99999999999999999999"}) {
    auto r = test_hooks::set_crash_at(spec);
    ASSERT_FALSE(r.has_value()) << spec;
    EXPECT_EQ(r.error().code, Errc::invalid_argument) << spec;
    EXPECT_NE(r.error().what.find(std::string("'") + spec + "'"), std::string::npos)
        << r.error().what;
  }
  EXPECT_NE(test_hooks::set_crash_at("b:0").error().what.find("whole number from 1"),
            std::string::npos);
  EXPECT_NE(test_hooks::set_crash_at(":3").error().what.find("no point name"), std::string::npos);
  // Nothing was armed: this process reaches "b" and lives.
  crash_point("b");
}

}  // namespace
}  // namespace stripeback::util
