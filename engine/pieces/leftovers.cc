#include "engine/pieces/leftovers.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/format/piece_name.h"
#include "engine/wiring/backends.h"
#include "util/process.h"
#include "util/units.h"

namespace stripeback::engine {
namespace {

constexpr size_t kNamesShown = 8;

bool is_piece_file(const std::string& name) {
  return name.size() > 4 && name.compare(name.size() - 4, 4, ".sbp") == 0;
}

uint64_t size_of(const PieceFile& p) {
  auto place = place_of(p.dir);
  if (!place) return 0;
  auto st = place->storage->stat(place->at.join(p.name), true);
  return st ? st->size : 0;
}

Result<std::vector<std::string>> list_of(const std::string& dir) {
  SB_ASSIGN(Place place, place_of(dir));
  return place.storage->list(place.at);
}

// "N piece(s) (SIZE)" and the quoted names, the first few of them.
std::string count_and_names(const std::vector<PieceFile>& pieces, const std::string& middle,
                            const std::string& dest) {
  uint64_t bytes = 0;
  for (const auto& p : pieces) bytes += p.bytes;
  std::string s = std::to_string(pieces.size()) + " piece(s) (" + util::format_bytes(bytes) + ") " +
                  middle + " remain in '" + dest + "': ";
  for (size_t i = 0; i < pieces.size() && i < kNamesShown; ++i)
    s += (i ? ", '" : "'") + pieces[i].name + "'";
  if (pieces.size() > kNamesShown)
    s += " and " + std::to_string(pieces.size() - kNamesShown) + " more";
  return s;
}

}  // namespace

std::string PieceFile::path() const {
  auto at = storage::Location::parse(dir);
  return at ? at->join(name).str() : dir + "/" + name;
}

bool may_still_run(const catalog::Backup& b) {
  // A begin record without a pid proves nothing either.
  return b.begin.pid <= 0 || util::process_alive(b.begin.host, b.begin.pid, 0);
}

std::vector<std::string> unused_piece_names(
    const std::vector<catalog::Backup>& backups, const std::vector<std::string>& names,
    const std::function<bool(const catalog::Backup&)>& running) {
  std::map<uint64_t, const catalog::Backup*> dead;  // backups none of whose pieces count
  std::map<uint64_t, const catalog::Backup*> ended_usable;
  std::set<std::string> used;  // piece names a backup that counts mentions
  for (const auto& b : backups) {
    if (b.begin.catalog_id == 0) continue;  // its pieces' names carry no catalog id
    const bool counts = b.ended ? b.end.status != catalog::BackupStatus::failed : running(b);
    if (!counts) {
      dead[b.id] = &b;
      // A backup whose job died keeps the pieces it recorded for backup --resume; they go
      // with the backup once retention finds it obsolete (its resume window passed).
      if (!b.ended)
        for (const auto& p : b.pieces) used.insert(p.name);
      continue;
    }
    if (b.usable()) ended_usable[b.id] = &b;
    for (const auto& p : b.pieces) used.insert(p.name);
    for (const auto& f : b.files) used.insert(f.pieces.begin(), f.pieces.end());
  }
  // Backups without a catalog id may still mention pieces (of another backup's, in theory).
  for (const auto& b : backups) {
    if (b.begin.catalog_id != 0) continue;
    for (const auto& p : b.pieces) used.insert(p.name);
    for (const auto& f : b.files) used.insert(f.pieces.begin(), f.pieces.end());
  }
  std::vector<std::string> out;
  for (const auto& name : names) {
    auto owner = parse_piece_name(name);
    if (!owner || used.count(name)) continue;
    const catalog::Backup* b = nullptr;
    if (auto it = dead.find(owner->backup_id); it != dead.end())
      b = it->second;
    else if (auto u = ended_usable.find(owner->backup_id); u != ended_usable.end())
      b = u->second;
    if (b && b->begin.catalog_id == owner->catalog_id) out.push_back(name);
  }
  return out;
}

std::optional<std::string> abandon_unfinished_pieces(
    const std::vector<catalog::Backup>& backups, const std::string& dest,
    const std::function<bool(const catalog::Backup&)>& running) {
  auto place = place_of(dest);
  if (!place) return std::nullopt;
  auto names = place->storage->unfinished(place->at);
  if (!names) return "unfinished uploads in '" + dest + "' could not be listed: " + names.error().what;
  std::map<uint64_t, const catalog::Backup*> by_id;
  for (const auto& b : backups) by_id[b.id] = &b;
  size_t aborted = 0;
  std::string error;
  for (const auto& n : *names) {
    auto owner = parse_piece_name(n);
    if (!owner || !is_piece_file(n)) continue;
    auto it = by_id.find(owner->backup_id);
    if (it == by_id.end() || it->second->begin.catalog_id != owner->catalog_id) continue;
    if (!it->second->ended && running(*it->second)) continue;
    if (auto r = place->storage->abandon_unfinished(place->at.join(n)); !r) {
      error = r.error().what;
      break;
    }
    ++aborted;
  }
  if (aborted == 0 && error.empty()) return std::nullopt;
  std::string s = std::to_string(aborted) + " unfinished upload(s) of pieces of backups that "
                  "did not complete were aborted in '" + dest + "'";
  if (!error.empty()) s += "; the next could not be: " + error;
  return s;
}

std::vector<PieceFile> find_unused_pieces(const std::vector<catalog::Backup>& backups,
                                          const std::string& dest) {
  auto names = list_of(dest);
  if (!names) return {};
  std::vector<std::string> pieces;
  for (auto& n : *names)
    if (is_piece_file(n)) pieces.push_back(std::move(n));
  std::vector<PieceFile> out;
  for (auto& n : unused_piece_names(backups, pieces, may_still_run)) {
    PieceFile p{dest, std::move(n), 0};
    p.bytes = size_of(p);
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(),
            [](const PieceFile& a, const PieceFile& b) { return a.name < b.name; });
  return out;
}

std::vector<PieceFile> pieces_with_prefix(const std::string& dir, const std::string& prefix) {
  std::vector<PieceFile> out;
  auto names = list_of(dir);
  if (!names) return out;
  for (const auto& n : *names) {
    if (!is_piece_file(n) || n.compare(0, prefix.size(), prefix) != 0) continue;
    PieceFile p{dir, n, 0};
    p.bytes = size_of(p);
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(),
            [](const PieceFile& a, const PieceFile& b) { return a.name < b.name; });
  return out;
}

Removal remove_pieces(const std::vector<PieceFile>& pieces) {
  Removal r;
  for (size_t i = 0; i < pieces.size(); ++i) {
    auto place = place_of(pieces[i].dir);
    Result<void> u = place ? place->storage->remove(place->at.join(pieces[i].name))
                           : Result<void>(place.error());
    if (u || u.error().code == Errc::not_found) {
      r.removed += u.has_value() ? 1 : 0;
      continue;
    }
    r.error = u.error().what;
    r.remaining.assign(pieces.begin() + static_cast<std::ptrdiff_t>(i), pieces.end());
    break;
  }
  return r;
}

std::string leftover_warning(const std::vector<PieceFile>& pieces, const std::string& dest) {
  return count_and_names(pieces, "of backups in this catalog that failed or were killed", dest) +
         "; no restorable backup uses them: remove them to reclaim the space";
}

std::string unremoved_warning(const Removal& r, const std::string& what, const std::string& dest) {
  return count_and_names(r.remaining, what, dest) + "; they could not be removed (" + r.error +
         "); no restorable backup uses them: remove them to reclaim the space (the next backup "
         "to '" + dest + "' names them again)";
}

}  // namespace stripeback::engine
