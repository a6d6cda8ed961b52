#include "engine/resume.h"

#include <algorithm>
#include <map>

#include "engine/change_map.h"
#include "engine/leftovers.h"
#include "engine/piece_reader.h"
#include "util/digest.h"

namespace stripeback::engine {

Result<ResumePoint> find_resume_point(uint64_t id, const std::vector<std::string>& sources,
                                      const std::string& dest, bool has_level,
                                      const catalog::Catalog& cat, Plan& plan,
                                      io::Direct direct, Keyring* keys) {
  const auto backups = cat.backups();
  const catalog::Backup* b = nullptr;
  for (auto it = backups.rbegin(); it != backups.rend() && !b; ++it) {
    if (id ? it->id == id : (!it->ended && it->begin.destination == dest && !may_still_run(*it)))
      b = &*it;
  }
  if (!b)
    return fail(Errc::not_found, id ? "backup " + std::to_string(id) + " is not in the catalog"
                                    : "no interrupted backup to '" + dest + "' in the catalog");
  const std::string name = "backup " + std::to_string(b->id);
  if (b->ended)
    return fail(Errc::invalid_argument, name + " has ended (" + b->status_name() +
                                            "): there is nothing to resume");
  if (b->begin_missing) return fail(Errc::invalid_argument, name + " is damaged: " + b->damage);
  if (may_still_run(*b))
    return fail(Errc::busy, name + " is still running (pid " + std::to_string(b->begin.pid) +
                                " on " + b->begin.host + ")");
  if (b->begin.sources != sources) {
    std::string had;
    for (const auto& s : b->begin.sources) had += (had.empty() ? "'" : ", '") + s + "'";
    return fail(Errc::invalid_argument,
                name + " backed up " + had + ": resume it with the same sources");
  }
  if (b->begin.destination != dest)
    return fail(Errc::invalid_argument, name + " went to '" + b->begin.destination +
                                            "', not '" + dest + "'");
  if (b->begin.level >= 0 || has_level)
    return fail(Errc::unsupported, name + ": backups with a level are not resumed; start a new one");
  if (b->begin.catalog_id != cat.identity())
    return fail(Errc::invalid_argument, name + " was begun in another catalog");

  ResumePoint rp;
  rp.backup_id = b->id;
  rp.pieces = b->pieces;
  // What the durable pieces hold of each file.
  struct Held {
    FileMeta meta;
    std::vector<Extent> extents;
    std::vector<std::string> pieces;
  };
  std::map<std::string, Held> held;
  for (const auto& p : b->pieces) {
    if (p.media)
      return fail(Errc::unsupported, name + " has pieces on removable media, which a resume "
                                            "cannot reopen; start a new backup");
    auto r = PieceReader::open(recorded_piece_path(p), direct, keys);
    if (!r) return r.error().wrap(name + ": a piece it recorded cannot be read");
    const PieceReader& pr = **r;
    if (pr.footer().piece_crc != p.checksum || pr.size() != p.size)
      return fail(Errc::corrupt, name + ": piece '" + p.name + "' is not the one it recorded");
    if ((pr.header().cipher != Cipher::none) != (keys != nullptr))
      return fail(Errc::invalid_argument,
                  name + (keys ? " is not encrypted: resume it without --encrypt"
                               : " is encrypted: resume it with --encrypt and its key"));
    const Trailer& t = pr.trailer();
    for (size_t i = 0; i < t.files.size(); ++i) {
      Held& h = held[t.files[i].path];
      h.meta = t.files[i];
      h.extents.insert(h.extents.end(), t.extents[i].begin(), t.extents[i].end());
      h.pieces.push_back(p.name);
    }
  }
  std::map<std::string, const FileTask*> planned;
  for (const auto& f : plan.files) planned[f.path] = &f;
  std::vector<std::string> finished;
  for (auto& [path, h] : held) {
    auto it = planned.find(path);
    // Changed since (or gone): backed up again.
    if (it == planned.end() || it->second->size != h.meta.size ||
        it->second->mtime_ns != h.meta.mtime_ns)
      continue;
    std::sort(h.extents.begin(), h.extents.end(),
              [](const Extent& x, const Extent& y) { return x.file_offset < y.file_offset; });
    uint64_t at = 0;
    bool whole = true;
    for (const Extent& e : h.extents) {
      if (e.file_offset != at) whole = false;
      at = e.file_offset + e.raw_len;
    }
    if (!whole || at != h.meta.size) continue;  // some section was not finished
    util::DigestCombiner comb;
    for (const Extent& e : h.extents) comb.add(e.file_offset, e.raw_len, e.raw_digest);
    catalog::FileRecord r;
    r.path = path;
    r.size = h.meta.size;
    r.mode = h.meta.mode;
    r.mtime_ns = h.meta.mtime_ns;
    r.uid = h.meta.uid;
    r.gid = h.meta.gid;
    r.digest = comb.finish();
    std::sort(h.pieces.begin(), h.pieces.end());
    h.pieces.erase(std::unique(h.pieces.begin(), h.pieces.end()), h.pieces.end());
    r.pieces = h.pieces;
    rp.bytes_kept += r.size;
    rp.files.push_back(std::move(r));
    finished.push_back(path);
  }
  std::sort(finished.begin(), finished.end());
  std::erase_if(plan.files, [&](const FileTask& f) {
    return std::binary_search(finished.begin(), finished.end(), f.path);
  });
  plan.total_bytes -= std::min(plan.total_bytes, rp.bytes_kept);
  return rp;
}

}  // namespace stripeback::engine
