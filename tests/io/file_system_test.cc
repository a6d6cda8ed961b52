#include "backends/local/file_system.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace stripeback::io {
namespace {

std::optional<std::string> kind_of(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return std::string("(cannot stat ") + dir + ")";
  return pseudo_file_system(dir, st.st_dev);
}

bool mounted_as(const std::string& mount_point, const std::string& type) {
  std::ifstream in("/proc/self/mounts");
  std::string source, where, what, rest;
  while (in >> source >> where >> what && std::getline(in, rest))
    if (where == mount_point && what == type) return true;
  return false;
}

TEST(PseudoFileSystem, TellsTheKernelsViewsFromFilesystemsWithFiles) {
  EXPECT_EQ(kind_of("/proc"), std::optional<std::string>("proc"));
  EXPECT_EQ(kind_of("/proc/self"), std::optional<std::string>("proc"));
  if (mounted_as("/sys", "sysfs")) {
    EXPECT_EQ(kind_of("/sys"), std::optional<std::string>("sysfs"));
  }
  if (mounted_as("/dev/pts", "devpts")) {
    EXPECT_EQ(kind_of("/dev/pts"), std::optional<std::string>("devpts"));
  }
  stripeback::testing::TempDir dir;
  EXPECT_EQ(kind_of(dir.path()), std::nullopt) << dir.path();
  EXPECT_EQ(kind_of("/"), std::nullopt);
}

// devtmpfs has tmpfs's f_type: it is told apart through mountinfo, and a plain tmpfs is not
// mistaken for it.
TEST(PseudoFileSystem, DevtmpfsIsNotAPlainTmpfs) {
  if (!mounted_as("/dev", "devtmpfs")) GTEST_SKIP() << "/dev is not a devtmpfs here";
  EXPECT_EQ(kind_of("/dev"), std::optional<std::string>("devtmpfs"));
  if (mounted_as("/dev/shm", "tmpfs")) {
    EXPECT_EQ(kind_of("/dev/shm"), std::nullopt);
  }
}

}  // namespace
}  // namespace stripeback::io
