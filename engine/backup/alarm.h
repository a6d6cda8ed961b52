// The ransomware alarm (docs/security.md, "Ransomware alarm"): a backup's file profiles
// compared with those of an earlier backup of the same files. Encrypted or destroyed data
// shows in two ways a backup already measures: its pages fail their header and checksum
// checks, and it no longer compresses. Pure: no I/O; the backup job (job_alarm.cc) finds
// the earlier profiles, keeps that backup and reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"

namespace stripeback::engine {

// Neither page rule fires unless at least this many more pages fail than before over the
// files compared: one stray page of a small table is corruption, not an attack.
inline constexpr uint64_t kAlarmPageFloor = 8;
// The compression rule needs the earlier ratio at least this high: data that hardly
// compressed (already compressed or encrypted by its owner) cannot collapse further.
inline constexpr double kAlarmMinRatio = 1.5;
// Files named in the evidence, the largest jump first.
inline constexpr size_t kAlarmFilesShown = 20;

struct AlarmThresholds {
  // share_after - share_before above this (a fraction: 0.01 is one percentage point).
  double page_share = 0.01;
  // share_after above this many times share_before.
  double page_factor = 10;
  // ratio_after below ratio_before x (1 - compression_drop).
  double compression_drop = 0.5;
};

// A file of the evidence: its share of failing pages, or its compression ratio, before and
// after.
struct AlarmFile {
  std::string path;
  double before = 0, after = 0;
};

// Pages of the files both backups checked.
struct PageEvidence {
  uint64_t files = 0;
  uint64_t checked_before = 0, failed_before = 0;
  uint64_t checked_after = 0, failed_after = 0;
  double share_before = 0, share_after = 0;  // failed / checked
  std::vector<AlarmFile> top;                // largest rise in share first
};

// Compression of the files both backups compressed.
struct CompressionEvidence {
  uint64_t files = 0;
  uint64_t raw_before = 0, stored_before = 0;
  uint64_t raw_after = 0, stored_after = 0;
  double ratio_before = 0, ratio_after = 0;  // raw / stored
  std::vector<AlarmFile> top;                // largest fall in ratio first
};

struct Suspicion {
  uint64_t previous_backup = 0;  // the backup compared with
  // The rules that fired, in this order: "page_share", "page_factor", "compression_drop".
  std::vector<std::string> rules;
  std::optional<PageEvidence> pages;              // set when some file's pages were compared
  std::optional<CompressionEvidence> compression; // set when some file's compression was
  // Set by the job: the previous backup was kept (forever), or why it could not be.
  bool previous_kept = false;
  std::string keep_error;

  bool fired() const { return !rules.empty(); }
};

// Compares the profiles of the files `before` and `after` both have (same path). nullopt
// when they share no file whose pages or compression both measured; else the evidence,
// with the rules that fired (none: no alarm).
std::optional<Suspicion> compare_profiles(const catalog::FileProfiles& before,
                                          const catalog::FileProfiles& after,
                                          const AlarmThresholds& t);

// One line for logs and the status file: the rules, the figures and the previous backup.
std::string suspicion_line(const Suspicion& s);

}  // namespace stripeback::engine
