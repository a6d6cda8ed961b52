#include "engine/stats.h"

#include <cstdio>

#include <time.h>

#include <cstdio>

#include "io/remote.h"
#include "util/escape.h"

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
  if (nfs) nfs->to_json(w);
  w.end_object();
}

std::string TapeStats::to_text() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "    tape %s [%s I/O]: %.1f MB/s over %.2f s writing, %llu commands, %llu stalls "
                "(drive waited for data %.2f s), %llu waits for a free buffer (%.2f s), %u volume "
                "change(s)\n",
                util::escape_text(drive).c_str(), async ? "async" : "sync", write_mb_s, write_s,
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

void NfsChannelStats::to_json(util::JsonWriter& w) const {
  w.begin_object("nfs");
  w.kv("servers", servers);
  w.kv("rpcs", rpcs);
  w.kv("bytes_read", bytes_read);
  w.kv("bytes_written", bytes_written);
  w.kv("retries", retries);
  w.kv("reconnects", reconnects);
  w.kv("commits", commits);
  w.kv("rewritten_bytes", rewritten);
  w.kv("avg_latency_ms", avg_latency_ms);
  w.kv("max_latency_ms", max_latency_ms);
  w.kv("read_size", static_cast<uint64_t>(read_size));
  w.kv("write_size", static_cast<uint64_t>(write_size));
  w.end_object();
}

std::string NfsChannelStats::to_text() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "    nfs %s: %llu RPCs (%u KiB reads, %u KiB writes), %.1f MiB read, %.1f MiB "
                "written, %llu commits, %.1f MiB rewritten, %llu retries, %llu reconnects, "
                "latency avg %.2f ms, worst %.2f ms\n",
                util::escape_text(servers).c_str(), static_cast<unsigned long long>(rpcs),
                read_size / 1024,
                write_size / 1024, static_cast<double>(bytes_read) / (1 << 20),
                static_cast<double>(bytes_written) / (1 << 20),
                static_cast<unsigned long long>(commits), static_cast<double>(rewritten) / (1 << 20),
                static_cast<unsigned long long>(retries),
                static_cast<unsigned long long>(reconnects), avg_latency_ms, max_latency_ms);
  return buf;
}

void collect_nfs_stats(ChannelStats& s) {
  io::RemoteFs* fs = io::remote_fs();
  if (fs == nullptr) return;
  io::RemoteStats r = fs->thread_stats();
  fs->close_thread();
  if (r.servers.empty()) return;
  NfsChannelStats n;
  n.servers = r.servers;
  n.rpcs = r.rpcs;
  n.bytes_read = r.bytes_read;
  n.bytes_written = r.bytes_written;
  n.retries = r.retries;
  n.reconnects = r.reconnects;
  n.commits = r.commits;
  n.rewritten = r.rewritten;
  n.avg_latency_ms = r.rpcs ? 1000.0 * r.latency_sum_s / static_cast<double>(r.rpcs) : 0;
  n.max_latency_ms = 1000.0 * r.latency_max_s;
  n.read_size = r.max_read;
  n.write_size = r.max_write;
  s.nfs = n;
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
