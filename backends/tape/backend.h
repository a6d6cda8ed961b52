// The tape backend's entry in the registry: its scheme, its location grammar
// (tape:iscsi://portal[:port]/iqn.target/lun or tape:/dev/sgN, a drive; tape:DRIVE#name an
// entry of the drive's current set) and the refusal to serve a drive as a file system.
#pragma once

#include <string_view>

#include "storage/registry.h"

namespace stripeback::tape {

// The grammar of drive locations; the drive's address is the Location's authority.
Result<storage::Location> parse_location(std::string_view text);

storage::Backend backend();

}  // namespace stripeback::tape
