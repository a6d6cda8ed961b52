#include "util/escape.h"

#include <gtest/gtest.h>

namespace stripeback::util {
namespace {

TEST(EscapeText, PlainTextAndValidUtf8PassUnchanged) {
  EXPECT_EQ(escape_text(""), "");
  EXPECT_EQ(escape_text("/data/base/16384 'x' \"y\""), "/data/base/16384 'x' \"y\"");
  EXPECT_EQ(escape_text("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\xbe"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\xbe");
  EXPECT_EQ(escape_text("\xc2\xa0"), "\xc2\xa0");  // U+00A0, just past the C1 controls
}

TEST(EscapeText, ControlBytesAreWrittenCStyle) {
  EXPECT_EQ(escape_text("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(escape_text("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(escape_text(std::string_view("\0\x01\x7f", 3)), "\\x00\\x01\\x7f");
  // C1 controls (here CSI, U+009B) act like ESC [ on some terminals.
  EXPECT_EQ(escape_text("\xc2\x9b" "2J"), "\\xc2\\x9b2J");
}

TEST(EscapeText, BackslashIsDoubledSoTheResultIsUnambiguous) {
  EXPECT_EQ(escape_text("a\\nb"), "a\\\\nb");
  EXPECT_NE(escape_text("a\\nb"), escape_text("a\nb"));
  EXPECT_EQ(escape_text("\\x1b"), "\\\\x1b");
}

TEST(EscapeText, InvalidUtf8BytesAreEscapedOneByOne) {
  EXPECT_EQ(escape_text("\xff"), "\\xff");
  EXPECT_EQ(escape_text("a\xc3"), "a\\xc3");            // cut short
  EXPECT_EQ(escape_text("\xc3(x"), "\\xc3(x");          // bad continuation
  EXPECT_EQ(escape_text("\xc0\xaf"), "\\xc0\\xaf");     // overlong '/'
  EXPECT_EQ(escape_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(escape_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(escape_text("\x80\xc3\xa9"), "\\x80\xc3\xa9");  // stray continuation, then valid
}

}  // namespace
}  // namespace stripeback::util
