// The seal of a catalog (docs/security.md, "Tamper-evident catalog"): once a process that
// holds the key-encryption key appends to a catalog, every record it and later writers
// append carries a seal of 32 bytes after its payload (frame flag kFlagSealed):
//   record MAC (16) = MAC(key, sequence | type | flags | payload)
//   chain MAC  (16) = MAC(key, previous chain MAC | record MAC)
// where the chain starts from MAC(key, "start") and runs through every valid record of the
// log, sealed or not, so the first sealed record vouches for the records written before
// sealing began. The key is derived from the key-encryption key with the parameters of the
// log's Seal record (type 19, the first sealed record); the MAC itself is computed outside
// this library (engine: HMAC-SHA256, truncated), which knows no cryptography.
//
// What a verification tells apart:
// - damage: a record that fails its CRC, or a torn tail (reported by the scanner as ever);
// - tampering: a record whose CRC is right but whose record MAC is not (changed), a chain
//   MAC that does not follow from the record before it (records removed, inserted or
//   reordered), or a record without a seal after sealing began (added without the key).
// After damage the chain cannot be followed: it starts again from the next sealed record,
// whose own record MAC is still checked.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "catalog/payload.h"
#include "catalog/record_log.h"
#include "stripeback/result.h"

namespace stripeback::catalog {

Result<EncodedRecord> encode_seal(const SealParams& p);
Result<SealParams> decode_seal(std::span<const uint8_t> payload);

// The check value of a sealer (SealParams::check).
Mac seal_check(const Sealer& s);
// The record MAC of a frame.
Mac record_mac(const Sealer& s, uint64_t sequence, uint16_t type, uint16_t flags,
               std::span<const uint8_t> payload);
// The chain MAC that follows `previous` for a record whose record MAC is `record`.
Mac chain_mac(const Sealer& s, const Mac& previous, const Mac& record);
// Where the chain starts.
Mac chain_start(const Sealer& s);

// Appends a sealed frame: flags kFlagSealed, the payload, then its record and chain MACs;
// `chain` is the chain MAC before it and becomes this frame's.
void append_sealed_frame(std::vector<uint8_t>& out, uint64_t sequence, RecordType type,
                         std::span<const uint8_t> payload, const Sealer& s, Mac& chain);

// Follows the chain over a log's valid frames in file order (as scan_records gives them,
// across calls), with the key. Records before the first sealed one carry no seal; the
// first sealed record vouches for them through the chain.
class ChainVerifier {
 public:
  explicit ChainVerifier(const Sealer& s);
  // The next valid frame; `after_damage` when skipped bytes lie between it and the one
  // before (or the file header).
  void next(const Frame& f, bool after_damage);
  // The chain MAC after the last frame: what the next appended frame chains from.
  const Mac& chain() const { return chain_; }
  // This process appended sealed frames ending with chain MAC `chain`.
  void appended(const Mac& chain) {
    chain_ = chain;
    sealed_ = true;
    damage_ = false;
  }
  bool sealed() const { return sealed_; }
  const std::vector<TamperFinding>& findings() const { return findings_; }

 private:
  const Sealer& s_;
  Mac chain_;
  bool sealed_ = false;        // a sealed frame was seen
  bool damage_ = false;        // damage since the chain was last checked
  std::vector<TamperFinding> findings_;
};

}  // namespace stripeback::catalog
