// The in-memory picture of the catalog built from its records, in log order. Pure: no
// I/O, no locking (Catalog holds its mutex around every call).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/record_log.h"
#include "stripeback/result.h"

namespace stripeback::catalog {

class Model {
 public:
  // Applies a valid frame read from the log. A payload that does not decode, an unknown
  // record type or a record that does not fit the model (unknown backup, after its end)
  // is ignored with a warning.
  void apply(const Frame& frame);

  // The same transitions for records this process has just written at `offset`.
  void add_begin(uint64_t id, const BackupBegin& begin, uint64_t offset);
  void add_piece(uint64_t id, const PieceRecord& piece, const std::vector<FileRecord>& files,
                 uint64_t offset);
  void add_files(uint64_t id, const std::vector<FileRecord>& files, uint64_t offset);
  void add_end(uint64_t id, const BackupEnd& end, uint64_t offset);
  void add_page_check(PageCheck c) { page_checks_.push_back(std::move(c)); }
  void add_frame_check(FrameCheck c) { frame_checks_.push_back(std::move(c)); }
  const std::vector<PageCheck>& page_checks() const { return page_checks_; }
  const std::vector<FrameCheck>& frame_checks() const { return frame_checks_; }
  // Media management (docs/media-management.md).
  void add_setting(const Setting& s);
  void add_crosscheck(const Crosscheck& c);
  void add_deletion(const Deletion& d, uint64_t offset);
  void add_resume(const Resume& r, uint64_t offset);
  void add_lock(const Lock& l, uint64_t offset);
  // The latest Keep record of a backup wins; one of kind cleared ends the keep.
  void add_keep(const Keep& k, uint64_t offset);
  void add_hot(const HotBackup& h, uint64_t offset);
  // The log archive: a pushed record replaces the name's previous one, a removed one ends it.
  void add_wal(const WalFile& w);
  const std::map<std::string, WalFile>& wal() const { return wal_; }
  std::optional<WalFile> wal_file(const std::string& name) const;
  // Key rotation: the newest wrap per piece name, rekey intents until done.
  void add_key_wraps(const KeyWraps& w);
  void add_rekey(const Rekey& r);
  const std::map<std::string, KeyWrap>& key_wraps() const { return key_wraps_; }
  bool has_rekey_intent(uint64_t id) const { return rekeys_.count(id) != 0; }
  std::vector<Rekey> pending_rekeys() const;
  uint32_t kek_version() const { return kek_version_; }
  // File profiles: the records of a backup joined in log order. Like a hot record they
  // make no backup of their own; a deleted backup's are dropped.
  void add_file_profiles(const FileProfiles& p, uint64_t offset);
  std::optional<FileProfiles> file_profiles(uint64_t id) const;
  const std::map<std::string, Setting>& settings() const { return settings_; }
  // The seal: the parameters of the first Seal record; whether any record carries a seal.
  void add_seal(const SealParams& p) {
    if (!seal_) seal_ = p;
  }
  const std::optional<SealParams>& seal() const { return seal_; }
  void saw_sealed_frame() { sealed_frames_ = true; }
  bool has_sealed_frames() const { return sealed_frames_; }
  std::vector<Deletion> pending_deletions() const;
  bool has_intent(uint64_t deletion_id) const { return intents_.count(deletion_id) != 0; }
  // Whether a done deletion removed backup `id` (its records stay in the log).
  bool deleted(uint64_t id) const { return deleted_.count(id) != 0; }
  const std::set<uint64_t>& deleted() const { return deleted_; }
  void add_job(JobRecord j) { jobs_.push_back(std::move(j)); }
  const std::vector<JobRecord>& jobs() const { return jobs_; }

  // For writers: not_found for an unknown backup, invalid_argument for an ended one.
  Result<void> check_open(uint64_t id) const;
  // For writers: not_found for an unknown or deleted backup.
  Result<void> check_exists(uint64_t id) const;
  // For writers of a Keep that keeps: check_exists, then invalid_argument for a backup
  // being deleted, failed, or without an end record.
  Result<void> check_keepable(uint64_t id) const;
  bool has_piece(uint64_t id, const std::string& name) const;
  // Greater than every backup id any readable record mentions.
  uint64_t next_id() const { return max_id_ + 1; }
  // The catalog id of the first accepted begin record that has one; 0 if none has.
  uint64_t catalog_id() const { return catalog_id_; }

  void warn(LoadWarning w) { warnings_.push_back(std::move(w)); }
  const std::vector<LoadWarning>& warnings() const { return warnings_; }
  std::vector<Backup> snapshot() const;
  void clear() { *this = Model(); }

 private:
  // The backup a record for `id` may change, or null (with a warning) if there is none.
  Backup* target(uint64_t id, const char* record, uint64_t offset);

  std::map<uint64_t, Backup> backups_;
  std::map<uint64_t, std::set<std::string>> piece_names_;
  uint64_t max_id_ = 0;
  uint64_t catalog_id_ = 0;
  std::vector<LoadWarning> warnings_;
  std::vector<PageCheck> page_checks_;
  std::vector<FrameCheck> frame_checks_;
  std::map<std::string, Setting> settings_;
  std::map<uint64_t, Deletion> intents_;  // by deletion id, until done
  std::vector<uint64_t> intent_order_;
  std::set<uint64_t> deleted_;
  std::vector<JobRecord> jobs_;
  std::map<std::string, WalFile> wal_;  // by name
  std::map<std::string, KeyWrap> key_wraps_;  // by piece name, the newest
  std::map<uint64_t, Rekey> rekeys_;           // intents by rekey id, until done
  std::vector<uint64_t> rekey_order_;
  uint32_t kek_version_ = 1;
  std::map<uint64_t, FileProfiles> profiles_;  // by backup id
  std::optional<SealParams> seal_;
  bool sealed_frames_ = false;
};

}  // namespace stripeback::catalog
