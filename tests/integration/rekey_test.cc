// stripeback rekey end to end: the new key restores identical bytes and the old one is
// refused; the pieces' data and checksums are untouched; a rekey killed at each of its
// crash points and run again finishes; a piece whose key slot cannot be rewritten, and a
// piece of format 3, open with the new key through the catalog's wrap; --dry-run and bad
// input change nothing.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "catalog/payload.h"
#include "catalog/record_log.h"
#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

namespace fs = std::filesystem;

using stripeback::testing::read_file;

// Every file under `dir` with its bytes, but the catalog's empty lock files (flock only).
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "lock" &&
        e.path().filename() != "maintenance.lock")
      out[e.path().string()] = read_file(e.path().string());
  return out;
}

// A piece without its key slot blocks (bytes 4096..12287 of a version 4 piece).
std::string without_slots(const std::string& piece) {
  std::string b = read_file(piece);
  if (b.size() > 3 * 4096) b.replace(4096, 2 * 4096, 2 * 4096, '\0');
  return b;
}

// The key version of every KeyWrap in `cat`'s catalog.log, by piece, in log order.
std::multimap<std::string, uint32_t> wraps_in_log(const std::string& cat) {
  const std::string b = read_file(cat + "/catalog.log");
  std::multimap<std::string, uint32_t> out;
  if (b.size() < catalog::kFileHeaderSize) return out;
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  const auto scan = catalog::scan_records(bytes.subspan(catalog::kFileHeaderSize),
                                          catalog::kFileHeaderSize, 0);
  for (const auto& f : scan.frames) {
    if (f.type != static_cast<uint16_t>(catalog::RecordType::key_wrap)) continue;
    auto w = catalog::decode_key_wraps(f.payload);
    EXPECT_TRUE(w.has_value());
    if (w)
      for (const auto& x : w->wraps) out.emplace(x.piece, x.kek_version);
  }
  return out;
}

class Rekey : public ::testing::Test {
 protected:
  void SetUp() override {
    make_file(src_ + "/a.dbf", 5u << 20, 11);
    make_file(src_ + "/b.dbf", 3u << 20, 12);
    make_file(src_ + "/c.dbf", 100000, 13);
    SB_ASSERT_EXIT(sb({"keygen", k1_}), 0);
    SB_ASSERT_EXIT(sb({"keygen", k2_}), 0);
  }
  void backup(const std::vector<std::string>& key = {}) {
    std::vector<std::string> a{"backup", src_, "--to", dest_, "--catalog", cat_, "--channels",
                               "2", "--max-piece-size", "2M", "--encrypt"};
    if (key.empty()) a.insert(a.end(), {"--key-file", k1_});
    else a.insert(a.end(), key.begin(), key.end());
    SB_ASSERT_EXIT(sb(a), 0);
  }
  RunResult rekey(const std::vector<std::string>& extra = {"--key-file", "K1", "--new-key-file",
                                                          "K2"},
                  const Env& env = {}) {
    std::vector<std::string> a{"rekey", "--catalog", cat_, "--json"};
    for (const auto& e : extra) a.push_back(e == "K1" ? k1_ : e == "K2" ? k2_ : e);
    return sb(a, env);
  }
  RunResult restore(const std::string& key, const std::string& to) {
    return sb({"restore", "--catalog", cat_, "--to", t_ / to, "--key-file", key});
  }
  void expect_restores_identical(const std::string& key, const std::string& to) {
    SB_ASSERT_EXIT(restore(key, to), 0);
    for (const char* f : {"/a.dbf", "/b.dbf", "/c.dbf"})
      EXPECT_EQ(read_file(t_ / to + src_ + f), read_file(src_ + f)) << f;
  }
  void expect_old_key_refused(const std::string& to) {
    RunResult r = restore(k1_, to);
    SB_EXPECT_EXIT(r, 4);
    EXPECT_TRUE(contains(r.err, "wrong passphrase or key"));
    EXPECT_FALSE(fs::exists(t_ / to));
  }
  TempDir t_{"sbit-rekey"};
  std::string src_ = t_ / "src", dest_ = t_ / "dest", cat_ = t_ / "cat";
  std::string k1_ = t_ / "k1.key", k2_ = t_ / "k2.key";
};

TEST_F(Rekey, NewKeyRestoresIdenticalOldKeyRefusedDataAndChecksumsUntouched) {
  backup();
  const auto pieces = pieces_in(dest_);
  ASSERT_GE(pieces.size(), 4u);
  std::map<std::string, std::string> before;
  for (const auto& p : pieces) before[p] = without_slots(p);
  RunResult r = rekey();
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(*j["rewrapped"].as_u64(), pieces.size()) << r.out;
  EXPECT_EQ(*j["failed"].as_u64(), 0u);
  EXPECT_TRUE(j["finished"].as_bool());
  EXPECT_EQ(*j["kek_version"].as_u64(), 2u);
  for (const auto& p : pieces) EXPECT_EQ(without_slots(p), before[p]) << p;
  expect_restores_identical(k2_, "r2");
  expect_old_key_refused("r1");
  // The recorded piece checksums still hold: validate reads every piece whole.
  SB_EXPECT_EXIT(sb({"validate", "--catalog", cat_, "--key-file", k2_}), 0);
  // The same command again: everything is done already, and nothing is written.
  const auto after = snapshot(t_.path());
  RunResult again = rekey();
  SB_ASSERT_EXIT(again, 0);
  EXPECT_EQ(*parse_json(again)["already"].as_u64(), pieces.size()) << again.out;
  EXPECT_TRUE(snapshot(t_.path()) == after);
}

TEST_F(Rekey, ASecondRekeyMovesOnAndOnlyTheNewestKeyOpens) {
  backup();
  SB_ASSERT_EXIT(rekey(), 0);
  const std::string k3 = t_ / "k3.key";
  SB_ASSERT_EXIT(sb({"keygen", k3}), 0);
  // After the first rekey the log holds each piece's wrap under key version 2.
  const size_t pieces = pieces_in(dest_).size();
  auto v2 = wraps_in_log(cat_);
  EXPECT_EQ(v2.size(), pieces);
  for (const auto& [piece, version] : v2) EXPECT_EQ(version, 2u) << piece;
  RunResult r = rekey({"--key-file", "K2", "--new-key-file", k3});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(*j["kek_version"].as_u64(), 3u);
  // The second rekey compacts them away: with key 2 and the catalog no data key can be
  // unwrapped any more. One record per piece was written by each rekey.
  EXPECT_EQ(*j["superseded_records_removed"].as_u64(), pieces);
  auto v3 = wraps_in_log(cat_);
  EXPECT_EQ(v3.size(), pieces);
  for (const auto& [piece, version] : v3) EXPECT_EQ(version, 3u) << piece;
  expect_restores_identical(k3, "r3");
  RunResult old = restore(k2_, "r2");
  SB_EXPECT_EXIT(old, 4);
}

TEST_F(Rekey, PassphraseToPassphraseFromFileAndEnvironment) {
  const std::string p1 = t_ / "p1";
  write_text(p1, "the first long passphrase\n");
  ::chmod(p1.c_str(), 0600);
  backup({"--passphrase-file", p1});
  RunResult r = rekey({"--passphrase-file", p1, "--new-passphrase-env", "SB_NEW_PASS"},
                      {{"SB_NEW_PASS", "the second long passphrase"}});
  SB_ASSERT_EXIT(r, 0);
  EXPECT_FALSE(contains(r.out + r.err, "second long passphrase"));
  RunResult ok = sb({"restore", "--catalog", cat_, "--to", t_ / "r", "--passphrase-env", "P"},
                    {{"P", "the second long passphrase"}});
  SB_ASSERT_EXIT(ok, 0);
  EXPECT_EQ(read_file(t_ / "r" + src_ + "/a.dbf"), read_file(src_ + "/a.dbf"));
  RunResult old = sb({"restore", "--catalog", cat_, "--to", t_ / "r1", "--passphrase-file", p1});
  SB_EXPECT_EXIT(old, 4);
  EXPECT_TRUE(contains(old.err, "wrong passphrase or key"));
}

TEST_F(Rekey, DryRunChangesNoByte) {
  backup();
  const auto before = snapshot(t_.path());
  RunResult r = rekey({"--key-file", "K1", "--new-key-file", "K2", "--dry-run"});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_TRUE(j["dry_run"].as_bool());
  EXPECT_EQ(*j["rewrapped"].as_u64(), pieces_in(dest_).size());
  EXPECT_TRUE(snapshot(t_.path()) == before);
  expect_restores_identical(k1_, "r1");
}

TEST_F(Rekey, BadInputChangesNothing) {
  backup();
  const auto before = snapshot(t_.path());
  RunResult same = rekey({"--key-file", "K1", "--new-key-file", "K1"});
  SB_EXPECT_EXIT(same, 2);
  EXPECT_TRUE(contains(same.err, "the new key is the old one"));
  // The wrong current key: exit 4 naming a piece, before anything is written.
  const std::string k3 = t_ / "k3.key";
  SB_ASSERT_EXIT(sb({"keygen", k3}), 0);
  const auto with_k3 = snapshot(t_.path());
  RunResult wrong = rekey({"--key-file", k3, "--new-key-file", "K2"});
  SB_EXPECT_EXIT(wrong, 4);
  EXPECT_TRUE(contains(wrong.err, "wrong passphrase or key"));
  EXPECT_TRUE(snapshot(t_.path()) == with_k3);
  fs::remove(k3);
  RunResult missing = rekey({"--key-file", t_ / "nothing.key", "--new-key-file", "K2"});
  SB_EXPECT_EXIT(missing, 2);
  EXPECT_TRUE(contains(missing.err, "nothing.key"));
  RunResult no_new = rekey({"--key-file", "K1"});
  SB_EXPECT_EXIT(no_new, 2);
  RunResult missing_new = rekey({"--key-file", "K1", "--new-key-file", t_ / "none.key"});
  SB_EXPECT_EXIT(missing_new, 2);
  EXPECT_TRUE(snapshot(t_.path()) == before);
  expect_restores_identical(k1_, "r1");
}

// A medium that refuses the rewrite: the new wrap is in the catalog only, which list says;
// the new key restores through it and the old key is refused by the catalog's restore.
TEST_F(Rekey, AKeySlotThatCannotBeRewrittenUsesTheCatalogsWrap) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAULTS");
  backup();
  const auto pieces = pieces_in(dest_);
  const std::string one = fs::path(pieces.front()).filename();
  RunResult r = rekey({"--key-file", "K1", "--new-key-file", "K2"},
                      {{"STRIPEBACK_FAULTS", "write:1+:EROFS:" + one}});
  SB_ASSERT_EXIT(r, 0);
  Json j = parse_json(r);
  EXPECT_EQ(*j["catalog_only"].as_u64(), 1u) << r.out;
  EXPECT_EQ(*j["rewrapped"].as_u64(), pieces.size() - 1);
  for (const auto& p : j["pieces"].items()) {
    if (p["name"].as_string() == one) {
      EXPECT_EQ(p["outcome"].as_string(), "catalog_only");
      EXPECT_TRUE(contains(p["detail"].as_string(), "Read-only file system"));
    }
  }
  RunResult l = sb({"list", "--catalog", cat_});
  SB_EXPECT_EXIT(l, 0);
  EXPECT_TRUE(contains(l.out, "1 piece(s) open with key version 2 only through the catalog"));
  Json lj = parse_json(sb({"list", "--catalog", cat_, "--json"}));
  EXPECT_EQ(*lj["backups"][0]["key_catalog_only_pieces"].as_u64(), 1u);
  expect_restores_identical(k2_, "r2");
  expect_old_key_refused("r1");
}

// A crash at each step of each piece's rewrap, then the same rekey again: it finishes the
// same key version, the new key restores everything and the old key nothing.
TEST_F(Rekey, KilledAtEveryCrashPointThenRunAgainFinishes) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_CRASH_AT");
  backup();
  const std::string base = t_ / "base";
  fs::create_directories(base);
  fs::copy(dest_, base + "/dest", fs::copy_options::recursive);
  fs::copy(cat_, base + "/cat", fs::copy_options::recursive);
  for (const std::string at :
       {"rekey-intent-recorded", "rekey-slot-written:1", "rekey-wrap-recorded:1",
        "rekey-slot-erased:1", "rekey-slot-written:3", "rekey-wrap-recorded:3",
        "rekey-slot-erased:3", "catalog-synced:1", "catalog-synced:4", "rekey-done-recorded"}) {
    SCOPED_TRACE(at);
    fs::remove_all(dest_);
    fs::remove_all(cat_);
    fs::copy(base + "/dest", dest_, fs::copy_options::recursive);
    fs::copy(base + "/cat", cat_, fs::copy_options::recursive);
    RunResult killed = rekey({"--key-file", "K1", "--new-key-file", "K2"},
                             {{"STRIPEBACK_CRASH_AT", at}});
    EXPECT_EQ(killed.term_signal, SIGKILL) << killed.describe();
    RunResult again = rekey();
    SB_ASSERT_EXIT(again, 0);
    Json j = parse_json(again);
    EXPECT_TRUE(j["finished"].as_bool());
    EXPECT_EQ(*j["kek_version"].as_u64(), 2u);
    EXPECT_EQ(*j["failed"].as_u64(), 0u);
    fs::remove_all(t_ / "r2");
    fs::remove_all(t_ / "r1");
    expect_restores_identical(k2_, "r2");
    expect_old_key_refused("r1");
  }
}

}  // namespace
}  // namespace stripeback::it
