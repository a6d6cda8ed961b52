#include "options/schema_parts.h"

#include "database/recovery_target.h"
#include "database/wal_names.h"
#include "options/setters.h"

namespace stripeback::options {
namespace {

using namespace setters;

// Restore to a point in time: each target sets the one recovery target (job_options.cc
// refuses two).
constexpr std::string_view kPitr = "Point-in-time restore (PostgreSQL)";
Result<void> set_target_time(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(s.recovery.time_ns, database::parse_target_time(v, util::option_word(o.key)));
  s.recovery.kind = database::TargetKind::time;
  return ok();
}
Result<void> set_target_lsn(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(s.recovery.lsn, database::parse_lsn(v, util::option_word(o.key)));
  s.recovery.kind = database::TargetKind::lsn;
  return ok();
}
Result<void> set_target_xid(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(s.recovery.xid, database::parse_target_xid(v, util::option_word(o.key)));
  s.recovery.kind = database::TargetKind::xid;
  return ok();
}
Result<void> set_target_action(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(s.recovery.action, database::parse_target_action(v, util::option_word(o.key)));
  return ok();
}
Result<void> set_target_inclusive(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(s.recovery.inclusive, boolean(o, v));
  return ok();
}
Result<void> set_standby(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(s.recovery.standby, boolean(o, v));
  return ok();
}
void reset_target(Settings& s) { s.recovery.kind = database::TargetKind::none; }
void reset_target_action(Settings& s) { s.recovery.action = database::RecoveryTarget{}.action; }
void reset_target_inclusive(Settings& s) { s.recovery.inclusive = true; }
void reset_standby(Settings& s) { s.recovery.standby = false; }

// clang-format off
const Option kDatabase[] = {
  // Databases (docs/postgresql.md).
  {"hot", "--hot", Type::flag, kBackup,
   "the sources are in a database's backup mode (a hot backup): files that change while they "
   "are read are expected, recorded as fuzzy (--json: fuzzy_files) and the backup exits 0; "
   "restoring it needs the database's log (WAL) from the backup's time",
   "Database", {}, {}, 0, 0, yes_no<&Settings::hot>, reset<&Settings::hot>},
  {"pg", "--pg", Type::text, kBackup,
   "a hot backup of the PostgreSQL cluster whose data directory is the SOURCE, through a libpq "
   "connection string (e.g. 'host=/run/postgresql port=5432 user=postgres'): pg_backup_start "
   "and pg_backup_stop on one session, the backup_label and tablespace_map kept in the "
   "catalog, tablespaces followed, what a base backup leaves out left out (pg_wal/, "
   "postmaster.pid, ...), and the start and stop LSN and WAL range recorded. Implies --hot",
   "Database", "CONNINFO", {}, 0, 0, any_text<&Settings::pg>, reset<&Settings::pg>, false},
};
const Option kPitrOptions[] = {
  // Restore to a point in time (PostgreSQL): the CLI's alone.
  {"target_time", "--target-time", Type::text, kRestore,
   "recover the restored PostgreSQL cluster to this time: restore the newest backup taken "
   "with --pg that ended at or before it and write recovery.signal and the recovery settings "
   "(restore_command, recovery_target_time) into its data directory. ISO 8601 with a zone "
   "(2026-12-07T14:45:32Z, 2026-12-07 14:45:32.5+01:00) or seconds since the epoch. Refused, "
   "before anything is written, when no backup ends before it or the archive lacks a WAL "
   "segment recovery needs",
   kPitr, "TIME", {}, 0, 0, set_target_time, reset_target, false},
  {"target_lsn", "--target-lsn", Type::text, kRestore,
   "recover to this WAL position (as PostgreSQL writes it, 0/3000028): the newest --pg "
   "backup that stopped at or before it, and the archive must hold every WAL segment up to "
   "the one holding it",
   kPitr, "LSN", {}, 0, 0, set_target_lsn, reset_target, false},
  {"target_xid", "--target-xid", Type::text, kRestore,
   "recover to this transaction id (its commit): from the newest --pg backup, as no record "
   "tells where a transaction id lies",
   kPitr, "XID", {}, 0, 0, set_target_xid, reset_target, false},
  {"target_action", "--target-action", Type::text, kRestore,
   "what the server does on reaching the target, as PostgreSQL's recovery_target_action: "
   "pause (PostgreSQL's default: stays read-only for inspection, pg_wal_replay_resume() "
   "promotes; with hot_standby off it shuts down), promote (opens for writes on a new "
   "timeline) or shutdown",
   kPitr, "ACTION", "pause", 0, 0, set_target_action, reset_target_action, false},
  {"target_inclusive", "--target-inclusive", Type::text, kRestore,
   "stop just after the target (true, PostgreSQL's default) or just before it "
   "(--target-inclusive=false)",
   kPitr, "[=BOOL]", {}, 0, 0, set_target_inclusive, reset_target_inclusive, false,
   false, false, 0, "true"},
  {"standby", "--standby", Type::flag, kRestore,
   "make the restored PostgreSQL cluster a standby that replays the archived WAL without end: "
   "standby.signal and restore_command instead of recovery.signal and a target",
   kPitr, {}, {}, 0, 0, set_standby, reset_standby, false},
};
// clang-format on

}  // namespace

std::span<const Option> database_options() { return kDatabase; }
std::span<const Option> pitr_options() { return kPitrOptions; }

}  // namespace stripeback::options
