// Catalog autobackup files: their names (never a piece's), and the file itself written and
// read back, plain and sealed, with damage and a wrong key refused.
#include "engine/media/catalog_autobackup.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "engine/transform/crypto.h"
#include "engine/format/piece_name.h"
#include "backends/local/local_storage.h"
#include "tests/support/temp_dir.h"

namespace stripeback::engine {
namespace {

TEST(AutobackupName, RoundTripsAndIsNeverAPieceName) {
  AutobackupName n{0x9f2c0e71d4a5b608, "20250301T021500Z", 42, 0};
  const std::string name = autobackup_name(n);
  EXPECT_EQ(name, "sb-catalog-9f2c0e71d4a5b608-20250301T021500Z-42.sbcat");
  auto back = parse_autobackup_name(name);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->catalog_id, n.catalog_id);
  EXPECT_EQ(back->stamp, n.stamp);
  EXPECT_EQ(back->backup_id, 42u);
  EXPECT_FALSE(parse_piece_name(name));
  for (const char* bad : {"sb-catalog-9f2c0e71d4a5b608-20250301T021500Z-42.sbcat.tmp",
                          ".sb-catalog-9f2c0e71d4a5b608-20250301T021500Z-42.sbcat.tmp",
                          "sb-catalog-9f2c0e71d4a5b60-20250301T021500Z-42.sbcat",
                          "sb-catalog-0000000000000000-20250301T021500Z-42.sbcat",
                          "sb-catalog-9f2c0e71d4a5b608-20250301X021500Z-42.sbcat",
                          "sb-catalog-9f2c0e71d4a5b608-20250301T021500Z-.sbcat",
                          "sb3-9f2c0e71d4a5b608-20250301T021500Z-4be1-c1-p2.sbp"})
    EXPECT_FALSE(parse_autobackup_name(bad)) << bad;
  AutobackupName later{n.catalog_id, "20250301T021500Z", 43};
  EXPECT_TRUE(n < later);
  const AutobackupName next_day{n.catalog_id, "20250302T000000Z", 1};
  EXPECT_TRUE(later < next_day);
}

class AutobackupFile : public ::testing::TestWithParam<bool> {};

// Within one second a resume of an older backup writes its autobackup after a newer
// backup's, under a smaller id: the time each was written decides which is newer.
TEST(AutobackupName, WithinOneSecondTheLaterWrittenIsNewer) {
  AutobackupName newer_backup{1, "20261203T140732Z", 17, 1000};
  AutobackupName resumed_later{1, "20261203T140732Z", 15, 2000};
  EXPECT_LT(newer_backup, resumed_later);
  EXPECT_FALSE(resumed_later < newer_backup);
  AutobackupName next_second{1, "20261203T140733Z", 3, 0};
  EXPECT_LT(resumed_later, next_second);
}

TEST_P(AutobackupFile, WrittenAndReadBack) {
  const bool sealed = GetParam();
  stripeback::testing::TempDir t("sb-autobackup-unit");
  auto cat = catalog::Catalog::open(t / "cat", catalog::Create::yes, io::local_storage());
  ASSERT_TRUE(cat);
  const std::string dest = t / "dest";
  std::shared_ptr<Keyring> keys;
  if (sealed) {
    ASSERT_TRUE(generate_key_file(t / "k"));
    keys = *Keyring::load({"", "", t / "k"});
    ASSERT_TRUE(keys->start_job());
  }
  catalog::BackupBegin begin;
  begin.tag = "secret-tag";
  begin.destination = dest;
  auto id = (*cat)->begin_backup(begin);
  ASSERT_TRUE(id);
  catalog::BackupEnd end;
  end.status = catalog::BackupStatus::complete;
  ASSERT_TRUE((*cat)->end_backup(*id, end));
  begin.destination = t / "elsewhere";
  ASSERT_TRUE((*cat)->begin_backup(begin));
  ASSERT_TRUE(io::local_storage().make_dirs(storage::Location::local(dest)));
  auto name = write_catalog_autobackup(**cat, dest, *id, keys.get());
  ASSERT_TRUE(name) << name.error().what;
  auto place = place_of(dest);
  ASSERT_TRUE(place);
  auto back = read_catalog_autobackup(*place, *name, keys.get());
  ASSERT_TRUE(back) << back.error().what;
  ASSERT_EQ(back->backups.size(), 1u);  // only this destination's backups
  EXPECT_EQ(back->backups[0].begin.tag, "secret-tag");
  EXPECT_EQ(back->backups[0].status_name(), "complete");
  EXPECT_EQ(back->catalog_id, (*cat)->identity());
  std::ifstream in(dest + "/" + *name, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.find("secret-tag") == std::string::npos, sealed);
  if (sealed) {
    auto none = read_catalog_autobackup(*place, *name, nullptr);
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().code, Errc::invalid_argument);
    ASSERT_TRUE(generate_key_file(t / "k2"));
    auto other = *Keyring::load({"", "", t / "k2"});
    auto wrong = read_catalog_autobackup(*place, *name, other.get());
    ASSERT_FALSE(wrong);
    EXPECT_EQ(wrong.error().code, Errc::wrong_key);
  }
  // Any flipped byte is refused as damage (or, in the key block, as a wrong key), never
  // read as other records.
  for (size_t at : {size_t{3}, size_t{40}, bytes.size() - 1, bytes.size() / 2}) {
    std::string flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x20);
    std::ofstream(dest + "/x.sbcat", std::ios::binary | std::ios::trunc) << flipped;
    auto r = read_catalog_autobackup(*place, "x.sbcat", keys.get());
    EXPECT_FALSE(r) << "byte " << at;
  }
  // Only the newest two are kept.
  for (uint64_t n = 0; n < 3; ++n) ASSERT_TRUE(write_catalog_autobackup(**cat, dest, *id + 10 + n, keys.get()));
  auto names = io::local_storage().list(storage::Location::local(dest));
  ASSERT_TRUE(names);
  size_t kept = 0;
  for (const auto& n : *names) kept += parse_autobackup_name(n) ? 1 : 0;
  EXPECT_EQ(kept, kAutobackupsKept);
}

INSTANTIATE_TEST_SUITE_P(Sealing, AutobackupFile, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "Sealed" : "Plain"; });

}  // namespace
}  // namespace stripeback::engine
