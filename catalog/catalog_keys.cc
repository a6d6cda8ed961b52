// Key rotation records (docs/security.md): the catalog's wraps of pieces' data keys and the
// intent and end of each rekey.
#include <mutex>

#include "catalog/catalog.h"
#include "catalog/catalog_state.h"

namespace stripeback::catalog {

Result<void> Catalog::add_key_wraps(const KeyWraps& w) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_key_wraps(w));
  SB_TRY(s.append([&]() -> Result<std::vector<EncodedRecord>> {
    return std::vector<EncodedRecord>{rec};
  }));
  s.model.add_key_wraps(w);
  return ok();
}

Result<void> Catalog::add_rekey(const Rekey& r) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_rekey(r));
  SB_TRY(s.append([&]() -> Result<std::vector<EncodedRecord>> {
    if (r.done && !s.model.has_rekey_intent(r.id))
      return fail(Errc::invalid_argument,
                  "rekey " + std::to_string(r.id) + " has no recorded intent to end");
    return std::vector<EncodedRecord>{rec};
  }));
  s.model.add_rekey(r);
  return ok();
}

std::map<std::string, KeyWrap> Catalog::key_wraps() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.key_wraps();
}

std::vector<Rekey> Catalog::pending_rekeys() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.pending_rekeys();
}

uint32_t Catalog::kek_version() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.kek_version();
}

}  // namespace stripeback::catalog
