// sb_options: the keys of the option schema (options/schema.h), each with the schema's
// check: a value is checked when it is set, so a bad one is reported at the call that gave
// it, in the words the CLI's flag would get.
#include <new>
#include <string_view>

#include "capi/handles.h"
#include "engine/wiring/backends.h"
#include "options/schema.h"
#include "storage/registry.h"

namespace stripeback::capi {
namespace {

using options::Type;

// How a value was handed over: as text, or typed.
enum class Given { text, integer, boolean };

const options::Option* find_key(const char* name) {
  const options::Option* o = options::find_option(name);
  return o != nullptr && o->api ? o : nullptr;
}

sb_status set_checked(sb_options* opts, const char* key, const std::string& value, Given given) {
  if (opts == nullptr || opts->h.kind != Kind::options) return SB_INVALID_ARGUMENT;
  use_api_wording();
  if (key == nullptr) return fail_with(opts->h, SB_INVALID_ARGUMENT, "option key is null");
  const options::Option* k = find_key(key);
  if (k == nullptr)
    return fail_with(opts->h, SB_INVALID_ARGUMENT, "unknown option '" + std::string(key) + "'");
  if (given == Given::integer && k->type != Type::number)
    return fail_with(opts->h, SB_INVALID_ARGUMENT,
                     "option '" + std::string(key) + "' is not a number: use sb_options_set");
  if (given == Given::boolean && k->type != Type::flag)
    return fail_with(opts->h, SB_INVALID_ARGUMENT,
                     "option '" + std::string(key) + "' is not a boolean: use sb_options_set");
  options::Settings next = opts->s.job;
  // The destination of a backup is one place: setting it again replaces it.
  if (k->key == "destination") k->reset(next);
  if (auto r = options::set_option(*k, next, value); !r) return fail_with(opts->h, r.error());
  opts->s.job = std::move(next);
  opts->h.error.clear();
  return SB_OK;
}

template <class F>
sb_status guarded(Header* h, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    if (h) h->error = "out of memory";
    return SB_NOMEM;
  } catch (const std::exception& e) {
    if (h) h->error = std::string("internal error: ") + e.what();
    return SB_ERROR;
  } catch (...) {
    if (h) h->error = "internal error";
    return SB_ERROR;
  }
}

bool valid_scheme(const std::string& s) {
  if (s.empty() || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '+' || c == '-' || c == '.'))
      return false;
  return true;
}

// A scheme the library serves itself: "file" (local paths) and every built-in backend's,
// those left out of this build included (their locations are refused, not an embedder's).
bool builtin_scheme(const std::string& name) {
  engine::register_builtin_backends();
  return name == "file" || storage::builtin_registry().find(name) != nullptr;
}

Header* header_of(sb_options* o) {
  return o != nullptr && o->h.kind == Kind::options ? &o->h : nullptr;
}

}  // namespace

}  // namespace stripeback::capi

using stripeback::capi::guarded;
using stripeback::capi::Kind;
using stripeback::capi::Given;

extern "C" {

sb_options* sb_options_new(void) {
  try {
    stripeback::capi::use_api_wording();
    return new sb_options();
  } catch (...) {
    return nullptr;
  }
}

void sb_options_free(sb_options* opts) {
  if (opts != nullptr && opts->h.kind == Kind::options) delete opts;
}

sb_status sb_options_set(sb_options* opts, const char* key, const char* value) {
  return guarded(stripeback::capi::header_of(opts), [&] {
    if (opts != nullptr && opts->h.kind == Kind::options && value == nullptr)
      return stripeback::capi::fail_with(
          opts->h, SB_INVALID_ARGUMENT,
          "option '" + std::string(key ? key : "(null)") + "': value is null");
    return stripeback::capi::set_checked(opts, key, value ? value : "", Given::text);
  });
}

sb_status sb_options_set_int(sb_options* opts, const char* key, int64_t value) {
  return guarded(stripeback::capi::header_of(opts), [&] {
    return stripeback::capi::set_checked(opts, key, std::to_string(value), Given::integer);
  });
}

sb_status sb_options_set_bool(sb_options* opts, const char* key, int value) {
  return guarded(stripeback::capi::header_of(opts), [&] {
    return stripeback::capi::set_checked(opts, key, value ? "true" : "false", Given::boolean);
  });
}

sb_status sb_options_unset(sb_options* opts, const char* key) {
  return guarded(stripeback::capi::header_of(opts), [&] {
    if (opts == nullptr || opts->h.kind != Kind::options) return SB_INVALID_ARGUMENT;
    const auto* k = key ? stripeback::capi::find_key(key) : nullptr;
    if (k == nullptr)
      return stripeback::capi::fail_with(opts->h, SB_INVALID_ARGUMENT,
                                         "unknown option '" + std::string(key ? key : "(null)") + "'");
    k->reset(opts->s.job);
    opts->s.job.given.erase(std::string(k->key));
    opts->h.error.clear();
    return SB_OK;
  });
}

sb_status sb_options_set_progress(sb_options* opts, sb_progress_fn fn, void* user) {
  if (opts == nullptr || opts->h.kind != Kind::options) return SB_INVALID_ARGUMENT;
  opts->s.progress_fn = fn;
  opts->s.progress_user = user;
  opts->h.error.clear();
  return SB_OK;
}

sb_status sb_options_set_log(sb_options* opts, sb_log_fn fn, void* user, sb_log_level min_level) {
  if (opts == nullptr || opts->h.kind != Kind::options) return SB_INVALID_ARGUMENT;
  if (min_level < SB_LOG_TRACE || min_level > SB_LOG_ERROR)
    return stripeback::capi::fail_with(opts->h, SB_INVALID_ARGUMENT,
                                       "log level " + std::to_string(static_cast<int>(min_level)) +
                                           " is not one of SB_LOG_TRACE..SB_LOG_ERROR");
  opts->s.log_fn = fn;
  opts->s.log_user = user;
  opts->s.log_min = min_level;
  opts->h.error.clear();
  return SB_OK;
}

sb_status sb_options_add_storage(sb_options* opts, const char* scheme, const sb_storage_ops* ops) {
  return guarded(stripeback::capi::header_of(opts), [&] {
    if (opts == nullptr || opts->h.kind != Kind::options) return SB_INVALID_ARGUMENT;
    using stripeback::capi::fail_with;
    if (scheme == nullptr || ops == nullptr)
      return fail_with(opts->h, SB_INVALID_ARGUMENT, "storage scheme or ops is null");
    const std::string name(scheme);
    if (!stripeback::capi::valid_scheme(name))
      return fail_with(opts->h, SB_INVALID_ARGUMENT,
                       "storage scheme '" + name +
                           "' must start with a letter and hold only letters, digits, '+', '-', '.'");
    if (stripeback::capi::builtin_scheme(name))
      return fail_with(opts->h, SB_INVALID_ARGUMENT,
                       "storage scheme '" + name + "' is served by the library itself");
    if (ops->version != SB_STORAGE_OPS_VERSION)
      return fail_with(opts->h, SB_UNSUPPORTED,
                       "storage ops version " + std::to_string(ops->version) +
                           " is not supported (this library knows version " +
                           std::to_string(SB_STORAGE_OPS_VERSION) + ")");
    if (!ops->open || !ops->read || !ops->write || !ops->sync || !ops->stat || !ops->list ||
        !ops->remove || !ops->rename || !ops->close)
      return fail_with(opts->h, SB_INVALID_ARGUMENT,
                       "storage '" + name + "': every function but mkdir must be set");
    opts->s.storages[name] = *ops;
    opts->h.error.clear();
    return SB_OK;
  });
}

}  // extern "C"
