// The wall clock of records and retention: what backups, checks and deletions are stamped
// with, and what `report obsolete` measures a recovery window from.
//
// In a build with STRIPEBACK_TEST_HOOKS=ON a test can stop it at a chosen time
// (test_hooks::set_fake_now: a week of nightly backups in a minute); the clock then stands
// still at that time in this process. Durations (rates, ETA, deadlines) use the steady
// clock and are never affected. Documented in docs/media-management.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#if STRIPEBACK_TEST_HOOKS
#include <string_view>

#include "stripeback/result.h"
#endif

namespace stripeback::util {

// Nanoseconds since the epoch: now, or the fake time a test set.
int64_t wall_now_ns();

// `ns` since the epoch as UTC to the second: "2026-12-01T02:00:00Z".
std::string format_time_ns(int64_t ns);

// "2026-12-01T02:00:00Z" or seconds since the epoch, as seconds; nullopt when neither.
std::optional<int64_t> parse_utc_seconds(const std::string& text);

}  // namespace stripeback::util

#if STRIPEBACK_TEST_HOOKS
namespace stripeback::util::test_hooks {

// Stops the wall clock at `when`: seconds since the epoch ("1764554400") or a UTC time
// ("2026-12-01T02:00:00Z"); empty: the real clock again. Any other text fails with
// invalid_argument saying what is expected, and leaves the clock as it was. Any thread.
Result<void> set_fake_now(std::string_view when);

}  // namespace stripeback::util::test_hooks
#endif
