// The channels at work: one thread each over the job's sets, the job's rate limit and
// deadline shared, each piece recorded in the catalog as soon as it is durable, and with
// --minimize-load a pacer beside them.
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/backup/backup_job_state.h"
#include "engine/format/piece_name.h"
#include "storage/registry.h"
#include "util/log.h"

namespace stripeback::engine::backup_internal {
namespace {

// --minimize-load: every quarter second, set the job's rate to what finishes the remaining
// bytes a little before the deadline.
class Pacer {
 public:
  Pacer(TokenBucket& bucket, uint64_t total, const std::atomic<uint64_t>& done,
        std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point deadline,
        double cap)
      : thread_([this, &bucket, total, &done, start, deadline, cap] {
          auto window = deadline - start;
          // Aim to end at 95% of the window, at least 1 s before the deadline.
          auto target = start + std::min<std::chrono::steady_clock::duration>(
                                    window * 95 / 100, window - std::chrono::seconds(1));
          if (target <= start) target = start + window / 2;
          std::unique_lock lock(mu_);
          while (!stop_) {
            auto now = std::chrono::steady_clock::now();
            double left = std::chrono::duration<double>(target - now).count();
            uint64_t d = done.load(std::memory_order_relaxed);
            double remaining = total > d ? static_cast<double>(total - d) : 0.0;
            double rate = left > 0.05 ? remaining / left : 0.0;  // 0: unlimited, catch up
            if (rate > 0) rate = std::max(rate, 64.0 * 1024);
            if (cap > 0) rate = rate > 0 ? std::min(rate, cap) : cap;
            bucket.set_rate(rate);
            cv_.wait_for(lock, std::chrono::milliseconds(250));
          }
        }) {}
  ~Pacer() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// How each channel runs, from the options and the job's choices.
ChannelConfig channel_config(const BackupJob& job) {
  const BackupOptions& opts = job.opts;
  ChannelConfig config = opts.channel;
  config.buffers = job.buffers.buffers;
  config.buffer_size = job.buffers.buffer_size;
  if (opts.auto_channels) config.cpu_budget /= job.channels;  // given for the whole job
  if (opts.partial) config.read_order = ReadOrder::set_order;
  if (opts.media || opts.validate_only) {
    // Removable media are not resumed (a checkpoint would only add files to the medium), and
    // a validation writes no piece.
    config.checkpoint_bytes = 0;
    config.checkpoint_interval = std::chrono::milliseconds(0);
  }
  return config;
}

// Runs every channel on a thread of its own (with the caller's log sink and storages) and
// returns when all have ended.
void run_threads(BackupJob& job, const BackupContext& ctx) {
  std::vector<std::thread> threads;
  const auto log_sink = util::current_log_sink();
  const auto storages = storage::current_registry();
  for (uint32_t c = 0; c < job.channels; ++c)
    threads.emplace_back([&, c] {
      util::ScopedLogSink logs(log_sink);
      storage::ScopedRegistry registered(storages);
      job.outcomes[c] = run_backup_channel(ctx, c + 1);
    });
  for (auto& t : threads) t.join();
}

}  // namespace

Result<Next> run_channels(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  WorkQueue queue(job.sets, job.channels);
  BackupContext ctx;
  ctx.backup_id = job.id;
  ctx.catalog_id = job.cat.identity();
  ctx.targets = job.targets;
  ctx.job_start = job.start;
  ctx.stamp = job.stamp = make_piece_stamp();
  ctx.queue = &queue;
  ctx.cancel = opts.cancel;
  ctx.abort = &job.abort;
  ctx.config = job.channel = channel_config(job);
  ctx.keys = opts.keys.get();
  ctx.lock = job.lock;
  ctx.validator = job.validator.get();
  ctx.validate_only = opts.validate_only;
  if (opts.level) {
    ctx.change_unit = opts.change_unit;
    ctx.parents = &job.parents;
  }
  std::atomic<uint64_t> bytes_done{0};
  ctx.bytes_done = &bytes_done;
  // Each piece is recorded as soon as it is durable: a resume keeps what a killed job made.
  if (!opts.validate_only)
    ctx.piece_durable = [&job](const catalog::PieceRecord& p) {
      auto r = job.cat.add_piece(job.id, p, {});
      std::lock_guard lock(job.recorded.mu);
      if (r)
        job.recorded.names.insert(p.name);
      else
        job.recorded.errors.push_back(r.error());
    };
  std::unique_ptr<TokenBucket> job_bucket;
  if (opts.job_rate > 0 || opts.minimize_load) {
    job_bucket =
        std::make_unique<TokenBucket>(opts.job_rate, static_cast<double>(job.buffers.buffer_size));
    ctx.job_bucket = job_bucket.get();
  }
  if (opts.duration) ctx.deadline = job.start + *opts.duration;
  ctx.progress = opts.progress;
  if (opts.progress) {
    opts.progress->set_id(job.id);
    opts.progress->start(job.channels, job.plan.total_bytes);
  }
  job.outcomes.resize(job.channels);
  std::unique_ptr<Pacer> pacer;
  if (opts.minimize_load)
    pacer = std::make_unique<Pacer>(*job_bucket, job.plan.total_bytes, bytes_done, job.start,
                                    *ctx.deadline, opts.job_rate);
  run_threads(job, ctx);
  return Next::go_on;
}

}  // namespace stripeback::engine::backup_internal
