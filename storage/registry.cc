#include "storage/registry.h"

#include <algorithm>

namespace stripeback::storage {
namespace {
thread_local std::shared_ptr<const Registry> thread_registry;
}  // namespace

void Registry::add(Backend b) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Backend& e) { return e.scheme == b.scheme; });
  if (it != entries_.end())
    *it = std::move(b);
  else
    entries_.push_back(std::move(b));
}

void Registry::add(std::string scheme, std::shared_ptr<Storage> st) {
  Backend b;
  b.scheme = scheme;
  Storage* raw = st.get();
  owned_.push_back(std::move(st));
  b.parse = [scheme](std::string_view text) -> Result<Location> {
    std::string_view rest = text.substr(scheme.size() + 3);
    if (has_component(rest, ".."))
      return invalid_location(text, "'..' is not allowed in the path");
    Location loc;
    loc.scheme = scheme;
    loc.path = absolute_path("", rest);
    return loc;
  };
  b.storage = [raw](const Location&) -> Result<Storage*> { return raw; };
  b.counted = raw;
  add(std::move(b));
}

const Backend* Registry::find(std::string_view scheme) const {
  for (const auto& e : entries_)
    if (e.scheme == scheme) return &e;
  return nullptr;
}

const Backend* Registry::find_by_prefix(std::string_view text) const {
  for (const auto& e : entries_)
    if (!e.scheme.empty() && text.starts_with(e.prefix())) return &e;
  return nullptr;
}

Registry& builtin_registry() {
  static Registry r;
  return r;
}

std::shared_ptr<const Registry> current_registry() { return thread_registry; }

ScopedRegistry::ScopedRegistry(std::shared_ptr<const Registry> r)
    : before_(std::move(thread_registry)) {
  thread_registry = std::move(r);
}

ScopedRegistry::~ScopedRegistry() { thread_registry = std::move(before_); }

const Backend* find_backend(std::string_view scheme) {
  if (thread_registry)
    if (const Backend* b = thread_registry->find(scheme)) return b;
  return builtin_registry().find(scheme);
}

const Backend* find_backend_by_prefix(std::string_view text) {
  if (thread_registry)
    if (const Backend* b = thread_registry->find_by_prefix(text)) return b;
  return builtin_registry().find_by_prefix(text);
}

Result<Storage*> registered_storage(const Location& at) {
  const Backend* b = find_backend(at.scheme);
  if (b == nullptr || !b->storage)
    return fail(Errc::invalid_argument, "no storage is registered for '" + at.str() + "'");
  return b->storage(at);
}

std::vector<Storage*> counted_storages() {
  std::vector<Storage*> out;
  auto add = [&](const Registry& r) {
    for (const auto& e : r.entries())
      if (e.counted && std::find(out.begin(), out.end(), e.counted) == out.end())
        out.push_back(e.counted);
  };
  add(builtin_registry());
  if (thread_registry) add(*thread_registry);
  return out;
}

std::string known_spellings() {
  std::vector<std::string> ex;
  for (const auto& e : builtin_registry().entries())
    if (!e.example.empty()) ex.push_back(e.example);
  std::string out;
  for (size_t i = 0; i < ex.size(); ++i)
    out += (i == 0 ? "" : i + 1 == ex.size() ? " or " : ", ") + ex[i];
  return out.empty() ? std::string("a path") : out;
}

}  // namespace stripeback::storage
