// Whole backup and restore jobs with their data in memory (MemStorage reached as mem://...):
// bytes come back equal, pieces are synced and as the catalog records them, the jobs branch
// on the medium's StorageCaps (direct I/O alignment, preallocation, directory syncs, writes
// in order, no directories, no writes in place) and a failure of the medium is reported
// with its cause and cleaned up.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include "engine/format/piece_walk.h"
#include "engine/pieces/piece_reader.h"
#include "storage/fault_storage.h"
#include "tests/engine/mem_job_util.h"

namespace stripeback::engine {
namespace {

using testing::MemStorage;
using testing::SchemeScope;

// 3 MiB of data, 1 MiB of zeros, then an odd tail: data, zero and short frames.
std::string mixed_file() {
  return pattern(3 << 20, 1) + std::string(1 << 20, '\0') + pattern(12345, 2);
}

std::vector<std::string> pieces_in(const MemStorage& mem, const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : mem.files(dir))
    if (f.ends_with(".sbp")) out.push_back(f);
  return out;
}

uint64_t counter(const BackupSummary& s, const std::string& group, const std::string& key) {
  uint64_t n = 0;
  for (const auto& c : s.channels)
    for (const auto& g : c.backends)
      if (g.name == group)
        if (const auto* k = g.find(key)) n += k->number;
  return n;
}

TEST(MemJobs, LocalFilesBackedUpToMemRestoreByteForByte) {
  CatalogDir cd;
  auto mem = std::make_shared<MemStorage>();
  SchemeScope scope({{"mem", mem}});
  testing::TempDir local;
  const std::string src = local / "src";
  ASSERT_EQ(::mkdir(src.c_str(), 0755), 0);
  const std::string a = mixed_file(), b = pattern(5000, 3);
  std::ofstream(src + "/a.dbf", std::ios::binary) << a;
  std::ofstream(src + "/b.dbf", std::ios::binary) << b;
  std::ofstream(src + "/empty", std::ios::binary).flush();

  BackupSummary sum = backup_or_fail(backup_options(src, "mem://dest"), cd.cat());
  ASSERT_EQ(sum.status, "complete") << sum.error;
  EXPECT_EQ(sum.files, 3u);
  // The pieces are on the medium, whole and durable, as the catalog records them.
  const auto backups = cd.cat().backups();
  ASSERT_EQ(backups.size(), 1u);
  EXPECT_EQ(pieces_in(*mem, "/dest").size(), backups[0].pieces.size());
  uint64_t piece_bytes = 0;
  for (const auto& p : backups[0].pieces) {
    EXPECT_EQ(p.location, "mem://dest");
    auto bytes = mem->contents("/dest/" + p.name);
    ASSERT_TRUE(bytes.has_value()) << p.name;
    EXPECT_EQ(bytes->size(), p.size);
    piece_bytes += p.size;
  }
  EXPECT_TRUE(mem->unsynced().empty()) << mem->unsynced().front();
  // Each channel collected its thread's counters of the medium: together, every piece byte.
  EXPECT_EQ(counter(sum, "mem", "write_bytes"), piece_bytes);

  RestoreSummary rs = restore_or_fail(restore_options(local / "out"), cd.cat());
  ASSERT_EQ(rs.status, "complete") << errors_of(rs);
  EXPECT_EQ(rs.files, 3u);
  EXPECT_TRUE(same_bytes(testing::read_file(local / "out" + src + "/a.dbf"), a));
  EXPECT_TRUE(same_bytes(testing::read_file(local / "out" + src + "/b.dbf"), b));
  EXPECT_EQ(testing::read_file(local / "out" + src + "/empty"), "");
}

// Sources, pieces and target all in memory; completions come back newest first, frames are
// compressed, large files are cut into sections spread over the channels.
TEST(MemJobs, AWholeJobInMemoryWithSectionsCompressionAndCompletionsOutOfOrder) {
  CatalogDir cd;
  MemStorage::Options o;
  o.reverse_reap = true;
  auto mem = std::make_shared<MemStorage>(o);
  SchemeScope scope({{"mem", mem}});
  mem->write_file("/src/a.dbf", mixed_file(), 0100640);
  mem->write_file("/src/deep/er/b.dbf", pattern(2 << 20, 4), 0100600);
  BackupOptions bo = backup_options("mem://src", "mem://dest");
  bo.channels = 3;
  bo.section_size = 1 << 20;
  bo.channel.compress_level = 3;
  BackupSummary sum = backup_or_fail(bo, cd.cat());
  ASSERT_EQ(sum.status, "complete") << sum.error;
  EXPECT_GT(sum.sections, 2u);

  RestoreOptions ro = restore_options("mem://out");
  ro.channels = 3;
  RestoreSummary rs = restore_or_fail(ro, cd.cat());
  ASSERT_EQ(rs.status, "complete") << errors_of(rs);
  for (const std::string f : {"/src/a.dbf", "/src/deep/er/b.dbf"}) {
    // A file backed up from a URL goes below the target under its scheme's host part.
    const std::string back = "/out/mem" + f;
    EXPECT_TRUE(same_bytes(mem->contents(back), mem->contents(f))) << f;
    auto was = mem->stat(mem->at(f), false), now = mem->stat(mem->at(back), false);
    ASSERT_TRUE(was.has_value() && now.has_value());
    EXPECT_EQ(now->mode, was->mode) << f;
    EXPECT_EQ(now->mtime_ns, was->mtime_ns) << f;
  }
  // Nothing but the restored files is left in the target (no temporaries, no journal).
  EXPECT_EQ(mem->files("/out"),
            (std::vector<std::string>{"/out/mem/src/a.dbf", "/out/mem/src/deep/er/b.dbf"}));
}

// A medium with 4 KiB direct I/O checks every request's alignment, and one that
// preallocates has every piece trimmed back to the size the catalog records.
TEST(MemJobs, AlignedPreallocatingMediumRoundTripsOddSizes) {
  CatalogDir cd;
  storage::StorageCaps caps;
  caps.alignment = 4096;
  caps.preallocate = true;
  auto mem = std::make_shared<MemStorage>(caps);
  SchemeScope scope({{"mem", mem}});
  mem->write_file("/src/a.dbf", mixed_file());
  mem->write_file("/src/b.dbf", pattern(100001, 5));
  BackupSummary sum = backup_or_fail(backup_options("mem://src", "mem://dest"), cd.cat());
  ASSERT_EQ(sum.status, "complete") << sum.error;
  EXPECT_GT(mem->counts().preallocates, 0u);
  const auto backups = cd.cat().backups();
  for (const auto& p : backups[0].pieces)
    EXPECT_EQ(mem->contents("/dest/" + p.name)->size(), p.size) << p.name;

  mem->reset_counts();
  RestoreSummary rs = restore_or_fail(restore_options("mem://out"), cd.cat());
  ASSERT_EQ(rs.status, "complete") << errors_of(rs);
  EXPECT_EQ(mem->counts().preallocates, 2u) << "each restored file is reserved first";
  EXPECT_TRUE(same_bytes(mem->contents("/out/mem/src/a.dbf"), mem->contents("/src/a.dbf")));
  EXPECT_TRUE(same_bytes(mem->contents("/out/mem/src/b.dbf"), mem->contents("/src/b.dbf")));
}

TEST(MemJobs, TheDestinationDirectoryIsSyncedAfterEachPieceOnlyWhereTheMediumCan) {
  for (bool dir_sync : {true, false}) {
    CatalogDir cd;
    storage::StorageCaps caps;
    caps.dir_sync = dir_sync;
    auto mem = std::make_shared<MemStorage>(caps);
    SchemeScope scope({{"mem", mem}});
    mem->write_file("/src/a.dbf", pattern(3 << 20, 6));
    BackupOptions bo = backup_options("mem://src", "mem://dest");
    bo.channels = 1;
    bo.channel.max_piece_size = (1 << 20) + (256 << 10);  // one buffer and metadata
    BackupSummary sum = backup_or_fail(bo, cd.cat());
    ASSERT_EQ(sum.status, "complete") << sum.error;
    ASSERT_GE(sum.pieces, 3u);
    if (dir_sync)
      EXPECT_GE(mem->counts().dir_syncs, sum.pieces);
    else
      EXPECT_EQ(mem->counts().dir_syncs, 0u);
  }
}

TEST(MemJobs, AnExistingTargetFileIsReplacedOnlyWhenForced) {
  CatalogDir cd;
  auto mem = std::make_shared<MemStorage>();
  SchemeScope scope({{"mem", mem}});
  mem->write_file("/src/a.dbf", pattern(70000, 7));
  ASSERT_EQ(backup_or_fail(backup_options("mem://src", "mem://dest"), cd.cat()).status, "complete");
  mem->write_file("/out/mem/src/a.dbf", "mine");
  auto refused = run_restore(restore_options("mem://out"), cd.cat());
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, Errc::exists);
  EXPECT_NE(refused.error().what.find("mem://out/mem/src/a.dbf"), std::string::npos)
      << refused.error().what;
  EXPECT_EQ(mem->contents("/out/mem/src/a.dbf"), "mine");

  RestoreOptions forced = restore_options("mem://out");
  forced.force = true;
  ASSERT_EQ(restore_or_fail(forced, cd.cat()).status, "complete");
  EXPECT_TRUE(same_bytes(mem->contents("/out/mem/src/a.dbf"), mem->contents("/src/a.dbf")));
}

TEST(MemJobs, AFullMediumFailsTheBackupWithItsCauseAndItsPiecesAreRemoved) {
  CatalogDir cd;
  auto mem = std::make_shared<MemStorage>();
  auto faulty = std::make_shared<storage::FaultStorage>(mem);
  faulty->add(storage::FaultRule::fail(storage::FaultOp::write, ENOSPC, 3).only(".sbp"));
  SchemeScope scope({{"mem", faulty}});
  mem->write_file("/src/a.dbf", pattern(3 << 20, 8));
  mem->write_file("/src/b.dbf", pattern(200000, 9));
  BackupSummary sum = backup_or_fail(backup_options("mem://src", "mem://dest"), cd.cat());
  EXPECT_EQ(sum.status, "failed");
  EXPECT_EQ(sum.error_code, Errc::no_space);
  EXPECT_NE(sum.error.find("No space left on device (injected)"), std::string::npos) << sum.error;
  EXPECT_EQ(faulty->fired(storage::FaultOp::write), 1u);
  EXPECT_TRUE(pieces_in(*mem, "/dest").empty());
  ASSERT_EQ(cd.cat().backups().size(), 1u);
  EXPECT_EQ(cd.cat().backups()[0].end.status, catalog::BackupStatus::failed);
}

TEST(MemJobs, ATargetThatRefusesRenameLeavesNoFileBehind) {
  CatalogDir cd;
  auto mem = std::make_shared<MemStorage>();
  MemStorage::Options to;
  to.scheme = "tgt";
  auto target = std::make_shared<MemStorage>(to);
  auto faulty = std::make_shared<storage::FaultStorage>(target);
  faulty->add(storage::FaultRule::fail(storage::FaultOp::rename, EPERM).onward());
  SchemeScope scope({{"mem", mem}, {"tgt", faulty}});
  mem->write_file("/src/a.dbf", pattern(300000, 10));
  mem->write_file("/src/b.dbf", pattern(1000, 11));
  ASSERT_EQ(backup_or_fail(backup_options("mem://src", "mem://dest"), cd.cat()).status, "complete");
  RestoreSummary rs = restore_or_fail(restore_options("tgt://out"), cd.cat());
  EXPECT_EQ(rs.status, "failed");
  ASSERT_EQ(rs.failed_files.size(), 2u) << errors_of(rs);
  for (const auto& e : rs.errors) {
    EXPECT_NE(e.find("into place"), std::string::npos) << e;
    EXPECT_NE(e.find("Operation not permitted (injected)"), std::string::npos) << e;
  }
  EXPECT_EQ(target->files("/"), std::vector<std::string>{}) << "temporaries are removed";
}

TEST(MemJobs, AFrameDamagedOnTheMediumFailsOnlyTheFileItHolds) {
  CatalogDir cd;
  auto mem = std::make_shared<MemStorage>();
  SchemeScope scope({{"mem", mem}});
  mem->write_file("/src/a.dbf", pattern(2 << 20, 12));
  mem->write_file("/src/b.dbf", pattern(2 << 20, 13));
  ASSERT_EQ(backup_or_fail(backup_options("mem://src", "mem://dest"), cd.cat()).status, "complete");
  // Two channels, one file each: damage the second data frame of a.dbf's piece.
  const auto backups = cd.cat().backups();
  const auto& files = backups[0].files;
  auto a = std::find_if(files.begin(), files.end(),
                        [](const catalog::FileRecord& f) { return f.path == "mem://src/a.dbf"; });
  ASSERT_NE(a, files.end());
  ASSERT_EQ(a->pieces.size(), 1u);
  const std::string piece = "/dest/" + a->pieces[0];
  auto file = mem->open_read(mem->at(piece), {});
  ASSERT_TRUE(file.has_value());
  auto reader = PieceReader::open(std::move(*file));
  ASSERT_TRUE(reader.has_value()) << reader.error().what;
  const Extent e = (*reader)->trailer().extents[(*reader)->find_file(a->path)].at(1);
  const uint64_t at = e.frame_offset + kBlock + 777;
  std::string byte = mem->contents(piece)->substr(at, 1);
  byte[0] = static_cast<char>(byte[0] ^ 0x40);
  ASSERT_TRUE(mem->overwrite(piece, at, byte));

  RestoreSummary rs = restore_or_fail(restore_options("mem://out"), cd.cat());
  EXPECT_EQ(rs.status, "failed");
  ASSERT_EQ(rs.failed_files.size(), 1u) << errors_of(rs);
  EXPECT_EQ(rs.failed_files[0].path, "mem://src/a.dbf");
  EXPECT_EQ(rs.error_code(), Errc::corrupt);
  EXPECT_NE(rs.errors[0].find(a->pieces[0]), std::string::npos) << rs.errors[0];
  EXPECT_FALSE(mem->exists("/out/mem/src/a.dbf"));
  EXPECT_TRUE(same_bytes(mem->contents("/out/mem/src/b.dbf"), mem->contents("/src/b.dbf")));
}

// A medium that takes its bytes in order and is read in order (as a tape is, but with
// names): the pieces come out whole, each one walks front to back with its recorded
// checksum. The restore path needs random reads of pieces not on removable media: each
// file fails naming its piece and the cause, and nothing is written to the target.
TEST(MemJobs, ASequentialMediumTakesWholePiecesButTheyAreNotReadOutOfOrder) {
  CatalogDir cd;
  MemStorage::Options o;
  o.caps.sequential_only = true;
  o.caps.random_write = false;
  o.caps.random_read = false;
  o.reverse_reap = true;
  auto mem = std::make_shared<MemStorage>(o);
  auto out = std::make_shared<MemStorage>(MemStorage::Options{{}, false, "out"});
  SchemeScope scope({{"mem", mem}, {"out", out}});
  mem->write_file("/src/a.dbf", mixed_file());
  BackupOptions bo = backup_options("mem://src", "mem://dest");
  bo.channels = 1;
  bo.channel.max_piece_size = 2 << 20;
  bo.channel.compress_level = 1;
  BackupSummary sum = backup_or_fail(bo, cd.cat());
  ASSERT_EQ(sum.status, "complete") << sum.error;
  ASSERT_GE(sum.pieces, 2u);
  const auto backups = cd.cat().backups();
  for (const auto& p : backups[0].pieces) {
    auto f = mem->open_read(mem->at("/dest/" + p.name), {});
    ASSERT_TRUE(f.has_value());
    std::vector<std::byte> head(kBlock);
    ASSERT_EQ(*(*f)->read_at(head.data(), kBlock, 0), kBlock);
    uint64_t read = 0;
    auto walked = walk_piece(**f, head, p.size, p.checksum, &read);
    ASSERT_TRUE(walked.has_value()) << p.name << ": " << walked.error().what;
    EXPECT_EQ(walked->size, p.size);
  }

  RestoreSummary rs = restore_or_fail(restore_options("out://t"), cd.cat());
  EXPECT_EQ(rs.status, "failed");
  ASSERT_FALSE(rs.errors.empty());
  EXPECT_NE(rs.errors[0].find("read in order"), std::string::npos) << rs.errors[0];
  EXPECT_NE(rs.errors[0].find("mem://dest/"), std::string::npos) << rs.errors[0];
  EXPECT_TRUE(out->files("/").empty());
}

// Where the destination has no rename but replaces whole files at once (an object store),
// the catalog's copy beside the pieces is one put(); with neither, the backup still
// completes and says in a warning why the copy is missing.
TEST(MemJobs, TheCatalogCopyBesideThePiecesFollowsTheDestinationsWayOfReplacingAFile) {
  for (bool atomic_put : {true, false}) {
    CatalogDir cd;
    auto src = std::make_shared<MemStorage>();
    MemStorage::Options o;
    o.caps.rename = false;
    o.caps.atomic_put = atomic_put;
    o.scheme = "store";
    auto store = std::make_shared<MemStorage>(o);
    SchemeScope scope({{"mem", src}, {"store", store}});
    src->write_file("/src/a.dbf", pattern(70000, 16));
    BackupSummary sum = backup_or_fail(backup_options("mem://src", "store://dest"), cd.cat());
    ASSERT_EQ(sum.status, "complete") << sum.error;
    std::vector<std::string> copies;
    for (const auto& f : store->files("/dest"))
      if (f.ends_with(".sbcat")) copies.push_back(f);
    EXPECT_EQ(store->counts().renames, 0u);
    if (atomic_put) {
      EXPECT_EQ(copies.size(), 1u);
      EXPECT_EQ(store->counts().puts, 1u);
      EXPECT_TRUE(sum.warnings.empty()) << sum.warnings.front();
    } else {
      EXPECT_TRUE(copies.empty());
      ASSERT_EQ(sum.warnings.size(), 1u);
      EXPECT_NE(sum.warnings[0].find("it has neither rename nor atomic put"), std::string::npos)
          << sum.warnings[0];
    }
    EXPECT_EQ(pieces_in(*store, "/dest").size(), sum.pieces) << "the pieces themselves are there";
  }
}

// Disabled: fails, showing a fault of the restore path left for its owners. A new file is
// restored by skipping its zero frames ("a new file's preallocated range reads as zeros",
// restore_channel.cc), which assumes writes at any offset, but only a delta restore checks
// caps().random_write (restore_choose.cc). On a target that takes its bytes in order
// (storage::OrderedWrites, as a tape stream does) the write after the zero range waits for
// bytes that never come and fails: "the write before offset 4194304 never came", after
// 3 MiB were written. Either outcome below would be right: the target refused before
// anything is written, or the file restored with its zeros written.
// Regression: a target that takes its bytes in order failed every file with a zero range
// after writing the bytes before it ("the write before offset ... never came").
TEST(MemJobs, ARestoreToATargetThatTakesItsBytesInOrderWritesItsZerosOrIsRefused) {
  CatalogDir cd;
  auto mem = std::make_shared<MemStorage>();
  MemStorage::Options to;
  to.caps.sequential_only = true;
  to.caps.random_write = false;
  to.scheme = "seq";
  auto target = std::make_shared<MemStorage>(to);
  SchemeScope scope({{"mem", mem}, {"seq", target}});
  mem->write_file("/src/a.dbf", mixed_file());
  ASSERT_EQ(backup_or_fail(backup_options("mem://src", "mem://dest"), cd.cat()).status, "complete");
  RestoreOptions ro = restore_options("seq://out");
  ro.channels = 1;
  auto r = run_restore(ro, cd.cat());
  if (r) {
    EXPECT_EQ(r->status, "complete") << errors_of(*r);
    EXPECT_TRUE(same_bytes(target->contents("/out/mem/src/a.dbf"), mem->contents("/src/a.dbf")));
  } else {
    EXPECT_EQ(r.error().code, Errc::unsupported) << r.error().what;
    EXPECT_TRUE(target->files("/").empty());
  }
}

TEST(MemJobs, DeltaRestoreIsRefusedWhereTheTargetCannotBeWrittenInPlace) {
  CatalogDir cd;
  auto mem = std::make_shared<MemStorage>();
  MemStorage::Options to;
  to.caps.random_write = false;
  to.scheme = "tgt";
  auto target = std::make_shared<MemStorage>(to);
  SchemeScope scope({{"mem", mem}, {"tgt", target}});
  mem->write_file("/src/a.dbf", pattern(5000, 14));
  ASSERT_EQ(backup_or_fail(backup_options("mem://src", "mem://dest"), cd.cat()).status, "complete");
  RestoreOptions ro = restore_options("tgt://out");
  ro.delta = true;
  auto r = run_restore(ro, cd.cat());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::unsupported);
  EXPECT_NE(r.error().what.find("tgt targets cannot ('tgt://out')"), std::string::npos)
      << r.error().what;
  EXPECT_TRUE(target->files("/").empty());
}

TEST(MemJobs, ADestinationWithoutDirectoriesIsRefusedBeforeAnythingIsWritten) {
  CatalogDir cd;
  auto src = std::make_shared<MemStorage>();
  MemStorage::Options flat;
  flat.caps.directories = false;
  flat.scheme = "flat";
  auto dest = std::make_shared<MemStorage>(flat);
  SchemeScope scope({{"mem", src}, {"flat", dest}});
  src->write_file("/src/a.dbf", pattern(5000, 15));
  auto r = run_backup(backup_options("mem://src", "flat://dest"), cd.cat());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_NE(r.error().what.find("backup destination is not usable"), std::string::npos)
      << r.error().what;
  EXPECT_NE(r.error().what.find("not supported on flat storage"), std::string::npos)
      << r.error().what;
  EXPECT_TRUE(dest->files("/").empty());
  EXPECT_TRUE(cd.cat().backups().empty());
}

}  // namespace
}  // namespace stripeback::engine
