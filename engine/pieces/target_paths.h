// Where a backed-up file goes below a restore target, and the one rule for the names that
// may be created there (restore, delta restore and catalog rebuild share it).
#pragma once

#include <string>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::engine {

// The one rule for what may name something below a restore target: a component that is not
// empty, ".", "..", and holds no '/' or NUL byte.
bool safe_component(const std::string& c);
// The components below the target for an absolute original path (or, for a file backed up
// from a server, its host followed by its path on the server), each passing safe_component();
// anything else (relative, empty, "..", ".", "//", NUL, an unsafe host) is refused.
Result<std::vector<std::string>> safe_components(const std::string& original);
// Where below the target a backed-up file goes: its absolute path, or for a file backed up
// from a server (a URL) "/host/path".
std::string restore_relative(const std::string& original);

}  // namespace stripeback::engine
