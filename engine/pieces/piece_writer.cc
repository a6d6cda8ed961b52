#include "engine/pieces/piece_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "engine/transform/crypto.h"
#include "util/crash_point.h"
#include "util/crc32c.h"

namespace stripeback::engine {

std::unique_ptr<AlignedBlock> AlignedBlock::make(size_t size) {
  auto b = std::make_unique<AlignedBlock>();
  void* p = nullptr;
  if (posix_memalign(&p, kBlock, size) != 0) return nullptr;
  std::memset(p, 0, size);
  b->data = static_cast<std::byte*>(p);
  b->size = size;
  return b;
}

AlignedBlock::~AlignedBlock() { std::free(data); }

Result<std::unique_ptr<PieceWriter>> PieceWriter::start(std::unique_ptr<storage::WriteFile> file,
                                                        const storage::StorageCaps& caps,
                                                        const PieceHeader& header, Keyring* keys) {
  std::unique_ptr<PieceWriter> w(new PieceWriter());
  w->file_ = std::move(file);
  w->header_ = header;
  w->can_preallocate_ = caps.preallocate;
  if (keys) {
    // Encrypted pieces are written in version 4: the data key's wrap goes to a key slot
    // that `rekey` can rewrite without touching what the piece checksum covers. Every
    // frame of such a piece is sealed and keeps its payload CRC32C (crosscheck --deep
    // checks it without the key), so a version 5 encrypted piece would be a version 4
    // one with another number. (A header that asks for an older version, 1 or 2, gets it:
    // the format tests write those.)
    if (w->header_.version >= kMapPieceVersion) w->header_.version = kSlottedPieceVersion;
    SB_ASSIGN(w->cipher_, keys->new_piece(w->header_));
  }
  w->next_offset_ = first_frame_offset(w->header_);  // the header block (and key slots)
  return w;
}

Result<PieceWriter::PlacedBlock> PieceWriter::header_block() {
  const uint64_t len = first_frame_offset(header_);
  auto block = AlignedBlock::make(len);
  if (!block) return fail(Errc::no_space, "unable to allocate a piece header block");
  encode_piece_header(header_, std::span<std::byte, kBlock>(block->data, kBlock));
  checksum_.add_piece_header({block->data, kBlock});
  for (uint32_t i = 0; has_key_slots(header_) && i < kKeySlots; ++i)
    if (header_.slots[i])
      encode_key_slot(*header_.slots[i],
                      std::span<std::byte, kBlock>(block->data + key_slot_offset(i), kBlock));
  return PlacedBlock{std::move(block), FramePlacement{0, static_cast<uint32_t>(len)}};
}

PieceWriter::~PieceWriter() = default;

uint32_t PieceWriter::add_file(const FileMeta& meta) {
  auto id = static_cast<uint32_t>(files_.size());
  files_.push_back(meta);
  files_.back().file_id = id;
  extents_.emplace_back();
  maps_.emplace_back();
  trailer_estimate_ += 64 + meta.path.size();
  return id;
}

uint64_t PieceWriter::projected_size(uint64_t frame_length) const {
  // Each extent costs 41 bytes in the trailer; count one more for the frame being placed.
  return next_offset_ + frame_length + kBlock + align_up(trailer_estimate_ + 41) + kBlock;
}

void PieceWriter::preallocate_ahead() {
  constexpr uint64_t kStep = 64u << 20;
  if (!can_preallocate_ || next_offset_ + (2u << 20) <= allocated_) return;
  uint64_t want = next_offset_ + kStep;
  if (!file_->preallocate(allocated_, want - allocated_)) {
    can_preallocate_ = false;  // full or refused: writes simply extend the file
    return;
  }
  allocated_ = want;
}

FramePlacement PieceWriter::add(const EncodedFrame& f) {
  const FrameHeader& h = f.header;
  ++frames_;
  checksum_.add_frame_header({f.block, kBlock});
  preallocate_ahead();
  FramePlacement p{next_offset_, f.length};
  if (h.type == FrameType::data || h.type == FrameType::zero) {
    extents_[h.file_id].push_back(
        Extent{h.offset, h.raw_len, p.offset, h.stored_len, h.type, f.raw_digest});
    trailer_estimate_ += 41;
  }
  if (h.type == FrameType::map) trailer_estimate_ += 28;
  next_offset_ += p.length;
  return p;
}

Result<FramePlacement> PieceWriter::place_meta(FrameHeader h, std::byte* block) {
  auto f = encode_frame(h, next(), {block, nullptr, 0}, {nullptr, cipher_.get(), header_.version});
  if (!f) return f.error().wrap("piece '" + path() + "'");
  return add(*f);
}

Result<PieceWriter::PlacedBlock> PieceWriter::file_frame(uint32_t file_id) {
  auto payload = encode_file_meta(files_[file_id]);
  auto block = AlignedBlock::make(kBlock + align_up(payload.size() + kTagSize));
  if (!block) return fail(Errc::no_space, "unable to allocate a file record block");
  std::memcpy(block->data + kBlock, payload.data(), payload.size());
  FrameHeader h;
  h.type = FrameType::file;
  h.file_id = file_id;
  h.stored_len = static_cast<uint32_t>(payload.size());
  SB_ASSIGN(auto placement, place_meta(h, block->data));
  return PlacedBlock{std::move(block), placement};
}

Result<PieceWriter::PlacedBlock> PieceWriter::map_frame(uint32_t file_id, const DigestMap& map) {
  auto payload = encode_digest_map(map);
  auto block = AlignedBlock::make(kBlock + align_up(payload.size() + kTagSize));
  if (!block) return fail(Errc::no_space, "unable to allocate a digest map block");
  std::memcpy(block->data + kBlock, payload.data(), payload.size());
  FrameHeader h;
  h.type = FrameType::map;
  h.file_id = file_id;
  h.offset = map.offset;
  h.stored_len = static_cast<uint32_t>(payload.size());
  auto f = encode_frame(h, next(), {block->data, nullptr, 0}, {nullptr, cipher_.get(), header_.version});
  if (!f) return f.error().wrap("piece '" + path() + "'");
  FramePlacement placement = add(*f);
  maps_[file_id].push_back({map.offset, map.unit, static_cast<uint32_t>(map.digests.size()),
                            placement.offset, f->header.stored_len});
  return PlacedBlock{std::move(block), placement};
}

uint64_t PieceWriter::map_frame_bound(size_t units) {
  return kBlock + align_up(1 + 4 + 8 + 4 + 16 * units + kTagSize);
}

Result<PieceWriter::PlacedBlock> PieceWriter::trailer_block(uint32_t* piece_crc) {
  for (size_t i = 0; i < files_.size(); ++i) {
    auto& ex = extents_[i];
    std::sort(ex.begin(), ex.end(),
              [](const Extent& a, const Extent& b) { return a.file_offset < b.file_offset; });
    util::DigestCombiner comb;
    for (const Extent& e : ex) comb.add(e.file_offset, e.raw_len, e.raw_digest);
    files_[i].digest = comb.finish();
  }
  maps_.resize(files_.size());
  Trailer t{kTrailerVersion, files_, extents_, maps_};
  if (lock_) {
    t.version = kLockedTrailerVersion;
    t.lock_mode = static_cast<uint8_t>(lock_->mode);
    t.lock_until_ns = lock_->until_ns;
  }
  auto payload = encode_trailer(t);
  size_t padded = align_up(payload.size() + (cipher_ ? kTagSize : 0));
  auto block = AlignedBlock::make(kBlock + padded + kBlock);
  if (!block) return fail(Errc::no_space, "unable to allocate the trailer of '" + path() + "'");
  std::memcpy(block->data + kBlock, payload.data(), payload.size());
  FrameHeader h;
  h.type = FrameType::trailer;
  h.stored_len = static_cast<uint32_t>(payload.size());
  uint64_t trailer_offset = next_offset_;
  uint32_t frames_before = frames_;
  SB_TRY(place_meta(h, block->data));
  Footer f{trailer_offset, frames_before, checksum_.value()};
  encode_footer(f, std::span<std::byte, kBlock>(block->data + kBlock + padded, kBlock));
  next_offset_ = trailer_offset + block->size;
  *piece_crc = f.piece_crc;
  auto len = static_cast<uint32_t>(block->size);
  return PlacedBlock{std::move(block), FramePlacement{trailer_offset, len}};
}

Result<void> PieceWriter::complete() {
  util::crash_point("piece-written");
  if (allocated_ > next_offset_) SB_TRY(file_->truncate(next_offset_));
  SB_TRY(file_->commit());
  SB_TRY(file_->close());
  return ok();
}

void PieceWriter::abandon() {
  if (file_) file_->abandon();
}

}  // namespace stripeback::engine
