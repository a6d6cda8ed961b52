#include "engine/restore/restore_channel.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/transform/compress.h"
#include "engine/restore/delta_undo.h"
#include "engine/restore/restore_delta.h"
#include "engine/restore/restore_job.h"
#include "engine/wiring/backends.h"
#include "storage/async/buffer_pool.h"
#include "storage/io_loop.h"
#include "util/crash_point.h"

namespace stripeback::engine {
namespace {

using storage::Clock;

// Opens (creating as needed) the directories that lead to `comps.back()` below the target,
// never following a symbolic link, so nothing lands outside it. Returns the deepest one
// opened (null when that is the target itself).
Result<std::unique_ptr<storage::Directory>> open_parent(storage::Directory& root,
                                                        const std::vector<std::string>& comps,
                                                        const std::string& shown) {
  std::unique_ptr<storage::Directory> dir;
  for (size_t i = 0; i + 1 < comps.size(); ++i) {
    storage::Directory& at = dir ? *dir : root;
    auto next = at.open_dir(comps[i], /*create=*/true, 0755);
    if (!next) {
      if (next.error().code == Errc::invalid_argument)
        return fail(Errc::invalid_argument, "refusing to restore '" + shown + "': '" + comps[i] +
                                                "' in its path is not a directory "
                                                "(a symbolic link or a file)");
      return next.error().wrap("unable to open the directory of '" + shown + "'");
    }
    dir = std::move(*next);
  }
  return dir;
}

}  // namespace

storage::Attrs restore_attrs(const catalog::FileRecord& f, bool set_owner) {
  return storage::Attrs::of(set_owner, f.uid, f.gid, f.mode, f.mtime_ns);
}

Result<void> open_restore_file(const RestoreContext& ctx, FileState& f) {
  if (ctx.verify_only) {
    f.shown = f.item->file.path;
    return ok();
  }
  SB_ASSIGN(auto comps, safe_components(f.item->file.path));
  std::string rel;
  for (const auto& c : comps) rel += (rel.empty() ? "" : "/") + c;
  f.shown = ctx.root->location().join(rel).str();
  SB_ASSIGN(f.dir, open_parent(*ctx.root, comps, f.shown));
  storage::Directory& parent = f.dir ? *f.dir : *ctx.root;
  f.name = comps.back();
  if (DeltaFile* d = f.delta) {
    // The file moves to its temporary name (its undo log is durable by now), then is
    // updated there in place.
    f.temp = d->temp;
    if (auto r = parent.rename(f.name, f.temp, /*replace=*/false); !r)
      return r.error().wrap("unable to update '" + f.shown + "'");
    f.temp_made = true;
    util::crash_point("delta-file-renamed");
    SB_ASSIGN(f.out, parent.open_write(f.temp, {ctx.config.direct == io::Direct::yes}));
    if (f.item->file.size > d->old.size && ctx.caps->preallocate)
      SB_TRY(f.out->preallocate(d->old.size, f.item->file.size - d->old.size));
    return ok();
  }
  storage::CreateOptions co;
  co.direct = ctx.config.direct == io::Direct::yes;
  co.mode = 0600;
  // A new name each time, created exclusively: nothing planted at it (a link to a file
  // outside the target) is ever opened, and its length does not depend on the file's name.
  Result<std::unique_ptr<storage::WriteFile>> made = fail(Errc::exists, "no free temporary name");
  for (int attempt = 0; attempt < 8; ++attempt) {
    f.temp = restore_temp_name();
    comps.back() = f.temp;
    if (ctx.journal) SB_TRY(ctx.journal->note(comps));
    made = parent.create(f.temp, co);
    if (made) break;
    if (ctx.journal) ctx.journal->settle();
    if (made.error().code != Errc::exists) break;
  }
  if (!made) return made.error().wrap("unable to create '" + f.shown + "'");
  f.out = std::move(*made);
  f.temp_made = true;
  uint64_t size = f.item->file.size;
  if (size > 0 && ctx.caps->preallocate)
    SB_TRY(f.out->preallocate(0, size));
  return ok();
}

Result<void> finish_restore_file(const RestoreContext& ctx, FileState& f) {
  const auto& rec = f.item->file;
  if (const UnitMap* want = f.item->units.get()) {
    // Reassembled from a chain: every unit as restored is the unit the newest backup read.
    for (uint64_t u = 0; u < want->digests.size(); ++u)
      if (u >= f.got.size() || f.got[u] != want->digests[u])
        return fail(Errc::corrupt, "'" + rec.path + "' fails its whole-file checksum: the " +
                                       "bytes restored at offset " + std::to_string(u * want->unit) +
                                       " differ from what backup " +
                                       std::to_string(f.item->backup_id) + " read");
    if (map_file_digest(*want) != rec.digest)
      return fail(Errc::corrupt, "'" + rec.path + "' fails its whole-file checksum");
  } else {
    // Every frame of the file: those written, and in a delta restore those found equal in
    // place (f.extents holds only the frames written then); in a validation of some frames,
    // those it left out (their bytes are not checked, the index that lists them is).
    util::DigestCombiner comb;
    std::vector<const Extent*> all;
    if (f.delta || f.sampled) {
      for (const RestorePart& part : f.item->parts)
        for (const Extent& e : part.piece->trailer().extents[part.file_id]) all.push_back(&e);
      std::sort(all.begin(), all.end(),
                [](const Extent* a, const Extent* b) { return a->file_offset < b->file_offset; });
    } else {
      for (const PartExtent& pe : f.extents) all.push_back(pe.extent);
    }
    for (const Extent* e : all) comb.add(e->file_offset, e->raw_len, e->raw_digest);
    if (f.item->map_lost) {
      // The recorded digest combines the map's unit digests: check that the frames, each
      // verified against its digest in the index, cover the file without a gap.
      std::vector<const Extent*> cover;
      for (const RestorePart& part : f.item->parts)
        for (const Extent& e : part.piece->trailer().extents[part.file_id]) cover.push_back(&e);
      std::sort(cover.begin(), cover.end(),
                [](const Extent* a, const Extent* b) { return a->file_offset < b->file_offset; });
      uint64_t at = 0;
      for (const Extent* e : cover) {
        if (e->file_offset != at) break;
        at += e->raw_len;
      }
      if (at != rec.size)
        return fail(Errc::corrupt, "'" + rec.path + "' is not whole in its pieces (its frames "
                                   "end at offset " + std::to_string(at) + " of " +
                                   std::to_string(rec.size) + ")");
    } else if (comb.finish() != rec.digest) {
      return fail(Errc::corrupt, "'" + rec.path + "' fails its whole-file checksum");
    }
  }
  if (ctx.verify_only) return ok();
  // Zero frames were not written: setting the size makes them read as zeros.
  SB_TRY(f.out->truncate(rec.size));
  SB_TRY(f.out->commit());
  SB_TRY(f.out->set_attrs(restore_attrs(rec, ctx.set_owner)));
  SB_TRY(f.out->close());
  f.out.reset();
  util::crash_point("restore-file-synced");
  storage::Directory& parent = f.dir ? *f.dir : *ctx.root;
  if (auto r = parent.rename(f.temp, f.name, ctx.force && !f.delta); !r) {
    if (r.error().code == Errc::exists)
      return fail(Errc::exists, "refusing to overwrite existing file '" + f.shown +
                                    "' (use --force to replace it)");
    return r.error().wrap("unable to move '" + f.shown + "' into place");
  }
  util::crash_point("restore-file-renamed");
  f.temp_made = false;
  if (f.delta) {
    // Back under its name and durable there: the old bytes are no longer needed.
    if (ctx.caps->dir_sync) SB_TRY(parent.sync());
    SB_TRY(parent.remove(f.delta->undo_name));
  }
  if (ctx.journal) ctx.journal->settle();
  if (ctx.caps->dir_sync)
    SB_TRY(parent.sync());
  return ok();
}

bool abandon_restore_file(const RestoreContext& ctx, FileState& f) {
  if (f.out) f.out->abandon();
  f.out.reset();
  bool removed = false;
  if (f.delta && !ctx.verify_only) {
    // Updated in place: put back as it was from its undo log (the next restore into the
    // target does it when this fails).
    storage::Directory& parent = f.dir ? *f.dir : *ctx.root;
    Result<void> r = ok();
    if (f.temp_made)
      r = roll_back_delta(parent, f.temp, f.delta->undo_name, f.name, ctx.set_owner);
    else
      r = parent.remove(f.delta->undo_name);
    if (r) {
      f.temp_made = false;
      if (ctx.journal) ctx.journal->settle();
    }
    f.dir.reset();
    return r.has_value();
  }
  if (f.temp_made) {
    storage::Directory& parent = f.dir ? *f.dir : *ctx.root;
    removed = parent.remove(f.temp).has_value();
    if (removed) {
      f.temp_made = false;
      if (ctx.journal) ctx.journal->settle();
    }
  }
  f.dir.reset();
  return removed;
}

namespace {

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
    double t0 = thread_cpu_seconds();
    SB_ASSIGN(const std::byte* raw,
              verify_frame(pool_.header(slot), e, s.pe->part->file_id, piece.path(),
                           file_->item->file.path, &dz_, scratch_.data(slot), piece.cipher()));
    if (e.stored_len < e.raw_len) {
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

void fail_file(FileState& f, const Error& e) {
  if (!f.failed) f.error = e;
  f.failed = true;
}

Result<void> restore_dir_attributes(storage::Directory& root, const catalog::FileRecord& d,
                                    bool set_owner) {
  SB_ASSIGN(auto comps, safe_components(d.path));
  std::string rel;
  for (const auto& c : comps) rel += (rel.empty() ? "" : "/") + c;
  std::string shown = root.location().join(rel).str();
  comps.push_back(".");  // open_parent creates and opens every component before the last
  SB_ASSIGN(auto dir, open_parent(root, comps, shown));
  storage::Directory& at = dir ? *dir : root;
  SB_TRY(at.set_attrs(restore_attrs(d, set_owner)));
  SB_TRY(at.sync());
  return ok();
}

namespace {

// Each piece's trailer entry of the file agrees with the catalog's record of it.
Result<void> check_part(const RestorePart& part, uint64_t size, const std::string& path) {
  const PieceReader& pr = *part.piece;
  const auto& meta = pr.trailer().files[part.file_id];
  const auto& ex = pr.trailer().extents[part.file_id];
  util::DigestCombiner comb;
  for (const Extent& e : ex) comb.add(e.file_offset, e.raw_len, e.raw_digest);
  if (meta.size != size || comb.finish() != meta.digest)
    return fail(Errc::corrupt, "piece '" + pr.path() + "' does not hold the copy of '" + path +
                                   "' the catalog describes");
  return ok();
}

// A file with a change map: each unit comes from the newest backup of its chain that holds
// it; the frames of older backups give only the units no newer one holds.
Result<void> plan_units(const RestoreItem& item, FileState& f, size_t max_frame) {
  const UnitMap& want = *item.units;
  const uint32_t unit = want.unit;
  const uint64_t size = item.file.size;
  const uint64_t n = units_of(size, unit);
  std::vector<bool> owned(n, false);
  uint64_t left = n;
  std::vector<const std::vector<RestorePart>*> layers{&item.parts};
  std::vector<uint64_t> sizes{item.file.size}, ids{item.backup_id};
  for (const auto& l : item.older) {
    layers.push_back(&l.parts);
    sizes.push_back(l.size);
    ids.push_back(l.backup_id);
  }
  for (size_t li = 0; li < layers.size() && left > 0; ++li) {
    for (const RestorePart& part : *layers[li]) {
      SB_TRY(check_part(part, sizes[li], item.file.path));
      for (const Extent& e : part.piece->trailer().extents[part.file_id]) {
        if (e.file_offset % unit != 0 || align_up(std::max(e.stored_len, e.raw_len)) > max_frame)
          return fail(Errc::corrupt, "piece '" + part.piece->path() + "' index for '" +
                                         item.file.path + "' has a frame at offset " +
                                         std::to_string(e.file_offset) +
                                         " that does not fit its change units");
        PartExtent pe{&e, &part, {}};
        const uint64_t end = e.file_offset + e.raw_len;
        for (uint64_t u = e.file_offset / unit; u < n; ++u) {
          const uint64_t off = u * unit;
          const uint32_t len = unit_length(size, unit, u);
          if (off + len > end) break;
          if (owned[u]) continue;
          owned[u] = true;
          --left;
          if (!pe.ranges.empty() && pe.ranges.back().first + pe.ranges.back().second == off)
            pe.ranges.back().second += len;
          else
            pe.ranges.push_back({off, len});
        }
        if (!pe.ranges.empty()) f.extents.push_back(std::move(pe));
      }
    }
  }
  if (left > 0) {
    uint64_t u = 0;
    while (owned[u]) ++u;
    std::string chain;
    for (uint64_t id : ids) chain += (chain.empty() ? "" : ", ") + std::to_string(id);
    return fail(Errc::corrupt, "no backup of the chain of '" + item.file.path + "' (backups " +
                                   chain + ") holds its bytes at offset " +
                                   std::to_string(u * unit));
  }
  std::sort(f.extents.begin(), f.extents.end(), [](const PartExtent& a, const PartExtent& b) {
    return a.ranges.front().first < b.ranges.front().first;
  });
  f.got.assign(n, util::Digest{});
  return ok();
}

// Cuts the file's extents into chunks of about kRestoreChunk bytes (one for an empty file).
void cut_chunks(FileState& f, std::vector<RestoreChunk>& chunks) {
  size_t begin = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < f.extents.size(); ++i) {
    bytes += f.extents[i].extent->raw_len;
    if (bytes >= kRestoreChunk) {
      chunks.push_back({&f, begin, i + 1});
      begin = i + 1;
      bytes = 0;
    }
  }
  if (begin < f.extents.size() || f.extents.empty())
    chunks.push_back({&f, begin, f.extents.size()});
}

}  // namespace

Result<std::unique_ptr<FileState>> make_file_state(const RestoreItem& item, size_t max_frame,
                                                   std::vector<RestoreChunk>& chunks,
                                                   DeltaFile* delta, const FrameFilter* keep) {
  auto f = std::make_unique<FileState>();
  f->item = &item;
  f->delta = delta;
  f->sampled = keep != nullptr;
  if (item.units) {
    SB_TRY(plan_units(item, *f, max_frame));
    if (keep) {
      // Units of the frames left out count as the map has them; those read are checked.
      const UnitMap& want = *item.units;
      for (uint64_t u = 0; u < f->got.size() && u < want.digests.size(); ++u)
        f->got[u] = want.digests[u];
      std::erase_if(f->extents, [&](const PartExtent& pe) { return !(*keep)(*pe.part, *pe.extent); });
    }
    if (delta) {
      // Only the units that differ in place are written; the others were found equal to
      // the units of the map.
      const UnitMap& want = *item.units;
      std::vector<PartExtent> kept;
      for (PartExtent& pe : f->extents) {
        std::vector<std::pair<uint64_t, uint32_t>> ranges;
        for (const auto& [off, len] : pe.ranges)
          for (uint64_t u = off / want.unit; u * want.unit < off + len; ++u) {
            if (!delta->differs[u]) continue;
            const uint64_t uo = u * want.unit;
            const uint32_t ul = unit_length(item.file.size, want.unit, u);
            if (!ranges.empty() && ranges.back().first + ranges.back().second == uo)
              ranges.back().second += ul;
            else
              ranges.push_back({uo, ul});
          }
        if (ranges.empty()) continue;
        pe.ranges = std::move(ranges);
        kept.push_back(std::move(pe));
      }
      f->extents = std::move(kept);
      for (uint64_t u = 0; u < f->got.size(); ++u)
        if (!delta->differs[u]) f->got[u] = want.digests[u];
    }
    cut_chunks(*f, chunks);
    return f;
  }
  for (const RestorePart& part : item.parts) {
    SB_TRY(check_part(part, item.file.size, item.file.path));
    for (const Extent& e : part.piece->trailer().extents[part.file_id])
      f->extents.push_back({&e, &part, {}});
  }
  std::sort(f->extents.begin(), f->extents.end(), [](const PartExtent& a, const PartExtent& b) {
    return a.extent->file_offset < b.extent->file_offset;
  });
  uint64_t expect = 0;
  for (const PartExtent& pe : f->extents) {
    const Extent& e = *pe.extent;
    if (e.file_offset != expect || align_up(std::max(e.stored_len, e.raw_len)) > max_frame)
      return fail(Errc::corrupt, "piece '" + pe.part->piece->path() + "' index for '" +
                                     item.file.path +
                                     "' has a gap, an overlap or an oversized frame at offset " +
                                     std::to_string(expect));
    expect += e.raw_len;
  }
  if (expect != item.file.size)
    return fail(Errc::corrupt, "the pieces of '" + item.file.path + "' cover " +
                                   std::to_string(expect) + " of " +
                                   std::to_string(item.file.size) + " bytes");
  if (keep)
    std::erase_if(f->extents, [&](const PartExtent& pe) { return !(*keep)(*pe.part, *pe.extent); });
  if (delta) {
    // Frame i is block i of the compare (both in offset order): only those that differ.
    std::vector<PartExtent> kept;
    for (size_t i = 0; i < f->extents.size(); ++i)
      if (delta->differs[i]) kept.push_back(f->extents[i]);
    f->extents = std::move(kept);
  }
  cut_chunks(*f, chunks);
  return f;
}

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
