#include "backends/nfs/url.h"

#include <charconv>

namespace stripeback::nfs {
namespace {

constexpr std::string_view kScheme = "nfs://";

Error bad(const std::string& url, const std::string& why) {
  return Error{Errc::invalid_argument, 0, "invalid NFS URL '" + url + "': " + why};
}

}  // namespace

namespace {

using storage::absolute_path;
using storage::check_address;
using storage::has_component;
using storage::invalid_location;
using storage::Location;

Result<uint32_t> check_number(std::string_view text, std::string_view key, std::string_view v,
                              uint32_t max) {
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n > max)
    return invalid_location(text, "option " + std::string(key) + "=" + std::string(v) +
                             " is not a number up to " + std::to_string(max));
  return n;
}

// The options the NFS client knows (url_of() reads them into an NfsUrl).
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
                     "NFS URL '" + std::string(text) +
                         "': NFS version 4 is not supported (libnfs 4.0.0 cannot write over "
                         "NFSv4); use NFSv3 (version=3 or no version)"};
      if (val != "3")
        return invalid_location(text,
                       "unknown NFS version '" + std::string(val) + "' (only 3 is supported)");
    } else {
      return invalid_location(text, "unknown option '" + std::string(key) +
                               "' (known: nfsport, mountport, version, uid, gid)");
    }
  }
  if (nfsport != mountport)
    return invalid_location(text,
                   "give both nfsport and mountport, or neither (then the portmapper is asked)");
  return ok();
}
}  // namespace

Result<Location> parse_location(std::string_view text) {
  Location loc = storage::split_url(text, "nfs");
  std::string_view authority = loc.authority;
  if (authority.empty()) return invalid_location(text, "no server address (empty server list; use nfs://host/path)");
  size_t i = 0;
  while (i <= authority.size()) {
    size_t j = authority.find(',', i);
    if (j == std::string_view::npos) j = authority.size();
    std::string_view server = authority.substr(i, j - i);
    if (server.empty()) return invalid_location(text, "empty server address in the list");
    SB_TRY(check_address(text, server, "server"));
    i = j + 1;
  }
  if (has_component(loc.path, "..")) return invalid_location(text, "'..' is not allowed in an nfs path");
  SB_TRY(check_nfs_query(text, loc.query));
  loc.path = absolute_path("", loc.path);
  return loc;
}

std::vector<std::string> servers_of(const Location& at) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= at.authority.size()) {
    size_t j = at.authority.find(',', i);
    if (j == std::string::npos) j = at.authority.size();
    if (j > i) out.push_back(at.authority.substr(i, j - i));
    i = j + 1;
  }
  return out;
}


bool is_nfs_url(const std::string& s) { return s.rfind(kScheme, 0) == 0; }

std::string parent_of(const std::string& path) {
  auto p = path.rfind('/');
  if (p == std::string::npos || p == 0) return "/";
  return path.substr(0, p);
}

std::string NfsUrl::query() const {
  std::string q;
  auto add = [&q](const std::string& kv) { q += (q.empty() ? "" : "&") + kv; };
  if (nfsport) add("nfsport=" + std::to_string(nfsport));
  if (mountport) add("mountport=" + std::to_string(mountport));
  if (uid >= 0) add("uid=" + std::to_string(uid));
  if (gid >= 0) add("gid=" + std::to_string(gid));
  return q;
}

std::string NfsUrl::libnfs_url(const std::string& server, const std::string& mount) const {
  std::string q = query();
  return std::string(kScheme) + server + mount + (q.empty() ? "" : "?" + q);
}

std::string NfsUrl::str() const {
  std::string s(kScheme);
  for (size_t i = 0; i < servers.size(); ++i) s += (i ? "," : "") + servers[i];
  std::string q = query();
  // A '?' in the path would read as the start of the options. Then the options go before
  // the first component that holds one, where a parser takes what follows the options'
  // first '/' as more path.
  size_t mark = path.find('?');
  if (mark == std::string::npos) return s + path + (q.empty() ? "" : "?" + q);
  size_t cut = path.rfind('/', mark);
  std::string head = path.substr(0, cut);
  return s + (head.empty() ? "/" : head) + "?" + q + path.substr(cut);
}

Result<NfsUrl> parse_nfs_url(const std::string& url) {
  if (!is_nfs_url(url)) return bad(url, "it does not start with nfs://");
  SB_ASSIGN(storage::Location at, parse_location(url));
  // What the grammar accepts that the NFS client cannot use: it mounts an export (a path
  // is needed) and takes its ports from the options.
  size_t end = url.find_first_of("/?", kScheme.size());
  if (end == std::string::npos || url[end] == '?')
    return bad(url, "no path after the server address (nfs://server/export/path)");
  for (const auto& host : servers_of(at)) {
    // libnfs takes a host name or an IPv4 address: a bracketed IPv6 address would reach it
    // unchecked, and ':' is its port separator.
    if (host[0] == '[')
      return bad(url, "'" + host + "': IPv6 server addresses are not supported by the NFS "
                      "client; give a host name or an IPv4 address");
    if (host.find(':') != std::string::npos || host.find('@') != std::string::npos)
      return bad(url, "'" + host + "': give ports as ?nfsport=N&mountport=M, not host:port");
  }
  return url_of(at);
}

NfsUrl url_of(const storage::Location& at) {
  NfsUrl u;
  u.servers = servers_of(at);
  u.path = at.path;
  // The options were checked by the grammar (backend.cc): numbers in range, keys known.
  auto number = [](std::string_view v) {
    uint32_t n = 0;
    std::from_chars(v.data(), v.data() + v.size(), n);
    return n;
  };
  std::string_view query = at.query;
  size_t i = 0;
  while (!query.empty() && i <= query.size()) {
    size_t j = query.find('&', i);
    if (j == std::string_view::npos) j = query.size();
    std::string_view kv = query.substr(i, j - i);
    i = j + 1;
    size_t eq = kv.find('=');
    std::string_view key = kv.substr(0, eq);
    std::string_view val = eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1);
    if (key == "nfsport") u.nfsport = number(val);
    if (key == "mountport") u.mountport = number(val);
    if (key == "uid") u.uid = static_cast<int>(number(val));
    if (key == "gid") u.gid = static_cast<int>(number(val));
  }
  return u;
}

}  // namespace stripeback::nfs
