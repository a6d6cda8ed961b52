// Reading job status files (engine/monitor/status_file.h): the text format, which dead jobs' files
// are of no more use, and a jobs directory holding things no job wrote.
#include "engine/monitor/status_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "tests/support/temp_dir.h"
#include "util/process.h"

namespace stripeback::engine {
namespace {

std::string text_of(int32_t pid, uint64_t backup_id) {
  return "operation=backup\nbackup_id=" + std::to_string(backup_id) + "\ntag=t\npid=" +
         std::to_string(pid) + "\nproc_start=7\nhost=h\nstarted_ns=1\nlast_update_ns=2\n"
         "last_progress_ns=2\nbytes_done=5\nbytes_total=10\nrate=1.0\neta_s=5.0\n"
         "hang_after_s=60.0\nfinished=0\nverdict=\nchannel=1 reading 2 5\nend=1\n";
}

TEST(StatusText, AWholeTextParses) {
  ProgressSnapshot s;
  uint64_t start = 0;
  ASSERT_TRUE(parse_status_text(text_of(42, 3), &s, &start));
  EXPECT_EQ(s.pid, 42);
  EXPECT_EQ(s.id, 3u);
  EXPECT_EQ(s.host, "h");
  EXPECT_EQ(start, 7u);
  ASSERT_EQ(s.channels.size(), 1u);
  EXPECT_EQ(s.channels[0].bytes, 5u);
}

TEST(StatusText, TheTailOfALongerEarlierTextAfterTheEndLineIsIgnored) {
  ProgressSnapshot s;
  uint64_t start = 0;
  ASSERT_TRUE(parse_status_text(text_of(42, 3) + "0\nend=1\n", &s, &start));
  EXPECT_EQ(s.pid, 42);
}

TEST(StatusText, EmptyCutOrForeignTextIsRefusedSayingWhy) {
  ProgressSnapshot s;
  uint64_t start = 0;
  auto empty = parse_status_text("", &s, &start);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().what, "empty");
  const std::string whole = text_of(42, 3);
  auto cut = parse_status_text(whole.substr(0, whole.find("channel=")), &s, &start);
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().what.find("no end line"), std::string::npos);
  auto foreign = parse_status_text("hello\n", &s, &start);
  ASSERT_FALSE(foreign);
  EXPECT_EQ(foreign.error().what, "line 1 is not key=value");
  auto bare = parse_status_text("end=1\n", &s, &start);
  ASSERT_FALSE(bare);
  EXPECT_EQ(bare.error().what, "no operation line");
}

// The ransomware alarm's line goes from the job's progress through its status file to a
// reader in another process; a job it did not fire on has none.
TEST(StatusText, ASuspiciousBackupSaysSoInItsStatusFile) {
  testing::TempDir tmp;
  JobProgress progress("backup", "nightly");
  progress.start(1, 100);
  {
    auto file = StatusFile::create(tmp.path());
    ASSERT_TRUE(file) << file.error().what;
    (*file)->write(progress.snapshot());
    auto before = read_job_statuses(tmp.path());
    ASSERT_EQ(before.jobs.size(), 1u);
    EXPECT_EQ(before.jobs[0].snap.suspicious, "");
    progress.set_suspicious("page_share, page_factor; against backup 4 (kept)");
    (*file)->write(progress.snapshot());
    auto after = read_job_statuses(tmp.path());
    ASSERT_EQ(after.jobs.size(), 1u);
    EXPECT_EQ(after.jobs[0].snap.suspicious, "page_share, page_factor; against backup 4 (kept)");
    EXPECT_EQ(after.jobs[0].state, "running");
  }
}

JobStatus dead_backup_job(int32_t pid, uint64_t id) {
  JobStatus j;
  j.state = "dead";
  j.snap.operation = "backup";
  j.snap.pid = pid;
  j.snap.host = "h";
  j.snap.id = id;
  return j;
}

catalog::Backup backup(uint64_t id, int32_t pid, bool ended) {
  catalog::Backup b;
  b.id = id;
  b.begin.pid = pid;
  b.begin.host = "h";
  b.ended = ended;
  b.end.status = catalog::BackupStatus::complete;
  return b;
}

TEST(DeadJobOver, WhenItsBackupHasEnded) {
  EXPECT_EQ(dead_job_over(dead_backup_job(10, 2), {backup(1, 5, true), backup(2, 10, true)}),
            "backup 2 has ended (complete)");
}

TEST(DeadJobOver, WhenAnotherProcessResumedItsBackup) {
  EXPECT_EQ(dead_job_over(dead_backup_job(10, 2), {backup(2, 11, false)}),
            "backup 2 was resumed by process 11 on h");
}

TEST(DeadJobOver, NotWhileItsBackupWaitsForAResume) {
  EXPECT_EQ(dead_job_over(dead_backup_job(10, 2), {backup(2, 10, false)}), "");
}

TEST(DeadJobOver, NeverForARunningJobARestoreOrAJobWithoutABackup) {
  JobStatus running = dead_backup_job(10, 2);
  running.state = "running";
  EXPECT_EQ(dead_job_over(running, {backup(2, 10, true)}), "");
  JobStatus restore = dead_backup_job(10, 2);
  restore.snap.operation = "restore";
  EXPECT_EQ(dead_job_over(restore, {backup(2, 10, true)}), "");
  EXPECT_EQ(dead_job_over(dead_backup_job(10, 0), {backup(2, 10, true)}), "");
  EXPECT_EQ(dead_job_over(dead_backup_job(10, 9), {backup(2, 10, true)}), "")
      << "a backup the catalog does not know";
}

class JobsDir : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::mkdir(jobs_.c_str(), 0700), 0); }
  void put(const std::string& name, const std::string& text) {
    std::ofstream(jobs_ + "/" + name) << text;
  }
  testing::TempDir t_{"sbut-jobs"};
  std::string jobs_ = t_ / "jobs";
};

TEST_F(JobsDir, EntriesThatAreNotRegularFilesAreSkippedWithTheirCause) {
  put("h.1.status", text_of(1, 0));
  ASSERT_EQ(::mkdir((jobs_ + "/d.status").c_str(), 0700), 0);
  ASSERT_EQ(::mkfifo((jobs_ + "/f.status").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/dev/zero", (jobs_ + "/l.status").c_str()), 0);
  const JobStatuses st = read_job_statuses(t_.path());
  ASSERT_EQ(st.jobs.size(), 1u);
  EXPECT_EQ(st.jobs[0].id, "h.1");
  ASSERT_EQ(st.skipped.size(), 3u);
  EXPECT_EQ(st.skipped[0].path, jobs_ + "/d.status");
  EXPECT_EQ(st.skipped[0].why, "is a directory, not a regular file");
  EXPECT_EQ(st.skipped[1].why, "is a FIFO, not a regular file");
  EXPECT_EQ(st.skipped[2].why, "is a symbolic link, not followed");
  for (const auto& e : st.skipped) EXPECT_FALSE(e.left_by_gone_process) << e.path;
}

TEST_F(JobsDir, AFileOverTheSizeLimitIsNotRead) {
  put("big.status", text_of(1, 0));
  ASSERT_EQ(::truncate((jobs_ + "/big.status").c_str(), kMaxStatusFileSize + 1), 0);
  const JobStatuses st = read_job_statuses(t_.path());
  EXPECT_TRUE(st.jobs.empty());
  ASSERT_EQ(st.skipped.size(), 1u);
  EXPECT_EQ(st.skipped[0].why, "1048577 bytes, larger than the 1 MiB a status file may be");
}

TEST_F(JobsDir, AnEmptyFileIsSkippedUnlessItsNameIsARunningProcessOfThisHost) {
  const std::string here = util::hostname();
  put(here + "." + std::to_string(::getpid()) + ".status", "");  // being made: not yet written
  put(here + ".0.status", "");
  const JobStatuses st = read_job_statuses(t_.path());
  EXPECT_TRUE(st.jobs.empty());
  ASSERT_EQ(st.skipped.size(), 1u);
  EXPECT_EQ(st.skipped[0].path, jobs_ + "/" + here + ".0.status");
  EXPECT_FALSE(st.skipped[0].left_by_gone_process) << "pid 0 is no process's name";
}

}  // namespace
}  // namespace stripeback::engine
