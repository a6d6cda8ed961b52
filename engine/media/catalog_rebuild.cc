#include "engine/media/catalog_rebuild.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "engine/wiring/backends.h"
#include "engine/media/catalog_autobackup.h"
#include "engine/pieces/change_map.h"
#include "engine/transform/crypto.h"
#include "engine/format/piece_name.h"
#include "engine/pieces/piece_reader.h"
#include "engine/format/piece_walk.h"
#include "engine/pieces/target_paths.h"
#include "util/digest.h"

namespace stripeback::engine {
namespace {

bool is_piece_name(const std::string& n) {
  return n.size() > 4 && n.compare(n.size() - 4, 4, ".sbp") == 0;
}

// What one piece says, read from its header, trailer, map frames and footer.
struct ScannedPiece {
  catalog::PieceRecord record;
  PieceHeader header;
  Trailer trailer;
  std::vector<std::vector<DigestMap>> maps;  // per file id
};

// One file of a backup as its pieces hold it.
struct FileParts {
  FileMeta meta;
  std::vector<Extent> extents;
  std::set<std::string> pieces;
  std::vector<DigestMap> maps;
};

struct Medium {
  Place place;
  std::string text;
  std::vector<std::string> names;
};

std::string hex_id(uint64_t id) { return format_catalog_id(id); }

// The units [first, last) an extent covers.
std::pair<uint64_t, uint64_t> units_covered(const Extent& e, uint32_t unit) {
  return {e.file_offset / unit, (e.file_offset + e.raw_len + unit - 1) / unit};
}

// Whether `parent`'s map serves as the base of `m` for every unit not in `written`: the same
// digest and length there, the rule a level 1 follows to leave a unit out.
bool serves_as_parent(const UnitMap& parent, const UnitMap& m, const std::vector<bool>& written) {
  if (parent.unit != m.unit) return false;
  for (uint64_t i = 0; i < m.digests.size(); ++i) {
    if (written[i]) continue;
    if (i >= parent.digests.size() ||
        unit_length(parent.size, parent.unit, i) != unit_length(m.size, m.unit, i) ||
        parent.digests[i] != m.digests[i])
      return false;
  }
  return true;
}

// The backups rebuilt from pieces alone, in id order; each level file's map is kept for the
// level 1s after it.
class PieceAssembler {
 public:
  // `others`: backups known from the catalog or an autobackup, whose files' maps (read from
  // their pieces through `cache`) may serve as parents too.
  PieceAssembler(const std::vector<catalog::Backup>& others, PieceCache& cache)
      : others_(others), cache_(cache) {}

  catalog::Backup assemble(uint64_t id, const std::vector<ScannedPiece>& pieces,
                           const std::vector<std::string>& unreadable, uint64_t catalog_id,
                           const std::string& medium, std::vector<std::string>& notes) {
    catalog::Backup b;
    b.id = id;
    b.begin.catalog_id = catalog_id;
    b.begin.destination = medium;
    std::map<std::string, FileParts> files;
    std::map<uint32_t, std::set<uint32_t>> numbers;  // per channel
    int64_t first = 0, last = 0;
    uint64_t written = 0;
    uint32_t unit = 0;
    for (const auto& p : pieces) {
      b.pieces.push_back(p.record);
      written += p.record.size;
      numbers[p.record.channel].insert(p.record.number);
      const int64_t t = p.header.created_ns;
      first = first == 0 ? t : std::min(first, t);
      last = std::max(last, t);
      for (size_t i = 0; i < p.trailer.files.size(); ++i) {
        FileParts& f = files[p.trailer.files[i].path];
        if (f.pieces.empty()) f.meta = p.trailer.files[i];
        f.pieces.insert(p.record.name);
        const auto& ex = p.trailer.extents[i];
        f.extents.insert(f.extents.end(), ex.begin(), ex.end());
        if (i < p.maps.size())
          for (const auto& m : p.maps[i]) {
            f.maps.push_back(m);
            unit = m.unit;
          }
      }
    }
    std::sort(b.pieces.begin(), b.pieces.end(), [](const auto& x, const auto& y) {
      return x.channel != y.channel ? x.channel < y.channel : x.number < y.number;
    });
    b.begin.start_time_ns = first;
    b.begin.channels = numbers.empty() ? 0 : numbers.rbegin()->first;
    if (unit) {
      b.begin.level = 0;
      b.begin.change_unit = unit;
    }
    std::vector<std::string> problems;
    for (uint32_t c = 1; c <= b.begin.channels; ++c) {
      const auto it = numbers.find(c);
      const uint32_t n = it == numbers.end() ? 0 : *it->second.rbegin();
      if (it == numbers.end() || it->second.size() != n)
        problems.push_back("channel " + std::to_string(c) + " lacks some of its pieces");
    }
    for (const auto& u : unreadable) problems.push_back("unreadable piece " + u);

    std::map<std::string, UnitMap>& mine = maps_[id];
    uint64_t bytes_read = 0;
    for (auto& [path, f] : files) {
      // A path no backup records (relative, empty, with '..' or a NUL) comes from a forged or
      // damaged trailer: restoring it would be refused, and with it the whole backup.
      if (!safe_components(path)) {
        problems.push_back("a piece names the file '" + path +
                           "', which is not a safe absolute path; left out");
        continue;
      }
      std::sort(f.extents.begin(), f.extents.end(),
                [](const Extent& x, const Extent& y) { return x.file_offset < y.file_offset; });
      catalog::FileRecord r;
      r.path = path;
      r.size = f.meta.size;
      r.mode = f.meta.mode;
      r.mtime_ns = f.meta.mtime_ns;
      r.uid = f.meta.uid;
      r.gid = f.meta.gid;
      r.pieces.assign(f.pieces.begin(), f.pieces.end());
      if (!f.maps.empty()) {
        if (!level_file(id, f, r, mine, problems)) continue;
        if (r.parent) b.begin.level = 1;
      } else {
        uint64_t at = 0;
        bool whole = true;
        util::DigestCombiner comb;
        for (const auto& e : f.extents) {
          whole = whole && e.file_offset == at;
          at = e.file_offset + e.raw_len;
          comb.add(e.file_offset, e.raw_len, e.raw_digest);
        }
        r.digest = comb.finish();
        if (!whole || at != r.size) {
          problems.push_back("'" + path + "' is not whole in the pieces found; left out");
          continue;
        }
      }
      bytes_read += r.size;
      b.files.push_back(std::move(r));
    }
    b.ended = true;
    b.end.end_time_ns = last;
    b.end.bytes_read = bytes_read;
    b.end.bytes_written = written;
    notes = problems;
    if (b.files.empty()) {
      b.end.status = catalog::BackupStatus::failed;
      b.end.message = "rebuilt from its pieces: no file is whole in them";
      b.pieces.clear();
      b.files.clear();
    } else {
      b.end.status =
          problems.empty() ? catalog::BackupStatus::complete : catalog::BackupStatus::partial;
      b.end.files = b.files.size();
      b.end.pieces = static_cast<uint32_t>(b.pieces.size());
      b.end.message = "rebuilt from its pieces alone: tag, sources, directories and end time "
                      "are not known";
      for (const auto& p : problems) b.end.message += "; " + p;
    }
    return b;
  }

  // The change maps of the files of a backup assembled here, or null.
  const std::map<std::string, UnitMap>* maps_of(uint64_t id) const {
    auto it = maps_.find(id);
    return it == maps_.end() || it->second.empty() ? nullptr : &it->second;
  }

 private:
  // A file of a backup with a level: its map from the map frames, its parent found among
  // the earlier backups rebuilt here whose map agrees on every unit this one left out.
  bool level_file(uint64_t id, FileParts& f, catalog::FileRecord& r,
                  std::map<std::string, UnitMap>& mine, std::vector<std::string>& problems) {
    const uint32_t unit = f.maps.front().unit;
    auto m = join_maps(f.maps, r.size, unit, r.path);
    if (!m) {
      problems.push_back(m.error().what + "; left out");
      return false;
    }
    r.unit = unit;
    r.digest = map_file_digest(*m);
    std::vector<bool> written(m->digests.size(), false);
    for (const auto& e : f.extents) {
      auto [a, z] = units_covered(e, unit);
      for (uint64_t i = a; i < z && i < written.size(); ++i) written[i] = true;
    }
    r.units_written = static_cast<uint64_t>(std::count(written.begin(), written.end(), true));
    if (r.units_written < written.size() || written.empty()) {
      std::set<uint64_t, std::greater<>> candidates;
      for (const auto& [cid, maps] : maps_)
        if (cid < id) candidates.insert(cid);
      for (const auto& b : others_)
        if (b.id < id && b.usable() && b.begin.level >= 0) candidates.insert(b.id);
      for (uint64_t cid : candidates) {
        const UnitMap* pm = map_of(cid, r.path);
        if (pm && serves_as_parent(*pm, *m, written)) {
          r.parent = cid;
          r.change = r.units_written == 0 && pm->size == r.size ? catalog::FileChange::unchanged
                                                                : catalog::FileChange::changed;
          break;
        }
      }
      if (!r.parent && !written.empty()) {
        problems.push_back("'" + r.path + "' builds on a backup not found on the media; left out");
        return false;
      }
    }
    m->backup = id;
    mine[r.path] = std::move(*m);
    return true;
  }

  // The map of `path` in backup `id`: rebuilt here, or read from the pieces of a known one.
  const UnitMap* map_of(uint64_t id, const std::string& path) {
    if (auto it = maps_.find(id); it != maps_.end()) {
      auto pm = it->second.find(path);
      if (pm != it->second.end()) return &pm->second;
    }
    for (const auto& b : others_) {
      if (b.id != id) continue;
      auto key = std::make_pair(id, path);
      if (auto c = read_.find(key); c != read_.end()) return c->second ? &*c->second : nullptr;
      std::optional<UnitMap> got;
      for (const auto& f : b.files)
        if (f.path == path && f.unit && !f.pieces.empty() && !on_media(b))
          if (auto m = load_file_map(b, f, cache_)) got = std::move(*m);
      auto& slot = read_[key];
      slot = std::move(got);
      return slot ? &*slot : nullptr;
    }
    return nullptr;
  }

  const std::vector<catalog::Backup>& others_;
  PieceCache& cache_;
  std::map<uint64_t, std::map<std::string, UnitMap>> maps_;
  std::map<std::pair<uint64_t, std::string>, std::optional<UnitMap>> read_;
};

bool stops_rebuild(const Error& e) {
  return e.code == Errc::wrong_key || e.code == Errc::invalid_argument ||
         e.code == Errc::unsupported;
}

// What a piece says, from a file with random reads (a whole piece, or the parts a walk of
// a stream kept).
Result<ScannedPiece> read_piece(std::unique_ptr<storage::ReadFile> file, const std::string& name,
                                const std::string& location, Keyring* keys) {
  SB_ASSIGN(auto reader, PieceReader::open(std::move(file), keys));
  ScannedPiece p;
  p.header = reader->header();
  p.trailer = reader->trailer();
  p.record.name = name;
  p.record.location = location;
  p.record.channel = p.header.channel;
  p.record.number = p.header.piece_number;
  p.record.size = reader->size();
  p.record.checksum = reader->footer().piece_crc;
  p.maps.resize(p.trailer.files.size());
  for (uint32_t i = 0; i < p.trailer.maps.size() && i < p.maps.size(); ++i)
    if (!p.trailer.maps[i].empty()) {
      SB_ASSIGN(p.maps[i], reader->read_maps(i));
    }
  return p;
}

Result<ScannedPiece> scan_piece(const Medium& m, const std::string& name, Keyring* keys) {
  SB_ASSIGN(auto file, m.place.storage->open_read(m.place.at.join(name), {false}));
  return read_piece(std::move(file), name, m.place.at.str(), keys);
}

// A piece read as a stream (removable media): walked front to back, every frame checked,
// keeping what a PieceReader reads (header, map frames, trailer, footer); the piece may not
// reach past `limit`.
Result<ScannedPiece> capture_piece(storage::ReadFile& in, uint64_t limit,
                                   const std::string& location, Keyring* keys) {
  std::vector<std::byte> head(kBlock);
  SB_TRY(read_exact(in, head.data(), kBlock, 0, nullptr, "header block"));
  auto h = decode_piece_header(head);
  if (!h) return fail(Errc::corrupt, "header block: " + h.error().what);
  auto kept = std::make_unique<CapturedPiece>(location + "/" + h->name);
  kept->keep(0, head);
  SB_ASSIGN(WalkedPiece w,
            walk_piece(in, head, limit, std::nullopt, nullptr,
                       [&](uint64_t at, const FrameHeader& fh, std::span<const std::byte> block,
                           std::span<const std::byte> payload) {
                         if (fh.type != FrameType::map && fh.type != FrameType::trailer) return;
                         kept->keep(at, block);
                         kept->keep(at + kBlock, payload);
                       }));
  kept->keep(w.size - kBlock, w.footer_block);
  kept->set_size(w.size);
  return read_piece(std::move(kept), h->name, location, keys);
}

// The current segment of a media scan as a file read in order (offsets never go back;
// bytes skipped over are read and dropped).
class SegmentStream final : public storage::ReadFile {
 public:
  SegmentStream(MediaScan& s, std::string name) : s_(s), name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  Result<void> submit(storage::IoLoop&, const storage::Request&) override {
    return fail(Errc::unsupported, "'" + name_ + "' is read in order only");
  }
  Result<storage::FileInfo> stat() override {
    return fail(Errc::unsupported, "'" + name_ + "' is read as a stream");
  }
  Result<size_t> read_at(std::byte* buf, size_t len, uint64_t offset) override {
    if (offset < pos_)
      return fail(Errc::unsupported, "'" + name_ + "' is read in order only");
    std::vector<std::byte> skip;
    while (pos_ < offset) {
      skip.resize(static_cast<size_t>(std::min<uint64_t>(offset - pos_, 1u << 20)));
      SB_ASSIGN(size_t got, s_.read(skip.data(), skip.size()));
      pos_ += got;
      if (got < skip.size()) {
        ended_ = true;
        return size_t{0};
      }
    }
    SB_ASSIGN(size_t got, s_.read(buf, len));
    pos_ += got;
    if (got < len) ended_ = true;
    return got;
  }
  // The segment ended before the piece did: the rest is in the stream's next segment.
  bool ended() const { return ended_; }

 private:
  MediaScan& s_;
  std::string name_;
  uint64_t pos_ = 0;
  bool ended_ = false;
};

using StreamKey = std::tuple<uint64_t, uint32_t, uint32_t>;  // backup, channel, piece

std::string stream_text(const StreamKey& k) {
  return "piece " + std::to_string(std::get<2>(k)) + " of channel " +
         std::to_string(std::get<1>(k)) + " of backup " + std::to_string(std::get<0>(k));
}

std::string segment_place(const MediaSegment& m) {
  return "volume " + m.span.volume_id + " file " + std::to_string(m.span.file);
}

// Every piece on the volumes in `drives`, read from their starts, each piece walked and
// checked; a piece that spans volumes is read again across them once all are scanned.
struct MediaPieces {
  std::vector<std::pair<size_t, ScannedPiece>> pieces;  // medium index, piece
  std::vector<MediumScan> scans;
};

Result<MediaPieces> scan_media(const std::vector<std::string>& drives, Keyring* keys) {
  MediaPieces out;
  struct Segment {
    uint32_t index = 0;
    uint32_t block_size = 0;
    catalog::MediaSpan span;
    size_t medium = 0;
    std::string location;
  };
  std::map<StreamKey, std::vector<Segment>> segments;
  std::map<StreamKey, std::string> spanning;  // streams to read across volumes: why
  for (size_t mi = 0; mi < drives.size(); ++mi) {
    MediumScan scan;
    scan.medium = drives[mi];
    auto opened = scan_media_volume(drives[mi]);
    if (!opened) return opened.error().wrap("unable to read the medium '" + drives[mi] + "'");
    MediaScan& ms = **opened;
    while (true) {
      SB_ASSIGN(auto seg, ms.next());
      if (!seg) break;
      if (!seg->problem.empty()) {
        scan.unreadable.push_back(segment_place(*seg) + ": " + seg->problem);
        continue;
      }
      const StreamKey key{seg->backup_id, seg->channel, seg->piece};
      std::optional<ScannedPiece> piece;
      if (seg->segment == 0) {
        SegmentStream in(ms, ms.location() + " " + segment_place(*seg));
        auto p = capture_piece(in, ~uint64_t{0} >> 2, ms.location(), keys);
        if (p && (p->header.backup_id != seg->backup_id || p->header.channel != seg->channel ||
                  p->header.piece_number != seg->piece)) {
          scan.unreadable.push_back(segment_place(*seg) + ": its piece header names " +
                                    stream_text({p->header.backup_id, p->header.channel,
                                                 p->header.piece_number}) +
                                    ", its segment header " + stream_text(key));
        } else if (p) {
          piece = std::move(*p);
        } else if (in.ended()) {
          spanning[key] = p.error().what;
        } else if (stops_rebuild(p.error())) {
          return p.error().wrap("'" + drives[mi] + "' " + segment_place(*seg));
        } else {
          scan.unreadable.push_back(segment_place(*seg) + " (" + stream_text(key) + "): " +
                                    p.error().what);
        }
      }
      SB_ASSIGN(uint64_t blocks, ms.finish_segment());
      seg->span.blocks = blocks;
      segments[key].push_back({seg->segment, seg->block_size, seg->span, mi, ms.location()});
      if (piece) {
        catalog::MediaLocation ml;
        ml.block_size = seg->block_size;
        ml.bytes = piece->record.size;
        ml.spans.push_back(seg->span);
        piece->record.media = std::move(ml);
        out.pieces.emplace_back(mi, std::move(*piece));
      }
    }
    out.scans.push_back(std::move(scan));
  }
  // Pieces that go on past the end of their first segment: their segments in order, read
  // as one stream across the volumes.
  for (const auto& [key, first_error] : spanning) {
    auto segs = segments[key];
    std::sort(segs.begin(), segs.end(),
              [](const Segment& a, const Segment& b) { return a.index < b.index; });
    catalog::PieceRecord rec;
    rec.location = segs.front().location;
    rec.channel = std::get<1>(key);
    rec.number = std::get<2>(key);
    rec.name = stream_text(key);
    catalog::MediaLocation ml;
    ml.block_size = segs.front().block_size;
    uint64_t seq = 0;
    for (size_t i = 0; i < segs.size(); ++i) {
      if (segs[i].index != i || segs[i].span.first_seq != seq || segs[i].block_size != ml.block_size)
        break;
      ml.spans.push_back(segs[i].span);
      seq += segs[i].span.blocks;
    }
    ml.bytes = seq * ml.block_size;
    MediumScan& scan = out.scans[segs.front().medium];
    const std::string where = "volume " + segs.front().span.volume_id + " file " +
                              std::to_string(segs.front().span.file) + " (" + stream_text(key) + ")";
    rec.media = ml;
    auto in = open_media_piece(rec, std::get<0>(key), drives);
    Result<ScannedPiece> p = in ? capture_piece(**in, ml.bytes, rec.location, keys)
                                : Result<ScannedPiece>(in.error());
    if (!p) {
      if (stops_rebuild(p.error())) return p.error();
      scan.unreadable.push_back(where + ": it goes on past its segment on " +
                                std::to_string(ml.spans.size()) + " volume(s) found (" +
                                p.error().what + "; give the drives of every volume it spans)");
      continue;
    }
    ml.bytes = p->record.size;
    // A segment that starts after the piece's last byte (an empty one, opened at the end
    // of a volume) holds nothing of it.
    while (ml.spans.size() > 1 && ml.spans.back().first_seq * ml.block_size >= ml.bytes)
      ml.spans.pop_back();
    p->record.media = std::move(ml);
    out.pieces.emplace_back(segs.front().medium, std::move(*p));
  }
  return out;
}


}  // namespace

Result<RebuildReport> rebuild_catalog(catalog::Catalog& cat, const RebuildOptions& o) {
  RebuildReport rep;
  std::vector<Medium> media;
  std::set<uint64_t> ids_found;
  std::vector<std::string> drives;  // removable media: read whole, in order
  for (const auto& text : o.media) {
    if (is_media_drive(text)) {
      drives.push_back(text);
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
      if (auto owner = parse_piece_name(n); owner && is_piece_name(n)) ids_found.insert(owner->catalog_id);
      if (auto a = parse_autobackup_name(n)) ids_found.insert(a->catalog_id);
    }
    media.push_back(std::move(m));
  }
  MediaPieces on_drives;
  if (!drives.empty()) {
    SB_ASSIGN(on_drives, scan_media(drives, o.keys));
    for (const auto& [mi, p] : on_drives.pieces)
      if (p.header.catalog_id) ids_found.insert(p.header.catalog_id);
  }
  uint64_t identity = cat.identity();
  if (o.catalog_id && identity && o.catalog_id != identity)
    return fail(Errc::invalid_argument,
                "the catalog in '" + cat.dir() + "' is catalog " + hex_id(identity) +
                    ": pieces of catalog " + hex_id(o.catalog_id) +
                    " are not rebuilt into it (rebuild them into a new catalog directory)");
  if (!identity) identity = o.catalog_id;
  if (!identity) {
    if (ids_found.size() > 1) {
      std::string list;
      for (uint64_t id : ids_found) list += (list.empty() ? "" : ", ") + hex_id(id);
      return fail(Errc::invalid_argument,
                  "the media hold pieces of " + std::to_string(ids_found.size()) +
                      " catalogs (" + list + "): name the one to rebuild with --catalog-id");
    }
    if (!ids_found.empty()) identity = *ids_found.begin();
  }
  rep.catalog_id = identity;
  if (identity && !ids_found.empty() && !ids_found.count(identity)) {
    std::string list;
    for (uint64_t id : ids_found) list += (list.empty() ? "" : ", ") + hex_id(id);
    return fail(Errc::invalid_argument,
                "the media hold pieces of catalog " + list + ", none of catalog " +
                    hex_id(identity) + " ('" + cat.dir() +
                    "'): rebuild them into a new catalog directory");
  }
  for (uint64_t id : ids_found)
    if (id != identity)
      rep.warnings.push_back("pieces of catalog " + hex_id(id) + " are left out (the catalog "
                             "rebuilt is " + hex_id(identity) + ")");

  std::set<std::string> known_pieces;
  std::map<uint64_t, bool> known_ids;  // id -> ended
  for (const auto& b : cat.backups()) {
    known_ids[b.id] = b.ended;
    for (const auto& p : b.pieces) known_pieces.insert(p.name);
  }

  // 1. The newest autobackup of the catalog on each medium.
  std::map<uint64_t, catalog::Backup> from_auto;
  std::set<std::string> auto_pieces;
  for (auto& m : media) {
    MediumScan scan;
    scan.medium = m.text;
    if (o.use_autobackup) {
      std::optional<std::pair<AutobackupName, std::string>> newest;
      for (const auto& n : m.names)
        if (auto a = parse_autobackup_name(n); a && a->catalog_id == identity) {
          a->written_ns = autobackup_written_ns(m.place, n);
          if (!newest || newest->first < *a) newest = std::make_pair(*a, n);
        }
      if (newest) {
        auto recs = read_catalog_autobackup(m.place, newest->second, o.keys);
        if (!recs) {
          if (recs.error().code == Errc::wrong_key || recs.error().code == Errc::invalid_argument)
            return recs.error();
          rep.warnings.push_back(recs.error().what + "; the pieces are read instead");
        } else {
          scan.autobackup = newest->second;
          for (const auto& w : recs->warnings)
            rep.warnings.push_back("catalog autobackup '" + newest->second + "': " + w.what);
          const std::set<std::string> here(m.names.begin(), m.names.end());
          for (auto& b : recs->backups) {
            if (b.begin_missing || b.begin.catalog_id != identity) continue;
            // A backup deleted after the autobackup was written: its pieces are gone.
            if (!b.pieces.empty() && std::none_of(b.pieces.begin(), b.pieces.end(), [&](const auto& p) {
                  return p.media.has_value() || here.count(p.name) > 0;
                })) {
              rep.warnings.push_back("backup " + std::to_string(b.id) + " of catalog autobackup '" +
                                     newest->second + "' is left out: none of its " +
                                     std::to_string(b.pieces.size()) + " piece(s) is on '" +
                                     m.text + "' (deleted since the autobackup was written)");
              continue;
            }
            // The pieces are where they were found now (the media may have been moved or
            // copied since); a piece the medium no longer has keeps its recorded place.
            for (auto& p : b.pieces)
              if (here.count(p.name) && !p.media) p.location = m.place.at.str();
            auto [it, fresh] = from_auto.emplace(b.id, b);
            // The same backup in two autobackups: the one that saw it end wins.
            if (!fresh && !it->second.ended && b.ended) it->second = b;
          }
        }
      }
    }
    rep.media.push_back(std::move(scan));
  }
  for (const auto& [id, b] : from_auto)
    if (b.ended)
      for (const auto& p : b.pieces) auto_pieces.insert(p.name);

  // 2. The pieces neither the catalog nor an autobackup knows.
  std::map<uint64_t, std::vector<ScannedPiece>> scanned;
  std::map<uint64_t, std::vector<std::string>> unreadable;
  std::map<uint64_t, std::string> medium_of;
  for (size_t i = 0; i < media.size(); ++i) {
    Medium& m = media[i];
    MediumScan& scan = rep.media[i];
    for (const auto& n : m.names) {
      auto owner = parse_piece_name(n);
      if (!owner || !is_piece_name(n) || owner->catalog_id != identity) continue;
      ++scan.pieces_found;
      auto known = known_ids.find(owner->backup_id);
      auto in_auto = from_auto.find(owner->backup_id);
      if (known_pieces.count(n) || auto_pieces.count(n) || known != known_ids.end() ||
          (in_auto != from_auto.end() && in_auto->second.ended)) {
        ++scan.pieces_known;
        continue;
      }
      auto p = scan_piece(m, n, o.keys);
      if (!p) {
        if (stops_rebuild(p.error())) return p.error();
        scan.unreadable.push_back(n + ": " + p.error().what);
        unreadable[owner->backup_id].push_back("'" + n + "' (" + p.error().what + ")");
        continue;
      }
      if (p->header.backup_id != owner->backup_id || p->header.catalog_id != identity) {
        const std::string why = "its header names backup " + std::to_string(p->header.backup_id) +
                                " of catalog " + hex_id(p->header.catalog_id);
        scan.unreadable.push_back(n + ": " + why);
        unreadable[owner->backup_id].push_back("'" + n + "' (" + why + ")");
        continue;
      }
      ++scan.pieces_read;
      medium_of.emplace(owner->backup_id, m.place.at.str());
      scanned[owner->backup_id].push_back(std::move(*p));
    }
  }

  // 2b. The pieces found on removable media.
  const size_t first_drive = rep.media.size();
  for (auto& sc : on_drives.scans) rep.media.push_back(std::move(sc));
  for (auto& [mi, p] : on_drives.pieces) {
    if (p.header.catalog_id != identity) continue;
    MediumScan& scan = rep.media[first_drive + mi];
    ++scan.pieces_found;
    const uint64_t bid = p.header.backup_id;
    auto in_auto = from_auto.find(bid);
    if (known_pieces.count(p.record.name) || known_ids.count(bid) ||
        (in_auto != from_auto.end() && in_auto->second.ended)) {
      ++scan.pieces_known;
      continue;
    }
    auto& list = scanned[bid];
    if (std::any_of(list.begin(), list.end(), [&name = p.record.name](const ScannedPiece& q) {
          return q.record.name == name;
        })) {
      scan.unreadable.push_back("'" + p.record.name + "' is on the media twice; the copy on " +
                                p.record.media->spans.front().volume_id + " is left out");
      continue;
    }
    ++scan.pieces_read;
    medium_of.emplace(bid, p.record.location);
    list.push_back(std::move(p));
  }

  // 3. Every backup to add, in id order: from an autobackup when it saw the backup end,
  //    else from the pieces.
  std::set<uint64_t> ids;
  for (const auto& [id, b] : from_auto) ids.insert(id);
  for (const auto& [id, p] : scanned) ids.insert(id);
  for (const auto& [id, u] : unreadable) ids.insert(id);
  std::vector<catalog::Backup> to_add;
  std::map<uint64_t, RebuiltBackup> outcome;
  std::vector<catalog::Backup> others = cat.backups();
  for (const auto& [id, b] : from_auto)
    if (b.ended && !known_ids.count(id)) others.push_back(b);
  PieceCache cache(io::Direct::no, o.keys);
  PieceAssembler assembler(others, cache);
  for (uint64_t id : ids) {
    RebuiltBackup rb;
    rb.id = id;
    auto a = from_auto.find(id);
    catalog::Backup b;
    if (a != from_auto.end() && (a->second.ended || !scanned.count(id))) {
      b = a->second;
      rb.from = "autobackup";
    } else if (scanned.count(id)) {
      b = assembler.assemble(id, scanned[id], unreadable[id], identity, medium_of[id], rb.notes);
      rb.from = "pieces";
    } else {
      rb.from = "pieces";
      rb.reason = "none of its pieces could be read";
      for (const auto& u : unreadable[id]) rb.notes.push_back("unreadable piece " + u);
      outcome[id] = rb;
      continue;
    }
    b.damage = catalog::find_damage(b);
    rb.status = b.status_name();
    rb.files = static_cast<uint64_t>(std::count_if(b.files.begin(), b.files.end(), [](const auto& f) {
      return (f.mode & 0170000) != 0040000;  // regular files, as list counts them
    }));
    rb.pieces = b.pieces.size();
    outcome[id] = rb;
    to_add.push_back(std::move(b));
  }
  SB_ASSIGN(auto imported, cat.import_backups(to_add));
  for (const auto& r : imported) {
    RebuiltBackup& rb = outcome[r.id];
    rb.added = r.added;
    rb.reason = r.reason;
    // A chain on removable media is restored with its change maps kept with the catalog
    // (its pieces cannot be read out of order): they are written from the map frames.
    auto b = std::find_if(to_add.begin(), to_add.end(), [&](const auto& x) { return x.id == r.id; });
    if (!r.added || b == to_add.end() || !on_media(*b) || b->begin.level < 0) continue;
    const auto* maps = assembler.maps_of(r.id);
    if (!maps) continue;
    std::vector<std::pair<std::string, UnitMap>> list(maps->begin(), maps->end());
    if (auto saved = save_media_maps(cat.dir(), r.id, list, o.keys); !saved)
      rb.notes.push_back(saved.error().what + ": a restore through its level cannot build the "
                         "files it holds in part");
  }
  for (auto& [id, rb] : outcome) rep.backups.push_back(std::move(rb));
  return rep;
}

}  // namespace stripeback::engine
