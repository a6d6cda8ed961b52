// How one file of the log archive is stored (docs/postgresql.md, "WAL archiving"): one
// object per file, its bytes zstd-compressed and/or AES-256-GCM-sealed as configured.
//
//   offset 0   128-byte head: magic "SBWALOB1", u16 version (1), u16 flags (kWalCompressed,
//              kWalEncrypted of catalog.h), u64 raw size, u64 body size, 16-byte digest of
//              the raw bytes (util/digest.h), u32 name length, the name (at most 40
//              bytes: kMaxNameInHead), zero padding; the last 4 bytes a CRC32C of the rest
//   then       with kWalEncrypted: a piece header block (kBlock bytes) holding the wrapped
//              data key (docs/encryption.md), the object's name as the piece's name
//   then       the body: the raw bytes, or their zstd frame; sealed with its tag appended,
//              the head authenticated with it
//
// Encoding and decoding are pure functions over bytes; the caller does the I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/transform/crypto.h"
#include "stripeback/result.h"
#include "util/digest.h"

namespace stripeback::database {

inline constexpr size_t kWalHead = 128;
inline constexpr size_t kMaxNameInHead = 40;

struct WalObjectInfo {
  uint32_t flags = 0;      // catalog::kWalCompressed | catalog::kWalEncrypted
  uint64_t raw_size = 0;
  util::Digest digest{};   // of the raw bytes
};

// Encodes `raw` (the file named `name`) at zstd `level` (0: stored raw; a file that does not
// shrink by 1/16 is stored raw too) and, with `keys` (start_job() done), sealed with a fresh
// data key. invalid_argument for a name longer than kMaxNameInHead. `digest`: the raw
// bytes' digest when the caller has it already.
Result<std::vector<std::byte>> encode_wal_object(const std::string& name,
                                                 std::span<const std::byte> raw, int level,
                                                 engine::Keyring* keys, WalObjectInfo* info,
                                                 const util::Digest* digest = nullptr);

// The head of an object: corrupt (naming `shown`) when it is not one or is damaged.
Result<WalObjectInfo> read_wal_head(std::span<const std::byte> object, const std::string& shown);

// Decodes a whole object stored as `name` back to the file's bytes, checking its head, its
// tag (with `keys`), its size and its digest. Errors: corrupt naming `shown` and what is
// wrong; invalid_argument for a sealed object without `keys`; wrong_key from the keyring.
Result<std::vector<std::byte>> decode_wal_object(const std::string& name,
                                                 std::span<const std::byte> object,
                                                 engine::Keyring* keys, const std::string& shown);

}  // namespace stripeback::database
