#include "engine/backup/backup_channel.h"

#include <sys/stat.h>

#include <algorithm>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <cstring>
#include <thread>

#include "engine/wiring/backends.h"
#include "engine/transform/compress.h"
#include "engine/format/piece_name.h"
#include "engine/pieces/piece_writer.h"
#include "storage/async/buffer_pool.h"
#include "storage/io_loop.h"
#include "util/crash_point.h"
#include "util/crc32c.h"

namespace stripeback::engine {
namespace {

constexpr uint64_t kMetaTag = 1ull << 40;
constexpr int16_t kReadRegion = 0, kCompressedRegion = 1;  // registered with the loop
constexpr auto kIdleWait = std::chrono::milliseconds(200);

using storage::Clock;

struct OpenPiece {
  std::unique_ptr<PieceWriter> writer;
  uint32_t number = 0;
  bool trailer_sent = false;
  uint32_t crc = 0;  // the piece checksum, once the trailer is built
  uint32_t writes_out = 0;
  uint64_t written_end = kBlock;  // end of the writes completed so far (the header at first)
  std::chrono::steady_clock::time_point opened{};  // for checkpoints by time
  bool closing = false;
  std::map<std::string, uint32_t> file_ids;  // path -> id in this piece
};

struct Source {
  const WorkUnit* unit = nullptr;
  bool one_read = false;  // read in one read: not counted in the multiplexing level
  std::unique_ptr<storage::ReadFile> file;
  uint64_t next = 0, end = 0;  // file offsets still to read
  uint32_t ops_out = 0;        // reads and frame writes in flight
  FileMeta meta;
  UnitDone done;
  std::set<std::string> pieces;
  const UnitMap* parent = nullptr;  // the parent's change map (level backups)
  // --check-logical: the block number of the file's first page, when its pages are checked.
  std::optional<uint64_t> first_block;
  // The file's I/O figures (index in ChannelStats::file_io, -1: past the bound), and since
  // when some read of it has been in flight.
  int32_t io = -1;
  uint32_t reads_out = 0;
  Clock::time_point busy_since{};
};

// A frame written from a slot's buffer (a buffer of a level 1 may give several: one per
// run of changed units).
struct FrameOut {
  OpenPiece* piece = nullptr;
  uint64_t piece_end = 0;  // end of the frame in the piece
  uint32_t len = 0;        // bytes of the frame write
};

struct Slot {
  Source* src = nullptr;
  uint64_t offset = 0;
  uint32_t want = 0;  // bytes of file data expected
  bool writing = false;
  std::vector<FrameOut> frames;
  uint32_t frames_left = 0;  // frame writes still in flight
};

// Completion tags of frame writes: the slot, and the frame's index among the slot's.
constexpr int kFrameShift = 20;
constexpr uint64_t kSlotMask = (uint64_t{1} << kFrameShift) - 1;

class BackupChannel {
 public:
  BackupChannel(const BackupContext& ctx, uint32_t channel)
      : ctx_(ctx), channel_(channel), bucket_(ctx.config.rate,
                                              static_cast<double>(ctx.config.buffer_size)),
        target_(ctx.targets[(channel - 1) % ctx.targets.size()]),
        loop_(ctx.config.queue_depth) {
    out_.stats.channel = channel;
    out_.stats.buffers = static_cast<uint32_t>(ctx.config.buffers);
    out_.stats.buffer_size = static_cast<uint32_t>(ctx.config.buffer_size);
    if (ctx.progress) clock_.attach(ctx.progress->channel(channel));
  }

  ChannelOutcome run() {
    auto st = run_loop();
    if (!st && ctx_.abort && st.error().code != Errc::cancelled) ctx_.abort->store(true);
    if (st) st = finish_pieces();
    if (!st) {
      for (auto& p : pieces_)
        if (p->writer) p->writer->abandon();  // held writes of a sequential file fail now
      loop_.drain();
      for (auto& p : pieces_) {
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
    out_.stats.multiplexing = std::max<uint32_t>(1, open_most_);
    loop_.drain();
    loop_.close();  // before the thread's connections go
    out_.stats.backends = thread_counters({target_.storage});
    out_.status = st;
    return std::move(out_);
  }

 private:
  Result<void> setup() {
    // Encrypted frames need room for the tag after the data (in the padding block).
    size_t tail = ctx_.keys ? kBlock : 0;
    SB_ASSIGN(auto pool, io::BufferPool::create(ctx_.config.buffers,
                                                ctx_.config.buffer_size + tail, kBlock));
    pool_ = std::make_unique<io::BufferPool>(std::move(pool));
    slots_.resize(pool_->count());
    if (ctx_.config.compress_level != 0) {
      // One output buffer per slot: a compressed frame goes out from there.
      int level = ctx_.config.compress_level;
      if (level == kCompressAuto) {
        auto_ = std::make_unique<AutoLevel>(ctx_.config.cpu_budget);
        level = auto_->level();
        window_ = Window{std::chrono::steady_clock::now(), 0, 0, 0};
      }
      compressor_ = std::make_unique<Compressor>(level);
      size_t cap = align_up(Compressor::bound(ctx_.config.buffer_size)) + tail;
      SB_ASSIGN(auto cpool, io::BufferPool::create(pool_->count(), cap, kBlock));
      cpool_ = std::make_unique<io::BufferPool>(std::move(cpool));
    }
    // Region 0: the read buffers (and uncompressed frames); 1: compressed frames.
    std::vector<std::pair<std::byte*, size_t>> regions{pool_->region()};
    if (cpool_) regions.push_back(cpool_->region());
    loop_.register_buffers(std::move(regions));
    return ok();
  }

  // A checkpoint is due when the open piece holds the checkpoint's bytes or has been open
  // for its interval (ChannelConfig). The channel then issues no more reads until those in
  // flight are written, closes the piece and goes on in a new one: each piece then holds
  // every file's frames in one run, with no frame of it left for a later piece.
  bool checkpoint_due() const {
    if (pieces_.empty() || pieces_.back()->closing || !pieces_.back()->writer) return false;
    const OpenPiece& p = *pieces_.back();
    if (p.writer->file_count() == 0) return false;
    const uint64_t bytes = ctx_.config.checkpoint_bytes;
    const auto interval = ctx_.config.checkpoint_interval;
    return (bytes && p.writer->projected_size(0) >= bytes) ||
           (interval.count() > 0 && std::chrono::steady_clock::now() - p.opened >= interval);
  }

  bool past_deadline() const {
    return ctx_.deadline && std::chrono::steady_clock::now() >= *ctx_.deadline;
  }

  Result<void> run_loop() {
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
        if (!pieces_.empty() && !pieces_.back()->closing && pieces_.back()->writer) {
          pieces_.back()->closing = true;
          ++out_.stats.checkpoints;
        }
      }
      SB_TRY(close_pieces());
      if (loop_.in_flight() == 0) {
        if (stopping_ || (queue_done_ && sources_.empty())) return ok();
        if (throttle > Clock::duration::zero()) {
          // Nothing in flight and no tokens: this wait is the rate limit at work.
          clock_.mark(false, false, false, out_.stats);
          clock_.note(ChannelState::throttled);
          std::this_thread::sleep_for(std::min<Clock::duration>(throttle, kIdleWait));
          auto t0 = out_.stats.wait_s;
          clock_.mark(false, false, true, out_.stats);
          out_.stats.throttle_s += out_.stats.wait_s - t0;
        }
        continue;
      }
      auto timeout = throttle > Clock::duration::zero()
                         ? std::min<Clock::duration>(throttle, kIdleWait)
                         : Clock::duration(kIdleWait);
      clock_.mark(reads_out_ > 0, writes_out_ > 0, false, out_.stats);
      size_t n = loop_.reap(comps, 1, Clock::now() + timeout);
      clock_.mark(reads_out_ > 0, writes_out_ > 0, true, out_.stats);
      for (size_t i = 0; i < n; ++i) SB_TRY(handle(comps[i]));
    }
  }

  // Whether the unit is read in one read, as one frame: a whole file planned to fit in one
  // buffer. Such units cannot interleave with others in a piece, so in round-robin order
  // they do not count against the multiplexing level (see open_units()).
  bool one_read(const WorkUnit& u) const {
    return ctx_.config.read_order == ReadOrder::round_robin && u.sections == 1 &&
           u.length <= ctx_.config.buffer_size;
  }

  // Whether every open unit has all its reads issued: only their last reads and frame
  // writes are still out.
  bool all_issued() const {
    return std::all_of(sources_.begin(), sources_.end(),
                       [](const std::unique_ptr<Source>& s) { return s->next >= s->end; });
  }

  // Open units of several reads: the multiplexing level in effect. One counts until it is
  // done, its last reads and frame writes included, so that with --max-open-files 1 a file's
  // frames are never mixed with the next large file's (a restore of one file reads only its
  // own pieces).
  size_t multiplexed() const {
    return static_cast<size_t>(std::count_if(
        sources_.begin(), sources_.end(), [](const std::unique_ptr<Source>& s) { return !s->one_read; }));
  }

  // Open units with reads still to issue: the files being read at once. The previous set's
  // units that only wait for their last reads do not count, so the level reached stays
  // within the set's size (the job's multiplexing level).
  size_t reading() const {
    return static_cast<size_t>(std::count_if(sources_.begin(), sources_.end(), [](const auto& s) {
      return s->next < s->end;
    }));
  }

  // Opens units of the current set (then the next set) up to the multiplexing level: at
  // most `max_open_files` units of several reads, and besides them
  // units read in one read (one_read()) while there are buffers for them. In all at most
  // max(`max_open_files`, min(buffers, kMostOneRead)) units are open, so a channel holds
  // no more descriptors than that. In round-robin order the next set is taken as soon as
  // the open units have all their reads issued, so the reads in flight do not drain to
  // none at each set's end; with --partial (set order) a set's units are all done first.
  Result<void> open_units() {
    const uint32_t most = std::max<uint32_t>(1, ctx_.config.max_open_files);
    const size_t most_open = std::max<size_t>(most, std::min(pool_->count(), kMostOneRead));
    while (true) {
      if (!set_ || set_pos_ >= set_->size()) {
        if (queue_done_) return ok();
        // A set's units are multiplexed together; the next set's start only once this
        // set's units have all their reads out (round-robin), or are done (set order).
        if (set_ && !sources_.empty() &&
            (ctx_.config.read_order != ReadOrder::round_robin || !all_issued()))
          return ok();
        set_ = ctx_.queue->next(channel_);
        set_pos_ = 0;
        if (!set_) {
          queue_done_ = true;
          return ok();
        }
        continue;
      }
      const WorkUnit& u = (*set_)[set_pos_];
      // Units with all their reads out stay open meanwhile, within the same bound.
      if (sources_.size() >= most_open || (!one_read(u) && multiplexed() >= most)) return ok();
      ++set_pos_;
      SB_TRY(open_source(u));
      open_most_ = std::max<uint32_t>(open_most_,
                                      static_cast<uint32_t>(std::min<size_t>(reading(), most)));
    }
  }

  // Keeps free buffers busy with reads over the open units (round-robin, or in set order),
  // as far as the rate limits allow. Returns how long to wait for tokens (zero if not
  // throttled).
  Result<Clock::duration> issue_reads() {
    SB_TRY(open_units());
    const bool in_order = ctx_.config.read_order == ReadOrder::set_order;
    // The buffers are shared among the units of several reads (a unit read in one read
    // needs one).
    size_t per_source = in_order ? pool_->count()
                                 : std::max<size_t>(1, pool_->count() /
                                                           std::max<size_t>(1, multiplexed()));
    if (in_order) rr_ = sources_.begin();  // sources_ is in set order
    Clock::duration wait{};
    size_t idle_rounds = 0;
    while (pool_->free_count() > 0 && !sources_.empty() && idle_rounds < sources_.size()) {
      if (rr_ == sources_.end()) rr_ = sources_.begin();
      Source* s = rr_->get();
      if (s->next >= s->end || s->ops_out >= per_source) {
        ++rr_;
        ++idle_rounds;
        continue;
      }
      if (!in_order) ++rr_;  // in order, a unit keeps the buffers until it has all it needs
      idle_rounds = 0;
      uint32_t want = static_cast<uint32_t>(std::min<uint64_t>(s->end - s->next, ctx_.config.buffer_size));
      // The channel's own bucket first (only this thread takes from it), then the job's,
      // which takes the tokens only if the read goes.
      wait = bucket_.wait_time(want);
      if (wait == Clock::duration::zero() && ctx_.job_bucket)
        wait = ctx_.job_bucket->take(want);
      if (wait > Clock::duration::zero()) break;
      (void)bucket_.take(want);
      uint32_t slot = *pool_->acquire();
      uint32_t len = s->file->direct() ? static_cast<uint32_t>(align_up(want)) : want;
      Slot& sl = slots_[slot];
      sl.src = s;
      sl.offset = s->next;
      sl.want = want;
      sl.writing = false;
      sl.frames.clear();
      sl.frames_left = 0;
      SB_TRY(loop_.submit({s->file.get(), storage::OpKind::read, s->next, pool_->data(slot), len,
                           slot, kReadRegion}));
      s->next += want;
      ++s->ops_out;
      ++reads_out_;
      if (s->reads_out++ == 0) s->busy_since = clock_.last();
    }
    if (wait > Clock::duration::zero()) out_.stats.throttled = true;
    return wait;
  }

  Result<void> open_source(const WorkUnit& u) {
    auto src = std::make_unique<Source>();
    src->unit = &u;
    src->one_read = one_read(u);
    SB_ASSIGN(Place place, place_of(u.file->path));
    SB_ASSIGN(src->file, place.storage->open_read(
                             place.at, {ctx_.config.direct == io::Direct::yes}));
    SB_ASSIGN(const storage::FileInfo st, src->file->stat());
    if (!S_ISREG(st.mode))
      return fail(Errc::invalid_argument, "'" + u.file->path + "' is no longer a regular file");
    uint64_t size = st.size;
    src->next = u.offset;
    // A whole file is read to its size at open; a section to its planned end.
    src->end = u.sections == 1 ? size : u.offset + u.length;
    out_.stats.direct_source = out_.stats.direct_source || src->file->direct();
    src->meta.path = u.file->path;
    src->meta.size = u.sections == 1 ? size : u.file->size;
    src->meta.mode = st.mode;
    src->meta.mtime_ns = st.mtime_ns;
    src->meta.uid = st.uid;
    src->meta.gid = st.gid;
    src->meta.ctime_ns = st.ctime_ns;
    src->meta.ino = st.ino;
    src->done.unit = &u;
    src->done.size = src->meta.size;
    src->done.mode = st.mode;
    src->done.mtime_ns = src->meta.mtime_ns;
    src->done.uid = st.uid;
    src->done.gid = st.gid;
    if (const uint32_t unit = ctx_.change_unit) {
      // Sections start on multiples of the unit (section alignment is a multiple of it).
      src->done.first_unit = src->next / unit;
      uint64_t last = units_of(src->end, unit);
      src->done.unit_digests.resize(last > src->done.first_unit ? last - src->done.first_unit : 0);
      if (ctx_.parents)
        if (auto it = ctx_.parents->find(u.file->path); it != ctx_.parents->end())
          src->parent = &it->second;
    }
    if (ctx_.validator) src->first_block = ctx_.validator->first_block(u.file->path);
    src->io = file_io_.entry(u.file->path, out_.stats);
    // Register it in the current piece right away, so even an empty file has its record.
    if (!ctx_.validate_only) {
      SB_ASSIGN(OpenPiece * p, piece_for(0));
      SB_TRY(ensure_registered(*src, *p));
    }
    sources_.push_back(std::move(src));
    if (sources_.back()->next >= sources_.back()->end) SB_TRY(maybe_done(sources_.back().get()));
    return ok();
  }

  // The piece the next frame of `frame_length` bytes goes to: the current one, or a new one
  // when that frame would pass the size limit.
  Result<OpenPiece*> piece_for(uint64_t frame_length) {
    if (ctx_.validate_only)  // a validation writes nothing, anywhere
      return fail(Errc::invalid_argument, "backup --validate does not write pieces");
    OpenPiece* cur = pieces_.empty() || pieces_.back()->closing ? nullptr : pieces_.back().get();
    uint64_t limit = ctx_.config.max_piece_size;
    if (cur && limit && cur->writer->file_count() > 0 &&
        cur->writer->projected_size(frame_length + 2 * kBlock) > limit) {
      cur->closing = true;
      cur = nullptr;
    }
    if (!cur) {
      PieceHeader h;
      h.backup_id = ctx_.backup_id;
      h.channel = channel_;
      h.piece_number = ++pieces_made_;
      if (compressor_) h.codec = Codec::zstd;
      h.created_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
      h.catalog_id = ctx_.catalog_id;
      h.name = piece_name(ctx_.backup_id, ctx_.catalog_id, ctx_.stamp, channel_, h.piece_number);
      auto p = std::make_unique<OpenPiece>();
      p->number = h.piece_number;
      p->opened = std::chrono::steady_clock::now();
      storage::CreateOptions co;
      co.direct = ctx_.config.direct == io::Direct::yes;
      co.set_id = ctx_.backup_id;
      co.channel = channel_;
      co.number = h.piece_number;
      SB_ASSIGN(auto file, target_.storage->create(target_.dir.join(h.name), co));
      SB_ASSIGN(p->writer, PieceWriter::start(std::move(file), target_.storage->caps(), h, ctx_.keys));
      out_.stats.direct_sink = p->writer->direct();
      pieces_.push_back(std::move(p));
      cur = pieces_.back().get();
      SB_ASSIGN(auto placed, cur->writer->header_block());
      SB_TRY(write_meta(*cur, std::move(placed)));
    }
    return cur;
  }

  // Makes sure `s` has a file entry (and its FILE frame) in piece `p`.
  Result<void> ensure_registered(Source& s, OpenPiece& p) {
    if (p.file_ids.count(s.meta.path)) {
      s.pieces.insert(p.writer->name());
      return ok();
    }
    uint32_t id = p.writer->add_file(s.meta);
    p.file_ids[s.meta.path] = id;
    s.pieces.insert(p.writer->name());
    SB_ASSIGN(auto placed, p.writer->file_frame(id));
    return write_meta(p, std::move(placed));
  }

  // Writes a block the piece writer built (header, file record, trailer).
  Result<void> write_meta(OpenPiece& p, PieceWriter::PlacedBlock placed) {
    auto& [block, placement] = placed;
    uint64_t tag = kMetaTag + next_meta_++;
    storage::Request r{&p.writer->file(), storage::OpKind::write, placement.offset, block->data,
                       placement.length, tag};
    meta_.emplace(tag, Meta{std::move(block), &p, placement.offset + placement.length});
    ++p.writes_out;
    ++writes_out_;
    return loop_.submit(r);
  }

  Result<void> handle(const storage::Completion& c) {
    if (c.tag >= kMetaTag) {
      auto it = meta_.find(c.tag);
      OpenPiece* p = it->second.piece;
      uint64_t len = it->second.block->size;
      uint64_t end = it->second.piece_end;
      meta_.erase(it);
      --writes_out_;
      --p->writes_out;
      if (!c.result)
        return c.result.error().wrap("unable to write piece '" + p->writer->path() + "'");
      if (*c.result < len)
        return fail(Errc::io, "unable to write piece '" + p->writer->path() + "': " +
                                  std::to_string(*c.result) + " of " + std::to_string(len) +
                                  " bytes written at offset " + std::to_string(end - len));
      p->written_end = std::max(p->written_end, end);
      add_wait(out_.stats.write_waits, clock_.take_wait_ns());
      ++out_.stats.writes;
      out_.stats.bytes_written += len;
      return ok();
    }
    auto slot = static_cast<uint32_t>(c.tag & kSlotMask);
    Slot& sl = slots_[slot];
    if (!sl.writing) return read_done(slot, c);
    FrameOut& fo = sl.frames[c.tag >> kFrameShift];
    --writes_out_;
    --fo.piece->writes_out;
    if (!c.result)
      return c.result.error().wrap("unable to write piece '" + fo.piece->writer->path() + "'");
    if (*c.result < fo.len)
      return fail(Errc::io, "unable to write piece '" + fo.piece->writer->path() + "': " +
                                std::to_string(*c.result) + " of " + std::to_string(fo.len) +
                                " bytes written at offset " +
                                std::to_string(fo.piece_end - fo.len));
    fo.piece->written_end = std::max(fo.piece->written_end, fo.piece_end);
    add_wait(out_.stats.write_waits, clock_.take_wait_ns());
    ++out_.stats.writes;
    out_.stats.bytes_written += *c.result;
    if (--sl.frames_left > 0) return ok();
    return slot_done(slot);
  }

  // The slot's data is all written (or none of it needed writing): it goes back to the pool.
  Result<void> slot_done(uint32_t slot) {
    Slot& sl = slots_[slot];
    Source* s = sl.src;
    --s->ops_out;
    sl.writing = false;
    sl.src = nullptr;
    pool_->release(slot);
    return maybe_done(s);
  }

  Result<void> read_done(uint32_t slot, const storage::Completion& c) {
    Slot& sl = slots_[slot];
    Source* s = sl.src;
    --reads_out_;
    const std::string& path = s->meta.path;
    if (!c.result)
      return c.result.error().wrap("unable to read '" + path + "' at offset " +
                                   std::to_string(sl.offset));
    if (*c.result < sl.want)
      return fail(Errc::io, "'" + path + "' shrank while it was read: expected " +
                                std::to_string(sl.want) + " bytes at offset " +
                                std::to_string(sl.offset) + ", got " +
                                std::to_string(*c.result));
    ++out_.stats.reads;
    out_.stats.bytes_read += sl.want;
    const int64_t waited = clock_.take_wait_ns();
    add_wait(out_.stats.read_waits, waited);
    if (s->io >= 0) {
      catalog::IoFigures& f = out_.stats.file_io[static_cast<size_t>(s->io)].read;
      add_io(f, sl.want, waited);
      if (--s->reads_out == 0)
        f.busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.last() -
                                                                          s->busy_since)
                         .count();
    }
    clock_.add_bytes(sl.want);
    if (ctx_.bytes_done) ctx_.bytes_done->fetch_add(sl.want, std::memory_order_relaxed);
    if (s->first_block) SB_TRY(check_pages(*s, sl.offset, pool_->data(slot), sl.want));
    sl.writing = true;
    if (ctx_.validate_only) return slot_done(slot);
    const uint32_t unit = ctx_.change_unit;
    if (!unit) {
      SB_TRY(emit_frame(slot, 0, sl.want, cpool_ ? cpool_->header(slot) : nullptr,
                        cpool_ ? cpool_->data_size() : 0));
      return ok();
    }
    // Level backups: hash every change unit, then write each run of units whose digest
    // differs from the parent's (all of them without a parent) as one frame.
    std::byte* data = pool_->data(slot);
    const uint64_t u0 = sl.offset / unit;
    const uint32_t n = static_cast<uint32_t>(units_of(sl.want, unit));
    changed_.assign(n, true);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t len = std::min<uint32_t>(unit, sl.want - i * unit);
      util::Digest d = util::digest(data + uint64_t{i} * unit, len);
      s->done.unit_digests[u0 + i - s->done.first_unit] = d;
      const UnitMap* par = s->parent;
      changed_[i] = !(par && u0 + i < par->digests.size() &&
                      unit_length(par->size, unit, u0 + i) == len && par->digests[u0 + i] == d);
    }
    // Compressed frames of several runs share the slot's output buffer while it lasts; a
    // run that finds no room left is stored raw.
    std::byte* packed = cpool_ ? cpool_->header(slot) : nullptr;
    size_t packed_left = cpool_ ? kBlock + cpool_->data_size() : 0;
    const size_t tail = ctx_.keys ? kBlock : 0;
    for (uint32_t i = 0; i < n;) {
      if (!changed_[i]) {
        ++i;
        continue;
      }
      uint32_t j = i;
      while (j < n && changed_[j]) ++j;
      const uint32_t pos = i * unit;
      const uint32_t len = std::min<uint32_t>(j * unit, sl.want) - pos;
      s->done.units_written += j - i;
      size_t need = kBlock + align_up(Compressor::bound(len)) + tail;
      const bool room = packed && packed_left >= need;
      SB_TRY(emit_frame(slot, pos, len, room ? packed : nullptr,
                        room ? need - kBlock - tail : 0));
      if (room) {
        packed += need;
        packed_left -= need;
      }
      i = j;
    }
    if (sl.frames.empty()) return slot_done(slot);
    return ok();
  }

  // --check-logical: checks every whole page of the `len` bytes read at file offset `off`.
  // A page that fails is read again (a running database may be writing it) up to
  // kPageRetries times, a short pause apart; a page valid then replaces the one read. One
  // still failing is reported unless the validator judges it newer (a running database is
  // rewriting it, and its redo will replace it).
  Result<void> check_pages(Source& s, uint64_t off, std::byte* data, uint32_t len) {
    const PageValidator& v = *ctx_.validator;
    const uint32_t ps = v.page_size();
    if (off % ps != 0) return ok();  // buffers start at multiples of the page size
    const double t0 = thread_cpu_seconds();
    for (uint32_t at = 0; at + ps <= len; at += ps) {
      std::byte* page = data + at;
      ++out_.pages.checked;
      const uint64_t block = *s.first_block + (off + at) / ps;
      std::string why = v.check_block(block, page);
      if (why.empty()) continue;
      for (int attempt = 0; attempt < kPageRetries && !why.empty(); ++attempt) {
        std::this_thread::sleep_for(kPageRetryPause);
        if (!retry_page_ || retry_page_->size < ps) {
          retry_page_ = AlignedBlock::make(std::max<size_t>(ps, kBlock));
          if (!retry_page_) return fail(Errc::no_space, "out of memory checking pages");
        }
        ++out_.pages.retried;
        auto got = s.file->read_at(retry_page_->data, ps, off + at);
        if (!got || *got < ps) break;
        why = v.check_block(block, retry_page_->data);
        if (why.empty()) {
          ++out_.pages.recovered;
          std::memcpy(page, retry_page_->data, ps);
        }
      }
      if (why.empty()) continue;
      why = v.judge_failed(page, std::move(why));
      if (why.empty()) {
        ++out_.pages.newer;
        continue;
      }
      out_.pages.corrupt.push_back({s.meta.path, (off + at) / ps, off + at, std::move(why)});
    }
    out_.stats.page_check_s += thread_cpu_seconds() - t0;
    return ok();
  }

  // Frames `len` bytes of the slot's data from `pos` and writes them. The frame's header
  // block is the one before the data in the slot: for a run inside the buffer that is the
  // tail of an unchanged unit (runs are maximal and units at least two blocks), whose
  // bytes are no longer needed.
  Result<void> emit_frame(uint32_t slot, uint32_t pos, uint32_t len, std::byte* packed,
                          size_t packed_cap) {
    Slot& sl = slots_[slot];
    Source* s = sl.src;
    const std::string& path = s->meta.path;
    // The piece must have room for the frame at its largest (stored raw) before the
    // block is encoded at its place there.
    SB_ASSIGN(OpenPiece * p, piece_for(frame_bound(len, ctx_.keys != nullptr) + kBlock +
                                       align_up(s->meta.path.size() + 64)));
    SB_TRY(ensure_registered(*s, *p));
    FrameHeader fh;
    fh.type = FrameType::data;
    fh.file_id = p->file_ids[path];
    fh.offset = sl.offset + pos;
    fh.raw_len = len;
    // Auto may choose level 0: the frame is stored raw for now.
    const bool compress = compressor_ && compressor_->level() > 0 && packed;
    std::byte* frame_at = pos == 0 ? pool_->header(slot) : pool_->data(slot) + pos - kBlock;
    FrameBuffers buffers{frame_at, compress ? packed : nullptr, compress ? packed_cap : 0};
    SB_ASSIGN(EncodedFrame ef, encode_frame(fh, p->writer->next(), buffers,
                                            {compress ? compressor_.get() : nullptr,
                                             p->writer->cipher()}));
    const FrameHeader& h = ef.header;
    if (h.type == FrameType::zero) {
      ++out_.stats.zero_frames;
    } else if (compressor_) {
      out_.stats.compress_s += ef.compress_cpu_s;
      out_.stats.bytes_compressed_in += len;
      out_.stats.bytes_compressed_out += h.compressed ? h.stored_len - (h.sealed ? kTagSize : 0)
                                                      : len;
      out_.stats.level_bytes[compressor_->level()] += len;
      if (auto_) adapt_level();
    }
    out_.stats.encrypt_s += ef.seal_cpu_s;
    ++out_.stats.frames;
    s->done.extents.push_back({fh.offset, len, ef.raw_digest});
    FramePlacement pl = p->writer->add(ef);
    std::byte* frame = ef.block;
    const uint64_t tag = slot | (uint64_t{sl.frames.size()} << kFrameShift);
    sl.frames.push_back({p, pl.offset + pl.length, pl.length});
    ++sl.frames_left;
    ++writes_out_;
    ++p->writes_out;
    return loop_.submit({&p->writer->file(), storage::OpKind::write, pl.offset, frame, pl.length,
                         tag, h.compressed ? kCompressedRegion : kReadRegion});
  }

  // A unit whose reads are all issued and whose frames are all written is done here; it
  // counts as backed up once the pieces holding it are finished.
  Result<void> maybe_done(Source* s) {
    if (s->ops_out > 0 || s->next < s->end) return ok();
    if (ctx_.change_unit && !s->done.unit_digests.empty() && !ctx_.validate_only) {
      // The unit digests of what was read go into a map frame beside the file's frames.
      DigestMap map{ctx_.change_unit, s->done.first_unit * ctx_.change_unit,
                    s->done.unit_digests};
      SB_ASSIGN(OpenPiece * p, piece_for(PieceWriter::map_frame_bound(map.digests.size())));
      SB_TRY(ensure_registered(*s, *p));
      SB_ASSIGN(auto placed, p->writer->map_frame(p->file_ids[s->meta.path], map));
      SB_TRY(write_meta(*p, std::move(placed)));
    }
    // A whole file is compared with itself when it was opened; a section with the plan, as
    // the sections of one file are read at different times.
    const bool whole = s->unit->sections == 1;
    const uint64_t size = whole ? s->meta.size : s->unit->file->size;
    const int64_t mtime = whole ? s->meta.mtime_ns : s->unit->file->mtime_ns;
    auto now_st = s->file->stat();
    s->done.changed = now_st && (now_st->size != size || now_st->mtime_ns != mtime);
    s->done.pieces.assign(s->pieces.begin(), s->pieces.end());
    finished_.push_back(std::move(s->done));
    if (s->unit->section + 1 == s->unit->sections || s->unit->sections == 1) ++out_.stats.files;
    auto it = std::find_if(sources_.begin(), sources_.end(),
                           [s](const std::unique_ptr<Source>& p) { return p.get() == s; });
    if (rr_ == it) ++rr_;
    sources_.erase(it);
    return ok();
  }

  // Pieces marked closing: once their frames are written, the trailer goes out; once that
  // is written too, the piece is made durable and recorded.
  Result<void> close_pieces() {
    for (auto& p : pieces_) {
      if (!p->writer || !p->closing || p->writes_out > 0) continue;
      if (!p->trailer_sent) {
        SB_ASSIGN(auto placed, p->writer->trailer_block(&p->crc));
        p->trailer_sent = true;
        SB_TRY(write_meta(*p, std::move(placed)));
        continue;
      }
      clock_.mark(reads_out_ > 0, writes_out_ > 0, false, out_.stats);
      SB_TRY(p->writer->complete());
      if (target_.storage->caps().dir_sync) SB_TRY(target_.storage->sync_dir(target_.dir));
      util::crash_point("piece-synced");
      // The thread was blocked on the target's sync: a wait for writes.
      clock_.mark(false, true, true, out_.stats);
      add_wait(out_.stats.write_waits, clock_.take_wait_ns());
      catalog::PieceRecord rec;
      rec.name = p->writer->name();
      rec.location = target_.dir.str();
      rec.channel = channel_;
      rec.number = p->number;
      rec.size = p->writer->size();
      rec.checksum = p->crc;
      if (auto m = p->writer->file().placement()) {
        catalog::MediaLocation ml;
        ml.block_size = m->block_size;
        ml.bytes = m->bytes;
        for (const auto& sp : m->spans)
          ml.spans.push_back({sp.volume_id, sp.drive, sp.file, sp.block, sp.first_seq, sp.blocks,
                              sp.address});
        rec.media = std::move(ml);
      }
      if (ctx_.piece_durable) ctx_.piece_durable(rec);
      out_.pieces.push_back(rec);
      ++out_.stats.pieces;
      p->writer.reset();
    }
    return ok();
  }

  // At the end: closes every piece, then the units finished by now are in durable pieces.
  Result<void> finish_pieces() {
    for (auto& p : pieces_) p->closing = true;
    std::vector<storage::Completion> comps(64);
    while (true) {
      SB_TRY(close_pieces());
      if (std::none_of(pieces_.begin(), pieces_.end(), [](const auto& p) { return p->writer != nullptr; }))
        break;
      clock_.mark(false, writes_out_ > 0, false, out_.stats);
      size_t n = loop_.reap(comps, 1, Clock::now() + kIdleWait);
      clock_.mark(false, writes_out_ > 0, true, out_.stats);
      for (size_t i = 0; i < n; ++i) SB_TRY(handle(comps[i]));
    }
    for (auto& d : finished_) out_.units.push_back(std::move(d));
    finished_.clear();
    return ok();
  }

  struct Meta {
    std::unique_ptr<AlignedBlock> block;
    OpenPiece* piece;
    uint64_t piece_end;
  };

  const BackupContext& ctx_;
  uint32_t channel_;
  TokenBucket bucket_;
  ChannelOutcome out_;
  BusyClock clock_;
  PieceTarget target_;
  storage::IoLoop loop_;
  std::unique_ptr<io::BufferPool> pool_;
  // --compress auto: the level follows what this thread did over windows of frames.
  void adapt_level() {
    if (++window_.frames < 8) return;
    auto now = std::chrono::steady_clock::now();
    double wall = std::chrono::duration<double>(now - window_.start).count();
    if (wall < 0.25) return;
    double idle = out_.stats.wait_s - out_.stats.throttle_s;
    int level = auto_->update(wall, idle - window_.idle0, out_.stats.compress_s - window_.cpu0);
    if (level != compressor_->level()) compressor_->set_level(level);
    window_ = Window{now, idle, out_.stats.compress_s, 0};
  }
  struct Window {
    std::chrono::steady_clock::time_point start;
    double idle0 = 0, cpu0 = 0;
    uint32_t frames = 0;
  };
  std::unique_ptr<AutoLevel> auto_;
  Window window_;
  std::unique_ptr<Compressor> compressor_;
  std::unique_ptr<io::BufferPool> cpool_;  // compressed frames, slot for slot with pool_
  std::vector<Slot> slots_;
  std::vector<bool> changed_;  // per unit of the buffer being framed
  std::list<std::unique_ptr<Source>> sources_;
  std::list<std::unique_ptr<Source>>::iterator rr_ = sources_.end();
  const WorkSet* set_ = nullptr;
  size_t set_pos_ = 0;
  bool queue_done_ = false;
  bool stopping_ = false;
  bool draining_ = false;  // a checkpoint waits for the reads in flight (checkpoint_due())
  uint32_t reads_out_ = 0, writes_out_ = 0;
  FileIoIndex file_io_;
  uint32_t open_most_ = 0;  // most units read at once: the multiplexing level reached
  // Most units open at once with those read in one read (each takes one buffer).
  static constexpr size_t kMostOneRead = 32;
  std::vector<std::unique_ptr<OpenPiece>> pieces_;
  uint32_t pieces_made_ = 0;
  std::vector<UnitDone> finished_;
  std::unique_ptr<AlignedBlock> retry_page_;  // a page read again (check_pages)
  static constexpr int kPageRetries = 3;
  static constexpr std::chrono::milliseconds kPageRetryPause{50};
  std::map<uint64_t, Meta> meta_;
  uint64_t next_meta_ = 0;
};

}  // namespace

ChannelOutcome run_backup_channel(const BackupContext& ctx, uint32_t channel) {
  return BackupChannel(ctx, channel).run();
}

}  // namespace stripeback::engine
