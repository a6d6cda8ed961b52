#include "engine/backup/buffer_budget.h"

#include <gtest/gtest.h>

namespace stripeback::engine {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// Before the plan, a backup channel's buffers are counted at the most the rule could pick.
TEST(BufferBudget, BackupCountsTheMostTheBufferRuleCouldPick) {
  EXPECT_EQ(backup_channel_buffer_bytes({}, {}, false), 16 * kMiB);  // every row: 16 MiB
  // A count alone: the rule's largest buffer size (1 MiB, multiplexing up to 4).
  EXPECT_EQ(backup_channel_buffer_bytes(size_t{4096}, {}, false), 4096 * kMiB);
  // A size alone keeps the 16 MiB total.
  EXPECT_EQ(backup_channel_buffer_bytes({}, size_t{256} << 10, false), 16 * kMiB);
  EXPECT_EQ(backup_channel_buffer_bytes(size_t{4096}, size_t{16} << 20, false),
            uint64_t{64} << 30);
  // Compression: each buffer has a compressed twin.
  EXPECT_EQ(backup_channel_buffer_bytes(size_t{3}, size_t{8192}, true), 2u * 3 * 8192);
  // A validation: twice the buffers unless a count is given.
  EXPECT_EQ(backup_channel_buffer_bytes({}, {}, false, true), 32 * kMiB);
  EXPECT_EQ(backup_channel_buffer_bytes(size_t{3}, size_t{8192}, false, true), 3u * 8192);
}

TEST(BufferBudget, RestoreHasAScratchBufferPerBuffer) {
  EXPECT_EQ(restore_channel_buffer_bytes(16, kMiB), 32 * kMiB);
}

TEST(BufferBudget, LimitIsHalfOfMemoryAndNeverAboveTheCap) {
  uint64_t physical = 0;
  uint64_t limit = buffer_memory_limit(&physical);
  EXPECT_GT(limit, 0u);
  EXPECT_LE(limit, kMaxBufferMemory);
  if (physical > 0) {
    EXPECT_LE(limit, physical / 2);
  }
}

}  // namespace
}  // namespace stripeback::engine
