#include "catalog/backup_records.h"

#include "catalog/model.h"
#include "catalog/payload.h"
#include "catalog/record_log.h"

namespace stripeback::catalog {

Result<std::vector<EncodedRecord>> backup_as_records(const Backup& b) {
  std::vector<EncodedRecord> out;
  SB_ASSIGN(auto begin, encode_begin(b.id, b.begin));
  out.push_back(std::move(begin));
  for (const auto& p : b.pieces) {
    SB_ASSIGN(auto recs, encode_piece(b.id, p, {}));
    for (auto& r : recs) out.push_back(std::move(r));
  }
  if (!b.files.empty()) {
    SB_ASSIGN(auto recs, encode_files(b.id, b.files));
    for (auto& r : recs) out.push_back(std::move(r));
  }
  if (b.ended) {
    SB_ASSIGN(auto end, encode_end(b.id, b.end));
    out.push_back(std::move(end));
  }
  if (b.lock) {
    SB_ASSIGN(auto lock, encode_lock(Lock{b.id, b.end.end_time_ns, *b.lock}));
    out.push_back(std::move(lock));
  }
  if (b.hot) {
    SB_ASSIGN(auto hot, encode_hot(*b.hot));
    out.push_back(std::move(hot));
  }
  if (b.keep) {
    SB_ASSIGN(auto keep, encode_keep(*b.keep));
    out.push_back(std::move(keep));
  }
  return out;
}

Result<std::vector<uint8_t>> encode_backup_records(const std::vector<Backup>& backups) {
  std::vector<uint8_t> out = encode_file_header();
  uint64_t seq = 0;
  for (const Backup& b : backups) {
    // A backup whose begin record was lost cannot be re-created faithfully: left out.
    if (b.begin_missing) continue;
    SB_ASSIGN(auto recs, backup_as_records(b));
    for (const auto& r : recs) append_frame(out, ++seq, r.type, r.payload);
  }
  return out;
}

Result<DecodedRecords> decode_backup_records(std::span<const uint8_t> bytes,
                                             const std::string& name) {
  SB_TRY(check_file_header(bytes, name));
  ScanResult scan = scan_records(bytes.subspan(kFileHeaderSize), kFileHeaderSize, 0);
  Model model;
  for (const Frame& f : scan.frames) model.apply(f);
  DecodedRecords out;
  out.backups = model.snapshot();
  out.warnings = scan.warnings;
  for (const auto& w : model.warnings()) out.warnings.push_back(w);
  if (scan.torn_tail) out.warnings.push_back(*scan.torn_tail);
  out.catalog_id = model.catalog_id();
  return out;
}

}  // namespace stripeback::catalog
