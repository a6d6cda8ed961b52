#include "engine/pieces/piece_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/transform/compress.h"
#include "engine/transform/crypto.h"
#include "engine/pieces/piece_writer.h"
#include "engine/wiring/backends.h"
#include "util/crc32c.h"
#include "util/option_words.h"

namespace stripeback::engine {
namespace {

Result<void> read_at(storage::ReadFile* f, std::byte* p, size_t n, uint64_t off,
                     const std::string& path) {
  SB_ASSIGN(size_t got, f->read_at(p, n, off));
  if (got < n)
    return fail(Errc::corrupt, "piece '" + path + "' is truncated at offset " +
                                   std::to_string(off + got));
  return ok();
}

Error corrupt(const std::string& path, uint64_t off, const std::string& what) {
  return Error{Errc::corrupt, 0,
               "piece '" + path + "' is corrupt at offset " + std::to_string(off) + ": " + what};
}

}  // namespace

PieceReader::~PieceReader() = default;

Result<std::unique_ptr<PieceReader>> PieceReader::open(const std::string& path,
                                                       io::Direct direct, Keyring* keys) {
  SB_ASSIGN(Place place, place_of(path));
  SB_ASSIGN(auto file, place.storage->open_read(place.at, {direct == io::Direct::yes}));
  return open(std::move(file), keys);
}

Result<std::unique_ptr<PieceReader>> PieceReader::open(std::unique_ptr<storage::ReadFile> file,
                                                       Keyring* keys) {
  std::unique_ptr<PieceReader> r(new PieceReader());
  r->path_ = file->name();
  r->file_ = std::move(file);
  const std::string& path = r->path_;
  SB_ASSIGN(const storage::FileInfo st, r->file_->stat());
  r->size_ = st.size;
  if (r->size_ < 3 * kBlock || r->size_ % kBlock != 0)
    return fail(Errc::corrupt, "piece '" + path + "' is truncated or not a piece (" +
                                   std::to_string(r->size_) + " bytes)");
  auto block = AlignedBlock::make(kBlock);
  if (!block) return fail(Errc::no_space, "out of memory reading '" + path + "'");
  std::span<const std::byte> view(block->data, kBlock);

  SB_TRY(read_at(r->file_.get(), block->data, kBlock, 0, path));
  auto hdr = decode_piece_header(view);
  if (!hdr) return corrupt(path, 0, hdr.error().what);
  r->header_ = *hdr;
  if (has_key_slots(r->header_)) {
    auto slots = AlignedBlock::make(size_t{kBlock} * kKeySlots);
    if (!slots) return fail(Errc::no_space, "out of memory reading '" + path + "'");
    SB_TRY(read_at(r->file_.get(), slots->data, slots->size, key_slot_offset(0), path));
    if (auto s = read_key_slots(r->header_, {slots->data, slots->size}); !s)
      return corrupt(path, key_slot_offset(0), s.error().what);
    r->metadata_bytes_ += slots->size;
  }
  if (r->header_.cipher != Cipher::none) {
    if (!keys)
      return fail(Errc::invalid_argument,
                  "piece '" + path + "' is encrypted: give its passphrase or key with " +
                      key_options());
    SB_ASSIGN(r->cipher_, keys->open_piece(r->header_, path));
  }

  uint64_t foot_off = r->size_ - kBlock;
  SB_TRY(read_at(r->file_.get(), block->data, kBlock, foot_off, path));
  auto foot = decode_footer(view);
  if (!foot) return corrupt(path, foot_off, foot.error().what);
  r->footer_ = *foot;
  uint64_t toff = r->footer_.trailer_offset;
  if (toff < first_frame_offset(r->header_) || toff % kBlock != 0 || toff + kBlock > foot_off)
    return corrupt(path, foot_off, "trailer offset " + std::to_string(toff) + " is invalid");

  SB_TRY(read_at(r->file_.get(), block->data, kBlock, toff, path));
  auto th = decode_frame_header(view);
  if (!th) return corrupt(path, toff, th.error().what);
  if (th->type != FrameType::trailer) return corrupt(path, toff, "trailer frame expected");
  uint64_t padded = align_up(th->stored_len);
  if (toff + kBlock + padded != foot_off) return corrupt(path, toff, "trailer length mismatch");
  auto payload = AlignedBlock::make(padded ? padded : kBlock);
  if (!payload) return fail(Errc::no_space, "out of memory reading '" + path + "'");
  SB_TRY(read_at(r->file_.get(), payload->data, padded, toff + kBlock, path));
  if (util::crc32c(payload->data, th->stored_len) != th->stored_crc)
    return corrupt(path, toff + kBlock, "trailer checksum mismatch");
  uint32_t tlen = th->stored_len;
  if (r->cipher_) {
    // The trailer is sealed with its position and the frame count: frames cut off the end
    // or moved in from elsewhere cannot be covered up by rewriting the footer.
    if (!th->sealed || th->sequence != r->footer_.frames)
      return corrupt(path, toff, "trailer of an encrypted piece is not sealed in place");
    if (auto o = r->cipher_->open(payload->data, tlen, th->sequence, frame_aad(toff, *th)); !o)
      return corrupt(path, toff + kBlock, o.error().what);
    tlen -= kTagSize;
  } else if (th->sealed) {
    return corrupt(path, toff, "sealed trailer in a piece without a key");
  }
  auto tr = decode_trailer({reinterpret_cast<const uint8_t*>(payload->data), tlen});
  if (!tr) return corrupt(path, toff + kBlock, tr.error().what);
  r->trailer_ = std::move(*tr);
  r->metadata_bytes_ += 3 * kBlock + padded;
  return r;
}

int PieceReader::find_file(const std::string& path) const {
  for (size_t i = 0; i < trailer_.files.size(); ++i)
    if (trailer_.files[i].path == path) return static_cast<int>(i);
  return -1;
}

Result<std::vector<DigestMap>> PieceReader::read_maps(uint32_t file_id) const {
  std::vector<DigestMap> out;
  if (file_id >= trailer_.maps.size()) return out;
  for (const MapRef& m : trailer_.maps[file_id]) {
    const uint64_t len = kBlock + align_up(m.stored_len);
    if (m.frame_offset < first_frame_offset(header_) || m.frame_offset + len > size_)
      return corrupt(path_, m.frame_offset, "digest map frame is outside the piece");
    auto block = AlignedBlock::make(len);
    if (!block) return fail(Errc::no_space, "out of memory reading '" + path_ + "'");
    SB_TRY(read_at(file_.get(), block->data, len, m.frame_offset, path_));
    auto h = decode_frame_header({block->data, kBlock});
    if (!h) return corrupt(path_, m.frame_offset, h.error().what);
    if (h->type != FrameType::map || h->file_id != file_id || h->offset != m.file_offset ||
        h->stored_len != m.stored_len)
      return corrupt(path_, m.frame_offset, "digest map frame does not match the piece index");
    auto raw = open_frame(block->data, *h, m.frame_offset, nullptr, nullptr, cipher_.get());
    if (!raw) return corrupt(path_, m.frame_offset, raw.error().what);
    const uint32_t plain = h->stored_len - (h->sealed ? kTagSize : 0);
    auto map = decode_digest_map({reinterpret_cast<const uint8_t*>(*raw), plain});
    if (!map) return corrupt(path_, m.frame_offset, map.error().what);
    if (map->unit != m.unit || map->offset != m.file_offset || map->digests.size() != m.units)
      return corrupt(path_, m.frame_offset, "digest map does not match the piece index");
    out.push_back(std::move(*map));
  }
  return out;
}

Result<const std::byte*> open_frame(std::byte* frame, const FrameHeader& h, uint64_t frame_offset,
                                    Decompressor* dz, std::byte* scratch,
                                    const FrameCipher* cipher) {
  auto bad = [&](uint64_t at, const std::string& what) {
    return Error{Errc::corrupt, 0, "at offset " + std::to_string(at) + ": " + what};
  };
  std::byte* payload = frame + kBlock;
  if (h.type == FrameType::zero) return payload;
  if (cipher && !h.sealed) return bad(frame_offset, "unsealed frame in an encrypted piece");
  // A digest_only frame has no CRC32C: the caller's digest check covers its payload.
  if (!h.digest_only && util::crc32c(payload, h.stored_len) != h.stored_crc)
    return bad(frame_offset + kBlock, "data checksum mismatch");
  uint32_t len = h.stored_len;
  if (h.sealed) {
    if (!cipher) return bad(frame_offset, "sealed frame in a piece without a key");
    if (len < kTagSize) return bad(frame_offset, "sealed frame shorter than its tag");
    if (auto r = cipher->open(payload, len, h.sequence, frame_aad(frame_offset, h)); !r)
      return bad(frame_offset + kBlock, r.error().what);
    len -= kTagSize;
  }
  if (!h.compressed) return static_cast<const std::byte*>(payload);
  if (!dz || !scratch)
    return bad(frame_offset, "frame is compressed but no decompressor was set up");
  if (auto r = dz->decompress(payload, len, scratch, h.raw_len); !r)
    return bad(frame_offset + kBlock, r.error().what);
  return static_cast<const std::byte*>(scratch);
}

Result<const std::byte*> verify_frame(std::byte* frame, const Extent& expect, uint32_t file_id,
                                      const std::string& piece_path, const std::string& file_path,
                                      Decompressor* dz, std::byte* scratch,
                                      const FrameCipher* cipher) {
  auto bad = [&](uint64_t at, const std::string& what) {
    return fail(Errc::corrupt, "piece '" + piece_path + "' is corrupt at offset " +
                                   std::to_string(at) + " (file '" + file_path +
                                   "', file offset " + std::to_string(expect.file_offset) +
                                   "): " + what);
  };
  auto h = decode_frame_header({frame, kBlock});
  if (!h) return bad(expect.frame_offset, h.error().what);
  if (h->type != expect.type || h->file_id != file_id || h->offset != expect.file_offset ||
      h->raw_len != expect.raw_len || h->stored_len != expect.stored_len)
    return bad(expect.frame_offset, "frame header does not match the piece index");
  // A sealed frame keeps its digest inside the (authenticated) index only.
  if (!h->sealed && h->raw_digest != expect.raw_digest)
    return bad(expect.frame_offset, "frame digest does not match the piece index");
  auto raw = open_frame(frame, *h, expect.frame_offset, dz, scratch, cipher);
  if (!raw) {
    const std::string& w = raw.error().what;
    return fail(Errc::corrupt, "piece '" + piece_path + "' is corrupt " + w.substr(0, w.find(':')) +
                                   " (file '" + file_path + "', file offset " +
                                   std::to_string(expect.file_offset) + "):" +
                                   w.substr(w.find(':') + 1));
  }
  if (h->type != FrameType::zero && util::digest(*raw, h->raw_len) != expect.raw_digest)
    return bad(expect.frame_offset + kBlock, "data digest mismatch");
  return raw;
}

}  // namespace stripeback::engine
