// Source validation against a real PostgreSQL 15 cluster (docs/page-checks.md): backup
// --validate --check-logical finds nothing in a clean cluster and writes nothing; corrupt
// pages are exactly those pg_checksums --check reports, every page of random bytes in a
// stopped cluster among them; a broken header with a valid checksum is a bad header;
// --max-corrupt above and below the count; a hot validate while pgbench writes reports no
// false corruption; bad usage is refused.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "engine/transform/page_check.h"
#include "tests/integration/it_util.h"
#include "tests/support/pg_cluster.h"

namespace stripeback::it {
namespace {

namespace fs = std::filesystem;
using stripeback::testing::PgCluster;

using BlockSet = std::set<std::pair<std::string, uint64_t>>;

class SourceValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PgCluster::skip_reason(); !why.empty()) GTEST_SKIP() << why;
    std::string error;
    cluster_ = PgCluster::shared(3, &error);
    ASSERT_NE(cluster_, nullptr) << error;
  }

  static RunResult validate(const std::string& data, std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"backup", "--validate", "--check-logical", data, "--catalog",
                               tmp_ / "cat", "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return sb(a);
  }
  static BlockSet blocks_of(const Json& j) {
    BlockSet out;
    for (const auto& c : j["corrupt"].items()) out.insert({c["file"].as_string(), *c["block"].as_u64()});
    return out;
  }
  static BlockSet pg_checksums(const std::string& data) {
    return cluster_->pg_checksums_failures(data);
  }
  static void write_at(const std::string& path, uint64_t off, const std::string& bytes) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(off));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  // The largest relation file (pgbench_accounts) and another relation file of the cluster.
  static std::pair<std::string, std::string> two_relations(const std::string& data) {
    std::string big, other;
    uintmax_t size = 0;
    for (const auto& e : fs::recursive_directory_iterator(data + "/base")) {
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file() || name.find_first_not_of("0123456789") != std::string::npos)
        continue;
      if (e.file_size() > size) {
        if (!big.empty() && (other.empty() || fs::file_size(big) > 8192 * 4)) other = big;
        size = e.file_size();
        big = e.path().string();
      } else if (other.empty() && e.file_size() >= 8192 * 4) {
        other = e.path().string();
      }
    }
    return {big, other};
  }

  static inline PgCluster* cluster_ = nullptr;
  static inline stripeback::testing::TempDir tmp_{"sbit-srcval"};
};

TEST_F(SourceValidation, CleanClusterFindsNothingAndWritesNothing) {
  RunResult r = validate(cluster_->data_dir());
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(j["operation"].as_string(), "validate");
  EXPECT_EQ(j["check_logical"].as_string(), "postgres");
  EXPECT_GT(*j["pages_checked"].as_u64(), 5000u);
  EXPECT_EQ(j["corrupt"].size(), 0u);
  EXPECT_EQ(*j["bytes_written"].as_u64(), 0u);
  EXPECT_GT(*j["bytes_read"].as_u64(), 40u << 20) << "every file of the cluster is read";
  auto l = sb({"list", "--catalog", tmp_ / "cat", "--json"});
  SB_ASSERT_EXIT(l, 0);
  EXPECT_EQ(parse_json(l)["backups"].size(), 0u) << "a validation records no backup";
  for (const auto& e : fs::recursive_directory_iterator(tmp_.path()))
    EXPECT_NE(e.path().extension(), ".sbp") << "a piece was written: " << e.path();
}

TEST_F(SourceValidation, CorruptPagesAreTheBlocksPgChecksumsReports) {
  const std::string data = cluster_->copy_data("corrupt");
  auto [big, other] = two_relations(data);
  ASSERT_FALSE(big.empty());
  ASSERT_FALSE(other.empty());
  for (uint64_t block : {0u, 9u, 200u}) write_at(big, block * 8192 + 3000, "CORRUPTED");
  write_at(other, 1 * 8192 + 6000, "x");
  RunResult r = validate(data, {"--channels", "2", "--section-size", "1M"});
  SB_ASSERT_EXIT(r, 1);
  Json j = parse_json(r);
  const BlockSet ours = blocks_of(j);
  EXPECT_EQ(ours, (BlockSet{{big, 0}, {big, 9}, {big, 200}, {other, 1}}));
  EXPECT_EQ(ours, pg_checksums(data)) << "the same files and block numbers";
  for (const auto& c : j["corrupt"].items()) {
    EXPECT_EQ(*c["offset"].as_u64(), *c["block"].as_u64() * 8192);
    EXPECT_TRUE(contains(c["reason"].as_string(), "checksum mismatch: stored 0x"));
  }
  EXPECT_TRUE(contains(r.err, "4 corrupt page(s) found"));
}

// A cluster shut down cleanly has nothing writing its pages: a page overwritten with random
// bytes is corrupt even though its pd_lsn (random too) lies far past every checkpoint, and
// so is every other one. 20 pages of 4 relation files, chosen and filled by a fixed seed.
TEST_F(SourceValidation, EveryRandomPageOfAStoppedClusterIsReportedCorrupt) {
  const std::string data = cluster_->copy_data("random");
  auto control = engine::read_pg_control(data);
  ASSERT_TRUE(control) << control.error().what;
  ASSERT_EQ(control->state, engine::PgState::shut_down) << "pg_ctl stop -m fast shuts it down";
  std::vector<std::string> files;  // relation files of 8 pages or more, largest first
  for (const auto& e : fs::recursive_directory_iterator(data + "/base")) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.find_first_not_of("0123456789") == std::string::npos &&
        e.file_size() >= 8 * 8192)
      files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
    return fs::file_size(a) > fs::file_size(b);
  });
  ASSERT_GE(files.size(), 4u);
  files.resize(4);
  std::mt19937_64 rng(20261203);
  BlockSet damaged;
  int past_checkpoint = 0;
  while (damaged.size() < 20) {
    const std::string& file = files[damaged.size() % files.size()];
    const uint64_t block = rng() % (fs::file_size(file) / 8192);
    if (!damaged.insert({file, block}).second) continue;
    std::string page(8192, '\0');
    for (size_t i = 0; i < page.size(); i += 8) {
      const uint64_t v = rng();
      std::memcpy(page.data() + i, &v, 8);
    }
    uint64_t lsn = 0;  // pd_lsn: the high 32 bits, then the low, each little-endian here
    for (unsigned i : {3u, 2u, 1u, 0u, 7u, 6u, 5u, 4u})
      lsn = lsn << 8 | static_cast<uint8_t>(page[i]);
    past_checkpoint += lsn > control->checkpoint_lsn;
    write_at(file, block * 8192, page);
  }
  EXPECT_GT(past_checkpoint, 0) << "the case a hot backup would call newer";

  RunResult r = validate(data, {"--channels", "2", "--section-size", "1M"});
  SB_ASSERT_EXIT(r, 1);
  Json j = parse_json(r);
  EXPECT_EQ(blocks_of(j), damaged);
  EXPECT_EQ(*j["pages_corrupt"].as_u64(), 20u);
  EXPECT_EQ(*j["pages_newer"].as_u64(), 0u) << "nothing is newer in a stopped cluster";
  EXPECT_TRUE(contains(r.err, "20 corrupt page(s) found"));
  int said_past = 0;
  for (const auto& c : j["corrupt"].items())
    said_past += contains(c["reason"].as_string(), "is past the shutdown checkpoint at") ? 1 : 0;
  EXPECT_EQ(said_past, past_checkpoint) << "the reason says when the pd_lsn is impossible";

  RunResult l = sb({"list", "--corrupt", "--catalog", tmp_ / "cat", "--json"});
  SB_ASSERT_EXIT(l, 0);
  const Json lj = parse_json(l);
  BlockSet listed;
  for (const auto& c : lj["corrupt"].items())
    if (c["file"].as_string().starts_with(data + "/"))
      listed.insert({c["file"].as_string(), *c["block"].as_u64()});
  EXPECT_EQ(listed, damaged) << "list --corrupt shows them";

  if (!fs::exists(PgCluster::bin_dir() + "/pg_checksums"))
    GTEST_SKIP() << "pg_checksums is not installed: every page was found, but not compared";
  EXPECT_EQ(pg_checksums(data), damaged) << "the same files and block numbers";
}

TEST_F(SourceValidation, BrokenHeaderWithAValidChecksumIsABadHeader) {
  const std::string data = cluster_->copy_data("header");
  const std::string big = two_relations(data).first;
  std::string page(8192, '\0');
  {
    std::ifstream in(big, std::ios::binary);
    in.seekg(5 * 8192);
    in.read(page.data(), 8192);
  }
  const uint16_t special = 9000;  // past the page's end
  page[16] = static_cast<char>(special & 0xff);
  page[17] = static_cast<char>(special >> 8);
  const uint16_t sum =
      engine::pg_page_checksum(reinterpret_cast<const std::byte*>(page.data()), 8192, 5);
  page[8] = static_cast<char>(sum & 0xff);
  page[9] = static_cast<char>(sum >> 8);
  write_at(big, 5 * 8192, page);
  EXPECT_TRUE(pg_checksums(data).empty()) << "the checksum is valid";
  RunResult r = validate(data);
  SB_ASSERT_EXIT(r, 1);
  Json j = parse_json(r);
  ASSERT_EQ(j["corrupt"].size(), 1u) << r.out;
  EXPECT_EQ(j["corrupt"][0]["file"].as_string(), big);
  EXPECT_EQ(*j["corrupt"][0]["block"].as_u64(), 5u);
  EXPECT_TRUE(contains(j["corrupt"][0]["reason"].as_string(), "bad header")) << r.out;
}

TEST_F(SourceValidation, MaxCorruptAboveAndBelowTheCount) {
  const std::string data = cluster_->copy_data("maxcorrupt");
  const std::string big = two_relations(data).first;
  for (uint64_t block : {3u, 4u, 5u}) write_at(big, block * 8192 + 2000, "BROKEN");
  auto backup = [&](const std::string& to, const std::string& max) {
    return sb({"backup", data, "--to", to, "--catalog", tmp_ / "cat-max", "--check-logical",
               "--max-corrupt", max, "--json"});
  };
  RunResult ok = backup(tmp_ / "p-ok", "3");
  SB_ASSERT_EXIT(ok, 0);
  Json j = parse_json(ok);
  EXPECT_EQ(j["status"].as_string(), "complete");
  EXPECT_EQ(j["corrupt"].size(), 3u) << "recorded, not fatal, up to --max-corrupt";
  RunResult over = backup(tmp_ / "p-over", "2");
  SB_ASSERT_EXIT(over, 1);
  EXPECT_TRUE(contains(over.err, "'" + big + "' has 3 corrupt page(s), more than --max-corrupt 2"))
      << over.err;
  EXPECT_TRUE(pieces_in(tmp_ / "p-over").empty()) << "a failed backup keeps no piece";
  // The backup that passed restores the cluster as it was read, corrupt pages included.
  auto r = sb({"restore", "--to", tmp_ / "r-ok", "--catalog", tmp_ / "cat-max", "--backup",
               std::to_string(backup_id_of(j)), big});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(same_file(big, tmp_ / "r-ok" + big));
}

// The catalog keeps the corrupt pages found (list --corrupt) until a later complete check of
// their file finds them gone: a validation's findings, then a backup's, then none once the
// file is repaired.
TEST_F(SourceValidation, ListCorruptShowsWhatTheLatestCompleteCheckFound) {
  const std::string data = cluster_->copy_data("listed");
  const std::string big = two_relations(data).first;
  const std::string original = cluster_->data_dir() + big.substr(data.size());
  for (uint64_t block : {4u, 5u}) write_at(big, block * 8192 + 4000, "DAMAGE");
  const std::string cat = tmp_ / "cat-listed";
  auto listed = [&] {
    RunResult l = sb({"list", "--corrupt", "--catalog", cat, "--json"});
    EXPECT_TRUE(l.exited(0)) << l.describe();
    return parse_json(l);
  };
  RunResult v = sb({"backup", "--validate", "--check-logical", data, "--catalog", cat});
  SB_ASSERT_EXIT(v, 1);
  Json l1 = listed();
  ASSERT_EQ(l1["corrupt"].size(), 2u) << l1.size();
  for (uint64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(l1["corrupt"][i]["file"].as_string(), big);
    EXPECT_EQ(*l1["corrupt"][i]["block"].as_u64(), 4 + i);
    EXPECT_EQ(*l1["corrupt"][i]["offset"].as_u64(), (4 + i) * 8192);
    EXPECT_TRUE(contains(l1["corrupt"][i]["reason"].as_string(), "checksum mismatch"));
    EXPECT_EQ(l1["corrupt"][i]["operation"].as_string(), "validate");
    EXPECT_TRUE(l1["corrupt"][i]["backup_id"].is_null());
  }
  RunResult text = sb({"list", "--corrupt", "--catalog", cat});
  SB_ASSERT_EXIT(text, 0);
  EXPECT_TRUE(contains(text.out, big + ": checksum mismatch")) << text.out;
  EXPECT_TRUE(contains(text.out, "validate")) << text.out;

  // A backup that checks the pages again (and keeps them, under --max-corrupt) finds them.
  RunResult b = sb({"backup", data, "--to", tmp_ / "p-listed", "--catalog", cat,
                    "--check-logical", "--max-corrupt", "2", "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json l2 = listed();
  ASSERT_EQ(l2["corrupt"].size(), 2u) << l2.size();
  EXPECT_EQ(l2["corrupt"][0]["operation"].as_string(), "backup");
  EXPECT_EQ(*l2["corrupt"][0]["backup_id"].as_u64(), backup_id_of(parse_json(b)));

  // Repaired (the file as the cluster has it), a complete validation clears them.
  fs::copy_file(original, big, fs::copy_options::overwrite_existing);
  RunResult clean = sb({"backup", "--validate", "--check-logical", data, "--catalog", cat});
  SB_ASSERT_EXIT(clean, 0);
  EXPECT_EQ(listed()["corrupt"].size(), 0u);
  RunResult none = sb({"list", "--corrupt", "--catalog", cat});
  EXPECT_TRUE(contains(none.out, "no corrupt pages recorded")) << none.out;
}

TEST_F(SourceValidation, HotValidateWhilePgbenchWritesReportsNoCorruption) {
  ASSERT_TRUE(cluster_->start()) << cluster_->error();
  auto bench = cluster_->pgbench_run(10, 4);
  int runs = 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  while (bench->running() && runs < 6) {
    RunResult r = validate(cluster_->data_dir(), {"--channels", "2"});
    // Files may vanish or shrink under a running database (temporary files, truncation):
    // those fail the read; what matters here is that no page is called corrupt.
    Json j = parse_json(r);
    EXPECT_EQ(j["corrupt"].size(), 0u) << r.out;
    EXPECT_GT(*j["pages_checked"].as_u64(), 5000u) << r.describe();
    ++runs;
  }
  auto done = bench->wait();
  EXPECT_TRUE(done.exited(0)) << done.describe();
  ASSERT_TRUE(cluster_->stop()) << cluster_->error();
  EXPECT_GT(runs, 0);
}

TEST_F(SourceValidation, BadUsageIsRefusedNamingTheCause) {
  auto with_to = sb({"backup", "--validate", cluster_->data_dir(), "--to", tmp_ / "x"});
  SB_EXPECT_EXIT(with_to, 2);
  EXPECT_TRUE(contains(with_to.err, "backup --validate writes nothing: it takes no --to"));
  auto no_to = sb({"backup", cluster_->data_dir(), "--catalog", tmp_ / "cat-u"});
  SB_EXPECT_EXIT(no_to, 2);
  EXPECT_TRUE(contains(no_to.err, "--validate to read and check"));
  auto max = sb({"backup", "--validate", cluster_->data_dir(), "--max-corrupt", "2",
                 "--catalog", tmp_ / "cat-u"});
  SB_EXPECT_EXIT(max, 2);
  EXPECT_TRUE(contains(max.err, "--max-corrupt and --page-size need --check-logical"));
  auto fmt = sb({"backup", "--validate", "--check-logical=oracle", cluster_->data_dir(),
                 "--catalog", tmp_ / "cat-u"});
  SB_EXPECT_EXIT(fmt, 2);
  EXPECT_TRUE(contains(fmt.err, "unknown page format 'oracle'"));
  auto notpg = sb({"backup", "--validate", "--check-logical", tmp_ / "cat-u", "--catalog",
                   tmp_ / "cat-u2"});
  SB_EXPECT_EXIT(notpg, 2);
  EXPECT_TRUE(contains(notpg.err, "no source is or lies in a PostgreSQL data directory"));
  auto level = sb({"backup", "--validate", cluster_->data_dir(), "--level", "0", "--catalog",
                   tmp_ / "cat-u"});
  SB_EXPECT_EXIT(level, 2);
  EXPECT_TRUE(contains(level.err, "backup --validate writes nothing"));
}

}  // namespace
}  // namespace stripeback::it
