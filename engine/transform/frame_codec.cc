#include "engine/transform/frame_codec.h"

#include <cstring>

#include "engine/transform/compress.h"
#include "engine/transform/crypto.h"
#include "engine/monitor/stats.h"
#include "util/crc32c.h"

namespace stripeback::engine {

uint64_t frame_bound(uint32_t raw_len, bool sealed) {
  return kBlock + align_up(raw_len + (sealed ? kTagSize : 0));
}

Result<EncodedFrame> encode_frame(FrameHeader h, FramePosition at, const FrameBuffers& b,
                                  const FrameCodec& codec) {
  EncodedFrame out;
  h.sequence = at.sequence;
  std::byte* block = b.frame;
  if (h.type == FrameType::data) {
    const std::byte* raw = b.frame + kBlock;
    const util::BlockDigest scan = util::digest_block(raw, h.raw_len);
    h.raw_digest = scan.digest;
    if (scan.zero) {
      h.type = FrameType::zero;
      h.stored_len = 0;
    } else {
      h.stored_len = h.raw_len;
      if (codec.compressor && b.packed) {
        double t0 = thread_cpu_seconds();
        size_t n = codec.compressor->compress(raw, h.raw_len, b.packed + kBlock, b.packed_cap);
        out.compress_cpu_s = thread_cpu_seconds() - t0;
        if (n != 0) {
          h.compressed = true;
          h.stored_len = static_cast<uint32_t>(n);
          block = b.packed;
        }
      }
    }
    out.raw_digest = h.raw_digest;
  }
  std::byte* payload = block + kBlock;
  if (codec.cipher && h.type != FrameType::zero) {
    // Zero frames carry no payload; the authenticated trailer vouches for them.
    double t0 = thread_cpu_seconds();
    h.sealed = true;
    h.stored_len += kTagSize;
    h.raw_digest = {};  // the digest of the plaintext stays inside the sealed trailer
    auto aad = frame_aad(at.offset, h);
    SB_TRY(codec.cipher->seal(payload, h.stored_len - kTagSize, h.sequence, aad));
    out.seal_cpu_s = thread_cpu_seconds() - t0;
  }
  if (h.stored_len == 0) {
    h.stored_crc = 0;
  } else if (needs_payload_crc(codec.piece_version, h.type, h.sealed)) {
    h.stored_crc = util::crc32c(payload, h.stored_len);
  } else {
    h.digest_only = true;  // the raw digest in the header covers the payload
    h.stored_crc = 0;
  }
  const uint64_t padded = align_up(h.stored_len);
  if (padded > h.stored_len) std::memset(payload + h.stored_len, 0, padded - h.stored_len);
  encode_frame_header(h, std::span<std::byte, kBlock>(block, kBlock));
  out.header = h;
  out.block = block;
  out.length = static_cast<uint32_t>(kBlock + padded);
  return out;
}

}  // namespace stripeback::engine
