#include "storage/registry.h"

namespace stripeback::storage {
namespace {
thread_local std::shared_ptr<const Registry> thread_registry;
}  // namespace

std::shared_ptr<const Registry> current_registry() { return thread_registry; }

ScopedRegistry::ScopedRegistry(std::shared_ptr<const Registry> r)
    : before_(std::move(thread_registry)) {
  thread_registry = std::move(r);
}

ScopedRegistry::~ScopedRegistry() { thread_registry = std::move(before_); }

}  // namespace stripeback::storage
