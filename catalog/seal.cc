#include "catalog/seal.h"

#include <string_view>

#include "catalog/payload_codec.h"
#include "util/bytes.h"

namespace stripeback::catalog {
namespace {

std::span<const uint8_t> text(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string record_words(const Frame& f) {
  return std::string(record_type_name(f.type)) + " record with sequence " +
         std::to_string(f.sequence) + " at offset " + std::to_string(f.offset);
}

}  // namespace

Result<EncodedRecord> encode_seal(const SealParams& p) {
  if (p.kek_version == 0) return fail(Errc::invalid_argument, "seal of key version 0");
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u8(p.kdf);
  w.u8(p.log2_n);
  w.u8(p.r);
  w.u8(p.p);
  w.bytes(p.salt.data(), p.salt.size());
  w.bytes(p.check.data(), p.check.size());
  w.u32(p.kek_version);
  w.i64(p.sealed_ns);
  return EncodedRecord{RecordType::seal, w.take()};
}

Result<SealParams> decode_seal(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  SealParams p;
  p.kdf = r.u8();
  p.log2_n = r.u8();
  p.r = r.u8();
  p.p = r.u8();
  r.bytes(p.salt.data(), p.salt.size());
  r.bytes(p.check.data(), p.check.size());
  p.kek_version = r.u32();
  p.sealed_ns = r.i64();
  SB_TRY(check_end(r.ok(), r.remaining(), newer, "seal payload"));
  if (p.kek_version == 0) return malformed("seal payload: key version 0");
  return p;
}

Mac seal_check(const Sealer& s) { return s.mac({text("stripeback catalog seal check")}); }

Mac record_mac(const Sealer& s, uint64_t sequence, uint16_t type, uint16_t flags,
               std::span<const uint8_t> payload) {
  uint8_t head[12];
  util::put_le64(head, sequence);
  util::put_le16(head + 8, type);
  util::put_le16(head + 10, flags);
  return s.mac({text("stripeback catalog record"), head, payload});
}

Mac chain_mac(const Sealer& s, const Mac& previous, const Mac& record) {
  return s.mac({text("stripeback catalog chain"), previous, record});
}

Mac chain_start(const Sealer& s) { return s.mac({text("stripeback catalog chain start")}); }

void append_sealed_frame(std::vector<uint8_t>& out, uint64_t sequence, RecordType type,
                         std::span<const uint8_t> payload, const Sealer& s, Mac& chain) {
  const Mac m = record_mac(s, sequence, static_cast<uint16_t>(type), kFlagSealed, payload);
  chain = chain_mac(s, chain, m);
  uint8_t seal[kSealSize];
  std::copy(m.begin(), m.end(), seal);
  std::copy(chain.begin(), chain.end(), seal + m.size());
  append_frame(out, sequence, type, payload, seal);
}

ChainVerifier::ChainVerifier(const Sealer& s) : s_(s), chain_(chain_start(s)) {}

void ChainVerifier::next(const Frame& f, bool after_damage) {
  if (after_damage) damage_ = true;
  const Mac m = record_mac(s_, f.sequence, f.type, f.flags, f.payload);
  if (f.seal.size() != kSealSize) {
    if (sealed_ || (f.flags & kFlagSealed)) {
      findings_.push_back({f.offset, f.sequence,
                           "the " + record_words(f) +
                               " carries no seal: it was added without the catalog's key"});
    }
    chain_ = chain_mac(s_, chain_, m);
    return;
  }
  Mac stored_m{}, stored_c{};
  std::copy_n(f.seal.begin(), stored_m.size(), stored_m.begin());
  std::copy_n(f.seal.begin() + stored_m.size(), stored_c.size(), stored_c.begin());
  if (m != stored_m) {
    findings_.push_back({f.offset, f.sequence,
                         "the " + record_words(f) +
                             " was changed after it was written (its seal does not match)"});
  } else if (!damage_ && chain_mac(s_, chain_, m) != stored_c) {
    findings_.push_back(
        {f.offset, f.sequence,
         "the " + record_words(f) +
             " does not follow from the records before it: a record before it was changed, "
             "removed, inserted or moved"});
  }
  // Damage breaks the chain: it starts again here (this record's own MAC was checked).
  sealed_ = true;
  damage_ = false;
  chain_ = stored_c;
}

}  // namespace stripeback::catalog
