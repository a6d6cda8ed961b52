// The catalog's identity: created with the first backup begun, recorded in every begin
// record, the same for every process, and given to catalogs written by older versions
// (whose begin records have none) by their next backup.
#include <gtest/gtest.h>

#include <set>

#include "catalog/catalog.h"
#include "catalog/payload.h"
#include "catalog/record_log.h"
#include "tests/catalog/catalog_test_util.h"
#include "tests/support/temp_dir.h"

namespace stripeback::catalog::test {
namespace {

TEST(CatalogIdentity, CreatedWithTheFirstBackupAndKept) {
  testing::TempDir tmp;
  auto cat = open_ok(tmp / "cat");
  ASSERT_TRUE(cat);
  EXPECT_EQ(cat->identity(), 0u);
  BackupBegin b = sample_begin("a");
  b.catalog_id = 77;  // ignored: the catalog decides
  auto id1 = cat->begin_backup(b);
  ASSERT_TRUE(id1);
  const uint64_t identity = cat->identity();
  EXPECT_NE(identity, 0u);
  EXPECT_NE(identity, 77u);
  ASSERT_TRUE(cat->begin_backup(sample_begin("b")));
  for (const auto& bk : cat->backups()) EXPECT_EQ(bk.begin.catalog_id, identity);

  // Another process (another Catalog object) sees the same identity and keeps it.
  auto other = open_ok(tmp / "cat", Create::no);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->identity(), identity);
  ASSERT_TRUE(other->begin_backup(sample_begin("c")));
  ASSERT_TRUE(cat->refresh());
  auto all = cat->backups();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].begin.catalog_id, identity);
}

TEST(CatalogIdentity, EveryCatalogHasItsOwn) {
  testing::TempDir tmp;
  std::set<uint64_t> seen;
  for (int i = 0; i < 8; ++i) {
    auto cat = open_ok(tmp / ("cat" + std::to_string(i)));
    ASSERT_TRUE(cat);
    auto id = cat->begin_backup(sample_begin("x"));
    ASSERT_TRUE(id);
    EXPECT_EQ(*id, 1u);  // backup ids start at 1 in every catalog...
    seen.insert(cat->identity());
  }
  EXPECT_EQ(seen.size(), 8u);  // ...their identities differ
}

// A log written by a version without identities: version-1 begin records, no catalog id.
TEST(CatalogIdentity, OldCatalogGetsOneWithItsNextBackup) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  ASSERT_TRUE(open_ok(dir));
  auto bytes = read_bytes(log_path(dir));
  for (uint64_t id = 1; id <= 2; ++id) {
    auto rec = encode_begin(id, sample_begin("old"));
    ASSERT_TRUE(rec);
    ASSERT_EQ(rec->payload[0], kPayloadVersion);  // no catalog id: version 1 as before
    append_frame(bytes, id, RecordType::backup_begin, rec->payload);
  }
  write_bytes(log_path(dir), bytes);

  auto cat = open_ok(dir, Create::no);
  ASSERT_TRUE(cat);
  EXPECT_TRUE(cat->warnings().empty());
  EXPECT_EQ(cat->identity(), 0u);
  auto old = cat->backups();
  ASSERT_EQ(old.size(), 2u);
  EXPECT_EQ(old[0].begin.catalog_id, 0u);
  expect_equal(old[0].begin, sample_begin("old"));

  // Two processes begin at once: the exclusive lock makes them agree on one identity.
  auto other = open_ok(dir, Create::no);
  ASSERT_TRUE(other);
  auto n3 = cat->begin_backup(sample_begin("new"));
  auto n4 = other->begin_backup(sample_begin("new"));
  ASSERT_TRUE(n3 && n4);
  EXPECT_EQ(*n3, 3u);
  EXPECT_EQ(*n4, 4u);
  EXPECT_NE(cat->identity(), 0u);
  EXPECT_EQ(other->identity(), cat->identity());

  auto again = open_ok(dir, Create::no);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->warnings().empty());
  auto all = again->backups();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].begin.catalog_id, 0u);
  EXPECT_EQ(all[1].begin.catalog_id, 0u);
  EXPECT_EQ(all[2].begin.catalog_id, cat->identity());
  EXPECT_EQ(all[3].begin.catalog_id, cat->identity());
}

// Version 2 of the begin payload is version 1 with the catalog id appended: a reader of
// version 1 decodes its fields and skips the id as a newer writer's.
TEST(CatalogIdentity, BeginPayloadVersion2AppendsTheId) {
  BackupBegin b = sample_begin("t");
  auto v1 = encode_begin(5, b);
  b.catalog_id = 0x8877665544332211;
  auto v2 = encode_begin(5, b);
  ASSERT_TRUE(v1 && v2);
  EXPECT_EQ(v2->payload[0], kBeginPayloadVersion);
  ASSERT_EQ(v2->payload.size(), v1->payload.size() + 8);
  EXPECT_TRUE(std::equal(v1->payload.begin() + 1, v1->payload.end(), v2->payload.begin() + 1));
  auto d = decode_begin(v2->payload);
  ASSERT_TRUE(d) << d.error().what;
  EXPECT_EQ(d->begin.catalog_id, 0x8877665544332211u);
  // An id of 0 is never written; a record claiming it is malformed.
  auto zero = v2->payload;
  std::fill(zero.end() - 8, zero.end(), uint8_t{0});
  EXPECT_FALSE(decode_begin(zero));
  // A truncated id is malformed too.
  auto cut = v2->payload;
  cut.pop_back();
  EXPECT_FALSE(decode_begin(cut));
}

// Version 3 (incremental backups) appends level, cumulative and change unit to the begin
// payload, and the change record to each file entry; older readers skip them.
TEST(CatalogIdentity, LevelPayloadsRoundTrip) {
  BackupBegin b = sample_begin("inc");
  b.catalog_id = 42;
  auto v2 = encode_begin(7, b);
  b.level = 1;
  b.cumulative = true;
  b.change_unit = 65536;
  auto v3 = encode_begin(7, b);
  ASSERT_TRUE(v2 && v3);
  EXPECT_EQ(v3->payload[0], kLevelPayloadVersion);
  ASSERT_EQ(v3->payload.size(), v2->payload.size() + 6);
  auto d = decode_begin(v3->payload);
  ASSERT_TRUE(d) << d.error().what;
  EXPECT_EQ(d->begin.level, 1);
  EXPECT_TRUE(d->begin.cumulative);
  EXPECT_EQ(d->begin.change_unit, 65536u);
  auto plain = decode_begin(v2->payload);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->begin.level, -1);
  auto bad = v3->payload;
  bad[bad.size() - 6] = 2;  // level 2
  EXPECT_FALSE(decode_begin(bad));
  // The encoder writes cumulative as 0 or 1; any other byte would not encode back the same.
  bad = v3->payload;
  bad[bad.size() - 5] = 2;
  EXPECT_FALSE(decode_begin(bad));

  FileRecord f;
  f.path = "/d/a.dbf";
  f.size = 123;
  f.pieces = {"p1"};
  f.unit = 8192;
  f.parent = 3;
  f.change = FileChange::changed;
  f.units_written = 9;
  FileRecord whole = f;
  whole.unit = 0;
  auto enc = encode_files(7, {f, whole});
  ASSERT_TRUE(enc) << enc.error().what;
  ASSERT_EQ(enc->size(), 1u);
  EXPECT_EQ((*enc)[0].payload[0], kLevelPayloadVersion);
  auto files = decode_files((*enc)[0].payload);
  ASSERT_TRUE(files) << files.error().what;
  ASSERT_EQ(files->files.size(), 2u);
  EXPECT_EQ(files->files[0].unit, 8192u);
  EXPECT_EQ(files->files[0].parent, 3u);
  EXPECT_EQ(files->files[0].change, FileChange::changed);
  EXPECT_EQ(files->files[0].units_written, 9u);
  EXPECT_EQ(files->files[1].unit, 0u);
  // A file skipped by backup optimization names the backup holding it; the two go together.
  FileRecord skipped = f;
  skipped.pieces.clear();
  skipped.change = FileChange::skipped;
  skipped.held_by = 2;
  skipped.inode = 77;
  skipped.ctime_ns = 1234;
  auto s1 = encode_files(7, {skipped});
  ASSERT_TRUE(s1);
  auto sd = decode_files((*s1)[0].payload);
  ASSERT_TRUE(sd) << sd.error().what;
  EXPECT_EQ(sd->files[0].held_by, 2u);
  EXPECT_EQ(sd->files[0].inode, 77u);
  EXPECT_EQ(sd->files[0].ctime_ns, 1234);
  skipped.held_by = 0;
  auto s2 = encode_files(7, {skipped});
  ASSERT_TRUE(s2);
  EXPECT_FALSE(decode_files((*s2)[0].payload)) << "skipped without a holder is malformed";
  // Files of plain backups keep version 1 payloads.
  auto old = encode_files(7, {whole});
  ASSERT_TRUE(old);
  EXPECT_EQ((*old)[0].payload[0], kPayloadVersion);
}

}  // namespace
}  // namespace stripeback::catalog::test
