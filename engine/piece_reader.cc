#include "engine/piece_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/compress.h"
#include "engine/crypto.h"
#include "engine/piece_writer.h"
#include "io/remote.h"
#include "util/crc32c.h"

namespace stripeback::engine {
namespace {

Result<void> read_at(int fd, std::byte* p, size_t n, uint64_t off, const std::string& path) {
  SB_ASSIGN(size_t got, io::pread_fd(fd, p, n, off, "piece '" + path + "'"));
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
  std::unique_ptr<PieceReader> r(new PieceReader());
  r->path_ = path;
  SB_ASSIGN(r->file_, io::open_read(path, direct));
  SB_ASSIGN(const struct stat st, io::fstat_fd(r->fd(), "piece '" + path + "'"));
  r->size_ = static_cast<uint64_t>(st.st_size);
  if (r->size_ < 3 * kBlock || r->size_ % kBlock != 0)
    return fail(Errc::corrupt, "piece '" + path + "' is truncated or not a piece (" +
                                   std::to_string(r->size_) + " bytes)");
  auto block = AlignedBlock::make(kBlock);
  if (!block) return fail(Errc::no_space, "out of memory reading '" + path + "'");
  std::span<const std::byte> view(block->data, kBlock);

  SB_TRY(read_at(r->fd(), block->data, kBlock, 0, path));
  auto hdr = decode_piece_header(view);
  if (!hdr) return corrupt(path, 0, hdr.error().what);
  r->header_ = *hdr;
  if (r->header_.cipher != Cipher::none) {
    if (!keys)
      return fail(Errc::invalid_argument,
                  "piece '" + path + "' is encrypted: give its passphrase or key with "
                  "--passphrase-file, --passphrase-env or --key-file");
    SB_ASSIGN(r->cipher_, keys->open_piece(r->header_, path));
  }

  uint64_t foot_off = r->size_ - kBlock;
  SB_TRY(read_at(r->fd(), block->data, kBlock, foot_off, path));
  auto foot = decode_footer(view);
  if (!foot) return corrupt(path, foot_off, foot.error().what);
  r->footer_ = *foot;
  uint64_t toff = r->footer_.trailer_offset;
  if (toff < kBlock || toff % kBlock != 0 || toff + kBlock > foot_off)
    return corrupt(path, foot_off, "trailer offset " + std::to_string(toff) + " is invalid");

  SB_TRY(read_at(r->fd(), block->data, kBlock, toff, path));
  auto th = decode_frame_header(view);
  if (!th) return corrupt(path, toff, th.error().what);
  if (th->type != FrameType::trailer) return corrupt(path, toff, "trailer frame expected");
  uint64_t padded = align_up(th->stored_len);
  if (toff + kBlock + padded != foot_off) return corrupt(path, toff, "trailer length mismatch");
  auto payload = AlignedBlock::make(padded ? padded : kBlock);
  if (!payload) return fail(Errc::no_space, "out of memory reading '" + path + "'");
  SB_TRY(read_at(r->fd(), payload->data, padded, toff + kBlock, path));
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
  r->metadata_bytes_ = 3 * kBlock + padded;
  return r;
}

int PieceReader::find_file(const std::string& path) const {
  for (size_t i = 0; i < trailer_.files.size(); ++i)
    if (trailer_.files[i].path == path) return static_cast<int>(i);
  return -1;
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
  std::byte* payload = frame + kBlock;
  if (h->type == FrameType::zero) return payload;
  if (cipher && !h->sealed) return bad(expect.frame_offset, "unsealed frame in an encrypted piece");
  if (util::crc32c(payload, h->stored_len) != h->stored_crc)
    return bad(expect.frame_offset + kBlock, "data checksum mismatch");
  uint32_t len = h->stored_len;
  if (h->sealed) {
    if (!cipher) return bad(expect.frame_offset, "sealed frame in a piece without a key");
    if (auto r = cipher->open(payload, len, h->sequence, frame_aad(expect.frame_offset, *h)); !r)
      return bad(expect.frame_offset + kBlock, r.error().what);
    len -= kTagSize;
  }
  const std::byte* raw = payload;
  if (h->compressed) {
    if (!dz || !scratch)
      return bad(expect.frame_offset, "frame is compressed but no decompressor was set up");
    if (auto r = dz->decompress(payload, len, scratch, h->raw_len); !r)
      return bad(expect.frame_offset + kBlock, r.error().what);
    raw = scratch;
  }
  if (util::digest(raw, h->raw_len) != expect.raw_digest)
    return bad(expect.frame_offset + kBlock, "data digest mismatch");
  return raw;
}

}  // namespace stripeback::engine
