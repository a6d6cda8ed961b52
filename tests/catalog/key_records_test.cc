// Key rotation records: the newest wrap of a piece supersedes earlier ones, rekey intents
// stay pending until their end, the key version is the largest named, all surviving a
// reopen; an end without an intent and malformed payloads are refused.
#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "catalog/payload.h"
#include "tests/catalog/catalog_test_util.h"
#include "tests/support/temp_dir.h"

namespace stripeback::catalog::test {
namespace {

KeyWrap wrap_of(const std::string& piece, uint32_t version, bool in_piece) {
  KeyWrap w;
  w.backup_id = 1;
  w.piece = piece;
  w.kek_version = version;
  w.kdf = 2;
  w.salt.fill(static_cast<uint8_t>(version));
  w.wrapped_key.fill(static_cast<uint8_t>(version * 3));
  w.in_piece = in_piece;
  return w;
}

TEST(KeyRecords, TheNewestWrapWinsAndARekeyIsPendingUntilItsEnd) {
  testing::TempDir tmp;
  {
    auto cat = open_ok(tmp / "cat");
    EXPECT_EQ(cat->kek_version(), 1u);
    ASSERT_TRUE(cat->add_rekey({77, false, 5, 2}));
    ASSERT_EQ(cat->pending_rekeys().size(), 1u);
    EXPECT_EQ(cat->kek_version(), 2u);
    ASSERT_TRUE(cat->add_key_wraps({77, 6, {wrap_of("p1", 2, true), wrap_of("p2", 2, false)}}));
    ASSERT_TRUE(cat->add_key_wraps({77, 7, {wrap_of("p1", 3, true)}}));
    ASSERT_TRUE(cat->add_rekey({77, true, 8, 2, 1, 1, 0, 0}));
  }
  auto cat = open_ok(tmp / "cat", Create::no);
  EXPECT_TRUE(cat->warnings().empty());
  EXPECT_TRUE(cat->pending_rekeys().empty());
  EXPECT_EQ(cat->kek_version(), 3u);
  auto wraps = cat->key_wraps();
  ASSERT_EQ(wraps.size(), 2u);
  EXPECT_EQ(wraps["p1"].kek_version, 3u);
  EXPECT_EQ(wraps["p1"].salt, wrap_of("p1", 3, true).salt);
  EXPECT_EQ(wraps["p1"].wrapped_key, wrap_of("p1", 3, true).wrapped_key);
  EXPECT_FALSE(wraps["p2"].in_piece);
}

// A compaction keeps of each piece only its current wrap: a superseded one is the piece's
// data key under a retired key-encryption key. A record left with some wraps is written
// again with those; one left with none goes.
TEST(KeyRecords, CompactionLeavesOutSupersededWraps) {
  testing::TempDir tmp;
  {
    auto cat = open_ok(tmp / "cat");
    ASSERT_TRUE(cat->add_rekey({77, false, 5, 2}));
    ASSERT_TRUE(cat->add_key_wraps({77, 6, {wrap_of("p1", 2, true), wrap_of("p2", 2, false)}}));
    ASSERT_TRUE(cat->add_key_wraps({77, 6, {wrap_of("p3", 2, true)}}));
    ASSERT_TRUE(cat->add_rekey({77, true, 8, 2, 2, 1, 0, 0}));
    ASSERT_TRUE(cat->add_rekey({78, false, 9, 3}));
    ASSERT_TRUE(cat->add_key_wraps({78, 10, {wrap_of("p1", 3, true), wrap_of("p3", 3, true)}}));
    auto rep = cat->compact();
    ASSERT_TRUE(rep) << rep.error().what;
    // The second record held only p3's version 2: gone. The first is written again with
    // p2's alone.
    EXPECT_EQ(rep->records_after + 1, rep->records_before);
    EXPECT_LT(rep->bytes_after, rep->bytes_before);
  }
  auto cat = open_ok(tmp / "cat", Create::no);
  EXPECT_TRUE(cat->warnings().empty());
  auto wraps = cat->key_wraps();
  ASSERT_EQ(wraps.size(), 3u);
  EXPECT_EQ(wraps["p1"].kek_version, 3u);
  EXPECT_EQ(wraps["p2"].kek_version, 2u);
  EXPECT_FALSE(wraps["p2"].in_piece);
  EXPECT_EQ(wraps["p3"].kek_version, 3u);
  EXPECT_EQ(cat->pending_rekeys().size(), 1u);  // the rekey records themselves stay
  EXPECT_EQ(cat->kek_version(), 3u);
}

TEST(KeyRecords, AnEndWithoutAnIntentAndMalformedPayloadsAreRefused) {
  testing::TempDir tmp;
  auto cat = open_ok(tmp / "cat");
  auto r = cat->add_rekey({5, true, 1, 2});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_FALSE(cat->add_rekey({0, false, 1, 2}));
  EXPECT_FALSE(cat->add_key_wraps({1, 1, {}}));
  auto good = encode_key_wraps({1, 1, {wrap_of("p", 2, true)}});
  ASSERT_TRUE(good);
  auto cut = good->payload;
  cut.pop_back();
  EXPECT_FALSE(decode_key_wraps(cut));
  auto bad_flag = good->payload;
  bad_flag.back() = 7;
  EXPECT_FALSE(decode_key_wraps(bad_flag));
  auto decoded = decode_key_wraps(good->payload);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->wraps.at(0).piece, "p");
}

}  // namespace
}  // namespace stripeback::catalog::test
