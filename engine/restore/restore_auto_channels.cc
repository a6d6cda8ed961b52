// Phase "channels" of a restore or validation: the most channels that read pieces through
// their indexes. --channels auto chooses it (engine/tuning/auto_channels.h) from the
// history of jobs of the same kind from the pieces' medium, else a probe of the pieces of
// the backups used, once the files and so the buffers are known.
#include <algorithm>

#include "engine/backup/buffer_budget.h"
#include "engine/restore/restore_phases.h"
#include "engine/tuning/auto_channels.h"

namespace stripeback::engine {

Result<util::Next> choose_restore_channels(RestoreJob& job) {
  const RestoreOptions& opts = job.opts;
  job.channels = opts.channels;
  job.sum.channels_chosen = job.channels;
  if (!opts.auto_channels) return util::Next::go_on;
  AutoChannelsInput in;
  in.kind = opts.verify_only ? "validate" : "restore";
  std::vector<std::string> held_in;
  for (uint64_t id : job.used) {
    auto b = job.by_id.find(id);
    if (b == job.by_id.end()) continue;
    held_in.push_back(b->second->begin.destination);
    for (const catalog::PieceRecord& p : b->second->pieces) {
      if (p.media) continue;  // read in order, one channel per drive
      auto at = storage::Location::parse(p.location);
      if (at) in.files.push_back({at->join(p.name).str(), p.size});
    }
  }
  in.source_medium = media_of(held_in);
  for (const RestoreItem& it : job.items) in.total_bytes += it.file.size;
  const uint64_t per_channel =
      restore_channel_buffer_bytes(job.ctx.config.buffers, job.ctx.config.buffer_size);
  in.bounds.memory = static_cast<uint32_t>(std::min<uint64_t>(
      buffer_memory_limit() / std::max<uint64_t>(1, per_channel), kAutoChannelsMost));
  in.bounds.units = static_cast<uint32_t>(
      std::clamp<uint64_t>(job.items.size(), 1, kAutoChannelsMost));
  in.probe.direct = opts.channel.direct == io::Direct::yes;
  const ChannelChoice c = choose_channels(job.cat, in);
  job.channels = c.channels;
  job.sum.channels_chosen = c.channels;
  job.sum.channels_reason = c.reason;
  return util::Next::go_on;
}

}  // namespace stripeback::engine
