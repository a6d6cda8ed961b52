#include "util/log.h"

#include <atomic>
#include <mutex>

namespace stripeback::util {
namespace {

// A thread sink is "set" even when it is null on purpose (a job that asked for silence);
// `thread_set` tells the two apart.
thread_local std::shared_ptr<const LogSink> thread_sink;
thread_local bool thread_set = false;

std::mutex& default_mu() {
  static std::mutex m;
  return m;
}
std::shared_ptr<const LogSink>& default_sink() {
  static std::shared_ptr<const LogSink> s;
  return s;
}

}  // namespace

const char* log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::trace: return "trace";
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warn: return "warn";
    case LogLevel::error: return "error";
  }
  return "?";
}

std::shared_ptr<const LogSink> current_log_sink() {
  if (thread_set) return thread_sink;
  std::lock_guard lock(default_mu());
  return default_sink();
}

void set_default_log_sink(std::shared_ptr<const LogSink> sink) {
  std::lock_guard lock(default_mu());
  default_sink() = std::move(sink);
}

ScopedLogSink::ScopedLogSink(std::shared_ptr<const LogSink> sink)
    : before_(std::move(thread_sink)), had_before_(thread_set) {
  thread_sink = std::move(sink);
  thread_set = thread_sink != nullptr;
}

ScopedLogSink::~ScopedLogSink() {
  thread_sink = std::move(before_);
  thread_set = had_before_;
}

void log(LogLevel level, std::string_view message) {
  auto sink = current_log_sink();
  if (sink && *sink) (*sink)(level, message);
}

}  // namespace stripeback::util
