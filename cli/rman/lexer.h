// The tokens of an RMAN-style command file (docs/rman.md): words (keywords, names, numbers,
// sizes such as 200M, times such as 01:30), strings in single quotes, and the marks
// ; , { } ( ) =. A '#' starts a comment that runs to the end of the line. Every token knows
// the line and column (both from 1; columns count bytes) where it starts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::cli::rman {

struct Location {
  int line = 1;
  int column = 1;
};

enum class TokenKind { word, quoted, mark, end };

struct Token {
  TokenKind kind = TokenKind::end;
  std::string text;  // a word as written, a string without its quotes, a mark's character
  Location at;

  bool is_mark(char c) const { return kind == TokenKind::mark && text.size() == 1 && text[0] == c; }
  // A word equal to `keyword` (upper case) whatever the case it was written in.
  bool is(std::string_view keyword) const;
};

// "LINE:COLUMN: message": the form of every error of a command file, which the command
// prefixes with the file's name.
Error script_error(Location at, const std::string& message);

// The tokens of `text`, ending with one of kind `end` (at the end of the text). Errors
// (invalid_argument, script_error's form): a string not closed before the end of its line,
// a double-quoted string, a byte that belongs to no token.
Result<std::vector<Token>> tokenize(std::string_view text);

}  // namespace stripeback::cli::rman
