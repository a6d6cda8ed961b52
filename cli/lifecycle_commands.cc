#include "cli/lifecycle_commands.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "cli/job_flags.h"
#include "cli/render.h"
#include "database/recovery_target.h"
#include "engine/media/delete_backup.h"
#include "engine/media/keep.h"
#include "engine/media/media_ops.h"
#include "engine/pieces/leftovers.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/json.h"
#include "util/units.h"

namespace stripeback::cli {
namespace {

const catalog::Backup* find(const std::vector<catalog::Backup>& backups, uint64_t id) {
  auto it = std::find_if(backups.begin(), backups.end(),
                         [&](const catalog::Backup& b) { return b.id == id; });
  return it == backups.end() ? nullptr : &*it;
}

std::string level_name(const catalog::Backup& b) {
  return b.begin.level < 0 ? "full" : "level " + std::to_string(b.begin.level);
}

// "backup 4 (level 1, nightly, 2026-11-04T02:00:00Z, complete)"
std::string describe(const catalog::Backup& b) {
  return "backup " + std::to_string(b.id) + " (" + level_name(b) + ", " +
         (b.begin.tag.empty() ? "-" : util::escape_text(b.begin.tag)) + ", " +
         format_time(b.begin.start_time_ns) + ", " + b.status_name() + ")";
}

void backup_json(util::JsonWriter& w, const catalog::Backup& b, bool dependent) {
  w.begin_object();
  w.kv("backup_id", b.id);
  w.kv("tag", b.begin.tag);
  w.kv("status", b.status_name());
  w.kv("start_time", format_time(b.begin.start_time_ns));
  if (b.begin.level >= 0) w.kv("level", static_cast<uint64_t>(b.begin.level));
  else w.kv_null("level");
  w.kv("dependent", dependent);
  w.end_object();
}

// The refusal of a backup others need, naming each of them.
Error needed_error(const std::vector<catalog::Backup>& backups, const engine::BackupDeletion& d) {
  std::string who;
  for (uint64_t id : d.dependents) {
    const catalog::Backup* b = find(backups, id);
    who += (who.empty() ? "" : ", ") + std::string("backup ") + std::to_string(id) +
           (b ? " (" + level_name(*b) + ")" : "");
  }
  return Error{Errc::invalid_argument, 0,
               "delete backup: backup " + std::to_string(d.id) + " is needed by " + who +
                   " (its chain of parents holds it); nothing was deleted: delete them too "
                   "with --with-dependents"};
}

}  // namespace

void add_delete_backup(CLI::App* del, CommonFlags& c, MediaFlags& f) {
  auto* backup = del->add_subcommand(
      "backup",
      "remove one backup's pieces from every medium it has pieces on, then the backup from "
      "the catalog; crash-safe as delete obsolete (a rerun, of either, finishes an "
      "interrupted deletion). Refused for a backup that is kept (stripeback keep) or locked, "
      "still running, or needed as a parent by a backup with a level");
  backup->add_option("ID", f.delete_id, "the backup's id (stripeback list)")->required();
  backup->add_flag("--dry-run", f.dry_run,
                   "say what would be removed (backups, pieces, bytes), remove nothing");
  backup->add_flag("--with-dependents", f.with_dependents,
                   "also delete the backups that need it (level 1s whose chain of parents "
                   "holds it, backups holding files by reference to it), listing them");
  add_common(backup, c);
  add_catalog_key_flags(backup, c);
}

int run_delete_backup(const CommonFlags& c, const MediaFlags& f) {
  auto cat = open_catalog(c, catalog::Create::no);
  if (!cat) return report(cat.error());
  // Planned and carried out under the maintenance lock, as delete obsolete is.
  auto lock = lock_for_deletion(**cat, !f.dry_run);
  if (!lock) return report(lock.error());
  const auto backups = (*cat)->backups();
  auto d = engine::plan_backup_deletion(
      backups, (*cat)->deleted_backups(), f.delete_id,
      f.with_dependents ? engine::Dependents::delete_too : engine::Dependents::refuse,
      util::wall_now_ns(), engine::may_still_run);
  if (!d) return report(d.error().wrap("delete backup"));
  if (!f.with_dependents && !d->dependents.empty()) return report(needed_error(backups, *d));
  const bool act = !f.dry_run;
  engine::DeleteOutcome outcome;
  if (act) {
    auto r = engine::carry_out(**cat, d->plan);
    if (!r) return report(r.error());
    outcome = std::move(*r);
  }
  const catalog::Backup* asked = find(backups, d->id);
  if (c.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("operation", "delete backup");
    w.kv("backup_id", d->id);
    w.kv("dry_run", f.dry_run);
    w.kv("interrupted", d->interrupted);
    w.begin_array("backups");
    for (uint64_t id : d->plan.backups)
      if (const catalog::Backup* b = find(backups, id)) backup_json(w, *b, id != d->id);
    w.end_array();
    w.begin_array("dependents");
    for (uint64_t id : d->dependents) w.value(id);
    w.end_array();
    if (act) w.kv("finished_earlier_deletions", static_cast<uint64_t>(outcome.finished.size()));
    deletion_json(w, d->plan, act, outcome);
    w.end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    const char* verb = act ? "deleted" : "would delete";
    for (const auto& p : outcome.finished)
      std::printf("finished an interrupted deletion of %zu backup(s) and %zu piece(s)\n",
                  p.backups.size(), p.pieces.size());
    if (d->interrupted && !act && asked)
      std::printf("%s is being deleted (an interrupted deletion): delete backup %llu or "
                  "delete obsolete without --dry-run finishes it\n",
                  describe(*asked).c_str(), static_cast<unsigned long long>(d->id));
    for (uint64_t id : d->plan.backups) {
      const catalog::Backup* b = find(backups, id);
      if (!b) continue;
      std::printf("%s: %s%s\n", verb, describe(*b).c_str(),
                  id == d->id ? "" : (", which needs backup " + std::to_string(d->id)).c_str());
    }
    for (const auto& p : d->plan.pieces)
      std::printf("%s: piece %s in %s (%s)\n", verb, util::escape_text(p.name).c_str(),
                  p.location.empty() ? "(removable medium: record only)"
                                     : util::escape_text(p.location).c_str(),
                  util::format_bytes(p.size).c_str());
    size_t earlier = 0;  // backups of interrupted deletions finished first
    for (const auto& p : outcome.finished) earlier += p.backups.size();
    if (act)
      std::printf("%zu backup(s) deleted%s, %llu piece(s) removed (%zu planned, %s)\n",
                  d->plan.backups.size() + earlier,
                  earlier ? (" (" + std::to_string(earlier) +
                             " by finishing an interrupted deletion)").c_str()
                          : "",
                  static_cast<unsigned long long>(outcome.pieces_removed), d->plan.pieces.size(),
                  util::format_bytes(d->plan.bytes()).c_str());
    else
      std::printf("%zu backup(s), %zu piece(s), %s would be deleted (dry run)\n",
                  d->plan.backups.size(), d->plan.pieces.size(),
                  util::format_bytes(d->plan.bytes()).c_str());
    for (const auto& e : outcome.errors) print_error(e);
  }
  if (act && !outcome.errors.empty()) {
    if (!c.json)
      print_error("the deletion is unfinished: its backups are listed 'deleting'; run "
                  "'stripeback delete backup " + std::to_string(d->id) +
                  "' (or delete obsolete) again once the media can be written");
    return kExitFailed;
  }
  return kExitOk;
}

void add_keep_flags(CLI::App* keep, CommonFlags& c, KeepFlags& f) {
  keep->add_option("ID", f.id, "the backup's id (stripeback list)")->required();
  auto* until = keep->add_option(
      "--until", f.until,
      "keep it until this time: ISO 8601 with a zone (2027-06-30T00:00:00Z, 2027-06-30 "
      "02:00:00+02:00) or seconds since the epoch; a time already past protects nothing");
  auto* forever = keep->add_flag("--forever", f.forever, "keep it until the keep is cleared");
  auto* clear = keep->add_flag(
      "--clear", f.clear, "end its keep: the retention policy may then make it obsolete");
  until->excludes(forever)->excludes(clear);
  forever->excludes(clear);
  add_common(keep, c);
  add_catalog_key_flags(keep, c);
}

int run_keep_cmd(const CommonFlags& c, const KeepFlags& f) {
  using Kind = catalog::Keep::Kind;
  const int given = (f.until.empty() ? 0 : 1) + (f.forever ? 1 : 0) + (f.clear ? 1 : 0);
  if (given != 1)
    return report(Error{Errc::invalid_argument, 0,
                        "keep: say how long: --until DATE, --forever, or --clear to end a keep"});
  int64_t until = 0;
  if (!f.until.empty()) {
    auto t = database::parse_target_time(f.until, "keep --until");
    if (!t) return report(t.error());
    until = *t;
  }
  auto cat = open_catalog(c, catalog::Create::no);
  if (!cat) return report(cat.error());
  const Kind kind = f.forever ? Kind::forever : f.clear ? Kind::cleared : Kind::until;
  auto r = engine::keep_backup(**cat, f.id, kind, until);
  if (!r) return report(r.error().wrap("keep"));
  const bool now_kept = kind == Kind::forever || (kind == Kind::until && until > util::wall_now_ns());
  if (c.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("operation", "keep");
    w.kv("backup_id", f.id);
    w.kv("recorded", r->recorded);
    if (kind == Kind::until) w.kv("keep_until", format_time(until));
    else if (kind == Kind::forever) w.kv("keep_until", "forever");
    else w.kv_null("keep_until");
    w.kv("kept", now_kept);
    w.begin_array("also_kept");
    for (uint64_t id : r->chain) w.value(id);
    w.end_array();
    w.end_object();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  const auto id = static_cast<unsigned long long>(f.id);
  if (kind == Kind::cleared) {
    std::printf(r->recorded ? "backup %llu is no longer kept\n" : "backup %llu was not kept\n", id);
    return kExitOk;
  }
  if (kind == Kind::forever) std::printf("backup %llu is kept forever\n", id);
  else if (now_kept) std::printf("backup %llu is kept until %s\n", id, format_time(until).c_str());
  else
    std::printf("backup %llu: keep until %s recorded, but that time has passed: it protects "
                "nothing\n", id, format_time(until).c_str());
  if (now_kept && !r->chain.empty()) {
    std::string ids;
    for (uint64_t x : r->chain) ids += (ids.empty() ? "" : ", ") + std::to_string(x);
    std::printf("kept with it, as it needs them: backup(s) %s\n", ids.c_str());
  }
  return kExitOk;
}

}  // namespace stripeback::cli
