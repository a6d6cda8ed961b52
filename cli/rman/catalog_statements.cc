// CROSSCHECK, DELETE, LIST, REPORT, CONFIGURE and SHOW (docs/rman.md).
#include "cli/rman/statements.h"

namespace stripeback::cli::rman {
namespace {

// A tag: a word or a string.
Result<std::string> read_tag(Cursor& c, std::string_view what) {
  const Token& t = c.peek();
  if (t.kind != TokenKind::word && t.kind != TokenKind::quoted)
    return script_error(t.at, std::string(what) + " takes a name, found " + describe(t));
  c.take();
  return t.text;
}

Result<Args> configure_retention(Cursor& c) {
  SB_TRY(c.expect("POLICY", "after RETENTION"));
  SB_TRY(c.expect("TO", "after RETENTION POLICY"));
  if (c.accept("REDUNDANCY")) {
    SB_ASSIGN(std::string n, c.number("REDUNDANCY"));
    SB_TRY(c.finish("CONFIGURE RETENTION POLICY"));
    return Args{"configure", "retention", "redundancy", n};
  }
  if (c.accept("RECOVERY")) {
    SB_TRY(c.expect("WINDOW", "after RECOVERY"));
    SB_TRY(c.expect("OF", "after RECOVERY WINDOW"));
    SB_ASSIGN(std::string days, c.number("RECOVERY WINDOW OF"));
    SB_TRY(c.expect("DAYS", "after the number of days"));
    SB_TRY(c.finish("CONFIGURE RETENTION POLICY"));
    return Args{"configure", "retention", "recovery-window", days};
  }
  if (c.peek().is("NONE"))
    return script_error(c.peek().at, "RETENTION POLICY TO NONE is not supported: stripeback "
                                     "configure --clear retention removes the policy");
  return script_error(c.peek().at, "RETENTION POLICY TO takes REDUNDANCY n or RECOVERY "
                                   "WINDOW OF n DAYS, not " + describe(c.peek()));
}

}  // namespace

Result<Args> translate_crosscheck(Cursor& c) {
  if (auto e = not_supported(c, "CROSSCHECK")) return *e;
  if (c.accept("BACKUPSET")) {
    SB_ASSIGN(std::string id, c.number("BACKUPSET"));
    SB_TRY(c.finish("CROSSCHECK BACKUPSET"));
    return Args{"crosscheck", "--backup", id};
  }
  SB_TRY(c.expect("BACKUP", "after CROSSCHECK"));
  if (c.accept("TAG")) {
    SB_ASSIGN(std::string tag, read_tag(c, "TAG"));
    SB_TRY(c.finish("CROSSCHECK BACKUP"));
    return Args{"crosscheck", "--tag", tag};
  }
  SB_TRY(c.finish("CROSSCHECK BACKUP"));
  return Args{"crosscheck"};
}

// Stripeback never asks before deleting, so NOPROMPT changes nothing.
Result<Args> translate_delete(Cursor& c) {
  c.accept("NOPROMPT");
  if (c.accept("OBSOLETE")) {
    if (c.peek().is("REDUNDANCY") || c.peek().is("RECOVERY"))
      return script_error(c.peek().at, "DELETE OBSOLETE follows the configured policy: set it "
                                       "first with CONFIGURE RETENTION POLICY");
    SB_TRY(c.finish("DELETE OBSOLETE"));
    return Args{"delete", "obsolete"};
  }
  if (c.accept("EXPIRED")) {
    SB_TRY(c.expect("BACKUP", "after DELETE EXPIRED"));
    SB_TRY(c.finish("DELETE EXPIRED BACKUP"));
    return Args{"delete", "expired"};
  }
  if (auto e = not_supported(c, "DELETE")) return *e;
  return c.unexpected("DELETE (DELETE OBSOLETE or DELETE EXPIRED BACKUP)");
}

Result<Args> translate_list(Cursor& c) {
  if (auto e = not_supported(c, "LIST")) return *e;
  if (c.accept("BACKUPSET")) {
    SB_ASSIGN(std::string id, c.number("BACKUPSET"));
    SB_TRY(c.finish("LIST BACKUPSET"));
    return Args{"list", "--backup", id, "--files"};
  }
  SB_TRY(c.expect("BACKUP", "after LIST"));
  c.accept("SUMMARY");
  SB_TRY(c.finish("LIST BACKUP"));
  return Args{"list"};
}

Result<Args> translate_report(Cursor& c) {
  if (auto e = not_supported(c, "REPORT")) return *e;
  SB_TRY(c.expect("OBSOLETE", "after REPORT"));
  SB_TRY(c.finish("REPORT OBSOLETE"));
  return Args{"report", "obsolete"};
}

Result<Args> translate_configure(Cursor& c) {
  if (c.accept("RETENTION")) return configure_retention(c);
  if (c.accept("DEVICE")) {
    SB_TRY(c.expect("TYPE", "after DEVICE"));
    if (c.peek().is("SBT"))
      return script_error(c.peek().at, "PARALLELISM of SBT is not supported: a backup to tape "
                                       "runs one channel per drive (docs/tape.md)");
    SB_TRY(c.expect("DISK", "after DEVICE TYPE"));
    SB_TRY(c.expect("PARALLELISM", "after DEVICE TYPE DISK"));
    SB_ASSIGN(std::string n, c.number("PARALLELISM", 256));
    if (c.accept("BACKUP")) {
      SB_TRY(c.expect("TYPE", "after BACKUP"));
      SB_TRY(c.expect("TO", "after BACKUP TYPE"));
      SB_TRY(c.expect("BACKUPSET", "after BACKUP TYPE TO (Stripeback writes backup sets only)"));
    }
    SB_TRY(c.finish("CONFIGURE DEVICE TYPE"));
    return Args{"configure", "channels", n};
  }
  if (c.accept("CHANNEL")) {
    SB_TRY(c.expect("DEVICE", "after CHANNEL"));
    SB_TRY(c.expect("TYPE", "after DEVICE"));
    SB_TRY(c.expect("DISK", "after DEVICE TYPE (a backup to tape names its drives)"));
    SB_TRY(c.expect("FORMAT", "after DEVICE TYPE DISK"));
    const Location at = c.peek().at;
    SB_ASSIGN(std::string format, c.quoted("FORMAT"));
    SB_ASSIGN(std::string dir, format_directory(format, at));
    SB_TRY(c.finish("CONFIGURE CHANNEL"));
    return Args{"configure", "destination", dir};
  }
  if (auto e = not_supported(c, "CONFIGURE")) return *e;
  return c.unexpected("CONFIGURE (RETENTION POLICY, DEVICE TYPE DISK PARALLELISM or CHANNEL "
                      "DEVICE TYPE DISK FORMAT)");
}

Result<Args> translate_show(Cursor& c) {
  SB_TRY(c.expect("ALL", "after SHOW"));
  SB_TRY(c.finish("SHOW ALL"));
  return Args{"configure", "--show"};
}

}  // namespace stripeback::cli::rman
