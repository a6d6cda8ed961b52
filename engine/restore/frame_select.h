// Which frames a validation of backups checks (validate --sample, --part, --max-duration;
// docs/validate.md), and the catalog's memory of what was checked when (FrameCheck records).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"

namespace stripeback::engine {

struct FrameSelection {
  // --sample: each data frame is checked with this probability, decided by a hash of the
  // seed, the piece's name and the frame's offset (the same seed picks the same frames).
  std::optional<double> sample;
  uint64_t seed = 0;
  // --part K/N: the frames of every K-th of N runs of kPartSpan bytes of each piece
  // (staggered by a hash of the piece's name); N runs with K = 1..N check every frame once.
  uint32_t part = 0, parts = 0;
  // --max-duration: frames that have gone longest without a check first, until then.
  std::optional<std::chrono::milliseconds> max_duration;

  static constexpr uint64_t kPartSpan = 16u << 20;

  bool partial() const { return sample || parts != 0 || max_duration; }
  // For the catalog and the summary: "full", "sample 10% seed S", "part 2/7", "oldest", or
  // a combination ("sample 10% seed S, oldest").
  std::string mode() const;
  // Whether the frame at `frame_offset` of piece `piece` is in the sample or part (always,
  // without either).
  bool keep(const std::string& piece, uint64_t frame_offset) const;
};

// When each frame was last checked, from the frame check records of a catalog.
class CheckHistory {
 public:
  explicit CheckHistory(std::vector<catalog::FrameCheck> checks);
  // The time (ns) of the newest check that covered the frame at `frame_offset` of `piece`;
  // 0 when none did.
  int64_t last(const std::string& piece, uint64_t frame_offset) const;

 private:
  struct Covered {
    int64_t time_ns = 0;
    std::vector<catalog::CheckedRange> ranges;  // sorted by first
  };
  std::map<std::string, std::vector<Covered>> by_piece_;  // oldest first
};

// The ranges of `verified` (sorted frame offsets) among `frames` (every data frame offset of
// the piece, sorted): runs of consecutive frames of the piece, each as [first, last].
std::vector<catalog::CheckedRange> checked_ranges(const std::vector<uint64_t>& frames,
                                                  const std::vector<uint64_t>& verified);

}  // namespace stripeback::engine
