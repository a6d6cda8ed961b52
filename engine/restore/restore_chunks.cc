#include "engine/restore/restore_chunks.h"

#include <algorithm>

#include "engine/restore/restore_delta.h"

namespace stripeback::engine {
namespace {

// Each piece's trailer entry of the file agrees with the catalog's record of it.
Result<void> check_part(const RestorePart& part, uint64_t size, const std::string& path) {
  const PieceReader& pr = *part.piece;
  const auto& meta = pr.trailer().files[part.file_id];
  const auto& ex = pr.trailer().extents[part.file_id];
  util::DigestCombiner comb;
  for (const Extent& e : ex) comb.add(e.file_offset, e.raw_len, e.raw_digest);
  if (meta.size != size || comb.finish() != meta.digest)
    return fail(Errc::corrupt, "piece '" + pr.path() + "' does not hold the copy of '" + path +
                                   "' the catalog describes");
  return ok();
}

// A file with a change map: each unit comes from the newest backup of its chain that holds
// it; the frames of older backups give only the units no newer one holds.
Result<void> plan_units(const RestoreItem& item, FileState& f, size_t max_frame) {
  const UnitMap& want = *item.units;
  const uint32_t unit = want.unit;
  const uint64_t size = item.file.size;
  const uint64_t n = units_of(size, unit);
  std::vector<bool> owned(n, false);
  uint64_t left = n;
  std::vector<const std::vector<RestorePart>*> layers{&item.parts};
  std::vector<uint64_t> sizes{item.file.size}, ids{item.backup_id};
  for (const auto& l : item.older) {
    layers.push_back(&l.parts);
    sizes.push_back(l.size);
    ids.push_back(l.backup_id);
  }
  for (size_t li = 0; li < layers.size() && left > 0; ++li) {
    for (const RestorePart& part : *layers[li]) {
      SB_TRY(check_part(part, sizes[li], item.file.path));
      for (const Extent& e : part.piece->trailer().extents[part.file_id]) {
        if (e.file_offset % unit != 0 || align_up(std::max(e.stored_len, e.raw_len)) > max_frame)
          return fail(Errc::corrupt, "piece '" + part.piece->path() + "' index for '" +
                                         item.file.path + "' has a frame at offset " +
                                         std::to_string(e.file_offset) +
                                         " that does not fit its change units");
        PartExtent pe{&e, &part, {}};
        const uint64_t end = e.file_offset + e.raw_len;
        for (uint64_t u = e.file_offset / unit; u < n; ++u) {
          const uint64_t off = u * unit;
          const uint32_t len = unit_length(size, unit, u);
          if (off + len > end) break;
          if (owned[u]) continue;
          owned[u] = true;
          --left;
          if (!pe.ranges.empty() && pe.ranges.back().first + pe.ranges.back().second == off)
            pe.ranges.back().second += len;
          else
            pe.ranges.push_back({off, len});
        }
        if (!pe.ranges.empty()) f.extents.push_back(std::move(pe));
      }
    }
  }
  if (left > 0) {
    uint64_t u = 0;
    while (owned[u]) ++u;
    std::string chain;
    for (uint64_t id : ids) chain += (chain.empty() ? "" : ", ") + std::to_string(id);
    return fail(Errc::corrupt, "no backup of the chain of '" + item.file.path + "' (backups " +
                                   chain + ") holds its bytes at offset " +
                                   std::to_string(u * unit));
  }
  std::sort(f.extents.begin(), f.extents.end(), [](const PartExtent& a, const PartExtent& b) {
    return a.ranges.front().first < b.ranges.front().first;
  });
  f.got.assign(n, util::Digest{});
  return ok();
}

// Cuts the file's extents into chunks of about kRestoreChunk bytes (one for an empty file).
void cut_chunks(FileState& f, std::vector<RestoreChunk>& chunks) {
  size_t begin = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < f.extents.size(); ++i) {
    bytes += f.extents[i].extent->raw_len;
    if (bytes >= kRestoreChunk) {
      chunks.push_back({&f, begin, i + 1});
      begin = i + 1;
      bytes = 0;
    }
  }
  if (begin < f.extents.size() || f.extents.empty())
    chunks.push_back({&f, begin, f.extents.size()});
}

}  // namespace

Result<std::unique_ptr<FileState>> make_file_state(const RestoreItem& item, size_t max_frame,
                                                   std::vector<RestoreChunk>& chunks,
                                                   DeltaFile* delta, const FrameFilter* keep) {
  auto f = std::make_unique<FileState>();
  f->item = &item;
  f->delta = delta;
  f->sampled = keep != nullptr;
  if (item.units) {
    SB_TRY(plan_units(item, *f, max_frame));
    if (keep) {
      // Units of the frames left out count as the map has them; those read are checked.
      const UnitMap& want = *item.units;
      for (uint64_t u = 0; u < f->got.size() && u < want.digests.size(); ++u)
        f->got[u] = want.digests[u];
      std::erase_if(f->extents, [&](const PartExtent& pe) { return !(*keep)(*pe.part, *pe.extent); });
    }
    if (delta) {
      // Only the units that differ in place are written; the others were found equal to
      // the units of the map.
      const UnitMap& want = *item.units;
      std::vector<PartExtent> kept;
      for (PartExtent& pe : f->extents) {
        std::vector<std::pair<uint64_t, uint32_t>> ranges;
        for (const auto& [off, len] : pe.ranges)
          for (uint64_t u = off / want.unit; u * want.unit < off + len; ++u) {
            if (!delta->differs[u]) continue;
            const uint64_t uo = u * want.unit;
            const uint32_t ul = unit_length(item.file.size, want.unit, u);
            if (!ranges.empty() && ranges.back().first + ranges.back().second == uo)
              ranges.back().second += ul;
            else
              ranges.push_back({uo, ul});
          }
        if (ranges.empty()) continue;
        pe.ranges = std::move(ranges);
        kept.push_back(std::move(pe));
      }
      f->extents = std::move(kept);
      for (uint64_t u = 0; u < f->got.size(); ++u)
        if (!delta->differs[u]) f->got[u] = want.digests[u];
    }
    cut_chunks(*f, chunks);
    return f;
  }
  for (const RestorePart& part : item.parts) {
    SB_TRY(check_part(part, item.file.size, item.file.path));
    for (const Extent& e : part.piece->trailer().extents[part.file_id])
      f->extents.push_back({&e, &part, {}});
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
  if (keep)
    std::erase_if(f->extents, [&](const PartExtent& pe) { return !(*keep)(*pe.part, *pe.extent); });
  if (delta) {
    // Frame i is block i of the compare (both in offset order): only those that differ.
    std::vector<PartExtent> kept;
    for (size_t i = 0; i < f->extents.size(); ++i)
      if (delta->differs[i]) kept.push_back(f->extents[i]);
    f->extents = std::move(kept);
  }
  cut_chunks(*f, chunks);
  return f;
}

}  // namespace stripeback::engine
