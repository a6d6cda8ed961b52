// Media management (docs/media-management.md): configure, retention (report and delete
// obsolete) over a week of nightly backups on a fake clock, crash-safe deletion, crosscheck
// and delete expired, restore falling back to an older copy, reused tags, a fresh install.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kMiB = 1 << 20;

std::string night(int day) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2026-11-%02dT02:00:00Z", day);
  return buf;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Flips a byte in the middle of `piece`: inside a data frame's payload.
void damage_middle(const std::string& piece) {
  const auto size = std::filesystem::file_size(piece);
  std::fstream f(piece, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(size / 2));
  const char c = static_cast<char>(f.get());
  f.seekp(static_cast<std::streamoff>(size / 2));
  f.put(static_cast<char>(c ^ 0x5a));
}

std::set<uint64_t> ids_in(const Json& array, const char* key = "backup_id") {
  std::set<uint64_t> out;
  for (const auto& b : array.items()) out.insert(*b[key].as_u64());
  return out;
}

class Media : public ::testing::Test {
 protected:
  RunResult run(std::vector<std::string> args, const Env& env = {}) {
    args.push_back("--catalog");
    args.push_back(t_ / "cat");
    return sb(args, env);
  }
  Json json(std::vector<std::string> args, int code = 0, const Env& env = {}) {
    args.push_back("--json");
    RunResult r = run(args, env);
    EXPECT_TRUE(r.exited(code)) << r.describe();
    return parse_json(r);
  }
  // A nightly backup on `day` (fake clock); returns its id.
  uint64_t nightly(int day, std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"backup", t_ / "src", "--to", t_ / "dest", "--tag", "nightly"};
    a.insert(a.end(), extra.begin(), extra.end());
    if (std::find(a.begin(), a.end(), "--channels") == a.end()) {
      a.push_back("--channels");
      a.push_back("2");
    }
    Json j = json(a, 0, {{"STRIPEBACK_FAKE_NOW", night(day)}});
    return backup_id_of(j);
  }
  std::set<uint64_t> listed() { return ids_in(json({"list"})["backups"]); }
  // The backup ids the pieces on the destination belong to (by their names).
  std::set<uint64_t> ids_on_disk() {
    std::set<uint64_t> out;
    for (const auto& n : base_names(pieces_in(t_ / "dest")))
      out.insert(std::stoull(n.substr(2, n.find('-') - 2)));
    return out;
  }
  TempDir t_{"sbit-media"};
};

TEST_F(Media, AWeekUnderRedundancyTwoKeepsTwoWholeCopies) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAKE_NOW");
  make_file(t_ / "src/a.dbf", 3 * kMiB, 1);
  make_file(t_ / "src/b.dbf", 2 * kMiB, 2);
  for (int d = 1; d <= 7; ++d) {
    // a changes every night, b never
    make_file(t_ / "src/a.dbf", 3 * kMiB, static_cast<uint32_t>(10 + d));
    nightly(d);
  }
  SB_ASSERT_EXIT(run({"configure", "retention", "redundancy", "2"}), 0);
  Json shown = json({"configure", "--show"});
  EXPECT_EQ(shown["settings"]["retention"].as_string(), "redundancy 2");
  Json rep = json({"report", "obsolete"}, 0, {{"STRIPEBACK_FAKE_NOW", night(8)}});
  EXPECT_EQ(ids_in(rep["backups"]), (std::set<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{1, 2, 3, 4, 5, 6, 7})) << "a report removes nothing";
  Json dry = json({"delete", "obsolete", "--dry-run"});
  EXPECT_EQ(ids_in(dry["backups"]), ids_in(rep["backups"]));
  EXPECT_EQ(listed().size(), 7u) << "a dry run removes nothing";
  Json del = json({"delete", "obsolete"});
  EXPECT_TRUE(del["complete"].as_bool());
  EXPECT_EQ(del["pieces"].size(), 10u) << "2 channels x 5 backups";
  EXPECT_EQ(listed(), (std::set<uint64_t>{6, 7}));
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{6, 7}));
  SB_ASSERT_EXIT(run({"restore", "--to", t_ / "r"}), 0);
  EXPECT_TRUE(restored_tree(t_ / "r", t_ / "src"));
  // Nothing more is obsolete, and a second delete deletes nothing.
  EXPECT_EQ(json({"delete", "obsolete"})["backups"].size(), 0u);
}

TEST_F(Media, AThreeDayRecoveryWindowKeepsWhatARestoreToItsStartNeeds) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAKE_NOW");
  make_file(t_ / "src/a.dbf", 2 * kMiB, 1);
  for (int d = 1; d <= 7; ++d) {
    make_file(t_ / "src/a.dbf", 2 * kMiB, static_cast<uint32_t>(20 + d));
    nightly(d);
  }
  SB_ASSERT_EXIT(run({"configure", "retention", "recovery-window", "3"}), 0);
  // On day 8 at 01:00 the window starts on day 5 at 01:00: the backups of days 5-7 are in
  // it, day 4's is the restore point at its start; days 1-3 are obsolete.
  const Env at{{"STRIPEBACK_FAKE_NOW", "2026-11-08T01:00:00Z"}};
  Json rep = json({"report", "obsolete"}, 0, at);
  EXPECT_EQ(ids_in(rep["backups"]), (std::set<uint64_t>{1, 2, 3}));
  Json del = json({"delete", "obsolete"}, 0, at);
  EXPECT_EQ(listed(), (std::set<uint64_t>{4, 5, 6, 7}));
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{4, 5, 6, 7}));
  // A day later, day 4 goes too.
  Json later = json({"report", "obsolete"}, 0, {{"STRIPEBACK_FAKE_NOW", "2026-11-09T01:00:00Z"}});
  EXPECT_EQ(ids_in(later["backups"]), (std::set<uint64_t>{4}));
}

TEST_F(Media, AnIncrementalsParentIsNeverObsolete) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAKE_NOW");
  make_file(t_ / "src/a.dbf", 4 * kMiB, 1);
  nightly(1, {"--level", "0"});
  for (int d = 2; d <= 3; ++d) {
    make_file(t_ / "src/a.dbf", 4 * kMiB, static_cast<uint32_t>(30 + d));
    nightly(d, {"--level", "1"});
  }
  make_file(t_ / "src/a.dbf", 4 * kMiB, 40);
  const uint64_t zero = nightly(4, {"--level", "0"});
  make_file(t_ / "src/a.dbf", 4 * kMiB, 41);
  const uint64_t one = nightly(5, {"--level", "1"});
  // A window of 0 days keeps only the newest copy: the level 1, which needs its level 0.
  SB_ASSERT_EXIT(run({"configure", "retention", "recovery-window", "0"}), 0);
  Json rep = json({"report", "obsolete"}, 0, {{"STRIPEBACK_FAKE_NOW", night(6)}});
  EXPECT_EQ(ids_in(rep["backups"]), (std::set<uint64_t>{1, 2, 3}));
  SB_ASSERT_EXIT(run({"delete", "obsolete"}, {{"STRIPEBACK_FAKE_NOW", night(6)}}), 0);
  EXPECT_EQ(listed(), (std::set<uint64_t>{zero, one}));
  SB_ASSERT_EXIT(run({"restore", "--to", t_ / "r"}), 0);
  EXPECT_TRUE(restored_tree(t_ / "r", t_ / "src"));
}

TEST_F(Media, PiecesOfAKilledBackupAreOrphansThatDeleteObsoleteRemoves) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT and STRIPEBACK_FAKE_NOW");
  make_file(t_ / "src/a.dbf", 3 * kMiB, 1);
  make_file(t_ / "src/b.dbf", 3 * kMiB, 2);
  nightly(1);
  RunResult killed = run({"backup", t_ / "src", "--to", t_ / "dest", "--channels", "2"},
                         {{"STRIPEBACK_CRASH_AT", "piece-synced:2"},
                          {"STRIPEBACK_FAKE_NOW", night(2)}});
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed.describe();
  ASSERT_EQ(ids_on_disk(), (std::set<uint64_t>{1, 2}));
  // The pieces of backup 2 the catalog recorded before the kill (each channel records its
  // piece after syncing it, so the kill may come before one record or both).
  auto pieces_of_2 = [&] {
    std::set<std::string> out;
    for (const auto& n : base_names(pieces_in(t_ / "dest")))
      if (n.starts_with("sb2-")) out.insert(n);
    return out;
  };
  std::set<std::string> recorded;
  Json mid = json({"list"});
  for (const auto& p : mid["backups"][1]["piece_list"].items()) recorded.insert(p["name"].as_string());
  // Within its resume window (7 days by default) the killed backup can still be resumed:
  // it is not obsolete, and delete obsolete leaves the pieces it recorded (those it did
  // not record are of no use to a resume: orphans).
  Json early = json({"report", "obsolete"}, 0, {{"STRIPEBACK_FAKE_NOW", night(8)}});
  EXPECT_TRUE(ids_in(early["backups"]).empty());
  SB_ASSERT_EXIT(run({"delete", "obsolete"}, {{"STRIPEBACK_FAKE_NOW", night(8)}}), 0);
  EXPECT_EQ(pieces_of_2(), recorded);
  // A shorter window, configured, has passed by day 8.
  SB_ASSERT_EXIT(run({"configure", "resume-window", "5.5"}), 0);
  Json rep = json({"report", "obsolete"}, 0, {{"STRIPEBACK_FAKE_NOW", night(8)}});
  ASSERT_EQ(ids_in(rep["backups"]), (std::set<uint64_t>{2}));
  EXPECT_TRUE(contains(rep["backups"][0]["reason"].as_string(), "died"));
  EXPECT_TRUE(contains(rep["backups"][0]["reason"].as_string(), "resume window"));
  EXPECT_EQ(rep["pieces"].size(), recorded.size()) << "the pieces it recorded";
  SB_ASSERT_EXIT(run({"delete", "obsolete"}, {{"STRIPEBACK_FAKE_NOW", night(8)}}), 0);
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{1}));
  EXPECT_EQ(listed(), (std::set<uint64_t>{1}));
  RunResult bad = run({"configure", "resume-window", "soon"});
  SB_EXPECT_EXIT(bad, 2);
  EXPECT_TRUE(contains(bad.err, "is not a number of days"));
}

// A delete killed at each of its durability points, then run again, ends as one that was
// never interrupted; in between the catalog opens and the backups are "deleting".
TEST_F(Media, DeleteObsoleteKilledAtAnyPointIsFinishedByARerun) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT and STRIPEBACK_FAKE_NOW");
  make_file(t_ / "src/a.dbf", 2 * kMiB, 1);
  for (const std::string point : {"delete-intent-recorded", "delete-pieces-removed"}) {
    SCOPED_TRACE(point);
    std::filesystem::remove_all(t_ / "cat");
    std::filesystem::remove_all(t_ / "dest");
    for (int d = 1; d <= 4; ++d) nightly(d);
    SB_ASSERT_EXIT(run({"configure", "retention", "redundancy", "1"}), 0);
    RunResult k = run({"delete", "obsolete"}, {{"STRIPEBACK_CRASH_AT", point}});
    ASSERT_EQ(k.term_signal, SIGKILL) << k.describe();
    Json mid = json({"list"});
    for (const auto& b : mid["backups"].items())
      EXPECT_EQ(b["status"].as_string(), *b["backup_id"].as_u64() == 4 ? "complete" : "deleting");
    Json again = json({"restore", "--to", t_ / ("r-" + point)});
    EXPECT_EQ(ids_in(again["backups"]), (std::set<uint64_t>{4})) << "never from a deleting backup";
    Json rerun = json({"delete", "obsolete"});
    EXPECT_EQ(*rerun["finished_earlier_deletions"].as_u64(), 1u);
    EXPECT_EQ(listed(), (std::set<uint64_t>{4}));
    EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{4}));
  }
}

TEST_F(Media, AMovedPieceIsExpiredAndTheRestoreFallsBackSayingSo) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAKE_NOW");
  make_file(t_ / "src/a.dbf", 3 * kMiB, 1);
  make_file(t_ / "src/b.dbf", 2 * kMiB, 2);
  nightly(1, {"--channels", "1"});
  const std::string before = t_ / "old-a";
  std::filesystem::copy_file(t_ / "src/a.dbf", before);
  make_file(t_ / "src/a.dbf", 3 * kMiB, 3);
  nightly(2, {"--channels", "1"});
  Json ok = json({"crosscheck"});
  EXPECT_EQ(ids_in(ok["backups"]), (std::set<uint64_t>{1, 2}));
  for (const auto& p : ok["pieces"].items()) EXPECT_EQ(p["status"].as_string(), "available");
  // The newest backup's piece goes away.
  std::string moved;
  for (const auto& p : pieces_in(t_ / "dest"))
    if (base_names({p})[0].starts_with("sb2-")) moved = p;
  ASSERT_FALSE(moved.empty());
  std::filesystem::rename(moved, t_ / "away.sbp");
  Json cc = json({"crosscheck"});
  for (const auto& b : cc["backups"].items())
    EXPECT_EQ(b["status"].as_string(), *b["backup_id"].as_u64() == 2 ? "expired" : "available");
  Json l = json({"list"});
  ASSERT_EQ(l["backups"].size(), 2u);
  EXPECT_EQ(l["backups"][1]["status"].as_string(), "expired");
  EXPECT_EQ(l["backups"][1]["piece_list"][0]["status"].as_string(), "expired");
  EXPECT_TRUE(contains(l["backups"][1]["piece_list"][0]["reason"].as_string(), "missing"));
  // Restore takes each file from backup 1 and says why; older data than the newest exits 6
  // (--allow-fallback: 0).
  Json r = json({"restore", "--to", t_ / "r"}, 6);
  SB_EXPECT_EXIT(run({"restore", "--to", t_ / "r-allowed", "--allow-fallback"}), 0);
  EXPECT_EQ(r["status"].as_string(), "complete");
  ASSERT_EQ(r["fallbacks"].size(), 2u);
  for (const auto& f : r["fallbacks"].items()) {
    EXPECT_EQ(*f["from_backup"].as_u64(), 2u);
    EXPECT_EQ(*f["backup_id"].as_u64(), 1u);
    EXPECT_TRUE(contains(f["reason"].as_string(), "expired"));
  }
  EXPECT_TRUE(bytes_of(before) == bytes_of(t_ / "r" + (t_ / "src/a.dbf"))) << "backup 1's copy";
  RunResult strict = run({"restore", "--to", t_ / "r2", "--no-fallback"});
  EXPECT_TRUE(strict.exited(2)) << strict.describe();
  EXPECT_TRUE(contains(strict.err, "expired"));
  // Validation skips the expired backup too.
  Json v = json({"validate"});
  EXPECT_EQ(ids_in(v["backups"]), (std::set<uint64_t>{1}));
  // Back in place, a crosscheck makes it available again; delete expired then has nothing.
  std::filesystem::rename(t_ / "away.sbp", moved);
  json({"crosscheck", "--backup", "2"});
  EXPECT_EQ(json({"list"})["backups"][1]["status"].as_string(), "complete");
  std::filesystem::rename(moved, t_ / "away.sbp");
  json({"crosscheck", "--tag", "nightly"});
  Json de = json({"delete", "expired"});
  EXPECT_EQ(ids_in(de["backups"]), (std::set<uint64_t>{2}));
  EXPECT_EQ(listed(), (std::set<uint64_t>{1}));
}

TEST_F(Media, DeepCrosscheckFindsADamagedFrameTheQuickOneCannot) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAKE_NOW");
  make_file(t_ / "src/a.dbf", 3 * kMiB, 1);
  nightly(1, {"--channels", "1"});
  damage_middle(pieces_in(t_ / "dest").at(0));
  Json quick = json({"crosscheck"});
  EXPECT_EQ(quick["pieces"][0]["status"].as_string(), "available");
  // A damaged frame in a piece otherwise whole: the piece is damaged (its file named), not
  // expired, and the deep check read the whole piece.
  Json deep = json({"crosscheck", "--deep"});
  EXPECT_EQ(deep["pieces"][0]["status"].as_string(), "damaged");
  EXPECT_TRUE(contains(deep["pieces"][0]["damage"].as_string(), "checksum"));
  ASSERT_EQ(deep["pieces"][0]["damaged_files"].size(), 1u);
  EXPECT_EQ(deep["pieces"][0]["damaged_files"][0].as_string(), t_ / "src/a.dbf");
  EXPECT_GE(*deep["bytes_read"].as_u64(), 3 * kMiB) << "it read the whole piece";
}

TEST_F(Media, ADamagedNewestCopyIsRestoredFromTheNextNewest) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAKE_NOW");
  make_file(t_ / "src/a.dbf", 3 * kMiB, 1);
  const std::string old_copy = t_ / "old-a";
  std::filesystem::copy_file(t_ / "src/a.dbf", old_copy);
  nightly(1, {"--channels", "1"});
  make_file(t_ / "src/a.dbf", 3 * kMiB, 2);
  nightly(2, {"--channels", "1"});
  for (const auto& p : pieces_in(t_ / "dest"))
    if (base_names({p})[0].starts_with("sb2-")) damage_middle(p);
  Json r = json({"restore", "--to", t_ / "r"}, 6);
  EXPECT_EQ(r["status"].as_string(), "complete");
  ASSERT_EQ(r["fallbacks"].size(), 1u);
  EXPECT_EQ(r["fallbacks"][0]["file"].as_string(), t_ / "src/a.dbf");
  // A data frame of piece format 5 has no payload checksum: its digest finds the damage.
  EXPECT_TRUE(contains(r["fallbacks"][0]["reason"].as_string(), "data digest mismatch"));
  EXPECT_TRUE(bytes_of(old_copy) == bytes_of(t_ / "r" + (t_ / "src/a.dbf"))) << "backup 1's copy";
  RunResult strict = run({"restore", "--to", t_ / "r2", "--no-fallback"});
  EXPECT_TRUE(strict.exited(1)) << strict.describe();
  EXPECT_FALSE(exists(t_ / "r2" + (t_ / "src/a.dbf"))) << "nothing half-restored is left";
}

// The two newest copies are damaged: the second round of fallback restores the file from
// the third, and the restore is complete, naming the newest copy as the one not used.
TEST_F(Media, TwoDamagedNewestCopiesAreRestoredFromTheThird) {
  make_file(t_ / "src/a.dbf", 3 * kMiB, 1);
  const std::string old_copy = t_ / "old-a";
  std::filesystem::copy_file(t_ / "src/a.dbf", old_copy);
  nightly(1, {"--channels", "1"});
  for (int day : {2, 3}) {
    make_file(t_ / "src/a.dbf", 3 * kMiB, day);
    nightly(day, {"--channels", "1"});
  }
  for (const auto& p : pieces_in(t_ / "dest"))
    if (!base_names({p})[0].starts_with("sb1-")) damage_middle(p);
  Json r = json({"restore", "--to", t_ / "r"}, 6);
  EXPECT_EQ(r["status"].as_string(), "complete");
  EXPECT_EQ(r["errors"].size(), 0u);
  ASSERT_EQ(r["fallbacks"].size(), 1u);
  EXPECT_EQ(*r["fallbacks"][0]["from_backup"].as_u64(), 3u);
  EXPECT_EQ(*r["fallbacks"][0]["backup_id"].as_u64(), 1u);
  EXPECT_TRUE(contains(r["fallbacks"][0]["reason"].as_string(), "backup 3"));
  EXPECT_TRUE(bytes_of(old_copy) == bytes_of(t_ / "r" + (t_ / "src/a.dbf"))) << "backup 1's copy";
}

TEST_F(Media, AReusedTagNoLongerHidesOlderBackups) {
  make_file(t_ / "one/a.dbf", 1 * kMiB, 1);
  make_file(t_ / "two/b.dbf", 1 * kMiB, 2);
  SB_ASSERT_EXIT(run({"backup", t_ / "one", "--to", t_ / "dest", "--tag", "weekly"}), 0);
  SB_ASSERT_EXIT(run({"backup", t_ / "two", "--to", t_ / "dest", "--tag", "weekly"}), 0);
  Json l = json({"list"});
  EXPECT_FALSE(l["backups"][0]["tag_newest"].as_bool());
  EXPECT_TRUE(l["backups"][1]["tag_newest"].as_bool());
  RunResult text = run({"list"});
  EXPECT_TRUE(contains(text.out, "weekly (older)"));
  // The tag alone names the newest; with a path, every backup with the tag is searched.
  Json r = json({"restore", "--tag", "weekly", "--to", t_ / "r", t_ / "one/a.dbf"});
  EXPECT_TRUE(same_file(t_ / "one/a.dbf", t_ / "r" + (t_ / "one/a.dbf")));
  EXPECT_EQ(ids_in(r["backups"]), (std::set<uint64_t>{1}));
  RunResult none = run({"restore", "--tag", "weekly", "--to", t_ / "r3", t_ / "nowhere"});
  EXPECT_TRUE(none.exited(2)) << none.describe();
  EXPECT_TRUE(contains(none.err, "in the backups with tag 'weekly'"));
}

TEST_F(Media, ListFilesOfABackup) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAKE_NOW");
  make_file(t_ / "src/a.dbf", 2 * kMiB, 1);
  make_file(t_ / "src/sub/b.dbf", 1 * kMiB, 2);
  nightly(1);
  Json f = json({"list", "--backup", "1", "--files"});
  std::map<std::string, uint64_t> sizes;
  for (const auto& e : f["files"].items()) {
    if (e["type"].as_string() != "file") continue;
    sizes[e["path"].as_string()] = *e["bytes"].as_u64();
    EXPECT_GE(e["pieces"].size(), 1u);
  }
  EXPECT_EQ(sizes, (std::map<std::string, uint64_t>{{t_ / "src/a.dbf", 2 * kMiB},
                                                    {t_ / "src/sub/b.dbf", 1 * kMiB}}));
  Json one = json({"list", "--backup", "1"});
  EXPECT_EQ(one["backups"][0]["start_time"].as_string(), "2026-11-01T02:00:00Z");
  EXPECT_EQ(one["backups"][0]["destination"].as_string(), t_ / "dest");
  RunResult missing = run({"list", "--backup", "9", "--files"});
  EXPECT_TRUE(missing.exited(2)) << missing.describe();
  EXPECT_TRUE(contains(missing.err, "backup 9 is not in the catalog"));
}

TEST_F(Media, AFreshInstallHasNoBackupsAndExitsZero) {
  for (std::vector<std::string> cmd :
       {std::vector<std::string>{"list"}, {"report", "obsolete"}, {"crosscheck"},
        {"configure", "--show"}, {"status"}, {"delete", "expired"}}) {
    RunResult r = run(cmd);
    EXPECT_TRUE(r.exited(0)) << r.describe();
    cmd.push_back("--json");
    Json j = json(cmd);
    EXPECT_TRUE(j.is_object());
  }
  EXPECT_FALSE(exists(t_ / "cat")) << "reading commands create no catalog";
}

TEST_F(Media, ConfigureChecksValuesAndCommandFlagsOverride) {
  RunResult bad = run({"configure", "retention", "redundancy", "0"});
  EXPECT_TRUE(bad.exited(2)) << bad.describe();
  EXPECT_TRUE(contains(bad.err, "redundancy N"));
  RunResult unknown = run({"configure", "colour", "blue"});
  EXPECT_TRUE(unknown.exited(2));
  EXPECT_TRUE(contains(unknown.err, "unknown setting 'colour'"));
  make_file(t_ / "src/a.dbf", 3 * kMiB, 1);
  make_file(t_ / "src/b.dbf", 3 * kMiB, 2);
  SB_ASSERT_EXIT(run({"configure", "channels", "1"}), 0);
  SB_ASSERT_EXIT(run({"configure", "destination", t_ / "dest"}), 0);
  SB_ASSERT_EXIT(run({"configure", "compression", "low"}), 0);
  Json b = json({"backup", t_ / "src"});
  EXPECT_EQ(b["channels"].size(), 1u) << "the configured channels";
  EXPECT_EQ(pieces_in(t_ / "dest").size(), 1u) << "the configured destination";
  Json b2 = json({"backup", t_ / "src", "--channels", "2", "--to", t_ / "dest2"});
  EXPECT_EQ(b2["channels"].size(), 2u) << "a flag overrides the setting";
  EXPECT_EQ(pieces_in(t_ / "dest2").size(), 2u);
  SB_ASSERT_EXIT(run({"configure", "--clear", "destination"}), 0);
  EXPECT_TRUE(json({"configure"})["settings"]["destination"].is_null());
}

// A backup killed halfway is resumed: the files its durable pieces finished are not read
// again, the rest is, and the one backup restores identical.
TEST_F(Media, AResumeAfterAKillAtHalfwayReadsOnlyTheOtherHalf) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  for (int i = 1; i <= 8; ++i)
    make_file(t_ / ("src/f" + std::to_string(i)), 4 * kMiB, static_cast<uint32_t>(50 + i));
  const std::vector<std::string> args{"backup", t_ / "src", "--to", t_ / "dest", "--tag", "big",
                                      "--channels", "1", "--max-open-files", "1",
                                      "--max-piece-size", "5M"};
  // One piece per file, in order: the fifth sync kills the job with four files recorded.
  RunResult killed = run(args, {{"STRIPEBACK_CRASH_AT", "piece-synced:5"}});
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed.describe();
  Json mid = json({"list"});
  ASSERT_EQ(mid["backups"].size(), 1u);
  EXPECT_EQ(mid["backups"][0]["status"].as_string(), "incomplete");
  EXPECT_EQ(*mid["backups"][0]["pieces"].as_u64(), 4u) << "pieces are recorded as they are durable";
  std::vector<std::string> again = args;
  again.push_back("--resume");
  again.push_back("last");
  Json r = json(again);
  EXPECT_EQ(r["status"].as_string(), "complete");
  EXPECT_EQ(*r["backup_id"].as_u64(), 1u) << "the same backup";
  EXPECT_EQ(*r["resumed"]["files_kept"].as_u64(), 4u);
  EXPECT_LE(*r["bytes_read"].as_u64(), 16 * kMiB + kMiB) << "only the unfinished half is read";
  EXPECT_EQ(*r["files"].as_u64(), 8u);
  Json l = json({"list"});
  ASSERT_EQ(l["backups"].size(), 1u);
  EXPECT_EQ(l["backups"][0]["status"].as_string(), "complete");
  EXPECT_EQ(pieces_in(t_ / "dest").size(), 8u) << "the killed job's unfinished piece is gone";
  SB_ASSERT_EXIT(run({"restore", "--to", t_ / "r"}), 0);
  EXPECT_TRUE(restored_tree(t_ / "r", t_ / "src"));
  SB_ASSERT_EXIT(run({"validate"}), 0);
  // Nothing is left to resume; other sources are refused.
  RunResult twice = run(again);
  EXPECT_TRUE(twice.exited(2)) << twice.describe();
  EXPECT_TRUE(contains(twice.err, "no interrupted backup"));
}

// One large file backed up in sections, killed when a few sections are durable: the resume
// keeps those sections, reads only the others, and the file restores identical.
TEST_F(Media, AResumeKeepsTheFinishedSectionsOfALargeFile) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  // One channel takes the 4 MiB sections one after another into 5 MiB pieces; the fifth
  // sync kills the job with four pieces durable.
  make_file(t_ / "src/big.dbf", 32 * kMiB, 77);
  const std::vector<std::string> args{"backup", t_ / "src", "--to", t_ / "dest",
                                      "--channels", "1", "--section-size", "4M",
                                      "--max-piece-size", "5M"};
  RunResult killed = run(args, {{"STRIPEBACK_CRASH_AT", "piece-synced:5"}});
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed.describe();
  ASSERT_EQ(*json({"list"})["backups"][0]["pieces"].as_u64(), 4u);
  std::vector<std::string> again = args;
  again.push_back("--resume");
  again.push_back("last");
  Json r = json(again);
  EXPECT_EQ(r["status"].as_string(), "complete");
  // What the four durable pieces hold is kept (whole sections, and the start of the one
  // the kill cut), and only the rest is read: every byte exactly once.
  const uint64_t kept = *r["resumed"]["bytes_kept"].as_u64();
  EXPECT_GE(kept, 12 * kMiB);
  EXPECT_GE(*r["resumed"]["sections_kept"].as_u64(), 3u);
  EXPECT_EQ(*r["resumed"]["files_kept"].as_u64(), 0u) << "the file is read in part again";
  EXPECT_EQ(*r["bytes_read"].as_u64() + kept, 32 * kMiB) << "the kept bytes are not read again";
  EXPECT_EQ(*r["files"].as_u64(), 1u);
  SB_ASSERT_EXIT(run({"restore", "--to", t_ / "r"}), 0);
  EXPECT_TRUE(restored_tree(t_ / "r", t_ / "src"));
  SB_ASSERT_EXIT(run({"validate"}), 0);
}

TEST_F(Media, AResumeChecksWhatItResumes) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  make_file(t_ / "src/a", 3 * kMiB, 1);
  make_file(t_ / "other/b", 1 * kMiB, 2);
  RunResult killed = run({"backup", t_ / "src", "--to", t_ / "dest", "--channels", "1"},
                         {{"STRIPEBACK_CRASH_AT", "piece-synced"}});
  ASSERT_EQ(killed.term_signal, SIGKILL);
  RunResult other = run({"backup", t_ / "other", "--to", t_ / "dest", "--resume", "1"});
  EXPECT_TRUE(other.exited(2)) << other.describe();
  EXPECT_TRUE(contains(other.err, "resume it with the same sources"));
  RunResult bad = run({"backup", t_ / "src", "--to", t_ / "dest", "--resume", "x"});
  EXPECT_TRUE(bad.exited(2));
  EXPECT_TRUE(contains(bad.err, "a backup id or 'last'"));
  SB_ASSERT_EXIT(run({"backup", t_ / "src", "--to", t_ / "dest", "--resume", "1"}), 0);
  RunResult ended = run({"backup", t_ / "src", "--to", t_ / "dest", "--resume", "1"});
  EXPECT_TRUE(ended.exited(2));
  EXPECT_TRUE(contains(ended.err, "has ended (complete)"));
}

// delete obsolete while a backup to the same destination and catalog runs: the running
// backup is never obsolete, none of its pieces is touched, and it ends complete.
TEST_F(Media, DeleteObsoleteLeavesARunningBackupAlone) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAKE_NOW");
  make_file(t_ / "src/a.dbf", 3 * kMiB, 1);
  for (int d = 1; d <= 3; ++d) nightly(d);
  make_file(t_ / "big/b.dbf", 24 * kMiB, 2);
  auto running = sb_start({"backup", t_ / "big", "--to", t_ / "dest", "--catalog", t_ / "cat",
                           "--rate", "6M", "--channels", "1", "--max-piece-size", "5M",
                           "--json"});
  // Wait until it has made a piece durable (recorded in the catalog).
  bool recorded = false;
  for (int i = 0; i < 200 && !recorded; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Json l = json({"list"});
    recorded = l["backups"].size() == 4 && *l["backups"][3]["pieces"].as_u64() >= 1;
  }
  ASSERT_TRUE(recorded) << "the running backup recorded no piece";
  SB_ASSERT_EXIT(run({"configure", "retention", "redundancy", "1"}), 0);
  Json rep = json({"delete", "obsolete"});
  EXPECT_EQ(ids_in(rep["backups"]), (std::set<uint64_t>{1, 2})) << "never the running one";
  for (const auto& p : rep["pieces"].items()) EXPECT_NE(*p["backup_id"].as_u64(), 4u);
  RunResult done = running->wait();
  SB_ASSERT_EXIT(done, 0);
  EXPECT_EQ(parse_json(done)["status"].as_string(), "complete");
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{3, 4}));
  SB_ASSERT_EXIT(run({"restore", "--to", t_ / "r", "--backup", "4"}), 0);
  EXPECT_TRUE(same_file(t_ / "big/b.dbf", t_ / "r" + (t_ / "big/b.dbf")));
}

}  // namespace
}  // namespace stripeback::it
