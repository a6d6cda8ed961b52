#include "engine/stats.h"

#include <cstdio>

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
}

void BusyClock::finish(ChannelStats& s) {
  s.elapsed_s = std::chrono::duration<double>(Clock::now() - start_).count();
  s.cpu_s = thread_cpu_seconds() - cpu_start_;
}

void ChannelStats::to_json(util::JsonWriter& w) const {
  w.begin_object();
  w.kv("channel", channel);
  w.kv("io_engine", io_engine);
  w.kv("direct_source", direct_source);
  w.kv("direct_sink", direct_sink);
  w.kv("files", files);
  w.kv("bytes_read", bytes_read);
  w.kv("bytes_written", bytes_written);
  w.kv("frames", frames);
  w.kv("zero_frames", zero_frames);
  w.kv("reads", reads);
  w.kv("writes", writes);
  w.kv("pieces", pieces);
  w.kv("elapsed_s", elapsed_s);
  w.kv("read_busy_s", read_busy_s);
  w.kv("write_busy_s", write_busy_s);
  w.kv("wait_s", wait_s);
  w.kv("throttle_s", throttle_s);
  w.kv("cpu_s", cpu_s);
  w.kv("compress_in", bytes_compressed_in);
  w.kv("compress_out", bytes_compressed_out);
  w.kv("compress_s", compress_s);
  w.kv("encrypt_s", encrypt_s);
  w.begin_object("compress_levels");
  for (const auto& [level, bytes] : level_bytes) w.kv(std::to_string(level), bytes);
  w.end_object();
  if (tape) tape->to_json(w);
  w.end_object();
}

std::string TapeStats::to_text() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "    tape %s [%s I/O]: %.1f MB/s over %.2f s writing, %llu commands, %llu stalls "
                "(drive waited for data %.2f s), %llu waits for a free buffer (%.2f s), %u volume "
                "change(s)\n",
                drive.c_str(), async ? "async" : "sync", write_mb_s, write_s,
                static_cast<unsigned long long>(commands), static_cast<unsigned long long>(stalls),
                stall_s, static_cast<unsigned long long>(producer_waits), producer_wait_s,
                volume_changes);
  return buf;
}

void TapeStats::to_json(util::JsonWriter& w) const {
  w.begin_object("tape");
  w.kv("drive", drive);
  w.kv("io", async ? "async" : "sync");
  w.kv("bytes", bytes);
  w.kv("commands", commands);
  w.kv("write_s", write_s);
  w.kv("write_mb_s", write_mb_s);
  w.kv("stalls", stalls);
  w.kv("stall_s", stall_s);
  w.kv("producer_waits", producer_waits);
  w.kv("producer_wait_s", producer_wait_s);
  w.kv("volume_changes", volume_changes);
  w.end_object();
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
