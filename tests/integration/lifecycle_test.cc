// The lifecycle of one chosen backup (docs/media-management.md, "Deleting or keeping one
// backup"): delete backup removes its pieces and its record, refuses a parent others need
// unless asked to delete them too, refuses kept, locked and running backups, and a killed
// one is finished by a rerun; keep protects a backup (and what it needs) from retention
// until its date or forever, list shows it, delete expired leaves it, and compaction keeps
// it.
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/wiring/backends.h"
#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kMiB = 1 << 20;

std::set<uint64_t> ids_in(const Json& array, const char* key = "backup_id") {
  std::set<uint64_t> out;
  for (const auto& b : array.items()) out.insert(*b[key].as_u64());
  return out;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class Lifecycle : public ::testing::Test {
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
  uint64_t backup(std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"backup", t_ / "src", "--to", t_ / "dest", "--channels", "2"};
    a.insert(a.end(), extra.begin(), extra.end());
    return backup_id_of(json(a));
  }
  std::set<uint64_t> listed() { return ids_in(json({"list"})["backups"]); }
  Json listed_backup(uint64_t id) {
    const Json all = json({"list"});
    for (const auto& b : all["backups"].items())
      if (*b["backup_id"].as_u64() == id) return b;
    ADD_FAILURE() << "backup " << id << " is not listed";
    return Json();
  }
  // The backup ids the pieces on the destination belong to (by their names).
  std::set<uint64_t> ids_on_disk() {
    std::set<uint64_t> out;
    for (const auto& n : base_names(pieces_in(t_ / "dest")))
      out.insert(std::stoull(n.substr(2, n.find('-') - 2)));
    return out;
  }
  // The catalog, opened directly to write records no command writes here.
  std::unique_ptr<catalog::Catalog> open_catalog() {
    auto st = engine::storage_for(storage::Location::local(t_ / "cat"));
    EXPECT_TRUE(st);
    auto cat = catalog::Catalog::open(t_ / "cat", catalog::Create::no, **st);
    EXPECT_TRUE(cat) << cat.error().what;
    return std::move(*cat);
  }
  TempDir t_{"sbit-lifecycle"};
};

TEST_F(Lifecycle, DeleteBackupRemovesItsPiecesAndRestoreTakesThePreviousOne) {
  make_file(t_ / "src/a.dbf", 3 * kMiB, 1);
  const uint64_t first = backup();
  const std::string old_a = t_ / "old-a";
  std::filesystem::copy_file(t_ / "src/a.dbf", old_a);
  make_file(t_ / "src/a.dbf", 3 * kMiB, 2);
  const uint64_t second = backup();
  ASSERT_EQ(ids_on_disk(), (std::set<uint64_t>{first, second}));

  Json dry = json({"delete", "backup", std::to_string(second), "--dry-run"});
  EXPECT_TRUE(dry["dry_run"].as_bool());
  EXPECT_EQ(ids_in(dry["backups"]), (std::set<uint64_t>{second}));
  const uint64_t pieces = *listed_backup(second)["pieces"].as_u64();
  ASSERT_GT(pieces, 0u);
  EXPECT_EQ(dry["pieces"].size(), pieces);
  EXPECT_GT(*dry["bytes"].as_u64(), 0u);
  EXPECT_EQ(listed(), (std::set<uint64_t>{first, second})) << "a dry run removes nothing";
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{first, second}));

  Json del = json({"delete", "backup", std::to_string(second)});
  EXPECT_TRUE(del["complete"].as_bool());
  EXPECT_EQ(*del["pieces_removed"].as_u64(), pieces);
  EXPECT_EQ(del["dependents"].size(), 0u);
  EXPECT_EQ(listed(), (std::set<uint64_t>{first}));
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{first}));
  Json r = json({"restore", "--to", t_ / "r"});
  EXPECT_EQ(ids_in(r["backups"]), (std::set<uint64_t>{first}));
  EXPECT_TRUE(bytes_of(restored_path(t_ / "r", t_ / "src/a.dbf")) == bytes_of(old_a))
      << "the previous backup's bytes";

  // The id stays used: a second delete says it is gone, and so does keep.
  RunResult again = run({"delete", "backup", std::to_string(second)});
  SB_EXPECT_EXIT(again, 2);
  EXPECT_TRUE(contains(again.err, "backup " + std::to_string(second) + " has already been deleted"))
      << again.err;
  RunResult keep = run({"keep", std::to_string(second), "--forever"});
  SB_EXPECT_EXIT(keep, 2);
  EXPECT_TRUE(contains(keep.err, "has been deleted")) << keep.err;
}

TEST_F(Lifecycle, AParentOfALevelOneIsRefusedNamingItAndDeletedWithItWhenAsked) {
  make_file(t_ / "src/a.dbf", 2 * kMiB, 1);
  const uint64_t l0 = backup({"--level", "0"});
  make_file(t_ / "src/a.dbf", 2 * kMiB, 2);
  const uint64_t l1 = backup({"--level", "1"});
  make_file(t_ / "src/a.dbf", 2 * kMiB, 3);
  const uint64_t l1b = backup({"--level", "1"});  // its parent is l1: l0 through its chain
  make_file(t_ / "src/b.dbf", 1 * kMiB, 4);
  const uint64_t full = backup();

  RunResult refused = run({"delete", "backup", std::to_string(l0)});
  SB_EXPECT_EXIT(refused, 2);
  EXPECT_TRUE(contains(refused.err, "backup " + std::to_string(l1) + " (level 1)")) << refused.err;
  EXPECT_TRUE(contains(refused.err, "backup " + std::to_string(l1b) + " (level 1)")) << refused.err;
  EXPECT_TRUE(contains(refused.err, "--with-dependents")) << refused.err;
  EXPECT_EQ(listed(), (std::set<uint64_t>{l0, l1, l1b, full})) << "nothing deleted";
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{l0, l1, l1b, full}));

  // The newest level 1 needs nobody: it goes alone.
  Json dry = json({"delete", "backup", std::to_string(l1), "--with-dependents", "--dry-run"});
  EXPECT_EQ(ids_in(dry["backups"]), (std::set<uint64_t>{l1, l1b}));
  EXPECT_EQ(listed().size(), 4u);

  Json both = json({"delete", "backup", std::to_string(l0), "--with-dependents"});
  EXPECT_TRUE(both["complete"].as_bool());
  EXPECT_EQ(ids_in(both["backups"]), (std::set<uint64_t>{l0, l1, l1b}));
  std::set<uint64_t> dependents;
  for (const auto& d : both["dependents"].items()) dependents.insert(*d.as_u64());
  EXPECT_EQ(dependents, (std::set<uint64_t>{l1, l1b}));
  for (const auto& b : both["backups"].items())
    EXPECT_EQ(b["dependent"].as_bool(), *b["backup_id"].as_u64() != l0);
  EXPECT_EQ(listed(), (std::set<uint64_t>{full}));
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{full}));
  RunResult text = run({"list"});
  SB_ASSERT_EXIT(text, 0);
}

TEST_F(Lifecycle, KeptLockedAndRunningBackupsAreRefused) {
  make_file(t_ / "src/a.dbf", 1 * kMiB, 1);
  const uint64_t kept = backup(), dated = backup(), locked = backup();
  SB_ASSERT_EXIT(run({"keep", std::to_string(kept), "--forever"}), 0);
  SB_ASSERT_EXIT(run({"keep", std::to_string(dated), "--until", "2099-01-02T03:04:05Z"}), 0);
  catalog::BackupBegin running_begin;
  running_begin.destination = t_ / "dest";
  running_begin.host = host_name();
  running_begin.pid = static_cast<int32_t>(::getpid());  // alive: this test
  uint64_t running = 0;
  {
    auto cat = open_catalog();
    catalog::Lock l;
    l.backup_id = locked;
    l.retention = {storage::Retention::Mode::compliance, 4'070'908'800'000'000'000};  // 2099
    ASSERT_TRUE(cat->add_lock(l));
    auto id = cat->begin_backup(running_begin);
    ASSERT_TRUE(id);
    running = *id;
  }
  RunResult k = run({"delete", "backup", std::to_string(kept)});
  SB_EXPECT_EXIT(k, 2);
  EXPECT_TRUE(contains(k.err, "is kept forever")) << k.err;
  RunResult d = run({"delete", "backup", std::to_string(dated)});
  SB_EXPECT_EXIT(d, 2);
  EXPECT_TRUE(contains(d.err, "is kept until 2099-01-02T03:04:05Z")) << d.err;
  RunResult l = run({"delete", "backup", std::to_string(locked)});
  SB_EXPECT_EXIT(l, 2);
  EXPECT_TRUE(contains(l.err, "is locked until 2099-01-01T00:00:00Z")) << l.err;
  RunResult r = run({"delete", "backup", std::to_string(running)});
  EXPECT_FALSE(r.exited(0)) << r.describe();
  EXPECT_TRUE(contains(r.err, "is still running")) << r.err;
  RunResult unknown = run({"delete", "backup", "999"});
  SB_EXPECT_EXIT(unknown, 2);
  EXPECT_TRUE(contains(unknown.err, "backup 999 is not in the catalog")) << unknown.err;
  EXPECT_EQ(listed(), (std::set<uint64_t>{kept, dated, locked, running}));
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{kept, dated, locked}));
  // Cleared, the keep no longer refuses.
  SB_ASSERT_EXIT(run({"keep", std::to_string(kept), "--clear"}), 0);
  SB_ASSERT_EXIT(run({"delete", "backup", std::to_string(kept)}), 0);
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{dated, locked}));
}

// Killed at each durability point of the deletion, then run again: the backup is listed
// "deleting" in between (never restored from), and the rerun finishes the deletion.
TEST_F(Lifecycle, ADeleteBackupKilledAtAnyPointIsFinishedByARerun) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  make_file(t_ / "src/a.dbf", 2 * kMiB, 1);
  for (const std::string point : {"delete-intent-recorded", "delete-pieces-removed"}) {
    SCOPED_TRACE(point);
    std::filesystem::remove_all(t_ / "cat");
    std::filesystem::remove_all(t_ / "dest");
    const uint64_t first = backup(), second = backup();
    RunResult k = run({"delete", "backup", std::to_string(second)},
                      {{"STRIPEBACK_CRASH_AT", point}});
    ASSERT_EQ(k.term_signal, SIGKILL) << k.describe();
    EXPECT_EQ(listed_backup(second)["status"].as_string(), "deleting");
    Json r = json({"restore", "--to", t_ / ("r-" + point)});
    EXPECT_EQ(ids_in(r["backups"]), (std::set<uint64_t>{first})) << "never from a deleting backup";
    Json rerun = json({"delete", "backup", std::to_string(second)});
    EXPECT_TRUE(rerun["interrupted"].as_bool());
    EXPECT_EQ(*rerun["finished_earlier_deletions"].as_u64(), 1u);
    EXPECT_TRUE(rerun["complete"].as_bool());
    EXPECT_EQ(listed(), (std::set<uint64_t>{first}));
    EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{first}));
  }
}

TEST_F(Lifecycle, AKeptBackupAndItsParentSurviveDeleteObsolete) {
  make_file(t_ / "src/a.dbf", 2 * kMiB, 1);
  const uint64_t forever = backup();
  const uint64_t l0 = backup({"--level", "0"});
  make_file(t_ / "src/a.dbf", 2 * kMiB, 2);
  const uint64_t l1 = backup({"--level", "1"});
  make_file(t_ / "src/a.dbf", 2 * kMiB, 3);
  const uint64_t plain = backup(), newest = backup();
  SB_ASSERT_EXIT(run({"configure", "retention", "redundancy", "1"}), 0);
  Json keep = json({"keep", std::to_string(forever), "--forever"});
  EXPECT_EQ(keep["keep_until"].as_string(), "forever");
  EXPECT_TRUE(keep["kept"].as_bool());
  Json keep1 = json({"keep", std::to_string(l1), "--until", "2099-06-30 02:00:00+02:00"});
  EXPECT_EQ(keep1["keep_until"].as_string(), "2099-06-30T00:00:00Z");
  std::set<uint64_t> also;
  for (const auto& x : keep1["also_kept"].items()) also.insert(*x.as_u64());
  EXPECT_EQ(also, (std::set<uint64_t>{l0}));

  Json rep = json({"report", "obsolete"});
  EXPECT_EQ(ids_in(rep["backups"]), (std::set<uint64_t>{plain}));
  Json del = json({"delete", "obsolete"});
  EXPECT_EQ(ids_in(del["backups"]), (std::set<uint64_t>{plain}));
  EXPECT_EQ(listed(), (std::set<uint64_t>{forever, l0, l1, newest}));
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{forever, l0, l1, newest}));
  SB_ASSERT_EXIT(run({"restore", "--backup", std::to_string(forever), "--to", t_ / "r"}), 0);
}

TEST_F(Lifecycle, APastDateOrAClearedKeepNoLongerProtects) {
  make_file(t_ / "src/a.dbf", 1 * kMiB, 1);
  const uint64_t past = backup(), cleared = backup(), newest = backup();
  SB_ASSERT_EXIT(run({"configure", "retention", "redundancy", "1"}), 0);
  RunResult p = run({"keep", std::to_string(past), "--until", "2020-01-01T00:00:00Z"});
  SB_ASSERT_EXIT(p, 0);
  EXPECT_TRUE(contains(p.out, "that time has passed")) << p.out;
  Json f = json({"keep", std::to_string(cleared), "--forever"});
  Json c = json({"keep", std::to_string(cleared), "--clear"});
  EXPECT_TRUE(c["recorded"].as_bool());
  EXPECT_TRUE(c["keep_until"].is_null());
  EXPECT_FALSE(c["kept"].as_bool());
  Json twice = json({"keep", std::to_string(cleared), "--clear"});
  EXPECT_FALSE(twice["recorded"].as_bool()) << "not kept: nothing to clear";
  Json del = json({"delete", "obsolete"});
  EXPECT_EQ(ids_in(del["backups"]), (std::set<uint64_t>{past, cleared}));
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{newest}));
}

// A kept backup that a crosscheck expired (its piece gone, maybe for a while) stays.
TEST_F(Lifecycle, DeleteExpiredLeavesAKeptBackup) {
  make_file(t_ / "src/a.dbf", 1 * kMiB, 1);
  const uint64_t kept = backup(), other = backup();
  SB_ASSERT_EXIT(run({"keep", std::to_string(kept), "--forever"}), 0);
  for (const auto& p : pieces_in(t_ / "dest"))
    std::filesystem::rename(p, t_ / base_names({p})[0]);
  json({"crosscheck"});
  EXPECT_EQ(listed_backup(kept)["status"].as_string(), "expired");
  Json del = json({"delete", "expired"});
  EXPECT_EQ(ids_in(del["backups"]), (std::set<uint64_t>{other}));
  ASSERT_EQ(del["kept"].size(), 1u);
  EXPECT_EQ(*del["kept"][0].as_u64(), kept);
  EXPECT_EQ(listed(), (std::set<uint64_t>{kept}));
}

TEST_F(Lifecycle, ListShowsKeepUntilAndCompactionKeepsIt) {
  make_file(t_ / "src/a.dbf", 1 * kMiB, 1);
  const uint64_t a = backup(), b = backup(), c = backup(), d = backup();
  SB_ASSERT_EXIT(run({"keep", std::to_string(a), "--until", "4102444800"}), 0);  // 2100
  SB_ASSERT_EXIT(run({"keep", std::to_string(b), "--forever"}), 0);
  SB_ASSERT_EXIT(run({"keep", std::to_string(c), "--forever"}), 0);
  SB_ASSERT_EXIT(run({"keep", std::to_string(c), "--clear"}), 0);
  SB_ASSERT_EXIT(run({"delete", "backup", std::to_string(d)}), 0);
  auto check = [&](const char* when) {
    SCOPED_TRACE(when);
    EXPECT_EQ(listed_backup(a)["keep_until"].as_string(), "2100-01-01T00:00:00Z");
    EXPECT_TRUE(listed_backup(a)["kept"].as_bool());
    EXPECT_EQ(listed_backup(b)["keep_until"].as_string(), "forever");
    EXPECT_TRUE(listed_backup(c)["keep_until"].is_null());
    EXPECT_FALSE(listed_backup(c)["kept"].as_bool());
    RunResult text = run({"list"});
    SB_ASSERT_EXIT(text, 0);
    EXPECT_TRUE(contains(text.out, "backup " + std::to_string(a) +
                                       " is kept until 2100-01-01T00:00:00Z"))
        << text.out;
    EXPECT_TRUE(contains(text.out, "backup " + std::to_string(b) + " is kept forever")) << text.out;
    EXPECT_FALSE(contains(text.out, "backup " + std::to_string(c) + " is kept")) << text.out;
  };
  check("before compaction");
  Json compact = json({"catalog", "compact"});
  EXPECT_LT(*compact["records_after"].as_u64(), *compact["records_before"].as_u64())
      << "the deleted backup's records go";
  check("after compaction");
}

TEST_F(Lifecycle, BadInputIsRefusedNamingTheCause) {
  make_file(t_ / "src/a.dbf", 1 * kMiB, 1);
  const uint64_t id = backup();
  const std::string sid = std::to_string(id);
  {
    auto cat = open_catalog();
    catalog::BackupBegin begin;
    begin.destination = t_ / "dest";
    auto failed = cat->begin_backup(begin);
    ASSERT_TRUE(failed);
    catalog::BackupEnd end;
    end.status = catalog::BackupStatus::failed;
    ASSERT_TRUE(cat->end_backup(*failed, end));
    RunResult f = run({"keep", std::to_string(*failed), "--forever"});
    SB_EXPECT_EXIT(f, 2);
    EXPECT_TRUE(contains(f.err, "failed")) << f.err;
  }
  RunResult unknown = run({"keep", "999", "--forever"});
  SB_EXPECT_EXIT(unknown, 2);
  EXPECT_TRUE(contains(unknown.err, "backup 999 is not in the catalog")) << unknown.err;
  RunResult date = run({"keep", sid, "--until", "tomorrow"});
  SB_EXPECT_EXIT(date, 2);
  EXPECT_TRUE(contains(date.err, "keep --until 'tomorrow' is not a time")) << date.err;
  RunResult zone = run({"keep", sid, "--until", "2099-01-01T00:00:00"});
  SB_EXPECT_EXIT(zone, 2);
  EXPECT_TRUE(contains(zone.err, "no time zone")) << zone.err;
  RunResult both = run({"keep", sid, "--until", "2099-01-01T00:00:00Z", "--forever"});
  SB_EXPECT_EXIT(both, 2);
  EXPECT_TRUE(contains(both.err, "excludes")) << both.err;
  RunResult none = run({"keep", sid});
  SB_EXPECT_EXIT(none, 2);
  EXPECT_TRUE(contains(none.err, "--until DATE, --forever, or --clear")) << none.err;
  RunResult noid = run({"delete", "backup"});
  SB_EXPECT_EXIT(noid, 2);
  EXPECT_FALSE(listed_backup(id)["kept"].as_bool()) << "nothing was recorded";
  EXPECT_EQ(ids_on_disk(), (std::set<uint64_t>{id}));
}

TEST_F(Lifecycle, HelpExplainsEveryFlag) {
  RunResult del = sb({"delete", "backup", "--help"});
  SB_ASSERT_EXIT(del, 0);
  for (const char* flag : {"--dry-run", "--with-dependents", "--catalog", "--json"})
    EXPECT_TRUE(contains(del.out, flag)) << flag << "\n" << del.out;
  RunResult keep = sb({"keep", "--help"});
  SB_ASSERT_EXIT(keep, 0);
  for (const char* flag : {"--until", "--forever", "--clear", "--catalog", "--json"})
    EXPECT_TRUE(contains(keep.out, flag)) << flag << "\n" << keep.out;
  EXPECT_TRUE(contains(keep.out, "ISO 8601")) << keep.out;
}

}  // namespace
}  // namespace stripeback::it
