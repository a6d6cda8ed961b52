// Which pieces on a shared destination a backup may call unused: only its own catalog's,
// and of those only pieces of failed or killed backups, or pieces a usable backup does not
// record.
#include "engine/pieces/leftovers.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "engine/format/piece_name.h"
#include "tests/support/temp_dir.h"
#include "util/process.h"

namespace stripeback::engine {
namespace {

using catalog::Backup;
using catalog::BackupStatus;

constexpr uint64_t kA = 0xaaaaaaaaaaaaaaaa, kB = 0xbbbbbbbbbbbbbbbb;

Backup backup(uint64_t id, uint64_t catalog_id) {
  Backup b;
  b.id = id;
  b.begin.catalog_id = catalog_id;
  b.begin.destination = "/d";
  return b;
}

Backup ended(uint64_t id, uint64_t catalog_id, BackupStatus st,
             const std::vector<std::string>& pieces = {}) {
  Backup b = backup(id, catalog_id);
  b.ended = true;
  b.end.status = st;
  b.end.pieces = st == BackupStatus::failed ? 0 : static_cast<uint32_t>(pieces.size());
  for (const auto& n : pieces) {
    catalog::PieceRecord p;
    p.name = n;
    p.location = "/d";
    b.pieces.push_back(p);
  }
  b.damage = catalog::find_damage(b);  // as a load does
  return b;
}

std::string name(uint64_t backup_id, uint64_t catalog_id, uint32_t channel) {
  return piece_name(backup_id, catalog_id, "20240101T000000Z-0a0b", channel, 1);
}

const auto kNothingRuns = [](const Backup&) { return false; };

TEST(Leftovers, AnotherCatalogsPiecesAreNeverNamed) {
  // Catalog B's view: its backup 1 was killed, its backup 2 failed. Catalog A's backups 1
  // and 2 (complete) and 3 (killed) share the destination.
  std::vector<Backup> b = {backup(1, kB), ended(2, kB, BackupStatus::failed)};
  std::vector<std::string> names = {name(1, kA, 1), name(2, kA, 1), name(3, kA, 1),
                                    name(1, kB, 1), name(1, kB, 2), name(2, kB, 1)};
  EXPECT_EQ(unused_piece_names(b, names, kNothingRuns),
            (std::vector<std::string>{name(1, kB, 1), name(1, kB, 2), name(2, kB, 1)}));
}

TEST(Leftovers, OnlyDeadOrFailedBackupsAndUnrecordedPiecesOfUsableOnes) {
  std::vector<Backup> a = {
      ended(1, kA, BackupStatus::complete, {name(1, kA, 1), name(1, kA, 2)}),
      backup(2, kA),                                    // killed
      backup(3, kA),                                    // still running
      ended(4, kA, BackupStatus::failed),               // pieces it could not remove
      ended(5, kA, BackupStatus::partial, {name(5, kA, 1)}),
      ended(6, kA, BackupStatus::complete, {name(6, kA, 1)}),
  };
  a[5].end.pieces = 2;  // damaged: a piece record is missing; nothing of it is named
  a[5].damage = catalog::find_damage(a[5]);
  ASSERT_TRUE(a[5].damaged());
  auto running = [](const Backup& b) { return b.id == 3; };
  std::vector<std::string> names = {
      name(1, kA, 1), name(1, kA, 2),  // complete and recorded
      name(2, kA, 1),                  // killed
      name(3, kA, 1),                  // running
      name(4, kA, 1), name(4, kA, 2),  // failed
      name(5, kA, 1), name(5, kA, 2),  // partial: the second held no complete file
      name(6, kA, 2),                  // damaged backup's
      name(7, kA, 1),                  // a backup this catalog does not know
      "sb2-20240101T000000Z-0a0b-c1-p1.sbp",  // backup 2's number, but no catalog id
      "notes.txt",
  };
  EXPECT_EQ(unused_piece_names(a, names, running),
            (std::vector<std::string>{name(2, kA, 1), name(4, kA, 1), name(4, kA, 2),
                                      name(5, kA, 2)}));
}

TEST(Leftovers, APieceAUsableBackupMentionsIsNeverNamed) {
  std::vector<Backup> a = {backup(1, kA), ended(2, kA, BackupStatus::complete)};
  catalog::FileRecord f;
  f.path = "/x";
  f.pieces = {name(1, kA, 1)};
  a[1].files.push_back(f);
  EXPECT_TRUE(unused_piece_names(a, {name(1, kA, 1)}, kNothingRuns).empty());
}

TEST(Leftovers, BackupsBegunBeforeCatalogIdsNameNothing) {
  std::vector<Backup> old = {backup(1, 0), ended(2, 0, BackupStatus::failed)};
  EXPECT_TRUE(unused_piece_names(old,
                                 {"sb1-20240101T000000Z-0a0b-c1-p1.sbp", name(1, kA, 1),
                                  name(2, kA, 1)},
                                 kNothingRuns)
                  .empty());
}

TEST(Leftovers, AJobOnAnotherHostOrAliveHereMayStillRun) {
  Backup b = backup(1, kA);
  b.begin.host = "some-other-host.invalid";
  b.begin.pid = 1;
  EXPECT_TRUE(may_still_run(b));
  b.begin.host = util::hostname();
  b.begin.pid = static_cast<int32_t>(::getpid());
  EXPECT_TRUE(may_still_run(b));
  b.begin.pid = 1;  // init: alive
  EXPECT_TRUE(may_still_run(b));
  b.begin.pid = 0x3ffffff0;  // above any pid_max
  EXPECT_FALSE(may_still_run(b));
  b.begin.pid = 0;  // no pid recorded: nothing proves the job dead
  EXPECT_TRUE(may_still_run(b));
}

TEST(Leftovers, RemovalStopsAtTheFirstFailureAndReportsWhatRemains) {
  testing::TempDir dir;
  auto make = [&](const std::string& n) {
    std::ofstream(dir / n) << "piece";
    return PieceFile{dir.path(), n, 5};
  };
  PieceFile gone{dir.path(), "gone.sbp", 0};
  PieceFile a = make("a.sbp");
  // A directory in its place cannot be unlinked: the removal fails there.
  ASSERT_EQ(::mkdir((dir / "b.sbp").c_str(), 0755), 0);
  PieceFile b{dir.path(), "b.sbp", 7};
  PieceFile c = make("c.sbp");
  Removal r = remove_pieces({gone, a, b, c});
  EXPECT_GT(r.removed, 0u);
  ASSERT_EQ(r.remaining.size(), 2u);
  EXPECT_EQ(r.remaining[0].name, "b.sbp");
  EXPECT_EQ(r.remaining[1].name, "c.sbp");
  EXPECT_NE(r.error.find(dir / "b.sbp"), std::string::npos) << r.error;
  EXPECT_FALSE(std::ifstream(dir / "a.sbp").good());
  EXPECT_TRUE(std::ifstream(dir / "c.sbp").good());
  std::string w = unremoved_warning(r, "of this failed backup", dir.path());
  EXPECT_NE(w.find("2 piece(s) (12 B) of this failed backup remain in '" + dir.path() +
                   "': 'b.sbp', 'c.sbp'; they could not be removed ("),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("remove them to reclaim the space"), std::string::npos) << w;
}

}  // namespace
}  // namespace stripeback::engine
