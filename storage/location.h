// Location: where something is stored, typed. The scheme names the backend; what follows
// it is the backend's own (its grammar is registered with the backend, storage/registry.h),
// held here opaquely as authority, path and query, so no other code takes a location
// string apart:
//
//   local   /var/backups/db, relative/dir   a path on this machine's file systems (no scheme)
//   URL     scheme://authority/path?query    e.g. nfs://host[,host2...]/export/dir?nfsport=N
//           The joined spelling scheme://a/dir?query/name is read as scheme://a/dir/name?query:
//           no option value holds a '/'. str() uses it only for a path with a '?' in it. An
//           empty authority is spelled scheme:/path (an embedder's "name://a/b" has path
//           "/a/b").
//   opaque  scheme:authority[#entry]         e.g. tape:/dev/sg0, tape:iscsi://portal/iqn/lun
//           (a drive: the authority is the drive's address; a name joined to it is an entry
//           of the drive's current set, spelled after a '#': tape:/dev/sg0#users01.dbf)
//
// parse() hands text that starts with a registered backend's prefix to that backend, which
// refuses what it cannot type with Errc::invalid_argument and a message that quotes the text
// and says what is wrong; text with an unknown "xyz://" scheme is refused; anything else is
// a local path. str() spells a Location so that parse() reads it back equal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::storage {

struct Location {
  // The backend's name ("nfs", "tape", an embedder's scheme); empty for a local path.
  std::string scheme;
  // URL form: what stands between "scheme://" and the path ("host1,host2" for NFS); opaque
  // form: everything before '#' (a drive's address).
  std::string authority;
  // local: the path as given, with "//" runs and a trailing '/' removed ("/" stays "/").
  // URL form: an absolute path, normalized the same way ("/" for the root).
  // opaque form: empty for the drive itself, "/name" for an entry joined to it.
  std::string path;
  // URL form: the options after '?', verbatim; else empty.
  std::string query;
  bool opaque = false;  // spelled scheme:authority#entry rather than as a URL

  // Through the backends registered in this process and on this thread (registry.h).
  static Result<Location> parse(std::string_view text);
  // A local path, as is (no parsing: a local file name may contain "://").
  static Location local(std::string path);

  bool is_local() const { return scheme.empty(); }
  // The canonical spelling (parse(str()) == *this).
  std::string str() const;
  // A name below this location: path + "/" + name, keeping the rest. `name` is one
  // component or a relative path of several ("a/b").
  Location join(std::string_view name) const;
  // The location one level up ("/" stays "/"; a relative local path with one component
  // gives "."; an entry of a drive gives the drive).
  Location parent() const;
  // The last component of the path ("" for the root or a drive itself).
  std::string name() const;

  bool operator==(const Location&) const = default;
};

// True for text that parse() reads as something other than a local path (a registered
// backend's prefix such as "tape:", or "scheme://", so that an unknown scheme is refused
// rather than taken as a path), so callers can tell a URL from a path without parsing it.
bool has_scheme(std::string_view text);

// Building blocks for the backends' own grammars (each backend checks its own part).
// Errc::invalid_argument, "invalid NOUN 'TEXT': WHY" (NOUN: "location", "NFS URL", ...).
Error invalid_location(std::string_view text, const std::string& why,
                       const char* noun = "location");
// "host", "host:port", "[v6]" or "[v6]:port"; `what` names the role in messages ("server",
// "portal"). With `no_port`, a port is refused with that advice ("give ports as ...").
Result<void> check_address(std::string_view text, std::string_view addr, const char* what,
                           const char* noun = "location", const char* no_port = nullptr);
// Runs of '/' become one and a trailing '/' goes ("/" stays "/").
std::string squeeze_slashes(std::string p);
// Whether '/'-separated `p` has the component `c`.
bool has_component(std::string_view p, std::string_view c);
// The components of `p` appended to `base` without the "." ones ("/" when nothing is
// left); `base` is "" or absolute.
std::string absolute_path(std::string base, std::string_view p);
// Splits the URL form "scheme://authority/path?query" (with the joined-query rule above)
// into a Location of `scheme`; the backend checks the parts.
Location split_url(std::string_view text, std::string_view scheme);

// A location as text in its canonical form: a URL as Location::str() spells it (a bad one
// as given: it is reported where it is used), a local path made absolute and lexically
// normal (no symbolic links resolved, no trailing '/').
std::string normal_path(const std::string& path);

}  // namespace stripeback::storage
