// --channels auto through the real binary (docs/channel-controls.md#channels-auto): a backup and a
// restore that choose their count complete, restore identical bytes and say what they chose
// and why; the history of fixed-count backups decides once there is enough of it; the
// work's units bound the choice; `configure channels auto` is the stored default; bad
// values are refused naming the option.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/tuning/channel_choice.h"
#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// A source of `files` files of `size` bytes each.
std::string make_source(const TempDir& t, int files, uint64_t size) {
  const std::string src = t / "src";
  for (int i = 0; i < files; ++i)
    make_file(src + "/f" + std::to_string(i), size, static_cast<uint32_t>(100 + i));
  return src;
}

uint64_t u64(const Json& v) { return v.as_u64().value_or(0); }

// The rates of a reason's "1=105 2=305 MB/s" part.
std::map<uint32_t, double> rates_in(const std::string& reason) {
  std::map<uint32_t, double> rates;
  const size_t colon = reason.rfind(": ");
  std::istringstream in(reason.substr(colon == std::string::npos ? 0 : colon + 2));
  std::string word;
  while (in >> word) {
    unsigned n = 0;
    double r = 0;
    if (std::sscanf(word.c_str(), "%u=%lf", &n, &r) == 2) rates[n] = r;
  }
  return rates;
}

TEST(ChannelsAuto, BackupAndRestoreChooseRestoreIdenticalBytesAndSayWhy) {
  TempDir t("sbit-auto");
  const std::string src = make_source(t, 6, 3 * kMiB);
  RunResult b = sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat",
                    "--channels", "auto", "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  EXPECT_EQ(j["status"].as_string(), "complete");
  const uint64_t chosen = u64(j["channels_chosen"]);
  EXPECT_GE(chosen, 1u);
  EXPECT_LE(chosen, engine::kAutoChannelsMost);
  EXPECT_EQ(j["channels"].size(), chosen);
  // 18 MiB is far below what the probe needs: no probe, the default, and it says so.
  const std::string reason = j["channels_reason"].as_string();
  EXPECT_TRUE(contains(reason, "no probe")) << reason;
  EXPECT_EQ(chosen, engine::kAutoChannelsDefault);

  RunResult r = sb({"restore", "--to", t / "out", "--catalog", t / "cat", "--channels", "auto",
                    "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json rj = parse_json(r);
  EXPECT_EQ(rj["status"].as_string(), "complete");
  EXPECT_GE(u64(rj["channels_chosen"]), 1u);
  EXPECT_FALSE(rj["channels_reason"].as_string().empty());
  EXPECT_TRUE(restored_tree(t / "out", src));

  // The text summary says it on one line.
  RunResult v = sb({"validate", "--catalog", t / "cat", "--channels", "auto"});
  SB_ASSERT_EXIT(v, 0);
  EXPECT_TRUE(contains(v.out, "  channels: auto chose ")) << v.out;
}

TEST(ChannelsAuto, AFixedCountIsReportedWithoutAReason) {
  TempDir t("sbit-auto-fixed");
  const std::string src = make_source(t, 2, kMiB);
  RunResult b = sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat",
                    "--channels", "3", "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  EXPECT_EQ(u64(j["channels_chosen"]), 3u);
  EXPECT_TRUE(j["channels_reason"].is_null());
  EXPECT_EQ(j["channels"].size(), 3u);
}

// Backups at 1 and 2 channels make the history of this pair of media; auto then takes one
// of those counts, the one its reason's rates make best, and says it came from history.
TEST(ChannelsAuto, HistoryOfFixedCountsDecides) {
  TempDir t("sbit-auto-history");
  const std::string src = make_source(t, 8, 4 * kMiB);  // 32 MiB: counted in the history
  for (const char* n : {"1", "2", "1", "2"}) {
    SB_ASSERT_EXIT(sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat",
                       "--channels", n}), 0);
  }
  RunResult b = sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat",
                    "--channels", "auto", "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  const std::string reason = j["channels_reason"].as_string();
  EXPECT_TRUE(contains(reason, "history: 4 backups from local disk (device ")) << reason;
  const uint64_t chosen = u64(j["channels_chosen"]);
  EXPECT_TRUE(chosen == 1 || chosen == 2) << chosen;
  const auto rates = rates_in(reason);
  ASSERT_EQ(rates.size(), 2u) << reason;
  // The reason shows whole MB/s; the choice was made on the exact rates, so a pair of rates
  // right at the 5% line may round either way.
  const double lo = std::min(rates.at(1), rates.at(2)), hi = std::max(rates.at(1), rates.at(2));
  if (std::abs(lo / hi - (1 - engine::kNearBest)) > 0.01) {
    EXPECT_EQ(chosen, engine::smallest_near_best(rates)) << reason;
  }
  EXPECT_EQ(j["channels"].size(), chosen);
}

TEST(ChannelsAuto, NeverMoreChannelsThanFiles) {
  TempDir t("sbit-auto-one");
  const std::string src = make_source(t, 1, 2 * kMiB);
  RunResult b = sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat",
                    "--channels", "auto", "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  EXPECT_EQ(u64(j["channels_chosen"]), 1u);
  EXPECT_TRUE(contains(j["channels_reason"].as_string(), "capped at 1 by 1 unit(s) of work"))
      << b.describe();
}

TEST(ChannelsAuto, ConfigureChannelsAutoIsTheStoredDefault) {
  TempDir t("sbit-auto-configure");
  const std::string src = make_source(t, 4, kMiB);
  SB_ASSERT_EXIT(sb({"configure", "channels", "auto", "--catalog", t / "cat"}), 0);
  RunResult b = sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(b, 0);
  EXPECT_FALSE(parse_json(b)["channels_reason"].as_string().empty()) << b.describe();
  // A flag overrides the stored default.
  RunResult f = sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat", "--channels",
                    "1", "--json"});
  SB_ASSERT_EXIT(f, 0);
  EXPECT_TRUE(parse_json(f)["channels_reason"].is_null()) << f.describe();
  EXPECT_EQ(u64(parse_json(f)["channels_chosen"]), 1u);
  RunResult bad = sb({"configure", "channels", "autox", "--catalog", t / "cat"});
  SB_EXPECT_EXIT(bad, 2);
  EXPECT_TRUE(contains(bad.err, "configure channels: 'autox'")) << bad.describe();
}

TEST(ChannelsAuto, BadValuesAreRefusedNamingTheOption) {
  TempDir t("sbit-auto-bad");
  const std::string src = make_source(t, 1, 4096);
  for (const char* v : {"0", "autox", "257"}) {
    RunResult b = sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat",
                      "--channels", v});
    SB_EXPECT_EXIT(b, 2);
    EXPECT_TRUE(contains(b.err, "option --channels")) << b.describe();
  }
  RunResult r = sb({"restore", "--to", t / "out", "--catalog", t / "cat", "--channels", "autox"});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "--channels wants a whole number from 1 to 256 or auto; got "
                              "'autox'")) << r.describe();
  EXPECT_FALSE(exists(t / "pieces"));
  EXPECT_FALSE(exists(t / "out"));
}

}  // namespace
}  // namespace stripeback::it
