// The hostile-target suite: whatever someone who can write into a restore target plants
// there (journals, undo logs and temporaries of a "killed" restore; hard links, symbolic
// links, FIFOs; files of other owners; set-id modes), a restore changes no byte, mode,
// owner or time of any file outside the target, and makes no file set-id.
// Runs as any user; the other-owner cases need root (to plant files of another uid) and
// say so when skipped.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint32_t kNobody = 65534;

struct Snapshot {
  std::string bytes;
  struct stat st {};
};

Snapshot snap(const std::string& path) {
  Snapshot s;
  s.bytes = stripeback::testing::read_file(path);
  EXPECT_EQ(::lstat(path.c_str(), &s.st), 0) << path;
  return s;
}

// Nothing about the file changed: contents, mode, owner, size, modification time.
void expect_same(const std::string& path, const Snapshot& before) {
  Snapshot now = snap(path);
  EXPECT_EQ(now.bytes, before.bytes) << path;
  EXPECT_EQ(now.st.st_mode, before.st.st_mode) << path;
  EXPECT_EQ(now.st.st_uid, before.st.st_uid) << path;
  EXPECT_EQ(now.st.st_gid, before.st.st_gid) << path;
  EXPECT_EQ(now.st.st_size, before.st.st_size) << path;
  EXPECT_EQ(now.st.st_mtim.tv_sec, before.st.st_mtim.tv_sec) << path;
  EXPECT_EQ(now.st.st_mtim.tv_nsec, before.st.st_mtim.tv_nsec) << path;
}

void write_bytes(const std::string& path, const std::string& bytes, mode_t mode = 0600) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

void put_le32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// An undo log header (delta_undo.h) with no records: applied, it truncates the file to
// `size` 0 and gives it `mode` and `uid`/`gid`.
std::string undo_header(uint32_t mode, uint32_t uid, uint32_t gid) {
  std::string h(64, '\0');
  std::memcpy(h.data(), "SBUNDO01", 8);
  put_le32(h, 8, 1);
  put_le32(h, 12, mode);
  put_le32(h, 16, uid);
  put_le32(h, 20, gid);
  return h;
}

std::string host() {
  char h[256] = {};
  ::gethostname(h, sizeof h - 1);
  return h;
}

// A journal of a restore that is gone (a pid no process has), listing `entries`.
std::string journal_text(const std::vector<std::string>& entries) {
  std::string t = "stripeback-restore-journal 1\nhost=" + host() + "\npid=4000000\nstart=1\n\n";
  for (const auto& e : entries) t += e + std::string(1, '\0');
  return t;
}

const char* kTemp = ".sbrestore-aaaaaaaaaaaaaaaa";
const char* kUndo = ".sbrestore-bbbbbbbbbbbbbbbb";
const char* kJournal = ".sbrestore-journal-0123456789abcdef";

struct Target {
  TempDir t{"sbit-hostile-target"};
  std::string src = t / "src", cat = t / "cat", target = t / "T", outside = t / "out";
  std::string victim = outside + "/victim";
  Target() {
    make_file(src + "/a.dbf", 300000, 51);
    SB_EXPECT_EXIT(sb({"backup", src, "--to", t / "pieces", "--catalog", cat}), 0);
    std::filesystem::create_directories(target);
    std::filesystem::create_directories(outside);
    write_text(victim, "precious\n");
    EXPECT_EQ(::chmod(victim.c_str(), 0640), 0);
  }
  std::string at(const std::string& name) const { return target + "/" + name; }
  RunResult restore(std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{"restore", "--to", target, "--catalog", cat};
    args.insert(args.end(), extra.begin(), extra.end());
    return sb(args);
  }
  void expect_restored() const {
    EXPECT_TRUE(same_file(src + "/a.dbf", restored_path(target, src + "/a.dbf")));
  }
};

bool is_root() { return ::geteuid() == 0; }

// Plants, as another user would: their own file at the temporary's name, their undo log
// that would make it set-id root (`mode`), and a journal naming both, owned by that user
// too when `journal_theirs`. Returns the snapshot of their file.
Snapshot plant_theirs(const Target& x, uint32_t mode, bool journal_theirs) {
  const std::string own = x.at(kTemp);
  write_bytes(own, "the planter's own program\n", 0755);
  EXPECT_EQ(::chown(own.c_str(), kNobody, kNobody), 0);
  write_bytes(x.at(kUndo), undo_header(mode, 0, 0), 0600);
  EXPECT_EQ(::chown(x.at(kUndo).c_str(), kNobody, kNobody), 0);
  write_bytes(x.at(kJournal), journal_text({std::string("/") + kTemp + "/" + kUndo + "/suid"}),
              0600);
  if (journal_theirs) {
    EXPECT_EQ(::chown(x.at(kJournal).c_str(), kNobody, kNobody), 0);
  }
  return snap(own);
}

// The reproduction as filed: the outside file hard-linked at the temporary's name, an undo
// log that would empty it and make it set-uid root, and a journal naming both.
TEST(HostileTarget, PlantedJournalWithAHardLinkedTemporaryLeavesTheOutsideFileAlone) {
  Target x;
  ASSERT_EQ(::link(x.victim.c_str(), x.at(kTemp).c_str()), 0);
  write_bytes(x.at(kUndo), undo_header(04755, 0, 0), 0644);
  write_bytes(x.at(kJournal), journal_text({std::string("/") + kTemp + "/" + kUndo + "/planted"}),
              0644);
  Snapshot before = snap(x.victim);
  RunResult r = x.restore();
  SB_EXPECT_EXIT(r, 0);
  expect_same(x.victim, before);
  EXPECT_FALSE(exists(x.at("planted")));
  EXPECT_TRUE(contains(r.out, "has 2 links")) << r.out;
  EXPECT_TRUE(contains(r.out, "left alone")) << r.out;
  x.expect_restored();
}

// The journal and the undo log belong to another user: neither is trusted, whatever they
// name; an own file of that user at the temporary's name never becomes set-uid root.
TEST(HostileTarget, JournalAndUndoLogOfAnotherOwnerAreNotTrusted) {
  if (!is_root()) GTEST_SKIP() << "planting files of another owner needs root";
  Target x;
  Snapshot before = plant_theirs(x, 04755, /*journal_theirs=*/true);
  RunResult r = x.restore();
  SB_EXPECT_EXIT(r, 0);
  expect_same(x.at(kTemp), before);
  EXPECT_FALSE(exists(x.at("suid")));
  EXPECT_TRUE(exists(x.at(kJournal)));  // left for its owner to look at
  EXPECT_TRUE(contains(r.out, "is owned by uid 65534")) << r.out;
  x.expect_restored();
}

// A journal of this user that names an undo log of another user: the log is not applied.
TEST(HostileTarget, UndoLogOfAnotherOwnerIsNotApplied) {
  if (!is_root()) GTEST_SKIP() << "planting files of another owner needs root";
  Target x;
  Snapshot before = plant_theirs(x, 06755, /*journal_theirs=*/false);
  RunResult r = x.restore();
  SB_EXPECT_EXIT(r, 0);
  expect_same(x.at(kTemp), before);
  EXPECT_TRUE(exists(x.at(kUndo)));
  EXPECT_FALSE(exists(x.at("suid")));
  EXPECT_TRUE(contains(r.out, "its undo log")) << r.out;
  EXPECT_TRUE(contains(r.out, "is owned by uid 65534")) << r.out;
}

// A journal or undo log that others may write is not trusted either.
TEST(HostileTarget, JournalWritableByOthersIsNotTrusted) {
  Target x;
  ASSERT_EQ(::link(x.victim.c_str(), x.at(kTemp).c_str()), 0);
  write_bytes(x.at(kJournal), journal_text({kTemp}), 0666);
  ASSERT_EQ(::chmod(x.at(kJournal).c_str(), 0666), 0);
  RunResult r = x.restore();
  SB_EXPECT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "is writable by others")) << r.out;
  EXPECT_TRUE(exists(x.at(kTemp)));  // not removed on the word of an untrusted journal
  EXPECT_EQ(stripeback::testing::read_file(x.victim), "precious\n");
}

// Symbolic links at the temporary's, the undo log's and the journal's names are never
// followed: the files they point at keep everything.
TEST(HostileTarget, SymlinksAtJournalUndoAndTemporaryNamesAreNotFollowed) {
  Target x;
  const std::string log_outside = x.outside + "/undo";
  write_bytes(log_outside, undo_header(04755, 0, 0), 0600);
  ASSERT_EQ(::symlink(x.victim.c_str(), x.at(kTemp).c_str()), 0);
  ASSERT_EQ(::symlink(log_outside.c_str(), x.at(kUndo).c_str()), 0);
  write_bytes(x.at(kJournal), journal_text({std::string("/") + kTemp + "/" + kUndo + "/planted"}),
              0600);
  // A second journal that is itself a link to a journal outside.
  const std::string j2 = x.outside + "/journal";
  write_bytes(j2, journal_text({std::string("/") + kTemp + "/" + kUndo + "/planted2"}), 0600);
  ASSERT_EQ(::symlink(j2.c_str(), x.at(".sbrestore-journal-00000000000000ff").c_str()), 0);
  Snapshot v = snap(x.victim), l = snap(log_outside), j = snap(j2);
  RunResult r = x.restore();
  SB_EXPECT_EXIT(r, 0);
  expect_same(x.victim, v);
  expect_same(log_outside, l);
  expect_same(j2, j);
  EXPECT_FALSE(exists(x.at("planted")));
  EXPECT_FALSE(exists(x.at("planted2")));
  EXPECT_TRUE(contains(r.out, "is not a regular file; left alone")) << r.out;
  x.expect_restored();
}

// A FIFO or a directory at a journal's name neither blocks nor aborts the restore.
TEST(HostileTarget, FifoAndDirectoryAtJournalNamesAreReportedNotOpened) {
  Target x;
  ASSERT_EQ(::mkfifo(x.at(".sbrestore-journal-00000000000000aa").c_str(), 0600), 0);
  std::filesystem::create_directories(x.at(".sbrestore-journal-00000000000000bb"));
  RunResult r = x.restore();
  SB_EXPECT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out, "is not a regular file; left alone")) << r.out;
  x.expect_restored();
}

// A hard link to an outside file at a listed (plain) temporary's name: the temporary is not
// removed and the outside file keeps its bytes.
TEST(HostileTarget, HardLinkedListedTemporaryIsNotRemoved) {
  Target x;
  ASSERT_EQ(::link(x.victim.c_str(), x.at(kTemp).c_str()), 0);
  write_bytes(x.at(kJournal), journal_text({kTemp}), 0600);
  Snapshot before = snap(x.victim);
  RunResult r = x.restore();
  SB_EXPECT_EXIT(r, 0);
  expect_same(x.victim, before);
  EXPECT_TRUE(exists(x.at(kTemp)));
  x.expect_restored();
}

// restore --delta meets a target file hard-linked to a file outside the target: the
// outside file keeps its bytes, mode and times; the target's name gets the backup's bytes.
TEST(HostileTarget, DeltaRestoreNeverWritesThroughAHardLink) {
  Target x;
  SB_ASSERT_EXIT(x.restore(), 0);
  const std::string in_target = restored_path(x.target, x.src + "/a.dbf");
  // Outside: a different file of the same size; linked in at the restored file's name.
  const std::string other = x.outside + "/other.dbf";
  make_file(other, 300000, 52, 0600);
  ASSERT_EQ(::unlink(in_target.c_str()), 0);
  ASSERT_EQ(::link(other.c_str(), in_target.c_str()), 0);
  Snapshot before = snap(other);
  RunResult r = x.restore({"--delta"});
  SB_EXPECT_EXIT(r, 0);
  expect_same(other, before);
  EXPECT_TRUE(contains(r.out, "hard links")) << r.out;
  x.expect_restored();
  struct stat st {};
  ASSERT_EQ(::stat(in_target.c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
}

// The same with an outside file equal to the backup's: not even its mode or mtime changes.
TEST(HostileTarget, DeltaRestoreOfAnEqualHardLinkedFileLeavesItsAttributes) {
  Target x;
  SB_ASSERT_EXIT(x.restore(), 0);
  const std::string in_target = restored_path(x.target, x.src + "/a.dbf");
  const std::string other = x.outside + "/same.dbf";
  std::filesystem::copy_file(x.src + "/a.dbf", other);
  ASSERT_EQ(::chmod(other.c_str(), 0600), 0);
  ASSERT_EQ(::unlink(in_target.c_str()), 0);
  ASSERT_EQ(::link(other.c_str(), in_target.c_str()), 0);
  Snapshot before = snap(other);
  RunResult r = x.restore({"--delta"});
  SB_EXPECT_EXIT(r, 0);
  expect_same(other, before);
  x.expect_restored();
}

}  // namespace
}  // namespace stripeback::it
