// A caller's storage (sb_storage_ops) as a storage::Storage: registered per job under its
// scheme (storage/registry.h), it serves "scheme://..." as destination and source. I/O runs
// on the channel's thread at submit time (the functions block); completions are reaped from
// the loop as from any backend.
#pragma once

#include <memory>
#include <string>

#include "storage/storage.h"
#include "stripeback/stripeback.h"

namespace stripeback::capi {

std::shared_ptr<storage::Storage> make_callback_storage(std::string scheme, const sb_storage_ops& ops);

}  // namespace stripeback::capi
