#include "capi/progress_map.h"

#include <vector>

namespace stripeback::capi {

void deliver_progress(const engine::ProgressSnapshot& snap, sb_progress_fn fn, void* user) {
  if (fn == nullptr) return;
  try {
    std::vector<sb_channel_progress> channels;
    channels.reserve(snap.channels.size());
    for (const auto& c : snap.channels)
      channels.push_back(sb_channel_progress{c.channel, c.state.c_str(), c.state_s, c.bytes});
    sb_progress p{};
    p.operation = snap.operation.c_str();
    p.backup_id = snap.id;
    p.bytes_done = snap.bytes_done;
    p.bytes_total = snap.bytes_total;
    p.rate = snap.rate;
    p.eta_s = snap.eta_s;
    p.elapsed_s = static_cast<double>(snap.last_update_ns - snap.started_ns) / 1e9;
    p.finished = snap.finished ? 1 : 0;
    p.bound_by = snap.verdict.c_str();
    p.stage = snap.verdict_stage.c_str();
    p.suggestion = snap.verdict_suggestion.c_str();
    p.channel_count = channels.size();
    p.channels = channels.empty() ? nullptr : channels.data();
    fn(&p, user);
  } catch (...) {
    // Out of memory while mapping: this picture is skipped, the next one comes.
  }
}

}  // namespace stripeback::capi
