// Sense data decoding: the only place where sense key / ASC / ASCQ are interpreted. Both
// fixed (0x70/0x71) and descriptor (0x72/0x73) formats are decoded into a Sense, whose
// `condition` comes from one lookup table.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "stripeback/result.h"

namespace stripeback::tape {

enum class SenseKey : uint8_t {
  no_sense = 0x0,
  recovered_error = 0x1,
  not_ready = 0x2,
  medium_error = 0x3,
  hardware_error = 0x4,
  illegal_request = 0x5,
  unit_attention = 0x6,
  data_protect = 0x7,
  blank_check = 0x8,
  aborted_command = 0xb,
  volume_overflow = 0xd,
};

// What a command's sense means for the caller. Position states (filemark, early_warning,
// end_of_data, ili) are not failures by themselves; the command layer decides.
enum class Condition : uint8_t {
  none,             // no sense information, or NO SENSE without any flag
  recovered,        // RECOVERED ERROR: the command succeeded
  filemark,         // a filemark was met (FILEMARK bit or 00/01)
  early_warning,    // early warning / end of medium (EOM bit, 00/02, 00/04)
  end_of_data,      // BLANK CHECK or 00/05: nothing recorded past here
  beginning,        // 00/04 with a backwards motion: beginning of partition
  ili,              // a block's length differs from the request (INFO = residual)
  not_ready,        // NOT READY: no medium, becoming ready, offline
  becoming_ready,   // NOT READY 04/01: retry shortly
  medium_error,     // MEDIUM ERROR
  hardware_error,
  illegal_request,  // ILLEGAL REQUEST: unsupported command or field
  unit_attention,   // UNIT ATTENTION: medium changed, reset; retry once
  data_protect,     // write protected
  volume_overflow,  // physical end of medium: the command did not complete
  aborted,
  other,
};

struct Sense {
  SenseKey key = SenseKey::no_sense;
  uint8_t asc = 0, ascq = 0;
  bool filemark = false, eom = false, ili = false;
  bool info_valid = false;
  int64_t info = 0;  // INFORMATION field (signed: residual in blocks or bytes)
  Condition condition = Condition::none;
  bool valid = false;  // the bytes were recognizable sense data
};

// Decodes raw sense bytes. Unknown formats give valid=false and Condition::other.
Sense decode_sense(std::span<const uint8_t> raw);

const char* condition_name(Condition c);
// "MEDIUM ERROR 03/31/00 (medium format corrupted)": for messages.
std::string describe(const Sense& s);
// The Errc a failing condition maps to (not_ready -> busy, medium -> io, ...).
Errc errc_for(Condition c);

}  // namespace stripeback::tape
