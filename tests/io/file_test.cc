#include "storage/async/file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>

#include "tests/support/temp_dir.h"

namespace stripeback::io {
namespace {

using stripeback::testing::TempDir;

bool fd_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

TEST(UniqueFd, ClosesOnResetAndDestruction) {
  int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(raw, 0);
  {
    UniqueFd fd(raw);
    EXPECT_TRUE(fd.valid());
    EXPECT_EQ(fd.get(), raw);
  }
  EXPECT_FALSE(fd_open(raw));

  UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(a.valid());
  raw = a.get();
  UniqueFd b(std::move(a));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(b.get(), raw);
  UniqueFd c;
  c = std::move(b);
  EXPECT_EQ(c.get(), raw);
  c.reset();
  EXPECT_FALSE(c.valid());
  EXPECT_FALSE(fd_open(raw));

  UniqueFd d(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  raw = d.release();
  EXPECT_FALSE(d.valid());
  EXPECT_TRUE(fd_open(raw));
  EXPECT_EQ(::close(raw), 0);
}

TEST(File, CreateExclusiveRefusesExistingFile) {
  TempDir dir("sbfile");
  const std::string path = dir / "piece.sbp";
  auto first = create_exclusive(path, 0640, Direct::no);
  ASSERT_TRUE(first.has_value()) << first.error().what;
  EXPECT_FALSE(first->direct);
  struct stat st {};
  ASSERT_EQ(::fstat(first->fd.get(), &st), 0);
  EXPECT_EQ(st.st_mode & 0600, 0600u);
  EXPECT_EQ(st.st_mode & 0007, 0u);

  auto again = create_exclusive(path, 0640, Direct::yes);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, Errc::exists);
  EXPECT_EQ(again.error().sys_errno, EEXIST);
  EXPECT_EQ(again.error().what, "unable to create '" + path + "': File exists");
}

TEST(File, CreateExclusiveDirectGivesWritableFile) {
  TempDir dir("sbfile");
  auto out = create_exclusive(dir / "direct", 0600, Direct::yes);
  ASSERT_TRUE(out.has_value()) << out.error().what;
  const int flags = ::fcntl(out->fd.get(), F_GETFL);
  ASSERT_NE(flags, -1);
  EXPECT_EQ((flags & O_DIRECT) != 0, out->direct);
  EXPECT_EQ(flags & O_ACCMODE, O_WRONLY);
}

bool write_text(const char* path, const std::string& text) {
  UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
  return fd.valid() &&
         ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

// Enters a mount namespace of its own: directly as root, else inside a user namespace that
// maps the caller's ids (so the files it creates there have an owner).
bool private_mounts() {
  if (::unshare(CLONE_NEWNS) == 0) return true;
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  return ::unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 &&
         write_text("/proc/self/setgroups", "deny") &&
         write_text("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") &&
         write_text("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1");
}

// Runs in a child: mounts ramfs, which refuses O_DIRECT, over `dir` in a private mount
// namespace. Exits 0 on success, 77 when the sandbox does not allow the mount.
[[noreturn]] void create_without_direct_support(const std::string& dir) {
  if (!private_mounts()) std::_Exit(77);
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) std::_Exit(77);
  if (::mount("none", dir.c_str(), "ramfs", 0, nullptr) != 0) std::_Exit(77);
  auto made = create_exclusive(dir + "/piece", 0600, Direct::yes);
  if (!made.has_value() || made->direct) std::_Exit(1);
  auto again = create_exclusive(dir + "/piece", 0600, Direct::yes);
  if (again.has_value() || again.error().code != Errc::exists) std::_Exit(2);
  auto in = open_read(dir + "/piece", Direct::yes);
  if (!in.has_value() || in->direct) std::_Exit(3);
  std::_Exit(0);
}

// Linux creates the file before it refuses O_DIRECT; the fallback must not then report
// "File exists" for the file it just made.
TEST(File, FallsBackWhereODirectIsRefused) {
  TempDir dir("sbfile");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) create_without_direct_support(dir.path());
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "cannot mount ramfs here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "failed at step " << WEXITSTATUS(status);
}

TEST(File, OpenReadMissingFileNamesIt) {
  TempDir dir("sbfile");
  const std::string path = dir / "nope";
  for (Direct want : {Direct::no, Direct::yes}) {
    auto in = open_read(path, want);
    ASSERT_FALSE(in.has_value());
    EXPECT_EQ(in.error().code, Errc::not_found);
    EXPECT_EQ(in.error().what, "unable to open '" + path + "' for read: No such file or directory");
  }
}

TEST(File, OpenReadDirectReportsWhatIsInEffect) {
  TempDir dir("sbfile");
  const std::string path = dir / "data";
  stripeback::testing::write_pattern_file(path, 8192, 1);
  auto in = open_read(path, Direct::yes);
  ASSERT_TRUE(in.has_value()) << in.error().what;
  const int flags = ::fcntl(in->fd.get(), F_GETFL);
  ASSERT_NE(flags, -1);
  EXPECT_EQ((flags & O_DIRECT) != 0, in->direct);
  EXPECT_EQ(::fcntl(in->fd.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);

  auto plain = open_read(path, Direct::no);
  ASSERT_TRUE(plain.has_value()) << plain.error().what;
  EXPECT_FALSE(plain->direct);
}

TEST(File, MakeDirsCreatesParentsAndIsIdempotent) {
  TempDir dir("sbfile");
  const std::string deep = dir / "a/b//c/";
  ASSERT_TRUE(make_dirs(deep).has_value());
  EXPECT_TRUE(is_dir(dir / "a/b/c"));
  ASSERT_TRUE(make_dirs(deep).has_value());
  ASSERT_TRUE(make_dirs(dir.path()).has_value());
  ASSERT_TRUE(make_dirs("/").has_value());
  struct stat st {};
  ASSERT_EQ(::stat((dir / "a/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0700, 0700u);
}

TEST(File, MakeDirsNamesTheComponentThatFailed) {
  TempDir dir("sbfile");
  const std::string blocker = dir / "file";
  stripeback::testing::write_pattern_file(blocker, 10, 1);
  auto made = make_dirs(blocker + "/x/y");
  ASSERT_FALSE(made.has_value());
  EXPECT_EQ(made.error().what, "unable to create directory '" + blocker + "': Not a directory");

  auto empty = make_dirs("");
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().code, Errc::invalid_argument);
}

TEST(File, FsyncDir) {
  TempDir dir("sbfile");
  EXPECT_TRUE(fsync_dir(dir.path()).has_value());
  const std::string missing = dir / "gone";
  auto synced = fsync_dir(missing);
  ASSERT_FALSE(synced.has_value());
  EXPECT_EQ(synced.error().code, Errc::not_found);
  EXPECT_EQ(synced.error().what,
            "unable to open directory '" + missing + "': No such file or directory");
}

}  // namespace
}  // namespace stripeback::io
