// What a command file may not say, and what to use in Stripeback instead (docs/rman.md,
// "Not accepted").
#include <cctype>
#include <string>

#include "cli/rman/statements.h"

namespace stripeback::cli::rman {
namespace {

struct Hint {
  std::string_view context;  // the keyword before it; empty: a statement's first
  std::string_view keyword;
  std::string_view instead;
};

constexpr std::string_view kPg =
    "Stripeback backs up files: name them (BACKUP DATAFILE 'path'), or for a running "
    "PostgreSQL cluster use stripeback backup DATADIR --pg CONNINFO (docs/postgresql.md)";
constexpr std::string_view kWal =
    "the database's log is archived as it is written: stripeback archive-push as "
    "PostgreSQL's archive_command (docs/postgresql.md)";
constexpr std::string_view kRestoreAll =
    "Stripeback restores files: RESTORE TO 'dir' restores everything, RESTORE DATAFILE "
    "'path' TO 'dir' some files; a PostgreSQL --pg backup to a point in time is stripeback "
    "restore --target-time (docs/postgresql.md)";

constexpr Hint kHints[] = {
    {"", "RECOVER", "recovery is the database's own: stripeback restore --target-time TIME "
                    "(or --target-lsn, --target-xid) sets up PostgreSQL's recovery for a --pg "
                    "backup (docs/postgresql.md)"},
    {"", "SWITCH", "stripeback restores each file at its original path below the restore "
                   "directory; there is nothing to switch"},
    {"", "DUPLICATE", "restore the backup on the other host with stripeback restore"},
    {"", "CONNECT", "stripeback run --catalog DIR names the catalog; Stripeback connects to "
                    "no database (backup --pg CONNINFO for PostgreSQL)"},
    {"", "CATALOG", "stripeback catalog rebuild --from MEDIA records the pieces a catalog is "
                    "missing"},
    {"", "RESYNC", "stripeback catalog rebuild --from MEDIA"},
    {"", "CHANGE", "to keep a backup use stripeback keep (docs/media-management.md); "
                   "crosscheck marks pieces available or expired"},
    {"", "SQL", "Stripeback runs no SQL; run it with the database's own client"},
    {"", "STARTUP", "Stripeback does not start or stop the database"},
    {"", "SHUTDOWN", "Stripeback does not start or stop the database"},
    {"", "ALTER", "Stripeback does not run database statements"},
    {"", "HOST", "run the command from the shell around stripeback run"},
    {"", "SPOOL", "redirect stripeback run's output in the shell"},
    {"", "SEND", "Stripeback has no media manager library to send to"},
    {"SET", "NEWNAME", "stripeback restore --remap OLD=NEW restores a file under another name "
                       "(docs/rman.md)"},
    {"SET", "UNTIL", "stripeback restore --target-time TIME (docs/postgresql.md)"},
    {"BACKUP", "DATABASE", kPg},
    {"BACKUP", "TABLESPACE", kPg},
    {"BACKUP", "PLUGGABLE", kPg},
    {"BACKUP", "CONTROLFILE", kPg},
    {"BACKUP", "CURRENT", kPg},
    {"BACKUP", "SPFILE", kPg},
    {"BACKUP", "ARCHIVELOG", kWal},
    {"BACKUP", "PLUS", kWal},
    {"BACKUP", "RECOVERY", "back up the directory itself with BACKUP DATAFILE 'dir' (directories "
                           "are walked)"},
    {"BACKUP", "BACKUPSET", "Stripeback does not copy backups; back up the files again to the "
                            "other destination"},
    {"BACKUP", "COPY", "Stripeback writes backup pieces only, no image copies"},
    {"BACKUP", "DATAFILECOPY", "Stripeback writes backup pieces only, no image copies"},
    {"BACKUP", "KEEP", "back up, then keep the backup with stripeback keep ID "
                       "(docs/media-management.md)"},
    {"BACKUP", "NOT", "stripeback backup --optimize skips files an earlier backup holds "
                      "unchanged"},
    {"AS", "COPY", "Stripeback writes backup pieces only, no image copies"},
    {"RESTORE", "DATABASE", kRestoreAll},
    {"RESTORE", "TABLESPACE", kRestoreAll},
    {"RESTORE", "CONTROLFILE", kRestoreAll},
    {"RESTORE", "SPFILE", kRestoreAll},
    {"RESTORE", "ARCHIVELOG", "stripeback archive-get fetches archived log files, as "
                              "PostgreSQL's restore_command (docs/postgresql.md)"},
    {"RESTORE", "UNTIL", "stripeback restore --target-time TIME (docs/postgresql.md)"},
    {"RESTORE", "PREVIEW", "stripeback list --backup ID --files shows what a backup holds"},
    {"VALIDATE", "DATABASE", "name the files: VALIDATE DATAFILE 'path' reads and checks them, "
                             "VALIDATE BACKUPSET n checks a backup"},
    {"VALIDATE", "BACKUP", "RESTORE VALIDATE checks every backup a restore would use, "
                           "VALIDATE BACKUPSET n one backup"},
    {"CROSSCHECK", "ARCHIVELOG", kWal},
    {"CROSSCHECK", "COPY", "Stripeback writes backup pieces only, no image copies"},
    {"DELETE", "BACKUPSET", "stripeback delete backup ID removes one backup"},
    {"DELETE", "BACKUP", "stripeback delete backup ID removes one backup; DELETE OBSOLETE and "
                         "DELETE EXPIRED BACKUP remove what retention and crosscheck found"},
    {"DELETE", "ARCHIVELOG", "DELETE OBSOLETE also removes the archived log files no kept "
                             "backup needs"},
    {"DELETE", "COPY", "Stripeback writes backup pieces only, no image copies"},
    {"LIST", "ARCHIVELOG", "LIST BACKUP; the archived log files are listed by stripeback list "
                           "--json of --pg backups (wal_complete)"},
    {"LIST", "INCARNATION", "Stripeback has no incarnations; LIST BACKUP lists the backups"},
    {"LIST", "FAILURE", "stripeback list --corrupt lists the corrupt pages found"},
    {"REPORT", "SCHEMA", "LIST BACKUPSET n lists the files a backup holds"},
    {"REPORT", "NEED", "stripeback report unrecoverable lists --pg backups whose log is not "
                       "archived"},
    {"REPORT", "UNRECOVERABLE", "stripeback report unrecoverable (docs/postgresql.md)"},
    {"CONFIGURE", "CONTROLFILE", "Stripeback leaves a copy of its catalog beside every backup's "
                                 "pieces by itself"},
    {"CONFIGURE", "COMPRESSION", "stripeback configure compression LEVEL"},
    {"CONFIGURE", "ENCRYPTION", "stripeback configure key-file PATH (docs/encryption.md)"},
    {"CONFIGURE", "BACKUP", "stripeback backup --optimize skips files an earlier backup holds "
                            "unchanged"},
    {"CONFIGURE", "ARCHIVELOG", kWal},
    {"CONFIGURE", "DEFAULT", "CONFIGURE CHANNEL DEVICE TYPE DISK FORMAT '/dir/%U' sets where "
                             "backups go"},
};

}  // namespace

std::optional<Error> not_supported(const Cursor& c, std::string_view context) {
  const Token& t = c.peek();
  for (const Hint& h : kHints) {
    if (h.context != context || !t.is(h.keyword)) continue;
    std::string what = context.empty() ? t.text : std::string(context) + " " + t.text;
    for (char& ch : what) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return script_error(t.at, what + " is not supported: " + std::string(h.instead));
  }
  return std::nullopt;
}

}  // namespace stripeback::cli::rman
