// catalog rebuild, autobackup and compaction end to end (docs/media-management.md): a
// catalog deleted and rebuilt from its media restores exactly what the original restored,
// with and without the autobackup; a rebuild adds nothing twice and refuses another
// catalog's pieces; compaction keeps every backup, also when killed half-way.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> autobackups_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 6 && n.compare(n.size() - 6, 6, ".sbcat") == 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Json list_json(const std::string& cat) {
  auto l = sb({"list", "--catalog", cat, "--json"});
  EXPECT_TRUE(l.exited(0)) << l.describe();
  return parse_json(l);
}

// The fields of `list --json` a rebuild must give back: per backup id, tag, status, files,
// pieces (and the catalog id).
std::string essentials(const Json& list, bool with_tag) {
  std::string s = list["catalog_id"].as_string() + "\n";
  for (const auto& b : list["backups"].items()) {
    s += std::to_string(*b["id"].as_u64()) + " " + (with_tag ? b["tag"].as_string() : "") + " " +
         b["status"].as_string() + " files=" + std::to_string(*b["files"].as_u64()) +
         " bytes=" + std::to_string(*b["bytes"].as_u64()) +
         " pieces=" + std::to_string(*b["pieces"].as_u64()) + "\n";
  }
  return s;
}

uint64_t size_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

struct Mode {
  const char* name;
  std::vector<std::string> backup_flags;  // compression, encryption
  bool key = false;
};

class CatalogRebuild : public ::testing::TestWithParam<Mode> {};

// Back up, list and restore; delete the catalog; rebuild it from the pieces directory;
// list and restore again: the same backups and the same bytes, with the autobackup and
// from the pieces alone.
TEST_P(CatalogRebuild, RestoreFromRebuiltCatalogIsIdentical) {
  const Mode& m = GetParam();
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  TempDir work("sb-rebuild");
  const std::string cat = work / "cat", pieces = work / "pieces", key = work / "k.key";
  std::vector<std::string> keyf;
  if (m.key) {
    SB_ASSERT_EXIT(sb({"keygen", key}), 0);
    keyf = {"--key-file", key};
  }
  auto backup = [&](const std::string& tag) {
    std::vector<std::string> args = {"backup", data, "--to", pieces, "--catalog", cat, "--tag",
                                     tag, "--max-piece-size", "8M"};
    args.insert(args.end(), m.backup_flags.begin(), m.backup_flags.end());
    args.insert(args.end(), keyf.begin(), keyf.end());
    auto b = sb(args);
    EXPECT_TRUE(b.exited(0)) << b.describe();
  };
  backup("nightly");
  backup("second");
  ASSERT_EQ(autobackups_in(pieces).size(), 2u);
  const Json original = list_json(cat);
  ASSERT_EQ(original["backups"].size(), 2u);
  ASSERT_GT(*original["backups"][0]["pieces"].as_u64(), 2u);
  auto restore = [&](const std::string& c, const std::string& to) {
    std::vector<std::string> r = {"restore", "--to", to, "--catalog", c};
    r.insert(r.end(), keyf.begin(), keyf.end());
    auto rr = sb(r);
    EXPECT_TRUE(rr.exited(0)) << rr.describe();
  };
  restore(cat, work / "r1");
  ASSERT_TRUE(restored_tree(work / "r1", data));

  // The catalog is lost and the pieces moved to another directory.
  fs::remove_all(cat);
  const std::string moved = work / "moved";
  fs::rename(pieces, moved);
  std::vector<std::string> rb = {"catalog", "rebuild", "--from", moved, "--catalog", cat, "--json"};
  rb.insert(rb.end(), keyf.begin(), keyf.end());
  auto r = sb(rb);
  SB_ASSERT_EXIT(r, 0);
  Json rj = parse_json(r);
  EXPECT_EQ(*rj["added"].as_u64(), 2u);
  EXPECT_FALSE(rj["media"][0]["autobackup"].is_null());
  for (const auto& b : rj["backups"].items()) EXPECT_EQ(b["from"].as_string(), "autobackup");
  EXPECT_EQ(essentials(list_json(cat), true), essentials(original, true));
  restore(cat, work / "r2");
  EXPECT_TRUE(restored_tree(work / "r2", data));

  // From the pieces alone: the same ids, status, files and pieces; the tag is not known.
  fs::remove_all(cat);
  rb.push_back("--no-autobackup");
  r = sb(rb);
  SB_ASSERT_EXIT(r, 0);
  rj = parse_json(r);
  EXPECT_EQ(*rj["added"].as_u64(), 2u);
  for (const auto& b : rj["backups"].items()) EXPECT_EQ(b["from"].as_string(), "pieces");
  const Json rebuilt = list_json(cat);
  EXPECT_EQ(essentials(rebuilt, false), essentials(original, false));
  EXPECT_EQ(rebuilt["backups"][0]["tag"].as_string(), "");
  EXPECT_TRUE(contains(rebuilt["backups"][0]["message"].as_string(), "rebuilt from its pieces"));
  restore(cat, work / "r3");
  EXPECT_TRUE(restored_exactly(work / "r3", files_under(data)));
  // Validate agrees with what the rebuilt catalog says of every piece.
  std::vector<std::string> v = {"validate", "--catalog", cat};
  v.insert(v.end(), keyf.begin(), keyf.end());
  SB_EXPECT_EXIT(sb(v), 0);
}

INSTANTIATE_TEST_SUITE_P(Media, CatalogRebuild,
                         ::testing::Values(Mode{"plain", {}, false},
                                           Mode{"compressed", {"--compress", "medium"}, false},
                                           Mode{"encrypted", {"--compress", "low", "--encrypt"}, true}),
                         [](const ::testing::TestParamInfo<Mode>& p) { return std::string(p.param.name); });

TEST(CatalogRebuildCli, EncryptedPiecesNeedTheirKey) {
  TempDir work("sb-rebuild-key");
  const std::string src = work / "src", cat = work / "cat", key = work / "k.key";
  make_file(src + "/a.dbf", 3u << 20, 1);
  SB_ASSERT_EXIT(sb({"keygen", key}), 0);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", work / "p", "--catalog", cat, "--encrypt",
                     "--key-file", key}), 0);
  auto none = sb({"catalog", "rebuild", "--from", work / "p", "--catalog", work / "new"});
  SB_EXPECT_EXIT(none, 2);
  EXPECT_TRUE(contains(none.err, "encrypted"));
  SB_ASSERT_EXIT(sb({"keygen", work / "other.key"}), 0);
  auto wrong = sb({"catalog", "rebuild", "--from", work / "p", "--catalog", work / "new",
                   "--key-file", work / "other.key"});
  SB_EXPECT_EXIT(wrong, 4);
  EXPECT_TRUE(contains(wrong.err, "wrong passphrase or key"));
  // Nothing was added by the refused runs.
  auto l = sb({"list", "--catalog", work / "new", "--json"});
  if (l.exited(0)) {
    EXPECT_EQ(parse_json(l)["backups"].size(), 0u);
  }
}

TEST(CatalogRebuildCli, MissingDrivesAndMediaAreUsageErrors) {
  TempDir work("sb-rebuild-usage");
  auto tape = sb({"catalog", "rebuild", "--from", "tape:/dev/sg9", "--catalog", work / "c"});
  SB_EXPECT_EXIT(tape, 2);
  EXPECT_TRUE(contains(tape.err, "unable to read the medium 'tape:/dev/sg9'")) << tape.err;
  auto missing = sb({"catalog", "rebuild", "--from", work / "nothing", "--catalog", work / "c"});
  SB_EXPECT_EXIT(missing, 2);
  EXPECT_TRUE(contains(missing.err, work / "nothing"));
  SB_EXPECT_EXIT(sb({"catalog", "rebuild", "--catalog", work / "c"}), 2);  // no --from
  SB_EXPECT_EXIT(sb({"catalog", "compact", "--catalog", work / "none"}), 2);
}

// From pieces alone, a backup with a piece cut short (as a killed writer leaves it) is
// rebuilt partial, naming the piece, with the files that are whole in the other pieces;
// they restore identical.
TEST(CatalogRebuildCli, DamagedPieceMakesThePiecesOnlyBackupPartial) {
  TempDir work("sb-rebuild-partial");
  const std::string src = work / "src", cat = work / "cat", p = work / "p";
  for (uint32_t i = 0; i < 6; ++i) make_file(src + "/f" + std::to_string(i) + ".dbf", 3u << 20, i + 1);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat, "--max-piece-size", "4M",
                     "--channels", "2"}), 0);
  const auto pieces = pieces_in(p);
  ASSERT_GE(pieces.size(), 3u);
  ASSERT_EQ(::truncate(pieces[0].c_str(), 8192), 0);
  auto r = sb({"catalog", "rebuild", "--from", p, "--catalog", work / "c", "--no-autobackup",
               "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  ASSERT_EQ(j["media"][0]["unreadable"].size(), 1u);
  EXPECT_TRUE(contains(j["media"][0]["unreadable"][0].as_string(), base_names({pieces[0]})[0]));
  ASSERT_EQ(j["backups"].size(), 1u);
  EXPECT_EQ(j["backups"][0]["status"].as_string(), "partial");
  Json l = list_json(work / "c");
  EXPECT_EQ(l["backups"][0]["status"].as_string(), "partial");
  EXPECT_TRUE(contains(l["backups"][0]["message"].as_string(), base_names({pieces[0]})[0]));
  const uint64_t kept = *l["backups"][0]["files"].as_u64();
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, 6u);
  SB_ASSERT_EXIT(sb({"restore", "--to", work / "r", "--catalog", work / "c"}), 0);
  auto restored = files_under(work / "r");
  EXPECT_EQ(restored.size(), kept);
  for (const auto& f : restored) EXPECT_TRUE(same_file(f.substr((work / "r").size()), f));
}

// The newest autobackup was written before `delete obsolete` removed a backup's pieces: the
// rebuild leaves that backup out (its pieces are gone) and says so, instead of bringing
// back a backup that cannot be restored.
TEST(CatalogRebuildCli, BackupDeletedAfterTheAutobackupStaysDeleted) {
  TempDir work("sb-rebuild-deleted");
  const std::string src = work / "src", cat = work / "cat", p = work / "p";
  make_file(src + "/a.dbf", 2u << 20, 1);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat}), 0);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat}), 0);
  SB_ASSERT_EXIT(sb({"configure", "retention", "redundancy", "1", "--catalog", cat}), 0);
  auto del = sb({"delete", "obsolete", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(del, 0);
  ASSERT_EQ(list_json(cat)["backups"].size(), 1u) << del.out;
  fs::remove_all(cat);
  auto r = sb({"catalog", "rebuild", "--from", p, "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(*j["added"].as_u64(), 1u) << r.out;
  bool said = false;
  for (const auto& w : j["warnings"].items())
    said = said || contains(w.as_string(), "backup 1 of catalog autobackup");
  EXPECT_TRUE(said) << r.out;
  Json l = list_json(cat);
  ASSERT_EQ(l["backups"].size(), 1u);
  EXPECT_EQ(*l["backups"][0]["id"].as_u64(), 2u);
  SB_ASSERT_EXIT(sb({"restore", "--to", work / "r", "--catalog", cat}), 0);
  EXPECT_TRUE(restored_tree(work / "r", src));
}

// Rebuilding into the catalog that already has everything adds nothing; a second rebuild
// into a rebuilt catalog adds nothing and writes nothing.
TEST(CatalogRebuildCli, RebuildTwiceAddsNothingTheSecondTime) {
  TempDir work("sb-rebuild-twice");
  const std::string src = work / "src", cat = work / "cat", p = work / "p";
  make_file(src + "/a.dbf", 5u << 20, 1);
  make_file(src + "/d/b.dbf", 1u << 20, 2);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat}), 0);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat}), 0);
  auto same = sb({"catalog", "rebuild", "--from", p, "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(same, 0);
  EXPECT_EQ(*parse_json(same)["added"].as_u64(), 0u);
  const std::string fresh = work / "fresh";
  for (bool use_auto : {true, false}) {
    fs::remove_all(fresh);
    std::vector<std::string> a = {"catalog", "rebuild", "--from", p, "--catalog", fresh, "--json"};
    if (!use_auto) a.push_back("--no-autobackup");
    auto first = sb(a);
    SB_ASSERT_EXIT(first, 0);
    EXPECT_EQ(*parse_json(first)["added"].as_u64(), 2u);
    const uint64_t log = size_of(fresh + "/catalog.log");
    auto again = sb(a);
    SB_ASSERT_EXIT(again, 0);
    Json j = parse_json(again);
    EXPECT_EQ(*j["added"].as_u64(), 0u);
    EXPECT_EQ(size_of(fresh + "/catalog.log"), log);
    EXPECT_EQ(list_json(fresh)["backups"].size(), 2u);
  }
  // The rebuilt catalog has the pieces' identity: the next backup goes on with id 3, and
  // its pieces are told from the others by the same catalog id.
  auto next = sb({"backup", src, "--to", p, "--catalog", fresh, "--json"});
  SB_ASSERT_EXIT(next, 0);
  EXPECT_EQ(backup_id_of(parse_json(next)), 3u);
  EXPECT_EQ(list_json(fresh)["catalog_id"].as_string(), list_json(cat)["catalog_id"].as_string());
  EXPECT_TRUE(warnings_with(parse_json(next), "remain").empty());
}

TEST(CatalogRebuildCli, AnotherCatalogsPiecesAreRefused) {
  TempDir work("sb-rebuild-foreign");
  const std::string src = work / "src";
  make_file(src + "/a.dbf", 2u << 20, 1);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", work / "pa", "--catalog", work / "a"}), 0);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", work / "pb", "--catalog", work / "b"}), 0);
  const std::string b_id = list_json(work / "b")["catalog_id"].as_string();
  auto r = sb({"catalog", "rebuild", "--from", work / "pb", "--catalog", work / "a"});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, b_id));
  EXPECT_EQ(list_json(work / "a")["backups"].size(), 1u);
  // Both catalogs' pieces in one directory: a new catalog needs to be told which.
  for (const auto& e : fs::directory_iterator(work / "pb"))
    fs::copy(e.path(), fs::path(work / "pa") / e.path().filename());
  auto both = sb({"catalog", "rebuild", "--from", work / "pa", "--catalog", work / "c"});
  SB_EXPECT_EXIT(both, 2);
  EXPECT_TRUE(contains(both.err, "--catalog-id"));
  auto chosen = sb({"catalog", "rebuild", "--from", work / "pa", "--catalog", work / "c",
                    "--catalog-id", b_id, "--json"});
  SB_ASSERT_EXIT(chosen, 0);
  EXPECT_EQ(list_json(work / "c")["catalog_id"].as_string(), b_id);
}

// A level 0 and a level 1 rebuilt from their pieces alone: the level 1's files find their
// parent by the digest maps, and the newest restore is the changed data.
TEST(CatalogRebuildCli, IncrementalChainRestoresAfterRebuild) {
  TempDir work("sb-rebuild-incr");
  const std::string src = work / "src", cat = work / "cat", p = work / "p";
  make_file(src + "/a.dbf", 6u << 20, 1);
  make_file(src + "/b.dbf", 2u << 20, 2);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat, "--level", "0"}), 0);
  {
    std::fstream f(src + "/a.dbf", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3 << 20);
    f.write("changed page", 12);
  }
  auto l1 = sb({"backup", src, "--to", p, "--catalog", cat, "--level", "1", "--json"});
  SB_ASSERT_EXIT(l1, 0);
  for (bool use_auto : {true, false}) {
    const std::string fresh = work / (use_auto ? "c1" : "c2");
    std::vector<std::string> a = {"catalog", "rebuild", "--from", p, "--catalog", fresh};
    if (!use_auto) a.push_back("--no-autobackup");
    SB_ASSERT_EXIT(sb(a), 0);
    Json l = list_json(fresh);
    ASSERT_EQ(l["backups"].size(), 2u);
    EXPECT_EQ(*l["backups"][1]["level"].as_u64(), 1u);
    ASSERT_EQ(l["backups"][1]["parents"].size(), 1u);
    EXPECT_EQ(*l["backups"][1]["parents"][0].as_u64(), 1u);
    const std::string to = work / (use_auto ? "r1" : "r2");
    auto rr = sb({"restore", "--to", to, "--catalog", fresh});
    SB_ASSERT_EXIT(rr, 0);
    EXPECT_TRUE(restored_exactly(to, files_under(src)));
  }
}

// The newest autobackup is lost: the older one gives the level 0, the level 1 is rebuilt
// from its pieces and finds its parent in the level 0 (its maps read from its pieces).
TEST(CatalogRebuildCli, LevelOneFromPiecesOnAParentFromTheAutobackup) {
  TempDir work("sb-rebuild-incr-auto");
  const std::string src = work / "src", cat = work / "cat", p = work / "p";
  make_file(src + "/a.dbf", 5u << 20, 7);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat, "--level", "0", "--tag", "base"}), 0);
  {
    std::fstream f(src + "/a.dbf", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1 << 20);
    f.write("another change", 14);
  }
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat, "--level", "1"}), 0);
  auto names = autobackups_in(p);
  ASSERT_EQ(names.size(), 2u);
  fs::remove(fs::path(p) / names[1]);
  auto r = sb({"catalog", "rebuild", "--from", p, "--catalog", work / "c", "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  ASSERT_EQ(j["backups"].size(), 2u);
  EXPECT_EQ(j["backups"][0]["from"].as_string(), "autobackup");
  EXPECT_EQ(j["backups"][1]["from"].as_string(), "pieces");
  Json l = list_json(work / "c");
  EXPECT_EQ(l["backups"][0]["tag"].as_string(), "base");
  ASSERT_EQ(l["backups"][1]["parents"].size(), 1u);
  EXPECT_EQ(*l["backups"][1]["parents"][0].as_u64(), 1u);
  SB_ASSERT_EXIT(sb({"restore", "--to", work / "r", "--catalog", work / "c"}), 0);
  EXPECT_TRUE(restored_exactly(work / "r", files_under(src)));
}

// Backups to two destinations, each with its autobackup, rebuilt from both at once.
TEST(CatalogRebuildCli, SeveralMediaAtOnce) {
  TempDir work("sb-rebuild-two");
  const std::string cat = work / "cat";
  make_file(work / "s1/a.dbf", 2u << 20, 1);
  make_file(work / "s2/b.dbf", 3u << 20, 2);
  SB_ASSERT_EXIT(sb({"backup", work / "s1", "--to", work / "p1", "--catalog", cat}), 0);
  SB_ASSERT_EXIT(sb({"backup", work / "s2", "--to", work / "p2", "--catalog", cat}), 0);
  const std::string before = essentials(list_json(cat), true);
  fs::remove_all(cat);
  SB_ASSERT_EXIT(sb({"catalog", "rebuild", "--from", work / "p1", "--from", work / "p2",
                     "--catalog", cat}), 0);
  EXPECT_EQ(essentials(list_json(cat), true), before);
  SB_ASSERT_EXIT(sb({"restore", "--to", work / "r", "--catalog", cat}), 0);
  auto files = files_under(work / "s1");
  for (const auto& f : files_under(work / "s2")) files.push_back(f);
  std::sort(files.begin(), files.end());
  EXPECT_TRUE(restored_exactly(work / "r", files, {work / "s1", work / "s2"}));
}

// Autobackups: the newest two per catalog on a destination; never taken for pieces by the
// leftover warning or by validate.
TEST(CatalogAutobackup, NewestTwoKeptAndNeverTakenForPieces) {
  TempDir work("sb-autobackup");
  const std::string src = work / "src", cat = work / "cat", p = work / "p";
  make_file(src + "/a.dbf", 2u << 20, 1);
  for (int i = 0; i < 3; ++i) SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat}), 0);
  auto names = autobackups_in(p);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_TRUE(contains(names[0], "-2.sbcat"));
  EXPECT_TRUE(contains(names[1], "-3.sbcat"));
  const std::string cid = list_json(cat)["catalog_id"].as_string();
  EXPECT_TRUE(contains(names[1], "sb-catalog-" + cid + "-"));
  // A leftover piece of a killed backup is named; the autobackups are not.
  make_file(p + "/.tmp-not-a-piece", 10, 1);
  auto b = sb({"backup", src, "--to", p, "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(b, 0);
  // The document must outlive the loop: a range-for keeps only the last temporary alive.
  const Json bj = parse_json(b);
  for (const auto& w : bj["warnings"].items())
    EXPECT_FALSE(contains(w.as_string(), ".sbcat")) << w.as_string();
  SB_EXPECT_EXIT(sb({"validate", "--catalog", cat}), 0);
  // The autobackup of an encrypted backup holds no path in the clear.
  SB_ASSERT_EXIT(sb({"keygen", work / "k"}), 0);
  make_file(src + "/secret-name.dbf", 1u << 20, 3);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", work / "enc", "--catalog", cat, "--encrypt",
                     "--key-file", work / "k"}), 0);
  auto enc = autobackups_in(work / "enc");
  ASSERT_EQ(enc.size(), 1u);
  std::ifstream in(work / "enc/" + enc[0], std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.find("secret-name"), std::string::npos);
}

TEST(CatalogCompact, DropsDamageAndKeepsEveryBackup) {
  TempDir work("sb-compact");
  const std::string src = work / "src", cat = work / "cat", p = work / "p";
  make_file(src + "/a.dbf", 3u << 20, 1);
  make_file(src + "/b.dbf", 1u << 20, 2);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat, "--tag", "one"}), 0);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat, "--tag", "two"}), 0);
  const std::string before = essentials(list_json(cat), true);
  // A torn tail: half a record's worth of garbage at the end of the log.
  {
    std::ofstream f(cat + "/catalog.log", std::ios::app | std::ios::binary);
    f << std::string("SBC1 torn record bytes");
  }
  const uint64_t damaged = size_of(cat + "/catalog.log");
  auto c = sb({"catalog", "compact", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(c, 0);
  Json j = parse_json(c);
  EXPECT_EQ(*j["damaged_bytes"].as_u64(), 22u);
  EXPECT_EQ(*j["backups_after"].as_u64(), 2u);
  EXPECT_EQ(j["records_after"].as_u64(), j["records_before"].as_u64());
  ASSERT_EQ(j["saved"].size(), 1u);
  EXPECT_TRUE(exists(j["saved"][0].as_string()));
  EXPECT_EQ(size_of(cat + "/catalog.log"), damaged - 22);
  EXPECT_EQ(essentials(list_json(cat), true), before);
  auto l = sb({"list", "--catalog", cat});
  EXPECT_FALSE(contains(l.err, "torn"));
  SB_ASSERT_EXIT(sb({"restore", "--to", work / "r", "--catalog", cat}), 0);
  EXPECT_TRUE(restored_tree(work / "r", src));
  // The compacted log takes appends as before.
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat}), 0);
  EXPECT_EQ(list_json(cat)["backups"].size(), 3u);
}

class CatalogCompactKilled : public ::testing::TestWithParam<const char*> {};

TEST_P(CatalogCompactKilled, LeavesACatalogWithEveryBackup) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  TempDir work("sb-compact-kill");
  const std::string src = work / "src", cat = work / "cat", p = work / "p";
  make_file(src + "/a.dbf", 2u << 20, 1);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat}), 0);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", p, "--catalog", cat}), 0);
  {
    std::ofstream f(cat + "/catalog.log", std::ios::app | std::ios::binary);
    f << std::string(100, 'x');
  }
  const std::string before = essentials(list_json(cat), true);
  auto c = sb({"catalog", "compact", "--catalog", cat}, {{"STRIPEBACK_CRASH_AT", GetParam()}});
  EXPECT_EQ(c.term_signal, SIGKILL) << c.describe();
  EXPECT_EQ(essentials(list_json(cat), true), before);
  SB_ASSERT_EXIT(sb({"restore", "--to", work / "r", "--catalog", cat}), 0);
  EXPECT_TRUE(restored_tree(work / "r", src));
  // A compaction after the killed one finishes the job (its temporary file is replaced).
  SB_ASSERT_EXIT(sb({"catalog", "compact", "--catalog", cat}), 0);
  EXPECT_FALSE(exists(cat + "/catalog.log.compact"));
  EXPECT_EQ(essentials(list_json(cat), true), before);
}

INSTANTIATE_TEST_SUITE_P(CrashPoints, CatalogCompactKilled,
                         ::testing::Values("catalog-compact-written", "catalog-compact-renamed"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string n = p.param;
                           return n == "catalog-compact-written" ? std::string("AfterTempFile")
                                                                  : std::string("AfterRename");
                         });

}  // namespace
}  // namespace stripeback::it
