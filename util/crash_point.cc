// Compiled only with STRIPEBACK_TEST_HOOKS=ON (util/CMakeLists.txt).
#include "util/crash_point.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>

namespace stripeback::util {
namespace {

struct CrashTarget {
  std::string point;
  uint64_t nth = 1;
  std::atomic<uint64_t> hits{0};
};

// The armed target, read by every thread that reaches a point. A target once armed is never
// freed (a thread may still be comparing against it when another spec replaces it, or
// while the process exits).
std::atomic<CrashTarget*> g_armed{nullptr};

CrashTarget* keep(std::string point, uint64_t nth) {
  static std::mutex mu;
  static auto* all = new std::list<CrashTarget>;
  std::lock_guard lock(mu);
  CrashTarget& t = all->emplace_back();
  t.point = std::move(point);
  t.nth = nth;
  return &t;
}

}  // namespace

void crash_point(const char* name) {
  CrashTarget* t = g_armed.load(std::memory_order_acquire);
  if (t == nullptr || t->point != name) return;
  if (t->hits.fetch_add(1, std::memory_order_relaxed) + 1 != t->nth) return;
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // not reached: SIGKILL cannot be caught
}

namespace test_hooks {

Result<void> set_crash_at(std::string_view spec) {
  if (spec.empty()) {
    g_armed.store(nullptr, std::memory_order_release);
    return ok();
  }
  const size_t colon = spec.find(':');
  std::string point(spec.substr(0, colon));
  if (point.empty())
    return fail(Errc::invalid_argument,
                "crash point '" + std::string(spec) + "' has no point name before ':'");
  uint64_t nth = 1;
  if (colon != std::string_view::npos) {
    const std::string_view n = spec.substr(colon + 1);
    const bool digits =
        !n.empty() && n.size() <= 18 && n.find_first_not_of("0123456789") == std::string_view::npos;
    nth = digits ? std::stoull(std::string(n)) : 0;
    if (nth == 0)
      return fail(Errc::invalid_argument, "crash point '" + std::string(spec) +
                                              "': the count after ':' must be a whole number "
                                              "from 1");
  }
  g_armed.store(keep(std::move(point), nth), std::memory_order_release);
  return ok();
}

}  // namespace test_hooks
}  // namespace stripeback::util
