#include "backends/tape/cdb.h"

#include <gtest/gtest.h>

namespace stripeback::tape::cdb {
namespace {

TEST(Cdb, SixByteCommands) {
  EXPECT_EQ(test_unit_ready(), (Cdb6{0x00, 0, 0, 0, 0, 0}));
  EXPECT_EQ(rewind(Immed::no), (Cdb6{0x01, 0, 0, 0, 0, 0}));
  EXPECT_EQ(rewind(Immed::yes), (Cdb6{0x01, 1, 0, 0, 0, 0}));
  EXPECT_EQ(read_block_limits(), (Cdb6{0x05, 0, 0, 0, 0, 0}));
  EXPECT_EQ(inquiry(96), (Cdb6{0x12, 0, 0, 0, 96, 0}));
  EXPECT_EQ(mode_sense6(0, 12), (Cdb6{0x1a, 0, 0, 0, 12, 0}));
  EXPECT_EQ(mode_select6(12), (Cdb6{0x15, 0x10, 0, 0, 12, 0}));
  EXPECT_EQ(load_unload(true), (Cdb6{0x1b, 0, 0, 0, 1, 0}));
  EXPECT_EQ(load_unload(false), (Cdb6{0x1b, 0, 0, 0, 0, 0}));
}

TEST(Cdb, ReadWriteFixedAndVariable) {
  EXPECT_EQ(write6(Fixed::yes, 12), (Cdb6{0x0a, 1, 0, 0, 12, 0}));
  EXPECT_EQ(write6(Fixed::no, 0x040000), (Cdb6{0x0a, 0, 0x04, 0, 0, 0}));
  EXPECT_EQ(read6(Fixed::yes, 0x123456), (Cdb6{0x08, 1, 0x12, 0x34, 0x56, 0}));
  EXPECT_EQ(read6(Fixed::no, 65536), (Cdb6{0x08, 0, 0x01, 0, 0, 0}));
  EXPECT_EQ(write_filemarks6(1, Immed::no), (Cdb6{0x10, 0, 0, 0, 1, 0}));
}

TEST(Cdb, SpaceCountIsSigned24Bit) {
  EXPECT_EQ(space6(SpaceCode::filemarks, 3), (Cdb6{0x11, 1, 0, 0, 3, 0}));
  EXPECT_EQ(space6(SpaceCode::filemarks, -1), (Cdb6{0x11, 1, 0xff, 0xff, 0xff, 0}));
  EXPECT_EQ(space6(SpaceCode::blocks, -2), (Cdb6{0x11, 0, 0xff, 0xff, 0xfe, 0}));
  EXPECT_EQ(space6(SpaceCode::end_of_data, 0), (Cdb6{0x11, 3, 0, 0, 0, 0}));
}

TEST(Cdb, PositionCommands) {
  EXPECT_EQ(read_position_short(), (Cdb10{0x34, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(locate10(0x01020304), (Cdb10{0x2b, 0, 0, 1, 2, 3, 4, 0, 0, 0}));
}

TEST(Cdb, ModeSelectBlockDescriptor) {
  auto p = mode_select_block_size(262144);
  EXPECT_EQ(p[3], 8);  // block descriptor length
  EXPECT_EQ(p[9], 0x04);
  EXPECT_EQ(p[10], 0x00);
  EXPECT_EQ(p[11], 0x00);
  EXPECT_EQ(p[2], 0x10);  // buffered mode
  auto v = mode_select_block_size(0);
  EXPECT_EQ(v[9] | v[10] | v[11], 0);
}

}  // namespace
}  // namespace stripeback::tape::cdb
