// The log archive end to end (docs/postgresql.md, "WAL archiving"): a PostgreSQL 15 cluster
// whose archive_command is archive-push puts its segments in the archive and the catalog;
// a file pushed twice is archived once; other bytes under an archived name are refused and
// the first kept; a read-only destination records nothing; archive-get of a file the
// archive does not hold exits 1 without a word; a compressed and encrypted round trip gives
// the same bytes; async mode pushes every ready file in one call and fetches ahead; delete
// obsolete removes the WAL older than the oldest kept backup's start segment (a backup kept
// by `keep` counts, and `delete backup` leaves what the others need); a copy of the
// cluster recovers through restore_command = archive-get.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "catalog/catalog.h"
#include "engine/transform/page_check.h"
#include "engine/wiring/backends.h"
#include "tests/integration/it_util.h"
#include "tests/support/pg_cluster.h"
#include "util/digest.h"

namespace stripeback::it {
namespace {

namespace fs = std::filesystem;
using stripeback::testing::PgCluster;

constexpr uint64_t kSystemId = 0x6f1e2d3c4b5a6978ULL;
constexpr size_t kSegment = 1 << 20;  // small segments keep the tests quick

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A WAL segment as PostgreSQL writes one: a long page header naming the system identifier,
// then compressible bytes that depend on `seed`.
void make_segment(const std::string& path, uint32_t seed) {
  std::string b(kSegment, '\0');
  b[2] = 0x02;  // XLP_LONG_HEADER
  std::memcpy(b.data() + 24, &kSystemId, sizeof kSystemId);
  for (size_t i = 64; i < b.size(); ++i) b[i] = static_cast<char>((i / 97 + seed) % 13);
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << b;
}

std::vector<catalog::WalFile> wal_records(const std::string& cat_dir) {
  auto st = engine::storage_for(storage::Location::local(cat_dir));
  if (!st) return {};
  auto cat = catalog::Catalog::open(cat_dir, catalog::Create::no, **st);
  if (!cat) return {};
  return (*cat)->wal_files();
}

std::optional<catalog::WalFile> wal_record(const std::string& cat_dir, const std::string& name) {
  for (auto& w : wal_records(cat_dir))
    if (w.name == name) return w;
  return std::nullopt;
}

class WalArchive : public ::testing::Test {
 protected:
  void SetUp() override {
    cat_ = tmp_ / "cat";
    dest_ = tmp_ / "archive";
    pg_wal_ = tmp_ / "data/pg_wal";
    SB_ASSERT_EXIT(configure({"destination", dest_}), 0);
  }
  RunResult configure(std::vector<std::string> args) {
    args.insert(args.begin(), "configure");
    args.insert(args.end(), {"--catalog", cat_});
    return sb(args);
  }
  RunResult push(const std::string& path) {
    return sb({"archive-push", "--catalog", cat_, path});
  }
  RunResult get(const std::string& name, const std::string& to) {
    return sb({"archive-get", "--catalog", cat_, name, to});
  }
  std::string object_of(const std::string& name) const {
    return dest_ + "/wal/6f1e2d3c4b5a6978/" + name;
  }

  TempDir tmp_{"sbit-wal"};
  std::string cat_, dest_, pg_wal_;
};

TEST_F(WalArchive, SameFilePushedTwiceIsArchivedOnce) {
  const std::string seg = pg_wal_ + "/000000010000000000000003";
  make_segment(seg, 1);
  SB_ASSERT_EXIT(push(seg), 0);
  ASSERT_TRUE(exists(object_of("000000010000000000000003")));
  struct stat before {};
  ASSERT_EQ(::stat(object_of("000000010000000000000003").c_str(), &before), 0);
  auto again = push(seg);
  SB_ASSERT_EXIT(again, 0);
  EXPECT_TRUE(again.err.empty()) << again.err;
  struct stat after {};
  ASSERT_EQ(::stat(object_of("000000010000000000000003").c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino) << "the archived file was written again";
  EXPECT_EQ(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
  auto recs = wal_records(cat_);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].size, kSegment);
  EXPECT_EQ(recs[0].system_id, kSystemId);
  EXPECT_EQ(recs[0].stored_at, object_of("000000010000000000000003"));
  const std::string bytes = read_bytes(seg);
  EXPECT_EQ(recs[0].digest, util::digest(bytes.data(), bytes.size()));
  // archive-get finds the file by its record: no destination setting is needed.
  SB_ASSERT_EXIT(configure({"--clear", "destination"}), 0);
  SB_ASSERT_EXIT(get("000000010000000000000003", tmp_ / "RECOVERYXLOG"), 0);
  EXPECT_TRUE(read_bytes(tmp_ / "RECOVERYXLOG") == bytes);
  auto no_dest = push(pg_wal_ + "/000000010000000000000003");
  SB_EXPECT_EXIT(no_dest, 2);
  EXPECT_TRUE(contains(no_dest.err, "configure destination"));
}

TEST_F(WalArchive, OtherBytesUnderAnArchivedNameAreRefusedAndTheFirstKept) {
  const std::string seg = pg_wal_ + "/000000010000000000000004";
  make_segment(seg, 1);
  SB_ASSERT_EXIT(push(seg), 0);
  const std::string first = read_bytes(seg);
  const auto first_digest = util::to_hex(util::digest(first.data(), first.size()));
  make_segment(seg, 2);
  const std::string second = read_bytes(seg);
  auto r = push(seg);
  EXPECT_FALSE(r.exited(0)) << r.describe();
  EXPECT_TRUE(contains(r.err, "000000010000000000000004"));
  EXPECT_TRUE(contains(r.err, first_digest));
  EXPECT_TRUE(contains(r.err, util::to_hex(util::digest(second.data(), second.size()))));
  auto g = get("000000010000000000000004", tmp_ / "back");
  SB_ASSERT_EXIT(g, 0);
  EXPECT_TRUE(read_bytes(tmp_ / "back") == first) << "the archive no longer holds the first";
  EXPECT_EQ(wal_records(cat_).size(), 1u);
}

TEST_F(WalArchive, ReadOnlyDestinationFailsNamingTheFileAndRecordsNothing) {
  fs::create_directories(dest_);
  if (::mount("tmpfs", dest_.c_str(), "tmpfs", MS_RDONLY, "size=4m") != 0)
    GTEST_SKIP() << "cannot mount a read-only tmpfs here (" << std::strerror(errno)
                 << "); a read-only destination cannot be shown without one";
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{dest_};
  const std::string seg = pg_wal_ + "/000000010000000000000005";
  make_segment(seg, 1);
  auto r = push(seg);
  EXPECT_FALSE(r.exited(0)) << r.describe();
  EXPECT_TRUE(contains(r.err, "000000010000000000000005"));
  EXPECT_TRUE(contains(r.err, "Read-only file system"));
  EXPECT_TRUE(wal_records(cat_).empty());
  EXPECT_TRUE(exists(seg)) << "the segment must stay for PostgreSQL to retry";
}

// A destination with no room: the push fails naming the file and the cause, nothing is
// recorded, no partial object stays, and once there is room the same push succeeds.
TEST_F(WalArchive, FullDestinationFailsRecordsNothingAndTheRetrySucceeds) {
  fs::create_directories(dest_);
  if (::mount("tmpfs", dest_.c_str(), "tmpfs", 0, "size=256k") != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here (" << std::strerror(errno)
                 << "); a full destination cannot be shown without one";
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{dest_};
  const std::string seg = pg_wal_ + "/000000010000000000000006";
  make_segment(seg, 2);  // 1 MiB, stored raw (no compression configured)
  auto r = push(seg);
  SB_EXPECT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, "000000010000000000000006")) << r.describe();
  EXPECT_TRUE(contains(r.err, "No space left on device")) << r.describe();
  EXPECT_TRUE(wal_records(cat_).empty());
  EXPECT_FALSE(exists(object_of("000000010000000000000006")));
  EXPECT_TRUE(exists(seg)) << "the segment must stay for PostgreSQL to retry";
  // Room again (the mount goes; the destination is the directory below it): the retry works.
  ::umount2(dest_.c_str(), MNT_DETACH);
  unmount.path.clear();
  SB_ASSERT_EXIT(push(seg), 0);
  ASSERT_EQ(wal_records(cat_).size(), 1u);
  EXPECT_EQ(read_bytes(object_of("000000010000000000000006")).size(),
            wal_records(cat_)[0].stored_size);
}

TEST_F(WalArchive, MissingFileExitsOneWithoutAWord) {
  auto r = get("00000002.history", tmp_ / "RECOVERYHISTORY");
  SB_ASSERT_EXIT(r, 1);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(exists(tmp_ / "RECOVERYHISTORY"));
}

TEST_F(WalArchive, CompressedEncryptedRoundTripGivesTheSameBytes) {
  SB_ASSERT_EXIT(sb({"keygen", tmp_ / "key"}), 0);
  SB_ASSERT_EXIT(configure({"key-file", tmp_ / "key"}), 0);
  SB_ASSERT_EXIT(configure({"compression", "medium"}), 0);
  const std::string seg = pg_wal_ + "/000000010000000000000006";
  make_segment(seg, 3);
  SB_ASSERT_EXIT(push(seg), 0);
  const std::string history = pg_wal_ + "/00000002.history";
  write_text(history, "1\t0/3000000\tno recovery target specified\n");
  SB_ASSERT_EXIT(push(history), 0);

  auto rec = wal_record(cat_, "000000010000000000000006");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->flags, catalog::kWalCompressed | catalog::kWalEncrypted);
  EXPECT_LT(rec->stored_size, kSegment / 4);
  const std::string stored = read_bytes(object_of("000000010000000000000006"));
  EXPECT_EQ(stored.size(), rec->stored_size);

  auto g = get("000000010000000000000006", tmp_ / "RECOVERYXLOG");
  SB_ASSERT_EXIT(g, 0);
  EXPECT_TRUE(read_bytes(tmp_ / "RECOVERYXLOG") == read_bytes(seg));
  SB_ASSERT_EXIT(get("00000002.history", tmp_ / "RECOVERYHISTORY"), 0);
  EXPECT_EQ(read_bytes(tmp_ / "RECOVERYHISTORY"), read_bytes(history));
  EXPECT_FALSE(exists(tmp_ / "RECOVERYXLOG.sbtmp")) << "a temporary file was left";

  // The wrong key is told apart from other failures.
  SB_ASSERT_EXIT(sb({"keygen", tmp_ / "other-key"}), 0);
  SB_ASSERT_EXIT(configure({"key-file", tmp_ / "other-key"}), 0);
  auto wrong = get("000000010000000000000006", tmp_ / "RECOVERYXLOG2");
  SB_EXPECT_EXIT(wrong, 4);
  EXPECT_FALSE(exists(tmp_ / "RECOVERYXLOG2"));
}

TEST_F(WalArchive, DamagedArchivedFileFailsWithAnotherCode) {
  const std::string seg = pg_wal_ + "/000000010000000000000007";
  make_segment(seg, 4);
  SB_ASSERT_EXIT(push(seg), 0);
  {
    std::fstream f(object_of("000000010000000000000007"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    f.put('\x55');
  }
  auto r = get("000000010000000000000007", tmp_ / "RECOVERYXLOG");
  SB_EXPECT_EXIT(r, 7);
  EXPECT_TRUE(contains(r.err, "000000010000000000000007"));
  EXPECT_FALSE(exists(tmp_ / "RECOVERYXLOG"));
}

TEST_F(WalArchive, AsyncPushTakesEveryReadyFileInOneCall) {
  SB_ASSERT_EXIT(configure({"archive-async", "on"}), 0);
  SB_ASSERT_EXIT(configure({"archive-parallel", "3"}), 0);
  std::vector<std::string> names;
  fs::create_directories(pg_wal_ + "/archive_status");
  for (int i = 0; i < 5; ++i) {
    names.push_back("00000001000000000000001" + std::to_string(i));
    make_segment(pg_wal_ + "/" + names.back(), static_cast<uint32_t>(i));
    write_text(pg_wal_ + "/archive_status/" + names.back() + ".ready", "");
  }
  SB_ASSERT_EXIT(push(pg_wal_ + "/" + names[0]), 0);
  auto recs = wal_records(cat_);
  ASSERT_EQ(recs.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(recs[i].name, names[i]);
    EXPECT_TRUE(exists(object_of(names[i])));
  }
  // PostgreSQL then asks for the others: archived already, nothing to do.
  SB_ASSERT_EXIT(push(pg_wal_ + "/" + names[1]), 0);
}

// A file pushed ahead is not read again when PostgreSQL asks for it (its note in the spool
// matches the file), so N ready files cost N reads, not N^2/2; but the note never vouches
// for other bytes put under that name since: those are compared, and refused.
TEST_F(WalArchive, AsyncPushTrustsItsNoteOnlyForTheFileItRead) {
  SB_ASSERT_EXIT(configure({"archive-async", "on"}), 0);
  SB_ASSERT_EXIT(configure({"archive-spool-path", tmp_ / "spool"}), 0);
  fs::create_directories(pg_wal_ + "/archive_status");
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) {
    names.push_back("00000001000000000000002" + std::to_string(i));
    make_segment(pg_wal_ + "/" + names.back(), static_cast<uint32_t>(10 + i));
    write_text(pg_wal_ + "/archive_status/" + names.back() + ".ready", "");
  }
  SB_ASSERT_EXIT(push(pg_wal_ + "/" + names[0]), 0);
  ASSERT_EQ(wal_records(cat_).size(), names.size());
  for (size_t i = 1; i < names.size(); ++i)
    EXPECT_TRUE(exists(tmp_ / "spool/archive-out/" + names[i] + ".ok")) << names[i];
  // The unchanged file: the note answers, and goes.
  fs::remove(pg_wal_ + "/archive_status/" + names[0] + ".ready");
  SB_ASSERT_EXIT(push(pg_wal_ + "/" + names[1]), 0);
  EXPECT_FALSE(exists(tmp_ / "spool/archive-out/" + names[1] + ".ok"));
  // Other bytes under a pushed-ahead name: the note does not match, the bytes are compared.
  const auto first_digest = wal_record(cat_, names[2])->digest;
  make_segment(pg_wal_ + "/" + names[2], 99);
  RunResult other = push(pg_wal_ + "/" + names[2]);
  SB_EXPECT_EXIT(other, 1);
  EXPECT_TRUE(contains(other.err, "archived already with other bytes")) << other.describe();
  ASSERT_TRUE(wal_record(cat_, names[2]).has_value());
  EXPECT_EQ(wal_record(cat_, names[2])->digest, first_digest) << "the first archived bytes stay";
}

TEST_F(WalArchive, AsyncGetFetchesTheNextSegmentsIntoTheSpool) {
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) {
    names.push_back("00000001000000000000002" + std::to_string(i));
    make_segment(pg_wal_ + "/" + names.back(), static_cast<uint32_t>(i + 7));
    SB_ASSERT_EXIT(push(pg_wal_ + "/" + names.back()), 0);
  }
  SB_ASSERT_EXIT(configure({"archive-async", "on"}), 0);
  SB_ASSERT_EXIT(configure({"archive-parallel", "2"}), 0);
  SB_ASSERT_EXIT(configure({"archive-spool-path", tmp_ / "spool"}), 0);
  SB_ASSERT_EXIT(get(names[0], tmp_ / "RECOVERYXLOG"), 0);
  EXPECT_TRUE(read_bytes(tmp_ / "RECOVERYXLOG") == read_bytes(pg_wal_ + "/" + names[0]));
  EXPECT_TRUE(exists(tmp_ / ("spool/archive-in/" + names[1])));
  EXPECT_TRUE(exists(tmp_ / ("spool/archive-in/" + names[2])));
  EXPECT_FALSE(exists(tmp_ / ("spool/archive-in/" + names[3])));
  // The next call is served from the spool (the archived object is gone to prove it), and
  // takes it out of the spool.
  fs::remove(object_of(names[1]));
  SB_ASSERT_EXIT(get(names[1], tmp_ / "RECOVERYXLOG"), 0);
  EXPECT_TRUE(read_bytes(tmp_ / "RECOVERYXLOG") == read_bytes(pg_wal_ + "/" + names[1]));
  EXPECT_FALSE(exists(tmp_ / ("spool/archive-in/" + names[1])));
  EXPECT_TRUE(exists(tmp_ / ("spool/archive-in/" + names[3])));
}

TEST_F(WalArchive, DeleteObsoleteRemovesOnlyWalNoKeptBackupNeeds) {
  SB_ASSERT_EXIT(configure({"retention", "redundancy", "1"}), 0);
  make_file(tmp_ / "src/base.dbf", 1 << 20, 9);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 2; ++i) {
    auto b = sb({"backup", tmp_ / "src", "--catalog", cat_, "--json"});
    SB_ASSERT_EXIT(b, 0);
    ids.push_back(backup_id_of(parse_json(b)));
  }
  {
    // What a --pg backup records: the segment each backup starts at.
    auto st = engine::storage_for(storage::Location::local(cat_));
    ASSERT_TRUE(st);
    auto cat = catalog::Catalog::open(cat_, catalog::Create::no, **st);
    ASSERT_TRUE(cat) << cat.error().what;
    for (size_t i = 0; i < ids.size(); ++i) {
      catalog::HotBackup h;
      h.backup_id = ids[i];
      h.database = "postgres";
      h.timeline = 1;
      h.start_wal = i == 0 ? "000000010000000000000033" : "000000010000000000000035";
      h.stop_wal = h.start_wal;
      ASSERT_TRUE((*cat)->add_hot(h));
    }
  }
  std::vector<std::string> names;
  for (int n = 2; n <= 6; ++n) {
    names.push_back("00000001000000000000003" + std::to_string(n));
    make_segment(pg_wal_ + "/" + names.back(), static_cast<uint32_t>(n));
    SB_ASSERT_EXIT(push(pg_wal_ + "/" + names.back()), 0);
  }
  write_text(pg_wal_ + "/00000002.history", "1\t0/33000000\tno recovery target specified\n");
  SB_ASSERT_EXIT(push(pg_wal_ + "/00000002.history"), 0);

  // The first backup is obsolete; the second starts at ...35: 32 to 34 go.
  auto report = sb({"report", "obsolete", "--catalog", cat_, "--json"});
  SB_ASSERT_EXIT(report, 0);
  EXPECT_EQ(parse_json(report)["wal_files"].size(), 3u) << report.out;
  EXPECT_EQ(wal_records(cat_).size(), 6u) << "report obsolete removed something";
  auto del = sb({"delete", "obsolete", "--catalog", cat_, "--json"});
  SB_ASSERT_EXIT(del, 0);
  Json j = parse_json(del);
  ASSERT_EQ(j["wal_files"].size(), 3u) << del.out;
  std::vector<std::string> left;
  for (const auto& w : wal_records(cat_)) left.push_back(w.name);
  EXPECT_EQ(left, (std::vector<std::string>{"000000010000000000000035", "000000010000000000000036",
                                            "00000002.history"}));
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(exists(object_of(names[i])), i >= 3) << names[i];
  auto history = wal_record(cat_, "00000002.history");
  ASSERT_TRUE(history);
  EXPECT_TRUE(exists(history->stored_at));
}

// A kept backup keeps the WAL from its start segment on, and after `delete backup` of the
// newest one `delete obsolete` still leaves every segment the remaining backup needs.
TEST_F(WalArchive, KeptAndRemainingBackupsKeepTheirWalThroughDeletes) {
  SB_ASSERT_EXIT(configure({"retention", "redundancy", "1"}), 0);
  make_file(tmp_ / "src/base.dbf", 1 << 20, 9);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i) {
    auto b = sb({"backup", tmp_ / "src", "--catalog", cat_, "--json"});
    SB_ASSERT_EXIT(b, 0);
    ids.push_back(backup_id_of(parse_json(b)));
  }
  {
    auto st = engine::storage_for(storage::Location::local(cat_));
    ASSERT_TRUE(st);
    auto cat = catalog::Catalog::open(cat_, catalog::Create::no, **st);
    ASSERT_TRUE(cat) << cat.error().what;
    const char* starts[] = {"000000010000000000000033", "000000010000000000000035",
                            "000000010000000000000036"};
    for (size_t i = 0; i < ids.size(); ++i) {
      catalog::HotBackup h;
      h.backup_id = ids[i];
      h.database = "postgres";
      h.timeline = 1;
      h.start_wal = h.stop_wal = starts[i];
      ASSERT_TRUE((*cat)->add_hot(h));
    }
  }
  for (int n = 2; n <= 7; ++n) {
    const std::string name = "00000001000000000000003" + std::to_string(n);
    make_segment(pg_wal_ + "/" + name, static_cast<uint32_t>(n));
    SB_ASSERT_EXIT(push(pg_wal_ + "/" + name), 0);
  }
  auto left = [&] {
    std::vector<std::string> out;
    for (const auto& w : wal_records(cat_)) out.push_back(w.name.substr(22));
    return out;
  };
  SB_ASSERT_EXIT(sb({"keep", std::to_string(ids[0]), "--forever", "--catalog", cat_}), 0);
  // The middle backup is obsolete; the kept first one needs 33 on: only 32 goes.
  auto del = sb({"delete", "obsolete", "--catalog", cat_, "--json"});
  SB_ASSERT_EXIT(del, 0);
  EXPECT_EQ(parse_json(del)["backups"].size(), 1u) << del.out;
  EXPECT_EQ(left(), (std::vector<std::string>{"33", "34", "35", "36", "37"}));
  // Without the newest backup, the kept one is all that is left: its WAL stays.
  SB_ASSERT_EXIT(sb({"delete", "backup", std::to_string(ids[2]), "--catalog", cat_}), 0);
  EXPECT_EQ(left().size(), 5u) << "delete backup removes no WAL";
  auto again = sb({"delete", "obsolete", "--catalog", cat_, "--json"});
  SB_ASSERT_EXIT(again, 0);
  EXPECT_EQ(parse_json(again)["wal_files"].size(), 0u) << again.out;
  EXPECT_EQ(left(), (std::vector<std::string>{"33", "34", "35", "36", "37"}));
  for (const auto& n : left()) EXPECT_TRUE(exists(object_of("0000000100000000000000" + n))) << n;
}

TEST_F(WalArchive, HelpExplainsTheArgumentsAndExitCodes) {
  auto p = sb({"archive-push", "--help"});
  SB_ASSERT_EXIT(p, 0);
  EXPECT_TRUE(contains(p.out, "%p"));
  EXPECT_TRUE(contains(p.out, "Exit codes"));
  auto g = sb({"archive-get", "--help"});
  SB_ASSERT_EXIT(g, 0);
  EXPECT_TRUE(contains(g.out, "%f"));
  EXPECT_TRUE(contains(g.out, "1 not in the archive"));
}

TEST(WalArchiveCluster, SegmentsLandInTheArchiveAfterASwitch) {
  if (std::string why = PgCluster::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  std::string unreachable;
  ASSERT_TRUE(binary_reachable_by_postgres(&unreachable)) << unreachable;
  PgCluster pg(false);
  ASSERT_TRUE(pg.ok()) << pg.error();
  // The catalog and the archive where the postgres user can write them.
  const std::string cat = pg.socket_dir() + "/cat", dest = pg.socket_dir() + "/archive";
  SB_ASSERT_EXIT(sb({"configure", "destination", dest, "--catalog", cat}), 0);
  SB_ASSERT_EXIT(sb({"configure", "compression", "low", "--catalog", cat}), 0);
  fs::create_directories(dest);
  ASSERT_TRUE(PgCluster::give_to_postgres(cat) && PgCluster::give_to_postgres(dest));
  {
    std::ofstream conf(pg.data_dir() + "/postgresql.conf", std::ios::app);
    conf << "archive_mode = on\narchive_command = '" << binary()
         << " archive-push --catalog " << cat << " %p'\n";
  }
  ASSERT_TRUE(pg.start()) << pg.error();
  auto psql = [&](const std::string& sql) { return pg.psql(sql); };
  auto made = psql("create table t as select g from generate_series(1, 50000) g");
  SB_ASSERT_EXIT(made, 0);
  auto sw = psql("select pg_walfile_name(pg_switch_wal())");
  SB_ASSERT_EXIT(sw, 0);
  const std::string name = sw.out.substr(0, sw.out.find('\n'));
  ASSERT_EQ(name.size(), 24u) << sw.out;
  std::string stats;
  for (int i = 0; i < 120; ++i) {
    auto s = psql("select archived_count, last_archived_wal, failed_count from pg_stat_archiver");
    stats = s.out;
    if (s.exited(0) && contains(stats, name)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_TRUE(contains(stats, "|" + name + "|0")) << "pg_stat_archiver: " << stats;
  auto control = engine::read_pg_control(pg.data_dir());
  ASSERT_TRUE(control) << control.error().what;
  auto rec = wal_record(cat, name);
  ASSERT_TRUE(rec) << "the catalog has no record of " << name;
  EXPECT_EQ(rec->system_id, control->system_id);
  EXPECT_EQ(rec->size, 16u << 20);
  EXPECT_EQ(rec->flags & catalog::kWalCompressed, catalog::kWalCompressed);
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(control->system_id));
  EXPECT_TRUE(exists(dest + "/wal/" + id + "/" + name));
  // What the archive gives back is what PostgreSQL wrote.
  auto g = sb({"archive-get", "--catalog", cat, name, pg.socket_dir() + "/fetched"});
  SB_ASSERT_EXIT(g, 0);
  const std::string fetched = read_bytes(pg.socket_dir() + "/fetched");
  EXPECT_EQ(util::digest(fetched.data(), fetched.size()), rec->digest);
  EXPECT_TRUE(pg.stop()) << pg.error();
}

// PostgreSQL recovers a copy of the cluster from the archive: the copy, taken stopped before
// a table was made, has the table once its restore_command (archive-get) has given it every
// archived segment; the timeline history files it asks for and the archive lacks are
// answered with exit 1.
TEST(WalArchiveCluster, RecoveryThroughArchiveGetReplaysWhatWasArchived) {
  if (std::string why = PgCluster::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  std::string unreachable;
  ASSERT_TRUE(binary_reachable_by_postgres(&unreachable)) << unreachable;
  PgCluster pg(false);
  ASSERT_TRUE(pg.ok()) << pg.error();
  const std::string cat = pg.socket_dir() + "/cat", dest = pg.socket_dir() + "/archive";
  SB_ASSERT_EXIT(sb({"configure", "destination", dest, "--catalog", cat}), 0);
  SB_ASSERT_EXIT(sb({"keygen", pg.socket_dir() + "/key"}), 0);
  SB_ASSERT_EXIT(sb({"configure", "key-file", pg.socket_dir() + "/key", "--catalog", cat}), 0);
  SB_ASSERT_EXIT(sb({"configure", "compression", "low", "--catalog", cat}), 0);
  fs::create_directories(dest);
  ASSERT_TRUE(PgCluster::give_to_postgres(cat) && PgCluster::give_to_postgres(dest) &&
              PgCluster::give_to_postgres(pg.socket_dir() + "/key"));
  {
    std::ofstream conf(pg.data_dir() + "/postgresql.conf", std::ios::app);
    conf << "archive_mode = on\narchive_command = '" << binary()
         << " archive-push --catalog " << cat << " %p'\n";
  }
  auto psql = [&](const std::string& sql) { return pg.psql(sql); };
  ASSERT_TRUE(pg.start()) << pg.error();
  ASSERT_TRUE(pg.stop()) << pg.error();
  const std::string base = pg.copy_data("base");

  ASSERT_TRUE(pg.start()) << pg.error();
  SB_ASSERT_EXIT(psql("create table after_base as select g from generate_series(1, 30000) g"), 0);
  auto sw = psql("select pg_walfile_name(pg_switch_wal())");
  SB_ASSERT_EXIT(sw, 0);
  ASSERT_TRUE(pg.wait_archived(sw.out.substr(0, 24), std::chrono::seconds(60)))
      << "not archived: " << sw.out;
  ASSERT_TRUE(pg.stop()) << pg.error();

  // The copy recovers from the archive alone.
  for (const auto& e : fs::directory_iterator(base + "/pg_wal"))
    if (e.is_regular_file()) fs::remove(e.path());
  {
    std::ofstream conf(base + "/postgresql.conf", std::ios::app);
    conf << "archive_mode = off\nrestore_command = '" << binary()
         << " archive-get --catalog " << cat << " %f %p'\n";
  }
  write_text(base + "/recovery.signal", "");
  ASSERT_TRUE(PgCluster::give_to_postgres(base));
  auto started = pg.run("pg_ctl", {"-D", base, "-w", "-t", "120", "-l", pg.socket_dir() + "/base.log",
                                   "-o", "-k " + pg.socket_dir() + " -c listen_addresses=''",
                                   "start"});
  SB_ASSERT_EXIT(started, 0);
  std::string recovering = "t";
  for (int i = 0; i < 120 && recovering != "f"; ++i) {
    auto r = psql("select pg_is_in_recovery()");
    recovering = r.exited(0) ? r.out.substr(0, 1) : "t";
    if (recovering != "f") std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  auto count = psql("select count(*) from after_base");
  (void)pg.run("pg_ctl", {"-D", base, "-w", "-m", "fast", "stop"});
  EXPECT_EQ(recovering, "f") << read_bytes(pg.socket_dir() + "/base.log");
  SB_EXPECT_EXIT(count, 0);
  EXPECT_EQ(count.out, "30000\n") << read_bytes(pg.socket_dir() + "/base.log");
}

}  // namespace
}  // namespace stripeback::it
