// What backup --pg leaves out of a data directory (PgBackupMode::left_out): the contents of
// the runtime directories but not the directories, the running server's files at the top
// only, temporary files and relation caches anywhere.
#include <gtest/gtest.h>

#include "database/pg_backup.h"

namespace stripeback::database {
namespace {

TEST(PgLeftOut, RuntimeDirectoriesKeepThemselvesButNotTheirContents) {
  for (const char* d : {"pg_wal", "pg_replslot", "pg_stat_tmp", "pg_subtrans", "pg_notify",
                        "pg_dynshmem", "pg_serial", "pg_snapshots", "pg_tblspc"}) {
    EXPECT_FALSE(PgBackupMode::left_out(d)) << d;
    EXPECT_TRUE(PgBackupMode::left_out(std::string(d) + "/000000010000000000000001")) << d;
  }
  EXPECT_TRUE(PgBackupMode::left_out("pg_wal/archive_status"));
  EXPECT_TRUE(PgBackupMode::left_out("pg_tblspc/16384"));
}

TEST(PgLeftOut, ServerFilesOnlyAtTheTopTemporaryFilesAnywhere) {
  for (const char* f : {"postmaster.pid", "postmaster.opts", "backup_label", "tablespace_map",
                        "backup_label.old"})
    EXPECT_TRUE(PgBackupMode::left_out(f)) << f;
  EXPECT_FALSE(PgBackupMode::left_out("base/1/postmaster.pid"));
  EXPECT_TRUE(PgBackupMode::left_out("base/pgsql_tmp"));
  EXPECT_TRUE(PgBackupMode::left_out("base/16384/pgsql_tmp1234.0"));
  EXPECT_TRUE(PgBackupMode::left_out("global/pg_internal.init"));
  EXPECT_TRUE(PgBackupMode::left_out("PG_15_202209061/16384/pg_internal.init"));
  // What a cluster is made of stays.
  for (const char* f : {"PG_VERSION", "global/pg_control", "base/1/1259", "pg_xact/0000",
                        "postgresql.conf", "postgresql.auto.conf", "pg_hba.conf",
                        "pg_logical/replorigin_checkpoint", "pg_multixact/offsets/0000"})
    EXPECT_FALSE(PgBackupMode::left_out(f)) << f;
}

}  // namespace
}  // namespace stripeback::database
