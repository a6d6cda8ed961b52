// Both engines must behave identically, so every test here runs against each of them.
#include "storage/async/io_engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <vector>

#include "storage/async/buffer_pool.h"
#include "storage/async/file.h"
#include "tests/support/temp_dir.h"

namespace stripeback::io {
namespace {

using namespace std::chrono_literals;
using stripeback::testing::TempDir;

constexpr uint32_t kMiB = 1u << 20;

enum class Kind { uring, sync };

std::vector<std::byte> pattern(size_t size, uint32_t seed) {
  std::vector<std::byte> out(size);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : out) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return out;
}

// Reaps (in batches of 8, smaller than most submissions) until `n` completions arrived.
std::map<uint64_t, IoCompletion> reap_all(IoEngine& engine, size_t n) {
  std::map<uint64_t, IoCompletion> got;
  std::vector<IoCompletion> batch(8);
  const auto until = Clock::now() + 20s;
  while (got.size() < n && Clock::now() < until) {
    const size_t k = engine.reap(batch, 1, until);
    for (size_t i = 0; i < k; ++i) got.emplace(batch[i].tag, std::move(batch[i]));
  }
  return got;
}

// Checks that a completion transferred `n` bytes, showing its error if it failed.
void expect_bytes(const IoCompletion& c, uint32_t n) {
  if (!c.result.has_value()) {
    ADD_FAILURE() << "tag " << c.tag << ": " << c.result.error().what;
    return;
  }
  EXPECT_EQ(*c.result, n) << "tag " << c.tag;
}

class EngineTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::uring) {
      auto probe = make_uring_engine(EngineOptions{});
      // A sandbox that forbids io_uring is an environment limit, not a bug in the engine.
      if (!probe.has_value() &&
          (probe.error().sys_errno == ENOSYS || probe.error().sys_errno == EPERM)) {
        GTEST_SKIP() << probe.error().what;
      }
    }
    engine_ = make(64);
  }

  std::unique_ptr<IoEngine> make(unsigned depth) {
    if (GetParam() == Kind::sync) return make_sync_engine();
    auto engine = make_uring_engine(EngineOptions{depth});
    if (!engine.has_value()) {
      ADD_FAILURE() << engine.error().what;
      return nullptr;
    }
    return std::move(engine).value();
  }

  TempDir dir_{"sbio"};
  std::unique_ptr<IoEngine> engine_;
};

TEST_P(EngineTest, WritesAndReadsManyInFlight) {
  ASSERT_NE(engine_, nullptr);
  const std::string path = dir_ / "data";
  const size_t size = 6 * kMiB + 12345;
  std::vector<std::byte> src = pattern(size, 7);

  auto out = create_exclusive(path, 0600, Direct::no);
  ASSERT_TRUE(out.has_value()) << out.error().what;
  // Back to front, so the writes are really at scattered offsets, not an append.
  std::vector<IoOp> writes;
  for (size_t off = 0; off < size; off += kMiB) {
    const auto len = static_cast<uint32_t>(std::min<size_t>(kMiB, size - off));
    writes.insert(writes.begin(),
                  IoOp{OpKind::write, out->fd.get(), off, src.data() + off, len, off});
  }
  ASSERT_TRUE(engine_->submit(writes).has_value());
  auto written = reap_all(*engine_, writes.size());
  ASSERT_EQ(written.size(), writes.size());
  for (const IoOp& w : writes) {
    expect_bytes(written.at(w.tag), w.len);
    EXPECT_EQ(written.at(w.tag).kind, OpKind::write);
  }
  EXPECT_EQ(engine_->in_flight(), 0u);
  EXPECT_EQ(stripeback::testing::read_file(path).size(), size);

  // Odd-sized reads, so chunk boundaries never line up with the writes.
  auto in = open_read(path, Direct::no);
  ASSERT_TRUE(in.has_value()) << in.error().what;
  std::vector<std::byte> back(size);
  std::vector<IoOp> reads;
  const size_t chunk = 300'001;
  for (size_t off = 0; off < size; off += chunk) {
    const auto len = static_cast<uint32_t>(std::min(chunk, size - off));
    reads.push_back(IoOp{OpKind::read, in->fd.get(), off, back.data() + off, len, off});
  }
  ASSERT_TRUE(engine_->submit(reads).has_value());
  EXPECT_EQ(engine_->in_flight(), reads.size());
  auto got = reap_all(*engine_, reads.size());
  ASSERT_EQ(got.size(), reads.size());
  for (const IoOp& r : reads) expect_bytes(got.at(r.tag), r.len);
  EXPECT_TRUE(std::memcmp(back.data(), src.data(), size) == 0);
}

TEST_P(EngineTest, DirectReadsEndWithShortTail) {
  ASSERT_NE(engine_, nullptr);
  const std::string path = dir_ / "odd";
  const uint64_t size = 3 * kMiB + 1000;  // not a multiple of 4096
  stripeback::testing::write_pattern_file(path, size, 11);
  const std::string expect = stripeback::testing::read_file(path);

  auto pool = BufferPool::create(4, kMiB, 0);
  ASSERT_TRUE(pool.has_value()) << pool.error().what;
  auto in = open_read(path, Direct::yes);
  ASSERT_TRUE(in.has_value()) << in.error().what;
  std::vector<IoOp> reads;
  for (uint32_t i = 0; i < 4; ++i) {
    const uint32_t slot = *pool->acquire();
    reads.push_back(
        IoOp{OpKind::read, in->fd.get(), uint64_t{i} * kMiB, pool->data(slot), kMiB, slot});
  }
  ASSERT_TRUE(engine_->submit(reads).has_value());
  auto got = reap_all(*engine_, reads.size());
  ASSERT_EQ(got.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    const uint32_t want = i < 3 ? kMiB : 1000;
    expect_bytes(got.at(reads[i].tag), want);
    EXPECT_TRUE(std::memcmp(reads[i].buf, expect.data() + reads[i].offset, want) == 0);
  }
}

TEST_P(EngineTest, ReadAtEndOfFileReturnsZero) {
  ASSERT_NE(engine_, nullptr);
  const std::string path = dir_ / "small";
  stripeback::testing::write_pattern_file(path, 100, 3);
  auto in = open_read(path, Direct::no);
  ASSERT_TRUE(in.has_value()) << in.error().what;
  std::vector<std::byte> buf(8192);
  const IoOp ops[] = {IoOp{OpKind::read, in->fd.get(), 100, buf.data(), 4096, 1},
                      IoOp{OpKind::read, in->fd.get(), 60, buf.data() + 4096, 4096, 2}};
  ASSERT_TRUE(engine_->submit(ops).has_value());
  auto got = reap_all(*engine_, 2);
  ASSERT_EQ(got.size(), 2u);
  expect_bytes(got.at(1), 0);
  expect_bytes(got.at(2), 40);
}

TEST_P(EngineTest, SyncsComplete) {
  ASSERT_NE(engine_, nullptr);
  auto out = create_exclusive(dir_ / "synced", 0600, Direct::no);
  ASSERT_TRUE(out.has_value()) << out.error().what;
  std::vector<std::byte> buf = pattern(8192, 5);
  const IoOp write = IoOp{OpKind::write, out->fd.get(), 0, buf.data(), 8192, 1};
  ASSERT_TRUE(engine_->submit({&write, 1}).has_value());
  ASSERT_EQ(reap_all(*engine_, 1).size(), 1u);
  const IoOp syncs[] = {IoOp{OpKind::fdatasync, out->fd.get(), 0, nullptr, 0, 2},
                        IoOp{OpKind::fsync, out->fd.get(), 0, nullptr, 0, 3}};
  ASSERT_TRUE(engine_->submit(syncs).has_value());
  auto got = reap_all(*engine_, 2);
  ASSERT_EQ(got.size(), 2u);
  expect_bytes(got.at(2), 0);
  expect_bytes(got.at(3), 0);
  EXPECT_EQ(got.at(2).kind, OpKind::fdatasync);
  EXPECT_EQ(got.at(3).kind, OpKind::fsync);
}

TEST_P(EngineTest, BadFdGivesErrorCompletion) {
  ASSERT_NE(engine_, nullptr);
  auto out = create_exclusive(dir_ / "wo", 0600, Direct::no);  // write-only
  ASSERT_TRUE(out.has_value()) << out.error().what;
  std::vector<std::byte> buf(4096);
  const IoOp ops[] = {IoOp{OpKind::read, out->fd.get(), 4096, buf.data(), 4096, 1},
                      IoOp{OpKind::fdatasync, -1, 0, nullptr, 0, 2}};
  ASSERT_TRUE(engine_->submit(ops).has_value());
  auto got = reap_all(*engine_, 2);
  ASSERT_EQ(got.size(), 2u);
  ASSERT_FALSE(got.at(1).result.has_value());
  EXPECT_EQ(got.at(1).result.error().sys_errno, EBADF);
  EXPECT_EQ(got.at(1).result.error().what, "read at offset 4096 failed: Bad file descriptor");
  ASSERT_FALSE(got.at(2).result.has_value());
  EXPECT_EQ(got.at(2).result.error().what, "fdatasync failed: Bad file descriptor");
  EXPECT_EQ(engine_->in_flight(), 0u);
}

TEST_P(EngineTest, ReapWithNothingInFlightReturnsAtOnce) {
  ASSERT_NE(engine_, nullptr);
  std::vector<IoCompletion> out(4);
  const auto start = Clock::now();
  EXPECT_EQ(engine_->reap(out, 0, Clock::now() + 50ms), 0u);
  EXPECT_EQ(engine_->reap(out, 1, Clock::now() + 5s), 0u);  // 1 > in_flight(): no wait
  EXPECT_LT(Clock::now() - start, 1s);
}

TEST_P(EngineTest, MoreOpsThanQueueDepth) {
  auto engine = make(4);
  ASSERT_NE(engine, nullptr);
  auto out = create_exclusive(dir_ / "many", 0600, Direct::no);
  ASSERT_TRUE(out.has_value()) << out.error().what;
  constexpr size_t kOps = 32;
  constexpr uint32_t kLen = 4096;
  std::vector<std::byte> src = pattern(kOps * kLen, 9), back(kOps * kLen);
  std::vector<IoOp> writes, reads;
  for (size_t i = 0; i < kOps; ++i) {
    writes.push_back(IoOp{OpKind::write, out->fd.get(), i * kLen, &src[i * kLen], kLen, i});
  }
  ASSERT_TRUE(engine->submit(writes).has_value());
  EXPECT_EQ(engine->in_flight(), kOps);
  auto written = reap_all(*engine, kOps);
  ASSERT_EQ(written.size(), kOps);
  for (const auto& [tag, c] : written) expect_bytes(c, kLen);

  auto in = open_read(dir_ / "many", Direct::no);
  ASSERT_TRUE(in.has_value()) << in.error().what;
  for (size_t i = 0; i < kOps; ++i) {
    reads.push_back(IoOp{OpKind::read, in->fd.get(), i * kLen, &back[i * kLen], kLen, i});
  }
  // In two halves, so the held FIFO is refilled while earlier ops are still running.
  ASSERT_TRUE(engine->submit({reads.data(), kOps / 2}).has_value());
  ASSERT_TRUE(engine->submit({reads.data() + kOps / 2, kOps / 2}).has_value());
  auto got = reap_all(*engine, kOps);
  ASSERT_EQ(got.size(), kOps);
  for (const auto& [tag, c] : got) expect_bytes(c, kLen);
  EXPECT_EQ(back, src);
  EXPECT_EQ(engine->in_flight(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Engines, EngineTest, ::testing::Values(Kind::uring, Kind::sync),
                         [](const ::testing::TestParamInfo<Kind>& param) {
                           return param.param == Kind::uring ? "uring" : "sync";
                         });

}  // namespace
}  // namespace stripeback::io
