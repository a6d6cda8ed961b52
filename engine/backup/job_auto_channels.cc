// Phase "channels": the count of channels the backup runs. --channels auto chooses it once
// the plan is known (engine/tuning/auto_channels.h): the files the probe may sample, the
// units of work there are, and so the most channels that can have work.
#include <algorithm>

#include "engine/backup/backup_job_state.h"
#include "engine/backup/buffer_budget.h"
#include "engine/tuning/auto_channels.h"

namespace stripeback::engine::backup_internal {
namespace {

uint32_t at_most_auto(uint64_t n) {
  return static_cast<uint32_t>(std::min<uint64_t>(n, kAutoChannelsMost));
}

}  // namespace

Result<Next> choose_job_channels(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  job.channels = opts.channels;
  if (!opts.auto_channels) {
    job.sum.channels_chosen = job.channels;
    return Next::go_on;
  }
  AutoChannelsInput in;
  in.kind = opts.validate_only ? "validate-sources" : "backup";
  in.source_medium = media_of(opts.sources);
  if (!opts.validate_only) in.destination_medium = medium_of(job.dest);
  uint64_t units = 0;
  for (const FileTask& f : job.plan.files) {
    in.files.push_back({f.path, f.size});
    const bool split = opts.section_size != 0 && f.size > opts.section_size;
    units += split ? (f.size + opts.section_size - 1) / opts.section_size : 1;
  }
  in.total_bytes = job.plan.total_bytes;
  const bool compressing = opts.channel.compress_level != 0;
  const uint64_t per_channel = backup_channel_buffer_bytes(opts.buffers, opts.buffer_size,
                                                           compressing, opts.validate_only);
  in.bounds.memory = at_most_auto(buffer_memory_limit() / std::max<uint64_t>(1, per_channel));
  in.bounds.units = at_most_auto(std::max<uint64_t>(1, units));
  in.probe.direct = opts.channel.direct == io::Direct::yes;
  const ChannelChoice c = choose_channels(job.cat, in);
  job.channels = c.channels;
  job.sum.channels_chosen = c.channels;
  job.sum.channels_reason = c.reason;
  return Next::go_on;
}

}  // namespace stripeback::engine::backup_internal
