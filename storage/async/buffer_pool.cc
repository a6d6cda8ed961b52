#include "storage/async/buffer_pool.h"

#include <sys/mman.h>

#include <cassert>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

namespace stripeback::io {
namespace {

Unexpected bad_argument(const std::string& what, size_t got) {
  return fail(Errc::invalid_argument, what + ", got " + std::to_string(got));
}

}  // namespace

Result<BufferPool> BufferPool::create(size_t count, size_t data_size, size_t header_room) {
  // Slots are named by uint32_t, so the count has to fit one.
  if (count == 0 || count > std::numeric_limits<uint32_t>::max()) {
    return bad_argument("buffer pool slot count must be between 1 and 4294967295", count);
  }
  if (data_size == 0 || data_size % kIoAlignment != 0) {
    return bad_argument("buffer data size must be a non-zero multiple of 4096 bytes", data_size);
  }
  if (header_room % kIoAlignment != 0) {
    return bad_argument("buffer header room must be a multiple of 4096 bytes", header_room);
  }
  const size_t max = std::numeric_limits<size_t>::max();
  if (data_size > max - header_room || data_size + header_room > max / count) {
    return fail(Errc::invalid_argument, "buffer pool of " + std::to_string(count) + " slots of " +
                                            std::to_string(data_size + header_room) +
                                            " bytes does not fit in memory");
  }

  BufferPool pool;
  pool.count_ = count;
  pool.data_size_ = data_size;
  pool.header_room_ = header_room;
  void* mem = nullptr;
  // A pool of 2 MiB or more is aligned to 2 MiB and asks for transparent huge pages: a 1 MiB
  // buffer then spans one or two physically contiguous pages, so a transfer is one or two
  // segments for the block layer instead of 256, and the digest pass misses the TLB less.
  constexpr size_t kHuge = size_t{2} << 20;
  const bool huge = pool.bytes_reserved() >= kHuge;
  if (posix_memalign(&mem, huge ? kHuge : kIoAlignment, pool.bytes_reserved()) != 0) {
    return fail(Errc::no_space, "unable to allocate " + std::to_string(pool.bytes_reserved()) +
                                    " bytes of I/O buffers");
  }
  if (huge) (void)::madvise(mem, pool.bytes_reserved(), MADV_HUGEPAGE);  // a hint only
  pool.base_ = static_cast<std::byte*>(mem);
  // Reversed so that acquire() hands out slot 0 first; the list is LIFO so a released
  // slot, still warm in cache and TLB, is the next one reused.
  pool.free_.reserve(count);
  for (size_t i = count; i > 0; --i) pool.free_.push_back(static_cast<uint32_t>(i - 1));
  pool.in_use_.assign(count, false);
  return pool;
}

BufferPool::BufferPool(BufferPool&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)),
      count_(std::exchange(o.count_, 0)),
      data_size_(std::exchange(o.data_size_, 0)),
      header_room_(std::exchange(o.header_room_, 0)),
      free_(std::move(o.free_)),
      in_use_(std::move(o.in_use_)) {
  o.free_.clear();
  o.in_use_.clear();
}

BufferPool& BufferPool::operator=(BufferPool&& o) noexcept {
  if (this != &o) {
    std::free(base_);
    base_ = std::exchange(o.base_, nullptr);
    count_ = std::exchange(o.count_, 0);
    data_size_ = std::exchange(o.data_size_, 0);
    header_room_ = std::exchange(o.header_room_, 0);
    free_ = std::move(o.free_);
    in_use_ = std::move(o.in_use_);
    o.free_.clear();
    o.in_use_.clear();
  }
  return *this;
}

BufferPool::~BufferPool() { std::free(base_); }

std::optional<uint32_t> BufferPool::acquire() {
  if (free_.empty()) return std::nullopt;
  const uint32_t slot = free_.back();
  free_.pop_back();
  in_use_[slot] = true;
  return slot;
}

void BufferPool::release(uint32_t slot) {
  assert(slot < count_ && in_use_[slot]);
  // A double release in a release build must not put the slot on the list twice, which
  // would hand one buffer to two readers.
  if (slot >= count_ || !in_use_[slot]) return;
  in_use_[slot] = false;
  free_.push_back(slot);
}

std::byte* BufferPool::header(uint32_t slot) const {
  assert(slot < count_);
  return base_ + static_cast<size_t>(slot) * (header_room_ + data_size_);
}

std::byte* BufferPool::data(uint32_t slot) const { return header(slot) + header_room_; }

}  // namespace stripeback::io
