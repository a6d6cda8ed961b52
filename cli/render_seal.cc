#include "cli/render_seal.h"

#include "engine/media/catalog_seal.h"
#include "util/escape.h"

namespace stripeback::cli {

void seal_json(util::JsonWriter& w, const catalog::Catalog& cat) {
  w.begin_object("catalog_seal");
  w.kv("state", engine::catalog_seal_state(cat));
  if (auto p = cat.seal_params()) w.kv("key_version", p->kek_version);
  w.begin_array("tampering");
  for (const auto& f : cat.tampering()) {
    w.begin_object();
    w.kv("offset", f.offset);
    w.kv("sequence", f.sequence);
    w.kv("what", f.what);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

std::string seal_text(const catalog::Catalog& cat) {
  std::string out;
  const auto found = cat.tampering();
  const auto params = cat.seal_params();
  const std::string version =
      params ? " with key version " + std::to_string(params->kek_version) : std::string();
  if (!found.empty()) {
    out += "catalog " + util::escape_text(cat.dir()) + " shows TAMPERING (" +
           std::to_string(found.size()) +
           " finding(s)): do not trust this listing; rebuild the catalog from the media "
           "(docs/security.md)\n";
    for (const auto& f : found) out += "  tampering: " + util::escape_text(f.what) + "\n";
  } else if (cat.sealed() && cat.seal_attached()) {
    out += "catalog sealed" + version + ": every record verified\n";
  } else if (cat.sealed()) {
    out += "catalog sealed" + version + ": NOT verified (no key given)\n";
  }
  return out;
}

}  // namespace stripeback::cli
