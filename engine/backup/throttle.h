// Throttling: a token bucket per channel (--rate) and one shared by the job (--job-rate,
// and the pace --minimize-load sets). A read takes its tokens before it is issued, so the
// read rate follows the limit smoothly, one buffer at a time, instead of in bursts.
//
// The burst is bounded: a bucket starts empty (the first read waits for its own tokens) and
// saves up at most `burst` bytes (one buffer) while its reader is idle. Over any interval of
// t seconds a bucket lets through at most rate * t + burst bytes, and from the start at most
// rate * t, so a backup of B bytes at rate R takes at least about B / R. Checking and taking
// are one step under the bucket's lock, so channels sharing a bucket never overdraw it.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace stripeback::engine {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  // rate 0 means unlimited. `burst` bounds the tokens saved up while idle; a request of more
  // than `burst` bytes waits only for `burst` of them and leaves the bucket in debt for the
  // rest, paid before the next request goes. Safe to call from any thread.
  TokenBucket(double rate_bytes_per_s, double burst_bytes);
  // Time until a request of `n` bytes may go (zero: now). Takes nothing.
  Clock::duration wait_time(uint64_t n);
  // Takes `n` bytes' worth when the request may go now and returns zero; otherwise takes
  // nothing and returns how long to wait.
  Clock::duration take(uint64_t n);
  void set_rate(double rate_bytes_per_s);
  double rate() const;

 private:
  void refill(Clock::time_point now);
  Clock::duration wait_locked(uint64_t n) const;
  mutable std::mutex mu_;
  double rate_, burst_, tokens_ = 0;
  Clock::time_point last_;
};

}  // namespace stripeback::engine
