// Payloads of the records of checks: page checks (backup --validate, --check-logical) and
// frame checks (validate).
#include <algorithm>
#include <string>

#include "catalog/payload.h"
#include "catalog/payload_codec.h"

namespace stripeback::catalog {

Result<EncodedRecord> encode_page_check(const PageCheck& c) {
  if (c.backup_id > kMaxBackupId)
    return fail(Errc::invalid_argument, "catalog page check names backup id " +
                                            std::to_string(c.backup_id) + ", out of range");
  SB_TRY(check_str(c.format, "page format"));
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u64(c.backup_id);
  w.i64(c.time_ns);
  w.str(c.format);
  w.u8(c.complete ? 1 : 0);
  w.u32(static_cast<uint32_t>(c.sources.size()));
  for (const auto& src : c.sources) {
    SB_TRY(check_str(src, "source"));
    w.str(src);
  }
  w.u64(c.pages_checked);
  const size_t kept = std::min(c.corrupt.size(), PageCheck::kMaxCorrupt);
  w.u64(std::max<uint64_t>(c.corrupt_total, c.corrupt.size()));
  w.u32(static_cast<uint32_t>(kept));
  for (size_t i = 0; i < kept; ++i) {
    const CorruptPage& p = c.corrupt[i];
    SB_TRY(check_str(p.file, "corrupt page file"));
    SB_TRY(check_str(p.reason, "corrupt page reason"));
    w.str(p.file);
    w.u64(p.block);
    w.u64(p.offset);
    w.str(p.reason);
  }
  if (w.size() > kMaxPayload)
    return fail(Errc::invalid_argument, "catalog page check record is " +
                                            std::to_string(w.size()) + " bytes; the limit is " +
                                            std::to_string(kMaxPayload));
  return EncodedRecord{RecordType::page_check, w.take()};
}

Result<EncodedRecord> encode_frame_check(const FrameCheck& c) {
  SB_TRY(check_id(c.backup_id));
  SB_TRY(check_str(c.mode, "check mode"));
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.u64(c.backup_id);
  w.i64(c.time_ns);
  w.str(c.mode);
  w.u64(c.frames_checked);
  w.u64(c.frames_failed);
  w.i64(c.full_check_ns);
  w.u32(static_cast<uint32_t>(c.pieces.size()));
  for (const CheckedPiece& p : c.pieces) {
    SB_TRY(check_str(p.piece, "piece name"));
    w.str(p.piece);
    w.u32(static_cast<uint32_t>(p.ranges.size()));
    for (const CheckedRange& r : p.ranges) {
      if (r.first > r.last)
        return fail(Errc::invalid_argument, "catalog frame check of piece '" + p.piece +
                                                "' has a range that ends before it begins");
      w.u64(r.first);
      w.u64(r.last);
    }
  }
  if (w.size() > kMaxPayload)
    return fail(Errc::invalid_argument, "catalog frame check record is " +
                                            std::to_string(w.size()) + " bytes; the limit is " +
                                            std::to_string(kMaxPayload));
  return EncodedRecord{RecordType::frame_check, w.take()};
}

Result<PageCheck> decode_page_check(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  PageCheck out;
  out.backup_id = r.u64();
  out.time_ns = r.i64();
  out.format = r.str();
  const uint8_t complete = r.u8();
  const uint32_t n = r.u32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) out.sources.push_back(r.str());
  out.pages_checked = r.u64();
  out.corrupt_total = r.u64();
  const uint32_t m = r.u32();
  if (r.ok() && m > PageCheck::kMaxCorrupt) return malformed("too many corrupt pages in a page check");
  for (uint32_t i = 0; i < m && r.ok(); ++i) {
    CorruptPage p;
    p.file = r.str();
    p.block = r.u64();
    p.offset = r.u64();
    p.reason = r.str();
    out.corrupt.push_back(std::move(p));
  }
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "page check payload"));
  if (complete > 1) return malformed("invalid complete flag in a page check payload");
  if (out.backup_id != 0) SB_TRY(check_decoded_id(out.backup_id));
  if (out.corrupt_total < out.corrupt.size())
    return malformed("page check counts fewer corrupt pages than it lists");
  out.complete = complete == 1;
  return out;
}

Result<FrameCheck> decode_frame_check(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  util::ByteReader& r = c.r();
  FrameCheck out;
  out.backup_id = r.u64();
  out.time_ns = r.i64();
  out.mode = r.str();
  out.frames_checked = r.u64();
  out.frames_failed = r.u64();
  out.full_check_ns = r.i64();
  const uint32_t n = r.u32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    CheckedPiece p;
    p.piece = r.str();
    const uint32_t m = r.u32();
    // Each range takes 16 bytes: a count beyond what is left is malformed, not a big reserve.
    if (r.ok() && m > r.remaining() / 16) return malformed("truncated frame check payload");
    for (uint32_t j = 0; j < m && r.ok(); ++j) {
      CheckedRange cr;
      cr.first = r.u64();
      cr.last = r.u64();
      if (r.ok() && cr.first > cr.last) return malformed("frame check range ends before it begins");
      p.ranges.push_back(cr);
    }
    out.pieces.push_back(std::move(p));
  }
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "frame check payload"));
  SB_TRY(check_decoded_id(out.backup_id));
  return out;
}

}  // namespace stripeback::catalog
