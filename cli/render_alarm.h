// How a backup's ransomware alarm (engine/backup/alarm.h) is shown: the `suspicious` object
// of --json (and of the C API's result) and the warning of the text summary. Shared by the
// CLI and the C API through stripeback_render.
#pragma once

#include <string>

#include "engine/backup/backup_job.h"
#include "util/json.h"

namespace stripeback::cli {

// `"alarm_compared_with"` when the backup was compared, and `"suspicious"` when a rule
// fired (field names are stable, docs/security.md).
void alarm_json(util::JsonWriter& w, const engine::BackupSummary& s);

// The warning of a backup the alarm fired on, several lines; empty when it did not.
std::string alarm_text(const engine::BackupSummary& s);

// The command that ends the keep of the backup the alarm kept.
std::string clear_keep_command(uint64_t backup_id);

}  // namespace stripeback::cli
