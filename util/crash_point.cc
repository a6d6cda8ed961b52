#include "util/crash_point.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace stripeback::util {
namespace {

struct CrashTarget {
  std::string point;  // empty: disarmed
  uint64_t nth = 1;
};

CrashTarget parse_target() {
  const char* v = std::getenv("STRIPEBACK_CRASH_AT");
  if (!v || !*v) return {};
  std::string spec(v);
  CrashTarget t;
  size_t colon = spec.find(':');
  t.point = spec.substr(0, colon);
  if (colon != std::string::npos) {
    std::string n = spec.substr(colon + 1);
    char* end = nullptr;
    unsigned long long nth = std::strtoull(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || nth == 0) {
      std::fprintf(stderr, "stripeback: ignoring STRIPEBACK_CRASH_AT='%s': the count after "
                   "':' must be a whole number from 1\n", v);
      return {};
    }
    t.nth = nth;
  }
  return t;
}

}  // namespace

void crash_point(const char* name) {
  static const CrashTarget target = parse_target();
  static std::atomic<uint64_t> hits{0};
  if (target.point.empty() || target.point != name) return;
  if (hits.fetch_add(1, std::memory_order_relaxed) + 1 != target.nth) return;
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // not reached: SIGKILL cannot be caught
}

}  // namespace stripeback::util
