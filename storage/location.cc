// Location parsing and joining (see location.h).
#include "storage/location.h"
#include "storage/registry.h"

#include <charconv>
#include <filesystem>
#include <utility>

namespace stripeback::storage {
namespace {

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// The length of a URL scheme in front of "://" (a letter, then letters, digits, '+', '-'
// or '.'), or 0 when `text` does not start with one.
size_t scheme_length(std::string_view text) {
  if (text.empty() || !is_alpha(text[0])) return 0;
  size_t i = 1;
  while (i < text.size() &&
         (is_alnum(text[i]) || text[i] == '+' || text[i] == '-' || text[i] == '.'))
    ++i;
  return text.substr(i).starts_with("://") ? i : 0;
}

}  // namespace

Error invalid_location(std::string_view text, const std::string& why, const char* noun) {
  return Error{Errc::invalid_argument, 0,
               std::string("invalid ") + noun + " '" + std::string(text) + "': " + why};
}

// Runs of '/' become one and a trailing '/' goes ("/" stays "/").
std::string squeeze_slashes(std::string p) {
  size_t out = 0;
  for (char c : p) {
    if (c == '/' && out > 0 && p[out - 1] == '/') continue;
    p[out++] = c;
  }
  p.resize(out);
  if (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

namespace {
// The non-empty components of a '/'-separated path.
std::vector<std::string_view> components(std::string_view p) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    if (j > i) out.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

bool has_component(std::string_view p, std::string_view c) {
  for (auto part : components(p))
    if (part == c) return true;
  return false;
}

// The components of `p` below `base` without the "." ones: an absolute path for a remote
// file system or a tape entry ("/" when nothing is left). `base` is "" or absolute.
std::string absolute_path(std::string base, std::string_view p) {
  for (auto part : components(p)) {
    if (part == ".") continue;
    if (base.empty() || base.back() != '/') base += '/';
    base += part;
  }
  return base.empty() ? std::string("/") : base;
}

// "host", "host:port", "[v6]" or "[v6]:port"; `what` names the role in messages.
Result<void> check_address(std::string_view text, std::string_view addr, const char* what,
                           const char* noun, const char* no_port) {
  auto invalid = [&](const std::string& why) { return invalid_location(text, why, noun); };
  std::string a(addr);
  if (addr.empty()) return invalid(std::string("empty ") + what + " address");
  if (addr.find('@') != std::string_view::npos)
    return invalid(std::string(what) + " '" + a +
                             "': user names or passwords in the address are not supported");
  std::string_view host, port;
  bool has_port = false;
  if (addr[0] == '[') {
    size_t close = addr.find(']');
    if (close == std::string_view::npos)
      return invalid(std::string(what) + " '" + a + "': '[' without a closing ']'");
    host = addr.substr(1, close - 1);
    std::string_view after = addr.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':')
        return invalid(std::string(what) + " '" + a + "': expected ':port' after ']'");
      port = after.substr(1);
      has_port = true;
    }
    bool v6 = host.find(':') != std::string_view::npos;
    for (char c : host) v6 = v6 && (is_hex(c) || c == ':' || c == '.');
    if (!v6)
      return invalid(std::string(what) + " '" + a + "': '" + std::string(host) +
                               "' is not an IPv6 address");
  } else {
    size_t colon = addr.find(':');
    host = addr.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = addr.substr(colon + 1);
      has_port = true;
      if (port.find(':') != std::string_view::npos)
        return invalid(std::string(what) + " '" + a +
                                 "': an IPv6 address goes in brackets ([::1]:2049)");
    }
    if (host.empty()) return invalid(std::string(what) + " '" + a + "': no host name");
    for (char c : host)
      if (!is_alnum(c) && c != '-' && c != '.' && c != '_')
        return invalid(std::string(what) + " '" + a + "': '" + std::string(1, c) +
                                 "' is not allowed in a host name");
  }
  if (has_port && no_port) return invalid(std::string(what) + " '" + a + "': " + no_port);
  if (has_port) {
    uint32_t n = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || n == 0 ||
        n > 65535)
      return invalid(std::string(what) + " '" + a + "': port '" + std::string(port) +
                               "' is not a number from 1 to 65535");
  }
  return ok();
}


bool has_scheme(std::string_view text) {
  return scheme_length(text) > 0 || find_backend_by_prefix(text) != nullptr;
}

Location split_url(std::string_view text, std::string_view scheme) {
  Location loc;
  loc.scheme = std::string(scheme);
  std::string_view rest = text.substr(scheme.size() + 3);
  size_t end = rest.find_first_of("/?");
  loc.authority = std::string(rest.substr(0, end));
  std::string_view tail = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  size_t q = tail.find('?');
  loc.path = std::string(tail.substr(0, q));
  std::string_view query = q == std::string_view::npos ? std::string_view() : tail.substr(q + 1);
  // No option value holds a '/': one after the query begins components appended to the path.
  if (size_t s = query.find('/'); s != std::string_view::npos) {
    loc.path += query.substr(s);
    query = query.substr(0, s);
  }
  loc.query = std::string(query);
  return loc;
}

Result<Location> Location::parse(std::string_view text) {
  if (text.empty())
    return invalid_location(text, "it is empty (use a path, " + known_spellings() + ")");
  if (const Backend* b = find_backend_by_prefix(text)) return b->parse(text);
  if (size_t n = scheme_length(text); n > 0)
    return Error{Errc::invalid_argument, 0,
                 "unsupported location '" + std::string(text) + "': unknown scheme '" +
                     std::string(text.substr(0, n)) + "' (use a path, " + known_spellings() +
                     ")"};
  return local(std::string(text));
}

Location Location::local(std::string p) {
  Location loc;
  loc.path = squeeze_slashes(std::move(p));
  return loc;
}

std::string Location::str() const {
  if (is_local()) return path;
  if (opaque)
    return scheme + ":" + authority + (path.empty() ? "" : "#" + path.substr(path[0] == '/' ? 1 : 0));
  if (authority.empty()) return scheme + ":/" + path;
  std::string s = scheme + "://" + authority;
  // A '?' in the path would begin the query: then the query goes in front of the component
  // holding it, where parse() takes what follows the query's '/' as more path.
  size_t mark = path.find('?');
  if (mark == std::string::npos) return s + path + (query.empty() ? "" : "?" + query);
  size_t cut = path.rfind('/', mark);
  if (cut == std::string::npos) cut = 0;
  std::string head = path.substr(0, cut);
  return s + (head.empty() ? "/" : head) + "?" + query + path.substr(cut);
}

Location Location::join(std::string_view n) const {
  Location r = *this;
  if (is_local()) {
    std::string tail = squeeze_slashes(std::string(n));
    while (!tail.empty() && tail[0] == '/') tail.erase(0, 1);
    if (tail.empty()) return r;
    if (r.path.empty())
      r.path = tail;
    else
      r.path += (r.path.back() == '/' ? "" : "/") + tail;
    return r;
  }
  std::string joined = absolute_path(path, n);
  // Nothing to add leaves a drive itself as it is.
  if (!(opaque && path.empty() && joined == "/")) r.path = std::move(joined);
  return r;
}

Location Location::parent() const {
  Location r = *this;
  size_t slash = path.rfind('/');
  if (!is_local()) {
    const char* root = opaque ? "" : "/";
    r.path = slash == std::string::npos || slash == 0 ? root : path.substr(0, slash);
    return r;
  }
  if (path == "/") return r;
  std::string last = name();
  if (last == "." || last == "..") {
    // Lexically one level up from a path that ends in a dot component.
    r.path = path == "." ? ".." : path + "/..";
    return r;
  }
  if (slash == std::string::npos)
    r.path = ".";
  else
    r.path = slash == 0 ? "/" : path.substr(0, slash);
  return r;
}

std::string Location::name() const {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string normal_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (has_scheme(path)) {
    auto at = Location::parse(path);
    return at ? at->str() : path;  // a bad location is reported where it is used
  }
  std::error_code ec;
  fs::path p = fs::absolute(fs::path(path), ec);
  if (ec) p = fs::path(path);
  std::string s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace stripeback::storage
