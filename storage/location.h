// Location: where something is stored, typed. One parser and one joiner for every spelling
// the engine accepts, so no other code takes a location string apart:
//
//   local   /var/backups/db, relative/dir         a path on this machine's file systems
//   nfs     nfs://host[:port][,host2...]/export/dir[?option=value&...]
//           several servers for multipath (a server is "host", "host:port", "[v6]" or
//           "[v6]:port"); the query (the NFS client's options nfsport, mountport, version,
//           uid, gid) stays with the location when it is joined. The joined spelling
//           nfs://h/dir?query/name is read as nfs://h/dir/name?query: no option value holds
//           a '/'. str() uses it only for a path with a '?' in it.
//   tape    tape:iscsi://portal[:port]/iqn.target/lun    a drive on an iSCSI target
//           tape:/dev/sgN                                 a drive through Linux SG_IO
//           (the drive is the location; a tape has no directories, so joining a name
//           gives an entry of the drive's current set, spelled after a '#':
//           tape:/dev/sg0#users01.dbf)
//
// parse() refuses what it cannot type (empty text, an unknown scheme "xyz://", an nfs URL
// without a server or with an empty server in its list, '..' in an nfs path, an option
// the NFS client does not know, a tape address that is neither iscsi://HOST[:PORT]/IQN/LUN
// nor /dev/...) with Errc::invalid_argument and a message that quotes the text and says
// what is wrong; NFS version 4 (version=4) is Errc::unsupported. str() spells a Location so
// that parse() reads it back equal (except a local path starting with "tape:", which only
// Location::local() makes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::storage {

// custom: a storage the embedding program registered (storage/registry.h): servers[0] is
// its scheme name, path what follows "scheme:/" ("name://a/b" has path "/a/b").
enum class Scheme : uint8_t { local, nfs, tape, custom };
const char* scheme_name(Scheme s);  // "local", "nfs", "tape", "custom"

struct Location {
  Scheme scheme = Scheme::local;
  // nfs: the server addresses ("host" or "host:port"), at least one, in the given order.
  // tape: the drive address ("iscsi://portal/iqn/lun" or "/dev/sgN").
  std::vector<std::string> servers;
  // local: the path as given, with "//" runs and a trailing '/' removed ("/" stays "/").
  // nfs: the absolute path on the server, normalized the same way ("/" for the root).
  // tape: empty for the drive itself, "/name" for an entry joined to it.
  std::string path;
  // nfs: the options after '?', verbatim ("nfsport=2049&mountport=20048"); else empty.
  std::string query;

  static Result<Location> parse(std::string_view text);
  // A local path, as is (no parsing: a local file name may contain "://").
  static Location local(std::string path);

  bool is_local() const { return scheme == Scheme::local; }
  // The canonical spelling (parse(str()) == *this).
  std::string str() const;
  // A name below this location: path + "/" + name, keeping servers and query. `name` is
  // one component or a relative path of several ("a/b").
  Location join(std::string_view name) const;
  // The location one level up ("/" stays "/"; a relative local path with one component
  // gives ".").
  Location parent() const;
  // The last component of the path ("" for the root or a tape drive itself).
  std::string name() const;
  // The server address for a thread that picks the i-th (round robin over servers).
  const std::string& server(size_t i) const { return servers[i % servers.size()]; }

  bool operator==(const Location&) const = default;
};

// True for text that parse() reads as something other than a local path (a prefix "tape:"
// or "scheme://", so that an unknown scheme is refused rather than taken as a path), so
// callers can tell a URL from a path without parsing it.
bool has_scheme(std::string_view text);

// A location as text in its canonical form: a URL as Location::str() spells it (a bad one
// as given: it is reported where it is used), a local path made absolute and lexically
// normal (no symbolic links resolved, no trailing '/').
std::string normal_path(const std::string& path);

}  // namespace stripeback::storage
