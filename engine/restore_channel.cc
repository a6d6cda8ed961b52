#include "engine/restore_channel.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/compress.h"
#include "engine/restore_job.h"
#include "io/buffer_pool.h"
#include "io/io_engine.h"

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

struct PartExtent {
  const Extent* extent = nullptr;
  const RestorePart* part = nullptr;
};

struct Slot {
  const PartExtent* pe = nullptr;
  bool writing = false;
};

class FileRestore {
 public:
  FileRestore(const RestoreContext& ctx, io::IoEngine& engine, io::BufferPool& pool,
              io::BufferPool& scratch, Decompressor& dz, ChannelStats& stats, BusyClock& clock)
      : ctx_(ctx), engine_(engine), pool_(pool), scratch_(scratch), dz_(dz), stats_(stats),
        clock_(clock), slots_(pool.count()) {}

  Result<void> run(const RestoreItem& item) {
    item_ = &item;
    shown_ = ctx_.target + item.file.path;
    SB_ASSIGN(auto comps, safe_components(item.file.path));
    SB_ASSIGN(dir_, open_parent(ctx_.target_fd, comps, shown_));
    name_ = comps.back();
    temp_ = "." + name_ + ".sbrestore-" + std::to_string(::getpid());
    auto r = restore_into_temp();
    if (!r) {
      drain();
      out_.reset();
      ::unlinkat(dir_.get(), temp_.c_str(), 0);
      return r;
    }
    return ok();
  }

 private:
  Result<void> open_temp() {
    int flags = O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC;
    int fd = ::openat(dir_.get(), temp_.c_str(),
                      flags | (ctx_.config.direct == io::Direct::yes ? O_DIRECT : 0), 0600);
    direct_ = fd >= 0 && ctx_.config.direct == io::Direct::yes;
    if (fd < 0 && errno == EINVAL) fd = ::openat(dir_.get(), temp_.c_str(), flags, 0600);
    if (fd < 0) return sys_error(errno, "unable to create '" + shown_ + "'");
    out_ = io::UniqueFd(fd);
    return ok();
  }

  Result<void> restore_into_temp() {
    // Gather the extents from every piece holding part of the file; check each piece's
    // own record of the file, then that together they cover it exactly.
    extents_.clear();
    for (const RestorePart& part : item_->parts) {
      const PieceReader& pr = *part.piece;
      const auto& meta = pr.trailer().files[part.file_id];
      const auto& ex = pr.trailer().extents[part.file_id];
      util::DigestCombiner comb;
      for (const Extent& e : ex) comb.add(e.file_offset, e.raw_len, e.raw_digest);
      if (meta.size != item_->file.size || comb.finish() != meta.digest)
        return fail(Errc::corrupt, "piece '" + pr.path() + "' does not hold the copy of '" +
                                       item_->file.path + "' the catalog describes");
      for (const Extent& e : ex) extents_.push_back({&e, &part});
    }
    std::sort(extents_.begin(), extents_.end(), [](const PartExtent& a, const PartExtent& b) {
      return a.extent->file_offset < b.extent->file_offset;
    });
    uint64_t expect = 0;
    for (const PartExtent& pe : extents_) {
      const Extent& e = *pe.extent;
      if (e.file_offset != expect || align_up(e.stored_len) > pool_.data_size())
        return fail(Errc::corrupt, "piece '" + pe.part->piece->path() + "' index for '" +
                                       item_->file.path +
                                       "' has a gap, an overlap or an oversized frame at offset " +
                                       std::to_string(expect));
      expect += e.raw_len;
    }
    if (expect != item_->file.size)
      return fail(Errc::corrupt, "the pieces of '" + item_->file.path + "' cover " +
                                     std::to_string(expect) + " of " +
                                     std::to_string(item_->file.size) + " bytes");
    SB_TRY(open_temp());
    // Allocate the whole file first: writes then land inside it instead of extending it
    // (an extending O_DIRECT write takes the inode lock exclusively and is punted to a
    // worker thread), and zero extents need nothing more.
    preallocated_ = item_->file.size == 0 ||
                    ::fallocate(out_.get(), 0, 0, static_cast<off_t>(item_->file.size)) == 0;
    for (const RestorePart& part : item_->parts)
      stats_.direct_source = stats_.direct_source || part.piece->direct();
    stats_.direct_sink = stats_.direct_sink || direct_;
    SB_TRY(pump());
    util::DigestCombiner comb;
    for (const PartExtent& pe : extents_)
      comb.add(pe.extent->file_offset, pe.extent->raw_len, pe.extent->raw_digest);
    if (comb.finish() != item_->file.digest)
      return fail(Errc::corrupt, "'" + item_->file.path + "' fails its whole-file checksum");
    return finish_file();
  }

  // Reads the file's frames and writes their data, keeping the pool busy.
  Result<void> pump() {
    size_t next = 0;
    std::vector<io::IoCompletion> comps(64);
    while (next < extents_.size() || engine_.in_flight() > 0) {
      if (ctx_.cancel && ctx_.cancel->load()) return fail(Errc::cancelled, "restore cancelled");
      std::vector<io::IoOp> ops;
      while (next < extents_.size() && pool_.free_count() > 0) {
        const PartExtent& pe = extents_[next++];
        const Extent& e = *pe.extent;
        if (e.type == FrameType::zero) {
          // Allocate the range (reads back as zeros) rather than leave a hole.
          if (!preallocated_ &&
              ::fallocate(out_.get(), 0, static_cast<off_t>(e.file_offset), e.raw_len) != 0 &&
              errno != EOPNOTSUPP)
            return sys_error(errno, "unable to allocate space in '" + shown_ + "'");
          continue;
        }
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
    return ok();
  }

  Result<void> handle(const io::IoCompletion& c) {
    auto slot = static_cast<uint32_t>(c.tag);
    Slot& s = slots_[slot];
    const Extent& e = *s.pe->extent;
    const PieceReader& piece = *s.pe->part->piece;
    if (s.writing) {
      --writes_out_;
      if (!c.result) return c.result.error().wrap("unable to write '" + shown_ + "'");
      ++stats_.writes;
      stats_.bytes_written += e.raw_len;
      pool_.release(slot);
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
    double t0 = thread_cpu_seconds();
    SB_ASSIGN(const std::byte* raw,
              verify_frame(pool_.header(slot), e, s.pe->part->file_id, piece.path(),
                           item_->file.path, &dz_, scratch_.data(slot)));
    if (e.stored_len < e.raw_len) {
      stats_.compress_s += thread_cpu_seconds() - t0;
      stats_.bytes_compressed_in += e.raw_len;
      stats_.bytes_compressed_out += e.stored_len;
    }
    ++stats_.frames;
    s.writing = true;
    ++writes_out_;
    uint32_t wlen = direct_ ? static_cast<uint32_t>(align_up(e.raw_len)) : e.raw_len;
    // Padding after the raw bytes must be zeros (the write is rounded up for O_DIRECT).
    if (raw != pool_.data(slot) && wlen > e.raw_len)
      std::memset(const_cast<std::byte*>(raw) + e.raw_len, 0, wlen - e.raw_len);
    io::IoOp op{io::OpKind::write, out_.get(), e.file_offset, const_cast<std::byte*>(raw), wlen,
                slot};
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
  }

  Result<void> finish_file() {
    const auto& f = item_->file;
    int fd = out_.get();
    if (::ftruncate(fd, static_cast<off_t>(f.size)) != 0)
      return sys_error(errno, "unable to set the size of '" + shown_ + "'");
    if (::fdatasync(fd) != 0) return sys_error(errno, "unable to sync '" + shown_ + "'");
    SB_TRY(set_attributes(fd, f, ctx_.set_owner, shown_));
    if (::fsync(fd) != 0) return sys_error(errno, "unable to sync '" + shown_ + "'");
    out_.reset();
    unsigned flags = ctx_.force ? 0 : RENAME_NOREPLACE;
    if (::renameat2(dir_.get(), temp_.c_str(), dir_.get(), name_.c_str(), flags) != 0) {
      if (errno == EEXIST)
        return fail(Errc::exists, "refusing to overwrite existing file '" + shown_ +
                                      "' (use --force to replace it)");
      return sys_error(errno, "unable to move '" + shown_ + "' into place");
    }
    if (::fsync(dir_.get()) != 0)
      return sys_error(errno, "unable to sync the directory of '" + shown_ + "'");
    ++stats_.files;
    return ok();
  }

  const RestoreContext& ctx_;
  io::IoEngine& engine_;
  io::BufferPool& pool_;
  io::BufferPool& scratch_;  // decoded frames, slot for slot with pool_
  Decompressor& dz_;
  ChannelStats& stats_;
  BusyClock& clock_;
  std::vector<Slot> slots_;
  const RestoreItem* item_ = nullptr;
  std::vector<PartExtent> extents_;
  std::string shown_, name_, temp_;
  io::UniqueFd dir_, out_;
  bool direct_ = false;
  bool preallocated_ = false;
  uint32_t reads_out_ = 0, writes_out_ = 0;
};

}  // namespace

Result<void> restore_dir_attributes(int target_fd, const std::string& shown_prefix,
                                    const catalog::FileRecord& d, bool set_owner) {
  std::string shown = shown_prefix + d.path;
  SB_ASSIGN(auto comps, safe_components(d.path));
  comps.push_back(".");  // open_parent creates and opens every component before the last
  SB_ASSIGN(io::UniqueFd dir, open_parent(target_fd, comps, shown));
  SB_TRY(set_attributes(dir.get(), d, set_owner, shown));
  if (::fsync(dir.get()) != 0) return sys_error(errno, "unable to sync '" + shown + "'");
  return ok();
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
  while (true) {
    if (ctx.cancel && ctx.cancel->load()) {
      out.errors.push_back("restore cancelled");
      break;
    }
    size_t i = ctx.next->fetch_add(1);
    if (i >= ctx.items->size()) break;
    const RestoreItem& item = (*ctx.items)[i];
    FileRestore fr(ctx, *engine, *pool, *scratch, dz, out.stats, clock);
    if (auto r = fr.run(item); !r) out.errors.push_back(r.error().what);
    else out.file_bytes += item.file.size;
  }
  clock.finish(out.stats);
  return out;
}

}  // namespace stripeback::engine
