#include "database/recovery_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace stripeback::database {
namespace {

using stripeback::testing::read_file;
using stripeback::testing::TempDir;

bool is_dir(const std::string& p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string& p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0;
}

RecoveryFiles files_for(const std::string& data) {
  RecoveryFiles f;
  f.data_dir = data;
  f.hot.database = "postgres";
  f.hot.backup_label = "START WAL LOCATION: 0/3000028 (file 000000010000000000000003)\n";
  return f;
}

TEST(RecoveryFiles, APlainRestoreGetsTheLabelAndTheDirectoriesButNoSignal) {
  TempDir t;
  const std::string data = t / "data";
  ASSERT_EQ(::mkdir(data.c_str(), 0700), 0);
  auto written = write_recovery_files(files_for(data));
  ASSERT_TRUE(written) << written.error().what;
  EXPECT_EQ(read_file(data + "/backup_label"), files_for(data).hot.backup_label);
  for (const auto& d : startup_directories()) EXPECT_TRUE(is_dir(data + "/" + d)) << d;
  EXPECT_TRUE(is_dir(data + "/pg_wal/archive_status"));
  EXPECT_FALSE(exists(data + "/tablespace_map"));
  EXPECT_FALSE(exists(data + "/recovery.signal"));
  EXPECT_FALSE(exists(data + "/standby.signal"));
  EXPECT_FALSE(exists(data + "/postgresql.auto.conf"));
}

TEST(RecoveryFiles, ATargetAddsTheSignalAndAppendsTheSettings) {
  TempDir t;
  const std::string data = t / "data";
  ASSERT_EQ(::mkdir(data.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((data + "/pg_wal").c_str(), 0700), 0);  // there already: kept
  { std::ofstream(data + "/postgresql.auto.conf") << "work_mem = '8MB'"; }  // no newline
  auto f = files_for(data);
  f.hot.tablespace_map = "16385 /srv/space one\n16386 /srv/two\n";
  f.restore_root = "/restored/";
  f.recovery = RecoveryTarget{};
  f.recovery->kind = TargetKind::lsn;
  f.recovery->lsn = 0x3000028;
  f.restore_command = "sb archive-get %f %p";
  auto written = write_recovery_files(f);
  ASSERT_TRUE(written) << written.error().what;
  EXPECT_TRUE(exists(data + "/recovery.signal"));
  EXPECT_FALSE(exists(data + "/standby.signal"));
  EXPECT_EQ(read_file(data + "/tablespace_map"),
            "16385 /restored/srv/space one\n16386 /restored/srv/two\n");
  EXPECT_EQ(read_file(data + "/postgresql.auto.conf"),
            "work_mem = '8MB'\n" + recovery_settings(*f.recovery, f.restore_command));
  EXPECT_NE(std::find(written->begin(), written->end(), "recovery.signal"), written->end());
}

TEST(RecoveryFiles, AStandbyGetsStandbySignal) {
  TempDir t;
  const std::string data = t / "data";
  ASSERT_EQ(::mkdir(data.c_str(), 0700), 0);
  auto f = files_for(data);
  f.recovery = RecoveryTarget{};
  f.recovery->standby = true;
  ASSERT_TRUE(write_recovery_files(f));
  EXPECT_TRUE(exists(data + "/standby.signal"));
  EXPECT_FALSE(exists(data + "/recovery.signal"));
}

TEST(RecoveryFiles, AMissingDataDirectoryIsAnError) {
  TempDir t;
  auto r = write_recovery_files(files_for(t / "nothing"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find("nothing"), std::string::npos) << r.error().what;
}

TEST(RecoveryFiles, TablespacePathsStayAsRecordedWithoutARoot) {
  EXPECT_EQ(tablespace_map_below("1 /a\n", ""), "1 /a\n");
  EXPECT_EQ(tablespace_map_below("1 /a\n", "/"), "1 /a\n");
  EXPECT_EQ(tablespace_map_below("1 /a", "/r"), "1 /r/a");
}

TEST(RecoveryFiles, ARemappedTablespaceIsWhereTheRestorePutIt) {
  const PathMap moved = [](const std::string& p) {
    return p.rfind("/ts/fast", 0) == 0 ? "/srv/fast" + p.substr(8) : std::string(p);
  };
  EXPECT_EQ(tablespace_map_below("16390 /ts/fast/pg\n16391 /ts/slow\n", "/r", moved),
            "16390 /r/srv/fast/pg\n16391 /r/ts/slow\n");
  EXPECT_EQ(tablespace_map_below("16390 /ts/fast\n", "/", moved), "16390 /srv/fast\n");
  EXPECT_EQ(tablespace_map_below("16390 /ts/fast\n", "", moved), "16390 /srv/fast\n");
}

}  // namespace
}  // namespace stripeback::database
