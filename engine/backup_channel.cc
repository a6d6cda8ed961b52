#include "engine/backup_channel.h"

#include <sys/stat.h>

#include <algorithm>
#include <list>
#include <map>
#include <memory>

#include "engine/piece_writer.h"
#include "io/buffer_pool.h"
#include "io/io_engine.h"
#include "util/crc32c.h"

namespace stripeback::engine {
namespace {

constexpr uint64_t kMetaTag = 1ull << 40;

int64_t mtime_ns_of(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

struct Source {
  const FileTask* task = nullptr;
  io::OpenedFile file;
  uint32_t file_id = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t next_offset = 0;
  uint32_t ops_out = 0;  // reads, frame writes and its FILE frame write in flight
};

struct Slot {
  Source* src = nullptr;
  uint64_t offset = 0;
  uint32_t want = 0;  // bytes of file data expected
  bool writing = false;
};

class BackupChannel {
 public:
  BackupChannel(const BackupContext& ctx, uint32_t channel) : ctx_(ctx), channel_(channel) {
    out_.stats.channel = channel;
  }

  ChannelOutcome run() {
    auto st = run_loop();
    if (!st && ctx_.abort && st.error().code != Errc::cancelled) ctx_.abort->store(true);
    drain();
    if (st && piece_) st = close_piece();
    if (!st && piece_) piece_->abandon();
    clock_.finish(out_.stats);
    out_.status = st;
    return std::move(out_);
  }

 private:
  Result<void> setup() {
    engine_ = io::make_engine({ctx_.config.queue_depth});
    out_.stats.io_engine = engine_->name();
    SB_ASSIGN(auto pool, io::BufferPool::create(ctx_.config.buffers, ctx_.config.buffer_size,
                                                kBlock));
    pool_ = std::make_unique<io::BufferPool>(std::move(pool));
    slots_.resize(pool_->count());
    return ok();
  }

  Result<void> run_loop() {
    SB_TRY(setup());
    std::vector<io::IoCompletion> comps(64);
    while (true) {
      if (ctx_.cancel && ctx_.cancel->load()) return fail(Errc::cancelled, "backup cancelled");
      if (ctx_.abort && ctx_.abort->load())
        return fail(Errc::cancelled, "stopped because another channel failed");
      SB_TRY(issue_reads());
      if (engine_->in_flight() == 0 && queue_done_) return ok();
      clock_.mark(reads_out_ > 0, writes_out_ > 0, false, out_.stats);
      size_t n = engine_->reap(comps, 1, io::Clock::now() + std::chrono::milliseconds(200));
      clock_.mark(reads_out_ > 0, writes_out_ > 0, true, out_.stats);
      for (size_t i = 0; i < n; ++i) SB_TRY(handle(comps[i]));
    }
  }

  // Keeps every free buffer busy with a read of the current file, opening the next file
  // when the current one has all its reads issued.
  Result<void> issue_reads() {
    std::vector<io::IoOp> ops;
    while (pool_->free_count() > 0) {
      if (!current_ || current_->next_offset >= current_->size) {
        current_ = nullptr;
        if (queue_done_) break;
        const FileTask* t = ctx_.queue->next();
        if (!t) {
          queue_done_ = true;
          break;
        }
        SB_TRY(open_source(*t));
        continue;
      }
      uint32_t slot = *pool_->acquire();
      Source* s = current_;
      uint64_t left = s->size - s->next_offset;
      uint32_t want = static_cast<uint32_t>(std::min<uint64_t>(left, pool_->data_size()));
      uint32_t len = s->file.direct ? static_cast<uint32_t>(align_up(want)) : want;
      slots_[slot] = Slot{s, s->next_offset, want, false};
      ops.push_back({io::OpKind::read, s->file.fd.get(), s->next_offset, pool_->data(slot), len,
                     slot});
      s->next_offset += want;
      ++s->ops_out;
      ++reads_out_;
    }
    if (!ops.empty()) SB_TRY(engine_->submit(ops));
    return ok();
  }

  Result<void> open_source(const FileTask& t) {
    auto src = std::make_unique<Source>();
    src->task = &t;
    SB_ASSIGN(src->file, io::open_read(t.path, ctx_.config.direct));
    struct stat st;
    if (::fstat(src->file.fd.get(), &st) != 0)
      return sys_error(errno, "unable to stat '" + t.path + "'");
    if (!S_ISREG(st.st_mode))
      return fail(Errc::invalid_argument, "'" + t.path + "' is no longer a regular file");
    src->size = static_cast<uint64_t>(st.st_size);
    src->mtime_ns = mtime_ns_of(st);
    out_.stats.direct_source = out_.stats.direct_source || src->file.direct;
    if (!piece_) SB_TRY(open_piece());
    FileMeta meta;
    meta.path = t.path;
    meta.size = src->size;
    meta.mode = st.st_mode;
    meta.mtime_ns = src->mtime_ns;
    meta.uid = st.st_uid;
    meta.gid = st.st_gid;
    src->file_id = piece_->add_file(meta);
    auto [block, placement] = piece_->file_frame(src->file_id);
    if (!block) return fail(Errc::no_space, "unable to allocate a file record block");
    uint64_t tag = kMetaTag + next_meta_++;
    io::IoOp op{io::OpKind::write, piece_->fd(), placement.offset, block->data, placement.length,
                tag};
    meta_blocks_.emplace(tag, std::make_pair(std::move(block), src.get()));
    ++src->ops_out;
    ++writes_out_;
    SB_TRY(engine_->submit({&op, 1}));
    sources_.push_back(std::move(src));
    current_ = sources_.back().get();
    return ok();
  }

  Result<void> open_piece() {
    PieceHeader h;
    h.backup_id = ctx_.backup_id;
    h.channel = channel_;
    h.piece_number = ++pieces_made_;
    h.created_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
    h.name = "sb" + std::to_string(ctx_.backup_id) + "-" + ctx_.stamp + "-c" +
             std::to_string(channel_) + "-p" + std::to_string(h.piece_number) + ".sbp";
    SB_ASSIGN(piece_, PieceWriter::create(ctx_.dest_dir, h, ctx_.config.direct));
    out_.stats.direct_sink = piece_->direct();
    return ok();
  }

  Result<void> handle(const io::IoCompletion& c) {
    if (c.tag >= kMetaTag) {
      auto it = meta_blocks_.find(c.tag);
      Source* s = it->second.second;
      uint32_t len = static_cast<uint32_t>(it->second.first->size);
      meta_blocks_.erase(it);
      --writes_out_;
      if (!c.result) return c.result.error().wrap("unable to write piece '" + piece_->path() + "'");
      ++out_.stats.writes;
      out_.stats.bytes_written += len;
      (void)len;
      return op_done(s);
    }
    auto slot = static_cast<uint32_t>(c.tag);
    Slot& sl = slots_[slot];
    if (!sl.writing) return read_done(slot, c);
    --writes_out_;
    if (!c.result)
      return c.result.error().wrap("unable to write piece '" + piece_->path() + "'");
    ++out_.stats.writes;
    out_.stats.bytes_written += *c.result;
    Source* s = sl.src;
    pool_->release(slot);
    return op_done(s);
  }

  Result<void> read_done(uint32_t slot, const io::IoCompletion& c) {
    Slot& sl = slots_[slot];
    Source* s = sl.src;
    --reads_out_;
    if (!c.result)
      return c.result.error().wrap("unable to read '" + s->task->path + "' at offset " +
                                   std::to_string(sl.offset));
    if (*c.result < sl.want)
      return fail(Errc::io, "'" + s->task->path + "' shrank while it was read: expected " +
                                std::to_string(sl.want) + " bytes at offset " +
                                std::to_string(sl.offset) + ", got " +
                                std::to_string(*c.result));
    ++out_.stats.reads;
    out_.stats.bytes_read += sl.want;
    std::byte* data = pool_->data(slot);
    FrameHeader h;
    h.file_id = s->file_id;
    h.offset = sl.offset;
    h.raw_len = sl.want;
    if (all_zero(data, sl.want)) {
      h.type = FrameType::zero;
      h.raw_digest = util::zero_digest(sl.want);
      ++out_.stats.zero_frames;
    } else {
      h.type = FrameType::data;
      h.stored_len = sl.want;
      h.stored_crc = util::crc32c(data, sl.want);
      h.raw_digest = util::digest(data, sl.want);
    }
    ++out_.stats.frames;
    FramePlacement p = piece_->place(h, pool_->header(slot));
    sl.writing = true;
    ++writes_out_;
    io::IoOp op{io::OpKind::write, piece_->fd(), p.offset, pool_->header(slot), p.length, slot};
    return engine_->submit({&op, 1});
  }

  // One operation of `s` finished; when it was the last and all reads are issued, the file
  // is complete in this piece.
  Result<void> op_done(Source* s) {
    if (--s->ops_out > 0 || s->next_offset < s->size) return ok();
    struct stat st;
    if (::fstat(s->file.fd.get(), &st) == 0 &&
        (static_cast<uint64_t>(st.st_size) != s->size || mtime_ns_of(st) != s->mtime_ns)) {
      out_.warnings.push_back("'" + s->task->path +
                              "' changed while it was backed up; its copy holds a mix of "
                              "old and new contents");
    }
    auto& ex = piece_->extents(s->file_id);
    std::sort(ex.begin(), ex.end(),
              [](const Extent& a, const Extent& b) { return a.file_offset < b.file_offset; });
    util::DigestCombiner comb;
    for (const Extent& e : ex) comb.add(e.file_offset, e.raw_len, e.raw_digest);
    piece_->set_file_digest(s->file_id, comb.finish());
    files_in_piece_.push_back(s->file_id);
    ++out_.stats.files;
    if (current_ == s) current_ = nullptr;
    sources_.remove_if([s](const std::unique_ptr<Source>& p) { return p.get() == s; });
    return ok();
  }

  // After a failure: wait for everything in flight so no buffer is freed under the kernel.
  void drain() {
    std::vector<io::IoCompletion> comps(64);
    while (engine_ && engine_->in_flight() > 0)
      engine_->reap(comps, 1, io::Clock::now() + std::chrono::milliseconds(200));
  }

  Result<void> close_piece() {
    clock_.mark(false, false, false, out_.stats);
    SB_ASSIGN(uint32_t crc, piece_->finish());
    clock_.mark(false, true, false, out_.stats);
    out_.stats.bytes_written += kBlock;  // header block written at creation
    catalog::PieceRecord rec;
    rec.name = piece_->name();
    rec.location = ctx_.dest_dir;
    rec.channel = channel_;
    rec.number = pieces_made_;
    rec.size = piece_->size();
    rec.checksum = crc;
    std::vector<catalog::FileRecord> files;
    for (uint32_t id : files_in_piece_) {
      const FileMeta& m = piece_->file(id);
      files.push_back({m.path, m.size, m.mode, m.mtime_ns, m.uid, m.gid, m.digest, {rec.name}});
    }
    SB_TRY(ctx_.catalog->add_piece(ctx_.backup_id, rec, files));
    out_.pieces.push_back(rec);
    ++out_.stats.pieces;
    piece_.reset();
    return ok();
  }

  const BackupContext& ctx_;
  uint32_t channel_;
  ChannelOutcome out_;
  BusyClock clock_;
  std::unique_ptr<io::IoEngine> engine_;
  std::unique_ptr<io::BufferPool> pool_;
  std::vector<Slot> slots_;
  std::list<std::unique_ptr<Source>> sources_;
  Source* current_ = nullptr;
  bool queue_done_ = false;
  uint32_t reads_out_ = 0, writes_out_ = 0;
  std::unique_ptr<PieceWriter> piece_;
  uint32_t pieces_made_ = 0;
  std::vector<uint32_t> files_in_piece_;
  std::map<uint64_t, std::pair<std::unique_ptr<AlignedBlock>, Source*>> meta_blocks_;
  uint64_t next_meta_ = 0;
};

}  // namespace

ChannelOutcome run_backup_channel(const BackupContext& ctx, uint32_t channel) {
  return BackupChannel(ctx, channel).run();
}

}  // namespace stripeback::engine
