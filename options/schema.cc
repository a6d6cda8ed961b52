#include "options/schema.h"

#include <charconv>
#include <string>
#include <vector>

#include "engine/backup/buffer_budget.h"
#include "engine/pieces/change_map.h"
#include "engine/transform/compress.h"
#include "engine/wiring/backends.h"
#include "options/schema_parts.h"
#include "options/setters.h"
#include "util/units.h"

namespace stripeback::options {
namespace {

using namespace setters;

Result<void> set_lock_mode(const Option& o, Settings& s, std::string_view v) {
  if (v == "compliance") s.lock_mode = storage::Retention::Mode::compliance;
  else if (v == "governance") s.lock_mode = storage::Retention::Mode::governance;
  else return bad(o, "must be compliance or governance; got " + quoted(v));
  return ok();
}

Result<void> set_compress(const Option& o, Settings& s, std::string_view v) {
  auto level = engine::parse_compress(std::string(v));
  if (!level) return level.error().wrap("option " + util::option_word(o.key));
  s.compress = std::string(v);
  s.compress_level = *level;
  return ok();
}
void reset_compress(Settings& s) {
  s.compress = "none";
  s.compress_level = 0;
}

Result<void> set_duration(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(auto d, util::parse_duration(v, util::option_word(o.key)));
  if (d < std::chrono::seconds(1)) return bad(o, "must be at least one second");
  s.duration = std::chrono::ceil<std::chrono::seconds>(d);
  return ok();
}

// A size of piece (1G), a time (5m, 00:05), both (256M,1m) or off.
Result<void> set_checkpoints(const Option& o, Settings& s, std::string_view spec) {
  if (spec == "off") {
    s.checkpoints = engine::Checkpoints{0, std::chrono::milliseconds(0)};
    return ok();
  }
  engine::Checkpoints c{0, std::chrono::milliseconds(0)};
  bool size_given = false, time_given = false;
  size_t at = 0;
  while (at <= spec.size()) {
    size_t comma = spec.find(',', at);
    if (comma == std::string_view::npos) comma = spec.size();
    const std::string_view part = spec.substr(at, comma - at);
    at = comma + 1;
    const bool is_time = !part.empty() && (part.find(':') != std::string_view::npos ||
                                           part.back() == 's' || part.back() == 'm' ||
                                           part.back() == 'h');
    const bool is_size = !is_time && util::parse_size(part).has_value();
    if (is_time && !time_given) {
      SB_ASSIGN(c.interval, util::parse_duration(part, util::option_word(o.key)));
      time_given = true;
    } else if (is_size && !size_given) {
      SB_ASSIGN(c.bytes, util::parse_size(part));
      size_given = true;
    } else {
      return fail(Errc::invalid_argument,
                  "invalid " + util::option_word(o.key) + " " + quoted(spec) +
                      ": expected a size (1G), a time (5m, 00:05), both (1G,5m) or off");
    }
  }
  s.checkpoints = c;
  return ok();
}

Result<void> set_cpu_budget(const Option& o, Settings& s, std::string_view v) {
  const auto cores = number_in(v);
  if (!cores || !(*cores > 0) || *cores > 1024)
    return bad(o, "must be a number of cores above 0 (e.g. 0.5 or 1.5); got " + quoted(v));
  s.cpu_budget = *cores;
  return ok();
}

Result<void> set_change_unit(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(uint64_t unit, bytes(o, v));
  if ((unit & (unit - 1)) != 0)
    return fail(Errc::invalid_argument, util::option_word(o.key) +
                                            " must be a power of two from 8 KiB to 1 MiB");
  s.change_unit = static_cast<uint32_t>(unit);
  return ok();
}

Result<void> set_resume(const Option& o, Settings& s, std::string_view v) {
  if (v == "last") {
    s.resume = 0;
    return ok();
  }
  uint64_t id = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), id);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size())
    return fail(Errc::invalid_argument, util::option_word(o.key) +
                                            " takes a backup id or 'last', not " + quoted(v));
  if (id == 0)
    return fail(Errc::invalid_argument, util::option_word(o.key) + ": backup ids start at 1");
  s.resume = id;
  return ok();
}

template <std::string engine::S3Options::*F>
Result<void> s3_text(const Option& o, Settings& s, std::string_view v) {
  if (v.empty()) return bad(o, "may not be empty");
  s.s3.*F = std::string(v);
  return ok();
}
template <std::string engine::S3Options::*F>
void reset_s3_text(Settings& s) {
  (s.s3.*F).clear();
}
// One of `words` ("a|b|c").
template <std::string engine::S3Options::*F>
Result<void> s3_word(const Option& o, Settings& s, std::string_view v) {
  std::string_view words = o.placeholder;
  for (size_t at = 0; at <= words.size();) {
    size_t bar = std::min(words.find('|', at), words.size());
    if (words.substr(at, bar - at) == v) return s3_text<F>(o, s, v);
    at = bar + 1;
  }
  return bad(o, "wants " + std::string(words) + "; got " + quoted(v));
}
Result<void> set_s3_part_size(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(s.s3.part_size, bytes(o, v));
  return ok();
}
Result<void> set_s3_parts_in_flight(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(uint64_t n, whole(o, v));
  s.s3.parts_in_flight = static_cast<uint32_t>(n);
  return ok();
}
Result<void> set_s3_attempts(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(uint64_t n, whole(o, v));
  s.s3.attempts = static_cast<uint32_t>(n);
  return ok();
}
Result<void> set_s3_timeout(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(auto d, util::parse_duration(v, util::option_word(o.key)));
  if (d < std::chrono::seconds(1)) return bad(o, "must be at least one second");
  s.s3.timeout = d;
  return ok();
}
// A storage class as S3 names them: upper-case letters, digits and '_' (STANDARD_IA).
Result<void> set_s3_storage_class(const Option& o, Settings& s, std::string_view v) {
  for (char c : v)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return bad(o, "wants a storage class of upper-case letters, digits and '_' (STANDARD, "
                    "STANDARD_IA, GLACIER_IR, ...); got " + quoted(v));
  return s3_text<&engine::S3Options::storage_class>(o, s, v);
}
// A KMS key's id, ARN or alias: printable, no blanks.
Result<void> set_s3_sse_kms_key_id(const Option& o, Settings& s, std::string_view v) {
  for (char c : v)
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e)
      return bad(o, "wants a key id, ARN or alias without blanks or control bytes; got " +
                        quoted(v));
  return s3_text<&engine::S3Options::sse_kms_key_id>(o, s, v);
}
template <auto F>
void reset_s3(Settings& s) {
  s.s3.*F = engine::S3Options{}.*F;
}

Result<void> set_tape_io(const Option& o, Settings& s, std::string_view v) {
  if (v != "async" && v != "sync") return bad(o, "wants async or sync; got " + quoted(v));
  s.tape_sync_io = v == "sync";
  return ok();
}

Result<void> set_tape_block_size(const Option&, Settings& s, std::string_view v) {
  SB_ASSIGN(s.tape_block_size, engine::parse_media_block_size(v));
  return ok();
}


Result<void> set_channels(const Option& o, Settings& s, std::string_view v) {
  if (v == "auto") {
    s.channels_auto = true;
    return ok();
  }
  if (v.empty() || v.find_first_not_of("0123456789") != std::string_view::npos)
    return bad(o, "wants a whole number from " + std::to_string(o.lo) + " to " +
                      std::to_string(o.hi) + " or auto; got " + quoted(v));
  SB_ASSIGN(uint64_t n, whole(o, v));
  s.channels = static_cast<uint32_t>(n);
  s.channels_auto = false;
  return ok();
}
void reset_channels(Settings& s) {
  s.channels = Settings{}.channels;
  s.channels_auto = false;
}

Result<void> set_buffer_size(const Option& o, Settings& s, std::string_view v) {
  auto n = util::parse_size(v);
  if (!n) return n.error().wrap("option " + util::option_word(o.key));
  SB_TRY(engine::check_buffer_overrides(std::nullopt, *n));
  s.buffer_size = static_cast<size_t>(*n);
  return ok();
}

Result<void> add_remap(const Option&, Settings& s, std::string_view v) {
  SB_ASSIGN(engine::PathRemap r, engine::parse_remap(v));
  s.remaps.push_back(std::move(r));
  return ok();
}

// The restore target and the backup destination share the CLI's --to.
Result<void> set_destination(const Option& o, Settings& s, std::string_view v) {
  if (v.empty()) return bad(o, "may not be empty");
  s.destinations.emplace_back(v);
  return ok();
}

// clang-format off
// clang-format off
const Option kWhat[] = {
  // What and where.
  {"source", "SOURCE", Type::list, kBackup,
   "files or directories to back up, directories recursively. A SOURCE that is a symbolic "
   "link is followed (its files are recorded under the link's path); symbolic links and "
   "special files found below a SOURCE are reported and skipped, as are pseudo file systems "
   "(/proc, /sys, /dev, cgroup, ...)",
   {}, {}, {}, 0, 0, add<&Settings::sources>, reset<&Settings::sources>, true, false, true},
  {"path", "PATH", Type::list, kRestores,
   "original files or directories to restore or check (default: everything)",
   {}, {}, {}, 0, 0, add<&Settings::paths>, reset<&Settings::paths>},
  {"one_file_system", "--one-file-system", Type::flag, kBackup,
   "do not descend into directories on another file system than the SOURCE they are below "
   "(mount points are reported as skipped)",
   {}, {}, {}, 0, 0, yes_no<&Settings::one_file_system>, reset<&Settings::one_file_system>},
  {"skip_unreadable", "--skip-unreadable", Type::flag, kBackup,
   "back up the rest when a directory below a SOURCE cannot be read, and record it as "
   "skipped (without it, an unreadable directory fails the backup with exit 1 before "
   "anything is written)",
   {}, {}, {}, 0, 0, yes_no<&Settings::skip_unreadable>, reset<&Settings::skip_unreadable>},
};
const Option kWhere[] = {
  {"destination", "--to", Type::list, kBackup,
   "directory that receives the backup pieces, or a tape drive tape:iscsi://HOST:PORT/IQN/LUN "
   "or tape:/dev/sgN (repeat for more drives: one channel each); not with --validate",
   {}, "DIR|URL", {}, 0, 0, set_destination, reset<&Settings::destinations>},
  {"target", "--to", Type::text, kRestore, "directory to restore into",
   {}, "DIR", {}, 0, 0, text<&Settings::target>, reset<&Settings::target>, true, false, true},
  {"tag", "--tag", Type::text, kBackup, "a tag to find this backup by",
   {}, "TAG", {}, 0, 0, any_text<&Settings::tag>, reset<&Settings::tag>},
  {"tag", "--tag", Type::text, kRestores, "the newest complete backup with this tag",
   {}, "TAG", {}, 0, 0, any_text<&Settings::tag>, reset<&Settings::tag>},
  {"backup_id", "--backup", Type::number, kRestores, "this backup id (not with --tag)",
   {}, "ID", {}, 1, UINT64_MAX, count<&Settings::backup_id>, reset<&Settings::backup_id>},
};
const Option kWork[] = {
  // How the work is cut.
  {"channels", "--channels", Type::number, kJobs,
   "parallel channels, each with its own I/O ring (and, backing up, its own pieces; a backup "
   "to tape runs one per drive); auto: chosen for the job's media from the catalog's history "
   "of jobs between them, else a short read probe (docs/channel-controls.md)",
   {}, "N|auto", "2", 1, 256, set_channels, reset_channels, true, false, false, 0, {},
   "1 to 256 or \"auto\""},
  {"resume", "--resume", Type::text, kBackup,
   "continue an interrupted backup (killed, or its machine went down) of the same SOURCEs to "
   "the same --to: the files and sections its durable pieces finished are kept, not read "
   "again (give the same --section-size), the rest is backed up, and the result is that one "
   "backup. ID or 'last' (the newest interrupted backup to --to)",
   {}, "ID|last", {}, 0, 0, set_resume, reset<&Settings::resume>},
  {"lock_days", "--lock-days", Type::number, kBackup,
   "lock every piece and the catalog autobackup until N days after the backup ends, so that "
   "no one can delete or overwrite them before (S3 Object Lock: the bucket must have been "
   "created with Object Lock enabled); retention and delete skip locked backups",
   {}, "N", {}, 1, 36500, count<&Settings::lock_days>, reset<&Settings::lock_days>},
  {"lock_mode", "--lock-mode", Type::text, kBackup,
   "with --lock-days: compliance (no one can shorten or lift the lock, the root account "
   "included) or governance (a user with the s3:BypassGovernanceRetention permission can)",
   {}, "MODE", "compliance", 0, 0, set_lock_mode, reset<&Settings::lock_mode>},
  {"files_per_set", "--files-per-set", Type::number, kBackup,
   "files per backup set; a channel multiplexes the files of one set",
   {}, "N", "64", 1, 1000000, count<&Settings::files_per_set>, reset<&Settings::files_per_set>},
  {"max_open_files", "--max-open-files", Type::number, kBackup,
   "files a channel reads at once, interleaving their blocks in one piece (the multiplexing "
   "level)",
   {}, "N", "8", 1, 256, count<&Settings::max_open_files>, reset<&Settings::max_open_files>},
  {"checkpoint_interval", "--checkpoint-interval", Type::text, kBackup,
   "how often each channel closes its piece and records it in the catalog, so a killed "
   "backup resumes from there (backup --resume): a size of piece (1G), a time (5m, 00:05), "
   "both (256M,1m: whichever comes first) or off; default 256M,1m (not on tape, which is not "
   "resumed)",
   {}, "SPEC", {}, 0, 0, set_checkpoints, reset<&Settings::checkpoints>},
  {"max_piece_size", "--max-piece-size", Type::number, kBackup,
   "start a new piece before one would pass this size (e.g. 4G)",
   {}, "SIZE", {}, 1, kMaxSize, size<&Settings::max_piece_size>,
   reset<&Settings::max_piece_size>},
  {"section_size", "--section-size", Type::number, kBackup,
   "split files larger than this into sections that channels back up in parallel (e.g. 256M)",
   {}, "SIZE", {}, 1, kMaxSize, size<&Settings::section_size>, reset<&Settings::section_size>},
  // Rates, duration, compression.
  {"rate", "--rate", Type::number, kBackup,
   "most bytes per second each channel reads (e.g. 100M), from the first read on: at most one "
   "buffer more is saved up while idle",
   {}, "SIZE", {}, 1, kMaxSize, size<&Settings::rate>, reset<&Settings::rate>},
  {"job_rate", "--job-rate", Type::number, kBackup,
   "most bytes per second the whole job reads (e.g. 200M), with the same bound",
   {}, "SIZE", {}, 1, kMaxSize, size<&Settings::job_rate>, reset<&Settings::job_rate>},
  {"duration", "--duration", Type::text, kBackup,
   "longest time the backup may run: HH:MM, HH:MM:SS, or a number with a unit (90m, 5400s, "
   "2h); at the end it stops (failed, or partial with --partial)",
   {}, "TIME", {}, 0, 0, set_duration, reset<&Settings::duration>},
  {"partial", "--partial", Type::flag, kBackup,
   "with --duration: keep and record what finished by the deadline (exit code 3); files "
   "backed up least recently go first",
   {}, {}, {}, 0, 0, yes_no<&Settings::partial>, reset<&Settings::partial>},
  {"compress", "--compress", Type::text, kBackup,
   "compress each frame with zstd: none, low (level 1), medium (3), high (9), zstd:N, or auto "
   "(each channel picks levels 1-9 as it runs so compression never holds the devices back); "
   "frames that do not shrink by 1/16 are stored raw",
   {}, "LEVEL", "none", 0, 0, set_compress, reset_compress},
  {"cpu_budget", "--cpu-budget", Type::text, kBackup,
   "with --compress auto: cores the job's compression may use in all (e.g. 0.5); levels step "
   "down when over it",
   {}, "CORES", {}, 0, 0, set_cpu_budget, reset<&Settings::cpu_budget>},
  {"minimize_load", "--minimize-load", Type::flag, kBackup,
   "with --duration: pace the backup to end just inside the window instead of running at full "
   "speed",
   {}, {}, {}, 0, 0, yes_no<&Settings::minimize_load>, reset<&Settings::minimize_load>},
  // Incremental backups.
  {"level", "--level", Type::number, kBackup,
   "incremental backups: 0 is a full backup later level 1s build on; 1 writes only the change "
   "units whose digest differs from the newest level 0 or 1 of each file (every block is "
   "still read). Without --level: a plain full backup (docs/incremental.md)",
   "Incremental", "0|1", {}, 0, 1, count<&Settings::level>, reset<&Settings::level>},
  {"cumulative", "--cumulative", Type::flag, kBackup,
   "with --level 1: hold what changed since the newest level 0 (not since the newest level 0 "
   "or 1)",
   "Incremental", {}, {}, 0, 0, yes_no<&Settings::cumulative>, reset<&Settings::cumulative>},
  {"change_unit", "--change-unit", Type::number, kBackup,
   "with --level: granularity of change tracking, a power of two from 8K to 1M (default 64K); "
   "a level 1 compares with parents of the same unit",
   "Incremental", "SIZE", {}, 8192, engine::kMaxChangeUnit, set_change_unit,
   reset<&Settings::change_unit>},
  {"require_parent", "--require-parent", Type::flag, kBackup,
   "with --level 1: fail, writing nothing, when no file has a parent backup (instead of "
   "backing everything up whole)",
   "Incremental", {}, {}, 0, 0, yes_no<&Settings::require_parent>,
   reset<&Settings::require_parent>},
  {"optimize", "--optimize", Type::flag, kBackup,
   "with --level: do not read a file whose size, mtime, ctime and inode equal those of the "
   "copy the newest backup with a level holds (its chain must be restorable); the new "
   "backup's record names that backup, and restore takes the file from there",
   "Incremental", {}, {}, 0, 0, yes_no<&Settings::optimize>, reset<&Settings::optimize>},
  {"force", "--force", Type::flag, kBackup,
   "with --optimize: read and back up every file anyway",
   "Incremental", {}, {}, 0, 0, yes_no<&Settings::force>, reset<&Settings::force>},
  // Restore.
  {"force", "--force", Type::flag, kRestore, "replace files that already exist",
   {}, {}, {}, 0, 0, yes_no<&Settings::force>, reset<&Settings::force>},
  {"no_fallback", "--no-fallback", Type::flag, kRestore,
   "fail a file whose newest copy is expired (crosscheck) or fails its checks, instead of "
   "restoring the next newest complete copy (said in the summary)",
   {}, {}, {}, 0, 0, yes_no<&Settings::no_fallback>, reset<&Settings::no_fallback>},
  {"allow_fallback", "--allow-fallback", Type::flag, kRestore,
   "exit 0 when files were restored from an older copy than the newest (without it such a "
   "restore exits 6, so a script sees it got older data)",
   {}, {}, {}, 0, 0, yes_no<&Settings::allow_fallback>, reset<&Settings::allow_fallback>,
   false},
  {"delta", "--delta", Type::flag, kRestore,
   "update files that already exist in place: read each one, compare its blocks (the change "
   "units of a --level backup, else its 1 MiB frames) with the backup's digests and write only "
   "those that differ; the old bytes are saved first, so a killed delta restore leaves every "
   "file as it was or verified new (see docs/incremental.md). Missing files are restored whole",
   {}, {}, {}, 0, 0, yes_no<&Settings::delta>, reset<&Settings::delta>},
  {"remap", "--remap", Type::list, kRestore,
   "restore the files at or below the original path OLD at NEW instead (below --to DIR as "
   "every file: /data/db=/srv/db --to /r puts /data/db/a at /r/srv/db/a, and with --to / "
   "at /srv/db/a). Repeatable; the longest OLD that matches whole path components wins. "
   "Refused before anything is written: relative paths, '.' or '..', two OLDs onto one NEW, "
   "or remaps that would put two files at one place",
   {}, "OLD=NEW", {}, 0, 0, add_remap, reset<&Settings::remaps>},
  {"preview", "--preview", Type::flag, kRestores,
   "print the plan and write nothing: the backups used (with the chain a --level backup "
   "builds on and the one a --target-* picks), each piece with its medium and tape volume, "
   "the bytes to read from each (only the frames the job needs; the pieces' indexes are "
   "read to know them), the files and bytes to write (where --remap puts them), and a time "
   "estimate from the catalog's history of such jobs on that medium. Exits as the job "
   "would refuse to start",
   {}, {}, {}, 0, 0, yes_no<&Settings::preview>, reset<&Settings::preview>, false},
};
const Option kKeysMediaAndIo[] = {
  // Encryption.
  {"encrypt", "--encrypt", Type::flag, kBackup,
   "encrypt every piece with AES-256-GCM (a random key per piece, wrapped with the passphrase "
   "or key given below; see docs/encryption.md)",
   "Encryption", {}, {}, 0, 0, yes_no<&Settings::encrypt>, reset<&Settings::encrypt>},
  {"passphrase_file", "--passphrase-file", Type::text, kJobs,
   "file whose first line is the passphrase (of the backup's encryption)",
   "Encryption", "FILE", {}, 0, 0, key_source<&engine::KeySource::passphrase_file>,
   reset_key_source<&engine::KeySource::passphrase_file>},
  {"passphrase_env", "--passphrase-env", Type::text, kJobs,
   "name of an environment variable holding the passphrase",
   "Encryption", "NAME", {}, 0, 0, key_source<&engine::KeySource::passphrase_env>,
   reset_key_source<&engine::KeySource::passphrase_env>},
  {"key_file", "--key-file", Type::text, kJobs,
   "file holding a 256-bit key (64 hex digits, see 'stripeback keygen')",
   "Encryption", "FILE", {}, 0, 0, key_source<&engine::KeySource::key_file>,
   reset_key_source<&engine::KeySource::key_file>},
  // Tape.
  {"tape_volumes", "--tape-volumes", Type::list, kBackup,
   "spare tape volumes (drive URLs, tape:iscsi://... or tape:/dev/sgN) a channel continues on "
   "when its tape reaches end of medium; repeatable or comma-separated",
   "Tape", "URL", {}, 0, 0, add<&Settings::tape_volumes>, reset<&Settings::tape_volumes>, true,
   false, false, ','},
  {"tape_block_size", "--tape-block-size", Type::number, kBackup,
   "with --to tape:URL: tape block size (default 256K); checked against each drive's READ "
   "BLOCK LIMITS before anything is written",
   "Tape", "SIZE", {}, 0, 0, set_tape_block_size, reset<&Settings::tape_block_size>},
  {"tape_io", "--tape-io", Type::text, kBackup,
   "with --to tape:URL: async, a helper thread per drive writes while the channel produces "
   "(default); sync, the channel writes itself (for comparison)",
   "Tape", "async|sync", {}, 0, 0, set_tape_io, reset<&Settings::tape_sync_io>},
  {"tape_wait", "--tape-wait", Type::number, kBackup,
   "with --to tape:URL: seconds to wait for a drive that is not ready (no tape loaded) before "
   "failing (default 10); the wait is logged as \"waiting for tape\"",
   "Tape", "SECONDS", {}, 0, 86400, count<&Settings::tape_wait>, reset<&Settings::tape_wait>},
  {"label_blank", "--label-blank", Type::flag, kBackup,
   "with --to tape:URL: label a blank tape (in a drive or taken from --tape-volumes) with a "
   "generated volume id, shown in the summary, instead of refusing it; a tape holding another "
   "format's data is still refused",
   "Tape", {}, {}, 0, 0, yes_no<&Settings::label_blank>, reset<&Settings::label_blank>},
  {"tape_drive", "--tape-drive", Type::list, kRestore,
   "look for the tape volumes in these drives (by their labels) instead of the drives "
   "recorded at backup; repeatable",
   "Tape", "URL", {}, 0, 0, add<&Settings::tape_drives>, reset<&Settings::tape_drives>},
  // S3.
  {"s3_endpoint", "--s3-endpoint", Type::text, kJobs,
   "the S3 service's URL, http(s)://host[:port] (default: AWS_ENDPOINT_URL, the profile's "
   "endpoint_url)",
   "S3 (s3:// locations)", "URL", {}, 0, 0, s3_text<&engine::S3Options::endpoint>,
   reset_s3_text<&engine::S3Options::endpoint>},
  {"s3_region", "--s3-region", Type::text, kJobs,
   "the region requests are signed for (default: AWS_REGION, the profile's region)",
   "S3 (s3:// locations)", "REGION", {}, 0, 0, s3_text<&engine::S3Options::region>,
   reset_s3_text<&engine::S3Options::region>},
  {"s3_profile", "--s3-profile", Type::text, kJobs,
   "the profile of the AWS shared files to take credentials and settings from (default: "
   "AWS_PROFILE, then default)",
   "S3 (s3:// locations)", "NAME", {}, 0, 0, s3_text<&engine::S3Options::profile>,
   reset_s3_text<&engine::S3Options::profile>},
  {"s3_url_style", "--s3-url-style", Type::text, kJobs,
   "path: https://endpoint/BUCKET/KEY (default); host: https://BUCKET.endpoint/KEY",
   "S3 (s3:// locations)", "path|host", {}, 0, 0, s3_word<&engine::S3Options::url_style>,
   reset_s3_text<&engine::S3Options::url_style>},
  {"s3_ca_file", "--s3-ca-file", Type::text, kJobs,
   "PEM file of the certificate authorities to trust (default: the system's)",
   "S3 (s3:// locations)", "FILE", {}, 0, 0, s3_text<&engine::S3Options::ca_file>,
   reset_s3_text<&engine::S3Options::ca_file>},
  {"s3_part_size", "--s3-part-size", Type::number, kJobs,
   "size of the parts of an object written in parts (default 16M; grown for objects too large "
   "for 10000 parts)",
   "S3 (s3:// locations)", "SIZE", {}, 5ull << 20, 5ull << 30, set_s3_part_size,
   reset_s3<&engine::S3Options::part_size>},
  {"s3_parts_in_flight", "--s3-parts-in-flight", Type::number, kJobs,
   "parts of one object uploaded at once (default 4); each object being written holds part "
   "size x (N + 1) of memory",
   "S3 (s3:// locations)", "N", {}, 1, 64, set_s3_parts_in_flight,
   reset_s3<&engine::S3Options::parts_in_flight>},
  {"s3_checksum", "--s3-checksum", Type::text, kJobs,
   "the integrity check sent with each part and object (default md5)",
   "S3 (s3:// locations)", "md5|crc32c|none", {}, 0, 0, s3_word<&engine::S3Options::checksum>,
   reset_s3_text<&engine::S3Options::checksum>},
  {"s3_timeout", "--s3-timeout", Type::text, kJobs,
   "how long each attempt of a request may take (default 60s)",
   "S3 (s3:// locations)", "DURATION", {}, 0, 0, set_s3_timeout,
   reset_s3<&engine::S3Options::timeout>},
  {"s3_attempts", "--s3-attempts", Type::number, kJobs,
   "attempts of each request, the first included (default 10): transport errors, 5xx, 429, "
   "SlowDown and RequestTimeout are retried with exponential backoff and jitter; a request "
   "fails after this many attempts, naming them",
   "S3 (s3:// locations)", "N", {}, 1, 100, set_s3_attempts,
   reset_s3<&engine::S3Options::attempts>},
  {"s3_storage_class", "--s3-storage-class", Type::text, kBackup,
   "the storage class objects are written in (x-amz-storage-class: STANDARD, STANDARD_IA, "
   "...; default: the bucket's)",
   "S3 (s3:// locations)", "CLASS", {}, 0, 0, set_s3_storage_class,
   reset_s3_text<&engine::S3Options::storage_class>},
  {"s3_sse", "--s3-sse", Type::text, kBackup,
   "server-side encryption of the objects written (x-amz-server-side-encryption): AES256, "
   "keys the store manages, or aws:kms, a key of its key management service",
   "S3 (s3:// locations)", "AES256|aws:kms", {}, 0, 0, s3_word<&engine::S3Options::sse>,
   reset_s3_text<&engine::S3Options::sse>},
  {"s3_sse_kms_key_id", "--s3-sse-kms-key-id", Type::text, kBackup,
   "with --s3-sse aws:kms: the key to encrypt with (default: the account's default key)",
   "S3 (s3:// locations)", "ID", {}, 0, 0, set_s3_sse_kms_key_id,
   reset_s3_text<&engine::S3Options::sse_kms_key_id>},
  // I/O.
  {"buffers", "--buffers", Type::number, kJobs,
   "I/O buffers per channel (default: 16, or by the multiplexing rule; twice that for backup "
   "--validate, whose buffers are all reads in flight); all the job's buffers must fit in half "
   "of this machine's memory (at most 64G)",
   {}, "N", {}, engine::kMinBuffers, engine::kMaxBuffers, count<&Settings::buffers>,
   reset<&Settings::buffers>},
  {"buffer_size", "--buffer-size", Type::number, kJobs,
   "size of each I/O buffer, a multiple of 4K (default: 1M, or by the multiplexing rule)",
   {}, "SIZE", {}, 0, 0, set_buffer_size, reset<&Settings::buffer_size>},
  {"direct", "--no-direct", Type::flag, kJobs,
   "use buffered I/O instead of O_DIRECT for files and pieces",
   {}, {}, {}, 0, 0, yes_no<&Settings::direct>, reset<&Settings::direct>, true, true},
  // For an embedder.
  {"progress_interval_ms", "", Type::number, kJobs,
   "milliseconds between progress callbacks",
   {}, {}, "250", 100, 60000, count<&Settings::progress_interval_ms>,
   reset<&Settings::progress_interval_ms>},
  {"status_file", "", Type::flag, kJobs,
   "keep <catalog>/jobs/<host>.<pid>[-n].status while the job runs (stripeback status)",
   {}, {}, "true", 0, 0, yes_no<&Settings::status_file>, reset<&Settings::status_file>},
  {"nfs_tune_malloc", "", Type::flag, kJobs,
   "cap glibc's malloc arenas for the NFS client's threads (a process-wide setting)",
   {}, {}, {}, 0, 0, yes_no<&Settings::nfs_tune_malloc>, reset<&Settings::nfs_tune_malloc>},
};
// clang-format on

}  // namespace

// Every option in --help's order: the entries here and the parts' between them.
std::span<const Option> schema() {
  static const std::vector<Option> table = [] {
    const std::span<const Option> parts[] = {
        kWhat, selection_options(), kWhere, validation_options(), database_options(), kWork,
        pitr_options(), validate_frame_options(), kKeysMediaAndIo};
    std::vector<Option> all;
    for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
    return all;
  }();
  return table;
}

const Option* find_option(std::string_view key) {
  for (const auto& o : schema())
    if (o.key == key) return &o;
  return nullptr;
}

Result<void> set_option(const Option& o, Settings& s, std::string_view value) {
  SB_TRY(o.set(o, s, value));
  s.given[std::string(o.key)] = std::string(value);
  return ok();
}

}  // namespace stripeback::options
