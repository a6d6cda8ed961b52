// The S3 protocol's messages: the XML bodies the client sends (CompleteMultipartUpload,
// DeleteObjects, Retention) and the ones it reads back, each parsed into plain data.
//
// Parsers take a whole response body and read it with parse_xml (xml.h). They fail with
//  - corrupt, naming the message and the cause, when the body is malformed XML, has another
//    root element, or lacks or misspells a field the client relies on (a truncated listing
//    without its continuation marker would otherwise end a listing early, silently);
//  - the error S3 reports when the body is an <Error> document: S3 can answer
//    CompleteMultipartUpload with 200 OK and an error body, so every parser checks.
// Unknown elements are ignored, so newer S3 fields do not break older clients. Text is kept
// as sent: keys are not trimmed, ETags keep their quotes. Builders fail with
// invalid_argument, naming the part, on input S3 would refuse or XML 1.0 cannot carry.
// Pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/s3/iso_time.h"
#include "stripeback/result.h"

namespace stripeback::s3 {

inline constexpr std::string_view kS3XmlNamespace = "http://s3.amazonaws.com/doc/2006-03-01/";

// Errors.
struct S3Error {
  std::string code;  // NoSuchKey, SlowDown, ...
  std::string message;
  std::string resource;  // often absent
  std::string request_id;
};
Result<S3Error> parse_error(std::string_view body);
// The Error for a failed request; `operation` names it ("PUT 'bucket/key'"). The code decides
// the Errc: missing things are not_found, throttling and server trouble busy (retry later),
// RequestTimeout timed_out, refused credentials invalid_argument; an unknown code goes by the
// HTTP status (404 not_found, 503 busy, other 5xx io, other 4xx invalid_argument).
Error to_error(const S3Error& e, int http_status, std::string_view operation);

// Multipart uploads.
inline constexpr uint32_t kMaxPartNumber = 10000;

// InitiateMultipartUploadResult: the upload id.
Result<std::string> parse_initiate_multipart(std::string_view body);

struct CompletedPart {
  uint32_t number = 0;          // 1..10000
  std::string etag;             // as UploadPart returned it, quotes included
  std::string checksum_crc32c;  // x-amz-checksum-crc32c of the part, or empty
};
// Parts in increasing number order (S3 refuses another order), 1 to 10000 of them, each with
// an ETag.
Result<std::string> complete_multipart_body(std::span<const CompletedPart> parts);

struct CompletedUpload {
  std::string location, bucket, key;
  std::string etag;  // may be empty: some gateways send <ETag></ETag> or none
};
Result<CompletedUpload> parse_complete_multipart(std::string_view body);

// Listings.
// With <EncodingType>url</EncodingType> (the request asked for encoding-type=url, needed for
// keys holding characters XML 1.0 cannot carry) keys and prefixes are decoded: %XX and '+'
// for a space, as S3 encodes them.
struct ObjectEntry {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // quotes included; may be empty
  TimePoint last_modified;
};
struct ObjectListing {  // ListBucketResult of ListObjectsV2
  std::vector<ObjectEntry> objects;
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_continuation_token;  // set when truncated
};
Result<ObjectListing> parse_list_objects_v2(std::string_view body);

struct UploadEntry {
  std::string key;
  std::string upload_id;
  TimePoint initiated;
};
struct UploadListing {  // ListMultipartUploadsResult
  std::vector<UploadEntry> uploads;
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_key_marker;        // set when truncated
  std::string next_upload_id_marker;  // may be empty
};
Result<UploadListing> parse_list_multipart_uploads(std::string_view body);

// Multi-object delete.
inline constexpr size_t kMaxDeleteKeys = 1000;
inline constexpr size_t kMaxKeyBytes = 1024;

// A quiet DeleteObjects body (only failures come back): 1 to 1000 keys of 1 to 1024 bytes.
// S3 requires Content-MD5 or a checksum header on it (hashes.h).
Result<std::string> delete_objects_body(std::span<const std::string> keys);

struct DeleteFailure {
  std::string key, code, message;
};
struct DeleteOutcome {               // DeleteResult
  std::vector<std::string> deleted;  // empty in quiet mode
  std::vector<DeleteFailure> failed;
};
Result<DeleteOutcome> parse_delete_result(std::string_view body);

// Object Lock.
enum class RetentionMode { governance, compliance };
const char* retention_mode_name(RetentionMode mode);  // GOVERNANCE, COMPLIANCE

// The body of PutObjectRetention (Content-MD5 required there too).
std::string retention_body(RetentionMode mode, TimePoint retain_until);

struct Retention {  // GetObjectRetention
  RetentionMode mode = RetentionMode::governance;
  TimePoint retain_until;
};
Result<Retention> parse_retention(std::string_view body);

struct DefaultRetention {
  RetentionMode mode = RetentionMode::governance;
  uint32_t days = 0;  // exactly one of days and years is set
  uint32_t years = 0;
};
struct ObjectLockConfig {  // GetObjectLockConfiguration
  bool enabled = false;    // <ObjectLockEnabled>Enabled</ObjectLockEnabled>
  std::optional<DefaultRetention> default_retention;
};
// A bucket without Object Lock answers 404 ObjectLockConfigurationNotFoundError instead
// (to_error gives not_found).
Result<ObjectLockConfig> parse_object_lock_configuration(std::string_view body);

}  // namespace stripeback::s3
