// S3Client: the S3 operations a backup needs, as asynchronous requests over one HTTP session
// (http.h), signed (sigv4.h), retried when S3 or the network says another attempt may work,
// and answered as plain data.
//
// An operation is an S3Op; start() queues it and poll() returns S3Results as operations
// finish, each carrying the caller's tag. Retries happen inside: a failed attempt that may
// be retried waits a backoff (exponential, full jitter: S3Config::backoff_first doubling up
// to backoff_cap) and is sent again, signed anew, with its own deadline
// (S3Config::attempt_timeout), up to S3Config::attempts attempts. poll() never sleeps past
// the time a retry is due. Retried: transport failures (refused, reset, truncated, timed
// out), HTTP 429, 500, 502, 503 and 504, and the S3 codes SlowDown, RequestTimeout,
// InternalError and ServiceUnavailable, whatever the status (a 200 answer to
// CompleteMultipartUpload may carry one). Never retried: any other 4xx.
//
// Buffers: an op's `body` and `into` belong to the caller, who keeps them alive and does not
// touch them until the op's result came back from poll() (or run()); every attempt sends
// the same body and writes `into` from its start, so after a failed attempt `into` may hold
// part of an answer until a later attempt succeeds.
//
// Integrity: data bodies (PutObject, UploadPart) are sent as UNSIGNED-PAYLOAD unless small,
// with Content-MD5 or x-amz-checksum-crc32c as S3Config::checksum says; Content-MD5 always
// when object-lock headers are sent. XML bodies carry their SHA-256 and Content-MD5.
//
// Errors: an S3Result's outcome names the operation, the bucket and key, the HTTP status and
// S3 code (or the transport's cause) and the attempts made; never a credential. Its Errc
// comes from to_error() (messages.h): not_found, busy, timed_out, invalid_argument (refused
// credentials, a request S3 will never take), io, corrupt (an answer that makes no sense).
//
// Threads: a client belongs to the thread that made it; only wakeup() may be called from
// another thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/s3/config.h"
#include "backends/s3/messages.h"
#include "backends/s3/sigv4.h"
#include "stripeback/result.h"

namespace stripeback::s3 {

using Clock = std::chrono::steady_clock;

enum class S3OpKind {
  put_object,
  create_multipart_upload,
  upload_part,
  complete_multipart_upload,
  abort_multipart_upload,
  get_object,
  head_object,
  delete_object,
  delete_objects,
  list_objects_v2,
  list_multipart_uploads,
  get_object_lock_configuration,
  put_object_retention,
  head_bucket,
};
// "PutObject", "UploadPart", ... as S3's reference names them.
const char* op_name(S3OpKind kind);

struct ObjectLock {
  RetentionMode mode = RetentionMode::governance;
  TimePoint retain_until;
};

struct S3Op {
  S3OpKind kind = S3OpKind::head_bucket;
  std::string bucket;
  std::string key;           // the object's key, unencoded (every kind but the bucket ones)
  std::string upload_id;     // UploadPart, CompleteMultipartUpload, AbortMultipartUpload
  uint32_t part_number = 0;  // UploadPart: 1..10000
  // PutObject, UploadPart: the bytes sent (see "Buffers" above).
  std::span<const std::byte> body;
  // GetObject: where the object's bytes go; `length` of them from `offset`, or, with
  // length 0, everything from `offset` (which must fit).
  std::span<std::byte> into;
  uint64_t offset = 0;
  uint64_t length = 0;
  // PutObject, CreateMultipartUpload: sent besides those the config adds (storage class,
  // server-side encryption). Signed; names in any case.
  Headers headers;
  // PutObject, CreateMultipartUpload: the object's retention; PutObjectRetention: the new one.
  std::optional<ObjectLock> lock;
  // ListObjectsV2 and ListMultipartUploads. The caller pages: a truncated listing's
  // next_continuation_token (or next key and upload id markers) goes into the next op.
  std::string prefix, delimiter;
  std::string continuation_token;            // ListObjectsV2
  std::string key_marker, upload_id_marker;  // ListMultipartUploads
  uint32_t max_keys = 0;                     // 0: S3's default (1000)
  // CompleteMultipartUpload: the parts, and the object's size when known. With the size, a
  // retried completion that S3 answers NoSuchUpload (an earlier attempt did complete it,
  // its answer was lost) is checked with a HEAD and succeeds if the object has that size.
  std::vector<CompletedPart> parts;
  std::optional<uint64_t> expected_size;
  std::vector<std::string> keys;  // DeleteObjects: 1 to 1000
  uint64_t tag = 0;               // the caller's, returned in the result
};

struct S3Result {
  uint64_t tag = 0;
  S3OpKind kind = S3OpKind::head_bucket;
  Result<void> outcome;
  long http_status = 0;   // of the last attempt's answer; 0 when none came
  std::string s3_code;    // S3's error code when the answer was an error document
  uint32_t attempts = 0;  // requests sent for this op (a HEAD that confirmed a completion too)
  std::string etag;       // PutObject, UploadPart, HeadObject, GetObject; quotes kept
  // PutObject, UploadPart with S3Config::checksum crc32c: the part's checksum, for
  // CompletedPart::checksum_crc32c.
  std::string checksum_crc32c;
  // HeadObject: the object's size; GetObject: the bytes written into `into`; PutObject and
  // UploadPart: the body's size; CompleteMultipartUpload confirmed by HEAD: the object's.
  uint64_t size = 0;
  std::optional<TimePoint> last_modified;  // HeadObject, GetObject
  std::string upload_id;                   // CreateMultipartUpload
  // CompleteMultipartUpload: whether success was read from a HEAD after NoSuchUpload.
  bool confirmed_by_head = false;
  ObjectListing listing;         // ListObjectsV2
  UploadListing uploads;         // ListMultipartUploads
  DeleteOutcome deleted;         // DeleteObjects: keys S3 refused fail the outcome, listed here
  ObjectLockConfig lock_config;  // GetObjectLockConfiguration
};

struct S3Stats {
  uint64_t operations = 0;  // results returned
  uint64_t failed = 0;      // of which failed (a HeadObject finding no object is not counted)
  uint64_t requests = 0;    // HTTP requests finished (attempts, HEAD checks)
  uint64_t retries = 0;     // attempts after a first
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t connections = 0;  // opened
};

// Where a request goes: the Host header and the encoded path it is signed with, and the
// whole URL (query included).
struct RequestTarget {
  std::string host;
  std::string path;
  std::string url;
};
// The target of `key` (empty: the bucket itself) in `bucket` with `query`, under the
// config's endpoint and addressing. Keys are encoded once, '/' kept (encode_path).
RequestTarget target_of(const S3Config& config, std::string_view bucket, std::string_view key,
                        const QueryParams& query);

class S3Client {
 public:
  // Fails (io) only when the HTTP session cannot be set up.
  static Result<S3Client> open(S3Config config);
  S3Client(S3Client&&) noexcept;
  S3Client& operator=(S3Client&&) noexcept;
  // Abandons the operations in flight (their buffers are no longer used afterwards).
  ~S3Client();

  // Queues the op; no network I/O happens here. An op that cannot be made (a missing bucket
  // or key, a range larger than its buffer, too many keys) comes back failed
  // (invalid_argument) from the next poll().
  void start(S3Op op);
  // Runs requests and retries and returns the finished ops. Waits until at least one
  // finished, `until` passed, `wake_fd` (when >= 0) polls readable or wakeup() was called;
  // returns at once when nothing is in flight.
  std::vector<S3Result> poll(Clock::time_point until, int wake_fd = -1);
  // Ops started and not yet returned.
  size_t in_flight() const;
  // Makes a poll() in progress (or the next one) return early. Any thread.
  void wakeup();
  // Starts `op` and waits for it (retries included): for metadata calls. Results of other
  // ops that finish meanwhile are kept for the next poll().
  S3Result run(S3Op op);

  S3Stats stats() const;
  const S3Config& config() const;

 private:
  struct Impl;
  explicit S3Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace stripeback::s3
