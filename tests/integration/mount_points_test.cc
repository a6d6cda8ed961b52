// File systems mounted below a source: pseudo file systems of the kernel (proc here) are
// skipped and reported by default; with --one-file-system every other file system is.
// The tests mount their own (tmpfs, proc) inside their temporary directory, so they need the
// right to mount; without it they say so and skip.
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

// A file system mounted for the life of the object; detached before the directory holding
// it is removed (declare it after that TempDir).
class Mount {
 public:
  Mount(const std::string& type, const std::string& where) : where_(where) {
    std::filesystem::create_directories(where);
    if (::mount(type.c_str(), where.c_str(), type.c_str(), 0, nullptr) == 0) mounted_ = true;
    else error_ = std::strerror(errno);
  }
  ~Mount() {
    if (mounted_) ::umount2(where_.c_str(), MNT_DETACH);
  }
  Mount(const Mount&) = delete;
  Mount& operator=(const Mount&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }

 private:
  std::string where_;
  bool mounted_ = false;
  std::string error_;
};

std::map<std::string, std::string> skipped_of(const Json& backup) {
  std::map<std::string, std::string> out;
  for (const auto& s : backup["skipped"].items())
    out[s["path"].as_string()] = s["reason"].as_string();
  return out;
}

TEST(MountPoints, PseudoFileSystemsAreSkippedAndNamed) {
  TempDir t("sbit-mount-proc");
  const std::string src = t / "src";
  make_file(src + "/data.dbf", 50000, 91);
  if (HasFatalFailure()) return;
  Mount proc("proc", src + "/proc");
  if (!proc.mounted()) GTEST_SKIP() << "cannot mount proc here: " << proc.error();
  RunResult b = sb({"backup", src, "--to", t / "pieces", "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  EXPECT_EQ(j["files"].as_u64(), 1u) << b.describe();
  auto skipped = skipped_of(j);
  ASSERT_EQ(skipped.size(), 1u) << b.describe();
  EXPECT_TRUE(contains(skipped[src + "/proc"], "proc pseudo file system"));
  EXPECT_TRUE(contains(b.err, "skipped '" + src + "/proc': proc pseudo file system"));
  // Named as the source itself: skipped just the same, with the note.
  RunResult p = sb({"backup", src + "/proc", "--to", t / "pieces", "--catalog", t / "cat"});
  SB_ASSERT_EXIT(p, 0);
  EXPECT_TRUE(contains(p.out, "skipped '" + src + "/proc': proc pseudo file system"));
  EXPECT_TRUE(contains(p.out, "0 files"));
}

TEST(MountPoints, OneFileSystemStaysOnTheSourcesFileSystem) {
  TempDir t("sbit-mount-xdev");
  const std::string src = t / "src";
  make_file(src + "/data.dbf", 50000, 92);
  if (HasFatalFailure()) return;
  Mount tmpfs("tmpfs", src + "/mnt");
  if (!tmpfs.mounted()) GTEST_SKIP() << "cannot mount tmpfs here: " << tmpfs.error();
  make_file(src + "/mnt/other.dbf", 60000, 93);
  make_file(src + "/mnt/deeper/more.dbf", 70000, 94);
  if (HasFatalFailure()) return;

  // By default a tmpfs holds files like any other file system: backed up.
  RunResult all = sb({"backup", src, "--to", t / "p1", "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(all, 0);
  EXPECT_EQ(parse_json(all)["files"].as_u64(), 3u) << all.describe();

  RunResult one = sb({"backup", src, "--to", t / "p2", "--catalog", t / "cat", "--json",
                      "--one-file-system"});
  SB_ASSERT_EXIT(one, 0);
  Json j = parse_json(one);
  EXPECT_EQ(j["files"].as_u64(), 1u) << one.describe();
  auto skipped = skipped_of(j);
  ASSERT_EQ(skipped.size(), 1u) << one.describe();
  EXPECT_TRUE(contains(skipped[src + "/mnt"], "--one-file-system"));
  EXPECT_TRUE(contains(one.err, src + "/mnt"));
  RunResult r = sb({"restore", "--to", t / "r", "--catalog", t / "cat", "--backup",
                    std::to_string(backup_id_of(j))});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_TRUE(restored_exactly(t / "r", {src + "/data.dbf"}));

  // The mounted file system named as a source is its own: walked.
  RunResult inner = sb({"backup", src + "/mnt", "--to", t / "p3", "--catalog", t / "cat",
                        "--json", "--one-file-system"});
  SB_ASSERT_EXIT(inner, 0);
  EXPECT_EQ(parse_json(inner)["files"].as_u64(), 2u) << inner.describe();
}

}  // namespace
}  // namespace stripeback::it
