// The state of an open catalog (Catalog::State): the log, read and appended to through the
// storage of the catalog's directory, the lock file, and the model of the records read so
// far. Its methods run with the Catalog's mutex held, and with the file lock as each says.
// Internal to catalog/: catalog.cc reads and appends, catalog_checks.cc,
// catalog_media.cc and catalog_compact.cc use it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/file_ops.h"
#include "catalog/model.h"
#include "catalog/payload.h"
#include "catalog/record_log.h"
#include "catalog/seal.h"
#include "storage/storage.h"

namespace stripeback::catalog {

struct Catalog::State {
  std::string dir, log_path, lock_path;
  Fd lock_fd;
  // The log, read and appended to through the storage of the catalog's directory.
  storage::Storage* st = nullptr;
  std::unique_ptr<storage::ReadFile> log_in;
  std::unique_ptr<storage::WriteFile> log_out;
  Result<uint64_t> log_size() {
    SB_ASSIGN(storage::FileInfo i, log_in->stat());
    return i.size;
  }
  Result<std::vector<uint8_t>> log_range(uint64_t offset, uint64_t length) {
    std::vector<uint8_t> out(length);
    SB_ASSIGN(size_t n, log_in->read_at(reinterpret_cast<std::byte*>(out.data()), out.size(), offset));
    out.resize(n);
    return out;
  }
  Result<void> log_write(uint64_t at, std::span<const uint8_t> data, const char* what) {
    auto r = log_out->write_at(reinterpret_cast<const std::byte*>(data.data()), data.size(), at);
    if (!r) return r.error().wrap(std::string("unable to write ") + what);
    return ok();
  }
  Model model;
  uint64_t end = kFileHeaderSize;  // offset just past the records read so far
  uint64_t last_sequence = 0;
  std::optional<LoadWarning> tail;  // torn tail found by the last read, not yet cut

  // The seal (catalog/seal.h). The header's format version as read or last written.
  uint16_t header_version = kFormatVersion;
  std::shared_ptr<const Sealer> sealer;  // the attached key, or null
  SealParams seal_params;                // with `sealer`: for the Seal record of a new seal
  std::unique_ptr<ChainVerifier> verifier;  // with `sealer`: follows every frame read
  uint64_t frames_end = kFileHeaderSize;    // just past the last valid frame read
  // Starts the picture over from the first record (the log shrank or was replaced).
  void reset_reading();
  // Verifies the frames of a scan (with a key) and notes where the last ended.
  void follow_frames(const std::vector<Frame>& frames);
  // Re-reads the log up to `end` and verifies it from its first record.
  Result<void> verify_all();
  // Encodes `records` as frames numbered from last_sequence + 1, sealed when a key is
  // attached (a log not sealed yet gets its Seal record first); the chain MAC after them.
  Result<std::vector<uint8_t>> frame_records(const std::vector<EncodedRecord>& records,
                                             uint64_t* last, Mac* chain, bool* seal_begins);
  // After a sealed write: the file header says the log is sealed (written after the
  // records, so a crash in between leaves sealed records under the old header, which is
  // sound; never the other way round).
  Result<void> mark_header_sealed();

  Result<void> init_header(bool may_write);
  // Opens catalog.log (again) for reading and appending.
  Result<void> open_log();
  // When catalog.log was replaced by another file since it was opened (a compaction), reopens
  // it and starts reading from the beginning.
  Result<void> follow_replaced();
  Result<void> catch_up();
  Result<void> cut_tail();
  Result<uint64_t> write_records(const std::vector<EncodedRecord>& records);
  // Under the exclusive lock: catch up, let `prepare` (which sees the current model)
  // produce the records, cut a torn tail, write. Returns the offset written at.
  Result<uint64_t> append(const std::function<Result<std::vector<EncodedRecord>>()>& prepare);
};

}  // namespace stripeback::catalog
