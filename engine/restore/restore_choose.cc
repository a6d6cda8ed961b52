#include "engine/restore/restore_phases.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/pieces/target_paths.h"
#include "storage/registry.h"
#include "util/option_words.h"

namespace stripeback::engine {
namespace {

using util::Next;

// Whether `path` is `filter` or below it.
bool under(const std::string& path, const std::string& filter) {
  if (filter == "/") return true;
  return path == filter ||
         (path.size() > filter.size() && path.compare(0, filter.size(), filter) == 0 &&
          path[filter.size()] == '/');
}

// Why backup `b` is passed over for the files it holds: its expired pieces.
std::string expired_why(const catalog::Backup& b) {
  for (const auto& p : b.pieces)
    if (p.expired) return "piece '" + p.name + "' is expired: " + p.expired_reason;
  return "it is " + b.status_name();
}

// The backups files are taken from, newest first, and those passed over because
// crosscheck found them expired, newest first.
struct Candidates {
  std::vector<const catalog::Backup*> usable;
  std::vector<const catalog::Backup*> expired;
};

// The backup RestoreOptions::backup_id names, when it can be restored from.
Result<Candidates> named_backup(const RestoreOptions& opts,
                                const std::vector<catalog::Backup>& backups) {
  auto it = std::find_if(backups.begin(), backups.end(),
                         [&](const catalog::Backup& b) { return b.id == *opts.backup_id; });
  if (it == backups.end())
    return fail(Errc::not_found, "backup " + std::to_string(*opts.backup_id) +
                                     " is not in the catalog");
  if (it->damaged())
    return fail(Errc::corrupt, "backup " + std::to_string(it->id) + " is damaged (" +
                                   it->damage + "): nothing was restored");
  if (!it->usable())
    return fail(Errc::invalid_argument,
                "backup " + std::to_string(*opts.backup_id) + " is " + it->status_name() +
                    ", not restorable" +
                    (it->expired() ? " (" + expired_why(*it) + ")" : std::string()));
  return Candidates{{&*it}, {}};
}

// Every usable backup, newest first; with a tag, its newest backup, or with paths every
// backup with the tag.
Result<Candidates> newest_backups(const RestoreOptions& opts,
                                  const std::vector<catalog::Backup>& backups) {
  Candidates c;
  // A damaged backup may have held the newest copy of any file (its file records are what
  // is lost): restoring around it would quietly bring back older data.
  std::vector<const catalog::Backup*> damaged;
  // A tag names its newest backup; files named by PATH are searched in every backup with
  // the tag, newest first.
  const bool every_tagged = opts.tag && !opts.paths.empty();
  for (auto it = backups.rbegin(); it != backups.rend(); ++it) {
    if (opts.tag && it->begin.tag != *opts.tag) continue;
    if (it->damaged()) damaged.push_back(&*it);
    if (it->expired() && it->ended && !it->deleting) c.expired.push_back(&*it);
    if (!it->usable()) continue;
    c.usable.push_back(&*it);
    if (opts.tag && !every_tagged) break;  // the newest complete backup with that tag
  }
  if (!damaged.empty()) {
    std::string ids;
    for (const auto* b : damaged) ids += (ids.empty() ? "" : ", ") + std::to_string(b->id);
    return fail(Errc::corrupt,
                "backup " + ids + (damaged.size() > 1 ? " are" : " is") + " damaged (backup " +
                    std::to_string(damaged.front()->id) + ": " + damaged.front()->damage +
                    "), so the newest copy of a file may be lost; nothing was restored. "
                    "Name a backup to use with " + util::option_value_word("backup_id", "ID") + " (see " +
                    util::command_word("list") + ")");
  }
  if (c.usable.empty()) {
    std::string also;
    if (!c.expired.empty())
      also = " (backup " + std::to_string(c.expired.front()->id) + " is expired: " +
             expired_why(*c.expired.front()) + ")";
    return fail(Errc::not_found, (opts.tag ? "no complete backup with tag '" + *opts.tag + "'"
                                           : std::string("no complete backup in the catalog")) +
                                     also);
  }
  return c;
}

// The newest copy in `usable` of each file under one of `filters` (all without), except
// the copies RestoreOptions::skip passes over; matched[i]: filters[i] matched a file.
std::vector<Choice> newest_copies(const RestoreOptions& opts,
                                  const std::vector<const catalog::Backup*>& usable,
                                  const std::vector<std::string>& filters,
                                  std::vector<bool>& matched) {
  std::set<std::string> taken;
  std::vector<Choice> out;
  auto skipped = [&](const std::string& path, uint64_t id) {
    auto it = opts.skip.find(path);
    return it != opts.skip.end() && it->second.count(id) != 0;
  };
  for (const catalog::Backup* b : usable) {
    for (const auto& f : b->files) {
      bool want = filters.empty();
      for (size_t i = 0; i < filters.size(); ++i)
        if (under(f.path, filters[i])) want = matched[i] = true;
      if (!want || skipped(f.path, b->id) || !taken.insert(f.path).second) continue;
      out.push_back({b, &f});
    }
  }
  return out;
}

// Files whose newest copy is in an expired backup: restored from the next newest copy
// (said so in `fallbacks`), or not at all with --no-fallback.
Result<void> pass_over_expired(const RestoreOptions& opts,
                               const std::vector<const catalog::Backup*>& expired,
                               std::vector<Choice>& out, std::vector<Fallback>& fallbacks) {
  std::map<std::string, const catalog::Backup*> newest_expired;
  for (const catalog::Backup* e : expired)
    for (const auto& f : e->files) {
      auto [it, fresh] = newest_expired.emplace(f.path, e);
      if (!fresh && it->second->id < e->id) it->second = e;
    }
  if (newest_expired.empty()) return ok();
  std::vector<Choice> kept;
  for (const Choice& c : out) {
    auto it = newest_expired.find(c.file->path);
    if (it == newest_expired.end() || it->second->id < c.backup->id) {
      kept.push_back(c);
      continue;
    }
    if (!opts.fallback)
      return fail(Errc::not_found, "the newest copy of '" + c.file->path + "' is in backup " +
                                       std::to_string(it->second->id) + ", which is expired (" +
                                       expired_why(*it->second) +
                                       "); not restoring an older copy (" + util::option_word("no_fallback") + ")");
    if (!S_ISDIR(c.file->mode))
      fallbacks.push_back({c.file->path, it->second->id, c.backup->id,
                           "backup " + std::to_string(it->second->id) + " is expired (" +
                               expired_why(*it->second) + ")"});
    kept.push_back(c);
  }
  out = std::move(kept);
  return ok();
}

// The files to restore, each with the backup it comes from: from a named backup, or the
// newest copy of each (fallbacks: the files whose newest copy is expired).
Result<std::vector<Choice>> select_files(const RestoreOptions& opts,
                                         const std::vector<catalog::Backup>& backups,
                                         std::vector<Fallback>& fallbacks) {
  SB_ASSIGN(Candidates candidates,
            opts.backup_id ? named_backup(opts, backups) : newest_backups(opts, backups));
  std::vector<std::string> filters;
  for (const auto& p : opts.paths) filters.push_back(storage::normal_path(p));
  std::vector<bool> matched(filters.size(), false);
  std::vector<Choice> out = newest_copies(opts, candidates.usable, filters, matched);
  SB_TRY(pass_over_expired(opts, candidates.expired, out, fallbacks));
  for (size_t i = 0; i < filters.size(); ++i)
    if (!matched[i])
      return fail(Errc::not_found,
                  "no backed-up file matches '" + opts.paths[i] + "'" +
                      (opts.tag ? " in the backups with tag '" + *opts.tag + "'" : std::string()));
  return out;
}

// Where `original` is restored below the target (remapped), relative to it ("a/b/c").
std::string relative_below(const std::string& original, const std::vector<PathRemap>& remaps) {
  auto comps = target_components(original, remaps);
  if (!comps) return restore_relative(original).substr(1);
  std::string rel;
  for (const auto& c : *comps) rel += (rel.empty() ? "" : "/") + c;
  return rel;
}

}  // namespace

// Phase: the options, before anything is read. The job's time counts from here.
Result<Next> check_options(RestoreJob& job) {
  const RestoreOptions& opts = job.opts;
  if (opts.channels < 1 || opts.channels > 256)
    return fail(Errc::invalid_argument, util::option_word("channels") + " must be between 1 and 256");
  if (opts.target.empty() && !opts.verify_only)
    return fail(Errc::invalid_argument, "no restore target given (" + util::option_word("target") + ")");
  if (opts.delta && opts.verify_only)
    return fail(Errc::invalid_argument, util::option_word("delta") + " updates a restore target; " +
                                            util::command_word("validate") + " has none");
  if (opts.select.partial() && !opts.verify_only)
    return fail(Errc::invalid_argument, util::option_word("sample") + ", " + util::option_word("part") + " and " +
                                            util::option_word("max_duration") + " are for validations");
  SB_TRY(check_remaps(opts.remaps));
  job.start = std::chrono::steady_clock::now();
  job.start_ns = wall_ns();
  return Next::go_on;
}

// Phase: the files to restore and the backup each comes from (select_files).
Result<Next> choose_backups(RestoreJob& job) {
  job.backups = job.cat.backups();
  for (const auto& b : job.backups) job.by_id[b.id] = &b;
  SB_ASSIGN(job.choices, select_files(job.opts, job.backups, job.sum.fallbacks));
  return Next::go_on;
}

// Phase (restore): every destination is checked before anything is written: the target is
// usable, no path could escape it, and no file exists there unless forced or updated in
// place.
Result<Next> check_target(RestoreJob& job) {
  const RestoreOptions& opts = job.opts;
  std::string target = storage::normal_path(opts.target);
  auto pl = place_of(target);
  if (!pl) return fail(Errc::invalid_argument, "restore target is not usable: " + pl.error().what);
  job.target_place = std::move(*pl);
  const Place& place = *job.target_place;
  if (opts.delta && !place.storage->caps().random_write)
    return fail(Errc::unsupported, util::command_word("delta-restore") + " updates files in place, which " +
                                       std::string(place.storage->scheme()) +
                                       " targets cannot ('" + target + "')");
  // Files are restored as temporaries written at any offset (zero ranges are skipped) and
  // renamed into place: a medium that takes its bytes in order or cannot rename is refused
  // before anything is written.
  if (const auto& caps = place.storage->caps(); !caps.random_write || !caps.rename)
    return fail(Errc::unsupported,
                "restore writes files at any offset and renames them into place, which " +
                    std::string(place.storage->scheme()) + " targets cannot ('" + target + "')");
  std::vector<std::string> existing;
  for (const auto& c : job.choices) SB_TRY(safe_components(c.file->path));
  std::vector<Landing> landings;
  for (const auto& c : job.choices) landings.push_back({c.file->path, S_ISDIR(c.file->mode) != 0});
  SB_TRY(check_landings(landings, opts.remaps));
  for (const auto& c : job.choices) {
    if (S_ISDIR(c.file->mode)) {
      job.dirs.push_back(c.file);
      continue;
    }
    if (opts.force || opts.delta) continue;
    storage::Location dest = place.at.join(relative_below(c.file->path, opts.remaps));
    if (place.storage->stat(dest, /*follow=*/false)) existing.push_back(dest.str());
  }
  if (!existing.empty()) {
    std::string msg = "refusing to overwrite " + std::to_string(existing.size()) +
                      " existing file(s), e.g. '" + existing.front() +
                      "' (" + util::ask_option("force") + " to replace them)";
    return fail(Errc::exists, msg);
  }
  return Next::go_on;
}

// Phase (validate): nothing is written, but a path that could escape a target is refused
// as a restore refuses it.
Result<Next> check_paths(RestoreJob& job) {
  for (const auto& c : job.choices) SB_TRY(safe_components(c.file->path));
  return Next::go_on;
}

}  // namespace stripeback::engine
