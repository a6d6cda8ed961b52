#include "backends/nfs/backend.h"

#include "backends/nfs/nfs_fs.h"
#include "backends/nfs/url.h"

namespace stripeback::nfs {

storage::Backend backend() {
  storage::Backend b;
  b.scheme = "nfs";
  b.example = "nfs://host/path";
  b.parse = parse_location;
  b.storage = [](const storage::Location&) -> Result<storage::Storage*> { return &nfs_storage(); };
  b.counted = &nfs_storage();
  return b;
}

}  // namespace stripeback::nfs
