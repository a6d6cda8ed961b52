#include "backends/tape/exercise.h"

#include <chrono>
#include <cstring>

#include "backends/tape/label.h"
#include "util/bytes.h"

namespace stripeback::tape {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A chunk of test data whose every block carries its sequence number, so a lost, repeated
// or misplaced block is caught on read.
void stamp(std::span<uint8_t> chunk, uint32_t bs, uint64_t first_seq) {
  for (size_t off = 0, i = 0; off < chunk.size(); off += bs, ++i) {
    util::put_le64(&chunk[off], first_seq + i);
    util::put_le64(&chunk[off + 8], ~(first_seq + i));
  }
}

Result<void> check(std::span<const uint8_t> got, std::span<const uint8_t> fill, uint32_t bs,
                   uint64_t first_seq, const std::string& where) {
  for (size_t off = 0, i = 0; off < got.size(); off += bs, ++i) {
    const uint64_t seq = util::get_le64(&got[off]);
    if (seq != first_seq + i || util::get_le64(&got[off + 8]) != ~(first_seq + i) ||
        std::memcmp(&got[off + 16], &fill[off + 16], bs - 16) != 0)
      return fail(Errc::corrupt, where + ": block " + std::to_string(first_seq + i) +
                                     " read back differs (found block " + std::to_string(seq) + ")");
  }
  return ok();
}

std::vector<uint8_t> fill_pattern(size_t n) {
  std::vector<uint8_t> v(n);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    util::put_le64(&v[i], x);
  }
  return v;
}

}  // namespace

Result<SpeedResult> speed_test(TapeDrive& drive, uint32_t bs, uint64_t bytes,
                               const std::atomic<bool>& cancel) {
  SpeedResult res;
  res.block_size = bs;
  const size_t chunk = chunk_bytes(bs, drive.max_transfer());
  std::vector<uint8_t> data = fill_pattern(chunk), back(chunk);
  SB_TRY(drive.rewind());
  SB_TRY(drive.set_block_size(bs));
  uint64_t seq = 0;
  auto t0 = Clock::now();
  while (res.bytes < bytes && !res.end_of_medium) {
    if (cancel.load()) return fail(Errc::cancelled, "tape test cancelled");
    const size_t n = std::min<uint64_t>(chunk, (bytes - res.bytes + bs - 1) / bs * bs);
    stamp(std::span(data).first(n), bs, seq);
    SB_ASSIGN(WriteResult w, drive.write_fixed(std::span(data).first(n), bs));
    seq += w.blocks;
    res.bytes += uint64_t{w.blocks} * bs;
    res.end_of_medium = w.early_warning;
  }
  SB_TRY(drive.write_filemarks(1));
  res.write_s = since(t0);

  SB_TRY(drive.rewind());
  t0 = Clock::now();
  uint64_t read = 0, rseq = 0;
  std::vector<uint8_t> ref = fill_pattern(chunk);
  while (read < res.bytes) {
    if (cancel.load()) return fail(Errc::cancelled, "tape test cancelled");
    const size_t n = std::min<uint64_t>(chunk, res.bytes - read);
    SB_ASSIGN(ReadResult r, drive.read_fixed(std::span(back).first(n), bs));
    if (r.blocks == 0)
      return fail(Errc::corrupt, "tape '" + drive.name() + "': read back ended after " +
                                     std::to_string(read) + " of " + std::to_string(res.bytes) +
                                     " bytes");
    const size_t got = size_t{r.blocks} * bs;
    SB_TRY(check(std::span(back).first(got), ref, bs, rseq, "tape '" + drive.name() + "'"));
    rseq += r.blocks;
    read += got;
  }
  res.read_s = since(t0);
  return res;
}

Result<SpanResult> span_test(const std::string& first_url, const std::string& second_url,
                             uint32_t bs, uint64_t extra, const std::atomic<bool>& cancel) {
  const auto wait = std::chrono::seconds(10);
  for (const auto& [url, id] : {std::pair{first_url, "SBTEST1"}, std::pair{second_url, "SBTEST2"}}) {
    SB_ASSIGN(auto d, TapeDrive::open(url));
    SB_TRY(d->wait_ready(wait));
    SB_ASSIGN(BlockLimits lim, d->read_block_limits());
    SB_TRY(check_block_size(bs, lim, url));
    SB_TRY(write_label(*d, VolumeLabel{id, bs, 1, 0}));
  }
  SB_ASSIGN(auto first, open_volume_for_write(first_url, bs, {}, wait));
  std::unique_ptr<Volume> slot = std::move(first);
  VolumeList spares({second_url}, {}, wait);
  StreamId id{0, 1, 1};
  StreamWriter w(slot, &spares, id, bs);
  SB_TRY(w.begin());
  const size_t chunk = chunk_bytes(bs, slot->drive->max_transfer());
  std::vector<uint8_t> data = fill_pattern(chunk);
  uint64_t seq = 0, after = 0;
  SpanResult res;
  auto t0 = Clock::now();
  while (w.volume_changes() == 0 || after < extra) {
    if (cancel.load()) return fail(Errc::cancelled, "tape test cancelled");
    stamp(data, bs, seq);
    SB_TRY(w.write_blocks(data, data.size()));
    seq += data.size() / bs;
    if (w.volume_changes() > 0) after += data.size();
  }
  SB_ASSIGN(res.location, w.finish());
  res.write_s = since(t0);
  slot.reset();

  std::vector<std::unique_ptr<Volume>> open_vols;
  VolumeOpener opener = [&](const Span& sp) -> Result<Volume*> {
    for (auto& v : open_vols)
      if (v->label.volume_id == sp.volume_id) return v.get();
    SB_ASSIGN(auto v, open_volume_for_read(sp.url, sp.volume_id));
    open_vols.push_back(std::move(v));
    return open_vols.back().get();
  };
  std::vector<uint8_t> ref = fill_pattern(chunk);
  uint64_t rseq = 0;
  t0 = Clock::now();
  SB_TRY(read_stream(res.location, id, opener, [&](std::span<const uint8_t> got) -> Result<void> {
    // Chunks arrive in whole blocks; the writer's chunks were whole blocks too.
    for (size_t off = 0; off < got.size(); off += bs) {
      auto blk = got.subspan(off, bs);
      const size_t at = (rseq % (chunk / bs)) * bs;
      if (util::get_le64(&blk[0]) != rseq ||
          std::memcmp(&blk[16], &ref[at + 16], bs - 16) != 0)
        return fail(Errc::corrupt, "spanned stream: block " + std::to_string(rseq) +
                                       " read back differs (found block " +
                                       std::to_string(util::get_le64(&blk[0])) + ")");
      ++rseq;
    }
    return ok();
  }));
  res.read_s = since(t0);
  if (rseq != seq)
    return fail(Errc::corrupt, "spanned stream: read " + std::to_string(rseq) + " blocks, wrote " +
                                   std::to_string(seq));
  return res;
}

}  // namespace stripeback::tape
