#include <gtest/gtest.h>

#include "backends/nfs/nfs_fs.h"
#include "tests/nfs/nfs_server.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);

  ::testing::AddGlobalTestEnvironment(new stripeback::it::NfsServer);
  return RUN_ALL_TESTS();
}
