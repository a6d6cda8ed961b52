#include "backends/s3/session.h"

#include <map>
#include <mutex>
#include <optional>

namespace stripeback::s3 {

void Session::start(S3Op op, Done done) {
  uint64_t tag = next_tag_++;
  op.tag = tag;
  handlers_.emplace(tag, std::move(done));
  client_.start(std::move(op));
}

size_t Session::poll(Clock::time_point until, int wake_fd) {
  std::vector<S3Result> done = client_.poll(until, wake_fd);
  size_t n = 0;
  for (S3Result& r : done) {
    auto it = handlers_.find(r.tag);
    if (it == handlers_.end()) continue;  // an op run() waited for: its result went there
    Done h = std::move(it->second);
    handlers_.erase(it);
    h(std::move(r));
    ++n;
  }
  return n;
}

namespace {

std::mutex g_mu;
S3Flags g_flags;
std::optional<Result<S3Config>> g_config;

thread_local std::map<const void*, std::shared_ptr<Session>> t_sessions;

}  // namespace

void configure(S3Flags flags) {
  std::lock_guard lock(g_mu);
  g_flags = std::move(flags);
  g_config.reset();
}

Result<S3Config> process_config() {
  std::lock_guard lock(g_mu);
  if (!g_config) g_config = resolve_config(g_flags, process_environment());
  return *g_config;
}

Result<std::shared_ptr<Session>> thread_session(const void* key, const storage::Location& at) {
  auto it = t_sessions.find(key);
  if (it != t_sessions.end()) return it->second;
  auto config = process_config();
  if (!config) return config.error().wrap("unable to use '" + where(at) + "'");
  auto client = S3Client::open(std::move(*config));
  if (!client) return client.error().wrap("unable to use '" + where(at) + "'");
  auto s = std::make_shared<Session>(std::move(*client));
  t_sessions.emplace(key, s);
  return s;
}

std::shared_ptr<Session> find_thread_session(const void* key, bool drop) {
  auto it = t_sessions.find(key);
  if (it == t_sessions.end()) return nullptr;
  auto s = it->second;
  if (drop) t_sessions.erase(it);
  return s;
}

std::string where(const storage::Location& at) { return at.str(); }

}  // namespace stripeback::s3
