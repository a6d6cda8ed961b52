// Catalog: the flat, append-only record log that says which backups exist, which pieces
// hold them and which files each holds. Lives in its own directory, apart from the media.
//
// On disk (docs/catalog-format.md): `<dir>/catalog.log`, a 24-byte file header followed by
// a sequence of records, each
//   magic u32 | length u32 | crc32c u32 | sequence u64 | type u16 | flags u16 | payload
// and `<dir>/lock`, the flock(2) that lets several processes share one catalog: exclusive
// for an append (held for the append only), shared while loading.
//
// Visibility: a backup counts as complete only once its BackupEnd record with
// status=complete is durable, and the engine appends that only after every piece it names
// is durable. A torn or corrupt record is never misread and never fatal: loading skips it,
// resynchronises on the next valid record, and reports it in warnings(); before the next
// append a torn tail is cut off (its bytes saved beside the log for inspection).
//
// Thread safety: every method may be called from any thread (an internal mutex).
// Processes: each process opens its own Catalog. Do not use one across fork(): a flock
// belongs to the open file, so parent and child would not exclude each other.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "catalog/job_record.h"
#include "storage/storage.h"
#include "stripeback/result.h"

namespace stripeback::catalog {

using Digest = std::array<uint8_t, 16>;

enum class BackupStatus : uint8_t {
  running = 0,   // no end record yet; never written (see Backup::status_name())
  complete = 1,
  failed = 2,
  partial = 3,
};

struct BackupBegin {
  std::string tag;
  int64_t start_time_ns = 0;  // wall clock, ns since the epoch
  std::string destination;    // where the pieces go (directory or URL)
  std::vector<std::string> sources;
  uint32_t channels = 0;
  std::string host;
  int32_t pid = 0;
  // The identity of the catalog the backup was begun in (Catalog::identity()), which is
  // also in its pieces' names and headers. 0 in records of versions that had none.
  uint64_t catalog_id = 0;
  // Incremental backups (docs/incremental.md): -1 for a plain full backup, else 0 or 1.
  int level = -1;
  bool cumulative = false;   // level 1 relative to the newest level 0
  uint32_t change_unit = 0;  // bytes per change unit; 0 for a plain full backup
};

// How a file of an incremental (or level 0) backup relates to its parent.
enum class FileChange : uint8_t {
  whole = 0,      // no usable parent: every unit is in this backup
  changed = 1,    // the changed units are here, the rest in the parent's chain
  unchanged = 2,  // no unit changed: only the record and its digest map are here
  skipped = 3,    // --optimize: not read; `held_by` holds this very version
};

// One segment of a piece on one tape volume (see docs/tape.md).
struct MediaSpan {
  std::string volume_id;
  std::string url;         // drive it was written in
  uint32_t file = 0;       // tape file number (0 is the volume label)
  uint64_t block = 0;      // block in that file where the segment header is
  uint64_t first_seq = 0;  // sequence number of the segment's first data block
  uint64_t blocks = 0;     // data blocks in the segment
  // Logical object number of the segment header from READ POSITION, for LOCATE; all ones
  // when the drive reports no position (tgt).
  uint64_t address = ~uint64_t{0};
};

// Where a piece written to tape is: block size, stream length and its segments in order.
struct MediaLocation {
  uint32_t block_size = 0;
  uint64_t bytes = 0;
  std::vector<MediaSpan> spans;
};

struct PieceRecord {
  std::string name;       // file name of the piece, unique
  std::string location;   // directory or URL that holds it
  uint32_t channel = 0;
  uint32_t number = 0;    // piece number within the channel
  uint64_t size = 0;      // bytes on the medium
  uint32_t checksum = 0;  // the piece's whole-piece CRC32C (from its trailer)
  std::optional<MediaLocation> media;  // set for pieces on removable media (tape)
  // What the newest crosscheck found (docs/media-management.md); available until one has
  // found the piece missing or not whole.
  bool expired = false;
  std::string expired_reason;  // e.g. "missing: No such file or directory"
  int64_t crosschecked_ns = 0; // when the newest crosscheck of this piece ran; 0: never
  // What the newest deep crosscheck found damaged inside a piece that is otherwise whole
  // (frames whose payload fails its checksum): the piece stays available and so do the
  // files it holds intact; these files will not restore from it. Kept until a deep
  // crosscheck finds the piece good again (a quick one cannot tell).
  bool damaged = false;
  std::string damage;                      // what was found, e.g. "2 frames fail ..."
  std::vector<std::string> damaged_files;  // paths whose frames are damaged
};

struct FileRecord {
  std::string path;    // absolute source path as backed up
  uint64_t size = 0;
  uint32_t mode = 0;   // st_mode
  int64_t mtime_ns = 0;
  uint32_t uid = 0, gid = 0;
  Digest digest{};     // whole-file digest (see util/digest.h)
  std::vector<std::string> pieces;  // names of the pieces holding its extents
  // Set for files of backups with a level (docs/incremental.md); then `digest` combines the
  // digests of the change units, not of the frames.
  uint32_t unit = 0;     // change unit; 0: a plain full backup's file
  uint64_t parent = 0;   // backup holding the version this one builds on; 0 with whole
  FileChange change = FileChange::whole;
  uint64_t units_written = 0;  // change units stored in this backup
  // Identity of the version backed up, for backup optimization, and for a file skipped by
  // it the backup that holds this version (its record there names the pieces).
  int64_t ctime_ns = 0;
  uint64_t inode = 0;
  uint64_t held_by = 0;
};

struct BackupEnd {
  BackupStatus status = BackupStatus::complete;
  int64_t end_time_ns = 0;
  uint64_t files = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint32_t pieces = 0;  // pieces the backup consists of; all must be recorded
  std::string message;  // error text for failed/partial
};

// A hot backup (backup --hot or --pg, docs/postgresql.md): its sources were read while the
// database had them in backup mode, so files that changed while they were read are
// expected ("fuzzy": the database's redo makes them consistent) and are listed here. A
// --pg backup also records what PostgreSQL's backup mode said: the WAL from start_lsn to
// stop_lsn (segments start_wal to stop_wal of `timeline`) brings the copy to consistency,
// and backup_label (and tablespace_map) must be in the restored data directory.
struct HotBackup {
  uint64_t backup_id = 0;
  std::vector<std::string> fuzzy;  // files that changed while they were read, sorted
  std::string database;            // "postgres" for --pg; empty for a plain --hot
  std::string data_dir;            // the cluster's data directory as the backup names it
  uint64_t system_id = 0;          // the cluster's system identifier (pg_control)
  uint32_t timeline = 0;
  uint32_t wal_segment_size = 0;   // bytes per WAL segment
  uint64_t start_lsn = 0, stop_lsn = 0;
  std::string start_wal, stop_wal;  // first and last WAL segment the backup needs
  int64_t start_time_ns = 0, stop_time_ns = 0;  // backup mode entered and left
  std::string label;                  // the backup label given to pg_backup_start
  std::string backup_label, tablespace_map;  // what pg_backup_stop returned
};

// A backup kept by the operator (stripeback keep, docs/media-management.md): no retention
// policy makes it obsolete, nor the backups it depends on, and `delete backup` refuses it,
// until `until_ns` or forever. A record of kind `cleared` ends an earlier keep. The latest
// Keep record of a backup wins.
struct Keep {
  enum class Kind : uint8_t { until = 1, forever = 2, cleared = 3 };
  uint64_t backup_id = 0;
  int64_t time_ns = 0;   // when recorded
  Kind kind = Kind::until;
  int64_t until_ns = 0;  // kind until: wall clock, ns since the epoch; 0 otherwise
};

// What a load makes of the records for one backup.
struct Backup {
  uint64_t id = 0;
  BackupBegin begin;
  bool ended = false;
  BackupEnd end;
  std::vector<PieceRecord> pieces;
  std::vector<FileRecord> files;
  bool begin_missing = false;  // records name this backup but its begin record is unreadable
  // Why the records of this backup do not add up (set by the load), or empty: see damage().
  std::string damage;
  // A deletion of this backup has begun (its intent is recorded) and not finished: its
  // pieces may already be gone. Finished deletions remove the backup from the picture.
  bool deleting = false;
  uint32_t resumes = 0;  // times a job resumed it (backup --resume)
  // Until when its pieces are locked on their medium (the latest Lock record), if ever.
  std::optional<storage::Retention> lock;
  // Whether the lock still holds at `now_ns` (wall clock).
  bool locked_at(int64_t now_ns) const { return lock && lock->until_ns > now_ns; }
  // A hot backup (backup --hot, --pg): its fuzzy files and, for --pg, the database's
  // backup mode (the latest Hot record).
  std::optional<HotBackup> hot;
  // Kept by the operator (stripeback keep): the latest Keep record, unless it cleared it.
  std::optional<Keep> keep;
  // Whether the keep still holds at `now_ns` (wall clock): forever, or until a date to come.
  bool kept_at(int64_t now_ns) const;

  // "incomplete" without an end record (still running, or the job died: the log cannot
  // tell), else "failed", "partial", "complete"; "damaged" when its begin record is lost,
  // or when complete or partial was claimed but the records do not add up (damage);
  // "expired" when a crosscheck found one of its pieces missing or not whole; "deleting"
  // while a deletion of it is unfinished.
  std::string status_name() const;
  // Restorable: complete or partial (its recorded files are whole), not damaged, not
  // expired, not being deleted.
  bool usable() const;
  bool expired() const;  // some piece is expired (whatever the status)
  bool damaged() const { return status_name() == "damaged"; }
};

// Why a backup's records do not add up, or empty when they do: its begin record is lost;
// fewer or more piece or regular-file records than its end record counts; a file that names
// no piece, or a piece that is not recorded.
std::string find_damage(const Backup& b);

// A page a page validator found corrupt (docs/page-checks.md).
struct CorruptPage {
  std::string file;    // path (or URL) of the file as backed up or validated
  uint64_t block = 0;  // page number within the relation (segment files counted in)
  uint64_t offset = 0; // byte offset in the file
  std::string reason;  // e.g. "checksum mismatch: stored 0x1234, computed 0xabcd"
};

// The outcome of the page checks of one run: a backup with --check-logical, or a validation
// of sources (backup --validate: backup_id 0). Only a complete run's record clears blocks an
// earlier run found in the files it covers (see Catalog::corrupt_pages()).
struct PageCheck {
  int64_t time_ns = 0;     // when the run began, ns since the epoch
  uint64_t backup_id = 0;  // 0 for a validation of sources
  std::string format;      // the validator ("postgres")
  bool complete = false;   // every page of every source was read and checked
  std::vector<std::string> sources;  // as given to the run (paths or URLs)
  uint64_t pages_checked = 0;
  uint64_t corrupt_total = 0;  // may exceed corrupt.size(): a record holds at most kMaxCorrupt
  std::vector<CorruptPage> corrupt;
  static constexpr size_t kMaxCorrupt = 10000;
};

// Frames of one piece a validation checked: [first, last] piece offsets of frame headers,
// every frame of the piece whose header lies in a range was checked.
struct CheckedRange {
  uint64_t first = 0, last = 0;
};
struct CheckedPiece {
  std::string piece;
  std::vector<CheckedRange> ranges;
};

// What one validation of one backup checked, and when (validate --sample, --part and
// --max-duration check some frames; docs/validate.md).
struct FrameCheck {
  int64_t time_ns = 0;     // when the validation began
  uint64_t backup_id = 0;
  std::string mode;        // "full", "sample 10% seed N", "part 2/7", "oldest"
  uint64_t frames_checked = 0;
  uint64_t frames_failed = 0;
  // When every frame of the backup had last been checked as of this run (the oldest last
  // check among them); 0 while some frame has never been checked.
  int64_t full_check_ns = 0;
  std::vector<CheckedPiece> pieces;
};

// A default stored by `stripeback configure` (docs/media-management.md). The newest record
// of a key wins; an empty value clears it.
struct Setting {
  std::string key;
  std::string value;
  int64_t time_ns = 0;
};

// What one crosscheck found for each piece it looked at (docs/media-management.md).
struct PieceCheck {
  PieceCheck() = default;
  PieceCheck(uint64_t id, std::string name, bool is_expired, std::string why)
      : backup_id(id), piece(std::move(name)), expired(is_expired), reason(std::move(why)) {}
  uint64_t backup_id = 0;
  std::string piece;
  bool expired = false;
  std::string reason;  // why it is expired; empty when available
  // A deep check found damaged frames in a piece that is otherwise whole (not expired):
  // what, and the files they belong to (PieceRecord::damaged).
  bool damaged = false;
  std::string damage;
  std::vector<std::string> damaged_files;
};
struct Crosscheck {
  int64_t time_ns = 0;
  bool deep = false;  // every byte of the pieces was read
  std::vector<PieceCheck> pieces;
};

// A deletion of backups and pieces (delete obsolete, delete expired, delete backup),
// recorded twice: the intent before any piece is removed, then `done` with the same id
// once they are. A
// backup named by a done deletion is gone from the catalog; one named by an intent alone is
// `deleting` (a rerun of the delete finishes it). `pieces` are what is removed from the
// media: the recorded pieces of those backups, and leftovers no record names (pieces of
// killed backups, with the backup id their name carries).
struct DeletedPiece {
  uint64_t backup_id = 0;
  std::string name;
  std::string location;  // directory or URL; empty for pieces on removable media
  uint64_t size = 0;
};
struct Deletion {
  uint64_t id = 0;     // random, never 0: ties the done record to its intent
  bool done = false;
  int64_t time_ns = 0;
  std::string reason;  // "obsolete", "expired", "requested" (delete backup)
  std::vector<uint64_t> backups;
  std::vector<DeletedPiece> pieces;
};

// A job resuming an interrupted backup (backup --resume): from now on this process writes
// it. The backup's host and pid become this job's (so that `status` and the leftover rules
// tell a resumed backup that is running from a dead one).
struct Resume {
  uint64_t backup_id = 0;
  int64_t time_ns = 0;
  std::string host;
  int32_t pid = 0;
};

// The pieces of a backup are locked on their medium (S3 Object Lock, docs/s3.md): no one
// can delete them before `until_ns` (in governance mode, only a user with the permission to
// bypass it). Recorded when the backup begins (the date each piece is written with) and
// again when it ends (the date they were moved to); a backup's lock is the latest date.
struct Lock {
  uint64_t backup_id = 0;
  int64_t time_ns = 0;  // when recorded
  storage::Retention retention;
};

// A file of the database's log archive (stripeback archive-push, docs/postgresql.md): a
// WAL segment (000000010000000000000003), a timeline history file (00000002.history), a
// backup history file (...0028.backup) or a partial segment (....partial). Pushed records
// say where it is stored and what it holds; a removed record (retention) ends it.
struct WalFile {
  enum class Event : uint8_t { pushed = 1, removed = 2 };
  Event event = Event::pushed;
  std::string name;       // the file name PostgreSQL gave it (%f)
  int64_t time_ns = 0;    // when pushed or removed
  uint64_t size = 0;      // bytes of the file
  Digest digest{};        // of its bytes (util/digest.h)
  uint64_t stored_size = 0;  // bytes it takes where it is stored
  std::string stored_at;  // where it is stored (a location)
  uint64_t system_id = 0;  // the cluster's (pg_control, else a segment's header); 0 if none
  uint32_t flags = 0;      // kWalCompressed, kWalEncrypted
};
inline constexpr uint32_t kWalCompressed = 1;
inline constexpr uint32_t kWalEncrypted = 2;

// One wrap of a piece's data key under a key-encryption key (KEK): the catalog's copy of
// what an encrypted piece's key slot holds (docs/security.md, "Key hierarchy"). Written by
// `stripeback rekey`; a later wrap of the same piece supersedes an earlier one. The fields
// are those of the piece format's key slot (docs/piece-format.md), opaque to the catalog.
struct KeyWrap {
  uint64_t backup_id = 0;
  std::string piece;         // the piece's name
  uint32_t kek_version = 0;  // 1 for the key a backup was written with, +1 per rekey
  uint8_t kdf = 0, log2_n = 0, r = 0, p = 0;
  std::array<uint8_t, 16> salt{};
  std::array<uint8_t, 16> check{};
  std::array<uint8_t, 12> wrap_nonce{};
  std::array<uint8_t, 48> wrapped_key{};
  // The piece's own key slot holds this wrap too; false: only the catalog has it (a
  // medium that cannot be rewritten in place, or a piece of format 1 to 3).
  bool in_piece = false;
};
struct KeyWraps {
  uint64_t rekey_id = 0;  // the rekey that wrote them
  int64_t time_ns = 0;
  std::vector<KeyWrap> wraps;
};

// A rekey's intent (before any key slot is rewritten) and its end (`done`, same id):
// an intent without an end is a rekey to finish (run it again with the same keys).
struct Rekey {
  uint64_t id = 0;      // random, never 0
  bool done = false;
  int64_t time_ns = 0;
  uint32_t kek_version = 0;  // the version the new key gets
  // On the done record: pieces whose key slot was rewritten, whose wrap is only in the
  // catalog (write-once media), of formats 1 to 3, and that could not be rewrapped.
  uint32_t rewrapped = 0, catalog_only = 0, old_format = 0, failed = 0;
};

// What one backup saw of each file it read (docs/security.md, "Ransomware alarm"): the
// figures a later backup of the same files compares with its own. Recorded for a backup
// that checks pages (--check-logical) or compresses, before its end record.
struct FileProfile {
  std::string path;            // as the backup's file record names it
  uint64_t pages_checked = 0;  // pages the validator checked; 0: none (not checked)
  // Pages that failed their check on every read, before the judgement of a hot backup's
  // pages being written: an encrypted page fails whatever its stamp says.
  uint64_t pages_failed = 0;
  // Raw bytes of the frames the compressor took, and their stored size (a frame that does
  // not shrink counts as stored raw); both 0 when the file was not compressed. All-zero
  // blocks (recorded without data) and a level 1's unchanged units are not counted.
  uint64_t bytes_raw = 0;
  uint64_t bytes_stored = 0;
};
struct FileProfiles {
  uint64_t backup_id = 0;
  std::vector<FileProfile> files;  // sorted by path
};

// The seal of a catalog (catalog/seal.h, docs/security.md "Tamper-evident catalog").
using Mac = std::array<uint8_t, 16>;
// Computes a keyed MAC of the concatenation of `parts` (its first 16 bytes). The engine
// provides it (HMAC-SHA256 under a key derived from the key-encryption key).
class Sealer {
 public:
  virtual ~Sealer() = default;
  virtual Mac mac(std::initializer_list<std::span<const uint8_t>> parts) const = 0;
};
// The parameters the seal key is derived with, as the Seal record stores them: the same
// KDF as the pieces' key wraps.
struct SealParams {
  uint8_t kdf = 0;  // as in a piece header: 1 scrypt (passphrase), 2 key file
  uint8_t log2_n = 0, r = 0, p = 0;
  std::array<uint8_t, 16> salt{};
  Mac check{};               // seal_check() of the key: tells a wrong key from tampering
  uint32_t kek_version = 1;  // of the key-encryption key the seal key comes from
  int64_t sealed_ns = 0;     // when sealing began
  bool operator==(const SealParams&) const = default;
};
// One sign of tampering: where, and what.
struct TamperFinding {
  uint64_t offset = 0;    // of the record in catalog.log
  uint64_t sequence = 0;  // of the record; 0 for the log as a whole
  std::string what;
};

struct LoadWarning {
  uint64_t offset = 0;  // byte offset in catalog.log
  uint64_t length = 0;  // bytes skipped
  std::string what;     // e.g. "torn record at end of log (crc mismatch); ignored"
};

enum class Create : bool { no, yes };

// What Catalog::import_backups did with one backup.
struct ImportOutcome {
  uint64_t id = 0;
  bool added = false;
  std::string reason;  // why it was not added: already in the catalog, ...
};

// Which records a compaction leaves out besides damage (docs/catalog-format.md,
// "Compaction"). The hook is asked once per backup id that a record of a known type names
// (begin, piece, files, end, checks), with the picture of the catalog loaded so far (a
// backup whose deletion is recorded done may be absent from it); every such record of an
// id it returns true for is dropped. Records of types this build does not know are always
// kept. The catalog's identity and next backup id survive: the begin record that gives the
// identity and that of the largest backup id are kept even when their backup is dropped.
struct CompactOptions {
  std::function<bool(uint64_t backup_id)> drop_backup;  // empty: keep every backup
  // A sealed log is sealed anew (every record gets a new seal and sequence): under the
  // attached key, or with `reseal` set under that key and `reseal_params` (a rekey), which
  // is then the attached one.
  std::shared_ptr<const Sealer> reseal;
  SealParams reseal_params;
};

struct CompactReport {
  uint64_t records_before = 0, records_after = 0;
  uint64_t bytes_before = 0, bytes_after = 0;
  uint64_t damaged_bytes = 0;        // torn or corrupt bytes left out
  std::vector<std::string> saved;    // where those bytes were saved, one file per region
  std::vector<uint64_t> dropped_backups;
};

class Catalog {
 public:
  // Opens (and with Create::yes creates: mkdir -p with mode 0700, the lock file and the
  // log with its header) the catalog in `dir` and loads it. Errors: invalid_argument when
  // the directory cannot be used (not a directory, no permission), naming the directory
  // and the cause; not_found with Create::no when the directory or its catalog.log is
  // missing; corrupt when catalog.log is not a catalog, unsupported for a newer format.
  // Damaged records are not errors: see warnings(). The log is read and appended to
  // through `st`, the storage of the directory (local files, or a test's fault injector
  // around them); the lock is a local file lock.
  static Result<std::unique_ptr<Catalog>> open(const std::string& dir, Create create,
                                               storage::Storage& st);
  ~Catalog();

  const std::string& dir() const { return dir_; }
  // Re-reads records appended since the last load (by this or another process).
  Result<void> refresh();
  std::vector<Backup> backups() const;               // snapshot, in id order
  std::vector<LoadWarning> warnings() const;  // in the order found; a torn tail last
  // The catalog's identity: a random 64-bit number (never 0) recorded in every backup's
  // begin record and put in the names and headers of its pieces, so that pieces of
  // catalogs sharing a destination are told apart. It is that of the first begin record
  // that carries one; 0 while the log has none (new, or written only by older versions):
  // the next begin_backup creates it.
  uint64_t identity() const;

  // Each append first reads what other processes appended, is durable (written and
  // fdatasync'ed) when it returns, and on failure truncates the log back to where it was.
  // Errors: not_found for an unknown backup id, invalid_argument for a backup that has
  // ended or a field too long to store, exists for a piece name already recorded.
  // Returns the new backup id: one more than any id in the log (ids start at 1). The
  // record carries the catalog's identity (created here, under the exclusive lock, when the
  // log has none yet); begin.catalog_id is ignored.
  Result<uint64_t> begin_backup(const BackupBegin& begin);
  // Files too many for one record are carried on by Files records in the same write.
  Result<void> add_piece(uint64_t backup_id, const PieceRecord& piece,
                         const std::vector<FileRecord>& files);
  Result<void> add_files(uint64_t backup_id, const std::vector<FileRecord>& files);
  Result<void> end_backup(uint64_t backup_id, const BackupEnd& end);
  // Records of checks (kept in log order). Errors: invalid_argument for a field too long.
  Result<void> add_page_check(const PageCheck& check);
  Result<void> add_frame_check(const FrameCheck& check);
  std::vector<PageCheck> page_checks() const;
  std::vector<FrameCheck> frame_checks() const;
  // The history of jobs (job_record.h), in log order. add_job returns the record's
  // sequence number, which jobs() gives as JobRecord::sequence.
  Result<uint64_t> add_job(const JobRecord& job);
  std::vector<JobRecord> jobs() const;
  // The corrupt pages known now: those of every page check not superseded for their file by
  // a later complete page check whose sources hold the file (that check found what it found
  // in it, maybe nothing). Each with the check that found it.
  std::vector<std::pair<CorruptPage, PageCheck>> corrupt_pages() const;

  // Media management (docs/media-management.md). Settings: the newest value of each key.
  Result<void> set_setting(const std::string& key, const std::string& value);
  std::vector<Setting> settings() const;  // by key; cleared keys left out
  std::optional<std::string> setting(const std::string& key) const;
  Result<void> add_crosscheck(const Crosscheck& check);
  // Records a deletion's intent or (with d.done) its end. Errors: invalid_argument for a
  // done record without an intent, or an intent naming a backup that is already gone.
  Result<void> add_deletion(const Deletion& d);
  // Intents whose deletion has not been recorded done, in log order.
  std::vector<Deletion> pending_deletions() const;
  // Records that this process resumes backup `r.backup_id`. Errors: not_found, or
  // invalid_argument for a backup that has ended.
  Result<void> resume_backup(const Resume& r);
  // Records that the pieces of `l.backup_id` are locked until l.retention.until_ns (it may
  // have ended). Errors: not_found for an unknown or deleted backup.
  Result<void> add_lock(const Lock& l);
  // Records that backup `k.backup_id` is kept (or, kind cleared, no longer kept). Checked
  // under the exclusive lock, so a deletion recorded a moment ago is seen. Errors: not_found
  // for an unknown or deleted backup; invalid_argument, saying why, for keeping a backup
  // that is being deleted, failed, or has no end record.
  Result<void> add_keep(const Keep& k);
  // Records what a hot backup was (it may have ended). Errors: not_found for an unknown or
  // deleted backup.
  Result<void> add_hot(const HotBackup& h);
  // Records a file of the log archive. A pushed file whose name is recorded already (and
  // not removed) is not recorded again: false when its size and digest are the same (the
  // same file pushed twice), Errc::exists naming both digests when they differ. Checked
  // and written under the exclusive lock, so two processes pushing one name cannot both
  // record it. A removed record for a name not recorded is invalid_argument.
  Result<bool> add_wal(const WalFile& w);
  // The files of the log archive now: the latest pushed record of every name not removed
  // since, by name.
  std::vector<WalFile> wal_files() const;
  std::optional<WalFile> wal_file(const std::string& name) const;
  // Key rotation (docs/security.md). Errors: invalid_argument for a done rekey without an
  // intent, or a wrap naming no piece.
  Result<void> add_key_wraps(const KeyWraps& w);
  Result<void> add_rekey(const Rekey& r);
  // The newest wrap of each piece's data key, by piece name.
  std::map<std::string, KeyWrap> key_wraps() const;
  // Rekeys begun and not recorded done, in log order.
  std::vector<Rekey> pending_rekeys() const;
  // The newest key-encryption key version any record names: 1 when none does.
  uint32_t kek_version() const;
  // File profiles (docs/security.md, "Ransomware alarm"): as many records as the files
  // need, in one durable write. Errors: not_found for an unknown or deleted backup,
  // invalid_argument for a path too long or no file.
  Result<void> add_file_profiles(const FileProfiles& p);
  // The profiles recorded for a backup (records in log order, joined), or nullopt when it
  // has none or was deleted.
  std::optional<FileProfiles> file_profiles(uint64_t backup_id) const;
  // Backups a finished deletion removed (their records are still in the log until compact).
  std::vector<uint64_t> deleted_backups() const;

  // catalog rebuild: appends, in one durable write under the exclusive lock, the records of
  // each of `backups` (as backup_as_records gives them: begin with its own id and catalog
  // id, pieces, files, end) that the catalog does not know. A backup id already in the
  // catalog is left alone (outcome not added, with the reason). Errors, before anything is
  // written: invalid_argument when a backup's catalog id is 0, or is not this catalog's
  // identity (a catalog without one takes that of the first backup imported), or when the
  // backups to add do not all have one catalog id.
  Result<std::vector<ImportOutcome>> import_backups(const std::vector<Backup>& backups);

  // Rewrites catalog.log without its torn or corrupt regions (their bytes saved beside it
  // as catalog.log.dropped-<unix-seconds>-<offset>) and without the records of backups
  // `o.drop_backup` names, keeping every other valid record in order, renumbered from
  // sequence 1. Atomic under the exclusive lock: the new log is written to
  // catalog.log.compact, synced, renamed over catalog.log and the directory synced; a crash
  // leaves the old log or the new one. Other Catalog objects notice the new file at their
  // next refresh or append and reload it.
  Result<CompactReport> compact(const CompactOptions& o = {});

  // The seal (docs/security.md, "Tamper-evident catalog"; catalog/seal.h). Whether the log
  // is sealed: it has a Seal record, a record carrying a seal, or a sealed file header.
  bool sealed() const;
  // The parameters of the log's Seal record, to derive its key with.
  std::optional<SealParams> seal_params() const;
  // Attaches the key `s`: from now on every append is sealed (the first append to a log
  // not sealed yet writes `params` as its Seal record first, then marks the file header),
  // and the log is verified, now from its first record and then at every read. Errors:
  // wrong_key when the log is sealed and `s` is not the key of its Seal record (a wrong
  // key is not tampering); tampered when records carry seals but the Seal record is gone.
  // Without a key, appending to a sealed log is refused (invalid_argument).
  Result<void> attach_seal(std::shared_ptr<const Sealer> s, const SealParams& params);
  bool seal_attached() const;
  // Signs of tampering, in file order: those the verification found (with a key), and
  // those visible without one (a sealed header over a log whose records carry no seal,
  // records carrying seals without the Seal record).
  std::vector<TamperFinding> tampering() const;

 private:
  Catalog() = default;
  struct State;
  std::string dir_;
  std::unique_ptr<State> state_;
  mutable std::mutex mu_;
};

}  // namespace stripeback::catalog
