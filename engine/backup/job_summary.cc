// What the channels did, in the summary: their outcomes gathered, the file records made of
// the units they finished, the verdict, and the backup's status (complete, partial or
// failed) judged from all of it.
#include <algorithm>
#include <map>
#include <set>

#include "engine/backup/backup_job_state.h"
#include "engine/transform/compress.h"
#include "storage/registry.h"
#include "util/option_words.h"

namespace stripeback::engine::backup_internal {
namespace {

// What the summary says of the job's settings, and the warnings of the phases before the
// channels ran.
void describe_job(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  BackupSummary& sum = job.sum;
  sum.backup_id = job.id;
  if (job.media && job.media->labelled) sum.labelled_volumes = *job.media->labelled;
  sum.validate_only = opts.validate_only;
  if (job.validator) sum.page_format = job.validator->name();
  if (!job.leftovers.empty()) sum.warnings.push_back(leftover_warning(job.leftovers, job.dest));
  for (auto& w : job.parent_warnings) sum.warnings.push_back(std::move(w));
  for (auto& w : job.leftover_notes) sum.warnings.push_back(std::move(w));
  if (opts.level) {
    sum.level = *opts.level;
    sum.cumulative = opts.cumulative;
    sum.change_unit = opts.change_unit;
  }
  sum.skipped = job.plan.skipped;
  sum.excluded = job.plan.excluded;
  sum.files_planned = job.planned;
  sum.sets = static_cast<uint32_t>(job.sets.size());
  sum.sections = job.sections;
  sum.buffers = job.buffers;
  sum.max_piece_size = opts.channel.max_piece_size;
  sum.checkpoint_bytes = job.channel.checkpoint_bytes;
  sum.checkpoint_interval_s =
      std::chrono::duration<double>(job.channel.checkpoint_interval).count();
  sum.section_size =
      opts.section_size ? std::max<uint64_t>(1u << 20, opts.section_size >> 20 << 20) : 0;
  sum.rate = opts.channel.rate;
  sum.job_rate = opts.job_rate;
  if (opts.keys) sum.encryption = std::string("aes-256-gcm (") + opts.keys->kind_name() + ")";
}

// The channels' figures, pieces and warnings, and the first error (one that only echoes
// another channel's failure gives way to that one).
void add_outcomes(BackupJob& job) {
  BackupSummary& sum = job.sum;
  bool first_is_secondary = false;  // the error kept so far only echoes another channel's
  for (auto& o : job.outcomes) {
    job.unfinished.insert(job.unfinished.end(), o.unfinished.begin(), o.unfinished.end());
    sum.channels.push_back(o.stats);
    sum.bytes_read += o.stats.bytes_read;
    sum.bytes_written += o.stats.bytes_written;
    sum.deadline_hit = sum.deadline_hit || o.deadline_hit;
    job.pieces.insert(job.pieces.end(), o.pieces.begin(), o.pieces.end());
    for (auto& w : o.warnings) sum.warnings.push_back(w);
    sum.pages.checked += o.pages.checked;
    sum.pages.retried += o.pages.retried;
    sum.pages.recovered += o.pages.recovered;
    sum.pages.newer += o.pages.newer;
    for (auto& c : o.pages.corrupt) sum.pages.corrupt.push_back(std::move(c));
    if (!o.status && (sum.error.empty() || first_is_secondary)) {
      first_is_secondary = o.status.error().code == Errc::cancelled && job.abort.load();
      sum.error = o.status.error().what;
      sum.error_code = o.status.error().code;
    }
  }
}

struct FileAssembly {
  const FileTask* file = nullptr;
  UnitDone attrs;  // of its first section
  std::set<uint32_t> sections;
  std::vector<UnitExtent> extents;
  std::set<std::string> pieces;
  std::vector<DigestMap> maps;  // level backups: the unit digests of each section
  uint64_t units_written = 0;
};

// The record of a file whose every section is in a durable piece, with its whole-file
// digest. In a backup with a change unit the digest combines the unit digests
// (change_map.h), and the record says how the file relates to its parent. Empty when the
// file's maps do not join.
std::optional<catalog::FileRecord> file_record(const std::string& path, FileAssembly& a,
                                               uint32_t unit,
                                               const std::map<std::string, UnitMap>& parents,
                                               std::vector<std::pair<std::string, UnitMap>>* maps) {
  std::sort(a.extents.begin(), a.extents.end(),
            [](const UnitExtent& x, const UnitExtent& y) { return x.offset < y.offset; });
  util::DigestCombiner comb;
  for (const auto& e : a.extents) comb.add(e.offset, e.length, e.digest);
  catalog::FileRecord r;
  r.path = path;
  r.size = a.attrs.size;
  r.mode = a.attrs.mode;
  r.mtime_ns = a.attrs.mtime_ns;
  r.uid = a.attrs.uid;
  r.gid = a.attrs.gid;
  r.digest = comb.finish();
  r.pieces.assign(a.pieces.begin(), a.pieces.end());
  if (!unit) return r;
  auto m = join_maps(std::move(a.maps), r.size, unit, path);
  if (!m) return std::nullopt;  // cannot happen: the channels hashed every unit they read
  r.digest = map_file_digest(*m);
  if (maps) maps->emplace_back(path, *m);
  r.unit = unit;
  r.ctime_ns = a.file->ctime_ns;
  r.inode = a.file->ino;
  r.units_written = a.units_written;
  if (auto p = parents.find(path); p != parents.end()) {
    r.parent = p->second.backup;
    r.change = a.units_written == 0 && p->second.size == r.size ? catalog::FileChange::unchanged
                                                                : catalog::FileChange::changed;
  }
  return r;
}

// Files whose every section is in a durable piece (file_record()). `kept`: units a resumed
// backup's durable pieces finished before the interruption.
std::vector<catalog::FileRecord> assemble_files(std::vector<ChannelOutcome>& outcomes,
                                                uint32_t unit,
                                                const std::map<std::string, UnitMap>& parents,
                                                std::vector<std::pair<std::string, UnitMap>>* maps,
                                                std::vector<UnitDone>& kept) {
  std::map<std::string, FileAssembly> byname;
  std::vector<std::vector<UnitDone>*> all;
  for (auto& o : outcomes) all.push_back(&o.units);
  all.push_back(&kept);
  for (auto* units : all)
    for (auto& u : *units) {
      auto& a = byname[u.unit->file->path];
      if (!a.file || u.unit->section == 0) a.attrs = u;
      a.file = u.unit->file;
      a.sections.insert(u.unit->section);
      a.extents.insert(a.extents.end(), u.extents.begin(), u.extents.end());
      a.pieces.insert(u.pieces.begin(), u.pieces.end());
      if (unit) {
        a.maps.push_back({unit, u.first_unit * unit, std::move(u.unit_digests)});
        a.units_written += u.units_written;
      }
    }
  std::vector<catalog::FileRecord> out;
  for (auto& [path, a] : byname) {
    if (a.sections.size() != a.attrs.unit->sections) continue;
    if (auto r = file_record(path, a, unit, parents, maps)) out.push_back(std::move(*r));
  }
  return out;
}

// The recorded files that changed while they were read (some unit of theirs saw it).
std::vector<std::string> changed_files(const std::vector<ChannelOutcome>& outcomes,
                                       const std::vector<catalog::FileRecord>& files) {
  std::set<std::string> recorded, changed;
  for (const auto& f : files) recorded.insert(f.path);
  for (const auto& o : outcomes)
    for (const auto& u : o.units)
      if (u.changed && recorded.count(u.unit->file->path)) changed.insert(u.unit->file->path);
  return {changed.begin(), changed.end()};
}

// backup --resume: what was kept from before the interruption, and the files read again.
void describe_resume(BackupJob& job) {
  BackupSummary& sum = job.sum;
  const ResumePoint& resumed = *job.resumed;
  sum.resumed_files = resumed.files_kept;
  sum.resumed_sections = resumed.sections_kept;
  sum.resumed_bytes = resumed.bytes_kept;
  sum.resumed_from = resumed.backup_id;
  sum.resumed_reread = resumed.reread;
  for (const auto& [path, why] : resumed.reread)
    sum.warnings.push_back("resume: '" + path + "' is read again whole: " + why +
                           " since the interrupted run");
}

// Level backups: how each file relates to its parent, and the parents used.
void describe_changes(BackupJob& job) {
  std::set<uint64_t> used;
  for (const auto& f : job.files) {
    if (f.parent) used.insert(f.parent);
    job.sum.file_changes.push_back({f.path,
                                    f.change == catalog::FileChange::unchanged ? "unchanged"
                                    : f.change == catalog::FileChange::changed ? "changed"
                                    : f.change == catalog::FileChange::skipped ? "skipped"
                                                                               : "new",
                                    f.units_written, f.parent, f.held_by});
  }
  job.sum.parents.assign(used.begin(), used.end());
}

// What bounded the job (stats.h), from the channels' figures and where the bytes went.
Verdict verdict_of(const BackupJob& job) {
  const BackupOptions& opts = job.opts;
  VerdictInputs vi;
  if (auto src = opts.sources.empty() ? Result<Place>(fail(Errc::not_found, ""))
                                      : place_of(opts.sources.front()))
    vi.source = src->storage->scheme();
  if (opts.validate_only)
    vi.target.clear();
  else if (!job.targets.empty() && job.targets.front().storage) {
    vi.target = job.targets.front().storage->scheme();
    vi.target_removable = job.targets.front().storage->caps().removable;
  }
  vi.paced = opts.minimize_load;
  vi.compress_auto = opts.channel.compress_level == kCompressAuto;
  vi.bytes = job.sum.bytes_read;
  return explain_verdict(job.sum.channels, vi);
}

}  // namespace

Result<Next> gather_outcomes(BackupJob& job) {
  describe_job(job);
  add_outcomes(job);
  if (job.resumed) {
    // The pieces made before the interruption are the backup's too (recorded then).
    job.pieces.insert(job.pieces.begin(), job.resumed->pieces.begin(), job.resumed->pieces.end());
    for (const auto& p : job.resumed->pieces) job.recorded.names.insert(p.name);
  }
  return Next::go_on;
}

Result<Next> assemble_records(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  BackupSummary& sum = job.sum;
  job.files = assemble_files(job.outcomes, opts.level ? opts.change_unit : 0, job.parents,
                             opts.level && opts.media ? &job.media_maps : nullptr, job.kept_units);
  job.read_files = job.files.size();
  job.files.insert(job.files.end(), job.held.begin(), job.held.end());
  if (job.resumed) describe_resume(job);
  std::sort(
      job.files.begin(), job.files.end(),
      [](const catalog::FileRecord& a, const catalog::FileRecord& b) { return a.path < b.path; });
  if (opts.level) describe_changes(job);
  // In a hot backup they are expected (fuzzy): the database's redo replays over them.
  (opts.hot ? sum.fuzzy_files : sum.changed_files) = changed_files(job.outcomes, job.files);
  for (const auto& path : sum.changed_files)
    sum.warnings.push_back("'" + path +
                           "' changed while it was backed up (size or mtime): its "
                           "copy may hold a mix of old and new contents");
  sum.files = job.files.size();
  sum.pieces = static_cast<uint32_t>(job.pieces.size());
  sum.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - job.start).count();
  sum.verdict = verdict_of(job);
  sum.effective_rate = sum.elapsed_s > 0 ? static_cast<double>(sum.bytes_read) / sum.elapsed_s : 0;
  return Next::go_on;
}

Result<Next> judge_outcome(BackupJob& job) {
  const BackupOptions& opts = job.opts;
  BackupSummary& sum = job.sum;
  const size_t to_read = job.plan.files.size();
  if (!sum.error.empty()) {
    job.status = catalog::BackupStatus::failed;
  } else if (job.read_files == 0 && to_read != 0) {
    job.status = catalog::BackupStatus::failed;
    sum.error = "the duration ended before any file was completely backed up";
    sum.error_code = Errc::timed_out;
  } else if (job.read_files < to_read) {
    std::string why = "the duration ended with " + std::to_string(job.files.size()) + " of " +
                      std::to_string(job.planned) + " files backed up";
    job.status = opts.partial ? catalog::BackupStatus::partial : catalog::BackupStatus::failed;
    sum.error = opts.partial ? why : why + " (" + util::ask_option("partial") + " to keep them)";
    sum.error_code = Errc::timed_out;
  }
  // --max-corrupt: a file with more corrupt pages fails the backup (each is listed).
  std::sort(sum.pages.corrupt.begin(), sum.pages.corrupt.end(),
            [](const CorruptBlock& a, const CorruptBlock& b) {
              return a.file != b.file ? a.file < b.file : a.offset < b.offset;
            });
  if (opts.validate_only) return Next::go_on;
  job.status_unless_corrupt = job.status;
  // Per file: its corrupt pages, and the block of the first.
  std::map<std::string, std::pair<uint64_t, uint64_t>> per_file;
  for (const auto& c : sum.pages.corrupt)
    ++per_file.try_emplace(c.file, 0, c.block).first->second.first;
  for (const auto& [file, found] : per_file)
    if (found.first > opts.max_corrupt && job.status != catalog::BackupStatus::failed) {
      job.status = catalog::BackupStatus::failed;
      job.corruption_failed = true;
      sum.error_code = Errc::corrupt;
      sum.error = "'" + file + "' has " + std::to_string(found.first) +
                  " corrupt page(s), more than " +
                  util::option_value_word("max_corrupt", std::to_string(opts.max_corrupt)) +
                  " allows (the first: block " + std::to_string(found.second) + ")";
    }
  return Next::go_on;
}

}  // namespace stripeback::engine::backup_internal
