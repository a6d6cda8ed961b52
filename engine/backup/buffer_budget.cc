#include "engine/backup/buffer_budget.h"

#include <unistd.h>

#include <algorithm>

#include "engine/backup/backup_job.h"
#include "util/option_words.h"

namespace stripeback::engine {

Result<void> check_buffer_overrides(std::optional<size_t> buffers,
                                    std::optional<size_t> buffer_size) {
  if (buffers && (*buffers < kMinBuffers || *buffers > kMaxBuffers))
    return fail(Errc::invalid_argument, util::option_word("buffers") + " must be between " +
                                            std::to_string(kMinBuffers) + " and " +
                                            std::to_string(kMaxBuffers) + "; got " +
                                            std::to_string(*buffers));
  if (buffer_size && (*buffer_size < kMinBufferSize || *buffer_size % 4096 != 0 ||
                      *buffer_size > kMaxBufferSize))
    return fail(Errc::invalid_argument,
                util::option_word("buffer_size") +
                    " must be a multiple of 4 KiB between 4 KiB and 64 MiB; got " +
                    std::to_string(*buffer_size) + " bytes");
  return ok();
}

uint64_t backup_channel_buffer_bytes(std::optional<size_t> buffers,
                                     std::optional<size_t> buffer_size, bool compressing,
                                     bool validating) {
  uint64_t most = 0;
  // One multiplexing level from each row of the buffer rule.
  for (uint32_t level : {1u, 5u, 9u}) {
    BufferChoice c = choose_buffers(level, buffers, buffer_size, compressing, validating);
    most = std::max<uint64_t>(most, uint64_t{c.buffers} * c.buffer_size);
  }
  return compressing ? 2 * most : most;
}

uint64_t restore_channel_buffer_bytes(size_t buffers, size_t buffer_size) {
  return 2 * uint64_t{buffers} * buffer_size;
}

uint64_t buffer_memory_limit(uint64_t* physical) {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page_size = ::sysconf(_SC_PAGESIZE);
  uint64_t phys = pages > 0 && page_size > 0
                      ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
                      : 0;
  if (physical) *physical = phys;
  return phys ? std::min(kMaxBufferMemory, phys / 2) : kMaxBufferMemory;
}

}  // namespace stripeback::engine
