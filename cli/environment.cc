#include "cli/environment.h"

#include <cstdlib>
#include <string_view>

#include "storage/async/io_engine.h"

namespace stripeback::cli {

Result<void> apply_environment() {
  const char* io = std::getenv("STRIPEBACK_IO");
  if (io != nullptr && std::string_view(io) == "sync")
    io::set_engine_choice(io::EngineChoice::sync);
  return ok();
}

}  // namespace stripeback::cli
