// LocalStorage: files on this machine's file systems, through the kernel. Asynchronous
// requests go to the calling thread's io_uring ring (or the pread/pwrite fallback, see
// io_engine.h), batched: every request queued between two reaps goes out in one submit.
// Files are opened O_DIRECT where the file system allows it; directories are walked by
// descriptor (openat, O_NOFOLLOW), so a Directory never leaves the tree it was opened on.
#pragma once

#include <memory>

#include "storage/registry.h"
#include "storage/storage.h"

namespace stripeback::io {

// The process's local storage (stateless; shared by every thread).
storage::Storage& local_storage();

// Its entry in the registry: local paths (no scheme).
storage::Backend local_backend();

}  // namespace stripeback::io
