#include "engine/backup/throttle.h"

#include <algorithm>

namespace stripeback::engine {

TokenBucket::TokenBucket(double rate, double burst)
    : rate_(rate), burst_(burst), last_(Clock::now()) {}

void TokenBucket::refill(Clock::time_point now) {
  double dt = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  tokens_ = std::min(burst_, tokens_ + dt * rate_);
}

TokenBucket::Clock::duration TokenBucket::wait_locked(uint64_t n) const {
  double need = std::min(static_cast<double>(n), burst_);
  if (rate_ <= 0 || tokens_ >= need) return Clock::duration::zero();
  auto wait = std::chrono::duration<double>((need - tokens_) / rate_);
  // Never a zero wait while short of tokens: the caller would spin.
  return std::max<Clock::duration>(std::chrono::duration_cast<Clock::duration>(wait),
                                   std::chrono::microseconds(100));
}

TokenBucket::Clock::duration TokenBucket::wait_time(uint64_t n) {
  std::lock_guard lock(mu_);
  if (rate_ <= 0) return Clock::duration::zero();
  refill(Clock::now());
  return wait_locked(n);
}

TokenBucket::Clock::duration TokenBucket::take(uint64_t n) {
  std::lock_guard lock(mu_);
  if (rate_ <= 0) return Clock::duration::zero();
  refill(Clock::now());
  auto wait = wait_locked(n);
  if (wait == Clock::duration::zero()) tokens_ -= static_cast<double>(n);
  return wait;
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
