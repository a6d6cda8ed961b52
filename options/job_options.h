// Settings (options/settings.h) turned into the engine's job options, with every check
// that relates one option to another, before anything is opened or written: bad usage
// leaves no trace. The CLI and the C API both call these; messages name options through
// util::option_word, so each front end words them.
#pragma once

#include "engine/backup/backup_job.h"
#include "engine/restore/restore_job.h"
#include "options/settings.h"
#include "stripeback/result.h"

namespace stripeback::options {

// backup, or with Settings::validate a source validation (no destination, nothing written).
Result<engine::BackupOptions> backup_options(const Settings& s);
// restore, or with `verify_only` a validation.
Result<engine::RestoreOptions> restore_options(const Settings& s, bool verify_only);

}  // namespace stripeback::options
