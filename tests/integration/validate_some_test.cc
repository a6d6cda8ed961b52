// Validation of some frames (docs/validate.md): --sample checks a seeded share, the same
// seed the same frames; --part K/N runs cover every frame once between them and find a
// damaged frame in exactly the part that holds it; --max-duration checks the frames that
// have gone longest without a check first, so repeated short runs cover the backup; the
// catalog remembers it and list shows when each backup was last fully checked.
#include <fstream>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class ValidateSome : public ::testing::Test {
 protected:
  void SetUp() override {
    make_file(t_ / "src/a.dbf", 40 * kMiB + 100, 11);
    make_file(t_ / "src/b.dbf", 23 * kMiB, 12);
    RunResult b = sb({"backup", t_ / "src", "--to", t_ / "p", "--catalog", t_ / "cat",
                      "--channels", "2", "--json"});
    ASSERT_TRUE(b.exited(0)) << b.describe();
  }
  Json validate(std::vector<std::string> extra, int code = 0, const Env& env = {}) {
    std::vector<std::string> a{"validate", "--catalog", t_ / "cat", "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    RunResult r = sb(a, env);
    EXPECT_TRUE(r.exited(code)) << r.describe();
    last_err_ = r.err;
    return parse_json(r);
  }
  Json listed() {
    RunResult l = sb({"list", "--catalog", t_ / "cat", "--json"});
    EXPECT_TRUE(l.exited(0)) << l.describe();
    return parse_json(l)["backups"][0];
  }
  TempDir t_{"sbit-valsome"};
  std::string last_err_;
};

TEST_F(ValidateSome, SampleChecksASeededShare) {
  Json a = validate({"--sample", "50%", "--seed", "9"});
  const Json& c = a["check"];
  const uint64_t total = *c["frames_total"].as_u64(), picked = *c["frames_selected"].as_u64();
  EXPECT_EQ(total, 64u) << "40 MiB + 100 bytes and 23 MiB in 1 MiB frames";
  EXPECT_GT(picked, total / 5);
  EXPECT_LT(picked, total * 4 / 5);
  EXPECT_EQ(*c["frames_checked"].as_u64(), picked);
  EXPECT_EQ(c["mode"].as_string(), "sample 50% seed 9");
  EXPECT_FALSE(c["pieces_audited"].as_bool());
  EXPECT_EQ(*a["files"].as_u64(), 2u) << "every file is checked against its index";
  Json again = validate({"--sample", "50%", "--seed", "9"});
  EXPECT_EQ(*again["check"]["frames_selected"].as_u64(), picked) << "the same seed, the same frames";
  Json other = validate({"--sample", "1%"});
  EXPECT_TRUE(contains(other["check"]["mode"].as_string(), "sample 1% seed ")) << "a seed is reported";
  // A full validation walks the pieces whole and checks everything.
  Json full = validate({});
  EXPECT_EQ(full["check"]["mode"].as_string(), "full");
  EXPECT_EQ(*full["check"]["frames_checked"].as_u64(), total);
  EXPECT_TRUE(full["check"]["pieces_audited"].as_bool());
  EXPECT_FALSE(listed()["last_full_check"].is_null());
}

TEST_F(ValidateSome, PartsCoverEveryFrameOnceAndFindTheDamageInOnePart) {
  uint64_t sum = 0, total = 0;
  for (int k = 1; k <= 4; ++k) {
    // Not fully checked while some frame has not been (a part may hold no frame at all:
    // the runs of small pieces fall to parts by a hash of the piece's name).
    if (k == 1 || sum < total) {
      EXPECT_TRUE(listed()["last_full_check"].is_null()) << "before part " << k;
    }
    Json j = validate({"--part", std::to_string(k) + "/4"});
    sum += *j["check"]["frames_checked"].as_u64();
    total = *j["check"]["frames_total"].as_u64();
  }
  EXPECT_EQ(sum, total) << "four parts check every frame once";
  EXPECT_FALSE(listed()["last_full_check"].is_null()) << "the fourth part completed a full check";
  RunResult text = sb({"list", "--catalog", t_ / "cat"});
  EXPECT_TRUE(contains(text.out, "CHECKED")) << text.out;

  // One byte of one frame damaged: exactly one part finds it, naming the piece.
  auto pieces = pieces_in(t_ / "p");
  ASSERT_FALSE(pieces.empty());
  std::string piece;
  for (const auto& p : pieces)
    if (file_size(p) > file_size(piece.empty() ? p : piece) || piece.empty()) piece = p;
  {
    std::fstream f(piece, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(file_size(piece) / 2));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(static_cast<std::streamoff>(file_size(piece) / 2));
    f.write(&c, 1);
  }
  int failed = 0;
  for (int k = 1; k <= 4; ++k) {
    std::vector<std::string> a{"validate", "--catalog", t_ / "cat", "--part",
                               std::to_string(k) + "/4"};
    RunResult r = sb(a);
    if (r.exited(1)) {
      ++failed;
      EXPECT_TRUE(contains(r.err, base_names({piece})[0])) << r.err;
    } else {
      EXPECT_TRUE(r.exited(0)) << r.describe();
    }
  }
  EXPECT_EQ(failed, 1);
}

TEST_F(ValidateSome, MaxDurationChecksTheOldestFirstUntilEveryFrameIsCovered) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAULTS");
  // Every piece read takes 300 ms: a run of 1 s checks one file's chunk (a.dbf's 41 frames,
  // 8 reads in flight), then stops at the deadline.
  const Env slow{{"STRIPEBACK_FAULTS", "read:1+:delay=300:.sbp"}};
  uint64_t total = 0, checked_sum = 0;
  int runs = 0;
  bool hit = false;
  while (listed()["last_full_check"].is_null() && runs < 12) {
    Json j = validate({"--max-duration", "1s", "--channels", "1"}, 0, slow);
    const Json& c = j["check"];
    total = *c["frames_total"].as_u64();
    checked_sum += *c["frames_checked"].as_u64();
    hit = hit || c["deadline_hit"].as_bool();
    EXPECT_EQ(c["mode"].as_string(), "oldest");
    ++runs;
  }
  EXPECT_TRUE(hit) << "a run stopped at the deadline";
  EXPECT_GT(runs, 1);
  EXPECT_FALSE(listed()["last_full_check"].is_null()) << runs << " runs";
  // Oldest first: the second run took the file the first one left, checking no frame twice
  // before every frame was checked once.
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(checked_sum, total) << "frames were checked again before all were";
}

TEST_F(ValidateSome, BadSelectionsAreRefused) {
  struct Case {
    std::vector<std::string> args;
    std::string text;
  };
  for (const Case& c : std::vector<Case>{
           {{"--sample", "0"}, "--sample wants a share above 0 and at most 100%"},
           {{"--sample", "150%"}, "--sample wants a share above 0 and at most 100%"},
           {{"--sample", "ten"}, "--sample wants a share"},
           {{"--seed", "4"}, "--seed goes with --sample"},
           {{"--part", "3/2"}, "--part wants K/N with 1 <= K <= N"},
           {{"--part", "0/2"}, "--part wants K/N"},
           {{"--part", "1/2x"}, "--part wants K/N"},
           {{"--max-duration", "0"}, "--max-duration"},
       }) {
    std::vector<std::string> a{"validate", "--catalog", t_ / "cat"};
    a.insert(a.end(), c.args.begin(), c.args.end());
    RunResult r = sb(a);
    EXPECT_TRUE(r.exited(2)) << r.describe();
    EXPECT_TRUE(contains(r.err, c.text)) << c.args[0] << ": " << r.err;
  }
  RunResult restore = sb({"restore", "--catalog", t_ / "cat", "--to", t_ / "r", "--sample", "5%"});
  EXPECT_TRUE(restore.exited(2)) << restore.describe();
  EXPECT_FALSE(exists(t_ / "r"));
}

}  // namespace
}  // namespace stripeback::it
