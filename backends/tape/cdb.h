// Command descriptor blocks for the SSC commands Stripeback uses. Pure functions: they
// build bytes and never talk to a device. Counts and lengths that do not fit their field
// are the caller's bug (asserted).
#pragma once

#include <array>
#include <cstdint>

namespace stripeback::tape::cdb {

using Cdb6 = std::array<uint8_t, 6>;
using Cdb10 = std::array<uint8_t, 10>;

enum class Fixed : bool { no, yes };
enum class Immed : bool { no, yes };
enum class SpaceCode : uint8_t { blocks = 0, filemarks = 1, end_of_data = 3 };

inline constexpr uint32_t kMax24 = 0xffffff;

Cdb6 test_unit_ready();
Cdb6 inquiry(uint16_t alloc);
Cdb6 read_block_limits();
Cdb6 mode_sense6(uint8_t page, uint8_t alloc);
Cdb6 mode_select6(uint8_t param_len);
// READ(6): fixed -> `count` blocks of the mode block size; variable -> one block of up to
// `count` bytes. SILI is never set: tgt ignores it and real drives then hide short blocks.
Cdb6 read6(Fixed fixed, uint32_t count);
// WRITE(6): fixed -> `count` blocks of the mode block size; variable -> one block of
// `count` bytes.
Cdb6 write6(Fixed fixed, uint32_t count);
Cdb6 write_filemarks6(uint32_t count, Immed immed);
Cdb6 rewind(Immed immed);
// SPACE(6) with a signed 24-bit count (negative = backwards).
Cdb6 space6(SpaceCode code, int32_t count);
Cdb6 load_unload(bool load);
Cdb10 read_position_short();
Cdb10 locate10(uint32_t block);

// MODE SELECT(6) parameter list: header + one block descriptor setting `block_size`
// (0 = variable mode). 12 bytes.
std::array<uint8_t, 12> mode_select_block_size(uint32_t block_size);

}  // namespace stripeback::tape::cdb
