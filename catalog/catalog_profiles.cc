// File profiles (docs/security.md, "Ransomware alarm"): what each backup saw of the files
// it read, for the next backup of them to compare with.
#include <mutex>

#include "catalog/catalog.h"
#include "catalog/catalog_state.h"

namespace stripeback::catalog {

Result<void> Catalog::add_file_profiles(const FileProfiles& p) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto recs, encode_file_profiles(p));
  SB_ASSIGN(uint64_t at, s.append([&]() -> Result<std::vector<EncodedRecord>> {
    SB_TRY(s.model.check_exists(p.backup_id));
    return recs;
  }));
  s.model.add_file_profiles(p, at);
  return ok();
}

std::optional<FileProfiles> Catalog::file_profiles(uint64_t backup_id) const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.file_profiles(backup_id);
}

}  // namespace stripeback::catalog
