// Control characters in file names, tags and arguments never reach the terminal: text output
// (list, summaries, errors, log lines) writes them C-style (\n, \t, \xNN, \\), while --json
// output carries the names exactly, by JSON's own escaping.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

// The first byte of `text` a terminal could act on or that breaks a line (any control byte
// but the newline ending a line, DEL, a C1 control, or a byte invalid in UTF-8 such as 0xff),
// shown with its offset; empty when there is none.
std::string first_raw_control(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    bool c1 = c == 0xc2 && i + 1 < text.size() &&
              static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
              static_cast<unsigned char>(text[i + 1]) <= 0x9f;
    if ((c < 0x20 && c != '\n') || c == 0x7f || c == 0xff || c1)
      return "byte " + std::to_string(c) + " at offset " + std::to_string(i);
  }
  return "";
}

size_t lines_of(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

class TextOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    make_file(src_ + "/plain.dbf", 20000, 61);
    make_file(src_ + "/esc\x1b[31mred.dbf", 5000, 62);
    make_file(src_ + "/line\nbreak.dbf", 6000, 63);
    make_file(src_ + "/caf\xc3\xa9.dbf", 7000, 64);
    if (HasFatalFailure()) return;
    // Skipped entries are named in warnings, the summary and the log.
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
  }

  TempDir t_{"sbit-text"};
  std::string src_ = t_ / "src";
  // A fifo whose name sets the terminal title, holds a tab and an invalid UTF-8 byte.
  std::string fifo_ = src_ + "/pipe\x1b]0;owned\x07\t\xff";
  std::string fifo_escaped_ = src_ + "/pipe\\x1b]0;owned\\x07\\t\\xff";
  std::string tag_ = "night\nly\x1b[2J\xc2\x9b";
  std::string tag_escaped_ = "night\\nly\\x1b[2J\\xc2\\x9b";
};

TEST_F(TextOutput, BackupSummaryListAndLogEscapeNamesAndTags) {
  std::string cat = t_ / "cat";
  RunResult b = sb({"backup", src_, "--to", t_ / "pieces", "--catalog", cat, "--tag", tag_});
  SB_ASSERT_EXIT(b, 0);
  EXPECT_EQ(first_raw_control(b.out), "") << b.describe();
  EXPECT_EQ(first_raw_control(b.err), "") << b.describe();
  // The summary and the log warning both name the skipped fifo, escaped.
  EXPECT_TRUE(contains(b.out, "skipped '" + fifo_escaped_ + "'"));
  EXPECT_TRUE(contains(b.err, "skipped '" + fifo_escaped_ + "'"));

  RunResult l = sb({"list", "--catalog", cat});
  SB_ASSERT_EXIT(l, 0);
  EXPECT_EQ(first_raw_control(l.out), "") << l.describe();
  EXPECT_EQ(lines_of(l.out), 2u) << "a header and one row:\n" << l.out;
  EXPECT_TRUE(contains(l.out, tag_escaped_));

  // JSON carries the tag as it is.
  RunResult lj = sb({"list", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(lj, 0);
  EXPECT_EQ(parse_json(lj)["backups"][0]["tag"].as_string(), tag_);

  // Restore by that tag: every file comes back under its exact name.
  RunResult r = sb({"restore", "--to", t_ / "r", "--catalog", cat, "--tag", tag_});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_EQ(first_raw_control(r.out + r.err), "") << r.describe();
  EXPECT_TRUE(restored_exactly(t_ / "r",
                               {src_ + "/caf\xc3\xa9.dbf", src_ + "/esc\x1b[31mred.dbf",
                                src_ + "/line\nbreak.dbf", src_ + "/plain.dbf"}));
}

TEST_F(TextOutput, JsonSummaryKeepsTheExactNames) {
  RunResult b = sb({"backup", src_, "--to", t_ / "pieces", "--catalog", t_ / "cat", "--json"});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  ASSERT_EQ(j["skipped"].size(), 1u) << b.describe();
  EXPECT_EQ(j["skipped"][0]["path"].as_string(), fifo_);
  // The log line on stderr is text: escaped.
  EXPECT_EQ(first_raw_control(b.err), "") << b.describe();
  EXPECT_TRUE(contains(b.err, fifo_escaped_));
}

TEST_F(TextOutput, ErrorsQuotingArgumentsAreEscaped) {
  std::string cat = t_ / "cat";
  // A source that does not exist, named in the error.
  std::string missing = t_ / "no\x1b[1Asuch";
  RunResult m = sb({"backup", missing, "--to", t_ / "pieces", "--catalog", cat});
  SB_EXPECT_EXIT(m, 2);
  EXPECT_EQ(first_raw_control(m.err), "") << m.describe();
  EXPECT_TRUE(contains(m.err, t_ / "no\\x1b[1Asuch"));
  // A tag matching nothing.
  RunResult b = sb({"backup", src_, "--to", t_ / "pieces", "--catalog", cat});
  SB_ASSERT_EXIT(b, 0);
  RunResult r = sb({"restore", "--to", t_ / "r", "--catalog", cat, "--tag", "x\ny"});
  SB_EXPECT_EXIT(r, 2);
  EXPECT_EQ(first_raw_control(r.err), "") << r.describe();
  EXPECT_TRUE(contains(r.err, "x\\ny"));
  // An unknown flag (reported by the argument parser) and an unknown command.
  RunResult f = sb({"list", "--catalog", cat, "--fr\x1b[0mob"});
  SB_EXPECT_EXIT(f, 2);
  EXPECT_EQ(first_raw_control(f.err), "") << f.describe();
  EXPECT_TRUE(contains(f.err, "--fr\\x1b[0mob"));
  RunResult u = sb({"lis\tt"});
  SB_EXPECT_EXIT(u, 2);
  EXPECT_EQ(first_raw_control(u.err), "") << u.describe();
  EXPECT_TRUE(contains(u.err, "lis\\tt"));
}

}  // namespace
}  // namespace stripeback::it
