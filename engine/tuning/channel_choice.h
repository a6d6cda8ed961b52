// Choosing a job's channel count (--channels auto, docs/channel-controls.md#channels-auto): from the
// rates the catalog's history shows on the same pair of media, else from a short read
// probe, and within the bounds of memory, of the work there is, and of a sane maximum.
// Pure: the figures come in, a count and a one-line reason go out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

namespace stripeback::engine {

// The most channels auto ever chooses: past it a channel per device is long reached on any
// medium the engine serves, and each channel adds a backup set to manage.
inline constexpr uint32_t kAutoChannelsMost = 16;
// A count whose rate is within this share of the best rate counts as good as the best;
// the smallest such count is chosen (fewer channels: fewer sets, less memory).
inline constexpr double kNearBest = 0.05;
// A probe measures reads alone, and a channel is more than its reads: it digests, compresses
// and writes while its next reads are in flight, so more channels overlap more of that work
// than a read-only probe can show (on this project's development disk, reads at 1 to 8
// readers probed within about 15% of each other while backups ran 40% faster with 8 channels
// than with 1; docs/benchmarks.md, "Channel count"). What a probe can show is a medium on
// which concurrent readers hurt (a disk that seeks between them, a server that serializes
// them). So from a probe the largest count within this share of the best rate is chosen.
inline constexpr double kProbeNearBest = 0.15;
// History is enough once it has this many runs, of at least two channel counts.
inline constexpr size_t kHistoryRunsEnough = 3;
// The count when nothing is measured (no history, a job too small to probe): 4. On this
// project's local disk and from a network file server 4 channels came within 10% of the
// best fixed count (docs/benchmarks.md, "Channel count"), where the fixed default of
// --channels, 2, lost 7% to 15%; a disk on which concurrent streams hurt loses less with 4 than a flash or network
// medium does with 2, and the history corrects it once jobs at other counts ran.
inline constexpr uint32_t kAutoChannelsDefault = 4;

// What bounds the count, each as the most channels it allows (at least 1 is always taken).
struct ChannelBounds {
  uint32_t memory = kAutoChannelsMost;  // channels whose I/O buffers fit the memory limit
  uint32_t units = kAutoChannelsMost;   // sets, sections or chunks the work comes in
  uint32_t most = kAutoChannelsMost;
  // The tightest bound and its name ("memory", "3 unit(s) of work", "the maximum").
  uint32_t cap() const;
  std::string cap_reason() const;
};

// One completed job of the history: its channel count and its rate (10^6 bytes per second
// of the job's wall time).
struct PastRun {
  uint32_t channels = 0;
  double mb_per_s = 0;
};

struct ChannelChoice {
  uint32_t channels = 1;
  std::string reason;  // "history: ...", "probe: ...", or why neither was used
};

// The smallest count whose rate is within `near` of the best rate; 0 for no rates.
uint32_t smallest_near_best(const std::map<uint32_t, double>& rates, double near = kNearBest);

// The largest count whose rate is within `near` of the best rate; 0 for no rates.
uint32_t largest_near_best(const std::map<uint32_t, double>& rates, double near = kProbeNearBest);

// "1=410 2=620 4=655 MB/s".
std::string rates_text(const std::map<uint32_t, double>& rates);

// From the history of one pair of media (`what` names it: "5 backups from A to B" is
// printed as "history: 5 backups from A to B: ..."). Each count's rate is the median of its
// runs; counts above the bounds are left out. nullopt when the history is not enough
// (kHistoryRunsEnough runs of two counts or more, counting only those within the bounds).
std::optional<ChannelChoice> choose_from_history(std::span<const PastRun> runs,
                                                 const std::string& what,
                                                 const ChannelBounds& bounds);

// From the rates a probe measured at each count (all within the bounds): largest_near_best().
ChannelChoice choose_from_probe(const std::map<uint32_t, double>& rates,
                                const ChannelBounds& bounds);

// Nothing measured (`why`: "source of 40 MiB is below the probe's threshold of 2 GiB"):
// the default within the bounds.
ChannelChoice choose_unmeasured(const std::string& why, const ChannelBounds& bounds);

}  // namespace stripeback::engine
