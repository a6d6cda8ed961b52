/* The engine's own ceiling (docs/benchmarks.md, "The engine's own ceiling"): backup, restore
 * and validate from and to memory, so that neither a disk nor a network bounds them, with
 * the CPU seconds each job took. Backups read a page-cached (tmpfs) source; one writes its
 * pieces to a "discard" storage of this program's (an sb_storage_ops whose writes are
 * dropped: the benchmark's only, the engine's work alone), one to a tmpfs directory, which a
 * restore then reads back into a tmpfs directory and a validation reads. Direct I/O is off:
 * the files are in memory already.
 *
 *   ceiling discard SOURCE CATALOG CHANNELS      backup to discard://pieces
 *   ceiling backup SOURCE PIECES CATALOG CHANNELS
 *   ceiling restore TARGET CATALOG CHANNELS       the newest backup of CATALOG
 *   ceiling validate CATALOG CHANNELS
 *
 * Prints one line: "<job> <status> bytes=<n> wall=<s> user=<s> sys=<s>". */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "stripeback/stripeback.h"

static int d_open(void* user, const char* path, int flags, void** file) {
  (void)user;
  (void)path;
  if (flags != SB_OPEN_WRITE) return -ENOENT; /* nothing is kept to read back */
  *file = (void*)1;
  return 0;
}
static int d_read(void* user, void* file, uint64_t off, void* buf, size_t len, size_t* done) {
  (void)user, (void)file, (void)off, (void)buf, (void)len;
  *done = 0;
  return -EIO;
}
static int d_write(void* user, void* file, uint64_t off, const void* buf, size_t len) {
  (void)user, (void)file, (void)off, (void)buf, (void)len;
  return 0;
}
static int d_sync(void* user, void* file) {
  (void)user, (void)file;
  return 0;
}
static int d_stat(void* user, const char* path, sb_storage_stat* out) {
  (void)user;
  /* The destination directory exists; no file does. */
  if (strchr(path, '/') != NULL && strlen(strchr(path, '/')) > 1) return -ENOENT;
  memset(out, 0, sizeof *out);
  out->mode = S_IFDIR | 0700;
  return 0;
}
static int d_list(void* user, const char* dir, void (*entry)(void*, const char*), void* ctx) {
  (void)user, (void)dir, (void)entry, (void)ctx;
  return 0;
}
static int d_path(void* user, const char* path) {
  (void)user, (void)path;
  return 0;
}
static int d_rename(void* user, const char* from, const char* to) {
  (void)user, (void)from, (void)to;
  return 0;
}
static int d_close(void* user, void* file) {
  (void)user, (void)file;
  return 0;
}

static double seconds(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run(const char* name, sb_catalog* cat, sb_operation op, sb_options* o) {
  struct rusage r0, r1;
  sb_job* job = NULL;
  getrusage(RUSAGE_SELF, &r0);
  double t0 = now();
  sb_status st = sb_job_new(cat, op, o, &job);
  if (st == SB_OK) st = sb_job_run(job);
  double t1 = now();
  getrusage(RUSAGE_SELF, &r1);
  if (st != SB_OK) {
    fprintf(stderr, "ceiling: %s: %s: %s\n", name, sb_status_name(st), job ? sb_job_errmsg(job) : "");
    sb_job_free(job);
    return 1;
  }
  unsigned long long bytes =
      (unsigned long long)(op == SB_OP_RESTORE ? sb_job_bytes_written(job) : sb_job_bytes_read(job));
  printf("%s %s bytes=%llu wall=%.3f user=%.3f sys=%.3f\n", name, sb_status_name(st), bytes,
         t1 - t0, seconds(r1.ru_utime) - seconds(r0.ru_utime),
         seconds(r1.ru_stime) - seconds(r0.ru_stime));
  sb_job_free(job);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: ceiling discard|backup|restore|validate ... (see bench/ceiling.c)\n");
    return 2;
  }
  const char* what = argv[1];
  const char* catdir = NULL;
  const char* channels = NULL;
  sb_options* o = sb_options_new();
  sb_operation op = SB_OP_BACKUP;
  if (!strcmp(what, "discard") && argc == 5) {
    static const sb_storage_ops ops = {SB_STORAGE_OPS_VERSION, d_open, d_read, d_write, d_sync,
                                       d_stat, d_list, d_path, d_rename, d_close, d_path, NULL};
    sb_options_add_storage(o, "discard", &ops);
    sb_options_set(o, "source", argv[2]);
    sb_options_set(o, "destination", "discard://pieces");
    catdir = argv[3];
    channels = argv[4];
  } else if (!strcmp(what, "backup") && argc == 6) {
    sb_options_set(o, "source", argv[2]);
    sb_options_set(o, "destination", argv[3]);
    catdir = argv[4];
    channels = argv[5];
  } else if (!strcmp(what, "restore") && argc == 5) {
    op = SB_OP_RESTORE;
    sb_options_set(o, "target", argv[2]);
    catdir = argv[3];
    channels = argv[4];
  } else if (!strcmp(what, "validate") && argc == 4) {
    op = SB_OP_VALIDATE;
    catdir = argv[2];
    channels = argv[3];
  } else {
    fprintf(stderr, "ceiling: bad arguments (see bench/ceiling.c)\n");
    return 2;
  }
  sb_options_set(o, "channels", channels);
  sb_options_set_bool(o, "direct", 0);
  sb_catalog* cat = NULL;
  if (sb_catalog_open(catdir, SB_CATALOG_CREATE, &cat) != SB_OK) {
    fprintf(stderr, "ceiling: catalog %s: %s\n", catdir, cat ? sb_catalog_errmsg(cat) : "");
    return 1;
  }
  int rc = run(what, cat, op, o);
  sb_catalog_free(cat);
  sb_options_free(o);
  return rc;
}
