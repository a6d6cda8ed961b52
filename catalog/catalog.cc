// Catalog: ties the framing (record_log), the payloads and the model to the files, under
// the flock that serialises processes and the mutex that serialises threads. This file
// opens the catalog, reads and appends to its log, and records backups; the records of
// checks and jobs are in catalog_checks.cc, media management in catalog_media.cc,
// compaction in catalog_compact.cc.
#include "catalog/catalog.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>

#include "catalog/backup_records.h"
#include "catalog/catalog_state.h"
#include "catalog/file_ops.h"
#include "storage/storage.h"
#include "catalog/model.h"
#include "catalog/payload.h"
#include "catalog/record_log.h"
#include "util/clock.h"
#include "util/crash_point.h"

namespace stripeback::catalog {
namespace {

Error unusable_dir(int err, const std::string& dir) {
  Error e = sys_error(err, "unable to use catalog directory '" + dir + "'");
  e.code = Errc::invalid_argument;
  return e;
}

Result<void> prepare_dir(const std::string& dir, Create create) {
  if (dir.empty()) return fail(Errc::invalid_argument, "catalog directory name is empty");
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    int err = errno;
    if (err != ENOENT) return unusable_dir(err, dir);
    if (create == Create::no) {
      return fail(Errc::not_found, "catalog directory '" + dir + "' does not exist");
    }
    auto made = make_dirs(dir, 0700);
    if (!made) {
      Error e = made.error();
      if (e.code == Errc::not_found) e.code = Errc::invalid_argument;  // e.g. ENOTDIR
      return e;
    }
    return ok();
  }
  if (!S_ISDIR(st.st_mode)) {
    return fail(Errc::invalid_argument, "catalog directory '" + dir + "' is not a directory");
  }
  if (::access(dir.c_str(), R_OK | W_OK | X_OK) != 0) return unusable_dir(errno, dir);
  return ok();
}

// A catalog's identity only has to differ from that of other catalogs writing to the same
// media: 64 random bits from the system's source.
uint64_t new_catalog_id() {
  std::random_device rd;
  uint64_t id = 0;
  while (id == 0) id = (uint64_t{rd()} << 32) ^ rd();
  return id;
}

}  // namespace

// Called with the lock held (exclusively when `may_write`).
Result<void> Catalog::State::init_header(bool may_write) {
  SB_ASSIGN(uint64_t size, log_size());
  SB_ASSIGN(auto head, log_range(0, std::min<uint64_t>(size, kFileHeaderSize)));
  // A log shorter than its header is a creation that was interrupted: finish it.
  if (may_write && head.size() < kFileHeaderSize && is_header_prefix(head)) {
    head = encode_file_header();
    SB_TRY(log_write(0, head, "catalog file header"));
    SB_TRY(log_out->commit());
    SB_TRY(sync_dir(dir));
  }
  SB_ASSIGN(header_version, check_file_header(head, log_path));
  return ok();
}

Result<void> Catalog::State::catch_up() {
  SB_ASSIGN(uint64_t size, log_size());
  if (size < end) {
    // Appenders cut only bytes past the last valid record, never ones we have read: the
    // log was truncated by something else. Start over rather than trust the old picture.
    uint64_t had = end;
    reset_reading();
    model.warn({size, 0,
                "'" + log_path + "' shrank from " + std::to_string(had) + " to " +
                    std::to_string(size) + " bytes; reloaded"});
    if (size < kFileHeaderSize) {
      return fail(Errc::corrupt, "'" + log_path + "' was cut short to " + std::to_string(size) +
                                     " bytes, below its file header");
    }
  }
  tail.reset();
  if (size <= end) return ok();
  SB_ASSIGN(auto bytes, log_range(end, size - end));
  ScanResult scan = scan_records(bytes, end, last_sequence);
  follow_frames(scan.frames);
  // Interleave the scanner's warnings with the model's, so warnings() is in file order.
  size_t w = 0;
  for (const Frame& f : scan.frames) {
    while (w < scan.warnings.size() && scan.warnings[w].offset <= f.offset) {
      model.warn(std::move(scan.warnings[w++]));
    }
    model.apply(f);
  }
  for (; w < scan.warnings.size(); ++w) model.warn(std::move(scan.warnings[w]));
  // Sealed anew under another key (a rekey's compaction, in another process): the key
  // this process holds no longer seals; appending needs the new one.
  if (sealer && model.seal() && model.seal()->check != seal_params.check) {
    sealer.reset();
    verifier.reset();
  }
  end = scan.end;
  last_sequence = scan.last_sequence;
  tail = std::move(scan.torn_tail);
  return ok();
}

Result<void> Catalog::State::cut_tail() {
  if (!tail) return ok();
  SB_ASSIGN(auto bytes, log_range(tail->offset, tail->length));
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::system_clock::now().time_since_epoch());
  std::string name = std::string(kLogName) + ".torn-" + std::to_string(now.count()) + "-" +
                     std::to_string(tail->offset);
  // Saved (and synced) before the truncation, so a crash in between loses nothing.
  SB_ASSIGN(std::string saved, save_new_file(dir, name, bytes));
  util::crash_point("catalog-tail-saved");
  SB_TRY(log_out->truncate(tail->offset));
  SB_TRY(log_out->commit());
  LoadWarning cut{tail->offset, tail->length,
                  "cut " + std::to_string(tail->length) + " bytes of torn tail at offset " +
                      std::to_string(tail->offset) + " off the log before appending; saved to '" +
                      saved + "'"};
  model.warn(std::move(*tail));
  model.warn(std::move(cut));
  tail.reset();
  return ok();
}

Result<uint64_t> Catalog::State::write_records(const std::vector<EncodedRecord>& records) {
  uint64_t seq = 0;
  Mac chain{};
  bool seal_begins = false;
  SB_ASSIGN(std::vector<uint8_t> buf, frame_records(records, &seq, &chain, &seal_begins));
  const uint64_t at = end;
  // Whatever part of the write reached the file must go, so no partial record remains;
  // if even that fails, the next append finds the remains as a torn tail and cuts them.
  auto undo = [&](Error e) -> Error {
    auto t = log_out->truncate(at);
    if (!t) e.what += " (then " + t.error().what + ")";
    return e;
  };
  if (auto w = log_write(at, buf, "catalog record"); !w) {
    return undo(w.error());
  }
  util::crash_point("catalog-written");
  if (auto s = log_out->commit(); !s) return undo(s.error());
  util::crash_point("catalog-synced");
  end = at + buf.size();
  frames_end = end;
  last_sequence = seq;
  if (sealer) {
    verifier->appended(chain);
    model.saw_sealed_frame();
    if (seal_begins) model.add_seal(seal_params);
    // The records are durable and sealed; a header left unmarked is marked next time.
    (void)mark_header_sealed();
  }
  return at;
}

Result<uint64_t> Catalog::State::append(
    const std::function<Result<std::vector<EncodedRecord>>()>& prepare) {
  SB_ASSIGN(FileLock lock, FileLock::acquire(lock_fd.get(), LOCK_EX, lock_path));
  SB_TRY(follow_replaced());
  SB_TRY(catch_up());
  SB_ASSIGN(auto records, prepare());
  if (records.empty()) return end;
  SB_TRY(cut_tail());
  return write_records(records);
}

Result<std::unique_ptr<Catalog>> Catalog::open(const std::string& dir, Create create,
                                               storage::Storage& storage) {
  SB_TRY(prepare_dir(dir, create));
  std::unique_ptr<Catalog> c(new Catalog());
  c->dir_ = dir;
  c->state_ = std::make_unique<State>();
  State& s = *c->state_;
  s.dir = dir;
  s.log_path = dir + "/" + std::string(kLogName);
  s.lock_path = dir + "/" + std::string(kLockName);
  s.st = &storage;

  struct stat st {};
  bool present = ::stat(s.log_path.c_str(), &st) == 0;
  if (!present) {
    if (errno != ENOENT) return sys_error(errno, "unable to stat '" + s.log_path + "'");
    if (create == Create::no) {
      return fail(Errc::not_found, "catalog log '" + s.log_path + "' does not exist");
    }
  }
  SB_ASSIGN(s.lock_fd, open_file(s.lock_path, O_RDWR | O_CREAT, 0600, "catalog lock"));
  // The header never shrinks once written, so only a missing or short log needs the
  // exclusive lock (to write it); everything else loads under the shared one.
  bool init = !present || static_cast<uint64_t>(st.st_size) < kFileHeaderSize;
  SB_ASSIGN(FileLock lock,
            FileLock::acquire(s.lock_fd.get(), init ? LOCK_EX : LOCK_SH, s.lock_path));
  const auto log_at = storage::Location::local(s.log_path);
  if (!init) {
    // Opened before the writer, which would create a missing log.
    auto in = storage.open_read(log_at, {false});
    if (!in) return in.error().wrap("unable to open catalog log");
    s.log_in = std::move(*in);
  }
  {
    auto out = storage.open_write(log_at, 0600);
    if (!out) return out.error().wrap("unable to open catalog log");
    s.log_out = std::move(*out);
  }
  if (init) {
    auto in = storage.open_read(log_at, {false});
    if (!in) return in.error().wrap("unable to open catalog log");
    s.log_in = std::move(*in);
  }
  SB_TRY(s.init_header(init));
  SB_TRY(s.catch_up());
  return c;
}

Catalog::~Catalog() = default;

Result<void> Catalog::refresh() {
  std::lock_guard<std::mutex> g(mu_);
  SB_ASSIGN(FileLock lock, FileLock::acquire(state_->lock_fd.get(), LOCK_SH, state_->lock_path));
  SB_TRY(state_->follow_replaced());
  return state_->catch_up();
}

std::vector<Backup> Catalog::backups() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.snapshot();
}

std::vector<LoadWarning> Catalog::warnings() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<LoadWarning> out = state_->model.warnings();
  if (state_->tail) out.push_back(*state_->tail);
  return out;
}

uint64_t Catalog::identity() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.catalog_id();
}

Result<uint64_t> Catalog::begin_backup(const BackupBegin& begin) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  uint64_t id = 0;
  BackupBegin b = begin;
  // The id (and a missing catalog identity) is chosen under the exclusive lock, after
  // reading every record written so far, so two processes can never hand out the same one.
  SB_ASSIGN(uint64_t at, s.append([&]() -> Result<std::vector<EncodedRecord>> {
    id = s.model.next_id();
    b.catalog_id = s.model.catalog_id() != 0 ? s.model.catalog_id() : new_catalog_id();
    SB_ASSIGN(auto rec, encode_begin(id, b));
    return std::vector<EncodedRecord>{std::move(rec)};
  }));
  s.model.add_begin(id, b, at);
  return id;
}

Result<void> Catalog::add_piece(uint64_t backup_id, const PieceRecord& piece,
                                const std::vector<FileRecord>& files) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto records, encode_piece(backup_id, piece, files));
  SB_ASSIGN(uint64_t at, s.append([&]() -> Result<std::vector<EncodedRecord>> {
    SB_TRY(s.model.check_open(backup_id));
    if (s.model.has_piece(backup_id, piece.name)) {
      return fail(Errc::exists, "piece '" + piece.name + "' is already recorded for backup " +
                                    std::to_string(backup_id));
    }
    return std::move(records);
  }));
  s.model.add_piece(backup_id, piece, files, at);
  return ok();
}

Result<void> Catalog::add_files(uint64_t backup_id, const std::vector<FileRecord>& files) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  std::vector<EncodedRecord> records;
  if (!files.empty()) {
    SB_ASSIGN(records, encode_files(backup_id, files));
  }
  SB_ASSIGN(uint64_t at, s.append([&]() -> Result<std::vector<EncodedRecord>> {
    SB_TRY(s.model.check_open(backup_id));
    return std::move(records);
  }));
  if (!files.empty()) s.model.add_files(backup_id, files, at);
  return ok();
}

Result<void> Catalog::end_backup(uint64_t backup_id, const BackupEnd& end) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  if (end.status == BackupStatus::running) {
    return fail(Errc::invalid_argument,
                "backup " + std::to_string(backup_id) + " cannot end with status running");
  }
  SB_ASSIGN(auto rec, encode_end(backup_id, end));
  SB_ASSIGN(uint64_t at, s.append([&]() -> Result<std::vector<EncodedRecord>> {
    SB_TRY(s.model.check_open(backup_id));
    return std::vector<EncodedRecord>{std::move(rec)};
  }));
  s.model.add_end(backup_id, end, at);
  return ok();
}

Result<void> Catalog::State::open_log() {
  const auto at = storage::Location::local(log_path);
  auto in = st->open_read(at, {false});
  if (!in) return in.error().wrap("unable to open catalog log");
  auto out = st->open_write(at, 0600);
  if (!out) return out.error().wrap("unable to open catalog log");
  log_in = std::move(*in);
  log_out = std::move(*out);
  return ok();
}

Result<void> Catalog::State::follow_replaced() {
  struct stat now {};
  if (::stat(log_path.c_str(), &now) != 0) return sys_error(errno, "unable to stat '" + log_path + "'");
  SB_ASSIGN(storage::FileInfo open_info, log_in->stat());
  if (open_info.ino == 0 || open_info.ino == static_cast<uint64_t>(now.st_ino)) return ok();
  SB_TRY(open_log());
  reset_reading();
  tail.reset();
  // A compaction may have sealed the log, or sealed it anew under another key.
  SB_ASSIGN(uint64_t size, log_size());
  SB_ASSIGN(auto head, log_range(0, std::min<uint64_t>(size, kFileHeaderSize)));
  SB_ASSIGN(header_version, check_file_header(head, log_path));
  model.warn({0, 0, "'" + log_path + "' was replaced (compacted); reloaded"});
  return ok();
}

Result<std::vector<ImportOutcome>> Catalog::import_backups(const std::vector<Backup>& backups) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  std::vector<ImportOutcome> outcomes;
  std::vector<const Backup*> added;
  SB_ASSIGN(uint64_t at, s.append([&]() -> Result<std::vector<EncodedRecord>> {
    outcomes.clear();
    added.clear();
    uint64_t identity = s.model.catalog_id();
    std::vector<EncodedRecord> records;
    for (const Backup& b : backups) {
      ImportOutcome o;
      o.id = b.id;
      auto open = s.model.check_open(b.id);
      if (open || open.error().code != Errc::not_found) {
        o.reason = "backup " + std::to_string(b.id) + " is already in the catalog";
      } else if (s.model.deleted(b.id)) {
        // Deleted here (its deletion is recorded): an older autobackup or a piece that
        // survived the deletion must not bring it back.
        o.reason = "backup " + std::to_string(b.id) + " was deleted from this catalog";
      } else if (b.begin_missing) {
        o.reason = "backup " + std::to_string(b.id) + " has no begin record to import";
      } else {
        const uint64_t cid = b.begin.catalog_id;
        if (cid == 0)
          return fail(Errc::invalid_argument,
                      "backup " + std::to_string(b.id) + " belongs to no catalog identity");
        if (identity != 0 && cid != identity) {
          char want[17], have[17];
          std::snprintf(want, sizeof want, "%016llx", static_cast<unsigned long long>(identity));
          std::snprintf(have, sizeof have, "%016llx", static_cast<unsigned long long>(cid));
          return fail(Errc::invalid_argument,
                      "backup " + std::to_string(b.id) + " belongs to catalog " + have +
                          ", not to the catalog in '" + s.dir + "' (" + want +
                          "): its records are not imported");
        }
        identity = cid;
        SB_ASSIGN(auto recs, backup_as_records(b));
        for (auto& r : recs) records.push_back(std::move(r));
        o.added = true;
        added.push_back(&b);
      }
      outcomes.push_back(std::move(o));
    }
    return records;
  }));
  for (const Backup* b : added) {
    s.model.add_begin(b->id, b->begin, at);
    for (const auto& p : b->pieces) s.model.add_piece(b->id, p, {}, at);
    if (!b->files.empty()) s.model.add_files(b->id, b->files, at);
    if (b->ended) s.model.add_end(b->id, b->end, at);
    if (b->lock) s.model.add_lock(Lock{b->id, b->end.end_time_ns, *b->lock}, at);
    if (b->hot) s.model.add_hot(*b->hot, at);
    if (b->keep) s.model.add_keep(*b->keep, at);
  }
  return outcomes;
}

}  // namespace stripeback::catalog
