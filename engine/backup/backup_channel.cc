// The channel's loop: it sets up the buffers, keeps reads in flight (channel_reads.cc), hands
// each completion to the read or write it finishes, closes pieces at checkpoints and at the
// end (channel_pieces.cc), and counts what it waited for. See channel_state.h.
#include "engine/backup/backup_channel.h"

#include <algorithm>
#include <thread>

#include "engine/backup/channel_state.h"
#include "engine/wiring/backends.h"

namespace stripeback::engine {
namespace backup_internal {

BackupChannel::BackupChannel(const BackupContext& ctx, uint32_t channel)
    : ctx_(ctx),
      channel_(channel),
      bucket_(ctx.config.rate, static_cast<double>(ctx.config.buffer_size)),
      target_(ctx.targets[(channel - 1) % ctx.targets.size()]),
      loop_(ctx.config.queue_depth) {
  out_.stats.channel = channel;
  out_.stats.buffers = static_cast<uint32_t>(ctx.config.buffers);
  out_.stats.buffer_size = static_cast<uint32_t>(ctx.config.buffer_size);
  if (ctx.progress) clock_.attach(ctx.progress->channel(channel));
}

ChannelOutcome BackupChannel::run() {
  auto st = run_loop();
  if (!st && ctx_.abort && st.error().code != Errc::cancelled) ctx_.abort->store(true);
  if (st) st = finish_pieces();
  if (!st) {
    for (auto& p : pieces_.list)
      if (p->writer) p->writer->abandon();  // held writes of a sequential file fail now
    loop_.drain();
    for (auto& p : pieces_.list) {
      if (!p->writer) continue;
      if (target_.storage->caps().directories)
        out_.unfinished.push_back({target_.dir.str(), p->writer->name(), p->written_end});
      p->writer.reset();
    }
  }
  clock_.finish(out_.stats, ctx_.job_start);
  out_.stats.pages_checked = out_.pages.checked;
  out_.stats.pages_retried = out_.pages.retried;
  out_.stats.pages_corrupt = out_.pages.corrupt.size();
  out_.stats.io_engine = loop_.names();
  out_.stats.multiplexing = std::max<uint32_t>(1, units_.most);
  loop_.drain();
  loop_.close();  // before the thread's connections go
  out_.stats.backends = thread_counters({target_.storage});
  out_.status = st;
  return std::move(out_);
}

Result<void> BackupChannel::setup() {
  // Encrypted frames need room for the tag after the data (in the padding block).
  size_t tail = ctx_.keys ? kBlock : 0;
  SB_ASSIGN(auto pool,
            io::BufferPool::create(ctx_.config.buffers, ctx_.config.buffer_size + tail, kBlock));
  buffers_.pool = std::make_unique<io::BufferPool>(std::move(pool));
  buffers_.slots.resize(buffers_.pool->count());
  if (ctx_.config.compress_level != 0) {
    // One output buffer per slot: a compressed frame goes out from there.
    int level = ctx_.config.compress_level;
    if (level == kCompressAuto) {
      framing_.auto_level = std::make_unique<AutoLevel>(ctx_.config.cpu_budget);
      level = framing_.auto_level->level();
      framing_.window = Framing::Window{std::chrono::steady_clock::now(), 0, 0, 0};
    }
    framing_.compressor = std::make_unique<Compressor>(level);
    size_t cap = align_up(Compressor::bound(ctx_.config.buffer_size)) + tail;
    SB_ASSIGN(auto cpool, io::BufferPool::create(buffers_.pool->count(), cap, kBlock));
    buffers_.packed = std::make_unique<io::BufferPool>(std::move(cpool));
  }
  // Region 0: the read buffers (and uncompressed frames); 1: compressed frames.
  std::vector<std::pair<std::byte*, size_t>> regions{buffers_.pool->region()};
  if (buffers_.packed) regions.push_back(buffers_.packed->region());
  loop_.register_buffers(std::move(regions));
  return ok();
}

bool BackupChannel::past_deadline() const {
  return ctx_.deadline && std::chrono::steady_clock::now() >= *ctx_.deadline;
}

Result<void> BackupChannel::run_loop() {
  SB_TRY(setup());
  std::vector<storage::Completion> comps(64);
  while (true) {
    if (ctx_.cancel && ctx_.cancel->load()) return fail(Errc::cancelled, "backup cancelled");
    if (ctx_.abort && ctx_.abort->load())
      return fail(Errc::cancelled, "stopped because another channel failed");
    if (!stopping_ && past_deadline()) {
      stopping_ = true;
      out_.deadline_hit = true;
    }
    if (!stopping_ && !draining_ && checkpoint_due()) draining_ = true;
    Clock::duration throttle{};
    if (!stopping_ && !draining_) {
      SB_ASSIGN(throttle, issue_reads());
    }
    if (draining_ && loop_.in_flight() == 0) {
      // Everything read so far is in the open piece: it closes with each file's frames
      // up to where its reads stopped, so a resume can keep them (resume.h).
      draining_ = false;
      if (!pieces_.list.empty() && !pieces_.list.back()->closing && pieces_.list.back()->writer) {
        pieces_.list.back()->closing = true;
        ++out_.stats.checkpoints;
      }
    }
    SB_TRY(close_pieces());
    if (loop_.in_flight() == 0) {
      if (stopping_ || (units_.queue_done && units_.open.empty())) return ok();
      if (throttle > Clock::duration::zero()) wait_for_tokens(throttle);
      continue;
    }
    auto timeout = throttle > Clock::duration::zero()
                       ? std::min<Clock::duration>(throttle, kIdleWait)
                       : Clock::duration(kIdleWait);
    clock_.mark(in_flight_.reads > 0, in_flight_.writes > 0, false, out_.stats);
    size_t n = loop_.reap(comps, 1, Clock::now() + timeout);
    clock_.mark(in_flight_.reads > 0, in_flight_.writes > 0, true, out_.stats);
    for (size_t i = 0; i < n; ++i) SB_TRY(handle(comps[i]));
  }
}

// Nothing in flight and no tokens: this wait is the rate limit at work.
void BackupChannel::wait_for_tokens(Clock::duration throttle) {
  clock_.mark(false, false, false, out_.stats);
  clock_.note(ChannelState::throttled);
  std::this_thread::sleep_for(std::min<Clock::duration>(throttle, kIdleWait));
  auto t0 = out_.stats.wait_s;
  clock_.mark(false, false, true, out_.stats);
  out_.stats.throttle_s += out_.stats.wait_s - t0;
}

// A completion finishes a metadata write, a read, or a frame write (the slot says which).
Result<void> BackupChannel::handle(const storage::Completion& c) {
  if (c.tag >= kMetaTag) return meta_written(c);
  auto slot = static_cast<uint32_t>(c.tag & kSlotMask);
  if (!buffers_.slots[slot].writing) return read_done(slot, c);
  return frame_written(slot, c);
}

}  // namespace backup_internal

ChannelOutcome run_backup_channel(const BackupContext& ctx, uint32_t channel) {
  return backup_internal::BackupChannel(ctx, channel).run();
}

}  // namespace stripeback::engine
