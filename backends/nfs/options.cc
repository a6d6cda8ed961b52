#include "backends/nfs/options.h"

namespace stripeback::nfs {
namespace {
NfsOptions g_options;
}

void set_options(const NfsOptions& opts) { g_options = opts; }
const NfsOptions& options() { return g_options; }

}  // namespace stripeback::nfs
