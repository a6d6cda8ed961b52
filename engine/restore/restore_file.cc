#include "engine/restore/restore_file.h"

#include <algorithm>

#include "engine/pieces/target_paths.h"
#include "engine/restore/delta_undo.h"
#include "engine/restore/restore_delta.h"
#include "engine/restore/restore_journal.h"
#include "util/crash_point.h"
#include "util/option_words.h"

namespace stripeback::engine {
namespace {

// Opens (creating as needed) the directories that lead to `comps.back()` below the target,
// never following a symbolic link, so nothing lands outside it. Returns the deepest one
// opened (null when that is the target itself).
Result<std::unique_ptr<storage::Directory>> open_parent(storage::Directory& root,
                                                        const std::vector<std::string>& comps,
                                                        const std::string& shown) {
  std::unique_ptr<storage::Directory> dir;
  for (size_t i = 0; i + 1 < comps.size(); ++i) {
    storage::Directory& at = dir ? *dir : root;
    auto next = at.open_dir(comps[i], /*create=*/true, 0755);
    if (!next) {
      if (next.error().code == Errc::invalid_argument)
        return fail(Errc::invalid_argument, "refusing to restore '" + shown + "': '" + comps[i] +
                                                "' in its path is not a directory "
                                                "(a symbolic link or a file)");
      return next.error().wrap("unable to open the directory of '" + shown + "'");
    }
    dir = std::move(*next);
  }
  return dir;
}

}  // namespace

storage::Attrs restore_attrs(const catalog::FileRecord& f, bool set_owner) {
  return storage::Attrs::of(set_owner, f.uid, f.gid, f.mode, f.mtime_ns);
}

Result<void> open_restore_file(const RestoreContext& ctx, FileState& f) {
  if (ctx.verify_only) {
    f.shown = f.item->file.path;
    return ok();
  }
  static const std::vector<PathRemap> none;
  SB_ASSIGN(auto comps, target_components(f.item->file.path, ctx.remaps ? *ctx.remaps : none));
  if (comps.empty())
    return fail(Errc::invalid_argument, "refusing to restore '" + f.item->file.path +
                                            "' in the place of the restore target itself");
  std::string rel;
  for (const auto& c : comps) rel += (rel.empty() ? "" : "/") + c;
  f.shown = ctx.root->location().join(rel).str();
  SB_ASSIGN(f.dir, open_parent(*ctx.root, comps, f.shown));
  storage::Directory& parent = f.dir ? *f.dir : *ctx.root;
  f.name = comps.back();
  if (DeltaFile* d = f.delta) {
    // The file moves to its temporary name (its undo log is durable by now), then is
    // updated there in place.
    f.temp = d->temp;
    if (auto r = parent.rename(f.name, f.temp, /*replace=*/false); !r)
      return r.error().wrap("unable to update '" + f.shown + "'");
    f.temp_made = true;
    util::crash_point("delta-file-renamed");
    SB_ASSIGN(f.out, parent.open_write(f.temp, {ctx.config.direct == io::Direct::yes}));
    if (f.item->file.size > d->old.size && ctx.caps->preallocate)
      SB_TRY(f.out->preallocate(d->old.size, f.item->file.size - d->old.size));
    return ok();
  }
  storage::CreateOptions co;
  co.direct = ctx.config.direct == io::Direct::yes;
  co.mode = 0600;
  // A new name each time, created exclusively: nothing planted at it (a link to a file
  // outside the target) is ever opened, and its length does not depend on the file's name.
  Result<std::unique_ptr<storage::WriteFile>> made = fail(Errc::exists, "no free temporary name");
  for (int attempt = 0; attempt < 8; ++attempt) {
    f.temp = restore_temp_name();
    comps.back() = f.temp;
    if (ctx.journal) SB_TRY(ctx.journal->note(comps));
    made = parent.create(f.temp, co);
    if (made) break;
    if (ctx.journal) ctx.journal->settle();
    if (made.error().code != Errc::exists) break;
  }
  if (!made) return made.error().wrap("unable to create '" + f.shown + "'");
  f.out = std::move(*made);
  f.temp_made = true;
  uint64_t size = f.item->file.size;
  if (size > 0 && ctx.caps->preallocate)
    SB_TRY(f.out->preallocate(0, size));
  return ok();
}

Result<void> finish_restore_file(const RestoreContext& ctx, FileState& f) {
  const auto& rec = f.item->file;
  if (const UnitMap* want = f.item->units.get()) {
    // Reassembled from a chain: every unit as restored is the unit the newest backup read.
    for (uint64_t u = 0; u < want->digests.size(); ++u)
      if (u >= f.got.size() || f.got[u] != want->digests[u])
        return fail(Errc::corrupt, "'" + rec.path + "' fails its whole-file checksum: the " +
                                       "bytes restored at offset " + std::to_string(u * want->unit) +
                                       " differ from what backup " +
                                       std::to_string(f.item->backup_id) + " read");
    if (map_file_digest(*want) != rec.digest)
      return fail(Errc::corrupt, "'" + rec.path + "' fails its whole-file checksum");
  } else {
    // Every frame of the file: those written, and in a delta restore those found equal in
    // place (f.extents holds only the frames written then); in a validation of some frames,
    // those it left out (their bytes are not checked, the index that lists them is).
    util::DigestCombiner comb;
    std::vector<const Extent*> all;
    if (f.delta || f.sampled) {
      for (const RestorePart& part : f.item->parts)
        for (const Extent& e : part.piece->trailer().extents[part.file_id]) all.push_back(&e);
      std::sort(all.begin(), all.end(),
                [](const Extent* a, const Extent* b) { return a->file_offset < b->file_offset; });
    } else {
      for (const PartExtent& pe : f.extents) all.push_back(pe.extent);
    }
    for (const Extent* e : all) comb.add(e->file_offset, e->raw_len, e->raw_digest);
    if (f.item->map_lost) {
      // The recorded digest combines the map's unit digests: check that the frames, each
      // verified against its digest in the index, cover the file without a gap.
      std::vector<const Extent*> cover;
      for (const RestorePart& part : f.item->parts)
        for (const Extent& e : part.piece->trailer().extents[part.file_id]) cover.push_back(&e);
      std::sort(cover.begin(), cover.end(),
                [](const Extent* a, const Extent* b) { return a->file_offset < b->file_offset; });
      uint64_t at = 0;
      for (const Extent* e : cover) {
        if (e->file_offset != at) break;
        at += e->raw_len;
      }
      if (at != rec.size)
        return fail(Errc::corrupt, "'" + rec.path + "' is not whole in its pieces (its frames "
                                   "end at offset " + std::to_string(at) + " of " +
                                   std::to_string(rec.size) + ")");
    } else if (comb.finish() != rec.digest) {
      return fail(Errc::corrupt, "'" + rec.path + "' fails its whole-file checksum");
    }
  }
  if (ctx.verify_only) return ok();
  // Zero frames were not written: setting the size makes them read as zeros.
  SB_TRY(f.out->truncate(rec.size));
  SB_TRY(f.out->commit());
  SB_TRY(f.out->set_attrs(restore_attrs(rec, ctx.set_owner)));
  SB_TRY(f.out->close());
  f.out.reset();
  util::crash_point("restore-file-synced");
  storage::Directory& parent = f.dir ? *f.dir : *ctx.root;
  if (auto r = parent.rename(f.temp, f.name, ctx.force && !f.delta); !r) {
    if (r.error().code == Errc::exists)
      return fail(Errc::exists, "refusing to overwrite existing file '" + f.shown +
                                    "' (" + util::ask_option("force") + " to replace it)");
    return r.error().wrap("unable to move '" + f.shown + "' into place");
  }
  util::crash_point("restore-file-renamed");
  f.temp_made = false;
  if (f.delta) {
    // Back under its name and durable there: the old bytes are no longer needed.
    if (ctx.caps->dir_sync) SB_TRY(parent.sync());
    SB_TRY(parent.remove(f.delta->undo_name));
  }
  if (ctx.journal) ctx.journal->settle();
  if (ctx.caps->dir_sync)
    SB_TRY(parent.sync());
  return ok();
}

bool abandon_restore_file(const RestoreContext& ctx, FileState& f) {
  if (f.out) f.out->abandon();
  f.out.reset();
  bool removed = false;
  if (f.delta && !ctx.verify_only) {
    // Updated in place: put back as it was from its undo log (the next restore into the
    // target does it when this fails).
    storage::Directory& parent = f.dir ? *f.dir : *ctx.root;
    Result<void> r = ok();
    if (f.temp_made)
      r = roll_back_delta(parent, f.temp, f.delta->undo_name, f.name, ctx.set_owner);
    else
      r = parent.remove(f.delta->undo_name);
    if (r) {
      f.temp_made = false;
      if (ctx.journal) ctx.journal->settle();
    }
    f.dir.reset();
    return r.has_value();
  }
  if (f.temp_made) {
    storage::Directory& parent = f.dir ? *f.dir : *ctx.root;
    removed = parent.remove(f.temp).has_value();
    if (removed) {
      f.temp_made = false;
      if (ctx.journal) ctx.journal->settle();
    }
  }
  f.dir.reset();
  return removed;
}

void fail_file(FileState& f, const Error& e) {
  if (!f.failed) f.error = e;
  f.failed = true;
}

Result<void> restore_dir_attributes(storage::Directory& root, const catalog::FileRecord& d,
                                    bool set_owner, const std::vector<PathRemap>& remaps) {
  SB_ASSIGN(auto comps, target_components(d.path, remaps));
  if (comps.empty()) return ok();
  std::string rel;
  for (const auto& c : comps) rel += (rel.empty() ? "" : "/") + c;
  std::string shown = root.location().join(rel).str();
  comps.push_back(".");  // open_parent creates and opens every component before the last
  SB_ASSIGN(auto dir, open_parent(root, comps, shown));
  storage::Directory& at = dir ? *dir : root;
  SB_TRY(at.set_attrs(restore_attrs(d, set_owner)));
  SB_TRY(at.sync());
  return ok();
}

}  // namespace stripeback::engine
