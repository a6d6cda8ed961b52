// NFS URLs (nfs/url.h): parse_nfs_url on any string.
// Invariants: what parses is canonical (servers without separators, an absolute
// normalised path, ports both given or neither) and its canonical spelling str() parses
// to the same URL and spells the same; the libnfs URL for each server parses too (for
// paths without a '?').
#include <string>

#include "backends/nfs/url.h"
#include "tests/fuzz/fuzz_check.h"

using namespace stripeback;
using namespace stripeback::nfs;

namespace {

bool same(const NfsUrl& a, const NfsUrl& b) {
  return a.servers == b.servers && a.path == b.path && a.nfsport == b.nfsport &&
         a.mountport == b.mountport && a.uid == b.uid && a.gid == b.gid;
}

void check_canonical(const NfsUrl& u) {
  FUZZ_CHECK(!u.servers.empty());
  for (const auto& s : u.servers) {
    FUZZ_CHECK(!s.empty());
    FUZZ_CHECK(s.find_first_of(",/?:@") == std::string::npos);
  }
  FUZZ_CHECK(!u.path.empty() && u.path[0] == '/');
  FUZZ_CHECK(u.path == "/" || u.path.back() != '/');
  FUZZ_CHECK(u.path.find("//") == std::string::npos);
  FUZZ_CHECK(u.path.find("/./") == std::string::npos && u.path.find("/../") == std::string::npos);
  FUZZ_CHECK((u.nfsport == 0) == (u.mountport == 0));
  FUZZ_CHECK(u.nfsport <= 65535 && u.mountport <= 65535);
  FUZZ_CHECK(parent_of(u.path).size() <= u.path.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  FUZZ_CHECK(is_nfs_url(text) == (text.rfind("nfs://", 0) == 0));
  auto u = parse_nfs_url(text);
  if (!u) {
    FUZZ_CHECK(u.error().code == Errc::invalid_argument || u.error().code == Errc::unsupported);
    return 0;
  }
  check_canonical(*u);
  const std::string canonical = u->str();
  auto again = parse_nfs_url(canonical);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(same(*u, *again));
  FUZZ_CHECK(again->str() == canonical);
  // libnfs_url is for export paths, which libnfs's own parser cannot take with a '?'.
  if (u->path.find('?') != std::string::npos) return 0;
  for (const auto& s : u->servers) {
    auto one = parse_nfs_url(u->libnfs_url(s, u->path));
    FUZZ_CHECK(one && one->servers.size() == 1 && one->servers[0] == s && one->path == u->path);
  }
  return 0;
}
