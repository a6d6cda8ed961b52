// Piece file names (docs/piece-format.md, "Names"):
//   sb<backup id>-<catalog id>-<UTC time stamp>-<4 hex digits>-c<channel>-p<piece>.sbp
// with the catalog id as 16 lower-case hex digits.
// The catalog id keeps the names of two catalogs' backups apart on a shared destination
// (backup ids start at 1 in every catalog) and lets a backup tell its own pieces from
// others'. Names written before catalogs had identities lack it and are never parsed as
// any catalog's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stripeback::engine {

// A catalog id as it appears in piece names: 16 lower-case hex digits.
std::string format_catalog_id(uint64_t catalog_id);

// "<UTC time stamp>-<4 random hex digits>", one per backup job.
std::string make_piece_stamp();

std::string piece_name(uint64_t backup_id, uint64_t catalog_id, const std::string& stamp,
                       uint32_t channel, uint32_t piece);

// The prefix every piece name of backup `backup_id` in catalog `catalog_id` starts with.
std::string piece_name_prefix(uint64_t backup_id, uint64_t catalog_id);

struct PieceNameOwner {
  uint64_t backup_id = 0;
  uint64_t catalog_id = 0;
};
// Whose piece `name` is: set only for a name of the form above with a catalog id.
std::optional<PieceNameOwner> parse_piece_name(std::string_view name);

}  // namespace stripeback::engine
