// The S3 backend's entry in the registry: its scheme, its location grammar
// (s3://BUCKET[/PREFIX], url.h) and its storage.
#pragma once

#include "storage/registry.h"

namespace stripeback::s3 {

storage::Backend backend();

}  // namespace stripeback::s3
