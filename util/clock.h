// The wall clock of records and retention: what backups, checks and deletions are stamped
// with, and what `report obsolete` measures a recovery window from.
//
// For tests (a week of nightly backups in a minute), STRIPEBACK_FAKE_NOW sets it: seconds
// since the epoch ("1764554400") or a UTC time ("2026-12-01T02:00:00Z"). The clock then
// stands still at that time in this process. Durations (rates, ETA, deadlines) use the
// steady clock and are not affected. Documented in docs/media-management.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stripeback::util {

// Nanoseconds since the epoch: STRIPEBACK_FAKE_NOW when it is set (and valid), else now.
int64_t wall_now_ns();

// "2026-12-01T02:00:00Z" or seconds since the epoch, as seconds; nullopt when neither.
std::optional<int64_t> parse_utc_seconds(const std::string& text);

}  // namespace stripeback::util
