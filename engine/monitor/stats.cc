#include "engine/monitor/stats.h"
#include "util/option_words.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include <time.h>

namespace stripeback::engine {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

BusyClock::BusyClock() : start_(Clock::now()), last_(start_), cpu_start_(thread_cpu_seconds()) {}

void add_wait(catalog::WaitCounts& w, int64_t ns) {
  if (ns < catalog::kReadyWaitNs) ++w.ready;
  else if (ns < catalog::kShortWaitNs) ++w.short_waits;
  else ++w.long_waits;
  w.total_ns += ns;
  w.max_ns = std::max(w.max_ns, ns);
}

int32_t FileIoIndex::entry(const std::string& path, ChannelStats& s) {
  if (auto it = at_.find(path); it != at_.end()) return it->second;
  if (s.file_io.size() >= ChannelStats::kMaxFileIo) {
    if (path != last_dropped_) {
      ++s.file_io_dropped;
      last_dropped_ = path;
    }
    return -1;
  }
  const auto i = static_cast<int32_t>(s.file_io.size());
  at_.emplace(path, i);
  s.file_io.push_back({path, s.channel, {}, {}});
  return i;
}

void BusyClock::mark(bool reading, bool writing, bool waiting, ChannelStats& s) {
  auto now = Clock::now();
  const auto span = now - last_;
  double d = std::chrono::duration<double>(span).count();
  last_ = now;
  if (waiting && (reading || writing))
    pending_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(span).count();
  if (reading) s.read_busy_s += d;
  if (writing) s.write_busy_s += d;
  if (waiting) {
    s.wait_s += d;
    if (reading && writing) {
      s.wait_read_s += d / 2;
      s.wait_write_s += d / 2;
    } else if (reading) {
      s.wait_read_s += d;
    } else if (writing) {
      s.wait_write_s += d;
    }
  }
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

Verdict explain_verdict(const std::vector<ChannelStats>& channels, const VerdictInputs& in) {
  Verdict v;
  double elapsed = 0, wall = 0, cpu_s = 0;
  for (const auto& c : channels) {
    elapsed += c.elapsed_s;
    wall = std::max(wall, c.elapsed_s);
    v.read += c.read_busy_s;
    v.write += c.write_busy_s;
    cpu_s += c.cpu_s;
    v.compress += c.compress_s;
    v.encrypt += c.encrypt_s;
    v.page_checks += c.page_check_s;
    v.throttle += c.throttle_s;
    v.wait_read += c.wait_read_s;
    v.wait_write += c.wait_write_s;
    v.working += std::max(0.0, c.elapsed_s - c.wait_s);
  }
  if (elapsed <= 0) return v;
  if (in.bytes == 0) {
    v.stage = "nothing to do: no bytes were read";
    return v;
  }
  v.cpu = cpu_s;
  for (double* x : {&v.read, &v.write, &v.cpu, &v.compress, &v.encrypt, &v.page_checks,
                    &v.throttle, &v.wait_read, &v.wait_write, &v.working})
    *x /= elapsed;
  const unsigned cores = in.cores ? in.cores : std::max(1u, std::thread::hardware_concurrency());
  v.machine_cpu = wall > 0 ? cpu_s / (wall * cores) : 0;
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "of %zu channel(s)' time: working %.0f%% (CPU %.0f%%: compression %.0f%%, "
                "encryption %.0f%%, page checks %.0f%%), waiting for reads %.0f%%, for writes "
                "%.0f%%, throttled %.0f%%; reads in flight %.0f%%, writes %.0f%%; %.0f%% of %u "
                "core(s)",
                channels.size(), v.working * 100, v.cpu * 100, v.compress * 100, v.encrypt * 100,
                v.page_checks * 100, v.wait_read * 100, v.wait_write * 100, v.throttle * 100,
                v.read * 100, v.write * 100, v.machine_cpu * 100, cores);
  v.evidence = buf;
  const double other_cpu = std::max(0.0, v.cpu - v.compress - v.encrypt - v.page_checks);
  if (v.throttle > 0.3) {
    v.bound_by = "rate limit";
    v.stage = in.paced ? "duration pacing" : "throttle";
    v.suggestion = in.paced ? "the job is spread over its " + util::option_word("duration") + " (" +
                                  util::option_word("minimize_load") + "); without it, it would end sooner"
                            : "raise " + util::option_word("rate") + " / " + util::option_word("job_rate") +
                                  " if the devices have room";
  } else if (v.working > 0.6 || v.machine_cpu > 0.9) {
    // The channels seldom wait for I/O: their own work (on a core, or for one) sets the pace.
    v.bound_by = "cpu";
    const double top = std::max({v.compress, v.encrypt, v.page_checks, other_cpu});
    v.stage = top == v.compress ? "compression CPU"
              : top == v.encrypt ? "encryption CPU"
              : top == v.page_checks ? "page checks CPU"
                                     : "checksums CPU";
    // --compress auto is suggested only to a job that does not use it already.
    const std::string lower = in.compress_auto
                                  ? "a " + util::option_word("cpu_budget") + " for " +
                                        util::option_value_word("compress", "auto")
                                  : "a lower " + util::option_word("compress") + " level (or " +
                                        util::option_value_word("compress", "auto") + ")";
    if (v.machine_cpu > 0.9)
      v.suggestion = top == v.compress ? "every core is busy: " + lower +
                                             " will help, more channels will not"
                                       : "every core is busy: more channels will not help";
    else
      v.suggestion = top == v.compress ? lower + ", or more channels for the idle cores"
                                       : "more channels, for the idle cores";
  } else if (v.wait_read >= v.wait_write && v.wait_read > 0.3) {
    v.bound_by = "read";
    v.stage = "source read (" + in.source + ")";
    if (in.target_removable) {
      v.stage = "drive starved: " + v.stage;
      v.suggestion = "more multiplexing (" + util::option_word("files_per_set") + ", " +
                     util::option_word("max_open_files") + ") or channels, to keep the drive streaming";
    } else {
      v.suggestion = "more channels or " + util::option_word("buffers") +
                     ", if the source has room (fio shows its ceiling)";
    }
  } else if (v.wait_write > 0.3) {
    v.bound_by = "write";
    v.stage = in.target_removable ? "drive (writing as fast as it takes)"
                                  : "target write (" + (in.target.empty() ? std::string("none") : in.target) + ")";
    v.suggestion = in.target_removable ? "more drives (one channel each)"
                                       : "more channels, or a faster target";
  } else {
    v.bound_by = "balanced";
    v.stage = "balanced: no stage holds the channels back for most of the time";
    if (v.wait_read < 0.3 && v.wait_write < 0.3 && v.working < 0.3)
      v.suggestion = "more channels or more multiplexing: every stage has room";
  }
  return v;
}

}  // namespace stripeback::engine
