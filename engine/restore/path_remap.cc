#include "engine/restore/path_remap.h"

#include <map>

#include "engine/pieces/target_paths.h"
#include "util/option_words.h"

namespace stripeback::engine {
namespace {

Error bad_remap(std::string_view text, const std::string& why) {
  return Error{Errc::invalid_argument, 0,
               "option " + util::option_word("remap") + " '" + std::string(text) + "': " + why};
}

// "/" or an absolute path whose every component passes safe_component(); a trailing '/'
// is dropped.
Result<std::string> remap_path(std::string_view side, std::string_view all) {
  std::string p(side);
  if (p.size() > 1 && p.back() == '/') p.pop_back();
  if (p.empty() || p[0] != '/')
    return bad_remap(all, "'" + p + "' is not an absolute path");
  if (p == "/") return p;
  if (!safe_components(p))
    return bad_remap(all, "'" + p + "' has an empty, '.' or '..' component, or a NUL byte");
  return p;
}

// Whether `path` is `prefix` or below it, in whole components.
bool under(const std::string& path, const std::string& prefix) {
  if (prefix == "/") return true;
  return path.compare(0, prefix.size(), prefix) == 0 &&
         (path.size() == prefix.size() || path[prefix.size()] == '/');
}

std::string how(const PathRemap* r) {
  return r ? util::option_word("remap") + " " + r->shown() : std::string("not remapped");
}

}  // namespace

Result<PathRemap> parse_remap(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) return bad_remap(text, "wants OLD=NEW");
  PathRemap r;
  SB_ASSIGN(r.from, remap_path(text.substr(0, eq), text));
  SB_ASSIGN(r.to, remap_path(text.substr(eq + 1), text));
  return r;
}

Result<void> check_remaps(const std::vector<PathRemap>& remaps) {
  for (size_t i = 0; i < remaps.size(); ++i)
    for (size_t j = i + 1; j < remaps.size(); ++j) {
      const PathRemap& a = remaps[i];
      const PathRemap& b = remaps[j];
      if (a.from == b.from)
        return fail(Errc::invalid_argument,
                    "option " + util::option_word("remap") + " " + a.shown() + " and " +
                        b.shown() + " remap the same path '" + a.from + "'");
      if (a.to == b.to)
        return fail(Errc::invalid_argument,
                    "option " + util::option_word("remap") + " " + a.shown() + " and " +
                        b.shown() + " remap two paths onto one, '" + a.to + "'");
    }
  return ok();
}

const PathRemap* remap_for(const std::vector<PathRemap>& remaps, const std::string& place) {
  const PathRemap* best = nullptr;
  for (const PathRemap& r : remaps)
    if (under(place, r.from) && (!best || r.from.size() > best->from.size())) best = &r;
  return best;
}

std::string remap_place(const std::vector<PathRemap>& remaps, const std::string& place) {
  const PathRemap* r = remap_for(remaps, place);
  if (!r) return place;
  const std::string rest = r->from == "/" ? place : place.substr(r->from.size());
  if (r->to == "/") return rest.empty() ? "/" : rest;
  return r->to + (rest == "/" ? "" : rest);
}

Result<std::vector<std::string>> target_components(const std::string& original,
                                                   const std::vector<PathRemap>& remaps) {
  SB_ASSIGN(auto comps, safe_components(original));
  if (remaps.empty()) return comps;
  const std::string place = remap_place(remaps, restore_relative(original));
  if (place == "/") return std::vector<std::string>{};
  return safe_components(place);
}

Result<void> check_landings(const std::vector<Landing>& files,
                            const std::vector<PathRemap>& remaps) {
  if (remaps.empty()) return ok();
  struct At {
    const Landing* file;
    const PathRemap* remap;
  };
  std::map<std::string, At> at;
  auto refuse = [](const std::string& what) {
    return fail(Errc::invalid_argument, "refusing to restore: " + what + "; nothing was written");
  };
  for (const Landing& f : files) {
    if (!safe_components(f.original)) continue;  // refused as unsafe by the restore
    const std::string from = restore_relative(f.original);
    const PathRemap* r = remap_for(remaps, from);
    const std::string place = remap_place(remaps, from);
    if (place == "/" && !f.directory)
      return refuse(how(r) + " puts the file '" + f.original +
                    "' in the place of the restore target itself");
    auto [it, fresh] = at.emplace(place, At{&f, r});
    if (fresh || (f.directory && it->second.file->directory)) continue;
    return refuse("'" + it->second.file->original + "' (" + how(it->second.remap) + ") and '" +
                  f.original + "' (" + how(r) + ") would both be restored at '" + place + "'");
  }
  for (const auto& [place, a] : at) {
    if (a.file->directory || place == "/") continue;
    auto below = at.lower_bound(place + "/");
    if (below == at.end() || below->first.compare(0, place.size() + 1, place + "/") != 0)
      continue;
    return refuse("'" + a.file->original + "' (" + how(a.remap) + ") would be restored at '" +
                  place + "', where '" + below->second.file->original + "' (" +
                  how(below->second.remap) + ") needs a directory");
  }
  return ok();
}

}  // namespace stripeback::engine
