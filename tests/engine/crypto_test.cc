// The frame cipher and the keyring on their own: sealed data opens only with the same
// key, nonce and context; key sources are parsed strictly and explain what is wrong.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "engine/transform/crypto.h"
#include "tests/support/temp_dir.h"

namespace stripeback::engine {
namespace {

std::array<uint8_t, 32> key_of(uint8_t seed) {
  std::array<uint8_t, 32> k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(seed * 31 + i);
  return k;
}

const std::array<uint8_t, 8> kPrefix{1, 2, 3, 4, 5, 6, 7, 8};

std::vector<std::byte> sample(size_t n) {
  std::vector<std::byte> v(n + kTagSize);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(i * 7 + 3);
  return v;
}

void write_text(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path, std::ios::binary) << text;
  ::chmod(path.c_str(), mode);
}

TEST(FrameCipher, SealedDataOpensAndDiffersFromPlaintext) {
  FrameCipher c(key_of(1), kPrefix);
  auto data = sample(10000);
  auto orig = data;
  std::vector<uint8_t> aad{9, 9, 9};
  ASSERT_TRUE(c.seal(data.data(), 10000, 5, aad).has_value());
  EXPECT_NE(std::memcmp(data.data(), orig.data(), 10000), 0);
  ASSERT_TRUE(c.open(data.data(), 10000 + kTagSize, 5, aad).has_value());
  EXPECT_EQ(std::memcmp(data.data(), orig.data(), 10000), 0);
}

TEST(FrameCipher, AnyChangeFailsAuthentication) {
  FrameCipher c(key_of(1), kPrefix);
  std::vector<uint8_t> aad{1, 2, 3, 4};
  auto sealed = sample(4096);
  ASSERT_TRUE(c.seal(sealed.data(), 4096, 7, aad).has_value());
  auto expect_rejected = [&](std::vector<std::byte> d, uint32_t seq, std::vector<uint8_t> a,
                             const FrameCipher& key, const char* what) {
    auto r = key.open(d.data(), d.size(), seq, a);
    ASSERT_FALSE(r.has_value()) << what;
    EXPECT_EQ(r.error().code, Errc::corrupt) << what;
    EXPECT_NE(r.error().what.find("authentication failed"), std::string::npos) << what;
  };
  auto flipped = sealed;
  flipped[100] ^= std::byte{1};
  expect_rejected(flipped, 7, aad, c, "flipped ciphertext bit");
  auto bad_tag = sealed;
  bad_tag[4096 + 3] ^= std::byte{0x80};
  expect_rejected(bad_tag, 7, aad, c, "flipped tag bit");
  expect_rejected(sealed, 8, aad, c, "other sequence (frame moved)");
  expect_rejected(sealed, 7, {1, 2, 3, 5}, c, "other context");
  FrameCipher other(key_of(2), kPrefix);
  expect_rejected(sealed, 7, aad, other, "other piece key");
}

TEST(FrameCipher, NonceIsPrefixAndSequence) {
  FrameCipher c(key_of(1), kPrefix);
  auto n = c.nonce(0x01020304);
  EXPECT_EQ(std::memcmp(n.data(), kPrefix.data(), 8), 0);
  EXPECT_EQ(n[8], 4);
  EXPECT_EQ(n[11], 1);
  EXPECT_NE(c.nonce(1), c.nonce(2));
}

TEST(Keyring, NoSourceMeansNoKeyring) {
  auto k = Keyring::load({});
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(*k, nullptr);
}

TEST(Keyring, KeyFileInHexOrRawBytesWorksAndAnythingElseIsExplained) {
  testing::TempDir dir;
  std::string hex = dir.path() + "/hex.key", raw = dir.path() + "/raw.key",
              bad = dir.path() + "/bad.key";
  write_text(hex, std::string(64, 'a') + "\n");
  write_text(raw, std::string(32, '\x07'));
  write_text(bad, "not a key\n");
  EXPECT_TRUE(Keyring::load({"", "", hex}).has_value());
  EXPECT_TRUE(Keyring::load({"", "", raw}).has_value());
  auto r = Keyring::load({"", "", bad});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_NE(r.error().what.find(bad), std::string::npos) << r.error().what;
  EXPECT_NE(r.error().what.find("64 hex digits"), std::string::npos) << r.error().what;
  auto missing = Keyring::load({"", "", dir.path() + "/none.key"});
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().what.find("none.key"), std::string::npos);
}

TEST(Keyring, PassphraseSourcesAreCheckedAndOnlyOneIsAllowed) {
  testing::TempDir dir;
  std::string empty = dir.path() + "/empty", pass = dir.path() + "/pass";
  write_text(empty, "\nsecond line\n");
  write_text(pass, "correct horse\n");
  auto e = Keyring::load({empty, "", ""});
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().what.find("empty first line"), std::string::npos);
  ::unsetenv("SB_TEST_NO_SUCH_VAR");
  auto v = Keyring::load({"", "SB_TEST_NO_SUCH_VAR", ""});
  ASSERT_FALSE(v.has_value());
  EXPECT_NE(v.error().what.find("SB_TEST_NO_SUCH_VAR"), std::string::npos);
  auto two = Keyring::load({pass, "", pass});
  ASSERT_FALSE(two.has_value());
  EXPECT_NE(two.error().what.find("only one"), std::string::npos);
  EXPECT_TRUE(Keyring::load({pass, "", ""}).has_value());
}

// A piece sealed under a passphrase opens with the same passphrase from any source and
// reports a different one as a wrong key, not as damage.
TEST(Keyring, WrongPassphraseIsWrongKeyNotCorruption) {
  testing::TempDir dir;
  std::string good = dir.path() + "/good", bad = dir.path() + "/bad";
  write_text(good, "correct horse battery staple\n");
  write_text(bad, "correct horse battery stable\n");
  auto writer = Keyring::load({good, "", ""});
  ASSERT_TRUE(writer.has_value());
  ASSERT_TRUE((*writer)->start_job().has_value());
  PieceHeader h;
  h.name = "x.sbp";
  auto sealing = (*writer)->new_piece(h);
  ASSERT_TRUE(sealing.has_value());
  EXPECT_EQ(h.cipher, Cipher::aes256gcm);
  EXPECT_EQ(h.crypto.kdf, Kdf::scrypt);
  EXPECT_EQ(h.crypto.log2_n, kScryptLog2N);

  ::setenv("SB_TEST_PASS", "correct horse battery staple", 1);
  auto same = Keyring::load({"", "SB_TEST_PASS", ""});
  ASSERT_TRUE(same.has_value());
  auto opened = (*same)->open_piece(h, "x.sbp");
  ASSERT_TRUE(opened.has_value()) << opened.error().what;
  // Both ciphers agree: what one seals the other opens.
  auto data = sample(512);
  ASSERT_TRUE((*sealing)->seal(data.data(), 512, 0, {}).has_value());
  EXPECT_TRUE((*opened)->open(data.data(), 512 + kTagSize, 0, {}).has_value());

  auto wrong = Keyring::load({bad, "", ""});
  ASSERT_TRUE(wrong.has_value());
  auto w = (*wrong)->open_piece(h, "x.sbp");
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().code, Errc::wrong_key);
  EXPECT_NE(w.error().what.find("wrong passphrase or key"), std::string::npos);

  // The right passphrase with an edited header is damage, not a wrong key.
  PieceHeader edited = h;
  edited.piece_number = 99;
  auto d = (*same)->open_piece(edited, "x.sbp");
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().code, Errc::corrupt);
}

TEST(Keyring, GeneratedKeyFileIsPrivateUniqueAndNeverReplaced) {
  testing::TempDir dir;
  std::string a = dir.path() + "/a.key", b = dir.path() + "/b.key";
  ASSERT_TRUE(generate_key_file(a).has_value());
  ASSERT_TRUE(generate_key_file(b).has_value());
  struct stat st;
  ASSERT_EQ(::stat(a.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream fa(a), fb(b);
  std::string ka, kb;
  fa >> ka;
  fb >> kb;
  EXPECT_EQ(ka.size(), 64u);
  EXPECT_NE(ka, kb);
  auto again = generate_key_file(a);
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().what.find(a), std::string::npos);
  EXPECT_TRUE(Keyring::load({"", "", a}).has_value());
}

}  // namespace
}  // namespace stripeback::engine

namespace stripeback::engine {
namespace {

std::shared_ptr<Keyring> key_file_ring(const std::string& path) {
  auto k = Keyring::load({"", "", path});
  EXPECT_TRUE(k.has_value()) << k.error().what;
  return k ? *k : nullptr;
}

// A version 4 piece's data key, rewrapped under a new key at the next version: the new
// wrap opens with the new key only; once it is the newest wrap (slot or catalog) the old
// key is refused, and a wrap moved to another piece does not open.
TEST(Keyring, RewrapUnderANewKeyRetiresTheOldOne) {
  testing::TempDir dir;
  const std::string k1 = dir.path() + "/k1", k2 = dir.path() + "/k2";
  ASSERT_TRUE(generate_key_file(k1).has_value());
  ASSERT_TRUE(generate_key_file(k2).has_value());
  auto old_ring = key_file_ring(k1), new_ring = key_file_ring(k2);
  ASSERT_TRUE(old_ring && new_ring);
  EXPECT_FALSE(old_ring->same_secret(*new_ring));
  EXPECT_TRUE(old_ring->same_secret(*key_file_ring(k1)));
  ASSERT_TRUE(old_ring->start_job().has_value());
  PieceHeader h;
  h.version = kSlottedPieceVersion;
  h.name = "x.sbp";
  auto sealing = old_ring->new_piece(h);
  ASSERT_TRUE(sealing.has_value());
  ASSERT_TRUE(h.slots[0].has_value());
  EXPECT_EQ(h.slots[0]->wrap.kek_version, 1u);

  uint32_t version = 0;
  auto dk = old_ring->open_data_key(h, "x.sbp", &version);
  ASSERT_TRUE(dk.has_value()) << dk.error().what;
  EXPECT_EQ(version, 1u);
  EXPECT_EQ(new_ring->open_data_key(h, "x.sbp").error().code, Errc::wrong_key);

  ASSERT_TRUE(new_ring->start_job().has_value());
  auto wrap = new_ring->wrap_data_key(h, *dk, 2);
  ASSERT_TRUE(wrap.has_value());
  // In the catalog only: the newest version wins, so the old key no longer opens it here.
  PieceHeader in_catalog = h;
  new_ring->set_catalog_wrap("x.sbp", *wrap);
  old_ring->set_catalog_wrap("x.sbp", *wrap);
  auto opened = new_ring->open_piece(in_catalog, "x.sbp");
  ASSERT_TRUE(opened.has_value()) << opened.error().what;
  auto data = sample(256);
  ASSERT_TRUE((*sealing)->seal(data.data(), 256, 0, {}).has_value());
  EXPECT_TRUE((*opened)->open(data.data(), 256 + kTagSize, 0, {}).has_value());
  EXPECT_EQ(old_ring->open_piece(in_catalog, "x.sbp").error().code, Errc::wrong_key);

  // In the piece's slot, with the old slot still there (a rekey between its steps): both
  // slots are valid, only the newest version is taken.
  auto fresh_new = key_file_ring(k2), fresh_old = key_file_ring(k1);
  PieceHeader both = h;
  both.slots[1] = KeySlot{2, *wrap};
  EXPECT_TRUE(fresh_new->open_piece(both, "x.sbp").has_value());
  EXPECT_EQ(fresh_old->open_piece(both, "x.sbp").error().code, Errc::wrong_key);
  // The same wrap on another piece does not authenticate: damage, not a wrong key.
  PieceHeader other = both;
  other.piece_number = 2;
  other.slots[0].reset();
  EXPECT_EQ(fresh_new->open_piece(other, "y.sbp").error().code, Errc::corrupt);
}

}  // namespace
}  // namespace stripeback::engine
