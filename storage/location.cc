// Location parsing and joining (see location.h).
#include "storage/location.h"
#include "storage/registry.h"

#include <charconv>
#include <filesystem>
#include <utility>

namespace stripeback::storage {
namespace {

constexpr std::string_view kNfs = "nfs://";
constexpr std::string_view kTape = "tape:";
constexpr std::string_view kIscsi = "iscsi://";
constexpr std::string_view kDev = "/dev/";
constexpr const char* kUse = "use a path, nfs://host/path or tape:...";
constexpr const char* kIscsiShape = "expected tape:iscsi://HOST[:PORT]/IQN/LUN";

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

Error invalid(std::string_view text, const std::string& why) {
  return Error{Errc::invalid_argument, 0, "invalid location '" + std::string(text) + "': " + why};
}

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

// Runs of '/' become one and a trailing '/' goes ("/" stays "/").
std::string squeeze(std::string p) {
  size_t out = 0;
  for (char c : p) {
    if (c == '/' && out > 0 && p[out - 1] == '/') continue;
    p[out++] = c;
  }
  p.resize(out);
  if (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

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

bool has_component(std::string_view p, std::string_view c) {
  for (auto part : components(p))
    if (part == c) return true;
  return false;
}

// The components of `p` below `base` without the "." ones: an absolute path for a remote
// file system or a tape entry ("/" when nothing is left). `base` is "" or absolute.
std::string absolute(std::string base, std::string_view p) {
  for (auto part : components(p)) {
    if (part == ".") continue;
    if (base.empty() || base.back() != '/') base += '/';
    base += part;
  }
  return base.empty() ? std::string("/") : base;
}

// "host", "host:port", "[v6]" or "[v6]:port"; `what` names the role in messages.
Result<void> check_address(std::string_view text, std::string_view addr, const char* what) {
  std::string a(addr);
  if (addr.empty()) return invalid(text, std::string("empty ") + what + " address");
  if (addr.find('@') != std::string_view::npos)
    return invalid(text, std::string(what) + " '" + a +
                             "': user names or passwords in the address are not supported");
  std::string_view host, port;
  bool has_port = false;
  if (addr[0] == '[') {
    size_t close = addr.find(']');
    if (close == std::string_view::npos)
      return invalid(text, std::string(what) + " '" + a + "': '[' without a closing ']'");
    host = addr.substr(1, close - 1);
    std::string_view after = addr.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':')
        return invalid(text, std::string(what) + " '" + a + "': expected ':port' after ']'");
      port = after.substr(1);
      has_port = true;
    }
    bool v6 = host.find(':') != std::string_view::npos;
    for (char c : host) v6 = v6 && (is_hex(c) || c == ':' || c == '.');
    if (!v6)
      return invalid(text, std::string(what) + " '" + a + "': '" + std::string(host) +
                               "' is not an IPv6 address");
  } else {
    size_t colon = addr.find(':');
    host = addr.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = addr.substr(colon + 1);
      has_port = true;
      if (port.find(':') != std::string_view::npos)
        return invalid(text, std::string(what) + " '" + a +
                                 "': an IPv6 address goes in brackets ([::1]:2049)");
    }
    if (host.empty()) return invalid(text, std::string(what) + " '" + a + "': no host name");
    for (char c : host)
      if (!is_alnum(c) && c != '-' && c != '.' && c != '_')
        return invalid(text, std::string(what) + " '" + a + "': '" + std::string(1, c) +
                                 "' is not allowed in a host name");
  }
  if (has_port) {
    uint32_t n = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || n == 0 ||
        n > 65535)
      return invalid(text, std::string(what) + " '" + a + "': port '" + std::string(port) +
                               "' is not a number from 1 to 65535");
  }
  return ok();
}

Result<uint32_t> check_number(std::string_view text, std::string_view key, std::string_view v,
                              uint32_t max) {
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n > max)
    return invalid(text, "option " + std::string(key) + "=" + std::string(v) +
                             " is not a number up to " + std::to_string(max));
  return n;
}

// The options the NFS client knows (nfs/url.cc reads the same ones with the same rules).
Result<void> check_nfs_query(std::string_view text, std::string_view query) {
  bool nfsport = false, mountport = false;
  size_t i = 0;
  while (!query.empty() && i <= query.size()) {
    size_t j = query.find('&', i);
    if (j == std::string_view::npos) j = query.size();
    std::string_view kv = query.substr(i, j - i);
    i = j + 1;
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    std::string_view key = kv.substr(0, eq);
    std::string_view val = eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1);
    if (key == "nfsport" || key == "mountport") {
      // 0 means "not given", as for the NFS client.
      SB_ASSIGN(uint32_t port, check_number(text, key, val, 65535));
      (key == "nfsport" ? nfsport : mountport) = port != 0;
    } else if (key == "uid" || key == "gid") {
      SB_TRY(check_number(text, key, val, 0x7fffffff));
    } else if (key == "version") {
      if (val == "4" || val == "4.0" || val == "4.1")
        return Error{Errc::unsupported, 0,
                     "location '" + std::string(text) +
                         "': NFS version 4 is not supported; use NFSv3 (version=3 or no version)"};
      if (val != "3")
        return invalid(text,
                       "unknown NFS version '" + std::string(val) + "' (only 3 is supported)");
    } else {
      return invalid(text, "unknown option '" + std::string(key) +
                               "' (known: nfsport, mountport, version, uid, gid)");
    }
  }
  if (nfsport != mountport)
    return invalid(text,
                   "give both nfsport and mountport, or neither (then the portmapper is asked)");
  return ok();
}

Result<Location> parse_nfs(std::string_view text) {
  std::string_view rest = text.substr(kNfs.size());
  size_t end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, end);
  if (authority.empty()) return invalid(text, "no server address (nfs://host/path)");
  Location loc;
  loc.scheme = Scheme::nfs;
  size_t i = 0;
  while (i <= authority.size()) {
    size_t j = authority.find(',', i);
    if (j == std::string_view::npos) j = authority.size();
    std::string_view server = authority.substr(i, j - i);
    if (server.empty()) return invalid(text, "empty server address in the list");
    SB_TRY(check_address(text, server, "server"));
    loc.servers.emplace_back(server);
    i = j + 1;
  }
  std::string_view tail = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  size_t q = tail.find('?');
  std::string path(tail.substr(0, q));
  std::string_view query = q == std::string_view::npos ? std::string_view() : tail.substr(q + 1);
  // No option value holds a '/': one after the query begins components appended to the path.
  if (size_t s = query.find('/'); s != std::string_view::npos) {
    path += query.substr(s);
    query = query.substr(0, s);
  }
  if (has_component(path, "..")) return invalid(text, "'..' is not allowed in an nfs path");
  SB_TRY(check_nfs_query(text, query));
  loc.path = absolute("", path);
  loc.query = query;
  return loc;
}

Result<void> check_iscsi(std::string_view text, std::string_view drive) {
  std::string_view rest = drive.substr(kIscsi.size());
  size_t slash = rest.find('/');
  std::string_view portal = rest.substr(0, slash);
  if (portal.empty()) return invalid(text, std::string("no iSCSI portal address; ") + kIscsiShape);
  SB_TRY(check_address(text, portal, "portal"));
  if (slash == std::string_view::npos)
    return invalid(text, std::string("missing the target IQN and LUN; ") + kIscsiShape);
  rest = rest.substr(slash + 1);
  slash = rest.find('/');
  std::string_view iqn = rest.substr(0, slash);
  if (iqn.empty()) return invalid(text, std::string("missing the target IQN; ") + kIscsiShape);
  for (char c : iqn)
    if (!is_alnum(c) && c != '.' && c != '-' && c != ':' && c != '_')
      return invalid(text,
                     "'" + std::string(iqn) + "' is not an iSCSI target name; " + kIscsiShape);
  if (slash == std::string_view::npos)
    return invalid(text, std::string("missing the LUN after the target IQN; ") + kIscsiShape);
  std::string_view lun = rest.substr(slash + 1);
  if (lun.empty()) return invalid(text, std::string("missing the LUN; ") + kIscsiShape);
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(lun.data(), lun.data() + lun.size(), n);
  if (!is_digit(lun[0]) || ec != std::errc() || end != lun.data() + lun.size() || n > 65535)
    return invalid(
        text, "LUN '" + std::string(lun) + "' is not a number from 0 to 65535; " + kIscsiShape);
  return ok();
}

Result<Location> parse_tape(std::string_view text) {
  std::string_view rest = text.substr(kTape.size());
  if (rest.empty())
    return invalid(text,
                   "nothing after 'tape:' (use tape:iscsi://HOST[:PORT]/IQN/LUN or "
                   "tape:/dev/sgN)");
  size_t hash = rest.find('#');
  std::string_view drive = rest.substr(0, hash);
  Location loc;
  loc.scheme = Scheme::tape;
  if (drive.empty()) return invalid(text, "no drive address before '#'");
  if (drive.starts_with(kIscsi)) {
    SB_TRY(check_iscsi(text, drive));
    loc.servers.emplace_back(drive);
  } else if (drive.starts_with(kDev)) {
    std::string dev = squeeze(std::string(drive));
    if (dev.size() <= kDev.size() || dev.back() == '/')
      return invalid(text, "no device name after /dev/ (tape:/dev/sgN)");
    if (has_component(dev, ".") || has_component(dev, ".."))
      return invalid(text, "'.' and '..' are not allowed in a device path");
    loc.servers.push_back(std::move(dev));
  } else {
    return invalid(text, "'" + std::string(drive) +
                             "' is neither an iscsi:// URL nor a /dev/ device (use "
                             "tape:iscsi://HOST[:PORT]/IQN/LUN or tape:/dev/sgN)");
  }
  if (hash != std::string_view::npos) {
    std::string_view entry = rest.substr(hash + 1);
    if (has_component(entry, ".."))
      return invalid(text, "'..' is not allowed in a tape entry name");
    loc.path = absolute("", entry);
    if (loc.path == "/") return invalid(text, "no entry name after '#'");
  }
  return loc;
}

}  // namespace

const char* scheme_name(Scheme s) {
  switch (s) {
    case Scheme::local:
      return "local";
    case Scheme::nfs:
      return "nfs";
    case Scheme::tape:
      return "tape";
    case Scheme::custom:
      return "custom";
  }
  return "unknown";
}

bool has_scheme(std::string_view text) {
  return text.starts_with(kTape) || scheme_length(text) > 0;
}

Result<Location> Location::parse(std::string_view text) {
  if (text.empty()) return invalid(text, std::string("it is empty (") + kUse + ")");
  if (text.starts_with(kNfs)) return parse_nfs(text);
  if (text.starts_with(kTape)) return parse_tape(text);
  if (size_t n = scheme_length(text); n > 0) {
    std::string name(text.substr(0, n));
    if (auto reg = current_registry(); reg && reg->find(name) != nullptr) {
      Location loc;
      loc.scheme = Scheme::custom;
      loc.servers = {name};
      std::string_view rest = text.substr(n + 3);
      if (has_component(rest, ".."))
        return invalid(text, "'..' is not allowed in the path");
      loc.path = absolute("", rest);
      return loc;
    }
    return Error{Errc::invalid_argument, 0,
                 "unsupported location '" + std::string(text) + "': unknown scheme '" +
                     std::string(text.substr(0, n)) + "' (" + kUse + ")"};
  }
  return local(std::string(text));
}

Location Location::local(std::string p) {
  Location loc;
  loc.path = squeeze(std::move(p));
  return loc;
}

std::string Location::str() const {
  switch (scheme) {
    case Scheme::local:
      return path;
    case Scheme::nfs: {
      std::string s(kNfs);
      for (size_t i = 0; i < servers.size(); ++i) s += (i ? "," : "") + servers[i];
      // A '?' in the path would begin the query: then the query goes in front of the
      // component holding it, where parse() takes what follows the query's '/' as more path.
      size_t mark = path.find('?');
      if (mark == std::string::npos) return s + path + (query.empty() ? "" : "?" + query);
      size_t cut = path.rfind('/', mark);
      if (cut == std::string::npos) cut = 0;
      std::string head = path.substr(0, cut);
      return s + (head.empty() ? "/" : head) + "?" + query + path.substr(cut);
    }
    case Scheme::tape: {
      std::string s(kTape);
      if (!servers.empty()) s += servers[0];
      if (!path.empty()) s += "#" + path.substr(path[0] == '/' ? 1 : 0);
      return s;
    }
    case Scheme::custom:
      return (servers.empty() ? std::string() : servers[0]) + ":/" + path;
  }
  return path;
}

Location Location::join(std::string_view n) const {
  Location r = *this;
  if (scheme == Scheme::local) {
    std::string tail = squeeze(std::string(n));
    while (!tail.empty() && tail[0] == '/') tail.erase(0, 1);
    if (tail.empty()) return r;
    if (r.path.empty())
      r.path = tail;
    else
      r.path += (r.path.back() == '/' ? "" : "/") + tail;
    return r;
  }
  std::string joined = absolute(path, n);
  // Nothing to add leaves a tape drive itself as it is.
  if (!(scheme == Scheme::tape && path.empty() && joined == "/")) r.path = std::move(joined);
  return r;
}

Location Location::parent() const {
  Location r = *this;
  size_t slash = path.rfind('/');
  switch (scheme) {
    case Scheme::tape:
      r.path = slash == std::string::npos || slash == 0 ? "" : path.substr(0, slash);
      return r;
    case Scheme::nfs:
    case Scheme::custom:
      r.path = slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
      return r;
    case Scheme::local:
      break;
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
