#include "engine/media/keep.h"

#include <algorithm>
#include <map>

#include "util/clock.h"

namespace stripeback::engine {

std::set<uint64_t> chain_of(const std::vector<catalog::Backup>& backups, uint64_t id) {
  std::map<uint64_t, const catalog::Backup*> by_id;
  for (const auto& b : backups) by_id[b.id] = &b;
  std::set<uint64_t> out;
  std::vector<uint64_t> unvisited{id};
  while (!unvisited.empty()) {
    auto it = by_id.find(unvisited.back());
    unvisited.pop_back();
    if (it == by_id.end()) continue;
    for (const auto& f : it->second->files)
      for (uint64_t dep : {f.parent, f.held_by})
        if (dep && dep != id && out.insert(dep).second) unvisited.push_back(dep);
  }
  return out;
}

std::set<uint64_t> kept_backups(const std::vector<catalog::Backup>& backups, int64_t now_ns) {
  std::set<uint64_t> out;
  for (const auto& b : backups) {
    if (!b.kept_at(now_ns) || out.count(b.id)) continue;
    out.insert(b.id);
    const auto chain = chain_of(backups, b.id);
    out.insert(chain.begin(), chain.end());
  }
  return out;
}

Result<KeepOutcome> keep_backup(catalog::Catalog& cat, uint64_t id, catalog::Keep::Kind kind,
                                int64_t until_ns) {
  SB_TRY(cat.refresh());
  const auto gone = cat.deleted_backups();
  if (std::find(gone.begin(), gone.end(), id) != gone.end())
    return fail(Errc::not_found, "backup " + std::to_string(id) + " has been deleted");
  const auto backups = cat.backups();
  auto b = std::find_if(backups.begin(), backups.end(),
                        [&](const catalog::Backup& x) { return x.id == id; });
  if (b == backups.end())
    return fail(Errc::not_found, "backup " + std::to_string(id) + " is not in the catalog");
  KeepOutcome out;
  out.keep.backup_id = id;
  out.keep.time_ns = util::wall_now_ns();
  out.keep.kind = kind;
  out.keep.until_ns = kind == catalog::Keep::Kind::until ? until_ns : 0;
  if (kind == catalog::Keep::Kind::cleared && !b->keep) {
    out.recorded = false;
    return out;
  }
  SB_TRY(cat.add_keep(out.keep));
  if (kind != catalog::Keep::Kind::cleared) {
    const auto chain = chain_of(backups, id);
    out.chain.assign(chain.begin(), chain.end());
  }
  return out;
}

}  // namespace stripeback::engine
