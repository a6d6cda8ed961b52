// How a channel runs, for backup and restore alike: its buffers, reads in flight, units
// open at once, piece size limit, checkpoints, rate and compression.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "storage/async/file.h"

namespace stripeback::engine {

inline constexpr uint32_t kDefaultChannels = 2;

// How a channel shares its buffers among the units it has open.
enum class ReadOrder : uint8_t {
  round_robin,  // each open unit in turn: they progress together (multiplexing)
  // The first open unit in its set's order takes every buffer it can use, the next only
  // what is left: units finish in set order, so a deadline cuts the fewest and the last.
  set_order,
};

// Checkpoints: a channel closes its piece (trailer, sync, catalog record) once it holds
// `bytes` or has been open for `interval`, whichever comes first, and goes on in a new
// one, so a backup killed at any moment loses at most that much work per channel (a
// resume keeps what durable pieces hold). 0 turns either off.
inline constexpr uint64_t kDefaultCheckpointBytes = 256ull << 20;
inline constexpr std::chrono::milliseconds kDefaultCheckpointInterval{60000};
struct Checkpoints {
  uint64_t bytes = kDefaultCheckpointBytes;
  std::chrono::milliseconds interval = kDefaultCheckpointInterval;
};

struct ChannelConfig {
  size_t buffers = 16;
  size_t buffer_size = 1 << 20;
  unsigned queue_depth = 64;
  io::Direct direct = io::Direct::yes;
  uint32_t max_open_files = 8;  // units read at once (multiplexing level)
  ReadOrder read_order = ReadOrder::round_robin;
  uint64_t max_piece_size = 0;  // 0: one piece per channel
  uint64_t checkpoint_bytes = kDefaultCheckpointBytes;  // see Checkpoints; 0: off
  std::chrono::milliseconds checkpoint_interval = kDefaultCheckpointInterval;
  double rate = 0;              // bytes per second read by this channel; 0: unlimited
  int compress_level = 0;       // zstd level; 0: no compression; kCompressAuto: adaptive
  double cpu_budget = 0;        // with auto: share of one core compression may use; 0: any
};

}  // namespace stripeback::engine
