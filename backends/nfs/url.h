// NFS URLs: libnfs's form, nfs://server/path[?nfsport=N&mountport=M&...], extended with
// several server addresses for multipath (nfs://addr1,addr2/path: channels spread over
// them). NFSv3 only.
//
// Paths built by appending "/name" to a URL that has a query (the engine joins paths that
// way) are understood: nfs://h/dir?nfsport=1&mountport=2/name is nfs://h/dir/name with that
// query, since no option value contains a '/'.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/location.h"
#include "stripeback/result.h"

namespace stripeback::nfs {

struct NfsUrl {
  std::vector<std::string> servers;  // at least one
  std::string path;                  // absolute, normalized, no trailing '/' ("/" for root)
  uint32_t nfsport = 0, mountport = 0;  // 0: ask the server's portmapper
  int uid = -1, gid = -1;               // -1: libnfs's default (the caller's ids)
  // The options as a query string ("nfsport=2049&mountport=20048"), or empty.
  std::string query() const;
  // The URL libnfs parses to set up a context for `server` mounting `mount`.
  std::string libnfs_url(const std::string& server, const std::string& mount) const;
  // nfs://servers/path?query (the canonical spelling), which parse_nfs_url reads back as
  // this URL. A path with a '?' is spelled nfs://servers/dir?query/name?... instead.
  std::string str() const;
};

bool is_nfs_url(const std::string& s);  // starts with "nfs://"
// Through the one grammar of NFS locations (backend.h's parse_location). Errors
// (Errc::invalid_argument or unsupported) name the URL and what is wrong with it.
Result<NfsUrl> parse_nfs_url(const std::string& url);
// The URL of a location the grammar read.
NfsUrl url_of(const storage::Location& at);

// The grammar of NFS locations: several servers for multipath (a server is "host", "host:port",
// "[v6]" or "[v6]:port"); the query holds the NFS client's options nfsport, mountport,
// version, uid, gid (NFS version 4 is Errc::unsupported); '..' is refused in the path.
Result<storage::Location> parse_location(std::string_view text);

// The servers of an NFS location's authority, in the given order.
std::vector<std::string> servers_of(const storage::Location& at);

// The parent directory of an absolute normalized path ("/" for "/x" and "/").
std::string parent_of(const std::string& path);

}  // namespace stripeback::nfs
