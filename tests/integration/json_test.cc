// The --json output of backup, restore and list is one well-formed JSON document with the
// fields scripts rely on, and its numbers agree with the data.
#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

class JsonOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = t_ / "src";
    make_file(src_ + "/one.dbf", 3000000, 41);
    make_file(src_ + "/d/two.dbf", 123457, 42);
    make_file(src_ + "/d/e/three.dbf", 1, 43);
    make_file(src_ + "/d/e/empty", 0, 44);
    files_ = files_under(src_);
    ASSERT_EQ(files_.size(), 4u);
  }
  TempDir t_{"sbit-json"};
  std::string src_;
  std::vector<std::string> files_;
};

void expect_seconds(const Json& c, const char* key, double elapsed) {
  ASSERT_TRUE(c[key].is_number()) << key << " missing or not a number";
  EXPECT_GE(c[key].as_double(), 0.0) << key;
  EXPECT_LE(c[key].as_double(), elapsed + 0.05) << key << " exceeds the channel's elapsed time";
}

TEST_F(JsonOutput, BackupReportsIdStatusAndPerChannelStats) {
  RunResult b = sb({"backup", src_, "--to", t_ / "pieces", "--catalog", t_ / "cat", "--json",
                    "--channels", "2", "--tag", "nightly"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j["backup_id"].as_u64().has_value()) << b.describe();
  EXPECT_GE(*j["backup_id"].as_u64(), 1u);
  EXPECT_EQ(j["status"].as_string(), "complete");
  EXPECT_FALSE(j.has("error"));
  EXPECT_EQ(j["files"].as_u64(), files_.size());
  EXPECT_EQ(j["bytes_read"].as_u64(), total_size(files_));
  EXPECT_EQ(j["pieces"].as_u64(), pieces_in(t_ / "pieces").size());
  ASSERT_TRUE(j["channels"].is_array());
  ASSERT_EQ(j["channels"].size(), 2u);
  uint64_t bytes = 0, files = 0;
  for (const auto& c : j["channels"].items()) {
    ASSERT_TRUE(c.is_object());
    ASSERT_TRUE(c["bytes_read"].as_u64().has_value());
    bytes += *c["bytes_read"].as_u64();
    files += c["files"].as_u64().value_or(0);
    ASSERT_TRUE(c["elapsed_s"].is_number());
    double elapsed = c["elapsed_s"].as_double();
    expect_seconds(c, "read_busy_s", elapsed);
    expect_seconds(c, "write_busy_s", elapsed);
    expect_seconds(c, "wait_s", elapsed);
  }
  EXPECT_EQ(bytes, total_size(files_));
  EXPECT_EQ(files, files_.size());
  EXPECT_TRUE(j["skipped"].is_array() && j["skipped"].size() == 0) << b.describe();

  RunResult l = sb({"list", "--catalog", t_ / "cat", "--json"});
  SB_ASSERT_EXIT(l, 0);
  Json lj = parse_json(l);
  ASSERT_EQ(lj["backups"].size(), 1u) << l.describe();
  const Json& e = lj["backups"][0];
  EXPECT_EQ(e["id"].as_u64(), j["backup_id"].as_u64());
  EXPECT_EQ(e["status"].as_string(), "complete");
  EXPECT_EQ(e["files"].as_u64(), files_.size());
  EXPECT_EQ(e["bytes"].as_u64(), total_size(files_));
  EXPECT_EQ(e["pieces"].as_u64(), j["pieces"].as_u64());
  EXPECT_EQ(e["tag"].as_string(), "nightly");
  EXPECT_TRUE(e["start_time_ns"].as_u64().has_value());
}

TEST_F(JsonOutput, RestoreReportsFilesBytesAndBackupUsed) {
  RunResult b = sb({"backup", src_, "--to", t_ / "pieces", "--catalog", t_ / "cat", "--json"});
  SB_ASSERT_EXIT(b, 0);
  uint64_t id = backup_id_of(parse_json(b));
  RunResult r = sb({"restore", "--to", t_ / "r", "--catalog", t_ / "cat", "--json"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(j["status"].as_string(), "complete");
  EXPECT_EQ(j["files"].as_u64(), files_.size());
  EXPECT_EQ(j["bytes"].as_u64(), total_size(files_));
  ASSERT_EQ(j["backups"].size(), 1u) << r.describe();
  EXPECT_EQ(j["backups"][0]["id"].as_u64(), id);
  EXPECT_TRUE(j["errors"].is_array() && j["errors"].size() == 0);
  EXPECT_TRUE(restored_tree(t_ / "r", src_));
}

TEST_F(JsonOutput, ListsSeveralBackupsInIdOrderAndTagSelectsNewest) {
  RunResult b1 =
      sb({"backup", src_, "--to", t_ / "pieces", "--catalog", t_ / "cat", "--json", "--tag", "A"});
  SB_ASSERT_EXIT(b1, 0);
  std::string saved = stripeback::testing::read_file(src_ + "/d/two.dbf");
  make_file(src_ + "/d/two.dbf", 5555, 99);  // changed between the backups
  RunResult b2 = sb({"backup", src_ + "/d", "--to", t_ / "pieces", "--catalog", t_ / "cat",
                     "--json", "--tag", "B"});
  SB_ASSERT_EXIT(b2, 0);
  uint64_t id1 = backup_id_of(parse_json(b1)), id2 = backup_id_of(parse_json(b2));
  EXPECT_GT(id2, id1);

  RunResult l = sb({"list", "--catalog", t_ / "cat", "--json"});
  SB_ASSERT_EXIT(l, 0);
  Json lj = parse_json(l);
  ASSERT_EQ(lj["backups"].size(), 2u);
  EXPECT_EQ(lj["backups"][0]["id"].as_u64(), id1);
  EXPECT_EQ(lj["backups"][0]["files"].as_u64(), 4u);
  EXPECT_EQ(lj["backups"][1]["id"].as_u64(), id2);
  EXPECT_EQ(lj["backups"][1]["files"].as_u64(), 3u);

  // --tag A gets the first copy of two.dbf, not the newer one.
  RunResult r = sb({"restore", "--to", t_ / "r", "--catalog", t_ / "cat", "--tag", "A", "--json",
                    src_ + "/d/two.dbf"});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_EQ(parse_json(r)["backups"][0]["id"].as_u64(), id1);
  EXPECT_EQ(stripeback::testing::read_file(restored_path(t_ / "r", src_ + "/d/two.dbf")), saved);
  // Without a tag the newest copy wins.
  RunResult r2 = sb({"restore", "--to", t_ / "r2", "--catalog", t_ / "cat", src_ + "/d/two.dbf"});
  SB_ASSERT_EXIT(r2, 0);
  EXPECT_TRUE(same_file(src_ + "/d/two.dbf", restored_path(t_ / "r2", src_ + "/d/two.dbf")));
}

}  // namespace
}  // namespace stripeback::it
