// The ransomware alarm's comparison (engine/backup/alarm.h): each rule fires past its
// threshold and not just below it, the page floor and the compression floor hold, and
// profiles that share no measured file give no comparison at all.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "engine/backup/alarm.h"

namespace stripeback::engine {
namespace {

using catalog::FileProfile;
using catalog::FileProfiles;

FileProfiles pages(uint64_t id, std::vector<std::tuple<std::string, uint64_t, uint64_t>> files) {
  FileProfiles p;
  p.backup_id = id;
  for (auto& [path, checked, failed] : files) p.files.push_back({path, checked, failed, 0, 0});
  return p;
}

FileProfiles compressed(uint64_t id,
                        std::vector<std::tuple<std::string, uint64_t, uint64_t>> files) {
  FileProfiles p;
  p.backup_id = id;
  for (auto& [path, raw, stored] : files) p.files.push_back({path, 0, 0, raw, stored});
  return p;
}

std::vector<std::string> rules(const FileProfiles& before, const FileProfiles& after,
                               const AlarmThresholds& t = {}) {
  auto s = compare_profiles(before, after, t);
  EXPECT_TRUE(s);
  return s ? s->rules : std::vector<std::string>{"(no comparison)"};
}

using Rules = std::vector<std::string>;

TEST(Alarm, EncryptedPagesFireBothPageRulesWithTheEvidence) {
  auto s = compare_profiles(pages(4, {{"/pg/base/1/100", 1000, 0}, {"/pg/base/1/200", 1000, 0}}),
                            pages(5, {{"/pg/base/1/100", 1000, 1000}, {"/pg/base/1/200", 1000, 1}}),
                            {});
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->fired());
  EXPECT_EQ(s->rules, (Rules{"page_share", "page_factor"}));
  EXPECT_EQ(s->previous_backup, 4u);
  ASSERT_TRUE(s->pages);
  EXPECT_EQ(s->pages->files, 2u);
  EXPECT_EQ(s->pages->failed_after, 1001u);
  EXPECT_DOUBLE_EQ(s->pages->share_before, 0);
  EXPECT_DOUBLE_EQ(s->pages->share_after, 1001.0 / 2000);
  ASSERT_EQ(s->pages->top.size(), 2u);  // the largest jump first
  EXPECT_EQ(s->pages->top[0].path, "/pg/base/1/100");
  EXPECT_DOUBLE_EQ(s->pages->top[0].after, 1.0);
  EXPECT_EQ(s->pages->top[1].path, "/pg/base/1/200");
  EXPECT_FALSE(s->compression);
}

TEST(Alarm, ThePageShareRuleFiresAboveOnePointAndNotBelow) {
  // From 10% to 11.1% of 10000 pages: 1.1 points (the factor rule cannot: 1.11x).
  EXPECT_EQ(rules(pages(1, {{"/f", 10000, 1000}}), pages(2, {{"/f", 10000, 1110}})),
            Rules{"page_share"});
  // To 10.9%: 0.9 points.
  EXPECT_EQ(rules(pages(1, {{"/f", 10000, 1000}}), pages(2, {{"/f", 10000, 1090}})), Rules{});
  // A threshold of 0.5% fires on it.
  EXPECT_EQ(rules(pages(1, {{"/f", 10000, 1000}}), pages(2, {{"/f", 10000, 1090}}), {0.005, 10, 0.5}),
            Rules{"page_share"});
}

TEST(Alarm, ThePageFactorRuleFiresAboveTenTimesAndNotBelow) {
  // 0.01% to 0.11% of 100000 pages (10 to 110 failing): 11x, but only 0.1 point.
  EXPECT_EQ(rules(pages(1, {{"/f", 100000, 10}}), pages(2, {{"/f", 100000, 110}})),
            Rules{"page_factor"});
  // 9.5x.
  EXPECT_EQ(rules(pages(1, {{"/f", 100000, 10}}), pages(2, {{"/f", 100000, 95}})), Rules{});
  // A factor of 5 fires on it.
  EXPECT_EQ(rules(pages(1, {{"/f", 100000, 10}}), pages(2, {{"/f", 100000, 95}}), {0.01, 5, 0.5}),
            Rules{"page_factor"});
}

TEST(Alarm, FewerThanEightMorePagesFailingNeverFire) {
  // 7 pages of a 100-page table: 7 points and from nothing, but seven pages.
  EXPECT_EQ(rules(pages(1, {{"/small", 100, 0}}), pages(2, {{"/small", 100, 7}})), Rules{});
  // Eight do.
  EXPECT_EQ(rules(pages(1, {{"/small", 100, 0}}), pages(2, {{"/small", 100, 8}})),
            (Rules{"page_share", "page_factor"}));
  // Eight more than before, not eight in all.
  EXPECT_EQ(rules(pages(1, {{"/small", 100, 5}}), pages(2, {{"/small", 100, 12}})), Rules{});
  EXPECT_EQ(kAlarmPageFloor, 8u);
}

TEST(Alarm, FewerFailingPagesThanBeforeDoNotFire) {
  EXPECT_EQ(rules(pages(1, {{"/f", 100, 90}}), pages(2, {{"/f", 100, 0}})), Rules{});
}

TEST(Alarm, TheCompressionRuleFiresWhenTheRatioHalves) {
  // 4:1 to 1:1 (encrypted).
  auto s = compare_profiles(compressed(7, {{"/vm.img", 4000, 1000}, {"/b", 100, 50}}),
                            compressed(8, {{"/vm.img", 4000, 4000}, {"/b", 100, 50}}), {});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rules, Rules{"compression_drop"});
  ASSERT_TRUE(s->compression);
  EXPECT_DOUBLE_EQ(s->compression->ratio_before, 4100.0 / 1050);
  EXPECT_DOUBLE_EQ(s->compression->ratio_after, 4100.0 / 4050);
  ASSERT_EQ(s->compression->top.size(), 1u);  // "/b" did not fall
  EXPECT_EQ(s->compression->top[0].path, "/vm.img");
  EXPECT_DOUBLE_EQ(s->compression->top[0].before, 4);
  EXPECT_DOUBLE_EQ(s->compression->top[0].after, 1);
  EXPECT_FALSE(s->pages);
}

TEST(Alarm, TheCompressionRuleDoesNotFireJustAboveHalf) {
  // 4:1 to 2.05:1.
  EXPECT_EQ(rules(compressed(1, {{"/f", 4000, 1000}}), compressed(2, {{"/f", 4100, 2000}})),
            Rules{});
  // 4:1 to 1.95:1.
  EXPECT_EQ(rules(compressed(1, {{"/f", 4000, 1000}}), compressed(2, {{"/f", 3900, 2000}})),
            Rules{"compression_drop"});
  // A drop of 60% is asked for: 4 to 1.95 is 51%.
  EXPECT_EQ(rules(compressed(1, {{"/f", 4000, 1000}}), compressed(2, {{"/f", 3900, 2000}}),
                  {0.01, 10, 0.6}),
            Rules{});
}

TEST(Alarm, DataThatHardlyCompressedCannotCollapse) {
  // 1.4:1 to 0.6:1 (frames stored raw count as 1:1, so this is only arithmetic): below 1.5.
  EXPECT_EQ(rules(compressed(1, {{"/f", 1400, 1000}}), compressed(2, {{"/f", 600, 1000}})),
            Rules{});
  EXPECT_EQ(rules(compressed(1, {{"/f", 1500, 1000}}), compressed(2, {{"/f", 700, 1000}})),
            Rules{"compression_drop"});
}

TEST(Alarm, OnlyFilesBothBackupsMeasuredAreCompared) {
  // Nothing in common: no comparison.
  EXPECT_FALSE(compare_profiles(pages(1, {{"/a", 100, 0}}), pages(2, {{"/b", 100, 100}}), {}));
  // No earlier profile at all.
  EXPECT_FALSE(compare_profiles(FileProfiles{1, {}}, pages(2, {{"/b", 100, 100}}), {}));
  // Same path, but pages checked by one and compression by the other.
  EXPECT_FALSE(compare_profiles(compressed(1, {{"/a", 100, 10}}), pages(2, {{"/a", 100, 100}}), {}));
  // A new file full of failing pages is not compared; the common one did not change.
  auto s = compare_profiles(pages(1, {{"/a", 100, 0}}),
                            pages(2, {{"/a", 100, 0}, {"/new", 5000, 5000}}), {});
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->fired());
  EXPECT_EQ(s->pages->files, 1u);
  EXPECT_TRUE(s->pages->top.empty());
}

TEST(Alarm, TheEvidenceNamesTwentyFilesAtMost) {
  FileProfiles before, after;
  before.backup_id = 1;
  for (int i = 0; i < 30; ++i) {
    before.files.push_back({"/f" + std::to_string(i), 100, 0, 0, 0});
    after.files.push_back({"/f" + std::to_string(i), 100, static_cast<uint64_t>(i), 0, 0});
  }
  auto s = compare_profiles(before, after, {});
  ASSERT_TRUE(s && s->pages);
  ASSERT_EQ(s->pages->top.size(), kAlarmFilesShown);
  EXPECT_EQ(s->pages->top.front().path, "/f29");
  EXPECT_EQ(s->pages->top.back().path, "/f10");
  EXPECT_NE(suspicion_line(*s).find("against backup 1"), std::string::npos);
}

}  // namespace
}  // namespace stripeback::engine
