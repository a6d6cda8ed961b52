// --channels auto: the pure choice from history and probe figures, its bounds, the media
// jobs are grouped by, and a real read probe of local files.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/tuning/auto_channels.h"
#include "engine/tuning/channel_choice.h"
#include "engine/tuning/read_probe.h"
#include "tests/support/temp_dir.h"

namespace stripeback::engine {
namespace {

using stripeback::testing::TempDir;
using stripeback::testing::write_pattern_file;

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}
bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(SmallestNearBest, TakesTheFewestChannelsWithinFivePercentOfTheBest) {
  EXPECT_EQ(smallest_near_best({{1, 100}, {2, 185}, {4, 200}, {8, 199}}), 4u);
  EXPECT_EQ(smallest_near_best({{1, 100}, {2, 191}, {4, 200}, {8, 199}}), 2u);
  EXPECT_EQ(smallest_near_best({{1, 300}, {2, 200}, {4, 100}}), 1u);
  EXPECT_EQ(smallest_near_best({}), 0u);
}

TEST(LargestNearBest, TakesTheMostChannelsWithinFifteenPercentOfTheBest) {
  // Reads alike at every count: the most channels (they overlap the rest of the work).
  EXPECT_EQ(largest_near_best({{1, 2670}, {2, 2298}, {4, 2462}, {8, 2300}}), 8u);
  EXPECT_EQ(largest_near_best({{1, 2670}, {2, 2298}, {4, 2462}, {8, 2200}}), 4u);
  // Concurrent readers hurt (a disk seeking between them): the fewest.
  EXPECT_EQ(largest_near_best({{1, 150}, {2, 120}, {4, 90}, {8, 70}}), 1u);
  EXPECT_EQ(largest_near_best({{1, 100}, {2, 200}, {4, 400}, {8, 350}}), 8u);
  EXPECT_EQ(largest_near_best({{1, 100}, {2, 200}, {4, 400}, {8, 330}}), 4u);
  EXPECT_EQ(largest_near_best({}), 0u);
}

TEST(ChooseFromProbe, ChoosesTheLargestCountNearTheBestRate) {
  const std::map<uint32_t, double> rates{{1, 900}, {2, 1000}, {4, 950}, {8, 700}};
  ChannelChoice c = choose_from_probe(rates, ChannelBounds{});
  EXPECT_EQ(c.channels, 4u);
  EXPECT_EQ(c.reason, "probe: 1=900 2=1000 4=950 8=700 MB/s");
}

TEST(ChooseFromHistory, PicksTheCountWhoseMedianRateIsBest) {
  // 2 channels have the best median (305); 4 had one lucky run, its median is lower.
  const std::vector<PastRun> runs{{1, 100}, {1, 110}, {2, 300}, {2, 310},
                                  {4, 150}, {4, 160}, {4, 900}, {4, 170}};
  auto c = choose_from_history(runs, "8 backups from A to B", ChannelBounds{});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->channels, 2u);
  EXPECT_TRUE(starts_with(c->reason, "history: 8 backups from A to B: ")) << c->reason;
  EXPECT_TRUE(has(c->reason, "1=105 2=305 4=165 MB/s")) << c->reason;
}

TEST(ChooseFromHistory, NeedsThreeRunsOfTwoCountsAtLeast) {
  const std::vector<PastRun> one_count{{2, 100}, {2, 120}, {2, 110}, {2, 90}};
  EXPECT_FALSE(choose_from_history(one_count, "x", ChannelBounds{}).has_value());
  const std::vector<PastRun> two_runs{{1, 100}, {2, 150}};
  EXPECT_FALSE(choose_from_history(two_runs, "x", ChannelBounds{}).has_value());
  const std::vector<PastRun> enough{{1, 100}, {2, 150}, {2, 160}};
  EXPECT_TRUE(choose_from_history(enough, "x", ChannelBounds{}).has_value());
  const std::vector<PastRun> no_rate{{1, 0}, {2, 0}, {4, 0}};
  EXPECT_FALSE(choose_from_history(no_rate, "x", ChannelBounds{}).has_value());
}

TEST(ChooseFromHistory, CountsAboveTheMemoryBoundAreLeftOut) {
  const std::vector<PastRun> runs{{1, 100}, {2, 190}, {2, 200}, {8, 800}, {8, 790}};
  ChannelBounds b;
  b.memory = 4;
  auto c = choose_from_history(runs, "x", b);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->channels, 2u);
  EXPECT_TRUE(has(c->reason, "2 run(s) above the cap of 4 left out")) << c->reason;
  // Nothing left within the bound: not enough history.
  b.memory = 1;
  EXPECT_FALSE(choose_from_history(runs, "x", b).has_value());
}

TEST(ChooseFromProbe, TheMemoryBoundCapsTheChoiceAndSaysSo) {
  const std::map<uint32_t, double> rates{{1, 100}, {2, 200}, {4, 400}, {8, 800}};
  EXPECT_EQ(choose_from_probe(rates, ChannelBounds{}).channels, 8u);
  ChannelBounds b;
  b.memory = 3;
  ChannelChoice c = choose_from_probe(rates, b);
  EXPECT_EQ(c.channels, 3u);
  EXPECT_TRUE(starts_with(c.reason, "probe: 1=100 2=200 4=400 8=800 MB/s")) << c.reason;
  EXPECT_TRUE(has(c.reason, "capped at 3 by the memory limit of the I/O buffers")) << c.reason;
}

TEST(ChooseFromProbe, NeverMoreChannelsThanUnitsOfWork) {
  const std::map<uint32_t, double> rates{{1, 100}, {2, 200}, {4, 400}};
  ChannelBounds b;
  b.units = 2;
  ChannelChoice c = choose_from_probe(rates, b);
  EXPECT_EQ(c.channels, 2u);
  EXPECT_TRUE(has(c.reason, "capped at 2 by 2 unit(s) of work")) << c.reason;
}

TEST(ChannelBounds, TheTightestBoundWinsAndOneIsTheLeast) {
  ChannelBounds b;
  EXPECT_EQ(b.cap(), kAutoChannelsMost);
  EXPECT_EQ(b.cap_reason(), "the memory limit of the I/O buffers");  // all equal: memory first
  b.units = 5;
  EXPECT_EQ(b.cap(), 5u);
  b.memory = 0;  // not even one channel fits: one runs anyway (the job's check refuses worse)
  EXPECT_EQ(b.cap(), 1u);
}

TEST(ChooseUnmeasured, TheDefaultWithinTheBounds) {
  ChannelChoice c = choose_unmeasured("no probe: small", ChannelBounds{});
  EXPECT_EQ(c.channels, kAutoChannelsDefault);
  EXPECT_EQ(c.reason, "no probe: small: the default 4");
  ChannelBounds one;
  one.units = 1;
  c = choose_unmeasured("no probe: small", one);
  EXPECT_EQ(c.channels, 1u);
  EXPECT_TRUE(has(c.reason, "capped at 1 by 1 unit(s) of work")) << c.reason;
}

TEST(MediumOf, LocalPathsAreGroupedByFileSystemAndUrlsByServer) {
  TempDir t("sbtest-medium");
  write_pattern_file(t / "a", 4096, 1);
  const std::string a = medium_of(t / "a");
  EXPECT_TRUE(starts_with(a, "local disk (device ")) << a;
  EXPECT_EQ(medium_of(t / "not/yet/made"), a);  // the nearest existing directory's
  EXPECT_EQ(media_of({t / "a", t.path()}), a);
#if STRIPEBACK_WITH_NFS
  EXPECT_EQ(medium_of("nfs://127.0.0.1/export/x/y"), "nfs://127.0.0.1");
  EXPECT_EQ(media_of({"nfs://127.0.0.1/export/x", "nfs://127.0.0.1/export/y"}), "nfs://127.0.0.1");
#endif
}

std::vector<ProbeFile> probe_files(const TempDir& t, int n, uint64_t size) {
  std::vector<ProbeFile> files;
  for (int i = 0; i < n; ++i) {
    const std::string p = t / ("f" + std::to_string(i));
    write_pattern_file(p, size, static_cast<uint32_t>(i + 1));
    files.push_back({p, size});
  }
  return files;
}

TEST(ReadProbe, EveryReaderReadsTheSameAmountWithoutRereading) {
  TempDir t("sbtest-probe");
  const auto files = probe_files(t, 4, 8u << 20);
  ProbeOptions o;
  o.counts = {1, 2, 4};
  o.reader_bytes = 1u << 20;
  o.run = 1u << 20;
  o.io = 256u << 10;
  o.depth = 4;
  EXPECT_EQ(probe_bytes(o), 7u << 20);  // 1 + 2 + 4 readers of 1 MiB
  ASSERT_TRUE(probe_fits(files, o));
  auto rounds = probe_reads(files, o);
  ASSERT_TRUE(rounds.has_value()) << rounds.error().what;
  ASSERT_EQ(rounds->size(), 3u);
  for (size_t i = 0; i < rounds->size(); ++i) {
    EXPECT_EQ((*rounds)[i].readers, o.counts[i]);
    EXPECT_EQ((*rounds)[i].bytes, o.reader_bytes * o.counts[i]);
    EXPECT_GT((*rounds)[i].mb_per_s, 0);
  }
}

TEST(ReadProbe, DoesNotFitFilesTooSmallToSampleWithoutRereading) {
  TempDir t("sbtest-probe-small");
  ProbeOptions o;
  o.counts = {1, 2, 4};
  o.reader_bytes = 1u << 20;
  o.run = 1u << 20;
  EXPECT_FALSE(probe_fits(probe_files(t, 2, 3u << 20), o));  // 6 places for 7 runs
  EXPECT_TRUE(probe_fits(probe_files(t, 2, 4u << 20), o));   // 8 places
  EXPECT_FALSE(probe_fits(probe_files(t, 3, 512u << 10), o));  // smaller than a run
}

TEST(ReadProbe, AFileThatCannotBeOpenedFailsItNamingTheFile) {
  TempDir t("sbtest-probe-gone");
  auto files = probe_files(t, 2, 8u << 20);
  files[1].location = t / "gone";
  ProbeOptions o;
  o.counts = {1, 2};
  o.reader_bytes = 1u << 20;
  o.run = 1u << 20;
  auto rounds = probe_reads(files, o);
  ASSERT_FALSE(rounds.has_value());
  EXPECT_TRUE(has(rounds.error().what, "gone")) << rounds.error().what;
}

}  // namespace
}  // namespace stripeback::engine
