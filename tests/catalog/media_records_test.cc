// Media management records: settings (the newest value wins, an empty one clears), crosscheck
// results (expire and make available again), deletions (an intent marks its backups
// deleting, its end removes them; an end without an intent and a second deletion of a
// backup are refused), each surviving a reopen; malformed payloads are refused.
#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "catalog/payload.h"
#include "tests/catalog/catalog_test_util.h"
#include "tests/support/temp_dir.h"

namespace stripeback::catalog::test {
namespace {

// A complete backup with one piece.
uint64_t add_backup(Catalog& cat, const std::string& piece) {
  BackupBegin b;
  b.tag = "t";
  b.destination = "/backup";
  auto id = cat.begin_backup(b);
  EXPECT_TRUE(id);
  PieceRecord p;
  p.name = piece;
  p.location = "/backup";
  p.size = 8192 * 3;
  FileRecord f;
  f.path = "/data/" + piece;
  f.mode = 0100644;
  f.pieces = {piece};
  EXPECT_TRUE(cat.add_piece(*id, p, {f}));
  BackupEnd e;
  e.files = 1;
  e.pieces = 1;
  EXPECT_TRUE(cat.end_backup(*id, e));
  return *id;
}

TEST(MediaRecords, SettingsKeepTheNewestValueAndAnEmptyOneClears) {
  testing::TempDir tmp;
  {
    auto cat = open_ok(tmp / "cat");
    ASSERT_TRUE(cat->set_setting("retention", "redundancy 2"));
    ASSERT_TRUE(cat->set_setting("channels", "4"));
    ASSERT_TRUE(cat->set_setting("retention", "recovery-window 7"));
    ASSERT_TRUE(cat->set_setting("channels", ""));
  }
  auto cat = open_ok(tmp / "cat", Create::no);
  EXPECT_TRUE(cat->warnings().empty());
  EXPECT_EQ(cat->setting("retention"), "recovery-window 7");
  EXPECT_FALSE(cat->setting("channels"));
  ASSERT_EQ(cat->settings().size(), 1u);
}

TEST(MediaRecords, CrosscheckExpiresAPieceAndALaterOneMakesItAvailable) {
  testing::TempDir tmp;
  uint64_t id = 0;
  {
    auto cat = open_ok(tmp / "cat");
    id = add_backup(*cat, "p1");
    Crosscheck c;
    c.time_ns = 10;
    c.pieces = {{id, "p1", true, "missing"}, {id + 7, "nope", true, "x"}};
    ASSERT_TRUE(cat->add_crosscheck(c));
    auto b = cat->backups().at(0);
    EXPECT_EQ(b.status_name(), "expired");
    EXPECT_FALSE(b.usable());
  }
  {
    auto cat = open_ok(tmp / "cat", Create::no);
    auto b = cat->backups().at(0);
    EXPECT_EQ(b.status_name(), "expired") << "after a reopen";
    EXPECT_EQ(b.pieces[0].expired_reason, "missing");
    EXPECT_EQ(b.pieces[0].crosschecked_ns, 10);
    Crosscheck again;
    again.time_ns = 20;
    again.pieces = {{id, "p1", false, ""}};
    ASSERT_TRUE(cat->add_crosscheck(again));
  }
  auto cat = open_ok(tmp / "cat", Create::no);
  EXPECT_EQ(cat->backups().at(0).status_name(), "complete");
  EXPECT_TRUE(cat->backups().at(0).usable());
}

TEST(MediaRecords, ADeletionsIntentMarksItsBackupsAndItsEndRemovesThem) {
  testing::TempDir tmp;
  Deletion d;
  {
    auto cat = open_ok(tmp / "cat");
    const uint64_t a = add_backup(*cat, "p1");
    add_backup(*cat, "p2");
    d.id = 77;
    d.reason = "obsolete";
    d.backups = {a};
    d.pieces = {{a, "p1", "/backup", 24576}};
    ASSERT_TRUE(cat->add_deletion(d));
  }
  {
    auto cat = open_ok(tmp / "cat", Create::no);
    auto all = cat->backups();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].status_name(), "deleting");
    EXPECT_FALSE(all[0].usable());
    EXPECT_EQ(all[1].status_name(), "complete");
    ASSERT_EQ(cat->pending_deletions().size(), 1u);
    EXPECT_EQ(cat->pending_deletions()[0].pieces.at(0).name, "p1");
    Deletion stray;
    stray.id = 78;
    stray.done = true;
    auto r = cat->add_deletion(stray);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("no recorded intent"), std::string::npos);
    Deletion done;
    done.id = 77;
    done.done = true;
    ASSERT_TRUE(cat->add_deletion(done));
  }
  auto cat = open_ok(tmp / "cat", Create::no);
  EXPECT_TRUE(cat->warnings().empty());
  ASSERT_EQ(cat->backups().size(), 1u);
  EXPECT_EQ(cat->backups()[0].id, 2u);
  EXPECT_TRUE(cat->pending_deletions().empty());
  // The id is not reused, and the deleted backup cannot be deleted again.
  EXPECT_EQ(add_backup(*cat, "p3"), 3u);
  Deletion twice;
  twice.id = 79;
  twice.backups = {1};
  auto r = cat->add_deletion(twice);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find("already been deleted"), std::string::npos);
}

TEST(MediaRecords, TheLatestLockOfABackupWinsAndSurvivesAReopenAndAnImport) {
  testing::TempDir tmp;
  uint64_t id = 0;
  {
    auto cat = open_ok(tmp / "cat");
    id = add_backup(*cat, "p1");
    EXPECT_FALSE(cat->backups()[0].lock);
    using Mode = storage::Retention::Mode;
    ASSERT_TRUE(cat->add_lock({id, 1, {Mode::compliance, 2000}}));
    ASSERT_TRUE(cat->add_lock({id, 2, {Mode::compliance, 5000}}));
    ASSERT_TRUE(cat->add_lock({id, 3, {Mode::governance, 4000}}));  // earlier: ignored
    EXPECT_EQ(cat->add_lock({id + 1, 4, {Mode::compliance, 1}}).error().code, Errc::not_found);
  }
  auto cat = open_ok(tmp / "cat", Create::no);
  for (const auto& w : cat->warnings()) ADD_FAILURE() << w.what;
  const Backup b = cat->backups().at(0);
  ASSERT_TRUE(b.lock);
  EXPECT_EQ(b.lock->until_ns, 5000);
  EXPECT_EQ(b.lock->mode, storage::Retention::Mode::compliance);
  EXPECT_TRUE(b.locked_at(4999));
  EXPECT_FALSE(b.locked_at(5000));
  // A catalog rebuilt from records (autobackup, import) keeps it.
  auto other = open_ok(tmp / "cat2");
  auto outcome = other->import_backups({b});
  ASSERT_TRUE(outcome) << outcome.error().what;
  auto reopened = open_ok(tmp / "cat2", Create::no);
  ASSERT_TRUE(reopened->backups().at(0).lock);
  EXPECT_EQ(reopened->backups().at(0).lock->until_ns, 5000);
  // Compaction that drops the backup drops its locks with it.
  CompactOptions drop;
  drop.drop_backup = [&](uint64_t x) { return x == id; };
  ASSERT_TRUE(reopened->compact(drop));
  EXPECT_TRUE(reopened->warnings().empty());
}

TEST(MediaRecords, MalformedPayloadsAreRefused) {
  Deletion d;
  d.id = 5;
  d.backups = {1, 2};
  auto enc = encode_deletion(d);
  ASSERT_TRUE(enc);
  auto bytes = enc->payload;
  bytes[9] = 2;  // the phase byte
  EXPECT_FALSE(decode_deletion(bytes));
  bytes = enc->payload;
  bytes.resize(bytes.size() - 3);
  EXPECT_FALSE(decode_deletion(bytes));
  EXPECT_FALSE(encode_deletion(Deletion{}));  // id 0
  Crosscheck c;
  c.pieces = {{1, "p", true, "gone"}};
  auto cc = encode_crosscheck(*&c);
  ASSERT_TRUE(cc);
  auto cb = cc->payload;
  cb[cb.size() - 9] = 3;  // the state byte before the reason
  EXPECT_FALSE(decode_crosscheck(cb));
  Setting s{"", "v", 0};
  auto se = encode_setting(s);
  ASSERT_TRUE(se);
  EXPECT_FALSE(decode_setting(se->payload)) << "an empty key";
  EXPECT_TRUE(decode_setting(encode_setting({"k", "v", 1})->payload));
  auto lock = encode_lock({3, 1, {storage::Retention::Mode::governance, 99}});
  ASSERT_TRUE(lock);
  auto lb = lock->payload;
  EXPECT_TRUE(decode_lock(lb));
  lb[17] = 9;  // the mode
  EXPECT_FALSE(decode_lock(lb));
  lb = lock->payload;
  lb.resize(lb.size() - 1);
  EXPECT_FALSE(decode_lock(lb));
}

}  // namespace
}  // namespace stripeback::catalog::test
