// Piece records of pieces on tape: the version-2 piece entry with the tape location.
#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "catalog/payload.h"

namespace stripeback::catalog {
namespace {

PieceRecord tape_piece() {
  PieceRecord p;
  p.name = "sb7-x-c1-p2.sbp";
  p.location = "tape:iscsi://127.0.0.1:3260/iqn.x:t1/1";
  p.channel = 1;
  p.number = 2;
  p.size = 123456;
  p.checksum = 0xabcdef01;
  MediaLocation t;
  t.block_size = 262144;
  t.bytes = 123456;
  t.spans.push_back({"VOL1", "iscsi://h:1/iqn.x:t1/1", 3, 0, 0, 40, 123});
  t.spans.push_back({"VOL2", "iscsi://h:1/iqn.x:t2/1", 1, 0, 40, 7, ~uint64_t{0}});
  p.media = t;
  return p;
}

TEST(TapePieceRecord, RoundTripsTheTapeLocation) {
  auto enc = encode_piece(7, tape_piece(), {});
  ASSERT_TRUE(enc) << enc.error().what;
  ASSERT_EQ(enc->size(), 1u);
  EXPECT_EQ((*enc)[0].payload[0], kTapePiecePayloadVersion);
  auto dec = decode_piece((*enc)[0].payload);
  ASSERT_TRUE(dec) << dec.error().what;
  const PieceRecord& p = dec->piece;
  ASSERT_TRUE(p.media);
  EXPECT_EQ(p.media->block_size, 262144u);
  EXPECT_EQ(p.media->bytes, 123456u);
  ASSERT_EQ(p.media->spans.size(), 2u);
  EXPECT_EQ(p.media->spans[1].volume_id, "VOL2");
  EXPECT_EQ(p.media->spans[1].url, "iscsi://h:1/iqn.x:t2/1");
  EXPECT_EQ(p.media->spans[1].file, 1u);
  EXPECT_EQ(p.media->spans[1].first_seq, 40u);
  EXPECT_EQ(p.media->spans[1].blocks, 7u);
  EXPECT_EQ(p.media->spans[0].address, 123u);
  EXPECT_EQ(p.media->spans[1].address, ~uint64_t{0});
  EXPECT_EQ(p.checksum, 0xabcdef01u);
}

TEST(TapePieceRecord, DiskPiecesStayVersionOne) {
  PieceRecord p = tape_piece();
  p.media.reset();
  auto enc = encode_piece(7, p, {});
  ASSERT_TRUE(enc);
  EXPECT_EQ((*enc)[0].payload[0], kPayloadVersion);
  auto dec = decode_piece((*enc)[0].payload);
  ASSERT_TRUE(dec);
  EXPECT_FALSE(dec->piece.media);
}

TEST(TapePieceRecord, VersionOneReaderRuleSkipsTheTail) {
  // A version-1 payload with extra bytes is malformed; the same bytes behind version 2
  // are the tape location. Flipping the version shows the reader keys on it.
  auto enc = encode_piece(7, tape_piece(), {});
  ASSERT_TRUE(enc);
  auto bytes = (*enc)[0].payload;
  bytes[0] = kPayloadVersion;
  auto dec = decode_piece(bytes);
  ASSERT_FALSE(dec);
  EXPECT_EQ(dec.error().code, Errc::corrupt);
}

}  // namespace
}  // namespace stripeback::catalog
