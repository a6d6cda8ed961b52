#include "engine/backup_job.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <thread>

#include "engine/planner.h"
#include "io/file.h"
#include "util/json.h"
#include "util/units.h"

namespace stripeback::engine {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string make_stamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  std::random_device rd;
  char rnd[8];
  std::snprintf(rnd, sizeof rnd, "%04x", rd() & 0xffff);
  return std::string(buf) + "-" + rnd;
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

Result<void> check_options(const BackupOptions& o) {
  if (o.channels < 1 || o.channels > 256)
    return fail(Errc::invalid_argument, "--channels must be between 1 and 256");
  if (o.destination.empty()) return fail(Errc::invalid_argument, "no destination given (--to)");
  if (o.channel.buffers < 2 || o.channel.buffers > 4096)
    return fail(Errc::invalid_argument, "--buffers must be between 2 and 4096");
  if (o.channel.buffer_size < 4096 || o.channel.buffer_size % 4096 != 0 ||
      o.channel.buffer_size > (64u << 20))
    return fail(Errc::invalid_argument,
                "--buffer-size must be a multiple of 4 KiB between 4 KiB and 64 MiB");
  return ok();
}

}  // namespace

Result<BackupSummary> run_backup(const BackupOptions& opts, catalog::Catalog& cat) {
  SB_TRY(check_options(opts));
  SB_ASSIGN(Plan plan, make_plan(opts.sources));
  std::string dest = normal_path(opts.destination);
  if (auto r = io::make_dirs(dest); !r)
    return fail(Errc::invalid_argument, "backup destination is not usable: " + r.error().what);
  if (::access(dest.c_str(), W_OK) != 0)
    return sys_error(errno, "backup destination '" + dest + "' is not writable")
        .wrap("backup destination is not usable");

  auto start = std::chrono::steady_clock::now();
  catalog::BackupBegin begin;
  begin.tag = opts.tag;
  begin.start_time_ns = now_ns();
  begin.destination = dest;
  for (const auto& s : opts.sources) begin.sources.push_back(normal_path(s));
  begin.channels = opts.channels;
  begin.host = hostname();
  begin.pid = static_cast<int32_t>(::getpid());
  SB_ASSIGN(uint64_t id, cat.begin_backup(begin));

  WorkQueue queue(plan.files);
  BackupContext ctx;
  ctx.backup_id = id;
  ctx.dest_dir = dest;
  ctx.stamp = make_stamp();
  ctx.queue = &queue;
  ctx.catalog = &cat;
  ctx.cancel = opts.cancel;
  std::atomic<bool> abort{false};
  ctx.abort = &abort;
  ctx.config = opts.channel;

  std::vector<ChannelOutcome> outcomes(opts.channels);
  std::vector<std::thread> threads;
  for (uint32_t c = 0; c < opts.channels; ++c)
    threads.emplace_back([&, c] { outcomes[c] = run_backup_channel(ctx, c + 1); });
  for (auto& t : threads) t.join();

  BackupSummary sum;
  sum.backup_id = id;
  bool first_is_secondary = false;  // the error kept so far only echoes another channel's
  sum.skipped = plan.skipped;
  for (auto& o : outcomes) {
    sum.channels.push_back(o.stats);
    sum.files += o.stats.files;
    sum.bytes_read += o.stats.bytes_read;
    sum.bytes_written += o.stats.bytes_written;
    sum.pieces += static_cast<uint32_t>(o.pieces.size());
    for (auto& w : o.warnings) sum.warnings.push_back(w);
    if (!o.status && (sum.error.empty() || first_is_secondary)) {
      first_is_secondary = o.status.error().code == Errc::cancelled && abort.load();
      sum.error = o.status.error().what;
    }
  }
  sum.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (sum.error.empty() && !plan.dirs.empty()) {
    std::vector<catalog::FileRecord> dirs;
    for (const auto& d : plan.dirs)
      dirs.push_back({d.path, 0, d.mode, d.mtime_ns, d.uid, d.gid, {}, {}});
    if (auto r = cat.add_files(id, dirs); !r) sum.error = r.error().what;
  }

  catalog::BackupEnd end;
  end.status = sum.error.empty() ? catalog::BackupStatus::complete : catalog::BackupStatus::failed;
  end.end_time_ns = now_ns();
  end.files = sum.files;
  end.bytes_read = sum.bytes_read;
  end.bytes_written = sum.bytes_written;
  end.pieces = sum.pieces;
  end.message = sum.error;
  sum.status = sum.error.empty() ? "complete" : "failed";
  if (auto r = cat.end_backup(id, end); !r) {
    sum.status = "failed";
    sum.error = r.error().what;
  }
  return sum;
}

std::string BackupSummary::to_json() const {
  util::JsonWriter w;
  w.begin_object();
  w.kv("backup_id", backup_id);
  w.kv("status", status);
  if (!error.empty()) w.kv("error", error);
  w.kv("files", files);
  w.kv("bytes_read", bytes_read);
  w.kv("bytes_written", bytes_written);
  w.kv("pieces", pieces);
  w.kv("elapsed_s", elapsed_s);
  w.kv("mb_per_s", util::mb_per_s(bytes_read, elapsed_s));
  w.kv("bound_by", verdict(channels));
  w.begin_array("channels");
  for (const auto& c : channels) c.to_json(w);
  w.end_array();
  w.begin_array("skipped");
  for (const auto& s : skipped) {
    w.begin_object();
    w.kv("path", s.path);
    w.kv("reason", s.why);
    w.end_object();
  }
  w.end_array();
  w.begin_array("warnings");
  for (const auto& s : warnings) w.value(s);
  w.end_array();
  w.end_object();
  return w.str();
}

std::string BackupSummary::to_text() const {
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "backup %llu %s: %llu files, %s read, %s written, %u pieces, %.2f s, %.1f MB/s "
                "(bound by %s)\n",
                static_cast<unsigned long long>(backup_id), status.c_str(),
                static_cast<unsigned long long>(files), util::format_bytes(bytes_read).c_str(),
                util::format_bytes(bytes_written).c_str(), pieces, elapsed_s,
                util::mb_per_s(bytes_read, elapsed_s), verdict(channels).c_str());
  s += buf;
  for (const auto& c : channels) {
    std::snprintf(buf, sizeof buf,
                  "  channel %u [%s%s]: %llu files, %s read, %s written, %.2f s: reading %.2f s, "
                  "writing %.2f s, waiting %.2f s, cpu %.2f s\n",
                  c.channel, c.io_engine.c_str(), c.direct_source ? ", O_DIRECT" : "",
                  static_cast<unsigned long long>(c.files),
                  util::format_bytes(c.bytes_read).c_str(),
                  util::format_bytes(c.bytes_written).c_str(), c.elapsed_s, c.read_busy_s,
                  c.write_busy_s, c.wait_s, c.cpu_s);
    s += buf;
  }
  for (const auto& k : skipped) s += "  skipped '" + k.path + "': " + k.why + "\n";
  for (const auto& wmsg : warnings) s += "  warning: " + wmsg + "\n";
  if (!error.empty()) s += "error: " + error + "\n";
  return s;
}

}  // namespace stripeback::engine
