// NfsEngine: io::IoEngine for the files of the NFS storage (nfs_fs.h): an op's `fd` is the
// file's NFS file id (target_of_id()). In an EngineQueue (io/engine_queue.h) it is that
// storage's queue on a thread's IoLoop, working on the calling thread's NFS connections.
//
// An op is split into requests of the negotiated size (readmax/writemax, at most
// options().max_request); up to options().inflight requests per connection are on the
// wire at once. A request that fails in transport (deadline, lost connection) is sent
// again on a fresh connection; ops fail only when a server made no progress for
// options().retry, with an error naming the server and the file. Reads copy from libnfs's
// buffer into the op's buffer (libnfs 4.0.0 cannot read into the caller's). Writes go
// UNSTABLE (FILE_SYNC with options().stable_writes) and complete only once a COMMIT with
// the verifier they were answered with made them durable; a COMMIT with another verifier
// (the server restarted) sends them again. fsync and fdatasync ops send COMMIT after the
// file's writes were answered. reap() never waits more than 100 ms without servicing the
// connections, and sleeps between reconnect attempts instead of spinning.
#pragma once

#include <memory>

#include "storage/async/io_engine.h"

namespace stripeback::nfs {

std::unique_ptr<io::IoEngine> make_nfs_engine();

}  // namespace stripeback::nfs

#if STRIPEBACK_TEST_HOOKS
namespace stripeback::nfs::test_hooks {

// The next COMMIT reply any engine of this process receives looks as if the server had
// restarted (another write verifier), so the writes it covers are sent again: the rewrite
// path, run against a server that does not restart. Once per call. Any thread.
void fake_verifier_change();

}  // namespace stripeback::nfs::test_hooks
#endif
