#include "engine/restore/restore_preview.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/format/piece_format.h"
#include "engine/restore/restore_phases.h"

namespace stripeback::engine {
namespace {

using util::Next;

// The backups used, each marked a parent when no chosen file comes from it.
std::vector<PreviewBackup> used_backups(const RestoreJob& job) {
  std::set<uint64_t> chosen;
  for (const auto& it : job.items) chosen.insert(it.backup_id);
  for (const auto& c : job.choices)
    if (!S_ISDIR(c.file->mode)) chosen.insert(c.backup->id);
  std::vector<PreviewBackup> out;
  for (uint64_t id : job.used) {
    auto b = job.by_id.find(id);
    if (b == job.by_id.end()) continue;
    const catalog::Backup& bk = *b->second;
    out.push_back({id, bk.begin.level, bk.begin.tag, bk.begin.start_time_ns, !chosen.count(id)});
  }
  return out;
}

// What the channels read from each piece: every frame of the chunks but zero frames (a
// header block and the stored bytes, as restore_channel.cc reads them).
std::map<const PieceReader*, uint64_t> frame_reads(const RestoreJob& job) {
  std::map<const PieceReader*, uint64_t> out;
  for (const auto& st : job.states)
    for (const PartExtent& pe : st->extents)
      if (pe.extent->type != FrameType::zero)
        out[pe.part->piece] += kBlock + align_up(pe.extent->stored_len);
  return out;
}

PreviewPiece preview_piece(uint64_t backup_id, const catalog::PieceRecord& p) {
  PreviewPiece out;
  out.backup_id = backup_id;
  out.name = p.name;
  out.medium = piece_medium(p);
  if (!p.media) out.location = p.location;
  else
    for (const auto& span : p.media->spans)
      if (std::find(out.volumes.begin(), out.volumes.end(), span.volume_id) == out.volumes.end())
        out.volumes.push_back(span.volume_id);
  out.size = p.size;
  return out;
}

// The pieces the plan reads: those whose index was read (with the frames the chunks take,
// or whole for a full validation, which walks every piece it opens) and those read in order
// from removable media.
std::vector<PreviewPiece> planned_pieces(const RestoreJob& job) {
  const auto frames = frame_reads(job);
  const bool walked = job.opts.verify_only && !job.opts.select.partial();
  std::map<std::string, const catalog::PieceRecord*> streamed;
  for (const auto& [id, rec] : job.stream.planned_pieces()) streamed[rec->name] = rec;
  std::vector<PreviewPiece> out;
  for (const auto& b : job.backups)
    for (const auto& p : b.pieces) {
      const PieceReader* r = job.cache.opened(p);
      if (!r && !streamed.count(p.name)) continue;
      PreviewPiece pp = preview_piece(b.id, p);
      if (r) {
        auto f = frames.find(r);
        pp.bytes_to_read = r->metadata_bytes() + (f == frames.end() ? 0 : f->second);
      }
      if (!r || walked) {
        pp.whole = true;
        pp.bytes_to_read = std::max(pp.bytes_to_read, p.size);
      }
      out.push_back(std::move(pp));
    }
  return out;
}

// Where a restore puts `original`, as a location text.
std::string target_of(const RestoreJob& job, const std::string& original) {
  if (!job.target_place) return {};
  auto comps = target_components(original, job.opts.remaps);
  if (!comps) return {};
  std::string rel;
  for (const auto& c : *comps) rel += (rel.empty() ? "" : "/") + c;
  return rel.empty() ? job.target_place->at.str() : job.target_place->at.join(rel).str();
}

}  // namespace

// Phase (a preview): the plan as RestorePreview, instead of running it.
Result<Next> tally_preview(RestoreJob& job) {
  RestorePreview& p = job.preview;
  p.verify_only = job.opts.verify_only;
  p.delta = job.opts.delta;
  if (job.target_place) p.target = job.target_place->at.str();
  if (p.verify_only) p.check_mode = job.opts.select.mode();
  p.backups = used_backups(job);
  p.pieces = planned_pieces(job);
  for (const auto& piece : p.pieces) p.bytes_to_read += piece.bytes_to_read;
  for (const auto& c : job.choices) {
    if (S_ISDIR(c.file->mode)) {
      ++p.directories;
      continue;
    }
    p.files.push_back({c.file->path, target_of(job, c.file->path), c.backup->id, c.file->size});
    p.bytes += c.file->size;
  }
  std::sort(p.files.begin(), p.files.end(),
            [](const PreviewFile& a, const PreviewFile& b) { return a.path < b.path; });
  p.fallbacks = job.sum.fallbacks;
  p.warnings = job.sum.warnings;
  p.errors = job.sum.errors;
  return Next::stop;
}

}  // namespace stripeback::engine
