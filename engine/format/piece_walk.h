// Walking a piece front to back: every frame header and payload checksum (the raw digest
// of a digest_only frame, decompressed first when compressed), the trailer as the last
// frame, the footer after it, and the whole-piece checksum recomputed. It reads at
// increasing offsets only, so a piece read as a stream (from removable media) serves. Used
// by crosscheck --deep, and by catalog rebuild on media that have no random reads, where
// the frames a PieceReader needs (header, map frames, trailer, footer) are kept as they
// pass and served by a CapturedPiece.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/format/piece_format.h"
#include "storage/storage.h"
#include "stripeback/result.h"

namespace stripeback::engine {

// Reads exactly `len` bytes at `offset`, or fails (corrupt) saying the piece ends in `what`.
// `bytes` (may be null) counts what was read.
Result<void> read_exact(storage::ReadFile& f, std::byte* buf, size_t len, uint64_t offset,
                        uint64_t* bytes, const std::string& what);

struct WalkedPiece {
  uint64_t size = 0;  // where the footer ends: the piece's length
  Footer footer;
  std::vector<std::byte> footer_block;
};

// Told of each frame as it passes: its offset, header, header block and stored payload
// (padded to the block).
using FrameObserver = std::function<void(uint64_t offset, const FrameHeader& h,
                                         std::span<const std::byte> header_block,
                                         std::span<const std::byte> payload)>;

// A frame whose header is valid but whose stored payload fails its checksum (or digest).
struct BadFrame {
  uint64_t offset = 0;  // of its header block
  FrameHeader header;
};

// `head` is the piece's header block (already read); frames start after it. The piece may
// not reach past `limit`. With `recorded`, the whole-piece checksum must equal it too.
// With `bad`, a frame whose payload fails its checksum is added there (and not observed)
// and the walk goes on: its valid header says where the next frame is. Without it, such a
// frame ends the walk with an error.
Result<WalkedPiece> walk_piece(storage::ReadFile& f, std::span<const std::byte> head,
                               uint64_t limit, std::optional<uint32_t> recorded,
                               uint64_t* bytes, const FrameObserver& observe = {},
                               std::vector<BadFrame>* bad = nullptr);

// A piece of which only some byte ranges are kept (those a PieceReader reads: header, map
// frames, trailer, footer); a read outside them fails. Ranges are added in offset order;
// one that starts where the previous ends joins it.
class CapturedPiece final : public storage::ReadFile {
 public:
  explicit CapturedPiece(std::string name) : name_(std::move(name)) {}
  void keep(uint64_t offset, std::span<const std::byte> bytes);
  void set_size(uint64_t size) { size_ = size; }
  const std::string& name() const override { return name_; }
  Result<void> submit(storage::IoLoop&, const storage::Request&) override {
    return fail(Errc::unsupported, "'" + name_ + "' holds a piece's metadata only");
  }
  Result<storage::FileInfo> stat() override;
  Result<size_t> read_at(std::byte* buf, size_t len, uint64_t offset) override;

 private:
  std::string name_;
  uint64_t size_ = 0;
  std::map<uint64_t, std::vector<std::byte>> ranges_;
};

}  // namespace stripeback::engine
