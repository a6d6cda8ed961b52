#include "engine/restore_channel.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/compress.h"
#include "engine/restore_job.h"
#include "engine/restore_remote.h"
#include "io/remote.h"
#include "io/buffer_pool.h"
#include "io/io_engine.h"
#include "util/crash_point.h"

namespace stripeback::engine {
namespace {

// Opens (creating as needed) the directory that will hold `comps.back()`, walking from the
// target directory without following symbolic links, so nothing lands outside it.
Result<io::UniqueFd> open_parent(int root, const std::vector<std::string>& comps,
                                 const std::string& shown) {
  io::UniqueFd dir(::dup(root));
  if (!dir.valid()) return sys_error(errno, "unable to open restore target");
  for (size_t i = 0; i + 1 < comps.size(); ++i) {
    int fd = ::openat(dir.get(), comps[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      if (::mkdirat(dir.get(), comps[i].c_str(), 0755) != 0 && errno != EEXIST)
        return sys_error(errno, "unable to create directory for '" + shown + "'");
      fd = ::openat(dir.get(), comps[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      if (errno == ELOOP || errno == ENOTDIR)
        return fail(Errc::invalid_argument, "refusing to restore '" + shown + "': '" +
                                                comps[i] + "' in its path is not a directory "
                                                "(a symbolic link or a file)");
      return sys_error(errno, "unable to open directory for '" + shown + "'");
    }
    dir = io::UniqueFd(fd);
  }
  return dir;
}

// Owner (when asked), permission bits and mtime, in that order: chown clears set-id bits.
Result<void> set_attributes(int fd, const catalog::FileRecord& f, bool set_owner,
                            const std::string& shown) {
  if (set_owner && ::fchown(fd, f.uid, f.gid) != 0)
    return sys_error(errno, "unable to set the owner of '" + shown + "'");
  if (::fchmod(fd, static_cast<mode_t>(f.mode & 07777)) != 0)
    return sys_error(errno, "unable to set the mode of '" + shown + "'");
  timespec ts[2];
  ts[0].tv_sec = 0;
  ts[0].tv_nsec = UTIME_OMIT;
  ts[1].tv_sec = f.mtime_ns / 1000000000;
  ts[1].tv_nsec = f.mtime_ns % 1000000000;
  if (::futimens(fd, ts) != 0)
    return sys_error(errno, "unable to set the modification time of '" + shown + "'");
  return ok();
}

struct Slot {
  const PartExtent* pe = nullptr;
  bool writing = false;
};

// Opens the file's temporary file (once, by the first chunk to start) and allocates its
// full size, so writes land inside it instead of extending it (an extending O_DIRECT write
// takes the inode lock exclusively and is punted to a worker thread).
Result<void> open_file(const RestoreContext& ctx, FileState& f) {
  if (ctx.verify_only) {
    f.shown = f.item->file.path;
    return ok();
  }
  if (io::is_url(ctx.target)) return open_remote_file(ctx, f);
  f.shown = ctx.target + restore_relative(f.item->file.path);
  SB_ASSIGN(auto comps, safe_components(f.item->file.path));
  SB_ASSIGN(f.dir, open_parent(ctx.target_fd, comps, f.shown));
  f.name = comps.back();
  bool want_direct = ctx.config.direct == io::Direct::yes;
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = -1;
  // A new name each time, created O_EXCL: nothing planted at it (a link to a file outside
  // the target) is ever opened, and its length does not depend on the file's name.
  for (int attempt = 0; fd < 0 && attempt < 8; ++attempt) {
    f.temp = restore_temp_name();
    comps.back() = f.temp;
    if (ctx.journal) SB_TRY(ctx.journal->note(comps));
    fd = ::openat(f.dir.get(), f.temp.c_str(), flags | (want_direct ? O_DIRECT : 0), 0600);
    if (fd < 0 && errno == EINVAL && want_direct) {
      // The file system refuses O_DIRECT; an O_EXCL open it refused may have left the name.
      ::unlinkat(f.dir.get(), f.temp.c_str(), 0);
      fd = ::openat(f.dir.get(), f.temp.c_str(), flags, 0600);
      want_direct = false;
    }
    if (fd < 0 && ctx.journal) ctx.journal->settle();
    if (fd < 0 && errno != EEXIST) break;
  }
  f.direct = fd >= 0 && want_direct;
  if (fd < 0) return sys_error(errno, "unable to create '" + f.shown + "'");
  f.temp_made = true;
  f.out = io::UniqueFd(fd);
  uint64_t size = f.item->file.size;
  if (size > 0 && ::fallocate(fd, 0, 0, static_cast<off_t>(size)) != 0 && errno != EOPNOTSUPP)
    return sys_error(errno, "unable to allocate " + std::to_string(size) + " bytes for '" +
                                f.shown + "'");
  return ok();
}

// Verifies the whole file, sets its size and attributes, syncs it and moves it into place.
Result<void> finish_file(const RestoreContext& ctx, FileState& f) {
  const auto& rec = f.item->file;
  util::DigestCombiner comb;
  for (const PartExtent& pe : f.extents)
    comb.add(pe.extent->file_offset, pe.extent->raw_len, pe.extent->raw_digest);
  if (comb.finish() != rec.digest)
    return fail(Errc::corrupt, "'" + rec.path + "' fails its whole-file checksum");
  if (ctx.verify_only) return ok();
  if (io::is_url(ctx.target)) return finish_remote_file(ctx, f);
  int fd = f.out.get();
  if (::ftruncate(fd, static_cast<off_t>(rec.size)) != 0)
    return sys_error(errno, "unable to set the size of '" + f.shown + "'");
  if (::fdatasync(fd) != 0) return sys_error(errno, "unable to sync '" + f.shown + "'");
  SB_TRY(set_attributes(fd, rec, ctx.set_owner, f.shown));
  if (::fsync(fd) != 0) return sys_error(errno, "unable to sync '" + f.shown + "'");
  f.out.reset();
  util::crash_point("restore-file-synced");
  unsigned flags = ctx.force ? 0 : RENAME_NOREPLACE;
  if (::renameat2(f.dir.get(), f.temp.c_str(), f.dir.get(), f.name.c_str(), flags) != 0) {
    if (errno == EEXIST)
      return fail(Errc::exists, "refusing to overwrite existing file '" + f.shown +
                                    "' (use --force to replace it)");
    return sys_error(errno, "unable to move '" + f.shown + "' into place");
  }
  util::crash_point("restore-file-renamed");
  f.temp_made = false;
  if (ctx.journal) ctx.journal->settle();
  if (::fsync(f.dir.get()) != 0)
    return sys_error(errno, "unable to sync the directory of '" + f.shown + "'");
  return ok();
}

class ChunkRestore {
 public:
  ChunkRestore(const RestoreContext& ctx, io::IoEngine& engine, io::BufferPool& pool,
               io::BufferPool& scratch, Decompressor& dz, ChannelStats& stats, BusyClock& clock)
      : ctx_(ctx), engine_(engine), pool_(pool), scratch_(scratch), dz_(dz), stats_(stats),
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
        if (auto r = open_file(ctx_, f); !r) fail_file(f, r.error());
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
      if (auto r = finish_file(ctx_, f); !r) fail_file(f, r.error());
    if (f.failed) {
      f.out.reset();
      bool removed = false;
      if (f.temp_made && f.dir.valid()) removed = ::unlinkat(f.dir.get(), f.temp.c_str(), 0) == 0;
      else if (f.temp_made) removed = abandon_remote_file(f);
      if (removed && ctx_.journal) ctx_.journal->settle();
      f.dir.reset();
      return f.error;
    }
    f.dir.reset();
    ++stats_.files;
    return ok();
  }

 private:
  static void fail_file(FileState& f, const Error& e) {
    if (!f.failed) f.error = e;
    f.failed = true;
  }

  // Reads the chunk's frames and writes their data, keeping the pool busy.
  Result<void> pump(FileState& f, const RestoreChunk& c) {
    file_ = &f;
    size_t next = c.begin;
    std::vector<io::IoCompletion> comps(64);
    while (next < c.end || engine_.in_flight() > 0) {
      if (ctx_.cancel && ctx_.cancel->load()) return fail(Errc::cancelled, "restore cancelled");
      std::vector<io::IoOp> ops;
      while (next < c.end && pool_.free_count() > 0) {
        const PartExtent& pe = f.extents[next++];
        const Extent& e = *pe.extent;
        if (e.type == FrameType::zero) continue;  // the preallocated range reads as zeros
        uint32_t slot = *pool_.acquire();
        slots_[slot] = Slot{&pe, false};
        ops.push_back({io::OpKind::read, pe.part->piece->fd(), e.frame_offset, pool_.header(slot),
                       static_cast<uint32_t>(kBlock + align_up(e.stored_len)), slot});
        ++reads_out_;
      }
      if (!ops.empty()) SB_TRY(engine_.submit(ops));
      if (engine_.in_flight() == 0) continue;
      clock_.mark(reads_out_ > 0, writes_out_ > 0, false, stats_);
      size_t n = engine_.reap(comps, 1, io::Clock::now() + std::chrono::milliseconds(200));
      clock_.mark(reads_out_ > 0, writes_out_ > 0, true, stats_);
      for (size_t i = 0; i < n; ++i) SB_TRY(handle(comps[i]));
    }
    stats_.direct_sink = stats_.direct_sink || f.direct;
    return ok();
  }

  Result<void> handle(const io::IoCompletion& c) {
    auto slot = static_cast<uint32_t>(c.tag);
    Slot& s = slots_[slot];
    const Extent& e = *s.pe->extent;
    const PieceReader& piece = *s.pe->part->piece;
    const std::string& shown = file_->shown;
    if (s.writing) {
      --writes_out_;
      if (!c.result) return c.result.error().wrap("unable to write '" + shown + "'");
      ++stats_.writes;
      stats_.bytes_written += e.raw_len;
      pool_.release(slot);
      s = Slot{};
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
    if (ctx_.header_logs)
      if (auto it = ctx_.header_logs->find(&piece); it != ctx_.header_logs->end())
        it->second->add(e.frame_offset, pool_.header(slot));
    if (ctx_.verify_only) {
      pool_.release(slot);
      s = Slot{};
      return ok();
    }
    s.writing = true;
    ++writes_out_;
    uint32_t wlen = file_->direct ? static_cast<uint32_t>(align_up(e.raw_len)) : e.raw_len;
    // Padding after the raw bytes must be zeros (the write is rounded up for O_DIRECT).
    if (wlen > e.raw_len)
      std::memset(const_cast<std::byte*>(raw) + e.raw_len, 0, wlen - e.raw_len);
    io::IoOp op{io::OpKind::write, file_->out.get(), e.file_offset, const_cast<std::byte*>(raw),
                wlen, slot};
    return engine_.submit({&op, 1});
  }

  void drain() {
    std::vector<io::IoCompletion> comps(64);
    while (engine_.in_flight() > 0)
      engine_.reap(comps, 1, io::Clock::now() + std::chrono::milliseconds(200));
    for (uint32_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].pe) {
        pool_.release(i);
        slots_[i] = Slot{};
      }
    reads_out_ = writes_out_ = 0;
  }

  const RestoreContext& ctx_;
  io::IoEngine& engine_;
  io::BufferPool& pool_;
  io::BufferPool& scratch_;  // decoded frames, slot for slot with pool_
  Decompressor& dz_;
  ChannelStats& stats_;
  BusyClock& clock_;
  std::vector<Slot> slots_;
  FileState* file_ = nullptr;
  uint32_t reads_out_ = 0, writes_out_ = 0;
};

}  // namespace

Result<void> restore_dir_attributes(int target_fd, const std::string& shown_prefix,
                                    const catalog::FileRecord& d, bool set_owner) {
  std::string shown = shown_prefix + restore_relative(d.path);
  SB_ASSIGN(auto comps, safe_components(d.path));
  comps.push_back(".");  // open_parent creates and opens every component before the last
  SB_ASSIGN(io::UniqueFd dir, open_parent(target_fd, comps, shown));
  SB_TRY(set_attributes(dir.get(), d, set_owner, shown));
  if (::fsync(dir.get()) != 0) return sys_error(errno, "unable to sync '" + shown + "'");
  return ok();
}

Result<std::unique_ptr<FileState>> make_file_state(const RestoreItem& item, size_t max_frame,
                                                   std::vector<RestoreChunk>& chunks) {
  auto f = std::make_unique<FileState>();
  f->item = &item;
  for (const RestorePart& part : item.parts) {
    const PieceReader& pr = *part.piece;
    const auto& meta = pr.trailer().files[part.file_id];
    const auto& ex = pr.trailer().extents[part.file_id];
    util::DigestCombiner comb;
    for (const Extent& e : ex) comb.add(e.file_offset, e.raw_len, e.raw_digest);
    if (meta.size != item.file.size || comb.finish() != meta.digest)
      return fail(Errc::corrupt, "piece '" + pr.path() + "' does not hold the copy of '" +
                                     item.file.path + "' the catalog describes");
    for (const Extent& e : ex) f->extents.push_back({&e, &part});
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
  size_t begin = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < f->extents.size(); ++i) {
    bytes += f->extents[i].extent->raw_len;
    if (bytes >= kRestoreChunk) {
      chunks.push_back({f.get(), begin, i + 1});
      begin = i + 1;
      bytes = 0;
    }
  }
  if (begin < f->extents.size() || f->extents.empty())
    chunks.push_back({f.get(), begin, f->extents.size()});
  return f;
}

RestoreOutcome run_restore_channel(const RestoreContext& ctx, uint32_t channel) {
  RestoreOutcome out;
  out.stats.channel = channel;
  BusyClock clock;
  auto engine = io::make_engine({ctx.config.queue_depth});
  out.stats.io_engine = engine->name();
  auto pool = io::BufferPool::create(ctx.config.buffers, ctx.config.buffer_size, kBlock);
  if (!pool) {
    out.errors.push_back(pool.error().what);
    return out;
  }
  // Decoded frames need a second buffer per slot; only pieces with compression use it, but
  // a small pool costs little next to the frames themselves.
  auto scratch = io::BufferPool::create(ctx.config.buffers, ctx.config.buffer_size, kBlock);
  if (!scratch) {
    out.errors.push_back(scratch.error().what);
    return out;
  }
  Decompressor dz;
  ChunkRestore cr(ctx, *engine, *pool, *scratch, dz, out.stats, clock);
  while (true) {
    size_t i = ctx.next->fetch_add(1);
    if (i >= ctx.chunks->size()) break;
    const RestoreChunk& chunk = (*ctx.chunks)[i];
    bool finished = false;
    auto r = cr.run(chunk, &finished);
    if (!finished) continue;
    if (!r) out.errors.push_back(r.error().what);
    else out.file_bytes += chunk.file->item->file.size;
  }
  if (ctx.cancel && ctx.cancel->load()) out.errors.push_back("restore cancelled");
  clock.finish(out.stats);
  engine.reset();  // before its connections go
  collect_nfs_stats(out.stats);
  return out;
}

}  // namespace stripeback::engine
