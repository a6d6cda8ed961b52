#include "cli/rman/translate.h"

#include <cctype>
#include <optional>

#include "cli/rman/script.h"
#include "cli/rman/statements.h"

namespace stripeback::cli::rman {
namespace {

// The channels a RUN block has allocated so far; ALLOCATE and RELEASE change them.
Result<void> allocate(Cursor& c, std::vector<Channel>& channels, const Block& block,
                      const Token& first) {
  if (!block.run)
    return script_error(first.at, "ALLOCATE CHANNEL is only valid inside RUN { ... } (CONFIGURE "
                                  "DEVICE TYPE DISK PARALLELISM n sets the channels of every "
                                  "job)");
  SB_ASSIGN(Channel ch, read_allocate(c));
  for (const Channel& other : channels)
    if (other.name == ch.name)
      return script_error(ch.at, "channel " + ch.name + " is already allocated (at line " +
                                     std::to_string(other.at.line) + ")");
  channels.push_back(std::move(ch));
  return ok();
}

Result<void> release(Cursor& c, std::vector<Channel>& channels, const Block& block,
                     const Token& first) {
  if (!block.run)
    return script_error(first.at, "RELEASE CHANNEL is only valid inside RUN { ... }");
  SB_TRY(c.expect("CHANNEL", "after RELEASE"));
  const Token& name = c.take();
  for (auto it = channels.begin(); it != channels.end(); ++it)
    if (name.kind == TokenKind::word && it->name == name.text) {
      channels.erase(it);
      return c.finish("RELEASE CHANNEL");
    }
  return script_error(name.at, "no channel " + describe(name) + " is allocated");
}

std::string upper(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

Result<std::optional<Args>> some(Result<Args> r) {
  if (!r) return r.error();
  return std::optional<Args>(std::move(*r));
}

// One statement: its command, or none (ALLOCATE, RELEASE).
Result<std::optional<Args>> statement(const Statement& s, const Block& block,
                                      std::vector<Channel>& channels) {
  Cursor c(s);
  const Token& first = c.peek();
  if (first.kind != TokenKind::word)
    return script_error(first.at, "a statement starts with a keyword, not " + describe(first));
  if (auto e = not_supported(c, "")) return *e;
  c.take();
  std::optional<Args> none;
  if (first.is("ALLOCATE")) {
    SB_TRY(allocate(c, channels, block, first));
    return none;
  }
  if (first.is("RELEASE")) {
    SB_TRY(release(c, channels, block, first));
    return none;
  }
  if (first.is("BACKUP")) return some(translate_backup(c, channels, s.at));
  if (first.is("VALIDATE")) return some(translate_validate(c, channels, s.at));
  if (first.is("RESTORE")) return some(translate_restore(c, channels, s.at));
  if (first.is("CROSSCHECK")) return some(translate_crosscheck(c));
  if (first.is("DELETE")) return some(translate_delete(c));
  if (first.is("LIST")) return some(translate_list(c));
  if (first.is("REPORT")) return some(translate_report(c));
  if (first.is("CONFIGURE")) return some(translate_configure(c));
  if (first.is("SHOW")) return some(translate_show(c));
  if (first.is("SET")) {
    if (auto e = not_supported(c, "SET")) return *e;
    return script_error(c.peek().at, "SET " + upper(c.peek().text) + " is not supported");
  }
  return script_error(first.at, "unknown statement '" + first.text +
                                    "' (docs/rman.md lists the statements stripeback run "
                                    "accepts)");
}

}  // namespace

Result<std::vector<Command>> translate(std::string_view text) {
  SB_ASSIGN(std::vector<Token> tokens, tokenize(text));
  SB_ASSIGN(std::vector<Block> blocks, split_script(tokens));
  std::vector<Command> out;
  for (const Block& block : blocks) {
    std::vector<Channel> channels;  // a RUN block's channels end with it, as in RMAN
    for (const Statement& s : block.statements) {
      SB_ASSIGN(std::optional<Args> args, statement(s, block, channels));
      if (args) out.push_back({s.at, upper(s.tokens.front().text), std::move(*args)});
    }
  }
  return out;
}

}  // namespace stripeback::cli::rman
