// PieceWriter: lays out one backup piece in a WriteFile of any storage. It decides where
// each frame goes, builds frame headers, keeps the piece's file table and extent index,
// and builds the header block and, at the end, the trailer and footer. It never writes:
// every byte of the piece (header, frames, trailer) goes out as a request through the
// channel's IoLoop, on one path. complete() then makes the piece durable.
//
// Owned and used by one channel thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/transform/frame_codec.h"
#include "engine/format/piece_format.h"
#include "storage/storage.h"
#include "stripeback/result.h"

namespace stripeback::engine {

// A kBlock-aligned heap block for metadata frames (file records, trailer).
struct AlignedBlock {
  static std::unique_ptr<AlignedBlock> make(size_t size);
  ~AlignedBlock();
  std::byte* data = nullptr;
  size_t size = 0;
};

struct FramePlacement {
  uint64_t offset = 0;  // piece offset of the frame header block
  uint32_t length = 0;  // header block + padded payload
};

class FrameCipher;
class Keyring;

class PieceWriter {
 public:
  // Starts a piece in `file` (new and empty) on a medium with `caps`. The header block
  // (header_block()) is the first thing to write.
  static Result<std::unique_ptr<PieceWriter>> start(std::unique_ptr<storage::WriteFile> file,
                                                    const storage::StorageCaps& caps,
                                                    const PieceHeader& header,
                                                    Keyring* keys = nullptr);
  ~PieceWriter();

  storage::WriteFile& file() { return *file_; }
  bool direct() const { return file_->direct(); }
  const std::string& path() const { return file_->name(); }
  const std::string& name() const { return header_.name; }
  uint64_t size() const { return next_offset_; }
  // The lock the piece is written with on its medium, recorded in its trailer (version 4).
  void set_lock(const storage::Retention& r) { lock_ = r; }

  // Registers a file; returns its id in this piece.
  uint32_t add_file(const FileMeta& meta);
  const FileMeta& file(uint32_t file_id) const { return files_[file_id]; }
  uint32_t file_count() const { return static_cast<uint32_t>(files_.size()); }
  // The piece size if a frame of `frame_length` bytes were added now, trailer and footer
  // included (an upper bound).
  uint64_t projected_size(uint64_t frame_length) const;

  // Where the next frame goes, for encode_frame() (frame_codec.h).
  FramePosition next() const { return {next_offset_, frames_}; }
  // Records a frame encoded at next(): its header in the piece checksum, its extent in the
  // index (data and zero frames); the piece grows by its length.
  FramePlacement add(const EncodedFrame& f);
  // The piece's cipher (null when it is not encrypted), for encode_frame().
  const FrameCipher* cipher() const { return cipher_.get(); }
  // The piece's format version, for encode_frame() (FrameCodec::piece_version).
  uint16_t version() const { return header_.version; }
  bool sealed() const { return cipher_ != nullptr; }
  // Allocates space ahead of the write offset in large steps (where the medium can), so
  // frame writes land inside the file instead of extending it (an extending O_DIRECT write
  // takes the inode lock exclusively and cannot be issued without blocking). complete()
  // trims what is unused.
  void preallocate_ahead();
  // Builds a FILE frame for `file_id` in a new block that the caller keeps until written.
  struct PlacedBlock {
    std::unique_ptr<AlignedBlock> block;
    FramePlacement placement;
  };
  Result<PlacedBlock> file_frame(uint32_t file_id);
  // Builds a map frame (the change-unit digests of a range of `file_id`) in a new block.
  Result<PlacedBlock> map_frame(uint32_t file_id, const DigestMap& map);
  // The most a map frame of `units` digests takes in the piece.
  static uint64_t map_frame_bound(size_t units);
  // The piece header block, at offset 0.
  Result<PlacedBlock> header_block();

  // Builds trailer and footer, once every frame is placed. Each file entry's digest is
  // computed here from the extents this piece holds of it (the whole-file digest when the
  // piece holds the whole file). Sets the piece checksum in *piece_crc.
  Result<PlacedBlock> trailer_block(uint32_t* piece_crc);
  // Once every write (the trailer's too) completed: trims preallocated space, commits the
  // file (durable on the medium) and closes it.
  Result<void> complete();
  // Gives up the unfinished piece after a failure: closes it and leaves it where it is,
  // for the backup job to remove with the rest of a failed backup's pieces (so that one
  // place knows what could not be removed).
  void abandon();

 private:
  PieceWriter() = default;
  // Encodes and records a file record or trailer frame in `block`.
  Result<FramePlacement> place_meta(FrameHeader h, std::byte* block);
  std::unique_ptr<storage::WriteFile> file_;
  bool can_preallocate_ = false;
  PieceHeader header_;
  std::optional<storage::Retention> lock_;
  PieceChecksum checksum_;
  uint64_t next_offset_ = 0;
  uint64_t allocated_ = 0;  // file size after preallocation
  uint32_t frames_ = 0;
  uint64_t trailer_estimate_ = 16;
  std::vector<FileMeta> files_;
  std::vector<std::vector<Extent>> extents_;
  std::vector<std::vector<MapRef>> maps_;
  std::unique_ptr<FrameCipher> cipher_;
};

}  // namespace stripeback::engine
