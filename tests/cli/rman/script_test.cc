#include "cli/rman/script.h"

#include <gtest/gtest.h>

namespace stripeback::cli::rman {
namespace {

Result<std::vector<Block>> split(const std::string& text) {
  auto tokens = tokenize(text);
  if (!tokens) return tokens.error();
  return split_script(*tokens);
}

std::string error_of(const std::string& text) {
  auto b = split(text);
  return b.has_value() ? "(no error)" : b.error().what;
}

TEST(RmanScript, RunBlocksHoldTheirStatementsAndOthersStandAlone) {
  auto b = split("LIST BACKUP;\nrun {\n ALLOCATE CHANNEL c1 DEVICE TYPE DISK;\n BACKUP '/a';\n}\n"
                 "REPORT OBSOLETE; ;");
  ASSERT_TRUE(b.has_value()) << b.error().what;
  ASSERT_EQ(b->size(), 3u);
  EXPECT_FALSE((*b)[0].run);
  EXPECT_TRUE((*b)[1].run);
  ASSERT_EQ((*b)[1].statements.size(), 2u);
  EXPECT_EQ((*b)[1].statements[1].at.line, 4);
  // The ';' is not kept: an end token stands at its place.
  ASSERT_EQ((*b)[1].statements[1].tokens.size(), 3u);
  EXPECT_EQ((*b)[1].statements[1].tokens[2].kind, TokenKind::end);
  EXPECT_EQ((*b)[1].statements[1].tokens[2].at.column, 13);
  EXPECT_FALSE((*b)[2].run);
}

TEST(RmanScript, AStatementWithoutItsSemicolonAtTheEndOfTheFile) {
  EXPECT_EQ(error_of("LIST BACKUP;\nREPORT OBSOLETE"),
            "2:16: missing ';' at the end of the statement that starts at 2:1");
}

TEST(RmanScript, AStatementWithoutItsSemicolonBeforeTheBlockCloses) {
  EXPECT_EQ(error_of("RUN {\n  BACKUP DATAFILE '/d/a'\n}"),
            "2:25: missing ';' at the end of the statement that starts at 2:3");
}

TEST(RmanScript, AClosingBraceWithoutARunBlock) {
  EXPECT_EQ(error_of("LIST BACKUP;\n}"), "2:1: '}' closes no RUN block");
}

TEST(RmanScript, ARunBlockNotClosedIsNamedAtItsRun) {
  EXPECT_EQ(error_of("LIST BACKUP;\n  RUN {\n LIST BACKUP;\n"),
            "2:3: the RUN block that opens here is not closed with '}'");
}

TEST(RmanScript, RunWithoutItsBrace) {
  EXPECT_EQ(error_of("RUN LIST BACKUP;"), "1:5: expected '{' after RUN");
}

TEST(RmanScript, ARunBlockInsideAnother) {
  EXPECT_EQ(error_of("RUN {\n RUN { LIST BACKUP; }\n}"),
            "2:2: a RUN block cannot hold another RUN block");
}

TEST(RmanScript, ABraceThatOpensNothing) {
  EXPECT_EQ(error_of("{ LIST BACKUP; }"), "1:1: unexpected '{' (only RUN opens a block)");
}

}  // namespace
}  // namespace stripeback::cli::rman
