#include "engine/wiring/piece_medium.h"

#include "storage/location.h"

namespace stripeback::engine {

std::string piece_medium(const catalog::PieceRecord& p) {
  if (p.media) return "tape";
  if (!storage::has_scheme(p.location)) return "disk";
  return p.location.substr(0, p.location.find(':'));
}

}  // namespace stripeback::engine
