// The backup's first phases: the options checked on their own, then the plan (the sources
// walked, the destination kept out of them, the validator of their pages).
#include <filesystem>
#include <string>
#include <utility>

#include "engine/backup/backup_job_state.h"
#include "engine/backup/buffer_budget.h"
#include "storage/registry.h"
#include "util/option_words.h"

namespace stripeback::engine::backup_internal {

using util::option_word;

namespace {

// A destination inside a source would have every backup read the pieces of the ones before.
// Compared with symbolic links resolved, so no link makes one look outside the other.
Result<void> check_destination_outside(const std::vector<std::string>& sources,
                                       const std::string& dest) {
  if (storage::has_scheme(dest)) {
    for (const auto& s : sources) {
      const std::string src = storage::normal_path(s);
      if (dest == src || dest.starts_with(src + "/"))
        return fail(Errc::invalid_argument, "backup destination '" + dest +
                                                "' is inside the source '" + src +
                                                "': choose a destination outside the sources");
    }
    return ok();
  }
  auto real = [](const std::string& p) {
    std::error_code ec;
    auto r = std::filesystem::weakly_canonical(p, ec);
    return ec ? p : r.string();
  };
  const std::string d = real(dest);
  for (const auto& s : sources) {
    if (storage::has_scheme(s)) continue;
    std::string src = real(storage::normal_path(s));
    while (src.size() > 1 && src.back() == '/') src.pop_back();
    if (d == src || d.starts_with(src == "/" ? src : src + "/"))
      return fail(Errc::invalid_argument,
                  "backup destination '" + dest + "' is inside the source '" + s +
                      "': every backup would read the pieces of the ones before; choose a "
                      "destination outside the sources");
  }
  return ok();
}

}  // namespace

Result<Next> check_options(BackupJob& job) {
  const BackupOptions& o = job.opts;
  if (o.channels < 1 || o.channels > 256)
    return fail(Errc::invalid_argument, option_word("channels") + " must be between 1 and 256");
  if (o.destination.empty() && !o.validate_only)
    return fail(Errc::invalid_argument, "no destination given (" + option_word("destination") + ")");
  if (o.media && o.media->drives.size() != o.channels)
    return fail(Errc::invalid_argument, "a backup to removable media runs one channel per drive: " +
                                            std::to_string(o.media->drives.size()) + " drive(s), " +
                                            std::to_string(o.channels) + " channel(s)");
  SB_TRY(check_buffer_overrides(o.buffers, o.buffer_size));
  if (o.files_per_set < 1)
    return fail(Errc::invalid_argument, option_word("files_per_set") + " must be at least 1");
  if (o.channel.max_open_files < 1 || o.channel.max_open_files > 256)
    return fail(Errc::invalid_argument, option_word("max_open_files") + " must be between 1 and 256");
  if (o.section_size && o.section_size < (1u << 20))
    return fail(Errc::invalid_argument, option_word("section_size") + " must be at least 1 MiB");
  if (o.duration && o.duration->count() <= 0)
    return fail(Errc::invalid_argument, option_word("duration") + " must be longer than zero");
  for (auto [given, key] : {std::pair{o.partial, "partial"}, {o.minimize_load, "minimize_load"}})
    if (given && !o.duration)
      return fail(Errc::invalid_argument, option_word(key) + " needs " + option_word("duration"));
  if (o.level && *o.level != 0 && *o.level != 1)
    return fail(Errc::invalid_argument, option_word("level") + " must be 0 or 1");
  for (auto [given, key] : {std::pair{o.cumulative, "cumulative"}, {o.require_parent, "require_parent"}})
    if (given && (!o.level || *o.level != 1))
      return fail(Errc::invalid_argument,
                  option_word(key) + " needs " + util::option_value_word("level", "1"));
  if (o.level && (o.change_unit < kMinChangeUnit || o.change_unit > kMaxChangeUnit ||
                  (o.change_unit & (o.change_unit - 1)) != 0))
    return fail(Errc::invalid_argument, option_word("change_unit") + " must be a power of two from 8 KiB to 1 MiB");
  if (o.level && o.buffer_size && *o.buffer_size % o.change_unit != 0)
    return fail(Errc::invalid_argument, option_word("buffer_size") + " must be a multiple of " + option_word("change_unit"));
  if ((o.optimize || o.force) && !o.level)
    return fail(Errc::invalid_argument, option_word("optimize") + " and " + option_word("force") + " need " + option_word("level"));
  if (o.validate_only && (o.level || o.keys || o.media || o.channel.compress_level != 0))
    return fail(Errc::invalid_argument,
                util::command_word("validate-sources") + " writes nothing: " +
                    option_word("level") + ", " + option_word("encrypt") + ", " +
                    option_word("compress") + " and removable destinations do not go with it");
  if ((o.max_corrupt != 0 || o.page_size) && !o.check_logical)
    return fail(Errc::invalid_argument, option_word("max_corrupt") + " and " + option_word("page_size") + " need " + option_word("check_logical"));
  auto rules = ExcludeRules::make(o.excludes);
  if (!rules) return rules.error();
  job.rules = std::move(*rules);
  return Next::go_on;
}

Result<Next> plan_sources(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  SB_ASSIGN(job.plan, make_plan(opts.sources, {opts.one_file_system, opts.skip_unreadable,
                                               opts.exclude, &job.rules}));
  job.planned = job.plan.files.size();
  job.dest = opts.media ? opts.destination : storage::normal_path(opts.destination);
  if (!opts.media && !opts.validate_only) SB_TRY(check_destination_outside(opts.sources, job.dest));
  if (opts.check_logical) {
    SB_ASSIGN(job.validator, make_validator(*opts.check_logical, opts.sources, opts.page_size,
                                                opts.pages_changing_from));
  }
  return Next::go_on;
}

}  // namespace stripeback::engine::backup_internal
