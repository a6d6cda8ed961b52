// Drive exercises for `stripeback tape test` (in the spirit of Bacula's btape): write and
// read back at a block size and time both directions; fill a tape to its end and go on
// with a second one, then read both back. Both overwrite the tapes from their beginning.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "stripeback/result.h"
#include "backends/tape/drive.h"
#include "backends/tape/stream.h"

namespace stripeback::tape {

struct SpeedResult {
  uint32_t block_size = 0;
  uint64_t bytes = 0;  // written and read back (less than asked when the tape ended)
  double write_s = 0, read_s = 0;
  bool end_of_medium = false;
};

// Rewinds, writes `bytes` (several blocks per WRITE(6)), a filemark, rewinds and reads it
// all back, checking every block.
Result<SpeedResult> speed_test(TapeDrive& drive, uint32_t block_size, uint64_t bytes,
                               const std::atomic<bool>& cancel);

struct SpanResult {
  StreamLocation location;
  double write_s = 0, read_s = 0;
};

// Labels both tapes (volume ids SBTEST1 and SBTEST2), writes one stream to the first
// until its end of medium and `extra` bytes more (which go to the second), then reads the
// stream back across both and checks every byte.
Result<SpanResult> span_test(const std::string& first_url, const std::string& second_url,
                             uint32_t block_size, uint64_t extra, const std::atomic<bool>& cancel);

}  // namespace stripeback::tape
