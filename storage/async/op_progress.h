// Private to io/: the state of one op across partial transfers and retries.
//
// Both engines feed every raw result (a byte count or -errno) through apply_result(), so the
// io_uring and the pread/pwrite paths give identical completions for identical kernel
// behaviour; only the way a transfer is issued differs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "storage/async/io_engine.h"

namespace stripeback::io::detail {

struct OpProgress {
  IoOp op;
  uint32_t done = 0;     // bytes transferred so far
  uint32_t retries = 0;  // consecutive -EAGAIN/-EINTR without progress

  // The transfer still to issue: the remainder of the op.
  std::byte* next_buf() const { return op.buf + done; }
  uint32_t remaining() const { return op.len - done; }
  uint64_t next_offset() const { return op.offset + done; }
};

// Applies the result of the transfer described by p's next_*() (bytes, or -errno).
// Returns the completion once the op is finished, or nullopt when the remainder must be
// issued again.
std::optional<IoCompletion> apply_result(OpProgress& p, int64_t res);

// "read at offset 4096", "fdatasync": names the failing transfer in error messages.
std::string describe(const OpProgress& p);

}  // namespace stripeback::io::detail
