#include "options/schema_parts.h"

#include <cstdio>
#include <string>

#include "options/setters.h"
#include "util/units.h"

namespace stripeback::options {
namespace {

using namespace setters;

Result<void> set_max_duration(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(s.max_duration, util::parse_duration(v, util::option_word(o.key)));
  return ok();
}

template <double Settings::*F>
Result<void> set_percent(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(s.*F, share_in(o, v));
  return ok();
}

Result<void> set_sample(const Option& o, Settings& s, std::string_view v) {
  SB_ASSIGN(s.sample, share_in(o, v));
  return ok();
}

Result<void> set_alarm_factor(const Option& o, Settings& s, std::string_view v) {
  const auto f = number_in(v);
  if (!f || !(*f > 1) || *f > 1e6) return bad(o, "wants a factor above 1, like 10; got " + quoted(v));
  s.alarm_page_factor = *f;
  return ok();
}

Result<void> set_part(const Option& o, Settings& s, std::string_view v) {
  unsigned k = 0, n = 0;
  char extra = 0;
  const std::string t(v);
  if (std::sscanf(t.c_str(), "%u/%u%c", &k, &n, &extra) != 2 || n == 0 || k == 0 || k > n ||
      n > 1000000)
    return fail(Errc::invalid_argument, util::option_word(o.key) +
                                            " wants K/N with 1 <= K <= N <= 1000000, like "
                                            "2/7; got " + quoted(v));
  s.part = std::pair<uint32_t, uint32_t>(k, n);
  return ok();
}


// clang-format off
const Option kValidation[] = {
  // Page checks.
  {"validate", "--validate", Type::flag, kBackup,
   "read every block as a backup would (channels, multiplexing, sections, rate, duration, NFS "
   "sources) and report every problem found, writing nothing: no --to, no piece, no backup "
   "record (with --check-logical the catalog records the pages found corrupt: list "
   "--corrupt). Exit 0 when clean, 1 when corruption was found (docs/page-checks.md)",
   "Validation", {}, {}, 0, 0, yes_no<&Settings::validate>, reset<&Settings::validate>, false},
  {"check_logical", "--check-logical", Type::text, kBackup,
   "check the pages inside each block as they are read: --check-logical=postgres (page "
   "header, and the page checksum when the cluster has data checksums; relation files only), "
   "or bare/auto to detect a PostgreSQL data directory among the sources. Corrupt pages are "
   "listed in the summary and --json (file, block, offset, reason)",
   "Validation", "[=FORMAT]", {}, 0, 0, text<&Settings::check_logical>,
   reset<&Settings::check_logical>, true, false, false, 0, "auto"},
  {"max_corrupt", "--max-corrupt", Type::number, kBackup,
   "with --check-logical: corrupt pages a file may have before the backup fails (default 0); "
   "up to it they are listed",
   "Validation", "N", {}, 0, UINT64_MAX, count<&Settings::max_corrupt>,
   reset<&Settings::max_corrupt>},
  {"page_size", "--page-size", Type::number, kBackup,
   "with --check-logical: the page size, instead of the one the database's control file "
   "gives (e.g. 8K)",
   "Validation", "SIZE", {}, 1, 65536, size<&Settings::page_size>, reset<&Settings::page_size>},
  // The ransomware alarm (docs/security.md).
  {"alarm", "--no-alarm", Type::flag, kBackup,
   "do not compare this backup's file profiles (the share of pages failing their checks "
   "with --check-logical, the compression ratio with --compress) with the previous backup "
   "of the same files. With the alarm on (the default), a jump makes the backup "
   "suspicious: exit 8, the previous backup kept forever, --json: suspicious",
   "Validation", {}, {}, 0, 0, yes_no<&Settings::alarm>, reset<&Settings::alarm>, true, true},
  {"alarm_page_share", "--alarm-page-share", Type::text, kBackup,
   "the alarm fires when the share of pages failing their checks rose by more than this "
   "many percentage points over the files both backups checked (and at least 8 more pages "
   "fail)",
   "Validation", "PERCENT", "1%", 0, 0, set_percent<&Settings::alarm_page_share>,
   reset<&Settings::alarm_page_share>, true, false, false, 0, {},
   "a string, \"1%\""},
  {"alarm_page_factor", "--alarm-page-factor", Type::text, kBackup,
   "the alarm fires when the share of pages failing their checks grew more than this many "
   "times (and at least 8 more pages fail)",
   "Validation", "FACTOR", "10", 0, 0, set_alarm_factor,
   reset<&Settings::alarm_page_factor>, true, false, false, 0, {}, "a string, \"10\""},
  {"alarm_compression_drop", "--alarm-compression-drop", Type::text, kBackup,
   "the alarm fires when the compression ratio of the files both backups compressed fell "
   "by more than this share (from a ratio of at least 1.5)",
   "Validation", "PERCENT", "50%", 0, 0, set_percent<&Settings::alarm_compression_drop>,
   reset<&Settings::alarm_compression_drop>, true, false, false, 0, {},
   "a string, \"50%\""},
};
const Option kValidateFrames[] = {
  // Validate: some frames.
  {"sample", "--sample", Type::text, kValidate,
   "check a random share of the data frames, e.g. 10% (chosen by a hash of --seed, the piece "
   "and the frame: the same seed picks the same frames); whole-file digests are checked "
   "against the index, pieces are not walked whole",
   {}, "PERCENT", {}, 0, 0, set_sample, reset<&Settings::sample>},
  {"seed", "--seed", Type::number, kValidate,
   "seed of --sample (default: a random one, reported in the summary)",
   {}, "N", {}, 0, UINT64_MAX, count<&Settings::seed>, reset<&Settings::seed>},
  {"part", "--part", Type::text, kValidate,
   "check part K of N: one deterministic N-th of the frames (16 MiB runs of each piece); N "
   "runs with K = 1..N check every frame once",
   {}, "K/N", {}, 0, 0, set_part, reset<&Settings::part>},
  {"max_duration", "--max-duration", Type::text, kValidate,
   "stop beginning new work after this long (\"30m\", \"90s\", \"01:30\"), checking first the "
   "frames that have gone longest without a check; the catalog remembers what was checked "
   "when, so repeated runs cover every backup (list shows when each was last fully checked)",
   {}, "DURATION", {}, 0, 0, set_max_duration, reset<&Settings::max_duration>},
};
// clang-format on

}  // namespace

std::span<const Option> validation_options() { return kValidation; }
std::span<const Option> validate_frame_options() { return kValidateFrames; }

}  // namespace stripeback::options
