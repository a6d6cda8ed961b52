#include "engine/media/catalog_seal.h"

#include "engine/transform/crypto.h"

namespace stripeback::engine {

Result<void> attach_catalog_key(catalog::Catalog& cat, Keyring& keys) {
  if (cat.seal_attached()) return ok();
  if (auto have = cat.seal_params()) {
    SB_ASSIGN(auto sealer, keys.catalog_sealer(*have));
    return cat.attach_seal(std::move(sealer), *have);
  }
  SB_ASSIGN(auto fresh, keys.new_catalog_seal(cat.kek_version()));
  return cat.attach_seal(std::move(fresh.second), fresh.first);
}

Result<void> check_catalog_trust(const catalog::Catalog& cat) {
  const auto found = cat.tampering();
  if (!found.empty()) {
    std::string what = "the catalog in '" + cat.dir() + "' shows tampering: " + found.front().what;
    if (found.size() > 1) what += " (and " + std::to_string(found.size() - 1) + " more)";
    return fail(Errc::tampered,
                what + "; nothing was done (see `stripeback list`, and rebuild the catalog "
                       "from the media: docs/security.md)");
  }
  if (cat.sealed() && !cat.seal_attached())
    return fail(Errc::invalid_argument,
                "the catalog in '" + cat.dir() +
                    "' is sealed with the key of its encrypted backups: give that key (" +
                    key_options() + ")");
  return ok();
}

Result<void> prepare_catalog_seal(catalog::Catalog& cat, Keyring* keys) {
  if (keys) SB_TRY(attach_catalog_key(cat, *keys));
  return check_catalog_trust(cat);
}

std::string catalog_seal_state(const catalog::Catalog& cat) {
  if (!cat.tampering().empty()) return "tampered";
  if (!cat.sealed()) return "not sealed";
  return cat.seal_attached() ? "verified" : "not verified (no key)";
}

}  // namespace stripeback::engine
