/* A firmware-style backup with the Stripeback C API: one directory to one destination, a
 * progress bar drawn from the progress callback, SIGINT/SIGTERM cancel the job cleanly, and
 * the exit code comes from the job's status.
 *
 *   backup_firmware SOURCE DESTINATION CATALOG [CHANNELS]
 *
 * Exit codes: 0 done, 1 the backup failed, 2 bad arguments, 3 partial, 130 cancelled. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stripeback/stripeback.h>

static sb_job* volatile g_job = NULL;

/* sb_job_cancel is async-signal-safe: it only sets the job's lock-free flag. */
static void on_signal(int sig) {
  (void)sig;
  sb_job* job = g_job;
  if (job != NULL) sb_job_cancel(job);
}

static void on_progress(const sb_progress* p, void* user) {
  (void)user;
  const double pct = p->bytes_total ? 100.0 * (double)p->bytes_done / (double)p->bytes_total : 0;
  char bar[41];
  int fill = (int)(pct / 2.5);
  for (int i = 0; i < 40; ++i) bar[i] = i < fill ? '#' : '.';
  bar[40] = '\0';
  fprintf(stderr, "\r[%s] %5.1f%% %7.1f MB/s", bar, pct, p->rate / 1e6);
  if (p->eta_s >= 0 && !p->finished) fprintf(stderr, " eta %4.0f s", p->eta_s);
  for (size_t i = 0; i < p->channel_count; ++i)
    fprintf(stderr, " c%u:%s", (unsigned)p->channels[i].channel, p->channels[i].state);
  if (p->finished) {
    fprintf(stderr, "\nbound by %s (%s)%s%s\n", p->bound_by, p->stage,
            p->suggestion[0] ? ": " : "", p->suggestion);
  }
}

static void on_log(sb_log_level level, const char* message, void* user) {
  (void)user;
  fprintf(stderr, "\n%s: %s\n", level >= SB_LOG_WARN ? "warning" : "note", message);
}

static int exit_code(sb_status st) {
  switch (st) {
    case SB_OK: return 0;
    case SB_CHANGED: return 0; /* complete; some files changed while read */
    case SB_INVALID_ARGUMENT:
    case SB_NOT_FOUND:
    case SB_UNSUPPORTED: return 2;
    case SB_PARTIAL: return 3;
    case SB_CANCELLED: return 130;
    default: return 1;
  }
}

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    fprintf(stderr, "usage: %s SOURCE DESTINATION CATALOG [CHANNELS]\n", argv[0]);
    return 2;
  }
  fprintf(stderr, "libstripeback %s\n", sb_version_string());
  sb_options* opts = sb_options_new();
  if (opts == NULL) return 1;
  sb_status st = sb_options_set(opts, "source", argv[1]);
  if (st == SB_OK) st = sb_options_set(opts, "destination", argv[2]);
  if (st == SB_OK && argc == 5) st = sb_options_set(opts, "channels", argv[4]);
  if (st == SB_OK) st = sb_options_set_progress(opts, on_progress, NULL);
  if (st == SB_OK) st = sb_options_set_log(opts, on_log, NULL, SB_LOG_WARN);
  if (st != SB_OK) {
    fprintf(stderr, "backup_firmware: %s\n", sb_options_errmsg(opts));
    sb_options_free(opts);
    return exit_code(st);
  }
  sb_catalog* cat = NULL;
  st = sb_catalog_open(argv[3], SB_CATALOG_CREATE, &cat);
  if (st != SB_OK) {
    fprintf(stderr, "backup_firmware: %s\n", cat ? sb_catalog_errmsg(cat) : "out of memory");
    sb_catalog_free(cat);
    sb_options_free(opts);
    return exit_code(st);
  }
  sb_job* job = NULL;
  st = sb_job_new(cat, SB_OP_BACKUP, opts, &job);
  if (st == SB_OK) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    g_job = job;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    st = sb_job_run(job);
    g_job = NULL;
  }
  if (st == SB_OK || st == SB_CHANGED)
    printf("backup %llu %s: %llu files, %llu bytes read, %llu written, %.2f s\n",
           (unsigned long long)sb_job_backup_id(job), sb_job_state(job),
           (unsigned long long)sb_job_files(job), (unsigned long long)sb_job_bytes_read(job),
           (unsigned long long)sb_job_bytes_written(job), sb_job_elapsed_s(job));
  else
    fprintf(stderr, "backup_firmware: %s: %s\n", sb_status_name(st), sb_job_errmsg(job));
  sb_job_free(job);
  sb_catalog_free(cat);
  sb_options_free(opts);
  return exit_code(st);
}
