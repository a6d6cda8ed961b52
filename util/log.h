// The engine's log seam. Library code never writes to stderr or to a logging library of its
// own: it hands (level, message) to the sink in force on the calling thread. A job installs
// its sink on every thread it starts (ScopedLogSink), so two jobs in one process log to
// their own sinks. Without a thread sink the process default is used, which is unset (the
// message is dropped) unless the program set one: the CLI sets one that prints on stderr.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace stripeback::util {

enum class LogLevel : int { trace = 0, debug, info, warn, error };
const char* log_level_name(LogLevel l);

// Called on the thread that logged, possibly on several threads at once: a sink shared by
// threads must be thread-safe. It must not throw.
using LogSink = std::function<void(LogLevel, std::string_view message)>;

// The sink in force on this thread (a thread sink, else the process default), or null.
std::shared_ptr<const LogSink> current_log_sink();

// The process default sink (null: drop messages). Set once by a program's main, before
// threads start; libraries never set it.
void set_default_log_sink(std::shared_ptr<const LogSink> sink);

// Installs `sink` as this thread's sink for the scope (null: back to the process default),
// restoring the one before at the end.
class ScopedLogSink {
 public:
  explicit ScopedLogSink(std::shared_ptr<const LogSink> sink);
  ~ScopedLogSink();
  ScopedLogSink(const ScopedLogSink&) = delete;
  ScopedLogSink& operator=(const ScopedLogSink&) = delete;

 private:
  std::shared_ptr<const LogSink> before_;
  bool had_before_;
};

void log(LogLevel level, std::string_view message);
inline void log_debug(std::string_view m) { log(LogLevel::debug, m); }
inline void log_info(std::string_view m) { log(LogLevel::info, m); }
inline void log_warn(std::string_view m) { log(LogLevel::warn, m); }
inline void log_error(std::string_view m) { log(LogLevel::error, m); }

}  // namespace stripeback::util
