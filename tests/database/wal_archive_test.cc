// The log archive's pure parts: objects encoded and decoded (raw, compressed, sealed),
// damage found, where files go, the system identifier from a segment's header, and which
// archived files retention finds obsolete.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "catalog/catalog.h"
#include "database/wal_archive.h"
#include "database/wal_object.h"
#include "tests/support/temp_dir.h"

namespace stripeback::database {
namespace {

std::vector<std::byte> pattern(size_t n, bool compressible) {
  std::vector<std::byte> out(n);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    out[i] = static_cast<std::byte>(compressible ? (i / 512) & 0xff : x >> 24);
  }
  return out;
}

engine::KeySource key_file(const std::string& path) {
  engine::KeySource k;
  k.key_file = path;
  return k;
}

constexpr const char* kName = "000000010000000A000000FF";

TEST(WalObject, RawRoundTripKeepsTheBytesAndSetsNoFlag) {
  const auto raw = pattern(1 << 16, false);
  WalObjectInfo info;
  auto obj = encode_wal_object(kName, raw, 0, nullptr, &info);
  ASSERT_TRUE(obj) << obj.error().what;
  EXPECT_EQ(info.flags, 0u);
  EXPECT_EQ(obj->size(), raw.size() + kWalHead);
  auto back = decode_wal_object(kName, *obj, nullptr, "x");
  ASSERT_TRUE(back) << back.error().what;
  EXPECT_EQ(*back, raw);
}

TEST(WalObject, CompressibleFileIsStoredCompressed) {
  const auto raw = pattern(1 << 20, true);
  WalObjectInfo info;
  auto obj = encode_wal_object(kName, raw, 3, nullptr, &info);
  ASSERT_TRUE(obj);
  EXPECT_EQ(info.flags, catalog::kWalCompressed);
  EXPECT_LT(obj->size(), raw.size() / 4);
  auto back = decode_wal_object(kName, *obj, nullptr, "x");
  ASSERT_TRUE(back) << back.error().what;
  EXPECT_EQ(*back, raw);
}

TEST(WalObject, IncompressibleFileIsStoredRawEvenWithALevel) {
  const auto raw = pattern(1 << 16, false);
  WalObjectInfo info;
  auto obj = encode_wal_object(kName, raw, 3, nullptr, &info);
  ASSERT_TRUE(obj);
  EXPECT_EQ(info.flags, 0u);
}

TEST(WalObject, SealedRoundTripNeedsTheKeyAndFindsTampering) {
  testing::TempDir tmp("sbwal");
  ASSERT_TRUE(engine::generate_key_file(tmp / "key"));
  auto keys = engine::Keyring::load(key_file(tmp / "key"));
  ASSERT_TRUE(keys) << keys.error().what;
  ASSERT_TRUE((*keys)->start_job());
  const auto raw = pattern(1 << 20, true);
  WalObjectInfo info;
  auto obj = encode_wal_object(kName, raw, 1, keys->get(), &info);
  ASSERT_TRUE(obj) << obj.error().what;
  EXPECT_EQ(info.flags, catalog::kWalCompressed | catalog::kWalEncrypted);
  auto back = decode_wal_object(kName, *obj, keys->get(), "x");
  ASSERT_TRUE(back) << back.error().what;
  EXPECT_EQ(*back, raw);

  auto no_key = decode_wal_object(kName, *obj, nullptr, "x");
  ASSERT_FALSE(no_key);
  EXPECT_EQ(no_key.error().code, Errc::invalid_argument);

  ASSERT_TRUE(engine::generate_key_file(tmp / "other"));
  auto other = engine::Keyring::load(key_file(tmp / "other"));
  ASSERT_TRUE(other);
  auto wrong = decode_wal_object(kName, *obj, other->get(), "x");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, Errc::wrong_key);

  auto bent = *obj;
  bent.back() ^= std::byte{1};
  auto damaged = decode_wal_object(kName, bent, keys->get(), "x");
  ASSERT_FALSE(damaged);
  EXPECT_EQ(damaged.error().code, Errc::corrupt);
}

TEST(WalObject, DamageAndAnotherNameAreFound) {
  const auto raw = pattern(4096, false);
  auto obj = encode_wal_object(kName, raw, 0, nullptr, nullptr);
  ASSERT_TRUE(obj);
  auto body = *obj;
  body[kWalHead + 7] ^= std::byte{0x40};
  auto r = decode_wal_object(kName, body, nullptr, "where");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::corrupt);
  EXPECT_NE(r.error().what.find("digest"), std::string::npos) << r.error().what;
  auto head = *obj;
  head[20] ^= std::byte{1};
  EXPECT_FALSE(read_wal_head(head, "where"));
  auto renamed = decode_wal_object("000000010000000A00000100", *obj, nullptr, "where");
  ASSERT_FALSE(renamed);
  EXPECT_NE(renamed.error().what.find(kName), std::string::npos);
  auto cut = *obj;
  cut.pop_back();
  EXPECT_FALSE(decode_wal_object(kName, cut, nullptr, "where"));
}

TEST(WalArchive, FilesGoBelowTheDestinationBySystemIdentifier) {
  EXPECT_EQ(wal_object_location("/backup/", 0x1234, "00000002.history"),
            "/backup/wal/0000000000001234/00000002.history");
  EXPECT_EQ(wal_object_location("s3://bucket/db", 7, kName),
            std::string("s3://bucket/db/wal/0000000000000007/") + kName);
}

TEST(WalArchive, SystemIdentifierComesFromTheSegmentsLongHeader) {
  testing::TempDir tmp("sbwal");
  std::vector<std::byte> seg(8192);
  seg[2] = std::byte{0x02};  // XLP_LONG_HEADER
  const uint64_t id = 0x0123456789abcdefULL;
  std::memcpy(seg.data() + 24, &id, sizeof id);
  EXPECT_EQ(system_id_for(tmp / "pg_wal/x", seg), id);
  seg[2] = std::byte{0};
  EXPECT_EQ(system_id_for(tmp / "pg_wal/x", seg), 0u);
}

catalog::Backup hot_backup(uint64_t id, const std::string& start) {
  catalog::Backup b;
  b.id = id;
  b.hot = catalog::HotBackup{};
  b.hot->start_wal = start;
  return b;
}

catalog::WalFile wal(const std::string& name) {
  catalog::WalFile w;
  w.name = name;
  return w;
}

TEST(WalRetention, KeepsEverythingFromTheOldestKeptBackupsStartOn) {
  const std::vector<catalog::WalFile> files{
      wal("000000010000000000000003"), wal("000000010000000000000004.00000028.backup"),
      wal("000000010000000000000005"), wal("000000010000000000000006"),
      wal("00000002.history"),         wal("000000020000000000000006.partial"),
      wal("000000020000000000000007")};
  auto obsolete = obsolete_wal({hot_backup(2, "000000010000000000000006"),
                                hot_backup(3, "000000020000000000000007")},
                               files);
  std::vector<std::string> names;
  for (const auto& w : obsolete) names.push_back(w.name);
  EXPECT_EQ(names, (std::vector<std::string>{"000000010000000000000003",
                                             "000000010000000000000004.00000028.backup",
                                             "000000010000000000000005"}));
}

TEST(WalRetention, NothingIsObsoleteWithoutABackupThatNamesItsStart) {
  catalog::Backup plain;
  plain.id = 1;
  EXPECT_TRUE(obsolete_wal({plain}, {wal("000000010000000000000003")}).empty());
  EXPECT_TRUE(obsolete_wal({}, {wal("000000010000000000000003")}).empty());
}

}  // namespace
}  // namespace stripeback::database
