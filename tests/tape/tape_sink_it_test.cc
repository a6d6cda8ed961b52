// The engine's tape path against tgtd: frame writes completed out of order reach the tape
// in piece order; a write whose predecessor never comes fails instead of hanging.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "engine/ordering_engine.h"
#include "engine/tape_sink.h"
#include "tape/label.h"
#include "tests/support/tape_server.h"

namespace stripeback::engine {
namespace {

using stripeback::testing::TapeServer;

const bool kConfigured = [] {
  TapeServer::configure({.drives = 1, .size_mib = 16});
  return true;
}();

std::vector<std::byte> piece_bytes(size_t n) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 2654435761u) >> 13);
  return v;
}

class TapeSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& urls = TapeServer::urls();
    if (urls.empty()) GTEST_SKIP() << TapeServer::skip_reason();
    url = urls[0];
    auto d = tape::TapeDrive::open(url);
    ASSERT_TRUE(d) << d.error().what;
    ASSERT_TRUE((*d)->wait_ready(std::chrono::seconds(5)));
    ASSERT_TRUE(tape::write_label(**d, tape::VolumeLabel{"SINK1", kBs, 1, 0}));
    d->reset();
    auto vol = tape::open_volume_for_write(url, kBs, {}, std::chrono::seconds(5));
    ASSERT_TRUE(vol) << vol.error().what;
    sink = std::make_unique<TapeChannelSink>(std::move(*vol), nullptr, kBs, 4,
                                             tape::TapeIoHelper::Mode::async);
    eng = std::make_unique<OrderingEngine>(io::make_sync_engine());
  }
  static constexpr uint32_t kBs = 65536;
  std::string url;
  std::unique_ptr<TapeChannelSink> sink;
  std::unique_ptr<OrderingEngine> eng;
};

TEST_F(TapeSinkTest, OutOfOrderWritesReachTheTapeInPieceOrder) {
  const size_t frame = 300 * 1024, frames = 12;
  auto bytes = piece_bytes(4096 + frames * frame + 8192);
  auto out = sink->open_piece({9, 1, 1}, "piece-a");
  ASSERT_TRUE(out) << out.error().what;
  eng->route(**out);
  ASSERT_TRUE((*out)->write_at(0, {bytes.data(), 4096}));
  // Frames submitted in a scrambled order, as io_uring may complete them.
  std::vector<size_t> order(frames);
  for (size_t i = 0; i < frames; ++i) order[i] = (i * 5 + 3) % frames;
  std::vector<io::IoOp> ops;
  for (size_t i : order)
    ops.push_back({io::OpKind::write, (*out)->fd(), 4096 + i * frame, bytes.data() + 4096 + i * frame,
                   static_cast<uint32_t>(frame), i});
  // The first half arrives alone: those after a missing frame are held, not written.
  ASSERT_TRUE(eng->submit({ops.data(), frames / 2}));
  EXPECT_GT((*out)->held(), 0u);
  ASSERT_TRUE(eng->submit({ops.data() + frames / 2, frames - frames / 2}));
  EXPECT_EQ((*out)->held(), 0u);
  std::vector<io::IoCompletion> comps(32);
  size_t got = eng->reap(comps, frames, io::Clock::now() + std::chrono::seconds(5));
  ASSERT_EQ(got, frames);
  for (size_t i = 0; i < got; ++i) ASSERT_TRUE(comps[i].result) << comps[i].result.error().what;
  EXPECT_EQ(eng->in_flight(), 0u);
  ASSERT_TRUE((*out)->write_at(4096 + frames * frame, {bytes.data() + 4096 + frames * frame, 8192}));
  ASSERT_TRUE((*out)->commit());
  auto loc = *(*out)->location();
  EXPECT_EQ(loc.bytes, bytes.size());
  sink.reset();

  auto vol = tape::open_volume_for_read(url, "SINK1");
  ASSERT_TRUE(vol) << vol.error().what;
  std::vector<std::byte> back;
  auto r = tape::read_stream(loc, {9, 1, 1}, [&](const tape::Span&) -> Result<tape::Volume*> { return vol->get(); },
                             [&](std::span<const uint8_t> b) -> Result<void> {
                               const auto* p = reinterpret_cast<const std::byte*>(b.data());
                               back.insert(back.end(), p, p + b.size());
                               return ok();
                             });
  ASSERT_TRUE(r) << r.error().what;
  ASSERT_EQ(back.size(), bytes.size());
  EXPECT_TRUE(back == bytes);
}

TEST_F(TapeSinkTest, AWriteWhosePredecessorNeverComesFails) {
  auto bytes = piece_bytes(4096 + 3 * 8192);
  auto out = sink->open_piece({9, 1, 1}, "piece-b");
  ASSERT_TRUE(out);
  eng->route(**out);
  ASSERT_TRUE((*out)->write_at(0, {bytes.data(), 4096}));
  io::IoOp late{io::OpKind::write, (*out)->fd(), 4096 + 8192, bytes.data() + 4096 + 8192, 8192, 77};
  ASSERT_TRUE(eng->submit({&late, 1}));
  EXPECT_EQ(eng->in_flight(), 1u);
  std::vector<io::IoCompletion> comps(4);
  size_t got = eng->reap(comps, 1, io::Clock::now() + std::chrono::seconds(1));
  ASSERT_EQ(got, 1u);
  EXPECT_EQ(comps[0].tag, 77u);
  ASSERT_FALSE(comps[0].result);
  EXPECT_NE(comps[0].result.error().what.find("never came"), std::string::npos);
  EXPECT_FALSE((*out)->commit());
}

}  // namespace
}  // namespace stripeback::engine
