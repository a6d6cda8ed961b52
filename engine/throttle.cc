#include "engine/throttle.h"

#include <algorithm>

namespace stripeback::engine {

TokenBucket::TokenBucket(double rate, double burst)
    : rate_(rate), burst_(burst), tokens_(burst), last_(Clock::now()) {}

void TokenBucket::refill(Clock::time_point now) {
  double dt = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  tokens_ = std::min(burst_, tokens_ + dt * rate_);
}

TokenBucket::Clock::duration TokenBucket::wait_time() {
  std::lock_guard lock(mu_);
  if (rate_ <= 0) return Clock::duration::zero();
  refill(Clock::now());
  if (tokens_ >= 0) return Clock::duration::zero();
  auto wait = std::chrono::duration<double>(-tokens_ / rate_);
  return std::max<Clock::duration>(std::chrono::duration_cast<Clock::duration>(wait),
                                   std::chrono::microseconds(100));
}

void TokenBucket::consume(uint64_t n) {
  std::lock_guard lock(mu_);
  if (rate_ <= 0) return;
  refill(Clock::now());
  tokens_ -= static_cast<double>(n);
}

void TokenBucket::set_rate(double rate) {
  std::lock_guard lock(mu_);
  refill(Clock::now());
  rate_ = rate;
}

double TokenBucket::rate() const {
  std::lock_guard lock(mu_);
  return rate_;
}

}  // namespace stripeback::engine
