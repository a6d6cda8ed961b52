#include "engine/format/piece_name.h"

#include <gtest/gtest.h>

namespace stripeback::engine {
namespace {

TEST(PieceName, CarriesBackupAndCatalogAndParsesBack) {
  std::string stamp = make_piece_stamp();
  std::string n = piece_name(12, 0x00ab0000000000cd, stamp, 3, 7);
  EXPECT_EQ(n, "sb12-00ab0000000000cd-" + stamp + "-c3-p7.sbp");
  EXPECT_EQ(n.rfind(piece_name_prefix(12, 0x00ab0000000000cd), 0), 0u);
  auto o = parse_piece_name(n);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->backup_id, 12u);
  EXPECT_EQ(o->catalog_id, 0x00ab0000000000cdu);
}

TEST(PieceName, NamesWithoutACatalogIdBelongToNoCatalog) {
  // The names written before catalogs had identities.
  EXPECT_FALSE(parse_piece_name("sb1-20261201T151058Z-88b7-c1-p1.sbp"));
  EXPECT_FALSE(parse_piece_name("sb1-2026120115105800-88b7-c1-p1.sbp.part"));
  EXPECT_FALSE(parse_piece_name("sb01-00ab0000000000cd-x-c1-p1.sbp"));   // two spellings
  EXPECT_FALSE(parse_piece_name("sb1-00AB0000000000CD-x-c1-p1.sbp"));    // upper case
  EXPECT_FALSE(parse_piece_name("sb1-00ab0000000000c-x-c1-p1.sbp"));     // 15 digits
  EXPECT_FALSE(parse_piece_name("sb1-00ab0000000000cde-x-c1-p1.sbp"));   // 17 digits
  EXPECT_FALSE(parse_piece_name("sb1-0000000000000000-x-c1-p1.sbp"));    // id 0 is none
  EXPECT_FALSE(parse_piece_name("sb99999999999999999999-00ab0000000000cd-x.sbp"));  // overflow
  EXPECT_FALSE(parse_piece_name("xb1-00ab0000000000cd-x-c1-p1.sbp"));
  EXPECT_FALSE(parse_piece_name("sb-00ab0000000000cd-x-c1-p1.sbp"));
  EXPECT_TRUE(parse_piece_name("sb1-00ab0000000000cd-x-c1-p1.sbp"));
}

}  // namespace
}  // namespace stripeback::engine
