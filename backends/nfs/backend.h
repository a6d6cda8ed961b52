// The NFS backend's entry in the registry: its scheme, its location grammar
// (nfs://host[,host2...]/export/dir[?option=value&...]) and its storage.
#pragma once

#include "storage/registry.h"

namespace stripeback::nfs {

storage::Backend backend();

}  // namespace stripeback::nfs
