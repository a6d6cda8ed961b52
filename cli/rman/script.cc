#include "cli/rman/script.h"

#include <string>

namespace stripeback::cli::rman {
namespace {

// Where a token ends: where a missing ';' was due.
Location after(const Token& t) {
  const size_t width = t.text.size() + (t.kind == TokenKind::quoted ? 2 : 0);
  return {t.at.line, t.at.column + static_cast<int>(width)};
}

// The statement that starts at tokens[i], up to its ';'; `i` is left after the ';'.
Result<Statement> read_statement(const std::vector<Token>& tokens, size_t& i) {
  Statement s;
  s.at = tokens[i].at;
  for (; tokens[i].kind != TokenKind::end; ++i) {
    const Token& t = tokens[i];
    if (t.is_mark(';')) {
      s.tokens.push_back({TokenKind::end, {}, t.at});
      ++i;
      return s;
    }
    if (t.is_mark('{') || t.is_mark('}')) break;
    s.tokens.push_back(t);
  }
  return script_error(after(s.tokens.back()),
                      "missing ';' at the end of the statement that starts at " +
                          std::to_string(s.at.line) + ":" + std::to_string(s.at.column));
}

Result<Block> read_run_block(const std::vector<Token>& tokens, size_t& i) {
  Block b{true, tokens[i].at, {}};
  if (!tokens[i + 1].is_mark('{'))
    return script_error(tokens[i + 1].at, "expected '{' after RUN");
  i += 2;
  while (!tokens[i].is_mark('}')) {
    const Token& t = tokens[i];
    if (t.kind == TokenKind::end)
      return script_error(b.at, "the RUN block that opens here is not closed with '}'");
    if (t.is("RUN")) return script_error(t.at, "a RUN block cannot hold another RUN block");
    if (t.is_mark('{')) return script_error(t.at, "unexpected '{' (only RUN opens a block)");
    if (t.is_mark(';')) {
      ++i;
      continue;
    }
    SB_ASSIGN(Statement s, read_statement(tokens, i));
    b.statements.push_back(std::move(s));
  }
  ++i;
  return b;
}

}  // namespace

Result<std::vector<Block>> split_script(const std::vector<Token>& tokens) {
  std::vector<Block> blocks;
  size_t i = 0;
  while (tokens[i].kind != TokenKind::end) {
    const Token& t = tokens[i];
    if (t.is("RUN")) {
      SB_ASSIGN(Block b, read_run_block(tokens, i));
      blocks.push_back(std::move(b));
    } else if (t.is_mark('}')) {
      return script_error(t.at, "'}' closes no RUN block");
    } else if (t.is_mark('{')) {
      return script_error(t.at, "unexpected '{' (only RUN opens a block)");
    } else if (t.is_mark(';')) {
      ++i;
    } else {
      SB_ASSIGN(Statement s, read_statement(tokens, i));
      blocks.push_back(Block{false, s.at, {std::move(s)}});
    }
  }
  return blocks;
}

}  // namespace stripeback::cli::rman
