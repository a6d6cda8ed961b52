// Pieces no restorable backup uses, on a destination that two catalogs share: a backup
// names only its own catalog's pieces of killed or failed backups, never another
// catalog's (whose backup ids start at 1 too); a backup that fails on a medium turned
// read-only says which of its pieces remain, and the next backup names them again.
#include <signal.h>
#include <sys/mount.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "tests/integration/it_util.h"
#include "util/units.h"

namespace stripeback::it {
namespace {

using Names = std::set<std::string>;

Names names_in(const std::string& dir) {
  auto v = base_names(pieces_in(dir));
  return Names(v.begin(), v.end());
}

Names minus(const Names& a, const Names& b) {
  Names out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

Names quoted_set(const std::string& text) {
  auto v = quoted_pieces(text);
  return Names(v.begin(), v.end());
}

// Starts `backup data --to dest --catalog cat` slowed down, lets it write its pieces for a
// moment and kills it with SIGKILL. Returns the pieces it left.
Names kill_backup_midway(const std::string& data, const std::string& dest, const std::string& cat) {
  Names before = names_in(dest);
  auto child =
      sb_start({"backup", data, "--to", dest, "--catalog", cat, "--channels", "2", "--rate", "4M"});
  EXPECT_TRUE(child->started());
  bool killed = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!killed && child->running() && std::chrono::steady_clock::now() < deadline) {
    if (minus(names_in(dest), before).size() >= 2) {  // both channels are writing
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      child->kill(SIGKILL);
      killed = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  RunResult r = child->wait();  // reaped: its process is gone
  EXPECT_TRUE(killed) << "the backup was not killed midway\n" << r.describe();
  EXPECT_EQ(r.term_signal, SIGKILL) << r.describe();
  return minus(names_in(dest), before);
}

Json backup_ok(const std::string& data, const std::string& dest, const std::string& cat) {
  RunResult r = sb({"backup", data, "--to", dest, "--catalog", cat, "--json"});
  EXPECT_TRUE(r.exited(0)) << r.describe();
  return parse_json(r);
}

TEST(Leftovers, SharedDestinationNamesOnlyThisCatalogsDeadPieces) {
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  TempDir t("sbit-shared");
  const std::string dest = t / "pieces", a = t / "cat-a", b = t / "cat-b";

  // Both catalogs start at backup id 1: A's completes, B's is killed.
  Json a1 = backup_ok(data, dest, a);
  ASSERT_EQ(backup_id_of(a1), 1u);
  const Names a_complete1 = names_in(dest);
  ASSERT_FALSE(a_complete1.empty());
  const Names b_killed1 = kill_backup_midway(data, dest, b);
  ASSERT_FALSE(b_killed1.empty());
  // The same backup id, two catalogs: different names, nothing replaced. Each name
  // carries its catalog's id, as `list --json` shows it.
  for (const auto& n : b_killed1) EXPECT_EQ(a_complete1.count(n), 0u) << n;
  EXPECT_EQ(minus(a_complete1, names_in(dest)), Names{});
  auto catalog_id = [](const std::string& cat) {
    RunResult l = sb({"list", "--catalog", cat, "--json"});
    EXPECT_TRUE(l.exited(0)) << l.describe();
    return parse_json(l)["catalog_id"].as_string();
  };
  const std::string id_a = catalog_id(a), id_b = catalog_id(b);
  EXPECT_EQ(id_a.size(), 16u);
  EXPECT_NE(id_a, id_b);
  for (const auto& n : a_complete1) EXPECT_EQ(n.rfind("sb1-" + id_a + "-", 0), 0u) << n;
  for (const auto& n : b_killed1) EXPECT_EQ(n.rfind("sb1-" + id_b + "-", 0), 0u) << n;

  // A's backup 2 is killed too.
  const Names a_killed2 = kill_backup_midway(data, dest, a);
  ASSERT_FALSE(a_killed2.empty());

  // B's backup 2 names its own killed backup 1, not A's complete backup 1 (same id) nor
  // A's killed backup 2.
  Names before = names_in(dest);
  Json b2 = backup_ok(data, dest, b);
  ASSERT_EQ(backup_id_of(b2), 2u);
  const Names b_complete2 = minus(names_in(dest), before);
  auto wb = warnings_with(b2, "remain in '" + dest + "'");
  ASSERT_EQ(wb.size(), 1u) << b2["warnings"].size();
  EXPECT_EQ(quoted_set(wb[0]), b_killed1) << wb[0];
  EXPECT_TRUE(contains(wb[0], std::to_string(b_killed1.size()) + " piece(s) ("));
  EXPECT_TRUE(contains(wb[0], "of backups in this catalog that failed or were killed"));
  EXPECT_TRUE(contains(wb[0], "remove them to reclaim the space"));

  // A's backup 3 names exactly its killed backup 2's pieces: not B's complete backup 2
  // (same id), not B's killed backup 1, not its own complete backup 1.
  Json a3 = backup_ok(data, dest, a);
  ASSERT_EQ(backup_id_of(a3), 3u);
  auto wa = warnings_with(a3, "remain in '" + dest + "'");
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(quoted_set(wa[0]), a_killed2) << wa[0];
  for (const auto& n : b_complete2) EXPECT_FALSE(contains(wa[0], n));

  // Every complete backup still restores from the shared destination.
  for (const auto& [cat, id] : {std::pair{a, "1"}, std::pair{a, "3"}, std::pair{b, "2"}}) {
    std::string out = t / ("restore-" + std::filesystem::path(cat).filename().string() + id);
    RunResult r = sb({"restore", "--to", out, "--catalog", cat, "--backup", id});
    SB_ASSERT_EXIT(r, 0);
    EXPECT_TRUE(restored_tree(out, data));
  }

  // Once the named pieces are removed, nothing is named any more.
  for (const auto& n : a_killed2) std::filesystem::remove(dest + "/" + n);
  Json a4 = backup_ok(data, dest, a);
  EXPECT_TRUE(warnings_with(a4, "remain in").empty());
}

// A destination that turns read-only mid-backup (a file system remounted read-only after
// an error): the backup fails, cannot remove its pieces, and says how many remain, their
// size, where and which; the next backup there names the same pieces.
TEST(Leftovers, ReadOnlyTargetLeavesPiecesThatAreNamedNowAndNextTime) {
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  TempDir t("sbit-rotarget");
  const std::string dest = t / "pieces", cat = t / "cat";
  std::filesystem::create_directories(dest);
  // A bind mount of the directory onto itself, made read-only: new path lookups in it (to
  // create or remove a piece) fail with EROFS, while the pieces the backup opened before,
  // through the mount below, stay writable. Made mid-backup: a mount with files open for
  // writing through it cannot be made read-only.
  const std::string probe = t / "probe";
  std::filesystem::create_directories(probe);
  if (::mount(probe.c_str(), probe.c_str(), nullptr, MS_BIND, nullptr) != 0)
    GTEST_SKIP() << "cannot bind-mount here (" << std::strerror(errno)
                 << "); a destination turning read-only cannot be shown without it";
  ::umount2(probe.c_str(), 0);
  struct Unmount {
    std::string path;
    bool mounted = false;
    void now() {
      if (mounted) mounted = ::umount2(path.c_str(), 0) != 0;
    }
    ~Unmount() {
      if (mounted) ::umount2(path.c_str(), MNT_DETACH);
    }
  } unmount{dest};

  auto child = sb_start({"backup", data, "--to", dest, "--catalog", cat, "--channels", "2",
                         "--rate", "8M", "--max-piece-size", "8M", "--json"});
  ASSERT_TRUE(child->started());
  bool made_ro = false;
  int ro_errno = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (child->running() && std::chrono::steady_clock::now() < deadline) {
    if (pieces_in(dest).size() >= 3) {
      unmount.mounted = ::mount(dest.c_str(), dest.c_str(), nullptr, MS_BIND, nullptr) == 0;
      made_ro = unmount.mounted && ::mount(nullptr, dest.c_str(), nullptr,
                                           MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0;
      ro_errno = errno;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  RunResult r = child->wait();
  ASSERT_TRUE(made_ro) << "the destination was not made read-only mid-backup ("
                       << std::strerror(ro_errno) << ")\n"
                       << r.describe();
  SB_ASSERT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, "Read-only file system"));
  Json j = parse_json(r);
  EXPECT_EQ(j["status"].as_string(), "failed");

  // What remains on the medium is what the warning names, with its size.
  const auto left = pieces_in(dest);
  ASSERT_FALSE(left.empty());
  auto w = warnings_with(j, "of this failed backup remain in '" + dest + "'");
  ASSERT_EQ(w.size(), 1u) << r.out;
  EXPECT_TRUE(contains(w[0], std::to_string(left.size()) + " piece(s) (" +
                                 util::format_bytes(total_size(left)) + ")"));
  EXPECT_TRUE(contains(w[0], "they could not be removed (unable to remove '" + dest + "/sb1-"));
  EXPECT_TRUE(contains(w[0], "Read-only file system"));
  EXPECT_TRUE(contains(w[0], "remove them to reclaim the space"));
  const auto left_list = base_names(left);
  const Names left_names(left_list.begin(), left_list.end());
  ASSERT_LE(left.size(), 8u) << "more pieces than a warning lists by name";
  EXPECT_EQ(quoted_set(w[0]), left_names) << w[0];
  EXPECT_TRUE(contains(r.err, w[0])) << "the warning is not on stderr";
  RunResult l = sb({"list", "--catalog", cat});
  EXPECT_TRUE(contains(l.out, "failed")) << l.describe();

  // Writable again: the next backup names the failed backup's pieces and completes.
  unmount.now();
  ASSERT_FALSE(unmount.mounted);
  Json next = backup_ok(data, dest, cat);
  auto wn = warnings_with(
      next, "of backups in this catalog that failed or were killed remain in '" + dest + "'");
  ASSERT_EQ(wn.size(), 1u);
  EXPECT_TRUE(contains(wn[0], std::to_string(left.size()) + " piece(s) (" +
                                  util::format_bytes(total_size(left)) + ")"));
  EXPECT_EQ(quoted_set(wn[0]), left_names) << wn[0];
  for (const auto& p : left) std::filesystem::remove(p);
  RunResult rr = sb({"restore", "--to", t / "out", "--catalog", cat});
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(t / "out", data));
}

}  // namespace
}  // namespace stripeback::it
