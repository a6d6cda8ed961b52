// The engine's progress snapshot (engine/monitor/progress.h) as the C API's sb_progress: the same
// picture `stripeback status` shows, handed to the embedder's callback.
#pragma once

#include "engine/monitor/progress.h"
#include "stripeback/stripeback.h"

namespace stripeback::capi {

// Calls `fn` with `snap` mapped; everything passed lives only during the call. Never throws.
void deliver_progress(const engine::ProgressSnapshot& snap, sb_progress_fn fn, void* user);

}  // namespace stripeback::capi
