// The whole-piece audit that `validate` runs: walks every frame of a piece in order, from
// the piece header to the trailer, and checks what a restore never reads but the piece
// format promises: every zero-frame header and file-record frame (header checksum, payload
// checksum, seal, and agreement with the trailer's file table and index), the frame count,
// and the whole-piece checksum against the footer and the catalog. Data frames the channels
// already read and verified are not read again: their headers come from a HeaderLog.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>

#include "engine/format/piece_format.h"
#include "engine/pieces/piece_reader.h"
#include "stripeback/result.h"

namespace stripeback::engine {

using FrameHeaderBytes = std::array<std::byte, kFrameHeaderSize>;

// Headers of verified data frames of one piece, by piece offset. Any thread may add.
class HeaderLog {
 public:
  void add(uint64_t offset, const std::byte* header);
  std::map<uint64_t, FrameHeaderBytes> take();

 private:
  std::mutex mu_;
  std::map<uint64_t, FrameHeaderBytes> seen_;
};

// Audits `piece` (see above). `seen` holds headers already verified; every other frame
// header is read. Returns the bytes read; errors (Errc::corrupt) name the piece and offset.
Result<uint64_t> audit_piece(const PieceReader& piece,
                             const std::map<uint64_t, FrameHeaderBytes>& seen);

}  // namespace stripeback::engine
