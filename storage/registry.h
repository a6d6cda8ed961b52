// Storages an embedding program supplies (the C API's sb_storage_ops), by scheme name:
// "mystore://a/b" is read as a Location of Scheme::custom when "mystore" is registered in
// the registry in force on the calling thread. A job installs its registry on every thread
// it starts (ScopedRegistry), so two jobs in one process each see their own; there is no
// process-wide registry.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "storage/storage.h"

namespace stripeback::storage {

class Registry {
 public:
  void add(std::string scheme, std::shared_ptr<Storage> st) { by_scheme_[std::move(scheme)] = std::move(st); }
  Storage* find(const std::string& scheme) const {
    auto it = by_scheme_.find(scheme);
    return it == by_scheme_.end() ? nullptr : it->second.get();
  }
  bool empty() const { return by_scheme_.empty(); }

 private:
  std::map<std::string, std::shared_ptr<Storage>> by_scheme_;
};

// The registry in force on this thread, or null.
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

}  // namespace stripeback::storage
