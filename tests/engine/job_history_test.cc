// The job record a summary gives: waits counted in their classes, per-file figures bounded
// per channel and per record (the files that moved the most bytes kept, the rest counted),
// the verdict and the channels' figures carried over.
#include <gtest/gtest.h>

#include "engine/history/job_history.h"
#include "engine/monitor/stats.h"

namespace stripeback::engine {
namespace {

TEST(JobHistory, WaitsFallInTheirClasses) {
  catalog::WaitCounts w;
  for (int64_t ns : {0L, 999'999L, 1'000'000L, 99'999'999L, 100'000'000L, 2'000'000'000L})
    add_wait(w, ns);
  EXPECT_EQ(w.ready, 2u);
  EXPECT_EQ(w.short_waits, 2u);
  EXPECT_EQ(w.long_waits, 2u);
  EXPECT_EQ(w.total_ns, 0 + 999'999 + 1'000'000 + 99'999'999 + 100'000'000 + 2'000'000'000L);
  EXPECT_EQ(w.max_ns, 2'000'000'000);
}

TEST(JobHistory, AChannelKeepsTheFirstFilesAndCountsTheOthersOnce) {
  ChannelStats s;
  s.channel = 3;
  FileIoIndex index;
  for (size_t i = 0; i < ChannelStats::kMaxFileIo; ++i)
    ASSERT_EQ(index.entry("/f" + std::to_string(i), s), static_cast<int32_t>(i));
  EXPECT_EQ(index.entry("/f7", s), 7);  // known files keep their entry
  EXPECT_EQ(s.file_io[7].channel, 3u);
  EXPECT_EQ(index.entry("/late", s), -1);
  EXPECT_EQ(index.entry("/late", s), -1);  // its next chunk
  EXPECT_EQ(index.entry("/later", s), -1);
  EXPECT_EQ(s.file_io.size(), ChannelStats::kMaxFileIo);
  EXPECT_EQ(s.file_io_dropped, 2u);
}

TEST(JobHistory, ARecordKeepsTheFilesThatMovedTheMostBytes) {
  BackupSummary sum;
  sum.backup_id = 4;
  sum.status = "complete";
  sum.bytes_read = 123;
  sum.files = 1500;
  sum.verdict.bound_by = "read";
  sum.verdict.stage = "source read (local)";
  sum.verdict.wait_read = 0.75;
  for (uint32_t c = 1; c <= 2; ++c) {
    ChannelStats s;
    s.channel = c;
    s.io_engine = c == 1 ? "io_uring" : "sync";
    s.reads = 10;
    s.bytes_read = 1000;
    s.read_busy_s = 1.5;
    add_wait(s.read_waits, 5'000'000);
    FileIoIndex index;
    for (uint32_t i = 0; i < 750; ++i) {
      auto& f = s.file_io[static_cast<size_t>(index.entry("/c" + std::to_string(c) + "/" + std::to_string(i), s))];
      add_io(f.read, uint64_t{i} * 10 + c, 0);
    }
    sum.channels.push_back(std::move(s));
  }
  sum.channels[1].file_io_dropped = 5;
  auto j = backup_job_record(sum, {10, 20, "t", false});
  EXPECT_EQ(j.type, "backup");
  EXPECT_EQ(j.status, "complete");
  EXPECT_EQ(j.backup_ids, std::vector<uint64_t>{4});
  EXPECT_EQ(j.start_ns, 10);
  EXPECT_EQ(j.end_ns, 20);
  EXPECT_EQ(j.stage, "source read (local)");
  ASSERT_EQ(j.channels.size(), 2u);
  EXPECT_EQ(j.channels[0].io_mode, "async");
  EXPECT_EQ(j.channels[1].io_mode, "sync");
  EXPECT_EQ(j.channels[0].read.busy_ns, 1'500'000'000);
  EXPECT_EQ(j.channels[0].read.waits.short_waits, 1u);
  EXPECT_EQ(j.files_total, 1505u);
  ASSERT_EQ(j.file_io.size(), catalog::JobRecord::kMaxFiles);
  EXPECT_EQ(j.file_io.front().path, "/c2/749");  // the most bytes first
  for (const auto& f : j.file_io) EXPECT_GE(f.read.bytes, 2500u) << f.path;
  bool share = false;
  for (const auto& s : j.shares) share = share || (s.name == "wait_read" && s.share == 0.75);
  EXPECT_TRUE(share);
  // Cancelled jobs say so.
  sum.status = "failed";
  EXPECT_EQ(backup_job_record(sum, {0, 0, "", true}).status, "cancelled");
}

}  // namespace
}  // namespace stripeback::engine
