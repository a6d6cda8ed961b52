#include <gtest/gtest.h>

#include "backends/local/local_storage.h"

#include <sys/stat.h>

#include <filesystem>

#include "catalog/catalog.h"
#include "engine/restore/restore_job.h"
#include "tests/support/temp_dir.h"

namespace stripeback::engine {
namespace {

TEST(SafeComponents, SplitsAbsolutePaths) {
  auto c = safe_components("/data/db/users01.dbf");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(*c, (std::vector<std::string>{"data", "db", "users01.dbf"}));
}

TEST(SafeComponents, RefusesPathsThatCouldEscape) {
  for (const char* p : {"", "relative/x", "/a/../b", "/a/./b", "/a//b", "/", "/a/"}) {
    auto c = safe_components(p);
    EXPECT_FALSE(c.has_value()) << "'" << p << "' accepted";
    if (!c) {
      EXPECT_NE(c.error().what.find("unsafe path"), std::string::npos);
    }
  }
}

TEST(SafeComponents, NfsHostIsCheckedLikeAnyComponent) {
  auto c = safe_components("nfs://filer1/export/db/users01.dbf");
  ASSERT_TRUE(c.has_value()) << c.error().what;
  EXPECT_EQ(*c, (std::vector<std::string>{"filer1", "export", "db", "users01.dbf"}));
  for (const char* p : {"nfs://../x/evil", "nfs://..,x/x/evil", "nfs://./x/evil",
                        "nfs://.,a/x/evil"}) {
    auto r = safe_components(p);
    EXPECT_FALSE(r.has_value()) << "'" << p << "' accepted";
    if (!r) {
      EXPECT_NE(r.error().what.find("unsafe path"), std::string::npos);
    }
  }
}

TEST(SafeComponents, NulAndSlashInAComponentAreRefused) {
  EXPECT_FALSE(safe_component(std::string("a\0b", 3)));
  EXPECT_FALSE(safe_component("a/b"));
  EXPECT_FALSE(safe_component(".."));
  EXPECT_FALSE(safe_component(""));
  EXPECT_TRUE(safe_component("..."));
  EXPECT_TRUE(safe_component(std::string(255, 'x')));
  EXPECT_FALSE(safe_components(std::string("/a\0/b", 5)).has_value());
}

// A catalog whose one complete backup records a file at `path` (as a crafted or damaged
// record would): restore must refuse before creating anything.
class CraftedRecord : public ::testing::TestWithParam<std::string> {};

TEST_P(CraftedRecord, IsRefusedAndNothingIsCreated) {
  testing::TempDir t("sb-crafted");
  auto cat = catalog::Catalog::open(t / "cat", catalog::Create::yes, io::local_storage());
  ASSERT_TRUE(cat.has_value()) << cat.error().what;
  catalog::BackupBegin begin;
  begin.destination = t / "p";
  auto id = (*cat)->begin_backup(begin);
  ASSERT_TRUE(id.has_value());
  catalog::PieceRecord piece;
  piece.name = "crafted.sbp";
  piece.location = t / "p";
  catalog::FileRecord f;
  f.path = GetParam();
  f.size = 10;
  f.mode = 0100644;
  f.pieces = {piece.name};
  ASSERT_TRUE((*cat)->add_piece(*id, piece, {f}));
  catalog::BackupEnd end;
  end.files = 1;
  end.pieces = 1;
  ASSERT_TRUE((*cat)->end_backup(*id, end));
  ASSERT_TRUE((*cat)->backups()[0].usable()) << (*cat)->backups()[0].damage;

  std::filesystem::create_directories(t / "box/target");
  RestoreOptions o;
  o.target = t / "box/target";
  auto r = run_restore(o, **cat);
  ASSERT_FALSE(r.has_value()) << "restore of '" << GetParam() << "' was not refused";
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_NE(r.error().what.find("unsafe path"), std::string::npos) << r.error().what;
  // Nothing below the target and nothing beside it.
  EXPECT_TRUE(std::filesystem::is_empty(t / "box/target"));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(t / "box")) ++entries;
  EXPECT_EQ(entries, 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Paths, CraftedRecord,
    ::testing::Values("/../x/evil", "/a/../../x/evil", "../x/evil", "x/evil", "", "/",
                      "/a//b", "/a/./b", std::string("/a\0/../../evil", 15), "nfs://../x/evil",
                      "nfs://..,x/x/evil", "nfs://./evil", "/a/b/.."));

}  // namespace
}  // namespace stripeback::engine
