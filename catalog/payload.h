// The payloads of the record types (docs/catalog-format.md). Each payload starts with a
// version byte; fields are only ever appended, so a reader decodes the fields it knows and
// ignores trailing bytes of a newer version. File and piece entries inside a payload carry
// their own length for the same reason. One file per record family: payload.cc (backup
// records), check_payload.cc, media_payload.cc, job_payload.cc.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/record_log.h"
#include "stripeback/result.h"

namespace stripeback::catalog {

inline constexpr uint8_t kPayloadVersion = 1;
// Piece payloads of pieces on tape are version 2: the piece entry ends with the tape
// location. Readers of version 1 skip those bytes as a newer writer's.
inline constexpr uint8_t kTapePiecePayloadVersion = 2;
// BackupBegin payloads with a catalog id are version 2: it follows the pid. Readers of
// version 1 skip it as a newer writer's.
inline constexpr uint8_t kBeginPayloadVersion = 2;
// Version 3 (incremental backups): a BackupBegin payload ends with level, cumulative and
// change unit; each file entry of a piece or files payload may end with the change unit,
// parent, change and units written. Readers of older versions skip them as a newer
// writer's.
inline constexpr uint8_t kLevelPayloadVersion = 3;
// A crosscheck record with damaged pieces: the pieces of version 1, then the damage found
// by a deep check (readers of version 1 take the pieces and skip the rest).
inline constexpr uint8_t kCrosscheckDamagePayloadVersion = 2;
// Strings longer than this are refused by the writer (ByteReader's default bound).
inline constexpr size_t kMaxString = 1u << 20;
// Backup ids run from 1 to this. The bound keeps "one more than the largest id any record
// names" (Model::next_id) from wrapping; a payload naming an id outside it is malformed.
inline constexpr uint64_t kMaxBackupId = (uint64_t{1} << 63) - 1;

struct EncodedRecord {
  RecordType type;
  std::vector<uint8_t> payload;
};

// Writers. Errors (invalid_argument) for a field too long to be stored or a backup id out
// of range. A piece with more
// files than fit one payload becomes a Piece record followed by Files records.
Result<EncodedRecord> encode_begin(uint64_t backup_id, const BackupBegin& begin);
Result<std::vector<EncodedRecord>> encode_piece(uint64_t backup_id, const PieceRecord& piece,
                                                const std::vector<FileRecord>& files);
Result<std::vector<EncodedRecord>> encode_files(uint64_t backup_id,
                                                const std::vector<FileRecord>& files);
Result<EncodedRecord> encode_end(uint64_t backup_id, const BackupEnd& end);
// At most PageCheck::kMaxCorrupt pages are kept; corrupt_total counts them all.
Result<EncodedRecord> encode_page_check(const PageCheck& check);
Result<EncodedRecord> encode_frame_check(const FrameCheck& check);
// At most JobRecord::kMaxFiles file entries are kept (the first ones); files_total is at
// least the count kept.
Result<EncodedRecord> encode_job(const JobRecord& job);

struct BeginPayload {
  uint64_t backup_id = 0;
  BackupBegin begin;
};
struct PiecePayload {
  uint64_t backup_id = 0;
  PieceRecord piece;
  std::vector<FileRecord> files;
};
struct FilesPayload {
  uint64_t backup_id = 0;
  std::vector<FileRecord> files;
};
struct EndPayload {
  uint64_t backup_id = 0;
  BackupEnd end;
};

// Readers: Errc::corrupt with the reason when the payload does not decode.
Result<BeginPayload> decode_begin(std::span<const uint8_t> payload);
Result<PiecePayload> decode_piece(std::span<const uint8_t> payload);
Result<FilesPayload> decode_files(std::span<const uint8_t> payload);
Result<EndPayload> decode_end(std::span<const uint8_t> payload);
Result<PageCheck> decode_page_check(std::span<const uint8_t> payload);
Result<FrameCheck> decode_frame_check(std::span<const uint8_t> payload);
// The record's sequence is not in the payload: `sequence` is left 0.
Result<JobRecord> decode_job(std::span<const uint8_t> payload);

// Media management records (media_payload.cc).
Result<EncodedRecord> encode_setting(const Setting& s);
Result<EncodedRecord> encode_crosscheck(const Crosscheck& c);
Result<EncodedRecord> encode_deletion(const Deletion& d);
Result<Setting> decode_setting(std::span<const uint8_t> payload);
Result<Crosscheck> decode_crosscheck(std::span<const uint8_t> payload);
Result<Deletion> decode_deletion(std::span<const uint8_t> payload);
Result<EncodedRecord> encode_resume(const Resume& r);
Result<EncodedRecord> encode_lock(const Lock& l);
Result<Lock> decode_lock(std::span<const uint8_t> payload);
Result<Resume> decode_resume(std::span<const uint8_t> payload);
Result<EncodedRecord> encode_keep(const Keep& k);
Result<Keep> decode_keep(std::span<const uint8_t> payload);

// Database records (database_payload.cc).
Result<EncodedRecord> encode_hot(const HotBackup& h);
Result<HotBackup> decode_hot(std::span<const uint8_t> payload);
Result<EncodedRecord> encode_wal(const WalFile& f);
Result<WalFile> decode_wal(std::span<const uint8_t> payload);

// Key rotation records (key_payload.cc).
Result<EncodedRecord> encode_key_wraps(const KeyWraps& w);
Result<KeyWraps> decode_key_wraps(std::span<const uint8_t> payload);
Result<EncodedRecord> encode_rekey(const Rekey& r);
Result<Rekey> decode_rekey(std::span<const uint8_t> payload);

// File profiles (profile_payload.cc): as many records as the size limit needs, each with
// the backup id and some of the files, in order.
Result<std::vector<EncodedRecord>> encode_file_profiles(const FileProfiles& p);
Result<FileProfiles> decode_file_profiles(std::span<const uint8_t> payload);

}  // namespace stripeback::catalog
