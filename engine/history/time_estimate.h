// The time a restore or validation preview (engine/restore/restore_preview.h) would take,
// from the catalog's history of jobs (job_history.h): per medium, the rate of the finished
// jobs of the same kind whose backups are all on that medium. Pure.
#pragma once

#include <vector>

#include "catalog/catalog.h"
#include "catalog/job_record.h"
#include "engine/restore/restore_preview.h"

namespace stripeback::engine {

// Fills p.estimates (one per medium p.pieces read from, by name) and, when every medium
// has history, p.seconds (their sum: the media are counted one after another). A job
// counts when its type is "restore" (or "validate" for a validation), its status complete,
// it read some bytes in some time, and every piece of the backups it used is on the medium.
void estimate_time(RestorePreview& p, const std::vector<catalog::JobRecord>& jobs,
                   const std::vector<catalog::Backup>& backups);

}  // namespace stripeback::engine
