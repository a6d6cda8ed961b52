// Catalog: several writers on one catalog directory — objects, threads and processes.
#include <gtest/gtest.h>

#include "backends/local/local_storage.h"
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <thread>

#include "catalog/catalog.h"
#include "catalog/record_log.h"
#include "tests/catalog/catalog_test_util.h"
#include "tests/support/temp_dir.h"

namespace stripeback::catalog::test {
namespace {

void expect_sequences_1_to(const std::string& dir, size_t n) {
  ScanResult scan;
  auto frames = frames_of(read_bytes(log_path(dir)), &scan);
  EXPECT_TRUE(scan.warnings.empty()) << dump(scan.warnings);
  EXPECT_FALSE(scan.torn_tail);
  ASSERT_EQ(frames.size(), n);
  for (size_t i = 0; i < frames.size(); ++i) EXPECT_EQ(frames[i].sequence, i + 1);
}

TEST(CatalogConcurrency, TwoObjectsInterleaveAndSeeEachOther) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  auto a = open_ok(dir);
  auto b = open_ok(dir);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a->begin_backup(sample_begin("a1")), 1u);
  EXPECT_EQ(*b->begin_backup(sample_begin("b1")), 2u);
  EXPECT_EQ(*a->begin_backup(sample_begin("a2")), 3u);
  EXPECT_EQ(*b->begin_backup(sample_begin("b2")), 4u);
  // b adds to a backup it learned of only through the log.
  ASSERT_TRUE(b->add_piece(3, sample_piece(0, 1), {sample_file("/x", 1)}));
  ASSERT_TRUE(a->end_backup(3, sample_end(1, BackupStatus::complete, 1)));
  ASSERT_TRUE(a->refresh());
  ASSERT_TRUE(b->refresh());
  for (const auto* c : {a.get(), b.get()}) {
    auto all = c->backups();
    ASSERT_EQ(all.size(), 4u);
    EXPECT_EQ(all[0].begin.tag, "a1");
    EXPECT_EQ(all[1].begin.tag, "b1");
    EXPECT_EQ(all[2].begin.tag, "a2");
    EXPECT_EQ(all[3].begin.tag, "b2");
    EXPECT_EQ(all[2].status_name(), "complete");
    EXPECT_TRUE(c->warnings().empty()) << dump(c->warnings());
  }
  expect_sequences_1_to(dir, 6);
}

TEST(CatalogConcurrency, ThreadsAppendConcurrently) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  auto shared = open_ok(dir);
  auto other = open_ok(dir);
  ASSERT_TRUE(shared && other);
  constexpr int kThreads = 4, kEach = 25;
  std::vector<std::vector<uint64_t>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    // Three threads share one object (its mutex), one uses a second object (the flock).
    Catalog* cat = t == kThreads - 1 ? other.get() : shared.get();
    threads.emplace_back([cat, t, &ids] {
      for (int i = 0; i < kEach; ++i) {
        auto id = cat->begin_backup(sample_begin("t" + std::to_string(t)));
        if (!id) {
          ADD_FAILURE() << id.error().what;
          return;
        }
        ids[static_cast<size_t>(t)].push_back(*id);
        EXPECT_TRUE(cat->add_files(*id, {sample_file("/t", static_cast<uint32_t>(i))}));
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint64_t> all;
  for (const auto& v : ids) all.insert(v.begin(), v.end());
  ASSERT_EQ(all.size(), size_t{kThreads * kEach});
  EXPECT_EQ(*all.begin(), 1u);
  EXPECT_EQ(*all.rbegin(), uint64_t{kThreads * kEach});
  ASSERT_TRUE(shared->refresh());
  auto backups = shared->backups();
  ASSERT_EQ(backups.size(), size_t{kThreads * kEach});
  for (const auto& b : backups) EXPECT_EQ(b.files.size(), 1u) << b.id;
  expect_sequences_1_to(dir, 2 * kThreads * kEach);
}

TEST(CatalogConcurrency, ForkedProcessesAppendConcurrently) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  ASSERT_TRUE(open_ok(dir));
  // Each child opens its own Catalog (a flock is per open file, so an inherited one would
  // not exclude the sibling) and appends 50 records: begin, 48 x files, end.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> kids;
  for (int k = 0; k < 2; ++k) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (::close(go[1]) != 0) ::_exit(8);
      char c;
      if (::read(go[0], &c, 1) != 0) ::_exit(9);  // released together when the pipe closes
      auto cat = Catalog::open(dir, Create::no, io::local_storage());
      if (!cat) ::_exit(2);
      auto id = (*cat)->begin_backup(sample_begin("child" + std::to_string(k)));
      if (!id) ::_exit(3);
      if (!(*cat)->add_piece(*id, sample_piece(0, 1), {})) ::_exit(6);
      for (uint32_t i = 0; i < 48; ++i) {
        if (!(*cat)->add_files(*id, {sample_file("/c" + std::to_string(k), i)})) ::_exit(4);
      }
      if (!(*cat)->end_backup(*id, sample_end(1, BackupStatus::complete, 48))) ::_exit(5);
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  EXPECT_EQ(::close(go[0]), 0);
  EXPECT_EQ(::close(go[1]), 0);  // releases the children
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  expect_sequences_1_to(dir, 102);
  auto cat = open_ok(dir);
  ASSERT_TRUE(cat);
  EXPECT_TRUE(cat->warnings().empty()) << dump(cat->warnings());
  auto backups = cat->backups();
  ASSERT_EQ(backups.size(), 2u);
  std::set<std::string> tags;
  for (const auto& b : backups) {
    tags.insert(b.begin.tag);
    EXPECT_EQ(b.files.size(), 48u);
    EXPECT_EQ(b.status_name(), "complete");
  }
  EXPECT_EQ(tags, (std::set<std::string>{"child0", "child1"}));
}

}  // namespace
}  // namespace stripeback::catalog::test
