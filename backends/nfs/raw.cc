#include "backends/nfs/raw.h"

#include <cerrno>
#include <cstring>

// libnfs declares struct nfs_fh (what nfs_get_fh() returns) without defining it: it is the
// file handle's length and bytes, stable across libnfs releases since the raw API exists.
struct nfs_fh {
  int len;
  char* val;
};

namespace stripeback::nfs {
namespace {

// A handle libnfs holds is at most NFS3_FHSIZE bytes; anything else means the layout
// above does not match the library.
bool handle_of(nfsfh* fh, nfs_fh3& out) {
  const nfs_fh* h = nfs_get_fh(fh);
  if (h == nullptr || h->len <= 0 || h->len > NFS3_FHSIZE || h->val == nullptr) return false;
  out.data.data_len = static_cast<u_int>(h->len);
  out.data.data_val = h->val;
  return true;
}

RawReply transport(int rpc_status, void* data) {
  RawReply r;
  // As libnfs's file API: an RPC error is -EFAULT, a cancelled or timed-out call -EINTR.
  r.status = rpc_status == RPC_STATUS_ERROR ? -EFAULT : -EINTR;
  if (rpc_status == RPC_STATUS_ERROR && data != nullptr) r.error = static_cast<const char*>(data);
  else if (rpc_status == RPC_STATUS_TIMEOUT) r.error = "request timed out";
  else if (r.error.empty()) r.error = "request cancelled";
  return r;
}

RawReply refused(nfsstat3 s) {
  RawReply r;
  r.status = -errno_of(s);
  r.error = std::string(name_of(s)) + " (" + std::strerror(errno_of(s)) + ")";
  return r;
}

}  // namespace

int errno_of(nfsstat3 s) {
  switch (s) {
    case NFS3_OK: return 0;
    case NFS3ERR_PERM: return EPERM;
    case NFS3ERR_NOENT: return ENOENT;
    case NFS3ERR_NXIO: return ENXIO;
    case NFS3ERR_ACCES: return EACCES;
    case NFS3ERR_EXIST: return EEXIST;
    case NFS3ERR_NOTDIR: return ENOTDIR;
    case NFS3ERR_ISDIR: return EISDIR;
    case NFS3ERR_INVAL: return EINVAL;
    case NFS3ERR_FBIG: return EFBIG;
    case NFS3ERR_NOSPC: return ENOSPC;
    case NFS3ERR_ROFS: return EROFS;
    case NFS3ERR_DQUOT: return EDQUOT;
    case NFS3ERR_STALE: return ESTALE;
    case NFS3ERR_NOTSUPP: return EOPNOTSUPP;
    case NFS3ERR_JUKEBOX: return EAGAIN;
    default: return EIO;
  }
}

const char* name_of(nfsstat3 s) {
  switch (s) {
    case NFS3_OK: return "NFS3_OK";
    case NFS3ERR_PERM: return "NFS3ERR_PERM";
    case NFS3ERR_NOENT: return "NFS3ERR_NOENT";
    case NFS3ERR_IO: return "NFS3ERR_IO";
    case NFS3ERR_NXIO: return "NFS3ERR_NXIO";
    case NFS3ERR_ACCES: return "NFS3ERR_ACCES";
    case NFS3ERR_EXIST: return "NFS3ERR_EXIST";
    case NFS3ERR_NOTDIR: return "NFS3ERR_NOTDIR";
    case NFS3ERR_ISDIR: return "NFS3ERR_ISDIR";
    case NFS3ERR_INVAL: return "NFS3ERR_INVAL";
    case NFS3ERR_FBIG: return "NFS3ERR_FBIG";
    case NFS3ERR_NOSPC: return "NFS3ERR_NOSPC";
    case NFS3ERR_ROFS: return "NFS3ERR_ROFS";
    case NFS3ERR_DQUOT: return "NFS3ERR_DQUOT";
    case NFS3ERR_STALE: return "NFS3ERR_STALE";
    case NFS3ERR_BADHANDLE: return "NFS3ERR_BADHANDLE";
    case NFS3ERR_NOTSUPP: return "NFS3ERR_NOTSUPP";
    case NFS3ERR_SERVERFAULT: return "NFS3ERR_SERVERFAULT";
    case NFS3ERR_JUKEBOX: return "NFS3ERR_JUKEBOX";
    default: return "NFS3ERR";
  }
}

RawReply decode_write(int rpc_status, void* data) {
  if (rpc_status != RPC_STATUS_SUCCESS) return transport(rpc_status, data);
  const auto* res = static_cast<const WRITE3res*>(data);
  if (res->status != NFS3_OK) return refused(res->status);
  const WRITE3resok& ok = res->WRITE3res_u.resok;
  RawReply r;
  r.status = static_cast<int>(ok.count);
  r.stable = ok.committed == FILE_SYNC;
  std::memcpy(r.verf.data(), ok.verf, r.verf.size());
  return r;
}

RawReply decode_commit(int rpc_status, void* data) {
  if (rpc_status != RPC_STATUS_SUCCESS) return transport(rpc_status, data);
  const auto* res = static_cast<const COMMIT3res*>(data);
  if (res->status != NFS3_OK) return refused(res->status);
  RawReply r;
  std::memcpy(r.verf.data(), res->COMMIT3res_u.resok.verf, r.verf.size());
  return r;
}

int send_write(nfs_context* nfs, nfsfh* fh, uint64_t offset, uint32_t len, const std::byte* buf,
               bool stable, rpc_cb cb, void* priv) {
  WRITE3args a{};
  if (!handle_of(fh, a.file)) return -1;
  a.offset = offset;
  a.count = len;
  a.stable = stable ? FILE_SYNC : UNSTABLE;
  a.data.data_len = len;
  // Encoded (copied into the request) before this returns.
  a.data.data_val = const_cast<char*>(reinterpret_cast<const char*>(buf));
  return rpc_nfs3_write_async(nfs_get_rpc_context(nfs), cb, &a, priv);
}

int send_commit(nfs_context* nfs, nfsfh* fh, rpc_cb cb, void* priv) {
  COMMIT3args a{};
  if (!handle_of(fh, a.file)) return -1;
  a.offset = 0;
  a.count = 0;  // the whole file
  return rpc_nfs3_commit_async(nfs_get_rpc_context(nfs), cb, &a, priv);
}

}  // namespace stripeback::nfs
