// Reads one statement's tokens (script.h) front to back, with the checks every statement
// needs: a keyword, a string, a number, a size, and errors that point at the token they
// are about (script_error's form). The statement must outlive the cursor.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cli/rman/script.h"

namespace stripeback::cli::rman {

class Cursor {
 public:
  explicit Cursor(const Statement& s) : s_(s) {}

  const Token& peek(size_t ahead = 0) const;
  const Token& take() { return s_.tokens[pos_ < last() ? pos_++ : last()]; }
  bool at_end() const { return peek().kind == TokenKind::end; }
  // Takes the next token when it is the word `keyword` (upper case).
  bool accept(std::string_view keyword);
  bool accept_mark(char mark);
  // Takes the word `keyword`, else fails naming `context` ("after RETENTION POLICY TO").
  Result<void> expect(std::string_view keyword, std::string_view context);
  // Takes a quoted string; `what` says whose ("FORMAT").
  Result<std::string> quoted(std::string_view what);
  // A whole number from 1 to `hi`, as written.
  Result<std::string> number(std::string_view what, uint64_t hi = UINT64_MAX);
  // A size: a whole number of bytes above 0, or with K, M or G (powers of 1024), given back
  // in upper case ("200M").
  Result<std::string> size(std::string_view what);
  // Fails at the next token: "'X' is not expected in CONTEXT" (at the end of the
  // statement: "CONTEXT is not complete: the statement ends here").
  Error unexpected(std::string_view context) const;
  // Fails unless the statement is over.
  Result<void> finish(std::string_view context) const;

 private:
  size_t last() const { return s_.tokens.size() - 1; }
  const Statement& s_;
  size_t pos_ = 0;
};

// How a token reads in a message: 'WORD', the string 'x', ';'...
std::string describe(const Token& t);

}  // namespace stripeback::cli::rman
