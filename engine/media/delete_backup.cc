#include "engine/media/delete_backup.h"

#include <algorithm>
#include <map>
#include <set>

#include "util/clock.h"

namespace stripeback::engine {
namespace {

std::string name_of(uint64_t id) { return "backup " + std::to_string(id); }

// Why `b` may not be deleted at `now_ns`, or empty.
std::string blocked(const catalog::Backup& b, int64_t now_ns,
                    const std::function<bool(const catalog::Backup&)>& running) {
  if (!b.ended && running(b))
    return name_of(b.id) + " is still running (process " + std::to_string(b.begin.pid) +
           " on " + (b.begin.host.empty() ? "an unknown host" : b.begin.host) + ")";
  if (b.kept_at(now_ns))
    return b.keep->kind == catalog::Keep::Kind::forever
               ? name_of(b.id) + " is kept forever (clear its keep first)"
               : name_of(b.id) + " is kept until " + util::format_time_ns(b.keep->until_ns);
  if (b.locked_at(now_ns))
    return name_of(b.id) + " is locked until " + util::format_time_ns(b.lock->until_ns) + " (" +
           storage::retention_mode_name(b.lock->mode) + " mode): its pieces cannot be removed "
           "before";
  return "";
}

}  // namespace

Result<BackupDeletion> plan_backup_deletion(
    const std::vector<catalog::Backup>& backups, const std::vector<uint64_t>& deleted,
    uint64_t id, Dependents dependents, int64_t now_ns,
    const std::function<bool(const catalog::Backup&)>& running) {
  BackupDeletion out;
  out.id = id;
  out.plan.reason = "requested";
  if (std::find(deleted.begin(), deleted.end(), id) != deleted.end())
    return fail(Errc::not_found, name_of(id) + " has already been deleted");
  std::map<uint64_t, const catalog::Backup*> by_id;
  for (const auto& b : backups) by_id[b.id] = &b;
  auto it = by_id.find(id);
  if (it == by_id.end()) return fail(Errc::not_found, name_of(id) + " is not in the catalog");
  if (it->second->deleting) {
    out.interrupted = true;
    return out;
  }
  // Who needs it: every backup whose chain holds it (keep.h chain_of, walked the other
  // way), other than those being deleted.
  std::map<uint64_t, std::set<uint64_t>> needed_by;
  for (const auto& b : backups)
    for (const auto& f : b.files)
      for (uint64_t dep : {f.parent, f.held_by})
        if (dep && dep != b.id) needed_by[dep].insert(b.id);
  std::set<uint64_t> found;
  std::vector<uint64_t> unvisited{id};
  while (!unvisited.empty()) {
    const uint64_t x = unvisited.back();
    unvisited.pop_back();
    for (uint64_t user : needed_by[x])
      if (user != id && found.insert(user).second) unvisited.push_back(user);
  }
  for (uint64_t x : found)
    if (by_id.count(x) && !by_id.at(x)->deleting) out.dependents.push_back(x);
  if (dependents == Dependents::refuse && !out.dependents.empty()) return out;
  std::vector<uint64_t> ids{id};
  ids.insert(ids.end(), out.dependents.begin(), out.dependents.end());
  for (uint64_t x : ids) {
    std::string why = blocked(*by_id.at(x), now_ns, running);
    if (why.empty()) continue;
    if (x != id) why += ", and it needs " + name_of(id);
    return fail(!by_id.at(x)->ended && running(*by_id.at(x)) ? Errc::busy
                                                              : Errc::invalid_argument,
                why);
  }
  out.plan = plan_deletion(backups, ids, "requested", false, now_ns);
  return out;
}

}  // namespace stripeback::engine
