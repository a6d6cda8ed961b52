#include "engine/backup/exclude.h"

namespace stripeback::engine {
namespace {

std::vector<std::string_view> split(std::string_view path) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string_view::npos) slash = path.size();
    out.push_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  return out;
}

// The class at glob[i] (just past its `[`): whether `c` is in it; `i` moves past the `]`.
// False with `i` at npos for a class that does not close.
bool in_class(std::string_view glob, size_t& i, char c) {
  bool negated = false;
  if (i < glob.size() && (glob[i] == '!' || glob[i] == '^')) {
    negated = true;
    ++i;
  }
  bool found = false;
  bool first = true;
  while (i < glob.size() && (glob[i] != ']' || first)) {
    first = false;
    char lo = glob[i];
    if (lo == '\\' && i + 1 < glob.size()) lo = glob[++i];
    char hi = lo;
    if (i + 2 < glob.size() && glob[i + 1] == '-' && glob[i + 2] != ']') {
      hi = glob[i + 2];
      if (hi == '\\' && i + 3 < glob.size()) {
        hi = glob[i + 3];
        ++i;
      }
      i += 2;
    }
    if (static_cast<unsigned char>(lo) <= static_cast<unsigned char>(c) &&
        static_cast<unsigned char>(c) <= static_cast<unsigned char>(hi))
      found = true;
    ++i;
  }
  if (i >= glob.size()) {
    i = std::string_view::npos;
    return false;
  }
  ++i;  // the `]`
  return found != negated;
}

// Whether the components `path` match the pattern components `pat`, `**` spanning any
// number of components (none included).
bool segments_match(const std::vector<std::string>& pat, size_t p,
                    const std::vector<std::string_view>& path, size_t q) {
  while (p < pat.size()) {
    if (pat[p] == "**") {
      // Consecutive `**` are one.
      while (p + 1 < pat.size() && pat[p + 1] == "**") ++p;
      for (size_t skip = q; skip <= path.size(); ++skip)
        if (segments_match(pat, p + 1, path, skip)) return true;
      return false;
    }
    if (q >= path.size() || !glob_matches(pat[p], path[q])) return false;
    ++p;
    ++q;
  }
  return q == path.size();
}

}  // namespace

bool glob_matches(std::string_view glob, std::string_view name) {
  // Iterative with one backtrack point: the last `*` and where its match may grow from.
  size_t g = 0, n = 0;
  size_t star = std::string_view::npos, star_n = 0;
  while (n < name.size()) {
    bool step = false;
    if (g < glob.size()) {
      const char c = glob[g];
      if (c == '*') {
        star = ++g;
        star_n = n;
        continue;
      }
      if (c == '?') {
        step = true;
        ++g;
      } else if (c == '[') {
        size_t i = g + 1;
        if (in_class(glob, i, name[n])) {
          step = true;
          g = i;
        } else if (i == std::string_view::npos) {
          return false;
        }
      } else if (c == '\\' && g + 1 < glob.size()) {
        if (glob[g + 1] == name[n]) {
          step = true;
          g += 2;
        }
      } else if (c == name[n]) {
        step = true;
        ++g;
      }
    }
    if (step) {
      ++n;
      continue;
    }
    if (star == std::string_view::npos) return false;
    g = star;
    n = ++star_n;
  }
  while (g < glob.size() && glob[g] == '*') ++g;
  return g == glob.size();
}

Result<void> ExcludeRules::check(std::string_view pattern) {
  auto bad = [&](const std::string& why) {
    return fail(Errc::invalid_argument, "exclude pattern '" + std::string(pattern) + "' " + why);
  };
  if (pattern.empty()) return bad("is empty");
  std::string_view body = pattern;
  if (body.front() == '/') body.remove_prefix(1);
  if (!body.empty() && body.back() == '/') body.remove_suffix(1);
  if (body.empty()) return bad("names no file (it would leave out the whole source)");
  for (std::string_view seg : split(body)) {
    if (seg.empty()) return bad("has an empty path component ('//')");
    for (size_t i = 0; i < seg.size(); ++i) {
      if (seg[i] == '\\') {
        if (i + 1 == seg.size()) return bad("ends with a '\\' that escapes nothing");
        ++i;
      } else if (seg[i] == '[') {
        size_t j = i + 1;
        (void)in_class(seg, j, 'a');
        if (j == std::string_view::npos) return bad("has a '[' that is not closed by ']'");
        i = j - 1;
      }
    }
  }
  return ok();
}

Result<ExcludeRules> ExcludeRules::make(const std::vector<std::string>& patterns) {
  ExcludeRules rules;
  for (const auto& text : patterns) {
    SB_TRY(check(text));
    Pattern p;
    p.text = text;
    std::string_view body = text;
    if (body.back() == '/') {
      p.dir_only = true;
      body.remove_suffix(1);
    }
    if (body.front() == '/') {
      p.anchored = true;
      body.remove_prefix(1);
    }
    if (body.find('/') != std::string_view::npos) p.anchored = true;
    for (std::string_view seg : split(body)) p.segments.emplace_back(seg);
    rules.patterns_.push_back(std::move(p));
  }
  return rules;
}

const std::string* ExcludeRules::match(std::string_view rel, bool is_dir) const {
  if (patterns_.empty() || rel.empty()) return nullptr;
  const std::vector<std::string_view> path = split(rel);
  for (const auto& p : patterns_) {
    if (p.dir_only && !is_dir) continue;
    const bool hit = p.anchored ? segments_match(p.segments, 0, path, 0)
                                : glob_matches(p.segments.front(), path.back());
    if (hit) return &p.text;
  }
  return nullptr;
}

}  // namespace stripeback::engine
