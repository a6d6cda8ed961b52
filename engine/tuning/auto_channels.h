// --channels auto (docs/channel-controls.md#channels-auto): a job's channel count chosen for its pair
// of media. First from the catalog's history: the completed jobs of the same kind between
// the same media, their rate at each channel count (channel_choice.h). Without enough of
// it, from a read probe of what the job reads (read_probe.h), when that is large enough for
// the probe's reads not to matter; else the default. Always within the bounds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/tuning/channel_choice.h"
#include "engine/tuning/read_probe.h"

namespace stripeback::engine {

// A job's history counts only runs that read at least this much: smaller ones are mostly
// start-up and catalog time.
inline constexpr uint64_t kHistoryMinBytes = uint64_t{16} << 20;
// The newest runs of a pair of media that count (older ones describe older machines).
inline constexpr size_t kHistoryNewest = 50;
// The probe runs only on jobs that read at least this many times what it reads, so that it
// adds at most an eighth to the job's reads.
inline constexpr uint64_t kProbeShare = 8;

// The medium `text` (a location) is on, as the history groups jobs: a scheme and its server
// or drive for a location with a scheme; for a local path, the file system's device
// ("local disk (device 259:1)"), found from the nearest existing directory.
std::string medium_of(const std::string& text);
// The media of several locations: each distinct one once, " + "-joined, in order.
std::string media_of(const std::vector<std::string>& texts);

struct AutoChannelsInput {
  // The job's kind as its history record names it: "backup", "restore" or "validate"
  // ("validate-sources" has no history: it records no medium).
  std::string kind;
  std::string source_medium;       // media_of() the sources, or the pieces' medium
  std::string destination_medium;  // a backup's; empty for a restore and a validation
  std::vector<ProbeFile> files;    // what the job reads, for the probe
  uint64_t total_bytes = 0;
  ChannelBounds bounds;
  ProbeOptions probe;
};

// The history of `in.kind` jobs between the media of `in`, newest last (pure but for the
// media of the backups named, which medium_of() finds).
std::vector<PastRun> past_runs(const catalog::Catalog& cat, const AutoChannelsInput& in);

// The count and why. Never fails: a probe that cannot read is a reason like any other (the
// job that follows reports the file).
ChannelChoice choose_channels(const catalog::Catalog& cat, const AutoChannelsInput& in);

}  // namespace stripeback::engine
