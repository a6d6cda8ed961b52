#include "engine/stats.h"

#include <algorithm>

#include <time.h>

namespace stripeback::engine {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

BusyClock::BusyClock() : start_(Clock::now()), last_(start_), cpu_start_(thread_cpu_seconds()) {}

void BusyClock::mark(bool reading, bool writing, bool waiting, ChannelStats& s) {
  auto now = Clock::now();
  double d = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  if (reading) s.read_busy_s += d;
  if (writing) s.write_busy_s += d;
  if (waiting) s.wait_s += d;
  if (progress_)
    progress_->set(waiting   ? ChannelState::working
                   : reading ? ChannelState::reading
                   : writing ? ChannelState::writing
                             : ChannelState::idle);
}

void BusyClock::finish(ChannelStats& s, Clock::time_point job_start) {
  note(ChannelState::done);
  s.elapsed_s = std::chrono::duration<double>(Clock::now() - start_).count();
  s.start_s = std::max(0.0, std::chrono::duration<double>(start_ - job_start).count());
  s.cpu_s = thread_cpu_seconds() - cpu_start_;
}

std::string verdict(const std::vector<ChannelStats>& channels) {
  double elapsed = 0, rd = 0, wr = 0, cpu = 0;
  for (const auto& c : channels) {
    elapsed += c.elapsed_s;
    rd += c.read_busy_s;
    wr += c.write_busy_s;
    cpu += c.cpu_s;
  }
  if (elapsed <= 0) return "none";
  double throttle = 0;
  for (const auto& ch : channels) throttle += ch.throttle_s;
  if (throttle / elapsed > 0.3) return "rate limit";
  // The stage busy for the largest share of the channels' time is the one to look at.
  double r = rd / elapsed, w = wr / elapsed, c = cpu / elapsed;
  if (c > 0.8 && c >= r && c >= w) return "cpu";
  if (r > 0.8 && r >= w) return "read";
  if (w > 0.8 && w >= r) return "write";
  return "balanced";
}

}  // namespace stripeback::engine
