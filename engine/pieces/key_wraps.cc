#include "engine/pieces/key_wraps.h"

namespace stripeback::engine {

PieceCrypto piece_crypto_of(const catalog::KeyWrap& w) {
  PieceCrypto c;
  c.kdf = static_cast<Kdf>(w.kdf);
  c.log2_n = w.log2_n;
  c.r = w.r;
  c.p = w.p;
  c.salt = w.salt;
  c.check = w.check;
  c.wrap_nonce = w.wrap_nonce;
  c.wrapped_key = w.wrapped_key;
  c.kek_version = w.kek_version;
  return c;
}

catalog::KeyWrap key_wrap_of(uint64_t backup_id, const std::string& piece, const PieceCrypto& c,
                             bool in_piece) {
  catalog::KeyWrap w;
  w.backup_id = backup_id;
  w.piece = piece;
  w.kek_version = c.kek_version;
  w.kdf = static_cast<uint8_t>(c.kdf);
  w.log2_n = c.log2_n;
  w.r = c.r;
  w.p = c.p;
  w.salt = c.salt;
  w.check = c.check;
  w.wrap_nonce = c.wrap_nonce;
  w.wrapped_key = c.wrapped_key;
  w.in_piece = in_piece;
  return w;
}

std::map<std::string, PieceCrypto> catalog_wraps(const catalog::Catalog& cat) {
  std::map<std::string, PieceCrypto> out;
  for (const auto& [name, w] : cat.key_wraps()) out.emplace(name, piece_crypto_of(w));
  return out;
}

}  // namespace stripeback::engine
