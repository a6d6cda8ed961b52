// Tape streams: one byte stream (a backup piece) written as one tape file, spanning to
// further volumes at end of medium, and read back.
//
// Each tape file of a stream (a *segment*) starts with one header block (the stream's
// block size, mostly zeros) naming the stream, the segment index and the sequence number
// of the segment's first data block; data blocks follow, then a filemark. Across volumes
// the data blocks form one sequence: the reader checks that every segment starts exactly
// where the previous one ended, so no block is lost or read twice.
//
// Segment header (little-endian, first 80 bytes of the header block):
//   0..7 "SBTSEG01"  8..9 version (1)  10..11 bytes used (80)  12..15 block size
//   16..23 backup id  24..27 channel  28..31 piece number  32..35 segment index
//   36..43 first data block sequence  44..75 volume id (NUL-padded)  76..79 CRC32C of 0..75
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stripeback/result.h"
#include "backends/tape/volume.h"

namespace stripeback::tape {

struct StreamId {
  uint64_t backup_id = 0;
  uint32_t channel = 0;
  uint32_t piece = 0;
};

inline constexpr uint64_t kNoAddress = ~uint64_t{0};

// One segment of a stream on one volume.
struct Span {
  std::string volume_id;
  std::string url;           // drive it was written in (a hint for restore)
  uint32_t file = 0;         // tape file number (0 is the label)
  uint64_t block = 0;        // block number in that file where the segment starts (its header)
  uint64_t first_seq = 0;    // sequence number of its first data block
  uint64_t blocks = 0;       // data blocks in the segment
  uint64_t address = kNoAddress;  // READ POSITION of the segment header, when the drive has it
};

struct StreamLocation {
  uint32_t block_size = 0;
  uint64_t bytes = 0;  // stream length; the last block is zero-padded
  std::vector<Span> spans;
};

// Several whole blocks per WRITE(6): about 2 MiB per command (1-3 MiB did best on tgt;
// 4 MiB and more was 3-5x slower), at least one block, at most what the transport takes.
size_t chunk_bytes(uint32_t block_size, size_t max_transfer);

class StreamWriter {
 public:
  // `volume` is the channel's current volume slot: on end of medium the writer finishes
  // the segment, takes the next volume from `spares` and puts it into the slot.
  StreamWriter(std::unique_ptr<Volume>& volume, VolumeProvider* spares, StreamId id,
               uint32_t block_size);
  // Positions at the volume's next free file (a new volume first, when the current one is
  // full) and writes the first segment header.
  Result<void> begin();
  // Writes whole blocks (data.size() a multiple of the block size) in one WRITE(6); spans
  // to the next volume on early warning. `logical_bytes` of them count as stream data (the
  // rest is the zero padding of the last block).
  Result<void> write_blocks(std::span<const uint8_t> data, uint64_t logical_bytes);
  // Writes the filemark that closes the segment; returns where the stream is.
  Result<StreamLocation> finish();
  // Times the writer found end of medium and changed volume.
  uint32_t volume_changes() const { return changes_; }

 private:
  Result<void> start_segment();
  Result<void> close_segment();

  std::unique_ptr<Volume>& vol_;
  VolumeProvider* spares_;
  StreamId id_;
  uint32_t bs_;
  StreamLocation loc_;
  uint64_t seq_ = 0;  // data blocks written so far
  uint32_t changes_ = 0;
  std::vector<uint8_t> header_;
};

// Opens (or reuses) the drive for a span: returns a volume holding `span.volume_id`.
using VolumeOpener = std::function<Result<Volume*>(const Span& span)>;

// Reads a stream back: for each span goes straight to its tape file (LOCATE to the recorded
// address where the drive supports it, else REWIND + SPACE filemarks; never reads other
// files), checks the segment header against `id` and the
// block sequence, and hands the stream's bytes to `sink` in order, in chunks of whole
// blocks (the last one cut to the stream length).
Result<void> read_stream(const StreamLocation& loc, const StreamId& id,
                         const VolumeOpener& open,
                         const std::function<Result<void>(std::span<const uint8_t>)>& sink);

// Reads a volume from its start, tape file by tape file, as catalog rebuild does when the
// catalog that says where each piece is has been lost: after the label, every tape file's
// segment header, then its data blocks in order, up to the end of the recorded data.
struct FoundSegment {
  StreamId id;
  uint32_t segment = 0;
  uint32_t block_size = 0;
  Span span;            // `blocks` is known once the segment has been read to its end
  std::string problem;  // a tape file that is not a segment of a stream: what it holds
};

class VolumeScanner {
 public:
  // Opens the drive at `url` and reads its label (a tape without one is not_found).
  static Result<std::unique_ptr<VolumeScanner>> open(const std::string& url);
  const VolumeLabel& label() const { return vol_->label; }
  const std::string& url() const { return vol_->url; }
  // Reads what is left of the current tape file, then the next one's segment header;
  // nothing at the end of the recorded data.
  Result<std::optional<FoundSegment>> next();
  // The current segment's stream bytes, in order: fewer than `len` only at its end (its
  // filemark, or the end of data for a stream whose writer was killed).
  Result<size_t> read(uint8_t* buf, size_t len);
  // Reads the rest of the current segment; returns its data blocks.
  Result<uint64_t> finish_segment();
  // Whether the current segment ended at a filemark (a writer that finished it).
  bool closed() const { return filemark_; }

 private:
  explicit VolumeScanner(std::unique_ptr<Volume> v);
  Result<void> fill();
  std::unique_ptr<Volume> vol_;
  std::vector<uint8_t> buf_;
  size_t have_ = 0, used_ = 0;  // bytes in buf_, bytes of them handed out
  uint64_t blocks_ = 0;         // data blocks of the current segment read so far
  bool in_segment_ = false, ended_ = false, filemark_ = false, end_of_data_ = false;
};

}  // namespace stripeback::tape
