#include "engine/history/job_history.h"

#include <algorithm>

namespace stripeback::engine {
namespace {

int64_t to_ns(double s) { return s > 0 ? static_cast<int64_t>(s * 1e9) : 0; }

catalog::JobRecord base(const std::string& type, const JobSpan& span) {
  catalog::JobRecord j;
  j.type = type;
  j.start_ns = span.start_ns;
  j.end_ns = span.end_ns;
  j.tag = span.tag;
  return j;
}

void add_verdict(catalog::JobRecord& j, const Verdict& v) {
  j.bound_by = v.bound_by;
  j.stage = v.stage;
  j.evidence = v.evidence;
  j.suggestion = v.suggestion;
  j.shares = {{"read", v.read},         {"write", v.write},
              {"cpu", v.cpu},           {"compress", v.compress},
              {"encrypt", v.encrypt},   {"page_checks", v.page_checks},
              {"throttle", v.throttle}, {"wait_read", v.wait_read},
              {"wait_write", v.wait_write}, {"working", v.working},
              {"machine_cpu", v.machine_cpu}};
}

// The channels' figures, and their files: those that moved the most bytes first, at most
// JobRecord::kMaxFiles of them. files_total counts a file once per channel that did I/O on
// it.
void add_channels(catalog::JobRecord& j, const std::vector<ChannelStats>& channels) {
  std::vector<catalog::FileIoRecord> files;
  for (const ChannelStats& c : channels) {
    catalog::ChannelIoRecord r;
    r.channel = c.channel;
    r.io_engine = c.io_engine;
    // Every queue but the blocking one (pread/pwrite) is asynchronous: io_uring, a network
    // client's pipelined requests, a drive's helper thread.
    r.io_mode = c.io_engine.empty()                          ? "none"
                : c.io_engine.find("sync") != std::string::npos ? "sync"
                                                                : "async";
    r.buffers = c.buffers;
    r.buffer_size = c.buffer_size;
    r.multiplexing = c.multiplexing;
    r.elapsed_ns = to_ns(c.elapsed_s);
    r.read = {c.reads, c.bytes_read, to_ns(c.read_busy_s), c.read_waits};
    r.write = {c.writes, c.bytes_written, to_ns(c.write_busy_s), c.write_waits};
    j.compress_in += c.bytes_compressed_in;
    j.compress_out += c.bytes_compressed_out;
    j.channels.push_back(std::move(r));
    files.insert(files.end(), c.file_io.begin(), c.file_io.end());
    j.files_total += c.file_io.size() + c.file_io_dropped;
  }
  std::stable_sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    return a.read.bytes + a.write.bytes > b.read.bytes + b.write.bytes;
  });
  if (files.size() > catalog::JobRecord::kMaxFiles) files.resize(catalog::JobRecord::kMaxFiles);
  j.file_io = std::move(files);
}

}  // namespace

catalog::JobRecord backup_job_record(const BackupSummary& s, const JobSpan& span) {
  catalog::JobRecord j = base(s.validate_only ? "validate-sources" : "backup", span);
  j.status = span.cancelled && s.status == "failed" ? "cancelled" : s.status;
  j.message = s.error;
  if (s.backup_id) j.backup_ids = {s.backup_id};
  j.bytes_in = s.bytes_read;
  j.bytes_out = s.bytes_written;
  j.files = s.files;
  add_verdict(j, s.verdict);
  add_channels(j, s.channels);
  return j;
}

catalog::JobRecord restore_job_record(const RestoreSummary& s, const JobSpan& span) {
  catalog::JobRecord j = base(s.verify_only ? "validate" : "restore", span);
  j.status = span.cancelled && s.status != "complete" ? "cancelled" : s.status;
  if (!s.errors.empty()) {
    j.message = s.errors.front();
    if (s.errors.size() > 1)
      j.message += " (and " + std::to_string(s.errors.size() - 1) + " more error(s))";
  }
  j.backup_ids = s.backups_used;
  j.bytes_in = s.piece_bytes_read;
  j.bytes_out = s.verify_only ? 0 : s.bytes_written();
  j.files = s.files;
  add_verdict(j, s.verdict);
  add_channels(j, s.channels);
  return j;
}

catalog::JobRecord failed_job_record(const std::string& type, const std::string& message,
                                     const JobSpan& span) {
  catalog::JobRecord j = base(type, span);
  j.status = span.cancelled ? "cancelled" : "failed";
  j.message = message;
  return j;
}

}  // namespace stripeback::engine
