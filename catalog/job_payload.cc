// Payload of a job record: the job's outcome, its verdict and its I/O figures per channel
// and per file (docs/monitoring.md#job-history).
#include <algorithm>
#include <string>

#include "catalog/payload.h"
#include "catalog/payload_codec.h"

namespace stripeback::catalog {
namespace {

void put_figures(util::ByteWriter& w, const IoFigures& f) {
  w.u64(f.ios);
  w.u64(f.bytes);
  w.i64(f.busy_ns);
  w.u64(f.waits.ready);
  w.u64(f.waits.short_waits);
  w.u64(f.waits.long_waits);
  w.i64(f.waits.total_ns);
  w.i64(f.waits.max_ns);
}

IoFigures get_figures(util::ByteReader& r) {
  IoFigures f;
  f.ios = r.u64();
  f.bytes = r.u64();
  f.busy_ns = r.i64();
  f.waits.ready = r.u64();
  f.waits.short_waits = r.u64();
  f.waits.long_waits = r.u64();
  f.waits.total_ns = r.i64();
  f.waits.max_ns = r.i64();
  return f;
}

bool figures_valid(const IoFigures& f) {
  return f.busy_ns >= 0 && f.waits.total_ns >= 0 && f.waits.max_ns >= 0 &&
         f.waits.max_ns <= f.waits.total_ns;
}

uint32_t to_millionths(double share) {
  if (!(share > 0)) return 0;
  const double m = share * 1e6 + 0.5;
  return m >= 4294967295.0 ? 0xffffffffu : static_cast<uint32_t>(m);
}

}  // namespace

Result<EncodedRecord> encode_job(const JobRecord& j) {
  if (j.type.empty() || j.status.empty())
    return fail(Errc::invalid_argument, "catalog job record needs a type and a status");
  for (const std::string* s : {&j.type, &j.status, &j.message, &j.tag, &j.bound_by, &j.stage,
                               &j.evidence, &j.suggestion})
    SB_TRY(check_str(*s, "job field"));
  util::ByteWriter w;
  w.u8(kPayloadVersion);
  w.str(j.type);
  w.str(j.status);
  w.str(j.message);
  w.i64(j.start_ns);
  w.i64(j.end_ns);
  w.str(j.tag);
  w.u32(static_cast<uint32_t>(j.backup_ids.size()));
  for (uint64_t id : j.backup_ids) {
    SB_TRY(check_id(id));
    w.u64(id);
  }
  w.u64(j.bytes_in);
  w.u64(j.bytes_out);
  w.u64(j.files);
  w.u64(j.compress_in);
  w.u64(j.compress_out);
  w.str(j.bound_by);
  w.str(j.stage);
  w.str(j.evidence);
  w.str(j.suggestion);
  w.u32(static_cast<uint32_t>(j.shares.size()));
  for (const VerdictShare& v : j.shares) {
    SB_TRY(check_str(v.name, "verdict share name"));
    w.str(v.name);
    w.u32(to_millionths(v.share));
  }
  w.u32(static_cast<uint32_t>(j.channels.size()));
  for (const ChannelIoRecord& c : j.channels) {
    SB_TRY(check_str(c.io_engine, "channel io engine"));
    SB_TRY(check_str(c.io_mode, "channel io mode"));
    if (c.elapsed_ns < 0 || !figures_valid(c.read) || !figures_valid(c.write))
      return fail(Errc::invalid_argument, "catalog job record of channel " +
                                              std::to_string(c.channel) +
                                              " has negative or inconsistent times");
    util::ByteWriter e;
    e.u32(c.channel);
    e.str(c.io_engine);
    e.str(c.io_mode);
    e.u32(c.buffers);
    e.u32(c.buffer_size);
    e.u32(c.multiplexing);
    e.i64(c.elapsed_ns);
    put_figures(e, c.read);
    put_figures(e, c.write);
    put_entry(w, e.buffer());
  }
  const size_t kept = std::min(j.file_io.size(), JobRecord::kMaxFiles);
  w.u64(std::max<uint64_t>(j.files_total, kept));
  w.u32(static_cast<uint32_t>(kept));
  for (size_t i = 0; i < kept; ++i) {
    const FileIoRecord& f = j.file_io[i];
    SB_TRY(check_str(f.path, "file path"));
    if (!figures_valid(f.read) || !figures_valid(f.write))
      return fail(Errc::invalid_argument, "catalog job record of file '" + f.path +
                                              "' has negative or inconsistent times");
    util::ByteWriter e;
    e.str(f.path);
    e.u32(f.channel);
    put_figures(e, f.read);
    put_figures(e, f.write);
    put_entry(w, e.buffer());
  }
  if (w.size() > kMaxPayload)
    return fail(Errc::invalid_argument, "catalog job record is " + std::to_string(w.size()) +
                                            " bytes; the limit is " + std::to_string(kMaxPayload));
  return EncodedRecord{RecordType::job, w.take()};
}

Result<JobRecord> decode_job(std::span<const uint8_t> payload) {
  Cursor c(payload);
  SB_ASSIGN(bool newer, read_version(c));
  JobRecord j;
  {
    util::ByteReader& r = c.r();
    j.type = r.str();
    j.status = r.str();
    j.message = r.str();
    j.start_ns = r.i64();
    j.end_ns = r.i64();
    j.tag = r.str();
    const uint32_t ids = r.u32();
    if (r.ok() && ids > r.remaining() / 8) return malformed("truncated job payload");
    for (uint32_t i = 0; i < ids && r.ok(); ++i) {
      const uint64_t id = r.u64();
      if (r.ok()) SB_TRY(check_decoded_id(id));
      j.backup_ids.push_back(id);
    }
    j.bytes_in = r.u64();
    j.bytes_out = r.u64();
    j.files = r.u64();
    j.compress_in = r.u64();
    j.compress_out = r.u64();
    j.bound_by = r.str();
    j.stage = r.str();
    j.evidence = r.str();
    j.suggestion = r.str();
    const uint32_t shares = r.u32();
    // Each share takes at least 8 bytes: a count beyond what is left is malformed.
    if (r.ok() && shares > r.remaining() / 8) return malformed("truncated job payload");
    for (uint32_t i = 0; i < shares && r.ok(); ++i) {
      VerdictShare v;
      v.name = r.str();
      v.share = r.u32() / 1e6;
      j.shares.push_back(std::move(v));
    }
  }
  const uint32_t channels = c.r().u32();
  if (c.ok() && channels > c.remaining() / 4) return malformed("truncated job payload");
  for (uint32_t i = 0; i < channels && c.ok(); ++i) {
    auto e = c.entry();
    if (!c.ok()) break;
    util::ByteReader r(e);
    ChannelIoRecord ch;
    ch.channel = r.u32();
    ch.io_engine = r.str();
    ch.io_mode = r.str();
    ch.buffers = r.u32();
    ch.buffer_size = r.u32();
    ch.multiplexing = r.u32();
    ch.elapsed_ns = r.i64();
    ch.read = get_figures(r);
    ch.write = get_figures(r);
    SB_TRY(check_end(r.ok(), r.remaining(), newer, "job channel entry"));
    if (ch.elapsed_ns < 0 || !figures_valid(ch.read) || !figures_valid(ch.write))
      return malformed("job channel entry has negative or inconsistent times");
    j.channels.push_back(std::move(ch));
  }
  j.files_total = c.r().u64();
  const uint32_t files = c.r().u32();
  if (c.ok() && files > JobRecord::kMaxFiles) return malformed("too many files in a job payload");
  for (uint32_t i = 0; i < files && c.ok(); ++i) {
    auto e = c.entry();
    if (!c.ok()) break;
    util::ByteReader r(e);
    FileIoRecord f;
    f.path = r.str();
    f.channel = r.u32();
    f.read = get_figures(r);
    f.write = get_figures(r);
    SB_TRY(check_end(r.ok(), r.remaining(), newer, "job file entry"));
    if (!figures_valid(f.read) || !figures_valid(f.write))
      return malformed("job file entry has negative or inconsistent times");
    j.file_io.push_back(std::move(f));
  }
  SB_TRY(check_end(c.ok(), c.remaining(), newer, "job payload"));
  if (j.type.empty() || j.status.empty()) return malformed("job payload without type or status");
  if (j.files_total < j.file_io.size())
    return malformed("job payload counts fewer files than it lists");
  return j;
}

}  // namespace stripeback::catalog
