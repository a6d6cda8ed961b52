// Encrypted backups end to end: identical restores with and without compression, a wrong
// or missing key refused before the restore target is touched, damage reported with piece
// and offset, and secrets absent from every output, the catalog and the pieces.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

using stripeback::testing::read_file;

class Encrypt : public ::testing::TestWithParam<const char*> {};

TEST_P(Encrypt, RoundTripIdenticalWithKeyFile) {
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  TempDir work("sb-encrypt");
  std::string cat = work / "catalog", key = work / "k.key";
  SB_ASSERT_EXIT(sb({"keygen", key}), 0);
  auto b = sb({"backup", data, "--to", work / "pieces", "--catalog", cat, "--json", "--compress",
               GetParam(), "--encrypt", "--key-file", key});
  SB_ASSERT_EXIT(b, 0);
  Json j = parse_json(b);
  EXPECT_EQ(j["encryption"].as_string(), "aes-256-gcm (key file)");
  double seal = 0;
  for (const auto& c : j["channels"].items()) seal += c["encrypt_s"].as_double();
  EXPECT_GT(seal, 0.0);
  auto list = sb({"list", "--catalog", cat});  // needs no key
  SB_EXPECT_EXIT(list, 0);
  EXPECT_TRUE(contains(list.out, "complete"));
  auto rr = sb({"restore", "--to", work / "r", "--catalog", cat, "--key-file", key});
  SB_ASSERT_EXIT(rr, 0);
  EXPECT_TRUE(restored_tree(work / "r", data));
}

INSTANTIATE_TEST_SUITE_P(Compression, Encrypt, ::testing::Values("none", "medium"));

TEST(EncryptCli, WrongPassphraseExits4AndLeavesTargetUntouched) {
  TempDir work("sb-encrypt-wrong");
  std::string src = work / "src", cat = work / "catalog";
  make_file(src + "/a.dbf", 3u << 20, 5);
  write_text(work / "good", "a long and correct passphrase\n");
  write_text(work / "bad", "a long and wrong passphrase\n");
  ::chmod((work / "good").c_str(), 0600);
  ::chmod((work / "bad").c_str(), 0600);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", work / "p", "--catalog", cat, "--encrypt",
                     "--passphrase-file", work / "good"}),
                 0);
  // The target exists with one unrelated file: afterwards it holds exactly that.
  std::string target = work / "r";
  make_file(target + "/keep.txt", 100, 1);
  auto r = sb({"restore", "--to", target, "--catalog", cat, "--passphrase-file", work / "bad"});
  SB_EXPECT_EXIT(r, 4);
  EXPECT_TRUE(contains(r.err, "wrong passphrase or key"));
  EXPECT_EQ(entries_under(target), std::vector<std::string>{target + "/keep.txt"});
  // The right passphrase, given through the environment this time, restores it.
  auto ok = sb({"restore", "--to", target, "--catalog", cat, "--passphrase-env", "SB_IT_PASS"},
               {{"SB_IT_PASS", "a long and correct passphrase"}});
  SB_ASSERT_EXIT(ok, 0);
  EXPECT_TRUE(same_file(src + "/a.dbf", target + src + "/a.dbf"));
}

TEST(EncryptCli, MissingKeyAndMisusedFlagsAreUsageErrors) {
  TempDir work("sb-encrypt-usage");
  std::string src = work / "src", cat = work / "catalog", key = work / "k.key";
  make_file(src + "/a.dbf", 1u << 20, 5);
  SB_ASSERT_EXIT(sb({"keygen", key}), 0);
  auto again = sb({"keygen", key});
  SB_EXPECT_EXIT(again, 2);
  EXPECT_TRUE(contains(again.err, key));
  auto no_key = sb({"backup", src, "--to", work / "p", "--catalog", cat, "--encrypt"});
  SB_EXPECT_EXIT(no_key, 2);
  EXPECT_TRUE(contains(no_key.err, "--encrypt needs"));
  auto no_flag = sb({"backup", src, "--to", work / "p", "--catalog", cat, "--key-file", key});
  SB_EXPECT_EXIT(no_flag, 2);
  EXPECT_TRUE(contains(no_flag.err, "without --encrypt"));
  EXPECT_TRUE(pieces_in(work / "p").empty());
  write_text(work / "short.key", "abc\n");
  auto bad_key = sb({"backup", src, "--to", work / "p", "--catalog", cat, "--encrypt",
                     "--key-file", work / "short.key"});
  SB_EXPECT_EXIT(bad_key, 2);
  EXPECT_TRUE(contains(bad_key.err, "64 hex digits"));
  SB_ASSERT_EXIT(sb({"backup", src, "--to", work / "p", "--catalog", cat, "--encrypt",
                     "--key-file", key}),
                 0);
  // The encrypted backup sealed the catalog: the key it needs is asked for first.
  auto missing = sb({"restore", "--to", work / "r", "--catalog", cat});
  SB_EXPECT_EXIT(missing, 2);
  EXPECT_TRUE(contains(missing.err, "key of its encrypted backups"));
  EXPECT_FALSE(exists(work / "r"));
}

TEST(EncryptCli, FlippedBitIsReportedWithPieceAndOffset) {
  TempDir work("sb-encrypt-flip");
  std::string src = work / "src", cat = work / "catalog", key = work / "k.key";
  make_file(src + "/a.dbf", 6u << 20, 8);
  SB_ASSERT_EXIT(sb({"keygen", key}), 0);
  SB_ASSERT_EXIT(sb({"backup", src, "--to", work / "p", "--catalog", cat, "--channels", "1",
                     "--encrypt", "--key-file", key}),
                 0);
  auto pieces = pieces_in(work / "p");
  ASSERT_EQ(pieces.size(), 1u);
  // Inside the third MiB of data: a payload byte, not a header.
  off_t at = 3 * (1 << 20) + 12345;
  int fd = ::open(pieces[0].c_str(), O_RDWR);
  char c = 0;
  ASSERT_EQ(::pread(fd, &c, 1, at), 1);
  c = static_cast<char>(c ^ 0x01);
  ASSERT_EQ(::pwrite(fd, &c, 1, at), 1);
  ::close(fd);
  auto r = sb({"restore", "--to", work / "r", "--catalog", cat, "--key-file", key});
  SB_EXPECT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, pieces[0]));
  EXPECT_TRUE(contains(r.err, "is corrupt at offset"));
  EXPECT_FALSE(exists(work / "r" + src + "/a.dbf"));
}

TEST(EncryptCli, SecretsNeverAppearInOutputCatalogOrPieces) {
  TempDir work("sb-encrypt-secret");
  std::string src = work / "src", cat = work / "catalog";
  make_file(src + "/a.dbf", 2u << 20, 3);
  const std::string secret = "Zebra-Quartz-Passphrase-4711";
  Env env{{"SB_IT_SECRET", secret}};
  auto b = sb({"backup", src, "--to", work / "p", "--catalog", cat, "--json", "--log-level",
               "trace", "--encrypt", "--passphrase-env", "SB_IT_SECRET"},
              env);
  SB_ASSERT_EXIT(b, 0);
  auto r = sb({"restore", "--to", work / "r", "--catalog", cat, "--json", "--log-level", "trace",
               "--passphrase-env", "SB_IT_SECRET"},
              env);
  SB_ASSERT_EXIT(r, 0);
  auto l = sb({"list", "--catalog", cat, "--json"});
  SB_ASSERT_EXIT(l, 0);
  for (const auto* run : {&b, &r, &l}) {
    EXPECT_EQ(run->out.find(secret), std::string::npos) << run->describe();
    EXPECT_EQ(run->err.find(secret), std::string::npos) << run->describe();
    for (const auto& arg : run->argv) EXPECT_EQ(arg.find(secret), std::string::npos);
  }
  for (const auto& f : entries_under(cat)) EXPECT_EQ(read_file(f).find(secret), std::string::npos) << f;
  for (const auto& f : pieces_in(work / "p"))
    EXPECT_EQ(read_file(f).find(secret), std::string::npos) << f;
}

// A key or passphrase file others can read gets a warning only when it is usable; when it
// is not, its error is the one and only line. A usable file for the wrong backup (exit 4) is
// not usable either.
TEST(EncryptCli, UnusableKeyFileReportsOnlyItsError) {
  TempDir work("sb-encrypt-mode");
  std::string src = work / "src", cat = work / "catalog";
  make_file(src + "/a.dbf", 1u << 20, 6);
  const std::string open_warning = "can be read by other users";
  write_text(work / "bad.key", "not a key\n");
  ::chmod((work / "bad.key").c_str(), 0644);
  write_text(work / "empty.pass", "\nsecond line\n");
  ::chmod((work / "empty.pass").c_str(), 0644);
  struct Case {
    std::string flag, file, error;
  };
  for (const Case& c : {Case{"--key-file", work / "bad.key", "64 hex digits"},
                        Case{"--passphrase-file", work / "empty.pass", "empty first line"}}) {
    auto r = sb({"backup", src, "--to", work / "p", "--catalog", cat, "--encrypt", c.flag, c.file});
    SB_EXPECT_EXIT(r, 2);
    EXPECT_TRUE(contains(r.err, c.error));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.describe();
    EXPECT_EQ(r.err.find(open_warning), std::string::npos) << r.describe();
  }
  // Readable by others and well formed: the backup goes ahead, with the warning.
  std::string key = work / "k.key", other = work / "other.key";
  SB_ASSERT_EXIT(sb({"keygen", key}), 0);
  SB_ASSERT_EXIT(sb({"keygen", other}), 0);
  ::chmod(key.c_str(), 0644);
  ::chmod(other.c_str(), 0644);
  auto b = sb({"backup", src, "--to", work / "p", "--catalog", cat, "--encrypt", "--key-file", key});
  SB_ASSERT_EXIT(b, 0);
  EXPECT_TRUE(contains(b.err, open_warning));
  // The wrong key for this backup: only the wrong-key error.
  auto r = sb({"restore", "--to", work / "r", "--catalog", cat, "--key-file", other});
  SB_EXPECT_EXIT(r, 4);
  EXPECT_TRUE(contains(r.err, "wrong passphrase or key"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.describe();
  EXPECT_EQ(r.err.find(open_warning), std::string::npos) << r.describe();
  // Also when another error comes first: a missing source is the only line.
  auto m = sb({"backup", work / "missing", "--to", work / "p", "--catalog", cat, "--encrypt",
               "--key-file", key});
  SB_EXPECT_EXIT(m, 2);
  EXPECT_EQ(std::count(m.err.begin(), m.err.end(), '\n'), 1) << m.describe();
  EXPECT_EQ(m.err.find(open_warning), std::string::npos) << m.describe();
}

// keygen creates the directories a key file's path needs, for the key alone (mode 0700), and
// says clearly when the path cannot be a directory.
TEST(EncryptCli, KeygenCreatesMissingDirectories) {
  TempDir work("sb-encrypt-keygen");
  std::string key = work / "keys/host/backup.key";
  auto g = sb({"keygen", key});
  SB_ASSERT_EXIT(g, 0);
  struct stat st {};
  for (const auto& dir : {work / "keys", work / "keys/host"}) {
    ASSERT_EQ(::stat(dir.c_str(), &st), 0) << dir;
    EXPECT_TRUE(S_ISDIR(st.st_mode)) << dir;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << dir;
  }
  ASSERT_EQ(::stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read_file(key).size(), 65u);  // 64 hex digits and a newline
  // An existing directory keeps its mode.
  ASSERT_EQ(::chmod((work / "keys").c_str(), 0750), 0);
  SB_ASSERT_EXIT(sb({"keygen", work / "keys/second.key"}), 0);
  ASSERT_EQ(::stat((work / "keys").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
  // A regular file where a directory is needed: a usage error naming it.
  write_text(work / "plain", "x");
  auto bad = sb({"keygen", work / "plain/sub/k.key"});
  SB_EXPECT_EXIT(bad, 2);
  EXPECT_TRUE(contains(bad.err, work / "plain")) << bad.describe();
  EXPECT_TRUE(contains(bad.err, "Not a directory")) << bad.describe();
  EXPECT_FALSE(exists(work / "plain/sub"));
}

}  // namespace
}  // namespace stripeback::it
