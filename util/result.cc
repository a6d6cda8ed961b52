#include "stripeback/result.h"

#include <cerrno>
#include <cstring>

namespace stripeback {

const char* errc_name(Errc code) {
  switch (code) {
    case Errc::not_found: return "not_found";
    case Errc::busy: return "busy";
    case Errc::io: return "io";
    case Errc::no_space: return "no_space";
    case Errc::end_of_medium: return "end_of_medium";
    case Errc::corrupt: return "corrupt";
    case Errc::cancelled: return "cancelled";
    case Errc::unsupported: return "unsupported";
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::timed_out: return "timed_out";
    case Errc::exists: return "exists";
    case Errc::wrong_key: return "wrong_key";
    case Errc::tampered: return "tampered";
  }
  return "unknown";
}

Error sys_error(int err, const std::string& what) {
  Errc code = Errc::io;
  switch (err) {
    case ENOENT: case ENOTDIR: code = Errc::not_found; break;
    case EEXIST: code = Errc::exists; break;
    case ENOSPC: case EDQUOT: code = Errc::no_space; break;
    case EAGAIN: case EBUSY: code = Errc::busy; break;
    case EINVAL: case ENAMETOOLONG: case EISDIR: code = Errc::invalid_argument; break;
    case EACCES: case EPERM: case EROFS: code = Errc::invalid_argument; break;
    case ENOSYS: case EOPNOTSUPP: code = Errc::unsupported; break;
    case ETIMEDOUT: code = Errc::timed_out; break;
    case ECANCELED: case EINTR: code = Errc::cancelled; break;
    default: break;
  }
  return Error{code, err, what + ": " + std::strerror(err)};
}

}  // namespace stripeback
