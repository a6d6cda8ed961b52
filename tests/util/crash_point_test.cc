// crash_point() kills the process only at the armed point and count. The target is parsed
// once per process, so each case runs in a death-test child that sets the variable before
// its first call (this process itself never calls crash_point).
#include "util/crash_point.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

namespace stripeback::util {
namespace {

void run_with(const char* spec, int calls_of_b) {
  ::setenv("STRIPEBACK_CRASH_AT", spec, 1);
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

TEST(CrashPointDeathTest, OtherPointsAndNoVariableDoNothing) {
  EXPECT_EXIT(run_with("c", 5), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(run_with("", 5), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(run_with("bb", 5), ::testing::ExitedWithCode(0), "");
}

TEST(CrashPointDeathTest, AMalformedCountIsReportedAndArmsNothing) {
  EXPECT_EXIT(run_with("b:0", 3), ::testing::ExitedWithCode(0), "ignoring STRIPEBACK_CRASH_AT");
  EXPECT_EXIT(run_with("b:x", 3), ::testing::ExitedWithCode(0), "ignoring STRIPEBACK_CRASH_AT");
  EXPECT_EXIT(run_with("b:", 3), ::testing::ExitedWithCode(0), "ignoring STRIPEBACK_CRASH_AT");
}

}  // namespace
}  // namespace stripeback::util
