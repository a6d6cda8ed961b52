// Media management records (docs/media-management.md): settings, crosschecks, deletions,
// the resumes of interrupted backups, locks and keeps.
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/catalog_state.h"
#include "util/clock.h"
#include "util/digest.h"

namespace stripeback::catalog {

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

Result<void> Catalog::add_lock(const Lock& l) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_lock(l));
  SB_ASSIGN(uint64_t at, s.append([&]() -> Result<std::vector<EncodedRecord>> {
    SB_TRY(s.model.check_exists(l.backup_id));
    return std::vector<EncodedRecord>{rec};
  }));
  s.model.add_lock(l, at);
  return ok();
}

Result<void> Catalog::add_keep(const Keep& k) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_keep(k));
  SB_ASSIGN(uint64_t at, s.append([&]() -> Result<std::vector<EncodedRecord>> {
    if (k.kind == Keep::Kind::cleared) SB_TRY(s.model.check_exists(k.backup_id));
    else SB_TRY(s.model.check_keepable(k.backup_id));
    return std::vector<EncodedRecord>{rec};
  }));
  s.model.add_keep(k, at);
  return ok();
}

Result<void> Catalog::add_hot(const HotBackup& h) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_hot(h));
  SB_ASSIGN(uint64_t at, s.append([&]() -> Result<std::vector<EncodedRecord>> {
    SB_TRY(s.model.check_exists(h.backup_id));
    return std::vector<EncodedRecord>{rec};
  }));
  s.model.add_hot(h, at);
  return ok();
}

Result<bool> Catalog::add_wal(const WalFile& w) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_wal(w));
  bool wrote = true;
  // Decided after the refresh append() makes under the exclusive lock: another process
  // may have recorded the name a moment ago.
  SB_TRY(s.append([&]() -> Result<std::vector<EncodedRecord>> {
    auto known = s.model.wal_file(w.name);
    if (w.event == WalFile::Event::removed) {
      if (!known)
        return fail(Errc::invalid_argument,
                    "archived file '" + w.name + "' is not in the catalog: nothing to remove");
      return std::vector<EncodedRecord>{rec};
    }
    if (known) {
      if (known->size == w.size && known->digest == w.digest) {
        wrote = false;
        return std::vector<EncodedRecord>{};
      }
      return fail(Errc::exists, "archived file '" + w.name + "' is already in the archive with " +
                                    "other contents (" + std::to_string(known->size) +
                                    " bytes, digest " + util::to_hex(known->digest) +
                                    "; this one: " + std::to_string(w.size) + " bytes, digest " +
                                    util::to_hex(w.digest) + "): the archived one is kept");
    }
    return std::vector<EncodedRecord>{rec};
  }));
  if (wrote) s.model.add_wal(w);
  return wrote;
}

std::vector<WalFile> Catalog::wal_files() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<WalFile> out;
  for (const auto& [name, w] : state_->model.wal()) out.push_back(w);
  return out;
}

std::optional<WalFile> Catalog::wal_file(const std::string& name) const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.wal_file(name);
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
}  // namespace stripeback::catalog
