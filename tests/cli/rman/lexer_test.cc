#include "cli/rman/lexer.h"

#include <gtest/gtest.h>

namespace stripeback::cli::rman {
namespace {

TEST(RmanLexer, SplitsWordsStringsAndMarksAndKnowsWhereEachStarts) {
  auto t = tokenize("RUN {\n  backup datafile '/d/a b.dbf', '/d/c';  # comment ' here\n}");
  ASSERT_TRUE(t.has_value()) << t.error().what;
  ASSERT_EQ(t->size(), 10u);
  const auto& v = *t;
  EXPECT_EQ(v[0].kind, TokenKind::word);
  EXPECT_EQ(v[0].text, "RUN");
  EXPECT_TRUE(v[1].is_mark('{'));
  EXPECT_EQ(v[2].text, "backup");
  EXPECT_EQ(v[2].at.line, 2);
  EXPECT_EQ(v[2].at.column, 3);
  EXPECT_EQ(v[4].kind, TokenKind::quoted);
  EXPECT_EQ(v[4].text, "/d/a b.dbf");
  EXPECT_EQ(v[4].at.column, 19);
  EXPECT_TRUE(v[5].is_mark(','));
  EXPECT_EQ(v[6].text, "/d/c");
  EXPECT_TRUE(v[7].is_mark(';'));
  EXPECT_TRUE(v[8].is_mark('}'));
  EXPECT_EQ(v[8].at.line, 3);
  EXPECT_EQ(v[9].kind, TokenKind::end);
}

TEST(RmanLexer, KeywordsMatchWhateverTheirCase) {
  auto t = tokenize("Backup bAcKuP BACKUP backups");
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE((*t)[0].is("BACKUP"));
  EXPECT_TRUE((*t)[1].is("BACKUP"));
  EXPECT_TRUE((*t)[2].is("BACKUP"));
  EXPECT_FALSE((*t)[3].is("BACKUP"));
}

TEST(RmanLexer, SizesTimesAndSubstitutionVariablesAreWords) {
  auto t = tokenize("RATE 200M DURATION 01:30 FORMAT /b/%U_%d");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t)[1].text, "200M");
  EXPECT_EQ((*t)[3].text, "01:30");
  EXPECT_EQ((*t)[5].text, "/b/%U_%d");
}

TEST(RmanLexer, AHashInsideAStringIsNotAComment) {
  auto t = tokenize("'a#b' # c");
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].text, "a#b");
}

TEST(RmanLexer, AnUnterminatedStringIsAnErrorAtItsQuote) {
  auto t = tokenize("LIST BACKUP;\nBACKUP DATAFILE '/d/a;\nLIST BACKUP;");
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, Errc::invalid_argument);
  EXPECT_EQ(t.error().what.rfind("2:17: the string that starts here is not closed", 0), 0u)
      << t.error().what;
}

TEST(RmanLexer, AStringAtTheEndOfTheFileWithoutItsQuoteIsAnError) {
  auto t = tokenize("BACKUP '/d/a");
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().what.rfind("1:8:", 0), 0u) << t.error().what;
}

TEST(RmanLexer, DoubleQuotesAreRefusedSayingToUseSingleOnes) {
  auto t = tokenize("BACKUP \"/d/a\";");
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().what, "1:8: strings are written in single quotes ('...'), not double");
}

TEST(RmanLexer, AControlCharacterIsAnErrorAtItsPlace) {
  auto t = tokenize(std::string("LIST\nBA\x01" "CKUP;"));
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().what, "2:3: unexpected control character (byte 1)");
}

}  // namespace
}  // namespace stripeback::cli::rman
