#include "backends/tape/label.h"

#include <cstring>
#include <vector>

#include "util/bytes.h"
#include "util/crc32c.h"

namespace stripeback::tape {
namespace {
constexpr char kMagic[8] = {'S', 'B', 'T', 'A', 'P', 'E', '0', '1'};
constexpr uint16_t kUsed = 64;
}  // namespace

Result<void> validate_volume_id(const std::string& id) {
  if (id.empty() || id.size() > kMaxVolumeId)
    return fail(Errc::invalid_argument, "volume id '" + id + "' must be 1 to " +
                                            std::to_string(kMaxVolumeId) + " characters");
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return fail(Errc::invalid_argument,
                  "volume id '" + id + "' may hold only letters, digits, '.', '_' and '-'");
  return ok();
}

std::array<uint8_t, kLabelBlock> encode_label(const VolumeLabel& label) {
  std::array<uint8_t, kLabelBlock> b{};
  std::memcpy(b.data(), kMagic, 8);
  util::put_le16(&b[8], label.version);
  util::put_le16(&b[10], kUsed);
  util::put_le32(&b[12], label.block_size);
  std::memcpy(&b[16], label.volume_id.data(), std::min(label.volume_id.size(), kMaxVolumeId));
  util::put_le64(&b[48], static_cast<uint64_t>(label.created_ns));
  util::put_le32(&b[56], kLabelBlock);
  util::put_le32(&b[60], util::crc32c(b.data(), 60));
  return b;
}

Result<VolumeLabel> decode_label(std::span<const uint8_t> b) {
  if (b.size() < kUsed || std::memcmp(b.data(), kMagic, 8) != 0)
    return fail(Errc::corrupt, "no Stripeback volume label (magic differs)");
  if (util::get_le32(&b[60]) != util::crc32c(b.data(), 60))
    return fail(Errc::corrupt, "volume label checksum mismatch");
  VolumeLabel l;
  l.version = util::get_le16(&b[8]);
  if (l.version != 1)
    return fail(Errc::unsupported, "volume label format version " + std::to_string(l.version) +
                                       " is not supported (this build reads version 1)");
  l.block_size = util::get_le32(&b[12]);
  const char* id = reinterpret_cast<const char*>(&b[16]);
  l.volume_id.assign(id, strnlen(id, kMaxVolumeId));
  l.created_ns = static_cast<int64_t>(util::get_le64(&b[48]));
  return l;
}

Result<void> write_label(TapeDrive& drive, const VolumeLabel& label) {
  SB_TRY(validate_volume_id(label.volume_id));
  SB_TRY(drive.rewind());
  SB_TRY(drive.set_block_size(kLabelBlock));
  auto block = encode_label(label);
  SB_ASSIGN(WriteResult w, drive.write_fixed(block, kLabelBlock));
  if (w.blocks != 1)
    return fail(Errc::end_of_medium, "tape '" + drive.name() + "': no room for the volume label");
  SB_TRY(drive.write_filemarks(1));
  SB_TRY(drive.set_block_size(label.block_size));
  return ok();
}

Result<LabelRead> read_label(TapeDrive& drive) {
  SB_TRY(drive.rewind());
  SB_TRY(drive.set_block_size(kLabelBlock));
  std::vector<uint8_t> block(kLabelBlock);
  auto r = drive.read_fixed(block, kLabelBlock);
  LabelRead out;
  if (!r) {
    // A blank tape, or a first block of another size, reads as an error on tgt (MEDIUM
    // ERROR 03/31/00) and as BLANK CHECK or ILI on real drives: no label either way.
    if (r.error().code == Errc::io || r.error().code == Errc::not_found) {
      out.why_none = "no Stripeback label (blank tape or data of another format: " +
                     r.error().what + ")";
      out.blank = true;
      return out;
    }
    return r.error();
  }
  if (r->blocks != 1) {
    out.why_none = r->filemark ? "no Stripeback label (the tape starts with a filemark)"
                               : "no Stripeback label (blank tape)";
    out.blank = !r->filemark;
    return out;
  }
  auto l = decode_label(block);
  if (!l) {
    if (l.error().code == Errc::unsupported) return l.error().wrap("tape '" + drive.name() + "'");
    out.why_none = l.error().what;
    return out;
  }
  out.label = std::move(*l);
  return out;
}

}  // namespace stripeback::tape
