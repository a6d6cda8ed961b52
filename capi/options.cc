// sb_options: every key of the header, each with its parser. A value is checked when it is
// set, so a bad one is reported at the call that gave it.
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <new>
#include <string_view>

#include "capi/handles.h"
#include "engine/backup/buffer_budget.h"
#include "engine/transform/compress.h"
#include "util/units.h"

namespace stripeback::capi {
namespace {

enum class Type { text, integer, boolean };

struct Key {
  const char* name;
  Type type;
  std::function<Result<void>(Settings&, const std::string&)> set;
  std::function<void(Settings&)> reset;
};

Result<uint64_t> unsigned_of(const std::string& key, const std::string& v, uint64_t lo,
                             uint64_t hi) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || errno != 0 || end != v.c_str() + v.size() || n < lo ||
      n > hi)
    return fail(Errc::invalid_argument, "option '" + key + "' wants a whole number from " +
                                            std::to_string(lo) + " to " + std::to_string(hi) +
                                            "; got '" + v + "'");
  return static_cast<uint64_t>(n);
}

Result<bool> bool_of(const std::string& key, const std::string& v) {
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  return fail(Errc::invalid_argument,
              "option '" + key + "' wants true or false (1/0, yes/no, on/off); got '" + v + "'");
}

Result<uint64_t> size_of(const std::string& key, const std::string& v) {
  auto n = util::parse_size(v);
  if (!n) return n.error().wrap("option '" + key + "'");
  return *n;
}

Result<void> not_empty(const std::string& key, const std::string& v) {
  if (v.empty()) return fail(Errc::invalid_argument, "option '" + key + "' may not be empty");
  return ok();
}

// Keys whose value is a string kept as given.
Key text(const char* name, std::string Settings::*field, bool may_be_empty = false) {
  return {name, Type::text,
          [name, field, may_be_empty](Settings& s, const std::string& v) -> Result<void> {
            if (!may_be_empty) SB_TRY(not_empty(name, v));
            s.*field = v;
            return ok();
          },
          [field](Settings& s) { (s.*field).clear(); }};
}
Key list(const char* name, std::vector<std::string> Settings::*field) {
  return {name, Type::text,
          [name, field](Settings& s, const std::string& v) -> Result<void> {
            SB_TRY(not_empty(name, v));
            (s.*field).push_back(v);
            return ok();
          },
          [field](Settings& s) { (s.*field).clear(); }};
}
Key flag(const char* name, bool Settings::*field, bool dflt = false) {
  return {name, Type::boolean,
          [name, field](Settings& s, const std::string& v) -> Result<void> {
            SB_ASSIGN(s.*field, bool_of(name, v));
            return ok();
          },
          [field, dflt](Settings& s) { s.*field = dflt; }};
}
Key count(const char* name, uint32_t Settings::*field, uint64_t lo, uint64_t hi, uint32_t dflt) {
  return {name, Type::integer,
          [=](Settings& s, const std::string& v) -> Result<void> {
            SB_ASSIGN(uint64_t n, unsigned_of(name, v, lo, hi));
            s.*field = static_cast<uint32_t>(n);
            return ok();
          },
          [field, dflt](Settings& s) { s.*field = dflt; }};
}
Key size(const char* name, uint64_t Settings::*field) {
  return {name, Type::integer,
          [name, field](Settings& s, const std::string& v) -> Result<void> {
            SB_ASSIGN(s.*field, size_of(name, v));
            return ok();
          },
          [field](Settings& s) { s.*field = 0; }};
}
Key key_source(const char* name, std::string engine::KeySource::*field) {
  return {name, Type::text,
          [name, field](Settings& s, const std::string& v) -> Result<void> {
            SB_TRY(not_empty(name, v));
            s.keys.*field = v;
            return ok();
          },
          [field](Settings& s) { (s.keys.*field).clear(); }};
}

const std::vector<Key>& keys() {
  static const std::vector<Key> k = {
      list("source", &Settings::sources),
      list("path", &Settings::paths),
      text("destination", &Settings::destination),
      text("target", &Settings::target),
      text("tag", &Settings::tag, /*may_be_empty=*/true),
      {"backup_id", Type::integer,
       [](Settings& s, const std::string& v) -> Result<void> {
         SB_ASSIGN(uint64_t id, unsigned_of("backup_id", v, 1, UINT64_MAX));
         s.backup_id = id;
         return ok();
       },
       [](Settings& s) { s.backup_id.reset(); }},
      count("channels", &Settings::channels, 1, 64, 2),
      {"compress", Type::text,
       [](Settings& s, const std::string& v) -> Result<void> {
         auto level = engine::parse_compress(v);
         if (!level) return level.error().wrap("option 'compress'");
         s.compress = v;
         return ok();
       },
       [](Settings& s) { s.compress = "none"; }},
      count("files_per_set", &Settings::files_per_set, 1, 1u << 20, 64),
      count("max_open_files", &Settings::max_open_files, 1, 1024, 8),
      size("max_piece_size", &Settings::max_piece_size),
      size("section_size", &Settings::section_size),
      size("rate", &Settings::rate),
      size("job_rate", &Settings::job_rate),
      // The buffer rule's overrides, bounded as the CLI's --buffers and --buffer-size are.
      {"buffers", Type::integer,
       [](Settings& s, const std::string& v) -> Result<void> {
         SB_ASSIGN(uint64_t n, unsigned_of("buffers", v, engine::kMinBuffers,
                                           engine::kMaxBuffers));
         s.buffers = static_cast<size_t>(n);
         return ok();
       },
       [](Settings& s) { s.buffers.reset(); }},
      {"buffer_size", Type::integer,
       [](Settings& s, const std::string& v) -> Result<void> {
         SB_ASSIGN(uint64_t n, size_of("buffer_size", v));
         SB_TRY(engine::check_buffer_overrides(std::nullopt, n));
         s.buffer_size = static_cast<size_t>(n);
         return ok();
       },
       [](Settings& s) { s.buffer_size.reset(); }},
      {"duration", Type::text,
       [](Settings& s, const std::string& v) -> Result<void> {
         SB_ASSIGN(s.duration, util::parse_clock_duration(v, "'duration'"));
         return ok();
       },
       [](Settings& s) { s.duration.reset(); }},
      flag("partial", &Settings::partial),
      flag("one_file_system", &Settings::one_file_system),
      flag("skip_unreadable", &Settings::skip_unreadable),
      {"level", Type::integer,
       [](Settings& s, const std::string& v) -> Result<void> {
         SB_ASSIGN(uint64_t n, unsigned_of("level", v, 0, 1));
         s.level = static_cast<int>(n);
         return ok();
       },
       [](Settings& s) { s.level.reset(); }},
      flag("cumulative", &Settings::cumulative),
      flag("optimize", &Settings::optimize),
      flag("force", &Settings::force),
      flag("delta", &Settings::delta),
      flag("encrypt", &Settings::encrypt),
      key_source("key_file", &engine::KeySource::key_file),
      key_source("passphrase_file", &engine::KeySource::passphrase_file),
      key_source("passphrase_env", &engine::KeySource::passphrase_env),
      flag("direct", &Settings::direct, true),
      {"sample", Type::text,
       [](Settings& s, const std::string& v) -> Result<void> {
         std::string t = v;
         if (!t.empty() && t.back() == '%') t.pop_back();
         char* end = nullptr;
         errno = 0;
         const double pct = t.empty() ? 0 : std::strtod(t.c_str(), &end);
         if (t.empty() || errno != 0 || end != t.c_str() + t.size() || !(pct > 0) || pct > 100)
           return fail(Errc::invalid_argument,
                       "option 'sample' wants a share above 0 and at most 100%, like 10%; got '" +
                           v + "'");
         s.sample = pct / 100;
         return ok();
       },
       [](Settings& s) { s.sample.reset(); }},
      {"seed", Type::integer,
       [](Settings& s, const std::string& v) -> Result<void> {
         SB_ASSIGN(uint64_t n, unsigned_of("seed", v, 0, UINT64_MAX));
         s.seed = n;
         return ok();
       },
       [](Settings& s) { s.seed.reset(); }},
      count("progress_interval_ms", &Settings::progress_interval_ms, 100, 60000, 250),
      flag("status_file", &Settings::status_file, /*dflt=*/true),
      flag("nfs_tune_malloc", &Settings::nfs_tune_malloc),
  };
  return k;
}

const Key* find_key(const char* name) {
  for (const auto& k : keys())
    if (std::string_view(k.name) == name) return &k;
  return nullptr;
}

sb_status set_checked(sb_options* opts, const char* key, const std::string& value, Type given) {
  if (opts == nullptr || opts->h.kind != Kind::options) return SB_INVALID_ARGUMENT;
  if (key == nullptr) return fail_with(opts->h, SB_INVALID_ARGUMENT, "option key is null");
  const Key* k = find_key(key);
  if (k == nullptr)
    return fail_with(opts->h, SB_INVALID_ARGUMENT, "unknown option '" + std::string(key) + "'");
  if (given == Type::integer && k->type != Type::integer)
    return fail_with(opts->h, SB_INVALID_ARGUMENT,
                     "option '" + std::string(key) + "' is not a number: use sb_options_set");
  if (given == Type::boolean && k->type != Type::boolean)
    return fail_with(opts->h, SB_INVALID_ARGUMENT,
                     "option '" + std::string(key) + "' is not a boolean: use sb_options_set");
  Settings next = opts->s;
  if (auto r = k->set(next, value); !r) return fail_with(opts->h, r.error());
  opts->s = std::move(next);
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

Header* header_of(sb_options* o) {
  return o != nullptr && o->h.kind == Kind::options ? &o->h : nullptr;
}

}  // namespace

bool is_option_key(std::string_view name) {
  for (const auto& k : keys())
    if (name == k.name) return true;
  return false;
}

}  // namespace stripeback::capi

using stripeback::capi::guarded;
using stripeback::capi::Kind;
using stripeback::capi::Type;

extern "C" {

sb_options* sb_options_new(void) {
  try {
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
    return stripeback::capi::set_checked(opts, key, value ? value : "", Type::text);
  });
}

sb_status sb_options_set_int(sb_options* opts, const char* key, int64_t value) {
  return guarded(stripeback::capi::header_of(opts), [&] {
    return stripeback::capi::set_checked(opts, key, std::to_string(value), Type::integer);
  });
}

sb_status sb_options_set_bool(sb_options* opts, const char* key, int value) {
  return guarded(stripeback::capi::header_of(opts), [&] {
    return stripeback::capi::set_checked(opts, key, value ? "true" : "false", Type::boolean);
  });
}

sb_status sb_options_unset(sb_options* opts, const char* key) {
  return guarded(stripeback::capi::header_of(opts), [&] {
    if (opts == nullptr || opts->h.kind != Kind::options) return SB_INVALID_ARGUMENT;
    const auto* k = key ? stripeback::capi::find_key(key) : nullptr;
    if (k == nullptr)
      return stripeback::capi::fail_with(opts->h, SB_INVALID_ARGUMENT,
                                         "unknown option '" + std::string(key ? key : "(null)") + "'");
    k->reset(opts->s);
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
    if (name == "file" || name == "nfs" || name == "tape")
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
