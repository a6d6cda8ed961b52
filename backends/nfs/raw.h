// NFSv3 WRITE and COMMIT through libnfs's RPC layer, for what its file API hides: the
// stable_how of each write and the write verifiers of WRITE and COMMIT replies.
#pragma once

#include <sys/time.h>  // libnfs.h needs struct timeval first
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#include <array>
#include <cstdint>
#include <string>

#include "stripeback/result.h"

namespace stripeback::nfs {

using Verifier = std::array<char, NFS3_WRITEVERFSIZE>;

// What a WRITE or COMMIT reply said, in the file API's terms: status is a byte count
// (WRITE), 0 (COMMIT) or -errno; on a transport failure -EFAULT/-EINTR, as libnfs reports.
struct RawReply {
  int status = 0;
  std::string error;      // when status < 0
  bool stable = false;    // WRITE: the server answered FILE_SYNC
  Verifier verf{};        // WRITE and COMMIT
};

// The errno for an NFSv3 status and its name ("NFS3ERR_NOSPC").
int errno_of(nfsstat3 s);
const char* name_of(nfsstat3 s);

// Decodes the arguments of an rpc_cb for a WRITE or a COMMIT.
RawReply decode_write(int rpc_status, void* data);
RawReply decode_commit(int rpc_status, void* data);

// Queue a WRITE (stable: FILE_SYNC, else UNSTABLE) or a COMMIT of the whole file on the
// context's RPC connection; 0 when queued, as libnfs's own calls.
int send_write(nfs_context* nfs, nfsfh* fh, uint64_t offset, uint32_t len, const std::byte* buf,
               bool stable, rpc_cb cb, void* priv);
int send_commit(nfs_context* nfs, nfsfh* fh, rpc_cb cb, void* priv);

}  // namespace stripeback::nfs
