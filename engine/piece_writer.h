// PieceWriter: lays out one backup piece on a local file system. It decides where each
// frame goes, builds frame headers, keeps the piece's file table and extent index, and at
// the end writes trailer and footer and makes the piece durable. Frame payload writes are
// issued by the channel through its IoEngine; the writer never touches payload bytes except
// to zero the padding after them.
//
// Owned and used by one channel thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/piece_format.h"
#include "io/file.h"
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
// Where a piece goes when it is not a local file (a tape stream). PieceWriter's own writes
// (header, trailer, footer) go through write_at(); frame writes are IoOps on fd(), which
// the channel's engine routes to the same output. commit() makes every byte durable on the
// medium; abandon() gives up a piece after a failure.
class PieceOutput {
 public:
  virtual ~PieceOutput() = default;
  virtual int fd() const = 0;
  virtual std::string describe() const = 0;  // for messages, in place of a path
  virtual Result<void> write_at(uint64_t offset, std::span<const std::byte> data) = 0;
  virtual Result<void> commit() = 0;
  virtual void abandon() = 0;
};

class PieceWriter {
 public:
  // Writes the piece header block to `out` instead of a file; `out` must outlive the writer.
  static Result<std::unique_ptr<PieceWriter>> create_on(PieceOutput& out,
                                                        const PieceHeader& header,
                                                        Keyring* keys = nullptr);
  // Creates `dir/name` (never replacing anything) and writes the piece header block; if
  // that write fails, removes the file again.
  static Result<std::unique_ptr<PieceWriter>> create(const std::string& dir,
                                                     const PieceHeader& header,
                                                     io::Direct direct,
                                                     Keyring* keys = nullptr);
  ~PieceWriter();

  int fd() const { return out_ ? out_->fd() : file_.fd.get(); }
  bool direct() const { return file_.direct; }
  const std::string& path() const { return path_; }
  const std::string& name() const { return header_.name; }
  uint64_t size() const { return next_offset_; }

  // Registers a file; returns its id in this piece.
  uint32_t add_file(const FileMeta& meta);
  const FileMeta& file(uint32_t file_id) const { return files_[file_id]; }
  uint32_t file_count() const { return static_cast<uint32_t>(files_.size()); }
  // The piece size if a frame of `frame_length` bytes were added now, trailer and footer
  // included (an upper bound).
  uint64_t projected_size(uint64_t frame_length) const;

  // Places a frame whose header block is `header_block` and whose payload (h.stored_len
  // bytes) follows it contiguously; zeroes the payload padding, fills the header block,
  // records the extent for data and zero frames.
  // Seals (when the piece is encrypted), checksums and places one frame whose payload of
  // h.stored_len bytes follows the header block. An encrypted piece's frames need kTagSize
  // bytes of room after the payload for the tag; sealed() says whether it is.
  Result<FramePlacement> place(FrameHeader h, std::byte* header_block);
  bool sealed() const { return cipher_ != nullptr; }
  // Allocates space ahead of the write offset in large steps, so frame writes land inside
  // the file instead of extending it (an extending O_DIRECT write takes the inode lock
  // exclusively and cannot be issued without blocking). finish() trims what is unused.
  void preallocate_ahead();
  // Builds a FILE frame for `file_id` in a new block that the caller keeps until written.
  struct PlacedBlock {
    std::unique_ptr<AlignedBlock> block;
    FramePlacement placement;
  };
  Result<PlacedBlock> file_frame(uint32_t file_id);

  // Writes trailer and footer, fdatasyncs the piece, closes it and fsyncs the directory.
  // Each file entry's digest is computed here from the extents this piece holds of it (the
  // whole-file digest when the piece holds the whole file). Call only when no write to this
  // piece is in flight. Returns the piece checksum.
  Result<uint32_t> finish();
  // Gives up the unfinished piece after a failure: closes it and leaves the file, for the
  // backup job to remove with the rest of a failed backup's pieces (so that one place knows
  // what could not be removed). On tape, abandons the tape stream.
  void abandon();

 private:
  PieceWriter() = default;
  Result<void> write_header();
  Result<void> write_raw(const std::byte* p, size_t n, uint64_t off);
  PieceOutput* out_ = nullptr;
  std::string dir_, path_;
  io::OpenedFile file_;
  PieceHeader header_;
  PieceChecksum checksum_;
  uint64_t next_offset_ = 0;
  uint64_t allocated_ = 0;  // file size after preallocation
  bool can_preallocate_ = true;
  uint32_t frames_ = 0;
  uint64_t trailer_estimate_ = 16;
  std::vector<FileMeta> files_;
  std::vector<std::vector<Extent>> extents_;
  std::unique_ptr<FrameCipher> cipher_;
};

}  // namespace stripeback::engine
