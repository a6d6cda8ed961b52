#include "util/process.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

namespace stripeback::util {

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

uint64_t process_start_ticks(pid_t pid, char* state) {
  if (state) *state = '?';
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  // The command name (field 2) is in parentheses and may hold spaces or ')'.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return 0;
    if (i == 3 && state) *state = field[0];
  }
  try {
    return std::stoull(field);
  } catch (...) {
    return 0;
  }
}

bool process_alive(const std::string& host, pid_t pid, uint64_t start_ticks) {
  if (host != hostname()) return true;
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  return start_ticks == 0 || process_start_ticks(pid) == start_ticks;
}

std::string random_hex(size_t n) {
  static const char* digits = "0123456789abcdef";
  std::random_device rd;  // the kernel's generator (getrandom) on Linux
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    auto b = static_cast<unsigned>(rd()) & 0xffu;
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

}  // namespace stripeback::util
