// Restoring into a remote target (an nfs:// URL given as restore --to): the same steps as
// the local path (temporary file, verify, size, sync, attributes, rename into place)
// through the io remote seam instead of directory descriptors. Remote mtimes are set to
// the microsecond (libnfs's unit).
#pragma once

#include "catalog/model.h"
#include "engine/restore_channel.h"
#include "stripeback/result.h"

namespace stripeback::engine {

Result<void> open_remote_file(const RestoreContext& ctx, FileState& f);
// After the whole-file checksum passed.
Result<void> finish_remote_file(const RestoreContext& ctx, FileState& f);
// Removes the temporary of a failed file; true when it is gone.
bool abandon_remote_file(FileState& f);
Result<void> restore_remote_dir(const RestoreContext& ctx, const catalog::FileRecord& d);

}  // namespace stripeback::engine
