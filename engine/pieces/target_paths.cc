#include "engine/pieces/target_paths.h"

#include "storage/location.h"

namespace stripeback::engine {

std::string restore_relative(const std::string& original) {
  auto comps = safe_components(original);
  if (!comps) return original;
  std::string out;
  for (const auto& c : *comps) out += "/" + c;
  return out;
}

bool safe_component(const std::string& c) {
  return !c.empty() && c != "." && c != ".." && c.find('/') == std::string::npos &&
         c.find('\0') == std::string::npos;
}

Result<std::vector<std::string>> safe_components(const std::string& original) {
  auto unsafe = [&] {
    return fail(Errc::invalid_argument, "refusing to restore unsafe path '" + original + "'");
  };
  std::vector<std::string> comps;
  std::string path = original;
  // A file backed up from a server is restored under <host>/<path on the server> (the first
  // server of a list); the host is a component like any other and passes the same check.
  if (storage::has_scheme(original)) {
    auto at = storage::Location::parse(original);
    if (!at || at->is_local()) return unsafe();
    // An embedder's storage (a location without authority) is its own host: name/a/b.
    comps.push_back(at->authority.empty() ? at->scheme
                                          : at->authority.substr(0, at->authority.find(',')));
    path = at->path == "/" ? "" : at->path;
  } else if (original.empty()) {
    return unsafe();
  }
  if (!path.empty() && path[0] != '/') return unsafe();
  size_t i = 1;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    comps.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  if (comps.empty()) return unsafe();
  for (const auto& c : comps)
    if (!safe_component(c)) return unsafe();
  return comps;
}

}  // namespace stripeback::engine
