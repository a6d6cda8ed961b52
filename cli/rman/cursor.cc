#include "cli/rman/cursor.h"

#include <cctype>

#include "util/units.h"

namespace stripeback::cli::rman {

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::word: return "'" + t.text + "'";
    case TokenKind::quoted: return "the string '" + t.text + "'";
    case TokenKind::mark: return "'" + t.text + "'";
    case TokenKind::end: return "the end of the statement";
  }
  return {};
}

const Token& Cursor::peek(size_t ahead) const {
  const size_t i = pos_ + ahead;
  return s_.tokens[i < last() ? i : last()];
}

bool Cursor::accept(std::string_view keyword) {
  if (!peek().is(keyword)) return false;
  ++pos_;
  return true;
}

bool Cursor::accept_mark(char mark) {
  if (!peek().is_mark(mark)) return false;
  ++pos_;
  return true;
}

Result<void> Cursor::expect(std::string_view keyword, std::string_view context) {
  if (accept(keyword)) return ok();
  return script_error(peek().at, "expected " + std::string(keyword) + " " +
                                     std::string(context) + ", found " + describe(peek()));
}

Result<std::string> Cursor::quoted(std::string_view what) {
  const Token& t = peek();
  if (t.kind != TokenKind::quoted)
    return script_error(t.at, std::string(what) + " takes a string in single quotes, found " +
                                  describe(t));
  if (t.text.empty()) return script_error(t.at, std::string(what) + " may not be empty");
  ++pos_;
  return t.text;
}

Result<std::string> Cursor::number(std::string_view what, uint64_t hi) {
  const Token& t = peek();
  bool digits = t.kind == TokenKind::word && t.text.size() <= 19;
  for (char c : t.text) digits = digits && std::isdigit(static_cast<unsigned char>(c)) != 0;
  const uint64_t n = digits ? std::stoull(t.text) : 0;
  if (!digits || n == 0 || n > hi)
    return script_error(t.at, std::string(what) + " takes a whole number from 1 to " +
                                  std::to_string(hi) + ", not " + describe(t));
  ++pos_;
  return std::to_string(n);
}

Result<std::string> Cursor::size(std::string_view what) {
  const Token& t = peek();
  std::string text = t.text;
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  bool good = t.kind == TokenKind::word && !text.empty();
  for (size_t i = 0; good && i < text.size(); ++i) {
    const bool unit = i + 1 == text.size() && i > 0 &&
                      std::string_view("KMG").find(text[i]) != std::string_view::npos;
    good = std::isdigit(static_cast<unsigned char>(text[i])) != 0 || unit;
  }
  if (good) {
    auto bytes = util::parse_size(text);
    good = bytes.has_value() && *bytes > 0;
  }
  if (!good)
    return script_error(t.at, std::string(what) + " takes a size: bytes, or a number with K, M "
                                  "or G (e.g. 200M), not " + describe(t));
  ++pos_;
  return text;
}

Error Cursor::unexpected(std::string_view context) const {
  const Token& t = peek();
  if (t.kind == TokenKind::end)
    return script_error(t.at, std::string(context) + " is not complete: the statement ends here");
  return script_error(t.at, describe(t) + " is not expected in " + std::string(context));
}

Result<void> Cursor::finish(std::string_view context) const {
  if (at_end()) return ok();
  return unexpected(context);
}

}  // namespace stripeback::cli::rman
