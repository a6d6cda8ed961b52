// catalog rebuild as a list of phases over one job state (util/phases.h): the media are
// listed, the removable ones read, the catalog whose pieces to take chosen, the autobackups
// and the unknown pieces read, the backups assembled, and the catalog given the new ones in
// one append. Reading pieces is in rebuild_scan.cc, assembling a backup from its pieces in
// rebuild_assembler.cc.
#include "engine/media/catalog_rebuild.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "engine/format/piece_name.h"
#include "engine/media/catalog_autobackup.h"
#include "engine/media/rebuild_assembler.h"
#include "engine/media/rebuild_scan.h"
#include "engine/pieces/change_map.h"
#include "engine/wiring/backends.h"
#include "util/phases.h"

namespace stripeback::engine {
namespace {

using rebuild::Medium;
using rebuild::ScannedPiece;
using util::Next;

bool is_piece_name(const std::string& n) {
  return n.size() > 4 && n.compare(n.size() - 4, 4, ".sbp") == 0;
}

std::string hex_id(uint64_t id) { return format_catalog_id(id); }

std::string id_list(const std::set<uint64_t>& ids) {
  std::string list;
  for (uint64_t id : ids) list += (list.empty() ? "" : ", ") + hex_id(id);
  return list;
}

struct RebuildJob {
  RebuildJob(catalog::Catalog& c, const RebuildOptions& opts) : cat(c), o(opts) {}

  std::string_view phase;
  catalog::Catalog& cat;
  const RebuildOptions& o;
  RebuildReport rep;  // media: the listed ones in order, then the drives

  // list media, scan drives
  std::vector<Medium> media;        // with directories
  std::vector<std::string> drives;  // removable media: read whole, in order
  rebuild::MediaPieces on_drives;
  std::set<uint64_t> ids_found;  // catalogs whose pieces or autobackups are on the media
  // choose catalog
  uint64_t identity = 0;
  // known backups: what the catalog holds
  std::set<std::string> known_pieces;
  std::map<uint64_t, bool> known_ids;  // id -> ended
  // read autobackups
  std::map<uint64_t, catalog::Backup> from_auto;
  std::set<std::string> auto_pieces;  // of the backups an autobackup saw end
  // scan pieces, take drive pieces: the pieces neither the catalog nor an autobackup knows
  std::map<uint64_t, std::vector<ScannedPiece>> scanned;
  std::map<uint64_t, std::vector<std::string>> unreadable;
  std::map<uint64_t, std::string> medium_of;
  // assemble
  std::vector<catalog::Backup> others;  // known backups whose maps may serve as parents
  std::optional<PieceCache> cache;
  std::optional<rebuild::PieceAssembler> assembler;
  std::vector<catalog::Backup> to_add;
  std::map<uint64_t, RebuiltBackup> outcome;
};

// Lists each medium with directories and notes the catalogs its names belong to; drives
// are set aside for scan_drives.
Result<Next> list_media(RebuildJob& j) {
  for (const auto& text : j.o.media) {
    if (is_media_drive(text)) {
      j.drives.push_back(text);
      continue;
    }
    Medium m;
    m.text = text;
    auto place = place_of(text);
    if (!place) return place.error().wrap("unable to read the medium '" + text + "'");
    m.place = *place;
    if (!m.place.storage->caps().directories)
      return fail(Errc::invalid_argument,
                  "'" + text + "' has no directories: catalog rebuild lists the pieces of a "
                  "medium with directories");
    auto names = m.place.storage->list(m.place.at);
    if (!names) return names.error().wrap("unable to list the medium '" + text + "'");
    m.names = std::move(*names);
    std::sort(m.names.begin(), m.names.end());
    for (const auto& n : m.names) {
      if (auto owner = parse_piece_name(n); owner && is_piece_name(n))
        j.ids_found.insert(owner->catalog_id);
      if (auto a = parse_autobackup_name(n)) j.ids_found.insert(a->catalog_id);
    }
    j.media.push_back(std::move(m));
  }
  return Next::go_on;
}

// Reads every piece on the volumes in the drives.
Result<Next> scan_drives(RebuildJob& j) {
  if (j.drives.empty()) return Next::go_on;
  SB_ASSIGN(j.on_drives, rebuild::scan_media(j.drives, j.o.keys));
  for (const auto& [mi, p] : j.on_drives.pieces)
    if (p.header.catalog_id) j.ids_found.insert(p.header.catalog_id);
  return Next::go_on;
}

// The catalog whose pieces are taken: the target's identity, else the one asked for, else
// the only one on the media.
Result<Next> choose_catalog(RebuildJob& j) {
  uint64_t identity = j.cat.identity();
  if (j.o.catalog_id && identity && j.o.catalog_id != identity)
    return fail(Errc::invalid_argument,
                "the catalog in '" + j.cat.dir() + "' is catalog " + hex_id(identity) +
                    ": pieces of catalog " + hex_id(j.o.catalog_id) +
                    " are not rebuilt into it (rebuild them into a new catalog directory)");
  if (!identity) identity = j.o.catalog_id;
  if (!identity) {
    if (j.ids_found.size() > 1)
      return fail(Errc::invalid_argument,
                  "the media hold pieces of " + std::to_string(j.ids_found.size()) +
                      " catalogs (" + id_list(j.ids_found) +
                      "): name the one to rebuild with --catalog-id");
    if (!j.ids_found.empty()) identity = *j.ids_found.begin();
  }
  j.identity = identity;
  j.rep.catalog_id = identity;
  if (identity && !j.ids_found.empty() && !j.ids_found.count(identity))
    return fail(Errc::invalid_argument,
                "the media hold pieces of catalog " + id_list(j.ids_found) + ", none of catalog " +
                    hex_id(identity) + " ('" + j.cat.dir() +
                    "'): rebuild them into a new catalog directory");
  for (uint64_t id : j.ids_found)
    if (id != identity)
      j.rep.warnings.push_back("pieces of catalog " + hex_id(id) + " are left out (the catalog "
                               "rebuilt is " + hex_id(identity) + ")");
  return Next::go_on;
}

Result<Next> note_known(RebuildJob& j) {
  for (const auto& b : j.cat.backups()) {
    j.known_ids[b.id] = b.ended;
    for (const auto& p : b.pieces) j.known_pieces.insert(p.name);
  }
  return Next::go_on;
}

// The backups of autobackup `name` on medium `m` that are still there.
void take_autobackup(RebuildJob& j, const Medium& m, const std::string& name,
                     std::vector<catalog::Backup>& backups) {
  const std::set<std::string> here(m.names.begin(), m.names.end());
  for (auto& b : backups) {
    if (b.begin_missing || b.begin.catalog_id != j.identity) continue;
    // A backup deleted after the autobackup was written: its pieces are gone.
    if (!b.pieces.empty() && std::none_of(b.pieces.begin(), b.pieces.end(), [&](const auto& p) {
          return p.media.has_value() || here.count(p.name) > 0;
        })) {
      j.rep.warnings.push_back("backup " + std::to_string(b.id) + " of catalog autobackup '" +
                               name + "' is left out: none of its " +
                               std::to_string(b.pieces.size()) + " piece(s) is on '" + m.text +
                               "' (deleted since the autobackup was written)");
      continue;
    }
    // The pieces are where they were found now (the media may have been moved or
    // copied since); a piece the medium no longer has keeps its recorded place.
    for (auto& p : b.pieces)
      if (here.count(p.name) && !p.media) p.location = m.place.at.str();
    auto [it, fresh] = j.from_auto.emplace(b.id, b);
    // The same backup in two autobackups: the one that saw it end wins.
    if (!fresh && !it->second.ended && b.ended) it->second = b;
  }
}

// The newest autobackup of the catalog on medium `m`, read into `scan` and from_auto.
Result<void> read_autobackup(RebuildJob& j, const Medium& m, MediumScan& scan) {
  std::optional<std::pair<AutobackupName, std::string>> newest;
  for (const auto& n : m.names)
    if (auto a = parse_autobackup_name(n); a && a->catalog_id == j.identity) {
      a->written_ns = autobackup_written_ns(m.place, n);
      if (!newest || newest->first < *a) newest = std::make_pair(*a, n);
    }
  if (!newest) return ok();
  auto recs = read_catalog_autobackup(m.place, newest->second, j.o.keys);
  if (!recs) {
    if (recs.error().code == Errc::wrong_key || recs.error().code == Errc::invalid_argument)
      return recs.error();
    j.rep.warnings.push_back(recs.error().what + "; the pieces are read instead");
    return ok();
  }
  scan.autobackup = newest->second;
  for (const auto& w : recs->warnings)
    j.rep.warnings.push_back("catalog autobackup '" + newest->second + "': " + w.what);
  take_autobackup(j, m, newest->second, recs->backups);
  return ok();
}

// The newest autobackup of the catalog on each medium with directories.
Result<Next> read_autobackups(RebuildJob& j) {
  for (const auto& m : j.media) {
    MediumScan scan;
    scan.medium = m.text;
    if (j.o.use_autobackup) SB_TRY(read_autobackup(j, m, scan));
    j.rep.media.push_back(std::move(scan));
  }
  for (const auto& [id, b] : j.from_auto)
    if (b.ended)
      for (const auto& p : b.pieces) j.auto_pieces.insert(p.name);
  return Next::go_on;
}

// The pieces on the media with directories that neither the catalog nor an autobackup
// knows.
Result<Next> scan_pieces(RebuildJob& j) {
  for (size_t i = 0; i < j.media.size(); ++i) {
    const Medium& m = j.media[i];
    MediumScan& scan = j.rep.media[i];
    for (const auto& n : m.names) {
      auto owner = parse_piece_name(n);
      if (!owner || !is_piece_name(n) || owner->catalog_id != j.identity) continue;
      ++scan.pieces_found;
      auto known = j.known_ids.find(owner->backup_id);
      auto in_auto = j.from_auto.find(owner->backup_id);
      if (j.known_pieces.count(n) || j.auto_pieces.count(n) || known != j.known_ids.end() ||
          (in_auto != j.from_auto.end() && in_auto->second.ended)) {
        ++scan.pieces_known;
        continue;
      }
      auto p = rebuild::scan_piece(m, n, j.o.keys);
      if (!p) {
        if (rebuild::stops_rebuild(p.error())) return p.error();
        scan.unreadable.push_back(n + ": " + p.error().what);
        j.unreadable[owner->backup_id].push_back("'" + n + "' (" + p.error().what + ")");
        continue;
      }
      if (p->header.backup_id != owner->backup_id || p->header.catalog_id != j.identity) {
        const std::string why = "its header names backup " + std::to_string(p->header.backup_id) +
                                " of catalog " + hex_id(p->header.catalog_id);
        scan.unreadable.push_back(n + ": " + why);
        j.unreadable[owner->backup_id].push_back("'" + n + "' (" + why + ")");
        continue;
      }
      ++scan.pieces_read;
      j.medium_of.emplace(owner->backup_id, m.place.at.str());
      j.scanned[owner->backup_id].push_back(std::move(*p));
    }
  }
  return Next::go_on;
}

// The pieces found on removable media that neither the catalog nor an autobackup knows.
Result<Next> take_drive_pieces(RebuildJob& j) {
  const size_t first_drive = j.rep.media.size();
  for (auto& sc : j.on_drives.scans) j.rep.media.push_back(std::move(sc));
  for (auto& [mi, p] : j.on_drives.pieces) {
    if (p.header.catalog_id != j.identity) continue;
    MediumScan& scan = j.rep.media[first_drive + mi];
    ++scan.pieces_found;
    const uint64_t bid = p.header.backup_id;
    auto in_auto = j.from_auto.find(bid);
    if (j.known_pieces.count(p.record.name) || j.known_ids.count(bid) ||
        (in_auto != j.from_auto.end() && in_auto->second.ended)) {
      ++scan.pieces_known;
      continue;
    }
    auto& list = j.scanned[bid];
    if (std::any_of(list.begin(), list.end(), [&name = p.record.name](const ScannedPiece& q) {
          return q.record.name == name;
        })) {
      scan.unreadable.push_back("'" + p.record.name + "' is on the media twice; the copy on " +
                                p.record.media->spans.front().volume_id + " is left out");
      continue;
    }
    ++scan.pieces_read;
    j.medium_of.emplace(bid, p.record.location);
    list.push_back(std::move(p));
  }
  return Next::go_on;
}

// Backup `id`, from an autobackup when it saw the backup end, else from the pieces; none
// when none of its pieces could be read.
std::optional<catalog::Backup> rebuilt(RebuildJob& j, uint64_t id, RebuiltBackup& rb) {
  auto a = j.from_auto.find(id);
  if (a != j.from_auto.end() && (a->second.ended || !j.scanned.count(id))) {
    rb.from = "autobackup";
    return a->second;
  }
  rb.from = "pieces";
  if (j.scanned.count(id))
    return j.assembler->assemble(id, j.scanned[id], j.unreadable[id], j.identity,
                                 j.medium_of[id], rb.notes);
  rb.reason = "none of its pieces could be read";
  for (const auto& u : j.unreadable[id]) rb.notes.push_back("unreadable piece " + u);
  return std::nullopt;
}

// Every backup to add, in id order.
Result<Next> assemble_backups(RebuildJob& j) {
  std::set<uint64_t> ids;
  for (const auto& [id, b] : j.from_auto) ids.insert(id);
  for (const auto& [id, p] : j.scanned) ids.insert(id);
  for (const auto& [id, u] : j.unreadable) ids.insert(id);
  j.others = j.cat.backups();
  for (const auto& [id, b] : j.from_auto)
    if (b.ended && !j.known_ids.count(id)) j.others.push_back(b);
  j.cache.emplace(io::Direct::no, j.o.keys);
  j.assembler.emplace(j.others, *j.cache);
  for (uint64_t id : ids) {
    RebuiltBackup rb;
    rb.id = id;
    auto b = rebuilt(j, id, rb);
    if (!b) {
      j.outcome[id] = rb;
      continue;
    }
    b->damage = catalog::find_damage(*b);
    rb.status = b->status_name();
    rb.files = static_cast<uint64_t>(
        std::count_if(b->files.begin(), b->files.end(), [](const auto& f) {
          return (f.mode & 0170000) != 0040000;  // regular files, as list counts them
        }));
    rb.pieces = b->pieces.size();
    j.outcome[id] = rb;
    j.to_add.push_back(std::move(*b));
  }
  return Next::go_on;
}

// The new backups into the catalog, in one append; the change maps of a chain on
// removable media kept with the catalog.
Result<Next> import_backups(RebuildJob& j) {
  SB_ASSIGN(auto imported, j.cat.import_backups(j.to_add));
  for (const auto& r : imported) {
    RebuiltBackup& rb = j.outcome[r.id];
    rb.added = r.added;
    rb.reason = r.reason;
    // A chain on removable media is restored with its change maps kept with the catalog
    // (its pieces cannot be read out of order): they are written from the map frames.
    auto b = std::find_if(j.to_add.begin(), j.to_add.end(),
                          [&](const auto& x) { return x.id == r.id; });
    if (!r.added || b == j.to_add.end() || !on_media(*b) || b->begin.level < 0) continue;
    const auto* maps = j.assembler->maps_of(r.id);
    if (!maps) continue;
    std::vector<std::pair<std::string, UnitMap>> list(maps->begin(), maps->end());
    if (auto saved = save_media_maps(j.cat.dir(), r.id, list, j.o.keys); !saved)
      rb.notes.push_back(saved.error().what + ": a restore through its level cannot build the "
                         "files it holds in part");
  }
  for (auto& [id, rb] : j.outcome) j.rep.backups.push_back(std::move(rb));
  return Next::go_on;
}

const util::Phase<RebuildJob> kRebuild[] = {
    {"list media", list_media},
    {"scan drives", scan_drives},
    {"choose catalog", choose_catalog},
    {"note known backups", note_known},
    {"read autobackups", read_autobackups},
    {"scan pieces", scan_pieces},
    {"take drive pieces", take_drive_pieces},
    {"assemble backups", assemble_backups},
    {"import backups", import_backups},
};

}  // namespace

Result<RebuildReport> rebuild_catalog(catalog::Catalog& cat, const RebuildOptions& o) {
  RebuildJob job(cat, o);
  SB_TRY(util::run_phases<RebuildJob>(job, kRebuild));
  return std::move(job.rep);
}

}  // namespace stripeback::engine
