// Pieces and catalogs written by earlier builds, kept in tests/fixtures/: every later
// version must list, validate and restore them identical.
//   v1  stripeback 0.1 (piece format 1, catalog format 1)
//   v2  the build before the storage redesign (8c6532d: piece format 2, catalog identity)
//   v3  incremental backups (piece format 3 with digest maps and trailer version 2,
//       catalog payload version 3): each of the three backups is a level 0
//   v4  key slots (the encrypted backup's pieces in piece format 4, the others still 3);
//       the catalog autobackups the backups wrote beside their pieces were left out
//   v5  data frames without a payload CRC32C (the plain and compressed backups' pieces in
//       piece format 5, the encrypted one's still 4); autobackups left out as in v4
//
// The fixtures were made by this file's FormatFixtures.DISABLED_Write with
//   SB_FIXTURE_VERSION=v2 SB_FIXTURE_BIN=<that build's stripeback>
//   SB_FIXTURE_OUT=$PWD/tests/fixtures/v2 integration_test
//     --gtest_also_run_disabled_tests --gtest_filter='FormatFixtures.DISABLED_Write'
// from a source made by make_v1_source() under root_of(version), where the tests put the
// pieces back (the catalog records their absolute locations).
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "engine/format/piece_format.h"
#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMtime = 1700000000123456789;

std::string root_of(const std::string& version) { return "/tmp/stripeback-format-" + version; }

// Small files, one starting with a zero MiB (a zero frame), a directory and an empty file.
void make_v1_source(const std::string& src) {
  make_file(src + "/a.dbf", (1u << 20) + 100000, 71, 0640, kMtime);
  make_file(src + "/sub/b.dbf", 90000, 72, 0600, kMtime + 1);
  make_file(src + "/sub/empty", 0, 73, 0644, kMtime + 2);
  std::string zeros(1u << 20, '\0');
  FILE* f = std::fopen((src + "/a.dbf").c_str(), "r+");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fseek(f, 0, SEEK_SET), 0);
  ASSERT_EQ(std::fwrite(zeros.data(), 1, zeros.size(), f), zeros.size());
  std::fclose(f);
  timespec ts[2] = {{0, UTIME_OMIT}, {kMtime / 1000000000, kMtime % 1000000000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (src + "/a.dbf").c_str(), ts, 0), 0);
}

std::string fixtures_of(const std::string& version) {
  return std::string(STRIPEBACK_SOURCE_DIR) + "/tests/fixtures/" + version;
}

const char* const kKinds[] = {"plain", "compressed", "encrypted"};

TEST(FormatFixtures, DISABLED_Write) {
  const char* out = std::getenv("SB_FIXTURE_OUT");
  ASSERT_NE(out, nullptr) << "set SB_FIXTURE_OUT to the fixture directory";
  const char* v = std::getenv("SB_FIXTURE_VERSION");
  ASSERT_NE(v, nullptr) << "set SB_FIXTURE_VERSION (v1, v2, ...)";
  const char* with = std::getenv("SB_FIXTURE_BIN");  // the build that writes them
  const std::string kRoot = root_of(v);
  fs::remove_all(kRoot);
  make_v1_source(std::string(kRoot) + "/src");
  fs::copy_file(fixtures_of("v1") + "/k.key", std::string(kRoot) + "/k.key");
  for (const std::string kind : kKinds) {
    std::vector<std::string> args{"backup", std::string(kRoot) + "/src", "--to",
                                  std::string(kRoot) + "/p-" + kind, "--catalog",
                                  std::string(kRoot) + "/cat", "--tag", kind, "--channels", "2"};
    if (kind == "compressed") args.insert(args.end(), {"--compress", "low"});
    // From v3 on, level 0 backups: digest maps in the pieces, levels in the catalog.
    if (std::string(v) >= "v3") args.insert(args.end(), {"--level", "0", "--change-unit", "64K"});
    if (kind == "encrypted")
      args.insert(args.end(), {"--encrypt", "--key-file", std::string(kRoot) + "/k.key"});
    if (with) {
      args.insert(args.begin(), with);
      stripeback::testing::Subprocess p(args);
      SB_ASSERT_EXIT(p.wait(), 0);
    } else {
      SB_ASSERT_EXIT(sb(args), 0);
    }
  }
  fs::remove_all(std::string(out) + "/cat");
  for (const std::string kind : kKinds) fs::remove_all(std::string(out) + "/p-" + kind);
  fs::copy(kRoot, out, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::remove_all(std::string(out) + "/src");
  fs::remove(std::string(out) + "/cat/lock");
}

class FormatBase : public ::testing::Test {
 protected:
  explicit FormatBase(std::string version)
      : version_(std::move(version)), kRoot(root_of(version_)) {}
  void SetUp() override {
    const std::string fixtures = fixtures_of(version_);
    ASSERT_TRUE(fs::exists(fixtures + "/cat/catalog.log"))
        << "the committed fixtures are missing from " << fixtures;
    fs::remove_all(kRoot);
    fs::create_directories(kRoot);
    fs::copy(fixtures, kRoot, fs::copy_options::recursive);
    ASSERT_EQ(::chmod(key().c_str(), 0600), 0);  // a checkout does not keep the mode
    make_v1_source(t_ / "src");
  }
  void TearDown() override { fs::remove_all(kRoot); }
  std::string cat() const { return kRoot + "/cat"; }
  std::string key() const { return kRoot + "/k.key"; }
  std::string version_;
  std::string kRoot;
  TempDir t_{"sbit-format"};
};

class FormatV1 : public FormatBase {
 protected:
  FormatV1() : FormatBase("v1") {}
};

class FormatFixture : public FormatBase, public ::testing::WithParamInterface<const char*> {
 protected:
  FormatFixture() : FormatBase(GetParam()) {}
};

INSTANTIATE_TEST_SUITE_P(Versions, FormatFixture,
                         ::testing::Values("v1", "v2", "v3", "v4", "v5"));

TEST_P(FormatFixture, CatalogListsTheThreeBackupsComplete) {
  RunResult l = sb({"list", "--catalog", cat(), "--json"});
  SB_ASSERT_EXIT(l, 0);
  Json j = parse_json(l);
  ASSERT_EQ(j["backups"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["backups"][i]["tag"].as_string(), kKinds[i]);
    EXPECT_EQ(j["backups"][i]["status"].as_string(), "complete");
    EXPECT_EQ(*j["backups"][i]["files"].as_u64(), 3u);
  }
}

TEST_P(FormatFixture, EveryBackupValidatesAndRestoresIdentical) {
  for (const std::string kind : kKinds) {
    std::vector<std::string> keys;
    if (kind == "encrypted") keys = {"--key-file", key()};
    std::vector<std::string> v{"validate", "--catalog", cat(), "--tag", kind};
    v.insert(v.end(), keys.begin(), keys.end());
    SB_EXPECT_EXIT(sb(v), 0);
    std::string target = t_ / ("r-" + kind);
    std::vector<std::string> r{"restore", "--catalog", cat(), "--tag", kind, "--to", target};
    r.insert(r.end(), keys.begin(), keys.end());
    SB_ASSERT_EXIT(sb(r), 0);
    std::string orig = std::string(kRoot) + "/src";
    for (const char* f : {"/a.dbf", "/sub/b.dbf", "/sub/empty"}) {
      EXPECT_EQ(stripeback::testing::read_file(target + orig + f),
                stripeback::testing::read_file(t_ / "src" + std::string(f)))
          << kind << f;
      struct stat st {};
      ASSERT_EQ(::stat((target + orig + f).c_str(), &st), 0);
      EXPECT_EQ(st.st_mtim.tv_sec, kMtime / 1000000000) << kind << f;
    }
  }
}

class FormatV5 : public FormatBase {
 protected:
  FormatV5() : FormatBase("v5") {}
};

// The v5 fixture is what it says: the plain and compressed backups' pieces in format 5 with
// digest-only data frames, the encrypted one's in format 4 with a CRC32C over every sealed
// frame.
TEST_F(FormatV5, UnencryptedPiecesAreFormat5AndTheirDataFramesHaveNoPayloadChecksum) {
  for (const std::string kind : kKinds) {
    size_t data = 0;
    for (const auto& piece : pieces_in(kRoot + "/p-" + kind)) {
      const std::string bytes = stripeback::testing::read_file(piece);
      const auto* b = reinterpret_cast<const std::byte*>(bytes.data());
      auto head = engine::decode_piece_header({b, engine::kBlock});
      ASSERT_TRUE(head.has_value()) << piece;
      EXPECT_EQ(head->version, kind == "encrypted" ? 4 : 5) << piece;
      for (uint64_t p = engine::first_frame_offset(*head); p + engine::kBlock <= bytes.size();) {
        auto h = engine::decode_frame_header({b + p, engine::kBlock});
        ASSERT_TRUE(h.has_value()) << piece << " at " << p;
        if (h->type == engine::FrameType::trailer) break;
        if (h->type == engine::FrameType::data) {
          ++data;
          EXPECT_EQ(h->digest_only, kind != "encrypted") << piece << " at " << p;
        }
        p += engine::kBlock + engine::align_up(h->stored_len);
      }
    }
    EXPECT_GT(data, 0u) << kind;
  }
}

class FormatV3 : public FormatBase {
 protected:
  FormatV3() : FormatBase("v3") {}
};

// A level 1 made now builds on the version-3 level 0 (its digest map read from the old
// piece) and the chain restores identical to the changed source.
TEST_F(FormatV3, LevelOneBuildsOnTheOldLevelZero) {
  const std::string src = kRoot + "/src";
  make_v1_source(src);
  const std::string page(8192, 'x');
  FILE* f = std::fopen((src + "/a.dbf").c_str(), "r+");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fseek(f, 300000, SEEK_SET), 0);
  ASSERT_EQ(std::fwrite(page.data(), 1, page.size(), f), page.size());
  std::fclose(f);
  RunResult b = sb({"backup", src, "--to", kRoot + "/p-l1", "--catalog", cat(), "--level", "1",
                    "--encrypt", "--key-file", key(), "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  ASSERT_EQ(j["parents"].size(), 1u) << b.out;
  EXPECT_EQ(*j["parents"][0].as_u64(), 3u) << "the newest level 0: the encrypted one";
  for (const auto& fc : j["file_changes"].items())
    if (fc["path"].as_string() == src + "/a.dbf") {
      EXPECT_EQ(fc["change"].as_string(), "changed");
      EXPECT_EQ(*fc["units_written"].as_u64(), 1u);
    }
  std::string target = t_ / "r-l1";
  SB_ASSERT_EXIT(sb({"restore", "--catalog", cat(), "--to", target, "--key-file", key()}), 0);
  for (const char* name : {"/a.dbf", "/sub/b.dbf", "/sub/empty"})
    EXPECT_EQ(stripeback::testing::read_file(target + src + name),
              stripeback::testing::read_file(src + name))
        << name;
}

// A rekey of a catalog of version 3 pieces: the encrypted backup's pieces keep their key in
// their checksummed header, so they are reported as needing a rewrite and their new wrap
// is in the catalog only. The new key restores them through it; this catalog no longer
// takes the old key (the pieces themselves, read without it, still would).
TEST_F(FormatV3, RekeyReportsFormat3PiecesAndTheNewKeyOpensThemThroughTheCatalog) {
  const std::string k2 = kRoot + "/k2.key";
  SB_ASSERT_EXIT(sb({"keygen", k2}), 0);
  RunResult r = sb({"rekey", "--catalog", cat(), "--key-file", key(), "--new-key-file", k2,
                    "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(*j["old_format"].as_u64(), 2u) << r.out;
  EXPECT_EQ(*j["unencrypted"].as_u64(), 4u);
  EXPECT_EQ(*j["rewrapped"].as_u64(), 0u);
  for (const auto& p : j["pieces"].items()) {
    if (p["outcome"].as_string() == "old_format") {
      EXPECT_NE(p["detail"].as_string().find("piece format version 3"), std::string::npos);
    }
  }
  RunResult text = sb({"list", "--catalog", cat()});
  SB_EXPECT_EXIT(text, 0);
  EXPECT_TRUE(contains(text.out, "2 piece(s) open with key version 2 only through the catalog"));
  const std::string target = t_ / "r-new";
  SB_ASSERT_EXIT(sb({"restore", "--catalog", cat(), "--tag", "encrypted", "--to", target,
                     "--key-file", k2}),
                 0);
  for (const char* f : {"/a.dbf", "/sub/b.dbf", "/sub/empty"})
    EXPECT_EQ(stripeback::testing::read_file(target + kRoot + "/src" + f),
              stripeback::testing::read_file(t_ / "src" + std::string(f)))
        << f;
  RunResult old = sb({"restore", "--catalog", cat(), "--tag", "encrypted", "--to",
                      t_ / "r-old", "--key-file", key()});
  SB_EXPECT_EXIT(old, 4);
  EXPECT_TRUE(contains(old.err, "wrong passphrase or key"));
}

// The first backup into the version-1 catalog gives it an identity and names its pieces
// with it; the version-1 pieces beside them (no catalog id) are never named as leftovers,
// and the old backups still validate.
TEST_F(FormatV1, NewBackupGivesTheCatalogAnIdentityAndNamesNoOldPiece) {
  RunResult l0 = sb({"list", "--catalog", cat(), "--json"});
  SB_ASSERT_EXIT(l0, 0);
  EXPECT_EQ(parse_json(l0).find("catalog_id"), nullptr) << l0.out;
  const std::string dest = std::string(kRoot) + "/p-plain";
  const auto old_pieces = pieces_in(dest);
  ASSERT_FALSE(old_pieces.empty());
  RunResult b = sb({"backup", t_ / "src", "--to", dest, "--catalog", cat(), "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json bj = parse_json(b);
  EXPECT_TRUE(warnings_with(bj, "remain in").empty()) << b.out;
  RunResult l = sb({"list", "--catalog", cat(), "--json"});
  SB_ASSERT_EXIT(l, 0);
  Json lj = parse_json(l);
  const std::string id = lj["catalog_id"].as_string();
  ASSERT_EQ(id.size(), 16u) << l.out;
  ASSERT_EQ(lj["backups"].size(), 4u);
  for (const auto& p : pieces_in(dest)) {
    const std::string name = fs::path(p).filename().string();
    bool old = std::find(old_pieces.begin(), old_pieces.end(), p) != old_pieces.end();
    EXPECT_EQ(name.find("-" + id + "-") != std::string::npos, !old) << name;
  }
  SB_EXPECT_EXIT(sb({"validate", "--catalog", cat(), "--tag", "plain"}), 0);
  SB_EXPECT_EXIT(sb({"validate", "--catalog", cat(), "--backup", "4"}), 0);
}

}  // namespace
}  // namespace stripeback::it
