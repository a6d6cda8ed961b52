#include "backends/tape/stream.h"

#include <algorithm>
#include <cstring>

#include "util/bytes.h"
#include "util/crc32c.h"

namespace stripeback::tape {
namespace {

constexpr char kMagic[8] = {'S', 'B', 'T', 'S', 'E', 'G', '0', '1'};
constexpr uint16_t kUsed = 80;

struct SegmentHeader {
  uint32_t block_size = 0;
  StreamId id;
  uint32_t segment = 0;
  uint64_t first_seq = 0;
  std::string volume_id;
};

void encode_segment(const SegmentHeader& h, std::span<uint8_t> b) {
  std::fill(b.begin(), b.end(), uint8_t{0});
  std::memcpy(b.data(), kMagic, 8);
  util::put_le16(&b[8], 1);
  util::put_le16(&b[10], kUsed);
  util::put_le32(&b[12], h.block_size);
  util::put_le64(&b[16], h.id.backup_id);
  util::put_le32(&b[24], h.id.channel);
  util::put_le32(&b[28], h.id.piece);
  util::put_le32(&b[32], h.segment);
  util::put_le64(&b[36], h.first_seq);
  std::memcpy(&b[44], h.volume_id.data(), std::min<size_t>(h.volume_id.size(), 32));
  util::put_le32(&b[76], util::crc32c(b.data(), 76));
}

Result<SegmentHeader> decode_segment(std::span<const uint8_t> b, const std::string& where) {
  if (b.size() < kUsed || std::memcmp(b.data(), kMagic, 8) != 0)
    return fail(Errc::corrupt, where + ": no segment header (not a Stripeback piece)");
  if (util::get_le32(&b[76]) != util::crc32c(b.data(), 76))
    return fail(Errc::corrupt, where + ": segment header checksum mismatch");
  if (util::get_le16(&b[8]) != 1)
    return fail(Errc::unsupported, where + ": segment header version " +
                                       std::to_string(util::get_le16(&b[8])) + " not supported");
  SegmentHeader h;
  h.block_size = util::get_le32(&b[12]);
  h.id.backup_id = util::get_le64(&b[16]);
  h.id.channel = util::get_le32(&b[24]);
  h.id.piece = util::get_le32(&b[28]);
  h.segment = util::get_le32(&b[32]);
  h.first_seq = util::get_le64(&b[36]);
  const char* v = reinterpret_cast<const char*>(&b[44]);
  h.volume_id.assign(v, strnlen(v, 32));
  return h;
}

}  // namespace

size_t chunk_bytes(uint32_t block_size, size_t max_transfer) {
  constexpr size_t kTarget = 2u << 20;
  size_t blocks = std::max<size_t>(1, kTarget / block_size);
  while (blocks > 1 && blocks * block_size > max_transfer) --blocks;
  return blocks * block_size;
}

StreamWriter::StreamWriter(std::unique_ptr<Volume>& volume, VolumeProvider* spares, StreamId id,
                           uint32_t block_size)
    : vol_(volume), spares_(spares), id_(id), bs_(block_size), header_(block_size) {
  loc_.block_size = block_size;
}

Result<void> StreamWriter::begin() {
  if (!vol_ || vol_->full) {
    if (!spares_)
      return fail(Errc::end_of_medium, "needs another volume: the tape is full and no other "
                                       "volume was given (--tape-volumes)");
    auto next = spares_->next_volume(bs_);
    if (!next) {
      if (next.error().code == Errc::not_found)
        return Error{Errc::end_of_medium, 0, next.error().what};
      return next.error();
    }
    vol_ = std::move(*next);
    ++changes_;
  }
  return start_segment();
}

Result<void> StreamWriter::start_segment() {
  TapeDrive& d = *vol_->drive;
  SB_TRY(d.set_block_size(bs_));
  SB_TRY(d.seek_file(vol_->next_file));
  // Drives that report positions get LOCATE on restore; tgt reports none.
  uint64_t address = kNoAddress;
  if (auto p = d.read_position(); p && !p->unknown) address = p->block;
  SegmentHeader h{bs_, id_, static_cast<uint32_t>(loc_.spans.size()), seq_, vol_->label.volume_id};
  encode_segment(h, header_);
  SB_ASSIGN(WriteResult w, d.write_fixed(header_, bs_));
  if (w.blocks != 1)
    return fail(Errc::end_of_medium, "tape '" + vol_->url + "': no room for a segment header");
  // Early warning on the header: the first data write will see it again and span.
  if (w.early_warning) vol_->full = true;
  loc_.spans.push_back(Span{vol_->label.volume_id, vol_->url, vol_->next_file, 0, seq_, 0, address});
  return ok();
}

Result<void> StreamWriter::close_segment() {
  SB_TRY(vol_->drive->write_filemarks(1));
  ++vol_->next_file;
  return ok();
}

Result<void> StreamWriter::write_blocks(std::span<const uint8_t> data, uint64_t logical_bytes) {
  while (!data.empty()) {
    SB_ASSIGN(WriteResult w, vol_->drive->write_fixed(data, bs_));
    loc_.spans.back().blocks += w.blocks;
    seq_ += w.blocks;
    data = data.subspan(size_t{w.blocks} * bs_);
    if (!w.early_warning) continue;
    // End of medium: the blocks in hand are written (or left in `data` if the drive
    // refused them); close this segment and go on with the same sequence on the next volume.
    vol_->full = true;
    SB_TRY(close_segment());
    if (!spares_)
      return fail(Errc::end_of_medium, "needs another volume: tape '" + vol_->url +
                                           "' reached its end and no other volume was given "
                                           "(--tape-volumes)");
    auto next = spares_->next_volume(bs_);
    if (!next) {
      if (next.error().code == Errc::not_found)
        return Error{Errc::end_of_medium, 0, next.error().what};
      return next.error();
    }
    vol_ = std::move(*next);
    ++changes_;
    SB_TRY(start_segment());
  }
  loc_.bytes += logical_bytes;
  return ok();
}

Result<StreamLocation> StreamWriter::finish() {
  SB_TRY(close_segment());
  return loc_;
}

Result<void> read_stream(const StreamLocation& loc, const StreamId& id, const VolumeOpener& open,
                         const std::function<Result<void>(std::span<const uint8_t>)>& sink) {
  const uint32_t bs = loc.block_size;
  if (bs == 0) return fail(Errc::corrupt, "tape stream without a block size");
  uint64_t expected_seq = 0, remaining = loc.bytes;
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < loc.spans.size(); ++i) {
    const Span& sp = loc.spans[i];
    SB_ASSIGN(Volume * v, open(sp));
    TapeDrive& d = *v->drive;
    const std::string where = "volume " + sp.volume_id + " file " + std::to_string(sp.file) +
                              " in '" + v->url + "'";
    SB_TRY(d.set_block_size(bs));
    bool located = false;
    if (sp.address != kNoAddress && sp.address <= UINT32_MAX)
      located = static_cast<bool>(d.locate(static_cast<uint32_t>(sp.address)));
    if (!located) {
      SB_TRY(d.seek_file(sp.file));
      if (sp.block > 0) SB_TRY(d.space_blocks(static_cast<int32_t>(sp.block)));
    }
    buf.resize(chunk_bytes(bs, d.max_transfer()));
    SB_ASSIGN(ReadResult hr, d.read_fixed(std::span(buf).first(bs), bs));
    if (hr.blocks != 1) return fail(Errc::corrupt, where + ": segment header missing");
    SB_ASSIGN(SegmentHeader h, decode_segment(std::span(buf).first(bs), where));
    if (h.id.backup_id != id.backup_id || h.id.channel != id.channel || h.id.piece != id.piece)
      return fail(Errc::corrupt, where + ": holds backup " + std::to_string(h.id.backup_id) +
                                     " channel " + std::to_string(h.id.channel) + " piece " +
                                     std::to_string(h.id.piece) + ", not the piece expected");
    if (h.segment != i || h.first_seq != expected_seq || h.block_size != bs)
      return fail(Errc::corrupt, where + ": segment " + std::to_string(h.segment) +
                                     " starts at block " + std::to_string(h.first_seq) +
                                     ", expected segment " + std::to_string(i) + " at block " +
                                     std::to_string(expected_seq) +
                                     " (blocks lost or duplicated across volumes)");
    uint64_t left = sp.blocks;
    while (left > 0) {
      const size_t want = std::min<uint64_t>(left, buf.size() / bs) * bs;
      SB_ASSIGN(ReadResult r, d.read_fixed(std::span(buf).first(want), bs));
      if (r.blocks == 0)
        return fail(Errc::corrupt, where + ": segment ends after " +
                                       std::to_string(sp.blocks - left) + " of " +
                                       std::to_string(sp.blocks) + " blocks");
      left -= r.blocks;
      const uint64_t got = uint64_t{r.blocks} * bs;
      const uint64_t use = std::min(got, remaining);
      if (use > 0) SB_TRY(sink(std::span<const uint8_t>(buf.data(), use)));
      remaining -= use;
      if (r.filemark && left > 0)
        return fail(Errc::corrupt, where + ": filemark after " +
                                       std::to_string(sp.blocks - left) + " of " +
                                       std::to_string(sp.blocks) + " blocks");
    }
    expected_seq += sp.blocks;
  }
  if (remaining != 0)
    return fail(Errc::corrupt, "tape stream of backup " + std::to_string(id.backup_id) +
                                   " ends " + std::to_string(remaining) + " bytes short");
  return ok();
}

}  // namespace stripeback::tape

namespace stripeback::tape {

VolumeScanner::VolumeScanner(std::unique_ptr<Volume> v) : vol_(std::move(v)) {
  buf_.resize(chunk_bytes(vol_->label.block_size, vol_->drive->max_transfer()));
}

Result<std::unique_ptr<VolumeScanner>> VolumeScanner::open(const std::string& url) {
  SB_ASSIGN(auto v, open_volume_for_read(url, ""));
  if (v->label.block_size == 0)
    return fail(Errc::corrupt, "tape '" + url + "': its label gives no block size");
  std::unique_ptr<VolumeScanner> s(new VolumeScanner(std::move(v)));
  SB_TRY(s->vol_->drive->seek_file(1));
  return s;
}

Result<void> VolumeScanner::fill() {
  const uint32_t bs = vol_->label.block_size;
  auto got = vol_->drive->read_fixed(buf_, bs);
  if (!got && got.error().code == Errc::io) {
    // tgt answers a fixed READ at the end of data with MEDIUM ERROR 03/31/00: a stream
    // whose writer was killed before its filemark ends there.
    have_ = used_ = 0;
    end_of_data_ = ended_ = true;
    return ok();
  }
  if (!got) return got.error();
  const ReadResult r = *got;
  have_ = size_t{r.blocks} * bs;
  used_ = 0;
  blocks_ += r.blocks;
  if (r.filemark) filemark_ = ended_ = true;
  if (r.end_of_data) end_of_data_ = ended_ = true;
  if (r.blocks == 0 && !ended_)
    return fail(Errc::corrupt, "tape '" + vol_->url + "': a read returned no block");
  return ok();
}

Result<size_t> VolumeScanner::read(uint8_t* out, size_t len) {
  size_t done = 0;
  while (done < len && in_segment_) {
    if (used_ == have_) {
      if (ended_) break;
      SB_TRY(fill());
      continue;
    }
    const size_t n = std::min(len - done, have_ - used_);
    std::memcpy(out + done, buf_.data() + used_, n);
    used_ += n;
    done += n;
  }
  return done;
}

Result<uint64_t> VolumeScanner::finish_segment() {
  while (in_segment_ && !ended_) SB_TRY(fill());
  used_ = have_;
  return blocks_;
}

Result<std::optional<FoundSegment>> VolumeScanner::next() {
  if (in_segment_) SB_TRY(finish_segment());
  if (end_of_data_) return std::optional<FoundSegment>();
  TapeDrive& d = *vol_->drive;
  const uint32_t bs = vol_->label.block_size;
  FoundSegment f;
  f.block_size = bs;
  f.span.volume_id = vol_->label.volume_id;
  f.span.url = vol_->url;
  f.span.file = d.position().file;
  f.span.block = 0;
  if (auto p = d.read_position(); p && !p->unknown) f.span.address = p->block;
  auto got = d.read_fixed(std::span(buf_).first(bs), bs);
  // At the start of a tape file, tgt's MEDIUM ERROR 03/31/00 is the end of the data (real
  // drives say BLANK CHECK).
  if (!got && got.error().code == Errc::io) return std::optional<FoundSegment>();
  if (!got) return got.error();
  const ReadResult hr = *got;
  in_segment_ = true;
  ended_ = hr.filemark || hr.end_of_data;
  filemark_ = hr.filemark;
  end_of_data_ = hr.end_of_data;
  have_ = used_ = 0;
  blocks_ = 0;
  if (hr.blocks == 0) {
    in_segment_ = false;
    if (hr.end_of_data) return std::optional<FoundSegment>();
    f.problem = "an empty tape file";
    return std::optional<FoundSegment>(std::move(f));
  }
  const std::string where = "volume " + f.span.volume_id + " file " + std::to_string(f.span.file) +
                            " in '" + vol_->url + "'";
  auto h = decode_segment(std::span(buf_).first(bs), where);
  if (!h) {
    f.problem = h.error().what;
    return std::optional<FoundSegment>(std::move(f));
  }
  if (h->block_size != bs) {
    f.problem = where + ": a segment of block size " + std::to_string(h->block_size) +
                " on a volume labelled for " + std::to_string(bs);
    return std::optional<FoundSegment>(std::move(f));
  }
  f.id = h->id;
  f.segment = h->segment;
  f.span.first_seq = h->first_seq;
  return std::optional<FoundSegment>(std::move(f));
}

}  // namespace stripeback::tape
