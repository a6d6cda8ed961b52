// Media management on an NFS export (nfs-ganesha): delete obsolete removes through the NFS
// client exactly the pieces the retention policy no longer needs, and crosscheck expires a
// piece gone from the export, after which restore falls back to the older copy.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>

#include "tests/integration/it_util.h"
#include "tests/nfs/nfs_server.h"

namespace stripeback::it {
namespace {

namespace fs = std::filesystem;

std::set<uint64_t> backups_on(const std::string& dir) {
  std::set<uint64_t> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename();
    if (e.path().extension() == ".sbp") out.insert(std::stoull(n.substr(2, n.find('-') - 2)));
  }
  return out;
}

TEST(NfsMedia, DeleteObsoleteAndCrosscheckOnAnExport) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAKE_NOW");
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs-media");
  const std::string src = t / "src";
  make_file(src + "/a.dbf", 3u << 20, 1);
  const std::string rel = "media-" + std::to_string(::getpid()) + "-" +
                          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::string url = s.url_of(rel);
  const std::string cat = t / "cat";
  for (int d = 1; d <= 4; ++d) {
    make_file(src + "/a.dbf", 3u << 20, static_cast<uint32_t>(10 + d));
    const std::string when = "2026-11-0" + std::to_string(d) + "T02:00:00Z";
    SB_ASSERT_EXIT(sb({"backup", src, "--to", url, "--catalog", cat, "--tag", "n"},
                      {{"STRIPEBACK_FAKE_NOW", when}}),
                   0);
  }
  const std::string dir = s.export_dir() + "/" + rel;
  ASSERT_EQ(backups_on(dir), (std::set<uint64_t>{1, 2, 3, 4}));
  SB_ASSERT_EXIT(sb({"configure", "retention", "redundancy", "2", "--catalog", cat}), 0);
  auto del = sb({"delete", "obsolete", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(del, 0);
  Json dj = parse_json(del);
  EXPECT_TRUE(dj["complete"].as_bool());
  EXPECT_EQ(dj["backups"].size(), 2u);
  EXPECT_EQ(backups_on(dir), (std::set<uint64_t>{3, 4})) << "removed through the NFS client";
  // The newest backup's piece goes away on the server.
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with("sb4-")) fs::rename(e.path(), t / "away.sbp");
  auto cc = sb({"crosscheck", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(cc, 0);
  Json cj = parse_json(cc);
  for (const auto& b : cj["backups"].items())
    EXPECT_EQ(b["status"].as_string(), *b["backup_id"].as_u64() == 4 ? "expired" : "available");
  auto r = sb({"restore", "--to", t / "r", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(r, 6);  // older data than the newest copy: exit 6 without --allow-fallback
  Json rj = parse_json(r);
  ASSERT_EQ(rj["fallbacks"].size(), 1u);
  EXPECT_EQ(*rj["fallbacks"][0]["backup_id"].as_u64(), 3u);
}

}  // namespace
}  // namespace stripeback::it
