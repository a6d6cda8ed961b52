// Volume label: the first tape file of every Stripeback tape. One fixed-mode block of
// kLabelBlock bytes, then a filemark. It is read with the mode block size set to
// kLabelBlock, so it is readable whatever block size the data was written with; it names
// the volume and that data block size, so a reader never depends on today's setting.
//
// Layout (little-endian), in the first bytes of the block, the rest zero:
//   0..7   magic "SBTAPE01"       8..9   format version (1)
//   10..11 bytes used (64)        12..15 data block size
//   16..47 volume id, NUL-padded  48..55 creation time, ns since the epoch
//   56..59 label block size       60..63 CRC32C of bytes 0..59
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "stripeback/result.h"
#include "backends/tape/drive.h"

namespace stripeback::tape {

inline constexpr uint32_t kLabelBlock = 4096;
inline constexpr size_t kMaxVolumeId = 32;

struct VolumeLabel {
  std::string volume_id;
  uint32_t block_size = 0;
  uint16_t version = 1;
  int64_t created_ns = 0;
};

// 1-32 characters from [A-Za-z0-9._-].
Result<void> validate_volume_id(const std::string& id);

std::array<uint8_t, kLabelBlock> encode_label(const VolumeLabel& label);
// Fails with corrupt (bad magic or CRC) or unsupported (newer version).
Result<VolumeLabel> decode_label(std::span<const uint8_t> block);

// Rewinds and writes the label and its filemark. Leaves the drive at the start of tape
// file 1 in fixed mode with the label's data block size. Everything after it is lost.
Result<void> write_label(TapeDrive& drive, const VolumeLabel& label);

struct LabelRead {
  std::optional<VolumeLabel> label;
  std::string why_none;  // when there is no label: blank tape, foreign data, ...
  // No label because the tape reads as blank (no first block, or one that cannot be read
  // as data); false for a tape that starts with a filemark or another format's block.
  bool blank = false;
};
// Rewinds and reads the label. A tape without a readable Stripeback label is a value
// (label empty, why_none says what was found); transport failures and a drive that is not
// ready are errors. Leaves the mode block size at kLabelBlock and the position unspecified.
Result<LabelRead> read_label(TapeDrive& drive);

}  // namespace stripeback::tape
