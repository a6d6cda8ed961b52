#include "engine/restore/restore_stream.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "engine/wiring/backends.h"
#include "engine/transform/compress.h"
#include "engine/transform/crypto.h"
#include "engine/pieces/piece_reader.h"
#include "engine/pieces/piece_writer.h"
#include "storage/io_loop.h"
#include "util/crc32c.h"
#include "util/option_words.h"

namespace stripeback::engine {

struct StreamPlan::File {
  RestoreItem item;
  FileState state;             // chunks_total: pieces holding the file
  std::deque<Extent> extents;  // seen so far, guarded by state.mu
  // A file with a change map: the backup each unit is read from (add_chain).
  std::vector<uint64_t> owner;
};

struct StreamPlan::Piece {
  const catalog::PieceRecord* rec = nullptr;
  uint64_t backup_id = 0;
  std::map<std::string, File*> files;  // by path
  std::unique_ptr<storage::ReadFile> file;
  PieceHeader header;
  std::vector<std::byte> header_block;  // as read, for the piece checksum
  std::unique_ptr<FrameCipher> cipher;
  std::string group;
  std::optional<Error> open_error;  // why it could not be opened (restore goes on without it)
};

namespace {

using storage::Clock;

std::string key_of(uint64_t backup, const std::string& path) {
  return std::to_string(backup) + "\n" + path;
}

// One channel's pass over a piece.
class PieceStream {
 public:
  PieceStream(const RestoreContext& ctx, StreamPlan::Piece& p, storage::IoLoop& loop,
              ChannelStats& stats, BusyClock& clock, Decompressor& dz)
      : ctx_(ctx), p_(p), loop_(loop), stats_(stats), clock_(clock), dz_(dz),
        name_(p.file->name()) {}

  // Reads the piece to its footer; files it holds get their extents.
  Result<void> run() {
    SB_TRY(header());
    uint64_t off = first_frame_offset(p_.header);
    uint32_t seq = 0;
    auto block = AlignedBlock::make(kBlock);
    if (!block) return fail(Errc::no_space, "out of memory reading '" + name_ + "'");
    while (true) {
      if (ctx_.cancel && ctx_.cancel->load()) return fail(Errc::cancelled, "restore cancelled");
      SB_TRY(read_exact(block->data, kBlock, off));
      auto h = decode_frame_header({block->data, kBlock});
      if (!h) return corrupt(off, h.error().what);
      if (h->sequence != seq)
        return corrupt(off, "frame " + std::to_string(h->sequence) + " where frame " +
                                std::to_string(seq) + " belongs (frames lost or repeated)");
      checksum_.add_frame_header({block->data, kBlock});
      const uint64_t padded = align_up(h->stored_len);
      if (h->type == FrameType::trailer) return trailer(*h, off, seq);
      if (h->type == FrameType::file) {
        SB_TRY(file_record(*h, off));
      } else if (h->type == FrameType::data || h->type == FrameType::zero) {
        SB_TRY(data(*h, off, block->data));
      } else if (h->type == FrameType::map) {
        // Digest maps serve incremental backups; a restore passes over them (the piece
        // checksum covers their headers, and each frame's CRC its payload).
      } else {
        return corrupt(off, "unknown frame type");
      }
      off += kBlock + padded;
      ++seq;
    }
  }

  // Files of this piece the stream bound (by their FILE frame).
  const std::map<uint32_t, StreamPlan::File*>& bound() const { return by_id_; }
  void drain() { loop_.drain(); }

 private:
  Error corrupt(uint64_t at, const std::string& what) const {
    return Error{Errc::corrupt, 0,
                 "piece '" + name_ + "' is corrupt at offset " + std::to_string(at) + ": " + what};
  }

  Result<void> read_exact(std::byte* buf, size_t len, uint64_t off) {
    clock_.mark(true, writes_out_ > 0, false, stats_);
    auto got = p_.file->read_at(buf, len, off);
    clock_.mark(true, writes_out_ > 0, true, stats_);
    if (!got) return got.error();
    if (*got < len)
      return fail(Errc::corrupt, "piece '" + name_ + "' is truncated at offset " +
                                     std::to_string(off + *got));
    stats_.bytes_read += len;
    clock_.add_bytes(len);
    ++stats_.reads;
    return ok();
  }

  Result<void> header() {
    if (p_.header_block.size() != kBlock)
      return fail(Errc::invalid_argument, "piece '" + name_ + "' was not opened");
    checksum_.add_piece_header(p_.header_block);
    return ok();
  }

  // A payload of `h` at frame offset `off` into a buffer of its own (header block first).
  Result<std::unique_ptr<AlignedBlock>> payload(const FrameHeader& h, uint64_t off,
                                                const std::byte* header_block) {
    auto b = AlignedBlock::make(kBlock + align_up(std::max(h.stored_len, h.raw_len)));
    if (!b) return fail(Errc::no_space, "out of memory reading '" + name_ + "'");
    std::memcpy(b->data, header_block, kBlock);
    SB_TRY(read_exact(b->data + kBlock, align_up(h.stored_len), off + kBlock));
    return b;
  }

  Result<void> file_record(const FrameHeader& h, uint64_t off) {
    auto b = AlignedBlock::make(kBlock + align_up(h.stored_len));
    if (!b) return fail(Errc::no_space, "out of memory reading '" + name_ + "'");
    SB_TRY(read_exact(b->data + kBlock, align_up(h.stored_len), off + kBlock));
    auto raw = open_frame(b->data, h, off, nullptr, nullptr, p_.cipher.get());
    if (!raw) return fail(Errc::corrupt, "piece '" + name_ + "' is corrupt " + raw.error().what);
    uint32_t len = h.stored_len - (h.sealed ? kTagSize : 0);
    auto meta = decode_file_meta({reinterpret_cast<const uint8_t*>(*raw), len});
    if (!meta) return corrupt(off + kBlock, meta.error().what);
    auto it = p_.files.find(meta->path);
    if (it == p_.files.end()) return ok();  // a file not asked for: its frames are passed over
    StreamPlan::File* f = it->second;
    by_id_[h.file_id] = f;
    std::lock_guard lock(f->state.mu);
    if (!f->state.opened && !f->state.failed) {
      f->state.opened = true;
      if (auto r = open_restore_file(ctx_, f->state); !r) fail_file(f->state, r.error());
    }
    return ok();
  }

  Result<void> data(const FrameHeader& h, uint64_t off, const std::byte* header_block) {
    auto it = by_id_.find(h.file_id);
    if (it == by_id_.end()) {
      // Not restored: its payload is passed over (the medium is read in order anyway).
      return ok();
    }
    StreamPlan::File* f = it->second;
    ++stats_.frames;
    Extent e{h.offset, h.raw_len, off, h.stored_len, h.type, util::zero_digest(h.raw_len)};
    if (h.type == FrameType::zero) {
      clock_.add_bytes(h.raw_len);  // counted toward the restore's total like data
      seen_[h.file_id].push_back(e);
      std::lock_guard lock(f->state.mu);
      f->extents.push_back(e);
      // A new file reads as zeros where nothing is written.
      if (!f->owner.empty()) SB_TRY(owned_units(*f, h, nullptr, nullptr));
      return ok();
    }
    SB_ASSIGN(auto b, payload(h, off, header_block));
    // Decoded frames go to a second buffer; raw ones are written from the payload itself.
    std::unique_ptr<AlignedBlock> scratch;
    if (h.compressed) {
      scratch = AlignedBlock::make(align_up(h.raw_len));
      if (!scratch) return fail(Errc::no_space, "out of memory reading '" + name_ + "'");
    }
    // The thread's CPU clock is a system call: read only around a decompression.
    const double t0 = h.compressed ? thread_cpu_seconds() : 0;
    auto raw = open_frame(b->data, h, off, &dz_, scratch ? scratch->data : nullptr, p_.cipher.get());
    if (!raw)
      return fail(Errc::corrupt, "piece '" + name_ + "' is corrupt " + raw.error().what +
                                     " (file '" + f->item.file.path + "')");
    e.raw_digest = util::digest(*raw, h.raw_len);
    if (h.compressed) {
      stats_.compress_s += thread_cpu_seconds() - t0;
      stats_.bytes_compressed_in += h.raw_len;
      stats_.bytes_compressed_out += h.stored_len;
    }
    if (!h.sealed && e.raw_digest != h.raw_digest)
      return corrupt(off + kBlock, "data digest mismatch (file '" + f->item.file.path + "')");
    seen_[h.file_id].push_back(e);
    std::vector<std::pair<uint64_t, uint32_t>> ranges;  // of a chain file: the units owned
    {
      std::lock_guard lock(f->state.mu);
      f->extents.push_back(e);
      if (!f->owner.empty()) SB_TRY(owned_units(*f, h, *raw, &ranges));
      if (f->state.failed || ctx_.verify_only) return ok();
    }
    if (f->owner.empty()) ranges.push_back({h.offset, h.raw_len});
    if (ranges.empty()) return reap(0);
    // The writes go out from the buffer that holds the raw bytes; it is kept until done.
    std::shared_ptr<AlignedBlock> keep(scratch ? std::move(scratch) : std::move(b));
    std::byte* data = h.compressed ? keep->data : keep->data + kBlock;
    storage::WriteFile* out = f->state.out.get();
    if (!out) return ok();
    for (const auto& [at, n] : ranges) {
      uint32_t wlen = out->direct() ? static_cast<uint32_t>(align_up(n)) : n;
      std::byte* from = data + (at - h.offset);
      // Only a range ending at the frame's end is padded (a unit inside ends aligned).
      if (wlen > n) std::memset(from + n, 0, wlen - n);
      uint64_t tag = next_tag_++;
      writes_[tag] = Write{keep, f, wlen, at};
      ++writes_out_;
      SB_TRY(loop_.submit({out, storage::OpKind::write, at, from, wlen, tag}));
    }
    // Keep a bounded number of writes in flight.
    while (writes_out_ >= kMaxWrites) SB_TRY(reap(1));
    return reap(0);
  }

  Result<void> reap(size_t min) {
    std::vector<storage::Completion> comps(16);
    clock_.mark(false, true, false, stats_);
    size_t n = loop_.reap(comps, min, Clock::now() + std::chrono::milliseconds(200));
    clock_.mark(false, true, min > 0, stats_);
    for (size_t i = 0; i < n; ++i) {
      auto it = writes_.find(comps[i].tag);
      if (it == writes_.end()) continue;
      Write w = std::move(it->second);
      writes_.erase(it);
      --writes_out_;
      const std::string& shown = w.file->state.shown;
      if (!comps[i].result) {
        std::lock_guard lock(w.file->state.mu);
        fail_file(w.file->state, comps[i].result.error().wrap("unable to write '" + shown + "'"));
      } else if (*comps[i].result < w.len) {
        std::lock_guard lock(w.file->state.mu);
        fail_file(w.file->state,
                  Error{Errc::io, 0,
                        "unable to write '" + shown + "': " + std::to_string(*comps[i].result) +
                            " of " + std::to_string(w.len) + " bytes written at offset " +
                            std::to_string(w.offset)});
      } else {
        ++stats_.writes;
        stats_.bytes_written += w.len;
      }
    }
    return ok();
  }

  Result<void> trailer(const FrameHeader& h, uint64_t off, uint32_t seq) {
    while (writes_out_ > 0) SB_TRY(reap(1));
    const uint64_t padded = align_up(h.stored_len);
    auto b = AlignedBlock::make(kBlock + padded + kBlock);
    if (!b) return fail(Errc::no_space, "out of memory reading '" + name_ + "'");
    SB_TRY(read_exact(b->data + kBlock, padded + kBlock, off + kBlock));
    auto raw = open_frame(b->data, h, off, nullptr, nullptr, p_.cipher.get());
    if (!raw) return fail(Errc::corrupt, "piece '" + name_ + "' is corrupt " + raw.error().what);
    uint32_t len = h.stored_len - (h.sealed ? kTagSize : 0);
    auto t = decode_trailer({reinterpret_cast<const uint8_t*>(*raw), len});
    if (!t) return corrupt(off + kBlock, t.error().what);
    auto foot = decode_footer({b->data + kBlock + padded, kBlock});
    if (!foot) return corrupt(off + kBlock + padded, foot.error().what);
    if (foot->trailer_offset != off || foot->frames != seq)
      return corrupt(off + kBlock + padded, "footer does not point at the trailer read");
    if (foot->piece_crc != checksum_.value())
      return corrupt(off + kBlock + padded, "piece checksum mismatch");
    if (foot->piece_crc != p_.rec->checksum)
      return fail(Errc::corrupt, "piece '" + name_ + "' has checksum " +
                                     std::to_string(foot->piece_crc) + " but the catalog recorded " +
                                     std::to_string(p_.rec->checksum) +
                                     ": it is damaged or not the piece this backup wrote");
    // Every extent the index lists for a restored file is one the stream saw, digest and all.
    for (const auto& [id, f] : by_id_) {
      if (id >= t->extents.size()) return corrupt(off, "index has no entry for a file it holds");
      std::vector<Extent> seen = seen_[id];
      std::sort(seen.begin(), seen.end(),
                [](const Extent& x, const Extent& y) { return x.file_offset < y.file_offset; });
      const auto& want = t->extents[id];
      bool same = seen.size() == want.size();
      for (size_t i = 0; same && i < seen.size(); ++i)
        same = seen[i].file_offset == want[i].file_offset && seen[i].raw_len == want[i].raw_len &&
               seen[i].frame_offset == want[i].frame_offset && seen[i].type == want[i].type &&
               seen[i].raw_digest == want[i].raw_digest;
      if (!same)
        return corrupt(off, "the index of '" + f->item.file.path +
                                "' does not match the frames read");
    }
    return ok();
  }

  // A frame of a chain file (call with f.state.mu held): records the digest of each unit
  // of it this piece's backup owns (from `raw`, or zeros when null) and, with `ranges`,
  // the byte ranges to write.
  Result<void> owned_units(StreamPlan::File& f, const FrameHeader& h, const std::byte* raw,
                           std::vector<std::pair<uint64_t, uint32_t>>* ranges) {
    const UnitMap& m = *f.item.units;
    const uint64_t n = f.state.got.size();
    const uint64_t end = h.offset + h.raw_len;
    if (h.offset % m.unit != 0)
      return corrupt(h.offset, "a frame of '" + f.item.file.path + "' does not start at a change unit");
    for (uint64_t u = h.offset / m.unit; u < n && u * m.unit < end; ++u) {
      if (f.owner[u] != p_.backup_id) continue;
      const uint64_t at = u * m.unit;
      const uint32_t len = unit_length(m.size, m.unit, u);
      if (at + len > end)
        return corrupt(h.offset, "a frame of '" + f.item.file.path + "' ends inside a change unit");
      f.state.got[u] = raw ? util::digest(raw + (at - h.offset), len) : util::zero_digest(len);
      if (!ranges) continue;
      if (!ranges->empty() && ranges->back().first + ranges->back().second == at)
        ranges->back().second += len;
      else
        ranges->push_back({at, len});
    }
    return ok();
  }

  struct Write {
    std::shared_ptr<AlignedBlock> block;
    StreamPlan::File* file = nullptr;
    uint32_t len = 0;
    uint64_t offset = 0;
  };
  static constexpr uint32_t kMaxWrites = 16;

  const RestoreContext& ctx_;
  StreamPlan::Piece& p_;
  storage::IoLoop& loop_;
  ChannelStats& stats_;
  BusyClock& clock_;
  Decompressor& dz_;
  std::string name_;
  PieceChecksum checksum_;
  std::map<uint32_t, StreamPlan::File*> by_id_;
  std::map<uint64_t, Write> writes_;
  std::map<uint32_t, std::vector<Extent>> seen_;  // extents read from this piece, by file id
  uint64_t next_tag_ = 1;
  uint32_t writes_out_ = 0;
};

}  // namespace

StreamPlan::StreamPlan() = default;

std::vector<std::pair<uint64_t, const catalog::PieceRecord*>> StreamPlan::planned_pieces() const {
  std::vector<std::pair<uint64_t, const catalog::PieceRecord*>> out;
  for (const Piece& p : pieces_) out.push_back({p.backup_id, p.rec});
  return out;
}
StreamPlan::~StreamPlan() = default;

Result<void> StreamPlan::add(const catalog::FileRecord& f, const catalog::Backup& b) {
  if (f.pieces.empty()) return fail(Errc::corrupt, "catalog names no piece for '" + f.path + "'");
  files_.emplace_back();
  File& file = files_.back();
  file.item = RestoreItem{f, b.id, {}, {}, {}};
  file.state.item = &file.item;
  by_key_[key_of(b.id, f.path)] = &file;
  for (const std::string& name : f.pieces) {
    auto pit = std::find_if(b.pieces.begin(), b.pieces.end(),
                            [&](const catalog::PieceRecord& p) { return p.name == name; });
    if (pit == b.pieces.end() || !pit->media)
      return fail(Errc::corrupt, "piece '" + name + "' of '" + f.path +
                                     "' is not recorded in the catalog");
    Piece*& p = piece_by_name_[name];
    if (!p) {
      pieces_.emplace_back();
      p = &pieces_.back();
      p->rec = &*pit;
      p->backup_id = b.id;
    }
    p->files[f.path] = &file;
    ++file.state.chunks_total;
  }
  return ok();
}

Result<void> StreamPlan::add_chain(
    const catalog::FileRecord& f, const catalog::Backup& b, std::shared_ptr<const UnitMap> units,
    const std::vector<std::pair<const catalog::Backup*, const catalog::FileRecord*>>& older,
    std::vector<uint64_t> owner) {
  SB_TRY(add(f, b));
  File& file = files_.back();
  file.item.units = std::move(units);
  file.owner = std::move(owner);
  file.state.got.assign(file.owner.size(), util::Digest{});
  for (const auto& [ob, of] : older) {
    if (of->pieces.empty())
      return fail(Errc::corrupt, "catalog names no piece for '" + f.path + "' in backup " +
                                     std::to_string(ob->id));
    for (const std::string& name : of->pieces) {
      auto pit = std::find_if(ob->pieces.begin(), ob->pieces.end(),
                              [&](const catalog::PieceRecord& p) { return p.name == name; });
      if (pit == ob->pieces.end() || !pit->media)
        return fail(Errc::corrupt, "piece '" + name + "' of '" + f.path + "' (backup " +
                                       std::to_string(ob->id) + ") is not recorded in the catalog");
      Piece*& p = piece_by_name_[name];
      if (!p) {
        pieces_.emplace_back();
        p = &pieces_.back();
        p->rec = &*pit;
        p->backup_id = ob->id;
      }
      p->files[f.path] = &file;
      ++file.state.chunks_total;
    }
  }
  return ok();
}

Result<void> StreamPlan::open_piece(Piece& p, Keyring* keys, const std::vector<std::string>& drives) {
  SB_ASSIGN(p.file, open_media_piece(*p.rec, p.backup_id, drives));
  auto block = AlignedBlock::make(kBlock);
  if (!block) return fail(Errc::no_space, "out of memory reading '" + p.file->name() + "'");
  SB_ASSIGN(size_t got, p.file->read_at(block->data, kBlock, 0));
  if (got < kBlock)
    return fail(Errc::corrupt, "piece '" + p.file->name() + "' is truncated at offset " +
                                   std::to_string(got));
  auto hdr = decode_piece_header({block->data, kBlock});
  if (!hdr)
    return fail(Errc::corrupt, "piece '" + p.file->name() + "' is corrupt at offset 0: " +
                                   hdr.error().what);
  p.header = *hdr;
  p.header_block.assign(block->data, block->data + kBlock);
  if (has_key_slots(p.header)) {
    auto slots = AlignedBlock::make(size_t{kBlock} * kKeySlots);
    if (!slots) return fail(Errc::no_space, "out of memory reading '" + p.file->name() + "'");
    SB_ASSIGN(size_t n, p.file->read_at(slots->data, slots->size, key_slot_offset(0)));
    if (n < slots->size)
      return fail(Errc::corrupt, "piece '" + p.file->name() + "' is truncated in its key slots");
    if (auto s = read_key_slots(p.header, {slots->data, slots->size}); !s)
      return fail(Errc::corrupt, "piece '" + p.file->name() + "' is corrupt at offset " +
                                     std::to_string(key_slot_offset(0)) + ": " + s.error().what);
  }
  if (p.header.backup_id != p.backup_id)
    return fail(Errc::corrupt, "piece '" + p.file->name() + "' belongs to backup " +
                                   std::to_string(p.header.backup_id) + ", not " +
                                   std::to_string(p.backup_id));
  if (p.header.cipher != Cipher::none) {
    if (!keys)
      return fail(Errc::invalid_argument,
                  "piece '" + p.file->name() + "' is encrypted: give its passphrase or key with " +
                      key_options());
    SB_ASSIGN(p.cipher, keys->open_piece(p.header, p.file->name()));
  }
  return ok();
}

Result<void> StreamPlan::check_keys(Keyring* keys, const std::vector<std::string>& drives) {
  groups_.clear();
  std::map<std::string, size_t> index;
  std::vector<Piece*> order;
  for (auto& p : pieces_) order.push_back(&p);
  // In medium order: volume, then file number.
  std::sort(order.begin(), order.end(), [](const Piece* a, const Piece* b) {
    const auto& sa = a->rec->media->spans.front();
    const auto& sb = b->rec->media->spans.front();
    return sa.volume_id != sb.volume_id ? sa.volume_id < sb.volume_id : sa.file < sb.file;
  });
  for (Piece* p : order) {
    if (p->rec->media->spans.empty())
      return fail(Errc::corrupt, "piece '" + p->rec->name + "' has no recorded place on its medium");
    p->group = drives.empty() ? p->rec->media->spans.front().url : std::string("given drives");
    auto [it, fresh] = index.emplace(p->group, groups_.size());
    if (fresh) groups_.emplace_back();
    groups_[it->second].push_back(p);
  }
  // The first piece of each channel is opened now (and stays open for it). A missing or
  // wrong key stops the restore; a piece that cannot be read is reported with its files.
  for (auto& g : groups_) {
    auto r = open_piece(*g.front(), keys, drives);
    if (r) continue;
    if (r.error().code == Errc::wrong_key || (r.error().code == Errc::invalid_argument && !keys))
      return r.error();
    g.front()->open_error = r.error();
  }
  return ok();
}

RestoreOutcome StreamPlan::run_channel(const RestoreContext& ctx, uint32_t index, uint32_t number,
                                       Keyring* keys, const std::vector<std::string>& drives) {
  RestoreOutcome out;
  out.stats.channel = number;
  BusyClock clock;
  if (ctx.progress) clock.attach(ctx.progress->channel(number));
  storage::IoLoop loop(ctx.config.queue_depth);
  Decompressor dz;
  for (Piece* p : groups_[index]) {
    Result<void> st = ok();
    if (p->open_error) st = *p->open_error;
    else if (!p->file) st = open_piece(*p, keys, drives);
    std::map<uint32_t, File*> bound;
    if (st) {
      PieceStream ps(ctx, *p, loop, out.stats, clock, dz);
      st = ps.run();
      ps.drain();
      bound = ps.bound();
      {
        std::lock_guard lock(mu_);
        read_.push_back(p->rec->name);
      }
    }
    bytes_read_ += p->rec->size;
    p->file.reset();
    // The piece is done for each of its files; a file whose pieces are all done is finished.
    for (auto& [path, f] : p->files) {
      std::lock_guard lock(f->state.mu);
      if (!st) fail_file(f->state, st.error());
      else if (std::none_of(bound.begin(), bound.end(),
                            [&fp = f](const auto& b) { return b.second == fp; }))
        fail_file(f->state, Error{Errc::corrupt, 0,
                                  "piece '" + p->rec->name + "' does not hold '" + path + "'"});
      if (++f->state.chunks_done < f->state.chunks_total) continue;
      if (!f->state.failed && !f->owner.empty()) {
        // Every unit was checked as written; the map check proves them all there.
        if (auto r = finish_restore_file(ctx, f->state); !r) fail_file(f->state, r.error());
      } else if (!f->state.failed) {
        std::sort(f->extents.begin(), f->extents.end(), [](const Extent& a, const Extent& b) {
          return a.file_offset < b.file_offset;
        });
        uint64_t expect = 0;
        for (const Extent& e : f->extents) {
          if (e.file_offset != expect) break;
          expect += e.raw_len;
        }
        if (expect != f->item.file.size) {
          fail_file(f->state, Error{Errc::corrupt, 0,
                                    "the pieces of '" + path + "' cover " + std::to_string(expect) +
                                        " of " + std::to_string(f->item.file.size) + " bytes"});
        } else {
          f->state.extents.clear();
          for (const Extent& e : f->extents) f->state.extents.push_back({&e, nullptr, {}});
          if (auto r = finish_restore_file(ctx, f->state); !r) fail_file(f->state, r.error());
        }
      }
      if (f->state.failed) {
        abandon_restore_file(ctx, f->state);
        out.errors.push_back(f->state.error);
      } else {
        ++out.stats.files;
        out.file_bytes += f->item.file.size;
      }
    }
  }
  if (ctx.cancel && ctx.cancel->load())
    out.errors.push_back({Errc::cancelled, 0, "restore cancelled"});
  clock.finish(out.stats, ctx.job_start);
  out.stats.io_engine = loop.names().empty() ? "none" : loop.names();
  loop.drain();
  loop.close();  // before the thread's connections go
  out.stats.backends = thread_counters({});
  return out;
}

std::vector<std::string> StreamPlan::pieces_read() const {
  std::lock_guard lock(mu_);
  return read_;
}

}  // namespace stripeback::engine
