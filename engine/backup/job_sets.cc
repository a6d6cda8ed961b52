// The work of the channels: the planned files in units and sets (least recently backed up
// first with --partial; what a resume keeps taken out), and the buffers they are read into.
#include <algorithm>
#include <limits>

#include "engine/backup/backup_job_state.h"
#include "engine/format/piece_format.h"
#include "util/option_words.h"

namespace stripeback::engine {

BufferChoice choose_buffers(uint32_t multiplexing, std::optional<size_t> buffers,
                            std::optional<size_t> buffer_size, bool compressing, bool validating) {
  BufferChoice c;
  c.multiplexing = std::max<uint32_t>(1, multiplexing);
  if (c.multiplexing > 8) {
    c.buffers = 64;
    c.buffer_size = 256 << 10;
  } else if (c.multiplexing > 4) {
    c.buffers = 32;
    c.buffer_size = 512 << 10;
  }
  if (compressing && !buffer_size) buffer_size = size_t{1} << 20;
  if (buffer_size && !buffers) c.buffers = std::max<size_t>(2, (16u << 20) / *buffer_size);
  if (buffers)
    c.buffers = *buffers;
  else if (validating)
    c.buffers *= 2;
  if (buffer_size) c.buffer_size = *buffer_size;
  return c;
}

namespace backup_internal {
namespace {

// For --partial: files that have gone longest without a backup come first (never backed
// up before anything), then largest first. Returns when each was last backed up, in the
// new order (the lowest int64_t for never).
std::vector<int64_t> order_least_recent_first(std::vector<FileTask>& files,
                                              const catalog::Catalog& cat) {
  std::map<std::string, int64_t> last;
  for (const auto& b : cat.backups()) {
    if (!b.ended || (b.end.status != catalog::BackupStatus::complete &&
                     b.end.status != catalog::BackupStatus::partial))
      continue;
    for (const auto& f : b.files) {
      auto& t = last[f.path];
      t = std::max(t, b.begin.start_time_ns);
    }
  }
  auto when = [&](const FileTask& f) {
    auto it = last.find(f.path);
    return it == last.end() ? std::numeric_limits<int64_t>::min() : it->second;
  };
  std::stable_sort(files.begin(), files.end(), [&](const FileTask& a, const FileTask& b) {
    int64_t ta = when(a), tb = when(b);
    return ta != tb ? ta < tb : a.size > b.size;
  });
  std::vector<int64_t> times;
  for (const auto& f : files) times.push_back(when(f));
  return times;
}

// The buffer rule for the largest set's multiplexing, then what a level and the piece size
// limit ask of it.
Result<BufferChoice> buffers_for(const BackupOptions& opts, size_t largest_set) {
  BufferChoice buffers = choose_buffers(
      std::min<uint32_t>(opts.channel.max_open_files, static_cast<uint32_t>(largest_set)),
      opts.buffers, opts.buffer_size, opts.channel.compress_level != 0, opts.validate_only);
  // Change units never straddle a buffer.
  if (opts.level && buffers.buffer_size < opts.change_unit) {
    buffers.buffers = std::max<size_t>(2, buffers.buffers * buffers.buffer_size / opts.change_unit);
    buffers.buffer_size = opts.change_unit;
  }
  if (opts.channel.max_piece_size &&
      opts.channel.max_piece_size < buffers.buffer_size + 16 * kBlock + (64u << 10))
    return fail(Errc::invalid_argument,
                util::option_value_word("max_piece_size", std::to_string(opts.channel.max_piece_size)) +
                    " is too small: a piece must hold at least one buffer of " +
                    std::to_string(buffers.buffer_size) + " bytes plus 128 KiB of metadata");
  return buffers;
}

}  // namespace

Result<Next> make_job_sets(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  SetOptions so;
  so.section_size = opts.section_size;
  so.files_per_set = opts.files_per_set;
  so.channels = job.channels;
  // After --optimize took its files out: one time for each file still planned.
  if (opts.partial) so.last_backup = order_least_recent_first(job.plan.files, job.cat);
  job.sets = make_sets(job.plan.files, so);
  if (job.resumed) {
    job.kept_units = keep_finished_units(*job.resumed, job.sets);
    job.plan.total_bytes -= std::min(job.plan.total_bytes, job.resumed->bytes_kept);
  }
  size_t largest_set = 0;
  for (const auto& st : job.sets) {
    largest_set = std::max(largest_set, st.size());
    for (const auto& u : st) job.sections += u.sections > 1 ? 1 : 0;
  }
  SB_ASSIGN(job.buffers, buffers_for(opts, largest_set));
  return Next::go_on;
}

}  // namespace backup_internal
}  // namespace stripeback::engine
