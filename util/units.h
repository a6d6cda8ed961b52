// Parsing and printing of sizes ("1M", "256K", "4GiB") and durations.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stripeback/result.h"

namespace stripeback::util {

// Accepts a plain byte count or a number with K, M, G, T (optionally followed by "iB" or
// "B"), all powers of 1024. Rejects zero-length, negative and overflowing values.
Result<uint64_t> parse_size(std::string_view text);
std::string format_bytes(uint64_t bytes);  // "1.50 GiB"
double mb_per_s(uint64_t bytes, double seconds);  // 10^6 bytes per second

}  // namespace stripeback::util
