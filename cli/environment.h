// What the CLI takes from its environment and hands to the library through the library's
// own setters (the library reads no variable but one a job names): the I/O engine a user
// may force, STRIPEBACK_IO=sync (README.md). The catalog's location (STRIPEBACK_CATALOG)
// is read where it is used, in commands.cc.
#pragma once

#include "stripeback/result.h"

namespace stripeback::cli {

// Reads the variables, once, at start-up before any job. An unset or empty variable
// changes nothing, and STRIPEBACK_IO other than "sync" neither.
Result<void> apply_environment();

}  // namespace stripeback::cli
