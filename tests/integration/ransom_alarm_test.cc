// The ransomware alarm (docs/security.md): table files of a real PostgreSQL 15 cluster
// encrypted in place with openssl make the next backup --check-logical suspicious (exit 8,
// the evidence in --json, the clean backup kept through retention); a run of pgbench
// changes does not; compressible files overwritten with random bytes of the same size fire
// the compression rule; --no-alarm turns it off.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/it_util.h"
#include "tests/support/pg_cluster.h"

namespace stripeback::it {
namespace {

namespace fs = std::filesystem;
using stripeback::testing::PgCluster;

// A file of `size` bytes of text that compresses about 5:1.
void make_compressible(const std::string& path, uint64_t size, uint32_t seed) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  std::string all;
  uint64_t x = seed * 2654435761u + 1;
  while (all.size() < size) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    all += "row " + std::to_string(all.size()) + " value " + std::to_string((x >> 40) % 1000) +
           " status ok\n";
  }
  all.resize(size);
  f.write(all.data(), static_cast<std::streamsize>(all.size()));
}

// Overwrites `path` with random bytes of its own size (as ransomware leaves a file).
void overwrite_random(const std::string& path) {
  const uint64_t size = fs::file_size(path);
  std::ifstream in("/dev/urandom", std::ios::binary);
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(size));
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The ids of the backups `list --json` says are kept.
std::set<uint64_t> kept_backups(const std::string& cat) {
  RunResult l = sb({"list", "--catalog", cat, "--json"});
  EXPECT_TRUE(l.exited(0)) << l.describe();
  std::set<uint64_t> out;
  const Json j = parse_json(l);
  for (const auto& b : j["backups"].items())
    if (b["kept"].as_bool()) out.insert(*b["id"].as_u64());
  return out;
}

std::set<uint64_t> listed_backups(const std::string& cat) {
  RunResult l = sb({"list", "--catalog", cat, "--json"});
  std::set<uint64_t> out;
  const Json j = parse_json(l);
  for (const auto& b : j["backups"].items()) out.insert(*b["id"].as_u64());
  return out;
}

std::set<std::string> evidence_paths(const Json& part) {
  std::set<std::string> out;
  for (const auto& f : part["files"].items()) out.insert(f["path"].as_string());
  return out;
}

class RansomAlarm : public ::testing::Test {
 protected:
  RunResult backup(const std::string& src, std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"backup", src, "--to", tmp_ / "pieces", "--catalog", tmp_ / "cat",
                               "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return sb(a, {}, std::chrono::minutes(5));
  }
  TempDir tmp_{"sbit-alarm"};
};

class RansomAlarmPg : public RansomAlarm {
 protected:
  void SetUp() override {
    if (std::string why = PgCluster::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  // The largest relation file below base/ (pgbench_accounts).
  static std::string largest_relation(const std::string& data) {
    std::string big;
    for (const auto& e : fs::recursive_directory_iterator(data + "/base")) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && name.find_first_not_of("0123456789") == std::string::npos &&
          (big.empty() || e.file_size() > fs::file_size(big)))
        big = e.path().string();
    }
    return big;
  }
};

TEST_F(RansomAlarmPg, TableFilesEncryptedInPlaceMakeTheBackupSuspiciousAndKeepTheCleanOne) {
  std::string error;
  PgCluster* shared = PgCluster::shared(3, &error);
  ASSERT_NE(shared, nullptr) << error;
  const std::string data = shared->copy_data("alarm");
  SB_ASSERT_EXIT(sb({"configure", "retention", "redundancy", "1", "--catalog", tmp_ / "cat"}), 0);

  RunResult clean = backup(data, {"--check-logical"});
  SB_ASSERT_EXIT(clean, 0);
  Json c = parse_json(clean);
  const uint64_t clean_id = *c["backup_id"].as_u64();
  EXPECT_TRUE(c["suspicious"].is_null()) << clean.out;
  EXPECT_TRUE(c["alarm_compared_with"].is_null()) << "nothing to compare with yet";

  // openssl enc -aes-256-ctr writes as many bytes as it reads: the file keeps its size.
  const std::string table = largest_relation(data);
  ASSERT_FALSE(table.empty());
  const uint64_t size = fs::file_size(table);
  ASSERT_GT(size, 100u * 8192) << table;
  fs::copy_file(table, tmp_ / "clean-table");
  RunResult enc = stripeback::testing::run(
      {"/usr/bin/openssl", "enc", "-aes-256-ctr", "-K", std::string(64, 'a'), "-iv", std::string(32, 'b'),
       "-in", table, "-out", table + ".enc"});
  ASSERT_TRUE(enc.exited(0)) << enc.describe();
  fs::rename(table + ".enc", table);
  ASSERT_EQ(fs::file_size(table), size);

  RunResult hit = backup(data, {"--check-logical"});
  SB_ASSERT_EXIT(hit, 8);
  Json h = parse_json(hit);
  EXPECT_EQ(h["status"].as_string(), "complete") << "recorded as the evidence";
  const uint64_t hit_id = *h["backup_id"].as_u64();
  EXPECT_EQ(h["alarm_compared_with"].as_u64(), clean_id);
  const Json& s = h["suspicious"];
  ASSERT_FALSE(s.is_null()) << hit.out;
  EXPECT_EQ(s["previous_backup"].as_u64(), clean_id);
  std::set<std::string> rules;
  for (const auto& r : s["rules"].items()) rules.insert(r.as_string());
  EXPECT_EQ(rules, (std::set<std::string>{"page_share", "page_factor"}));
  EXPECT_EQ(*s["pages"]["failed_before"].as_u64(), 0u);
  EXPECT_GE(*s["pages"]["failed_after"].as_u64(), size / 8192) << "every page of the table";
  EXPECT_GT(s["pages"]["share_after"].as_double(), 0.5);
  const auto named = evidence_paths(s["pages"]);
  EXPECT_TRUE(named.count(table)) << hit.out;
  EXPECT_TRUE(s["previous_kept"].as_bool());
  EXPECT_EQ(s["clear_keep"].as_string(), "stripeback keep " + std::to_string(clean_id) + " --clear");
  EXPECT_TRUE(contains(hit.err, "is suspicious"));

  EXPECT_EQ(kept_backups(tmp_ / "cat"), (std::set<uint64_t>{clean_id}));
  // Retention keeping one backup would take the clean one: it is kept.
  RunResult del = sb({"delete", "obsolete", "--catalog", tmp_ / "cat", "--json"});
  SB_ASSERT_EXIT(del, 0);
  EXPECT_EQ(listed_backups(tmp_ / "cat"), (std::set<uint64_t>{clean_id, hit_id}));
  // And it holds the table as it was.
  SB_ASSERT_EXIT(sb({"restore", "--backup", std::to_string(clean_id), "--to", tmp_ / "restored",
                     "--catalog", tmp_ / "cat", table}),
                 0);
  EXPECT_TRUE(bytes_of(tmp_ / "clean-table") == bytes_of(tmp_ / "restored" + table));
}

TEST_F(RansomAlarmPg, TheTextSummaryNamesTheFilesAndThePreviousBackup) {
  std::string error;
  PgCluster* shared = PgCluster::shared(3, &error);
  ASSERT_NE(shared, nullptr) << error;
  const std::string data = shared->copy_data("alarm-text");
  SB_ASSERT_EXIT(backup(data, {"--check-logical"}), 0);
  const std::string table = largest_relation(data);
  overwrite_random(table);
  RunResult r = sb({"backup", data, "--to", tmp_ / "pieces", "--catalog", tmp_ / "cat",
                    "--check-logical"},
                   {}, std::chrono::minutes(5));
  SB_ASSERT_EXIT(r, 8);
  EXPECT_TRUE(contains(r.out, "SUSPICIOUS: this backup looks like encrypted or destroyed data"));
  EXPECT_TRUE(contains(r.out, "against backup 1"));
  EXPECT_TRUE(contains(r.out, table + ": 0.00% -> 100.00%"));
  EXPECT_TRUE(contains(r.out, "backup 1 is kept forever"));
  EXPECT_TRUE(contains(r.out, "stripeback keep 1 --clear"));
}

TEST_F(RansomAlarmPg, ARunOfPgbenchChangesDoesNotFire) {
  PgCluster cluster;
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  ASSERT_TRUE(cluster.start()) << cluster.error();
  ASSERT_TRUE(cluster.pgbench_init(2)) << cluster.error();
  ASSERT_TRUE(cluster.stop()) << cluster.error();
  const std::string data = cluster.data_dir();
  RunResult first = backup(data, {"--check-logical", "--compress", "low"});
  SB_ASSERT_EXIT(first, 0);
  const uint64_t first_id = *parse_json(first)["backup_id"].as_u64();

  // A day of changes in a few seconds: updates, inserts, vacuum, checkpoints.
  ASSERT_TRUE(cluster.start()) << cluster.error();
  auto bench = cluster.pgbench_run(6, 4);
  bench->wait();
  RunResult vacuum = cluster.psql("VACUUM");
  ASSERT_TRUE(vacuum.exited(0)) << vacuum.describe();
  // Hot, while pgbench writes: pages being written fail and are read again.
  auto more = cluster.pgbench_run(8, 2);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  RunResult hot = backup(data, {"--check-logical", "--compress", "low", "--pg", cluster.conninfo()});
  more->wait();
  SB_ASSERT_EXIT(hot, 0);
  Json hj = parse_json(hot);
  EXPECT_TRUE(hj["suspicious"].is_null()) << hot.out;
  EXPECT_EQ(hj["alarm_compared_with"].as_u64(), first_id) << hot.out;
  const uint64_t hot_id = *hj["backup_id"].as_u64();

  ASSERT_TRUE(cluster.stop()) << cluster.error();
  RunResult after = backup(data, {"--check-logical", "--compress", "low"});
  SB_ASSERT_EXIT(after, 0);
  Json j = parse_json(after);
  EXPECT_TRUE(j["suspicious"].is_null()) << after.out;
  EXPECT_EQ(j["alarm_compared_with"].as_u64(), hot_id) << "the newest complete backup";
  EXPECT_TRUE(kept_backups(tmp_ / "cat").empty());
}

TEST_F(RansomAlarm, RandomBytesOverCompressibleFilesFireTheCompressionRule) {
  const std::string src = tmp_ / "src";
  for (int i = 0; i < 3; ++i) make_compressible(src + "/f" + std::to_string(i) + ".dat", 3u << 20, i);
  make_compressible(src + "/untouched.log", 2u << 20, 9);
  RunResult first = backup(src, {"--compress", "medium"});
  SB_ASSERT_EXIT(first, 0);
  const uint64_t first_id = *parse_json(first)["backup_id"].as_u64();
  for (int i = 0; i < 3; ++i) overwrite_random(src + "/f" + std::to_string(i) + ".dat");

  RunResult second = backup(src, {"--compress", "medium"});
  SB_ASSERT_EXIT(second, 8);
  Json j = parse_json(second);
  EXPECT_EQ(j["status"].as_string(), "complete");
  const Json& s = j["suspicious"];
  ASSERT_FALSE(s.is_null()) << second.out;
  ASSERT_EQ(s["rules"].size(), 1u);
  EXPECT_EQ(s["rules"][0].as_string(), "compression_drop");
  EXPECT_TRUE(s["pages"].is_null()) << "no page was checked";
  const Json& comp = s["compression"];
  EXPECT_EQ(comp["files_compared"].as_u64(), 4u);
  EXPECT_GT(comp["ratio_before"].as_double(), 3.0);
  EXPECT_LT(comp["ratio_after"].as_double(), 1.5);
  EXPECT_EQ(evidence_paths(comp), (std::set<std::string>{src + "/f0.dat", src + "/f1.dat",
                                                         src + "/f2.dat"}))
      << "the untouched file did not fall";
  EXPECT_EQ(s["previous_backup"].as_u64(), first_id);
  EXPECT_EQ(kept_backups(tmp_ / "cat"), (std::set<uint64_t>{first_id}));

  // The next backup compares with the suspicious one: the jump is behind it.
  RunResult third = backup(src, {"--compress", "medium"});
  SB_ASSERT_EXIT(third, 0);
  EXPECT_TRUE(parse_json(third)["suspicious"].is_null());
  // Cleared, the clean backup is no longer kept.
  SB_ASSERT_EXIT(sb({"keep", std::to_string(first_id), "--clear", "--catalog", tmp_ / "cat"}), 0);
  EXPECT_TRUE(kept_backups(tmp_ / "cat").empty());
}

TEST_F(RansomAlarm, NoAlarmTurnsItOff) {
  const std::string src = tmp_ / "src";
  make_compressible(src + "/a.dat", 4u << 20, 1);
  SB_ASSERT_EXIT(backup(src, {"--compress", "medium"}), 0);
  overwrite_random(src + "/a.dat");
  RunResult r = backup(src, {"--compress", "medium", "--no-alarm"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_TRUE(j["suspicious"].is_null());
  EXPECT_TRUE(j["alarm_compared_with"].is_null());
  EXPECT_TRUE(kept_backups(tmp_ / "cat").empty());
  // A threshold is checked as the option is given.
  RunResult bad = backup(src, {"--compress", "medium", "--alarm-compression-drop", "150%"});
  SB_ASSERT_EXIT(bad, 2);
  EXPECT_TRUE(contains(bad.err, "--alarm-compression-drop"));
}

}  // namespace
}  // namespace stripeback::it
