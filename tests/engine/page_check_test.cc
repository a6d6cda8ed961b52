// The PostgreSQL page validator against a real PostgreSQL 15 cluster (initdb
// --data-checksums, pgbench data): pg_control read as pg_controldata reads it, every page
// of a clean cluster valid, corrupt pages found exactly as pg_checksums --check finds them,
// a broken header with a valid checksum caught, which files are relation files; and which
// pages that fail are corrupt and which newer, by the cluster's state.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "engine/transform/page_check.h"
#include "tests/support/pg_cluster.h"
#include "tests/support/temp_dir.h"

namespace stripeback::engine {
namespace {

namespace fs = std::filesystem;
using stripeback::testing::PgCluster;

class PageCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PgCluster::skip_reason(); !why.empty()) GTEST_SKIP() << why;
    std::string error;
    cluster_ = PgCluster::shared(3, &error);
    ASSERT_NE(cluster_, nullptr) << error;
  }
  static std::string data() { return cluster_->data_dir(); }

  // (file, block) of every page `v` finds invalid below `dir`, with the count checked.
  static std::map<std::pair<std::string, uint64_t>, std::string> scan(const PageValidator& v,
                                                                      const std::string& dir,
                                                                      uint64_t* pages) {
    std::map<std::pair<std::string, uint64_t>, std::string> bad;
    std::vector<std::byte> page(v.page_size());
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file() || !v.checks(e.path().string())) continue;
      std::ifstream in(e.path(), std::ios::binary);
      for (uint64_t off = 0;; off += page.size()) {
        in.read(reinterpret_cast<char*>(page.data()), static_cast<std::streamsize>(page.size()));
        if (in.gcount() != static_cast<std::streamsize>(page.size())) break;
        ++*pages;
        std::string why = v.check(e.path().string(), off, page.data());
        if (!why.empty()) bad[{e.path().string(), off / page.size()}] = why;
      }
    }
    return bad;
  }

  // The blocks pg_checksums --check reports (file, block number in the file).
  static std::set<std::pair<std::string, uint64_t>> pg_checksums(const std::string& dir,
                                                                 int* exit_code) {
    return cluster_->pg_checksums_failures(dir, exit_code);
  }

  static void write_at(const std::string& path, uint64_t off, const std::string& bytes) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(off));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  // The largest relation file of the cluster's database directory (pgbench_accounts).
  static std::string largest_relation(const std::string& dir, const PageValidator& v) {
    std::string best;
    uintmax_t size = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir + "/base"))
      if (e.is_regular_file() && v.checks(e.path().string()) && e.file_size() > size) {
        size = e.file_size();
        best = e.path().string();
      }
    return best;
  }

  static inline PgCluster* cluster_ = nullptr;
};

TEST_F(PageCheck, ControlFileReadsAsPgControldataShowsIt) {
  auto c = read_pg_control(data());
  ASSERT_TRUE(c) << c.error().what;
  auto r = cluster_->run("pg_controldata", {data()});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  auto field = [&](const std::string& name) {
    size_t at = r.out.find(name + ":");
    if (at == std::string::npos) return std::string("(missing)");
    at = r.out.find_first_not_of(" \t", at + name.size() + 1);
    return r.out.substr(at, r.out.find('\n', at) - at);
  };
  EXPECT_EQ(std::to_string(c->page_size), field("Database block size"));
  EXPECT_EQ(std::to_string(c->segment_pages), field("Blocks per segment of large relation"));
  EXPECT_EQ(std::to_string(c->checksum_version), field("Data page checksum version"));
  char lsn[64];
  std::snprintf(lsn, sizeof lsn, "%X/%X", static_cast<unsigned>(c->checkpoint_lsn >> 32),
                static_cast<unsigned>(c->checkpoint_lsn & 0xffffffffu));
  EXPECT_EQ(lsn, field("Latest checkpoint location"));
  EXPECT_EQ(field("Database cluster state"), "shut down");
  EXPECT_EQ(c->state, PgState::shut_down);
  // A damaged control file is refused, not half-read.
  stripeback::testing::TempDir t("sbpg-control");
  fs::create_directories(t / "global");
  fs::copy_file(data() + "/global/pg_control", t / "global/pg_control");
  write_at(t / "global/pg_control", 100, "x");
  auto bad = read_pg_control(t.path());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what.find("fails its CRC check"), std::string::npos) << bad.error().what;
}

TEST_F(PageCheck, EveryPageOfACleanClusterIsValid) {
  auto v = postgres_validator(data());
  ASSERT_TRUE(v) << v.error().what;
  uint64_t pages = 0;
  auto bad = scan(**v, data(), &pages);
  EXPECT_TRUE(bad.empty()) << bad.size() << " invalid, e.g. " << bad.begin()->first.first
                           << " block " << bad.begin()->first.second << ": "
                           << bad.begin()->second;
  EXPECT_GT(pages, 5000u) << "pgbench at scale 3 has about 6500 pages";
  int code = -1;
  EXPECT_TRUE(pg_checksums(data(), &code).empty());
  EXPECT_EQ(code, 0);
}

TEST_F(PageCheck, CorruptPagesAreTheBlocksPgChecksumsReports) {
  const std::string copy = cluster_->copy_data("corrupt");
  auto v = postgres_validator(copy);
  ASSERT_TRUE(v) << v.error().what;
  const std::string accounts = largest_relation(copy, **v);
  ASSERT_FALSE(accounts.empty());
  const std::string other = copy + "/global/1262";  // pg_database
  ASSERT_TRUE(fs::exists(other));
  const uint32_t ps = (*v)->page_size();
  for (uint64_t block : {1u, 7u, 100u}) write_at(accounts, block * ps + 4000, "CORRUPT");
  write_at(other, 0 * ps + 5000, "zz");
  uint64_t pages = 0;
  auto bad = scan(**v, copy, &pages);
  std::set<std::pair<std::string, uint64_t>> ours;
  for (const auto& [at, why] : bad) {
    ours.insert(at);
    EXPECT_NE(why.find("checksum mismatch: stored 0x"), std::string::npos) << why;
  }
  EXPECT_EQ(ours, (std::set<std::pair<std::string, uint64_t>>{
                      {accounts, 1}, {accounts, 7}, {accounts, 100}, {other, 0}}));
  int code = -1;
  EXPECT_EQ(pg_checksums(copy, &code), ours) << "the same files and blocks";
  EXPECT_EQ(code, 1);
}

TEST_F(PageCheck, BrokenHeaderWithAValidChecksumIsABadHeader) {
  const std::string copy = cluster_->copy_data("header");
  auto v = postgres_validator(copy);
  ASSERT_TRUE(v) << v.error().what;
  const std::string accounts = largest_relation(copy, **v);
  const uint32_t ps = (*v)->page_size();
  std::vector<std::byte> page(ps);
  {
    std::ifstream in(accounts, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(3 * ps));
    in.read(reinterpret_cast<char*>(page.data()), ps);
  }
  // pd_lower past pd_upper, and the checksum made right for it.
  const auto upper = static_cast<uint16_t>(static_cast<uint16_t>(page[14]) |
                                          static_cast<uint16_t>(page[15]) << 8);
  const uint16_t lower = static_cast<uint16_t>(upper + 8);
  page[12] = static_cast<std::byte>(lower & 0xff);
  page[13] = static_cast<std::byte>(lower >> 8);
  const uint16_t sum = pg_page_checksum(page.data(), ps, 3);
  page[8] = static_cast<std::byte>(sum & 0xff);
  page[9] = static_cast<std::byte>(sum >> 8);
  write_at(accounts, 3 * ps, std::string(reinterpret_cast<const char*>(page.data()), ps));
  std::string why = (*v)->check(accounts, 3 * ps, page.data());
  EXPECT_NE(why.find("bad header: pd_lower"), std::string::npos) << why;
  int code = -1;
  EXPECT_TRUE(pg_checksums(copy, &code).empty()) << "its checksum is valid";
  EXPECT_EQ(code, 0);
}

TEST_F(PageCheck, OnlyRelationFilesAreChecked) {
  auto v = postgres_validator(data());
  ASSERT_TRUE(v) << v.error().what;
  const std::string d = data();
  for (const char* yes : {"/base/1/1259", "/base/1/1259_fsm", "/base/1/1259_vm",
                          "/base/5/16384.1", "/base/5/16384_init", "/global/1262",
                          "/pg_tblspc/16500/PG_15_202209061/5/16501"})
    EXPECT_TRUE((*v)->checks(d + yes)) << yes;
  for (const char* no : {"/pg_wal/000000010000000000000001", "/postgresql.conf", "/PG_VERSION",
                         "/base/1/pg_filenode.map", "/base/1/PG_VERSION", "/global/pg_control",
                         "/base/1/t3_1234", "/base/1/1259.x", "/pg_xact/0000", "/base/1259",
                         "/base/x/1259"})
    EXPECT_FALSE((*v)->checks(d + no)) << no;
  EXPECT_FALSE((*v)->checks("/elsewhere/base/1/1259"));
  // A new page is valid when all zeros, not otherwise.
  std::vector<std::byte> zero((*v)->page_size());
  EXPECT_EQ((*v)->check(d + "/base/1/1259", 0, zero.data()), "");
  zero[100] = std::byte{1};
  EXPECT_NE((*v)->check(d + "/base/1/1259", 0, zero.data()).find("not all zeros"),
            std::string::npos);
}

TEST_F(PageCheck, AutoFindsTheDataDirectoryAboveASourceAndNamesWhatItCannot) {
  auto below = make_validator("auto", {data() + "/base"});
  ASSERT_TRUE(below) << below.error().what;
  EXPECT_STREQ((*below)->name(), "postgres");
  auto none = make_validator("auto", {"/usr/share/doc"});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().what.find("no source is or lies in a PostgreSQL data directory"),
            std::string::npos);
  auto unknown = make_validator("oracle", {data()});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().what.find("unknown page format 'oracle'"), std::string::npos);
}

// The judgement on a page that failed every read, by the cluster's state when the backup
// began (no cluster needed: pg_control's fields are given).
PgControl control(PgState state, uint64_t checkpoint) {
  PgControl c;
  c.page_size = 8192;
  c.segment_pages = 131072;
  c.checksum_version = 1;
  c.checkpoint_lsn = checkpoint;
  c.state = state;
  return c;
}

constexpr uint64_t kCheckpoint = 0x17414F8;  // 0/17414F8
const std::string kWhy = "checksum mismatch: stored 0x1a2b, computed 0x3c4d";

TEST(PageCheckVerdict, AStoppedClusterReportsEveryFailedPageWhateverItsLsn) {
  for (PgState s : {PgState::shut_down, PgState::shut_down_in_recovery})
    for (uint64_t lsn : {uint64_t{0}, kCheckpoint - 1, kCheckpoint, kCheckpoint + 1,
                         uint64_t{0x5A3F1B2C9D8E7F60}, ~uint64_t{0}})
      EXPECT_TRUE(judge_failed_page(control(s, kCheckpoint), lsn, kWhy).starts_with(kWhy))
          << "state " << static_cast<uint32_t>(s) << ", pd_lsn " << lsn;
}

TEST(PageCheckVerdict, APageOfAShutDownClusterPastItsShutdownCheckpointSaysSo) {
  EXPECT_EQ(judge_failed_page(control(PgState::shut_down, kCheckpoint), 0x5A3F1B2C9D8E7F60, kWhy),
            kWhy + "; its pd_lsn 5A3F1B2C/9D8E7F60 is past the shutdown checkpoint at 0/17414F8, "
                   "which no page of a cluster shut down cleanly has");
  EXPECT_EQ(judge_failed_page(control(PgState::shut_down, kCheckpoint), kCheckpoint, kWhy), kWhy)
      << "at the checkpoint is not past it";
}

TEST(PageCheckVerdict, ARunningClusterPassesOverAPageChangedSinceTheCheckpoint) {
  for (PgState s : {PgState::in_production, PgState::in_crash_recovery,
                    PgState::in_archive_recovery, PgState::shutting_down, PgState::starting}) {
    const PgControl c = control(s, kCheckpoint);
    EXPECT_EQ(judge_failed_page(c, kCheckpoint + 1, kWhy), "") << static_cast<uint32_t>(s);
    EXPECT_EQ(judge_failed_page(c, kCheckpoint + (uint64_t{1} << 40), kWhy), "")
        << "a TiB of log written during the backup is plausible";
    EXPECT_EQ(judge_failed_page(c, kCheckpoint, kWhy), kWhy) << "changed before it began";
    EXPECT_EQ(judge_failed_page(c, 0, kWhy), kWhy);
  }
  EXPECT_EQ(judge_failed_page(control(PgState::in_production, 0), 1234, kWhy), kWhy)
      << "no checkpoint known: no page is newer than it";
}

TEST(PageCheckVerdict, ARunningClusterReportsAPageWhoseLsnNoWriteInProgressCanHave) {
  const PgControl c = control(PgState::in_production, kCheckpoint);
  EXPECT_EQ(judge_failed_page(c, 0x5A3F1B2C9D8E7F60, kWhy),
            kWhy + "; its pd_lsn 5A3F1B2C/9D8E7F60 is more than 1 PiB of log past the "
                   "checkpoint at 0/17414F8, further than any write in progress");
  EXPECT_NE(judge_failed_page(c, ~uint64_t{0}, kWhy), "");
  EXPECT_NE(judge_failed_page(c, kCheckpoint + (uint64_t{1} << 50) + 1, kWhy), "");
  EXPECT_EQ(judge_failed_page(c, kCheckpoint + (uint64_t{1} << 50), kWhy), "")
      << "1 PiB past is still plausible";
}

TEST(PageCheckVerdict, InBackupModeTheBackupsStartIsTheBound) {
  // backup --pg: the start LSN pg_backup_start returned (later than the last checkpoint a
  // control file read before it showed) decides which failing pages are being written.
  PgControl c = control(PgState::in_production, kCheckpoint);
  const uint64_t start = kCheckpoint + 0x100000;
  c.redo_from = start;
  EXPECT_EQ(judge_failed_page(c, start, kWhy), "") << "stamped at the start: being written";
  EXPECT_EQ(judge_failed_page(c, start + (uint64_t{1} << 40), kWhy), "");
  EXPECT_EQ(judge_failed_page(c, kCheckpoint + 1, kWhy),
            kWhy + "; its pd_lsn 0/17414F9 is before the backup's start at 0/18414F8, so no "
                   "write was in progress")
      << "changed since the checkpoint but before the backup began: not a write in progress";
  EXPECT_EQ(judge_failed_page(c, 0x5A3F1B2C9D8E7F60, kWhy),
            kWhy + "; its pd_lsn 5A3F1B2C/9D8E7F60 is more than 1 PiB of log past the backup's "
                   "start at 0/18414F8, further than any write in progress");
  // A stopped cluster is judged as before: nothing is being written.
  c.state = PgState::shut_down;
  EXPECT_TRUE(judge_failed_page(c, start + 1, kWhy).starts_with(kWhy));
}

}  // namespace
}  // namespace stripeback::engine
