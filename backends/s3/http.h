// HttpSession: HTTP/1.1 transfers over libcurl's multi interface, one session per channel
// thread, for the S3 client. It moves bytes and reports what happened; it knows nothing of
// S3, signs nothing and retries nothing (a 503 is an answer like any other, for the client
// to act on). Each request goes out at most once: when a kept-alive connection closes under
// it before any answer, it fails (libcurl would send it again on a new connection, hiding
// from the caller that the server may have acted on it).
//
// Requests are plain data (HttpRequest); start() hands one to the session without touching
// the network, and poll() runs the transfers and returns the finished ones (HttpResponse),
// waiting at most until a given time point and ending early when another descriptor polls
// readable, so an IoLoop queue can wait on S3 and on another queue's descriptor at once.
// Connections to a host are kept alive in the session and reused by later requests.
//
// Threads: a session is used by the thread that made it; only wakeup() may be called from
// another thread. Sessions of different threads share nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::s3 {

using Clock = std::chrono::steady_clock;
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// A text answer (an S3 XML document, an error body) is collected up to this size; a longer
// one fails the request.
constexpr size_t kMaxTextBody = 1 << 20;

enum class VerifyTls : bool { no, yes };

struct HttpOptions {
  std::string ca_file;                    // PEM bundle of trusted CAs; empty: the system's store
  VerifyTls verify_tls = VerifyTls::yes;  // peer certificate and host name
  std::chrono::milliseconds connect_timeout{10'000};
  long max_host_connections = 16;  // most connections open to one host:port (0: no limit)
  std::string user_agent;          // empty: "stripeback/<version>"
};

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, PUT, POST, DELETE, ...
  std::string url;             // full: scheme, host, port, path and query
  HttpHeaders headers;             // sent as given (an empty value is sent empty)
  // Sent as is, with a Content-Length; owned by the caller, who keeps it alive and unchanged
  // until the request's response came back from poll(). PUT and POST send it even empty.
  std::span<const std::byte> body;
  // Where a successful (2xx) answer's body goes: straight into this caller buffer (kept
  // alive until the response came back), failing the request if the body does not fit.
  // Without it, the body is collected as text (up to kMaxTextBody). A non-2xx answer's body
  // is always collected as text, never written into `into`.
  std::optional<std::span<std::byte>> into;
  Clock::time_point deadline;  // bounds the whole request, queueing for a connection included
  uint64_t tag = 0;            // the caller's, returned in the response
};

struct HttpResponse {
  uint64_t tag = 0;
  // The transport's outcome: ok when an answer (any status) arrived whole. The message
  // names the method and URL (never a header) and the cause. Codes: timed_out (deadline
  // passed), io (refused, reset, truncated, closed unanswered, TLS handshake: worth another
  // attempt), invalid_argument (a bad URL or method, a certificate that did not verify, an
  // answer larger than its destination: another attempt fails the same way).
  Result<void> outcome;
  long status = 0;        // the HTTP status, 0 when no answer arrived
  HttpHeaders headers;        // names lower-cased, values trimmed, in order of arrival
  std::string text;       // the body collected as text (see HttpRequest::into)
  uint64_t received = 0;  // body bytes received (into the caller's buffer or `text`)

  // The first header named `name` (lower case), or nullptr.
  const std::string* header(std::string_view name) const;
};

// What a session did, for the engine to show.
struct HttpStats {
  uint64_t requests = 0;        // finished, whatever their outcome
  uint64_t failed = 0;          // of which failed in transport
  uint64_t bytes_sent = 0;      // request bodies
  uint64_t bytes_received = 0;  // response bodies
  uint64_t connections = 0;     // connections opened (a reused one is not counted again)
  double seconds = 0;           // sum of the requests' durations, start to finish
};

class HttpSession {
 public:
  // Fails (Errc::io) only when libcurl cannot be set up.
  static Result<HttpSession> open(HttpOptions options);
  HttpSession(HttpSession&&) noexcept;
  HttpSession& operator=(HttpSession&&) noexcept;
  // Abandons the transfers still in flight (their buffers are no longer used afterwards).
  ~HttpSession();

  // Queues the request; no network I/O happens here. A request that cannot be made (a bad
  // URL, a deadline already passed) comes back failed from the next poll().
  void start(HttpRequest request);
  // Requests started and not yet returned by poll().
  size_t in_flight() const;
  // Runs the transfers and returns the finished ones. Waits until at least one finished,
  // `until` passed, `wake_fd` (when >= 0) polls readable or wakeup() was called, whichever
  // comes first; returns at once when nothing is in flight.
  std::vector<HttpResponse> poll(Clock::time_point until, int wake_fd = -1);
  // Makes a poll() in progress (or the next one) return early. Any thread.
  void wakeup();

  const HttpStats& stats() const;

 private:
  struct Impl;
  explicit HttpSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The URL as it may appear in a message: query parameters that carry credentials
// (X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token) have their values replaced.
std::string url_for_messages(std::string_view url);

}  // namespace stripeback::s3
