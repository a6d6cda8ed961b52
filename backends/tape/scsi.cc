#include "backends/tape/scsi.h"

#include <cstdio>

namespace stripeback::tape {

std::string opcode_name(uint8_t opcode) {
  switch (opcode) {
    case 0x00: return "TEST UNIT READY";
    case 0x01: return "REWIND";
    case 0x05: return "READ BLOCK LIMITS";
    case 0x08: return "READ(6)";
    case 0x0a: return "WRITE(6)";
    case 0x10: return "WRITE FILEMARKS(6)";
    case 0x11: return "SPACE(6)";
    case 0x12: return "INQUIRY";
    case 0x15: return "MODE SELECT(6)";
    case 0x1a: return "MODE SENSE(6)";
    case 0x1b: return "LOAD/UNLOAD";
    case 0x2b: return "LOCATE(10)";
    case 0x34: return "READ POSITION";
    default: break;
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "opcode 0x%02x", opcode);
  return buf;
}

}  // namespace stripeback::tape
