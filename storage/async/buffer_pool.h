// BufferPool: a bounded set of aligned I/O buffers, owned by one channel thread.
//
// Every slot is one contiguous, 4096-aligned region of `header_room + data_size` bytes:
// the engine reads data into data(i) and builds a frame header in the header room right
// before it, so a frame goes to the piece in one write without copying. Memory is
// allocated once at construction; acquire/release never allocate.
#pragma once

#include <cstddef>
#include <utility>
#include <cstdint>
#include <optional>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::io {

inline constexpr size_t kIoAlignment = 4096;

class BufferPool {
 public:
  // count >= 1; data_size and header_room multiples of kIoAlignment.
  static Result<BufferPool> create(size_t count, size_t data_size, size_t header_room);
  BufferPool(BufferPool&&) noexcept;
  BufferPool& operator=(BufferPool&&) noexcept;
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool();

  std::optional<uint32_t> acquire();  // nullopt when all slots are in use
  void release(uint32_t slot);        // asserts the slot was acquired

  std::byte* header(uint32_t slot) const;  // header_room bytes, 4096-aligned
  std::byte* data(uint32_t slot) const;    // data_size bytes, 4096-aligned
  size_t count() const { return count_; }
  size_t data_size() const { return data_size_; }
  size_t header_room() const { return header_room_; }
  size_t free_count() const { return free_.size(); }
  size_t bytes_reserved() const { return count_ * (data_size_ + header_room_); }
  // The whole pool as one region (for registering it with an I/O engine).
  std::pair<std::byte*, size_t> region() const { return {base_, bytes_reserved()}; }

 private:
  BufferPool() = default;
  std::byte* base_ = nullptr;
  size_t count_ = 0, data_size_ = 0, header_room_ = 0;
  std::vector<uint32_t> free_;
  std::vector<bool> in_use_;
};

}  // namespace stripeback::io
