// `stripeback validate`: reads and checks every frame of the chosen backup without writing,
// on plain, compressed and encrypted backups; damage and a wrong key are reported.
#include <fcntl.h>
#include <unistd.h>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

TEST(Validate, CleanEncryptedCompressedBackupPassesAndWritesNothing) {
  TempDir work("sb-validate");
  std::string src = work / "src", cat = work / "catalog", key = work / "k.key";
  make_file(src + "/a.dbf", (5u << 20) + 100, 1);
  make_file(src + "/d/b.dbf", 3u << 20, 2);
  SB_ASSERT_EXIT(sb({"keygen", key}), 0);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", work / "p", "--catalog", cat, "--compress", "medium",
                     "--encrypt", "--key-file", key}),
                 0);
  auto before = entries_under(work.path());
  auto v = sb({"validate", "--catalog", cat, "--key-file", key, "--json"});
  SB_ASSERT_EXIT(v, 0);
  Json j = parse_json(v);
  EXPECT_EQ(j["operation"].as_string(), "validate");
  EXPECT_EQ(j["status"].as_string(), "complete");
  EXPECT_EQ(*j["files"].as_u64(), 2u);
  EXPECT_EQ(*j["bytes"].as_u64(), (8u << 20) + 100);
  EXPECT_EQ(entries_under(work.path()), before);
  auto wrong = sb({"validate", "--catalog", cat, "--passphrase-env", "SB_IT_P"},
                  {{"SB_IT_P", "not the key"}});
  SB_EXPECT_EXIT(wrong, 4);
  EXPECT_TRUE(contains(wrong.err, "wrong passphrase or key"));
}

TEST(Validate, DamageIsReportedWithPieceOffsetAndFile) {
  TempDir work("sb-validate-bad");
  std::string src = work / "src", cat = work / "catalog";
  make_file(src + "/a.dbf", 4u << 20, 3);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", work / "p", "--catalog", cat, "--channels", "1"}), 0);
  auto pieces = pieces_in(work / "p");
  ASSERT_EQ(pieces.size(), 1u);
  int fd = ::open(pieces[0].c_str(), O_RDWR);
  char c = 0;
  off_t at = (2 << 20) + 999;
  ASSERT_EQ(::pread(fd, &c, 1, at), 1);
  c = static_cast<char>(~c);
  ASSERT_EQ(::pwrite(fd, &c, 1, at), 1);
  ::close(fd);
  auto v = sb({"validate", "--catalog", cat});
  SB_EXPECT_EXIT(v, 1);
  EXPECT_TRUE(contains(v.err, pieces[0]));
  EXPECT_TRUE(contains(v.err, "is corrupt at offset"));
  EXPECT_TRUE(contains(v.err, src + "/a.dbf"));
}

}  // namespace
}  // namespace stripeback::it
