// Decoding of WRITE and COMMIT replies taken from libnfs's RPC layer.
#include "backends/nfs/raw.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

namespace stripeback::nfs {
namespace {

TEST(NfsRaw, StatusesMapToErrnoAndName) {
  EXPECT_EQ(errno_of(NFS3_OK), 0);
  EXPECT_EQ(errno_of(NFS3ERR_NOSPC), ENOSPC);
  EXPECT_EQ(errno_of(NFS3ERR_DQUOT), EDQUOT);
  EXPECT_EQ(errno_of(NFS3ERR_ACCES), EACCES);
  EXPECT_EQ(errno_of(NFS3ERR_STALE), ESTALE);
  EXPECT_EQ(errno_of(NFS3ERR_SERVERFAULT), EIO);
  EXPECT_STREQ(name_of(NFS3ERR_NOSPC), "NFS3ERR_NOSPC");
  EXPECT_STREQ(name_of(NFS3ERR_JUKEBOX), "NFS3ERR_JUKEBOX");
}

TEST(NfsRaw, WriteReplyGivesCountStabilityAndVerifier) {
  WRITE3res res{};
  res.status = NFS3_OK;
  res.WRITE3res_u.resok.count = 65536;
  res.WRITE3res_u.resok.committed = UNSTABLE;
  std::memcpy(res.WRITE3res_u.resok.verf, "ABCDEFGH", NFS3_WRITEVERFSIZE);
  RawReply r = decode_write(RPC_STATUS_SUCCESS, &res);
  EXPECT_EQ(r.status, 65536);
  EXPECT_FALSE(r.stable);
  EXPECT_EQ(std::string(r.verf.data(), r.verf.size()), "ABCDEFGH");

  res.WRITE3res_u.resok.committed = FILE_SYNC;
  EXPECT_TRUE(decode_write(RPC_STATUS_SUCCESS, &res).stable);

  // A refusal is -errno with the status named; nothing else is read.
  WRITE3res full{};
  full.status = NFS3ERR_NOSPC;
  RawReply e = decode_write(RPC_STATUS_SUCCESS, &full);
  EXPECT_EQ(e.status, -ENOSPC);
  EXPECT_NE(e.error.find("NFS3ERR_NOSPC"), std::string::npos) << e.error;
}

TEST(NfsRaw, CommitReplyGivesTheVerifier) {
  COMMIT3res res{};
  res.status = NFS3_OK;
  std::memcpy(res.COMMIT3res_u.resok.verf, "12345678", NFS3_WRITEVERFSIZE);
  RawReply r = decode_commit(RPC_STATUS_SUCCESS, &res);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(std::string(r.verf.data(), r.verf.size()), "12345678");
}

TEST(NfsRaw, TransportFailuresLookLikeLibnfsFileApiErrors) {
  // is_transport_error() treats these as "send again on a fresh connection".
  char msg[] = "connection reset";
  RawReply err = decode_write(RPC_STATUS_ERROR, msg);
  EXPECT_EQ(err.status, -EFAULT);
  EXPECT_EQ(err.error, "connection reset");
  EXPECT_EQ(decode_commit(RPC_STATUS_TIMEOUT, nullptr).status, -EINTR);
  EXPECT_EQ(decode_commit(RPC_STATUS_CANCEL, nullptr).status, -EINTR);
}

}  // namespace
}  // namespace stripeback::nfs
