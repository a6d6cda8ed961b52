// Check records: the page checks of sources and backups (corrupt pages found) and the frame
// checks of validations (what was checked when) round-trip through the log, survive a
// reopen, and are refused when malformed; a complete later page check of a file clears
// what earlier ones found in it.
#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "catalog/payload.h"
#include "tests/catalog/catalog_test_util.h"
#include "tests/support/temp_dir.h"

namespace stripeback::catalog::test {
namespace {

PageCheck sample_check(std::vector<std::string> sources, bool complete,
                       std::vector<CorruptPage> corrupt) {
  PageCheck c;
  c.time_ns = 1'700'000'000'000'000'000;
  c.format = "postgres";
  c.complete = complete;
  c.sources = std::move(sources);
  c.pages_checked = 1234;
  c.corrupt_total = corrupt.size();
  c.corrupt = std::move(corrupt);
  return c;
}

TEST(CheckRecords, PageAndFrameChecksRoundTripAndSurviveAReopen) {
  testing::TempDir tmp;
  {
    auto cat = open_ok(tmp / "cat");
    ASSERT_TRUE(cat);
    auto pc = sample_check({"/pg/data"}, true,
                           {{"/pg/data/base/5/16396", 9, 9 * 8192,
                             "checksum mismatch: stored 0x1234, computed 0xabcd"}});
    ASSERT_TRUE(cat->add_page_check(pc));
    FrameCheck fc;
    fc.time_ns = 5;
    fc.backup_id = 3;
    fc.mode = "part 2/7";
    fc.frames_checked = 10;
    fc.frames_failed = 1;
    fc.full_check_ns = 4;
    fc.pieces = {{"p1", {{0, 4096}, {9000, 9000}}}, {"p2", {}}};
    ASSERT_TRUE(cat->add_frame_check(fc));
  }
  auto cat = open_ok(tmp / "cat", Create::no);
  ASSERT_TRUE(cat);
  EXPECT_TRUE(cat->warnings().empty());
  auto pcs = cat->page_checks();
  ASSERT_EQ(pcs.size(), 1u);
  EXPECT_EQ(pcs[0].format, "postgres");
  EXPECT_TRUE(pcs[0].complete);
  EXPECT_EQ(pcs[0].pages_checked, 1234u);
  ASSERT_EQ(pcs[0].corrupt.size(), 1u);
  EXPECT_EQ(pcs[0].corrupt[0].block, 9u);
  EXPECT_EQ(pcs[0].corrupt[0].offset, 9u * 8192);
  auto fcs = cat->frame_checks();
  ASSERT_EQ(fcs.size(), 1u);
  EXPECT_EQ(fcs[0].mode, "part 2/7");
  EXPECT_EQ(fcs[0].full_check_ns, 4);
  ASSERT_EQ(fcs[0].pieces.size(), 2u);
  ASSERT_EQ(fcs[0].pieces[0].ranges.size(), 2u);
  EXPECT_EQ(fcs[0].pieces[0].ranges[1].first, 9000u);
  EXPECT_TRUE(cat->backups().empty()) << "checks are not backups";
  // A backup begun now does not take the id a frame check names.
  auto id = cat->begin_backup(sample_begin("after"));
  ASSERT_TRUE(id);
  EXPECT_GT(*id, 3u);
}

TEST(CheckRecords, MalformedChecksAreRefused) {
  auto pc = encode_page_check(sample_check({"/a"}, false, {}));
  ASSERT_TRUE(pc);
  auto bad = pc->payload;
  bad[1 + 8 + 8 + 4 + 8] = 2;  // the complete flag, after version, id, time and "postgres"
  EXPECT_FALSE(decode_page_check(bad));
  EXPECT_TRUE(decode_page_check(pc->payload));
  FrameCheck fc;
  fc.backup_id = 0;
  EXPECT_FALSE(encode_frame_check(fc)) << "a frame check names a backup";
  fc.backup_id = 1;
  fc.pieces = {{"p", {{10, 5}}}};
  EXPECT_FALSE(encode_frame_check(fc)) << "a range ending before it begins";
  fc.pieces = {{"p", {{5, 10}}}};
  auto e = encode_frame_check(fc);
  ASSERT_TRUE(e);
  auto cut = e->payload;
  cut.resize(cut.size() - 3);
  EXPECT_FALSE(decode_frame_check(cut));
}

TEST(CheckRecords, OnlyACompleteLaterCheckOfTheFileClearsWhatWasFound) {
  testing::TempDir tmp;
  auto cat = open_ok(tmp / "cat");
  ASSERT_TRUE(cat);
  ASSERT_TRUE(cat->add_page_check(sample_check(
      {"/pg/data"}, true,
      {{"/pg/data/base/5/1", 1, 8192, "bad header"}, {"/pg/data/base/5/2", 7, 57344, "x"}})));
  EXPECT_EQ(cat->corrupt_pages().size(), 2u);
  // A partial run over the whole directory clears nothing.
  ASSERT_TRUE(cat->add_page_check(sample_check({"/pg/data"}, false, {})));
  EXPECT_EQ(cat->corrupt_pages().size(), 2u);
  // A complete run of another directory (a prefix of the name, not a parent) neither.
  ASSERT_TRUE(cat->add_page_check(sample_check({"/pg/data/base/5/1x"}, true, {})));
  EXPECT_EQ(cat->corrupt_pages().size(), 2u);
  // A complete run over one file's directory clears that file and finds a new page.
  ASSERT_TRUE(cat->add_page_check(sample_check(
      {"/pg/data/base/5/1"}, true, {{"/pg/data/base/5/1", 3, 24576, "checksum mismatch"}})));
  auto now = cat->corrupt_pages();
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[0].first.file, "/pg/data/base/5/2");
  EXPECT_EQ(now[1].first.block, 3u);
  // More pages than a record holds: the count is kept, the list is cut.
  std::vector<CorruptPage> many(PageCheck::kMaxCorrupt + 5, CorruptPage{"/q/f", 1, 0, "r"});
  auto big = sample_check({"/q"}, true, many);
  ASSERT_TRUE(cat->add_page_check(big));
  auto back = cat->page_checks().back();
  EXPECT_EQ(back.corrupt.size(), PageCheck::kMaxCorrupt);
  EXPECT_EQ(back.corrupt_total, PageCheck::kMaxCorrupt + 5);
}

}  // namespace
}  // namespace stripeback::catalog::test
