// Media management records: settings (the newest value wins, an empty one clears), crosscheck
// results (expire and make available again), deletions (an intent marks its backups
// deleting, its end removes them; an end without an intent and a second deletion of a
// backup are refused), keeps (until a date, forever, cleared; refused for what cannot be
// kept; carried by import and compaction), each surviving a reopen; malformed payloads are
// refused.
#include <gtest/gtest.h>

#include <cstdint>

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

TEST(MediaRecords, AKeepHoldsUntilItsDateOrForeverAndAClearEndsIt) {
  testing::TempDir tmp;
  uint64_t a = 0, b = 0;
  {
    auto cat = open_ok(tmp / "cat");
    a = add_backup(*cat, "p1");
    b = add_backup(*cat, "p2");
    ASSERT_TRUE(cat->add_keep({a, 1, Keep::Kind::until, 5000}));
    ASSERT_TRUE(cat->add_keep({b, 1, Keep::Kind::forever, 0}));
    ASSERT_TRUE(cat->add_keep({b, 2, Keep::Kind::cleared, 0}));
    ASSERT_TRUE(cat->add_keep({b, 3, Keep::Kind::forever, 0}));
  }
  auto cat = open_ok(tmp / "cat", Create::no);
  for (const auto& w : cat->warnings()) ADD_FAILURE() << w.what;
  Backup ka = cat->backups().at(0), kb = cat->backups().at(1);
  ASSERT_TRUE(ka.keep);
  EXPECT_EQ(ka.keep->kind, Keep::Kind::until);
  EXPECT_EQ(ka.keep->until_ns, 5000);
  EXPECT_TRUE(ka.kept_at(4999));
  EXPECT_FALSE(ka.kept_at(5000)) << "a date that has come protects nothing";
  ASSERT_TRUE(kb.keep) << "the latest record wins";
  EXPECT_EQ(kb.keep->kind, Keep::Kind::forever);
  EXPECT_TRUE(kb.kept_at(INT64_MAX));
  ASSERT_TRUE(cat->add_keep({a, 4, Keep::Kind::cleared, 0}));
  EXPECT_FALSE(cat->backups().at(0).keep);
  auto again = open_ok(tmp / "cat", Create::no);
  EXPECT_FALSE(again->backups().at(0).keep) << "cleared, after a reopen";
}

TEST(MediaRecords, KeepIsRefusedForWhatCannotBeKept) {
  testing::TempDir tmp;
  auto cat = open_ok(tmp / "cat");
  const uint64_t done = add_backup(*cat, "p1");
  BackupBegin begin;
  begin.destination = "/backup";
  auto running = cat->begin_backup(begin);
  ASSERT_TRUE(running);
  auto failed = cat->begin_backup(begin);
  ASSERT_TRUE(failed);
  BackupEnd e;
  e.status = BackupStatus::failed;
  ASSERT_TRUE(cat->end_backup(*failed, e));
  auto r = cat->add_keep({*running, 1, Keep::Kind::forever, 0});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_NE(r.error().what.find("no end record"), std::string::npos) << r.error().what;
  r = cat->add_keep({*failed, 1, Keep::Kind::forever, 0});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find("failed"), std::string::npos) << r.error().what;
  EXPECT_EQ(cat->add_keep({*failed + 1, 1, Keep::Kind::forever, 0}).error().code, Errc::not_found);
  // Being deleted, then deleted.
  Deletion d;
  d.id = 77;
  d.reason = "requested";
  d.backups = {done};
  ASSERT_TRUE(cat->add_deletion(d));
  r = cat->add_keep({done, 1, Keep::Kind::until, 99});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find("being deleted"), std::string::npos) << r.error().what;
  d.done = true;
  ASSERT_TRUE(cat->add_deletion(d));
  EXPECT_EQ(cat->add_keep({done, 1, Keep::Kind::forever, 0}).error().code, Errc::not_found);
  auto reopened = open_ok(tmp / "cat", Create::no);
  for (const auto& b : reopened->backups()) EXPECT_FALSE(b.keep) << b.id;
  for (const auto& w : reopened->warnings()) ADD_FAILURE() << w.what;
}

TEST(MediaRecords, AKeepSurvivesImportAndCompactionAndGoesWithItsBackup) {
  testing::TempDir tmp;
  auto cat = open_ok(tmp / "cat");
  const uint64_t a = add_backup(*cat, "p1");
  const uint64_t b = add_backup(*cat, "p2");
  ASSERT_TRUE(cat->add_keep({a, 1, Keep::Kind::until, 7000}));
  ASSERT_TRUE(cat->add_keep({b, 1, Keep::Kind::forever, 0}));
  ASSERT_TRUE(cat->compact());
  auto compacted = open_ok(tmp / "cat", Create::no);
  ASSERT_TRUE(compacted->backups().at(0).keep);
  EXPECT_EQ(compacted->backups().at(0).keep->until_ns, 7000);
  ASSERT_TRUE(compacted->backups().at(1).keep);
  // A catalog rebuilt from records (autobackup, import) keeps it.
  auto other = open_ok(tmp / "cat2");
  ASSERT_TRUE(other->import_backups(compacted->backups()));
  EXPECT_EQ(other->backups().at(1).keep->kind, Keep::Kind::forever);
  auto imported = open_ok(tmp / "cat2", Create::no);
  ASSERT_TRUE(imported->backups().at(0).keep);
  EXPECT_EQ(imported->backups().at(0).keep->until_ns, 7000);
  // A compaction that drops a backup drops its keep with it: no record is left naming it.
  CompactOptions drop;
  drop.drop_backup = [&](uint64_t x) { return x == b; };
  auto rep = compacted->compact(drop);
  ASSERT_TRUE(rep);
  auto after = open_ok(tmp / "cat", Create::no);
  for (const auto& w : after->warnings()) ADD_FAILURE() << w.what;
  ASSERT_EQ(after->backups().size(), 2u) << "the begin of the largest id stays";
  EXPECT_TRUE(after->backups().at(0).keep);
  EXPECT_FALSE(after->backups().at(1).keep);
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
  auto keep = encode_keep({3, 1, Keep::Kind::until, 99});
  ASSERT_TRUE(keep);
  EXPECT_EQ(keep->type, RecordType::keep);
  auto kb = keep->payload;
  auto k = decode_keep(kb);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->until_ns, 99);
  for (uint8_t kind : {uint8_t{0}, uint8_t{4}}) {
    kb[17] = kind;  // the kind
    EXPECT_FALSE(decode_keep(kb)) << int{kind};
  }
  kb[17] = static_cast<uint8_t>(Keep::Kind::forever);
  EXPECT_FALSE(decode_keep(kb)) << "forever with a date";
  kb = keep->payload;
  kb.resize(kb.size() - 1);
  EXPECT_FALSE(decode_keep(kb));
  EXPECT_FALSE(encode_keep({0, 1, Keep::Kind::forever, 0})) << "backup id 0";
}

}  // namespace
}  // namespace stripeback::catalog::test
