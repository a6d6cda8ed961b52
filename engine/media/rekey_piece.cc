#include "engine/media/rekey_piece.h"

#include <algorithm>
#include <cstring>

#include "engine/pieces/change_map.h"
#include "engine/pieces/key_wraps.h"
#include "engine/pieces/piece_writer.h"
#include "engine/transform/crypto.h"
#include "engine/wiring/backends.h"
#include "util/clock.h"
#include "util/crash_point.h"

namespace stripeback::engine {
namespace {

Result<std::unique_ptr<storage::ReadFile>> open_piece_file(const catalog::Backup& b,
                                                           const catalog::PieceRecord& p) {
  if (p.media) return open_media_piece(p, b.id, {});
  SB_ASSIGN(Place place, place_of(recorded_piece_path(p)));
  return place.storage->open_read(place.at, storage::OpenOptions{false});
}

Result<void> read_exactly(storage::ReadFile& f, std::byte* p, size_t n, uint64_t off,
                          const std::string& path) {
  SB_ASSIGN(size_t got, f.read_at(p, n, off));
  if (got < n)
    return fail(Errc::corrupt, "piece '" + path + "' is truncated at offset " +
                                   std::to_string(off + got));
  return ok();
}

// Writes one key slot block in place and makes it durable.
Result<void> write_slot(const std::string& path, uint32_t slot, const std::optional<KeySlot>& s) {
  auto block = AlignedBlock::make(kBlock);
  if (!block) return fail(Errc::no_space, "out of memory writing '" + path + "'");
  if (s) encode_key_slot(*s, std::span<std::byte, kBlock>(block->data, kBlock));
  SB_ASSIGN(Place place, place_of(path));
  SB_ASSIGN(auto f, place.storage->open_write(place.at, 0600));
  auto done = f->write_at(block->data, kBlock, key_slot_offset(slot));
  if (done) done = f->commit();
  if (!done) {
    f->abandon();
    return done.error().wrap("unable to rewrite the key slot of '" + path + "'");
  }
  return f->close();
}

}  // namespace

Result<RekeyTarget> read_rekey_target(const catalog::Backup& b, const catalog::PieceRecord& p,
                                      int64_t now_ns) {
  RekeyTarget t;
  t.backup = &b;
  t.piece = &p;
  t.path = p.media ? p.location + "/" + p.name : recorded_piece_path(p);
  SB_ASSIGN(auto f, open_piece_file(b, p));
  auto block = AlignedBlock::make(size_t{kBlock} * (1 + kKeySlots));
  if (!block) return fail(Errc::no_space, "out of memory reading '" + t.path + "'");
  SB_TRY(read_exactly(*f, block->data, kBlock, 0, t.path));
  auto h = decode_piece_header({block->data, kBlock});
  if (!h) return fail(h.error().code, "piece '" + t.path + "': " + h.error().what);
  t.header = *h;
  if (t.header.name != p.name || t.header.backup_id != b.id)
    return fail(Errc::corrupt, "piece '" + t.path + "' is not the piece the catalog records");
  if (has_key_slots(t.header)) {
    SB_TRY(read_exactly(*f, block->data + kBlock, size_t{kBlock} * kKeySlots,
                        key_slot_offset(0), t.path));
    if (auto s = read_key_slots(t.header, {block->data + kBlock, size_t{kBlock} * kKeySlots}); !s)
      return fail(s.error().code, "piece '" + t.path + "': " + s.error().what);
  }
  if (t.header.cipher == Cipher::none) return t;
  if (!has_key_slots(t.header)) {
    t.why_not = "piece format version " + std::to_string(t.header.version) +
                " keeps its data key in its checksummed header";
    return t;
  }
  if (p.media) {
    t.why_not = "on removable media";
    return t;
  }
  if (b.locked_at(now_ns)) {
    t.why_not = "locked on its medium";
    return t;
  }
  SB_ASSIGN(Place place, place_of(t.path));
  const storage::StorageCaps& caps = place.storage->caps();
  if (!caps.append || !caps.random_write || caps.sequential_only || caps.removable) {
    t.why_not = std::string("the ") + place.storage->scheme() +
                " medium cannot rewrite part of a piece in place";
    return t;
  }
  t.rewritable = true;
  return t;
}

RekeyedPiece rekey_piece(catalog::Catalog& cat, RekeyTarget& t, Keyring& old_keys,
                         Keyring& new_keys, uint32_t kek_version, uint64_t rekey_id) {
  RekeyedPiece out{t.backup->id, t.piece->name, t.piece->location, RekeyOutcome::failed, ""};
  PieceHeader& h = t.header;
  if (h.cipher == Cipher::none) {
    out.outcome = RekeyOutcome::unencrypted;
    return out;
  }
  auto failed = [&](const Error& e) {
    out.outcome = RekeyOutcome::failed;
    out.detail = e.what;
    return out;
  };
  uint32_t opened_version = 0;
  bool by_new = false;
  auto key = old_keys.open_data_key(h, t.path, &opened_version);
  if (!key && key.error().code == Errc::wrong_key) {
    key = new_keys.open_data_key(h, t.path, &opened_version);
    by_new = key.has_value();
  }
  if (!key) return failed(key.error());
  // The slot holding the current wrap (highest generation), and the other one.
  uint32_t current = 0;
  uint64_t top = 0;
  for (uint32_t i = 0; i < kKeySlots; ++i)
    if (h.slots[i] && h.slots[i]->generation > top) {
      top = h.slots[i]->generation;
      current = i;
    }
  auto erase_others = [&](uint32_t keep) -> Result<void> {
    for (uint32_t i = 0; i < kKeySlots; ++i) {
      if (i == keep || !h.slots[i]) continue;
      SB_TRY(write_slot(t.path, i, std::nullopt));
      h.slots[i].reset();
      util::crash_point("rekey-slot-erased");
    }
    return ok();
  };
  auto record = [&](const PieceCrypto& wrap, bool in_piece) -> Result<void> {
    catalog::KeyWraps rec;
    rec.rekey_id = rekey_id;
    rec.time_ns = util::wall_now_ns();
    rec.wraps.push_back(key_wrap_of(t.backup->id, h.name, wrap, in_piece));
    SB_TRY(cat.add_key_wraps(rec));
    old_keys.set_catalog_wrap(h.name, wrap);
    new_keys.set_catalog_wrap(h.name, wrap);
    util::crash_point("rekey-wrap-recorded");
    return ok();
  };

  if (by_new) {
    // Already under the new key (an earlier run of this rekey got this far): finish what a
    // crash may have left, the catalog's record and the erasure of the old slot.
    out.outcome = RekeyOutcome::already;
    if (t.rewritable && top != 0 && h.slots[current]->wrap.kek_version == opened_version) {
      auto wraps = cat.key_wraps();
      auto it = wraps.find(h.name);
      if (it == wraps.end() || it->second.kek_version != opened_version)
        if (auto r = record(h.slots[current]->wrap, true); !r) return failed(r.error());
      if (auto r = erase_others(current); !r) return failed(r.error());
    }
    return out;
  }

  auto wrap = new_keys.wrap_data_key(h, *key, kek_version);
  if (!wrap) return failed(wrap.error());
  bool in_piece = false;
  uint32_t target = 0;
  if (t.rewritable) {
    target = top == 0 ? 0 : (current + 1) % kKeySlots;
    KeySlot s{top + 1, *wrap};
    if (auto r = write_slot(t.path, target, s); r) {
      h.slots[target] = s;
      in_piece = true;
      util::crash_point("rekey-slot-written");
    } else {
      out.detail = r.error().what;  // the catalog's wrap is the one used
    }
  }
  if (auto r = record(*wrap, in_piece); !r) return failed(r.error());
  if (in_piece)
    if (auto r = erase_others(target); !r) return failed(r.error());
  out.outcome = in_piece               ? RekeyOutcome::rewrapped
                : has_key_slots(h)     ? RekeyOutcome::catalog_only
                                       : RekeyOutcome::old_format;
  if (out.detail.empty() && !in_piece) out.detail = t.why_not;
  return out;
}

}  // namespace stripeback::engine
