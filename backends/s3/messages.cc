#include "backends/s3/messages.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "backends/s3/xml.h"
#include "util/escape.h"

namespace stripeback::s3 {
namespace {

// One response body being read: every error names the message it came from.
class Body {
 public:
  explicit Body(std::string_view what) : what_(what) {}

  Error bad(const std::string& why) const {
    return Error{Errc::corrupt, 0, "S3 " + what_ + " response: " + why};
  }

  // The root element, which must be `root`; an <Error> document becomes S3's error.
  Result<XmlElement> open(std::string_view body, std::string_view root) const {
    auto doc = parse_xml(body);
    if (!doc) return bad(doc.error().what);
    if (doc->name == "Error" && root != "Error") {
      SB_ASSIGN(S3Error e, parse_error(body));
      return to_error(e, 200, "S3 " + what_);
    }
    if (doc->name != root)
      return bad("the root element is <" + util::escape_text(doc->name) + ">, not <" +
                 std::string(root) + ">");
    return doc;
  }

  Result<std::string> required(const XmlElement& parent, std::string_view name) const {
    const XmlElement* e = parent.child(name);
    if (e == nullptr) return bad("<" + parent.name + "> has no <" + std::string(name) + ">");
    return e->text;
  }

  static std::string optional(const XmlElement& parent, std::string_view name) {
    const XmlElement* e = parent.child(name);
    return e ? e->text : std::string();
  }

  Result<bool> boolean(const XmlElement& parent, std::string_view name) const {
    SB_ASSIGN(std::string text, required(parent, name));
    if (text == "true") return true;
    if (text == "false") return false;
    return bad("<" + std::string(name) + "> is '" + util::escape_text(text.substr(0, 32)) +
               "', not true or false");
  }

  Result<uint64_t> number(const XmlElement& parent, std::string_view name, uint64_t max) const {
    SB_ASSIGN(std::string text, required(parent, name));
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v > max)
      return bad("<" + std::string(name) + "> is '" + util::escape_text(text.substr(0, 32)) +
                 "', not a whole number up to " + std::to_string(max));
    return v;
  }

  Result<TimePoint> time(const XmlElement& parent, std::string_view name) const {
    SB_ASSIGN(std::string text, required(parent, name));
    auto t = parse_iso8601(text);
    if (!t) return bad("<" + std::string(name) + ">: " + t.error().what);
    return *t;
  }

  Result<RetentionMode> mode(const XmlElement& parent) const {
    SB_ASSIGN(std::string text, required(parent, "Mode"));
    if (text == "GOVERNANCE") return RetentionMode::governance;
    if (text == "COMPLIANCE") return RetentionMode::compliance;
    return bad("<Mode> is '" + util::escape_text(text.substr(0, 32)) +
               "', not GOVERNANCE or COMPLIANCE");
  }

  // A key or prefix: as sent, or decoded when the listing says EncodingType url.
  Result<std::string> name_text(const XmlElement& parent, std::string_view name,
                                bool url_encoded) const {
    SB_ASSIGN(std::string text, required(parent, name));
    if (!url_encoded) return text;
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '+') {
        out.push_back(' ');
      } else if (text[i] != '%') {
        out.push_back(text[i]);
      } else {
        unsigned v = 0;
        auto [end, ec] =
            std::from_chars(text.data() + i + 1, text.data() + std::min(i + 3, text.size()), v, 16);
        if (ec != std::errc() || end != text.data() + i + 3)
          return bad("<" + std::string(name) + "> is not URL-encoded as EncodingType says");
        out.push_back(static_cast<char>(v));
        i += 2;
      }
    }
    // Any character may come back this way (that is what the encoding is for), but keys are
    // UTF-8.
    if (first_non_utf8(out) != std::string::npos)
      return bad("<" + std::string(name) + "> decodes to bytes that are not UTF-8");
    return out;
  }

 private:
  std::string what_;
};

void append_element(std::string& out, std::string_view name, std::string_view escaped) {
  out += '<';
  out += name;
  out += '>';
  out += escaped;
  out += "</";
  out += name;
  out += '>';
}

std::string open_body(std::string_view root) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<" + std::string(root) + " xmlns=\"" +
         std::string(kS3XmlNamespace) + "\">";
}

Result<std::vector<std::string>> common_prefixes(const Body& b, const XmlElement& root,
                                                 bool url_encoded) {
  std::vector<std::string> out;
  for (const XmlElement& c : root.children) {
    if (c.name != "CommonPrefixes") continue;
    SB_ASSIGN(std::string prefix, b.name_text(c, "Prefix", url_encoded));
    out.push_back(std::move(prefix));
  }
  return out;
}

Result<bool> url_encoded(const Body& b, const XmlElement& root) {
  std::string type = Body::optional(root, "EncodingType");
  if (type.empty()) return false;
  if (type == "url") return true;
  return b.bad("unknown <EncodingType> '" + util::escape_text(type.substr(0, 32)) + "'");
}

struct ErrcOfCode {
  std::string_view code;
  Errc errc;
};
// What a caller can do about each error S3 (or a gateway) commonly gives.
constexpr ErrcOfCode kErrcOfCode[] = {
    {"NoSuchKey", Errc::not_found},
    {"NoSuchBucket", Errc::not_found},
    {"NoSuchUpload", Errc::not_found},
    {"NoSuchVersion", Errc::not_found},
    {"ObjectLockConfigurationNotFoundError", Errc::not_found},
    {"NoSuchObjectLockConfiguration", Errc::not_found},
    {"SlowDown", Errc::busy},
    {"ServiceUnavailable", Errc::busy},
    {"InternalError", Errc::busy},
    {"OperationAborted", Errc::busy},
    {"RequestTimeout", Errc::timed_out},
    {"BucketAlreadyExists", Errc::exists},
    {"BucketAlreadyOwnedByYou", Errc::exists},
    {"AccessDenied", Errc::invalid_argument},
    {"InvalidAccessKeyId", Errc::invalid_argument},
    {"SignatureDoesNotMatch", Errc::invalid_argument},
    {"ExpiredToken", Errc::invalid_argument},
    {"RequestTimeTooSkewed", Errc::invalid_argument},
    {"BadDigest", Errc::io},
    {"XAmzContentSHA256Mismatch", Errc::io},
    {"IncompleteBody", Errc::io},
    {"NotImplemented", Errc::unsupported},
    {"XMinioStorageFull", Errc::no_space},
};

}  // namespace

Result<S3Error> parse_error(std::string_view body) {
  Body b("error");
  SB_ASSIGN(XmlElement root, b.open(body, "Error"));
  S3Error e;
  SB_ASSIGN(e.code, b.required(root, "Code"));
  if (e.code.empty()) return b.bad("<Code> is empty");
  e.message = Body::optional(root, "Message");
  e.resource = Body::optional(root, "Resource");
  e.request_id = Body::optional(root, "RequestId");
  return e;
}

Error to_error(const S3Error& e, int http_status, std::string_view operation) {
  Errc code = Errc::io;
  bool known = false;
  for (const auto& [name, errc] : kErrcOfCode) {
    if (e.code == name) {
      code = errc;
      known = true;
    }
  }
  if (!known) {
    if (http_status == 404)
      code = Errc::not_found;
    else if (http_status == 503)
      code = Errc::busy;
    else if (http_status >= 500)
      code = Errc::io;
    else if (http_status >= 400)
      code = Errc::invalid_argument;
  }
  std::string what = std::string(operation) + ": " + util::escape_text(e.code) + " (HTTP " +
                     std::to_string(http_status) + ")";
  if (!e.message.empty()) what += ": " + util::escape_text(e.message);
  if (!e.resource.empty()) what += " [resource " + util::escape_text(e.resource) + "]";
  if (!e.request_id.empty()) what += " [request id " + util::escape_text(e.request_id) + "]";
  return Error{code, 0, std::move(what)};
}

Result<std::string> parse_initiate_multipart(std::string_view body) {
  Body b("InitiateMultipartUpload");
  SB_ASSIGN(XmlElement root, b.open(body, "InitiateMultipartUploadResult"));
  SB_ASSIGN(std::string id, b.required(root, "UploadId"));
  if (id.empty()) return b.bad("<UploadId> is empty");
  return id;
}

Result<std::string> complete_multipart_body(std::span<const CompletedPart> parts) {
  auto bad = [](const std::string& why) {
    return Error{Errc::invalid_argument, 0, "CompleteMultipartUpload body: " + why};
  };
  if (parts.empty()) return bad("no parts");
  if (parts.size() > kMaxPartNumber)
    return bad(std::to_string(parts.size()) + " parts, more than S3's " +
               std::to_string(kMaxPartNumber));
  std::string out = open_body("CompleteMultipartUpload");
  uint32_t previous = 0;
  for (const CompletedPart& p : parts) {
    const std::string part = "part " + std::to_string(p.number);
    if (p.number == 0 || p.number > kMaxPartNumber)
      return bad(part + " is outside 1.." + std::to_string(kMaxPartNumber));
    if (p.number <= previous)
      return bad(part + " follows part " + std::to_string(previous) +
                 " (parts go in increasing order)");
    previous = p.number;
    if (p.etag.empty()) return bad(part + " has no ETag");
    auto etag = xml_escape(p.etag);
    if (!etag) return bad(part + "'s ETag: " + etag.error().what);
    out += "<Part>";
    append_element(out, "PartNumber", std::to_string(p.number));
    append_element(out, "ETag", *etag);
    if (!p.checksum_crc32c.empty()) {
      auto sum = xml_escape(p.checksum_crc32c);
      if (!sum) return bad(part + "'s checksum: " + sum.error().what);
      append_element(out, "ChecksumCRC32C", *sum);
    }
    out += "</Part>";
  }
  return out + "</CompleteMultipartUpload>";
}

Result<CompletedUpload> parse_complete_multipart(std::string_view body) {
  Body b("CompleteMultipartUpload");
  SB_ASSIGN(XmlElement root, b.open(body, "CompleteMultipartUploadResult"));
  CompletedUpload out;
  out.location = Body::optional(root, "Location");
  out.bucket = Body::optional(root, "Bucket");
  SB_ASSIGN(out.key, b.required(root, "Key"));
  out.etag = Body::optional(root, "ETag");
  return out;
}

Result<ObjectListing> parse_list_objects_v2(std::string_view body) {
  Body b("ListObjectsV2");
  SB_ASSIGN(XmlElement root, b.open(body, "ListBucketResult"));
  SB_ASSIGN(bool encoded, url_encoded(b, root));
  ObjectListing out;
  SB_ASSIGN(out.truncated, b.boolean(root, "IsTruncated"));
  out.next_continuation_token = Body::optional(root, "NextContinuationToken");
  if (out.truncated && out.next_continuation_token.empty())
    return b.bad("a truncated listing without <NextContinuationToken>");
  for (const XmlElement& c : root.children) {
    if (c.name != "Contents") continue;
    ObjectEntry e;
    SB_ASSIGN(e.key, b.name_text(c, "Key", encoded));
    if (e.key.empty()) return b.bad("<Contents> with an empty <Key>");
    SB_ASSIGN(e.size, b.number(c, "Size", UINT64_MAX));
    e.etag = Body::optional(c, "ETag");
    SB_ASSIGN(e.last_modified, b.time(c, "LastModified"));
    out.objects.push_back(std::move(e));
  }
  SB_ASSIGN(out.common_prefixes, common_prefixes(b, root, encoded));
  return out;
}

Result<UploadListing> parse_list_multipart_uploads(std::string_view body) {
  Body b("ListMultipartUploads");
  SB_ASSIGN(XmlElement root, b.open(body, "ListMultipartUploadsResult"));
  SB_ASSIGN(bool encoded, url_encoded(b, root));
  UploadListing out;
  SB_ASSIGN(out.truncated, b.boolean(root, "IsTruncated"));
  if (root.child("NextKeyMarker") != nullptr) {
    SB_ASSIGN(out.next_key_marker, b.name_text(root, "NextKeyMarker", encoded));
  }
  out.next_upload_id_marker = Body::optional(root, "NextUploadIdMarker");
  if (out.truncated && out.next_key_marker.empty())
    return b.bad("a truncated listing without <NextKeyMarker>");
  for (const XmlElement& c : root.children) {
    if (c.name != "Upload") continue;
    UploadEntry e;
    SB_ASSIGN(e.key, b.name_text(c, "Key", encoded));
    SB_ASSIGN(e.upload_id, b.required(c, "UploadId"));
    if (e.upload_id.empty()) return b.bad("<Upload> with an empty <UploadId>");
    SB_ASSIGN(e.initiated, b.time(c, "Initiated"));
    out.uploads.push_back(std::move(e));
  }
  SB_ASSIGN(out.common_prefixes, common_prefixes(b, root, encoded));
  return out;
}

Result<std::string> delete_objects_body(std::span<const std::string> keys) {
  auto bad = [](const std::string& why) {
    return Error{Errc::invalid_argument, 0, "DeleteObjects body: " + why};
  };
  if (keys.empty()) return bad("no keys");
  if (keys.size() > kMaxDeleteKeys)
    return bad(std::to_string(keys.size()) + " keys, more than S3's " +
               std::to_string(kMaxDeleteKeys) + " a request");
  std::string out = open_body("Delete");
  out += "<Quiet>true</Quiet>";
  for (const std::string& key : keys) {
    if (key.empty() || key.size() > kMaxKeyBytes)
      return bad("key '" + util::escape_text(key.substr(0, 64)) + "' is not 1 to " +
                 std::to_string(kMaxKeyBytes) + " bytes long");
    auto escaped = xml_escape(key);
    if (!escaped) return bad("key '" + util::escape_text(key) + "': " + escaped.error().what);
    out += "<Object>";
    append_element(out, "Key", *escaped);
    out += "</Object>";
  }
  return out + "</Delete>";
}

Result<DeleteOutcome> parse_delete_result(std::string_view body) {
  Body b("DeleteObjects");
  SB_ASSIGN(XmlElement root, b.open(body, "DeleteResult"));
  DeleteOutcome out;
  for (const XmlElement& c : root.children) {
    if (c.name == "Deleted") {
      SB_ASSIGN(std::string key, b.required(c, "Key"));
      out.deleted.push_back(std::move(key));
    } else if (c.name == "Error") {
      DeleteFailure f;
      SB_ASSIGN(f.key, b.required(c, "Key"));
      SB_ASSIGN(f.code, b.required(c, "Code"));
      f.message = Body::optional(c, "Message");
      out.failed.push_back(std::move(f));
    }
  }
  return out;
}

const char* retention_mode_name(RetentionMode mode) {
  return mode == RetentionMode::compliance ? "COMPLIANCE" : "GOVERNANCE";
}

std::string retention_body(RetentionMode mode, TimePoint retain_until) {
  std::string out = open_body("Retention");
  append_element(out, "Mode", retention_mode_name(mode));
  append_element(out, "RetainUntilDate", iso8601(retain_until));
  return out + "</Retention>";
}

Result<Retention> parse_retention(std::string_view body) {
  Body b("GetObjectRetention");
  SB_ASSIGN(XmlElement root, b.open(body, "Retention"));
  Retention out;
  SB_ASSIGN(out.mode, b.mode(root));
  SB_ASSIGN(out.retain_until, b.time(root, "RetainUntilDate"));
  return out;
}

Result<ObjectLockConfig> parse_object_lock_configuration(std::string_view body) {
  Body b("GetObjectLockConfiguration");
  SB_ASSIGN(XmlElement root, b.open(body, "ObjectLockConfiguration"));
  ObjectLockConfig out;
  if (const XmlElement* enabled = root.child("ObjectLockEnabled")) {
    if (enabled->text != "Enabled")
      return b.bad("<ObjectLockEnabled> is '" + util::escape_text(enabled->text.substr(0, 32)) +
                   "', not Enabled");
    out.enabled = true;
  }
  const XmlElement* rule = root.child("Rule");
  const XmlElement* retention = rule ? rule->child("DefaultRetention") : nullptr;
  if (retention == nullptr) return out;
  DefaultRetention d;
  SB_ASSIGN(d.mode, b.mode(*retention));
  const bool has_days = retention->child("Days") != nullptr;
  if (has_days == (retention->child("Years") != nullptr))
    return b.bad("<DefaultRetention> needs exactly one of <Days> and <Years>");
  SB_ASSIGN(uint64_t period, b.number(*retention, has_days ? "Days" : "Years", UINT32_MAX));
  if (period == 0) return b.bad("<DefaultRetention> of zero length");
  (has_days ? d.days : d.years) = static_cast<uint32_t>(period);
  out.default_retention = d;
  return out;
}

}  // namespace stripeback::s3
