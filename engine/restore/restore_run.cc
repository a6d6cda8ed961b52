#include "engine/restore/restore_phases.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "storage/registry.h"
#include "util/log.h"

namespace stripeback::engine {
namespace {

using util::Next;

// Compares the delta chunks' blocks, `channels` threads at most (restore_delta.h).
void compare_blocks(RestoreJob& job, std::vector<DeltaChunk>& dchunks, size_t span) {
  std::atomic<size_t> dnext{0};
  const uint32_t n = std::max<uint32_t>(
      1, std::min<uint32_t>(job.channels, static_cast<uint32_t>(dchunks.size())));
  std::vector<std::thread> cmp;
  if (!dchunks.empty())
    for (uint32_t c = 0; c < n; ++c)
      cmp.emplace_back([&, log_sink = util::current_log_sink(),
                        storages = storage::current_registry()] {
        util::ScopedLogSink logs(log_sink);
        storage::ScopedRegistry registered(storages);
        run_delta_compare(job.ctx, dchunks, dnext, span);
      });
  for (auto& t : cmp) t.join();
}

// What the channels did, into the summary.
void add_outcomes(RestoreJob& job, std::vector<RestoreOutcome>& outs) {
  RestoreSummary& sum = job.sum;
  for (const auto& st : job.states)
    if (st->failed && !S_ISDIR(st->item->file.mode))
      sum.failed_files.push_back({st->item->file.path, st->item->backup_id, st->error.what});
  for (const auto& p : job.stream.pieces_read()) sum.media_pieces.push_back(p);
  sum.media_bytes_read = job.stream.bytes_read();
  for (auto& o : outs) {
    sum.deadline_hit = sum.deadline_hit || o.deadline_hit;
    sum.channels.push_back(o.stats);
    sum.files += o.stats.files;
    sum.bytes += o.file_bytes;
    sum.piece_bytes_read += o.stats.bytes_read;
    for (auto& e : o.errors) sum.add_error(e);
  }
}

}  // namespace

// Phase (restore): the target is made only now, once every piece (and key) is known good.
// It is reached through its Directory, never following a link below it. Temporaries of a
// killed restore into this target are named and removed before this one creates any
// (restore_journal.h); its own journal comes first, to learn the owner the medium gives
// this restore's files.
Result<Next> open_target(RestoreJob& job) {
  const Place& place = *job.target_place;
  auto r = place.storage->open_dir(place.at, /*create=*/true);
  if (!r) return fail(Errc::invalid_argument, "restore target is not usable: " + r.error().what);
  job.root = std::move(*r);
  SB_ASSIGN(job.journal, RestoreJournal::create(*job.root));
  for (auto& w : clean_restore_leftovers(*job.root, ::geteuid() == 0, *job.journal))
    job.sum.warnings.push_back(std::move(w));
  return Next::go_on;
}

// Phase: the files largest first, and what every channel shares (RestoreContext), with
// buffers that hold the largest frame the pieces hold, whatever buffer size the backup
// used.
Result<Next> set_up_channels(RestoreJob& job) {
  const RestoreOptions& opts = job.opts;
  job.sum.backups_used.assign(job.used.begin(), job.used.end());
  std::sort(job.items.begin(), job.items.end(), [](const RestoreItem& a, const RestoreItem& b) {
    return a.file.size != b.file.size ? a.file.size > b.file.size : a.file.path < b.file.path;
  });
  ChannelConfig config = opts.channel;
  auto fit_frames = [&](const std::vector<RestorePart>& parts) {
    for (const auto& part : parts)
      for (const Extent& e : part.piece->trailer().extents[part.file_id])
        config.buffer_size = std::max<size_t>(
            config.buffer_size, align_up(std::max(e.stored_len, e.raw_len)));
  };
  for (const auto& it : job.items) {
    fit_frames(it.parts);
    for (const auto& l : it.older) fit_frames(l.parts);
  }
  RestoreContext& ctx = job.ctx;
  ctx.header_logs = nullptr;
  ctx.verify_only = opts.verify_only;
  ctx.job_start = job.start;
  ctx.root = job.root.get();
  ctx.caps = job.target_place ? &job.target_place->storage->caps() : nullptr;
  ctx.force = opts.force || opts.delta;
  ctx.set_owner = ::geteuid() == 0;
  ctx.cancel = opts.cancel;
  ctx.config = config;
  ctx.journal = job.journal.get();
  ctx.remaps = &opts.remaps;
  job.deltas.resize(job.items.size());
  job.done.assign(job.items.size(), false);
  return Next::go_on;
}

// Phase (restore --delta): the existing files are compared with the backup first, in
// parallel. A file found equal is done (its attributes set); one that differs goes on with
// only its differing blocks, or whole when most differ.
Result<Next> compare_in_place(RestoreJob& job) {
  if (!job.opts.delta) return Next::go_on;
  RestoreSummary& sum = job.sum;
  sum.delta.used = true;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<DeltaChunk> dchunks;
  size_t span = job.ctx.config.buffer_size;
  for (size_t i = 0; i < job.items.size(); ++i) {
    auto d = open_delta_file(*job.root, job.items[i], job.ctx.config, job.opts.remaps, dchunks);
    if (!d) {
      sum.add_error(d.error());
      job.done[i] = true;
      continue;
    }
    job.deltas[i] = std::move(*d);
    if (job.deltas[i])
      for (const auto& b : job.deltas[i]->blocks)
        span = std::max<size_t>(span, align_up(b.len) + kBlock);
  }
  compare_blocks(job, dchunks, span);
  DeltaSummary& totals = sum.delta;
  for (size_t i = 0; i < job.items.size(); ++i) {
    auto& delta = job.deltas[i];
    if (!delta) continue;
    bool whole = false;
    Error err;
    if (!settle_delta_file(job.ctx, *delta, &whole, &err, totals)) {
      job.done[i] = true;
      if (!err.what.empty()) sum.add_error(err);
      else {
        ++sum.files;
        sum.bytes += job.items[i].file.size;
      }
    }
    if (whole && delta->linked)
      sum.warnings.push_back("'" + delta->shown + "' has " + std::to_string(delta->linked) +
                             " hard links: replaced by a whole copy rather than updated in "
                             "place, so its other names keep their contents");
    if (whole) delta.reset();
  }
  totals.compare_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Next::go_on;
}

// Phase: each file's extents, merged from its pieces and checked against the catalog, cut
// into the chunks the channels share (restore_chunks.h). A file that fails here fails
// alone; one compared for a delta restore gives up its undo log (nothing was changed).
Result<Next> chunk_files(RestoreJob& job) {
  const FrameSelection& select = job.opts.select;
  const bool some = select.sample || select.parts;
  for (size_t i = 0; i < job.items.size(); ++i) {
    if (job.done[i]) continue;
    const auto& it = job.items[i];
    auto st = make_file_state(it, job.ctx.config.buffer_size, job.chunks, job.deltas[i].get(),
                              some ? &job.keep : nullptr);
    if (!st) {
      if (job.deltas[i]) {
        FileState gone;
        gone.item = &it;
        gone.delta = job.deltas[i].get();
        gone.dir = std::move(job.deltas[i]->dir);
        abandon_restore_file(job.ctx, gone);
      }
      job.sum.add_error(st.error());
      continue;
    }
    job.states.push_back(std::move(*st));
  }
  for (auto& st : job.states) st->chunks_total = 0;
  for (auto& c : job.chunks) ++c.file->chunks_total;
  return Next::go_on;
}

// Phase: the channels restore (or verify) the chunks, one thread each, and pieces read in
// order get one channel per drive beside them (restore_stream.h).
Result<Next> run_channels(RestoreJob& job) {
  const RestoreOptions& opts = job.opts;
  RestoreContext& ctx = job.ctx;
  job.sum.verify_only = opts.verify_only;
  ctx.chunks = &job.chunks;
  ctx.next = &job.next;
  const uint32_t nch =
      job.chunks.empty()
          ? 0
          : std::max<uint32_t>(1, std::min<uint32_t>(job.channels,
                                                     static_cast<uint32_t>(job.chunks.size())));
  const uint32_t nstream = job.media_channels = job.stream.channels();
  ctx.progress = opts.progress;
  if (opts.progress) {
    uint64_t total = 0;
    for (const auto& st : job.states)
      for (const PartExtent& pe : st->extents) total += pe.extent->raw_len;
    opts.progress->start(nch + nstream, total);
  }
  std::vector<RestoreOutcome> outs(nch + nstream);
  std::vector<std::thread> threads;
  const auto log_sink = util::current_log_sink();
  const auto storages = storage::current_registry();
  for (uint32_t c = 0; c < nch; ++c)
    threads.emplace_back([&, c] {
      util::ScopedLogSink logs(log_sink);
      storage::ScopedRegistry registered(storages);
      outs[c] = run_restore_channel(ctx, c + 1);
    });
  for (uint32_t c = 0; c < nstream; ++c)
    threads.emplace_back([&, c] {
      util::ScopedLogSink logs(log_sink);
      storage::ScopedRegistry registered(storages);
      outs[nch + c] =
          job.stream.run_channel(ctx, c, nch + c + 1, opts.keys.get(), opts.media_drives);
    });
  for (auto& t : threads) t.join();
  add_outcomes(job, outs);
  return Next::go_on;
}

// Phase (restore): directories get their attributes last, deepest first (adding files
// changes a directory's mtime), unless cancelled; then the journal goes when every
// temporary it noted has settled.
Result<Next> finish_target(RestoreJob& job) {
  auto& dirs = job.dirs;
  std::sort(dirs.begin(), dirs.end(), [](const auto* a, const auto* b) {
    return a->path.size() != b->path.size() ? a->path.size() > b->path.size() : a->path < b->path;
  });
  if (!(job.opts.cancel && job.opts.cancel->load()))
    for (const auto* d : dirs)
      if (auto r = restore_dir_attributes(*job.root, *d, job.ctx.set_owner, job.opts.remaps); !r)
        job.sum.add_error(r.error());
  if (auto w = job.journal->finish(); !w.empty()) job.sum.warnings.push_back(std::move(w));
  return Next::go_on;
}

// Phase: the job's time, what bounded it (stats.h) and its status.
Result<Next> summarize(RestoreJob& job) {
  RestoreSummary& sum = job.sum;
  sum.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - job.start).count();
  VerdictInputs vi;
  if (job.media_channels > 0) {
    vi.source = "removable media";
  } else if (!job.cache.readers().empty()) {
    if (auto src = place_of(job.cache.readers().begin()->first)) vi.source = src->storage->scheme();
  }
  vi.target = job.target_place ? job.target_place->storage->scheme() : "";
  uint64_t moved = 0;
  for (const auto& ch : sum.channels) moved += ch.bytes_read + ch.bytes_written;
  vi.bytes = moved;
  sum.verdict = explain_verdict(sum.channels, vi);
  sum.status = sum.errors.empty() ? "complete" : "failed";
  return Next::go_on;
}

}  // namespace stripeback::engine
