// Session: one thread's S3Client and the owners of its operations. Every op started through
// the session carries a handler; poll() (or a wait in any part of the backend on that thread)
// hands each finished op to its handler, so reads of the thread's IoLoop queue and the part
// uploads of its open objects share one client and one set of connections.
//
// Threads: a session belongs to the thread that made it (thread_session()); files made on a
// thread keep that thread's session alive while they need it, and are used on that thread.
// Handlers run inside poll() on that thread; one may start further ops.
#pragma once

#include <functional>
#include <memory>
#include <unordered_map>

#include "backends/s3/client.h"
#include "storage/location.h"

namespace stripeback::s3 {

class Session {
 public:
  using Done = std::function<void(S3Result)>;
  explicit Session(S3Client client) : client_(std::move(client)) {}

  // Starts `op` (its tag is the session's); `done` gets its result from a later poll().
  void start(S3Op op, Done done);
  // Waits until an op finished, `until` passed or `wake_fd` polled readable, then hands
  // every finished op to its handler; returns how many were handed over.
  size_t poll(Clock::time_point until, int wake_fd = -1);
  // Starts `op` and waits for it (other ops' results wait for the next poll()).
  S3Result run(S3Op op) { return client_.run(std::move(op)); }
  size_t in_flight() const { return handlers_.size(); }
  const S3Client& client() const { return client_; }

 private:
  S3Client client_;
  uint64_t next_tag_ = 1;
  std::unordered_map<uint64_t, Done> handlers_;
};

// The process's S3 settings (the front ends call it before a job; later calls replace
// them). They are resolved (resolve_config over this process's environment) on first use.
void configure(S3Flags flags);
// The resolved configuration, or why there is none (what is missing and where it was
// looked for).
Result<S3Config> process_config();

// The calling thread's session under `key` (one per storage), made on first use from the
// process's configuration; `at` names the location in errors.
Result<std::shared_ptr<Session>> thread_session(const void* key, const storage::Location& at);
// The thread's session under `key`, if it made one; `drop` forgets it (files still using it
// keep it alive).
std::shared_ptr<Session> find_thread_session(const void* key, bool drop);

// "s3://bucket/key" of a location, for messages.
std::string where(const storage::Location& at);

}  // namespace stripeback::s3
