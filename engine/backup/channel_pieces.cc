// The channel's pieces: a new one when the next frame would pass the size limit, the
// metadata blocks the piece writer builds (header, file records, maps, trailer), the
// checkpoints, and a closing piece's trailer, sync and catalog record.
#include <algorithm>

#include "engine/backup/channel_state.h"
#include "engine/format/piece_name.h"
#include "util/crash_point.h"
#include "util/option_words.h"

namespace stripeback::engine::backup_internal {

// A checkpoint is due when the open piece holds the checkpoint's bytes or has been open
// for its interval (ChannelConfig). The channel then issues no more reads until those in
// flight are written, closes the piece and goes on in a new one: each piece then holds
// every file's frames in one run, with no frame of it left for a later piece.
bool BackupChannel::checkpoint_due() const {
  if (pieces_.list.empty() || pieces_.list.back()->closing || !pieces_.list.back()->writer)
    return false;
  const OpenPiece& p = *pieces_.list.back();
  if (p.writer->file_count() == 0) return false;
  const uint64_t bytes = ctx_.config.checkpoint_bytes;
  const auto interval = ctx_.config.checkpoint_interval;
  return (bytes && p.writer->projected_size(0) >= bytes) ||
         (interval.count() > 0 && std::chrono::steady_clock::now() - p.opened >= interval);
}

// The piece the next frame of `frame_length` bytes goes to: the current one, or a new one
// when that frame would pass the size limit.
Result<OpenPiece*> BackupChannel::piece_for(uint64_t frame_length) {
  if (ctx_.validate_only)  // a validation writes nothing, anywhere
    return fail(Errc::invalid_argument, util::command_word("validate-sources") + " does not write pieces");
  OpenPiece* cur =
      pieces_.list.empty() || pieces_.list.back()->closing ? nullptr : pieces_.list.back().get();
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
    h.piece_number = ++pieces_.made;
    if (framing_.compressor) h.codec = Codec::zstd;
    h.created_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
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
    co.retention = ctx_.lock;
    SB_ASSIGN(auto file, target_.storage->create(target_.dir.join(h.name), co));
    SB_ASSIGN(p->writer,
              PieceWriter::start(std::move(file), target_.storage->caps(), h, ctx_.keys));
    if (ctx_.lock) p->writer->set_lock(*ctx_.lock);
    out_.stats.direct_sink = p->writer->direct();
    pieces_.list.push_back(std::move(p));
    cur = pieces_.list.back().get();
    SB_ASSIGN(auto placed, cur->writer->header_block());
    SB_TRY(write_meta(*cur, std::move(placed)));
  }
  return cur;
}

// Makes sure `s` has a file entry (and its FILE frame) in piece `p`.
Result<void> BackupChannel::ensure_registered(Source& s, OpenPiece& p) {
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
Result<void> BackupChannel::write_meta(OpenPiece& p, PieceWriter::PlacedBlock placed) {
  auto& [block, placement] = placed;
  uint64_t tag = kMetaTag + pieces_.next_meta++;
  storage::Request r{&p.writer->file(), storage::OpKind::write, placement.offset,
                     block->data,       placement.length,       tag};
  pieces_.meta.emplace(
      tag, Pieces::MetaWrite{std::move(block), &p, placement.offset + placement.length});
  ++p.writes_out;
  ++in_flight_.writes;
  return loop_.submit(r);
}

// A metadata block is written: the piece's written end moves on.
Result<void> BackupChannel::meta_written(const storage::Completion& c) {
  auto it = pieces_.meta.find(c.tag);
  OpenPiece* p = it->second.piece;
  uint64_t len = it->second.block->size;
  uint64_t end = it->second.piece_end;
  pieces_.meta.erase(it);
  --in_flight_.writes;
  --p->writes_out;
  if (!c.result) return c.result.error().wrap("unable to write piece '" + p->writer->path() + "'");
  if (*c.result < len)
    return fail(Errc::io, "unable to write piece '" + p->writer->path() +
                              "': " + std::to_string(*c.result) + " of " + std::to_string(len) +
                              " bytes written at offset " + std::to_string(end - len));
  p->written_end = std::max(p->written_end, end);
  add_wait(out_.stats.write_waits, clock_.take_wait_ns());
  ++out_.stats.writes;
  out_.stats.bytes_written += len;
  return ok();
}

// A frame of the slot is written; once all are, the slot's buffer is free again.
Result<void> BackupChannel::frame_written(uint32_t slot, const storage::Completion& c) {
  Slot& sl = buffers_.slots[slot];
  FrameOut& fo = sl.frames[c.tag >> kFrameShift];
  --in_flight_.writes;
  --fo.piece->writes_out;
  if (!c.result)
    return c.result.error().wrap("unable to write piece '" + fo.piece->writer->path() + "'");
  if (*c.result < fo.len)
    return fail(Errc::io, "unable to write piece '" + fo.piece->writer->path() +
                              "': " + std::to_string(*c.result) + " of " + std::to_string(fo.len) +
                              " bytes written at offset " + std::to_string(fo.piece_end - fo.len));
  fo.piece->written_end = std::max(fo.piece->written_end, fo.piece_end);
  add_wait(out_.stats.write_waits, clock_.take_wait_ns());
  ++out_.stats.writes;
  out_.stats.bytes_written += *c.result;
  if (--sl.frames_left > 0) return ok();
  return slot_done(slot);
}

// Pieces marked closing: once their frames are written, the trailer goes out; once that
// is written too, the piece is made durable and recorded.
Result<void> BackupChannel::close_pieces() {
  for (auto& p : pieces_.list) {
    if (!p->writer || !p->closing || p->writes_out > 0) continue;
    if (!p->trailer_sent) {
      SB_ASSIGN(auto placed, p->writer->trailer_block(&p->crc));
      p->trailer_sent = true;
      SB_TRY(write_meta(*p, std::move(placed)));
      continue;
    }
    clock_.mark(in_flight_.reads > 0, in_flight_.writes > 0, false, out_.stats);
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
        ml.spans.push_back(
            {sp.volume_id, sp.drive, sp.file, sp.block, sp.first_seq, sp.blocks, sp.address});
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
Result<void> BackupChannel::finish_pieces() {
  for (auto& p : pieces_.list) p->closing = true;
  std::vector<storage::Completion> comps(64);
  while (true) {
    SB_TRY(close_pieces());
    if (std::none_of(pieces_.list.begin(), pieces_.list.end(),
                     [](const auto& p) { return p->writer != nullptr; }))
      break;
    clock_.mark(false, in_flight_.writes > 0, false, out_.stats);
    size_t n = loop_.reap(comps, 1, Clock::now() + kIdleWait);
    clock_.mark(false, in_flight_.writes > 0, true, out_.stats);
    for (size_t i = 0; i < n; ++i) SB_TRY(handle(comps[i]));
  }
  for (auto& d : units_.finished) out_.units.push_back(std::move(d));
  units_.finished.clear();
  return ok();
}

}  // namespace stripeback::engine::backup_internal
