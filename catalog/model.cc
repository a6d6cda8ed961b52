#include "catalog/model.h"

#include "catalog/seal.h"

#include <algorithm>
#include <set>
#include <utility>

#include "catalog/payload.h"

namespace stripeback::catalog {

bool Backup::expired() const {
  return std::any_of(pieces.begin(), pieces.end(), [](const PieceRecord& p) { return p.expired; });
}

std::string Backup::status_name() const {
  if (begin_missing) return "damaged";
  if (deleting) return "deleting";
  if (ended && damage.empty() && expired()) return "expired";
  // No end record: the job is still running or died; the log cannot tell which, and a
  // listing must not call a dead job "running".
  if (!ended) return "incomplete";
  switch (end.status) {
    case BackupStatus::complete:
      return damage.empty() ? "complete" : "damaged";
    case BackupStatus::failed:
      return "failed";
    case BackupStatus::partial:
      return damage.empty() ? "partial" : "damaged";
    case BackupStatus::running:
      break;
  }
  return "incomplete";
}

bool Backup::kept_at(int64_t now_ns) const {
  return keep && (keep->kind == Keep::Kind::forever ||
                  (keep->kind == Keep::Kind::until && keep->until_ns > now_ns));
}

bool Backup::usable() const {
  return !begin_missing && ended && !deleting && !expired() &&
         (end.status == BackupStatus::complete || end.status == BackupStatus::partial) &&
         damage.empty();
}

std::string find_damage(const Backup& b) {
  if (b.begin_missing) return "its begin record is missing or unreadable";
  if (!b.ended || (b.end.status != BackupStatus::complete &&
                   b.end.status != BackupStatus::partial))
    return "";
  if (b.pieces.size() != b.end.pieces)
    return std::to_string(b.pieces.size()) + " of its " + std::to_string(b.end.pieces) +
           " piece records are readable";
  uint64_t regular = 0;
  std::set<std::string> names;
  for (const auto& p : b.pieces) names.insert(p.name);
  for (const auto& f : b.files) {
    if ((f.mode & 0170000) == 0040000) continue;  // directories hold no data
    ++regular;
    // A file skipped by backup optimization is held by another backup.
    if (f.pieces.empty() && !f.held_by) return "file '" + f.path + "' names no piece";
    for (const auto& p : f.pieces) {
      if (!names.count(p))
        return "file '" + f.path + "' names piece '" + p + "', which is not recorded";
    }
  }
  if (regular != b.end.files)
    return std::to_string(regular) + " of its " + std::to_string(b.end.files) +
           " file records are readable";
  return "";
}

void Model::apply(const Frame& f) {
  auto bad = [&](const Error& e) {
    warn({f.offset, f.size,
          std::string("malformed ") + record_type_name(f.type) + " record (sequence " +
              std::to_string(f.sequence) + "): " + e.what + "; ignored"});
  };
  if (!f.seal.empty()) sealed_frames_ = true;
  switch (static_cast<RecordType>(f.type)) {
    case RecordType::seal: {
      auto p = decode_seal(f.payload);
      if (!p) return bad(p.error());
      return add_seal(*p);
    }
    case RecordType::backup_begin: {
      auto p = decode_begin(f.payload);
      if (!p) return bad(p.error());
      return add_begin(p->backup_id, p->begin, f.offset);
    }
    case RecordType::piece: {
      auto p = decode_piece(f.payload);
      if (!p) return bad(p.error());
      return add_piece(p->backup_id, p->piece, p->files, f.offset);
    }
    case RecordType::files: {
      auto p = decode_files(f.payload);
      if (!p) return bad(p.error());
      return add_files(p->backup_id, p->files, f.offset);
    }
    case RecordType::backup_end: {
      auto p = decode_end(f.payload);
      if (!p) return bad(p.error());
      return add_end(p->backup_id, p->end, f.offset);
    }
    case RecordType::page_check: {
      auto p = decode_page_check(f.payload);
      if (!p) return bad(p.error());
      if (p->backup_id > max_id_) max_id_ = p->backup_id;
      return add_page_check(std::move(*p));
    }
    case RecordType::frame_check: {
      auto p = decode_frame_check(f.payload);
      if (!p) return bad(p.error());
      if (p->backup_id > max_id_) max_id_ = p->backup_id;
      return add_frame_check(std::move(*p));
    }
    case RecordType::setting: {
      auto p = decode_setting(f.payload);
      if (!p) return bad(p.error());
      return add_setting(*p);
    }
    case RecordType::crosscheck: {
      auto p = decode_crosscheck(f.payload);
      if (!p) return bad(p.error());
      return add_crosscheck(*p);
    }
    case RecordType::deletion: {
      auto p = decode_deletion(f.payload);
      if (!p) return bad(p.error());
      return add_deletion(*p, f.offset);
    }
    case RecordType::resume: {
      auto p = decode_resume(f.payload);
      if (!p) return bad(p.error());
      return add_resume(*p, f.offset);
    }
    case RecordType::lock: {
      auto p = decode_lock(f.payload);
      if (!p) return bad(p.error());
      return add_lock(*p, f.offset);
    }
    case RecordType::hot: {
      auto p = decode_hot(f.payload);
      if (!p) return bad(p.error());
      return add_hot(*p, f.offset);
    }
    case RecordType::keep: {
      auto p = decode_keep(f.payload);
      if (!p) return bad(p.error());
      return add_keep(*p, f.offset);
    }
    case RecordType::wal: {
      auto p = decode_wal(f.payload);
      if (!p) return bad(p.error());
      return add_wal(*p);
    }
    case RecordType::key_wrap: {
      auto p = decode_key_wraps(f.payload);
      if (!p) return bad(p.error());
      return add_key_wraps(*p);
    }
    case RecordType::rekey: {
      auto p = decode_rekey(f.payload);
      if (!p) return bad(p.error());
      if (p->done && !has_rekey_intent(p->id)) {
        warn({f.offset, f.size, "rekey end without an intent (id " + std::to_string(p->id) +
                                    "); ignored"});
        return;
      }
      return add_rekey(*p);
    }
    case RecordType::file_profile: {
      auto p = decode_file_profiles(f.payload);
      if (!p) return bad(p.error());
      return add_file_profiles(*p, f.offset);
    }
    case RecordType::job: {
      auto p = decode_job(f.payload);
      if (!p) return bad(p.error());
      // Like every record naming a backup, a job reserves the ids it names.
      for (uint64_t id : p->backup_ids) max_id_ = std::max(max_id_, id);
      p->sequence = f.sequence;
      return add_job(std::move(*p));
    }
  }
  warn({f.offset, f.size,
        "record of unknown type " + std::to_string(f.type) + " (sequence " +
            std::to_string(f.sequence) + ", written by a newer version?); ignored"});
}

void Model::add_begin(uint64_t id, const BackupBegin& begin, uint64_t offset) {
  if (id > max_id_) max_id_ = id;
  if (id == 0 || backups_.count(id) != 0) {
    warn({offset, 0, "second begin record for backup " + std::to_string(id) + "; ignored"});
    return;
  }
  Backup& b = backups_[id];
  b.id = id;
  b.begin = begin;
  if (catalog_id_ == 0) catalog_id_ = begin.catalog_id;
}

Backup* Model::target(uint64_t id, const char* record, uint64_t offset) {
  // Even an orphan record reserves its id: a later backup must not inherit its pieces.
  if (id > max_id_) max_id_ = id;
  if (deleted_.count(id)) return nullptr;  // a deletion removed it: nothing left to change
  auto it = backups_.find(id);
  if (it == backups_.end()) {
    // Its begin record was lost (damaged, or cut out): the backup is known by what is left,
    // and listed as damaged rather than not at all.
    warn({offset, 0,
          std::string(record) + " record for backup " + std::to_string(id) +
              ", whose begin record is missing; the backup is damaged"});
    Backup& b = backups_[id];
    b.id = id;
    b.begin_missing = true;
    b.damage = find_damage(b);
    return &b;
  }
  if (it->second.ended) {
    warn({offset, 0,
          std::string(record) + " record for backup " + std::to_string(id) +
              " after its end record; ignored"});
    return nullptr;
  }
  return &it->second;
}

void Model::add_piece(uint64_t id, const PieceRecord& piece, const std::vector<FileRecord>& files,
                      uint64_t offset) {
  Backup* b = target(id, "piece", offset);
  if (!b) return;
  if (!piece_names_[id].insert(piece.name).second) {
    warn({offset, 0,
          "second record of piece '" + piece.name + "' for backup " + std::to_string(id) +
              "; ignored"});
    return;
  }
  b->pieces.push_back(piece);
  b->files.insert(b->files.end(), files.begin(), files.end());
}

void Model::add_files(uint64_t id, const std::vector<FileRecord>& files, uint64_t offset) {
  Backup* b = target(id, "files", offset);
  if (b) b->files.insert(b->files.end(), files.begin(), files.end());
}

void Model::add_end(uint64_t id, const BackupEnd& end, uint64_t offset) {
  Backup* b = target(id, "backup end", offset);
  if (!b) return;
  b->ended = true;
  b->end = end;
  // A failed backup keeps nothing: the pieces recorded as they became durable were removed.
  if (end.status == BackupStatus::failed) {
    b->pieces.clear();
    b->files.clear();
  }
  b->damage = find_damage(*b);  // no record can change the backup after its end
}

Result<void> Model::check_open(uint64_t id) const {
  auto it = backups_.find(id);
  if (it == backups_.end()) {
    return fail(Errc::not_found, "backup " + std::to_string(id) + " is not in the catalog");
  }
  if (it->second.ended) {
    return fail(Errc::invalid_argument, "backup " + std::to_string(id) + " has already ended (" +
                                            it->second.status_name() + ")");
  }
  return ok();
}

Result<void> Model::check_exists(uint64_t id) const {
  if (!backups_.count(id) || deleted(id))
    return fail(Errc::not_found, "backup " + std::to_string(id) + " is not in the catalog");
  return ok();
}

Result<void> Model::check_keepable(uint64_t id) const {
  SB_TRY(check_exists(id));
  const Backup& b = backups_.at(id);
  const std::string name = "backup " + std::to_string(id);
  if (b.deleting)
    return fail(Errc::invalid_argument, name + " is being deleted: there is nothing to keep");
  if (!b.ended)
    return fail(Errc::invalid_argument,
                name + " has no end record (still running, or its job died): only a backup "
                       "that has ended can be kept");
  if (b.end.status == BackupStatus::failed)
    return fail(Errc::invalid_argument, name + " failed: it holds nothing to keep");
  return ok();
}

bool Model::has_piece(uint64_t id, const std::string& name) const {
  auto it = piece_names_.find(id);
  return it != piece_names_.end() && it->second.count(name) != 0;
}

std::vector<Backup> Model::snapshot() const {
  std::vector<Backup> out;
  out.reserve(backups_.size());
  for (const auto& [id, b] : backups_) out.push_back(b);  // std::map: already in id order
  return out;
}

void Model::add_setting(const Setting& s) {
  if (s.value.empty()) settings_.erase(s.key);
  else settings_[s.key] = s;
}

void Model::add_crosscheck(const Crosscheck& c) {
  for (const PieceCheck& pc : c.pieces) {
    auto it = backups_.find(pc.backup_id);
    if (it == backups_.end()) continue;  // deleted since, or never known: nothing to mark
    for (PieceRecord& p : it->second.pieces) {
      if (p.name != pc.piece) continue;
      p.expired = pc.expired;
      p.expired_reason = pc.expired ? pc.reason : "";
      p.crosschecked_ns = c.time_ns;
      // Damage inside a whole piece is seen only by a deep check: a quick one that finds
      // the piece whole leaves an earlier deep finding as it is.
      if (c.deep || pc.damaged) {
        p.damaged = pc.damaged;
        p.damage = pc.damage;
        p.damaged_files = pc.damaged_files;
      }
    }
  }
}

void Model::add_deletion(const Deletion& d, uint64_t offset) {
  if (!d.done) {
    if (intents_.count(d.id)) {
      warn({offset, 0, "second intent of deletion " + std::to_string(d.id) + "; ignored"});
      return;
    }
    intents_[d.id] = d;
    intent_order_.push_back(d.id);
    for (uint64_t id : d.backups)
      if (auto it = backups_.find(id); it != backups_.end()) it->second.deleting = true;
    return;
  }
  auto it = intents_.find(d.id);
  if (it == intents_.end()) {
    warn({offset, 0, "end of deletion " + std::to_string(d.id) + " without its intent; ignored"});
    return;
  }
  // The intent names what is deleted: the end record only says it is done.
  for (uint64_t id : it->second.backups) {
    backups_.erase(id);
    deleted_.insert(id);
  }
  intents_.erase(it);
  intent_order_.erase(std::find(intent_order_.begin(), intent_order_.end(), d.id));
}

void Model::add_resume(const Resume& r, uint64_t offset) {
  Backup* b = target(r.backup_id, "resume", offset);
  if (!b) return;
  b->begin.host = r.host;
  b->begin.pid = r.pid;
  ++b->resumes;
  // A resume records every file of the backup again, those it keeps included: file records
  // the interrupted run wrote before its end record (a kill between the two) would count
  // twice. (A log keeps records in the order written, a compacted one too.)
  if (!b->ended) b->files.clear();
}

void Model::add_lock(const Lock& l, uint64_t offset) {
  // A lock may come after the end (the end moves it); it makes no backup of its own.
  if (l.backup_id > max_id_) max_id_ = l.backup_id;
  if (deleted_.count(l.backup_id)) return;
  auto it = backups_.find(l.backup_id);
  if (it == backups_.end()) {
    warn({offset, 0, "lock record for backup " + std::to_string(l.backup_id) +
                         ", which is not in the catalog; ignored"});
    return;
  }
  Backup* b = &it->second;
  // The latest date wins (a compliance lock can only be moved later); its mode with it.
  if (!b->lock || l.retention.until_ns >= b->lock->until_ns) b->lock = l.retention;
}

void Model::add_keep(const Keep& k, uint64_t offset) {
  // Like a lock, it comes after the end and makes no backup of its own.
  if (k.backup_id > max_id_) max_id_ = k.backup_id;
  if (deleted_.count(k.backup_id)) return;
  auto it = backups_.find(k.backup_id);
  if (it == backups_.end()) {
    warn({offset, 0, "keep record for backup " + std::to_string(k.backup_id) +
                         ", which is not in the catalog; ignored"});
    return;
  }
  if (k.kind == Keep::Kind::cleared) it->second.keep.reset();
  else it->second.keep = k;
}

void Model::add_file_profiles(const FileProfiles& p, uint64_t offset) {
  if (p.backup_id > max_id_) max_id_ = p.backup_id;
  if (deleted_.count(p.backup_id)) return;
  if (!backups_.count(p.backup_id)) {
    warn({offset, 0, "file profile record for backup " + std::to_string(p.backup_id) +
                         ", which is not in the catalog; ignored"});
    return;
  }
  FileProfiles& to = profiles_[p.backup_id];
  to.backup_id = p.backup_id;
  to.files.insert(to.files.end(), p.files.begin(), p.files.end());
}

std::optional<FileProfiles> Model::file_profiles(uint64_t id) const {
  auto it = profiles_.find(id);
  if (it == profiles_.end() || deleted_.count(id)) return std::nullopt;
  return it->second;
}

void Model::add_hot(const HotBackup& h, uint64_t offset) {
  // Like a lock, it may come after the end and makes no backup of its own.
  if (h.backup_id > max_id_) max_id_ = h.backup_id;
  if (deleted_.count(h.backup_id)) return;
  auto it = backups_.find(h.backup_id);
  if (it == backups_.end()) {
    warn({offset, 0, "hot record for backup " + std::to_string(h.backup_id) +
                         ", which is not in the catalog; ignored"});
    return;
  }
  it->second.hot = h;
}

void Model::add_wal(const WalFile& w) {
  if (w.event == WalFile::Event::removed)
    wal_.erase(w.name);
  else
    wal_[w.name] = w;
}

void Model::add_key_wraps(const KeyWraps& w) {
  // In log order: a later wrap of a piece supersedes an earlier one.
  for (const KeyWrap& x : w.wraps) {
    key_wraps_[x.piece] = x;
    kek_version_ = std::max(kek_version_, x.kek_version);
  }
}

void Model::add_rekey(const Rekey& r) {
  kek_version_ = std::max(kek_version_, r.kek_version);
  if (r.done) {
    rekeys_.erase(r.id);
    return;
  }
  if (rekeys_.emplace(r.id, r).second) rekey_order_.push_back(r.id);
}

std::vector<Rekey> Model::pending_rekeys() const {
  std::vector<Rekey> out;
  for (uint64_t id : rekey_order_)
    if (auto it = rekeys_.find(id); it != rekeys_.end()) out.push_back(it->second);
  return out;
}

std::optional<WalFile> Model::wal_file(const std::string& name) const {
  auto it = wal_.find(name);
  if (it == wal_.end()) return std::nullopt;
  return it->second;
}

std::vector<Deletion> Model::pending_deletions() const {
  std::vector<Deletion> out;
  for (uint64_t id : intent_order_) out.push_back(intents_.at(id));
  return out;
}

}  // namespace stripeback::catalog
