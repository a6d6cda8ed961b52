// The tree checker the integration tests rely on must itself catch every kind of
// difference, or a broken restore could pass.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

class Checker : public ::testing::Test {
 protected:
  void SetUp() override {
    orig_ = t_ / "src/d/f.dbf";
    make_file(orig_, 70000, 71, 0640, int64_t{1650000000123456789});
    copy_ = restored_path(t_ / "r", orig_);
    make_file(copy_, 70000, 71, 0640, int64_t{1650000000123456789});
  }
  void set_mtime(const std::string& path, int64_t ns) {
    timespec ts[2] = {{0, UTIME_OMIT},
                      {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), ts, 0), 0);
  }
  TempDir t_{"sbit-checker"};
  std::string orig_, copy_;
};

TEST_F(Checker, AcceptsAnIdenticalCopy) {
  EXPECT_TRUE(same_file(orig_, copy_));
  EXPECT_TRUE(restored_exactly(t_ / "r", {orig_}));
}

TEST_F(Checker, CatchesOneChangedByte) {
  int fd = ::open(copy_.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char c = 0;
  ASSERT_EQ(::pread(fd, &c, 1, 65537), 1);
  c = static_cast<char>(c ^ 1);
  ASSERT_EQ(::pwrite(fd, &c, 1, 65537), 1);
  ::close(fd);
  set_mtime(copy_, 1650000000123456789);
  EXPECT_FALSE(same_file(orig_, copy_));
  EXPECT_FALSE(restored_exactly(t_ / "r", {orig_}));
}

TEST_F(Checker, CatchesSizeModeAndMtime) {
  ASSERT_EQ(::chmod(copy_.c_str(), 0644), 0);
  EXPECT_FALSE(same_file(orig_, copy_));
  ASSERT_EQ(::chmod(copy_.c_str(), 0640), 0);
  set_mtime(copy_, 1650000000123456788);  // one nanosecond off
  EXPECT_FALSE(same_file(orig_, copy_));
  set_mtime(copy_, 1650000000123456789);
  ASSERT_EQ(::truncate(copy_.c_str(), 69999), 0);
  set_mtime(copy_, 1650000000123456789);
  EXPECT_FALSE(same_file(orig_, copy_));
}

TEST_F(Checker, CatchesMissingExtraAndTemporaryFiles) {
  write_text(t_ / "r/stray", "x");
  EXPECT_FALSE(restored_exactly(t_ / "r", {orig_}));
  ASSERT_EQ(::unlink((t_ / "r/stray").c_str()), 0);
  std::string temp = std::filesystem::path(copy_).parent_path().string() + "/.f.dbf.sbrestore-1";
  write_text(temp, "x");
  EXPECT_FALSE(restored_exactly(t_ / "r", {orig_}));
  ASSERT_EQ(::unlink(temp.c_str()), 0);
  ASSERT_EQ(::symlink(orig_.c_str(), (t_ / "r/link").c_str()), 0);
  EXPECT_FALSE(restored_exactly(t_ / "r", {orig_}));
  ASSERT_EQ(::unlink((t_ / "r/link").c_str()), 0);
  EXPECT_TRUE(restored_exactly(t_ / "r", {orig_}));
  ASSERT_EQ(::unlink(copy_.c_str()), 0);
  EXPECT_FALSE(restored_exactly(t_ / "r", {orig_}));
}

TEST_F(Checker, CatchesDirectoryModeAndMtime) {
  std::string d = t_ / "src/d";
  std::string rd = restored_path(t_ / "r", d);
  set_mtime(d, 1650000000000000001);
  set_mtime(rd, 1650000000000000001);
  ASSERT_EQ(::chmod(d.c_str(), 0750), 0);
  ASSERT_EQ(::chmod(rd.c_str(), 0750), 0);
  EXPECT_TRUE(restored_exactly(t_ / "r", {orig_}, {d}));
  set_mtime(rd, 1650000000000000002);
  EXPECT_FALSE(restored_exactly(t_ / "r", {orig_}, {d}));
  set_mtime(rd, 1650000000000000001);
  ASSERT_EQ(::chmod(rd.c_str(), 0755), 0);
  EXPECT_FALSE(restored_exactly(t_ / "r", {orig_}, {d}));
}

TEST(JsonParser, ParsesAndRejects) {
  auto j = Json::parse(
      R"({"a":[1,2.5,-3e2,"x\"\u00e9"],"b":{"c":true,"d":null},"n":18446744073709551615})");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ((*j)["a"].size(), 4u);
  EXPECT_EQ((*j)["a"][0].as_u64(), 1u);
  EXPECT_DOUBLE_EQ((*j)["a"][2].as_double(), -300.0);
  EXPECT_FALSE((*j)["a"][1].as_u64().has_value());
  EXPECT_EQ((*j)["a"][3].as_string(), "x\"\xc3\xa9");
  EXPECT_TRUE((*j)["b"]["c"].as_bool());
  EXPECT_TRUE((*j)["b"]["d"].is_null());
  EXPECT_EQ((*j)["n"].as_u64(), UINT64_MAX);
  EXPECT_TRUE((*j)["missing"].is_null());
  for (const char* bad : {"", "{", "{\"a\":1,}", "[1 2]", "{\"a\":1}x", "{\"a\":01}", "\"\t\"",
                          "{\"a\":1,\"a\":2}", "nul"})
    EXPECT_FALSE(Json::parse(bad).has_value()) << bad;
}

}  // namespace
}  // namespace stripeback::it
