// Delta restore (restore_delta.h) into a target in memory: only the blocks that differ are
// written, counted on the target file itself; zeros, a grown or shortened file, a missing
// one and one changed in its attributes only all come back to the backup's version; the
// undo logs and the journal are gone afterwards.
#include <gtest/gtest.h>

#include "tests/engine/mem_job_util.h"

namespace stripeback::engine {
namespace {

using testing::MemStorage;
using testing::SchemeScope;

constexpr uint32_t kUnit = 64 << 10;
const std::string kA = "/out/mem/src/a.dbf", kB = "/out/mem/src/b.dbf";

// a.dbf: 3 MiB of data, 1 MiB of zeros and a short tail; b.dbf: 300000 bytes (its last
// change unit is short). Backed up (at level 0 unless `level` is unset) and restored to
// mem://out; then the test changes the target and runs a delta restore.
class Restored {
 public:
  explicit Restored(std::optional<int> level, storage::StorageCaps caps = {})
      : mem_(std::make_shared<MemStorage>(caps)), scope_({{"mem", mem_}}) {
    a_ = pattern(3 << 20, 41) + std::string(1 << 20, '\0') + pattern(5000, 42);
    b_ = pattern(300000, 43);
    mem_->write_file("/src/a.dbf", a_, 0100640);
    mem_->write_file("/src/b.dbf", b_, 0100640);
    BackupOptions bo = backup_options("mem://src", "mem://dest");
    bo.level = level;
    bo.change_unit = kUnit;
    const BackupSummary sum = backup_or_fail(bo, cd_.cat());
    EXPECT_EQ(sum.status, "complete") << sum.error;
    const RestoreSummary rs = restore_or_fail(restore_options("mem://out"), cd_.cat());
    EXPECT_EQ(rs.status, "complete") << errors_of(rs);
  }

  MemStorage& mem() { return *mem_; }
  // Runs the delta restore, counting what it writes from zero.
  RestoreSummary delta() {
    mem_->reset_counts();
    RestoreOptions ro = restore_options("mem://out");
    ro.delta = true;
    return restore_or_fail(ro, cd_.cat());
  }
  // The target holds the backup's version of both files and nothing else.
  void expect_restored() {
    EXPECT_TRUE(same_bytes(mem_->contents(kA), a_));
    EXPECT_TRUE(same_bytes(mem_->contents(kB), b_));
    EXPECT_EQ(mem_->files("/out"), (std::vector<std::string>{kA, kB}));
  }
  void change(const std::string& path, uint64_t offset, const std::string& bytes) {
    ASSERT_TRUE(mem_->overwrite(path, offset, bytes)) << path;
  }

 private:
  std::shared_ptr<MemStorage> mem_;
  SchemeScope scope_;
  CatalogDir cd_;
  std::string a_, b_;
};

TEST(DeltaRestoreOnMem, OnlyTheChangedUnitsAreWritten) {
  Restored t(0);
  t.change(kA, 3 * kUnit + 100, "xx");
  t.change(kA, 40 * kUnit + 7, "yy");
  const RestoreSummary rs = t.delta();
  ASSERT_EQ(rs.status, "complete") << errors_of(rs);
  EXPECT_TRUE(rs.delta.used);
  EXPECT_EQ(rs.delta.files, 2u);
  EXPECT_EQ(rs.delta.updated, 1u);
  EXPECT_EQ(rs.delta.unchanged, 1u);
  EXPECT_EQ(rs.delta.whole, 0u);
  EXPECT_EQ(rs.delta.bytes_differing, 2u * kUnit);
  EXPECT_EQ(rs.delta.undo_bytes, 2u * kUnit) << "the old bytes of each unit, saved first";
  EXPECT_EQ(t.mem().bytes_written_to(kA), 2u * kUnit);
  EXPECT_EQ(t.mem().bytes_written_to(kB), 0u);
  EXPECT_EQ(rs.bytes_written(), 2u * kUnit);
  t.expect_restored();
}

TEST(DeltaRestoreOnMem, APlainBackupIsComparedFrameByFrame) {
  Restored t(std::nullopt);
  t.change(kA, (1 << 20) + 5, "z");
  const RestoreSummary rs = t.delta();
  ASSERT_EQ(rs.status, "complete") << errors_of(rs);
  EXPECT_EQ(rs.delta.updated, 1u);
  EXPECT_EQ(t.mem().bytes_written_to(kA), 1u << 20) << "the one 1 MiB frame that differs";
  t.expect_restored();
}

TEST(DeltaRestoreOnMem, ZerosDirtiedInTheTargetAreWrittenBackAsZeros) {
  Restored t(0);
  t.change(kA, (3 << 20) + 2 * kUnit + 1, "not zero");
  const RestoreSummary rs = t.delta();
  ASSERT_EQ(rs.status, "complete") << errors_of(rs);
  EXPECT_EQ(rs.delta.updated, 1u);
  EXPECT_EQ(t.mem().bytes_written_to(kA), kUnit);
  t.expect_restored();
}

TEST(DeltaRestoreOnMem, AGrownFileIsCutBackAndAShortenedOneIsCompleted) {
  Restored t(0);
  t.change(kA, (4 << 20) + 5000, std::string(10000, 'g'));
  std::string b = *t.mem().contents(kB);
  t.mem().write_file(kB, b.substr(0, 100000), 0100640);
  const RestoreSummary rs = t.delta();
  ASSERT_EQ(rs.status, "complete") << errors_of(rs);
  EXPECT_EQ(t.mem().bytes_written_to(kA), 0u) << "only the tail beyond the backup's size differs";
  EXPECT_EQ(rs.delta.updated, 2u);
  // b.dbf: unit 0 is equal; the rest of unit 1 and units 2 to 4 are written.
  EXPECT_EQ(t.mem().bytes_written_to(kB), 300000u - kUnit);
  // Saved first: a.dbf's cut-off tail, and what b.dbf held of its unit 1.
  EXPECT_EQ(rs.delta.undo_bytes, 10000u + (100000u - kUnit));
  t.expect_restored();
}

TEST(DeltaRestoreOnMem, AMissingFileIsRestoredWholeAndAnEqualOneGetsOnlyItsAttributes) {
  Restored t(0);
  ASSERT_TRUE(t.mem().remove(t.mem().at(kB)).has_value());
  storage::Attrs attrs;
  attrs.mode = 0604;
  attrs.mtime_ns = 12345;
  ASSERT_TRUE(t.mem().set_attrs(t.mem().at(kA), attrs).has_value());
  const RestoreSummary rs = t.delta();
  ASSERT_EQ(rs.status, "complete") << errors_of(rs);
  EXPECT_EQ(rs.delta.unchanged, 1u);
  EXPECT_EQ(t.mem().bytes_written_to(kA), 0u);
  auto a = t.mem().stat(t.mem().at(kA), false);
  EXPECT_EQ(a->mode & 07777, 0640u);
  EXPECT_EQ(a->mtime_ns, t.mem().stat(t.mem().at("/src/a.dbf"), false)->mtime_ns);
  t.expect_restored();
}

TEST(DeltaRestoreOnMem, OnAnAlignedMediumTheShortLastUnitIsWrittenWithDirectIo) {
  storage::StorageCaps caps;
  caps.alignment = 4096;
  Restored t(0, caps);
  t.change(kB, 299990, "tail!");  // in the last unit, 37856 bytes long
  t.change(kB, 10, "head!");
  const RestoreSummary rs = t.delta();
  ASSERT_EQ(rs.status, "complete") << errors_of(rs);
  EXPECT_EQ(rs.delta.bytes_differing, kUnit + (300000u - 4 * kUnit));
  ASSERT_FALSE(rs.channels.empty());
  bool direct = false;
  for (const auto& c : rs.channels) direct = direct || c.direct_sink;
  EXPECT_TRUE(direct) << "the file updated in place was written with direct I/O";
  t.expect_restored();
}

}  // namespace
}  // namespace stripeback::engine
