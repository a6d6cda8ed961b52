// The parts of the option schema that live in files of their own. schema.cc lists every
// option in --help's order, taking these spans at their places in it.
#pragma once

#include <span>

#include "options/schema.h"

namespace stripeback::options {

// --exclude, --exclude-from, --not-backed-up-since (docs/selection.md).
std::span<const Option> selection_options();
// backup --validate, the page checks and the ransomware alarm.
std::span<const Option> validation_options();
// validate's choice of frames and its time bound: --sample, --seed, --part, --max-duration.
std::span<const Option> validate_frame_options();
// --hot and --pg (docs/postgresql.md).
std::span<const Option> database_options();
// restore to a point in time: --target-*, --standby.
std::span<const Option> pitr_options();

}  // namespace stripeback::options
