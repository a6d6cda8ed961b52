#include "cli/nfs_bench.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <fstream>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "storage/async/buffer_pool.h"
#include "storage/async/file.h"
#include "storage/async/io_engine.h"
#include "backends/local/local_storage.h"
#if STRIPEBACK_WITH_NFS
#include "backends/nfs/nfs_fs.h"
#endif
#include "engine/wiring/backends.h"
#include "storage/io_loop.h"
#include "util/escape.h"
#include "util/json.h"
#include "util/units.h"

namespace stripeback::cli {
#if STRIPEBACK_WITH_NFS
namespace {

constexpr size_t kIo = 1 << 20;
constexpr long kNfsSuperMagic = 0x6969;
constexpr unsigned kOpsQueued = 8;  // 1 MiB ops per NFS channel; the client caps the wire

using Clock = std::chrono::steady_clock;

struct Sample {
  rusage ru{};
  uint64_t busy = 0, iowait = 0, total = 0;  // /proc/stat cpu ticks
  Clock::time_point t;
};

Sample sample() {
  Sample s;
  getrusage(RUSAGE_SELF, &s.ru);
  std::ifstream f("/proc/stat");
  std::string cpu;
  uint64_t v[10] = {};
  f >> cpu;
  for (auto& x : v) f >> x;
  for (auto x : v) s.total += x;
  s.iowait = v[4];
  s.t = Clock::now();
  return s;
}

double secs(const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; }

struct Run {
  std::string op, path;
  uint64_t bytes = 0;
  double wall_s = 0, user_s = 0, sys_s = 0, ctx_switches = 0, iowait_share = 0;
  std::string error;
  double gib() const { return static_cast<double>(bytes) / (1u << 30); }
  double mb_per_s() const { return util::mb_per_s(bytes, wall_s); }
  double cpu_per_gib() const { return gib() > 0 ? (user_s + sys_s) / gib() : 0; }
  double cs_per_gib() const { return gib() > 0 ? ctx_switches / gib() : 0; }
};

Run measure(const std::string& op, const std::string& path,
            const std::function<Result<uint64_t>()>& body) {
  Run r;
  r.op = op;
  r.path = path;
  Sample a = sample();
  auto bytes = body();
  Sample b = sample();
  r.wall_s = std::chrono::duration<double>(b.t - a.t).count();
  r.user_s = secs(b.ru.ru_utime) - secs(a.ru.ru_utime);
  r.sys_s = secs(b.ru.ru_stime) - secs(a.ru.ru_stime);
  r.ctx_switches = static_cast<double>((b.ru.ru_nvcsw + b.ru.ru_nivcsw) -
                                       (a.ru.ru_nvcsw + a.ru.ru_nivcsw));
  uint64_t total = b.total - a.total;
  r.iowait_share = total ? static_cast<double>(b.iowait - a.iowait) / static_cast<double>(total) : 0;
  if (bytes) r.bytes = *bytes;
  else r.error = bytes.error().what;
  return r;
}

// Runs `n` workers in parallel; sums their bytes, keeps the first error.
Result<uint64_t> parallel(unsigned n, const std::function<Result<uint64_t>(unsigned)>& work) {
  std::vector<Result<uint64_t>> res(n, uint64_t{0});
  std::vector<std::thread> ts;
  for (unsigned i = 0; i < n; ++i) ts.emplace_back([&, i] {
    res[i] = work(i);
    (void)nfs::nfs_storage().thread_counters(/*close_thread=*/true);
  });
  for (auto& t : ts) t.join();
  uint64_t sum = 0;
  for (auto& r : res) {
    if (!r) return r.error();
    sum += *r;
  }
  return sum;
}

storage::Location local_at(const std::string& path) { return storage::Location::local(path); }

// The kernel path: pread/pwrite of 1 MiB, O_DIRECT where the file system allows it.
Result<uint64_t> kernel_read(const std::string& path) {
  SB_ASSIGN(auto f, io::local_storage().open_read(local_at(path), {true}));
  SB_ASSIGN(auto pool, io::BufferPool::create(1, kIo, 4096));
  uint64_t off = 0;
  for (;;) {
    SB_ASSIGN(size_t n, f->read_at(pool.data(0), kIo, off));
    off += n;
    if (n < kIo) return off;
  }
}

Result<uint64_t> kernel_write(const std::string& path, uint64_t size) {
  SB_ASSIGN(auto f, io::local_storage().create(local_at(path), {true, 0644}));
  SB_ASSIGN(auto pool, io::BufferPool::create(1, kIo, 4096));
  std::memset(pool.data(0), 0x5a, kIo);
  for (uint64_t off = 0; off < size; off += kIo) SB_TRY(f->write_at(pool.data(0), kIo, off));
  SB_TRY(f->commit());
  return size;
}

// The user-space path: the channel's I/O loop with kOpsQueued ops of 1 MiB outstanding.
Result<uint64_t> nfs_transfer(const storage::Location& url, uint64_t size, bool write) {
  storage::Storage& st = nfs::nfs_storage();
  std::unique_ptr<storage::WriteFile> wf;
  std::unique_ptr<storage::ReadFile> rf;
  storage::File* file = nullptr;
  if (write) {
    SB_ASSIGN(wf, st.create(url, {false, 0644}));
    file = wf.get();
  } else {
    SB_ASSIGN(rf, st.open_read(url, {false}));
    SB_ASSIGN(const storage::FileInfo info, rf->stat());
    size = info.size;
    file = rf.get();
  }
  SB_ASSIGN(auto pool, io::BufferPool::create(kOpsQueued, kIo, 4096));
  for (uint32_t i = 0; i < kOpsQueued; ++i) std::memset(pool.data(i), 0x5a, kIo);
  storage::IoLoop loop(64);
  uint64_t next = 0, done = 0;
  std::vector<storage::Completion> comps(kOpsQueued);
  std::vector<uint32_t> free_slots;
  for (uint32_t i = 0; i < kOpsQueued; ++i) free_slots.push_back(i);
  while (done < size) {
    while (!free_slots.empty() && next < size) {
      uint32_t slot = free_slots.back();
      free_slots.pop_back();
      auto len = static_cast<uint32_t>(std::min<uint64_t>(kIo, size - next));
      SB_TRY(loop.submit({file, write ? storage::OpKind::write : storage::OpKind::read, next,
                          pool.data(slot), len, slot}));
      next += len;
    }
    size_t n = loop.reap(comps, 1, Clock::now() + std::chrono::seconds(1));
    for (size_t i = 0; i < n; ++i) {
      if (!comps[i].result) return comps[i].result.error().wrap(url.str());
      done += *comps[i].result;
      free_slots.push_back(static_cast<uint32_t>(comps[i].tag));
      if (!write && *comps[i].result == 0) return done;
    }
  }
  return done;
}

std::string name_of(unsigned i, const char* kind) {
  return "sbbench-" + std::string(kind) + std::to_string(i) + ".dat";
}

void print_table(const NfsBenchFlags& f, bool mount, const std::vector<Run>& runs) {
  std::printf("bench nfs: %u channel(s), %s per direction\n", f.channels,
              util::format_bytes(runs.empty() ? 0 : runs[0].bytes).c_str());
  std::printf("  kernel path: %s%s\n", util::escape_text(f.kernel_path).c_str(),
              mount ? " (a kernel NFS mount)"
                    : " (NOT an NFS mount: the kernel column measures local file I/O, e.g. "
                      "the export's own directory)");
  std::printf("  user-space:  %s\n", util::escape_text(f.nfs_url).c_str());
  for (size_t i = 0; i + 1 < runs.size(); i += 2) {
    const Run& k = runs[i];
    const Run& n = runs[i + 1];
    std::printf("\n  %-5s %22s %14s %14s %10s\n", k.op.c_str(), "", "kernel", "libnfs",
                "libnfs/kernel");
    auto row = [](const char* what, double a, double b, const char* fmt) {
      char ka[32], nb[32];
      std::snprintf(ka, sizeof ka, fmt, a);
      std::snprintf(nb, sizeof nb, fmt, b);
      std::printf("  %-28s %14s %14s %10.2f\n", what, ka, nb, a > 0 ? b / a : 0.0);
    };
    row("wall s", k.wall_s, n.wall_s, "%.2f");
    row("MB/s", k.mb_per_s(), n.mb_per_s(), "%.1f");
    row("CPU user+sys s/GiB", k.cpu_per_gib(), n.cpu_per_gib(), "%.3f");
    row("context switches/GiB", k.cs_per_gib(), n.cs_per_gib(), "%.0f");
    row("system iowait share", k.iowait_share, n.iowait_share, "%.3f");
  }
}

// The result as one JSON document: each run, and the ratios libnfs / kernel.
void print_json(const NfsBenchFlags& f, bool mount, uint64_t per, const std::vector<Run>& runs) {
  util::JsonWriter w;
  w.begin_object();
  w.kv("kernel_path", f.kernel_path);
  w.kv("kernel_is_nfs_mount", mount);
  w.kv("nfs_url", f.nfs_url);
  w.kv("channels", f.channels);
  w.kv("bytes_per_direction", per * f.channels);
  w.begin_array("runs");
  for (const Run& r : runs) {
    w.begin_object();
    w.kv("op", r.op);
    w.kv("path", r.path);
    w.kv("bytes", r.bytes);
    w.kv("wall_s", r.wall_s);
    w.kv("mb_per_s", r.mb_per_s());
    w.kv("cpu_user_s", r.user_s);
    w.kv("cpu_sys_s", r.sys_s);
    w.kv("cpu_s_per_gib", r.cpu_per_gib());
    w.kv("ctx_switches_per_gib", r.cs_per_gib());
    w.kv("iowait_share", r.iowait_share);
    w.end_object();
  }
  w.end_array();
  w.begin_object("ratios");  // libnfs / kernel
  for (size_t i = 0; i + 1 < runs.size(); i += 2) {
    const Run& k = runs[i];
    const Run& n = runs[i + 1];
    auto ratio = [](double a, double b) { return a > 0 ? b / a : 0.0; };
    w.begin_object(k.op);
    w.kv("mb_per_s", ratio(k.mb_per_s(), n.mb_per_s()));
    w.kv("cpu_s_per_gib", ratio(k.cpu_per_gib(), n.cpu_per_gib()));
    w.kv("ctx_switches_per_gib", ratio(k.cs_per_gib(), n.cs_per_gib()));
    w.end_object();
  }
  w.end_object();
  w.end_object();
  std::printf("%s\n", w.str().c_str());
}

}  // namespace
#endif

CLI::App* add_nfs_bench(CLI::App* bench, NfsBenchFlags& f, NfsFlags& nfs) {
  auto* app = bench->add_subcommand(
      "nfs",
      "read (and with --write, write) the same files through the kernel path and through "
      "the user-space NFS client; print wall time, MB/s, CPU s/GiB, context switches/GiB "
      "and system iowait for each, and the ratios");
  app->add_option("--kernel-path", f.kernel_path,
                  "directory of the export as the kernel sees it: a kernel NFS mount, or "
                  "(where there is none) the export's local directory")
      ->required();
  app->add_option("--nfs-url", f.nfs_url, "the same directory as an nfs:// URL")->required();
  app->add_option("--channels", f.channels, "parallel streams on each path (one file each)")
      ->default_val(2)
      ->check(CLI::Range(1, 64));
  app->add_option("--size", f.size, "total bytes per direction, split over the channels")
      ->default_val("1G");
  app->add_flag("--write", f.write, "also write new files through each path (then remove them)");
  app->add_flag("--json", f.json, "print the result as one JSON document on stdout");
  add_nfs_flags(app, nfs);
  return app;
}

int run_nfs_bench_cmd(const NfsBenchFlags& f) {
#if !STRIPEBACK_WITH_NFS
  print_error(engine::left_out("NFS", "STRIPEBACK_WITH_NFS", f.nfs_url).what);
  return kExitUsage;
#else
  auto size = util::parse_size(f.size);
  if (!size) {
    print_error("--size: " + size.error().what);
    return kExitUsage;
  }
  uint64_t per = (*size / f.channels + kIo - 1) / kIo * kIo;
  auto url = storage::Location::parse(f.nfs_url);
  if (!url || url->scheme != "nfs" || !nfs::nfs_storage().stat(*url, false)) {
    std::string why = !url ? url.error().what
                      : url->scheme != "nfs"
                          ? std::string("not an nfs:// URL")
                          : nfs::nfs_storage().stat(*url, false).error().what;
    print_error("--nfs-url '" + f.nfs_url + "' is not usable: " + why);
    return kExitUsage;
  }
  storage::Storage& nst = nfs::nfs_storage();
  storage::Storage& lst = io::local_storage();
  struct statfs sfs {};
  if (::statfs(f.kernel_path.c_str(), &sfs) != 0) {
    const int err = errno;
    print_error("--kernel-path '" + f.kernel_path + "' is not usable: " + std::strerror(err));
    return kExitUsage;
  }
  const bool mount = sfs.f_type == kNfsSuperMagic;

  // The read set: one file per channel, made (through the kernel path) when missing.
  for (unsigned i = 0; i < f.channels; ++i) {
    std::string p = f.kernel_path + "/" + name_of(i, "r");
    auto st = lst.stat(local_at(p), false);
    if (st && st->size == per) continue;
    if (st) (void)lst.remove(local_at(p));
    if (auto r = kernel_write(p, per); !r) {
      print_error(r.error().what);
      return kExitFailed;
    }
  }
  std::vector<Run> runs;
  runs.push_back(measure("read", "kernel", [&] {
    return parallel(f.channels, [&](unsigned i) { return kernel_read(f.kernel_path + "/" + name_of(i, "r")); });
  }));
  runs.push_back(measure("read", "libnfs", [&] {
    return parallel(f.channels, [&](unsigned i) {
      return nfs_transfer(url->join(name_of(i, "r")), 0, false);
    });
  }));
  if (f.write) {
    // Leftovers of an interrupted run, each through the path that wrote it.
    for (unsigned i = 0; i < f.channels; ++i) {
      if (lst.stat(local_at(f.kernel_path + "/" + name_of(i, "wk")), false))
        (void)lst.remove(local_at(f.kernel_path + "/" + name_of(i, "wk")));
      if (nst.stat(url->join(name_of(i, "wn")), false))
        (void)nst.remove(url->join(name_of(i, "wn")));
    }
    runs.push_back(measure("write", "kernel", [&] {
      return parallel(f.channels, [&](unsigned i) { return kernel_write(f.kernel_path + "/" + name_of(i, "wk"), per); });
    }));
    runs.push_back(measure("write", "libnfs", [&] {
      return parallel(f.channels, [&](unsigned i) {
        return nfs_transfer(url->join(name_of(i, "wn")), per, true);
      });
    }));
    // Written files go through the path that wrote them (never behind the server's back).
    for (unsigned i = 0; i < f.channels; ++i) {
      (void)lst.remove(local_at(f.kernel_path + "/" + name_of(i, "wk")));
      (void)nst.remove(url->join(name_of(i, "wn")));
    }
  }
  for (const Run& r : runs)
    if (!r.error.empty()) {
      print_error("bench nfs " + r.op + " through " + r.path + " failed: " + r.error);
      return kExitFailed;
    }
  if (!f.json) {
    print_table(f, mount, runs);
    return kExitOk;
  }
  print_json(f, mount, per, runs);
  return kExitOk;
#endif
}

}  // namespace stripeback::cli
