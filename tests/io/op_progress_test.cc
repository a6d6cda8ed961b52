// The partial-transfer rules both engines share, driven with scripted kernel results,
// including ones a local file system rarely produces.
#include "storage/async/op_progress.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <optional>

namespace stripeback::io::detail {
namespace {

OpProgress op(OpKind kind, uint32_t len) {
  static std::byte buf[64];
  return OpProgress{IoOp{kind, 3, 100, buf, len, 42}};
}

// The byte count of a finished op; fails the test and returns a sentinel otherwise.
uint32_t bytes(const std::optional<IoCompletion>& done) {
  if (!done.has_value()) {
    ADD_FAILURE() << "op not finished";
    return UINT32_MAX;
  }
  if (!done->result.has_value()) {
    ADD_FAILURE() << done->result.error().what;
    return UINT32_MAX;
  }
  return *done->result;
}

// The error of a finished, failed op; fails the test and returns an empty Error otherwise.
Error error(const std::optional<IoCompletion>& done) {
  if (!done.has_value() || done->result.has_value()) {
    ADD_FAILURE() << "op did not fail";
    return Error{};
  }
  return done->result.error();
}

TEST(OpProgress, ShortTransfersContinueWithTheRemainder) {
  OpProgress p = op(OpKind::write, 10);
  EXPECT_FALSE(apply_result(p, 4).has_value());
  EXPECT_EQ(p.next_offset(), 104u);
  EXPECT_EQ(p.next_buf(), p.op.buf + 4);
  EXPECT_EQ(p.remaining(), 6u);
  auto done = apply_result(p, 6);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->tag, 42u);
  EXPECT_EQ(done->kind, OpKind::write);
  EXPECT_EQ(bytes(done), 10u);
}

TEST(OpProgress, EagainAndEintrRetryWithoutProgress) {
  OpProgress p = op(OpKind::read, 10);
  EXPECT_FALSE(apply_result(p, -EAGAIN).has_value());
  EXPECT_FALSE(apply_result(p, -EINTR).has_value());
  EXPECT_EQ(p.done, 0u);
  EXPECT_EQ(bytes(apply_result(p, 10)), 10u);
}

TEST(OpProgress, EndlessEagainBecomesAnError) {
  OpProgress p = op(OpKind::read, 10);
  std::optional<IoCompletion> done;
  for (int i = 0; i < 100000 && !done; ++i) done = apply_result(p, -EAGAIN);
  EXPECT_EQ(error(done).code, Errc::busy);
  EXPECT_EQ(error(done).sys_errno, EAGAIN);
}

TEST(OpProgress, ReadOfZeroIsEndOfFile) {
  OpProgress at_eof = op(OpKind::read, 10);
  EXPECT_EQ(bytes(apply_result(at_eof, 0)), 0u);
  OpProgress partial = op(OpKind::read, 10);
  EXPECT_FALSE(apply_result(partial, 3).has_value());
  EXPECT_EQ(bytes(apply_result(partial, 0)), 3u);
}

TEST(OpProgress, EinvalAfterPartialReadIsEndOfFile) {
  OpProgress partial = op(OpKind::read, 10);
  EXPECT_FALSE(apply_result(partial, 3).has_value());
  EXPECT_EQ(bytes(apply_result(partial, -EINVAL)), 3u);

  OpProgress first = op(OpKind::read, 10);
  EXPECT_EQ(error(apply_result(first, -EINVAL)).what,
            "read at offset 100 failed: Invalid argument");
}

TEST(OpProgress, ErrorsNameTheFailingOffset) {
  OpProgress p = op(OpKind::write, 10);
  EXPECT_FALSE(apply_result(p, 4).has_value());
  const Error failed = error(apply_result(p, -ENOSPC));
  EXPECT_EQ(failed.code, Errc::no_space);
  EXPECT_EQ(failed.what, "write at offset 104 failed: No space left on device");

  OpProgress stuck = op(OpKind::write, 10);
  EXPECT_EQ(error(apply_result(stuck, 0)).what, "write at offset 100 failed: no bytes written");
}

TEST(OpProgress, Syncs) {
  OpProgress ok = op(OpKind::fsync, 0);
  EXPECT_EQ(bytes(apply_result(ok, 0)), 0u);
  OpProgress bad = op(OpKind::fdatasync, 0);
  EXPECT_EQ(error(apply_result(bad, -EIO)).what, "fdatasync failed: Input/output error");
}

TEST(OpProgress, EmptyTransfersCompleteAtOnce) {
  OpProgress read = op(OpKind::read, 0);
  EXPECT_EQ(bytes(apply_result(read, 0)), 0u);
  OpProgress write = op(OpKind::write, 0);
  EXPECT_EQ(bytes(apply_result(write, 0)), 0u);
}

}  // namespace
}  // namespace stripeback::io::detail
