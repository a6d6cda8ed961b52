#include "engine/restore/restore_delta.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include "engine/pieces/change_map.h"
#include "engine/format/piece_format.h"
#include "engine/restore/restore_job.h"
#include "storage/async/buffer_pool.h"
#include "storage/io_loop.h"
#include "util/crash_point.h"
#include "util/option_words.h"

namespace stripeback::engine {
namespace {

using storage::Clock;

constexpr uint32_t kTailBlock = 1u << 20;

uint64_t align_down(uint64_t v) { return v / kBlock * kBlock; }

void fail_delta(DeltaFile& f, const Error& e) {
  std::lock_guard lock(f.mu);
  if (!f.failed) f.error = e;
  f.failed = true;
}

bool has_failed(DeltaFile& f) {
  std::lock_guard lock(f.mu);
  return f.failed;
}

storage::Directory& parent_of(const RestoreContext& ctx, DeltaFile& f) {
  return f.dir ? *f.dir : *ctx.root;
}

// Saves the old bytes [off, off + len) of `f` (none when `len` is 0), making its undo log
// (noted in the journal first) at the first call.
Result<void> save_old(const RestoreContext& ctx, DeltaFile& f, uint64_t off, const std::byte* data,
                      uint32_t len) {
  UndoLog* undo = nullptr;
  {
    std::lock_guard lock(f.mu);
    if (!f.undo) {
      f.temp = restore_temp_name();
      f.undo_name = restore_temp_name();
      SB_TRY(ctx.journal->note_delta(f.dir_comps, f.temp, f.undo_name, f.name));
      auto made = UndoLog::create(parent_of(ctx, f), f.undo_name, f.shown, f.old);
      if (!made) {
        ctx.journal->settle();
        return made.error();
      }
      f.undo = std::move(*made);
    }
    undo = f.undo.get();
  }
  if (len == 0) return ok();
  return undo->save(off, data, len);
}

struct Segment {
  DeltaFile* file = nullptr;
  size_t begin = 0, end = 0;  // blocks
  uint64_t read_off = 0;
  uint32_t read_len = 0;
};

class Comparer {
 public:
  Comparer(const RestoreContext& ctx, storage::IoLoop& loop, io::BufferPool& pool)
      : ctx_(ctx), loop_(loop), pool_(pool), segs_(pool.count()) {}

  void run(const DeltaChunk& c) {
    DeltaFile& f = *c.file;
    if (has_failed(f)) return;
    if (auto r = pump(c); !r) {
      loop_.drain();
      for (uint32_t i = 0; i < segs_.size(); ++i)
        if (segs_[i].file) {
          pool_.release(i);
          segs_[i] = Segment{};
        }
      fail_delta(f, r.error());
    }
  }

 private:
  size_t span() const { return pool_.header_room() + pool_.data_size(); }

  Result<void> pump(const DeltaChunk& c) {
    DeltaFile& f = *c.file;
    size_t next = c.begin;
    std::vector<storage::Completion> comps(64);
    while (next < c.end || loop_.in_flight() > 0) {
      if (ctx_.cancel && ctx_.cancel->load()) return fail(Errc::cancelled, "restore cancelled");
      while (next < c.end && pool_.free_count() > 0) {
        // As many whole blocks as the buffer holds, read from aligned offsets.
        Segment s{&f, next, next, align_down(f.blocks[next].off), 0};
        uint64_t end = s.read_off;
        while (s.end < c.end) {
          const auto& b = f.blocks[s.end];
          uint64_t e = align_up(b.off + b.len);
          if (s.end > s.begin && e - s.read_off > span()) break;
          end = e;
          ++s.end;
        }
        s.read_len = static_cast<uint32_t>(end - s.read_off);
        next = s.end;
        if (s.read_off >= f.old.size) {
          SB_TRY(handle(s, nullptr, 0));  // nothing of the old file there
          continue;
        }
        uint32_t slot = *pool_.acquire();
        segs_[slot] = s;
        SB_TRY(loop_.submit({f.in.get(), storage::OpKind::read, s.read_off, pool_.header(slot),
                             s.read_len, slot, 0}));
      }
      if (loop_.in_flight() == 0) continue;
      size_t n = loop_.reap(comps, 1, Clock::now() + std::chrono::milliseconds(200));
      for (size_t i = 0; i < n; ++i) {
        auto slot = static_cast<uint32_t>(comps[i].tag);
        Segment s = segs_[slot];
        if (!comps[i].result)
          return comps[i].result.error().wrap("unable to read '" + f.shown + "'");
        auto r = handle(s, pool_.header(slot), *comps[i].result);
        pool_.release(slot);
        segs_[slot] = Segment{};
        SB_TRY(r);
      }
    }
    return ok();
  }

  // Compares the blocks of `s` with the bytes read (`got` of them at s.read_off).
  Result<void> handle(const Segment& s, const std::byte* data, uint32_t got) {
    DeltaFile& f = *s.file;
    const uint64_t have = std::min<uint64_t>(f.old.size, s.read_off + got);
    for (size_t i = s.begin; i < s.end; ++i) {
      const auto& b = f.blocks[i];
      const uint64_t old_end = std::min<uint64_t>(b.off + b.len, f.old.size);
      if (b.off < f.old.size && old_end > have)
        return fail(Errc::io, "'" + f.shown + "' changed while it was compared: " +
                                  std::to_string(have) + " of its " +
                                  std::to_string(f.old.size) + " bytes could be read");
      const std::byte* at = data ? data + (b.off - s.read_off) : nullptr;
      bool differs = true;
      if (!b.tail && b.off + b.len <= f.old.size) differs = util::digest(at, b.len) != b.want;
      if (b.off < f.old.size) f.bytes_compared += old_end - b.off;
      if (!differs) continue;
      if (!b.tail) f.differs[i] = 1;
      // Past the old end there is nothing to save, but the log is made all the same: it
      // holds the old size.
      const uint32_t keep = b.off < f.old.size ? static_cast<uint32_t>(old_end - b.off) : 0;
      SB_TRY(save_old(ctx_, f, b.off, at, keep));
    }
    return ok();
  }

  const RestoreContext& ctx_;
  storage::IoLoop& loop_;
  io::BufferPool& pool_;
  std::vector<Segment> segs_;
};

}  // namespace

Result<std::unique_ptr<DeltaFile>> open_delta_file(storage::Directory& root,
                                                   const RestoreItem& item,
                                                   const ChannelConfig& config,
                                                   const std::vector<PathRemap>& remaps,
                                                   std::vector<DeltaChunk>& chunks) {
  SB_ASSIGN(auto comps, target_components(item.file.path, remaps));
  if (comps.empty())
    return fail(Errc::invalid_argument, "refusing to restore '" + item.file.path +
                                            "' in the place of the restore target itself");
  auto f = std::make_unique<DeltaFile>();
  f->item = &item;
  f->name = comps.back();
  std::string rel;
  for (const auto& c : comps) rel += (rel.empty() ? "" : "/") + c;
  f->shown = root.location().join(rel).str();
  for (size_t i = 0; i + 1 < comps.size(); ++i) {
    storage::Directory& at = f->dir ? *f->dir : root;
    auto next = at.open_dir(comps[i], /*create=*/false);
    if (!next) {
      if (next.error().code == Errc::not_found) return std::unique_ptr<DeltaFile>();
      if (next.error().code == Errc::invalid_argument)
        return fail(Errc::invalid_argument, "refusing to restore '" + f->shown + "': '" +
                                                comps[i] +
                                                "' in its path is not a directory "
                                                "(a symbolic link or a file)");
      return next.error();
    }
    f->dir = std::move(*next);
    f->dir_comps.push_back(comps[i]);
  }
  storage::Directory& parent = f->dir ? *f->dir : root;
  auto st = parent.stat(f->name);
  if (!st) {
    if (st.error().code == Errc::not_found) return std::unique_ptr<DeltaFile>();
    return st.error();
  }
  if (!S_ISREG(st->mode))
    return fail(Errc::exists, "refusing to update '" + f->shown +
                                  "' with " + util::option_word("delta") +
                                  ": it is not a regular file (remove it, or restore it without " +
                                  util::option_word("delta") + " and with " + util::option_word("force") + ")");
  f->old = {st->size, st->mode, st->uid, st->gid, st->mtime_ns};
  if (st->nlink > 1) {
    // Updated in place, its other names (perhaps outside the target) would change too: it
    // is replaced by a whole copy instead, which leaves them as they are.
    f->linked = st->nlink;
    return f;
  }
  SB_ASSIGN(f->in, parent.open(f->name, {config.direct == io::Direct::yes}));
  {
    // The name may have changed between the stat and the open: the open file decides.
    SB_ASSIGN(storage::FileInfo opened, f->in->stat());
    if (opened.nlink > 1 || !S_ISREG(opened.mode)) {
      f->in.reset();
      f->linked = std::max<uint32_t>(opened.nlink, 2);
      return f;
    }
  }
  const uint64_t size = item.file.size;
  if (item.units) {
    const UnitMap& m = *item.units;
    f->unit = m.unit;
    for (uint64_t u = 0; u < m.digests.size(); ++u)
      f->blocks.push_back({u * m.unit, unit_length(size, m.unit, u), m.digests[u], false});
  } else {
    for (const RestorePart& part : item.parts)
      for (const Extent& e : part.piece->trailer().extents[part.file_id])
        f->blocks.push_back({e.file_offset, e.raw_len, e.raw_digest, false});
    std::sort(f->blocks.begin(), f->blocks.end(),
              [](const auto& a, const auto& b) { return a.off < b.off; });
  }
  for (uint64_t off = size; off < f->old.size;) {
    uint64_t len = std::min<uint64_t>(kTailBlock - off % kTailBlock, f->old.size - off);
    f->blocks.push_back({off, static_cast<uint32_t>(len), {}, true});
    off += len;
  }
  f->differs.assign(f->blocks.size(), 0);
  size_t begin = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < f->blocks.size(); ++i) {
    bytes += f->blocks[i].len;
    if (bytes >= kRestoreChunk || i + 1 == f->blocks.size()) {
      chunks.push_back({f.get(), begin, i + 1});
      begin = i + 1;
      bytes = 0;
    }
  }
  return f;
}

void run_delta_compare(const RestoreContext& ctx, std::vector<DeltaChunk>& chunks,
                       std::atomic<size_t>& next, size_t buffer_size) {
  storage::IoLoop loop(ctx.config.queue_depth);
  auto pool = io::BufferPool::create(ctx.config.buffers, buffer_size, kBlock);
  if (!pool) {
    for (auto& c : chunks) fail_delta(*c.file, pool.error());
    return;
  }
  loop.register_buffers({pool->region()});
  Comparer cmp(ctx, loop, *pool);
  while (true) {
    size_t i = next.fetch_add(1);
    if (i >= chunks.size()) break;
    cmp.run(chunks[i]);
  }
  loop.close();
}

std::vector<std::pair<uint64_t, uint64_t>> differing_ranges(const DeltaFile& f) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (size_t i = 0; i < f.blocks.size(); ++i) {
    if (!f.differs[i]) continue;
    const auto& b = f.blocks[i];
    if (!out.empty() && out.back().first + out.back().second == b.off)
      out.back().second += b.len;
    else
      out.push_back({b.off, b.len});
  }
  return out;
}

bool settle_delta_file(const RestoreContext& ctx, DeltaFile& f, bool* whole, Error* err,
                       DeltaSummary& totals) {
  *whole = false;
  ++totals.files;
  totals.bytes_compared += f.bytes_compared.load();
  f.in.reset();
  storage::Directory& parent = parent_of(ctx, f);
  auto drop_undo = [&] {
    if (!f.undo) return;
    (void)f.undo->close();
    f.undo.reset();
    if (parent.remove(f.undo_name)) ctx.journal->settle();
  };
  if (f.failed) {
    drop_undo();
    *err = f.error;
    return false;
  }
  if (f.linked) {
    ++totals.whole;
    *whole = true;
    return true;
  }
  uint64_t differing = 0;
  for (const auto& [off, len] : differing_ranges(f)) differing += len;
  const catalog::FileRecord& rec = f.item->file;
  if (!f.undo) {
    // Every block equal and the same size: the attributes are all that may differ.
    ++totals.unchanged;
    storage::Attrs a = restore_attrs(rec, ctx.set_owner);
    const bool owner_differs = ctx.set_owner && (f.old.uid != rec.uid || f.old.gid != rec.gid);
    if ((f.old.mode & 07777) != a.mode || f.old.mtime_ns != a.mtime_ns || owner_differs) {
      auto out = parent.open_write(f.name, {false});
      Result<void> r = out ? (*out)->set_attrs(a) : Result<void>(out.error());
      if (r && out) r = (*out)->close();
      if (!r) {
        *err = r.error();
        return false;
      }
    }
    return false;
  }
  const uint64_t undo_bytes = f.undo->bytes();
  if (differing + undo_bytes > rec.size) {
    // Updating in place would write more than the whole file: restore it whole instead.
    drop_undo();
    ++totals.whole;
    *whole = true;
    return true;
  }
  auto made_durable = [&]() -> Result<void> {
    SB_TRY(f.undo->commit());
    SB_TRY(f.undo->close());
    if (ctx.caps->dir_sync) SB_TRY(parent.sync());
    return ok();
  };
  if (auto r = made_durable(); !r) {
    drop_undo();
    *err = r.error();
    return false;
  }
  f.undo.reset();
  util::crash_point("delta-undo-synced");
  ++totals.updated;
  totals.bytes_differing += differing;
  totals.undo_bytes += undo_bytes;
  return true;
}

}  // namespace stripeback::engine
