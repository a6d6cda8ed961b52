// The channel's units: opened from the work queue up to the multiplexing level, read into
// free buffers at stripe-aligned offsets as the rate limits allow, each read checked and
// handed to framing (channel_frames.cc), and a unit done once its frames are written.
#include <sys/stat.h>

#include <algorithm>

#include "engine/backup/channel_state.h"
#include "engine/wiring/backends.h"

namespace stripeback::engine::backup_internal {
namespace {

// Most units open at once with those read in one read (each takes one buffer).
constexpr size_t kMostOneRead = 32;

}  // namespace

// Whether the unit is read in one read, as one frame: a whole file planned to fit in one
// buffer. Such units cannot interleave with others in a piece, so in round-robin order
// they do not count against the multiplexing level (see open_units()).
bool BackupChannel::one_read(const WorkUnit& u) const {
  return ctx_.config.read_order == ReadOrder::round_robin && u.sections == 1 &&
         u.length <= ctx_.config.buffer_size;
}

// Whether every open unit has all its reads issued: only their last reads and frame
// writes are still out.
bool BackupChannel::all_issued() const {
  return std::all_of(units_.open.begin(), units_.open.end(),
                     [](const std::unique_ptr<Source>& s) { return s->next >= s->end; });
}

// Open units of several reads: the multiplexing level in effect. One counts until it is
// done, its last reads and frame writes included, so that with --max-open-files 1 a file's
// frames are never mixed with the next large file's (a restore of one file reads only its
// own pieces).
size_t BackupChannel::multiplexed() const {
  return static_cast<size_t>(
      std::count_if(units_.open.begin(), units_.open.end(),
                    [](const std::unique_ptr<Source>& s) { return !s->one_read; }));
}

// Open units with reads still to issue: the files being read at once. The previous set's
// units that only wait for their last reads do not count, so the level reached stays
// within the set's size (the job's multiplexing level).
size_t BackupChannel::reading() const {
  return static_cast<size_t>(std::count_if(units_.open.begin(), units_.open.end(),
                                           [](const auto& s) { return s->next < s->end; }));
}

// Opens units of the current set (then the next set) up to the multiplexing level: at
// most `max_open_files` units of several reads, and besides them
// units read in one read (one_read()) while there are buffers for them. In all at most
// max(`max_open_files`, min(buffers, kMostOneRead)) units are open, so a channel holds
// no more descriptors than that. In round-robin order the next set is taken as soon as
// the open units have all their reads issued, so the reads in flight do not drain to
// none at each set's end; with --partial (set order) a set's units are all done first.
Result<void> BackupChannel::open_units() {
  const uint32_t most = std::max<uint32_t>(1, ctx_.config.max_open_files);
  const size_t most_open = std::max<size_t>(most, std::min(buffers_.pool->count(), kMostOneRead));
  while (true) {
    if (!units_.set || units_.set_pos >= units_.set->size()) {
      if (units_.queue_done) return ok();
      // A set's units are multiplexed together; the next set's start only once this
      // set's units have all their reads out (round-robin), or are done (set order).
      if (units_.set && !units_.open.empty() &&
          (ctx_.config.read_order != ReadOrder::round_robin || !all_issued()))
        return ok();
      units_.set = ctx_.queue->next(channel_);
      units_.set_pos = 0;
      if (!units_.set) {
        units_.queue_done = true;
        return ok();
      }
      continue;
    }
    const WorkUnit& u = (*units_.set)[units_.set_pos];
    // Units with all their reads out stay open meanwhile, within the same bound.
    if (units_.open.size() >= most_open || (!one_read(u) && multiplexed() >= most)) return ok();
    ++units_.set_pos;
    SB_TRY(open_source(u));
    units_.most =
        std::max<uint32_t>(units_.most, static_cast<uint32_t>(std::min<size_t>(reading(), most)));
  }
}

// Keeps free buffers busy with reads over the open units (round-robin, or in set order),
// as far as the rate limits allow. Returns how long to wait for tokens (zero if not
// throttled).
Result<Clock::duration> BackupChannel::issue_reads() {
  SB_TRY(open_units());
  const bool in_order = ctx_.config.read_order == ReadOrder::set_order;
  // The buffers are shared among the units of several reads (a unit read in one read
  // needs one).
  size_t per_source =
      in_order ? buffers_.pool->count()
               : std::max<size_t>(1, buffers_.pool->count() / std::max<size_t>(1, multiplexed()));
  if (in_order) units_.next = units_.open.begin();  // units_.open is in set order
  Clock::duration wait{};
  size_t idle_rounds = 0;
  while (buffers_.pool->free_count() > 0 && !units_.open.empty() &&
         idle_rounds < units_.open.size()) {
    if (units_.next == units_.open.end()) units_.next = units_.open.begin();
    Source* s = units_.next->get();
    if (s->next >= s->end || s->ops_out >= per_source) {
      ++units_.next;
      ++idle_rounds;
      continue;
    }
    if (!in_order) ++units_.next;  // in order, a unit keeps the buffers until it has all it needs
    idle_rounds = 0;
    uint32_t want =
        static_cast<uint32_t>(std::min<uint64_t>(s->end - s->next, ctx_.config.buffer_size));
    // The channel's own bucket first (only this thread takes from it), then the job's,
    // which takes the tokens only if the read goes.
    wait = bucket_.wait_time(want);
    if (wait == Clock::duration::zero() && ctx_.job_bucket) wait = ctx_.job_bucket->take(want);
    if (wait > Clock::duration::zero()) break;
    (void)bucket_.take(want);
    uint32_t slot = *buffers_.pool->acquire();
    uint32_t len = s->file->direct() ? static_cast<uint32_t>(align_up(want)) : want;
    Slot& sl = buffers_.slots[slot];
    sl.src = s;
    sl.offset = s->next;
    sl.want = want;
    sl.writing = false;
    sl.frames.clear();
    sl.frames_left = 0;
    SB_TRY(loop_.submit({s->file.get(), storage::OpKind::read, s->next, buffers_.pool->data(slot),
                         len, slot, kReadRegion}));
    s->next += want;
    ++s->ops_out;
    ++in_flight_.reads;
    if (s->reads_out++ == 0) s->busy_since = clock_.last();
  }
  if (wait > Clock::duration::zero()) out_.stats.throttled = true;
  return wait;
}

Result<void> BackupChannel::open_source(const WorkUnit& u) {
  auto src = std::make_unique<Source>();
  src->unit = &u;
  src->one_read = one_read(u);
  SB_ASSIGN(Place place, place_of(u.file->path));
  SB_ASSIGN(src->file, place.storage->open_read(place.at, {ctx_.config.direct == io::Direct::yes}));
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
  src->io = units_.file_io.entry(u.file->path, out_.stats);
  // Register it in the current piece right away, so even an empty file has its record.
  if (!ctx_.validate_only) {
    SB_ASSIGN(OpenPiece * p, piece_for(0));
    SB_TRY(ensure_registered(*src, *p));
  }
  units_.open.push_back(std::move(src));
  if (units_.open.back()->next >= units_.open.back()->end)
    SB_TRY(maybe_done(units_.open.back().get()));
  return ok();
}

// A read completed: counted, its pages checked, then framed and written (channel_frames.cc).
Result<void> BackupChannel::read_done(uint32_t slot, const storage::Completion& c) {
  Slot& sl = buffers_.slots[slot];
  Source* s = sl.src;
  --in_flight_.reads;
  const std::string& path = s->meta.path;
  if (!c.result)
    return c.result.error().wrap("unable to read '" + path + "' at offset " +
                                 std::to_string(sl.offset));
  if (*c.result < sl.want)
    return fail(Errc::io, "'" + path + "' shrank while it was read: expected " +
                              std::to_string(sl.want) + " bytes at offset " +
                              std::to_string(sl.offset) + ", got " + std::to_string(*c.result));
  ++out_.stats.reads;
  out_.stats.bytes_read += sl.want;
  const int64_t waited = clock_.take_wait_ns();
  add_wait(out_.stats.read_waits, waited);
  if (s->io >= 0) {
    catalog::IoFigures& f = out_.stats.file_io[static_cast<size_t>(s->io)].read;
    add_io(f, sl.want, waited);
    if (--s->reads_out == 0)
      f.busy_ns +=
          std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.last() - s->busy_since)
              .count();
  }
  clock_.add_bytes(sl.want);
  if (ctx_.bytes_done) ctx_.bytes_done->fetch_add(sl.want, std::memory_order_relaxed);
  if (s->first_block) SB_TRY(check_pages(*s, sl.offset, buffers_.pool->data(slot), sl.want));
  sl.writing = true;
  if (ctx_.validate_only) return slot_done(slot);
  return frame_slot(slot);
}

// The slot's data is all written (or none of it needed writing): it goes back to the pool.
Result<void> BackupChannel::slot_done(uint32_t slot) {
  Slot& sl = buffers_.slots[slot];
  Source* s = sl.src;
  --s->ops_out;
  sl.writing = false;
  sl.src = nullptr;
  buffers_.pool->release(slot);
  return maybe_done(s);
}

// A unit whose reads are all issued and whose frames are all written is done here; it
// counts as backed up once the pieces holding it are finished.
Result<void> BackupChannel::maybe_done(Source* s) {
  if (s->ops_out > 0 || s->next < s->end) return ok();
  if (ctx_.change_unit && !s->done.unit_digests.empty() && !ctx_.validate_only) {
    // The unit digests of what was read go into a map frame beside the file's frames.
    DigestMap map{ctx_.change_unit, s->done.first_unit * ctx_.change_unit, s->done.unit_digests};
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
  units_.finished.push_back(std::move(s->done));
  if (s->unit->section + 1 == s->unit->sections || s->unit->sections == 1) ++out_.stats.files;
  auto it = std::find_if(units_.open.begin(), units_.open.end(),
                         [s](const std::unique_ptr<Source>& p) { return p.get() == s; });
  if (units_.next == it) ++units_.next;
  units_.open.erase(it);
  return ok();
}

}  // namespace stripeback::engine::backup_internal
