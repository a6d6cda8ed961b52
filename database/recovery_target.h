// What a point-in-time restore asks PostgreSQL's recovery for (docs/postgresql.md,
// "Point-in-time restore"): a target (a time, an LSN or a transaction id), what the server
// does on reaching it, and the settings a restore appends to postgresql.auto.conf. Pure
// text: nothing here reads or writes files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stripeback/result.h"

namespace stripeback::database {

enum class TargetKind { none, time, lsn, xid };

// recovery_target_action: PostgreSQL's default is pause (with hot_standby off the server
// shuts down instead, as PostgreSQL does).
enum class TargetAction { pause, promote, shutdown };

struct RecoveryTarget {
  TargetKind kind = TargetKind::none;
  int64_t time_ns = 0;  // kind time: ns since the epoch
  uint64_t lsn = 0;     // kind lsn
  uint64_t xid = 0;     // kind xid
  TargetAction action = TargetAction::pause;
  bool inclusive = true;  // stop just after the target (true) or just before it
  // Recovery without end as a standby (standby.signal); never with a target.
  bool standby = false;
};

// A time as ISO 8601 with a zone: "2026-12-07T14:45:32Z", "2026-12-07 14:45:32.25+01:00",
// "...+0100", "...-05"; or seconds since the epoch ("1796654732"). Fractions of a second
// to the nanosecond. invalid_argument naming `what` and the expected forms otherwise.
Result<int64_t> parse_target_time(std::string_view text, std::string_view what);
// A transaction id, decimal, from 3 (the first normal one) to 2^32-1.
Result<uint64_t> parse_target_xid(std::string_view text, std::string_view what);
// "promote", "pause" or "shutdown".
Result<TargetAction> parse_target_action(std::string_view text, std::string_view what);
const char* target_action_name(TargetAction a);

// The time as PostgreSQL reads a timestamptz, in UTC to the microsecond:
// "2026-12-07 14:45:32.250000+00".
std::string pg_time_text(int64_t ns);
// The time in UTC as ISO 8601, to the microsecond when not whole: "2026-12-07T14:45:32.25Z".
std::string iso_time_text(int64_t ns);
// The target as a message names it: "time 2026-12-07T14:45:32.25Z", "LSN 0/3000028",
// "transaction 1234"; "the end of the archived WAL" for none.
std::string target_text(const RecoveryTarget& t);

// A value quoted for postgresql.conf: in single quotes, each quote and backslash doubled.
std::string conf_quote(std::string_view value);
// A word quoted for /bin/sh when it holds anything but [A-Za-z0-9_./:=@%+-].
std::string shell_quote(std::string_view word);

// The lines a restore appends to postgresql.auto.conf, each "name = 'value'": a comment
// line, restore_command, then for a target recovery_target_time, _lsn or _xid,
// recovery_target_inclusive, recovery_target_action, and recovery_target_timeline =
// 'latest' (a standby: the timeline line only).
std::string recovery_settings(const RecoveryTarget& t, const std::string& restore_command);

}  // namespace stripeback::database
