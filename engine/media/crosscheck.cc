#include "engine/media/crosscheck.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "engine/wiring/backends.h"
#include "engine/pieces/change_map.h"
#include "engine/format/piece_format.h"
#include "engine/format/piece_walk.h"
#include "util/clock.h"
#include "util/crc32c.h"

namespace stripeback::engine {
namespace {

// What the damaged frames of a whole piece mean for its files.
PieceDamage damage_of(const std::vector<BadFrame>& bad, const std::optional<Trailer>& table,
                      const std::vector<std::string>& holders) {
  PieceDamage d;
  d.frames = static_cast<uint32_t>(bad.size());
  if (bad.empty()) return d;
  std::set<std::string> files;
  std::string offsets;
  bool unknown = false, metadata = false;
  for (size_t i = 0; i < bad.size(); ++i) {
    const FrameHeader& h = bad[i].header;
    if (i < 8) offsets += (i ? ", " : "") + std::to_string(bad[i].offset);
    if (h.type != FrameType::data && h.type != FrameType::zero) {
      // A file record or a digest map: the file's data is intact (a map is needed only by
      // the level 1s built on this backup).
      metadata = true;
      continue;
    }
    if (table && h.file_id < table->files.size()) files.insert(table->files[h.file_id].path);
    else unknown = true;
  }
  if (unknown) files.insert(holders.begin(), holders.end());
  d.files.assign(files.begin(), files.end());
  d.what = std::to_string(bad.size()) + " frame(s) fail their payload checksum (at offset " +
           offsets + (bad.size() > 8 ? ", ..." : "") + ")";
  if (unknown) d.what += "; the piece's file table is sealed: every file it holds is named";
  if (metadata) d.what += "; some are file records or digest maps";
  return d;
}

}  // namespace

Result<PieceDamage> check_piece(const catalog::PieceRecord& p, uint64_t backup_id, bool deep,
                                const std::vector<std::string>& media_drives, uint64_t* bytes,
                                const std::vector<std::string>& holders) {
  std::unique_ptr<storage::ReadFile> f;
  if (p.media) {
    SB_ASSIGN(f, open_media_piece(p, backup_id, media_drives));
  } else {
    SB_ASSIGN(Place place, place_of(recorded_piece_path(p)));
    auto opened = place.storage->open_read(place.at, storage::OpenOptions{false});
    if (!opened) {
      if (opened.error().code == Errc::not_found) return fail(Errc::not_found, "missing");
      return opened.error();
    }
    f = std::move(*opened);
    SB_ASSIGN(storage::FileInfo info, f->stat());
    if (info.size != p.size)
      return fail(Errc::corrupt, "the piece is " + std::to_string(info.size) +
                                     " bytes; the catalog recorded " + std::to_string(p.size));
  }
  std::vector<std::byte> head(kBlock);
  SB_TRY(read_exact(*f, head.data(), kBlock, 0, bytes, "header block"));
  auto h = decode_piece_header(head);
  if (!h) return fail(Errc::corrupt, "header block: " + h.error().what);
  if (h->name != p.name || h->backup_id != backup_id)
    return fail(Errc::corrupt, "the header names piece '" + h->name + "' of backup " +
                                   std::to_string(h->backup_id) + ": not the piece recorded");
  if (p.media && !deep) return PieceDamage{};  // read in order: the footer ends the stream
  const uint64_t size = p.media ? p.media->bytes : p.size;
  if (size < 3 * kBlock || size % kBlock)
    return fail(Errc::corrupt, "the catalog records an impossible size " + std::to_string(size));
  if (deep) {
    std::vector<BadFrame> bad;
    std::optional<Trailer> table;  // the file table, when it is not sealed
    auto observe = [&](uint64_t, const FrameHeader& fh, std::span<const std::byte>,
                       std::span<const std::byte> payload) {
      if (fh.type != FrameType::trailer || fh.sealed) return;
      auto t = decode_trailer({reinterpret_cast<const uint8_t*>(payload.data()), fh.stored_len});
      if (t) table = std::move(*t);
    };
    SB_ASSIGN(WalkedPiece w, walk_piece(*f, head, size, p.checksum, bytes, observe, &bad));
    if (w.size != size)
      return fail(Errc::corrupt, "the piece ends at offset " + std::to_string(w.size) +
                                     "; the catalog recorded " + std::to_string(size) + " bytes");
    return damage_of(bad, table, holders);
  }
  std::vector<std::byte> block(kBlock);
  SB_TRY(read_exact(*f, block.data(), kBlock, size - kBlock, bytes, "footer"));
  auto foot = decode_footer(block);
  if (!foot) return fail(Errc::corrupt, "footer: " + foot.error().what);
  if (foot->piece_crc != p.checksum)
    return fail(Errc::corrupt, "the footer's piece checksum is " + checksum_hex(foot->piece_crc) +
                                   "; the catalog recorded " + checksum_hex(p.checksum));
  if (foot->trailer_offset < kBlock || foot->trailer_offset + 2 * kBlock > size ||
      foot->trailer_offset % kBlock)
    return fail(Errc::corrupt, "the footer's trailer offset " +
                                   std::to_string(foot->trailer_offset) + " is outside the piece");
  SB_TRY(read_exact(*f, block.data(), kBlock, foot->trailer_offset, bytes, "trailer"));
  auto th = decode_frame_header(block);
  if (!th || th->type != FrameType::trailer)
    return fail(Errc::corrupt,
                "no valid trailer frame at offset " + std::to_string(foot->trailer_offset));
  std::vector<std::byte> payload(align_up(th->stored_len));
  if (foot->trailer_offset + kBlock + payload.size() + kBlock != size)
    return fail(Errc::corrupt, "the trailer does not end at the footer");
  SB_TRY(read_exact(*f, payload.data(), payload.size(), foot->trailer_offset + kBlock, bytes,
                    "trailer"));
  if (util::crc32c(payload.data(), th->stored_len) != th->stored_crc)
    return fail(Errc::corrupt, "trailer payload checksum mismatch");
  return PieceDamage{};
}

Result<CrosscheckSummary> run_crosscheck(catalog::Catalog& cat, const CrosscheckOptions& opts) {
  const auto start = std::chrono::steady_clock::now();
  SB_TRY(cat.refresh());
  const auto backups = cat.backups();
  std::vector<const catalog::Backup*> chosen;
  for (const auto& b : backups) {
    if (opts.backup_id && b.id != *opts.backup_id) continue;
    if (opts.tag && b.begin.tag != *opts.tag) continue;
    chosen.push_back(&b);
  }
  if (opts.backup_id && chosen.empty())
    return fail(Errc::not_found, "backup " + std::to_string(*opts.backup_id) + " is not in the catalog");
  if (opts.tag && chosen.empty())
    return fail(Errc::not_found, "no backup with tag '" + *opts.tag + "'");
  CrosscheckSummary sum;
  catalog::Crosscheck rec;
  rec.time_ns = util::wall_now_ns();
  rec.deep = opts.deep;
  for (const catalog::Backup* b : chosen) {
    // A running job's pieces are not all written; a failed one's were removed.
    const bool ended_ok = b->ended && (b->end.status == catalog::BackupStatus::complete ||
                                       b->end.status == catalog::BackupStatus::partial);
    if (!ended_ok || b->deleting) continue;
    sum.backups.push_back(b->id);
    bool any = false, any_damage = false;
    for (const auto& p : b->pieces) {
      CrosscheckedPiece out;
      out.backup_id = b->id;
      out.piece = p.name;
      out.location = p.media ? std::string() : p.location;
      out.size = p.size;
      std::vector<std::string> holders;
      for (const auto& f : b->files)
        if (std::find(f.pieces.begin(), f.pieces.end(), p.name) != f.pieces.end())
          holders.push_back(f.path);
      auto r = check_piece(p, b->id, opts.deep, opts.media_drives, &sum.bytes_read, holders);
      if (!r) {
        out.expired = true;
        out.reason = r.error().what;
        any = true;
      } else if (r->frames > 0) {
        out.damaged = true;
        out.damage = r->what;
        out.damaged_files = r->files;
        any_damage = true;
      }
      catalog::PieceCheck pc{b->id, p.name, out.expired, out.reason};
      pc.damaged = out.damaged;
      pc.damage = out.damage;
      pc.damaged_files = out.damaged_files;
      rec.pieces.push_back(std::move(pc));
      sum.pieces.push_back(std::move(out));
    }
    if (any) sum.expired_backups.push_back(b->id);
    else if (any_damage) sum.damaged_backups.push_back(b->id);
  }
  if (!rec.pieces.empty()) SB_TRY(cat.add_crosscheck(rec));
  sum.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return sum;
}

}  // namespace stripeback::engine
