// The backup piece format, version 5, and version 4 for encrypted pieces (docs/piece-format.md
// is the normative description; versions 1, without the catalog id, 2, without map frames,
// and 3, with a CRC32C over every payload, are still read).
//
//   offset 0        piece header block (kBlock bytes)
//   version 4       kKeySlots key slot blocks (encrypted pieces): the wrapped data key,
//                   rewritable in place (rekey) outside what the piece checksum covers
//   then            frames, each a kBlock-byte frame header block followed by its payload
//                   padded with zeros to a multiple of kBlock
//   last frame      the trailer frame: file table and extent index
//   last kBlock     the footer block: where the trailer is, and the piece checksum
//
// Every frame starts on a kBlock boundary, so a frame is written with one O_DIRECT write
// straight from the buffer the data was read into (header room + data, no copying).
// Encoding and decoding are pure functions over bytes: no I/O here.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stripeback/result.h"
#include "util/digest.h"

namespace stripeback::engine {

inline constexpr uint32_t kBlock = 4096;        // alignment of every structure in a piece
inline constexpr uint16_t kPieceVersion = 5;       // written for pieces without a cipher
inline constexpr uint16_t kSlottedPieceVersion = 4;  // written for encrypted pieces: key slots
inline constexpr uint16_t kNewestPieceVersion = 5;   // read, down to kOldestPieceVersion
inline constexpr uint16_t kOldestPieceVersion = 1;
inline constexpr uint16_t kMapPieceVersion = 3;  // map frames and the trailer's map index
// The header version of the key block that sealed files other than pieces (catalog
// autobackups, change map files) start with: the wrapped key in the header itself, as in
// version 3; key slots are blocks of a piece.
inline constexpr uint16_t kKeyBlockVersion = 3;
// From this version an unsealed data frame carries no CRC32C of its payload: the digest in
// its header, checked after decompression, covers the payload (FrameHeader::digest_only).
inline constexpr uint16_t kDigestOnlyPieceVersion = 5;
inline constexpr uint32_t kKeySlots = 2;  // key slot blocks after the header (version 4)
inline constexpr uint32_t kFrameHeaderSize = 64;  // bytes used in a frame header block

inline uint64_t align_up(uint64_t v) { return (v + kBlock - 1) / kBlock * kBlock; }

// A map frame (version 3) holds the change-unit digests of a range of one file
// (incremental backups; engine/pieces/change_map.h).
enum class FrameType : uint8_t { data = 1, zero = 2, file = 3, trailer = 4, map = 5 };
enum class Codec : uint8_t { none = 0, zstd = 1 };
enum class Cipher : uint8_t { none = 0, aes256gcm = 1 };
enum class Kdf : uint8_t { none = 0, scrypt = 1, key_file = 2 };

inline constexpr uint32_t kTagSize = 16;  // AES-GCM tag after each sealed payload
enum class HashAlg : uint8_t { xxh3_128 = 1 };

// How an encrypted piece's data key is found (docs/encryption.md). Present when the
// header's cipher is not none. In versions 1 to 3 all of it is in the header; in version 4
// the header holds only the nonce prefix and the rest is in a key slot (KeySlot), and a
// catalog may hold other wraps of the same data key (catalog-format.md, KeyWrap).
struct PieceCrypto {
  Kdf kdf = Kdf::none;
  uint8_t log2_n = 0, r = 0, p = 0;      // scrypt cost parameters
  std::array<uint8_t, 16> salt{};        // KDF salt, one per backup job
  std::array<uint8_t, 16> check{};       // key check value: tells a wrong key from damage
  std::array<uint8_t, 8> nonce_prefix{};  // frame nonce = prefix + frame sequence
  std::array<uint8_t, 12> wrap_nonce{};
  std::array<uint8_t, 48> wrapped_key{};  // the piece's data key sealed with the job key
  // Which key-encryption key wrapped it: 1 for the key a backup was written with, one more
  // for each `stripeback rekey`. Not encoded in version 1 to 3 headers (always 1 there).
  uint32_t kek_version = 1;
};

// A version 4 key slot: one wrap of the piece's data key (kdf, salt, check, wrap nonce and
// wrapped key of PieceCrypto; the nonce prefix stays in the header). The valid slot with
// the highest generation is the current one; a rekey writes the other slot with the next
// generation, syncs, then erases the old one.
struct KeySlot {
  uint64_t generation = 0;
  PieceCrypto wrap;
};

struct PieceHeader {
  uint16_t version = kPieceVersion;
  uint32_t block = kBlock;
  uint64_t backup_id = 0;
  uint32_t channel = 0;
  uint32_t piece_number = 0;
  uint32_t set_number = 0;
  Codec codec = Codec::none;
  Cipher cipher = Cipher::none;
  HashAlg hash = HashAlg::xxh3_128;
  std::array<uint8_t, 16> key_id{};
  int64_t created_ns = 0;
  std::string name;  // the piece's own file name
  PieceCrypto crypto;
  // Identity of the catalog that records the backup (version 2; 0 in version 1 pieces).
  uint64_t catalog_id = 0;
  // Version 4 encrypted pieces: the valid key slots as read (index = slot number), not part
  // of the header block; filled by whoever reads the slot blocks (read_key_slots()).
  std::array<std::optional<KeySlot>, kKeySlots> slots{};
};

// Whether the piece has key slot blocks after its header (version 4 with a cipher).
inline bool has_key_slots(const PieceHeader& h) {
  return h.version >= kSlottedPieceVersion && h.cipher != Cipher::none;
}
// Piece offset of key slot block `i` (0 or 1), and of the first frame.
inline uint64_t key_slot_offset(uint32_t i) { return uint64_t{kBlock} * (1 + i); }
inline uint64_t first_frame_offset(const PieceHeader& h) {
  return uint64_t{kBlock} * (has_key_slots(h) ? 1 + kKeySlots : 1);
}

struct FrameHeader {
  FrameType type = FrameType::data;
  uint32_t file_id = 0;     // index into the piece's file table
  uint32_t sequence = 0;    // frame number within the piece, from 0
  uint64_t offset = 0;      // byte offset of the raw data within the file
  uint32_t raw_len = 0;     // bytes of file data the frame stands for
  uint32_t stored_len = 0;  // payload bytes on the medium (0 for zero frames)
  uint32_t stored_crc = 0;  // CRC32C of the stored payload bytes (0 when digest_only)
  util::Digest raw_digest{};  // strong hash of the raw bytes
  bool compressed = false;    // payload is zstd (data frames only; stored_len < raw_len)
  bool sealed = false;        // payload is AES-256-GCM ciphertext + kTagSize tag
  // Flag bit 2, in pieces of kDigestOnlyPieceVersion on: an unsealed data frame without a
  // CRC32C of its payload; raw_digest, checked on the raw bytes, covers it instead.
  bool digest_only = false;
};

// Whether a frame of a piece of this version must carry a CRC32C of its payload: all
// before kDigestOnlyPieceVersion; from it, all but unsealed data frames.
inline bool needs_payload_crc(uint16_t piece_version, FrameType type, bool sealed) {
  return piece_version < kDigestOnlyPieceVersion || type != FrameType::data || sealed;
}

// File metadata as recorded in FILE frames and in the trailer's file table.
struct FileMeta {
  uint32_t file_id = 0;
  std::string path;
  uint64_t size = 0;
  uint32_t mode = 0;
  int64_t mtime_ns = 0;
  uint32_t uid = 0, gid = 0;
  util::Digest digest{};  // whole-file digest; only meaningful in the trailer
  // The file's status change time and inode number when it was opened for the backup
  // (trailer version 3; 0 when not known): a resume keeps what a piece holds of a file
  // only while these still match (resume.h).
  int64_t ctime_ns = 0;
  uint64_t ino = 0;
};

struct Extent {
  uint64_t file_offset = 0;
  uint32_t raw_len = 0;
  uint64_t frame_offset = 0;  // piece offset of the frame header block
  uint32_t stored_len = 0;
  FrameType type = FrameType::data;
  util::Digest raw_digest{};
};

// Where a piece holds digest map frames of a file (trailer version 2).
struct MapRef {
  uint64_t file_offset = 0;   // first byte of the range the map covers
  uint32_t unit = 0;          // change unit size
  uint32_t units = 0;         // digests in the map
  uint64_t frame_offset = 0;  // piece offset of the map frame's header block
  uint32_t stored_len = 0;
};

// The payload of a map frame: the digest of each change unit of [offset, offset + units
// * unit), the last unit ending at the file's size.
struct DigestMap {
  uint32_t unit = 0;
  uint64_t offset = 0;
  std::vector<util::Digest> digests;
};

// The trailer version written: 3 adds each file's ctime and inode (docs/piece-format.md);
// 4, written only for a locked piece, adds its lock after them.
inline constexpr uint8_t kTrailerVersion = 3;
inline constexpr uint8_t kLockedTrailerVersion = 4;

struct Trailer {
  // 1: without the map index; 2: without each file's ctime and inode (both read, and
  // re-encoded as they were).
  uint8_t version = kTrailerVersion;
  std::vector<FileMeta> files;
  std::vector<std::vector<Extent>> extents;  // per file id, in file offset order
  std::vector<std::vector<MapRef>> maps;     // per file id, in file offset order
  // Version 4: the piece was written locked on its medium (S3 Object Lock) until
  // lock_until_ns (ns since the epoch) in lock_mode (storage::Retention::Mode: 1
  // governance, 2 compliance); 0 when not locked. The date the piece was written with: the
  // catalog may know a later one.
  uint8_t lock_mode = 0;
  int64_t lock_until_ns = 0;
};

struct Footer {
  uint64_t trailer_offset = 0;  // piece offset of the trailer frame header block
  uint32_t frames = 0;          // frames before the trailer
  uint32_t piece_crc = 0;       // see PieceChecksum
};

// Encoders write into a caller-provided block of kBlock bytes (zero-filled by them).
void encode_piece_header(const PieceHeader& h, std::span<std::byte, kBlock> out);
Result<PieceHeader> decode_piece_header(std::span<const std::byte> block);
void encode_frame_header(const FrameHeader& h, std::span<std::byte, kBlock> out);
Result<FrameHeader> decode_frame_header(std::span<const std::byte> block);
void encode_footer(const Footer& f, std::span<std::byte, kBlock> out);
// A key slot block. An all-zero block is an empty (erased) slot: nullopt. A block whose
// magic or CRC32C is wrong is Errc::corrupt (a torn rewrite: the other slot is used).
void encode_key_slot(const KeySlot& s, std::span<std::byte, kBlock> out);
Result<std::optional<KeySlot>> decode_key_slot(std::span<const std::byte> block);
// Fills h.slots from the kKeySlots blocks that follow the header block (`blocks`); a
// damaged slot is left empty. Errc::corrupt when no slot holds a key.
Result<void> read_key_slots(PieceHeader& h, std::span<const std::byte> blocks);
Result<Footer> decode_footer(std::span<const std::byte> block);
// A piece checksum as messages show it: 8 lower-case hex digits.
std::string checksum_hex(uint32_t v);

std::vector<uint8_t> encode_file_meta(const FileMeta& m);
Result<FileMeta> decode_file_meta(std::span<const uint8_t> payload);
std::vector<uint8_t> encode_trailer(const Trailer& t);
std::vector<uint8_t> encode_digest_map(const DigestMap& m);
Result<DigestMap> decode_digest_map(std::span<const uint8_t> payload);
Result<Trailer> decode_trailer(std::span<const uint8_t> payload);

// The whole-piece checksum: CRC32C over the piece header block, then the first
// kFrameHeaderSize bytes of every frame header block in piece order, trailer included.
// Each frame header carries its payload's CRC32C, or (a digest_only frame) the digest of
// its raw bytes, so this covers every byte transitively at the cost of a few bytes per
// frame instead of a second pass over the data.
class PieceChecksum {
 public:
  void add_piece_header(std::span<const std::byte> block);
  void add_frame_header(std::span<const std::byte> block);
  uint32_t value() const { return crc_; }

 private:
  uint32_t crc_ = 0;
};

// True when every byte is zero (such blocks are stored as zero frames without data).
bool all_zero(const std::byte* p, size_t n);

}  // namespace stripeback::engine
