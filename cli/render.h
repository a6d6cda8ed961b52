// The one renderer of job results: backup, restore and validate summaries as text and as
// JSON, with each channel's counters and every backend's counter group (storage.h
// CounterGroup), whose fields the renderer does not need to know.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"

#include "engine/backup/backup_job.h"
#include "engine/restore/restore_job.h"
#include "util/json.h"

namespace stripeback::cli {

std::string backup_json(const engine::BackupSummary& s);
std::string backup_text(const engine::BackupSummary& s);
// A hot backup's record (catalog::HotBackup): for --json, an object named after the
// database (nothing for a plain --hot); for text, one indented line.
void hot_json(util::JsonWriter& w, const catalog::HotBackup& h);
std::string hot_text(const catalog::HotBackup& h);
// The "fallbacks", "warnings" and "errors" arrays of a restore or validate document (and
// of its preview).
void outcome_lists_json(util::JsonWriter& w, const std::vector<engine::Fallback>& fallbacks,
                        const std::vector<std::string>& warnings,
                        const std::vector<std::string>& errors);
std::string restore_json(const engine::RestoreSummary& s);
// UTC time in ISO 8601, "YYYY-MM-DDTHH:MM:SSZ", of a wall-clock time in ns since the epoch.
std::string format_time(int64_t ns);
std::string restore_text(const engine::RestoreSummary& s);
// One indented line: "    <name>: <key> <value>, ..." (bytes and seconds with units).
std::string group_text(const storage::CounterGroup& g);

// The catalog's backups as the JSON document `list --json` prints (also the C API's list).
// What rekeys did to a backup's pieces: the newest key version among its pieces' catalog
// wraps (0: none rekeyed) and how many of them only the catalog's wrap opens with it.
struct KeyState {
  uint32_t version = 0;
  uint32_t catalog_only = 0;
};
KeyState key_state(const catalog::Backup& b, const std::map<std::string, catalog::KeyWrap>& wraps);
std::string list_json(const catalog::Catalog& cat, std::optional<uint64_t> only = std::nullopt);
// What a backup holds: its regular files and their bytes.
struct BackupTotals {
  uint64_t files = 0, bytes = 0;
  // Of `bytes`, what the backup itself holds: a level 1 holds only its changed units (the
  // rest is in its parents), a file skipped by --optimize nothing.
  uint64_t held = 0;
};
BackupTotals backup_totals(const catalog::Backup& b);
// The backups the files of `b` build on (level 1), in id order.
std::vector<uint64_t> backup_parents(const catalog::Backup& b);
// When each backup's every frame had last been checked (validate; docs/validate.md), by id.
std::map<uint64_t, int64_t> last_full_checks(const catalog::Catalog& cat);

}  // namespace stripeback::cli
