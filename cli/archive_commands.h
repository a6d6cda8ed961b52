// `stripeback archive-push` and `archive-get`: PostgreSQL's archive_command and
// restore_command (docs/postgresql.md, "WAL archiving"). The archive's destination,
// compression, key and async mode are the catalog's settings (configure).
#pragma once

#include <string>

#include "cli/commands.h"

namespace CLI {
class App;
}

namespace stripeback::cli {

// archive-get: the file is not in the archive (quietly: PostgreSQL asks for timeline
// history files that may not exist) is kExitFailed; any other failure this.
inline constexpr int kExitArchiveError = 7;

struct ArchiveFlags {
  std::string wal_path;  // archive-push: %p
  std::string name;      // archive-get: %f
  std::string to;        // archive-get: %p
};

void add_archive_push(CLI::App* cmd, CommonFlags& c, ArchiveFlags& f);
void add_archive_get(CLI::App* cmd, CommonFlags& c, ArchiveFlags& f);
// Exit codes: 0 archived (or archived already with the same bytes), 1 not archived (the
// message names the file and the cause), 2 bad usage or settings (no destination, a drive
// of removable media, a file PostgreSQL does not archive).
int run_archive_push_cmd(const CommonFlags& c, const ArchiveFlags& f);
// Exit codes: 0 restored, 1 not in the archive (nothing printed), 2 bad usage, 4 wrong key,
// kExitArchiveError any other failure (named on stderr).
int run_archive_get_cmd(const CommonFlags& c, const ArchiveFlags& f);

}  // namespace stripeback::cli
