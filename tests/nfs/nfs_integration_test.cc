// The stripeback binary with nfs:// sources and destinations against a real nfs-ganesha:
// round trips, multipath, errors, a server restarted mid-backup, a stopped server.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "tests/integration/it_util.h"
#include "tests/nfs/nfs_server.h"
#include "tests/support/pg_cluster.h"

namespace stripeback::it {
namespace {

namespace fs = std::filesystem;

// Files made in the export's directory before NFS sees them (new names only: changing
// what ganesha has cached behind its back is not safe).
std::vector<std::string> make_source(const std::string& rel, uint64_t scale, uint32_t seed) {
  const std::string dir = NfsServer::get().export_dir() + "/" + rel;
  make_file(dir + "/a.dbf", 9 * scale + 4096, seed);
  make_file(dir + "/sub/b.dbf", 5 * scale + 123, seed + 1);
  make_file(dir + "/sub/deeper/c.log", 2 * scale, seed + 2, 0600);
  make_file(dir + "/empty", 0, seed + 3);
  return files_under(dir);
}

// Where restore --to `root` puts a file that was backed up from the export.
std::string restored_from_nfs(const std::string& root, const std::string& local_original) {
  return root + "/127.0.0.1" + local_original;
}

Json backup_json(const std::vector<std::string>& args, RunResult* out = nullptr) {
  RunResult r = sb(args);
  if (out) *out = r;
  EXPECT_TRUE(r.exited(0)) << r.describe();
  return parse_json(r);
}

// Restores everything in t/cat to t/out and checks it equals t/src.
void expect_restores_source(const TempDir& t) {
  RunResult rr = sb({"restore", "--to", t / "out", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(t / "out", t / "src"));
}

TEST(NfsIntegration, BackupFromNfsToNfsAndRestoreLocallyIsIdentical) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs");
  auto files = make_source("rt1", 1 << 20, 11);
  RunResult br;
  Json j = backup_json({"backup", s.url_of("rt1"), "--to", s.url_of("pieces1"), "--channels",
                        "2", "--catalog", t / "cat", "--json"}, &br);
  ASSERT_EQ(j["status"].as_string(), "complete") << br.describe();
  EXPECT_EQ(j["files"].as_u64(), files.size());
  ASSERT_EQ(j["channels"].size(), 2u);
  uint64_t nfs_read = 0, nfs_written = 0;
  for (const auto& c : j["channels"].items()) {
    const Json* n = c.find("nfs");
    ASSERT_NE(n, nullptr) << br.out;
    EXPECT_EQ((*n)["servers"].as_string(), "127.0.0.1");
    EXPECT_GT(*(*n)["rpcs"].as_u64(), 0u);
    EXPECT_GE((*n)["max_latency_ms"].as_double(), (*n)["avg_latency_ms"].as_double());
    EXPECT_EQ((*n)["retries"].as_u64(), 0u);
    nfs_read += *(*n)["bytes_read"].as_u64();
    nfs_written += *(*n)["bytes_written"].as_u64();
  }
  EXPECT_EQ(nfs_read, total_size(files));
  EXPECT_GE(nfs_written, total_size(files));
  EXPECT_EQ(pieces_in(s.export_dir() + "/pieces1").size(), 2u);

  RunResult rr = sb({"restore", "--to", t / "out", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(rr, 0);
  for (const auto& f : files) EXPECT_TRUE(same_file(f, restored_from_nfs(t / "out", f)));
  EXPECT_EQ(files_under(t / "out").size(), files.size());

  // And from the NFS pieces into NFS: same bytes and modes; mtimes to the microsecond.
  RunResult rn = sb({"restore", "--to", s.url_of("back1"), "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(rn, 0);
  for (const auto& f : files) {
    std::string back = s.export_dir() + "/back1/127.0.0.1" + f;
    EXPECT_EQ(testing::read_file(back), testing::read_file(f)) << back;
    struct stat a {}, b {};
    ASSERT_EQ(::stat(f.c_str(), &a), 0);
    ASSERT_EQ(::stat(back.c_str(), &b), 0) << back;
    EXPECT_EQ(a.st_mode, b.st_mode) << back;
    EXPECT_EQ(a.st_mtim.tv_sec, b.st_mtim.tv_sec) << back;
    EXPECT_EQ(a.st_mtim.tv_nsec / 1000, b.st_mtim.tv_nsec / 1000) << back;
  }
  RunResult again = sb({"restore", "--to", s.url_of("back1"), "--catalog", t / "cat"});
  SB_EXPECT_EXIT(again, 2);
  EXPECT_TRUE(contains(again.err, "refusing to overwrite"));
}

TEST(NfsIntegration, BackupLocalToNfsAndRestoreIsIdentical) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs");
  make_file(t / "src/x.dbf", 7 << 20, 21);
  make_file(t / "src/y/z.dbf", (3 << 20) + 17, 22, 0640);
  RunResult br = sb({"backup", t / "src", "--to", s.url_of("pieces2"), "--channels", "2",
                     "--max-piece-size", "4M", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(br, 0);
  EXPECT_TRUE(contains(br.out, "nfs: servers 127.0.0.1"));
  EXPECT_GE(pieces_in(s.export_dir() + "/pieces2").size(), 3u);
  RunResult rr = sb({"restore", "--to", t / "out", "--catalog", t / "cat", "--channels", "2"});
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(t / "out", t / "src"));
  // Each restore channel connects on first use: that is no outage to warn about.
  EXPECT_FALSE(contains(rr.err, "stopped answering")) << rr.err;
}

// Sums one numeric field of the "nfs" objects of a backup's channels.
uint64_t nfs_total(const Json& j, const char* field) {
  uint64_t n = 0;
  for (const auto& c : j["channels"].items())
    if (const Json* o = c.find("nfs")) n += *(*o)[field].as_u64();
  return n;
}

TEST(NfsIntegration, RestoreToNfsTakesLongNamesAndLeavesNoTemporaryOrJournal) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs-names");
  std::vector<std::string> files;
  for (size_t len : {239u, 255u}) {
    files.push_back(t / "src/" + std::string(len, static_cast<char>('a' + len % 26)));
    make_file(files.back(), 50000 + len, static_cast<uint32_t>(len));
  }
  SB_ASSERT_EXIT(sb({"backup", t / "src", "--to", t / "p", "--catalog", t / "cat"}), 0);
  RunResult r = sb({"restore", "--to", s.url_of("back-names"), "--catalog", t / "cat"});
  SB_ASSERT_EXIT(r, 0);
  for (const auto& f : files)
    EXPECT_EQ(testing::read_file(s.export_dir() + "/back-names" + f), testing::read_file(f)) << f;
  for (const auto& e : entries_under(s.export_dir() + "/back-names"))
    EXPECT_EQ(e.find(".sbrestore-"), std::string::npos) << "left behind: " << e;
}

// restore --delta into an NFS target: an older backup's tree there is brought to a newer
// one by writing only the changed pages, through the same Directory seam as locally.
TEST(NfsIntegration, DeltaRestoreIntoNfsWritesOnlyTheChangedPages) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs-delta");
  const std::string a = t / "src/a.dbf", b = t / "src/sub/b.dbf";
  make_file(a, (6u << 20) + 4096, 81);
  make_file(b, 3u << 20, 82);
  auto backup = [&] {
    Json j = backup_json({"backup", t / "src", "--to", t / "p", "--catalog", t / "cat", "--level",
                          "0", "--change-unit", "8K", "--json"});
    return std::to_string(backup_id_of(j));
  };
  const std::string id0 = backup();
  FILE* f = std::fopen(a.c_str(), "r+");
  ASSERT_NE(f, nullptr);
  for (long page : {3l, 300l, 700l}) {
    std::fseek(f, page * 8192, SEEK_SET);
    std::fputs(std::string(8192, 'n').c_str(), f);
  }
  std::fclose(f);
  const std::string id1 = backup();
  SB_ASSERT_EXIT(sb({"restore", "--backup", id0, "--to", s.url_of("delta1"), "--catalog",
                     t / "cat"}),
                 0);
  RunResult r = sb({"restore", "--delta", "--backup", id1, "--to", s.url_of("delta1"),
                    "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(*j["bytes_written"].as_u64(), 3u * 8192);
  EXPECT_EQ(*j["delta"]["updated"].as_u64(), 1u);
  EXPECT_EQ(*j["delta"]["unchanged"].as_u64(), 1u);
  for (const auto& file : {a, b})
    EXPECT_EQ(testing::read_file(s.export_dir() + "/delta1" + file), testing::read_file(file))
        << file;
  for (const auto& e : entries_under(s.export_dir() + "/delta1"))
    EXPECT_EQ(e.find(".sbrestore-"), std::string::npos) << "left behind: " << e;
}

// Level backups with NFS on either side. A local source into NFS pieces: the level 1
// reads its parent's maps from the pieces on the server and writes only the changed units.
// An NFS source (left unchanged: files are only made behind ganesha's back before it sees
// them): its level 1 holds file records only. Both chains restore identical.
TEST(NfsIntegration, LevelOneWithNfsPiecesAndAnNfsSource) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs-inc");
  const std::string a = t / "src/a.dbf";
  make_file(a, (4u << 20) + 100, 93);
  make_file(t / "src/b.dbf", 1u << 20, 94);
  auto local = [&](const std::string& level) {
    return backup_json({"backup", t / "src", "--to", s.url_of("inc-pieces"), "--catalog",
                        t / "cat", "--level", level, "--json"});
  };
  local("0");
  FILE* f = std::fopen(a.c_str(), "r+");
  ASSERT_NE(f, nullptr);
  for (long at : {100000l, 3000000l}) {
    std::fseek(f, at, SEEK_SET);
    std::fputs(std::string(8192, 'v').c_str(), f);
  }
  std::fclose(f);
  Json l1 = local("1");
  ASSERT_EQ(l1["parents"].size(), 1u);
  uint64_t units = 0;
  for (const auto& fc : l1["file_changes"].items()) units += *fc["units_written"].as_u64();
  EXPECT_EQ(units, 2u);
  expect_restores_source(t);

  auto files = make_source("inc-src", 1u << 20, 91);
  auto remote = [&](const std::string& level) {
    return backup_json({"backup", s.url_of("inc-src"), "--to", t / "p2", "--catalog",
                        t / "cat2", "--level", level, "--channels", "2", "--json"});
  };
  remote("0");
  Json same = remote("1");
  EXPECT_EQ(same["parents"].size(), 1u);
  for (const auto& fc : same["file_changes"].items())
    EXPECT_EQ(fc["change"].as_string(), "unchanged") << fc["path"].as_string();
  RunResult rr = sb({"restore", "--to", t / "out2", "--catalog", t / "cat2"});
  SB_ASSERT_EXIT(rr, 0);
  for (const auto& file : files)
    EXPECT_EQ(testing::read_file(restored_from_nfs(t / "out2", file)), testing::read_file(file))
        << file;
}

// Page checks of a PostgreSQL data directory read from the server find the same corrupt
// pages as of the same directory read locally: the data directory is found on the server
// (PG_VERSION and global/pg_control read there) and the relation files are told by their
// paths in the export.
TEST(NfsIntegration, ValidateCheckLogicalOfAClusterOnTheServerFindsTheCorruptPages) {
  SB_REQUIRE_NFS();
  if (std::string why = testing::PgCluster::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  std::string error;
  testing::PgCluster* pg = testing::PgCluster::shared(1, &error);
  ASSERT_NE(pg, nullptr) << error;
  auto& s = NfsServer::get();
  // A new name on each run (--gtest_repeat): what ganesha has seen must not change.
  static int run = 0;
  const std::string rel = "pgcheck" + std::to_string(++run);
  const std::string data = s.export_dir() + "/" + rel;
  fs::copy(pg->data_dir(), data, fs::copy_options::recursive);
  std::string big;
  uintmax_t size = 0;
  for (const auto& e : fs::recursive_directory_iterator(data + "/base"))
    if (e.is_regular_file() && e.file_size() > size &&
        e.path().filename().string().find_first_not_of("0123456789") == std::string::npos) {
      size = e.file_size();
      big = e.path().string();
    }
  ASSERT_GE(size, 8192u * 40) << big;
  {
    std::fstream f(big, std::ios::in | std::ios::out | std::ios::binary);
    for (uint64_t block : {2u, 33u}) {
      f.seekp(static_cast<std::streamoff>(block * 8192 + 5000));
      f.write("CORRUPTED", 9);
    }
  }
  TempDir t("sbnfs-pgcheck");
  using Found = std::set<std::pair<std::string, uint64_t>>;
  auto found = [&](const std::string& source, const std::string& prefix, Json* out) {
    RunResult r = sb({"backup", "--validate", "--check-logical", source, "--catalog", t / "cat",
                      "--channels", "2", "--json"});
    EXPECT_TRUE(r.exited(1)) << r.describe();
    *out = parse_json(r);
    Found f;
    for (const auto& c : (*out)["corrupt"].items()) {
      // A file on the server is named by its URL: the export's query (ports) ends it.
      std::string file = c["file"].as_string();
      file = file.substr(0, file.find('?'));
      EXPECT_EQ(file.rfind(prefix, 0), 0u) << file;
      f.insert({file.substr(prefix.size()), *c["block"].as_u64()});
    }
    return f;
  };
  Json local, remote;
  const Found here = found(data, data, &local);
  const std::string url = s.url_of(rel);
  const Found there = found(url, url.substr(0, url.find('?')), &remote);
  const std::string in_data = big.substr(data.size());
  EXPECT_EQ(here, (Found{{in_data, 2}, {in_data, 33}}));
  EXPECT_EQ(there, here);
  EXPECT_EQ(remote["check_logical"].as_string(), "postgres");
  EXPECT_EQ(*remote["pages_checked"].as_u64(), *local["pages_checked"].as_u64());
  EXPECT_GT(*remote["pages_checked"].as_u64(), 1000u);
}

TEST(NfsIntegration, UnstableWritesAreCommittedAndStableWritesNeedNoCommit) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs");
  make_file(t / "src/x.dbf", 20 << 20, 23);
  // Default: UNSTABLE writes, made durable by COMMITs (at least one per 8 MiB written).
  Json u = backup_json({"backup", t / "src", "--to", s.url_of("pieces2u"), "--catalog",
                        t / "cat", "--json"});
  EXPECT_GE(nfs_total(u, "commits"), 2u);
  EXPECT_EQ(nfs_total(u, "rewritten_bytes"), 0u);
  // FILE_SYNC writes are durable as they are answered: the engine sends no COMMIT.
  Json st = backup_json({"backup", t / "src", "--to", s.url_of("pieces2s"), "--catalog",
                         t / "cat", "--json", "--nfs-stable-writes"});
  EXPECT_EQ(nfs_total(st, "commits"), 0u);
  EXPECT_GE(nfs_total(st, "bytes_written"), 20u << 20);
  expect_restores_source(t);
}

TEST(NfsIntegration, NewWriteVerifierAtCommitMakesTheDataWrittenAgain) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_TEST_NFS_VERIFIER_CHANGE");
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs");
  make_file(t / "src/x.dbf", 12 << 20, 24);
  make_file(t / "src/y.dbf", (5 << 20) + 99, 25);
  // The hook makes the first COMMIT reply carry another verifier, as after a server
  // restart between the WRITEs and the COMMIT: the unstable data must be sent again.
  RunResult br = sb({"backup", t / "src", "--to", s.url_of("pieces2v"), "--catalog", t / "cat",
                     "--json"},
                    {{"STRIPEBACK_TEST_NFS_VERIFIER_CHANGE", "1"}});
  SB_ASSERT_EXIT(br, 0);
  Json j = parse_json(br);
  EXPECT_GT(nfs_total(j, "rewritten_bytes"), 0u) << br.out;
  EXPECT_TRUE(contains(br.err, "new write verifier")) << br.err;
  EXPECT_TRUE(contains(br.err, "pieces2v/sb")) << br.err;
  expect_restores_source(t);
  RunResult v = sb({"validate", "--catalog", t / "cat"});
  SB_EXPECT_EXIT(v, 0);
}

TEST(NfsIntegration, MultipathSpreadsChannelsOverServerAddresses) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs");
  make_file(t / "src/a", 4 << 20, 31);
  make_file(t / "src/b", 4 << 20, 32);
  std::string url = s.url_of("pieces3");
  url.replace(url.find("127.0.0.1"), 9, "127.0.0.1,localhost");
  RunResult br;
  Json j = backup_json({"backup", t / "src", "--to", url, "--channels", "2", "--catalog",
                        t / "cat", "--json"}, &br);
  std::set<std::string> servers;
  for (const auto& c : j["channels"].items())
    if (const Json* n = c.find("nfs")) servers.insert((*n)["servers"].as_string());
  EXPECT_EQ(servers, (std::set<std::string>{"127.0.0.1", "localhost"})) << br.out;
  expect_restores_source(t);
}

TEST(NfsIntegration, BadUrlMissingExportAndPermissionErrorsAreClear) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs");
  make_file(t / "src/a", 4096, 41);
  auto run = [&](const std::string& src, const std::string& to) {
    return sb({"backup", src, "--to", to, "--catalog", t / "cat", "--nfs-timeout", "2s",
               "--nfs-retry", "2s"});
  };
  RunResult bad = run(t / "src", "nfs://127.0.0.1:22049/x");
  SB_EXPECT_EXIT(bad, 2);
  EXPECT_TRUE(contains(bad.err, "invalid NFS URL 'nfs://127.0.0.1:22049/x'"));
  EXPECT_TRUE(contains(bad.err, "nfsport"));

  RunResult v4 = run(s.url_of("nothing") + "&version=4", t / "out");
  SB_EXPECT_EXIT(v4, 2);
  EXPECT_TRUE(contains(v4.err, "version 4 is not supported"));

  RunResult missing = run("nfs://127.0.0.1/no/such/export" + s.query(), t / "out");
  SB_EXPECT_EXIT(missing, 2);
  EXPECT_TRUE(contains(missing.err, "backup source 'nfs://127.0.0.1/no/such/export"));

  // Root squashed to nobody cannot create pieces in a root-owned 0755 directory.
  ASSERT_EQ(::mkdir((s.export_dir() + "/locked").c_str(), 0755), 0);
  std::string nobody = s.url_of("locked/pieces") + "&uid=65534&gid=65534";
  RunResult denied = run(t / "src", nobody);
  EXPECT_FALSE(denied.exited(0)) << denied.describe();
  EXPECT_TRUE(denied.exited(1) || denied.exited(2)) << denied.describe();
  EXPECT_TRUE(contains(denied.err, "locked/pieces"));
  EXPECT_TRUE(contains(denied.err, "ACCES")) << denied.err;
}

TEST(NfsIntegration, ServerRestartedMidBackupIsSurvivedByteExact) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs");
  make_file(t / "src/big1", 24 << 20, 51);
  make_file(t / "src/big2", 24 << 20, 52);
  // The rate limit stretches the backup to several seconds so the restart lands inside it.
  auto child = sb_start({"backup", t / "src", "--to", s.url_of("pieces5"), "--channels", "2",
                         "--rate", "8M", "--catalog", t / "cat", "--json", "--nfs-timeout",
                         "2s", "--nfs-retry", "30s"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_TRUE(child->running()) << "the backup ended before the restart";
  ASSERT_TRUE(s.restart());
  RunResult r = child->wait();
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_GE(nfs_total(j, "reconnects"), 1u) << r.out;
  expect_restores_source(t);
}

TEST(NfsIntegration, StoppedServerFailsTheBackupClearlyWithinTheDeadline) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs");
  make_file(t / "src/big", 32 << 20, 61);
  auto t0 = std::chrono::steady_clock::now();
  auto child = sb_start({"backup", t / "src", "--to", s.url_of("pieces6"), "--channels", "1",
                         "--rate", "8M", "--catalog", t / "cat", "--nfs-timeout", "500ms",
                         "--nfs-retry", "2s"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  s.pause();
  RunResult r = child->wait();
  auto elapsed = std::chrono::steady_clock::now() - t0;
  s.resume();
  SB_EXPECT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err + r.out, "NFS server 127.0.0.1 did not answer"));
  EXPECT_TRUE(contains(r.err + r.out, "pieces6/sb"));
  EXPECT_LT(elapsed, std::chrono::seconds(12));
  // Nothing half-written is left recorded: the catalog shows the backup failed.
  RunResult list = sb({"list", "--catalog", t / "cat"});
  EXPECT_TRUE(contains(list.out, "failed")) << list.describe();
}

// The verdict of a backup whose NFS source stops answering names the server's reads, with
// the evidence (the channel waited for reads), in the failed backup's --json.
TEST(NfsIntegration, VerdictOfABackupFromAStoppedServerIsTheSourceRead) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs-verdict");
  make_source("verdict-src", 8u << 20, 71);
  auto child = sb_start({"backup", s.url_of("verdict-src"), "--to", t / "p", "--channels", "1",
                         "--rate", "32M", "--catalog", t / "cat", "--nfs-timeout", "500ms",
                         "--nfs-retry", "3s", "--json"});
  // The server stops once the channel has read something (a fixed delay could fall before
  // the first read on a loaded machine, and the verdict would then have nothing to judge).
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool reading = false;
  while (!reading && std::chrono::steady_clock::now() < limit) {
    RunResult st = sb({"status", "--catalog", t / "cat", "--json"});
    if (st.exited(0)) {
      Json jobs = parse_json(st)["jobs"];
      reading = jobs.size() == 1 && jobs[0]["bytes_done"].as_u64().value_or(0) > 0;
    }
    if (!reading) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(reading) << "the backup read nothing within 30 s";
  s.pause();
  RunResult r = child->wait();
  s.resume();
  SB_EXPECT_EXIT(r, 1);
  Json j = parse_json(r);
  EXPECT_EQ(j["bound_by"].as_string(), "read") << r.out;
  EXPECT_EQ(j["verdict"]["stage"].as_string(), "source read (nfs)") << r.out;
  EXPECT_GT(j["verdict"]["busy"]["wait_read"].as_double(), 0.5) << r.out;
}

// A server that stops answering mid-backup and stays away past one more retry window: the
// failed backup cannot remove its pieces and names them (count, size, where, which); once
// the server is back, the next backup to the same export names them again.
TEST(NfsIntegration, OutageLeavesPiecesThatAreNamedNowAndByTheNextBackup) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs");
  make_file(t / "src/big", 32 << 20, 81);
  const std::string dest = s.url_of("pieces8");
  auto t0 = std::chrono::steady_clock::now();
  auto child = sb_start({"backup", t / "src", "--to", dest, "--channels", "2", "--rate", "4M",
                         "--catalog", t / "cat", "--nfs-timeout", "500ms", "--nfs-retry", "2s",
                         "--json"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ASSERT_TRUE(child->running()) << "the backup ended before the outage";
  s.pause();
  RunResult r = child->wait();
  auto elapsed = std::chrono::steady_clock::now() - t0;
  s.resume();
  SB_ASSERT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, "NFS server 127.0.0.1 did not answer"));
  // The failure, then one more retry window for the first removal, and no more.
  EXPECT_LT(elapsed, std::chrono::seconds(15));

  const auto left = pieces_in(s.export_dir() + "/pieces8");
  ASSERT_FALSE(left.empty()) << "the outage left nothing to name";
  const auto left_list = base_names(left);
  const std::set<std::string> left_names(left_list.begin(), left_list.end());
  Json j = parse_json(r);
  auto w = warnings_with(j, "of this failed backup remain in '");
  ASSERT_EQ(w.size(), 1u) << r.out;
  EXPECT_TRUE(contains(w[0], std::to_string(left.size()) + " piece(s) (")) << w[0];
  EXPECT_TRUE(contains(w[0], "pieces8")) << w[0];
  EXPECT_TRUE(contains(w[0], "they could not be removed (unable to remove ")) << w[0];
  EXPECT_TRUE(contains(w[0], "did not answer")) << w[0];
  EXPECT_TRUE(contains(w[0], "remove them to reclaim the space")) << w[0];
  auto named = quoted_pieces(w[0]);
  EXPECT_EQ(std::set<std::string>(named.begin(), named.end()), left_names) << w[0];

  RunResult next = sb({"backup", t / "src", "--to", dest, "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(next, 0);
  auto wn =
      warnings_with(parse_json(next), "of backups in this catalog that failed or were killed");
  ASSERT_EQ(wn.size(), 1u) << next.out;
  EXPECT_TRUE(contains(wn[0], std::to_string(left.size()) + " piece(s) (")) << wn[0];
  auto named_next = quoted_pieces(wn[0]);
  EXPECT_EQ(std::set<std::string>(named_next.begin(), named_next.end()), left_names) << wn[0];
}

TEST(NfsIntegration, CancelDuringAnOutageDoesNotWaitOutTheRetryWindow) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs");
  make_file(t / "src/big", 32 << 20, 71);
  auto child = sb_start({"backup", t / "src", "--to", s.url_of("pieces7"), "--channels", "1",
                         "--rate", "8M", "--catalog", t / "cat", "--nfs-timeout", "500ms",
                         "--nfs-retry", "60s"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  s.pause();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto t0 = std::chrono::steady_clock::now();
  child->kill(SIGTERM);
  RunResult r = child->wait();
  auto elapsed = std::chrono::steady_clock::now() - t0;
  s.resume();
  EXPECT_FALSE(r.exited(0)) << r.describe();
  EXPECT_LT(elapsed, std::chrono::seconds(10)) << r.describe();
}

}  // namespace
}  // namespace stripeback::it

namespace stripeback::it {
namespace {

TEST(NfsIntegration, BenchNfsReportsBothPathsAndRatios) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  ASSERT_EQ(::mkdir((s.export_dir() + "/bench").c_str(), 0755), 0);
  RunResult r = sb({"bench", "nfs", "--kernel-path", s.export_dir() + "/bench", "--nfs-url",
                    s.url_of("bench"), "--channels", "2", "--size", "16M", "--write", "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_FALSE(j["kernel_is_nfs_mount"].as_bool());
  ASSERT_EQ(j["runs"].size(), 4u) << r.out;
  std::set<std::string> seen;
  for (const auto& run : j["runs"].items()) {
    seen.insert(run["op"].as_string() + "/" + run["path"].as_string());
    EXPECT_EQ(run["bytes"].as_u64(), 16u << 20) << r.out;
    EXPECT_GT(run["wall_s"].as_double(), 0.0);
    EXPECT_GT(run["mb_per_s"].as_double(), 0.0);
    EXPECT_GE(run["cpu_s_per_gib"].as_double(), 0.0);
    EXPECT_GE(run["ctx_switches_per_gib"].as_double(), 0.0);
    EXPECT_GE(run["iowait_share"].as_double(), 0.0);
    EXPECT_LE(run["iowait_share"].as_double(), 1.0);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"read/kernel", "read/libnfs", "write/kernel",
                                         "write/libnfs"}));
  EXPECT_GT(j["ratios"]["read"]["mb_per_s"].as_double(), 0.0);
  EXPECT_GT(j["ratios"]["write"]["cpu_s_per_gib"].as_double(), 0.0);
  // Written files are removed again; the read set stays for the next run.
  auto left = files_under(s.export_dir() + "/bench");
  EXPECT_EQ(left.size(), 2u);

  RunResult text = sb({"bench", "nfs", "--kernel-path", s.export_dir() + "/bench", "--nfs-url",
                       s.url_of("bench"), "--channels", "2", "--size", "16M"});
  SB_ASSERT_EXIT(text, 0);
  EXPECT_TRUE(contains(text.out, "NOT an NFS mount"));
  EXPECT_TRUE(contains(text.out, "context switches/GiB"));

  RunResult bad = sb({"bench", "nfs", "--kernel-path", s.export_dir() + "/bench", "--nfs-url",
                      "nfs://127.0.0.1/nope" + s.query()});
  SB_EXPECT_EXIT(bad, 2);
  EXPECT_TRUE(contains(bad.err, "--nfs-url 'nfs://127.0.0.1/nope"));
}

}  // namespace
// Pieces on NFS may be compressed and encrypted like local ones: validate and restore
// read them back through libnfs with the key, and refuse a wrong one.
TEST(NfsIntegration, CompressedEncryptedPiecesOnNfsValidateAndRestore) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  TempDir t("sbnfs");
  make_file(t / "src/e.dbf", (5 << 20) + 99, 41);
  SB_ASSERT_EXIT(sb({"keygen", t / "k.key"}), 0);
  SB_ASSERT_EXIT(sb({"keygen", t / "other.key"}), 0);
  RunResult br = sb({"backup", t / "src", "--to", s.url_of("pieces-enc"), "--catalog", t / "cat",
                     "--compress", "auto", "--encrypt", "--key-file", t / "k.key"});
  SB_ASSERT_EXIT(br, 0);
  RunResult vr = sb({"validate", "--catalog", t / "cat", "--key-file", t / "k.key"});
  SB_EXPECT_EXIT(vr, 0);
  RunResult wr = sb({"restore", "--to", t / "out", "--catalog", t / "cat", "--key-file",
                     t / "other.key"});
  SB_EXPECT_EXIT(wr, 4);
  EXPECT_FALSE(exists(t / "out"));
  RunResult rr = sb({"restore", "--to", t / "out", "--catalog", t / "cat", "--key-file",
                     t / "k.key"});
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(t / "out", t / "src"));
}

}  // namespace stripeback::it
