// What only the io_uring engine can show: ops that stay pending in the kernel. A pipe
// gives both an op that blocks and reads that come back short, which files rarely do.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "storage/async/file.h"
#include "storage/async/io_engine.h"

namespace stripeback::io {
namespace {

using namespace std::chrono_literals;

class UringTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto engine = make_uring_engine(EngineOptions{8});
    if (!engine.has_value()) {
      // A sandbox that forbids io_uring is an environment limit, not a bug in the engine.
      const int err = engine.error().sys_errno;
      if (err == ENOSYS || err == EPERM) GTEST_SKIP() << engine.error().what;
      FAIL() << engine.error().what;
    }
    engine_ = std::move(engine).value();
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    rd_ = UniqueFd(fds[0]);
    wr_ = UniqueFd(fds[1]);
  }

  IoOp pipe_read(uint64_t tag) {
    return IoOp{OpKind::read, rd_.get(), 0, reinterpret_cast<std::byte*>(buf_), sizeof buf_, tag};
  }

  UniqueFd rd_, wr_;
  char buf_[16] = {};
  std::unique_ptr<IoEngine> engine_;  // declared last: destroyed before the pipe and buffer
};

TEST_F(UringTest, ReapHonoursDeadlineAndContinuesShortReads) {
  const IoOp read = pipe_read(1);
  ASSERT_TRUE(engine_->submit({&read, 1}).has_value());
  std::vector<IoCompletion> out(1);
  auto start = Clock::now();
  EXPECT_EQ(engine_->reap(out, 1, start + 100ms), 0u);  // nothing in the pipe yet
  EXPECT_GE(Clock::now() - start, 100ms);
  EXPECT_LT(Clock::now() - start, 2s);

  ASSERT_EQ(::write(wr_.get(), "01234", 5), 5);  // a short read, continued for the rest
  start = Clock::now();
  EXPECT_EQ(engine_->reap(out, 1, start + 100ms), 0u);
  EXPECT_GE(Clock::now() - start, 100ms);
  EXPECT_EQ(engine_->in_flight(), 1u);

  ASSERT_EQ(::write(wr_.get(), "56789abcdef", 11), 11);
  ASSERT_EQ(engine_->reap(out, 1, Clock::now() + 5s), 1u);
  ASSERT_TRUE(out[0].result.has_value()) << out[0].result.error().what;
  EXPECT_EQ(*out[0].result, 16u);
  EXPECT_EQ(std::string(buf_, sizeof buf_), "0123456789abcdef");
  EXPECT_EQ(engine_->in_flight(), 0u);
}

TEST_F(UringTest, HeldOpsWaitForAFreeSlot) {
  // Eight reads fill the ring; the ninth is held until one of them completes.
  std::vector<IoOp> reads;
  for (uint64_t tag = 0; tag < 9; ++tag) reads.push_back(pipe_read(tag));
  ASSERT_TRUE(engine_->submit(reads).has_value());
  EXPECT_EQ(engine_->in_flight(), 9u);
  std::vector<IoCompletion> out(9);
  EXPECT_EQ(engine_->reap(out, 1, Clock::now() + 50ms), 0u);
  const std::string data(9 * sizeof buf_, 'x');
  ASSERT_EQ(::write(wr_.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  size_t got = 0;
  const auto until = Clock::now() + 5s;
  while (got < 9 && Clock::now() < until) got += engine_->reap({&out[got], 9 - got}, 1, until);
  ASSERT_EQ(got, 9u);
  for (const IoCompletion& c : out) {
    ASSERT_TRUE(c.result.has_value()) << c.result.error().what;
    EXPECT_EQ(*c.result, sizeof buf_);
  }
}

TEST_F(UringTest, DestroyingWithOpsPendingCancelsThem) {
  const IoOp read = pipe_read(1);
  ASSERT_TRUE(engine_->submit({&read, 1}).has_value());
  const auto start = Clock::now();
  engine_.reset();  // the read would otherwise wait forever: nothing writes to the pipe
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST(MakeEngine, HonoursTheProcessChoiceOfTheSyncEngine) {
  set_engine_choice(EngineChoice::sync);
  EXPECT_STREQ(make_engine(EngineOptions{})->name(), "sync");
  set_engine_choice(EngineChoice::automatic);
  const bool uring = make_uring_engine(EngineOptions{}).has_value();
  EXPECT_STREQ(make_engine(EngineOptions{})->name(), uring ? "io_uring" : "sync");
}

TEST(MakeEngine, ReadsNoEnvironment) {
  ASSERT_EQ(::setenv("STRIPEBACK_IO", "sync", 1), 0);
  const bool uring = make_uring_engine(EngineOptions{}).has_value();
  EXPECT_STREQ(make_engine(EngineOptions{})->name(), uring ? "io_uring" : "sync");
  ASSERT_EQ(::unsetenv("STRIPEBACK_IO"), 0);
}

TEST(MakeEngine, RejectsBadQueueDepth) {
  for (unsigned depth : {0u, 1u << 20}) {
    auto engine = make_uring_engine(EngineOptions{depth});
    ASSERT_FALSE(engine.has_value()) << depth;
    EXPECT_EQ(engine.error().code, Errc::invalid_argument);
  }
}

}  // namespace
}  // namespace stripeback::io
