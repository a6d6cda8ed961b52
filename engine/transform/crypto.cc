#include "engine/transform/crypto.h"

#include "catalog/seal.h"

#include <fcntl.h>
#if STRIPEBACK_WITH_CRYPTO
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#endif
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>

#include "storage/async/file.h"
#include "engine/wiring/backends.h"
#include "util/bytes.h"
#include "util/option_words.h"

namespace stripeback::engine {
#if STRIPEBACK_WITH_CRYPTO
namespace {

const EVP_CIPHER* aes_gcm() {
  static EVP_CIPHER* c = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
  return c;
}

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

Error crypto_failure(const std::string& what) {
  return Error{Errc::io, 0, "encryption library failure: " + what};
}

// AES-256-GCM over `n` bytes at `p`, in place; the tag goes to / comes from `tag`.
Result<bool> gcm(bool encrypt, const uint8_t* key, const uint8_t* iv, std::span<const uint8_t> aad,
                 std::byte* p, size_t n, uint8_t* tag) {
  if (!aes_gcm()) return crypto_failure("AES-256-GCM is not available");
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  if (!ctx) return crypto_failure("out of memory");
  auto* u = reinterpret_cast<unsigned char*>(p);
  int len = 0;
  if (encrypt) {
    if (EVP_EncryptInit_ex2(ctx.get(), aes_gcm(), key, iv, nullptr) != 1 ||
        (!aad.empty() && EVP_EncryptUpdate(ctx.get(), nullptr, &len, aad.data(),
                                           static_cast<int>(aad.size())) != 1) ||
        (n > 0 && EVP_EncryptUpdate(ctx.get(), u, &len, u, static_cast<int>(n)) != 1) ||
        EVP_EncryptFinal_ex(ctx.get(), u + n, &len) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagSize, tag) != 1)
      return crypto_failure("sealing failed");
    return true;
  }
  if (EVP_DecryptInit_ex2(ctx.get(), aes_gcm(), key, iv, nullptr) != 1 ||
      (!aad.empty() && EVP_DecryptUpdate(ctx.get(), nullptr, &len, aad.data(),
                                         static_cast<int>(aad.size())) != 1) ||
      (n > 0 && EVP_DecryptUpdate(ctx.get(), u, &len, u, static_cast<int>(n)) != 1) ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagSize, tag) != 1)
    return crypto_failure("opening failed");
  return EVP_DecryptFinal_ex(ctx.get(), u + n, &len) == 1;
}

// SHA-256 of a label and some parts, for deriving the job key and the check value.
std::array<uint8_t, 32> sha256(const char* label, std::initializer_list<std::span<const uint8_t>> parts) {
  std::array<uint8_t, 32> out{};
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  unsigned len = 0;
  EVP_DigestInit_ex(md, EVP_sha256(), nullptr);
  EVP_DigestUpdate(md, label, std::strlen(label) + 1);
  for (auto part : parts) EVP_DigestUpdate(md, part.data(), part.size());
  EVP_DigestFinal_ex(md, out.data(), &len);
  EVP_MD_CTX_free(md);
  return out;
}

// What a piece's wrapped key is bound to: its whole header block as written, with the wrap
// nonce and wrapped key zeroed. Moving a wrapped key to another piece, or editing any
// header field, makes unwrapping fail.
// A wrap kept outside the version 1-3 header (a key slot, a catalog KeyWrap) also binds
// its key-encryption key version, appended: a wrap cannot pass for another version.
std::vector<uint8_t> header_aad(const PieceHeader& h, std::optional<uint32_t> kek_version = {}) {
  PieceHeader copy = h;
  copy.crypto.wrap_nonce = {};
  copy.crypto.wrapped_key = {};
  std::vector<uint8_t> block(kBlock);
  encode_piece_header(copy, std::span<std::byte, kBlock>(reinterpret_cast<std::byte*>(block.data()), kBlock));
  if (kek_version) {
    block.resize(kBlock + 4);
    util::put_le32(block.data() + kBlock, *kek_version);
  }
  return block;
}

// One wrap of a piece's data key that open_data_key() may try.
struct Candidate {
  const PieceCrypto* wrap;
  bool in_header;  // the version 1-3 header's own wrap (no version in its associated data)
};

// A key or passphrase file's contents and permission bits.
struct SecretFile {
  std::string data;
  mode_t mode = 0;
};

Result<SecretFile> read_small_file(const std::string& path, const char* what) {
  io::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, std::string("unable to open ") + what + " '" + path + "'");
  struct stat st;
  if (::fstat(fd.get(), &st) != 0)
    return sys_error(errno, std::string("unable to stat ") + what + " '" + path + "'");
  if (!S_ISREG(st.st_mode))
    return fail(Errc::invalid_argument, std::string(what) + " '" + path + "' is not a regular file");
  SecretFile file;
  file.mode = st.st_mode;
  std::string& data = file.data;
  char buf[4096];
  while (data.size() < 65536) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error(errno, std::string("unable to read ") + what + " '" + path + "'");
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  return file;
}

// Advice about a file that holds a usable secret (for one that does not, the error is all
// that matters).
std::optional<std::string> readable_by_others(const SecretFile& f, const std::string& path,
                                              const char* what) {
  if ((f.mode & 077) == 0) return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%o", static_cast<unsigned>(f.mode & 0777));
  return std::string(what) + " '" + path + "' can be read by other users (mode " + mode +
         "); chmod 600 it";
}

}  // namespace

DataKey::~DataKey() { OPENSSL_cleanse(bytes.data(), bytes.size()); }

FrameCipher::FrameCipher(std::span<const uint8_t, 32> key, std::span<const uint8_t, 8> prefix) {
  std::memcpy(key_.data(), key.data(), key_.size());
  std::memcpy(prefix_.data(), prefix.data(), prefix_.size());
}

FrameCipher::~FrameCipher() { OPENSSL_cleanse(key_.data(), key_.size()); }

std::array<uint8_t, 12> FrameCipher::nonce(uint32_t sequence) const {
  std::array<uint8_t, 12> iv{};
  std::memcpy(iv.data(), prefix_.data(), prefix_.size());
  util::put_le32(iv.data() + 8, sequence);
  return iv;
}

Result<void> FrameCipher::seal(std::byte* p, size_t n, uint32_t sequence,
                               std::span<const uint8_t> aad) const {
  auto iv = nonce(sequence);
  SB_TRY(gcm(true, key_.data(), iv.data(), aad, p, n, reinterpret_cast<uint8_t*>(p + n)));
  return ok();
}

Result<void> FrameCipher::open(std::byte* p, size_t n, uint32_t sequence,
                               std::span<const uint8_t> aad) const {
  if (n < kTagSize) return fail(Errc::corrupt, "sealed payload is shorter than its tag");
  auto iv = nonce(sequence);
  size_t body = n - kTagSize;
  SB_ASSIGN(bool good, gcm(false, key_.data(), iv.data(), aad, p, body,
                           reinterpret_cast<uint8_t*>(p + body)));
  if (!good)
    return fail(Errc::corrupt,
                "authentication failed (the frame was altered, moved or taken from another piece)");
  return ok();
}

#endif

std::vector<uint8_t> frame_aad(uint64_t piece_offset, const FrameHeader& h) {
  util::ByteWriter w;
  w.u64(piece_offset);
  w.u8(static_cast<uint8_t>(h.type));
  w.u8(static_cast<uint8_t>((h.compressed ? 1 : 0) | (h.sealed ? 2 : 0)));
  w.u32(h.file_id);
  w.u32(h.sequence);
  w.u64(h.offset);
  w.u32(h.raw_len);
  w.u32(h.stored_len);
  return w.take();
}

std::string key_options(std::string_view last) {
  return util::option_word("passphrase_file") + ", " + util::option_word("passphrase_env") + " " +
         std::string(last) + " " + util::option_word("key_file");
}

#if STRIPEBACK_WITH_CRYPTO
Result<std::shared_ptr<Keyring>> Keyring::load(const KeySource& src) {
  int given = !src.passphrase_file.empty() + !src.passphrase_env.empty() + !src.key_file.empty();
  if (given == 0) return std::shared_ptr<Keyring>();
  if (given > 1)
    return fail(Errc::invalid_argument,
                "give only one of " + key_options("and"));
  std::shared_ptr<Keyring> k(new Keyring());
  if (!src.key_file.empty()) {
    SB_ASSIGN(SecretFile file, read_small_file(src.key_file, "key file"));
    std::string& data = file.data;
    k->kind_ = Kdf::key_file;
    if (data.size() == 32) {
      k->secret_.assign(data.begin(), data.end());
    } else {
      std::string hex;
      for (char c : data)
        if (!std::isspace(static_cast<unsigned char>(c))) hex.push_back(c);
      bool valid = hex.size() == 64;
      for (size_t i = 0; valid && i < 64; i += 2) {
        char pair[3] = {hex[i], hex[i + 1], 0};
        char* end = nullptr;
        long v = std::strtol(pair, &end, 16);
        if (end != pair + 2) valid = false;
        k->secret_.push_back(static_cast<uint8_t>(v));
      }
      OPENSSL_cleanse(hex.data(), hex.size());
      if (!valid)
        return fail(Errc::invalid_argument, "key file '" + src.key_file +
                                                "' must hold 32 bytes or 64 hex digits "
                                                "(make one with 'stripeback keygen FILE')");
    }
    OPENSSL_cleanse(data.data(), data.size());
    if (auto w = readable_by_others(file, src.key_file, "key file")) k->warnings_.push_back(*w);
    return k;
  }
  k->kind_ = Kdf::scrypt;
  std::string pass;
  if (!src.passphrase_file.empty()) {
    SB_ASSIGN(SecretFile file, read_small_file(src.passphrase_file, "passphrase file"));
    pass = std::move(file.data);
    size_t nl = pass.find('\n');
    if (nl != std::string::npos) pass.resize(nl);
    if (!pass.empty() && pass.back() == '\r') pass.pop_back();
    if (pass.empty())
      return fail(Errc::invalid_argument,
                  "passphrase file '" + src.passphrase_file + "' has an empty first line");
    if (auto w = readable_by_others(file, src.passphrase_file, "passphrase file"))
      k->warnings_.push_back(*w);
  } else {
    const char* v = std::getenv(src.passphrase_env.c_str());
    if (!v || !*v)
      return fail(Errc::invalid_argument,
                  "environment variable " + src.passphrase_env + " is not set or empty");
    pass = v;
  }
  k->secret_.assign(pass.begin(), pass.end());
  OPENSSL_cleanse(pass.data(), pass.size());
  return k;
}

Keyring::~Keyring() {
  OPENSSL_cleanse(secret_.data(), secret_.size());
  OPENSSL_cleanse(job_key_.kek.data(), job_key_.kek.size());
  for (auto& [salt, key] : cache_) OPENSSL_cleanse(key.kek.data(), key.kek.size());
}

const char* Keyring::kind_name() const {
  return kind_ == Kdf::key_file ? "key file" : "passphrase";
}

Result<Keyring::JobKey> Keyring::derive(Kdf kdf, uint8_t log2_n, uint8_t r, uint8_t p,
                                        std::span<const uint8_t, 16> salt) const {
  std::array<uint8_t, 32> master{};
  if (kdf == Kdf::scrypt) {
    if (log2_n < 10 || log2_n > 22 || r == 0 || r > 32 || p == 0 || p > 16)
      return fail(Errc::corrupt, "scrypt parameters are out of range");
    uint64_t n = uint64_t{1} << log2_n;
    uint64_t maxmem = 128 * n * r * p + (64u << 20);
    if (EVP_PBE_scrypt(reinterpret_cast<const char*>(secret_.data()), secret_.size(), salt.data(),
                       salt.size(), n, r, p, maxmem, master.data(), master.size()) != 1)
      return crypto_failure("scrypt failed");
  } else {
    master = sha256("stripeback key file", {salt, secret_});
  }
  JobKey k;
  k.kek = sha256("stripeback job key", {master});
  auto check = sha256("stripeback key check", {master});
  std::memcpy(k.check.data(), check.data(), k.check.size());
  OPENSSL_cleanse(master.data(), master.size());
  return k;
}

namespace {
// HMAC-SHA256 under a seal key, truncated to 16 bytes: the catalog's record and chain MACs.
class HmacSealer final : public catalog::Sealer {
 public:
  // Keyed once here; each MAC starts from a copy of this context.
  explicit HmacSealer(const std::array<uint8_t, 32>& key) {
    mac_ = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    ctx_ = mac_ ? EVP_MAC_CTX_new(mac_) : nullptr;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    if (ctx_ && EVP_MAC_init(ctx_, key.data(), key.size(), params) != 1) {
      EVP_MAC_CTX_free(ctx_);
      ctx_ = nullptr;
    }
  }
  ~HmacSealer() override {
    EVP_MAC_CTX_free(ctx_);
    EVP_MAC_free(mac_);
  }
  HmacSealer(const HmacSealer&) = delete;
  HmacSealer& operator=(const HmacSealer&) = delete;
  catalog::Mac mac(std::initializer_list<std::span<const uint8_t>> parts) const override {
    std::array<uint8_t, 32> full{};
    EVP_MAC_CTX* ctx = ctx_ ? EVP_MAC_CTX_dup(ctx_) : nullptr;
    size_t out_len = 0;
    bool good = ctx != nullptr;
    for (auto part : parts)
      good = good && (part.empty() || EVP_MAC_update(ctx, part.data(), part.size()) == 1);
    good = good && EVP_MAC_final(ctx, full.data(), &out_len, full.size()) == 1;
    EVP_MAC_CTX_free(ctx);
    catalog::Mac out{};
    // A MAC that could not be computed (libcrypto out of memory) is all ones: it matches
    // no seal, so verification reports records rather than vouching for them.
    if (!good) out.fill(0xff);
    else std::copy_n(full.begin(), out.size(), out.begin());
    OPENSSL_cleanse(full.data(), full.size());
    return out;
  }

 private:
  EVP_MAC* mac_ = nullptr;
  EVP_MAC_CTX* ctx_ = nullptr;  // keyed
};
}  // namespace

Result<std::shared_ptr<const catalog::Sealer>> Keyring::catalog_sealer(
    const catalog::SealParams& params) {
  if (params.kdf != static_cast<uint8_t>(kind_))
    return fail(Errc::wrong_key, std::string("wrong passphrase or key: the catalog is sealed with a ") +
                                     (kind_ == Kdf::key_file ? "passphrase" : "key file") +
                                     ", and a " + kind_name() + " was given");
  SB_ASSIGN(JobKey k, derive(kind_, params.log2_n, params.r, params.p, params.salt));
  auto key = sha256("stripeback catalog seal key", {k.kek});
  OPENSSL_cleanse(k.kek.data(), k.kek.size());
  auto sealer = std::make_shared<const HmacSealer>(key);
  OPENSSL_cleanse(key.data(), key.size());
  return std::shared_ptr<const catalog::Sealer>(sealer);
}

Result<std::pair<catalog::SealParams, std::shared_ptr<const catalog::Sealer>>>
Keyring::new_catalog_seal(uint32_t kek_version) {
  catalog::SealParams p;
  p.kdf = static_cast<uint8_t>(kind_);
  if (kind_ == Kdf::scrypt) {
    p.log2_n = kScryptLog2N;
    p.r = kScryptR;
    p.p = kScryptP;
  }
  if (RAND_bytes(p.salt.data(), static_cast<int>(p.salt.size())) != 1)
    return crypto_failure("no random numbers for the catalog's seal");
  p.kek_version = kek_version;
  SB_ASSIGN(auto sealer, catalog_sealer(p));
  p.check = catalog::seal_check(*sealer);
  return std::make_pair(p, sealer);
}

Result<void> Keyring::start_job() {
  PieceCrypto c;
  c.kdf = kind_;
  if (kind_ == Kdf::scrypt) {
    c.log2_n = kScryptLog2N;
    c.r = kScryptR;
    c.p = kScryptP;
  }
  if (RAND_bytes(c.salt.data(), static_cast<int>(c.salt.size())) != 1)
    return crypto_failure("no random numbers for the salt");
  SB_ASSIGN(job_key_, derive(c.kdf, c.log2_n, c.r, c.p, c.salt));
  c.check = job_key_.check;
  job_ = c;
  job_started_ = true;
  return ok();
}

Result<std::unique_ptr<FrameCipher>> Keyring::new_piece(PieceHeader& h) {
  if (!job_started_) return fail(Errc::invalid_argument, "no backup job key");
  h.cipher = Cipher::aes256gcm;
  h.crypto = job_;
  std::array<uint8_t, 32> dk{};
  if (RAND_bytes(dk.data(), 32) != 1 ||
      RAND_bytes(h.crypto.nonce_prefix.data(), 8) != 1 ||
      RAND_bytes(h.crypto.wrap_nonce.data(), 12) != 1)
    return crypto_failure("no random numbers for a piece key");
  auto cipher = std::make_unique<FrameCipher>(dk, h.crypto.nonce_prefix);
  std::memcpy(h.crypto.wrapped_key.data(), dk.data(), 32);
  OPENSSL_cleanse(dk.data(), dk.size());
  h.crypto.kek_version = 1;
  const bool slotted = has_key_slots(h);
  auto aad = slotted ? header_aad(h, h.crypto.kek_version) : header_aad(h);
  SB_TRY(gcm(true, job_key_.kek.data(), h.crypto.wrap_nonce.data(), aad,
             reinterpret_cast<std::byte*>(h.crypto.wrapped_key.data()), 32,
             h.crypto.wrapped_key.data() + 32));
  h.slots = {};
  if (slotted) h.slots[0] = KeySlot{1, h.crypto};
  return cipher;
}

Result<PieceCrypto> Keyring::wrap_data_key(const PieceHeader& h, const DataKey& key,
                                           uint32_t kek_version) {
  if (!job_started_) return fail(Errc::invalid_argument, "no key-encryption key");
  PieceCrypto c = job_;
  c.nonce_prefix = h.crypto.nonce_prefix;
  c.kek_version = kek_version;
  if (RAND_bytes(c.wrap_nonce.data(), 12) != 1)
    return crypto_failure("no random numbers for a key wrap");
  std::memcpy(c.wrapped_key.data(), key.bytes.data(), 32);
  auto aad = header_aad(h, kek_version);
  SB_TRY(gcm(true, job_key_.kek.data(), c.wrap_nonce.data(), aad,
             reinterpret_cast<std::byte*>(c.wrapped_key.data()), 32, c.wrapped_key.data() + 32));
  return c;
}

bool Keyring::same_secret(const Keyring& other) const {
  return kind_ == other.kind_ && secret_.size() == other.secret_.size() &&
         CRYPTO_memcmp(secret_.data(), other.secret_.data(), secret_.size()) == 0;
}

Result<std::unique_ptr<FrameCipher>> Keyring::open_piece(const PieceHeader& h,
                                                         const std::string& piece_path) {
  if (h.cipher == Cipher::none) return std::unique_ptr<FrameCipher>();
  SB_ASSIGN(DataKey key, open_data_key(h, piece_path));
  return std::make_unique<FrameCipher>(key.bytes, h.crypto.nonce_prefix);
}

Result<DataKey> Keyring::open_data_key(const PieceHeader& h, const std::string& piece_path,
                                       uint32_t* kek_version) {
  if (h.cipher == Cipher::none)
    return fail(Errc::invalid_argument, "piece '" + piece_path + "' is not encrypted");
  std::vector<Candidate> all;
  if (!has_key_slots(h)) all.push_back({&h.crypto, true});
  // The current slot (highest generation) first.
  std::vector<const KeySlot*> slots;
  for (const auto& s : h.slots)
    if (s) slots.push_back(&*s);
  std::sort(slots.begin(), slots.end(),
            [](const KeySlot* a, const KeySlot* b) { return a->generation > b->generation; });
  for (const KeySlot* s : slots) all.push_back({&s->wrap, false});
  if (auto it = catalog_wraps_.find(h.name); it != catalog_wraps_.end())
    all.push_back({&it->second, false});
  if (all.empty())
    return fail(Errc::corrupt, "piece '" + piece_path + "' has no readable key slot");
  uint32_t newest = 0;
  for (const Candidate& c : all) newest = std::max(newest, c.wrap->kek_version);
  bool other_kind = false, checked = false;
  for (const Candidate& cand : all) {
    const PieceCrypto& c = *cand.wrap;
    if (c.kek_version != newest) continue;
    if (c.kdf != kind_) {
      other_kind = true;
      continue;
    }
    JobKey key;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(c.salt);
      if (it == cache_.end()) {
        SB_ASSIGN(JobKey k, derive(c.kdf, c.log2_n, c.r, c.p, c.salt));
        it = cache_.emplace(c.salt, k).first;
        OPENSSL_cleanse(k.kek.data(), k.kek.size());
      }
      key = it->second;
    }
    if (CRYPTO_memcmp(key.check.data(), c.check.data(), key.check.size()) != 0) {
      OPENSSL_cleanse(key.kek.data(), key.kek.size());
      continue;
    }
    checked = true;
    DataKey out;
    std::array<uint8_t, 48> wrapped = c.wrapped_key;
    auto aad = cand.in_header ? header_aad(h) : header_aad(h, c.kek_version);
    auto good = gcm(false, key.kek.data(), c.wrap_nonce.data(), aad,
                    reinterpret_cast<std::byte*>(wrapped.data()), 32, wrapped.data() + 32);
    OPENSSL_cleanse(key.kek.data(), key.kek.size());
    if (!good) return good.error();
    if (*good) {
      std::memcpy(out.bytes.data(), wrapped.data(), 32);
      OPENSSL_cleanse(wrapped.data(), wrapped.size());
      if (kek_version) *kek_version = c.kek_version;
      return out;
    }
    OPENSSL_cleanse(wrapped.data(), wrapped.size());
  }
  if (checked)
    return fail(Errc::corrupt, "piece '" + piece_path +
                                   "' has a damaged or altered header: its data key does not "
                                   "authenticate");
  if (other_kind)
    return fail(Errc::wrong_key, "wrong passphrase or key: piece '" + piece_path +
                                     "' was encrypted with a " +
                                     (kind_ == Kdf::key_file ? "passphrase" : "key file") +
                                     ", not a " + kind_name());
  return fail(Errc::wrong_key,
              std::string("wrong passphrase or key for piece '") + piece_path + "'");
}

Result<void> generate_key_file(const std::string& path) {
  std::array<uint8_t, 32> key{};
  if (RAND_bytes(key.data(), 32) != 1) return crypto_failure("no random numbers for a key");
  static const char* hex = "0123456789abcdef";
  std::string text;
  for (uint8_t b : key) {
    text.push_back(hex[b >> 4]);
    text.push_back(hex[b & 15]);
  }
  text.push_back('\n');
  OPENSSL_cleanse(key.data(), key.size());
  // Missing parent directories are created for the key alone: no one else may even list it.
  std::string parent = std::filesystem::path(path).parent_path().string();
  if (!parent.empty()) {
    if (auto r = io::make_dirs(parent, 0700); !r) {
      OPENSSL_cleanse(text.data(), text.size());
      return r.error().wrap("unable to create key file '" + path + "'");
    }
  }
  io::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    OPENSSL_cleanse(text.data(), text.size());
    return sys_error(errno, "unable to create key file '" + path + "'");
  }
  ssize_t n = ::write(fd.get(), text.data(), text.size());
  int err = errno;
  OPENSSL_cleanse(text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size()) || ::fsync(fd.get()) != 0) {
    ::unlink(path.c_str());
    return sys_error(n < 0 ? err : EIO, "unable to write key file '" + path + "'");
  }
  return io::fsync_dir(parent.empty() ? "." : parent);
}

#else
// A build without libcrypto (STRIPEBACK_WITH_CRYPTO=OFF): no key can be loaded, so no piece
// is sealed or opened; an encrypted backup's pieces are refused when a key is asked for.
namespace {
Error no_crypto(const std::string& asked) {
  return left_out("encryption", "STRIPEBACK_WITH_CRYPTO", asked);
}
}  // namespace

FrameCipher::FrameCipher(std::span<const uint8_t, 32>, std::span<const uint8_t, 8>) : key_{}, prefix_{} {}
FrameCipher::~FrameCipher() = default;
std::array<uint8_t, 12> FrameCipher::nonce(uint32_t) const { return {}; }
Result<void> FrameCipher::seal(std::byte*, size_t, uint32_t, std::span<const uint8_t>) const {
  return no_crypto("sealing a frame");
}
Result<void> FrameCipher::open(std::byte*, size_t, uint32_t, std::span<const uint8_t>) const {
  return no_crypto("opening a frame");
}

Result<std::shared_ptr<Keyring>> Keyring::load(const KeySource& src) {
  if (src.empty()) return std::shared_ptr<Keyring>();
  return no_crypto(!src.key_file.empty() ? "key file '" + src.key_file + "'"
                                         : std::string("a passphrase"));
}
Keyring::~Keyring() = default;
const char* Keyring::kind_name() const { return "none"; }
Result<Keyring::JobKey> Keyring::derive(Kdf, uint8_t, uint8_t, uint8_t,
                                        std::span<const uint8_t, 16>) const {
  return no_crypto("a key derivation");
}
Result<void> Keyring::start_job() { return no_crypto("an encrypted backup"); }
Result<std::shared_ptr<const catalog::Sealer>> Keyring::catalog_sealer(
    const catalog::SealParams&) {
  return no_crypto("the catalog's seal");
}
Result<std::pair<catalog::SealParams, std::shared_ptr<const catalog::Sealer>>>
Keyring::new_catalog_seal(uint32_t) {
  return no_crypto("the catalog's seal");
}
Result<std::unique_ptr<FrameCipher>> Keyring::new_piece(PieceHeader&) {
  return no_crypto("an encrypted piece");
}
Result<std::unique_ptr<FrameCipher>> Keyring::open_piece(const PieceHeader&,
                                                         const std::string& piece_path) {
  return no_crypto("encrypted piece '" + piece_path + "'");
}
DataKey::~DataKey() = default;
Result<DataKey> Keyring::open_data_key(const PieceHeader&, const std::string& piece_path,
                                       uint32_t*) {
  return no_crypto("encrypted piece '" + piece_path + "'");
}
Result<PieceCrypto> Keyring::wrap_data_key(const PieceHeader&, const DataKey&, uint32_t) {
  return no_crypto("a key wrap");
}
bool Keyring::same_secret(const Keyring&) const { return false; }
Result<void> generate_key_file(const std::string& path) {
  return no_crypto("keygen '" + path + "'");
}
#endif

}  // namespace stripeback::engine
