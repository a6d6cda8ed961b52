// Version, status names, error messages: what every handle shares.
#include <cerrno>
#include <string_view>
#include <utility>

#include "capi/handles.h"
#include "options/schema.h"

namespace stripeback::capi {

sb_status status_of(Errc code) {
  switch (code) {
    case Errc::not_found: return SB_NOT_FOUND;
    case Errc::busy: return SB_BUSY;
    case Errc::io: return SB_ERROR;
    case Errc::no_space: return SB_NO_SPACE;
    case Errc::end_of_medium: return SB_NO_SPACE;
    case Errc::corrupt: return SB_CORRUPT;
    case Errc::cancelled: return SB_CANCELLED;
    case Errc::unsupported: return SB_UNSUPPORTED;
    case Errc::invalid_argument: return SB_INVALID_ARGUMENT;
    case Errc::timed_out: return SB_TIMED_OUT;
    case Errc::exists: return SB_EXISTS;
    case Errc::wrong_key: return SB_WRONG_KEY;
    case Errc::tampered: return SB_TAMPERED;
  }
  return SB_ERROR;
}

void use_api_wording() { util::set_option_wording(&options::api_wording()); }

sb_status fail_with(Header& h, const Error& e) {
  // A part left out of this build (engine::left_out) is bad input to the CLI, and to an
  // embedder a feature this library does not have.
  if (e.code == Errc::invalid_argument && e.sys_errno == ENOTSUP)
    return fail_with(h, SB_UNSUPPORTED, e.what);
  return fail_with(h, status_of(e.code), e.what);
}

sb_status fail_with(Header& h, sb_status s, std::string message) {
  h.error = std::move(message);
  return s;
}

}  // namespace stripeback::capi

using stripeback::capi::Header;
using stripeback::capi::Kind;

extern "C" {

int sb_version_number(void) { return SB_VERSION_NUMBER; }
const char* sb_version_string(void) { return SB_VERSION_STRING; }

const char* sb_status_name(sb_status status) {
  switch (status) {
    case SB_OK: return "SB_OK";
    case SB_ERROR: return "SB_ERROR";
    case SB_INVALID_ARGUMENT: return "SB_INVALID_ARGUMENT";
    case SB_NOT_FOUND: return "SB_NOT_FOUND";
    case SB_CORRUPT: return "SB_CORRUPT";
    case SB_CANCELLED: return "SB_CANCELLED";
    case SB_UNSUPPORTED: return "SB_UNSUPPORTED";
    case SB_NOMEM: return "SB_NOMEM";
    case SB_EXISTS: return "SB_EXISTS";
    case SB_WRONG_KEY: return "SB_WRONG_KEY";
    case SB_BUSY: return "SB_BUSY";
    case SB_NO_SPACE: return "SB_NO_SPACE";
    case SB_PARTIAL: return "SB_PARTIAL";
    case SB_CHANGED: return "SB_CHANGED";
    case SB_SUSPICIOUS: return "SB_SUSPICIOUS";
    case SB_TAMPERED: return "SB_TAMPERED";
    case SB_TIMED_OUT: return "SB_TIMED_OUT";
  }
  return "SB_UNKNOWN";
}

const char* sb_options_errmsg(const sb_options* opts) { return sb_errmsg(opts); }
const char* sb_catalog_errmsg(const sb_catalog* cat) { return sb_errmsg(cat); }
const char* sb_job_errmsg(const sb_job* job) { return sb_errmsg(job); }

const char* sb_errmsg(const void* handle) {
  if (handle == nullptr) return "null handle";
  // Every handle type starts with its Header (capi/handles.h).
  const auto* h = static_cast<const Header*>(handle);
  switch (h->kind) {
    case Kind::options:
    case Kind::catalog:
    case Kind::job:
      return h->error.c_str();
  }
  return "not a stripeback handle";
}

}  // extern "C"
