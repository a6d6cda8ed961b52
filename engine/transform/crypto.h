// Encryption of backup pieces: AES-256-GCM per frame (OpenSSL EVP), one random data key
// per piece, wrapped with a job key derived from a passphrase (scrypt) or taken from a key
// file. docs/encryption.md describes the scheme; this is its only implementation.
//
// Secrets live only in these objects (cleansed when they go away): never in logs, JSON,
// the catalog or process arguments. Users name a file or an environment variable.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "engine/format/piece_format.h"
#include "stripeback/result.h"

namespace stripeback::engine {

// Where the key material comes from: at most one of these is set.
struct KeySource {
  std::string passphrase_file;  // a file whose first line is the passphrase
  std::string passphrase_env;   // the name of an environment variable holding it
  std::string key_file;         // 32 bytes, or 64 hex digits (see `stripeback keygen`)
  bool empty() const { return passphrase_file.empty() && passphrase_env.empty() && key_file.empty(); }
};

// The options that name a key source, as a message names them: "--passphrase-file,
// --passphrase-env or --key-file" (util::option_word), joined by `last` before the third.
std::string key_options(std::string_view last = "or");

// scrypt cost for passphrases: N = 2^17, r = 8, p = 1 (128 MiB, a fraction of a second,
// paid once per backup job and once per backup on restore).
inline constexpr uint8_t kScryptLog2N = 17, kScryptR = 8, kScryptP = 1;

// One piece's data key: seals and opens frames. Safe to share between threads.
class FrameCipher {
 public:
  FrameCipher(std::span<const uint8_t, 32> key, std::span<const uint8_t, 8> nonce_prefix);
  ~FrameCipher();
  FrameCipher(const FrameCipher&) = delete;
  FrameCipher& operator=(const FrameCipher&) = delete;

  // The 12-byte nonce of frame `sequence`: the piece's random prefix, then the sequence.
  std::array<uint8_t, 12> nonce(uint32_t sequence) const;
  // Encrypts `n` bytes at `p` in place and writes the kTagSize-byte tag at p + n.
  Result<void> seal(std::byte* p, size_t n, uint32_t sequence,
                    std::span<const uint8_t> aad) const;
  // Checks the tag at p + n - kTagSize and decrypts the n - kTagSize bytes before it in
  // place. Errc::corrupt when the frame was altered, moved or taken from another piece.
  Result<void> open(std::byte* p, size_t n, uint32_t sequence,
                    std::span<const uint8_t> aad) const;

 private:
  std::array<uint8_t, 32> key_;
  std::array<uint8_t, 8> prefix_;
};

// A piece's data key in the clear, with the piece's nonce prefix: only inside rekey, which
// unwraps it with the old key and wraps it with the new one. Cleansed when it goes away.
struct DataKey {
  std::array<uint8_t, 32> bytes{};
  ~DataKey();
};

// What a frame's tag authenticates besides its payload: where it sits in the piece and
// every header field a reader acts on.
std::vector<uint8_t> frame_aad(uint64_t piece_offset, const FrameHeader& h);

// The loaded secret (passphrase or key file bytes) and the job keys derived from it.
class Keyring {
 public:
  static Result<std::shared_ptr<Keyring>> load(const KeySource& src);
  ~Keyring();
  Keyring(const Keyring&) = delete;
  Keyring& operator=(const Keyring&) = delete;

  // For a backup job: a fresh salt and job key. Call once per job (scrypt runs here).
  Result<void> start_job();
  // Fills h.crypto (cipher set to aes256gcm) with a fresh wrapped data key for one piece
  // and returns that key's cipher. Needs start_job() first.
  Result<std::unique_ptr<FrameCipher>> new_piece(PieceHeader& h);
  // Opens the data key of an existing piece: Errc::wrong_key when the passphrase or key
  // does not match the one the piece was written with, Errc::corrupt when it matches but
  // the header was altered. Derived keys are cached per salt, so a backup's pieces cost
  // one derivation. The wraps considered are those of the newest key-encryption key
  // version among the piece's own (header or key slots, h.slots) and the catalog's
  // (set_catalog_wraps): after a rekey the old key opens nothing rewrapped.
  Result<std::unique_ptr<FrameCipher>> open_piece(const PieceHeader& h,
                                                  const std::string& piece_path);
  // The same, giving the data key itself and the version of the wrap that opened it.
  Result<DataKey> open_data_key(const PieceHeader& h, const std::string& piece_path,
                                uint32_t* kek_version = nullptr);
  // A new wrap of `key` for piece `h` under this keyring's job key (start_job() first),
  // tagged with `kek_version`; fills every field of PieceCrypto but the nonce prefix.
  Result<PieceCrypto> wrap_data_key(const PieceHeader& h, const DataKey& key,
                                    uint32_t kek_version);
  // The catalog's newest wrap of each piece's data key (KeyWrap records), by piece name.
  void set_catalog_wraps(std::map<std::string, PieceCrypto> wraps) {
    catalog_wraps_ = std::move(wraps);
  }
  void set_catalog_wrap(const std::string& piece, const PieceCrypto& wrap) {
    catalog_wraps_[piece] = wrap;
  }
  // The catalog's seal (docs/security.md, "Tamper-evident catalog"): the MAC of the key
  // derived from this secret with the KDF, cost and salt of `params` (HMAC-SHA256, the
  // first 16 bytes); the caller compares its check with params.check. invalid_argument
  // when params name the other kind of secret (a passphrase for a key file).
  Result<std::shared_ptr<const catalog::Sealer>> catalog_sealer(const catalog::SealParams& params);
  // Parameters for sealing a catalog anew with this secret (a fresh salt, check filled,
  // key version `kek_version`), with their sealer.
  Result<std::pair<catalog::SealParams, std::shared_ptr<const catalog::Sealer>>> new_catalog_seal(
      uint32_t kek_version);
  // Whether `other` holds the same secret, of the same kind.
  bool same_secret(const Keyring& other) const;
  // "passphrase" or "key file": for messages, never the secret.
  const char* kind_name() const;
  // Advice on how the secret is kept (a file other users can read), for the caller to show
  // once the job has got past its errors, which come first; never the secret.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  struct JobKey {
    std::array<uint8_t, 32> kek{};
    std::array<uint8_t, 16> check{};
  };
  Keyring() = default;
  Result<JobKey> derive(Kdf kdf, uint8_t log2_n, uint8_t r, uint8_t p,
                        std::span<const uint8_t, 16> salt) const;

  Kdf kind_ = Kdf::none;
  std::vector<uint8_t> secret_;
  std::mutex mu_;
  std::map<std::array<uint8_t, 16>, JobKey> cache_;  // by salt
  bool job_started_ = false;
  PieceCrypto job_;  // kdf, parameters, salt and check of the current backup job
  JobKey job_key_;
  std::vector<std::string> warnings_;
  std::map<std::string, PieceCrypto> catalog_wraps_;
};

// Writes a new random key file (64 hex digits, mode 0600), creating missing parent
// directories with mode 0700; refuses to replace a file.
Result<void> generate_key_file(const std::string& path);

}  // namespace stripeback::engine
