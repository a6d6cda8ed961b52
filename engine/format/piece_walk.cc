#include "engine/format/piece_walk.h"

#include <cstring>

#include "engine/transform/compress.h"
#include "util/crc32c.h"

namespace stripeback::engine {
namespace {

// Whether a frame's stored payload holds: its CRC32C, or for a digest_only frame (which has
// none) the digest of its raw bytes, decoded into `raw` first when it is compressed. No key
// is needed: a sealed frame always has its CRC32C.
bool payload_holds(const FrameHeader& h, std::span<const std::byte> payload, Decompressor& dz,
                   std::vector<std::byte>& raw) {
  if (!h.digest_only) return util::crc32c(payload.data(), h.stored_len) == h.stored_crc;
  const std::byte* bytes = payload.data();
  if (h.compressed) {
    raw.resize(h.raw_len);
    if (!dz.decompress(payload.data(), h.stored_len, raw.data(), h.raw_len)) return false;
    bytes = raw.data();
  }
  return util::digest(bytes, h.raw_len) == h.raw_digest;
}

}  // namespace

Result<void> read_exact(storage::ReadFile& f, std::byte* buf, size_t len, uint64_t offset,
                        uint64_t* bytes, const std::string& what) {
  SB_ASSIGN(size_t got, f.read_at(buf, len, offset));
  if (bytes) *bytes += got;
  if (got != len)
    return fail(Errc::corrupt, "truncated: the piece ends in its " + what + " (at offset " +
                                   std::to_string(offset + got) + ")");
  return ok();
}

Result<WalkedPiece> walk_piece(storage::ReadFile& f, std::span<const std::byte> head,
                               uint64_t limit, std::optional<uint32_t> recorded,
                               uint64_t* bytes, const FrameObserver& observe,
                               std::vector<BadFrame>* bad) {
  PieceChecksum sum;
  sum.add_piece_header(head);
  std::vector<std::byte> block(kBlock), payload, raw;
  Decompressor dz;
  // Frames begin after the header block, and after the key slots of a version 4 piece.
  auto header = decode_piece_header(head);
  uint64_t at = header ? first_frame_offset(*header) : kBlock;
  const uint16_t version = header ? header->version : kNewestPieceVersion;
  uint32_t n = 0;
  for (;; ++n) {
    if (at + 2 * kBlock > limit)
      return fail(Errc::corrupt, "no trailer frame before the end of the piece");
    SB_TRY(read_exact(f, block.data(), kBlock, at, bytes, "frame headers"));
    auto h = decode_frame_header(block);
    if (!h) return fail(Errc::corrupt, "frame at offset " + std::to_string(at) + ": " + h.error().what);
    if (h->sequence != n)
      return fail(Errc::corrupt, "frame at offset " + std::to_string(at) + " has sequence " +
                                     std::to_string(h->sequence) + ", expected " + std::to_string(n));
    if (h->digest_only && version < kDigestOnlyPieceVersion)
      return fail(Errc::corrupt, "frame at offset " + std::to_string(at) +
                                     " has no payload checksum, which a version " +
                                     std::to_string(version) + " piece must have");
    sum.add_frame_header(block);
    const uint64_t padded = align_up(h->stored_len);
    payload.resize(padded);
    if (padded) {
      SB_TRY(read_exact(f, payload.data(), padded, at + kBlock, bytes, "frame payloads"));
      if (!payload_holds(*h, payload, dz, raw)) {
        if (!bad || h->type == FrameType::trailer)
          return fail(Errc::corrupt,
                      "payload checksum mismatch in the frame at offset " + std::to_string(at));
        bad->push_back({at, *h});
        at += kBlock + padded;
        continue;
      }
    }
    if (observe) observe(at, *h, block, payload);
    if (h->type == FrameType::trailer) break;
    at += kBlock + padded;
  }
  const uint64_t trailer = at;
  at = trailer + kBlock + payload.size();  // past the trailer's padded payload
  SB_TRY(read_exact(f, block.data(), kBlock, at, bytes, "footer"));
  auto foot = decode_footer(block);
  if (!foot) return fail(Errc::corrupt, "footer: " + foot.error().what);
  if (foot->trailer_offset != trailer || foot->frames != n)
    return fail(Errc::corrupt, "the trailer frame is at offset " + std::to_string(trailer) +
                                   " (frame " + std::to_string(n) + "); the footer says " +
                                   std::to_string(foot->trailer_offset) + " (frame " +
                                   std::to_string(foot->frames) + ")");
  if (sum.value() != foot->piece_crc)
    return fail(Errc::corrupt, "the piece checksum computed from its frames is " +
                                   checksum_hex(sum.value()) + ", the footer's " + checksum_hex(foot->piece_crc));
  if (recorded && foot->piece_crc != *recorded)
    return fail(Errc::corrupt, "the piece checksum computed from its frames is " +
                                   checksum_hex(sum.value()) + ", the footer's " +
                                   checksum_hex(foot->piece_crc) + ", the catalog's " + checksum_hex(*recorded));
  return WalkedPiece{at + kBlock, *foot, std::move(block)};
}

void CapturedPiece::keep(uint64_t offset, std::span<const std::byte> bytes) {
  if (!ranges_.empty()) {
    auto& [start, last] = *ranges_.rbegin();
    if (start + last.size() == offset) {
      last.insert(last.end(), bytes.begin(), bytes.end());
      return;
    }
  }
  ranges_.emplace(offset, std::vector<std::byte>(bytes.begin(), bytes.end()));
}

Result<storage::FileInfo> CapturedPiece::stat() {
  storage::FileInfo i;
  i.size = size_;
  i.mode = 0100600;
  return i;
}

Result<size_t> CapturedPiece::read_at(std::byte* buf, size_t len, uint64_t offset) {
  if (offset >= size_) return size_t{0};
  len = static_cast<size_t>(std::min<uint64_t>(len, size_ - offset));
  auto it = ranges_.upper_bound(offset);
  if (it != ranges_.begin()) {
    --it;
    const uint64_t start = it->first;
    if (offset + len <= start + it->second.size()) {
      std::memcpy(buf, it->second.data() + (offset - start), len);
      return len;
    }
  }
  return fail(Errc::corrupt, "'" + name_ + "': bytes " + std::to_string(offset) + ".." +
                                 std::to_string(offset + len) + " were not kept when it was read");
}

}  // namespace stripeback::engine
