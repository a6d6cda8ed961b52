// What the CLI takes from its environment and hands to the library through the library's
// own setters (the library reads no variable but one a job names): the I/O engine a user
// may force, STRIPEBACK_IO=sync (README.md), and, in a build with STRIPEBACK_TEST_HOOKS=ON
// only, the test hooks (docs/reliability.md). The catalog's location (STRIPEBACK_CATALOG)
// is read where it is used, in commands.cc.
#pragma once

#include "stripeback/result.h"

namespace stripeback::cli {

// Reads the variables, once, at start-up before any job. An unset or empty variable
// changes nothing, and STRIPEBACK_IO other than "sync" neither. A test hook's malformed
// value fails with invalid_argument naming the variable and what is wrong with the value:
// a usage error, after which the program should run nothing. A build without test hooks
// does not look at their variables.
Result<void> apply_environment();

}  // namespace stripeback::cli
