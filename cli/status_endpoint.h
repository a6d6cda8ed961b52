// The status endpoint of a running job (--status-listen, docs/monitoring.md): a small HTTP
// server on its own thread (Boost.Asio) that answers GET /status with the job's snapshot as
// JSON and GET /metrics in Prometheus's text exposition format. It only reads the latest
// snapshot the job's publisher gave it: a slow or bad client never holds a channel back.
#pragma once

#include <memory>
#include <string>

#include "engine/monitor/progress.h"
#include "stripeback/result.h"

namespace stripeback::cli {

class StatusEndpoint {
 public:
  // `addr`: a Unix socket path (absolute or starting with "./"), or [HOST]:PORT / PORT for
  // TCP (HOST defaults to 127.0.0.1; another address only when given). Errors name the
  // address and the cause.
  static Result<std::unique_ptr<StatusEndpoint>> start(const std::string& addr);
  ~StatusEndpoint();  // stops serving; removes the socket file
  // The latest snapshot (a publisher sink).
  void update(const engine::ProgressSnapshot& s);
  // Where it listens: the socket path, or HOST:PORT with the port bound.
  const std::string& address() const;

  // What a request gets: status code, content type and body (for tests of the parser).
  struct Response {
    int code = 200;
    std::string type, body;
  };
  static Response respond(const std::string& request_head, const engine::ProgressSnapshot* s);

  struct Impl;

 private:
  StatusEndpoint() = default;
  std::unique_ptr<Impl> impl_;
};

// The job's snapshot as Prometheus text exposition (version 0.0.4).
std::string metrics_text(const engine::ProgressSnapshot& s);

}  // namespace stripeback::cli
