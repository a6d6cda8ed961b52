// Change maps with the backups in memory: a level 0 keeps the digest of every change unit
// of a file, a level 1 finds the unit that changed and stores only that one, a restore
// reassembles each version from its chain, and the copy of the maps kept with the catalog
// round-trips, is checked, and leaves nothing behind when it cannot be put in place.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>

#include "engine/pieces/change_map.h"
#include "engine/pieces/piece_reader.h"
#include "storage/fault_storage.h"
#include "tests/engine/mem_job_util.h"
#include "util/digest.h"

namespace stripeback::engine {
namespace {

using testing::MemStorage;
using testing::SchemeScope;

constexpr uint32_t kUnit = 64 << 10;
constexpr uint64_t kChanged = 5;  // the unit a level 1 finds changed

const catalog::FileRecord& file_of(const catalog::Backup& b, const std::string& path) {
  auto it = std::find_if(b.files.begin(), b.files.end(),
                         [&](const catalog::FileRecord& f) { return f.path == path; });
  EXPECT_NE(it, b.files.end()) << path;
  return *it;
}

std::vector<util::Digest> unit_digests(const std::string& data) {
  std::vector<util::Digest> out;
  for (uint64_t off = 0; off < data.size(); off += kUnit)
    out.push_back(util::digest(data.data() + off, std::min<uint64_t>(kUnit, data.size() - off)));
  return out;
}

// a.dbf (16 units and a short one) and b.dbf, backed up at level 0; then one unit of a.dbf
// changed and backed up at level 1.
class ChangeMapOnMem : public ::testing::Test {
 protected:
  ChangeMapOnMem() : mem_(std::make_shared<MemStorage>()), scope_({{"mem", mem_}}) {}

  void SetUp() override {
    before_ = pattern((1 << 20) + 1000, 31);
    mem_->write_file("/src/a.dbf", before_);
    mem_->write_file("/src/b.dbf", pattern(300000, 32));
    level0_ = backup_at(0);
    ASSERT_EQ(level0_.status, "complete") << level0_.error;
    after_ = before_;
    after_.replace(kChanged * kUnit + 10, 7, "CHANGED");
    ASSERT_TRUE(mem_->overwrite("/src/a.dbf", kChanged * kUnit + 10, "CHANGED"));
    mem_->reset_counts();
    level1_ = backup_at(1);
    ASSERT_EQ(level1_.status, "complete") << level1_.error;
  }

  BackupSummary backup_at(int level) {
    BackupOptions o = backup_options("mem://src", "mem://dest");
    o.level = level;
    o.change_unit = kUnit;
    return backup_or_fail(o, cd_.cat());
  }

  std::shared_ptr<MemStorage> mem_;
  SchemeScope scope_;
  CatalogDir cd_;
  std::string before_, after_;
  BackupSummary level0_, level1_;
};

TEST_F(ChangeMapOnMem, ALevelZeroMapHoldsTheDigestOfEveryUnit) {
  const auto backups = cd_.cat().backups();
  const catalog::FileRecord& a = file_of(backups[0], "mem://src/a.dbf");
  EXPECT_EQ(a.unit, kUnit);
  EXPECT_EQ(a.change, catalog::FileChange::whole);
  PieceCache cache(io::Direct::no, nullptr);
  auto map = load_file_map(backups[0], a, cache);
  ASSERT_TRUE(map.has_value()) << map.error().what;
  EXPECT_EQ(map->size, before_.size());
  EXPECT_EQ(map->digests.size(), 17u);
  EXPECT_EQ(map->digests, unit_digests(before_));
  EXPECT_EQ(map_file_digest(*map), a.digest) << "the file record's digest combines the units";
}

TEST_F(ChangeMapOnMem, ALevelOneStoresOnlyTheUnitThatChanged) {
  ASSERT_EQ(level1_.file_changes.size(), 2u);
  for (const auto& fc : level1_.file_changes) {
    EXPECT_EQ(fc.parent, level0_.backup_id) << fc.path;
    if (fc.path == "mem://src/a.dbf") {
      EXPECT_EQ(fc.change, "changed");
      EXPECT_EQ(fc.units_written, 1u);
    } else {
      EXPECT_EQ(fc.change, "unchanged");
      EXPECT_EQ(fc.units_written, 0u);
    }
  }
  // The level 1's piece holds one data frame of a.dbf: the changed unit.
  const auto backups = cd_.cat().backups();
  const catalog::FileRecord& a = file_of(backups[1], "mem://src/a.dbf");
  ASSERT_EQ(a.pieces.size(), 1u);
  auto file = mem_->open_read(mem_->at("/dest/" + a.pieces[0]), {});
  ASSERT_TRUE(file.has_value());
  auto piece = PieceReader::open(std::move(*file));
  ASSERT_TRUE(piece.has_value()) << piece.error().what;
  const int id = (*piece)->find_file(a.path);
  ASSERT_GE(id, 0);
  const auto& ex = (*piece)->trailer().extents[static_cast<size_t>(id)];
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].file_offset, kChanged * kUnit);
  EXPECT_EQ(ex[0].raw_len, kUnit);

  PieceCache cache(io::Direct::no, nullptr);
  auto old_map = load_file_map(backups[0], file_of(backups[0], a.path), cache);
  auto new_map = load_file_map(backups[1], a, cache);
  ASSERT_TRUE(old_map.has_value() && new_map.has_value());
  EXPECT_EQ(new_map->digests, unit_digests(after_));
  for (size_t u = 0; u < new_map->digests.size(); ++u)
    EXPECT_EQ(new_map->digests[u] != old_map->digests[u], u == kChanged) << "unit " << u;
}

TEST_F(ChangeMapOnMem, EachVersionRestoresFromItsChain) {
  RestoreSummary newest = restore_or_fail(restore_options("mem://new"), cd_.cat());
  ASSERT_EQ(newest.status, "complete") << errors_of(newest);
  EXPECT_EQ(newest.backups_used, (std::vector<uint64_t>{level0_.backup_id, level1_.backup_id}));
  EXPECT_TRUE(same_bytes(mem_->contents("/new/mem/src/a.dbf"), after_));
  EXPECT_TRUE(same_bytes(mem_->contents("/new/mem/src/b.dbf"), mem_->contents("/src/b.dbf")));

  RestoreOptions ro = restore_options("mem://old");
  ro.backup_id = level0_.backup_id;
  RestoreSummary old = restore_or_fail(ro, cd_.cat());
  ASSERT_EQ(old.status, "complete") << errors_of(old);
  EXPECT_TRUE(same_bytes(mem_->contents("/old/mem/src/a.dbf"), before_));
}

TEST(ChangeMaps, JoiningRefusesAGapAnOverlapOrAShortCover) {
  const std::string data = pattern(4 * kUnit + 100, 33);
  const auto all = unit_digests(data);
  auto part = [&](uint64_t first, uint64_t count) {
    DigestMap m;
    m.unit = kUnit;
    m.offset = first * kUnit;
    m.digests.assign(all.begin() + static_cast<long>(first),
                     all.begin() + static_cast<long>(first + count));
    return m;
  };
  auto joined = join_maps({part(3, 2), part(0, 3)}, data.size(), kUnit, "/f");
  ASSERT_TRUE(joined.has_value()) << joined.error().what;
  EXPECT_EQ(joined->digests, all) << "parts are joined in offset order";

  auto gap = join_maps({part(0, 2), part(3, 2)}, data.size(), kUnit, "/f");
  ASSERT_FALSE(gap.has_value());
  EXPECT_EQ(gap.error().code, Errc::corrupt);
  EXPECT_NE(gap.error().what.find("gap or an overlap at offset 131072"), std::string::npos)
      << gap.error().what;
  EXPECT_FALSE(join_maps({part(0, 3), part(2, 3)}, data.size(), kUnit, "/f").has_value());
  auto short_cover = join_maps({part(0, 4)}, data.size(), kUnit, "/f");
  ASSERT_FALSE(short_cover.has_value());
  EXPECT_NE(short_cover.error().what.find("cover 4 of its 5 change units"), std::string::npos)
      << short_cover.error().what;
}

std::vector<std::pair<std::string, UnitMap>> some_maps() {
  UnitMap m;
  m.unit = kUnit;
  const std::string data = pattern(3 * kUnit + 5, 34);
  m.size = data.size();
  m.digests = unit_digests(data);
  return {{"/db/a.dbf", m}, {"/db/b.dbf", UnitMap{0, kUnit, 0, {}}}};
}

TEST(ChangeMaps, MapsKeptWithTheCatalogRoundTripAndDamageIsCaught) {
  storage::StorageCaps caps;
  caps.dir_sync = true;
  auto mem = std::make_shared<MemStorage>(caps);
  SchemeScope scope({{"mem", mem}});
  const auto maps = some_maps();
  auto saved = save_media_maps("mem://cat", 5, maps, nullptr);
  ASSERT_TRUE(saved.has_value()) << saved.error().what;
  EXPECT_EQ(mem->files("/cat"), std::vector<std::string>{"/cat/maps/5.sbmap"});
  EXPECT_TRUE(mem->unsynced().empty());
  EXPECT_EQ(mem->counts().dir_syncs, 1u) << "the new name is made durable";
  auto loaded = load_media_maps("mem://cat", 5, nullptr);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().what;
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ(loaded->at("/db/a.dbf").digests, maps[0].second.digests);
  EXPECT_EQ(loaded->at("/db/a.dbf").size, maps[0].second.size);
  EXPECT_EQ(loaded->at("/db/a.dbf").backup, 5u);

  std::string bytes = *mem->contents("/cat/maps/5.sbmap");
  ASSERT_TRUE(
      mem->overwrite("/cat/maps/5.sbmap", 40, std::string(1, static_cast<char>(bytes[40] ^ 1))));
  auto damaged = load_media_maps("mem://cat", 5, nullptr);
  ASSERT_FALSE(damaged.has_value());
  EXPECT_EQ(damaged.error().code, Errc::corrupt);
  EXPECT_NE(damaged.error().what.find("'mem://cat/maps/5.sbmap' is damaged"), std::string::npos)
      << damaged.error().what;
  auto other = load_media_maps("mem://cat", 6, nullptr);
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().code, Errc::not_found);
}

TEST(ChangeMaps, MapsKeptOnAStoreWithoutRenameAreOnePutOrRefused) {
  for (bool atomic_put : {true, false}) {
    MemStorage::Options o;
    o.caps.rename = false;
    o.caps.atomic_put = atomic_put;
    auto mem = std::make_shared<MemStorage>(o);
    SchemeScope scope({{"mem", mem}});
    auto saved = save_media_maps("mem://cat", 5, some_maps(), nullptr);
    EXPECT_EQ(mem->counts().renames, 0u);
    if (atomic_put) {
      ASSERT_TRUE(saved.has_value()) << saved.error().what;
      EXPECT_EQ(mem->counts().puts, 1u);
      EXPECT_EQ(mem->files("/cat"), std::vector<std::string>{"/cat/maps/5.sbmap"});
      auto loaded = load_media_maps("mem://cat", 5, nullptr);
      ASSERT_TRUE(loaded.has_value()) << loaded.error().what;
      EXPECT_EQ(loaded->at("/db/a.dbf").digests, some_maps()[0].second.digests);
    } else {
      ASSERT_FALSE(saved.has_value());
      EXPECT_EQ(saved.error().code, Errc::unsupported);
      EXPECT_NE(saved.error().what.find("neither rename nor atomic put"), std::string::npos)
          << saved.error().what;
      EXPECT_TRUE(mem->files("/cat").empty());
    }
  }
}

TEST(ChangeMaps, MapsThatCannotBeRenamedIntoPlaceLeaveNothingBehind) {
  auto mem = std::make_shared<MemStorage>();
  auto faulty = std::make_shared<storage::FaultStorage>(mem);
  faulty->add(storage::FaultRule::fail(storage::FaultOp::rename, EIO));
  SchemeScope scope({{"mem", faulty}});
  auto saved = save_media_maps("mem://cat", 5, some_maps(), nullptr);
  ASSERT_FALSE(saved.has_value());
  EXPECT_EQ(saved.error().code, Errc::io);
  EXPECT_NE(saved.error().what.find("unable to keep the change maps of backup 5 with the "
                                    "catalog ('mem://cat/maps/5.sbmap')"),
            std::string::npos)
      << saved.error().what;
  EXPECT_EQ(mem->files("/cat"), std::vector<std::string>{}) << "the temporary is removed";
}

}  // namespace
}  // namespace stripeback::engine
