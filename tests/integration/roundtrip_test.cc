// Backup and restore round trips through the real binary: the ~1 GiB mixed data set with
// 1, 2 and 4 channels, the pread/pwrite fallback, buffered I/O, small buffers, and
// restores limited to one file or one directory.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

// The data set must contain what the round trip claims to cover.
void check_variety(const std::vector<std::string>& files) {
  ASSERT_GE(files.size(), 8u);
  bool empty = false, odd_size = false, sub_ns = false;
  std::set<unsigned> modes;
  size_t min_depth = SIZE_MAX, max_depth = 0;
  for (const auto& f : files) {
    struct stat st;
    ASSERT_EQ(::lstat(f.c_str(), &st), 0) << f;
    empty = empty || st.st_size == 0;
    odd_size = odd_size || st.st_size % 4096 != 0;
    sub_ns = sub_ns || st.st_mtim.tv_nsec % 1000 != 0;
    modes.insert(st.st_mode & 07777);
    auto depth = static_cast<size_t>(std::count(f.begin(), f.end(), '/'));
    min_depth = std::min(min_depth, depth);
    max_depth = std::max(max_depth, depth);
  }
  EXPECT_TRUE(empty) << "the data set has no empty file";
  EXPECT_TRUE(odd_size) << "the data set has no file whose size is not a multiple of 4096";
  EXPECT_TRUE(sub_ns) << "the data set has no mtime with sub-microsecond nanoseconds";
  EXPECT_GE(modes.size(), 3u) << "the data set has fewer than 3 distinct modes";
  EXPECT_GE(max_depth, min_depth + 2) << "the data set has no deeply nested directories";
}

// Every channel of a backup or restore JSON used `engine`. io_uring may be refused by the
// system (the binary then says so on stderr and falls back), which is not a test failure.
void expect_engine(const Json& j, const RunResult& r, const std::string& engine) {
  ASSERT_TRUE(j["channels"].is_array()) << r.describe();
  for (const auto& c : j["channels"].items()) {
    if (engine == "io_uring" && r.err.find("io_uring unavailable") != std::string::npos) {
      ::testing::Test::RecordProperty("io_uring", "unavailable; fallback tested instead");
      continue;
    }
    EXPECT_EQ(c["io_engine"].as_string(), engine) << r.describe();
  }
}

struct RoundTripResult {
  RunResult backup_run, restore_run;
  Json backup, restore;
};

// Backs `data` up and restores all of it, asserting success and an identical tree.
void round_trip(const std::string& data, const TempDir& t,
                const std::vector<std::string>& backup_flags,
                const std::vector<std::string>& restore_flags, const Env& env,
                RoundTripResult* out) {
  auto originals = files_under(data);
  ASSERT_FALSE(originals.empty());
  std::vector<std::string> args{"backup",    data,      "--to",  t / "pieces",
                                "--catalog", t / "cat", "--json"};
  args.insert(args.end(), backup_flags.begin(), backup_flags.end());
  RunResult b = sb(args, env);
  SB_ASSERT_EXIT(b, 0);
  Json bj = parse_json(b);
  EXPECT_EQ(bj["status"].as_string(), "complete") << b.describe();
  EXPECT_EQ(bj["files"].as_u64(), originals.size()) << b.describe();
  EXPECT_EQ(bj["bytes_read"].as_u64(), total_size(originals)) << b.describe();
  EXPECT_EQ(bj["pieces"].as_u64(), pieces_in(t / "pieces").size()) << b.describe();

  args = {"restore", "--to", t / "restore", "--catalog", t / "cat", "--json"};
  args.insert(args.end(), restore_flags.begin(), restore_flags.end());
  RunResult r = sb(args, env);
  SB_ASSERT_EXIT(r, 0);
  Json rj = parse_json(r);
  EXPECT_EQ(rj["status"].as_string(), "complete") << r.describe();
  EXPECT_EQ(rj["files"].as_u64(), originals.size()) << r.describe();
  EXPECT_EQ(rj["bytes"].as_u64(), total_size(originals)) << r.describe();
  EXPECT_TRUE(restored_tree(t / "restore", data));
  if (out) *out = {b, r, bj, rj};
}

class RoundTrip : public ::testing::TestWithParam<int> {};

TEST_P(RoundTrip, MixedDataSetRestoresIdentical) {
  const std::string& data = big_data();
  ASSERT_FALSE(data.empty());
  auto originals = files_under(data);
  check_variety(originals);
  if (HasFatalFailure()) return;
  TempDir t("sbit-rt");
  std::string n = std::to_string(GetParam());
  RoundTripResult res;
  round_trip(data, t, {"--channels", n}, {"--channels", n}, {}, &res);
  if (HasFatalFailure()) return;
  ASSERT_EQ(res.backup["channels"].size(), static_cast<size_t>(GetParam()));
  expect_engine(res.backup, res.backup_run, "io_uring");
  expect_engine(res.restore, res.restore_run, "io_uring");
  uint64_t per_channel = 0;
  int busy_channels = 0;
  for (const auto& c : res.backup["channels"].items()) {
    per_channel += c["bytes_read"].as_u64().value_or(0);
    busy_channels += c["files"].as_u64().value_or(0) > 0 ? 1 : 0;
  }
  EXPECT_EQ(per_channel, total_size(originals));
  EXPECT_GE(busy_channels, std::min(GetParam(), 2)) << "the work was not spread over channels";
  // The empty file came back as an empty regular file.
  bool saw_empty = false;
  for (const auto& f : originals) {
    if (file_size(f) != 0) continue;
    saw_empty = true;
    struct stat st;
    ASSERT_EQ(::lstat(restored_path(t / "restore", f).c_str(), &st), 0) << f;
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_size, 0);
  }
  EXPECT_TRUE(saw_empty);
}

INSTANTIATE_TEST_SUITE_P(Channels, RoundTrip, ::testing::Values(1, 2, 4),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::to_string(i.param) + "ch";
                         });

TEST(RoundTripVariants, SyncFallbackEngine) {
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  TempDir t("sbit-sync");
  Env env{{"STRIPEBACK_IO", "sync"}};
  RoundTripResult res;
  round_trip(data, t, {"--channels", "2"}, {"--channels", "2"}, env, &res);
  if (HasFatalFailure()) return;
  expect_engine(res.backup, res.backup_run, "sync");
  expect_engine(res.restore, res.restore_run, "sync");
}

TEST(RoundTripVariants, BufferedIoWithNoDirect) {
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  TempDir t("sbit-nodirect");
  RoundTripResult res;
  round_trip(data, t, {"--channels", "2", "--no-direct"}, {"--no-direct"}, {}, &res);
  if (HasFatalFailure()) return;
  for (const auto& c : res.backup["channels"].items()) {
    EXPECT_TRUE(c["direct_source"].is_bool() && !c["direct_source"].as_bool());
    EXPECT_TRUE(c["direct_sink"].is_bool() && !c["direct_sink"].as_bool());
  }
}

// Tiny buffers: thousands of frames, every odd file size ends mid-buffer, and the restore
// uses a different channel count than the backup.
TEST(RoundTripVariants, SmallBuffersManyFrames) {
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  TempDir t("sbit-smallbuf");
  round_trip(data, t, {"--channels", "3", "--buffers", "3", "--buffer-size", "12K"},
             {"--channels", "1", "--buffer-size", "12K"}, {}, nullptr);
}

// A backup made with larger buffers than the restore's default must still restore: the
// frame size is a property of the backup, not something the user has to repeat.
TEST(RoundTripVariants, RestoreWithDefaultsAfterLargeBufferBackup) {
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  TempDir t("sbit-bigbuf");
  round_trip(data, t, {"--buffer-size", "4M"}, {}, {}, nullptr);
}

// Two backups at once into the same catalog and the same pieces directory: both complete
// with distinct ids and pieces, and each restores identical.
TEST(RoundTripVariants, ConcurrentBackupsShareCatalogAndDestination) {
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  TempDir t("sbit-concurrent");
  make_file(t / "other/x.dbf", (5u << 20) + 17, 81);
  make_file(t / "other/y/z.dbf", 12345, 82);
  if (HasFatalFailure()) return;
  std::vector<std::string> common{"--to", t / "pieces", "--catalog", t / "cat", "--json"};
  std::vector<std::string> a{"backup", data}, b{"backup", t / "other"};
  a.insert(a.end(), common.begin(), common.end());
  b.insert(b.end(), common.begin(), common.end());
  auto pa = sb_start(a);
  auto pb = sb_start(b);
  RunResult ra = pa->wait(), rb = pb->wait();
  SB_ASSERT_EXIT(ra, 0);
  SB_ASSERT_EXIT(rb, 0);
  uint64_t ida = backup_id_of(parse_json(ra)), idb = backup_id_of(parse_json(rb));
  EXPECT_NE(ida, idb);
  EXPECT_EQ(pieces_in(t / "pieces").size(), parse_json(ra)["pieces"].as_u64().value_or(0) +
                                                parse_json(rb)["pieces"].as_u64().value_or(0));
  RunResult l = sb({"list", "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(l, 0);
  Json lj = parse_json(l);
  ASSERT_EQ(lj["backups"].size(), 2u) << l.describe();
  for (const auto& e : lj["backups"].items()) EXPECT_EQ(e["status"].as_string(), "complete");

  RunResult r1 =
      sb({"restore", "--to", t / "ra", "--catalog", t / "cat", "--backup", std::to_string(ida)});
  SB_ASSERT_EXIT(r1, 0);
  EXPECT_TRUE(restored_tree(t / "ra", data));
  RunResult r2 =
      sb({"restore", "--to", t / "rb", "--catalog", t / "cat", "--backup", std::to_string(idb)});
  SB_ASSERT_EXIT(r2, 0);
  EXPECT_TRUE(restored_tree(t / "rb", t / "other"));
}

// --- Restores limited to PATH arguments -------------------------------------------------

class SelectiveRestore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("sbit-sel");
    std::string src = *dir_ / "src";
    std::filesystem::create_directories(src + "/dir1/sub");
    std::filesystem::create_directories(src + "/dir10");
    std::filesystem::create_directories(src + "/other");
    using stripeback::testing::write_pattern_file;
    write_pattern_file(src + "/dir1/f1", 100000, 1);
    write_pattern_file(src + "/dir1/sub/f2", 5000, 2);
    write_pattern_file(src + "/dir10/f3", 7000, 3);  // "dir1" is a string prefix of "dir10"
    write_pattern_file(src + "/dir1.txt", 3000, 4);  // and of "dir1.txt"
    write_pattern_file(src + "/other/big", (3u << 20) + 3, 5);
    write_pattern_file(src + "/other/empty", 0, 6);
    ::chmod((src + "/dir1/sub/f2").c_str(), 0600);
    // Directories with their own modes and old mtimes (after their contents are made).
    ::chmod((src + "/dir1/sub").c_str(), 0750);
    ::chmod((src + "/other").c_str(), 0700);
    for (const char* d : {"/dir1/sub", "/dir1", "/other"}) {
      timespec ts[2] = {{0, UTIME_OMIT}, {1500000000, 123456789}};
      ::utimensat(AT_FDCWD, (src + d).c_str(), ts, 0);
    }
    backup_ =
        new RunResult(sb({"backup", src, "--to", *dir_ / "pieces", "--catalog", *dir_ / "cat"}));
  }
  static void TearDownTestSuite() {
    delete backup_;
    delete dir_;
    backup_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override { SB_ASSERT_EXIT(*backup_, 0); }

  static std::string src(const std::string& rel) { return *dir_ / ("src/" + rel); }
  RunResult restore(const std::string& to, const std::vector<std::string>& paths) {
    std::vector<std::string> args{"restore", "--to", to, "--catalog", *dir_ / "cat"};
    args.insert(args.end(), paths.begin(), paths.end());
    return sb(args);
  }

  static TempDir* dir_;
  static RunResult* backup_;
};
TempDir* SelectiveRestore::dir_ = nullptr;
RunResult* SelectiveRestore::backup_ = nullptr;

TEST_F(SelectiveRestore, OneFileRestoresOnlyThatFile) {
  TempDir r("sbit-sel-r");
  RunResult res = restore(r.path(), {src("dir1/sub/f2")});
  SB_ASSERT_EXIT(res, 0);
  EXPECT_TRUE(restored_exactly(r.path(), {src("dir1/sub/f2")}));
}

TEST_F(SelectiveRestore, OneDirectoryRestoresExactlyTheFilesUnderIt) {
  TempDir r("sbit-sel-r");
  RunResult res = restore(r.path(), {src("dir1")});
  SB_ASSERT_EXIT(res, 0);
  // Not dir10/f3 nor dir1.txt, whose names merely start with "dir1".
  EXPECT_TRUE(restored_exactly(r.path(), {src("dir1/f1"), src("dir1/sub/f2")},
                               {src("dir1"), src("dir1/sub")}));
}

TEST_F(SelectiveRestore, DirectoryGivenWithTrailingSlash) {
  TempDir r("sbit-sel-r");
  RunResult res = restore(r.path(), {src("other") + "/"});
  SB_ASSERT_EXIT(res, 0);
  EXPECT_TRUE(restored_exactly(r.path(), {src("other/big"), src("other/empty")}, {src("other")}));
}

TEST_F(SelectiveRestore, SeveralPathsRestoreTheirUnion) {
  TempDir r("sbit-sel-r");
  RunResult res = restore(r.path(), {src("dir10"), src("dir1.txt"), src("other/empty")});
  SB_ASSERT_EXIT(res, 0);
  EXPECT_TRUE(restored_exactly(r.path(), {src("dir10/f3"), src("dir1.txt"), src("other/empty")}));
}

}  // namespace
}  // namespace stripeback::it
