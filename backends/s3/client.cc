#include "backends/s3/client.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <map>
#include <random>

#include "backends/s3/hashes.h"
#include "backends/s3/http.h"
#include "util/escape.h"

namespace stripeback::s3 {
namespace {

using std::chrono::milliseconds;

// Data bodies up to this size are signed with their SHA-256; larger ones go as
// UNSIGNED-PAYLOAD (hashing a 16 MiB part twice costs more than its checksum header buys).
constexpr size_t kHashedBodyMax = 64 << 10;

constexpr std::array<std::string_view, 4> kRetryableCodes = {"SlowDown", "RequestTimeout",
                                                             "InternalError", "ServiceUnavailable"};

bool retryable_status(long status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

bool retryable_code(std::string_view code) {
  return std::find(kRetryableCodes.begin(), kRetryableCodes.end(), code) != kRetryableCodes.end();
}

bool is_bucket_op(S3OpKind k) {
  return k == S3OpKind::delete_objects || k == S3OpKind::list_objects_v2 ||
         k == S3OpKind::list_multipart_uploads || k == S3OpKind::get_object_lock_configuration ||
         k == S3OpKind::head_bucket;
}

std::string lowered(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return o;
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

// "Wed, 21 Oct 2015 07:28:00 GMT" (RFC 7231's IMF-fixdate, what S3 sends in Last-Modified).
std::optional<TimePoint> parse_http_date(std::string_view s) {
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const size_t comma = s.find(", ");
  if (comma == std::string_view::npos || s.size() < comma + 26) return std::nullopt;
  s = s.substr(comma + 2);  // "21 Oct 2015 07:28:00 GMT"
  auto num = [&](size_t at, size_t len, int& out) {
    auto [end, ec] = std::from_chars(s.data() + at, s.data() + at + len, out);
    return ec == std::errc() && end == s.data() + at + len;
  };
  int day = 0, year = 0, hh = 0, mm = 0, ss = 0;
  const auto month = std::find(kMonths.begin(), kMonths.end(), s.substr(3, 3));
  if (!num(0, 2, day) || month == kMonths.end() || !num(7, 4, year) || !num(12, 2, hh) ||
      !num(15, 2, mm) || !num(18, 2, ss) || s.substr(20, 4) != " GMT")
    return std::nullopt;
  const std::chrono::year_month_day ymd{
      std::chrono::year(year),
      std::chrono::month(static_cast<unsigned>(month - kMonths.begin() + 1)),
      std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok() || hh > 23 || mm > 59 || ss > 60) return std::nullopt;
  return std::chrono::sys_days(ymd) + std::chrono::hours(hh) + std::chrono::minutes(mm) +
         std::chrono::seconds(ss);
}

std::optional<uint64_t> parse_u64(const std::string* text) {
  if (text == nullptr) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (text->empty() || ec != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return v;
}

// A key the URL would not carry as signed: libcurl resolves "." and ".." segments.
bool has_dot_segment(std::string_view key) {
  for (size_t at = 0; at <= key.size();) {
    const size_t slash = std::min(key.find('/', at), key.size());
    const std::string_view seg = key.substr(at, slash - at);
    if (seg == "." || seg == "..") return true;
    at = slash + 1;
  }
  return false;
}

Error status_error(long status, const std::string& what, const std::string& text) {
  S3Error none;
  Error e = to_error(none, static_cast<int>(status), what);
  e.what = what + ": HTTP " + std::to_string(status) +
           (text.empty() ? std::string(" without a body")
                         : " with a body that is not an S3 error document: '" +
                               util::escape_text(text.substr(0, 80)) + "'");
  return e;
}

}  // namespace

// Named outside the anonymous namespace: S3Client::Impl holds them, and GCC warns when a
// member's type has internal linkage in a file compiled as part of a unity source.
enum class OpPhase { request, confirm_by_head };

// One op from start() to its result.
struct PendingOp {
  S3Op op;
  std::string what;  // "PutObject 'bucket/key'", for messages
  OpPhase phase = OpPhase::request;
  std::string method;
  QueryParams query;
  Headers headers;  // all but the signature's, computed once: every attempt sends the same
  std::string xml;  // a body the client wrote (owned here)
  std::span<const std::byte> body;
  std::string payload_hash;
  std::string crc32c;                    // the x-amz-checksum-crc32c sent, if any
  uint32_t attempts = 0;                 // of the current phase
  uint32_t total_attempts = 0;           // of the op
  bool sent_earlier = false;             // whether an earlier attempt may have reached S3
  std::optional<Clock::time_point> due;  // waiting for a retry
  S3Result result;
};

struct S3Client::Impl {
  S3Config cfg;
  HttpSession http;
  std::map<uint64_t, PendingOp> pending;  // by the id given to the HTTP request
  std::vector<S3Result> ready;            // finished, not yet returned
  uint64_t next_id = 1;
  std::mt19937_64 rng{std::random_device{}()};
  int event_fd = -1;  // wakeup() writes it
  int epoll_fd = -1;  // event_fd and the caller's wake_fd: one descriptor to wait on
  S3Stats own;
  std::optional<uint64_t> run_id;      // the op run() waits for
  std::optional<S3Result> run_result;  // its result, kept out of `ready`

  Impl(S3Config c, HttpSession h) : cfg(std::move(c)), http(std::move(h)) {}
  ~Impl() {
    if (epoll_fd >= 0) ::close(epoll_fd);
    if (event_fd >= 0) ::close(event_fd);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  Result<void> prepare(PendingOp& p);
  Result<void> build(PendingOp& p);
  Result<void> add_object_headers(PendingOp& p);
  Result<void> add_data_body(PendingOp& p);
  Result<void> add_xml_body(PendingOp& p, Result<std::string> xml);
  void send(uint64_t id, PendingOp& p);
  void handle(HttpResponse r);
  void on_success(uint64_t id, PendingOp& p, HttpResponse& r);
  void retry_or_fail(uint64_t id, PendingOp& p, Error e, bool retryable);
  void finish(uint64_t id, Result<void> outcome);
  void launch_due(Clock::time_point now);
  std::optional<Clock::time_point> next_due() const;
  bool woken();
};

Result<void> S3Client::Impl::add_object_headers(PendingOp& p) {
  if (!cfg.storage_class.empty()) p.headers.push_back({"x-amz-storage-class", cfg.storage_class});
  if (cfg.sse == Sse::aes256) p.headers.push_back({"x-amz-server-side-encryption", "AES256"});
  if (cfg.sse == Sse::kms) {
    p.headers.push_back({"x-amz-server-side-encryption", "aws:kms"});
    if (!cfg.sse_kms_key_id.empty())
      p.headers.push_back({"x-amz-server-side-encryption-aws-kms-key-id", cfg.sse_kms_key_id});
  }
  if (p.op.lock) {
    p.headers.push_back({"x-amz-object-lock-mode", retention_mode_name(p.op.lock->mode)});
    p.headers.push_back({"x-amz-object-lock-retain-until-date", iso8601(p.op.lock->retain_until)});
  }
  if (p.op.kind == S3OpKind::create_multipart_upload && cfg.checksum == ChecksumKind::crc32c)
    p.headers.push_back({"x-amz-checksum-algorithm", "CRC32C"});
  for (const Header& h : p.op.headers) p.headers.push_back(h);
  return ok();
}

Result<void> S3Client::Impl::add_data_body(PendingOp& p) {
  p.body = p.op.body;
  if (cfg.checksum == ChecksumKind::md5) {
    SB_ASSIGN(std::string md5, md5_base64(p.body));
    p.headers.push_back({"Content-MD5", std::move(md5)});
  }
  if (cfg.checksum == ChecksumKind::crc32c) {
    p.crc32c = crc32c_base64(p.body);
    p.headers.push_back({"x-amz-checksum-crc32c", p.crc32c});
  }
  if (p.body.size() <= kHashedBodyMax) {
    SB_ASSIGN(p.payload_hash, sha256_hex(p.body));
  } else {
    p.payload_hash = std::string(kUnsignedPayload);
  }
  return ok();
}

Result<void> S3Client::Impl::add_xml_body(PendingOp& p, Result<std::string> xml) {
  if (!xml) return xml.error().wrap(p.what);
  p.xml = std::move(*xml);
  p.body = bytes_of(p.xml);
  SB_ASSIGN(std::string md5, md5_base64(std::string_view(p.xml)));
  p.headers.push_back({"Content-MD5", std::move(md5)});
  SB_ASSIGN(p.payload_hash, sha256_hex(std::string_view(p.xml)));
  return ok();
}

// S3 refuses object-lock headers without an integrity header; Content-MD5 is the one every
// gateway checks (some ignore x-amz-checksum-*).
Result<void> S3Client::Impl::prepare(PendingOp& p) {
  SB_TRY(build(p));
  auto named = [&](auto pred) {
    return std::any_of(p.headers.begin(), p.headers.end(),
                       [&](const Header& h) { return pred(lowered(h.name)); });
  };
  if (named([](const std::string& n) { return n.starts_with("x-amz-object-lock-"); }) &&
      !named([](const std::string& n) { return n == "content-md5"; })) {
    SB_ASSIGN(std::string md5, md5_base64(p.body));
    p.headers.push_back({"Content-MD5", std::move(md5)});
  }
  return ok();
}

Result<void> S3Client::Impl::build(PendingOp& p) {
  S3Op& op = p.op;
  auto bad = [&](const std::string& why) {
    return fail(Errc::invalid_argument, p.what + ": " + why);
  };
  if (op.bucket.empty()) return bad("no bucket given");
  if (!is_bucket_op(op.kind)) {
    if (op.key.empty()) return bad("no object key given");
    if (op.key.size() > kMaxKeyBytes) return bad("the key is longer than 1024 bytes");
    if (has_dot_segment(op.key)) return bad("the key has a '.' or '..' component");
  }
  p.payload_hash = std::string(kEmptyPayloadHash);
  auto need_upload_id = [&]() -> Result<void> {
    if (op.upload_id.empty()) return bad("no upload id given");
    p.query.emplace_back("uploadId", op.upload_id);
    return ok();
  };
  switch (op.kind) {
    case S3OpKind::put_object:
      p.method = "PUT";
      SB_TRY(add_object_headers(p));
      return add_data_body(p);
    case S3OpKind::create_multipart_upload:
      p.method = "POST";
      p.query.emplace_back("uploads", "");
      return add_object_headers(p);
    case S3OpKind::upload_part:
      p.method = "PUT";
      if (op.part_number < 1 || op.part_number > kMaxPartNumber)
        return bad("part number " + std::to_string(op.part_number) + " is not 1 to 10000");
      p.query.emplace_back("partNumber", std::to_string(op.part_number));
      SB_TRY(need_upload_id());
      return add_data_body(p);
    case S3OpKind::complete_multipart_upload:
      p.method = "POST";
      SB_TRY(need_upload_id());
      return add_xml_body(p, complete_multipart_body(op.parts));
    case S3OpKind::abort_multipart_upload:
      p.method = "DELETE";
      return need_upload_id();
    case S3OpKind::get_object: {
      p.method = "GET";
      if (op.into.empty()) return bad("no buffer given for the object's bytes");
      if (op.length > op.into.size())
        return bad("a range of " + std::to_string(op.length) + " bytes does not fit the " +
                   std::to_string(op.into.size()) + "-byte buffer");
      if (op.length > 0)
        p.headers.push_back({"Range", "bytes=" + std::to_string(op.offset) + "-" +
                                          std::to_string(op.offset + op.length - 1)});
      else if (op.offset > 0)
        p.headers.push_back({"Range", "bytes=" + std::to_string(op.offset) + "-"});
      return ok();
    }
    case S3OpKind::head_object:
    case S3OpKind::head_bucket:
      p.method = "HEAD";
      return ok();
    case S3OpKind::delete_object:
      p.method = "DELETE";
      return ok();
    case S3OpKind::delete_objects:
      p.method = "POST";
      p.query.emplace_back("delete", "");
      return add_xml_body(p, delete_objects_body(op.keys));
    case S3OpKind::list_objects_v2:
    case S3OpKind::list_multipart_uploads: {
      p.method = "GET";
      const bool objects = op.kind == S3OpKind::list_objects_v2;
      p.query.emplace_back(objects ? "list-type" : "uploads", objects ? "2" : "");
      p.query.emplace_back("encoding-type", "url");
      auto add = [&](const char* name, const std::string& v) {
        if (!v.empty()) p.query.emplace_back(name, v);
      };
      add("prefix", op.prefix);
      add("delimiter", op.delimiter);
      if (objects) {
        add("continuation-token", op.continuation_token);
        if (op.max_keys > 0) add("max-keys", std::to_string(op.max_keys));
      } else {
        add("key-marker", op.key_marker);
        add("upload-id-marker", op.upload_id_marker);
        if (op.max_keys > 0) add("max-uploads", std::to_string(op.max_keys));
      }
      return ok();
    }
    case S3OpKind::get_object_lock_configuration:
      p.method = "GET";
      p.query.emplace_back("object-lock", "");
      return ok();
    case S3OpKind::put_object_retention:
      p.method = "PUT";
      p.query.emplace_back("retention", "");
      if (!op.lock) return bad("no retention given");
      return add_xml_body(p, retention_body(op.lock->mode, op.lock->retain_until));
  }
  return bad("unknown operation");
}

void S3Client::Impl::send(uint64_t id, PendingOp& p) {
  p.due.reset();
  if (p.total_attempts > 0) ++own.retries;
  ++p.attempts;
  ++p.total_attempts;
  p.result.attempts = p.total_attempts;
  const bool head = p.phase == OpPhase::confirm_by_head;
  Request req;
  req.method = head ? "HEAD" : p.method;
  const RequestTarget t = target_of(cfg, p.op.bucket, is_bucket_op(p.op.kind) ? "" : p.op.key,
                                    head ? QueryParams{} : p.query);
  req.host = t.host;
  req.path = t.path;
  if (!head) {
    req.query = p.query;
    req.headers = p.headers;
    req.payload_hash = p.payload_hash;
  }
  auto signed_req =
      sign(req, cfg.credentials, SigningParams{cfg.region}, std::chrono::system_clock::now());
  if (!signed_req) return finish(id, signed_req.error().wrap(p.what));
  HttpRequest h;
  h.method = req.method;
  h.url = t.url;
  for (const Header& x : req.headers) h.headers.emplace_back(x.name, x.value);
  for (const Header& x : signed_req->headers) h.headers.emplace_back(x.name, x.value);
  if (!head) h.body = p.body;
  if (!head && p.op.kind == S3OpKind::get_object) h.into = p.op.into;
  h.deadline = Clock::now() + cfg.attempt_timeout;
  h.tag = id;
  http.start(std::move(h));
}

void S3Client::Impl::finish(uint64_t id, Result<void> outcome) {
  auto it = pending.find(id);
  PendingOp& p = it->second;
  p.result.outcome = std::move(outcome);
  ++own.operations;
  // An object found absent by HeadObject is an answer (the storage asks so before creating
  // one), not a failure.
  const bool absent = !p.result.outcome && p.op.kind == S3OpKind::head_object &&
                      p.result.outcome.error().code == Errc::not_found;
  if (!p.result.outcome && !absent) ++own.failed;
  if (run_id == id)
    run_result = std::move(p.result);
  else
    ready.push_back(std::move(p.result));
  pending.erase(it);
}

void S3Client::Impl::retry_or_fail(uint64_t id, PendingOp& p, Error e, bool retryable) {
  if (retryable && p.attempts < cfg.attempts) {
    // Full jitter: a uniform wait up to the exponential bound spreads retries of many
    // clients instead of synchronising them.
    const int64_t bound =
        std::min<int64_t>(cfg.backoff_cap.count(), cfg.backoff_first.count()
                                                       << std::min<uint32_t>(p.attempts - 1, 30));
    std::uniform_int_distribution<int64_t> wait(0, std::max<int64_t>(bound, 0));
    p.due = Clock::now() + milliseconds(wait(rng));
    p.sent_earlier = true;
    return;
  }
  const uint32_t n = p.total_attempts;
  e.what += " (" + std::to_string(n) + (n == 1 ? " attempt" : " attempts") +
            (retryable ? ", the most allowed)" : ")");
  finish(id, std::move(e));
}

void S3Client::Impl::on_success(uint64_t id, PendingOp& p, HttpResponse& r) {
  S3Result& res = p.result;
  if (const std::string* etag = r.header("etag")) res.etag = *etag;
  if (const std::string* lm = r.header("last-modified")) res.last_modified = parse_http_date(*lm);
  // A body S3 answered 200 with can still be an error document: retry when its code says so.
  auto body_failed = [&](const Error& e) {
    auto doc = parse_error(r.text);
    res.s3_code = doc ? doc->code : "";
    retry_or_fail(id, p, e.wrap(p.what), doc && retryable_code(doc->code));
  };
  if (p.phase == OpPhase::confirm_by_head) {
    const auto size = parse_u64(r.header("content-length"));
    if (size && size == p.op.expected_size) {
      res.size = *size;
      res.confirmed_by_head = true;
      return finish(id, ok());
    }
    return finish(
        id, Error{Errc::corrupt, 0,
                  p.what +
                      ": S3 answered NoSuchUpload to a repeated completion and the "
                      "object has " +
                      (size ? std::to_string(*size) : std::string("an unknown number of")) +
                      " bytes, not the " + std::to_string(*p.op.expected_size) + " expected (" +
                      std::to_string(p.total_attempts) + " attempts)"});
  }
  switch (p.op.kind) {
    case S3OpKind::put_object:
    case S3OpKind::upload_part:
      res.size = p.body.size();
      if (!p.crc32c.empty()) {
        const std::string* echoed = r.header("x-amz-checksum-crc32c");
        res.checksum_crc32c = echoed ? *echoed : p.crc32c;
      }
      if (p.op.kind == S3OpKind::upload_part && res.etag.empty())
        return finish(id, Error{Errc::corrupt, 0, p.what + ": the answer has no ETag"});
      return finish(id, ok());
    case S3OpKind::create_multipart_upload: {
      auto upload = parse_initiate_multipart(r.text);
      if (!upload) return body_failed(upload.error());
      res.upload_id = std::move(*upload);
      return finish(id, ok());
    }
    case S3OpKind::complete_multipart_upload: {
      auto done = parse_complete_multipart(r.text);
      if (!done) return body_failed(done.error());
      if (!done->etag.empty()) res.etag = done->etag;
      if (p.op.expected_size) res.size = *p.op.expected_size;
      return finish(id, ok());
    }
    case S3OpKind::get_object:
      if (p.op.offset > 0 && r.status != 206)
        return finish(id, Error{Errc::corrupt, 0,
                                p.what + ": asked for bytes from " + std::to_string(p.op.offset) +
                                    ", the answer (HTTP " + std::to_string(r.status) +
                                    ") is not a partial one"});
      res.size = r.received;
      return finish(id, ok());
    case S3OpKind::head_object:
      res.size = parse_u64(r.header("content-length")).value_or(0);
      return finish(id, ok());
    case S3OpKind::delete_objects: {
      auto outcome = parse_delete_result(r.text);
      if (!outcome) return body_failed(outcome.error());
      res.deleted = std::move(*outcome);
      if (res.deleted.failed.empty()) return finish(id, ok());
      std::string what = p.what + ": " + std::to_string(res.deleted.failed.size()) + " of " +
                         std::to_string(p.op.keys.size()) + " keys not deleted:";
      for (size_t i = 0; i < res.deleted.failed.size() && i < 3; ++i) {
        const DeleteFailure& f = res.deleted.failed[i];
        what += " '" + util::escape_text(f.key) + "': " + util::escape_text(f.code) +
                (f.message.empty() ? "" : " (" + util::escape_text(f.message) + ")") + ";";
      }
      if (res.deleted.failed.size() > 3)
        what += " ...";
      else
        what.pop_back();
      return finish(id, Error{Errc::io, 0, std::move(what)});
    }
    case S3OpKind::list_objects_v2: {
      auto listing = parse_list_objects_v2(r.text);
      if (!listing) return body_failed(listing.error());
      res.listing = std::move(*listing);
      return finish(id, ok());
    }
    case S3OpKind::list_multipart_uploads: {
      auto listing = parse_list_multipart_uploads(r.text);
      if (!listing) return body_failed(listing.error());
      res.uploads = std::move(*listing);
      return finish(id, ok());
    }
    case S3OpKind::get_object_lock_configuration: {
      auto lock = parse_object_lock_configuration(r.text);
      if (!lock) return body_failed(lock.error());
      res.lock_config = std::move(*lock);
      return finish(id, ok());
    }
    case S3OpKind::abort_multipart_upload:
    case S3OpKind::delete_object:
    case S3OpKind::put_object_retention:
    case S3OpKind::head_bucket:
      return finish(id, ok());
  }
}

void S3Client::Impl::handle(HttpResponse r) {
  auto it = pending.find(r.tag);
  if (it == pending.end()) return;
  const uint64_t id = it->first;
  PendingOp& p = it->second;
  p.result.http_status = r.status;
  p.result.s3_code.clear();
  if (!r.outcome) {
    const Errc code = r.outcome.error().code;
    return retry_or_fail(id, p, r.outcome.error().wrap(p.what),
                         code == Errc::io || code == Errc::timed_out);
  }
  if (r.status >= 200 && r.status <= 299) return on_success(id, p, r);
  auto doc = r.text.empty() ? Result<S3Error>(Error{}) : parse_error(r.text);
  const std::string code = doc ? doc->code : "";
  p.result.s3_code = code;
  Error e = doc ? to_error(*doc, static_cast<int>(r.status), p.what)
                : status_error(r.status, p.what, r.text);
  if (p.phase == OpPhase::confirm_by_head && r.status == 404)
    return finish(id, Error{Errc::not_found, 0,
                            p.what +
                                ": S3 answered NoSuchUpload to a repeated completion and the "
                                "object does not exist (" +
                                std::to_string(p.total_attempts) + " attempts)"});
  // The answer to an earlier attempt was lost, and that attempt did the work.
  if (code == "NoSuchUpload" && p.sent_earlier && p.phase == OpPhase::request) {
    if (p.op.kind == S3OpKind::abort_multipart_upload) return finish(id, ok());
    if (p.op.kind == S3OpKind::complete_multipart_upload && p.op.expected_size) {
      p.phase = OpPhase::confirm_by_head;
      p.attempts = 0;
      return send(id, p);
    }
  }
  retry_or_fail(id, p, std::move(e), retryable_status(r.status) || retryable_code(code));
}

void S3Client::Impl::launch_due(Clock::time_point now) {
  std::vector<uint64_t> due;
  for (auto& [id, p] : pending)
    if (p.due && *p.due <= now) due.push_back(id);
  for (uint64_t id : due) send(id, pending.at(id));
}

std::optional<Clock::time_point> S3Client::Impl::next_due() const {
  std::optional<Clock::time_point> next;
  for (const auto& [id, p] : pending)
    if (p.due && (!next || *p.due < *next)) next = p.due;
  return next;
}

bool S3Client::Impl::woken() {
  pollfd pfd{epoll_fd, POLLIN, 0};
  if (::poll(&pfd, 1, 0) <= 0) return false;
  uint64_t count = 0;
  while (::read(event_fd, &count, sizeof count) > 0) {
  }
  return true;
}

S3Client::S3Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Client::S3Client(S3Client&&) noexcept = default;
S3Client& S3Client::operator=(S3Client&&) noexcept = default;
S3Client::~S3Client() = default;

Result<S3Client> S3Client::open(S3Config config) {
  HttpOptions o;
  o.ca_file = config.ca_file;
  o.verify_tls = config.verify_tls == VerifyPeer::yes ? VerifyTls::yes : VerifyTls::no;
  o.connect_timeout = std::min<milliseconds>(o.connect_timeout, config.attempt_timeout);
  o.max_host_connections = std::max<long>(16, 2L * config.parts_in_flight);
  SB_ASSIGN(HttpSession http, HttpSession::open(std::move(o)));
  auto impl = std::make_unique<Impl>(std::move(config), std::move(http));
  impl->event_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  impl->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = impl->event_fd;
  if (impl->event_fd < 0 || impl->epoll_fd < 0 ||
      ::epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, impl->event_fd, &ev) != 0)
    return sys_error(errno, "unable to set up the S3 client's wakeup descriptors");
  return S3Client(std::move(impl));
}

void S3Client::start(S3Op op) {
  Impl& m = *impl_;
  const uint64_t id = m.next_id++;
  PendingOp& p = m.pending[id];
  p.what = std::string(op_name(op.kind)) + " '" + util::escape_text(op.bucket) +
           (is_bucket_op(op.kind) ? "" : "/" + util::escape_text(op.key)) + "'";
  if (op.kind == S3OpKind::upload_part) p.what += " part " + std::to_string(op.part_number);
  p.result.tag = op.tag;
  p.result.kind = op.kind;
  p.op = std::move(op);
  auto prepared = m.prepare(p);
  if (!prepared) return m.finish(id, prepared.error());
  m.send(id, p);
}

std::vector<S3Result> S3Client::poll(Clock::time_point until, int wake_fd) {
  Impl& m = *impl_;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd;
  const bool watch = wake_fd >= 0 && ::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, wake_fd, &ev) == 0;
  for (;;) {
    m.launch_due(Clock::now());
    if (!m.ready.empty() || m.run_result || m.pending.empty() || m.woken()) break;
    const auto now = Clock::now();
    if (now >= until) break;
    const auto wait_until = std::min(until, m.next_due().value_or(until));
    if (m.http.in_flight() > 0) {
      for (HttpResponse& r : m.http.poll(wait_until, m.epoll_fd)) m.handle(std::move(r));
    } else {
      const auto ms = std::chrono::ceil<milliseconds>(wait_until - now).count();
      pollfd pfd{m.epoll_fd, POLLIN, 0};
      ::poll(&pfd, 1, static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000)));
    }
  }
  if (watch) ::epoll_ctl(m.epoll_fd, EPOLL_CTL_DEL, wake_fd, nullptr);
  std::vector<S3Result> out = std::move(m.ready);
  m.ready.clear();
  return out;
}

size_t S3Client::in_flight() const { return impl_->pending.size() + impl_->ready.size(); }

void S3Client::wakeup() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(impl_->event_fd, &one, sizeof one);
}

S3Result S3Client::run(S3Op op) {
  Impl& m = *impl_;
  m.run_id = m.next_id;  // the id start() gives it
  start(std::move(op));
  std::vector<S3Result> others;
  // Every attempt has its deadline and the attempts are bounded, so the op does finish.
  while (!m.run_result)
    for (S3Result& r : poll(Clock::now() + std::chrono::hours(1))) others.push_back(std::move(r));
  m.run_id.reset();
  S3Result mine = std::move(*m.run_result);
  m.run_result.reset();
  m.ready.insert(m.ready.begin(), std::make_move_iterator(others.begin()),
                 std::make_move_iterator(others.end()));
  return mine;
}

S3Stats S3Client::stats() const {
  S3Stats s = impl_->own;
  const HttpStats& h = impl_->http.stats();
  s.requests = h.requests;
  s.bytes_sent = h.bytes_sent;
  s.bytes_received = h.bytes_received;
  s.connections = h.connections;
  return s;
}

const S3Config& S3Client::config() const { return impl_->cfg; }

}  // namespace stripeback::s3
