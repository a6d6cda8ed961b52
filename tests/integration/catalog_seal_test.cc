// The sealed catalog end to end (docs/security.md, "Tamper-evident catalog"): an encrypted
// backup seals its catalog; a record edited with its CRC fixed is reported as tampering by
// list, restore and validate (exit 9, nothing restored) and refused by a backup, while
// damage stays damage; without the key the catalog is listed unverified and nothing is
// appended to it; a configured key is used by every command; a rekey seals anew under the
// new key, and one killed at random moments finishes when run again, losing nothing;
// catalog rebuild into a new directory gives a verified catalog that restores.
#include <csignal>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "catalog/record_log.h"
#include "tests/integration/it_util.h"
#include "util/bytes.h"

namespace stripeback::it {
namespace {

namespace fs = std::filesystem;

using stripeback::testing::read_file;

void spill(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Replaces the first `from` in the catalog's log by `to` (same length) and, with
// `fix_crc`, recomputes the CRC of the record it is in, as a deliberate edit would.
void edit_log(const std::string& cat, const std::string& from, const std::string& to,
              bool fix_crc) {
  const std::string path = cat + "/catalog.log";
  std::string b = read_file(path);
  const size_t at = b.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  const auto scan = catalog::scan_records(bytes.subspan(catalog::kFileHeaderSize),
                                          catalog::kFileHeaderSize, 0);
  b.replace(at, to.size(), to);
  if (fix_crc) {
    for (const auto& f : scan.frames) {
      if (at < f.offset || at >= f.offset + f.size) continue;
      auto* p = reinterpret_cast<uint8_t*>(b.data()) + f.offset;
      const uint32_t length = util::get_le32(p + 4);
      util::put_le32(p + 8, catalog::frame_crc(length, {p + 12, 12 + size_t{length}}));
    }
  }
  spill(path, b);
}

class SealedCatalog : public ::testing::Test {
 protected:
  void SetUp() override {
    make_file(src_ + "/a.dbf", 3u << 20, 21);
    make_file(src_ + "/b.dbf", 200000, 22);
    SB_ASSERT_EXIT(sb({"keygen", k1_}), 0);
    SB_ASSERT_EXIT(sb({"keygen", k2_}), 0);
  }
  RunResult backup(const std::string& tag, const std::string& key) {
    return sb({"backup", src_, "--to", dest_, "--catalog", cat_, "--tag", tag, "--encrypt",
               "--key-file", key});
  }
  RunResult list(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> a{"list", "--catalog", cat_};
    a.insert(a.end(), extra.begin(), extra.end());
    return sb(a);
  }
  void expect_restores_identical(const std::string& cat, const std::string& to) {
    SB_ASSERT_EXIT(sb({"restore", "--catalog", cat, "--to", t_ / to, "--key-file", k1_}), 0);
    for (const char* f : {"/a.dbf", "/b.dbf"})
      EXPECT_EQ(read_file(t_ / to + src_ + f), read_file(src_ + f)) << f;
  }
  TempDir t_{"sbit-seal"};
  std::string src_ = t_ / "src", dest_ = t_ / "dest", cat_ = t_ / "cat";
  std::string k1_ = t_ / "k1.key", k2_ = t_ / "k2.key";
};

TEST_F(SealedCatalog, AnEditedRecordIsTamperingForListRestoreValidateAndBackup) {
  SB_ASSERT_EXIT(backup("nightly", k1_), 0);
  RunResult r = list({"--key-file", k1_});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "catalog sealed with key version 1: every record verified")) << r.out;
  r = list();
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "NOT verified (no key given)")) << r.out;

  edit_log(cat_, "nightly", "nightlY", /*fix_crc=*/true);
  r = list({"--key-file", k1_});
  SB_EXPECT_EXIT(r, 9);
  EXPECT_TRUE(contains(r.out, "nightlY")) << r.out;  // still listed, not to be trusted
  EXPECT_TRUE(contains(r.err, "TAMPERING")) << r.err;
  EXPECT_TRUE(contains(r.err, "backup begin record with sequence")) << r.err;
  EXPECT_TRUE(contains(r.err, "was changed after it was written")) << r.err;
  r = list({"--key-file", k1_, "--json"});
  SB_EXPECT_EXIT(r, 9);
  Json j = parse_json(r);
  EXPECT_EQ(j["catalog_seal"]["state"].as_string(), "tampered") << r.out;
  ASSERT_EQ(j["catalog_seal"]["tampering"].items().size(), 1u) << r.out;
  EXPECT_EQ(*j["catalog_seal"]["tampering"].items()[0]["sequence"].as_u64(), 2u) << r.out;

  r = sb({"restore", "--catalog", cat_, "--to", t_ / "r", "--key-file", k1_});
  SB_EXPECT_EXIT(r, 9);
  EXPECT_TRUE(contains(r.err, "shows tampering")) << r.err;
  EXPECT_FALSE(fs::exists(t_ / "r"));
  r = sb({"validate", "--catalog", cat_, "--key-file", k1_});
  SB_EXPECT_EXIT(r, 9);
  const auto pieces = pieces_in(dest_);
  r = backup("second", k1_);
  SB_EXPECT_EXIT(r, 9);
  EXPECT_EQ(pieces_in(dest_), pieces);  // nothing written

  // Trust comes back from the media: a rebuild into a new directory, sealed and verified.
  const std::string fresh = t_ / "cat2";
  r = sb({"catalog", "rebuild", "--catalog", fresh, "--from", dest_, "--key-file", k1_});
  SB_ASSERT_EXIT(r, 0);
  r = sb({"list", "--catalog", fresh, "--key-file", k1_});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "every record verified")) << r.out;
  EXPECT_TRUE(contains(r.out, "nightly")) << r.out;
  expect_restores_identical(fresh, "r2");
  // Into the tampered catalog itself it is refused.
  r = sb({"catalog", "rebuild", "--catalog", cat_, "--from", dest_, "--key-file", k1_});
  SB_EXPECT_EXIT(r, 9);
  EXPECT_TRUE(contains(r.err, "new directory")) << r.err;
}

TEST_F(SealedCatalog, DamageIsNotTampering) {
  SB_ASSERT_EXIT(backup("nightly", k1_), 0);
  edit_log(cat_, "nightly", "nightlY", /*fix_crc=*/false);
  RunResult r = list({"--key-file", k1_});
  SB_EXPECT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.err, "crc mismatch")) << r.err;
  EXPECT_FALSE(contains(r.err, "TAMPERING")) << r.err;
}

TEST_F(SealedCatalog, WithoutTheKeyNothingIsAppendedAndAConfiguredKeyServesEveryCommand) {
  SB_ASSERT_EXIT(backup("nightly", k1_), 0);
  RunResult r = sb({"keep", "1", "--forever", "--catalog", cat_});
  SB_EXPECT_EXIT(r, 2);  // the key was not given: bad usage
  EXPECT_TRUE(contains(r.err, "is sealed")) << r.err;
  r = sb({"configure", "retention", "redundancy", "2", "--catalog", cat_});
  SB_EXPECT_EXIT(r, 2);
  r = sb({"restore", "--catalog", cat_, "--to", t_ / "r"});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "sealed with the key of its encrypted backups")) << r.err;
  EXPECT_FALSE(fs::exists(t_ / "r"));
  // A wrong key is a wrong key (exit 4), not tampering.
  r = list({"--key-file", k2_});
  SB_EXPECT_EXIT(r, 4);
  EXPECT_TRUE(contains(r.err, "is sealed with")) << r.err;
  // configure with the key given; from then on the configured key is used.
  SB_ASSERT_EXIT(sb({"configure", "key-file", k1_, "--catalog", cat_, "--key-file", k1_}), 0);
  SB_ASSERT_EXIT(sb({"keep", "1", "--forever", "--catalog", cat_}), 0);
  r = list();
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "every record verified")) << r.out;
  EXPECT_TRUE(contains(r.out, "kept forever")) << r.out;
  // An unencrypted backup into the sealed catalog seals its records with that key too.
  SB_ASSERT_EXIT(sb({"backup", src_, "--to", dest_, "--catalog", cat_, "--tag", "plain"}), 0);
  r = list();
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "every record verified")) << r.out;
  EXPECT_TRUE(contains(r.out, "plain")) << r.out;
}

TEST_F(SealedCatalog, ARekeySealsAnewUnderTheNewKey) {
  SB_ASSERT_EXIT(backup("nightly", k1_), 0);
  RunResult r =
      sb({"rekey", "--catalog", cat_, "--key-file", k1_, "--new-key-file", k2_, "--json"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(parse_json(r)["catalog_resealed"].as_bool()) << r.out;
  r = list({"--key-file", k2_, "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(j["catalog_seal"]["state"].as_string(), "verified") << r.out;
  EXPECT_EQ(*j["catalog_seal"]["key_version"].as_u64(), 2u) << r.out;
  r = list({"--key-file", k1_});
  SB_EXPECT_EXIT(r, 4);
  // The same rekey again finds nothing to do and the catalog stays verified.
  SB_ASSERT_EXIT(sb({"rekey", "--catalog", cat_, "--key-file", k1_, "--new-key-file", k2_}), 0);
  SB_ASSERT_EXIT(list({"--key-file", k2_}), 0);
}

// Killed after the done record, before the catalog was sealed anew: the rerun does it.
TEST_F(SealedCatalog, ARekeyKilledBeforeSealingAnewFinishesOnTheRerun) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  SB_ASSERT_EXIT(backup("nightly", k1_), 0);
  RunResult r = sb({"rekey", "--catalog", cat_, "--key-file", k1_, "--new-key-file", k2_},
                   {{"STRIPEBACK_CRASH_AT", "rekey-before-reseal"}});
  EXPECT_NE(r.exit_code, 0);
  SB_ASSERT_EXIT(list({"--key-file", k1_}), 0);  // still under the old key
  SB_ASSERT_EXIT(sb({"rekey", "--catalog", cat_, "--key-file", k1_, "--new-key-file", k2_}), 0);
  SB_ASSERT_EXIT(list({"--key-file", k2_}), 0);
  SB_EXPECT_EXIT(list({"--key-file", k1_}), 4);
  SB_ASSERT_EXIT(sb({"restore", "--catalog", cat_, "--to", t_ / "r", "--key-file", k2_}), 0);
  EXPECT_EQ(read_file(t_ / "r" + src_ + "/a.dbf"), read_file(src_ + "/a.dbf"));
}

// Rekeys back and forth between two keys, each killed (SIGKILL) at a random moment of its
// run and then run again with the same keys: every run finishes, the new key restores
// every file identical and verifies the catalog, the old key opens neither. The moments
// are spread over the time an unkilled rekey takes; the seed is printed on failure.
TEST_F(SealedCatalog, ARekeyKilledAtRandomMomentsFinishesAndLosesNothing) {
  make_file(src_ + "/c.dbf", 12u << 20, 23);
  SB_ASSERT_EXIT(sb({"backup", src_, "--to", dest_, "--catalog", cat_, "--encrypt",
                     "--key-file", k1_, "--max-piece-size", "2M", "--channels", "2"}),
                 0);
  ASSERT_GE(pieces_in(dest_).size(), 5u);
  auto rekey_args = [&](const std::string& from, const std::string& to) {
    return std::vector<std::string>{"rekey", "--catalog", cat_, "--key-file", from,
                                    "--new-key-file", to};
  };
  const auto t0 = std::chrono::steady_clock::now();
  SB_ASSERT_EXIT(sb(rekey_args(k1_, k2_)), 0);
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - t0);
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed) + ", an unkilled rekey took " +
               std::to_string(took.count()) + " us");
  std::mt19937_64 rng(seed);
  std::string cur = k2_, other = k1_;
  int killed = 0;
  for (int round = 0; round < 8; ++round) {
    const auto delay = std::chrono::microseconds(
        std::uniform_int_distribution<int64_t>(0, took.count() * 6 / 5)(rng));
    auto child = sb_start(rekey_args(cur, other));
    ASSERT_TRUE(child->started());
    std::this_thread::sleep_for(delay);
    if (child->running()) child->kill(SIGKILL);
    RunResult k = child->wait();
    killed += k.term_signal == SIGKILL;
    RunResult again = sb(rekey_args(cur, other));
    SB_ASSERT_EXIT(again, 0) << "round " << round << " after a kill at " << delay.count()
                             << " us\n" << k.describe();
    std::swap(cur, other);
    RunResult l = list({"--key-file", cur});
    SB_ASSERT_EXIT(l, 0) << "round " << round;
    EXPECT_TRUE(contains(l.out, "every record verified")) << l.out;
    SB_EXPECT_EXIT(list({"--key-file", other}), 4);
    const std::string to = t_ / ("r" + std::to_string(round));
    SB_ASSERT_EXIT(sb({"restore", "--catalog", cat_, "--to", to, "--key-file", cur}), 0);
    for (const char* f : {"/a.dbf", "/b.dbf", "/c.dbf"})
      EXPECT_EQ(read_file(to + src_ + f), read_file(src_ + f)) << "round " << round << " " << f;
    fs::remove_all(to);
  }
  EXPECT_GE(killed, 1) << "no run was killed before it ended";
}

}  // namespace
}  // namespace stripeback::it
