#include "engine/media/media_ops.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <random>
#include <set>

#include "engine/wiring/backends.h"
#include "engine/pieces/leftovers.h"
#include "engine/format/piece_name.h"
#include "util/clock.h"
#include "util/crash_point.h"

namespace stripeback::engine {
namespace {

uint64_t new_deletion_id() {
  std::random_device rd;
  uint64_t v = 0;
  while (v == 0) v = (uint64_t{rd()} << 32) ^ rd();
  return v;
}

// Removes the pieces of `d` that are on directories, syncing each directory after its
// removals. Returns the errors (empty: all gone).
std::vector<std::string> remove_from_media(const std::vector<catalog::DeletedPiece>& pieces,
                                           uint64_t* removed) {
  std::map<std::string, std::vector<PieceFile>> by_dir;
  for (const auto& p : pieces)
    if (!p.location.empty()) by_dir[p.location].push_back({p.location, p.name, p.size});
  std::vector<std::string> errors;
  for (const auto& [dir, files] : by_dir) {
    Removal r = remove_pieces(files);
    *removed += r.removed;
    if (!r.error.empty()) {
      errors.push_back(std::to_string(r.remaining.size()) + " piece(s) in '" + dir +
                       "' could not be removed, the first '" + r.remaining.front().name +
                       "': " + r.error);
      continue;
    }
    util::crash_point("delete-pieces-removed");
    auto place = place_of(dir);
    if (!place) continue;
    auto d = place->storage->open_dir(place->at, false);
    if (d) {
      if (auto s = (*d)->sync(); !s) errors.push_back("syncing '" + dir + "': " + s.error().what);
    }
  }
  return errors;
}

Result<bool> finish(catalog::Catalog& cat, const catalog::Deletion& intent,
                    std::vector<std::string>& errors, uint64_t* removed) {
  auto errs = remove_from_media(intent.pieces, removed);
  if (!errs.empty()) {
    errors.insert(errors.end(), errs.begin(), errs.end());
    return false;
  }
  catalog::Deletion done = intent;
  done.done = true;
  done.time_ns = util::wall_now_ns();
  done.pieces.clear();
  done.backups.clear();
  SB_TRY(cat.add_deletion(done));
  return true;
}

}  // namespace

uint64_t DeletePlan::bytes() const {
  uint64_t n = 0;
  for (const auto& p : pieces) n += p.size;
  return n;
}

DeletePlan plan_deletion(const std::vector<catalog::Backup>& backups,
                         const std::vector<uint64_t>& ids, const std::string& reason,
                         bool orphans, int64_t now_ns) {
  DeletePlan plan;
  plan.reason = reason;
  std::set<uint64_t> locked;
  for (const auto& b : backups)
    if (b.locked_at(now_ns)) locked.insert(b.id);
  for (uint64_t id : ids) {
    if (!locked.count(id)) {
      plan.backups.push_back(id);
      continue;
    }
    auto b = std::find_if(backups.begin(), backups.end(),
                          [&](const catalog::Backup& x) { return x.id == id; });
    plan.locked.push_back({id, *b->lock});
  }
  std::set<std::pair<std::string, std::string>> seen;  // (location, name)
  auto add = [&](catalog::DeletedPiece p) {
    if (locked.count(p.backup_id)) return;
    if (seen.insert({p.location, p.name}).second) plan.pieces.push_back(std::move(p));
  };
  const std::set<uint64_t> want(plan.backups.begin(), plan.backups.end());
  std::set<std::string> dirs;
  for (const auto& b : backups) {
    for (const auto& p : b.pieces)
      if (!p.media) dirs.insert(p.location);
    // A destination that is not a directory (a drive of removable media) has no place.
    if (!b.begin.destination.empty() && place_of(b.begin.destination))
      dirs.insert(b.begin.destination);
    if (!want.count(b.id)) continue;
    for (const auto& p : b.pieces)
      add({b.id, p.name, p.media ? std::string() : p.location, p.size});
  }
  // Pieces of the chosen backups that the catalog does not record (the job died, or could
  // not remove them when it failed), by their names.
  for (const auto& b : backups) {
    if (!want.count(b.id) || b.begin.catalog_id == 0) continue;
    const std::string prefix = piece_name_prefix(b.id, b.begin.catalog_id);
    for (const auto& dir : dirs)
      for (const auto& f : pieces_with_prefix(dir, prefix)) add({b.id, f.name, dir, f.bytes});
  }
  if (orphans)
    for (const auto& dir : dirs)
      for (const auto& f : find_unused_pieces(backups, dir))
        if (auto owner = parse_piece_name(f.name)) add({owner->backup_id, f.name, dir, f.bytes});
  return plan;
}

Result<DeleteOutcome> carry_out(catalog::Catalog& cat, const DeletePlan& plan) {
  DeleteOutcome out;
  SB_TRY(cat.refresh());
  for (const auto& intent : cat.pending_deletions()) {
    SB_ASSIGN(bool ok, finish(cat, intent, out.errors, &out.pieces_removed));
    if (!ok) return out;  // the older deletion stays unfinished: do not start another
    out.finished.push_back({intent.reason, intent.backups, {}, intent.pieces});
  }
  if (plan.backups.empty() && plan.pieces.empty()) return out;
  catalog::Deletion intent;
  intent.id = new_deletion_id();
  intent.time_ns = util::wall_now_ns();
  intent.reason = plan.reason;
  intent.backups = plan.backups;
  intent.pieces = plan.pieces;
  SB_TRY(cat.add_deletion(intent));
  util::crash_point("delete-intent-recorded");
  SB_ASSIGN(bool ok, finish(cat, intent, out.errors, &out.pieces_removed));
  if (ok) out.done = plan;
  return out;
}

Result<MaintenanceLock> MaintenanceLock::acquire(const catalog::Catalog& cat) {
  const std::string path = cat.dir() + "/maintenance.lock";
  MaintenanceLock l;
  l.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (l.fd_ < 0) return sys_error(errno, "unable to open '" + path + "'");
  int rc;
  do {
    rc = ::flock(l.fd_, LOCK_EX);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return sys_error(errno, "unable to lock '" + path + "'");
  return l;
}

MaintenanceLock::MaintenanceLock(MaintenanceLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }

MaintenanceLock::~MaintenanceLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace stripeback::engine
