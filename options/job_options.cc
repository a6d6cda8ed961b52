#include "options/job_options.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/backup/buffer_budget.h"
#include "engine/backup/exclude.h"
#include "engine/transform/compress.h"
#include "options/schema.h"
#include "util/clock.h"
#include "util/units.h"

namespace stripeback::options {
namespace {

using util::option_word;

Error usage(std::string what) { return Error{Errc::invalid_argument, 0, std::move(what)}; }

std::string given_or_default(const Settings& s, std::string_view key) {
  auto it = s.given.find(key);
  return it == s.given.end() ? "(default)" : it->second;
}

// Refuses I/O buffers that would take more memory than a job may have
// (engine::buffer_memory_limit), naming the options that set them and the total.
Result<void> check_buffer_memory(const Settings& s, uint32_t channels, uint64_t per_channel,
                                 bool compressing) {
  uint64_t physical = 0;
  const uint64_t limit = engine::buffer_memory_limit(&physical);
  const uint64_t total = per_channel * channels;
  if (total <= limit) return ok();
  const std::string given = option_word("buffers") + " " + given_or_default(s, "buffers") +
                            ", " + option_word("buffer_size") + " " +
                            given_or_default(s, "buffer_size");
  const std::string why = physical ? "half of this machine's " + util::format_bytes(physical) +
                                         " of memory, and at most " +
                                         util::format_bytes(engine::kMaxBufferMemory)
                                   : "the most any job may have";
  return usage("I/O buffers would take " + util::format_bytes(total) + ": " +
               util::format_bytes(per_channel) + " per channel (" + given +
               (compressing ? ", doubled by " + option_word("compress") : "") + ") x " +
               std::to_string(channels) + " channel(s) (" + option_word("channels") +
               "), above the limit of " + util::format_bytes(limit) + " (" + why + "); lower " +
               option_word("buffers") + ", " + option_word("buffer_size") + " or " +
               option_word("channels"));
}

engine::ChannelConfig channel_config(const Settings& s) {
  engine::ChannelConfig cfg;
  if (s.buffers) cfg.buffers = *s.buffers;
  if (s.buffer_size) cfg.buffer_size = *s.buffer_size;
  cfg.direct = s.direct ? io::Direct::yes : io::Direct::no;
  return cfg;
}

bool is_tape(const std::string& where) { return where.rfind("tape:", 0) == 0; }

// The destinations: one directory (or other medium), or tape drives (one channel each).
Result<std::optional<engine::MediaOptions>> media_options(const Settings& s) {
  size_t tapes = 0;
  for (const auto& t : s.destinations) tapes += is_tape(t) ? 1 : 0;
  const std::string to = option_word("destination");
  if (tapes > 0 && tapes != s.destinations.size())
    return usage(to + " mixes tape drives and directories: give either one directory or "
                      "tape:URL drives");
  if (tapes == 0 && s.destinations.size() > 1)
    return usage(to + " names " + std::to_string(s.destinations.size()) +
                 " directories; only tape drives may be repeated");
  if (tapes == 0) {
    // Tape settings given for a directory would be ignored: say so rather than accept them.
    for (const char* key : {"tape_volumes", "tape_block_size", "tape_io", "tape_wait",
                            "label_blank"})
      if (s.was_given(key))
        return usage(option_word(key) + " needs " +
                     util::option_value_word("destination", "tape:URL") +
                     " drives: it sets how pieces are written to tape, and '" +
                     (s.destinations.empty() ? std::string() : s.destinations.front()) +
                     "' is a directory");
    return std::optional<engine::MediaOptions>();
  }
  engine::MediaOptions t;
  t.drives = s.destinations;
  for (const auto& v : s.tape_volumes) {
    if (!is_tape(v))
      return usage(option_word("tape_volumes") + " '" + v +
                   "' is not a tape URL (tape:iscsi://... or tape:/dev/sgN)");
    t.volumes.push_back(v);
  }
  t.block_size = s.tape_block_size.value_or(engine::kDefaultMediaBlockSize);
  t.sync_io = s.tape_sync_io.value_or(false);
  t.ready_wait = std::chrono::seconds(s.tape_wait.value_or(10));
  t.label_blank = s.label_blank;
  return std::optional<engine::MediaOptions>(std::move(t));
}

// How objects are written to S3: for an s3:// destination only, and a KMS key only with
// aws:kms encryption.
Result<void> check_s3_writes(const Settings& s) {
  const bool to_s3 = !s.destinations.empty() && s.destinations.front().rfind("s3://", 0) == 0;
  if (!to_s3)
    for (const char* key : {"s3_storage_class", "s3_sse", "s3_sse_kms_key_id"})
      if (s.was_given(key))
        return usage(option_word(key) + " needs " +
                     util::option_value_word("destination", "s3://BUCKET/PREFIX") +
                     ": it sets how objects are written, and " +
                     (s.destinations.empty() ? std::string("there is no destination")
                                             : "'" + s.destinations.front() + "' is not one"));
  if (s.was_given("s3_sse_kms_key_id") && s.s3.sse != "aws:kms")
    return usage(option_word("s3_sse_kms_key_id") + " needs " +
                 util::option_value_word("s3_sse", "aws:kms") +
                 ": a KMS key encrypts only with the store's key management service" +
                 (s.s3.sse.empty() ? std::string() : ", not " + s.s3.sse));
  return ok();
}

Result<void> check_targets(const Settings& s) {
  if (s.sources.empty()) return usage("no " + option_word("source") + " given");
  if (s.validate && !s.destinations.empty())
    return usage(util::command_word("validate-sources") + " writes nothing: it takes no " +
                 option_word("destination"));
  if (!s.validate && s.destinations.empty())
    return usage("backup needs a " + util::option_value_word("destination", "DIR or tape:URL") +
                 " (or " + option_word("validate") +
                 " to read and check the sources without writing)");
  return ok();
}

Result<void> check_pacing(const Settings& s) {
  if (s.partial && !s.duration)
    return usage(option_word("partial") + " needs " + option_word("duration"));
  if (s.minimize_load && !s.duration)
    return usage(option_word("minimize_load") + " needs " + option_word("duration"));
  if (s.cpu_budget && s.compress_level != engine::kCompressAuto)
    return usage(option_word("cpu_budget") + " needs " +
                 util::option_value_word("compress", "auto"));
  if (s.change_unit && !s.level)
    return usage(option_word("change_unit") + " needs " + option_word("level"));
  return ok();
}

Result<std::shared_ptr<engine::Keyring>> keys_for_backup(const Settings& s) {
  SB_ASSIGN(auto keys, engine::Keyring::load(s.keys));
  if (s.encrypt && !keys)
    return usage(option_word("encrypt") + " needs " + option_word("passphrase_file") + ", " +
                 option_word("passphrase_env") + " or " + option_word("key_file"));
  if (!s.encrypt && keys)
    return usage("a passphrase or key was given without " + option_word("encrypt") + ": " +
                 util::ask_option("encrypt") + " to encrypt this backup");
  return keys;
}

Result<engine::FrameSelection> frame_selection(const Settings& s, bool verify_only) {
  engine::FrameSelection sel;
  if (s.sample) {
    if (!verify_only) return usage(option_word("sample") + " is for validations");
    sel.sample = *s.sample;
    sel.seed = s.seed ? *s.seed
                      : (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  } else if (s.seed) {
    return usage(option_word("seed") + " goes with " + option_word("sample"));
  }
  if (s.part) {
    sel.part = s.part->first;
    sel.parts = s.part->second;
  }
  if (s.max_duration) sel.max_duration = *s.max_duration;
  return sel;
}

// --exclude patterns, then those of each --exclude-from file in turn (one a line; blank
// lines and lines starting with '#' skipped). A file that cannot be read, or a bad
// pattern in one, is an error naming the file (and the line).
Result<std::vector<std::string>> exclude_patterns(const Settings& s) {
  std::vector<std::string> out = s.exclude;
  for (const auto& file : s.exclude_from) {
    auto unreadable = [&](int err) {
      return Error{Errc::invalid_argument, err,
                   option_word("exclude_from") + " '" + file + "' cannot be read: " +
                       std::strerror(err)};
    };
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) return unreadable(errno);
    if (S_ISDIR(st.st_mode))
      return usage(option_word("exclude_from") + " '" + file + "' is a directory, not a file of patterns");
    errno = 0;
    std::ifstream in(file);
    if (!in) return unreadable(errno ? errno : EACCES);
    std::string line;
    for (size_t n = 1; std::getline(in, line); ++n) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line.front() == '#') continue;
      if (auto r = engine::ExcludeRules::check(line); !r)
        return r.error().wrap(option_word("exclude_from") + " '" + file + "' line " +
                              std::to_string(n));
      out.push_back(line);
    }
    if (in.bad())
      return usage(option_word("exclude_from") + " '" + file + "' cannot be read to its end");
  }
  return out;
}

}  // namespace

Result<engine::BackupOptions> backup_options(const Settings& s) {
  SB_TRY(check_targets(s));
  SB_TRY(check_pacing(s));
  SB_TRY(check_s3_writes(s));
  engine::BackupOptions o;
  o.channel = channel_config(s);
  o.validate_only = s.validate;
  o.sources = s.sources;
  o.one_file_system = s.one_file_system;
  o.skip_unreadable = s.skip_unreadable;
  SB_ASSIGN(o.excludes, exclude_patterns(s));
  if (s.not_backed_up_since_ns) o.not_backed_up_since_ns = s.not_backed_up_since_ns;
  if (s.not_backed_up_for)
    o.not_backed_up_since_ns = util::wall_now_ns() -
                               std::chrono::duration_cast<std::chrono::nanoseconds>(*s.not_backed_up_for).count();
  if (!s.destinations.empty()) o.destination = s.destinations.front();
  o.tag = s.tag;
  o.channels = s.channels;
  o.auto_channels = s.channels_auto;
  o.buffers = s.buffers;
  o.buffer_size = s.buffer_size;
  o.files_per_set = s.files_per_set;
  o.channel.max_open_files = s.max_open_files;
  o.channel.max_piece_size = s.max_piece_size;
  o.section_size = s.section_size;
  o.channel.rate = static_cast<double>(s.rate);
  o.job_rate = static_cast<double>(s.job_rate);
  o.duration = s.duration;
  if (s.checkpoints) {
    o.channel.checkpoint_bytes = s.checkpoints->bytes;
    o.channel.checkpoint_interval = s.checkpoints->interval;
  }
  o.partial = s.partial;
  o.minimize_load = s.minimize_load;
  o.channel.compress_level = s.compress_level;
  SB_ASSIGN(o.media, media_options(s));
  if (o.media) {  // one channel per drive, auto or not
    o.channels = static_cast<uint32_t>(o.media->drives.size());
    o.auto_channels = false;
  }
  // With auto the job splits the whole budget once it has chosen the count.
  if (s.cpu_budget) o.channel.cpu_budget = *s.cpu_budget / (o.auto_channels ? 1 : o.channels);
  o.level = s.level;
  o.cumulative = s.cumulative;
  o.require_parent = s.require_parent;
  o.optimize = s.optimize;
  o.force = s.force;
  o.check_logical = s.check_logical;
  o.max_corrupt = s.max_corrupt;
  o.page_size = s.page_size;
  if (s.alarm)
    o.alarm = engine::AlarmThresholds{s.alarm_page_share, s.alarm_page_factor,
                                      s.alarm_compression_drop};
  else
    o.alarm.reset();
  o.resume = s.resume;
  o.hot = s.hot || !s.pg.empty();
  if (s.lock_days) o.lock = engine::BackupOptions::Lock{s.lock_mode, *s.lock_days};
  else if (s.was_given("lock_mode"))
    return fail(Errc::invalid_argument,
                util::option_word("lock_mode") + " goes with " + util::option_word("lock_days"));
  if (s.change_unit) o.change_unit = *s.change_unit;
  SB_ASSIGN(o.keys, keys_for_backup(s));
  const bool compressing = o.channel.compress_level != 0;
  // With auto, one channel must fit: the choice stays within the limit (its memory bound).
  SB_TRY(check_buffer_memory(
      s, o.auto_channels ? 1 : o.channels,
      engine::backup_channel_buffer_bytes(o.buffers, o.buffer_size, compressing, o.validate_only),
      compressing));
  return o;
}

// One recovery target at most; what qualifies a target only with one; a standby has none;
// neither restores only some paths.
static Result<void> check_recovery(const Settings& s) {
  std::vector<std::string> targets;
  for (const char* key : {"target_time", "target_lsn", "target_xid"})
    if (s.was_given(key)) targets.push_back(option_word(key));
  if (targets.size() > 1)
    return usage(targets[0] + " and " + targets[1] + " are alternatives: give one recovery target");
  for (const char* key : {"target_action", "target_inclusive"})
    if (s.was_given(key) && targets.empty())
      return usage(option_word(key) + " goes with " + option_word("target_time") + ", " +
                   option_word("target_lsn") + " or " + option_word("target_xid"));
  if (s.recovery.standby && !targets.empty())
    return usage(option_word("standby") + " replays the archive without end; it takes no " +
                 targets[0]);
  if ((s.recovery.standby || !targets.empty()) && !s.paths.empty())
    return usage((targets.empty() ? option_word("standby") : targets[0]) +
                 " restores a whole data directory, not some paths ('" + s.paths.front() +
                 "')");
  return ok();
}

Result<engine::RestoreOptions> restore_options(const Settings& s, bool verify_only) {
  if (verify_only && !s.target.empty())
    return usage(util::command_word("validate") + " writes nothing: it takes no " +
                 option_word("target"));
  if (!verify_only && s.target.empty()) return usage("restore needs a " + option_word("target"));
  if (s.duration || s.partial)
    return usage(option_word("duration") + " and " + option_word("partial") +
                 " are for backups");
  if (s.delta && s.force)
    return usage(option_word("delta") + " and " + option_word("force") + " are alternatives: " +
                 option_word("delta") + " updates existing files in place, " +
                 option_word("force") + " replaces them whole");
  if (s.no_fallback && s.allow_fallback)
    return usage(option_word("no_fallback") + " and " + option_word("allow_fallback") +
                 " exclude each other");
  if (!s.tag.empty() && s.backup_id)
    return usage(option_word("tag") + " and " + option_word("backup_id") +
                 " exclude each other");
  SB_TRY(check_recovery(s));
  engine::RestoreOptions o;
  o.verify_only = verify_only;
  o.target = s.target;
  if (!s.tag.empty()) o.tag = s.tag;
  o.backup_id = s.backup_id;
  o.paths = s.paths;
  o.remaps = s.remaps;
  o.channels = s.channels;
  o.auto_channels = s.channels_auto;
  o.force = s.force;
  o.delta = s.delta;
  o.fallback = !s.no_fallback;
  o.channel = channel_config(s);
  o.media_drives = s.tape_drives;
  SB_ASSIGN(o.select, frame_selection(s, verify_only));
  SB_ASSIGN(o.keys, engine::Keyring::load(s.keys));
  SB_TRY(check_buffer_memory(
      s, o.auto_channels ? 1 : o.channels, engine::restore_channel_buffer_bytes(o.channel.buffers, o.channel.buffer_size),
      false));
  return o;
}

}  // namespace stripeback::options
