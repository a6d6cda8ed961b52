#include "backends/s3/backend.h"

#include "backends/s3/s3_storage.h"
#include "backends/s3/url.h"

namespace stripeback::s3 {

storage::Backend backend() {
  storage::Backend b;
  b.scheme = "s3";
  b.example = "s3://bucket/prefix";
  b.parse = parse_location;
  b.storage = [](const storage::Location&) -> Result<storage::Storage*> { return &s3_storage(); };
  b.counted = &s3_storage();
  return b;
}

}  // namespace stripeback::s3
