#include "cli/environment.h"

#include <cstdlib>
#include <string>
#include <string_view>

#include "storage/async/io_engine.h"
#if STRIPEBACK_TEST_HOOKS
#include "engine/wiring/backends.h"
#include "util/clock.h"
#include "util/crash_point.h"
#if STRIPEBACK_WITH_NFS
#include "backends/nfs/nfs_engine.h"
#endif
#endif

namespace stripeback::cli {
namespace {

#if STRIPEBACK_TEST_HOOKS
#if STRIPEBACK_WITH_NFS
Result<void> fake_nfs_verifier_change(std::string_view value) {
  if (value == "0") return ok();
  if (value != "1")
    return fail(Errc::invalid_argument,
                "'" + std::string(value) + "' is neither 1 (fake one NFS server restart) nor 0");
  nfs::test_hooks::fake_verifier_change();
  return ok();
}
#endif

// Each test hook's variable, with the same name and grammar as when the library read them
// itself, so the tests and the reliability harness set them unchanged.
struct TestHook {
  const char* variable;
  Result<void> (*install)(std::string_view value);
};

constexpr TestHook kTestHooks[] = {
    {"STRIPEBACK_CRASH_AT", util::test_hooks::set_crash_at},
    {"STRIPEBACK_FAKE_NOW", util::test_hooks::set_fake_now},
    {"STRIPEBACK_FAULTS", engine::test_hooks::set_faults},
#if STRIPEBACK_WITH_NFS
    {"STRIPEBACK_TEST_NFS_VERIFIER_CHANGE", fake_nfs_verifier_change},
#endif
};
#endif

}  // namespace

Result<void> apply_environment() {
#if STRIPEBACK_TEST_HOOKS
  for (const TestHook& h : kTestHooks) {
    const char* value = std::getenv(h.variable);
    if (value == nullptr || *value == '\0') continue;
    if (auto r = h.install(value); !r) return fail(r.error().wrap(h.variable));
  }
#endif
  const char* io = std::getenv("STRIPEBACK_IO");
  if (io != nullptr && std::string_view(io) == "sync")
    io::set_engine_choice(io::EngineChoice::sync);
  return ok();
}

}  // namespace stripeback::cli
