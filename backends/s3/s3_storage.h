// The S3 storage: objects of s3://BUCKET/PREFIX locations (url.h), served through one
// S3Client per thread (session.h) with the process's configuration (configure()).
//
// Objects are written as streams (write_file.h: ordered writes, parts, completion checked
// by size) and read at any offset (ranged GetObject, blocking or through the thread's IoLoop
// queue "s3"). Directories are emulated: a key that others continue with '/' is a
// directory, as is the bucket itself; nothing is made for them (make_dirs checks only that
// the bucket exists). No rename, no append, no in-place writes.
//
// Errors name the s3:// location and the cause (the operation, S3's code or the transport's
// failure, as the client reports it).
#pragma once

#include "backends/s3/config.h"
#include "storage/storage.h"

namespace stripeback::s3 {

// The process's S3 storage.
storage::Storage& s3_storage();

}  // namespace stripeback::s3
