#include "engine/restore/restore_channel.h"

#include <algorithm>
#include <cstring>

#include "engine/transform/compress.h"
#include "engine/wiring/backends.h"
#include "storage/async/buffer_pool.h"
#include "storage/io_loop.h"
#include "util/crash_point.h"

namespace stripeback::engine {
namespace {

using storage::Clock;

struct Slot {
  const PartExtent* pe = nullptr;
  bool writing = false;
  std::vector<uint32_t> lens;  // bytes of each file write from the slot
  uint32_t writes_left = 0;
};

// Completion tags: the slot, and the index of the write among the slot's.
constexpr int kWriteShift = 32;

// The buffer region registered with the channel's loop: frames as read.
constexpr int16_t kFrameRegion = 0;

class ChunkRestore {
 public:
  ChunkRestore(const RestoreContext& ctx, storage::IoLoop& loop, io::BufferPool& pool,
               io::BufferPool& scratch, Decompressor& dz, ChannelStats& stats, BusyClock& clock)
      : ctx_(ctx), loop_(loop), pool_(pool), scratch_(scratch), dz_(dz), stats_(stats),
        clock_(clock), slots_(pool.count()) {}

  // Restores one chunk. When it was the file's last, finishes (or, after a failure
  // anywhere in the file, removes) the file and returns true in *finished with the
  // file's outcome in the result.
  Result<void> run(const RestoreChunk& c, bool* finished) {
    FileState& f = *c.file;
    *finished = false;
    bool go = false;
    {
      std::lock_guard lock(f.mu);
      if (!f.opened && !f.failed) {
        f.opened = true;
        if (auto r = open_restore_file(ctx_, f); !r) fail_file(f, r.error());
      }
      go = !f.failed;
    }
    if (go) {
      auto r = pump(f, c);
      if (!r) {
        drain();
        std::lock_guard lock(f.mu);
        fail_file(f, r.error());
      }
    }
    std::lock_guard lock(f.mu);
    if (++f.chunks_done < f.chunks_total) return ok();
    *finished = true;
    if (!f.failed)
      if (auto r = finish_restore_file(ctx_, f); !r) fail_file(f, r.error());
    if (f.failed) {
      abandon_restore_file(ctx_, f);
      return f.error;
    }
    f.dir.reset();
    ++stats_.files;
    return ok();
  }

 private:

  // Reads the chunk's frames and writes their data, keeping the pool busy.
  Result<void> pump(FileState& f, const RestoreChunk& c) {
    file_ = &f;
    io_ = file_io_.entry(f.item->file.path, stats_);
    const auto began = clock_.last();
    // The time on this chunk is the file's busy time, whatever the chunk ends with.
    struct Busy {
      ChunkRestore& cr;
      Clock::time_point began;
      ~Busy() {
        if (cr.io_ < 0) return;
        auto& e = cr.stats_.file_io[static_cast<size_t>(cr.io_)];
        const int64_t ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(cr.clock_.last() - began).count();
        e.read.busy_ns += ns;
        if (!cr.ctx_.verify_only) e.write.busy_ns += ns;
      }
    } busy{*this, began};
    size_t next = c.begin;
    std::vector<storage::Completion> comps(64);
    while (next < c.end || loop_.in_flight() > 0) {
      if (ctx_.cancel && ctx_.cancel->load()) return fail(Errc::cancelled, "restore cancelled");
      while (next < c.end && pool_.free_count() > 0) {
        const PartExtent& pe = f.extents[next++];
        const Extent& e = *pe.extent;
        if (e.type == FrameType::zero) {
          if (f.item->units)
            for (const auto& [off, len] : pe.ranges) note_units(f, off, nullptr, off, len);
          // Zero frames are part of the total the progress counts toward.
          clock_.add_bytes(e.raw_len);
          // A new file's preallocated range reads as zeros; a file updated in place gets
          // them written.
          if (!f.delta || ctx_.verify_only) continue;
        }
        uint32_t slot = *pool_.acquire();
        Slot& sl = slots_[slot];
        sl.pe = &pe;
        sl.writing = false;
        sl.lens.clear();
        sl.writes_left = 0;
        if (e.type == FrameType::zero) {
          std::memset(pool_.header(slot), 0, align_up(e.raw_len));
          SB_TRY(submit_writes(slot, pool_.header(slot), false));
          continue;
        }
        SB_TRY(loop_.submit({pe.part->piece->file(), storage::OpKind::read, e.frame_offset,
                             pool_.header(slot),
                             static_cast<uint32_t>(kBlock + align_up(e.stored_len)), slot,
                             kFrameRegion}));
        ++reads_out_;
      }
      if (loop_.in_flight() == 0) continue;
      clock_.mark(reads_out_ > 0, writes_out_ > 0, false, stats_);
      size_t n = loop_.reap(comps, 1, Clock::now() + std::chrono::milliseconds(200));
      clock_.mark(reads_out_ > 0, writes_out_ > 0, true, stats_);
      for (size_t i = 0; i < n; ++i) SB_TRY(handle(comps[i]));
    }
    stats_.direct_sink = stats_.direct_sink || (f.out && f.out->direct());
    return ok();
  }

  // Records the digests of the units in [off, off + len) of a file with a change map, from
  // `data` (the bytes at file offset `base`; null: zeros).
  static void note_units(FileState& f, uint64_t base, const std::byte* data, uint64_t off,
                         uint64_t len) {
    const UnitMap& m = *f.item->units;
    for (uint64_t u = off / m.unit; u * m.unit < off + len; ++u) {
      const uint32_t ulen = unit_length(m.size, m.unit, u);
      f.got[u] = data ? util::digest(data + (u * m.unit - base), ulen) : util::zero_digest(ulen);
    }
  }

  Result<void> handle(const storage::Completion& c) {
    auto slot = static_cast<uint32_t>(c.tag & 0xffffffffu);
    Slot& s = slots_[slot];
    const Extent& e = *s.pe->extent;
    const PieceReader& piece = *s.pe->part->piece;
    const std::string& shown = file_->shown;
    if (s.writing) {
      --writes_out_;
      const uint32_t want = s.lens[c.tag >> kWriteShift];
      if (!c.result) return c.result.error().wrap("unable to write '" + shown + "'");
      if (*c.result < want)
        return fail(Errc::io, "unable to write '" + shown + "': " + std::to_string(*c.result) +
                                  " of " + std::to_string(want) + " bytes written at offset " +
                                  std::to_string(e.file_offset));
      ++stats_.writes;
      {
        const int64_t waited = clock_.take_wait_ns();
        add_wait(stats_.write_waits, waited);
        if (io_ >= 0) add_io(stats_.file_io[static_cast<size_t>(io_)].write, *c.result, waited);
      }
      if (file_->delta) util::crash_point("delta-block-written");
      if (--s.writes_left > 0) return ok();
      // The file bytes this frame gave: all of it, or the ranges no newer backup holds.
      if (s.pe->ranges.empty()) {
        stats_.bytes_written += e.raw_len;
      } else {
        for (const auto& r : s.pe->ranges) stats_.bytes_written += r.second;
      }
      pool_.release(slot);
      s.pe = nullptr;
      s.writing = false;
      return ok();
    }
    --reads_out_;
    uint32_t len = static_cast<uint32_t>(kBlock + align_up(e.stored_len));
    if (!c.result)
      return c.result.error().wrap("unable to read piece '" + piece.path() + "'");
    if (*c.result < len)
      return fail(Errc::corrupt, "piece '" + piece.path() + "' is truncated at offset " +
                                     std::to_string(e.frame_offset + *c.result));
    ++stats_.reads;
    stats_.bytes_read += len;
    {
      const int64_t waited = clock_.take_wait_ns();
      add_wait(stats_.read_waits, waited);
      if (io_ >= 0) add_io(stats_.file_io[static_cast<size_t>(io_)].read, len, waited);
    }
    stats_.direct_source = stats_.direct_source || piece.direct();
    // The thread's CPU clock is a system call: read only around a decompression.
    const bool compressed = e.stored_len < e.raw_len;
    const double t0 = compressed ? thread_cpu_seconds() : 0;
    SB_ASSIGN(const std::byte* raw,
              verify_frame(pool_.header(slot), e, s.pe->part->file_id, piece.path(),
                           file_->item->file.path, &dz_, scratch_.data(slot), piece.cipher()));
    if (compressed) {
      stats_.compress_s += thread_cpu_seconds() - t0;
      stats_.bytes_compressed_in += e.raw_len;
      stats_.bytes_compressed_out += e.stored_len;
    }
    ++stats_.frames;
    clock_.add_bytes(e.raw_len);
    if (ctx_.header_logs)
      if (auto it = ctx_.header_logs->find(&piece); it != ctx_.header_logs->end())
        it->second->add(e.frame_offset, pool_.header(slot));
    const auto& pe = *s.pe;
    if (file_->item->units) {
      if (pe.ranges.empty()) note_units(*file_, e.file_offset, raw, e.file_offset, e.raw_len);
      for (const auto& [off, n] : pe.ranges) note_units(*file_, e.file_offset, raw, off, n);
    }
    if (ctx_.verify_only) {
      pool_.release(slot);
      s.pe = nullptr;
      return ok();
    }
    const bool decoded = raw >= scratch_.region().first &&
                         raw < scratch_.region().first + scratch_.region().second;
    return submit_writes(slot, raw, decoded);
  }

  // Writes the frame's bytes at `raw` (all of them, or its ranges) from the slot.
  Result<void> submit_writes(uint32_t slot, const std::byte* raw, bool decoded) {
    Slot& s = slots_[slot];
    const Extent& e = *s.pe->extent;
    const auto& pe = *s.pe;
    s.writing = true;
    const bool direct = file_->out->direct();
    auto write = [&](uint64_t off, uint32_t n) -> Result<void> {
      std::byte* at = const_cast<std::byte*>(raw) + (off - e.file_offset);
      uint32_t wlen = direct ? static_cast<uint32_t>(align_up(n)) : n;
      // Padding after the frame's raw bytes must be zeros (the write is rounded up for
      // O_DIRECT). A range ending inside the frame ends at the file's size: what follows is
      // cut off when the size is set.
      if (wlen > n && off + n == e.file_offset + e.raw_len) std::memset(at + n, 0, wlen - n);
      const uint64_t tag = slot | (uint64_t{s.lens.size()} << kWriteShift);
      s.lens.push_back(wlen);
      ++s.writes_left;
      ++writes_out_;
      return loop_.submit({file_->out.get(), storage::OpKind::write, off, at, wlen, tag,
                           decoded ? int16_t{-1} : kFrameRegion});
    };
    if (pe.ranges.empty()) return write(e.file_offset, e.raw_len);
    for (const auto& [off, n] : pe.ranges) SB_TRY(write(off, n));
    return ok();
  }

  void drain() {
    loop_.drain();
    for (uint32_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].pe) {
        pool_.release(i);
        slots_[i] = Slot{};
      }
    reads_out_ = writes_out_ = 0;
  }

  const RestoreContext& ctx_;
  storage::IoLoop& loop_;
  io::BufferPool& pool_;
  io::BufferPool& scratch_;  // decoded frames, slot for slot with pool_
  Decompressor& dz_;
  ChannelStats& stats_;
  BusyClock& clock_;
  std::vector<Slot> slots_;
  FileState* file_ = nullptr;
  uint32_t reads_out_ = 0, writes_out_ = 0;
  FileIoIndex file_io_;
  int32_t io_ = -1;  // the current file's entry in stats_.file_io
};

}  // namespace

RestoreOutcome run_restore_channel(const RestoreContext& ctx, uint32_t channel) {
  RestoreOutcome out;
  out.stats.channel = channel;
  out.stats.buffers = static_cast<uint32_t>(ctx.config.buffers);
  out.stats.buffer_size = static_cast<uint32_t>(ctx.config.buffer_size);
  BusyClock clock;
  storage::IoLoop loop(ctx.config.queue_depth);
  auto pool = io::BufferPool::create(ctx.config.buffers, ctx.config.buffer_size, kBlock);
  if (!pool) {
    out.errors.push_back(pool.error());
    return out;
  }
  // Decoded frames need a second buffer per slot; only pieces with compression use it, but
  // a small pool costs little next to the frames themselves.
  auto scratch = io::BufferPool::create(ctx.config.buffers, ctx.config.buffer_size, kBlock);
  if (!scratch) {
    out.errors.push_back(scratch.error());
    return out;
  }
  Decompressor dz;
  // Frames are read into the pool, and written from it when stored raw: it is registered
  // (kFrameRegion). Decoded frames go out from the scratch pool unregistered: pinning it
  // would keep it resident for restores that never decode.
  loop.register_buffers({pool->region()});
  if (ctx.progress) clock.attach(ctx.progress->channel(channel));
  ChunkRestore cr(ctx, loop, *pool, *scratch, dz, out.stats, clock);
  // Past the deadline a channel begins no new chunk, once it has done one: every run makes
  // progress, however long loading the indexes took.
  bool did_one = false;
  while (true) {
    if (ctx.deadline && did_one && std::chrono::steady_clock::now() >= *ctx.deadline) {
      out.deadline_hit = ctx.next->load() < ctx.chunks->size();
      break;
    }
    size_t i = ctx.next->fetch_add(1);
    if (i >= ctx.chunks->size()) break;
    const RestoreChunk& chunk = (*ctx.chunks)[i];
    bool finished = false;
    did_one = true;
    auto r = cr.run(chunk, &finished);
    if (!finished) continue;
    if (!r) out.errors.push_back(r.error());
    else out.file_bytes += chunk.file->item->file.size;
  }
  if (ctx.cancel && ctx.cancel->load())
    out.errors.push_back({Errc::cancelled, 0, "restore cancelled"});
  clock.finish(out.stats, ctx.job_start);
  out.stats.io_engine = loop.names();
  loop.close();  // before the thread's connections go
  out.stats.backends = thread_counters({});
  return out;
}

}  // namespace stripeback::engine