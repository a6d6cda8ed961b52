// Plain data shared by the SSC command layer and its transports: a SCSI command (CDB, data
// direction, data buffer) and what came back (status, sense bytes, residual).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace stripeback::tape {

enum class DataDir : uint8_t { none, read, write };

// A command to send. `data` is owned by the caller and must stay valid until execute()
// returns; for `read` it receives up to data.size() bytes, for `write` data.size() bytes
// are sent.
struct ScsiCommand {
  std::span<const uint8_t> cdb;
  DataDir dir = DataDir::none;
  std::span<uint8_t> data;
  std::chrono::seconds timeout{600};  // tape motion (rewind, space) can take minutes
};

inline constexpr uint8_t kStatusGood = 0x00;
inline constexpr uint8_t kStatusCheckCondition = 0x02;
inline constexpr uint8_t kStatusBusy = 0x08;

// The outcome of a command that reached the device. Transport failures (connection lost,
// no such device) are Errors instead.
struct ScsiReply {
  uint8_t status = kStatusGood;
  std::vector<uint8_t> sense;  // raw sense data (fixed or descriptor format), may be empty
  size_t transferred = 0;      // bytes moved as the transport reports them (may be wrong:
                               // tgt's READ(6) residual is; use the sense INFO field)
};

// "WRITE(6)", "READ(6)", ... for messages; "opcode 0xNN" for others.
std::string opcode_name(uint8_t opcode);

}  // namespace stripeback::tape
