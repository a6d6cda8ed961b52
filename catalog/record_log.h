// The framing of catalog.log (docs/catalog-format.md): the file header, the record frame,
// and the scanner that splits a byte range into valid frames, skipping and reporting
// anything that is not one. Knows nothing about what the payloads mean.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "stripeback/result.h"

namespace stripeback::catalog {

inline constexpr std::string_view kLogName = "catalog.log";
inline constexpr std::string_view kLockName = "lock";

// File header: magic (18 bytes) | format version u16 | crc32c u32 over the first 20 bytes.
// Version 2 is a sealed log (catalog/seal.h): builds that read only version 1 refuse it
// rather than append records without a seal.
inline constexpr std::string_view kFileMagic = "STRIPEBACK-CATALOG";
inline constexpr uint16_t kFormatVersion = 1;
inline constexpr uint16_t kSealedFormatVersion = 2;
inline constexpr size_t kFileHeaderSize = 24;

// Record frame: magic u32 | length u32 | crc32c u32 | sequence u64 | type u16 | flags u16,
// then `length` payload bytes. The magic's bytes in the file spell "SBC1". With flag
// kFlagSealed the last kSealSize of those bytes are the record's seal (catalog/seal.h).
inline constexpr uint32_t kRecordMagic = 0x31434253;
inline constexpr size_t kFrameHeaderSize = 24;
inline constexpr uint16_t kFlagSealed = 1;
inline constexpr size_t kSealSize = 32;  // record MAC, then chain MAC
// Bounds the damage a corrupt length can do (and the resync work); larger logical records
// are split by the writer.
inline constexpr uint32_t kMaxPayload = 16u << 20;

enum class RecordType : uint16_t {
  backup_begin = 1,
  piece = 2,
  files = 3,
  backup_end = 4,
  page_check = 5,   // corrupt pages found by page validators (PageCheck)
  frame_check = 6,  // which frames of a backup a validation checked (FrameCheck)
  job = 7,          // what a job did: totals, verdict, I/O statistics (JobRecord)
  setting = 8,      // a default stored by `configure` (Setting)
  crosscheck = 9,   // what a crosscheck found of each piece (Crosscheck)
  deletion = 10,    // intent or end of a deletion of backups and pieces (Deletion)
  resume = 11,      // a job resumes an interrupted backup (Resume)
  lock = 12,        // a backup's pieces are locked on their medium until a date (Lock)
  hot = 13,         // a hot backup's fuzzy files and database backup mode (HotBackup)
  wal = 14,         // a file of the log archive pushed or removed (WalFile)
  keep = 15,        // the operator keeps a backup until a date, forever, or no more (Keep)
  key_wrap = 16,    // wraps of pieces' data keys under a newer key-encryption key (KeyWraps)
  rekey = 17,       // intent or end of a rekey (Rekey)
  file_profile = 18,  // per-file page failures and compression of a backup (FileProfiles)
  seal = 19,          // the seal's key parameters: sealing begins here (SealParams)
};
const char* record_type_name(uint16_t type);

std::vector<uint8_t> encode_file_header(uint16_t version = kFormatVersion);
// Whether `bytes` (a file shorter than a header) could be an interrupted header write.
bool is_header_prefix(std::span<const uint8_t> bytes);
// Checks the header at the start of `bytes`: corrupt if it is not a catalog, unsupported if
// the format version is newer than this build reads. Gives the version.
Result<uint16_t> check_file_header(std::span<const uint8_t> bytes, const std::string& path);

// crc32c over length, sequence, type, flags and payload: everything but magic and crc.
uint32_t frame_crc(uint32_t length, std::span<const uint8_t> seq_type_flags_payload);
// Appends one framed record to `out`; with `seal` (kSealSize bytes) a sealed one.
void append_frame(std::vector<uint8_t>& out, uint64_t sequence, RecordType type,
                  std::span<const uint8_t> payload, std::span<const uint8_t> seal = {});

struct Frame {
  uint64_t offset = 0;  // in the file
  uint64_t size = 0;    // header + payload
  uint64_t sequence = 0;
  uint16_t type = 0;
  uint16_t flags = 0;
  std::span<const uint8_t> payload;  // points into the scanned buffer; without the seal
  std::span<const uint8_t> seal;     // of a sealed frame: kSealSize bytes, else empty
};

struct ScanResult {
  std::vector<Frame> frames;          // valid, with strictly increasing sequence numbers
  std::vector<LoadWarning> warnings;  // skipped regions and records, in file order
  uint64_t end = 0;  // file offset after the last frame or skipped region before a frame
  uint64_t last_sequence = 0;
  // Bytes from `end` to the end of the buffer that hold no valid record: a torn tail.
  std::optional<LoadWarning> torn_tail;
};

// Scans `bytes`, which start at file offset `base`; records must have a sequence greater
// than `last_sequence` (that of the last record already read).
ScanResult scan_records(std::span<const uint8_t> bytes, uint64_t base, uint64_t last_sequence);

}  // namespace stripeback::catalog
