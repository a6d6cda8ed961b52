// What a piece is stored on, in the words the operator knows the media by ("disk", "tape",
// "nfs", "s3", an embedder's scheme): for plans and reports (restore --preview). The one
// place outside the backends that names them (engine/wiring/).
#pragma once

#include <string>

#include "catalog/catalog.h"

namespace stripeback::engine {

// "tape" for a piece on removable media, "disk" for a local path, else its location's
// scheme.
std::string piece_medium(const catalog::PieceRecord& p);

}  // namespace stripeback::engine
