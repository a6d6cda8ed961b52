// TapeIoHelper and tape streams against tgtd (the service is configured in drive_it_test.cc).
#include "backends/tape/io_helper.h"

#include <gtest/gtest.h>

#include <cstring>

#include "backends/tape/label.h"
#include "tests/support/tape_server.h"

namespace stripeback::tape {
namespace {

using stripeback::testing::TapeServer;

std::vector<uint8_t> bytes_of(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed | 1;
  for (auto& b : v) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  return v;
}

class HelperTest : public ::testing::TestWithParam<TapeIoHelper::Mode> {
 protected:
  void SetUp() override {
    const auto& urls = TapeServer::urls();
    if (urls.empty()) GTEST_SKIP() << TapeServer::skip_reason();
    url = urls[0];
    auto d = TapeDrive::open(url);
    ASSERT_TRUE(d) << d.error().what;
    ASSERT_TRUE((*d)->wait_ready(std::chrono::seconds(5)));
    ASSERT_TRUE(write_label(**d, VolumeLabel{"HELPER1", 65536, 1, 0}));
  }
  std::string url;
};

TEST_P(HelperTest, StreamsWrittenThroughTheRingReadBackIdentical) {
  const uint32_t bs = 65536;
  auto vol = open_volume_for_write(url, bs, {}, std::chrono::seconds(5));
  ASSERT_TRUE(vol) << vol.error().what;
  std::unique_ptr<Volume> slot = std::move(*vol);
  TapeIoHelper helper(slot, nullptr, bs, 4, GetParam());
  // Two streams (two tape files), the second ending in a partial block.
  const std::vector<size_t> sizes{3u << 20, (2u << 20) + 12345};  // within the 8 MiB tape
  std::vector<StreamLocation> locs;
  for (size_t s = 0; s < sizes.size(); ++s) {
    auto data = bytes_of(sizes[s], static_cast<uint32_t>(s + 7));
    ASSERT_TRUE(helper.begin_stream(StreamId{42, 1, static_cast<uint32_t>(s + 1)}));
    for (size_t off = 0; off < data.size();) {
      auto buf = helper.acquire();
      ASSERT_TRUE(buf) << buf.error().what;
      const size_t n = std::min(buf->size(), data.size() - off);
      std::memcpy(buf->data(), data.data() + off, n);
      ASSERT_TRUE(helper.submit(n));
      off += n;
    }
    auto loc = helper.end_stream();
    ASSERT_TRUE(loc) << loc.error().what;
    EXPECT_EQ(loc->bytes, sizes[s]);
    ASSERT_EQ(loc->spans.size(), 1u);
    EXPECT_EQ(loc->spans[0].file, s + 1);  // file 0 is the label
    EXPECT_EQ(loc->spans[0].volume_id, "HELPER1");
    locs.push_back(*loc);
  }
  DriveStats st = helper.stats();
  EXPECT_EQ(st.async, GetParam() == TapeIoHelper::Mode::async);
  EXPECT_GE(st.bytes, sizes[0] + sizes[1]);
  EXPECT_GT(st.commands, 0u);
  EXPECT_GT(st.write_mb_s(), 0.0);
  slot.reset();

  auto rvol = open_volume_for_read(url, "HELPER1");
  ASSERT_TRUE(rvol) << rvol.error().what;
  // Read the second stream first: the reader goes straight to its file.
  for (size_t s : {size_t{1}, size_t{0}}) {
    std::vector<uint8_t> back;
    auto r = read_stream(locs[s], StreamId{42, 1, static_cast<uint32_t>(s + 1)},
                         [&](const Span&) -> Result<Volume*> { return rvol->get(); },
                         [&](std::span<const uint8_t> b) -> Result<void> {
                           back.insert(back.end(), b.begin(), b.end());
                           return ok();
                         });
    ASSERT_TRUE(r) << r.error().what;
    EXPECT_EQ(back, bytes_of(sizes[s], static_cast<uint32_t>(s + 7)));
  }
  // A wrong stream id is refused, not misread.
  auto wrong = read_stream(locs[0], StreamId{43, 1, 1},
                           [&](const Span&) -> Result<Volume*> { return rvol->get(); },
                           [](std::span<const uint8_t>) -> Result<void> { return ok(); });
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().what.find("not the piece expected"), std::string::npos) << wrong.error().what;
}

INSTANTIATE_TEST_SUITE_P(Modes, HelperTest,
                         ::testing::Values(TapeIoHelper::Mode::async, TapeIoHelper::Mode::sync),
                         [](const auto& p) {
                           return p.param == TapeIoHelper::Mode::async ? "async" : "sync";
                         });

TEST(StreamChunks, SeveralBlocksPerCommand) {
  EXPECT_EQ(chunk_bytes(65536, 16u << 20), 2u << 20);
  EXPECT_EQ(chunk_bytes(262144, 16u << 20), 2u << 20);
  EXPECT_EQ(chunk_bytes(1u << 20, 16u << 20), 2u << 20);
  EXPECT_EQ(chunk_bytes(3u << 20, 16u << 20), 3u << 20);  // at least one block
  EXPECT_EQ(chunk_bytes(1u << 20, 1u << 20), 1u << 20);   // the transport's limit
}

}  // namespace
}  // namespace stripeback::tape
