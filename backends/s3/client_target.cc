// What each S3 operation is called in messages, and where its request goes (client.h).
#include <string>

#include "backends/s3/client.h"
#include "backends/s3/sigv4.h"

namespace stripeback::s3 {

const char* op_name(S3OpKind kind) {
  switch (kind) {
    case S3OpKind::put_object:
      return "PutObject";
    case S3OpKind::create_multipart_upload:
      return "CreateMultipartUpload";
    case S3OpKind::upload_part:
      return "UploadPart";
    case S3OpKind::complete_multipart_upload:
      return "CompleteMultipartUpload";
    case S3OpKind::abort_multipart_upload:
      return "AbortMultipartUpload";
    case S3OpKind::get_object:
      return "GetObject";
    case S3OpKind::head_object:
      return "HeadObject";
    case S3OpKind::delete_object:
      return "DeleteObject";
    case S3OpKind::delete_objects:
      return "DeleteObjects";
    case S3OpKind::list_objects_v2:
      return "ListObjectsV2";
    case S3OpKind::list_multipart_uploads:
      return "ListMultipartUploads";
    case S3OpKind::get_object_lock_configuration:
      return "GetObjectLockConfiguration";
    case S3OpKind::put_object_retention:
      return "PutObjectRetention";
    case S3OpKind::head_bucket:
      return "HeadBucket";
  }
  return "S3 operation";
}

RequestTarget target_of(const S3Config& config, std::string_view bucket, std::string_view key,
                        const QueryParams& query) {
  RequestTarget t;
  std::string unencoded;
  if (config.addressing == Addressing::host) {
    t.host = std::string(bucket) + "." + config.endpoint.authority();
    unencoded = "/" + std::string(key);
  } else {
    t.host = config.endpoint.authority();
    unencoded = "/" + std::string(bucket) + (key.empty() ? "" : "/" + std::string(key));
  }
  t.path = encode_path(unencoded);
  t.url = config.endpoint.scheme + "://" + t.host + t.path;
  if (!query.empty()) t.url += "?" + canonical_query(query);
  return t;
}

}  // namespace stripeback::s3
