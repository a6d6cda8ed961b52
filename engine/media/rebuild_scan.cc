#include "engine/media/rebuild_scan.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "engine/format/piece_walk.h"
#include "engine/pieces/piece_reader.h"

namespace stripeback::engine::rebuild {
namespace {

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
  if (has_key_slots(*h)) {
    std::vector<std::byte> slots(size_t{kBlock} * kKeySlots);
    SB_TRY(read_exact(in, slots.data(), slots.size(), key_slot_offset(0), nullptr, "key slots"));
    kept->keep(key_slot_offset(0), slots);
  }
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

// A segment of a piece's stream, as the scan of its volume found it.
struct Segment {
  uint32_t index = 0;
  uint32_t block_size = 0;
  catalog::MediaSpan span;
  size_t medium = 0;
  std::string location;
};

// The scan of the volumes in the drives: pieces read whole, the segments of every stream,
// and the streams that go on past their first segment.
struct DriveScan {
  const std::vector<std::string>& drives;
  Keyring* keys;
  MediaPieces out;
  std::map<StreamKey, std::vector<Segment>> segments;
  std::map<StreamKey, std::string> spanning;  // streams to read across volumes: why
};

// Reads the piece that starts at segment `seg` of the volume in drive `mi`: the piece, or
// none when it is unreadable (said in `scan`) or goes on past its segment (noted in
// `s.spanning`).
Result<std::optional<ScannedPiece>> read_first_segment(DriveScan& s, size_t mi, MediaScan& ms,
                                                       const MediaSegment& seg,
                                                       MediumScan& scan) {
  const StreamKey key{seg.backup_id, seg.channel, seg.piece};
  SegmentStream in(ms, ms.location() + " " + segment_place(seg));
  auto p = capture_piece(in, ~uint64_t{0} >> 2, ms.location(), s.keys);
  if (p && (p->header.backup_id != seg.backup_id || p->header.channel != seg.channel ||
            p->header.piece_number != seg.piece)) {
    scan.unreadable.push_back(segment_place(seg) + ": its piece header names " +
                              stream_text({p->header.backup_id, p->header.channel,
                                           p->header.piece_number}) +
                              ", its segment header " + stream_text(key));
  } else if (p) {
    return std::optional<ScannedPiece>(std::move(*p));
  } else if (in.ended()) {
    s.spanning[key] = p.error().what;
  } else if (stops_rebuild(p.error())) {
    return p.error().wrap("'" + s.drives[mi] + "' " + segment_place(seg));
  } else {
    scan.unreadable.push_back(segment_place(seg) + " (" + stream_text(key) + "): " +
                              p.error().what);
  }
  return std::optional<ScannedPiece>();
}

// Every segment of the volume in drive `mi`, in order; the pieces that start and end in one
// segment are read.
Result<void> scan_volume(DriveScan& s, size_t mi) {
  MediumScan scan;
  scan.medium = s.drives[mi];
  auto opened = scan_media_volume(s.drives[mi]);
  if (!opened) return opened.error().wrap("unable to read the medium '" + s.drives[mi] + "'");
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
      SB_ASSIGN(piece, read_first_segment(s, mi, ms, *seg, scan));
    }
    SB_ASSIGN(uint64_t blocks, ms.finish_segment());
    seg->span.blocks = blocks;
    s.segments[key].push_back({seg->segment, seg->block_size, seg->span, mi, ms.location()});
    if (piece) {
      catalog::MediaLocation ml;
      ml.block_size = seg->block_size;
      ml.bytes = piece->record.size;
      ml.spans.push_back(seg->span);
      piece->record.media = std::move(ml);
      s.out.pieces.emplace_back(mi, std::move(*piece));
    }
  }
  s.out.scans.push_back(std::move(scan));
  return ok();
}

// A piece that goes on past the end of its first segment: its segments in order, read as
// one stream across the volumes.
Result<void> read_spanning(DriveScan& s, const StreamKey& key) {
  auto segs = s.segments[key];
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
  MediumScan& scan = s.out.scans[segs.front().medium];
  const std::string where = "volume " + segs.front().span.volume_id + " file " +
                            std::to_string(segs.front().span.file) + " (" + stream_text(key) + ")";
  rec.media = ml;
  auto in = open_media_piece(rec, std::get<0>(key), s.drives);
  Result<ScannedPiece> p = in ? capture_piece(**in, ml.bytes, rec.location, s.keys)
                              : Result<ScannedPiece>(in.error());
  if (!p) {
    if (stops_rebuild(p.error())) return p.error();
    scan.unreadable.push_back(where + ": it goes on past its segment on " +
                              std::to_string(ml.spans.size()) + " volume(s) found (" +
                              p.error().what + "; give the drives of every volume it spans)");
    return ok();
  }
  ml.bytes = p->record.size;
  // A segment that starts after the piece's last byte (an empty one, opened at the end
  // of a volume) holds nothing of it.
  while (ml.spans.size() > 1 && ml.spans.back().first_seq * ml.block_size >= ml.bytes)
    ml.spans.pop_back();
  p->record.media = std::move(ml);
  s.out.pieces.emplace_back(segs.front().medium, std::move(*p));
  return ok();
}

}  // namespace

bool stops_rebuild(const Error& e) {
  return e.code == Errc::wrong_key || e.code == Errc::invalid_argument ||
         e.code == Errc::unsupported;
}

Result<ScannedPiece> scan_piece(const Medium& m, const std::string& name, Keyring* keys) {
  SB_ASSIGN(auto file, m.place.storage->open_read(m.place.at.join(name), {false}));
  return read_piece(std::move(file), name, m.place.at.str(), keys);
}

Result<MediaPieces> scan_media(const std::vector<std::string>& drives, Keyring* keys) {
  DriveScan s{drives, keys, {}, {}, {}};
  for (size_t mi = 0; mi < drives.size(); ++mi) SB_TRY(scan_volume(s, mi));
  for (const auto& [key, first_error] : s.spanning) SB_TRY(read_spanning(s, key));
  return std::move(s.out);
}

}  // namespace stripeback::engine::rebuild
