#include "storage/async/buffer_pool.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>

namespace stripeback::io {
namespace {

bool aligned(const std::byte* p) { return reinterpret_cast<uintptr_t>(p) % kIoAlignment == 0; }

TEST(BufferPool, SlotsAreAlignedAndLaidOutBackToBack) {
  constexpr size_t kData = size_t{64} << 10;
  auto pool = BufferPool::create(4, kData, 4096);
  ASSERT_TRUE(pool.has_value()) << pool.error().what;
  EXPECT_EQ(pool->count(), 4u);
  EXPECT_EQ(pool->data_size(), kData);
  EXPECT_EQ(pool->header_room(), 4096u);
  const size_t stride = kData + 4096;
  EXPECT_EQ(pool->bytes_reserved(), 4 * stride);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(aligned(pool->header(i))) << i;
    EXPECT_TRUE(aligned(pool->data(i))) << i;
    EXPECT_EQ(pool->data(i), pool->header(i) + 4096);
    EXPECT_EQ(pool->header(i), pool->header(0) + i * stride);
    // Touch every byte of the slot; a sanitizer build catches any overlap or overrun.
    std::memset(pool->header(i), static_cast<int>(i), stride);
  }
}

TEST(BufferPool, NoHeaderRoomMeansDataAtSlotStart) {
  auto pool = BufferPool::create(2, 4096, 0);
  ASSERT_TRUE(pool.has_value()) << pool.error().what;
  EXPECT_EQ(pool->data(1), pool->header(1));
  EXPECT_EQ(pool->data(1), pool->data(0) + 4096);
}

TEST(BufferPool, AcquireUntilExhaustedThenRelease) {
  auto pool = BufferPool::create(3, 4096, 4096);
  ASSERT_TRUE(pool.has_value()) << pool.error().what;
  std::set<uint32_t> taken;
  for (int i = 0; i < 3; ++i) {
    auto slot = pool->acquire();
    ASSERT_TRUE(slot.has_value());
    EXPECT_LT(*slot, 3u);
    taken.insert(*slot);
  }
  EXPECT_EQ(taken.size(), 3u);
  EXPECT_EQ(pool->free_count(), 0u);
  EXPECT_FALSE(pool->acquire().has_value());

  pool->release(1);
  EXPECT_EQ(pool->free_count(), 1u);
  EXPECT_EQ(pool->acquire(), std::optional<uint32_t>(1));
  pool->release(2);
  pool->release(0);
  EXPECT_EQ(pool->acquire(), std::optional<uint32_t>(0));  // last released, first reused
  EXPECT_EQ(pool->acquire(), std::optional<uint32_t>(2));
  EXPECT_FALSE(pool->acquire().has_value());
}

TEST(BufferPool, MoveTransfersTheBuffers) {
  auto pool = BufferPool::create(2, 4096, 0);
  ASSERT_TRUE(pool.has_value()) << pool.error().what;
  std::byte* first = pool->data(0);
  BufferPool moved(std::move(*pool));
  EXPECT_EQ(moved.data(0), first);
  EXPECT_EQ(moved.count(), 2u);
  EXPECT_EQ(moved.free_count(), 2u);

  auto other = BufferPool::create(1, 8192, 0);
  ASSERT_TRUE(other.has_value()) << other.error().what;
  *other = std::move(moved);
  EXPECT_EQ(other->data(0), first);
  EXPECT_EQ(other->data_size(), 4096u);
}

TEST(BufferPool, RejectsBadArguments) {
  struct Case {
    size_t count, data, header;
    const char* mentions;
  };
  const Case cases[] = {
      {0, 4096, 0, "slot count"},
      {2, 0, 0, "data size"},
      {2, 1000, 0, "got 1000"},
      {2, 4096, 100, "header room"},
      {1ull << 32, 4096, 0, "slot count"},
      {UINT32_MAX, 1ull << 40, 0, "does not fit"},
  };
  for (const Case& c : cases) {
    auto pool = BufferPool::create(c.count, c.data, c.header);
    ASSERT_FALSE(pool.has_value()) << c.mentions;
    EXPECT_EQ(pool.error().code, Errc::invalid_argument) << pool.error().what;
    EXPECT_NE(pool.error().what.find(c.mentions), std::string::npos) << pool.error().what;
  }
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
TEST(BufferPool, AllocationFailureIsNoSpace) {
  GTEST_SKIP() << "under ASan or TSan an address-space limit makes the sanitizer's allocator "
                  "abort the process instead of failing the allocation";
}
#else
// Exits 0 when a 2 GiB pool fails cleanly under a 1 GiB address-space limit.
[[noreturn]] void allocate_beyond_limit() {
  const rlimit limit{1ull << 30, 1ull << 30};
  if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(2);
  auto pool = BufferPool::create(512, 4u << 20, 0);
  const bool ok = !pool.has_value() && pool.error().code == Errc::no_space &&
                  pool.error().what == "unable to allocate 2147483648 bytes of I/O buffers";
  std::_Exit(ok ? 0 : 1);
}

TEST(BufferPool, AllocationFailureIsNoSpace) {
  // In a child process, so the limit cannot disturb anything else in the test binary.
  EXPECT_EXIT(allocate_beyond_limit(), ::testing::ExitedWithCode(0), "");
}
#endif

}  // namespace
}  // namespace stripeback::io
