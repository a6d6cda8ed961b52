// Throttling: a token bucket per channel (--rate) and one shared by the job (--job-rate,
// and the pace --minimize-load sets). Reads take tokens before they are issued; a bucket in
// debt makes the channel wait, so the read rate follows the limit smoothly, one buffer at a
// time, instead of in bursts.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace stripeback::engine {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  // rate 0 means unlimited. `burst` bounds the tokens saved up while idle.
  TokenBucket(double rate_bytes_per_s, double burst_bytes);
  // Time until the bucket is out of debt (zero when a request may go now).
  Clock::duration wait_time();
  // Takes `n` bytes' worth; the bucket may go into debt by one request.
  void consume(uint64_t n);
  void set_rate(double rate_bytes_per_s);
  double rate() const;

 private:
  void refill(Clock::time_point now);
  mutable std::mutex mu_;
  double rate_, burst_, tokens_;
  Clock::time_point last_;
};

}  // namespace stripeback::engine
