// TapeDrive: the SSC command layer over a Transport. Each method sends one command (or a
// short fixed sequence), decodes the sense data through sense.h and keeps the position the
// engine counts itself (tape file number, block number within the file), because tgt
// answers READ POSITION with zeros and has no LOCATE.
//
// Used by one thread at a time. Errors name the drive, the command and the sense.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "stripeback/result.h"
#include "backends/tape/sense.h"
#include "backends/tape/transport.h"

namespace stripeback::tape {

struct InquiryData {
  uint8_t device_type = 0;  // 1 = sequential access (tape)
  std::string vendor, product, revision;
};

struct BlockLimits {
  uint32_t max = 0;          // largest block in bytes (0: no limit stated)
  uint32_t min = 0;          // smallest block in bytes
  uint8_t granularity = 0;   // block sizes must be multiples of 2^granularity
  uint32_t granule() const { return 1u << granularity; }
};

// Checks `block_size` against the drive's limits; the error names both numbers.
Result<void> check_block_size(uint32_t block_size, const BlockLimits& limits,
                              const std::string& drive);

// The position the engine counted: tape file (0 = the first, before any filemark) and block
// number within that file. `known` is false after a failure left it unclear (rewind to
// recover).
struct Position {
  uint32_t file = 0;
  uint64_t block = 0;
  bool known = true;
};

// What READ POSITION reported; tgt reports `unknown`.
struct DevicePosition {
  bool bop = false, eop = false, unknown = true;
  uint32_t block = 0;  // logical object number from the beginning of the partition
};

struct WriteResult {
  uint32_t blocks = 0;         // blocks the drive accepted
  bool early_warning = false;  // end of medium is near (or reached): finish and change volume
};

struct ReadResult {
  uint32_t blocks = 0;        // whole blocks read (fixed mode) or bytes (variable mode)
  bool filemark = false;      // stopped at a filemark (now positioned after it)
  bool end_of_data = false;   // nothing recorded past this point
};

class TapeDrive {
 public:
  explicit TapeDrive(std::unique_ptr<Transport> transport);
  // Opens the transport for `url` (see open_transport).
  static Result<std::unique_ptr<TapeDrive>> open(const std::string& url);

  const std::string& name() const { return t_->name(); }
  size_t max_transfer() const { return t_->max_transfer(); }

  Result<void> test_unit_ready();
  // Repeats TEST UNIT READY until the drive is ready or `max` has passed. `waiting` is
  // called once, when the drive first reports not ready (the "waiting for tape" state).
  Result<void> wait_ready(std::chrono::milliseconds max,
                          const std::function<void(const std::string&)>& waiting = {});
  Result<InquiryData> inquiry();
  Result<BlockLimits> read_block_limits();
  // The block size in the mode block descriptor: 0 = variable mode.
  Result<uint32_t> block_size();
  // MODE SELECT(6) with one block descriptor; 0 selects variable mode. On tgt the setting
  // lives in the daemon's memory only: set it before every use.
  Result<void> set_block_size(uint32_t size);

  // Fixed mode: writes data.size() / block_size blocks in one WRITE(6). data.size() must be
  // a multiple of block_size (the mode block size). Early warning is a result, not an error.
  Result<WriteResult> write_fixed(std::span<const uint8_t> data, uint32_t block_size);
  // Variable mode: one block of data.size() bytes.
  Result<WriteResult> write_variable(std::span<const uint8_t> block);
  // Fixed mode: reads up to buf.size() / block_size blocks. Stops early at a filemark.
  Result<ReadResult> read_fixed(std::span<uint8_t> buf, uint32_t block_size);
  // Variable mode: reads one block into buf; `blocks` holds its length in bytes. A block
  // longer than buf is an error (its length is named).
  Result<ReadResult> read_variable(std::span<uint8_t> buf);

  Result<void> write_filemarks(uint32_t count);
  Result<void> rewind();
  // SPACE forward (count > 0) or backward over filemarks / blocks.
  Result<void> space_filemarks(int32_t count);
  Result<void> space_blocks(int32_t count);
  Result<void> space_to_end_of_data();
  Result<DevicePosition> read_position();
  // LOCATE(10) to a logical block; unsupported on tgt (illegal request).
  Result<void> locate(uint32_t block);
  // Positions at the start of tape file `file`: LOCATE is not usable without a device
  // block address, so REWIND + SPACE filemarks (cheap from the engine's count when already
  // in the right file).
  Result<void> seek_file(uint32_t file);
  Result<void> load();
  Result<void> unload();

  const Position& position() const { return pos_; }

 private:
  struct Outcome {
    ScsiReply reply;
    Sense sense;
  };
  // Sends a command; GOOD and CHECK CONDITION come back as an Outcome, other statuses and
  // transport failures as Errors.
  Result<Outcome> run(std::span<const uint8_t> cdb, DataDir dir, std::span<uint8_t> data);
  Error sense_error(std::span<const uint8_t> cdb, const Sense& s) const;

  std::unique_ptr<Transport> t_;
  Position pos_{0, 0, false};
};

}  // namespace stripeback::tape
