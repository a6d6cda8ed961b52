// The backend registry: one entry per storage backend, each with its scheme, its own
// location grammar and the storage that serves its locations. The backends built into the
// library are registered once, in one list (engine/wiring/backends.cc: one line
// each); a storage an embedding program supplies (the C API's sb_storage_ops) is an entry
// of the same kind in a registry the job installs on every thread it starts
// (ScopedRegistry), so two jobs in one process each see their own. Lookups try the
// calling thread's registry first, then the built-ins.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/storage.h"

namespace stripeback::storage {

struct Backend {
  std::string scheme;  // "nfs", "tape", an embedder's name
  // How its locations are spelled: "scheme://..." (URL form) or, with `opaque`,
  // "scheme:..." (a drive address: tape:/dev/sg0).
  bool opaque = false;
  // Its grammar: `text` (which starts with the scheme's prefix) as a Location of this
  // scheme, or invalid_argument naming the text and what is wrong.
  std::function<Result<Location>(std::string_view text)> parse;
  // The storage serving its locations; an error for locations that are not files or
  // directories (a drive of removable media is opened as a destination instead) or for a
  // backend left out of this build.
  std::function<Result<Storage*>(const Location& at)> storage;
  // The storage whose per-thread counters a channel collects (null: none).
  Storage* counted = nullptr;
  // For messages that list what is accepted ("nfs://host/path").
  std::string example;

  std::string prefix() const { return scheme + (opaque ? ":" : "://"); }
};

class Registry {
 public:
  // Adds `b`, replacing an entry of the same scheme.
  void add(Backend b);
  // An embedder's storage under `scheme`: locations "scheme://a/b" (path "/a/b") are served
  // by `st`.
  void add(std::string scheme, std::shared_ptr<Storage> st);
  const Backend* find(std::string_view scheme) const;
  // The entry whose prefix `text` starts with.
  const Backend* find_by_prefix(std::string_view text) const;
  const std::vector<Backend>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<Backend> entries_;
  std::vector<std::shared_ptr<Storage>> owned_;
};

// The backends built into this library (filled once, at start-up, by the wiring room).
Registry& builtin_registry();

// The registry a job installed on this thread, or null.
std::shared_ptr<const Registry> current_registry();

class ScopedRegistry {
 public:
  explicit ScopedRegistry(std::shared_ptr<const Registry> r);
  ~ScopedRegistry();
  ScopedRegistry(const ScopedRegistry&) = delete;
  ScopedRegistry& operator=(const ScopedRegistry&) = delete;

 private:
  std::shared_ptr<const Registry> before_;
};

// Lookups in force on this thread: its registry first, then the built-ins.
const Backend* find_backend(std::string_view scheme);
const Backend* find_backend_by_prefix(std::string_view text);
// The storage serving `at`: local paths by the "" entry, the rest by their scheme's.
Result<Storage*> registered_storage(const Location& at);
// Every storage whose counters a channel collects (built-ins and this thread's).
std::vector<Storage*> counted_storages();
// "nfs://host/path or tape:..." from the registered backends' examples.
std::string known_spellings();

}  // namespace stripeback::storage
