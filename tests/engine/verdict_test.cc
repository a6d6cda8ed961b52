// The verdict on what bounded a job (engine/monitor/stats.h): never a bottleneck for a job that
// moved nothing, and never a suggestion of what the job already does.
#include <gtest/gtest.h>

#include "engine/monitor/stats.h"

namespace stripeback::engine {
namespace {

// One channel that spent its time compressing on every core.
std::vector<ChannelStats> compressing() {
  ChannelStats c;
  c.elapsed_s = 10;
  c.cpu_s = 10;
  c.compress_s = 9;
  c.wait_s = 0;
  return {c};
}

TEST(Verdict, AJobThatMovedNothingIsBoundByNothing) {
  VerdictInputs in;
  in.bytes = 0;
  in.cores = 1;
  Verdict v = explain_verdict(compressing(), in);
  EXPECT_EQ(v.bound_by, "none");
  EXPECT_TRUE(v.suggestion.empty()) << v.suggestion;
  EXPECT_NE(v.stage.find("nothing to do"), std::string::npos) << v.stage;
}

TEST(Verdict, CompressAutoIsSuggestedOnlyToAJobNotUsingIt) {
  VerdictInputs in;
  in.cores = 1;
  in.bytes = 1 << 30;
  Verdict fixed = explain_verdict(compressing(), in);
  EXPECT_EQ(fixed.bound_by, "cpu");
  EXPECT_EQ(fixed.stage, "compression CPU");
  EXPECT_NE(fixed.suggestion.find("--compress auto"), std::string::npos) << fixed.suggestion;
  in.compress_auto = true;
  Verdict adaptive = explain_verdict(compressing(), in);
  EXPECT_EQ(adaptive.suggestion.find("--compress auto)"), std::string::npos) << adaptive.suggestion;
  EXPECT_EQ(adaptive.suggestion.find("(or --compress auto"), std::string::npos);
  EXPECT_NE(adaptive.suggestion.find("--cpu-budget"), std::string::npos) << adaptive.suggestion;
}

}  // namespace
}  // namespace stripeback::engine
