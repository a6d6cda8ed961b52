#include "cli/rman/lexer.h"

#include <cctype>

namespace stripeback::cli::rman {
namespace {

bool is_mark(char c) { return std::string_view(";,{}()=").find(c) != std::string_view::npos; }

// Bytes that end a word: blanks, marks, quotes and comments. Anything else is part of one,
// so paths, sizes (2G), times (01:30) and RMAN's %U all read as words.
bool ends_word(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0 || is_mark(c) || c == '\'' ||
         c == '"' || c == '#';
}

bool printable(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || std::isgraph(u) != 0;
}

}  // namespace

bool Token::is(std::string_view keyword) const {
  if (kind != TokenKind::word || text.size() != keyword.size()) return false;
  for (size_t i = 0; i < text.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(text[i])) != keyword[i]) return false;
  return true;
}

Error script_error(Location at, const std::string& message) {
  return Error{Errc::invalid_argument, 0,
               std::to_string(at.line) + ":" + std::to_string(at.column) + ": " + message};
}

Result<std::vector<Token>> tokenize(std::string_view text) {
  std::vector<Token> out;
  Location at;
  size_t i = 0;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n; ++k, ++i) {
      if (text[i] == '\n') {
        ++at.line;
        at.column = 1;
      } else {
        ++at.column;
      }
    }
  };
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      advance(1);
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') advance(1);
    } else if (is_mark(c)) {
      out.push_back({TokenKind::mark, std::string(1, c), at});
      advance(1);
    } else if (c == '\'') {
      const size_t close = text.find_first_of("'\n", i + 1);
      if (close == std::string_view::npos || text[close] == '\n')
        return script_error(at, "the string that starts here is not closed with ' before the "
                                "end of its line");
      out.push_back({TokenKind::quoted, std::string(text.substr(i + 1, close - i - 1)), at});
      advance(close + 1 - i);
    } else if (c == '"') {
      return script_error(at, "strings are written in single quotes ('...'), not double");
    } else if (!printable(c)) {
      return script_error(at, "unexpected control character (byte " +
                                  std::to_string(static_cast<unsigned char>(c)) + ")");
    } else {
      size_t end = i;
      while (end < text.size() && !ends_word(text[end]) && printable(text[end])) ++end;
      out.push_back({TokenKind::word, std::string(text.substr(i, end - i)), at});
      advance(end - i);
    }
  }
  out.push_back({TokenKind::end, {}, at});
  return out;
}

}  // namespace stripeback::cli::rman
