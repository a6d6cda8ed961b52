// One backup channel's state and its parts, internal to engine/backup/ (the contract is
// run_backup_channel() in backup_channel.h). The class is one object on the channel's
// thread; its functions live in the file of their concern:
//
//   backup_channel.cc  the loop: buffers set up, reads issued, completions handed out,
//                      waits counted, and the end (pieces finished or given up)
//   channel_reads.cc   the units: opened up to the multiplexing level, read into free
//                      buffers as the rate limits allow, done when their frames are written
//   channel_frames.cc  a buffer read becomes frames: page checks, a level's changed units,
//                      compression (and its auto level), the frame written to the piece
//   channel_pieces.cc  the pieces: opened at the size limit, their metadata blocks,
//                      checkpoints, trailers, sync and the catalog record
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/backup/backup_channel.h"
#include "engine/format/piece_format.h"
#include "engine/pieces/piece_writer.h"
#include "engine/transform/compress.h"
#include "storage/async/buffer_pool.h"
#include "storage/io_loop.h"

namespace stripeback::engine::backup_internal {

using storage::Clock;

// Completion tags: a read or frame write names its slot (and a frame write the frame's
// index among the slot's) below kMetaTag; a piece's metadata block is kMetaTag + n.
inline constexpr uint64_t kMetaTag = 1ull << 40;
inline constexpr int kFrameShift = 20;
inline constexpr uint64_t kSlotMask = (uint64_t{1} << kFrameShift) - 1;
// Buffer regions registered with the loop: the read buffers (and uncompressed frames), and
// the compressed frames.
inline constexpr int16_t kReadRegion = 0, kCompressedRegion = 1;
// The longest the loop waits for a completion before it looks again (deadline, checkpoint,
// tokens).
inline constexpr auto kIdleWait = std::chrono::milliseconds(200);

struct OpenPiece {
  std::unique_ptr<PieceWriter> writer;  // null once the piece is durable or given up
  uint32_t number = 0;
  bool trailer_sent = false;
  uint32_t crc = 0;  // the piece checksum, once the trailer is built
  uint32_t writes_out = 0;
  uint64_t written_end = kBlock;  // end of the writes completed so far (the header at first)
  std::chrono::steady_clock::time_point opened{};  // for checkpoints by time
  bool closing = false;
  std::map<std::string, uint32_t> file_ids;  // path -> id in this piece
};

// A unit open for reading.
struct Source {
  const WorkUnit* unit = nullptr;
  bool one_read = false;  // read in one read: not counted in the multiplexing level
  std::unique_ptr<storage::ReadFile> file;
  uint64_t next = 0, end = 0;  // file offsets still to read
  uint32_t ops_out = 0;        // reads and frame writes in flight
  FileMeta meta;
  UnitDone done;
  std::set<std::string> pieces;
  const UnitMap* parent = nullptr;  // the parent's change map (level backups)
  // --check-logical: the block number of the file's first page, when its pages are checked.
  std::optional<uint64_t> first_block;
  // Its pages that failed every re-read (check_pages() stops reading again past a bound).
  uint32_t pages_unrecovered = 0;
  // The file's I/O figures (index in ChannelStats::file_io, -1: past the bound), and since
  // when some read of it has been in flight.
  int32_t io = -1;
  uint32_t reads_out = 0;
  Clock::time_point busy_since{};
};

// A frame written from a slot's buffer (a buffer of a level 1 may give several: one per
// run of changed units).
struct FrameOut {
  OpenPiece* piece = nullptr;
  uint64_t piece_end = 0;  // end of the frame in the piece
  uint32_t len = 0;        // bytes of the frame write
};

// A buffer of the pool and what it holds: a read in flight, then its frames being written.
struct Slot {
  Source* src = nullptr;
  uint64_t offset = 0;
  uint32_t want = 0;  // bytes of file data expected
  bool writing = false;
  std::vector<FrameOut> frames;
  uint32_t frames_left = 0;  // frame writes still in flight
};

// The buffers: each slot a read buffer, and with compression an output buffer beside it.
struct Buffers {
  std::unique_ptr<io::BufferPool> pool;
  std::unique_ptr<io::BufferPool> packed;  // compressed frames, slot for slot with `pool`
  std::vector<Slot> slots;
};

// How blocks become frames beyond the frame codec: the compressor, whose level follows what
// this thread did over windows of frames with --compress auto, and a level backup's scratch.
struct Framing {
  struct Window {
    std::chrono::steady_clock::time_point start;
    double idle0 = 0, cpu0 = 0;
    uint32_t frames = 0;
  };
  std::unique_ptr<AutoLevel> auto_level;
  Window window;
  std::unique_ptr<Compressor> compressor;
  std::vector<bool> changed;  // per change unit of the buffer being framed
};

// The units open and where the channel is in the work queue.
struct OpenUnits {
  std::list<std::unique_ptr<Source>> open;                         // in the order opened
  std::list<std::unique_ptr<Source>>::iterator next = open.end();  // the next to read from
  const WorkSet* set = nullptr;                                    // the set being opened
  size_t set_pos = 0;                                              // its next unit
  bool queue_done = false;                                         // the queue has no set left
  uint32_t most = 0;  // most units read at once: the multiplexing level reached
  FileIoIndex file_io;
  // Units whose frames are all written; backed up once their pieces are durable.
  std::vector<UnitDone> finished;
};

struct InFlight {
  uint32_t reads = 0, writes = 0;
};

// The channel's pieces, the current one last.
struct Pieces {
  // A metadata block (header, file record, map, trailer) being written.
  struct MetaWrite {
    std::unique_ptr<AlignedBlock> block;
    OpenPiece* piece;
    uint64_t piece_end;
  };
  std::vector<std::unique_ptr<OpenPiece>> list;
  uint32_t made = 0;                   // the last piece number given
  std::map<uint64_t, MetaWrite> meta;  // by completion tag
  uint64_t next_meta = 0;
};

class BackupChannel {
 public:
  BackupChannel(const BackupContext& ctx, uint32_t channel);
  ChannelOutcome run();

 private:
  // backup_channel.cc
  Result<void> setup();
  bool past_deadline() const;
  Result<void> run_loop();
  void wait_for_tokens(Clock::duration throttle);
  Result<void> handle(const storage::Completion& c);
  // channel_reads.cc
  bool one_read(const WorkUnit& u) const;
  bool all_issued() const;
  size_t multiplexed() const;
  size_t reading() const;
  Result<void> open_units();
  Result<Clock::duration> issue_reads();
  Result<void> open_source(const WorkUnit& u);
  Result<void> read_done(uint32_t slot, const storage::Completion& c);
  Result<void> slot_done(uint32_t slot);
  Result<void> maybe_done(Source* s);
  // channel_frames.cc
  Result<void> frame_slot(uint32_t slot);
  Result<void> frame_changed_units(uint32_t slot);
  Result<void> check_pages(Source& s, uint64_t off, std::byte* data, uint32_t len);
  Result<void> emit_frame(uint32_t slot, uint32_t pos, uint32_t len, std::byte* packed,
                          size_t packed_cap);
  void adapt_level();
  // channel_pieces.cc
  bool checkpoint_due() const;
  Result<OpenPiece*> piece_for(uint64_t frame_length);
  Result<void> ensure_registered(Source& s, OpenPiece& p);
  Result<void> write_meta(OpenPiece& p, PieceWriter::PlacedBlock placed);
  Result<void> meta_written(const storage::Completion& c);
  Result<void> frame_written(uint32_t slot, const storage::Completion& c);
  Result<void> close_pieces();
  Result<void> finish_pieces();

  const BackupContext& ctx_;
  uint32_t channel_;
  TokenBucket bucket_;
  ChannelOutcome out_;
  BusyClock clock_;
  PieceTarget target_;
  storage::IoLoop loop_;
  Buffers buffers_;
  Framing framing_;
  OpenUnits units_;
  bool stopping_ = false;  // past the deadline: no more reads
  bool draining_ = false;  // a checkpoint waits for the reads in flight (checkpoint_due())
  InFlight in_flight_;
  Pieces pieces_;
  std::unique_ptr<AlignedBlock> retry_page_;  // a page read again (check_pages())
};

}  // namespace stripeback::engine::backup_internal
