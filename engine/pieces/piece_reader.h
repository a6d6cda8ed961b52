// PieceReader: opens a piece on any storage with random reads and loads its header, footer and
// trailer (file table and extent index), verifying each, so a restore can go straight to
// the frames of the files it wants. Frame payloads are read by the caller through its
// IoLoop and checked with verify_frame().
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/format/piece_format.h"
#include "storage/async/file.h"
#include "storage/storage.h"
#include "stripeback/result.h"

namespace stripeback::engine {

class FrameCipher;
class Keyring;

class PieceReader {
 public:
  // Errors name the piece and what is wrong with it (corrupt, truncated, unsupported).
  // An encrypted piece needs `keys`: without them the error says how to give them
  // (invalid_argument); with the wrong ones it is Errc::wrong_key. Either way the header
  // and index are checked here, before a caller writes anything.
  static Result<std::unique_ptr<PieceReader>> open(const std::string& path, io::Direct direct,
                                                   Keyring* keys = nullptr);
  // The same on a file already open (random reads).
  static Result<std::unique_ptr<PieceReader>> open(std::unique_ptr<storage::ReadFile> file,
                                                   Keyring* keys = nullptr);
  ~PieceReader();

  const std::string& path() const { return path_; }
  storage::ReadFile* file() const { return file_.get(); }
  bool direct() const { return file_->direct(); }
  const PieceHeader& header() const { return header_; }
  const Footer& footer() const { return footer_; }
  const Trailer& trailer() const { return trailer_; }
  uint64_t size() const { return size_; }
  // Index of the file with this path in the trailer's file table, or -1.
  int find_file(const std::string& path) const;
  // Reads and checks (frame header against the index, checksum, seal) the digest maps this
  // piece holds of file `file_id` (incremental backups), in file offset order.
  Result<std::vector<DigestMap>> read_maps(uint32_t file_id) const;
  // Bytes of piece metadata read by open() (header, footer, trailer).
  uint64_t metadata_bytes() const { return metadata_bytes_; }
  const FrameCipher* cipher() const { return cipher_.get(); }

 private:
  PieceReader() = default;
  std::string path_;
  std::unique_ptr<storage::ReadFile> file_;
  PieceHeader header_;
  Footer footer_;
  Trailer trailer_;
  uint64_t size_ = 0;
  uint64_t metadata_bytes_ = 0;
  std::unique_ptr<FrameCipher> cipher_;
};

class Decompressor;

// The inverse of encode_frame() (frame_codec.h), the backup's frame transform,
// pure: checks the stored payload's CRC32C (not a digest_only frame's: it has none),
// authenticates and decrypts a sealed frame in place with `cipher`, decodes a compressed
// payload into `scratch` (raw_len bytes). Returns where the raw bytes are; the caller must
// compare their digest, which is all that checks a digest_only frame's payload. Errors
// (corrupt) read "at offset N: <what>".
Result<const std::byte*> open_frame(std::byte* frame, const FrameHeader& h, uint64_t frame_offset,
                                    Decompressor* dz, std::byte* scratch,
                                    const FrameCipher* cipher);

// Checks a frame read from a piece (header block followed by its padded payload) against
// the extent the index promised: header checksum, type, file id, offset and lengths, the
// payload's CRC32C (where the frame has one); decodes a compressed payload into `scratch`
// (raw_len bytes); then checks the raw digest. Returns where the raw bytes are (the payload itself, or `scratch`). The
// error names the piece, the byte offset and `file_path`.
// Checks one frame read from a piece against its index entry and returns its raw bytes
// (in the frame's own buffer, or in `scratch` when it was compressed). Sealed frames are
// authenticated and decrypted in place with `cipher` (the piece's).
Result<const std::byte*> verify_frame(std::byte* frame, const Extent& expect, uint32_t file_id,
                                      const std::string& piece_path, const std::string& file_path,
                                      Decompressor* dz = nullptr, std::byte* scratch = nullptr,
                                      const FrameCipher* cipher = nullptr);

}  // namespace stripeback::engine
