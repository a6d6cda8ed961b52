#include "engine/tuning/read_probe.h"

#include <algorithm>
#include <chrono>
#include <latch>
#include <map>
#include <memory>
#include <thread>

#include "engine/wiring/backends.h"
#include "storage/async/buffer_pool.h"
#include "storage/io_loop.h"
#include "storage/registry.h"
#include "util/log.h"

namespace stripeback::engine {
namespace {

using Clock = std::chrono::steady_clock;

// How long a reader waits for one completion before it calls the medium stuck.
constexpr auto kStuck = std::chrono::seconds(60);

struct Run {
  size_t file = 0;  // index into the probe's files
  uint64_t offset = 0;
};

// The runs each reader of a round reads, and those of the round of `readers`.
uint64_t runs_per_reader(const ProbeOptions& o) {
  return std::max<uint64_t>(1, (o.reader_bytes + o.run - 1) / o.run);
}
uint64_t runs_per_round(const ProbeOptions& o, uint32_t readers) {
  return runs_per_reader(o) * std::max<uint32_t>(1, readers);
}
uint64_t runs_in_all(const ProbeOptions& o) {
  uint64_t n = 0;
  for (uint32_t c : o.counts) n += runs_per_round(o, c);
  return n;
}

// The runs of every round, round after round: run j is on file j % F (of the F largest
// files that can hold their share), the k-th run of a file at its k-th place of as many
// spread evenly over it. Empty when the files cannot hold them all.
std::vector<Run> layout(const std::vector<ProbeFile>& files, const ProbeOptions& o) {
  std::vector<size_t> order;
  for (size_t i = 0; i < files.size(); ++i)
    if (files[i].size >= o.run) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return files[a].size > files[b].size; });
  const uint64_t total = runs_in_all(o);
  for (size_t nf = std::min<size_t>(order.size(), 64); nf > 0; --nf) {
    bool fits = true;
    for (size_t f = 0; f < nf && fits; ++f)
      fits = (total - f + nf - 1) / nf <= files[order[f]].size / o.run;
    if (!fits) continue;
    std::vector<Run> runs;
    runs.reserve(total);
    for (uint64_t j = 0; j < total; ++j) {
      const size_t f = j % nf;
      const uint64_t k = j / nf, of_file = (total - f + nf - 1) / nf;
      const uint64_t slots = files[order[f]].size / o.run;
      runs.push_back({order[f], k * slots / of_file * o.run});
    }
    return runs;
  }
  return {};
}

struct ReaderResult {
  uint64_t bytes = 0;
  Result<void> status = ok();
  Clock::time_point last_read{};  // when its last read completed
};

// One reader: opens its files and registers its buffers, waits for the start, reads its runs
// with `depth` reads in flight, and drops its connections at the end. Only the reads are
// timed: setting a reader up and tearing its ring down (unregistering buffers waits for the
// kernel) are not what a job's channel pays per byte.
void read_runs(const std::vector<ProbeFile>& files, const std::vector<Run>& runs,
               const ProbeOptions& o, std::latch& ready, std::latch& go, ReaderResult& out) {
  storage::IoLoop loop(o.depth);
  std::map<size_t, std::unique_ptr<storage::ReadFile>> open;
  auto prepare = [&]() -> Result<io::BufferPool> {
    for (const Run& r : runs) {
      if (open.count(r.file)) continue;
      SB_ASSIGN(Place p, place_of(files[r.file].location));
      SB_ASSIGN(open[r.file], p.storage->open_read(p.at, {o.direct}));
    }
    return io::BufferPool::create(o.depth, o.io, 0);
  };
  auto pool = prepare();
  if (pool) loop.register_buffers({pool->region()});
  ready.count_down();
  go.wait();
  if (!pool) {
    out.status = pool.error();
    return;
  }
  std::vector<storage::Request> todo;
  for (const Run& r : runs)
    for (uint64_t at = 0; at < o.run; at += o.io)
      todo.push_back({open[r.file].get(), storage::OpKind::read, r.offset + at, nullptr, o.io, 0, 0});
  std::vector<storage::Completion> done(o.depth);
  size_t next = 0;
  while (out.status && (next < todo.size() || loop.in_flight() > 0)) {
    while (next < todo.size()) {
      auto slot = pool->acquire();
      if (!slot) break;
      storage::Request r = todo[next++];
      r.buf = pool->data(*slot);
      r.tag = *slot;
      if (auto s = loop.submit(r); !s) {
        out.status = s.error();
        break;
      }
    }
    const size_t n = loop.reap(done, 1, Clock::now() + kStuck);
    if (n == 0 && loop.in_flight() > 0)
      out.status = fail(Errc::timed_out, "read probe: no read completed in 60 s");
    for (size_t i = 0; i < n; ++i) {
      pool->release(static_cast<uint32_t>(done[i].tag));
      if (!done[i].result) out.status = done[i].result.error();
      else out.bytes += *done[i].result;
    }
  }
  out.last_read = Clock::now();
  loop.drain();
  loop.close();
  (void)thread_counters({});
}

Result<ProbeRound> probe_round(const std::vector<ProbeFile>& files, const std::vector<Run>& runs,
                               uint32_t readers, const ProbeOptions& o) {
  std::vector<std::vector<Run>> mine(readers);
  for (size_t i = 0; i < runs.size(); ++i) mine[i % readers].push_back(runs[i]);
  std::vector<ReaderResult> results(readers);
  std::latch ready(readers), go(1);
  std::vector<std::thread> threads;
  const auto log_sink = util::current_log_sink();
  const auto storages = storage::current_registry();
  for (uint32_t i = 0; i < readers; ++i)
    threads.emplace_back([&, i] {
      util::ScopedLogSink logs(log_sink);
      storage::ScopedRegistry registered(storages);
      read_runs(files, mine[i], o, ready, go, results[i]);
    });
  ready.wait();
  const auto t0 = Clock::now();
  go.count_down();
  for (auto& t : threads) t.join();
  ProbeRound round;
  round.readers = readers;
  Clock::time_point end = t0;
  for (const auto& r : results) end = std::max(end, r.last_read);
  round.seconds = std::chrono::duration<double>(end - t0).count();
  for (auto& r : results) {
    if (!r.status) return r.status.error().wrap("read probe with " + std::to_string(readers) +
                                                " reader(s)");
    round.bytes += r.bytes;
  }
  round.mb_per_s = round.seconds > 0 ? static_cast<double>(round.bytes) / 1e6 / round.seconds : 0;
  return round;
}

}  // namespace

uint64_t probe_bytes(const ProbeOptions& o) { return runs_in_all(o) * o.run; }

bool probe_fits(const std::vector<ProbeFile>& files, const ProbeOptions& o) {
  return !layout(files, o).empty();
}

Result<std::vector<ProbeRound>> probe_reads(const std::vector<ProbeFile>& files,
                                            const ProbeOptions& o) {
  const std::vector<Run> runs = layout(files, o);
  if (runs.empty()) return fail(Errc::invalid_argument, "read probe: the files are too small");
  std::vector<ProbeRound> rounds;
  size_t first = 0;
  for (uint32_t count : o.counts) {
    const size_t n = runs_per_round(o, count);
    const std::vector<Run> these(runs.begin() + static_cast<ptrdiff_t>(first),
                                 runs.begin() + static_cast<ptrdiff_t>(first + n));
    first += n;
    SB_ASSIGN(ProbeRound round, probe_round(files, these, std::max<uint32_t>(1, count), o));
    rounds.push_back(round);
  }
  return rounds;
}

}  // namespace stripeback::engine
