#include "cli/nfs_flags.h"

#if STRIPEBACK_WITH_NFS
#include "backends/nfs/nfs_fs.h"
#include "backends/nfs/options.h"
#endif
#include "util/units.h"

namespace stripeback::cli {

void add_nfs_flags(CLI::App* app, NfsFlags& f) {
#if !STRIPEBACK_WITH_NFS
  // No NFS client in this build: its flags are not offered; an nfs:// location is refused
  // by the engine with the reason.
  (void)app;
  (void)f;
#else
  const nfs::NfsOptions d;
  app->add_option("--nfs-inflight", f.inflight,
                  "NFS READ/WRITE requests in flight per channel (default " +
                      std::to_string(d.inflight) + ")")
      ->check(CLI::Range(1, 64))
      ->group("NFS (nfs:// URLs)");
  app->add_option("--nfs-timeout", f.timeout,
                  "deadline of every NFS request, e.g. 500ms, 10s (default " +
                      std::to_string(d.timeout.count() / 1000) + "s)")
      ->group("NFS (nfs:// URLs)");
  app->add_option("--nfs-retry", f.retry,
                  "how long a channel reconnects to a server that stopped answering before "
                  "the job fails, e.g. 30s, 2m (default " +
                      std::to_string(d.retry.count() / 1000) + "s)")
      ->group("NFS (nfs:// URLs)");
  app->add_flag("--nfs-stable-writes", f.stable_writes,
                "send every WRITE as FILE_SYNC (durable when answered) instead of the default "
                "UNSTABLE writes made durable by COMMIT with the write verifier checked")
      ->group("NFS (nfs:// URLs)");
#endif
}

Result<void> apply_nfs_flags(const NfsFlags& f, const std::atomic<bool>* cancel) {
#if !STRIPEBACK_WITH_NFS
  (void)f;
  (void)cancel;
  return ok();
#else
  nfs::NfsOptions o = nfs::options();
  o.cancel = cancel;
  o.tune_malloc = true;
  if (f.inflight) o.inflight = f.inflight;
  if (f.stable_writes) o.stable_writes = true;
  if (!f.timeout.empty()) {
    SB_ASSIGN(o.timeout, util::parse_interval(f.timeout, "--nfs-timeout"));
  }
  if (!f.retry.empty()) {
    SB_ASSIGN(o.retry, util::parse_interval(f.retry, "--nfs-retry"));
  }
  nfs::set_options(o);
  return ok();
#endif
}

}  // namespace stripeback::cli
