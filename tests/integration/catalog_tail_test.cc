// A damaged end of catalog.log (garbage after the last record, or a cut-off last record)
// is survivable: list works and warns, earlier complete backups stay listed and
// restorable, and the next backup appends cleanly after cutting the torn tail off.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

class CatalogTail : public ::testing::Test {
 protected:
  void SetUp() override {
    make_file(t_ / "a/one.dbf", 200000, 61);
    make_file(t_ / "a/sub/two.dbf", 3000, 62);
    make_file(t_ / "b/three.dbf", 70000, 63);
    if (HasFatalFailure()) return;
    for (const char* s : {"a", "b"}) {
      RunResult b = sb({"backup", t_ / s, "--to", t_ / "pieces", "--catalog", cat(), "--json"});
      SB_ASSERT_EXIT(b, 0);
      ids_.push_back(backup_id_of(parse_json(b)));
    }
    log_ = cat() + "/catalog.log";
    ASSERT_TRUE(exists(log_));
  }

  std::string cat() const { return t_ / "cat"; }

  Json list(const RunResult& l) {
    EXPECT_TRUE(l.exited(0)) << l.describe();
    return parse_json(l);
  }

  // Files in the catalog directory besides the log and the lock.
  std::vector<std::string> extra_catalog_files() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(cat())) {
      std::string n = e.path().filename().string();
      // jobs/ holds the status files of running jobs (docs/monitoring.md).
      if (n != "catalog.log" && n != "lock" && n != "jobs") out.push_back(n);
    }
    return out;
  }

  TempDir t_{"sbit-cattail"};
  std::vector<uint64_t> ids_;
  std::string log_;
};

TEST_F(CatalogTail, GarbageAfterLastRecord) {
  // Starts like a record (the magic "SBC1") and then stops: what a writer that died in the
  // middle of an append leaves.
  const std::string garbage = std::string("SBC1\x10\x00\x00", 7) + "garbage\xff\xfe";
  uint64_t good_size = file_size(log_);
  {
    int fd = ::open(log_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, garbage.data(), garbage.size()), static_cast<ssize_t>(garbage.size()));
    ::close(fd);
  }

  RunResult l = sb({"list", "--catalog", cat(), "--json"});
  Json j = list(l);
  EXPECT_TRUE(contains(l.err, "warn")) << l.describe();
  EXPECT_TRUE(contains(l.err, cat())) << l.describe();
  ASSERT_EQ(j["backups"].size(), 2u) << l.describe();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(j["backups"][i]["id"].as_u64(), ids_[i]);
    EXPECT_EQ(j["backups"][i]["status"].as_string(), "complete");
  }
  RunResult lt = sb({"list", "--catalog", cat()});
  SB_EXPECT_EXIT(lt, 0);
  EXPECT_TRUE(contains(lt.err, "warn"));
  EXPECT_EQ(file_size(log_), good_size + garbage.size()) << "a read-only command changed the log";

  RunResult r = sb({"restore", "--to", t_ / "r", "--catalog", cat()});
  SB_ASSERT_EXIT(r, 0);
  auto all = files_under(t_ / "a");
  for (const auto& f : files_under(t_ / "b")) all.push_back(f);
  auto dirs = dirs_under(t_ / "a");
  for (const auto& d : dirs_under(t_ / "b")) dirs.push_back(d);
  EXPECT_TRUE(restored_exactly(t_ / "r", all, dirs));

  // The next append (the restore's job record) cut the tail off, saving it beside the log;
  // a backup then appends cleanly and the warning is gone.
  EXPECT_GT(file_size(log_), good_size);
  RunResult b = sb({"backup", t_ / "b", "--to", t_ / "pieces", "--catalog", cat()});
  SB_ASSERT_EXIT(b, 0);
  auto extra = extra_catalog_files();
  ASSERT_EQ(extra.size(), 1u);
  EXPECT_EQ(extra[0].rfind("catalog.log.torn-", 0), 0u) << extra[0];
  EXPECT_EQ(stripeback::testing::read_file(cat() + "/" + extra[0]), garbage);
  RunResult l2 = sb({"list", "--catalog", cat(), "--json"});
  Json j2 = list(l2);
  EXPECT_EQ(l2.err, "") << l2.describe();
  ASSERT_EQ(j2["backups"].size(), 3u);
  EXPECT_EQ(j2["backups"][2]["status"].as_string(), "complete");
}

TEST_F(CatalogTail, TruncatedLastRecord) {
  // The last records are the second backup's end record and its job record: without the
  // job record, and the end record cut short by 5 bytes.
  const std::string log = stripeback::testing::read_file(log_);
  const size_t job_at = log.rfind("SBC1");
  ASSERT_NE(job_at, std::string::npos);
  ASSERT_EQ(::truncate(log_.c_str(), static_cast<off_t>(job_at - 5)), 0);

  RunResult l = sb({"list", "--catalog", cat(), "--json"});
  Json j = list(l);
  EXPECT_TRUE(contains(l.err, "warn")) << l.describe();
  ASSERT_EQ(j["backups"].size(), 2u) << l.describe();
  EXPECT_EQ(j["backups"][0]["id"].as_u64(), ids_[0]);
  EXPECT_EQ(j["backups"][0]["status"].as_string(), "complete");
  // The last record was the second backup's end record: it no longer counts as complete.
  EXPECT_EQ(j["backups"][1]["id"].as_u64(), ids_[1]);
  EXPECT_NE(j["backups"][1]["status"].as_string(), "complete") << l.describe();

  // The first backup is restorable, by id and by default; the second is not used.
  RunResult r1 =
      sb({"restore", "--to", t_ / "r1", "--catalog", cat(), "--backup", std::to_string(ids_[0])});
  SB_ASSERT_EXIT(r1, 0);
  EXPECT_TRUE(restored_tree(t_ / "r1", t_ / "a"));
  RunResult r2 = sb({"restore", "--to", t_ / "r2", "--catalog", cat(), "--json"});
  SB_ASSERT_EXIT(r2, 0);
  Json rj = parse_json(r2);
  ASSERT_EQ(rj["backups"].size(), 1u) << r2.describe();
  EXPECT_EQ(rj["backups"][0]["id"].as_u64(), ids_[0]);
  EXPECT_TRUE(restored_tree(t_ / "r2", t_ / "a"));

  // Backing up again works and is restorable.
  RunResult b = sb({"backup", t_ / "b", "--to", t_ / "pieces", "--catalog", cat(), "--json"});
  SB_ASSERT_EXIT(b, 0);
  uint64_t id3 = backup_id_of(parse_json(b));
  EXPECT_GT(id3, ids_[1]);
  RunResult r3 =
      sb({"restore", "--to", t_ / "r3", "--catalog", cat(), "--backup", std::to_string(id3)});
  SB_ASSERT_EXIT(r3, 0);
  EXPECT_TRUE(restored_tree(t_ / "r3", t_ / "b"));
}

TEST_F(CatalogTail, ZeroFilledTail) {
  // A crash after the file grew but before the data reached it leaves zeros.
  ASSERT_EQ(::truncate(log_.c_str(), static_cast<off_t>(file_size(log_) + 4096)), 0);
  RunResult l = sb({"list", "--catalog", cat(), "--json"});
  Json j = list(l);
  EXPECT_TRUE(contains(l.err, "warn")) << l.describe();
  ASSERT_EQ(j["backups"].size(), 2u);
  EXPECT_EQ(j["backups"][1]["status"].as_string(), "complete");
  RunResult r =
      sb({"restore", "--to", t_ / "r", "--catalog", cat(), "--backup", std::to_string(ids_[1])});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_tree(t_ / "r", t_ / "b"));
}

}  // namespace
}  // namespace stripeback::it
