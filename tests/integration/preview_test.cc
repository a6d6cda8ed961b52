// restore --preview and validate --preview: the plan the job would run (backups, pieces and
// their media, bytes to read, files to write, a time estimate), with nothing read but the
// pieces' indexes and nothing written: no target, no journal, the catalog unchanged byte
// for byte. The bytes it says are the bytes the job then reads; it refuses what the job
// refuses, with the same exit code.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every file below `dir` and its bytes.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> m;
  for (const auto& f : files_under(dir)) m[f] = read_all(f);
  return m;
}

struct Fixture {
  TempDir work{"sb-preview"};
  std::string src = work / "src", cat = work / "cat", pieces = work / "pieces",
              target = work / "target";

  explicit Fixture(std::vector<std::string> extra = {}) {
    make_file(src + "/a.dbf", (5u << 20) + 4096, 1);
    make_file(src + "/sub/b.dbf", (2u << 20) + 77, 2);
    make_file(src + "/c.dbf", 9000, 3);
    std::vector<std::string> a{"backup", src, "--to", pieces, "--catalog", cat,
                               "--files-per-set", "1"};
    a.insert(a.end(), extra.begin(), extra.end());
    auto b = sb(a);
    EXPECT_TRUE(b.exited(0)) << b.describe();
  }
  RunResult run(const std::string& cmd, std::vector<std::string> extra) {
    std::vector<std::string> a{cmd, "--catalog", cat};
    if (cmd == "restore") a.insert(a.end(), {"--to", target});
    a.insert(a.end(), extra.begin(), extra.end());
    return sb(a);
  }
};

uint64_t u64(const Json& j, const char* key) { return j[key].as_u64().value_or(~0ull); }

TEST(Preview, SaysTheBytesTheRestoreThenReadsAndWritesNothing) {
  Fixture fx;
  const auto catalog_before = snapshot(fx.cat);
  auto p = fx.run("restore", {"--preview", "--json"});
  SB_ASSERT_EXIT(p, 0);
  EXPECT_FALSE(exists(fx.target)) << "the preview created the target";
  EXPECT_EQ(snapshot(fx.cat), catalog_before) << "the preview changed the catalog";
  Json pj = parse_json(p);
  EXPECT_EQ(pj["operation"].as_string(), "restore");
  EXPECT_TRUE(pj["preview"].as_bool());
  EXPECT_EQ(u64(pj, "files"), 3u);
  ASSERT_EQ(pj["backups"].size(), 1u);
  EXPECT_EQ(pj["pieces"].size(), pieces_in(fx.pieces).size());
  for (const auto& piece : pj["pieces"].items()) {
    EXPECT_EQ(piece["medium"].as_string(), "disk");
    EXPECT_EQ(piece["location"].as_string(), fx.pieces);
    EXPECT_GT(*piece["bytes_to_read"].as_u64(), 0u);
  }
  std::set<std::string> planned;
  for (const auto& f : pj["planned_files"].items()) {
    planned.insert(f["path"].as_string());
    EXPECT_EQ(f["target"].as_string(), fx.target + f["path"].as_string());
    EXPECT_EQ(*f["bytes"].as_u64(), file_size(f["path"].as_string()));
  }
  EXPECT_EQ(planned, (std::set<std::string>{fx.src + "/a.dbf", fx.src + "/c.dbf",
                                            fx.src + "/sub/b.dbf"}));
  uint64_t sum = 0;
  for (const auto& piece : pj["pieces"].items()) sum += *piece["bytes_to_read"].as_u64();
  EXPECT_EQ(sum, u64(pj, "piece_bytes_read"));

  auto r = fx.run("restore", {"--json"});
  SB_ASSERT_EXIT(r, 0);
  Json rj = parse_json(r);
  EXPECT_EQ(u64(pj, "piece_bytes_read"), u64(rj, "piece_bytes_read"));
  EXPECT_EQ(u64(pj, "bytes"), u64(rj, "bytes"));
  EXPECT_EQ(u64(pj, "files"), u64(rj, "files"));
  EXPECT_TRUE(restored_tree(fx.target, fx.src));
}

TEST(Preview, EstimatesFromTheHistoryOfRestoresOnTheMediumOrSaysThereIsNone) {
  Fixture fx;
  auto first = fx.run("restore", {"--preview"});
  SB_ASSERT_EXIT(first, 0);
  EXPECT_TRUE(contains(first.out, "restore preview: 3 files"));
  EXPECT_TRUE(contains(first.out, "nothing was read or written"));
  EXPECT_TRUE(contains(first.out, "estimate: none"));
  EXPECT_TRUE(contains(first.out, "no finished restore from disk in the catalog's history"));
  auto none = parse_json(fx.run("restore", {"--preview", "--json"}));
  EXPECT_TRUE(none["estimate"]["seconds"].is_null());
  ASSERT_EQ(none["estimate"]["media"].size(), 1u);
  EXPECT_EQ(*none["estimate"]["media"][0]["jobs"].as_u64(), 0u);

  SB_ASSERT_EXIT(fx.run("restore", {}), 0);
  auto after = fx.run("restore", {"--preview", "--json", "--force"});
  SB_ASSERT_EXIT(after, 0);
  Json j = parse_json(after);
  ASSERT_FALSE(j["estimate"]["seconds"].is_null()) << after.out;
  EXPECT_GT(j["estimate"]["seconds"].as_double(), 0.0);
  EXPECT_EQ(j["estimate"]["media"][0]["medium"].as_string(), "disk");
  EXPECT_EQ(*j["estimate"]["media"][0]["jobs"].as_u64(), 1u);
}

TEST(Preview, OfALevelOneListsItsParentAndItsPieces) {
  Fixture fx({"--level", "0", "--change-unit", "64K"});
  const auto level0_pieces = pieces_in(fx.pieces);
  {
    std::fstream f(fx.src + "/a.dbf", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1 << 20);
    f.write("changed", 7);
  }
  auto b1 = sb({"backup", fx.src, "--to", fx.pieces, "--catalog", fx.cat, "--level", "1",
                "--json"});
  SB_ASSERT_EXIT(b1, 0);
  const uint64_t level1 = backup_id_of(parse_json(b1));
  auto p = fx.run("restore", {"--preview", "--json", "--backup", std::to_string(level1)});
  SB_ASSERT_EXIT(p, 0);
  Json pj = parse_json(p);
  ASSERT_EQ(pj["backups"].size(), 2u) << p.out;
  EXPECT_EQ(*pj["backups"][0]["level"].as_u64(), 0u);
  EXPECT_TRUE(pj["backups"][0]["parent"].as_bool());
  EXPECT_EQ(*pj["backups"][1]["id"].as_u64(), level1);
  EXPECT_FALSE(pj["backups"][1]["parent"].as_bool());
  std::set<std::string> parent_pieces;
  for (const auto& piece : pj["pieces"].items())
    if (*piece["backup_id"].as_u64() != level1) parent_pieces.insert(piece["name"].as_string());
  // a.dbf changed in one unit: the rest of it, and the unchanged files, come from level 0.
  EXPECT_FALSE(parent_pieces.empty()) << p.out;
  for (const auto& name : parent_pieces)
    EXPECT_NE(std::find(level0_pieces.begin(), level0_pieces.end(), fx.pieces + "/" + name),
              level0_pieces.end())
        << name;
  EXPECT_FALSE(exists(fx.target));
  auto r = fx.run("restore", {"--json", "--backup", std::to_string(level1)});
  SB_ASSERT_EXIT(r, 0);
  Json rj = parse_json(r);
  EXPECT_EQ(u64(pj, "piece_bytes_read"), u64(rj, "piece_bytes_read"));
  EXPECT_EQ(u64(pj, "bytes"), u64(rj, "bytes"));
  EXPECT_TRUE(restored_tree(fx.target, fx.src));
}

TEST(Preview, OfAValidationListsWhatItWouldCheckAndRecordsNothing) {
  Fixture fx;
  const auto catalog_before = snapshot(fx.cat);
  auto p = fx.run("validate", {"--preview", "--json"});
  SB_ASSERT_EXIT(p, 0);
  EXPECT_EQ(snapshot(fx.cat), catalog_before) << "the preview recorded a check";
  Json pj = parse_json(p);
  EXPECT_EQ(pj["operation"].as_string(), "validate");
  EXPECT_EQ(pj["check_mode"].as_string(), "full");
  EXPECT_FALSE(pj.has("target"));
  EXPECT_EQ(u64(pj, "files"), 3u);
  uint64_t sizes = 0;
  for (const auto& piece : pj["pieces"].items()) {
    EXPECT_TRUE(piece["whole"].as_bool()) << "a full validation walks each piece whole";
    EXPECT_EQ(*piece["bytes_to_read"].as_u64(), *piece["bytes"].as_u64());
    sizes += *piece["bytes"].as_u64();
  }
  EXPECT_EQ(sizes, total_size(pieces_in(fx.pieces)));
  auto text = fx.run("validate", {"--preview"});
  SB_ASSERT_EXIT(text, 0);
  EXPECT_TRUE(contains(text.out, "validate preview: 3 files"));
  EXPECT_TRUE(contains(text.out, "to check (full)"));
  // A sample reads only its frames: less than the whole pieces.
  auto sample = parse_json(fx.run("validate", {"--preview", "--json", "--sample", "10%",
                                               "--seed", "1"}));
  EXPECT_LT(u64(sample, "piece_bytes_read"), sizes);
}

TEST(Preview, RefusesWhatTheRestoreRefusesWithTheSameExitCode) {
  Fixture fx;
  const std::vector<std::vector<std::string>> cases{
      {"/no/such/file"},
      {"--backup", "99"},
      {"--tag", "nope"},
  };
  for (const auto& args : cases) {
    SCOPED_TRACE(::testing::PrintToString(args));
    auto with = args;
    with.push_back("--preview");
    auto p = fx.run("restore", with);
    auto r = fx.run("restore", args);
    EXPECT_FALSE(p.exited(0)) << p.describe();
    EXPECT_EQ(p.exit_code, r.exit_code);
    EXPECT_EQ(p.err, r.err);
    EXPECT_FALSE(exists(fx.target));
    auto v = fx.run("validate", with);
    EXPECT_EQ(v.exit_code, fx.run("validate", args).exit_code);
  }
  // A file in the way: refused without --force, as the restore refuses it.
  make_file(fx.target + fx.src + "/c.dbf", 10, 9);
  auto p = fx.run("restore", {"--preview"});
  SB_EXPECT_EXIT(p, 2);
  EXPECT_TRUE(contains(p.err, "refusing to overwrite 1 existing file(s)"));
  SB_EXPECT_EXIT(fx.run("restore", {"--preview", "--force"}), 0);
}

TEST(Preview, HelpExplainsTheFlags) {
  auto r = sb({"restore", "--help"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "--preview"));
  EXPECT_TRUE(contains(r.out, "--remap"));
  auto v = sb({"validate", "--help"});
  SB_ASSERT_EXIT(v, 0);
  EXPECT_TRUE(contains(v.out, "--preview"));
}

}  // namespace
}  // namespace stripeback::it
