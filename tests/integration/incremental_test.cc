// Incremental backups (docs/incremental.md): level 0 and level 1, differential and
// cumulative, change units finer than the I/O buffer, chains restored identical to the tree
// at each backup's time, files truncated, grown, deleted and created between levels, a
// missing parent, one file of a deep chain, compression and encryption, bad usage.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <set>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kPage = 8192;
constexpr uint64_t kUnit = 64 << 10;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Overwrites `share` of the 8 KiB pages of every file below `dir` with random bytes, at
// random pages (seeded). Returns the pages changed; `units` gets the distinct change units
// of `unit` bytes they touch (file, unit index).
uint64_t change_pages(const std::string& dir, double share, uint32_t seed,
                      std::set<std::pair<std::string, uint64_t>>* units = nullptr,
                      uint64_t unit = kUnit) {
  std::mt19937_64 rng(seed);
  uint64_t changed = 0;
  for (const auto& f : files_under(dir)) {
    uint64_t pages = file_size(f) / kPage;
    auto want = static_cast<uint64_t>(static_cast<double>(pages) * share);
    if (pages == 0) continue;
    if (want == 0) want = 1;
    int fd = ::open(f.c_str(), O_WRONLY);
    EXPECT_GE(fd, 0) << f;
    std::set<uint64_t> picked;
    while (picked.size() < want) picked.insert(rng() % pages);
    std::string page(kPage, '\0');
    for (uint64_t p : picked) {
      for (auto& c : page) c = static_cast<char>(rng());
      EXPECT_EQ(::pwrite(fd, page.data(), page.size(), static_cast<off_t>(p * kPage)),
                static_cast<ssize_t>(kPage));
      if (units) units->insert({f, p * kPage / unit});
      ++changed;
    }
    ::close(fd);
  }
  return changed;
}

// A copy of the tree as it is now, to compare a later restore of this backup against.
std::string snapshot(const std::string& src, const std::string& to) {
  std::string cmd = "cp -a '" + src + "' '" + to + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return to;
}

// The restore of `src` below `root` holds exactly the files of `snap`, byte for byte.
::testing::AssertionResult same_as_snapshot(const std::string& root, const std::string& src,
                                            const std::string& snap) {
  std::set<std::string> want, got;
  for (const auto& f : files_under(snap)) want.insert(f.substr(snap.size()));
  const std::string base = restored_path(root, src);
  for (const auto& f : files_under(base)) got.insert(f.substr(base.size()));
  if (want != got)
    return ::testing::AssertionFailure() << "restored " << got.size() << " files, expected "
                                         << want.size();
  for (const auto& rel : want)
    if (read_all(snap + rel) != read_all(base + rel))
      return ::testing::AssertionFailure() << "'" << base + rel << "' differs from the tree "
                                           << "at backup time";
  return ::testing::AssertionSuccess();
}

// A tree of several datafile-like files of odd sizes (none a multiple of the unit).
void make_tree(const std::string& src) {
  make_file(src + "/a.dbf", (24u << 20) + 4096, 1);
  make_file(src + "/b.dbf", (9u << 20) + 12345, 2);
  make_file(src + "/sub/c.dbf", (16u << 20), 3);
  make_file(src + "/sub/d.dbf", (3u << 20) + 1, 4);
}

Json backup(const std::vector<std::string>& args, int code = 0) {
  auto r = sb(args);
  EXPECT_TRUE(r.exited(code)) << r.describe();
  return parse_json(r);
}

std::string change_of(const Json& j, const std::string& path) {
  for (const auto& f : j["file_changes"].items())
    if (f["path"].as_string() == path) return f["change"].as_string();
  return "(absent)";
}

TEST(Incremental, OnePercentOfPagesCostsTheirUnitsAndEveryChainRestores) {
  TempDir work("sb-inc");
  std::string src = work / "src", cat = work / "cat", pieces = work / "pieces";
  make_tree(src);
  const uint64_t total = total_size(files_under(src));
  auto common = [&](std::vector<std::string> extra) {
    std::vector<std::string> a{"backup", src, "--to", pieces, "--catalog", cat, "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  Json l0 = backup(common({"--level", "0"}));
  uint64_t id0 = backup_id_of(l0);
  EXPECT_EQ(*l0["level"].as_u64(), 0u);
  EXPECT_EQ(l0["parents"].size(), 0u);
  EXPECT_EQ(change_of(l0, src + "/a.dbf"), "new");
  EXPECT_EQ(*l0["change_unit"].as_u64(), kUnit);
  std::string snap0 = snapshot(src, work / "snap0");

  std::set<std::pair<std::string, uint64_t>> units;
  uint64_t pages = change_pages(src, 0.01, 7, &units);
  ASSERT_GT(pages, 40u);
  Json l1 = backup(common({"--level", "1"}));
  uint64_t id1 = backup_id_of(l1);
  std::string snap1 = snapshot(src, work / "snap1");
  EXPECT_EQ(*l1["bytes_read"].as_u64(), total) << "a level 1 reads every block";
  uint64_t written = *l1["bytes_written"].as_u64();
  // Each touched unit once, with a frame header block at most per unit; per file a file
  // record and a digest map; per piece its header, trailer and footer.
  const uint64_t bound = units.size() * (kUnit + 4096) + 4 * (64u << 10) + 2 * (64u << 10);
  EXPECT_LE(written, bound) << pages << " pages in " << units.size() << " units";
  EXPECT_GE(written, units.size() * kUnit) << "every changed unit is written";
  ASSERT_EQ(l1["parents"].size(), 1u);
  EXPECT_EQ(*l1["parents"][0].as_u64(), id0);
  uint64_t units_written = 0;
  for (const auto& f : l1["file_changes"].items()) {
    EXPECT_EQ(f["change"].as_string(), "changed") << f["path"].as_string();
    units_written += *f["units_written"].as_u64();
  }
  EXPECT_EQ(units_written, units.size());

  // A second differential level 1, then a cumulative one.
  change_pages(src, 0.01, 8);
  Json l1b = backup(common({"--level", "1"}));
  uint64_t id2 = backup_id_of(l1b);
  EXPECT_EQ(*l1b["parents"][0].as_u64(), id1) << "differential: the newest level 0 or 1";
  std::string snap2 = snapshot(src, work / "snap2");
  change_pages(src, 0.01, 9);
  Json l1c = backup(common({"--level", "1", "--cumulative"}));
  uint64_t id3 = backup_id_of(l1c);
  ASSERT_EQ(l1c["parents"].size(), 1u);
  EXPECT_EQ(*l1c["parents"][0].as_u64(), id0) << "cumulative: the newest level 0";
  EXPECT_TRUE(l1c["cumulative"].as_bool());
  EXPECT_GT(*l1c["bytes_written"].as_u64(), written * 2)
      << "a cumulative level 1 holds every change since the level 0";
  std::string snap3 = snapshot(src, work / "snap3");

  // Each backup restores to the tree at its time.
  const std::vector<std::pair<uint64_t, std::string>> chains{
      {id0, snap0}, {id1, snap1}, {id2, snap2}, {id3, snap3}};
  for (const auto& [id, snap] : chains) {
    std::string to = work / ("r" + std::to_string(id));
    auto r = sb({"restore", "--backup", std::to_string(id), "--to", to, "--catalog", cat,
                 "--json"});
    SB_ASSERT_EXIT(r, 0);
    EXPECT_TRUE(same_as_snapshot(to, src, snap)) << "backup " << id;
    Json rj = parse_json(r);
    // Each byte is written once (regression: the frames of a parent were counted whole
    // although only the ranges no newer backup holds were written).
    uint64_t restored_bytes = 0;
    for (const auto& ch : rj["channels"].items()) restored_bytes += *ch["bytes_written"].as_u64();
    EXPECT_LE(restored_bytes, total_size(files_under(snap))) << "backup " << id;
    std::set<uint64_t> used;
    for (const auto& b : rj["backups"].items()) used.insert(*b["id"].as_u64());
    if (id == id2) {
      EXPECT_EQ(used, (std::set<uint64_t>{id0, id1, id2}));
    }
    if (id == id3) {
      EXPECT_EQ(used, (std::set<uint64_t>{id0, id3}));
    }
  }
  // The newest backup restores by default, and validate checks whole chains.
  auto v = sb({"validate", "--backup", std::to_string(id2), "--catalog", cat});
  SB_EXPECT_EXIT(v, 0);

  // list shows levels and parents.
  auto l = sb({"list", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(l, 0);
  Json lj = parse_json(l);
  ASSERT_EQ(lj["backups"].size(), 4u);
  EXPECT_EQ(*lj["backups"][0]["level"].as_u64(), 0u);
  EXPECT_EQ(*lj["backups"][2]["level"].as_u64(), 1u);
  EXPECT_EQ(*lj["backups"][2]["parents"][0].as_u64(), id1);
  EXPECT_TRUE(lj["backups"][3]["cumulative"].as_bool());
  auto lt = sb({"list", "--catalog", cat});
  EXPECT_TRUE(contains(lt.out, "1c"));
}

TEST(Incremental, UnchangedFilesCostOnlyTheirRecords) {
  TempDir work("sb-inc-same");
  std::string src = work / "src", cat = work / "cat";
  make_tree(src);
  backup({"backup", src, "--to", work / "p", "--catalog", cat, "--level", "0", "--json"});
  Json l1 = backup({"backup", src, "--to", work / "p", "--catalog", cat, "--level", "1",
                    "--json"});
  for (const auto& f : l1["file_changes"].items())
    EXPECT_EQ(f["change"].as_string(), "unchanged") << f["path"].as_string();
  // Per file a file record and its digest map; per piece header, trailer and footer.
  EXPECT_LE(*l1["bytes_written"].as_u64(), 4 * (16u << 10) + 2 * (32u << 10));
  auto r = sb({"restore", "--to", work / "r", "--catalog", cat});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(work / "r", src));
}

TEST(Incremental, FilesTruncatedGrownDeletedAndCreated) {
  TempDir work("sb-inc-shape");
  std::string src = work / "src", cat = work / "cat";
  make_tree(src);
  backup({"backup", src, "--to", work / "p", "--catalog", cat, "--level", "0", "--json"});
  ASSERT_EQ(::truncate((src + "/a.dbf").c_str(), (5u << 20) + 333), 0);
  {
    std::ofstream b(src + "/b.dbf", std::ios::binary | std::ios::app);
    std::string more((3u << 20) + 77, 'x');
    b.write(more.data(), static_cast<std::streamsize>(more.size()));
  }
  ASSERT_EQ(::unlink((src + "/sub/c.dbf").c_str()), 0);
  make_file(src + "/sub/e.dbf", (2u << 20) + 5, 11);
  Json l1 = backup({"backup", src, "--to", work / "p", "--catalog", cat, "--level", "1",
                    "--json"});
  EXPECT_EQ(change_of(l1, src + "/a.dbf"), "changed");
  EXPECT_EQ(change_of(l1, src + "/b.dbf"), "changed");
  EXPECT_EQ(change_of(l1, src + "/sub/d.dbf"), "unchanged");
  EXPECT_EQ(change_of(l1, src + "/sub/e.dbf"), "new");
  EXPECT_EQ(change_of(l1, src + "/sub/c.dbf"), "(absent)");
  // The truncated file costs nothing but its last (shorter) unit; the grown one its tail.
  EXPECT_LE(*l1["bytes_written"].as_u64(), (2u << 20) + (3u << 20) + 2 * kUnit + (1u << 20));
  auto r = sb({"restore", "--backup", std::to_string(backup_id_of(l1)), "--to", work / "r",
               "--catalog", cat});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(work / "r", src));
}

TEST(Incremental, MissingParentPieceFailsOnlyTheFilesThatNeedIt) {
  TempDir work("sb-inc-missing");
  std::string src = work / "src", cat = work / "cat";
  make_file(src + "/one.dbf", 6u << 20, 1);
  make_file(src + "/two.dbf", 6u << 20, 2);
  // Each file's level 0 in a backup (and piece directory) of its own.
  backup({"backup", src + "/one.dbf", "--to", work / "p1", "--catalog", cat, "--level", "0",
          "--json"});
  backup({"backup", src + "/two.dbf", "--to", work / "p2", "--catalog", cat, "--level", "0",
          "--json"});
  change_pages(src, 0.01, 3);
  Json l1 = backup({"backup", src, "--to", work / "p3", "--catalog", cat, "--level", "1",
                    "--json"});
  EXPECT_EQ(l1["parents"].size(), 2u);
  auto gone = pieces_in(work / "p1");
  ASSERT_EQ(gone.size(), 1u);
  ASSERT_EQ(::unlink(gone[0].c_str()), 0);
  auto r = sb({"restore", "--backup", std::to_string(backup_id_of(l1)), "--to", work / "r",
               "--catalog", cat, "--json"});
  SB_EXPECT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.out + r.err, base_names(gone)[0]));
  EXPECT_TRUE(contains(r.out + r.err, src + "/one.dbf"));
  EXPECT_TRUE(same_file(src + "/two.dbf", restored_path(work / "r", src + "/two.dbf")));
  EXPECT_FALSE(exists(restored_path(work / "r", src + "/one.dbf")));
  // A level 1 after that does not build on the broken chain: the file goes whole, and the
  // warning names the missing piece.
  Json again = backup({"backup", src, "--to", work / "p4", "--catalog", cat, "--level", "1",
                       "--json"});
  EXPECT_EQ(change_of(again, src + "/one.dbf"), "new");
  EXPECT_EQ(change_of(again, src + "/two.dbf"), "unchanged");
  EXPECT_FALSE(warnings_with(again, base_names(gone)[0]).empty());
  auto r2 = sb({"restore", "--backup", std::to_string(backup_id_of(again)), "--to", work / "r2",
                "--catalog", cat});
  SB_ASSERT_EXIT(r2, 0);
  EXPECT_TRUE(restored_tree(work / "r2", src));
}

TEST(Incremental, OneFileOfADeepChainReadsOnlyItsFrames) {
  TempDir work("sb-inc-one");
  std::string src = work / "src", cat = work / "cat";
  make_tree(src);
  uint64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    if (i) change_pages(src, 0.02, static_cast<uint32_t>(20 + i));
    Json j = backup({"backup", src, "--to", work / "p", "--catalog", cat, "--level",
                     i ? "1" : "0", "--json"});
    last = backup_id_of(j);
  }
  std::string one = src + "/sub/d.dbf";
  auto r = sb({"restore", "--backup", std::to_string(last), "--to", work / "r", "--catalog",
               cat, "--json", one});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_exactly(work / "r", {one}));
  Json j = parse_json(r);
  // Its frames (some read twice over the chain at most: once per backup holding part of
  // it) and the pieces' indexes; never the other 49 MiB.
  EXPECT_LT(*j["piece_bytes_read"].as_u64(), 2 * file_size(one) + (2u << 20));
  EXPECT_EQ(j["backups"].size(), 3u);
}

TEST(Incremental, CompressedAndEncryptedChainsRestore) {
  TempDir work("sb-inc-crypt");
  std::string src = work / "src", cat = work / "cat", key = work / "key";
  make_tree(src);
  SB_ASSERT_EXIT(sb({"keygen", key}), 0);
  std::vector<std::string> opts{"--compress", "medium", "--encrypt", "--key-file", key,
                                "--section-size", "4M", "--max-open-files", "2", "--json"};
  auto run = [&](const std::string& level) {
    std::vector<std::string> a{"backup", src, "--to", work / "p", "--catalog", cat, "--level",
                               level};
    a.insert(a.end(), opts.begin(), opts.end());
    return backup(a);
  };
  run("0");
  change_pages(src, 0.01, 5);
  Json l1 = run("1");
  EXPECT_LT(*l1["bytes_written"].as_u64(), 8u << 20);
  for (const auto& f : l1["file_changes"].items())
    EXPECT_EQ(f["change"].as_string(), "changed") << f["path"].as_string();
  auto r = sb({"restore", "--to", work / "r", "--catalog", cat, "--key-file", key});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(work / "r", src));
  // Without the key the parent's maps cannot be read: nothing is written, the error says so.
  auto nokey = sb({"restore", "--to", work / "r2", "--catalog", cat});
  SB_EXPECT_EXIT(nokey, 2);
  EXPECT_TRUE(contains(nokey.err, "encrypted"));
}

TEST(Incremental, SmallChangeUnitsCostLess) {
  TempDir work("sb-inc-8k");
  std::string src = work / "src", cat = work / "cat";
  make_file(src + "/f.dbf", 32u << 20, 1);
  backup({"backup", src, "--to", work / "p", "--catalog", cat, "--level", "0", "--change-unit",
          "8K", "--json"});
  uint64_t pages = change_pages(src, 0.01, 2);
  Json l1 = backup({"backup", src, "--to", work / "p", "--catalog", cat, "--level", "1",
                    "--change-unit", "8K", "--json"});
  EXPECT_EQ(*l1["change_unit"].as_u64(), 8192u);
  EXPECT_LE(*l1["bytes_written"].as_u64(), pages * (8192 + 4096) + (128u << 10));
  // A level 1 with another unit cannot use the parent: the file goes whole, and says why.
  Json other = backup({"backup", src, "--to", work / "p", "--catalog", cat, "--level", "1",
                       "--json"});
  EXPECT_EQ(change_of(other, src + "/f.dbf"), "new");
  EXPECT_FALSE(warnings_with(other, "change unit").empty());
  auto r = sb({"restore", "--to", work / "r", "--catalog", cat});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(work / "r", src));
}

TEST(Incremental, OptimizeSkipsUnchangedFilesAndForceDoesNot) {
  TempDir work("sb-inc-opt");
  std::string src = work / "src", cat = work / "cat";
  make_tree(src);
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> a{"backup", src, "--to", work / "p", "--catalog", cat, "--json",
                               "--level", "1"};
    a.insert(a.end(), extra.begin(), extra.end());
    return backup(a);
  };
  Json l0 = backup({"backup", src, "--to", work / "p", "--catalog", cat, "--json", "--level",
                    "0"});
  const uint64_t id0 = backup_id_of(l0);
  // b.dbf changes (its mtime and ctime too); the others are skipped, held by the level 0.
  {
    int fd = ::open((src + "/b.dbf").c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    std::string page(kPage, 'z');
    EXPECT_EQ(::pwrite(fd, page.data(), page.size(), 3 * kPage), static_cast<ssize_t>(kPage));
    ::close(fd);
  }
  Json opt = run({"--optimize"});
  const uint64_t id1 = backup_id_of(opt);
  for (const auto& f : opt["file_changes"].items()) {
    const std::string path = f["path"].as_string();
    if (path == src + "/b.dbf") {
      EXPECT_EQ(f["change"].as_string(), "changed");
    } else {
      EXPECT_EQ(f["change"].as_string(), "skipped") << path;
      EXPECT_EQ(*f["held_by"].as_u64(), id0) << path;
    }
  }
  EXPECT_EQ(*opt["files"].as_u64(), 4u);
  EXPECT_EQ(*opt["bytes_read"].as_u64(), file_size(src + "/b.dbf"))
      << "only the changed file is read";
  // --force reads everything.
  Json forced = run({"--optimize", "--force"});
  EXPECT_EQ(*forced["bytes_read"].as_u64(), total_size(files_under(src)));
  for (const auto& f : forced["file_changes"].items())
    EXPECT_NE(f["change"].as_string(), "skipped") << f["path"].as_string();
  // A skipped file restores from the backup that holds it, and so does a level 1 built
  // on a backup that skipped it.
  auto r = sb({"restore", "--backup", std::to_string(id1), "--to", work / "r", "--catalog",
               cat, "--json"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(work / "r", src));
  Json rj = parse_json(r);
  std::set<uint64_t> used;
  for (const auto& b : rj["backups"].items()) used.insert(*b["id"].as_u64());
  EXPECT_TRUE(used.count(id0));
  Json again = run({"--optimize"});
  for (const auto& f : again["file_changes"].items())
    EXPECT_EQ(f["change"].as_string(), "skipped") << f["path"].as_string();
  auto r2 = sb({"restore", "--backup", std::to_string(backup_id_of(again)), "--to", work / "r2",
                "--catalog", cat});
  SB_ASSERT_EXIT(r2, 0);
  EXPECT_TRUE(restored_tree(work / "r2", src));
  // --optimize without --level is refused.
  auto bad = sb({"backup", src, "--to", work / "p", "--catalog", cat, "--optimize"});
  SB_EXPECT_EXIT(bad, 2);
}

// A level 0 cut short by its --duration window keeps the files it finished (--partial);
// the next level 1 builds on those and backs up the others whole, and restores identical.
TEST(Incremental, PartialLevelZeroWindowIsFinishedByTheNextLevelOne) {
  TempDir work("sb-inc-partial");
  std::string src = work / "src", cat = work / "cat";
  make_tree(src);
  auto l0 = sb({"backup", src, "--to", work / "p", "--catalog", cat, "--level", "0", "--json",
                "--channels", "1", "--files-per-set", "1", "--rate", "10M", "--duration",
                "0:00:03", "--partial"});
  SB_ASSERT_EXIT(l0, 3);
  Json j0 = parse_json(l0);
  ASSERT_EQ(j0["status"].as_string(), "partial") << l0.describe();
  const uint64_t kept = *j0["files"].as_u64();
  ASSERT_GT(kept, 0u) << "the window kept no file";
  ASSERT_LT(kept, files_under(src).size()) << "the window did not cut in";
  change_pages(src, 0.01, 21);
  Json l1 = backup({"backup", src, "--to", work / "p", "--catalog", cat, "--level", "1",
                    "--json"});
  std::set<std::string> kinds;
  for (const auto& f : l1["file_changes"].items()) kinds.insert(f["change"].as_string());
  EXPECT_EQ(kinds, (std::set<std::string>{"changed", "new"}))
      << "files of the partial level 0 changed, the others new";
  auto r = sb({"restore", "--to", work / "r", "--catalog", cat});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(work / "r", src));
}

// --partial puts files last backed up at different times in different sets, the most
// overdue first; the files --optimize takes out of the plan do not undo that.
TEST(Incremental, OptimizedPartialRunKeepsFilesOfDifferentAgesInSeparateSets) {
  TempDir work("sb-inc-opt-partial");
  std::string src = work / "src", cat = work / "cat";
  make_file(src + "/held.dbf", 1u << 20, 1);
  make_file(src + "/changed.dbf", 1u << 20, 2);
  backup({"backup", src, "--to", work / "p", "--catalog", cat, "--json", "--level", "0"});
  make_file(src + "/changed.dbf", 2u << 20, 3);
  make_file(src + "/new.dbf", 1u << 20, 4);
  Json l1 = backup({"backup", src, "--to", work / "p", "--catalog", cat, "--json", "--level",
                    "1", "--optimize", "--partial", "--duration", "0:10:00", "--channels", "1"});
  EXPECT_EQ(change_of(l1, src + "/held.dbf"), "skipped");
  EXPECT_EQ(change_of(l1, src + "/changed.dbf"), "changed");
  EXPECT_EQ(change_of(l1, src + "/new.dbf"), "new");
  EXPECT_EQ(l1["sets"].as_u64(), 2u)
      << "new.dbf (never backed up) and changed.dbf (backed up by the level 0) share a set";
}

TEST(Incremental, NoParentAndBadUsage) {
  TempDir work("sb-inc-usage");
  std::string src = work / "src", cat = work / "cat";
  make_file(src + "/f.dbf", 1u << 20, 1);
  auto req = sb({"backup", src, "--to", work / "p", "--catalog", cat, "--level", "1",
                 "--require-parent"});
  EXPECT_FALSE(req.exited(0));
  EXPECT_TRUE(contains(req.err, "no level 0 or 1 backup"));
  EXPECT_TRUE(pieces_in(work / "p").empty()) << "nothing was written";
  Json whole = backup({"backup", src, "--to", work / "p", "--catalog", cat, "--level", "1",
                       "--json"});
  EXPECT_EQ(change_of(whole, src + "/f.dbf"), "new");
  EXPECT_FALSE(warnings_with(whole, "backed up whole").empty());
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"--cumulative"}, {"--level", "2"}, {"--level", "1", "--change-unit", "12K"},
           {"--level", "0", "--change-unit", "4K"}, {"--change-unit", "64K"},
           {"--level", "0", "--cumulative"}}) {
    std::vector<std::string> a{"backup", src, "--to", work / "p", "--catalog", cat};
    a.insert(a.end(), bad.begin(), bad.end());
    auto r = sb(a);
    SB_EXPECT_EXIT(r, 2);
    EXPECT_FALSE(r.err.empty());
  }
  // A plain full backup is no parent.
  Json plain = backup({"backup", src, "--to", work / "p", "--catalog", cat, "--json"});
  EXPECT_TRUE(plain["level"].is_null());
}

}  // namespace
}  // namespace stripeback::it
