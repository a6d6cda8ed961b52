// S3FaultProxy: an HTTP/1.1 proxy on 127.0.0.1 between Stripeback's S3 client and the test
// gateway (s3_server.h) that injects the faults a real S3 service shows, by rules a test
// gives, and counts what it injected so the test can assert the faults really happened.
//
//   S3FaultProxy proxy(ep.url);                  // listens on an ephemeral port
//   // The 2nd UploadPart request, then every 3rd, answered SlowDown.
//   proxy.add(S3FaultRule(S3Fault::slow_down, "PUT", "partNumber=").after(1).one_in(3).at_most(0));
//   ... stripeback backup --s3-endpoint proxy.url() ...
//   EXPECT_GT(proxy.injected(0), 0u) << proxy.journal();
//
// Each client connection is served by a thread of its own, keep-alive: requests are
// delimited by Content-Length or chunked framing, and each is forwarded whole over the
// connection's own connection to the gateway (opened on first use, kept alive, opened again
// when the gateway closed it). Answers are read whole (by Content-Length, chunks, or to the
// end of the connection) before they are relayed. A request with "Expect: 100-continue" is
// told to continue by the proxy and forwarded without that header. Headers, Host included,
// are forwarded as received, so the client's signature still holds at the gateway.
//
// A request is matched against the rules in order; every rule counts the requests it
// matches, and the first rule whose count says so faults it (see S3FaultRule). A request no
// rule faults is forwarded and its answer relayed.
//
// All methods are thread-safe. The destructor closes every connection and joins the threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace stripeback::testing {

enum class S3Fault {
  // Answered "503 Slow Down" with S3's SlowDown error document; the gateway never sees it.
  slow_down,
  // The request is read whole and not forwarded; the client's connection is reset (RST).
  reset,
  // The request is forwarded and the gateway's whole answer read, then dropped: the client's
  // connection is reset. The gateway did the work; the client never learns it.
  lose_answer,
  // The request is forwarded; the answer's head (its Content-Length kept) and only the first
  // S3FaultRule::truncate_to bytes of its body are relayed, then the connection is closed.
  // An answer whose body is not longer than that is relayed whole and not counted.
  truncate,
  // As truncate, but the connection is reset (RST) after those bytes.
  reset_in_body,
};
const char* fault_name(S3Fault f);

struct S3FaultRule {
  // `fault` for requests with `method` ("PUT", "GET", "POST", ...; empty: any) whose target
  // (path and query) holds `target_has` (empty: any).
  S3FaultRule(S3Fault f, std::string m, std::string has = "")
      : fault(f), method(std::move(m)), target_has(std::move(has)) {}

  S3Fault fault;
  std::string method;
  std::string target_has;
  std::string target_lacks;  // and does not hold this; empty: no condition
  // Of the requests the rule matches (retries included), `skip` pass first; then one in
  // every `every` is faulted (1: each), at most `limit` times (0: no limit). The 3rd match
  // only: skip 2, limit 1. The first K: limit K.
  uint64_t skip = 0;
  uint64_t every = 1;
  uint64_t limit = 1;
  size_t truncate_to = 0;  // truncate and reset_in_body: the body bytes relayed

  S3FaultRule& lacking(std::string s) {
    target_lacks = std::move(s);
    return *this;
  }
  S3FaultRule& after(uint64_t n) {
    skip = n;
    return *this;
  }
  S3FaultRule& one_in(uint64_t n) {
    every = n;
    return *this;
  }
  S3FaultRule& at_most(uint64_t n) {
    limit = n;
    return *this;
  }
  S3FaultRule& cut_to(size_t bytes) {
    truncate_to = bytes;
    return *this;
  }
};

class S3FaultProxy {
 public:
  // Forwards to `upstream`, "http://HOST:PORT" (an IPv4 address). A proxy that cannot
  // listen reports a test failure (ADD_FAILURE) and has port 0.
  explicit S3FaultProxy(const std::string& upstream);
  ~S3FaultProxy();
  S3FaultProxy(const S3FaultProxy&) = delete;
  S3FaultProxy& operator=(const S3FaultProxy&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:PORT", for --s3-endpoint

  // Adds a rule after those given before; returns its index for matched() and injected().
  size_t add(S3FaultRule rule);
  // Forgets every rule (and their counts): requests pass from now on.
  void clear_rules();

  uint64_t matched(size_t rule) const;   // requests the rule matched
  uint64_t injected(size_t rule) const;  // faults it injected
  uint64_t injected() const;             // faults injected by all rules
  uint64_t requests() const;             // requests read from clients
  uint64_t forwarded() const;            // requests the gateway answered through the proxy
  // One line per request: method, target, and what happened (the gateway's status, the
  // fault injected, or why forwarding failed); for failure messages.
  std::string journal() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace stripeback::testing
