// The C API's nfs_tune_malloc key reaches the NFS client: a job run with it lets the client
// raise glibc's malloc thresholds for the process; a job without it leaves them alone. (Linked
// against the static archive, whose engine functions are visible to a test.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/wiring/backends.h"
#include "stripeback/stripeback.h"
#include <cstdlib>

namespace {

sb_status run_backup(const std::string& dir, bool tune) {
  sb_options* o = sb_options_new();
  sb_options_set(o, "source", (dir + "/src").c_str());
  sb_options_set(o, "destination", (dir + "/dst").c_str());
  sb_options_set_bool(o, "status_file", 0);
  if (tune) sb_options_set_bool(o, "nfs_tune_malloc", 1);
  sb_catalog* cat = nullptr;
  sb_status st = sb_catalog_open((dir + "/cat").c_str(), SB_CATALOG_CREATE, &cat);
  if (st == SB_OK) {
    sb_job* job = nullptr;
    st = sb_job_new(cat, SB_OP_BACKUP, o, &job);
    if (st == SB_OK) st = sb_job_run(job);
    sb_job_free(job);
  }
  sb_catalog_free(cat);
  sb_options_free(o);
  return st;
}

TEST(CApiNfsTuneMalloc, OnlyAJobThatAsksTunesTheProcess) {
#if !STRIPEBACK_WITH_NFS
  GTEST_SKIP() << "this build has no NFS client (STRIPEBACK_WITH_NFS=OFF)";
#endif
  std::string dir = (std::filesystem::temp_directory_path() / "sbtune.XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::filesystem::create_directories(dir + "/src");
  std::ofstream(dir + "/src/a") << "some data";
  ASSERT_EQ(run_backup(dir, false), SB_OK);
  EXPECT_FALSE(stripeback::engine::nfs_malloc_tuning());
  std::filesystem::remove_all(dir + "/cat");
  std::filesystem::remove_all(dir + "/dst");
  ASSERT_EQ(run_backup(dir, true), SB_OK);
  EXPECT_TRUE(stripeback::engine::nfs_malloc_tuning());
  std::filesystem::remove_all(dir);
}

}  // namespace
