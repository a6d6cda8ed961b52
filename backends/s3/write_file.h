// S3WriteFile: a new object written as a byte stream. Writes arrive at any offset and are
// put in order (storage::OrderedWrites); the stream fills part buffers of the configured
// part size. While the object fits one part nothing is sent; once more bytes come, the
// multipart upload is created and each full part goes out with UploadPart, at most
// S3Config::parts_in_flight at once (the writer waits, driving the thread's session, when
// that many are out). Memory per open object: part size x (parts in flight + 1).
//
// commit(): an object of one part is sent with one PutObject; otherwise the last part goes,
// then CompleteMultipartUpload with the object's size, then a HeadObject checks that the
// object has that size. The object exists only once commit() returned. abandon() (and
// destruction without commit) aborts the multipart upload, best effort.
//
// Threads: used on the thread that created it (its session's).
#pragma once

#include <memory>
#include <string>

#include "backends/s3/session.h"
#include "storage/storage.h"

namespace stripeback::s3 {

// `key` is the write queue's key on IoLoops (one per storage). With `lock`, the object is
// created locked until that date (it goes with PutObject or CreateMultipartUpload).
std::unique_ptr<storage::WriteFile> make_write_file(std::shared_ptr<Session> session,
                                                    const storage::Location& at,
                                                    const void* key,
                                                    std::optional<ObjectLock> lock);

}  // namespace stripeback::s3
