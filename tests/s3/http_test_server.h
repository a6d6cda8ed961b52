// HttpTestServer: a scriptable HTTP/1.1 server on 127.0.0.1 for the tests of the S3 HTTP
// layer (and, later, of the S3 client's handling of faults).
//
// It listens on an ephemeral port; a thread accepts and each connection is served by a
// thread of its own, keep-alive, until the client closes it or a scripted fault ends it.
// Every request is recorded (method, target, headers, body) before it is answered. An
// answer comes from, in order: the replies queued with push() (one per request, first in
// first out), the handler set with on() (when it returns one), else the defaults: PUT
// stores the body under the target's path, GET serves a stored body (honouring
// "Range: bytes=a-b" and "bytes=a-"), HEAD gives its Content-Length, DELETE removes it;
// a missing object is a 404 with a small XML body.
//
// All methods are thread-safe. The destructor closes every connection and joins the
// threads (a delayed answer is cut short).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace stripeback::s3::test {

struct RecordedRequest {
  std::string method, target;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;  // empty when bodies are not recorded (record_bodies)
  size_t body_size = 0;

  // The first header named `name` (lower case), or "" when there is none.
  std::string header(const std::string& name) const;
};

struct Reply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Length is added
  std::string body;
  std::chrono::milliseconds delay{0};  // waited before the answer is sent
  // Faults: send the head and this many body bytes, then reset the connection (RST) ...
  std::optional<size_t> reset_after;
  // ... or claim the whole body's Content-Length, send this many bytes and close.
  std::optional<size_t> truncate_to;
  // ... or reset the connection without sending anything: the request arrived, no byte of
  // an answer leaves.
  bool reset_unanswered = false;
};

class HttpTestServer {
 public:
  HttpTestServer();
  ~HttpTestServer();
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:PORT"; append a target ("/bucket/key").
  std::string url() const;

  // The next request (after those already queued) is answered with `r`.
  void push(Reply r);
  using Handler = std::function<std::optional<Reply>(const RecordedRequest&)>;
  void on(Handler h);
  // Whether request bodies are kept in the records (on by default; off for large volumes).
  void record_bodies(bool on);

  std::vector<RecordedRequest> requests() const;
  size_t connections_accepted() const;
  void put_object(const std::string& path, std::string body);
  std::optional<std::string> object(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

// `n` bytes of a pattern seeded by `seed` (the same seed gives the same bytes), as a request
// or response body, and a string's bytes as a body span.
inline std::string pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}
inline std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

}  // namespace stripeback::s3::test
