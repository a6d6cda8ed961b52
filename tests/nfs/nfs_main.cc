#include <gtest/gtest.h>

#include "backends/nfs/nfs_fs.h"
#include "engine/wiring/backends.h"
#include "tests/nfs/nfs_server.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // nfs:// locations parse through the backends the library registers.
  stripeback::engine::register_builtin_backends();

  ::testing::AddGlobalTestEnvironment(new stripeback::it::NfsServer);
  return RUN_ALL_TESTS();
}
