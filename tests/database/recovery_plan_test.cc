#include "database/recovery_plan.h"

#include <gtest/gtest.h>

#include "database/wal_names.h"

namespace stripeback::database {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr uint64_t kSeg = kDefaultWalSegmentSize;

std::string seg(uint64_t n, uint32_t tli = 1) { return segment_name({tli, n}); }

// A complete backup `id` whose PostgreSQL backup mode ran from segment `first` to `last`,
// ending at `stop_s` seconds.
catalog::Backup pg_backup(uint64_t id, uint64_t first, uint64_t last, int64_t stop_s) {
  catalog::Backup b;
  b.id = id;
  b.ended = true;
  b.end.status = catalog::BackupStatus::complete;
  catalog::HotBackup h;
  h.backup_id = id;
  h.database = "postgres";
  h.system_id = 7;
  h.timeline = 1;
  h.wal_segment_size = static_cast<uint32_t>(kSeg);
  h.start_lsn = first * kSeg + 0x28;
  h.stop_lsn = last * kSeg + 0x100;
  h.start_wal = seg(first);
  h.stop_wal = seg(last);
  h.start_time_ns = (stop_s - 10) * kSecond;
  h.stop_time_ns = stop_s * kSecond;
  h.backup_label = "START WAL LOCATION: ...\n";
  b.hot = h;
  return b;
}

std::vector<catalog::WalFile> archive_of(uint64_t first, uint64_t last, uint32_t tli = 1) {
  std::vector<catalog::WalFile> out;
  for (uint64_t n = first; n <= last; ++n) {
    catalog::WalFile w;
    w.name = seg(n, tli);
    w.system_id = 7;
    out.push_back(w);
  }
  return out;
}

RecoveryTarget time_target(int64_t s) {
  RecoveryTarget t;
  t.kind = TargetKind::time;
  t.time_ns = s * kSecond;
  return t;
}

RecoveryTarget lsn_target(uint64_t lsn) {
  RecoveryTarget t;
  t.kind = TargetKind::lsn;
  t.lsn = lsn;
  return t;
}

TEST(RecoveryPlan, TheBackupWalIsCompleteOrTheFirstMissingSegmentIsNamed) {
  const auto b = pg_backup(1, 3, 5, 1000);
  EXPECT_EQ(missing_backup_wal(archive_of(3, 5), *b.hot), std::nullopt);
  EXPECT_EQ(missing_backup_wal(archive_of(1, 9), *b.hot), std::nullopt);
  auto gap = archive_of(3, 5);
  gap.erase(gap.begin() + 1);
  EXPECT_EQ(missing_backup_wal(gap, *b.hot), seg(4));
  EXPECT_EQ(missing_backup_wal({}, *b.hot), seg(3));
}

TEST(RecoveryPlan, SegmentsOfALaterTimelineCountOthersDoNot) {
  auto b = pg_backup(1, 3, 5, 1000);
  auto a = archive_of(3, 3);
  auto later = archive_of(4, 5, 2);
  a.insert(a.end(), later.begin(), later.end());
  EXPECT_EQ(missing_backup_wal(a, *b.hot), std::nullopt);
  b.hot->timeline = 2;
  EXPECT_EQ(missing_backup_wal(a, *b.hot), seg(3, 2));
  // Another cluster's segments (another system identifier) do not count.
  auto other = archive_of(3, 5);
  for (auto& w : other) w.system_id = 8;
  EXPECT_EQ(missing_backup_wal(other, *pg_backup(1, 3, 5, 1000).hot), seg(3));
  // Nor do other kinds of files with the segment's number.
  catalog::WalFile partial;
  partial.name = seg(3) + ".partial";
  EXPECT_EQ(missing_backup_wal({partial}, *pg_backup(1, 3, 3, 1000).hot), seg(3));
}

TEST(RecoveryPlan, ATimeTargetTakesTheNewestBackupEndingAtOrBeforeIt) {
  const std::vector<catalog::Backup> backups = {pg_backup(1, 2, 3, 1000), pg_backup(2, 5, 6, 2000),
                                                pg_backup(3, 8, 9, 3000)};
  const auto archive = archive_of(1, 12);
  auto p = plan_recovery(backups, archive, time_target(2500), {});
  ASSERT_TRUE(p) << p.error().what;
  EXPECT_EQ(p->backup_id, 2u);
  EXPECT_EQ(p->first_segment, 5u);
  EXPECT_EQ(p->last_segment, 12u);  // a time target: to the newest archived segment
  EXPECT_EQ(plan_recovery(backups, archive, time_target(2000), {})->backup_id, 2u);  // at
  EXPECT_EQ(plan_recovery(backups, archive, time_target(9999), {})->backup_id, 3u);
}

TEST(RecoveryPlan, ATargetBeforeTheOldestBackupIsRefusedNamingTheOldest) {
  const std::vector<catalog::Backup> backups = {pg_backup(4, 2, 3, 1000), pg_backup(5, 5, 6, 2000)};
  auto p = plan_recovery(backups, archive_of(1, 9), time_target(999), {});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, Errc::not_found);
  EXPECT_NE(p.error().what.find("no backup ends before time 1970-01-01T00:16:39Z; the oldest"),
            std::string::npos)
      << p.error().what;
  EXPECT_NE(p.error().what.find("ends at 1970-01-01T00:16:40Z (backup 4)"), std::string::npos)
      << p.error().what;
  auto l = plan_recovery(backups, archive_of(1, 9), lsn_target(3 * kSeg), {});
  ASSERT_FALSE(l);
  EXPECT_NE(l.error().what.find("no backup ends before LSN 0/3000000; the oldest"),
            std::string::npos)
      << l.error().what;
  EXPECT_NE(l.error().what.find("ends at 0/3000100 (backup 4)"), std::string::npos)
      << l.error().what;
}

TEST(RecoveryPlan, AnLsnTargetNeedsTheWalUpToItsSegment) {
  const std::vector<catalog::Backup> backups = {pg_backup(1, 2, 3, 1000), pg_backup(2, 5, 6, 2000)};
  auto p = plan_recovery(backups, archive_of(2, 8), lsn_target(8 * kSeg + 5), {});
  ASSERT_TRUE(p) << p.error().what;
  EXPECT_EQ(p->backup_id, 2u);
  EXPECT_EQ(p->last_segment, 8u);
  auto gap = plan_recovery(backups, archive_of(2, 8), lsn_target(10 * kSeg), {});
  ASSERT_FALSE(gap);
  EXPECT_EQ(gap.error().code, Errc::not_found);
  EXPECT_NE(gap.error().what.find("the archive lacks WAL segment " + seg(9) +
                                  ", which recovering backup 2 to LSN 0/A000000 needs (" +
                                  seg(5) + " to " + seg(10) + ")"),
            std::string::npos)
      << gap.error().what;
}

TEST(RecoveryPlan, AGapInTheArchiveAfterTheBackupIsNamedForATimeTarget) {
  const std::vector<catalog::Backup> backups = {pg_backup(1, 5, 6, 1000)};
  auto archive = archive_of(5, 10);
  archive.erase(archive.begin() + 3);  // segment 8
  auto p = plan_recovery(backups, archive, time_target(5000), {});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().what.find("lacks WAL segment " + seg(8)), std::string::npos)
      << p.error().what;
  // The backup's own WAL missing: named too, even when nothing newer is archived.
  p = plan_recovery(backups, archive_of(5, 5), time_target(5000), {});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().what.find("lacks WAL segment " + seg(6)), std::string::npos)
      << p.error().what;
}

TEST(RecoveryPlan, AnXidTargetTakesTheNewestBackup) {
  const std::vector<catalog::Backup> backups = {pg_backup(1, 2, 3, 1000), pg_backup(2, 5, 6, 2000)};
  RecoveryTarget t;
  t.kind = TargetKind::xid;
  t.xid = 1234;
  auto p = plan_recovery(backups, archive_of(2, 7), t, {});
  ASSERT_TRUE(p) << p.error().what;
  EXPECT_EQ(p->backup_id, 2u);
  EXPECT_EQ(p->last_segment, 7u);
}

TEST(RecoveryPlan, OnlyCompleteBackupsWithAPostgresRecordAreChosen) {
  auto failed = pg_backup(3, 8, 9, 3000);
  failed.end.status = catalog::BackupStatus::failed;
  auto plain = pg_backup(4, 8, 9, 3500);
  plain.hot->database.clear();  // backup --hot of plain files
  const std::vector<catalog::Backup> backups = {pg_backup(1, 2, 3, 1000), failed, plain};
  auto p = plan_recovery(backups, archive_of(1, 12), time_target(4000), {});
  ASSERT_TRUE(p) << p.error().what;
  EXPECT_EQ(p->backup_id, 1u);
  // Named by --backup: a backup without the record is refused as such.
  auto named = plan_recovery(backups, archive_of(1, 12), time_target(4000), {4, ""});
  ASSERT_FALSE(named);
  EXPECT_EQ(named.error().code, Errc::invalid_argument);
  EXPECT_NE(named.error().what.find("backup 4 has no PostgreSQL backup mode record"),
            std::string::npos)
      << named.error().what;
  // No backup of PostgreSQL at all.
  auto none = plan_recovery({plain}, archive_of(1, 12), time_target(4000), {});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Errc::invalid_argument);
  EXPECT_NE(none.error().what.find("no complete backup in the catalog has a PostgreSQL"),
            std::string::npos)
      << none.error().what;
}

TEST(RecoveryPlan, ABackupNamedOrTaggedLimitsTheChoice) {
  auto tagged = pg_backup(2, 5, 6, 2000);
  tagged.begin.tag = "nightly";
  const std::vector<catalog::Backup> backups = {pg_backup(1, 2, 3, 1000), tagged,
                                                pg_backup(3, 8, 9, 3000)};
  const auto archive = archive_of(1, 12);
  EXPECT_EQ(plan_recovery(backups, archive, time_target(9000), {1, ""})->backup_id, 1u);
  EXPECT_EQ(plan_recovery(backups, archive, time_target(9000), {{}, "nightly"})->backup_id, 2u);
  auto before = plan_recovery(backups, archive, time_target(2500), {3, ""});
  ASSERT_FALSE(before);
  EXPECT_NE(before.error().what.find("the oldest ends at"), std::string::npos)
      << before.error().what;
}

}  // namespace
}  // namespace stripeback::database
