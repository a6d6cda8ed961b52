#include "cli/media_commands.h"
#include "options/schema.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "cli/job_flags.h"
#include "cli/lifecycle_commands.h"
#include "cli/render.h"
#include "database/wal_archive.h"
#include "engine/wiring/backends.h"
#include "engine/media/crosscheck.h"
#include "engine/pieces/leftovers.h"
#include "engine/media/media_ops.h"
#include "engine/media/retention.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/json.h"
#include "util/units.h"

namespace stripeback::cli {
namespace {

// Checks a setting's value as the command that uses it would.
Result<std::string> check_setting(const std::string& key, const std::vector<std::string>& words) {
  std::string value;
  for (const auto& w : words) value += (value.empty() ? "" : " ") + w;
  if (value.empty()) return fail(Errc::invalid_argument, "configure " + key + ": no value given");
  if (key == "retention") {
    SB_ASSIGN(engine::RetentionPolicy p, engine::parse_policy(value));
    return p.str();
  }
  if (key == "channels") {
    if (value == "auto") return value;
    if (value.find_first_not_of("0123456789") != std::string::npos || value.size() > 3 ||
        std::stoul(value) < 1 || std::stoul(value) > 256)
      return fail(Errc::invalid_argument,
                  "configure channels: '" + value + "' is not 1 to 256 or auto");
    return value;
  }
  if (key == "compression") {
    static const std::set<std::string> named{"none", "low", "medium", "high", "auto"};
    const bool level = value.starts_with("zstd:") && value.size() > 5 &&
                       value.find_first_not_of("0123456789", 5) == std::string::npos;
    if (!named.count(value) && !level)
      return fail(Errc::invalid_argument, "configure compression: '" + value +
                                              "' is not none, low, medium, high, auto or zstd:N");
    return value;
  }
  if (key == "lock-days") {
    if (value.find_first_not_of("0123456789") != std::string::npos || value.size() > 5 ||
        std::stoul(value) < 1 || std::stoul(value) > 36500)
      return fail(Errc::invalid_argument, "configure lock-days: '" + value + "' is not 1 to 36500");
    return value;
  }
  if (key == "lock-mode") {
    if (value != "compliance" && value != "governance")
      return fail(Errc::invalid_argument,
                  "configure lock-mode: '" + value + "' is not compliance or governance");
    return value;
  }
  if (key == "resume-window") {
    SB_ASSIGN(double days, engine::parse_days(value, "configure resume-window"));
    (void)days;
    return value;
  }
  if (key == "archive-async") {
    if (value != "on" && value != "off")
      return fail(Errc::invalid_argument, "configure archive-async: '" + value + "' is not on or off");
    return value;
  }
  if (key == "archive-parallel") {
    if (value.find_first_not_of("0123456789") != std::string::npos || value.size() > 2 ||
        std::stoul(value) < 1 || std::stoul(value) > 64)
      return fail(Errc::invalid_argument, "configure archive-parallel: '" + value + "' is not 1 to 64");
    return value;
  }
  if (key == "key-file" || key == "passphrase-file" || key == "passphrase-env" ||
      key == "destination" || key == "archive-spool-path") {
    if (words.size() != 1)
      return fail(Errc::invalid_argument, "configure " + key + ": one value expected");
    return value;
  }
  return fail(Errc::invalid_argument, "configure: unknown setting '" + key +
                                          "' (known: retention, resume-window, channels, "
                                          "compression, key-file, passphrase-file, "
                                          "passphrase-env, destination, lock-days, lock-mode, "
                                          "archive-async, archive-spool-path, "
                                          "archive-parallel)");
}

// A recovery window shorter than the lock would make backups obsolete that no one can
// delete yet: refused, whichever of the two is set second.
Result<void> check_lock_fits_retention(const std::map<std::string, std::string>& now,
                                       const std::string& key, const std::string& value) {
  auto get = [&](const char* k) -> std::optional<std::string> {
    if (key == k) return value;
    auto it = now.find(k);
    if (it == now.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
  const auto days = get("lock-days"), retention = get("retention");
  if (!days || !retention) return ok();
  auto policy = engine::parse_policy(*retention);
  if (!policy || policy->kind != engine::RetentionPolicy::Kind::window) return ok();
  if (policy->window_days >= std::stod(*days)) return ok();
  return fail(Errc::invalid_argument,
              "configure " + key + ": the retention policy '" + policy->str() +
                  "' is shorter than the lock of " + *days +
                  " day(s): backups it makes obsolete could not be deleted until their lock "
                  "ends (make the recovery window at least " + *days +
                  " days, or the lock shorter)");
}

// Opens the catalog for a command that only reads it: a catalog that does not exist yet
// holds nothing (exit 0 with an empty result), which `missing` reports.
Result<std::unique_ptr<catalog::Catalog>> open_existing(const CommonFlags& c, bool* missing) {
  auto cat = open_catalog(c, catalog::Create::no);
  *missing = !cat && cat.error().code == Errc::not_found;
  return cat;
}

// What a reading command says of a catalog not made yet: no backups (exit 0), or with
// --json the empty document `json`.
int no_catalog(const CommonFlags& c, const char* json) {
  if (c.json) std::printf("%s\n", json);
  else std::printf("(no backups: the catalog %s does not exist yet)\n",
                   util::escape_text(catalog_dir_of(c)).c_str());
  return kExitOk;
}

}  // namespace

int run_configure_cmd(const CommonFlags& c, const MediaFlags& f) {
  const bool change = !f.setting.empty() || !f.clear.empty();
  bool missing = false;
  auto cat = change ? open_catalog(c, catalog::Create::yes) : open_existing(c, &missing);
  if (!cat && !missing) return report(cat.error());
  if (!f.setting.empty()) {
    const std::string key = f.setting.front();
    auto value = check_setting(key, {f.setting.begin() + 1, f.setting.end()});
    if (!value) return report(value.error());
    std::map<std::string, std::string> before;
    if (cat)
      for (const auto& s : (*cat)->settings()) before[s.key] = s.value;
    if (auto r = check_lock_fits_retention(before, key, *value); !r) return report(r.error());
    if (key == "key-file" || key == "passphrase-file") {
      // The path is stored, never what it holds.
    }
    if (auto r = (*cat)->set_setting(key, *value); !r) return report(r.error());
  }
  for (const auto& key : f.clear) {
    if (std::find(setting_keys().begin(), setting_keys().end(), key) == setting_keys().end())
      return report(Error{Errc::invalid_argument, 0, "configure --clear: unknown setting '" + key + "'"});
    if (auto r = (*cat)->set_setting(key, ""); !r) return report(r.error());
  }
  std::map<std::string, std::string> now;
  if (cat)
    for (const auto& s : (*cat)->settings()) now[s.key] = s.value;
  if (c.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("catalog", catalog_dir_of(c));
    w.begin_object("settings");
    for (const auto& key : setting_keys()) {
      auto it = now.find(key);
      if (it == now.end()) w.kv_null(key);
      else w.kv(key, it->second);
    }
    w.end_object();
    w.end_object();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  if (change && !f.show) {
    if (!f.setting.empty())
      std::printf("%s = %s\n", f.setting.front().c_str(),
                  util::escape_text(now[f.setting.front()]).c_str());
    for (const auto& key : f.clear) std::printf("%s cleared\n", key.c_str());
    return kExitOk;
  }
  for (const auto& key : setting_keys()) {
    auto it = now.find(key);
    std::printf("%-16s %s\n", key.c_str(),
                it == now.end() ? "(not set)" : util::escape_text(it->second).c_str());
  }
  return kExitOk;
}

namespace {

void piece_json(util::JsonWriter& w, const catalog::DeletedPiece& p) {
  w.begin_object();
  w.kv("backup_id", p.backup_id);
  w.kv("name", p.name);
  w.kv("location", p.location);
  w.kv("bytes", p.size);
  w.end_object();
}

}  // namespace

int run_crosscheck_cmd(const CommonFlags& c, const MediaFlags& f) {
  bool missing = false;
  auto cat = open_existing(c, &missing);
  if (missing) return no_catalog(c, "{\"operation\":\"crosscheck\",\"backups\":[],\"pieces\":[]}");
  if (!cat) return report(cat.error());
  engine::CrosscheckOptions o;
  o.backup_id = f.backup;
  if (!f.tag.empty()) o.tag = f.tag;
  o.deep = f.deep;
  o.media_drives = f.tape_drives;
  auto sum = engine::run_crosscheck(**cat, o);
  if (!sum) return report(sum.error());
  uint64_t expired = 0;
  for (const auto& p : sum->pieces) expired += p.expired;
  if (c.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("operation", "crosscheck");
    w.kv("deep", f.deep);
    w.kv("bytes_read", sum->bytes_read);
    w.kv("elapsed_s", sum->elapsed_s);
    w.begin_array("backups");
    for (uint64_t id : sum->backups) {
      w.begin_object();
      w.kv("backup_id", id);
      const bool exp = std::count(sum->expired_backups.begin(), sum->expired_backups.end(), id);
      w.kv("status", exp ? "expired" : "available");
      std::set<std::string> damaged;
      for (const auto& p : sum->pieces)
        if (p.backup_id == id) damaged.insert(p.damaged_files.begin(), p.damaged_files.end());
      w.begin_array("damaged_files");
      for (const auto& d : damaged) w.value(d);
      w.end_array();
      w.end_object();
    }
    w.end_array();
    w.begin_array("pieces");
    for (const auto& p : sum->pieces) {
      w.begin_object();
      w.kv("backup_id", p.backup_id);
      w.kv("name", p.piece);
      w.kv("location", p.location);
      w.kv("bytes", p.size);
      w.kv("status", p.expired ? "expired" : p.damaged ? "damaged" : "available");
      if (p.expired) w.kv("reason", p.reason);
      if (p.damaged) {
        w.kv("damage", p.damage);
        w.begin_array("damaged_files");
        for (const auto& d : p.damaged_files) w.value(d);
        w.end_array();
      }
      w.end_object();
    }
    w.end_array();
    w.end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    for (const auto& p : sum->pieces) {
      if (p.expired)
        std::printf("expired: piece %s of backup %llu: %s\n", util::escape_text(p.piece).c_str(),
                    static_cast<unsigned long long>(p.backup_id),
                    util::escape_text(p.reason).c_str());
      if (!p.damaged) continue;
      std::printf("damaged: piece %s of backup %llu: %s\n", util::escape_text(p.piece).c_str(),
                  static_cast<unsigned long long>(p.backup_id), util::escape_text(p.damage).c_str());
      for (const auto& d : p.damaged_files)
        std::printf("  will not restore from it: %s\n", util::escape_text(d).c_str());
    }
    if (!sum->damaged_backups.empty())
      std::printf("%zu backup(s) hold damaged frames: they stay available, and every file "
                  "not named above restores\n", sum->damaged_backups.size());
    std::printf("crosschecked %zu piece(s) of %zu backup(s)%s: %zu available, %llu expired; "
                "%zu backup(s) expired (%s read, %.2f s)\n",
                sum->pieces.size(), sum->backups.size(), f.deep ? " (deep)" : "",
                sum->pieces.size() - expired, static_cast<unsigned long long>(expired),
                sum->expired_backups.size(), util::format_bytes(sum->bytes_read).c_str(),
                sum->elapsed_s);
  }
  return kExitOk;
}

// What a deletion removes (or would): its pieces and bytes, and once carried out whether it
// finished and why not.
void deletion_json(util::JsonWriter& w, const engine::DeletePlan& plan, bool act,
                   const engine::DeleteOutcome& outcome) {
  w.begin_array("pieces");
  for (const auto& p : plan.pieces) piece_json(w, p);
  w.end_array();
  w.kv("bytes", plan.bytes());
  if (!act) return;
  w.kv("pieces_removed", outcome.pieces_removed);  // of `pieces`, those that were there
  w.kv("complete", outcome.errors.empty());
  w.begin_array("errors");
  for (const auto& e : outcome.errors) w.value(e);
  w.end_array();
}

Result<std::optional<engine::MaintenanceLock>> lock_for_deletion(catalog::Catalog& cat, bool take) {
  std::optional<engine::MaintenanceLock> lock;
  if (!take) return lock;
  SB_ASSIGN(auto l, engine::MaintenanceLock::acquire(cat));
  lock.emplace(std::move(l));
  SB_TRY(cat.refresh());
  return lock;
}

namespace {

// A backup's lock: locked_until and lock_mode (null when it was never locked).
void lock_json(util::JsonWriter& w, const catalog::Backup& b) {
  if (!b.lock) {
    w.kv_null("locked_until");
    w.kv_null("lock_mode");
    return;
  }
  w.kv("locked_until", format_time(b.lock->until_ns));
  w.kv("lock_mode", storage::retention_mode_name(b.lock->mode));
}

// The backups a deletion keeps because their pieces are locked.
void locked_json(util::JsonWriter& w, const engine::DeletePlan& plan) {
  w.begin_array("locked");
  for (const auto& l : plan.locked) {
    w.begin_object();
    w.kv("backup_id", l.id);
    w.kv("locked_until", format_time(l.lock.until_ns));
    w.kv("lock_mode", storage::retention_mode_name(l.lock.mode));
    w.end_object();
  }
  w.end_array();
}

void print_locked(const engine::DeletePlan& plan) {
  for (const auto& l : plan.locked)
    std::printf("backup %llu is locked until %s (%s): it and its pieces stay\n",
                static_cast<unsigned long long>(l.id), format_time(l.lock.until_ns).c_str(),
                storage::retention_mode_name(l.lock.mode));
}

Result<engine::RetentionPolicy> policy_of(const catalog::Catalog& cat) {
  auto text = cat.setting("retention");
  if (!text) return engine::RetentionPolicy{};
  return engine::parse_policy(*text);
}

int run_obsolete(const CommonFlags& c, const MediaFlags& f, bool remove) {
  bool missing = false;
  auto cat = open_existing(c, &missing);
  if (missing) return no_catalog(c, "{\"backups\":[],\"pieces\":[],\"bytes\":0}");
  if (!cat) return report(cat.error());
  auto lock = lock_for_deletion(**cat, remove && !f.dry_run);
  if (!lock) return report(lock.error());
  auto policy = policy_of(**cat);
  if (!policy) return report(policy.error());
  double resume_days = engine::kDefaultResumeWindowDays;
  if (auto w = (*cat)->setting("resume-window")) {
    auto d = engine::parse_days(*w, "resume-window");
    if (!d) return report(d.error());
    resume_days = *d;
  }
  const auto backups = (*cat)->backups();
  const auto obsolete = engine::find_obsolete(backups, *policy, util::wall_now_ns(),
                                              engine::may_still_run, resume_days);
  std::vector<uint64_t> ids;
  for (const auto& o : obsolete) ids.push_back(o.id);
  engine::DeletePlan plan =
      engine::plan_deletion(backups, ids, "obsolete", true, util::wall_now_ns());
  engine::DeleteOutcome outcome;
  const bool act = remove && !f.dry_run;
  if (act) {
    auto r = engine::carry_out(**cat, plan);
    if (!r) return report(r.error());
    outcome = std::move(*r);
  }
  // The log archive keeps what the backups that stay need (docs/postgresql.md).
  std::vector<catalog::Backup> kept;
  for (const auto& b : backups)
    if (b.usable() && std::find(plan.backups.begin(), plan.backups.end(), b.id) == plan.backups.end())
      kept.push_back(b);
  const auto wal = database::obsolete_wal(kept, (*cat)->wal_files());
  if (act) {
    auto errors = database::remove_wal(**cat, wal);
    outcome.errors.insert(outcome.errors.end(), errors.begin(), errors.end());
  }
  const char* verb = !remove ? "obsolete" : act ? "deleted" : "would delete";
  if (c.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("operation", !remove ? "report obsolete" : "delete obsolete");
    w.kv("policy", policy->str());
    w.kv("dry_run", remove && f.dry_run);
    w.begin_array("backups");
    for (const auto& o : obsolete) {
      w.begin_object();
      w.kv("backup_id", o.id);
      auto b = std::find_if(backups.begin(), backups.end(), [&](const auto& x) { return x.id == o.id; });
      w.kv("tag", b->begin.tag);
      w.kv("status", b->status_name());
      w.kv("start_time", format_time(b->begin.start_time_ns));
      w.kv("reason", o.reason);
      lock_json(w, *b);
      w.end_object();
    }
    w.end_array();
    locked_json(w, plan);
    if (act) w.kv("finished_earlier_deletions", static_cast<uint64_t>(outcome.finished.size()));
    deletion_json(w, plan, act, outcome);
    w.begin_array("wal_files");
    for (const auto& x : wal) w.value(x.name);
    w.end_array();
    w.end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("retention policy: %s\n", policy->str().c_str());
    for (const auto& x : wal)
      std::printf("%s: archived WAL file %s\n", verb, util::escape_text(x.name).c_str());
    for (const auto& p : outcome.finished)
      std::printf("finished an interrupted deletion of %zu backup(s) and %zu piece(s)\n",
                  p.backups.size(), p.pieces.size());
    for (const auto& o : obsolete) {
      auto b = std::find_if(backups.begin(), backups.end(), [&](const auto& x) { return x.id == o.id; });
      const bool locked = std::any_of(plan.locked.begin(), plan.locked.end(),
                                      [&](const auto& l) { return l.id == o.id; });
      std::printf("%s: backup %llu (%s, %s, %s): %s\n",
                  locked ? (remove ? "kept, locked" : "obsolete, locked") : verb,
                  static_cast<unsigned long long>(o.id),
                  b->begin.tag.empty() ? "-" : util::escape_text(b->begin.tag).c_str(),
                  format_time(b->begin.start_time_ns).c_str(), b->status_name().c_str(),
                  o.reason.c_str());
    }
    std::set<uint64_t> listed(ids.begin(), ids.end());
    for (const auto& p : plan.pieces)
      if (!listed.count(p.backup_id) || !p.backup_id)
        std::printf("%s: orphan piece %s in %s (%s)\n", verb, util::escape_text(p.name).c_str(),
                    util::escape_text(p.location).c_str(), util::format_bytes(p.size).c_str());
    print_locked(plan);
    size_t earlier = 0;  // backups of interrupted deletions finished first
    for (const auto& p : outcome.finished) earlier += p.backups.size();
    if (act)
      std::printf("%zu backup(s) deleted%s, %llu piece(s) removed (%zu planned, %s)\n",
                  plan.backups.size() + earlier,
                  earlier ? (" (" + std::to_string(earlier) +
                             " by finishing an interrupted deletion)").c_str()
                          : "",
                  static_cast<unsigned long long>(outcome.pieces_removed), plan.pieces.size(),
                  util::format_bytes(plan.bytes()).c_str());
    else
      std::printf("%zu backup(s), %zu piece(s), %s %s\n", plan.backups.size(), plan.pieces.size(),
                  util::format_bytes(plan.bytes()).c_str(),
                  !remove ? "obsolete" : "would be deleted (dry run)");
    for (const auto& e : outcome.errors) print_error(e);
  }
  if (act && !outcome.errors.empty()) {
    if (!c.json)
      print_error("the deletion is unfinished: its backups are listed 'deleting'; run "
                  "'stripeback delete obsolete' again once the media can be written");
    return kExitFailed;
  }
  return kExitOk;
}

int run_delete_expired(const CommonFlags& c, const MediaFlags& f) {
  bool missing = false;
  auto cat = open_existing(c, &missing);
  if (missing) return no_catalog(c, "{\"backups\":[],\"pieces\":[],\"bytes\":0}");
  if (!cat) return report(cat.error());
  auto lock = lock_for_deletion(**cat, !f.dry_run);
  if (!lock) return report(lock.error());
  const auto backups = (*cat)->backups();
  std::vector<uint64_t> ids, kept;
  // A kept backup stays (stripeback keep): its pieces may come back (a medium offline).
  for (const auto& b : backups)
    if (b.expired() && !b.deleting) (b.kept_at(util::wall_now_ns()) ? kept : ids).push_back(b.id);
  // The pieces still there go too: a backup missing one piece cannot restore what it held.
  engine::DeletePlan plan =
      engine::plan_deletion(backups, ids, "expired", false, util::wall_now_ns());
  engine::DeleteOutcome outcome;
  const bool act = !f.dry_run;
  if (act) {
    auto r = engine::carry_out(**cat, plan);
    if (!r) return report(r.error());
    outcome = std::move(*r);
  }
  if (c.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("operation", "delete expired");
    w.kv("dry_run", f.dry_run);
    w.begin_array("backups");
    for (uint64_t id : plan.backups) {
      w.begin_object();
      w.kv("backup_id", id);
      w.end_object();
    }
    w.end_array();
    locked_json(w, plan);
    w.begin_array("kept");
    for (uint64_t id : kept) w.value(id);
    w.end_array();
    deletion_json(w, plan, act, outcome);
    w.end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    for (uint64_t id : plan.backups)
      std::printf("%s: expired backup %llu\n", act ? "deleted" : "would delete",
                  static_cast<unsigned long long>(id));
    for (uint64_t id : kept)
      std::printf("kept: expired backup %llu is kept (stripeback keep): it and its records "
                  "stay\n", static_cast<unsigned long long>(id));
    print_locked(plan);
    if (act)
      std::printf("%zu expired backup(s) deleted, %llu remaining piece(s) removed\n",
                  plan.backups.size(), static_cast<unsigned long long>(outcome.pieces_removed));
    else
      std::printf("%zu expired backup(s), up to %zu remaining piece(s) would be deleted (dry "
                  "run)\n", plan.backups.size(), plan.pieces.size());
    for (const auto& e : outcome.errors) print_error(e);
  }
  return act && !outcome.errors.empty() ? kExitFailed : kExitOk;
}

}  // namespace

const std::vector<std::string>& setting_keys() {
  static const std::vector<std::string> keys{
      "retention",       "resume-window",  "channels",   "compression", "key-file",
      "passphrase-file", "passphrase-env", "destination", "lock-days", "lock-mode",
      "archive-async",   "archive-spool-path", "archive-parallel"};
  return keys;
}

Result<void> apply_settings(const CommonFlags& c, options::Settings& job, bool backup) {
  // Quietly: the command opens the catalog itself and reports what is wrong with it.
  const std::string dir = catalog_dir_of(c);
  auto st = engine::storage_for(storage::Location::local(dir));
  if (dir.empty() || !st) return ok();
  auto cat = catalog::Catalog::open(dir, catalog::Create::no, **st);
  if (!cat) return ok();
  std::map<std::string, std::string> set;
  for (const auto& s : (*cat)->settings()) set[s.key] = s.value;
  // A setting goes through the option schema's checks, as the flag it stands for would.
  auto take = [&](const char* setting, const char* key) -> Result<void> {
    if (!set.count(setting) || job.was_given(key)) return ok();
    if (auto v = check_setting(setting, {set[setting]}); !v) return v.error();
    auto r = options::set_option(*options::find_option(key), job, set[setting]);
    if (!r) return r.error().wrap("setting '" + std::string(setting) + "' of the catalog");
    return ok();
  };
  if (job.keys.empty() && (!backup || job.encrypt)) {
    if (set.count("key-file")) job.keys.key_file = set["key-file"];
    else if (set.count("passphrase-file")) job.keys.passphrase_file = set["passphrase-file"];
    else if (set.count("passphrase-env")) job.keys.passphrase_env = set["passphrase-env"];
  }
  SB_TRY(take("channels", "channels"));
  if (backup) {
    SB_TRY(take("compression", "compress"));
    SB_TRY(take("lock-days", "lock_days"));
    if (job.lock_days) SB_TRY(take("lock-mode", "lock_mode"));
    if (set.count("destination") && job.destinations.empty() && !job.validate)
      job.destinations = {set["destination"]};
  }
  return ok();
}

void add_configure_flags(CLI::App* configure, CommonFlags& c, MediaFlags& f) {
  configure->add_option("SETTING", f.setting, "the setting's name, then its value");
  configure->add_flag("--show", f.show, "print every setting");
  configure->add_option("--clear", f.clear, "remove a setting (back to the built-in default)");
  add_common(configure, c);
  add_catalog_key_flags(configure, c);
}

void add_crosscheck_flags(CLI::App* crosscheck, CommonFlags& c, MediaFlags& f) {
  auto* id = crosscheck->add_option("--backup", f.backup, "only this backup");
  crosscheck->add_option("--tag", f.tag, "only the backups with this tag")->excludes(id);
  crosscheck->add_flag("--deep", f.deep,
                       "read every piece whole: every frame's checksums and the piece's");
  crosscheck->add_option("--tape-drive", f.tape_drives,
                         "look for tape volumes in these drives (by their labels)")
      ->allow_extra_args(false);
  add_common(crosscheck, c);
  add_catalog_key_flags(crosscheck, c);
}

void add_report_obsolete(CLI::App* report, CommonFlags& c) {
  auto* obsolete = report->add_subcommand(
      "obsolete",
      "list the backups and pieces the retention policy ('configure retention') no longer "
      "needs, failed backups, and pieces of killed backups (docs/media-management.md)");
  add_common(obsolete, c);
  add_catalog_key_flags(obsolete, c);
}

void add_delete_commands(CLI::App* del, CommonFlags& c, MediaFlags& f) {
  del->require_subcommand(1);
  auto* obsolete = del->add_subcommand(
      "obsolete",
      "remove what 'report obsolete' lists from every medium, then from the catalog; "
      "crash-safe: a rerun finishes an interrupted deletion");
  obsolete->add_flag("--dry-run", f.dry_run, "say what would be removed, remove nothing");
  add_common(obsolete, c);
  add_catalog_key_flags(obsolete, c);
  auto* expired = del->add_subcommand(
      "expired", "remove the records (and any remaining pieces) of backups crosscheck expired");
  expired->add_flag("--dry-run", f.dry_run, "say what would be removed, remove nothing");
  add_common(expired, c);
  add_catalog_key_flags(expired, c);
  add_delete_backup(del, c, f);
}

int run_report_obsolete_cmd(const CommonFlags& c, const MediaFlags& f) {
  return run_obsolete(c, f, false);
}

int run_delete_cmd(const CLI::App& del, const CommonFlags& c, const MediaFlags& f) {
  for (const auto* sub : del.get_subcommands()) {
    if (sub->get_name() == "obsolete") return run_obsolete(c, f, true);
    if (sub->get_name() == "expired") return run_delete_expired(c, f);
    if (sub->get_name() == "backup") return run_delete_backup(c, f);
  }
  return kExitUsage;
}

}  // namespace stripeback::cli
