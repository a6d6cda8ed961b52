// Catalog: ties the framing (record_log), the payloads and the model to the files, under
// the flock that serialises processes and the mutex that serialises threads.
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
#include <set>

#include "catalog/backup_records.h"
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
  return check_file_header(head, log_path);
}

Result<void> Catalog::State::catch_up() {
  SB_ASSIGN(uint64_t size, log_size());
  if (size < end) {
    // Appenders cut only bytes past the last valid record, never ones we have read: the
    // log was truncated by something else. Start over rather than trust the old picture.
    uint64_t had = end;
    model.clear();
    end = kFileHeaderSize;
    last_sequence = 0;
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
  // Interleave the scanner's warnings with the model's, so warnings() is in file order.
  size_t w = 0;
  for (const Frame& f : scan.frames) {
    while (w < scan.warnings.size() && scan.warnings[w].offset <= f.offset) {
      model.warn(std::move(scan.warnings[w++]));
    }
    model.apply(f);
  }
  for (; w < scan.warnings.size(); ++w) model.warn(std::move(scan.warnings[w]));
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
  std::vector<uint8_t> buf;
  uint64_t seq = last_sequence;
  for (const auto& r : records) append_frame(buf, ++seq, r.type, r.payload);
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
  last_sequence = seq;
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

Result<void> Catalog::add_page_check(const PageCheck& check) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_page_check(check));
  SB_TRY(s.append([&]() -> Result<std::vector<EncodedRecord>> {
    return std::vector<EncodedRecord>{rec};
  }));
  PageCheck kept = check;
  kept.corrupt_total = std::max<uint64_t>(kept.corrupt_total, kept.corrupt.size());
  if (kept.corrupt.size() > PageCheck::kMaxCorrupt) kept.corrupt.resize(PageCheck::kMaxCorrupt);
  s.model.add_page_check(std::move(kept));
  return ok();
}

Result<void> Catalog::add_frame_check(const FrameCheck& check) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_frame_check(check));
  SB_TRY(s.append([&]() -> Result<std::vector<EncodedRecord>> {
    return std::vector<EncodedRecord>{rec};
  }));
  s.model.add_frame_check(check);
  return ok();
}

Result<void> Catalog::set_setting(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  Setting set{key, value, util::wall_now_ns()};
  SB_ASSIGN(auto rec, encode_setting(set));
  SB_TRY(s.append([&]() -> Result<std::vector<EncodedRecord>> {
    return std::vector<EncodedRecord>{rec};
  }));
  s.model.add_setting(set);
  return ok();
}

std::vector<Setting> Catalog::settings() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<Setting> out;
  for (const auto& [k, v] : state_->model.settings()) out.push_back(v);
  return out;
}

std::optional<std::string> Catalog::setting(const std::string& key) const {
  std::lock_guard<std::mutex> g(mu_);
  const auto& all = state_->model.settings();
  auto it = all.find(key);
  if (it == all.end()) return std::nullopt;
  return it->second.value;
}

Result<void> Catalog::add_crosscheck(const Crosscheck& check) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_crosscheck(check));
  SB_TRY(s.append([&]() -> Result<std::vector<EncodedRecord>> {
    return std::vector<EncodedRecord>{rec};
  }));
  s.model.add_crosscheck(check);
  return ok();
}

Result<void> Catalog::add_deletion(const Deletion& d) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_deletion(d));
  SB_ASSIGN(uint64_t at, s.append([&]() -> Result<std::vector<EncodedRecord>> {
    if (d.done && !s.model.has_intent(d.id))
      return fail(Errc::invalid_argument,
                  "deletion " + std::to_string(d.id) + " has no recorded intent");
    if (!d.done)
      for (uint64_t id : d.backups)
        if (s.model.deleted(id))
          return fail(Errc::invalid_argument,
                      "backup " + std::to_string(id) + " has already been deleted");
    return std::vector<EncodedRecord>{rec};
  }));
  s.model.add_deletion(d, at);
  return ok();
}

Result<void> Catalog::resume_backup(const Resume& r) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_resume(r));
  SB_ASSIGN(uint64_t at, s.append([&]() -> Result<std::vector<EncodedRecord>> {
    SB_TRY(s.model.check_open(r.backup_id));
    return std::vector<EncodedRecord>{rec};
  }));
  s.model.add_resume(r, at);
  return ok();
}

std::vector<uint64_t> Catalog::deleted_backups() const {
  std::lock_guard<std::mutex> g(mu_);
  const auto& d = state_->model.deleted();
  return {d.begin(), d.end()};
}

std::vector<Deletion> Catalog::pending_deletions() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.pending_deletions();
}

Result<uint64_t> Catalog::add_job(const JobRecord& job) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_job(job));
  SB_TRY(s.append([&]() -> Result<std::vector<EncodedRecord>> {
    return std::vector<EncodedRecord>{rec};
  }));
  JobRecord kept = job;
  kept.sequence = s.last_sequence;  // that of the record just written
  kept.files_total = std::max<uint64_t>(kept.files_total, std::min(kept.file_io.size(), JobRecord::kMaxFiles));
  if (kept.file_io.size() > JobRecord::kMaxFiles) kept.file_io.resize(JobRecord::kMaxFiles);
  s.model.add_job(std::move(kept));
  return s.last_sequence;
}

std::vector<JobRecord> Catalog::jobs() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.jobs();
}

std::vector<PageCheck> Catalog::page_checks() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.page_checks();
}

std::vector<FrameCheck> Catalog::frame_checks() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.frame_checks();
}

namespace {
// Whether `file` is `source` or lies below it.
bool lies_in(const std::string& file, const std::string& source) {
  std::string dir = source;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (file == dir) return true;
  // A URL's query ends it: compare what comes before.
  const std::string base = dir.substr(0, dir.find('?'));
  const std::string f = file.substr(0, base.find("://") != std::string::npos ? file.find('?')
                                                                             : std::string::npos);
  return f.size() > base.size() && f.compare(0, base.size(), base) == 0 &&
         (base == "/" || f[base.size()] == '/');
}
}  // namespace

std::vector<std::pair<CorruptPage, PageCheck>> Catalog::corrupt_pages() const {
  auto checks = page_checks();
  std::vector<std::pair<CorruptPage, PageCheck>> out;
  for (size_t i = 0; i < checks.size(); ++i) {
    for (const CorruptPage& p : checks[i].corrupt) {
      bool superseded = false;
      for (size_t j = i + 1; j < checks.size() && !superseded; ++j) {
        if (!checks[j].complete) continue;
        for (const auto& src : checks[j].sources) superseded = superseded || lies_in(p.file, src);
      }
      if (!superseded) {
        PageCheck by = checks[i];
        by.corrupt.clear();
        out.push_back({p, std::move(by)});
      }
    }
  }
  return out;
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
  model.clear();
  end = kFileHeaderSize;
  last_sequence = 0;
  tail.reset();
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
  }
  return outcomes;
}

namespace {
// The backup a record of a type this build knows is about (every such payload starts with
// a version byte and the backup id); none for other types. A Resume record belongs to its
// backup too: left behind by a compaction that drops the backup, it would name a backup
// without a begin record, which every later load reports as damaged.
std::optional<uint64_t> record_backup_id(const Frame& f) {
  const bool per_backup = (f.type >= static_cast<uint16_t>(RecordType::backup_begin) &&
                           f.type <= static_cast<uint16_t>(RecordType::frame_check)) ||
                          f.type == static_cast<uint16_t>(RecordType::resume);
  if (!per_backup || f.payload.size() < 9) return std::nullopt;
  uint64_t id = 0;
  for (int i = 0; i < 8; ++i) id |= uint64_t{f.payload[1 + static_cast<size_t>(i)]} << (8 * i);
  return id;
}
}  // namespace

Result<CompactReport> Catalog::compact(const CompactOptions& o) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(FileLock lock, FileLock::acquire(s.lock_fd.get(), LOCK_EX, s.lock_path));
  SB_TRY(s.follow_replaced());
  SB_TRY(s.catch_up());
  CompactReport rep;
  SB_ASSIGN(uint64_t size, s.log_size());
  SB_ASSIGN(auto bytes, s.log_range(0, size));
  if (bytes.size() < kFileHeaderSize)
    return fail(Errc::corrupt, "'" + s.log_path + "' is shorter than its file header");
  ScanResult scan = scan_records(std::span<const uint8_t>(bytes).subspan(kFileHeaderSize),
                                 kFileHeaderSize, 0);
  rep.bytes_before = bytes.size();
  rep.records_before = scan.frames.size();
  std::set<uint64_t> drop;
  uint64_t identity_begin = 0, max_id = 0;
  if (o.drop_backup) {
    std::set<uint64_t> asked;
    for (const Frame& f : scan.frames)
      if (auto id = record_backup_id(f)) {
        max_id = std::max(max_id, *id);
        if (asked.insert(*id).second && o.drop_backup(*id)) drop.insert(*id);
        if (!identity_begin && f.type == static_cast<uint16_t>(RecordType::backup_begin))
          if (auto b = decode_begin(f.payload); b && b->begin.catalog_id != 0)
            identity_begin = b->backup_id;
      }
  }
  rep.dropped_backups.assign(drop.begin(), drop.end());
  std::vector<uint8_t> out = encode_file_header();
  uint64_t seq = 0;
  for (const Frame& f : scan.frames) {
    auto id = record_backup_id(f);
    // The identity and the next id are the catalog's, not its backups': those begins stay.
    const bool keeps_catalog = id && f.type == static_cast<uint16_t>(RecordType::backup_begin) &&
                               (*id == identity_begin || *id == max_id);
    if (id && drop.count(*id) && !keeps_catalog) continue;
    append_frame(out, ++seq, static_cast<RecordType>(f.type), f.payload);
  }
  rep.records_after = seq;
  rep.bytes_after = out.size();
  // The damaged regions are kept for inspection, as a cut torn tail is, before the log
  // that no longer holds them takes its place.
  std::vector<LoadWarning> regions;
  for (const auto& w : scan.warnings)
    if (w.length > 0) regions.push_back(w);
  if (scan.torn_tail && scan.torn_tail->length > 0) regions.push_back(*scan.torn_tail);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::system_clock::now().time_since_epoch());
  for (const auto& w : regions) {
    if (w.offset + w.length > bytes.size()) continue;
    rep.damaged_bytes += w.length;
    std::string name = std::string(kLogName) + ".dropped-" + std::to_string(now.count()) + "-" +
                       std::to_string(w.offset);
    SB_ASSIGN(std::string saved,
              save_new_file(s.dir, name,
                            std::span<const uint8_t>(bytes).subspan(w.offset, w.length)));
    rep.saved.push_back(std::move(saved));
  }
  const std::string tmp_path = s.log_path + ".compact";
  const auto tmp = storage::Location::local(tmp_path);
  (void)s.st->remove(tmp);  // of a compaction killed half-way
  storage::CreateOptions co;
  co.direct = false;
  co.mode = 0600;
  SB_ASSIGN(auto file, s.st->create(tmp, co));
  auto written = [&]() -> Result<void> {
    SB_TRY(file->write_at(reinterpret_cast<const std::byte*>(out.data()), out.size(), 0));
    SB_TRY(file->commit());
    return file->close();
  }();
  if (!written) {
    file->abandon();
    (void)s.st->remove(tmp);
    return written.error().wrap("unable to write the compacted catalog log '" + tmp_path + "'");
  }
  util::crash_point("catalog-compact-written");
  if (auto r = s.st->rename(tmp, storage::Location::local(s.log_path), true); !r) {
    (void)s.st->remove(tmp);
    return r.error().wrap("unable to put the compacted catalog log in place");
  }
  SB_TRY(sync_dir(s.dir));
  util::crash_point("catalog-compact-renamed");
  SB_TRY(s.open_log());
  s.model.clear();
  s.end = kFileHeaderSize;
  s.last_sequence = 0;
  s.tail.reset();
  SB_TRY(s.catch_up());
  return rep;
}

}  // namespace stripeback::catalog
