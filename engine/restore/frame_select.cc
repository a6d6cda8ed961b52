#include "engine/restore/frame_select.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace stripeback::engine {
namespace {

// splitmix64's finalizer: a cheap, well-mixed 64-bit hash.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

uint64_t hash_name(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (char ch : s) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ull;
  }
  return mix64(h);
}

}  // namespace

std::string FrameSelection::mode() const {
  std::string m;
  char buf[96];
  if (sample) {
    std::snprintf(buf, sizeof buf, "sample %g%% seed %llu", *sample * 100,
                  static_cast<unsigned long long>(seed));
    m = buf;
  }
  if (parts) {
    std::snprintf(buf, sizeof buf, "part %u/%u", part, parts);
    m += (m.empty() ? "" : ", ") + std::string(buf);
  }
  if (max_duration) m += (m.empty() ? "" : ", ") + std::string("oldest");
  return m.empty() ? "full" : m;
}

bool FrameSelection::keep(const std::string& piece, uint64_t frame_offset) const {
  const uint64_t name = hash_name(piece);
  if (sample) {
    const uint64_t h = mix64(seed ^ name ^ mix64(frame_offset));
    // h / 2^64 < fraction, in doubles (53 bits are plenty for a sampling share).
    if (std::ldexp(static_cast<double>(h >> 11), -53) >= *sample) return false;
  }
  if (parts) {
    const uint64_t span = frame_offset / kPartSpan;
    if ((span % parts + name % parts) % parts != part - 1) return false;
  }
  return true;
}

CheckHistory::CheckHistory(std::vector<catalog::FrameCheck> checks) {
  for (auto& c : checks)
    for (auto& p : c.pieces) {
      Covered cov{c.time_ns, std::move(p.ranges)};
      std::sort(cov.ranges.begin(), cov.ranges.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      by_piece_[p.piece].push_back(std::move(cov));
    }
}

int64_t CheckHistory::last(const std::string& piece, uint64_t off) const {
  auto it = by_piece_.find(piece);
  if (it == by_piece_.end()) return 0;
  int64_t best = 0;
  for (const Covered& c : it->second) {
    if (c.time_ns <= best) continue;
    // The last range starting at or before `off`.
    auto r = std::upper_bound(c.ranges.begin(), c.ranges.end(), off,
                              [](uint64_t v, const catalog::CheckedRange& x) { return v < x.first; });
    if (r == c.ranges.begin()) continue;
    --r;
    if (off <= r->last) best = c.time_ns;
  }
  return best;
}

std::vector<catalog::CheckedRange> checked_ranges(const std::vector<uint64_t>& frames,
                                                  const std::vector<uint64_t>& verified) {
  std::vector<catalog::CheckedRange> out;
  size_t v = 0;
  bool open = false;
  for (uint64_t f : frames) {
    while (v < verified.size() && verified[v] < f) ++v;
    const bool hit = v < verified.size() && verified[v] == f;
    if (hit && open) out.back().last = f;
    else if (hit) out.push_back({f, f});
    open = hit;
  }
  return out;
}

}  // namespace stripeback::engine
