// BACKUP, VALIDATE and RESTORE (docs/rman.md).
#include <cctype>
#include <initializer_list>

#include "cli/rman/statements.h"

namespace stripeback::cli::rman {
namespace {

void add(Args& a, std::initializer_list<std::string> words) { a.insert(a.end(), words); }

// Quoted paths separated by commas (or blanks), after DATAFILE or on their own.
Result<void> read_paths(Cursor& c, std::string_view context, std::vector<std::string>& out) {
  const Token& first = c.peek();
  if (first.kind == TokenKind::word && !first.text.empty() &&
      std::isdigit(static_cast<unsigned char>(first.text[0])) != 0)
    return script_error(first.at, "datafile numbers are the database's: name the file by its "
                                  "path in single quotes");
  SB_ASSIGN(std::string path, c.quoted(context));
  out.push_back(std::move(path));
  while (c.peek().kind == TokenKind::quoted || c.peek().is_mark(',')) {
    c.accept_mark(',');
    SB_ASSIGN(std::string more, c.quoted(context));
    out.push_back(std::move(more));
  }
  return ok();
}

// The paths last on the command line, after "--" when one of them would read as a flag.
void add_paths(Args& a, const std::vector<std::string>& paths) {
  for (const auto& p : paths)
    if (p.starts_with("-")) {
      a.emplace_back("--");
      break;
    }
  a.insert(a.end(), paths.begin(), paths.end());
}

Result<std::string> read_duration(Cursor& c) {
  const Token& t = c.peek();
  const std::string& s = t.text;
  const size_t colon = s.find(':');
  bool good = t.kind == TokenKind::word && colon != std::string::npos && colon >= 1 &&
              colon <= 2 && s.size() == colon + 3;
  for (size_t i = 0; good && i < s.size(); ++i)
    good = i == colon || std::isdigit(static_cast<unsigned char>(s[i])) != 0;
  if (good) good = std::stoi(s.substr(colon + 1)) < 60 && s != "0:00" && s != "00:00";
  if (!good)
    return script_error(t.at, "DURATION takes hours and minutes, hh:mm (e.g. 01:30, minutes "
                              "below 60, above 00:00), not " + describe(t));
  c.take();
  return s;
}

// The options of BACKUP, in the order given; sources apart.
struct BackupStatement {
  Args flags;
  std::vector<std::string> sources;
  bool validate = false;
  bool own_format = false;
  Location format_at;
};

Result<void> read_backup_item(Cursor& c, BackupStatement& b) {
  const Token& t = c.peek();
  if (c.accept("INCREMENTAL")) {
    SB_TRY(c.expect("LEVEL", "after INCREMENTAL"));
    const Token& level = c.peek();
    if (!level.is("0") && !level.is("1"))
      return script_error(level.at, "INCREMENTAL LEVEL is 0 or 1 in Stripeback, not " +
                                        describe(level));
    c.take();
    add(b.flags, {"--level", level.text});
    if (c.peek().is("CUMULATIVE")) {
      if (level.text == "0")
        return script_error(c.peek().at, "CUMULATIVE goes with INCREMENTAL LEVEL 1");
      c.take();
      b.flags.emplace_back("--cumulative");
    }
  } else if (c.accept("FULL")) {
  } else if (c.accept("VALIDATE")) {
    b.validate = true;
  } else if (c.accept("CHECK")) {
    SB_TRY(c.expect("LOGICAL", "after CHECK"));
    b.flags.emplace_back("--check-logical");
  } else if (c.accept("AS")) {
    if (auto e = not_supported(c, "AS")) return *e;
    if (c.accept("COMPRESSED")) b.flags.insert(b.flags.end(), {"--compress", "medium"});
    SB_TRY(c.expect("BACKUPSET", "after AS"));
  } else if (c.accept("FILESPERSET")) {
    SB_ASSIGN(std::string n, c.number("FILESPERSET", 1000000));
    add(b.flags, {"--files-per-set", n});
  } else if (c.accept("SECTION")) {
    SB_TRY(c.expect("SIZE", "after SECTION"));
    SB_ASSIGN(std::string size, c.size("SECTION SIZE"));
    add(b.flags, {"--section-size", size});
  } else if (c.accept("DURATION")) {
    SB_ASSIGN(std::string d, read_duration(c));
    add(b.flags, {"--duration", d});
    if (c.accept("PARTIAL")) b.flags.emplace_back("--partial");
    if (c.accept("MINIMIZE")) {
      if (c.accept("LOAD")) b.flags.emplace_back("--minimize-load");
      else if (!c.accept("TIME"))
        return script_error(c.peek().at, "MINIMIZE is LOAD or TIME, not " + describe(c.peek()));
    }
  } else if (c.accept("TAG")) {
    const Token& tag = c.peek();
    if (tag.kind != TokenKind::word && tag.kind != TokenKind::quoted)
      return script_error(tag.at, "TAG takes a name, found " + describe(tag));
    c.take();
    add(b.flags, {"--tag", tag.text});
  } else if (c.accept("FORMAT")) {
    b.format_at = c.peek().at;
    SB_ASSIGN(std::string format, c.quoted("FORMAT"));
    SB_ASSIGN(std::string dir, format_directory(format, b.format_at));
    add(b.flags, {"--to", dir});
    b.own_format = true;
  } else if (c.accept("DATAFILE")) {
    SB_TRY(read_paths(c, "DATAFILE", b.sources));
  } else if (t.kind == TokenKind::quoted) {
    SB_TRY(read_paths(c, "BACKUP", b.sources));
  } else if (auto e = not_supported(c, "BACKUP")) {
    return *e;
  } else {
    return c.unexpected("BACKUP");
  }
  return ok();
}

}  // namespace

Result<Args> translate_backup(Cursor& c, const std::vector<Channel>& channels, Location at) {
  BackupStatement b;
  while (!c.at_end()) SB_TRY(read_backup_item(c, b));
  if (b.sources.empty())
    return script_error(c.peek().at, "BACKUP names no file: add DATAFILE 'path' (files or "
                                     "directories)");
  if (b.validate && b.own_format)
    return script_error(b.format_at, "BACKUP VALIDATE writes nothing: no FORMAT");
  Args a{"backup"};
  if (b.validate) a.emplace_back("--validate");
  SB_ASSIGN(Args ch, channel_flags(channels,
                                   b.validate ? ChannelUse::source_validation : ChannelUse::backup,
                                   at, b.own_format));
  a.insert(a.end(), ch.begin(), ch.end());
  a.insert(a.end(), b.flags.begin(), b.flags.end());
  add_paths(a, b.sources);
  return a;
}

Result<Args> translate_validate(Cursor& c, const std::vector<Channel>& channels, Location at) {
  if (c.accept("BACKUPSET")) {
    SB_ASSIGN(std::string id, c.number("BACKUPSET"));
    SB_TRY(c.finish("VALIDATE BACKUPSET"));
    SB_ASSIGN(Args ch, channel_flags(channels, ChannelUse::validate, at, false));
    Args a{"validate"};
    a.insert(a.end(), ch.begin(), ch.end());
    add(a, {"--backup", id});
    return a;
  }
  Args flags;
  if (c.accept("CHECK")) {
    SB_TRY(c.expect("LOGICAL", "after CHECK"));
    flags.emplace_back("--check-logical");
  }
  if (auto e = not_supported(c, "VALIDATE")) return *e;
  std::vector<std::string> paths;
  if (c.accept("DATAFILE")) {
    SB_TRY(read_paths(c, "DATAFILE", paths));
  } else if (c.peek().kind == TokenKind::quoted) {
    SB_TRY(read_paths(c, "VALIDATE", paths));
  } else {
    return c.unexpected("VALIDATE (VALIDATE DATAFILE 'path' or VALIDATE BACKUPSET n)");
  }
  SB_TRY(c.finish("VALIDATE"));
  Args a{"backup", "--validate"};
  SB_ASSIGN(Args ch, channel_flags(channels, ChannelUse::source_validation, at, false));
  a.insert(a.end(), ch.begin(), ch.end());
  a.insert(a.end(), flags.begin(), flags.end());
  add_paths(a, paths);
  return a;
}

Result<Args> translate_restore(Cursor& c, const std::vector<Channel>& channels, Location at) {
  std::vector<std::string> paths;
  Args flags;
  std::string to;
  bool validate = false;
  while (!c.at_end()) {
    if (c.accept("DATAFILE")) {
      SB_TRY(read_paths(c, "DATAFILE", paths));
    } else if (c.peek().kind == TokenKind::quoted) {
      SB_TRY(read_paths(c, "RESTORE", paths));
    } else if (c.accept("TO")) {
      SB_ASSIGN(to, c.quoted("TO"));
    } else if (c.accept("FROM")) {
      SB_TRY(c.expect("TAG", "after FROM"));
      const Token& tag = c.peek();
      if (tag.kind != TokenKind::word && tag.kind != TokenKind::quoted)
        return script_error(tag.at, "FROM TAG takes a name, found " + describe(tag));
      c.take();
      add(flags, {"--tag", tag.text});
    } else if (c.accept("FORCE")) {
      flags.emplace_back("--force");
    } else if (c.accept("VALIDATE")) {
      validate = true;
    } else if (auto e = not_supported(c, "RESTORE")) {
      return *e;
    } else {
      return c.unexpected("RESTORE");
    }
  }
  if (validate) {
    if (!to.empty()) return script_error(at, "RESTORE ... VALIDATE writes nothing: no TO");
    for (const auto& f : flags)
      if (f == "--force") return script_error(at, "RESTORE ... VALIDATE writes nothing: no FORCE");
    Args a{"validate"};
    SB_ASSIGN(Args ch, channel_flags(channels, ChannelUse::validate, at, false));
    a.insert(a.end(), ch.begin(), ch.end());
    a.insert(a.end(), flags.begin(), flags.end());
    add_paths(a, paths);
    return a;
  }
  if (to.empty())
    return script_error(c.peek().at, "RESTORE needs TO 'dir': Stripeback restores each file "
                                     "below that directory at its original path");
  Args a{"restore", "--to", to};
  SB_ASSIGN(Args ch, channel_flags(channels, ChannelUse::restore, at, false));
  a.insert(a.end(), ch.begin(), ch.end());
  a.insert(a.end(), flags.begin(), flags.end());
  add_paths(a, paths);
  return a;
}

}  // namespace stripeback::cli::rman
