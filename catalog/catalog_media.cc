// Media management records (docs/media-management.md): settings, crosschecks, deletions,
// and the resumes of interrupted backups.
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/catalog_state.h"
#include "util/clock.h"

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
