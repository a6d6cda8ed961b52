#include "backends/nfs/url.h"

#include <charconv>

namespace stripeback::nfs {
namespace {

constexpr std::string_view kScheme = "nfs://";

Error bad(const std::string& url, const std::string& why) {
  return Error{Errc::invalid_argument, 0, "invalid NFS URL '" + url + "': " + why};
}

Result<std::string> normalize(const std::string& url, const std::string& raw) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= raw.size()) {
    size_t j = raw.find('/', i);
    if (j == std::string::npos) j = raw.size();
    std::string c = raw.substr(i, j - i);
    if (c == "..") return bad(url, "'..' is not allowed in the path");
    if (!c.empty() && c != ".") parts.push_back(c);
    i = j + 1;
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? std::string("/") : out;
}

Result<uint32_t> number(const std::string& url, const std::string& key, const std::string& v,
                        uint32_t max) {
  uint32_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n > max)
    return bad(url, "option " + key + "=" + v + " is not a number up to " + std::to_string(max));
  return n;
}

}  // namespace

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
  std::string rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  size_t qmark = rest.find('?');
  if (slash == std::string::npos || (qmark != std::string::npos && qmark < slash))
    return bad(url, "no path after the server address (nfs://server/export/path)");
  std::string authority = rest.substr(0, slash);
  std::string path = rest.substr(slash), query;
  if (size_t q = path.find('?'); q != std::string::npos) {
    query = path.substr(q + 1);
    path.resize(q);
    // A path appended after the query belongs to the path.
    if (size_t s = query.find('/'); s != std::string::npos) {
      path += query.substr(s);
      query.resize(s);
    }
  }
  NfsUrl u;
  size_t i = 0;
  while (i <= authority.size()) {
    size_t j = authority.find(',', i);
    if (j == std::string::npos) j = authority.size();
    std::string host = authority.substr(i, j - i);
    if (host.empty()) return bad(url, "empty server address");
    if (host.find(':') != std::string::npos || host.find('@') != std::string::npos)
      return bad(url, "'" + host + "': give ports as ?nfsport=N&mountport=M, not host:port");
    u.servers.push_back(host);
    i = j + 1;
  }
  SB_ASSIGN(u.path, normalize(url, path));
  i = 0;
  while (!query.empty() && i <= query.size()) {
    size_t j = query.find('&', i);
    if (j == std::string::npos) j = query.size();
    std::string kv = query.substr(i, j - i);
    i = j + 1;
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    std::string key = kv.substr(0, eq), val = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (key == "nfsport") {
      SB_ASSIGN(u.nfsport, number(url, key, val, 65535));
    } else if (key == "mountport") {
      SB_ASSIGN(u.mountport, number(url, key, val, 65535));
    } else if (key == "uid") {
      SB_ASSIGN(uint32_t v, number(url, key, val, 0x7fffffff));
      u.uid = static_cast<int>(v);
    } else if (key == "gid") {
      SB_ASSIGN(uint32_t v, number(url, key, val, 0x7fffffff));
      u.gid = static_cast<int>(v);
    } else if (key == "version") {
      if (val == "4" || val == "4.0" || val == "4.1")
        return Error{Errc::unsupported, 0,
                     "NFS URL '" + url + "': NFS version 4 is not supported (libnfs 4.0.0 " +
                         "cannot write over NFSv4); use NFSv3 (version=3 or no version)"};
      if (val != "3") return bad(url, "unknown NFS version '" + val + "' (only 3 is supported)");
    } else {
      return bad(url, "unknown option '" + key +
                          "' (known: nfsport, mountport, version, uid, gid)");
    }
  }
  if ((u.nfsport == 0) != (u.mountport == 0))
    return bad(url, "give both nfsport and mountport, or neither (then the portmapper is asked)");
  return u;
}

}  // namespace stripeback::nfs
