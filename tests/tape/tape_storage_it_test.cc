// Tape as a Storage against tgtd: writes submitted out of order reach the tape in file
// order; a write whose predecessor never comes fails instead of hanging; a stream reads
// back in order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "storage/io_loop.h"
#include "backends/tape/label.h"
#include "backends/tape/tape_storage.h"
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

class TapeStorageTest : public ::testing::Test {
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
    st = tape::make_tape_storage(std::move(*vol), nullptr, {kBs, 4, tape::TapeIoHelper::Mode::async});
    EXPECT_TRUE(st->caps().sequential_only);
    EXPECT_FALSE(st->caps().random_read);
    EXPECT_TRUE(st->caps().removable);
  }
  Result<std::unique_ptr<storage::WriteFile>> create(const std::string& name) {
    auto at = storage::Location::parse("tape:" + url);
    if (!at) return at.error();
    storage::CreateOptions o;
    o.set_id = 9;
    o.channel = 1;
    o.number = 1;
    return st->create(at->join(name), o);
  }
  static constexpr uint32_t kBs = 65536;
  std::string url;
  std::unique_ptr<storage::Storage> st;
};

TEST_F(TapeStorageTest, OutOfOrderWritesReachTheTapeInFileOrder) {
  const size_t frame = 300 * 1024, frames = 12;
  auto bytes = piece_bytes(4096 + frames * frame + 8192);
  storage::IoLoop loop;  // outlives the files that queue on it
  auto out = create("piece-a");
  ASSERT_TRUE(out) << out.error().what;
  storage::WriteFile* f = out->get();
  ASSERT_TRUE(f->write_at(bytes.data(), 4096, 0));
  // Frames submitted in a scrambled order, as io_uring may complete them.
  std::vector<size_t> order(frames);
  for (size_t i = 0; i < frames; ++i) order[i] = (i * 5 + 3) % frames;
  std::vector<storage::Request> rs;
  for (size_t i : order)
    rs.push_back({f, storage::OpKind::write, 4096 + i * frame, bytes.data() + 4096 + i * frame,
                  static_cast<uint32_t>(frame), i});
  // The first half arrives alone: those after a missing frame are held, not written.
  ASSERT_TRUE(loop.submit({rs.data(), frames / 2}));
  std::vector<storage::Completion> comps(32);
  size_t early = loop.reap(comps, 0, storage::Clock::now());
  EXPECT_LT(early, frames / 2);  // some wait for an earlier frame
  ASSERT_TRUE(loop.submit({rs.data() + frames / 2, frames - frames / 2}));
  size_t got = early + loop.reap(std::span(comps).subspan(early), frames - early,
                                 storage::Clock::now() + std::chrono::seconds(5));
  ASSERT_EQ(got, frames);
  for (size_t i = 0; i < got; ++i) ASSERT_TRUE(comps[i].result) << comps[i].result.error().what;
  EXPECT_EQ(loop.in_flight(), 0u);
  ASSERT_TRUE(f->write_at(bytes.data() + 4096 + frames * frame, 8192, 4096 + frames * frame));
  ASSERT_TRUE(f->commit());
  auto placed = f->placement();
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->bytes, bytes.size());
  out->reset();
  st.reset();

  // Read back through the storage seam, in order, as a restore does.
  tape::StreamLocation loc;
  loc.block_size = placed->block_size;
  loc.bytes = placed->bytes;
  for (const auto& sp : placed->spans)
    loc.spans.push_back({sp.volume_id, sp.drive, sp.file, sp.block, sp.first_seq, sp.blocks, sp.address});
  auto rf = tape::open_tape_stream(loc, {9, 1, 1}, "piece-a", {});
  ASSERT_TRUE(rf) << rf.error().what;
  std::vector<std::byte> back(bytes.size());
  auto n = (*rf)->read_at(back.data(), back.size(), 0);
  ASSERT_TRUE(n) << n.error().what;
  ASSERT_EQ(*n, bytes.size());
  EXPECT_TRUE(back == bytes);
  // A stream is read in order: going back is refused.
  auto again = (*rf)->read_at(back.data(), 4096, 0);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().what.find("read in order"), std::string::npos);
}

TEST_F(TapeStorageTest, AWriteWhosePredecessorNeverComesFails) {
  auto bytes = piece_bytes(4096 + 3 * 8192);
  storage::IoLoop loop;
  auto out = create("piece-b");
  ASSERT_TRUE(out);
  storage::WriteFile* f = out->get();
  ASSERT_TRUE(f->write_at(bytes.data(), 4096, 0));
  storage::Request late{f, storage::OpKind::write, 4096 + 8192, bytes.data() + 4096 + 8192, 8192, 77};
  ASSERT_TRUE(loop.submit(late));
  EXPECT_EQ(loop.in_flight(), 1u);
  std::vector<storage::Completion> comps(4);
  size_t got = loop.reap(comps, 1, storage::Clock::now() + std::chrono::seconds(1));
  ASSERT_EQ(got, 1u);
  EXPECT_EQ(comps[0].tag, 77u);
  ASSERT_FALSE(comps[0].result);
  EXPECT_NE(comps[0].result.error().what.find("never came"), std::string::npos);
  EXPECT_FALSE(f->commit());
}

}  // namespace
}  // namespace stripeback::engine
