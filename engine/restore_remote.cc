#include "engine/restore_remote.h"

#include <unistd.h>

#include "engine/restore_job.h"
#include "engine/restore_journal.h"
#include "io/remote.h"
#include "nfs/url.h"

namespace stripeback::engine {
namespace {

// The URL below the target for a backed-up path, and its parent directory.
Result<std::pair<std::string, std::string>> place_of(const RestoreContext& ctx,
                                                     const std::string& original) {
  SB_ASSIGN(auto comps, safe_components(original));
  std::string parent = ctx.target;
  for (size_t i = 0; i + 1 < comps.size(); ++i) parent = io::join_path(parent, comps[i]);
  return std::make_pair(io::join_path(parent, comps.back()), parent);
}

}  // namespace

Result<void> open_remote_file(const RestoreContext& ctx, FileState& f) {
  SB_ASSIGN(auto place, place_of(ctx, f.item->file.path));
  f.shown = place.first;
  SB_ASSIGN(auto comps, safe_components(f.item->file.path));
  f.name = place.first;
  SB_TRY(io::make_dirs(place.second));
  // A new name each time, created exclusively (see restore_journal.h).
  Result<io::OpenedFile> made = fail(Errc::exists, "no free temporary name");
  for (int attempt = 0; attempt < 8; ++attempt) {
    comps.back() = restore_temp_name();
    f.temp = io::join_path(place.second, comps.back());
    if (ctx.journal) SB_TRY(ctx.journal->note(comps));
    made = io::create_exclusive(f.temp, 0600, io::Direct::no);
    if (made) break;
    if (ctx.journal) ctx.journal->settle();
    if (made.error().code != Errc::exists) break;
  }
  if (!made) return made.error().wrap("unable to create '" + f.shown + "'");
  f.out = std::move(made->fd);
  f.direct = false;
  f.temp_made = true;
  return ok();
}

Result<void> finish_remote_file(const RestoreContext& ctx, FileState& f) {
  const auto& rec = f.item->file;
  // Frames of zeros were not written: setting the size makes them read as zeros.
  SB_TRY(io::truncate_fd(f.out.get(), rec.size, f.shown));
  SB_TRY(io::datasync_fd(f.out.get(), f.shown));
  f.out.reset();
  io::RemoteFs* fs = io::remote_for(f.temp);
  if (fs == nullptr) return fail(Errc::invalid_argument, "no backend for '" + f.temp + "'");
  SB_TRY(fs->set_attributes(f.temp, ctx.set_owner, rec.uid, rec.gid,
                            static_cast<mode_t>(rec.mode), rec.mtime_ns));
  if (!ctx.force && io::lstat_path(f.name))
    return fail(Errc::exists, "refusing to overwrite existing file '" + f.shown +
                                  "' (use --force to replace it)");
  SB_TRY(io::rename_path(f.temp, f.name));
  f.temp_made = false;
  if (ctx.journal) ctx.journal->settle();
  return ok();
}

bool abandon_remote_file(FileState& f) {
  f.out.reset();
  return !f.temp.empty() && io::unlink_path(f.temp).has_value();
}

Result<void> restore_remote_dir(const RestoreContext& ctx, const catalog::FileRecord& d) {
  SB_ASSIGN(auto place, place_of(ctx, d.path));
  SB_TRY(io::make_dirs(place.first));
  io::RemoteFs* fs = io::remote_for(place.first);
  if (fs == nullptr) return fail(Errc::invalid_argument, "no backend for '" + place.first + "'");
  return fs->set_attributes(place.first, ctx.set_owner, d.uid, d.gid,
                            static_cast<mode_t>(d.mode), d.mtime_ns);
}

}  // namespace stripeback::engine
