// A short read probe of a job's sources (--channels auto without enough history): rounds of
// 1, 2, 4 and 8 concurrent readers, each reader a thread with its own IoLoop as a channel has
// (io_uring with O_DIRECT on local files, the network client's connections elsewhere), so
// the rate of each count is what that many channels could read. Every reader of every round
// reads the same amount, spread over the files: a round of 8 readers reads 8 times what a
// round of 1 does, and each reader reads 4 times its reads in flight, so it streams at any
// count (rounds of equal size made each of 8 readers read its depth about once, which timed
// how long a burst of requests takes to be answered, not how fast the medium streams). Each round reads
// places no round read before, so no round is served from a cache the one before filled.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::engine {

struct ProbeFile {
  std::string location;  // as place_of() takes it
  uint64_t size = 0;
};

struct ProbeOptions {
  std::vector<uint32_t> counts{1, 2, 4, 8};  // readers of each round, in order
  uint64_t reader_bytes = uint64_t{64} << 20;  // read by each reader of a round
  uint32_t run = 4u << 20;   // bytes read in order from one place
  uint32_t io = 1u << 20;    // bytes per read request
  uint32_t depth = 16;       // reads in flight per reader (a channel's 16 buffers)
  bool direct = true;        // O_DIRECT where the medium allows it
};

// Bytes a probe with these options reads in all.
uint64_t probe_bytes(const ProbeOptions& o);

// Whether the files hold room for the probe: enough whole runs that no run is read twice.
bool probe_fits(const std::vector<ProbeFile>& files, const ProbeOptions& o);

struct ProbeRound {
  uint32_t readers = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  double mb_per_s = 0;  // 10^6 bytes per second
};

// Runs the probe (probe_fits() must hold). A file that cannot be opened or read fails it,
// naming the file.
Result<std::vector<ProbeRound>> probe_reads(const std::vector<ProbeFile>& files,
                                            const ProbeOptions& o);

}  // namespace stripeback::engine
