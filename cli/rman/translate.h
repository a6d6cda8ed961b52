// RMAN-style command files (docs/rman.md) translated into the stripeback commands they
// stand for. Pure: reads text, runs nothing. The whole file is checked first; one error
// anywhere and nothing is translated.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/rman/lexer.h"

namespace stripeback::cli::rman {

struct Command {
  Location at;            // the statement's first token
  std::string statement;  // its first keyword, for messages ("BACKUP")
  std::vector<std::string> args;  // the command line after "stripeback"
};

// The commands of every statement of `text`, in order (ALLOCATE and RELEASE CHANNEL give
// none: they shape the statements after them in their RUN block). Errors are
// invalid_argument in script_error's form, "LINE:COLUMN: cause", the cause saying what to
// use instead where Stripeback has another way.
Result<std::vector<Command>> translate(std::string_view text);

}  // namespace stripeback::cli::rman
