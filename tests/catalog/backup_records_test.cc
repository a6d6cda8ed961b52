// The records of some backups as a stand-alone log (catalog autobackups, rebuild), and the
// catalog operations built on them: import_backups and compact.
#include "catalog/backup_records.h"

#include <gtest/gtest.h>

#include <fstream>

#include "catalog/payload.h"
#include "tests/catalog/catalog_test_util.h"

namespace stripeback::catalog {
namespace {

using test::sample_begin;
using test::sample_end;
using test::sample_file;
using test::sample_piece;

Backup sample_backup(uint64_t id, uint64_t catalog_id) {
  Backup b;
  b.id = id;
  b.begin = sample_begin("tag" + std::to_string(id));
  b.begin.catalog_id = catalog_id;
  b.pieces = {sample_piece(0, 1)};
  b.files = {sample_file("/db/a", 1), sample_file("/db/b", 2), sample_file("/db/c", 3)};
  b.ended = true;
  b.end = sample_end(1);
  return b;
}

TEST(BackupRecords, RoundTripGivesTheSameBackups) {
  std::vector<Backup> in = {sample_backup(3, 77), sample_backup(5, 77)};
  in[1].ended = false;  // still running when the copy was made
  auto bytes = encode_backup_records(in);
  ASSERT_TRUE(bytes) << bytes.error().what;
  auto out = decode_backup_records(*bytes, "copy");
  ASSERT_TRUE(out) << out.error().what;
  EXPECT_TRUE(out->warnings.empty());
  EXPECT_EQ(out->catalog_id, 77u);
  ASSERT_EQ(out->backups.size(), 2u);
  EXPECT_EQ(out->backups[0].id, 3u);
  EXPECT_EQ(out->backups[0].begin.tag, "tag3");
  EXPECT_EQ(out->backups[0].status_name(), "complete");
  EXPECT_EQ(out->backups[0].files.size(), 3u);
  EXPECT_EQ(out->backups[0].pieces[0].checksum, in[0].pieces[0].checksum);
  EXPECT_EQ(out->backups[1].status_name(), "incomplete");
}

TEST(BackupRecords, DamageIsSkippedAndAForeignFileRefused) {
  auto bytes = encode_backup_records({sample_backup(1, 9), sample_backup(2, 9)});
  ASSERT_TRUE(bytes);
  std::vector<uint8_t> b = *bytes;
  b[kFileHeaderSize + 30] ^= 0xff;  // inside backup 1's begin record
  auto out = decode_backup_records(b, "copy");
  ASSERT_TRUE(out);
  EXPECT_FALSE(out->warnings.empty());
  ASSERT_FALSE(out->backups.empty());
  EXPECT_TRUE(out->backups[0].damaged());  // backup 1 lost its begin: never complete
  std::vector<uint8_t> junk(100, 0x41);
  auto bad = decode_backup_records(junk, "junk");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::corrupt);
  EXPECT_NE(bad.error().what.find("junk"), std::string::npos);
  // Every truncation decodes or is refused, never misread as more backups.
  for (size_t n = 0; n < bytes->size(); n += 7) {
    auto cut = decode_backup_records(std::span<const uint8_t>(bytes->data(), n), "cut");
    if (cut) {
      EXPECT_LE(cut->backups.size(), 2u);
    }
  }
}

class CatalogImport : public ::testing::Test {
 protected:
  void SetUp() override {
    cat_ = std::move(*Catalog::open(dir_.path(), Create::yes, st_));
  }
  stripeback::testing::TempDir dir_{"sb-import"};
  storage::Storage& st_ = io::local_storage();
  std::unique_ptr<Catalog> cat_;
};

TEST_F(CatalogImport, AddsUnknownBackupsOnceAndTakesTheirIdentity) {
  auto r = cat_->import_backups({sample_backup(4, 0x1234), sample_backup(7, 0x1234)});
  ASSERT_TRUE(r) << r.error().what;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_TRUE((*r)[0].added && (*r)[1].added);
  EXPECT_EQ(cat_->identity(), 0x1234u);
  auto again = cat_->import_backups({sample_backup(4, 0x1234)});
  ASSERT_TRUE(again);
  EXPECT_FALSE((*again)[0].added);
  EXPECT_NE((*again)[0].reason.find("already"), std::string::npos);
  // What another process loads is what was imported; the next id follows them.
  auto other = Catalog::open(dir_.path(), Create::no, st_);
  ASSERT_TRUE(other);
  auto bs = (*other)->backups();
  ASSERT_EQ(bs.size(), 2u);
  EXPECT_EQ(bs[1].id, 7u);
  EXPECT_EQ(bs[1].status_name(), "complete");
  auto next = (*other)->begin_backup(sample_begin("new"));
  ASSERT_TRUE(next);
  EXPECT_EQ(*next, 8u);
}

// A backup this catalog deleted (its deletion is recorded) is not brought back by an
// import (catalog rebuild from an autobackup written before the deletion).
TEST_F(CatalogImport, ABackupThisCatalogDeletedIsNotImportedAgain) {
  ASSERT_TRUE(cat_->import_backups({sample_backup(4, 0x1234), sample_backup(5, 0x1234)}));
  Deletion d;
  d.id = 91;
  d.reason = "obsolete";
  d.backups = {4};
  ASSERT_TRUE(cat_->add_deletion(d));
  Deletion done;
  done.id = 91;
  done.done = true;
  ASSERT_TRUE(cat_->add_deletion(done));
  ASSERT_EQ(cat_->backups().size(), 1u);
  auto r = cat_->import_backups({sample_backup(4, 0x1234)});
  ASSERT_TRUE(r) << r.error().what;
  EXPECT_FALSE((*r)[0].added);
  EXPECT_NE((*r)[0].reason.find("was deleted"), std::string::npos) << (*r)[0].reason;
  auto again = Catalog::open(dir_.path(), Create::no, st_);
  ASSERT_TRUE(again);
  ASSERT_EQ((*again)->backups().size(), 1u);
  EXPECT_EQ((*again)->backups()[0].id, 5u);
}

TEST_F(CatalogImport, AnotherIdentityIsRefusedBeforeAnythingIsWritten) {
  ASSERT_TRUE(cat_->import_backups({sample_backup(1, 0x1111)}));
  auto r = cat_->import_backups({sample_backup(2, 0x1111), sample_backup(3, 0x2222)});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_NE(r.error().what.find("0000000000002222"), std::string::npos);
  EXPECT_EQ(cat_->backups().size(), 1u);
}

TEST_F(CatalogImport, CompactKeepsRecordsAndTheHookDropsBackups) {
  ASSERT_TRUE(cat_->import_backups({sample_backup(1, 5), sample_backup(2, 5), sample_backup(3, 5)}));
  {
    std::ofstream f(dir_.path() + "/catalog.log", std::ios::app | std::ios::binary);
    f << "torn";
  }
  auto other = std::move(*Catalog::open(dir_.path(), Create::no, st_));
  auto rep = cat_->compact();
  ASSERT_TRUE(rep) << rep.error().what;
  EXPECT_EQ(rep->records_after, rep->records_before);
  EXPECT_EQ(rep->damaged_bytes, 4u);
  EXPECT_EQ(cat_->backups().size(), 3u);
  CompactOptions o;
  o.drop_backup = [](uint64_t id) { return id == 2; };
  rep = cat_->compact(o);
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->dropped_backups, std::vector<uint64_t>{2});
  auto bs = cat_->backups();
  ASSERT_EQ(bs.size(), 2u);
  EXPECT_EQ(bs[1].id, 3u);
  // Dropping the backups that hold the identity and the largest id keeps both: their begin
  // records stay (a backup left with only its begin is listed incomplete).
  o.drop_backup = [](uint64_t id) { return id == 1 || id == 3; };
  rep = cat_->compact(o);
  ASSERT_TRUE(rep);
  EXPECT_EQ(cat_->identity(), 5u);
  bs = cat_->backups();
  ASSERT_EQ(bs.size(), 2u);
  EXPECT_TRUE(bs[0].pieces.empty() && bs[1].pieces.empty());
  // A catalog opened before the compactions follows the new log at its next append.
  auto id = other->begin_backup(sample_begin("after"));
  ASSERT_TRUE(id) << id.error().what;
  EXPECT_EQ(*id, 4u);
  EXPECT_EQ(other->identity(), 5u);
  ASSERT_TRUE(cat_->refresh());
  EXPECT_EQ(cat_->backups().size(), 3u);
}

TEST_F(CatalogImport, CompactDropsTheResumeRecordsOfADroppedBackup) {
  ASSERT_TRUE(cat_->import_backups({sample_backup(1, 5)}));
  auto killed = cat_->begin_backup(sample_begin("killed"));  // interrupted, then resumed
  ASSERT_TRUE(killed);
  Resume r;
  r.backup_id = *killed;
  r.time_ns = 1;
  r.host = "h";
  r.pid = 1;
  ASSERT_TRUE(cat_->resume_backup(r)) << "resume";
  ASSERT_TRUE(cat_->begin_backup(sample_begin("newest")));  // holds the largest id
  CompactOptions o;
  o.drop_backup = [&](uint64_t id) { return id == *killed; };
  auto rep = cat_->compact(o);
  ASSERT_TRUE(rep) << rep.error().what;
  EXPECT_EQ(rep->dropped_backups, std::vector<uint64_t>{*killed});
  auto reopened = Catalog::open(dir_.path(), Create::no, st_);
  ASSERT_TRUE(reopened);
  for (const auto& w : (*reopened)->warnings()) ADD_FAILURE() << w.what;
  EXPECT_EQ((*reopened)->backups().size(), 2u);
}

}  // namespace
}  // namespace stripeback::catalog
