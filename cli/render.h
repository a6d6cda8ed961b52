// The one renderer of job results: backup, restore and validate summaries as text and as
// JSON, with each channel's counters and every backend's counter group (storage.h
// CounterGroup), whose fields the renderer does not need to know.
#pragma once

#include <string>

#include "engine/backup_job.h"
#include "engine/restore_job.h"

namespace stripeback::cli {

std::string backup_json(const engine::BackupSummary& s);
std::string backup_text(const engine::BackupSummary& s);
std::string restore_json(const engine::RestoreSummary& s);
// UTC time in ISO 8601, "YYYY-MM-DDTHH:MM:SSZ", of a wall-clock time in ns since the epoch.
std::string format_time(int64_t ns);
std::string restore_text(const engine::RestoreSummary& s);
// One indented line: "    <name>: <key> <value>, ..." (bytes and seconds with units).
std::string group_text(const storage::CounterGroup& g);

}  // namespace stripeback::cli
