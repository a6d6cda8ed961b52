#include "backends/tape/cdb.h"

#include <cassert>

namespace stripeback::tape::cdb {
namespace {

void put24(uint8_t* p, uint32_t v) {
  assert(v <= kMax24);
  p[0] = static_cast<uint8_t>(v >> 16);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v);
}

}  // namespace

Cdb6 test_unit_ready() { return {0x00, 0, 0, 0, 0, 0}; }

Cdb6 inquiry(uint16_t alloc) {
  return {0x12, 0, 0, static_cast<uint8_t>(alloc >> 8), static_cast<uint8_t>(alloc), 0};
}

Cdb6 read_block_limits() { return {0x05, 0, 0, 0, 0, 0}; }

Cdb6 mode_sense6(uint8_t page, uint8_t alloc) {
  return {0x1a, 0, static_cast<uint8_t>(page & 0x3f), 0, alloc, 0};
}

Cdb6 mode_select6(uint8_t param_len) { return {0x15, 0x10 /* PF */, 0, 0, param_len, 0}; }

Cdb6 read6(Fixed fixed, uint32_t count) {
  Cdb6 c{0x08, static_cast<uint8_t>(fixed == Fixed::yes ? 1 : 0), 0, 0, 0, 0};
  put24(&c[2], count);
  return c;
}

Cdb6 write6(Fixed fixed, uint32_t count) {
  Cdb6 c{0x0a, static_cast<uint8_t>(fixed == Fixed::yes ? 1 : 0), 0, 0, 0, 0};
  put24(&c[2], count);
  return c;
}

Cdb6 write_filemarks6(uint32_t count, Immed immed) {
  Cdb6 c{0x10, static_cast<uint8_t>(immed == Immed::yes ? 1 : 0), 0, 0, 0, 0};
  put24(&c[2], count);
  return c;
}

Cdb6 rewind(Immed immed) { return {0x01, static_cast<uint8_t>(immed == Immed::yes ? 1 : 0), 0, 0, 0, 0}; }

Cdb6 space6(SpaceCode code, int32_t count) {
  assert(count >= -0x800000 && count <= 0x7fffff);
  Cdb6 c{0x11, static_cast<uint8_t>(code), 0, 0, 0, 0};
  put24(&c[2], static_cast<uint32_t>(count) & kMax24);
  return c;
}

Cdb6 load_unload(bool load) { return {0x1b, 0, 0, 0, static_cast<uint8_t>(load ? 1 : 0), 0}; }

Cdb10 read_position_short() { return {0x34, 0, 0, 0, 0, 0, 0, 0, 0, 0}; }

Cdb10 locate10(uint32_t block) {
  return {0x2b, 0, 0, static_cast<uint8_t>(block >> 24), static_cast<uint8_t>(block >> 16),
          static_cast<uint8_t>(block >> 8), static_cast<uint8_t>(block), 0, 0, 0};
}

std::array<uint8_t, 12> mode_select_block_size(uint32_t block_size) {
  std::array<uint8_t, 12> p{};
  p[2] = 0x10;  // buffered mode 1: report GOOD once the data is in the drive's buffer
  p[3] = 8;     // one block descriptor
  put24(&p[9], block_size);
  return p;
}

}  // namespace stripeback::tape::cdb
