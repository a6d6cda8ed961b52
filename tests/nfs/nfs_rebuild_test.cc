// catalog rebuild from pieces on an NFS export (nfs-ganesha): the autobackup is written
// there through the NFS client, and a catalog rebuilt from the export, with it and from
// the pieces alone, restores the same bytes.
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "tests/integration/it_util.h"
#include "tests/nfs/nfs_server.h"

namespace stripeback::it {
namespace {

namespace fs = std::filesystem;

TEST(NfsRebuild, CatalogRebuiltFromNfsRestoresTheSameFiles) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs-rebuild");
  const std::string src = t / "src";
  make_file(src + "/a.dbf", (7u << 20) + 4096, 3);
  make_file(src + "/sub/b.dbf", 3u << 20, 4);
  // A new export directory on each run: what ganesha has seen is never changed behind it.
  const std::string rel = "rebuild-" + std::to_string(::getpid()) + "-" +
                          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::string url = s.url_of(rel);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", url, "--catalog", t / "cat", "--tag", "nfs"}), 0);
  std::vector<std::string> sbcat;
  for (const auto& e : fs::directory_iterator(s.export_dir() + "/" + rel))
    if (e.path().extension() == ".sbcat") sbcat.push_back(e.path().filename());
  ASSERT_EQ(sbcat.size(), 1u);
  auto original = sb({"list", "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(original, 0);
  const Json oj = parse_json(original);

  for (bool use_auto : {true, false}) {
    const std::string cat = t / (use_auto ? "c1" : "c2");
    std::vector<std::string> a = {"catalog", "rebuild", "--from", url, "--catalog", cat, "--json"};
    if (!use_auto) a.push_back("--no-autobackup");
    auto r = sb(a);
    SB_ASSERT_EXIT(r, 0);
    Json j = parse_json(r);
    EXPECT_EQ(*j["added"].as_u64(), 1u);
    EXPECT_EQ(j["backups"][0]["from"].as_string(), use_auto ? "autobackup" : "pieces");
    auto l = sb({"list", "--catalog", cat, "--json"});
    SB_ASSERT_EXIT(l, 0);
    const Json lj = parse_json(l);
    EXPECT_EQ(lj["catalog_id"].as_string(), oj["catalog_id"].as_string());
    EXPECT_EQ(lj["backups"][0]["status"].as_string(), "complete");
    EXPECT_EQ(lj["backups"][0]["files"].as_u64(), oj["backups"][0]["files"].as_u64());
    EXPECT_EQ(lj["backups"][0]["pieces"].as_u64(), oj["backups"][0]["pieces"].as_u64());
    EXPECT_EQ(lj["backups"][0]["tag"].as_string(), use_auto ? "nfs" : "");
    const std::string out = t / (use_auto ? "r1" : "r2");
    SB_ASSERT_EXIT(sb({"restore", "--to", out, "--catalog", cat}), 0);
    if (use_auto) {
      EXPECT_TRUE(restored_tree(out, src));
    } else {
      EXPECT_TRUE(restored_exactly(out, files_under(src)));
    }
  }
}

}  // namespace
}  // namespace stripeback::it
