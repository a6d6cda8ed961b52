#include "util/phases.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stripeback::util {
namespace {

struct Job {
  std::string_view phase;
  std::vector<std::string> ran;
  bool stop_after_first = false;
  bool fail_second = false;
};

Result<Next> first(Job& j) {
  j.ran.emplace_back(j.phase);
  return j.stop_after_first ? Next::stop : Next::go_on;
}
Result<Next> second(Job& j) {
  j.ran.emplace_back(j.phase);
  if (j.fail_second) return fail(Errc::invalid_argument, "second phase refused");
  return Next::go_on;
}
Result<Next> third(Job& j) {
  j.ran.emplace_back(j.phase);
  return Next::go_on;
}
const Phase<Job> kPhases[] = {{"first", first}, {"second", second}, {"third", third}};

TEST(Phases, RunInOrderEachSeeingItsName) {
  Job j;
  ASSERT_TRUE(run_phases<Job>(j, kPhases));
  EXPECT_EQ(j.ran, (std::vector<std::string>{"first", "second", "third"}));
}

TEST(Phases, StopEndsTheJobWithoutTheRest) {
  Job j;
  j.stop_after_first = true;
  ASSERT_TRUE(run_phases<Job>(j, kPhases));
  EXPECT_EQ(j.ran, (std::vector<std::string>{"first"}));
}

TEST(Phases, AnErrorEndsTheJobWithItsMessageUnchanged) {
  Job j;
  j.fail_second = true;
  auto r = run_phases<Job>(j, kPhases);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().what, "second phase refused");
  EXPECT_EQ(j.phase, "second");
  EXPECT_EQ(j.ran, (std::vector<std::string>{"first", "second"}));
}

}  // namespace
}  // namespace stripeback::util
