// Job history (docs/monitoring.md#job-history): every backup, restore and validation leaves
// a job record in its catalog, failed ones too, and `report jobs` / `report io` show them:
// the right bytes, status and verdict; per channel and per file I/O figures that add up to
// what the job read; clear errors for what is not there, and no error for a new catalog.
#include <filesystem>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class Report : public ::testing::Test {
 protected:
  void SetUp() override {
    make_file(t_ / "src/a.dbf", 9 * kMiB + 4321, 11);
    make_file(t_ / "src/b.dbf", 5 * kMiB, 12);
    make_file(t_ / "src/sub/c.dbf", 2 * kMiB + 7, 13);
  }
  std::string cat() { return t_ / "cat"; }
  // A backup of src with 2 channels; its --json document.
  Json backup(std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"backup", t_ / "src", "--to", t_ / "p", "--catalog", cat(),
                               "--channels", "2", "--json", "--tag", "nightly"};
    a.insert(a.end(), extra.begin(), extra.end());
    RunResult r = sb(a);
    EXPECT_TRUE(r.exited(0)) << r.describe();
    return parse_json(r);
  }
  Json jobs() {
    RunResult r = sb({"report", "jobs", "--json", "--catalog", cat()});
    EXPECT_TRUE(r.exited(0)) << r.describe();
    return parse_json(r);
  }
  TempDir t_{"sbit-report"};
};

TEST_F(Report, ABackupIsListedWithItsBytesStatusAndVerdict) {
  Json b = backup();
  const uint64_t id = backup_id_of(b);
  Json j = jobs();
  ASSERT_EQ(j["jobs"].size(), 1u);
  const Json& job = j["jobs"][0];
  EXPECT_EQ(job["type"].as_string(), "backup");
  EXPECT_EQ(job["status"].as_string(), "complete");
  EXPECT_EQ(job["backup_id"].as_u64(), id);
  EXPECT_EQ(job["tag"].as_string(), "nightly");
  EXPECT_EQ(job["bytes_read"].as_u64(), b["bytes_read"].as_u64());
  EXPECT_EQ(job["bytes_written"].as_u64(), b["bytes_written"].as_u64());
  EXPECT_EQ(job["bytes_read"].as_u64(), uint64_t{16 * kMiB + 4328});
  EXPECT_EQ(job["files"].as_u64(), b["files"].as_u64());
  EXPECT_EQ(job["verdict"]["stage"].as_string(), b["verdict"]["stage"].as_string());
  EXPECT_EQ(job["bound_by"].as_string(), b["bound_by"].as_string());
  EXPECT_FALSE(job["verdict"]["evidence"].as_string().empty());
  EXPECT_TRUE(job["compression_ratio"].is_null());  // not compressed
  // ISO 8601 in UTC, ordered.
  EXPECT_EQ(job["start_time"].as_string().back(), 'Z');
  EXPECT_EQ(job["start_time"].as_string()[10], 'T');
  EXPECT_LE(job["start_time_ns"].as_double(), job["end_time_ns"].as_double());
  // The text table shows the same job, times in UTC.
  RunResult t = sb({"report", "jobs", "--catalog", cat()});
  SB_ASSERT_EXIT(t, 0);
  EXPECT_TRUE(contains(t.out, "STARTED"));
  EXPECT_TRUE(contains(t.out, job["start_time"].as_string()));  // UTC, ISO 8601
  EXPECT_TRUE(contains(t.out, "complete"));
  EXPECT_TRUE(contains(t.out, b["verdict"]["stage"].as_string()));
}

TEST_F(Report, CompressionRatioIsRecorded) {
  std::string text;
  for (int i = 0; i < 200000; ++i) text += "row " + std::to_string(i % 977) + " committed\n";
  std::filesystem::create_directories(t_ / "text");
  write_text(t_ / "text/t.dbf", text);
  SB_ASSERT_EXIT(sb({"backup", t_ / "text", "--to", t_ / "p", "--catalog", cat(), "--compress",
                     "low"}),
                 0);
  Json job = jobs()["jobs"][0];
  ASSERT_TRUE(job["compression_ratio"].is_number());
  EXPECT_GT(job["compression_ratio"].as_double(), 1.5);  // the text shrinks several times
}

TEST_F(Report, AFailedBackupIsRecordedAsFailed) {
  // The destination is a regular file: the backup cannot use it.
  make_file(t_ / "not-a-dir", 10, 1);
  RunResult r = sb({"backup", t_ / "src", "--to", t_ / "not-a-dir/p", "--catalog", cat()});
  EXPECT_FALSE(r.exited(0)) << r.describe();
  Json j = jobs();
  ASSERT_EQ(j["jobs"].size(), 1u);
  const Json& job = j["jobs"][0];
  EXPECT_EQ(job["type"].as_string(), "backup");
  EXPECT_EQ(job["status"].as_string(), "failed");
  EXPECT_TRUE(contains(job["error"].as_string(), "not-a-dir"));
  RunResult t = sb({"report", "jobs", "--catalog", cat()});
  SB_ASSERT_EXIT(t, 0);
  EXPECT_TRUE(contains(t.out, "failed"));
  EXPECT_TRUE(contains(t.out, "not-a-dir"));
}

TEST_F(Report, RestoreAndValidateJobsAppearNewestLast) {
  const uint64_t id = backup_id_of(backup());
  SB_ASSERT_EXIT(sb({"restore", "--to", t_ / "r", "--catalog", cat()}), 0);
  SB_ASSERT_EXIT(sb({"validate", "--catalog", cat()}), 0);
  SB_ASSERT_EXIT(sb({"backup", "--validate", t_ / "src", "--catalog", cat()}), 0);
  // A restore that fails: nothing matches the path.
  RunResult bad = sb({"restore", "--to", t_ / "r2", "--catalog", cat(), "/no/such/file"});
  EXPECT_FALSE(bad.exited(0));
  Json j = jobs();
  ASSERT_EQ(j["jobs"].size(), 5u);
  const auto& js = j["jobs"].items();
  EXPECT_EQ(js[0]["type"].as_string(), "backup");
  EXPECT_EQ(js[1]["type"].as_string(), "restore");
  EXPECT_EQ(js[1]["status"].as_string(), "complete");
  EXPECT_EQ(js[1]["backup_ids"][0].as_u64(), id);
  EXPECT_EQ(js[1]["bytes_written"].as_u64(), uint64_t{16 * kMiB + 4328});  // the files' bytes
  EXPECT_EQ(js[2]["type"].as_string(), "validate");
  EXPECT_EQ(js[2]["status"].as_string(), "complete");
  EXPECT_EQ(js[2]["bytes_written"].as_u64(), 0u);
  EXPECT_GT(js[2]["bytes_read"].as_u64(), 0u);
  EXPECT_EQ(js[3]["type"].as_string(), "validate-sources");
  EXPECT_TRUE(js[3]["backup_id"].is_null());
  EXPECT_EQ(js[3]["bytes_read"].as_u64(), uint64_t{16 * kMiB + 4328});
  EXPECT_EQ(js[4]["type"].as_string(), "restore");
  EXPECT_EQ(js[4]["status"].as_string(), "failed");
  EXPECT_FALSE(js[4]["error"].as_string().empty());
  for (size_t i = 1; i < js.size(); ++i)
    EXPECT_GT(js[i]["id"].as_u64(), js[i - 1]["id"].as_u64());
  // --limit keeps the newest.
  RunResult l = sb({"report", "jobs", "--json", "--limit", "2", "--catalog", cat()});
  SB_ASSERT_EXIT(l, 0);
  Json lj = parse_json(l);
  ASSERT_EQ(lj["jobs"].size(), 2u);
  EXPECT_EQ(lj["jobs"][1]["id"].as_u64(), js[4]["id"].as_u64());
}

TEST_F(Report, IoOfABackupPerChannelAndPerFile) {
  Json b = backup();
  const uint64_t id = backup_id_of(b);
  RunResult r = sb({"report", "io", "--backup", std::to_string(id), "--json", "--catalog", cat()});
  SB_ASSERT_EXIT(r, 0);
  Json io = parse_json(r);
  EXPECT_EQ(io["job"]["backup_id"].as_u64(), id);
  ASSERT_EQ(io["channels"].size(), 2u);
  uint64_t read = 0, written = 0;
  for (const Json& ch : io["channels"].items()) {
    EXPECT_GT(ch["reads"].as_u64().value_or(0), 0u);
    EXPECT_GT(ch["writes"].as_u64().value_or(0), 0u);
    EXPECT_EQ(ch["buffers"].as_u64(), b["buffers"].as_u64());
    EXPECT_EQ(ch["buffer_size"].as_u64(), b["buffer_size"].as_u64());
    EXPECT_GE(ch["multiplexing"].as_u64().value_or(0), 1u);
    EXPECT_LE(ch["multiplexing"].as_u64().value_or(9), b["multiplexing"].as_u64().value_or(0));
    const std::string mode = ch["io_mode"].as_string();
    EXPECT_TRUE(mode == "async" || mode == "sync") << mode;
    EXPECT_EQ(mode == "sync", ch["io_engine"].as_string() == "sync");
    // Every completion falls in one wait class.
    const Json& w = ch["read_waits"];
    EXPECT_EQ(w["ready"].as_u64().value_or(0) + w["short"].as_u64().value_or(0) +
                  w["long"].as_u64().value_or(0),
              ch["reads"].as_u64().value_or(1));
    EXPECT_LE(w["max_s"].as_double(), w["total_s"].as_double());
    EXPECT_GT(ch["read_busy_s"].as_double(), 0);
    read += ch["bytes_read"].as_u64().value_or(0);
    written += ch["bytes_written"].as_u64().value_or(0);
  }
  EXPECT_EQ(read, b["bytes_read"].as_u64());
  EXPECT_EQ(written, b["bytes_written"].as_u64());
  // One entry per file, whose reads add up to what the backup read.
  std::map<std::string, uint64_t> per_file;
  uint64_t file_bytes = 0;
  for (const Json& f : io["files"].items()) {
    EXPECT_GT(f["reads"].as_u64().value_or(0), 0u) << f["path"].as_string();
    per_file[f["path"].as_string()] += f["bytes_read"].as_u64().value_or(0);
    file_bytes += f["bytes_read"].as_u64().value_or(0);
  }
  EXPECT_EQ(file_bytes, b["bytes_read"].as_u64());
  ASSERT_EQ(per_file.size(), 3u);
  EXPECT_EQ(per_file[t_ / "src/a.dbf"], 9 * kMiB + 4321);
  EXPECT_EQ(per_file[t_ / "src/sub/c.dbf"], 2 * kMiB + 7);
  EXPECT_EQ(io["files_left_out"].as_u64(), 0u);
  // The same as aligned text tables, with the wait classes named.
  RunResult t = sb({"report", "io", "--backup", std::to_string(id), "--catalog", cat()});
  SB_ASSERT_EXIT(t, 0);
  EXPECT_TRUE(contains(t.out, "ready < 1 ms, short < 100 ms, long >= 100 ms"));
  EXPECT_TRUE(contains(t.out, "MAX MS"));
  EXPECT_TRUE(contains(t.out, t_ / "src/sub/c.dbf"));
  // --job names the same job.
  RunResult byjob = sb({"report", "io", "--job", std::to_string(io["job"]["id"].as_u64().value_or(0)),
                        "--json", "--catalog", cat()});
  SB_ASSERT_EXIT(byjob, 0);
  EXPECT_EQ(parse_json(byjob)["job"]["backup_id"].as_u64(), id);
}

TEST_F(Report, IoOfARestorePerFile) {
  backup();
  SB_ASSERT_EXIT(sb({"restore", "--to", t_ / "r", "--catalog", cat()}), 0);
  RunResult r = sb({"report", "io", "--json", "--catalog", cat()});  // the newest job
  SB_ASSERT_EXIT(r, 0);
  Json io = parse_json(r);
  EXPECT_EQ(io["job"]["type"].as_string(), "restore");
  ASSERT_EQ(io["files"].size(), 3u);
  for (const Json& f : io["files"].items()) {
    EXPECT_GT(f["reads"].as_u64().value_or(0), 0u);
    EXPECT_GT(f["writes"].as_u64().value_or(0), 0u);
    EXPECT_GE(f["bytes_written"].as_u64().value_or(0),
              std::filesystem::file_size(f["path"].as_string()));
  }
}

TEST_F(Report, UnknownBackupOrJobIsAClearError) {
  backup();
  RunResult r = sb({"report", "io", "--backup", "99", "--catalog", cat()});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_TRUE(contains(r.err, "backup 99 is not in the catalog"));
  RunResult j = sb({"report", "io", "--job", "999", "--catalog", cat()});
  SB_EXPECT_EXIT(j, 2);
  EXPECT_TRUE(contains(j.err, "job 999 is not in the catalog"));
  RunResult both = sb({"report", "io", "--job", "1", "--backup", "1", "--catalog", cat()});
  SB_EXPECT_EXIT(both, 2);
  RunResult none = sb({"report", "--catalog", cat()});
  SB_EXPECT_EXIT(none, 2);
}

TEST_F(Report, AFreshCatalogHasNoJobs) {
  RunResult r = sb({"report", "jobs", "--catalog", t_ / "never-made"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "no jobs"));
  EXPECT_FALSE(exists(t_ / "never-made"));  // reading makes nothing
  RunResult j = sb({"report", "jobs", "--json", "--catalog", t_ / "never-made"});
  SB_ASSERT_EXIT(j, 0);
  EXPECT_EQ(parse_json(j)["jobs"].size(), 0u);
  RunResult io = sb({"report", "io", "--catalog", t_ / "never-made"});
  SB_ASSERT_EXIT(io, 0);
  EXPECT_TRUE(contains(io.out, "no jobs"));
}

}  // namespace
}  // namespace stripeback::it
