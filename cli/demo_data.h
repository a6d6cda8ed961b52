// Generates a demo / benchmark data set of datafile-like files: 8 KiB pages with headers
// and row data (compressible about like real tables), free space that is all zeros,
// incompressible segments, sizes that are not multiples of 1 MiB, nested directories,
// several modes and mtimes, and one empty file. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <string>

#include "stripeback/result.h"

namespace stripeback::engine {

struct DemoDataSummary {
  uint64_t files = 0;
  uint64_t bytes = 0;
  double elapsed_s = 0;
};

// Creates the files under `dir` (which must not exist or be empty). `total_bytes` is the
// approximate size of the whole set (at least 4 MiB).
Result<DemoDataSummary> make_demo_data(const std::string& dir, uint64_t total_bytes,
                                       uint32_t seed);

}  // namespace stripeback::engine
