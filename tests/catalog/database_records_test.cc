// Database records: a hot backup's record (fuzzy files, PostgreSQL's backup mode) survives a
// reopen, an import and a compaction that keeps its backup; archived WAL files are recorded
// once per name (the same file again is no new record, other contents are refused and the
// first kept), and a removal ends a name; malformed payloads are refused.
#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "catalog/payload.h"
#include "tests/catalog/catalog_test_util.h"
#include "tests/support/temp_dir.h"

namespace stripeback::catalog::test {
namespace {

uint64_t add_backup(Catalog& cat) {
  BackupBegin b;
  b.tag = "t";
  b.destination = "/backup";
  auto id = cat.begin_backup(b);
  EXPECT_TRUE(id);
  BackupEnd e;
  EXPECT_TRUE(cat.end_backup(*id, e));
  return *id;
}

HotBackup sample_hot(uint64_t id) {
  HotBackup h;
  h.backup_id = id;
  h.fuzzy = {"/pg/base/5/16384", "/pg/global/pg_control"};
  h.database = "postgres";
  h.data_dir = "/pg";
  h.system_id = 7312345678901234567ull;
  h.timeline = 1;
  h.wal_segment_size = 16u << 20;
  h.start_lsn = 0x3000028;
  h.stop_lsn = 0x3000138;
  h.start_wal = "000000010000000000000003";
  h.stop_wal = "000000010000000000000003";
  h.start_time_ns = 1000;
  h.stop_time_ns = 2000;
  h.label = "stripeback backup 1";
  h.backup_label = "START WAL LOCATION: 0/3000028 (file 000000010000000000000003)\n";
  h.tablespace_map = "16385 /srv/space\n";
  return h;
}

void expect_same(const HotBackup& a, const HotBackup& b) {
  EXPECT_EQ(a.backup_id, b.backup_id);
  EXPECT_EQ(a.fuzzy, b.fuzzy);
  EXPECT_EQ(a.database, b.database);
  EXPECT_EQ(a.data_dir, b.data_dir);
  EXPECT_EQ(a.system_id, b.system_id);
  EXPECT_EQ(a.timeline, b.timeline);
  EXPECT_EQ(a.wal_segment_size, b.wal_segment_size);
  EXPECT_EQ(a.start_lsn, b.start_lsn);
  EXPECT_EQ(a.stop_lsn, b.stop_lsn);
  EXPECT_EQ(a.start_wal, b.start_wal);
  EXPECT_EQ(a.stop_wal, b.stop_wal);
  EXPECT_EQ(a.start_time_ns, b.start_time_ns);
  EXPECT_EQ(a.stop_time_ns, b.stop_time_ns);
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.backup_label, b.backup_label);
  EXPECT_EQ(a.tablespace_map, b.tablespace_map);
}

TEST(DatabaseRecords, AHotBackupSurvivesReopenImportAndCompaction) {
  testing::TempDir tmp;
  uint64_t id = 0;
  {
    auto cat = open_ok(tmp / "cat");
    id = add_backup(*cat);
    ASSERT_TRUE(cat->add_hot(sample_hot(id)));
    EXPECT_EQ(cat->add_hot(sample_hot(id + 1)).error().code, Errc::not_found);
  }
  auto cat = open_ok(tmp / "cat", Create::no);
  for (const auto& w : cat->warnings()) ADD_FAILURE() << w.what;
  Backup b = cat->backups().at(0);
  ASSERT_TRUE(b.hot);
  expect_same(*b.hot, sample_hot(id));
  auto other = open_ok(tmp / "cat2");
  ASSERT_TRUE(other->import_backups({b}));
  auto reopened = open_ok(tmp / "cat2", Create::no);
  ASSERT_TRUE(reopened->backups().at(0).hot);
  expect_same(*reopened->backups().at(0).hot, sample_hot(id));
  ASSERT_TRUE(reopened->compact());
  ASSERT_TRUE(reopened->backups().at(0).hot);
  // A compaction that drops the backup drops its hot record too (no warning after).
  CompactOptions drop;
  drop.drop_backup = [&](uint64_t x) { return x == id; };
  ASSERT_TRUE(reopened->compact(drop));
  auto after = open_ok(tmp / "cat2", Create::no);
  for (const auto& w : after->warnings()) ADD_FAILURE() << w.what;
  // (The catalog's identity keeps the begin record of its first backup.)
  for (const auto& left : after->backups()) EXPECT_FALSE(left.hot) << left.id;
}

WalFile sample_wal(const std::string& name, uint8_t fill) {
  WalFile w;
  w.name = name;
  w.time_ns = 5;
  w.size = 16u << 20;
  w.digest.fill(fill);
  w.stored_size = 1234;
  w.stored_at = "/archive/wal/" + name;
  w.system_id = 42;
  w.flags = kWalCompressed;
  return w;
}

TEST(DatabaseRecords, AnArchivedFileIsRecordedOncePerName) {
  testing::TempDir tmp;
  {
    auto cat = open_ok(tmp / "cat");
    auto first = cat->add_wal(sample_wal("000000010000000000000003", 1));
    ASSERT_TRUE(first) << first.error().what;
    EXPECT_TRUE(*first);
    auto again = cat->add_wal(sample_wal("000000010000000000000003", 1));
    ASSERT_TRUE(again);
    EXPECT_FALSE(*again);  // the same file: nothing new recorded
    auto other = cat->add_wal(sample_wal("000000010000000000000003", 2));
    ASSERT_FALSE(other);
    EXPECT_EQ(other.error().code, Errc::exists);
    EXPECT_NE(other.error().what.find("'000000010000000000000003' is already in the archive"),
              std::string::npos)
        << other.error().what;
    ASSERT_TRUE(cat->add_wal(sample_wal("000000010000000000000004", 3)));
    WalFile gone = sample_wal("000000010000000000000004", 3);
    gone.event = WalFile::Event::removed;
    ASSERT_TRUE(cat->add_wal(gone));
    EXPECT_EQ(cat->add_wal(gone).error().code, Errc::invalid_argument);
  }
  // A second catalog object (another process) sees them, and refuses the same conflict.
  auto cat = open_ok(tmp / "cat", Create::no);
  for (const auto& w : cat->warnings()) ADD_FAILURE() << w.what;
  auto all = cat->wal_files();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].name, "000000010000000000000003");
  EXPECT_EQ(all[0].digest[0], 1);
  EXPECT_EQ(all[0].stored_at, "/archive/wal/000000010000000000000003");
  EXPECT_EQ(all[0].flags, kWalCompressed);
  EXPECT_FALSE(cat->wal_file("000000010000000000000004"));
  EXPECT_EQ(cat->add_wal(sample_wal("000000010000000000000003", 9)).error().code, Errc::exists);
  // Pushed again after its removal: recorded anew.
  auto back = cat->add_wal(sample_wal("000000010000000000000004", 7));
  ASSERT_TRUE(back);
  EXPECT_TRUE(*back);
  ASSERT_TRUE(cat->compact());
  EXPECT_EQ(cat->wal_files().size(), 2u);
}

TEST(DatabaseRecords, MalformedPayloadsAreRefused) {
  auto hot = encode_hot(sample_hot(3));
  ASSERT_TRUE(hot);
  auto bytes = hot->payload;
  bytes.resize(bytes.size() - 3);  // cut inside the tablespace map
  EXPECT_FALSE(decode_hot(bytes));
  auto many = hot->payload;
  many[9] = 0xff;  // a fuzzy file count far beyond the payload
  many[10] = 0xff;
  EXPECT_FALSE(decode_hot(many));
  auto wal = encode_wal(sample_wal("000000010000000000000003", 1));
  ASSERT_TRUE(wal);
  auto w = wal->payload;
  w[1] = 9;  // the event
  EXPECT_FALSE(decode_wal(w));
  auto round = decode_wal(wal->payload);
  ASSERT_TRUE(round);
  EXPECT_EQ(round->name, "000000010000000000000003");
  EXPECT_FALSE(encode_wal(WalFile{}));
}

}  // namespace
}  // namespace stripeback::catalog::test
