#include "engine/pieces/piece_audit.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/transform/crypto.h"
#include "engine/pieces/piece_writer.h"
#include "util/crc32c.h"

namespace stripeback::engine {
namespace {

constexpr uint64_t kWindow = 1u << 20;

// Reads ahead in windows that stop where the next already-seen frame starts, so a run of
// zero frames costs one read and no data frame is read twice.
class Window {
 public:
  Window(const PieceReader& piece, const std::map<uint64_t, FrameHeaderBytes>& seen)
      : piece_(piece), seen_(seen) {}

  // `n` bytes at piece offset `off`, valid until the next call.
  Result<const std::byte*> at(uint64_t off, uint64_t n) {
    if (off >= start_ && off + n <= start_ + len_) return buf_->data + (off - start_);
    uint64_t limit = piece_.footer().trailer_offset;
    auto next = seen_.upper_bound(off);
    if (next != seen_.end()) limit = std::min(limit, next->first);
    uint64_t want = std::max(n, std::min(kWindow, limit > off ? limit - off : 0));
    want = align_up(want);
    if (!buf_ || cap_ < want) {
      buf_ = AlignedBlock::make(want);
      if (!buf_) return fail(Errc::no_space, "out of memory auditing '" + piece_.path() + "'");
      cap_ = want;
    }
    SB_ASSIGN(size_t got, piece_.file()->read_at(buf_->data, want, off));
    read_ += got;
    start_ = off;
    len_ = got;
    if (got < n)
      return fail(Errc::corrupt, "piece '" + piece_.path() + "' is truncated at offset " +
                                     std::to_string(off + got));
    return buf_->data;
  }
  uint64_t bytes_read() const { return read_; }

 private:
  const PieceReader& piece_;
  const std::map<uint64_t, FrameHeaderBytes>& seen_;
  std::unique_ptr<AlignedBlock> buf_;
  uint64_t cap_ = 0, start_ = 0, len_ = 0, read_ = 0;
};

struct Indexed {
  uint64_t frame_offset;
  uint32_t file_id;
  const Extent* extent;
};

bool same_meta(const FileMeta& a, const FileMeta& b) {
  return a.path == b.path && a.size == b.size && a.mode == b.mode && a.mtime_ns == b.mtime_ns &&
         a.uid == b.uid && a.gid == b.gid;
}

}  // namespace

void HeaderLog::add(uint64_t offset, const std::byte* header) {
  FrameHeaderBytes h;
  std::memcpy(h.data(), header, h.size());
  std::lock_guard lock(mu_);
  seen_[offset] = h;
}

std::map<uint64_t, FrameHeaderBytes> HeaderLog::take() {
  std::lock_guard lock(mu_);
  return std::move(seen_);
}

Result<uint64_t> audit_piece(const PieceReader& piece,
                             const std::map<uint64_t, FrameHeaderBytes>& seen) {
  const std::string& path = piece.path();
  auto bad = [&](uint64_t at, const std::string& what) {
    return fail(Errc::corrupt,
                "piece '" + path + "' is corrupt at offset " + std::to_string(at) + ": " + what);
  };
  const Trailer& tr = piece.trailer();
  const uint64_t end = piece.footer().trailer_offset;
  std::vector<Indexed> index;
  for (uint32_t fid = 0; fid < tr.extents.size(); ++fid)
    for (const Extent& e : tr.extents[fid]) index.push_back({e.frame_offset, fid, &e});
  std::sort(index.begin(), index.end(),
            [](const Indexed& a, const Indexed& b) { return a.frame_offset < b.frame_offset; });

  Window win(piece, seen);
  PieceChecksum sum;
  SB_ASSIGN(const std::byte* head, win.at(0, kBlock));
  sum.add_piece_header({head, kBlock});
  uint64_t p = first_frame_offset(piece.header());
  uint32_t frames = 0;
  size_t next = 0;
  while (p < end) {
    FrameHeaderBytes hdr;
    if (auto s = seen.find(p); s != seen.end()) {
      hdr = s->second;
    } else {
      SB_ASSIGN(const std::byte* got, win.at(p, kBlock));
      std::memcpy(hdr.data(), got, hdr.size());
    }
    const std::byte* hb = hdr.data();
    auto h = decode_frame_header({hb, kFrameHeaderSize});
    if (!h) return bad(p, h.error().what);
    if (h->sequence != frames)
      return bad(p, "frame " + std::to_string(frames) + " carries sequence number " +
                        std::to_string(h->sequence));
    if (h->digest_only && piece.header().version < kDigestOnlyPieceVersion)
      return bad(p, "frame has no payload checksum, which a version " +
                        std::to_string(piece.header().version) + " piece must have");
    uint64_t len = kBlock + align_up(h->stored_len);
    if (p + len > end) return bad(p, "frame runs into the trailer");
    if (next < index.size() && index[next].frame_offset < p)
      return bad(index[next].frame_offset, "the index names a frame inside another frame");
    if (next < index.size() && index[next].frame_offset == p) {
      const Indexed& ix = index[next++];
      const Extent& e = *ix.extent;
      if (h->type != e.type || h->file_id != ix.file_id || h->offset != e.file_offset ||
          h->raw_len != e.raw_len || h->stored_len != e.stored_len)
        return bad(p, "frame header does not match the piece index");
      if (!h->sealed && h->raw_digest != e.raw_digest)
        return bad(p, "frame digest does not match the piece index");
      if (h->type == FrameType::zero && h->stored_len != 0)
        return bad(p, "zero frame with a payload");
    } else {
      // Not in the extent index: only a file record or an indexed digest map stands here.
      const MapRef* mref = nullptr;
      if (h->type == FrameType::map && h->file_id < tr.maps.size())
        for (const MapRef& m : tr.maps[h->file_id])
          if (m.frame_offset == p) mref = &m;
      if (h->type == FrameType::map && (!mref || mref->stored_len != h->stored_len ||
                                        mref->file_offset != h->offset))
        return bad(p, "digest map frame is missing from the piece index");
      if (h->type != FrameType::file && h->type != FrameType::map)
        return bad(p, "frame is missing from the piece index");
      if (h->file_id >= tr.files.size()) return bad(p, "file record for an unknown file id");
      SB_ASSIGN(const std::byte* frame, win.at(p, len));
      std::vector<std::byte> payload(frame + kBlock, frame + kBlock + h->stored_len);
      if (util::crc32c(payload.data(), payload.size()) != h->stored_crc)
        return bad(p + kBlock, "file record checksum mismatch");
      uint32_t plen = h->stored_len;
      if (h->sealed) {
        if (!piece.cipher()) return bad(p, "sealed frame in a piece without a key");
        if (auto o = piece.cipher()->open(payload.data(), plen, h->sequence, frame_aad(p, *h));
            !o)
          return bad(p + kBlock, o.error().what);
        plen -= kTagSize;
      } else if (piece.cipher()) {
        return bad(p, "unsealed frame in an encrypted piece");
      }
      if (mref) {
        auto map = decode_digest_map({reinterpret_cast<const uint8_t*>(payload.data()), plen});
        if (!map) return bad(p + kBlock, map.error().what);
        if (map->unit != mref->unit || map->digests.size() != mref->units)
          return bad(p, "digest map does not match the piece index");
        sum.add_frame_header({hb, kFrameHeaderSize});
        p += len;
        ++frames;
        continue;
      }
      auto meta = decode_file_meta({reinterpret_cast<const uint8_t*>(payload.data()), plen});
      if (!meta) return bad(p + kBlock, meta.error().what);
      if (!same_meta(*meta, tr.files[h->file_id]))
        return bad(p, "file record of '" + meta->path + "' does not match the trailer");
    }
    sum.add_frame_header({hb, kFrameHeaderSize});
    p += len;
    ++frames;
  }
  if (p != end) return bad(end, "frames overrun the trailer");
  if (next != index.size())
    return bad(index[next].frame_offset, "the index names a frame that is not there");
  if (frames != piece.footer().frames)
    return bad(end, "the footer counts " + std::to_string(piece.footer().frames) +
                        " frames, the piece holds " + std::to_string(frames));
  SB_ASSIGN(const std::byte* th, win.at(end, kBlock));
  sum.add_frame_header({th, kBlock});
  if (sum.value() != piece.footer().piece_crc)
    return bad(piece.size() - kBlock, "whole-piece checksum mismatch");
  return win.bytes_read();
}

}  // namespace stripeback::engine
