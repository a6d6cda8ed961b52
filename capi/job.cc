// sb_job: settings turned into engine options (checked before anything is opened), the
// run with the job's own log sink, progress publisher and cancel flag, and the result.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <random>

#include "capi/callback_storage.h"
#include "capi/handles.h"
#include "capi/progress_map.h"
#include "cli/render.h"
#include "engine/backup/backup_job.h"
#include "engine/monitor/progress.h"
#include "engine/restore/restore_job.h"
#include "engine/monitor/status_file.h"
#include "engine/wiring/backends.h"
#include "options/job_options.h"
#include "storage/registry.h"
#include "util/log.h"
#include "util/units.h"

using stripeback::capi::fail_with;
using stripeback::capi::Kind;
using stripeback::capi::Settings;
namespace engine = stripeback::engine;
namespace util = stripeback::util;

// sb_job_cancel may be called from a signal handler: the flag must be lock-free.
static_assert(std::atomic<bool>::is_always_lock_free);

struct sb_job {
  stripeback::capi::Header h{Kind::job};
  sb_catalog* cat = nullptr;
  sb_operation op = SB_OP_BACKUP;
  Settings s;  // a copy: the options may be changed or freed once the job is made
  engine::BackupOptions backup;
  engine::RestoreOptions restore;
  std::atomic<bool> cancel{false};
  std::shared_ptr<const stripeback::storage::Registry> storages;  // the caller's, by scheme
  bool ran = false;
  sb_status status = SB_OK;
  std::string json, state;
  uint64_t backup_id = 0, files = 0, bytes_read = 0, bytes_written = 0;
  double elapsed_s = 0;
};

namespace stripeback::capi {
namespace {

Result<void> backup_options(sb_job& j) {
  options::Settings s = j.s.job;
  s.validate = j.op == SB_OP_VALIDATE_SOURCE;
  SB_ASSIGN(j.backup, options::backup_options(s));
  j.backup.cancel = &j.cancel;
  return ok();
}

Result<void> restore_options(sb_job& j) {
  SB_ASSIGN(j.restore, options::restore_options(j.s.job, j.op == SB_OP_VALIDATE));
  j.restore.cancel = &j.cancel;
  return ok();
}

// The job's log sink: the embedder's callback at its level, or nothing at all (never the
// process default, which belongs to the program).
std::shared_ptr<const util::LogSink> log_sink_of(const Settings& s) {
  sb_log_fn fn = s.log_fn;
  void* user = s.log_user;
  const int min = s.log_min;
  return std::make_shared<const util::LogSink>(
      [fn, user, min](util::LogLevel level, std::string_view message) {
        if (fn == nullptr || static_cast<int>(level) < min) return;
        try {
          const std::string text(message);
          fn(static_cast<sb_log_level>(level), text.c_str(), user);
        } catch (...) {
        }
      });
}

sb_status finish_backup(sb_job& j, const Result<engine::BackupSummary>& sum) {
  if (!sum) return fail_with(j.h, sum.error());
  j.json = cli::backup_json(*sum);
  j.state = sum->status;
  j.backup_id = sum->backup_id;
  j.files = sum->files;
  j.bytes_read = sum->bytes_read;
  j.bytes_written = sum->bytes_written;
  j.elapsed_s = sum->elapsed_s;
  if (sum->status == "partial")
    return fail_with(j.h, SB_PARTIAL, "backup is partial: " + sum->error);
  if (sum->status != "complete") {
    // The kind of the failure the engine kept: a full destination is SB_NO_SPACE, a
    // duration that ended SB_TIMED_OUT, damaged pages SB_CORRUPT, as the statuses promise.
    const sb_status st = j.cancel.load() ? SB_CANCELLED : status_of(sum->error_code);
    std::string what = sum->validate_only ? "validation failed: " : "backup failed: ";
    return fail_with(j.h, st, what + sum->error);
  }
  if (sum->validate_only && !sum->pages.corrupt.empty()) {
    const auto& p = sum->pages.corrupt.front();
    return fail_with(j.h, SB_CORRUPT,
                     std::to_string(sum->pages.corrupt.size()) + " corrupt page(s) found, e.g. '" +
                         p.file + "' block " + std::to_string(p.block) + ": " + p.reason);
  }
  if (sum->suspicious)
    return fail_with(j.h, SB_SUSPICIOUS,
                     "backup " + std::to_string(sum->backup_id) +
                         " looks like encrypted or destroyed data: " +
                         engine::suspicion_line(*sum->suspicious));
  if (!sum->changed_files.empty())
    return fail_with(j.h, SB_CHANGED,
                     std::to_string(sum->changed_files.size()) +
                         " file(s) changed while they were read, e.g. '" +
                         sum->changed_files.front() + "'");
  j.h.error.clear();
  return SB_OK;
}

sb_status finish_restore(sb_job& j, const Result<engine::RestoreSummary>& sum) {
  if (!sum) return fail_with(j.h, sum.error());
  j.json = cli::restore_json(*sum);
  j.state = sum->status;
  j.files = sum->files;
  j.bytes_read = sum->piece_bytes_read;
  j.bytes_written = sum->verify_only ? 0 : sum->bytes_written();
  j.elapsed_s = sum->elapsed_s;
  if (sum->status != "complete") {
    std::string what =
        sum->errors.empty() ? std::string("failed") : sum->errors.front();
    if (j.cancel.load()) return fail_with(j.h, SB_CANCELLED, what);
    return fail_with(j.h, status_of(sum->error_code()), what);
  }
  j.h.error.clear();
  return SB_OK;
}

const char* operation_name(sb_operation op) {
  switch (op) {
    case SB_OP_BACKUP: return "backup";
    case SB_OP_RESTORE: return "restore";
    case SB_OP_VALIDATE:
    case SB_OP_VALIDATE_SOURCE: return "validate";
  }
  return "?";
}

sb_status run(sb_job& j) {
  util::ScopedLogSink logs(log_sink_of(j.s));
  if (j.s.job.nfs_tune_malloc) engine::allow_nfs_malloc_tuning();
  engine::configure_s3(j.s.job.s3);
  storage::ScopedRegistry registered(j.storages);
  // The status file is rewritten every progress interval: `stripeback status` calls a job
  // stalled after its hang-after without an update, so that is at least three intervals.
  const double hang_after_s = std::max(60.0, 3 * j.s.job.progress_interval_ms / 1000.0);
  engine::JobProgress progress(operation_name(j.op), j.s.job.tag, hang_after_s);
  // What `stripeback status` in another process reads, as for a job of the CLI; a job runs
  // without it when it cannot be made (the job's log says why).
  std::unique_ptr<engine::StatusFile> status;
  if (j.s.job.status_file) {
    auto st = engine::StatusFile::create(j.cat->cat->dir());
    if (st) status = std::move(*st);
    else util::log_warn("no status file for this job: " + st.error().what);
  }
  std::vector<engine::ProgressPublisher::Sink> sinks;
  if (status) {
    engine::StatusFile* file = status.get();
    sinks.push_back([file](const engine::ProgressSnapshot& snap) { file->write(snap); });
  }
  if (j.s.progress_fn != nullptr) {
    sb_progress_fn fn = j.s.progress_fn;
    void* user = j.s.progress_user;
    sinks.push_back(
        [fn, user](const engine::ProgressSnapshot& snap) { deliver_progress(snap, fn, user); });
  }
  std::unique_ptr<engine::ProgressPublisher> publisher;
  if (!sinks.empty())
    publisher = std::make_unique<engine::ProgressPublisher>(
        progress, std::move(sinks), std::chrono::milliseconds(j.s.job.progress_interval_ms));
  // The file goes with the job: after the publisher's last snapshot, before the result.
  auto stop_publishing = [&] {
    if (publisher) publisher->stop();
    publisher.reset();
    status.reset();
  };
  const bool is_backup = j.op == SB_OP_BACKUP || j.op == SB_OP_VALIDATE_SOURCE;
  sb_status st;
  if (is_backup) {
    j.backup.progress = &progress;
    auto sum = engine::run_backup(j.backup, *j.cat->cat);
    if (sum) progress.finish(sum->verdict.bound_by, sum->verdict.stage, sum->verdict.suggestion);
    else progress.finish("");
    stop_publishing();
    st = finish_backup(j, sum);
  } else {
    j.restore.progress = &progress;
    auto sum = engine::run_restore(j.restore, *j.cat->cat);
    if (sum) progress.finish(sum->verdict.bound_by, sum->verdict.stage, sum->verdict.suggestion);
    else progress.finish("");
    stop_publishing();
    st = finish_restore(j, sum);
  }
  return st;
}

template <class F>
sb_status guarded(sb_job& j, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    j.h.error = "out of memory";
    return SB_NOMEM;
  } catch (const std::exception& e) {
    j.h.error = std::string("internal error: ") + e.what();
    return SB_ERROR;
  } catch (...) {
    j.h.error = "internal error";
    return SB_ERROR;
  }
}

bool is_job(const sb_job* j) { return j != nullptr && j->h.kind == Kind::job; }

}  // namespace
}  // namespace stripeback::capi

extern "C" {

sb_status sb_job_new(sb_catalog* cat, sb_operation op, const sb_options* opts, sb_job** out) {
  if (out == nullptr) return SB_INVALID_ARGUMENT;
  *out = nullptr;
  sb_job* j = nullptr;
  try {
    j = new sb_job();
  } catch (...) {
    return SB_NOMEM;
  }
  *out = j;
  stripeback::capi::use_api_wording();
  return stripeback::capi::guarded(*j, [&]() -> sb_status {
    if (cat == nullptr || cat->h.kind != Kind::catalog || !cat->cat)
      return fail_with(j->h, SB_INVALID_ARGUMENT, "catalog handle is null or not open");
    if (opts == nullptr || opts->h.kind != Kind::options)
      return fail_with(j->h, SB_INVALID_ARGUMENT, "options handle is null");
    // A C caller may pass any int: read it as one (an enum value outside the enumerators
    // is undefined behaviour in C++ once loaded as the enum).
    int raw = 0;
    static_assert(sizeof(raw) == sizeof(op));
    std::memcpy(&raw, &op, sizeof raw);
    if (raw < SB_OP_BACKUP || raw > SB_OP_VALIDATE_SOURCE)
      return fail_with(j->h, SB_INVALID_ARGUMENT, "unknown operation " + std::to_string(raw));
    j->cat = cat;
    j->op = op;
    j->s = opts->s;
    if (!j->s.storages.empty()) {
      auto reg = std::make_shared<stripeback::storage::Registry>();
      for (const auto& [scheme, ops] : j->s.storages)
        reg->add(scheme, stripeback::capi::make_callback_storage(scheme, ops));
      j->storages = std::move(reg);
    }
    // Locations in the options are read with the caller's schemes known.
    stripeback::storage::ScopedRegistry registered(j->storages);
    auto r = (op == SB_OP_BACKUP || op == SB_OP_VALIDATE_SOURCE)
                 ? stripeback::capi::backup_options(*j)
                 : stripeback::capi::restore_options(*j);
    if (!r) return fail_with(j->h, r.error());
    return SB_OK;
  });
}

sb_status sb_job_run(sb_job* job) {
  if (!stripeback::capi::is_job(job)) return SB_INVALID_ARGUMENT;
  if (job->cat == nullptr) return fail_with(job->h, SB_INVALID_ARGUMENT, "job was not made");
  if (job->ran) return fail_with(job->h, SB_INVALID_ARGUMENT, "job has already run");
  job->ran = true;
  job->status = stripeback::capi::guarded(*job, [&] { return stripeback::capi::run(*job); });
  return job->status;
}

void sb_job_cancel(sb_job* job) {
  if (job != nullptr) job->cancel.store(true);
}

void sb_job_free(sb_job* job) {
  if (stripeback::capi::is_job(job)) delete job;
}

sb_status sb_job_status(const sb_job* job) {
  if (!stripeback::capi::is_job(job)) return SB_INVALID_ARGUMENT;
  return job->status;
}

const char* sb_job_result_json(const sb_job* job) {
  if (!stripeback::capi::is_job(job) || job->json.empty()) return nullptr;
  return job->json.c_str();
}

const char* sb_job_state(const sb_job* job) {
  return stripeback::capi::is_job(job) ? job->state.c_str() : "";
}
uint64_t sb_job_backup_id(const sb_job* job) {
  return stripeback::capi::is_job(job) ? job->backup_id : 0;
}
uint64_t sb_job_files(const sb_job* job) { return stripeback::capi::is_job(job) ? job->files : 0; }
uint64_t sb_job_bytes_read(const sb_job* job) {
  return stripeback::capi::is_job(job) ? job->bytes_read : 0;
}
uint64_t sb_job_bytes_written(const sb_job* job) {
  return stripeback::capi::is_job(job) ? job->bytes_written : 0;
}
double sb_job_elapsed_s(const sb_job* job) {
  return stripeback::capi::is_job(job) ? job->elapsed_s : 0;
}

}  // extern "C"
