// Names and positions in PostgreSQL's write-ahead log (docs/postgresql.md): LSNs as
// PostgreSQL writes them ("16/B374D848"), WAL segment names (timeline, then the segment
// number as two 8-digit hex halves: 000000010000000000000003) and the other files an
// archive holds (timeline history, backup history, partial segments).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "stripeback/result.h"

namespace stripeback::database {

inline constexpr uint32_t kDefaultWalSegmentSize = 16u << 20;

// "16/B374D848"; invalid_argument naming `what` for anything else.
Result<uint64_t> parse_lsn(std::string_view text, std::string_view what = "LSN");
std::string lsn_text(uint64_t lsn);

enum class WalKind {
  segment,           // 000000010000000000000003
  partial,           // 000000010000000000000003.partial (the end of a timeline)
  backup_history,    // 000000010000000000000003.00000028.backup
  timeline_history,  // 00000002.history
  other,             // anything else: not a name PostgreSQL archives
};
WalKind wal_kind(std::string_view name);

// A segment: its timeline and number (counting segments of `segment_size` bytes from LSN 0).
struct SegmentPos {
  uint32_t timeline = 0;
  uint64_t number = 0;
  auto operator<=>(const SegmentPos&) const = default;
};
// The position of a segment named `name` (a partial or backup history file: of the segment
// it names), or nullopt when it names none. `segment_size` is a power of two from 1 MiB to
// 1 GiB.
std::optional<SegmentPos> segment_pos(std::string_view name,
                                      uint32_t segment_size = kDefaultWalSegmentSize);
std::string segment_name(SegmentPos pos, uint32_t segment_size = kDefaultWalSegmentSize);
// The segment holding the byte at `lsn`.
inline uint64_t segment_of(uint64_t lsn, uint32_t segment_size = kDefaultWalSegmentSize) {
  return lsn / segment_size;
}
// 00000002.history
std::string history_name(uint32_t timeline);

}  // namespace stripeback::database
