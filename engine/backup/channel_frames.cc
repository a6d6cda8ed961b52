// A buffer read becomes frames: its pages checked (--check-logical), in a level backup only
// the runs of change units that differ from the parent's, each compressed (at a level that
// follows the CPU with --compress auto), sealed and written to the open piece.
#include <algorithm>
#include <cstring>
#include <thread>

#include "engine/backup/channel_state.h"

namespace stripeback::engine::backup_internal {
namespace {

// A page that fails its check is read again up to this many times, this far apart.
constexpr int kPageRetries = 3;
constexpr std::chrono::milliseconds kPageRetryPause{50};
// Once this many pages of a unit failed every re-read, its further failing pages are not
// read again: they are damaged or encrypted, not being written, and at 150 ms a page a
// table of encrypted pages would take hours. The judgement of newer pages still applies.
constexpr uint32_t kUnrecoveredBeforeNoRetry = 32;

}  // namespace

// The slot's data, read and checked, goes out as one frame, or as the frames of its
// changed units.
Result<void> BackupChannel::frame_slot(uint32_t slot) {
  if (ctx_.change_unit) return frame_changed_units(slot);
  return emit_frame(slot, 0, buffers_.slots[slot].want,
                    buffers_.packed ? buffers_.packed->header(slot) : nullptr,
                    buffers_.packed ? buffers_.packed->data_size() : 0);
}

// Level backups: hash every change unit, then write each run of units whose digest
// differs from the parent's (all of them without a parent) as one frame.
Result<void> BackupChannel::frame_changed_units(uint32_t slot) {
  const uint32_t unit = ctx_.change_unit;
  Slot& sl = buffers_.slots[slot];
  Source* s = sl.src;
  std::byte* data = buffers_.pool->data(slot);
  const uint64_t u0 = sl.offset / unit;
  const uint32_t n = static_cast<uint32_t>(units_of(sl.want, unit));
  framing_.changed.assign(n, true);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t len = std::min<uint32_t>(unit, sl.want - i * unit);
    util::Digest d = util::digest(data + uint64_t{i} * unit, len);
    s->done.unit_digests[u0 + i - s->done.first_unit] = d;
    const UnitMap* par = s->parent;
    framing_.changed[i] =
        !(par && u0 + i < par->digests.size() && unit_length(par->size, unit, u0 + i) == len &&
          par->digests[u0 + i] == d);
  }
  // Compressed frames of several runs share the slot's output buffer while it lasts; a
  // run that finds no room left is stored raw.
  std::byte* packed = buffers_.packed ? buffers_.packed->header(slot) : nullptr;
  size_t packed_left = buffers_.packed ? kBlock + buffers_.packed->data_size() : 0;
  const size_t tail = ctx_.keys ? kBlock : 0;
  for (uint32_t i = 0; i < n;) {
    if (!framing_.changed[i]) {
      ++i;
      continue;
    }
    uint32_t j = i;
    while (j < n && framing_.changed[j]) ++j;
    const uint32_t pos = i * unit;
    const uint32_t len = std::min<uint32_t>(j * unit, sl.want) - pos;
    s->done.units_written += j - i;
    size_t need = kBlock + align_up(Compressor::bound(len)) + tail;
    const bool room = packed && packed_left >= need;
    SB_TRY(emit_frame(slot, pos, len, room ? packed : nullptr, room ? need - kBlock - tail : 0));
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
Result<void> BackupChannel::check_pages(Source& s, uint64_t off, std::byte* data, uint32_t len) {
  const PageValidator& v = *ctx_.validator;
  const uint32_t ps = v.page_size();
  if (off % ps != 0) return ok();  // buffers start at multiples of the page size
  const double t0 = thread_cpu_seconds();
  for (uint32_t at = 0; at + ps <= len; at += ps) {
    std::byte* page = data + at;
    ++out_.pages.checked;
    ++s.done.pages_checked;
    const uint64_t block = *s.first_block + (off + at) / ps;
    std::string why = v.check_block(block, page);
    if (why.empty()) continue;
    const int retries = s.pages_unrecovered < kUnrecoveredBeforeNoRetry ? kPageRetries : 0;
    for (int attempt = 0; attempt < retries && !why.empty(); ++attempt) {
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
    if (retries > 0) ++s.pages_unrecovered;
    // Counted for the alarm before the judgement: an encrypted page fails whatever it says.
    ++s.done.pages_failed;
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
Result<void> BackupChannel::emit_frame(uint32_t slot, uint32_t pos, uint32_t len, std::byte* packed,
                                       size_t packed_cap) {
  Slot& sl = buffers_.slots[slot];
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
  const bool compress = framing_.compressor && framing_.compressor->level() > 0 && packed;
  std::byte* frame_at =
      pos == 0 ? buffers_.pool->header(slot) : buffers_.pool->data(slot) + pos - kBlock;
  FrameBuffers buffers{frame_at, compress ? packed : nullptr, compress ? packed_cap : 0};
  SB_ASSIGN(EncodedFrame ef,
            encode_frame(fh, p->writer->next(), buffers,
                         {compress ? framing_.compressor.get() : nullptr, p->writer->cipher(),
                          p->writer->version()}));
  const FrameHeader& h = ef.header;
  if (h.type == FrameType::zero) {
    ++out_.stats.zero_frames;
  } else if (framing_.compressor) {
    const uint64_t stored = h.compressed ? h.stored_len - (h.sealed ? kTagSize : 0) : len;
    out_.stats.compress_s += ef.compress_cpu_s;
    out_.stats.bytes_compressed_in += len;
    out_.stats.bytes_compressed_out += stored;
    // The file profile counts what the compressor was given (not a frame --compress auto
    // or a full output buffer stored raw): data that no longer shrinks is the sign.
    if (compress) {
      s->done.bytes_raw += len;
      s->done.bytes_stored += stored;
    }
    out_.stats.level_bytes[framing_.compressor->level()] += len;
    if (framing_.auto_level) adapt_level();
  }
  out_.stats.encrypt_s += ef.seal_cpu_s;
  ++out_.stats.frames;
  s->done.extents.push_back({fh.offset, len, ef.raw_digest});
  FramePlacement pl = p->writer->add(ef);
  std::byte* frame = ef.block;
  const uint64_t tag = slot | (uint64_t{sl.frames.size()} << kFrameShift);
  sl.frames.push_back({p, pl.offset + pl.length, pl.length});
  ++sl.frames_left;
  ++in_flight_.writes;
  ++p->writes_out;
  return loop_.submit({&p->writer->file(), storage::OpKind::write, pl.offset, frame, pl.length, tag,
                       h.compressed ? kCompressedRegion : kReadRegion});
}

// --compress auto: the level follows what this thread did over windows of frames.
// --compress auto: the level follows what this thread did over windows of frames.
void BackupChannel::adapt_level() {
  if (++framing_.window.frames < 8) return;
  auto now = std::chrono::steady_clock::now();
  double wall = std::chrono::duration<double>(now - framing_.window.start).count();
  if (wall < 0.25) return;
  double idle = out_.stats.wait_s - out_.stats.throttle_s;
  int level = framing_.auto_level->update(wall, idle - framing_.window.idle0,
                                          out_.stats.compress_s - framing_.window.cpu0);
  if (level != framing_.compressor->level()) framing_.compressor->set_level(level);
  framing_.window = Framing::Window{now, idle, out_.stats.compress_s, 0};
}

}  // namespace stripeback::engine::backup_internal
