// The transform of one block into a frame on backup; its exact inverse on restore is
// open_frame() (piece_reader.h). Both are pure: no I/O, every buffer the caller's.
//
// encode_frame, in order: for a data block the zero test and the digest of the raw bytes
// (XXH3-128) in one pass (util::digest_block: an all-zero block becomes a zero frame
// without payload), zstd into `packed` (kept when it saves enough); then for every frame:
// AES-256-GCM sealing in place (associated data: the frame's piece offset, sequence and
// header fields), the CRC32C of the stored payload where the piece's version asks for one
// (needs_payload_crc: not for an unsealed data frame from version 5, whose digest covers
// it), the padding zeroed, and the frame header encoded in the block before the payload.
// The piece writer decides where the frame goes (FramePosition) and records it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/format/piece_format.h"
#include "stripeback/result.h"
#include "util/digest.h"

namespace stripeback::engine {

class Compressor;
class FrameCipher;

struct FramePosition {
  uint64_t offset = 0;    // piece offset of the frame's header block
  uint32_t sequence = 0;  // frame number within the piece
};

struct FrameBuffers {
  // A header block, then the payload (raw_len data bytes, or stored_len for a file record
  // or trailer), with room for the tag (kTagSize) and padding after it.
  std::byte* frame = nullptr;
  // A header block, then room for a compressed payload of `packed_cap` bytes; null when
  // the frame is not to be compressed.
  std::byte* packed = nullptr;
  size_t packed_cap = 0;
};

struct FrameCodec {
  Compressor* compressor = nullptr;     // null: no compression
  const FrameCipher* cipher = nullptr;  // null: not sealed
  uint16_t piece_version = kPieceVersion;  // of the piece the frame goes to
};

struct EncodedFrame {
  FrameHeader header;       // as encoded (a sealed frame's carries no plaintext digest)
  util::Digest raw_digest;  // of the raw bytes (a zero frame's: the zero digest)
  std::byte* block = nullptr;  // what to write: buffers.frame or buffers.packed
  uint32_t length = 0;         // header block + padded payload
  double compress_cpu_s = 0, seal_cpu_s = 0;  // thread CPU spent compressing and sealing
};

// `h` gives the type, file id, file offset and raw_len (data) or stored_len (file record,
// trailer); sequence, digest, lengths and flags are filled in here.
Result<EncodedFrame> encode_frame(FrameHeader h, FramePosition at, const FrameBuffers& b,
                                  const FrameCodec& codec);

// The most a data frame of `raw_len` bytes takes in a piece (header block, payload, tag,
// padding): what a piece must have room for before the block is encoded.
uint64_t frame_bound(uint32_t raw_len, bool sealed);

}  // namespace stripeback::engine
