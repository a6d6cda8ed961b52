// PathDirectory: a Directory made of a Storage's path operations on location.join(name),
// for media without directory handles (NFS through libnfs). Every name is one component;
// a subdirectory that is not a directory (a link, a file) is refused.
#pragma once

#include <memory>

#include "storage/storage.h"

namespace stripeback::storage {

std::unique_ptr<Directory> make_path_directory(Storage& st, Location at);

}  // namespace stripeback::storage
