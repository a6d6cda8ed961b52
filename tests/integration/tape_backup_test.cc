// Backup to and restore from tgtd's virtual tape drives (scripts/tape-server.sh): three
// drives with 16 MiB tapes, so end of medium comes after a few MiB.
#include <gtest/gtest.h>

#include "backends/tape/drive.h"
#include <filesystem>
#include <set>

#include "tests/integration/it_util.h"
#include "tests/support/tape_server.h"

namespace stripeback::it {
namespace {

using stripeback::testing::TapeServer;

const bool kConfigured = [] {
  TapeServer::configure({.drives = 3, .size_mib = 16});
  return true;
}();

class TapeBackup : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& urls = TapeServer::urls();
    if (urls.empty()) GTEST_SKIP() << TapeServer::skip_reason();
    for (const auto& u : urls) drive.push_back("tape:" + u);
    cat = tmp / "cat";
  }
  void label(size_t i, const std::string& id, const std::string& bs = "256K") {
    auto r = sb({"tape", "label", drive[i], "--volume", id, "--tape-block-size", bs, "--force"});
    ASSERT_TRUE(r.exited(0)) << r.describe();
  }
  // Files under tmp/src of the given sizes.
  std::string make_source(const std::vector<uint64_t>& sizes) {
    std::string src = tmp / "src";
    for (size_t i = 0; i < sizes.size(); ++i)
      make_file(src + "/f" + std::to_string(i) + ".dbf", sizes[i], static_cast<uint32_t>(i + 1));
    return src;
  }
  Json list_json() {
    auto r = sb({"list", "--catalog", cat, "--json"});
    EXPECT_TRUE(r.exited(0)) << r.describe();
    return parse_json(r);
  }
  TempDir tmp;
  std::string cat;
  std::vector<std::string> drive;
};

TEST_F(TapeBackup, TwoDrivesRoundTrip) {
  label(0, "RT-A");
  label(1, "RT-B");
  std::string src = make_source({5u << 20, 3u << 20, (2u << 20) + 777, 0});
  auto b = sb({"backup", src, "--to", drive[0], "--to", drive[1], "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  EXPECT_EQ(j["status"].as_string(), "complete");
  ASSERT_EQ(j["channels"].size(), 2u);
  for (size_t c = 0; c < 2; ++c) {
    const Json& t = j["channels"][c]["tape"];
    EXPECT_EQ(t["io"].as_string(), "async");
    EXPECT_GT(*t["bytes"].as_u64(), 0u);
    EXPECT_GT(t["write_mb_s"].as_double(), 0.0);
    EXPECT_TRUE(t.has("stalls"));
  }
  auto r = sb({"restore", "--to", tmp / "r", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(tmp / "r", src));
  EXPECT_EQ(parse_json(r)["tape_pieces"].size(), 2u);
}

// Restore streams each piece straight from its tape, one channel per drive at once, and
// writes nothing outside the target: no spool (TMPDIR and a --tape-spool directory, which
// is only accepted for old scripts, stay empty).
TEST_F(TapeBackup, TwoDrivesRestoreAtOnceWithoutASpool) {
  label(0, "PAR-A");
  label(1, "PAR-B");
  std::string src = make_source({6u << 20, 6u << 20, 1u << 20, 1u << 20});
  auto b = sb({"backup", src, "--to", drive[0], "--to", drive[1], "--catalog", cat});
  SB_ASSERT_EXIT(b, 0);
  std::string tmpdir = tmp / "tmpdir", spool = tmp / "spool";
  std::filesystem::create_directories(tmpdir);
  std::filesystem::create_directories(spool);
  auto r = sb({"restore", "--to", tmp / "r", "--catalog", cat, "--tape-spool", spool, "--json"},
              {{"TMPDIR", tmpdir}});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(tmp / "r", src));
  EXPECT_TRUE(std::filesystem::is_empty(tmpdir)) << "something was staged in TMPDIR";
  EXPECT_TRUE(std::filesystem::is_empty(spool)) << "something was staged in the spool";
  Json j = parse_json(r);
  ASSERT_EQ(j["channels"].size(), 2u) << r.out;
  double begin[2], end[2];
  for (size_t c = 0; c < 2; ++c) {
    const Json& ch = j["channels"][c];
    EXPECT_GT(*ch["files"].as_u64(), 0u) << r.out;
    EXPECT_GT(*ch["bytes_read"].as_u64(), 6u << 20) << r.out;
    begin[c] = ch["start_s"].as_double();
    end[c] = begin[c] + ch["elapsed_s"].as_double();
  }
  // Both channels ran at the same time: each began before the other ended.
  EXPECT_LT(begin[0], end[1]) << r.out;
  EXPECT_LT(begin[1], end[0]) << r.out;
  EXPECT_EQ(j["tape_pieces"].size(), 2u);
}

// Compression and encryption work the same on tape: the stream holds sealed frames, a
// wrong key is refused before anything is restored, the right one restores identical.
TEST_F(TapeBackup, CompressedEncryptedRoundTrip) {
  label(0, "ENC-1");
  std::string src = make_source({(4u << 20) + 5, 2u << 20});
  std::string key = tmp / "k.key", other = tmp / "other.key";
  SB_ASSERT_EXIT(sb({"keygen", key}), 0);
  SB_ASSERT_EXIT(sb({"keygen", other}), 0);
  auto b = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--json", "--compress",
               "medium", "--encrypt", "--key-file", key});
  SB_ASSERT_EXIT(b, 0);
  EXPECT_EQ(parse_json(b)["encryption"].as_string(), "aes-256-gcm (key file)");
  auto wrong = sb({"restore", "--to", tmp / "r", "--catalog", cat, "--key-file", other});
  SB_EXPECT_EXIT(wrong, 4);
  EXPECT_FALSE(exists(tmp / "r"));
  auto r = sb({"restore", "--to", tmp / "r", "--catalog", cat, "--key-file", key});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(tmp / "r", src));
}

TEST_F(TapeBackup, SyncIoAndTextStatsArePerDrive) {
  label(0, "SYNC-1");
  std::string src = make_source({3u << 20});
  auto b = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--tape-io", "sync"});
  SB_ASSERT_EXIT(b, 0);
  EXPECT_TRUE(contains(b.out, "tape: drive " + drive[0].substr(5) + ", io sync"));
  EXPECT_TRUE(contains(b.out, "stalls"));
  auto a = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(a, 0);
  EXPECT_EQ(parse_json(a)["channels"][0]["tape"]["io"].as_string(), "async");
}

TEST_F(TapeBackup, BlockSizeRejectedNamingBothNumbers) {
  label(0, "BS-A");
  std::string src = make_source({1u << 20});
  auto b = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--tape-block-size", "1000000"});
  SB_EXPECT_EXIT(b, 2);
  EXPECT_TRUE(contains(b.err, "tape block size 1000000"));
  EXPECT_TRUE(contains(b.err, "granularity 512"));
  auto big = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--tape-block-size", "4M"});
  SB_EXPECT_EXIT(big, 2);
  EXPECT_TRUE(contains(big.err, "4194304"));
  EXPECT_TRUE(contains(big.err, "1048576"));
  // Refused before anything was written: no backup in the catalog.
  auto l = sb({"list", "--catalog", cat, "--json"});
  EXPECT_FALSE(contains(l.out, "\"id\":1").operator bool()) << l.out;
}

TEST_F(TapeBackup, UnlabelledTapeIsRefusedWithTheFix) {
  std::string src = make_source({1u << 20});
  auto b = sb({"backup", src, "--to", drive[2], "--catalog", cat});
  SB_EXPECT_EXIT(b, 2);
  EXPECT_TRUE(contains(b.err, "no Stripeback label"));
  EXPECT_TRUE(contains(b.err, "stripeback tape label --volume"));
}

TEST_F(TapeBackup, WrittenAtOneBlockSizeReadWithAnotherSetting) {
  label(0, "BS64");
  std::string src = make_source({(3u << 20) + 4096, 1u << 20});
  auto b = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--tape-block-size", "64K"});
  SB_ASSERT_EXIT(b, 0);
  {
    // Today's drive setting differs: the restore must not depend on it.
    auto d = tape::TapeDrive::open(drive[0]);
    ASSERT_TRUE(d) << d.error().what;
    ASSERT_TRUE((*d)->set_block_size(1u << 20));
    ASSERT_EQ(*(*d)->block_size(), 1u << 20);
  }
  auto r = sb({"restore", "--to", tmp / "r", "--catalog", cat});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(tmp / "r", src));
  auto st = sb({"tape", "status", drive[0], "--json"});
  EXPECT_EQ(parse_json(st)["label"]["block_size"].as_u64(), 65536u);
}

TEST_F(TapeBackup, EndOfMediumSpansToTheNextVolumeAndRestoresAcrossIt) {
  label(0, "SPAN-1");
  label(1, "SPAN-2");
  // 22 MiB on a 16 MiB tape: the piece continues on the second volume.
  std::string src = make_source({12u << 20, 10u << 20});
  auto b = sb({"backup", src, "--to", drive[0], "--tape-volumes", drive[1], "--catalog", cat,
               "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  EXPECT_EQ(j["channels"][0]["tape"]["volume_changes"].as_u64(), 1u);
  auto r = sb({"restore", "--to", tmp / "r", "--catalog", cat});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(tmp / "r", src));
}

TEST_F(TapeBackup, RestoreLooksForVolumesInTheDrivesGiven) {
  label(0, "ELSEWHERE");
  label(1, "WANTED");
  std::string src = make_source({2u << 20});
  SB_ASSERT_EXIT(sb({"backup", src, "--to", drive[1], "--catalog", cat}), 0);
  // Searched by label: the first drive holds another volume, the second the one needed.
  auto found = sb({"restore", "--to", tmp / "r0", "--catalog", cat, "--tape-drive", drive[0],
                   "--tape-drive", drive[1]});
  SB_ASSERT_EXIT(found, 0);
  EXPECT_TRUE(restored_tree(tmp / "r0", src));
  // The volume is gone from its drive: both ways fail naming what was found.
  label(1, "OTHER");
  auto bad = sb({"restore", "--to", tmp / "r1", "--catalog", cat});
  SB_EXPECT_EXIT(bad, 1);
  EXPECT_TRUE(contains(bad.err, "holds volume OTHER, expected volume WANTED"));
  auto none = sb({"restore", "--to", tmp / "r2", "--catalog", cat, "--tape-drive", drive[0],
                  "--tape-drive", drive[1]});
  SB_EXPECT_EXIT(none, 1);
  EXPECT_TRUE(contains(none.err, "volume WANTED is in none of the drives given"));
}

TEST_F(TapeBackup, EndOfMediumWithoutAnotherVolumeFailsClearly) {
  label(2, "FULL-1");
  std::string src = make_source({12u << 20, 10u << 20});
  auto b = sb({"backup", src, "--to", drive[2], "--catalog", cat, "--json"});
  SB_EXPECT_EXIT(b, 1);
  EXPECT_TRUE(contains(b.err, "needs another volume"));
  // Nothing incomplete is marked complete.
  Json l = list_json();
  ASSERT_EQ(l["backups"].size(), 1u);
  EXPECT_EQ(l["backups"][0]["status"].as_string(), "failed");
  auto r = sb({"restore", "--to", tmp / "r", "--catalog", cat});
  EXPECT_FALSE(r.exited(0)) << r.describe();
}

TEST_F(TapeBackup, RestoreFromTheMiddleOfATapeReadsNoEarlierPiece) {
  label(0, "MID-1");
  // About one file per piece: sizes decide the order (largest first), one file open at a
  // time. A file's record goes to the piece open when the file is opened, so a file's
  // pieces are the one before its data and the one with its data.
  std::string src = make_source({(3u << 20) + 300000, (3u << 20) + 200000,
                                 (3u << 20) + 100000, 3u << 20});
  auto b = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--max-open-files", "1",
               "--max-piece-size", "4M", "--json"});
  SB_ASSERT_EXIT(b, 0);
  ASSERT_EQ(parse_json(b)["pieces"].as_u64(), 4u);
  const std::string third = src + "/f2.dbf";
  auto r = sb({"restore", "--to", tmp / "r", "--catalog", cat, "--json", third});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  std::string read;
  for (const auto& p : j["tape_pieces"].items()) read += p.as_string() + " ";
  EXPECT_FALSE(contains(read, "-p1.sbp")) << read;  // never read through the first piece
  EXPECT_FALSE(contains(read, "-p4.sbp")) << read;
  EXPECT_TRUE(contains(read, "-p3.sbp")) << read;
  EXPECT_LT(*j["tape_bytes_read"].as_u64(), 8u << 20);
  EXPECT_TRUE(restored_exactly(tmp / "r", {third}));
}

TEST_F(TapeBackup, SecondBackupAppendsAfterTheFirst) {
  label(0, "APP-1");
  std::string src = make_source({2u << 20, 1u << 20});
  SB_ASSERT_EXIT(sb({"backup", src, "--to", drive[0], "--catalog", cat, "--tag", "one"}), 0);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", drive[0], "--catalog", cat, "--tag", "two"}), 0);
  for (const char* tag : {"one", "two"}) {
    std::string dir = tmp / (std::string("r-") + tag);
    auto r = sb({"restore", "--to", dir, "--catalog", cat, "--tag", tag});
    SB_ASSERT_EXIT(r, 0);
    EXPECT_TRUE(restored_tree(dir, src));
  }
  // Another block size than the volume's data is refused, naming both.
  auto other = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--tape-block-size", "64K"});
  SB_EXPECT_EXIT(other, 2);
  EXPECT_TRUE(contains(other.err, "block size 262144, not 65536"));
}

// Incrementals on tape: the level 1 finds its parent's digests in the maps kept with the
// catalog (the level 0's tape is not read again), writes only the changed units, and each
// backup of the chain restores identical to the tree at its time, every piece of the chain
// read once from tape.
TEST_F(TapeBackup, LevelZeroAndLevelOneRestoreIdenticalFromTheChain) {
  label(0, "INC-1");
  std::string src = make_source({3u << 20, (2u << 20) + 777, 1u << 20});
  auto l0 = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--level", "0",
                "--compress", "low", "--json"});
  SB_ASSERT_EXIT(l0, 0);
  const uint64_t id0 = backup_id_of(parse_json(l0));
  EXPECT_TRUE(exists(cat + "/maps/" + std::to_string(id0) + ".sbmap"));
  std::string snap = tmp / "snap0";
  std::filesystem::copy(src, snap, std::filesystem::copy_options::recursive);
  // Two 8 KiB pages of f0 and one of f1 change; f2 stays.
  for (auto [name, at] : std::vector<std::pair<std::string, long>>{
           {"/f0.dbf", 8192}, {"/f0.dbf", 2l << 20}, {"/f1.dbf", 1l << 20}}) {
    FILE* f = std::fopen((src + name).c_str(), "r+");
    ASSERT_NE(f, nullptr);
    std::fseek(f, at, SEEK_SET);
    std::fputs(std::string(8192, 'c').c_str(), f);
    std::fclose(f);
  }
  auto l1 = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--level", "1",
                "--compress", "low", "--json"});
  SB_ASSERT_EXIT(l1, 0);
  Json j1 = parse_json(l1);
  const uint64_t id1 = backup_id_of(j1);
  ASSERT_EQ(j1["parents"].size(), 1u) << l1.out;
  EXPECT_EQ(*j1["parents"][0].as_u64(), id0);
  uint64_t units = 0;
  for (const auto& fc : j1["file_changes"].items()) units += *fc["units_written"].as_u64();
  EXPECT_EQ(units, 3u) << "three 64 KiB units changed";
  EXPECT_LT(*j1["bytes_written"].as_u64(), 1u << 20) << "the level 1 holds only the changes";

  auto r1 = sb({"restore", "--to", tmp / "r1", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(r1, 0);
  EXPECT_TRUE(restored_tree(tmp / "r1", src));
  Json rj = parse_json(r1);
  std::set<uint64_t> used;
  for (const auto& b : rj["backups"].items()) used.insert(*b["id"].as_u64());
  EXPECT_EQ(used, (std::set<uint64_t>{id0, id1}));
  auto v = sb({"validate", "--catalog", cat, "--backup", std::to_string(id1)});
  SB_EXPECT_EXIT(v, 0);
  // Frames out of order are what a tape cannot give: a sampled validation says so.
  auto some = sb({"validate", "--catalog", cat, "--backup", std::to_string(id1), "--sample", "10%"});
  SB_EXPECT_EXIT(some, 2);
  EXPECT_TRUE(contains(some.err, "reads frames out of order, which removable media cannot"))
      << some.err;
  auto r0 = sb({"restore", "--to", tmp / "r0", "--catalog", cat, "--backup", std::to_string(id0)});
  SB_ASSERT_EXIT(r0, 0);
  for (const char* name : {"/f0.dbf", "/f1.dbf", "/f2.dbf"})
    EXPECT_EQ(stripeback::testing::read_file(tmp / "r0" + src + name),
              stripeback::testing::read_file(snap + name))
        << name;

  // Without the maps kept with the catalog the chain cannot be put together: the restore
  // names what is missing, and a new level 1 backs everything up whole, saying why.
  std::filesystem::remove(cat + "/maps/" + std::to_string(id0) + ".sbmap");
  auto bad = sb({"restore", "--to", tmp / "r2", "--catalog", cat});
  SB_EXPECT_EXIT(bad, 1);
  EXPECT_TRUE(contains(bad.err, "are not kept with the catalog")) << bad.err;
}

// An encrypted chain on tape: the maps kept with the catalog are sealed like the pieces
// (no digest in the clear), and the chain restores with the key, not without it.
TEST_F(TapeBackup, EncryptedLevelOneOnTapeKeepsItsMapsSealed) {
  label(0, "INC-E");
  std::string src = make_source({2u << 20, 1u << 20});
  std::string key = tmp / "k.key";
  SB_ASSERT_EXIT(sb({"keygen", key}), 0);
  auto l0 = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--level", "0", "--encrypt",
                "--key-file", key, "--json"});
  SB_ASSERT_EXIT(l0, 0);
  const std::string maps = cat + "/maps/" + std::to_string(backup_id_of(parse_json(l0))) + ".sbmap";
  ASSERT_TRUE(exists(maps));
  EXPECT_FALSE(contains(stripeback::testing::read_file(maps), "SBMAPS01"))
      << "the maps of an encrypted backup are sealed";
  EXPECT_FALSE(contains(stripeback::testing::read_file(maps), src)) << "no path in the clear";
  FILE* f = std::fopen((src + "/f1.dbf").c_str(), "r+");
  ASSERT_NE(f, nullptr);
  std::fputs(std::string(8192, 'e').c_str(), f);
  std::fclose(f);
  auto l1 = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--level", "1", "--encrypt",
                "--key-file", key, "--json"});
  SB_ASSERT_EXIT(l1, 0);
  Json j1 = parse_json(l1);
  ASSERT_EQ(j1["parents"].size(), 1u) << l1.out;
  auto none = sb({"restore", "--to", tmp / "r-none", "--catalog", cat});
  SB_EXPECT_EXIT(none, 2);
  EXPECT_TRUE(contains(none.err, "--key-file")) << none.err;
  auto r = sb({"restore", "--to", tmp / "r", "--catalog", cat, "--key-file", key});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(tmp / "r", src));
}

TEST_F(TapeBackup, NotReadyDriveGivesWaitStateAndError) {
  label(0, "NR-1");
  ASSERT_EQ(TapeServer::tgtadm({"--lld", "iscsi", "--mode", "logicalunit", "--op", "update",
                                "--tid", "1", "--lun", "1", "--params", "online=0"}),
            0);
  std::string src = make_source({1u << 20});
  auto b = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--tape-wait", "1"});
  SB_EXPECT_EXIT(b, 1);
  EXPECT_TRUE(contains(b.err, "waiting for tape"));
  EXPECT_TRUE(contains(b.err, "not ready"));
  EXPECT_TRUE(contains(b.err, drive[0].substr(5)));
}

TEST(TapeBackupUsage, ASourceAfterToIsNotADestination) {
  TempDir tmp;
  make_file(tmp / "src/a", 1000, 1);
  auto r = sb({"backup", "--to", tmp / "pieces", tmp / "src", "--catalog", tmp / "cat"});
  SB_EXPECT_EXIT(r, 0);
  EXPECT_FALSE(pieces_in(tmp / "pieces").empty());
}

TEST(TapeBackupUsage, MixedDestinationsAreRefused) {
  auto r = sb({"backup", "/etc/hostname", "--to", "/tmp/x", "--to", "tape:/dev/sg9"});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "mixes tape drives and directories"));
  TempDir tmp;
  auto v = sb({"backup", "/etc/hostname", "--to", tmp / "p", "--catalog", tmp / "c",
               "--tape-volumes", "tape:/dev/sg9"});
  SB_EXPECT_EXIT(v, 2);
  EXPECT_TRUE(contains(v.err, "--tape-volumes needs --to tape:URL"));
}

// Tape settings with a directory as --to would be ignored: refused as bad usage naming the
// flag, before the catalog or the directory is created.
TEST(TapeBackupUsage, TapeFlagsWithADirectoryAreRefused) {
  TempDir tmp;
  make_file(tmp / "src/a", 1000, 1);
  for (const std::vector<std::string>& flag : std::vector<std::vector<std::string>>{
           {"--tape-block-size", "64K"}, {"--tape-io", "sync"}, {"--tape-wait", "5"}}) {
    auto r = sb({"backup", tmp / "src", "--to", tmp / "pieces", "--catalog", tmp / "cat",
                 flag[0], flag[1]});
    SB_EXPECT_EXIT(r, 2);
    EXPECT_TRUE(contains(r.err, flag[0] + " needs --to tape:URL")) << r.describe();
    EXPECT_TRUE(contains(r.err, tmp / "pieces")) << r.describe();
  }
  EXPECT_FALSE(exists(tmp / "cat"));
  EXPECT_FALSE(exists(tmp / "pieces"));
}

}  // namespace
}  // namespace stripeback::it

namespace stripeback::it {
namespace {

// backup --label-blank labels a blank tape itself, with a generated volume id that the
// summary shows and the tape's label then holds.
TEST_F(TapeBackup, LabelBlankLabelsABlankTapeWithAGeneratedId) {
  std::string src = make_source({2u << 20});
  auto refused = sb({"backup", src, "--to", drive[2], "--catalog", cat});
  SB_EXPECT_EXIT(refused, 2);
  EXPECT_TRUE(contains(refused.err, "--label-blank"));
  auto b = sb({"backup", src, "--to", drive[2], "--label-blank", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  ASSERT_EQ(j["labelled_volumes"].size(), 1u);
  const std::string id = j["labelled_volumes"][0]["volume"].as_string();
  EXPECT_TRUE(id.starts_with("SB") && id.size() == 10) << id;
  auto st = sb({"tape", "status", drive[2], "--json"});
  SB_ASSERT_EXIT(st, 0);
  EXPECT_EQ(parse_json(st)["label"]["volume"].as_string(), id);
  // A labelled tape is not labelled again.
  auto again = sb({"backup", src, "--to", drive[2], "--label-blank", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(again, 0);
  EXPECT_FALSE(parse_json(again).has("labelled_volumes"));
  SB_ASSERT_EXIT(sb({"restore", "--to", tmp / "r", "--catalog", cat}), 0);
  EXPECT_TRUE(restored_tree(tmp / "r", src));
}

// Retention on tape: delete obsolete removes the records of backups on a volume, and a
// volume whose every piece is gone is written again from its start (it would be full
// otherwise: two 6 MiB backups fill most of a 16 MiB tape).
TEST_F(TapeBackup, DeleteObsoleteFreesAVolumeForReuse) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAKE_NOW");
  label(0, "RU-A");
  label(1, "RU-B");
  const std::string src = tmp / "src";
  auto nightly = [&](int day, size_t d) {
    make_file(src + "/a.dbf", 6u << 20, static_cast<uint32_t>(100 + day));
    const std::string when = "2026-11-0" + std::to_string(day) + "T02:00:00Z";
    return sb({"backup", src, "--to", drive[d], "--catalog", cat, "--json"},
              {{"STRIPEBACK_FAKE_NOW", when}});
  };
  SB_ASSERT_EXIT(nightly(1, 0), 0);
  SB_ASSERT_EXIT(nightly(2, 0), 0);
  SB_ASSERT_EXIT(nightly(3, 1), 0);
  SB_ASSERT_EXIT(sb({"configure", "retention", "redundancy", "1", "--catalog", cat}), 0);
  auto rep = sb({"report", "obsolete", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(rep, 0);
  ASSERT_EQ(parse_json(rep)["backups"].size(), 2u);
  SB_ASSERT_EXIT(sb({"delete", "obsolete", "--catalog", cat}), 0);
  Json l = list_json();
  ASSERT_EQ(l["backups"].size(), 1u);
  EXPECT_EQ(*l["backups"][0]["backup_id"].as_u64(), 3u);
  auto b4 = nightly(4, 0);
  SB_ASSERT_EXIT(b4, 0);
  SB_ASSERT_EXIT(sb({"restore", "--to", tmp / "r", "--catalog", cat}), 0);
  EXPECT_TRUE(restored_tree(tmp / "r", src));
  SB_ASSERT_EXIT(sb({"validate", "--catalog", cat, "--backup", "3"}), 0);
}

// Crosscheck on tape: a piece is found by its header on its volume (--deep reads it whole);
// once the tape is relabelled (erased), the backup is expired and restore says so.
TEST_F(TapeBackup, CrosscheckFindsPiecesOnTapeAndExpiresAnErasedOne) {
  label(0, "CC-A");
  std::string src = make_source({3u << 20});
  SB_ASSERT_EXIT(sb({"backup", src, "--to", drive[0], "--catalog", cat}), 0);
  auto quick = sb({"crosscheck", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(quick, 0);
  Json q = parse_json(quick);
  ASSERT_EQ(q["pieces"].size(), 1u);
  EXPECT_EQ(q["pieces"][0]["status"].as_string(), "available");
  auto deep = sb({"crosscheck", "--deep", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(deep, 0);
  Json d = parse_json(deep);
  EXPECT_EQ(d["pieces"][0]["status"].as_string(), "available");
  EXPECT_GE(*d["bytes_read"].as_u64(), 3u << 20);
  label(0, "CC-A");  // relabelling erases what the tape held
  auto gone = sb({"crosscheck", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(gone, 0);
  EXPECT_EQ(parse_json(gone)["pieces"][0]["status"].as_string(), "expired");
  auto r = sb({"restore", "--to", tmp / "r", "--catalog", cat});
  EXPECT_TRUE(r.exited(2)) << r.describe();
  EXPECT_TRUE(contains(r.err, "expired"));
}


// The catalog lost: `catalog rebuild --from tape:...` reads each volume from its start and
// re-creates every backup on it, a piece that spans two volumes and an encrypted backup
// appended after it included; restores from the rebuilt catalog give identical files (the
// directories' attributes are not in the pieces: docs/media-management.md), the next
// backup appends after the last piece found, and a second rebuild adds nothing.
TEST_F(TapeBackup, CatalogRebuiltFromTapesRestoresIdentical) {
  label(0, "RB-1");
  label(1, "RB-2");
  std::string src = make_source({12u << 20, 10u << 20});
  auto b1 = sb({"backup", src, "--to", drive[0], "--tape-volumes", drive[1], "--catalog", cat,
                "--json"});
  SB_ASSERT_EXIT(b1, 0);
  Json j1 = parse_json(b1);
  ASSERT_EQ(j1["channels"][0]["tape"]["volume_changes"].as_u64(), 1u) << "the piece spans";
  const uint64_t id1 = backup_id_of(j1);
  std::string src2 = tmp / "src2";
  make_file(src2 + "/a.dbf", (1u << 20) + 4097, 7);
  make_file(src2 + "/b.dbf", 300000, 8);
  std::string key = tmp / "k.key";
  SB_ASSERT_EXIT(sb({"keygen", key}), 0);
  auto b2 = sb({"backup", src2, "--to", drive[1], "--catalog", cat, "--json", "--compress",
                "low", "--encrypt", "--key-file", key});
  SB_ASSERT_EXIT(b2, 0);
  const uint64_t id2 = backup_id_of(parse_json(b2));
  Json before = list_json();

  std::filesystem::remove_all(cat);
  // Without the key the encrypted pieces cannot be read: nothing is written.
  auto nokey = sb({"catalog", "rebuild", "--from", drive[1], "--from", drive[0], "--catalog",
                   cat, "--json"});
  SB_EXPECT_EXIT(nokey, 2);
  EXPECT_TRUE(contains(nokey.err, "key")) << nokey.err;
  auto rb = sb({"catalog", "rebuild", "--from", drive[1], "--from", drive[0], "--catalog", cat,
                "--key-file", key, "--json"});
  SB_ASSERT_EXIT(rb, 0);
  Json rj = parse_json(rb);
  EXPECT_EQ(rj["added"].as_u64(), 2u) << rb.out;
  for (const auto& m : rj["media"].items()) EXPECT_EQ(m["unreadable"].size(), 0u) << rb.out;
  for (const auto& b : rj["backups"].items())
    EXPECT_EQ(b["status"].as_string(), "complete") << rb.out;

  Json after = list_json();
  ASSERT_EQ(after["backups"].size(), before["backups"].size());
  for (size_t i = 0; i < after["backups"].size(); ++i) {
    const Json& x = before["backups"][i];
    const Json& y = after["backups"][i];
    EXPECT_EQ(*y["id"].as_u64(), *x["id"].as_u64());
    EXPECT_EQ(*y["files"].as_u64(), *x["files"].as_u64());
    EXPECT_EQ(*y["pieces"].as_u64(), *x["pieces"].as_u64());
    EXPECT_EQ(*y["bytes_written"].as_u64(), *x["bytes_written"].as_u64());
  }
  // The rebuild, given the key, sealed the new catalog: the plain backup's restore gives
  // the key too (it verifies the catalog and seals its job record).
  auto r1 = sb({"restore", "--to", tmp / "r1", "--catalog", cat, "--backup", std::to_string(id1),
                "--key-file", key});
  SB_ASSERT_EXIT(r1, 0);
  EXPECT_TRUE(restored_exactly(tmp / "r1", files_under(src)));
  auto r2 = sb({"restore", "--to", tmp / "r2", "--catalog", cat, "--backup", std::to_string(id2),
                "--key-file", key});
  SB_ASSERT_EXIT(r2, 0);
  EXPECT_TRUE(restored_exactly(tmp / "r2", files_under(src2)));

  // The rebuilt catalog knows where the volume's data ends: a new backup appends after it.
  std::string src3 = tmp / "src3";
  make_file(src3 + "/c.dbf", 2u << 20, 9);
  // An unencrypted backup seals its records in the sealed catalog with the configured key.
  SB_ASSERT_EXIT(sb({"configure", "key-file", key, "--catalog", cat, "--key-file", key}), 0);
  SB_ASSERT_EXIT(sb({"backup", src3, "--to", drive[1], "--catalog", cat}), 0);
  auto again = sb({"restore", "--to", tmp / "r2b", "--catalog", cat, "--backup",
                   std::to_string(id2), "--key-file", key});
  SB_ASSERT_EXIT(again, 0);
  EXPECT_TRUE(restored_exactly(tmp / "r2b", files_under(src2)));

  auto twice = sb({"catalog", "rebuild", "--from", drive[0], "--from", drive[1], "--catalog",
                   cat, "--key-file", key, "--json"});
  SB_ASSERT_EXIT(twice, 0);
  EXPECT_EQ(parse_json(twice)["added"].as_u64(), 0u) << twice.out;
}

// A level 0 and a level 1 on tape, catalog lost: the rebuild finds the chain from the map
// frames of the pieces, keeps the maps with the new catalog, and the chain restores identical.
TEST_F(TapeBackup, LevelChainRebuiltFromTapeRestoresIdentical) {
  label(0, "RB-INC");
  std::string src = make_source({3u << 20, (2u << 20) + 777});
  SB_ASSERT_EXIT(sb({"backup", src, "--to", drive[0], "--catalog", cat, "--level", "0"}), 0);
  FILE* f = std::fopen((src + "/f0.dbf").c_str(), "r+");
  ASSERT_NE(f, nullptr);
  std::fseek(f, 1l << 20, SEEK_SET);
  std::fputs(std::string(8192, 'z').c_str(), f);
  std::fclose(f);
  auto l1 = sb({"backup", src, "--to", drive[0], "--catalog", cat, "--level", "1", "--json"});
  SB_ASSERT_EXIT(l1, 0);
  const uint64_t id1 = backup_id_of(parse_json(l1));
  std::filesystem::remove_all(cat);
  auto rb = sb({"catalog", "rebuild", "--from", drive[0], "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(rb, 0);
  EXPECT_EQ(parse_json(rb)["added"].as_u64(), 2u) << rb.out;
  EXPECT_TRUE(exists(cat + "/maps/" + std::to_string(id1) + ".sbmap"));
  auto r = sb({"restore", "--to", tmp / "r", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_exactly(tmp / "r", files_under(src)));
  EXPECT_EQ(parse_json(r)["backups"].size(), 2u) << "restored through the chain: " << r.out;
}

// A volume holding only its label: the rebuild reads it, finds nothing and adds nothing.
TEST_F(TapeBackup, CatalogRebuildOfAnEmptyVolumeAddsNothing) {
  label(2, "RB-X");
  auto rb = sb({"catalog", "rebuild", "--from", drive[2], "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(rb, 0);
  Json j = parse_json(rb);
  EXPECT_EQ(j["added"].as_u64(), 0u);
  ASSERT_EQ(j["media"].size(), 1u);
  EXPECT_EQ(j["media"][0]["pieces_found"].as_u64(), 0u);
  EXPECT_EQ(j["media"][0]["unreadable"].size(), 0u);
}

}  // namespace
}  // namespace stripeback::it
