#include "engine/restore/restore_phases.h"

#include <algorithm>
#include <limits>
#include <map>
#include <vector>


namespace stripeback::engine {
namespace {

using util::Next;

// The frame check records of a validation: for each backup with a piece read, the frames
// verified (from the header logs) as ranges, and when its every frame was last checked.
std::vector<catalog::FrameCheck> frame_checks_of(
    const std::vector<catalog::Backup>& backups, const PieceCache& cache,
    const std::map<const PieceReader*, std::vector<uint64_t>>& verified,
    const CheckHistory& history, const std::string& mode, int64_t time_ns,
    const std::vector<std::string>& errors) {
  std::vector<catalog::FrameCheck> out;
  for (const auto& b : backups) {
    catalog::FrameCheck fc;
    fc.backup_id = b.id;
    fc.time_ns = time_ns;
    fc.mode = mode;
    bool all_open = !b.pieces.empty(), any = false;
    int64_t oldest = std::numeric_limits<int64_t>::max();
    for (const auto& p : b.pieces) {
      const PieceReader* reader = cache.opened(p);
      if (!reader) {
        all_open = false;
        continue;
      }
      any = true;
      std::vector<uint64_t> frames;
      for (const auto& file : reader->trailer().extents)
        for (const Extent& e : file)
          if (e.type == FrameType::data) frames.push_back(e.frame_offset);
      std::sort(frames.begin(), frames.end());
      static const std::vector<uint64_t> none;
      auto v = verified.find(reader);
      const std::vector<uint64_t>& now = v == verified.end() ? none : v->second;
      fc.frames_checked += now.size();
      auto ranges = checked_ranges(frames, now);
      for (uint64_t f : frames) {
        const bool checked = std::binary_search(now.begin(), now.end(), f);
        oldest = std::min(oldest, checked ? time_ns : history.last(p.name, f));
      }
      if (!ranges.empty()) fc.pieces.push_back({p.name, std::move(ranges)});
    }
    // Failures are counted by the errors that name one of the backup's pieces.
    for (const auto& e : errors)
      for (const auto& p : b.pieces)
        if (e.find(p.name) != std::string::npos) {
          ++fc.frames_failed;
          break;
        }
    if (!any || (fc.frames_checked == 0 && fc.frames_failed == 0)) continue;
    fc.full_check_ns = all_open && oldest != std::numeric_limits<int64_t>::max() ? oldest : 0;
    out.push_back(std::move(fc));
  }
  return out;
}

}  // namespace

// Phase (validate): which frames are checked (frame_select.h): the data frames of the files
// and those selected are counted, and every verified frame's header is logged, for the
// piece audit (piece_audit.h) and the catalog's record.
Result<Next> select_frames(RestoreJob& job) {
  for (const auto& b : job.backups)
    for (const auto& p : b.pieces)
      if (const PieceReader* r = job.cache.opened(p)) job.piece_names[r] = p.name;
  job.keep = [&job](const RestorePart& part, const Extent& e) {
    return e.type == FrameType::data &&
           job.opts.select.keep(job.piece_name(part.piece), e.frame_offset);
  };
  RestoreSummary& sum = job.sum;
  auto count = [&](const std::vector<RestorePart>& parts) {
    for (const auto& part : parts)
      for (const Extent& e : part.piece->trailer().extents[part.file_id]) {
        if (e.type != FrameType::data) continue;
        ++sum.frames_total;
        if (job.keep(part, e)) ++sum.frames_selected;
      }
  };
  for (size_t i = 0; i < job.items.size(); ++i) {
    if (job.done[i]) continue;
    count(job.items[i].parts);
    for (const auto& l : job.items[i].older) count(l.parts);
  }
  for (const auto& [name, reader] : job.cache.readers())
    job.header_logs[reader.get()] = std::make_unique<HeaderLog>();
  job.ctx.header_logs = &job.header_logs;
  return Next::go_on;
}

// Phase (validate): when each frame was last checked (the catalog's records). With
// --max-duration the chunks whose frames have gone longest without a check go first, and
// no chunk is begun after the deadline.
Result<Next> oldest_first(RestoreJob& job) {
  job.history = CheckHistory(job.cat.frame_checks());
  const FrameSelection& select = job.opts.select;
  if (!select.max_duration) return Next::go_on;
  std::vector<std::pair<int64_t, size_t>> order;
  for (size_t i = 0; i < job.chunks.size(); ++i) {
    int64_t oldest = std::numeric_limits<int64_t>::max();
    const FileState& f = *job.chunks[i].file;
    for (size_t e = job.chunks[i].begin; e < job.chunks[i].end; ++e)
      oldest = std::min(oldest, job.history.last(job.piece_name(f.extents[e].part->piece),
                                                 f.extents[e].extent->frame_offset));
    order.push_back({oldest, i});
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<RestoreChunk> sorted;
  for (const auto& [t, i] : order) sorted.push_back(job.chunks[i]);
  job.chunks = std::move(sorted);
  job.ctx.deadline = job.start + *job.opts.select.max_duration;
  return Next::go_on;
}

// Phase (validate): the frames verified, per piece; a full validation then walks every
// piece whole (piece_audit.h).
Result<Next> audit_pieces(RestoreJob& job) {
  RestoreSummary& sum = job.sum;
  const bool cancelled = job.opts.cancel && job.opts.cancel->load();
  sum.pieces_audited = !job.opts.select.partial() && !cancelled;
  for (const auto& [reader, log] : job.header_logs) {
    auto seen = log->take();
    auto& v = job.verified[reader];
    for (const auto& [off, h] : seen) v.push_back(off);
    sum.frames_checked += v.size();
    if (!sum.pieces_audited) continue;
    auto audited = audit_piece(*reader, seen);
    if (!audited) sum.add_error(audited.error());
    else sum.piece_bytes_read += *audited;
  }
  return Next::go_on;
}

// Phase (validate): what was checked goes to the catalog, a FrameCheck per backup.
Result<Next> record_checks(RestoreJob& job) {
  RestoreSummary& sum = job.sum;
  sum.check_mode = job.opts.select.mode();
  sum.frame_checks = frame_checks_of(job.backups, job.cache, job.verified, job.history,
                                     sum.check_mode, job.start_ns, sum.errors);
  for (const auto& fc : sum.frame_checks)
    if (auto r = job.cat.add_frame_check(fc); !r) {
      sum.warnings.push_back("what was checked is not recorded in the catalog: " +
                             r.error().what);
      break;
    }
  return Next::go_on;
}

}  // namespace stripeback::engine
