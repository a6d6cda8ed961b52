// The structure of an RMAN-style command file (docs/rman.md): statements, each ended by ';',
// standing alone or grouped in RUN { ... } blocks. This checks only that structure; what a
// statement says is read by translate.h.
#pragma once

#include <vector>

#include "cli/rman/lexer.h"
#include "stripeback/result.h"

namespace stripeback::cli::rman {

struct Statement {
  Location at;                // its first token
  std::vector<Token> tokens;  // without the ';', then one token of kind end at the ';'
};

struct Block {
  bool run = false;  // a RUN { ... } block; else one statement on its own
  Location at;
  std::vector<Statement> statements;
};

// The blocks of the file, in order. Errors (script_error's form): a statement without its
// ';' (at the end of its last token), RUN not followed by '{', a '}' that closes nothing, a
// RUN block not closed by the end of the file (at its RUN), a RUN inside a RUN.
Result<std::vector<Block>> split_script(const std::vector<Token>& tokens);

}  // namespace stripeback::cli::rman
