/* Tests of the C API, in C: every operation, errors for bad arguments, progress, cancel from
 * another thread, two jobs at once, logging, the status file `stripeback status` reads, a
 * backup cut by its duration, the buffer settings, sb_backup_info's size, typed messages.
 * Run as `capi_test NAME [CLI]` (ctest: CApi.NAME; CLI: the stripeback binary, for
 * status_file). */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capi_support.h"
#include "stripeback/stripeback.h"

static const uint64_t kSizes[] = {3u << 20, (1u << 20) + 4097, 0, 200000, 5u << 20};
#define NSIZES (sizeof kSizes / sizeof kSizes[0])

/* A source tree, a destination and a catalog below one temporary directory. */
typedef struct {
  char* root;
  char* src;
  char* dest;
  char* cat_dir;
} Fixture;

static Fixture fixture(const char* name, uint32_t seed) {
  Fixture f;
  f.root = make_temp_dir(name);
  f.src = join(f.root, "src");
  f.dest = join(f.root, "dest");
  f.cat_dir = join(f.root, "catalog");
  make_tree(f.src, kSizes, NSIZES, seed);
  return f;
}

static void fixture_free(Fixture* f) {
  remove_tree(f->root);
  free(f->root);
  free(f->src);
  free(f->dest);
  free(f->cat_dir);
}

static sb_options* backup_opts(const Fixture* f) {
  sb_options* o = sb_options_new();
  CHECK(o != NULL);
  CHECK_STATUS(sb_options_set(o, "source", f->src), SB_OK);
  CHECK_STATUS(sb_options_set(o, "destination", f->dest), SB_OK);
  CHECK_STATUS(sb_options_set_int(o, "channels", 2), SB_OK);
  CHECK_STATUS(sb_options_set(o, "tag", "nightly"), SB_OK);
  return o;
}

/* The restored copy of source file `name` (relative to src) below `target`. */
static int restored_same(const Fixture* f, const char* target, const char* name) {
  char* orig = join(f->src, name);
  char* copy = join(target, orig); /* target + original absolute path */
  int same = same_file(orig, copy);
  if (!same) fprintf(stderr, "restored '%s' differs from '%s'\n", copy, orig);
  free(orig);
  free(copy);
  return same;
}

static int all_restored(const Fixture* f, const char* target) {
  int ok = 1;
  for (size_t i = 0; i < NSIZES; ++i) {
    char name[64];
    snprintf(name, sizeof name, "%sfile%zu.dbf", i % 2 ? "sub/" : "", i);
    ok = restored_same(f, target, name) && ok;
  }
  return ok;
}

static uint64_t tree_bytes(void) {
  uint64_t n = 0;
  for (size_t i = 0; i < NSIZES; ++i) n += kSizes[i];
  return n;
}

static int test_version(void) {
  CHECK(sb_version_number() == SB_VERSION_NUMBER);
  CHECK(strcmp(sb_version_string(), SB_VERSION_STRING) == 0);
  CHECK(SB_VERSION_NUMBER == SB_VERSION_MAJOR * 10000 + SB_VERSION_MINOR * 100 + SB_VERSION_PATCH);
  CHECK(strcmp(sb_status_name(SB_CANCELLED), "SB_CANCELLED") == 0);
  CHECK(strcmp(sb_status_name((sb_status)999), "SB_UNKNOWN") == 0);
  return 0;
}

static int test_bad_arguments(void) {
  /* null handles */
  CHECK_STATUS(sb_options_set(NULL, "channels", "2"), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_set_int(NULL, "channels", 2), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_set_bool(NULL, "force", 1), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_unset(NULL, "force"), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_set_progress(NULL, NULL, NULL), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_set_log(NULL, NULL, NULL, SB_LOG_INFO), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_add_storage(NULL, "x", NULL), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_catalog_open("/tmp", 0, NULL), SB_INVALID_ARGUMENT);
  const char* json = "unchanged";
  CHECK_STATUS(sb_catalog_list(NULL, &json), SB_INVALID_ARGUMENT);
  CHECK(sb_catalog_backup_count(NULL) == 0);
  CHECK_STATUS(sb_catalog_backup_at(NULL, 0, NULL), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_job_new(NULL, SB_OP_BACKUP, NULL, NULL), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_job_run(NULL), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_job_status(NULL), SB_INVALID_ARGUMENT);
  CHECK(sb_job_result_json(NULL) == NULL);
  CHECK(strcmp(sb_job_state(NULL), "") == 0);
  CHECK(sb_job_backup_id(NULL) == 0);
  sb_job_cancel(NULL);
  sb_job_free(NULL);
  sb_catalog_free(NULL);
  sb_options_free(NULL);
  CHECK(strcmp(sb_errmsg(NULL), "null handle") == 0);

  /* unknown keys and bad values: the message names both; the old value stays */
  sb_options* o = sb_options_new();
  CHECK_STATUS(sb_options_set(o, "bogus", "1"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "unknown option 'bogus'");
  CHECK_STATUS(sb_options_set(o, NULL, "1"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "key is null");
  CHECK_STATUS(sb_options_set(o, "channels", NULL), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "value is null");
  CHECK_STATUS(sb_options_set(o, "channels", "0"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o),
                 "option 'channels' wants a whole number from 1 to 256; got '0'");
  CHECK_STATUS(sb_options_set(o, "channels", "2x"), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_set(o, "channels", "-1"), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_set_int(o, "channels", 257), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_set(o, "channels", "3"), SB_OK);
  CHECK(strcmp(sb_options_errmsg(o), "") == 0);
  CHECK_STATUS(sb_options_set(o, "force", "maybe"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "option 'force' wants true or false");
  CHECK_STATUS(sb_options_set(o, "compress", "zstd:99"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "option 'compress'");
  CHECK_STATUS(sb_options_set(o, "max_piece_size", "lots"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "option 'max_piece_size'");
  CHECK_STATUS(sb_options_set(o, "sample", "150%"), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_set(o, "source", ""), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "option 'source' may not be empty");
  CHECK_STATUS(sb_options_set_int(o, "tag", 5), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "option 'tag' is not a number");
  CHECK_STATUS(sb_options_set_bool(o, "channels", 1), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_set_bool(o, "force", 1), SB_OK);
  CHECK_STATUS(sb_options_unset(o, "force"), SB_OK);
  CHECK_STATUS(sb_options_unset(o, "nope"), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_set_log(o, NULL, NULL, (sb_log_level)9), SB_INVALID_ARGUMENT);

  /* catalogs: missing, bad flags */
  char* root = make_temp_dir("bad");
  char* missing = join(root, "none");
  sb_catalog* cat = NULL;
  CHECK_STATUS(sb_catalog_open(missing, 0, &cat), SB_NOT_FOUND);
  CHECK(cat != NULL);
  CHECK_CONTAINS(sb_catalog_errmsg(cat), "catalog is not usable");
  CHECK_STATUS(sb_catalog_list(cat, &json), SB_INVALID_ARGUMENT);
  sb_catalog_free(cat);
  CHECK_STATUS(sb_catalog_open(missing, 0x80, &cat), SB_INVALID_ARGUMENT);
  sb_catalog_free(cat);
  CHECK_STATUS(sb_catalog_open("", SB_CATALOG_CREATE, &cat), SB_INVALID_ARGUMENT);
  sb_catalog_free(cat);

  /* jobs: what each operation needs */
  CHECK_STATUS(sb_catalog_open(missing, SB_CATALOG_CREATE, &cat), SB_OK);
  sb_job* job = NULL;
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, NULL, &job), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_job_errmsg(job), "options handle is null");
  sb_job_free(job);
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_job_errmsg(job), "no 'source' given");
  CHECK_STATUS(sb_job_run(job), SB_INVALID_ARGUMENT);
  sb_job_free(job);
  CHECK_STATUS(sb_options_set(o, "source", root), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_job_errmsg(job), "backup needs a 'destination'");
  sb_job_free(job);
  CHECK_STATUS(sb_job_new(cat, SB_OP_RESTORE, o, &job), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_job_errmsg(job), "restore needs a 'target'");
  sb_job_free(job);
  CHECK_STATUS(sb_job_new(cat, (sb_operation)42, o, &job), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_job_errmsg(job), "unknown operation 42");
  sb_job_free(job);
  CHECK_STATUS(sb_options_set_bool(o, "encrypt", 1), SB_OK);
  CHECK_STATUS(sb_options_set(o, "destination", root), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_job_errmsg(job), "'encrypt' needs");
  sb_job_free(job);
  /* A restore of a backup that is not there. */
  CHECK_STATUS(sb_options_unset(o, "encrypt"), SB_OK);
  CHECK_STATUS(sb_options_set(o, "target", root), SB_OK);
  CHECK_STATUS(sb_options_set(o, "backup_id", "77"), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_RESTORE, o, &job), SB_OK);
  sb_status st = sb_job_run(job);
  CHECK(st == SB_NOT_FOUND || st == SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_job_errmsg(job), "77");
  CHECK_STATUS(sb_job_run(job), SB_INVALID_ARGUMENT); /* once per job */
  CHECK_CONTAINS(sb_job_errmsg(job), "already run");
  sb_job_free(job);
  sb_catalog_free(cat);
  sb_options_free(o);
  remove_tree(root);
  free(missing);
  free(root);
  return 0;
}

/* Flips one byte 100 bytes into the first frame's data of the first piece in `dir`. */
static int corrupt_a_piece(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) return 0;
  struct dirent* e;
  int done = 0;
  while (!done && (e = readdir(d)) != NULL) {
    if (strstr(e->d_name, ".sbp") == NULL) continue;
    char* p = join(dir, e->d_name);
    FILE* fp = fopen(p, "r+b");
    if (fp != NULL && fseek(fp, 65536 + 100, SEEK_SET) == 0) {
      int c = fgetc(fp);
      fseek(fp, 65536 + 100, SEEK_SET);
      fputc(c ^ 0x5a, fp);
      done = 1;
    }
    if (fp) fclose(fp);
    free(p);
  }
  closedir(d);
  return done;
}

static int test_operations(void) {
  Fixture f = fixture("ops", 1);
  sb_catalog* cat = NULL;
  CHECK_STATUS(sb_catalog_open(f.cat_dir, SB_CATALOG_CREATE, &cat), SB_OK);
  sb_options* o = backup_opts(&f);
  sb_job* job = NULL;
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  CHECK(sb_job_result_json(job) == NULL);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  CHECK_STATUS(sb_job_status(job), SB_OK);
  CHECK(strcmp(sb_job_state(job), "complete") == 0);
  const uint64_t id = sb_job_backup_id(job);
  CHECK(id == 1);
  CHECK(sb_job_files(job) == NSIZES);
  CHECK(sb_job_bytes_read(job) == tree_bytes());
  CHECK(sb_job_bytes_written(job) > 0);
  CHECK(sb_job_elapsed_s(job) > 0);
  CHECK_CONTAINS(sb_job_result_json(job), "\"backup_id\":1");
  CHECK_CONTAINS(sb_job_result_json(job), "\"status\":\"complete\"");
  CHECK(count_pieces(f.dest) >= 1);
  sb_job_free(job);

  /* list: the JSON of `list --json` and the typed figures */
  const char* json = NULL;
  CHECK_STATUS(sb_catalog_list(cat, &json), SB_OK);
  CHECK_CONTAINS(json, "\"backups\":[");
  CHECK_CONTAINS(json, "\"tag\":\"nightly\"");
  CHECK(sb_catalog_backup_count(cat) == 1);
  sb_backup_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  CHECK_STATUS(sb_catalog_backup_at(cat, 0, &info), SB_OK);
  CHECK(info.id == id);
  CHECK(strcmp(info.status, "complete") == 0);
  CHECK(strcmp(info.tag, "nightly") == 0);
  CHECK(info.files == NSIZES);
  CHECK(info.bytes == tree_bytes());
  CHECK(info.start_time_ns > 0);
  CHECK(strcmp(info.destination, f.dest) == 0);
  CHECK_STATUS(sb_catalog_backup_at(cat, 1, &info), SB_NOT_FOUND);

  /* validate: every frame */
  sb_options* v = sb_options_new();
  CHECK_STATUS(sb_options_set_int(v, "backup_id", (int64_t)id), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_VALIDATE, v, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  CHECK(sb_job_files(job) == NSIZES);
  CHECK(sb_job_bytes_written(job) == 0);
  CHECK_CONTAINS(sb_job_result_json(job), "\"status\":\"complete\"");
  sb_job_free(job);

  /* restore, then again into the same place: refused without force */
  char* target = join(f.root, "restored");
  sb_options* r = sb_options_new();
  CHECK_STATUS(sb_options_set(r, "target", target), SB_OK);
  CHECK_STATUS(sb_options_set(r, "tag", "nightly"), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_RESTORE, r, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  CHECK(sb_job_files(job) == NSIZES);
  CHECK(sb_job_bytes_written(job) == tree_bytes());
  sb_job_free(job);
  CHECK(all_restored(&f, target));
  CHECK_STATUS(sb_job_new(cat, SB_OP_RESTORE, r, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_EXISTS);
  CHECK_CONTAINS(sb_job_errmsg(job), "refusing to overwrite");
  sb_job_free(job);
  CHECK_STATUS(sb_options_set_bool(r, "force", 1), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_RESTORE, r, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  sb_job_free(job);

  /* source validation reads and writes nothing */
  sb_options* sv = sb_options_new();
  CHECK_STATUS(sb_options_set(sv, "source", f.src), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_VALIDATE_SOURCE, sv, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  CHECK(sb_job_bytes_read(job) == tree_bytes());
  sb_job_free(job);

  /* a corrupted piece fails validation with SB_CORRUPT, naming the damage */
  CHECK(corrupt_a_piece(f.dest));
  CHECK_STATUS(sb_job_new(cat, SB_OP_VALIDATE, v, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_CORRUPT);
  CHECK(strlen(sb_job_errmsg(job)) > 0);
  CHECK(strcmp(sb_job_state(job), "failed") == 0);
  sb_job_free(job);

  sb_options_free(sv);
  sb_options_free(r);
  sb_options_free(v);
  sb_options_free(o);
  sb_catalog_free(cat);
  free(target);
  fixture_free(&f);
  return 0;
}

typedef struct {
  int calls;
  int finished_calls;
  int monotonic;
  uint64_t last_done;
  uint64_t last_total;
  size_t channels;
  char bound_by[64];
  char stage[128];
  int saw_state;
  sb_job* cancel_job; /* cancel once bytes move */
  uint64_t cancel_at;
  pthread_mutex_t mu;
} Progress;

static void on_progress(const sb_progress* p, void* user) {
  Progress* pr = user;
  pthread_mutex_lock(&pr->mu);
  ++pr->calls;
  if (p->bytes_done < pr->last_done) pr->monotonic = 0;
  pr->last_done = p->bytes_done;
  pr->last_total = p->bytes_total;
  pr->channels = p->channel_count;
  for (size_t i = 0; i < p->channel_count; ++i)
    if (p->channels[i].state != NULL && p->channels[i].state[0] != '\0' &&
        p->channels[i].channel == i + 1 && p->channels[i].state_s >= 0)
      pr->saw_state = 1;
  if (p->finished) {
    ++pr->finished_calls;
    snprintf(pr->bound_by, sizeof pr->bound_by, "%s", p->bound_by);
    snprintf(pr->stage, sizeof pr->stage, "%s", p->stage);
  }
  pthread_mutex_unlock(&pr->mu);
}

static void progress_init(Progress* p) {
  memset(p, 0, sizeof *p);
  p->monotonic = 1;
  pthread_mutex_init(&p->mu, NULL);
}

static int test_progress(void) {
  Fixture f = fixture("progress", 2);
  sb_catalog* cat = NULL;
  CHECK_STATUS(sb_catalog_open(f.cat_dir, SB_CATALOG_CREATE, &cat), SB_OK);
  sb_options* o = backup_opts(&f);
  Progress pr;
  progress_init(&pr);
  CHECK_STATUS(sb_options_set_progress(o, on_progress, &pr), SB_OK);
  CHECK_STATUS(sb_options_set_int(o, "progress_interval_ms", 100), SB_OK);
  /* 8 MiB/s a channel over ~9 MiB: a second or so, several pictures */
  CHECK_STATUS(sb_options_set(o, "rate", "8M"), SB_OK);
  sb_job* job = NULL;
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  pthread_mutex_lock(&pr.mu);
  CHECK(pr.calls >= 3);
  CHECK(pr.finished_calls == 1);
  CHECK(pr.monotonic);
  CHECK(pr.last_done == tree_bytes());
  CHECK(pr.last_total == tree_bytes());
  CHECK(pr.channels == 2);
  CHECK(pr.saw_state);
  CHECK(pr.bound_by[0] != '\0');
  CHECK(pr.stage[0] != '\0');
  pthread_mutex_unlock(&pr.mu);
  sb_job_free(job);

  /* a restore reports too, and ends with everything done */
  char* target = join(f.root, "restored");
  sb_options* r = sb_options_new();
  CHECK_STATUS(sb_options_set(r, "target", target), SB_OK);
  Progress rp;
  progress_init(&rp);
  CHECK_STATUS(sb_options_set_progress(r, on_progress, &rp), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_RESTORE, r, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  CHECK(rp.finished_calls == 1);
  CHECK(rp.monotonic);
  CHECK(rp.last_done == rp.last_total);
  CHECK(rp.last_done == tree_bytes());
  sb_job_free(job);
  sb_options_free(r);
  free(target);
  sb_options_free(o);
  sb_catalog_free(cat);
  fixture_free(&f);
  return 0;
}

typedef struct {
  sb_job* job;
  Progress* progress;
} Canceller;

static void* cancel_when_moving(void* arg) {
  Canceller* c = arg;
  for (int i = 0; i < 3000; ++i) {
    pthread_mutex_lock(&c->progress->mu);
    uint64_t done = c->progress->last_done;
    pthread_mutex_unlock(&c->progress->mu);
    if (done > 0) break;
    usleep(10000);
  }
  sb_job_cancel(c->job);
  return NULL;
}

static int test_cancel(void) {
  Fixture f = fixture("cancel", 3);
  sb_catalog* cat = NULL;
  CHECK_STATUS(sb_catalog_open(f.cat_dir, SB_CATALOG_CREATE, &cat), SB_OK);
  sb_options* o = backup_opts(&f);
  Progress pr;
  progress_init(&pr);
  CHECK_STATUS(sb_options_set_progress(o, on_progress, &pr), SB_OK);
  CHECK_STATUS(sb_options_set_int(o, "progress_interval_ms", 100), SB_OK);
  /* slow enough (1 MiB/s a channel, ~9 s) that the cancel lands mid-job */
  CHECK_STATUS(sb_options_set(o, "rate", "1M"), SB_OK);
  sb_job* job = NULL;
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  Canceller c = {job, &pr};
  pthread_t t;
  pthread_create(&t, NULL, cancel_when_moving, &c);
  CHECK_STATUS(sb_job_run(job), SB_CANCELLED);
  pthread_join(t, NULL);
  CHECK_CONTAINS(sb_job_errmsg(job), "cancelled");
  CHECK(strcmp(sb_job_state(job), "failed") == 0);
  CHECK(sb_job_elapsed_s(job) < 8);
  CHECK(pr.finished_calls == 1);
  CHECK(pr.last_done < tree_bytes());
  const uint64_t id = sb_job_backup_id(job);
  CHECK(id == 1);
  sb_job_free(job);
  /* no piece left behind; the catalog records the backup failed */
  CHECK(count_pieces(f.dest) == 0);
  const char* json = NULL;
  CHECK_STATUS(sb_catalog_list(cat, &json), SB_OK);
  CHECK(sb_catalog_backup_count(cat) == 1);
  sb_backup_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  CHECK_STATUS(sb_catalog_backup_at(cat, 0, &info), SB_OK);
  CHECK(info.id == id);
  CHECK(strcmp(info.status, "failed") == 0);
  CHECK_CONTAINS(json, "cancelled");
  /* and the next backup to the destination works */
  CHECK_STATUS(sb_options_unset(o, "rate"), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  CHECK(sb_job_backup_id(job) == 2);
  sb_job_free(job);
  /* a job cancelled before it runs ends at once */
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  sb_job_cancel(job);
  CHECK_STATUS(sb_job_run(job), SB_CANCELLED);
  sb_job_free(job);
  CHECK(count_pieces(f.dest) >= 1);
  sb_options_free(o);
  sb_catalog_free(cat);
  fixture_free(&f);
  return 0;
}

typedef struct {
  Fixture f;
  sb_status status;
  uint64_t bytes;
  int restored_ok;
} Concurrent;

static void* run_pair(void* arg) {
  Concurrent* c = arg;
  sb_catalog* cat = NULL;
  c->status = sb_catalog_open(c->f.cat_dir, SB_CATALOG_CREATE, &cat);
  if (c->status != SB_OK) return NULL;
  sb_options* o = backup_opts(&c->f);
  sb_job* job = NULL;
  c->status = sb_job_new(cat, SB_OP_BACKUP, o, &job);
  if (c->status == SB_OK) c->status = sb_job_run(job);
  c->bytes = sb_job_bytes_read(job);
  sb_job_free(job);
  char* target = join(c->f.root, "restored");
  sb_options* r = sb_options_new();
  sb_options_set(r, "target", target);
  if (c->status == SB_OK && sb_job_new(cat, SB_OP_RESTORE, r, &job) == SB_OK) {
    c->status = sb_job_run(job);
    sb_job_free(job);
    c->restored_ok = all_restored(&c->f, target);
  }
  free(target);
  sb_options_free(r);
  sb_options_free(o);
  sb_catalog_free(cat);
  return NULL;
}

static int test_concurrent(void) {
  Concurrent a = {fixture("conc-a", 4), SB_ERROR, 0, 0};
  Concurrent b = {fixture("conc-b", 5), SB_ERROR, 0, 0};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, run_pair, &a);
  pthread_create(&tb, NULL, run_pair, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CHECK_STATUS(a.status, SB_OK);
  CHECK_STATUS(b.status, SB_OK);
  CHECK(a.bytes == tree_bytes());
  CHECK(b.bytes == tree_bytes());
  CHECK(a.restored_ok);
  CHECK(b.restored_ok);
  fixture_free(&a.f);
  fixture_free(&b.f);
  return 0;
}

typedef struct {
  int lines;
  int below_min;
  int sync_chosen; /* lines saying the pread/pwrite engine was chosen */
  char first[256];
  pthread_mutex_t mu;
} Log;

static void on_log(sb_log_level level, const char* message, void* user) {
  Log* l = user;
  pthread_mutex_lock(&l->mu);
  if (level < SB_LOG_INFO) ++l->below_min;
  if (l->lines++ == 0) snprintf(l->first, sizeof l->first, "%s", message);
  if (strstr(message, "chose the pread/pwrite engine") != NULL) ++l->sync_chosen;
  pthread_mutex_unlock(&l->mu);
}

/* The job's log lines reach its callback and nothing reaches stderr. A regular file where
 * the catalog keeps its job status files makes the job run without one and warn. The
 * library does not read STRIPEBACK_IO (the CLI does): sync I/O is not chosen. */
static int test_log(void) {
  setenv("STRIPEBACK_IO", "sync", 1);
  Fixture f = fixture("log", 6);
  char* jobs = join(f.cat_dir, "jobs");
  char* err_path = join(f.root, "stderr");
  fflush(stderr);
  int saved = dup(2);
  FILE* err = fopen(err_path, "w");
  dup2(fileno(err), 2);
  sb_catalog* cat = NULL;
  sb_status open_st = sb_catalog_open(f.cat_dir, SB_CATALOG_CREATE, &cat);
  FILE* not_a_dir = fopen(jobs, "w");
  CHECK(not_a_dir != NULL && fclose(not_a_dir) == 0);
  sb_options* o = backup_opts(&f);
  Log log;
  memset(&log, 0, sizeof log);
  pthread_mutex_init(&log.mu, NULL);
  sb_options_set_log(o, on_log, &log, SB_LOG_INFO);
  sb_job* job = NULL;
  sb_status st = sb_job_new(cat, SB_OP_BACKUP, o, &job);
  if (st == SB_OK) st = sb_job_run(job);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  fclose(err);
  CHECK_STATUS(open_st, SB_OK);
  CHECK_STATUS(st, SB_OK);
  CHECK(log.lines >= 1);
  CHECK(log.below_min == 0);
  CHECK_CONTAINS(log.first, "no status file for this job");
  CHECK(log.sync_chosen == 0);
  struct stat sst;
  CHECK(stat(err_path, &sst) == 0 && sst.st_size == 0);
  sb_job_free(job);
  sb_options_free(o);
  sb_catalog_free(cat);
  free(jobs);
  free(err_path);
  fixture_free(&f);
  unsetenv("STRIPEBACK_IO");
  return 0;
}

/* The message of the last failure on `h`, checked to name no CLI flag ("--force"). */
static void check_no_flag(const void* h) {
  const char* m = sb_errmsg(h);
  if (strstr(m, "--") != NULL) {
    fprintf(stderr, "message names a CLI flag: %s\n", m);
    ++capi_failures;
  }
}

/* The status of running `op` with `o` on `cat` (sb_job_new, then sb_job_run); the job's
 * message is left in `msg`. */
static sb_status run_op(sb_catalog* cat, sb_operation op, const sb_options* o, char* msg,
                        size_t size) {
  sb_job* job = NULL;
  sb_status st = sb_job_new(cat, op, o, &job);
  if (st == SB_OK) st = sb_job_run(job);
  snprintf(msg, size, "%s", sb_job_errmsg(job));
  check_no_flag(job);
  sb_job_free(job);
  return st;
}

/* Engine messages that name a CLI flag name the option key instead. */
static int test_wording(void) {
  Fixture f = fixture("wording", 8);
  sb_catalog* cat = NULL;
  CHECK_STATUS(sb_catalog_open(f.cat_dir, SB_CATALOG_CREATE, &cat), SB_OK);
  char msg[1024];
  sb_options* o = backup_opts(&f);
  CHECK_STATUS(sb_options_set(o, "compress", "zstd:99"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "option 'compress': invalid value 'zstd:99'");
  check_no_flag(o);
  CHECK_STATUS(sb_options_set_bool(o, "force", 1), SB_OK);
  CHECK_STATUS(run_op(cat, SB_OP_BACKUP, o, msg, sizeof msg), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(msg, "'optimize' and 'force' need 'level'");
  CHECK_STATUS(sb_options_unset(o, "force"), SB_OK);
  CHECK_STATUS(sb_options_set_bool(o, "cumulative", 1), SB_OK);
  CHECK_STATUS(run_op(cat, SB_OP_BACKUP, o, msg, sizeof msg), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(msg, "'cumulative' needs 'level' 1");
  CHECK_STATUS(sb_options_unset(o, "cumulative"), SB_OK);
  CHECK_STATUS(sb_options_set(o, "section_size", "512K"), SB_OK);
  CHECK_STATUS(run_op(cat, SB_OP_BACKUP, o, msg, sizeof msg), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(msg, "'section_size' must be at least 1 MiB");
  CHECK_STATUS(sb_options_unset(o, "section_size"), SB_OK);
  CHECK_STATUS(run_op(cat, SB_OP_BACKUP, o, msg, sizeof msg), SB_OK);
  /* a restore onto files that exist: set 'force' (the CLI says --force) */
  char* target = join(f.root, "restored");
  sb_options* r = sb_options_new();
  CHECK_STATUS(sb_options_set(r, "target", target), SB_OK);
  CHECK_STATUS(run_op(cat, SB_OP_RESTORE, r, msg, sizeof msg), SB_OK);
  CHECK_STATUS(run_op(cat, SB_OP_RESTORE, r, msg, sizeof msg), SB_EXISTS);
  CHECK_CONTAINS(msg, "(set 'force' to replace");
  CHECK_STATUS(sb_options_set_bool(r, "force", 1), SB_OK);
  CHECK_STATUS(run_op(cat, SB_OP_RESTORE, r, msg, sizeof msg), SB_OK);
  free(target);
  sb_options_free(r);
  sb_options_free(o);
  sb_catalog_free(cat);
  fixture_free(&f);
  return 0;
}

/* ---- status file: `stripeback status` in another process sees a C API job ---- */

static const char* g_cli = NULL; /* the stripeback binary (argv[2]) */

/* The output of `stripeback status --catalog DIR --json`, malloc'ed ("" when it fails). */
static char* cli_status(const char* cat_dir) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' status --catalog '%s' --json", g_cli, cat_dir);
  FILE* p = popen(cmd, "r");
  size_t cap = 4096, len = 0;
  char* out = calloc(cap, 1);
  if (p == NULL) return out;
  size_t n;
  while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (len + 1 == cap) out = realloc(out, cap *= 2);
  }
  out[len] = '\0';
  if (pclose(p) != 0) out[0] = '\0';
  return out;
}

/* Files in `dir` whose name ends in ".status". */
static int count_status_files(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) return 0;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    const size_t len = strlen(e->d_name);
    if (len > 7 && strcmp(e->d_name + len - 7, ".status") == 0) ++n;
  }
  closedir(d);
  return n;
}

typedef struct {
  sb_job* job;
  sb_status status;
  atomic_int done;
} Runner;

static void* run_job(void* arg) {
  Runner* r = arg;
  r->status = sb_job_run(r->job);
  atomic_store(&r->done, 1);
  return NULL;
}

typedef struct {
  const char* jobs_dir;
  int calls;
  int files_seen;
} NoFile;

static void count_files_on_progress(const sb_progress* p, void* user) {
  NoFile* n = user;
  (void)p;
  ++n->calls;
  n->files_seen += count_status_files(n->jobs_dir);
}

static int test_status_file(void) {
  if (g_cli == NULL) {
    fprintf(stderr, "status_file: give the stripeback binary: capi_test status_file CLI\n");
    ++capi_failures;
    return 0;
  }
  Fixture f = fixture("status", 7);
  char* jobs_dir = join(f.cat_dir, "jobs");
  sb_catalog* cat = NULL;
  CHECK_STATUS(sb_catalog_open(f.cat_dir, SB_CATALOG_CREATE, &cat), SB_OK);
  sb_options* o = backup_opts(&f);
  /* 2 channels at 1 MiB/s each: about 5 s for the tree */
  CHECK_STATUS(sb_options_set(o, "rate", "1M"), SB_OK);
  sb_job* job = NULL;
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  Runner r = {job, SB_ERROR, 0};
  pthread_t t;
  pthread_create(&t, NULL, run_job, &r);
  /* While it runs, another process lists it: a running backup of this process, tag nightly. */
  char pid[64];
  snprintf(pid, sizeof pid, "\"pid\":%ld", (long)getpid());
  int listed = 0;
  char* seen = NULL;
  for (int i = 0; i < 100 && !listed && !atomic_load(&r.done); ++i) {
    free(seen);
    seen = cli_status(f.cat_dir);
    listed = strstr(seen, "\"state\":\"running\"") != NULL &&
             strstr(seen, "\"operation\":\"backup\"") != NULL &&
             strstr(seen, "\"tag\":\"nightly\"") != NULL && strstr(seen, pid) != NULL &&
             strstr(seen, "\"channels\":[{") != NULL;
    if (!listed) usleep(100000);
  }
  if (!listed) fprintf(stderr, "status_file: last status seen: %s\n", seen ? seen : "(none)");
  CHECK(listed);
  free(seen);
  pthread_join(t, NULL);
  CHECK_STATUS(r.status, SB_OK);
  sb_job_free(job);
  /* After it ended, the file is gone and status lists nothing. */
  CHECK(count_status_files(jobs_dir) == 0);
  char* after = cli_status(f.cat_dir);
  CHECK_CONTAINS(after, "\"jobs\":[]");
  free(after);

  /* With status_file off, no file while the job runs (looked for at every progress call). */
  CHECK_STATUS(sb_options_set_bool(o, "status_file", 0), SB_OK);
  CHECK_STATUS(sb_options_set(o, "rate", "4M"), SB_OK);
  CHECK_STATUS(sb_options_set_int(o, "progress_interval_ms", 100), SB_OK);
  NoFile nf = {jobs_dir, 0, 0};
  CHECK_STATUS(sb_options_set_progress(o, count_files_on_progress, &nf), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  sb_job_free(job);
  CHECK(nf.calls >= 3);
  CHECK(nf.files_seen == 0);
  /* and with it on again (the default), the same callback sees the job's file */
  CHECK_STATUS(sb_options_unset(o, "status_file"), SB_OK);
  nf.calls = nf.files_seen = 0;
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  sb_job_free(job);
  CHECK(nf.files_seen >= 1);
  CHECK(count_status_files(jobs_dir) == 0);
  sb_options_free(o);
  sb_catalog_free(cat);
  free(jobs_dir);
  fixture_free(&f);
  return 0;
}

typedef struct {
  const char* name;
  int (*fn)(void);
} Test;

/* A backup cut by its "duration": with "partial" it keeps the files done (SB_PARTIAL);
 * without, it fails as a deadline that passed (SB_TIMED_OUT). The rate makes the tree take
 * about three seconds; the first (largest) file is done in under two. */
static int test_deadline(void) {
  Fixture f = fixture("deadline", 10);
  sb_catalog* cat = NULL;
  CHECK_STATUS(sb_catalog_open(f.cat_dir, SB_CATALOG_CREATE, &cat), SB_OK);
  sb_options* o = backup_opts(&f);
  CHECK_STATUS(sb_options_set_int(o, "channels", 1), SB_OK);
  CHECK_STATUS(sb_options_set(o, "rate", "3M"), SB_OK);
  CHECK_STATUS(sb_options_set(o, "duration", "90x"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o),
                 "invalid 'duration' '90x': expected HH:MM, HH:MM:SS or a number with a unit");
  CHECK_STATUS(sb_options_set(o, "partial", "sometimes"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "option 'partial'");
  CHECK_STATUS(sb_options_set_bool(o, "partial", 1), SB_OK);
  sb_job* job = NULL;
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_job_errmsg(job), "'partial' needs 'duration'");
  sb_job_free(job);

  CHECK_STATUS(sb_options_set(o, "duration", "0:00:02"), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  sb_status st = sb_job_run(job);
  CHECK_STATUS(st, SB_PARTIAL);
  if (st != SB_PARTIAL) fprintf(stderr, "partial backup: %s\n", sb_job_errmsg(job));
  CHECK(strcmp(sb_job_state(job), "partial") == 0);
  CHECK_CONTAINS(sb_job_errmsg(job), "backup is partial: the duration ended with");
  CHECK(sb_job_files(job) >= 1 && sb_job_files(job) < NSIZES);
  CHECK_CONTAINS(sb_job_result_json(job), "\"status\":\"partial\"");
  sb_job_free(job);

  CHECK_STATUS(sb_options_unset(o, "partial"), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  st = sb_job_run(job);
  CHECK_STATUS(st, SB_TIMED_OUT);
  if (st != SB_TIMED_OUT) fprintf(stderr, "cut backup: %s\n", sb_job_errmsg(job));
  CHECK(strcmp(sb_job_state(job), "failed") == 0);
  CHECK_CONTAINS(sb_job_errmsg(job), "(set 'partial' to keep them)");
  sb_job_free(job);

  /* a restore has no deadline of this kind: refused, not ignored */
  sb_options* r = sb_options_new();
  char* target = join(f.root, "restored");
  CHECK_STATUS(sb_options_set(r, "target", target), SB_OK);
  CHECK_STATUS(sb_options_set(r, "duration", "0:01"), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_RESTORE, r, &job), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_job_errmsg(job), "'duration' and 'partial' are for backups");
  sb_job_free(job);

  free(target);
  sb_options_free(r);
  sb_options_free(o);
  sb_catalog_free(cat);
  fixture_free(&f);
  return 0;
}

/* "buffers" and "buffer_size": checked when set (naming the key), counted in the memory a
 * job may take, and a backup and restore through the smallest buffers are exact. */
static int test_buffers(void) {
  Fixture f = fixture("buffers", 11);
  sb_catalog* cat = NULL;
  CHECK_STATUS(sb_catalog_open(f.cat_dir, SB_CATALOG_CREATE, &cat), SB_OK);
  sb_options* o = backup_opts(&f);
  CHECK_STATUS(sb_options_set(o, "buffers", "1"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "option 'buffers' wants a whole number from 2 to 4096");
  CHECK_STATUS(sb_options_set_int(o, "buffers", 4097), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_set(o, "buffer_size", "5000"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "'buffer_size' must be a multiple of 4 KiB");
  CHECK_STATUS(sb_options_set(o, "buffer_size", "128M"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "'buffer_size'");
  CHECK_STATUS(sb_options_set(o, "buffer_size", "lots"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "option 'buffer_size'");
  check_no_flag(o);

  /* more than any job may have: refused when the job is made, naming the keys */
  sb_job* job = NULL;
  CHECK_STATUS(sb_options_set_int(o, "buffers", 4096), SB_OK);
  CHECK_STATUS(sb_options_set(o, "buffer_size", "64M"), SB_OK);
  CHECK_STATUS(sb_options_set_int(o, "channels", 64), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_job_errmsg(job), "lower 'buffers', 'buffer_size' or 'channels'");
  sb_job_free(job);

  CHECK_STATUS(sb_options_set_int(o, "channels", 2), SB_OK);
  CHECK_STATUS(sb_options_set_int(o, "buffers", 2), SB_OK);
  CHECK_STATUS(sb_options_set_int(o, "buffer_size", 4096), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  sb_status st = sb_job_run(job);
  CHECK_STATUS(st, SB_OK);
  if (st != SB_OK) fprintf(stderr, "backup: %s\n", sb_job_errmsg(job));
  CHECK_CONTAINS(sb_job_result_json(job), "\"buffers\":2,\"buffer_size\":4096");
  sb_job_free(job);

  /* a restore takes them too: too many is refused, two of 4K restore every byte */
  char* target = join(f.root, "restored");
  sb_options* r = sb_options_new();
  CHECK_STATUS(sb_options_set(r, "target", target), SB_OK);
  CHECK_STATUS(sb_options_set(r, "buffers", "4096"), SB_OK);
  CHECK_STATUS(sb_options_set(r, "buffer_size", "64M"), SB_OK);
  CHECK_STATUS(sb_options_set_int(r, "channels", 64), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_RESTORE, r, &job), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_job_errmsg(job), "I/O buffers would take");
  sb_job_free(job);
  CHECK_STATUS(sb_options_set_int(r, "channels", 2), SB_OK);
  CHECK_STATUS(sb_options_set(r, "buffers", "2"), SB_OK);
  CHECK_STATUS(sb_options_set(r, "buffer_size", "4K"), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_RESTORE, r, &job), SB_OK);
  st = sb_job_run(job);
  CHECK_STATUS(st, SB_OK);
  if (st != SB_OK) fprintf(stderr, "restore: %s\n", sb_job_errmsg(job));
  sb_job_free(job);
  CHECK(all_restored(&f, target));

  free(target);
  sb_options_free(r);
  sb_options_free(o);
  sb_catalog_free(cat);
  fixture_free(&f);
  return 0;
}

/* sb_backup_info carries its size: too small is refused, a larger struct (a caller built
 * against a later header) gets what fits and nothing beyond. */
static int test_backup_info(void) {
  Fixture f = fixture("info", 12);
  sb_catalog* cat = NULL;
  CHECK_STATUS(sb_catalog_open(f.cat_dir, SB_CATALOG_CREATE, &cat), SB_OK);
  sb_options* o = backup_opts(&f);
  sb_job* job = NULL;
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  sb_job_free(job);
  const char* json = NULL;
  CHECK_STATUS(sb_catalog_list(cat, &json), SB_OK);
  CHECK(sb_catalog_backup_count(cat) == 1);

  sb_backup_info info;
  memset(&info, 0, sizeof info);
  CHECK_STATUS(sb_catalog_backup_at(cat, 0, &info), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_catalog_errmsg(cat), "backup info size 0 is below");
  CHECK(info.id == 0);
  info.size = (uint32_t)(sizeof info - 1);
  CHECK_STATUS(sb_catalog_backup_at(cat, 0, &info), SB_INVALID_ARGUMENT);
  CHECK(info.id == 0);
  CHECK_STATUS(sb_catalog_backup_at(cat, 0, NULL), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_catalog_errmsg(cat), "out pointer is null");

  info.size = sizeof info;
  CHECK_STATUS(sb_catalog_backup_at(cat, 0, &info), SB_OK);
  CHECK(strcmp(sb_catalog_errmsg(cat), "") == 0);
  CHECK(info.size == sizeof info);
  CHECK(info.id == 1);
  CHECK(strcmp(info.status, "complete") == 0);
  CHECK(strcmp(info.tag, "nightly") == 0);
  CHECK(info.files == NSIZES);
  CHECK(info.bytes == tree_bytes());
  CHECK(strcmp(info.destination, f.dest) == 0);
  CHECK_STATUS(sb_catalog_backup_at(cat, 1, &info), SB_NOT_FOUND);
  CHECK_CONTAINS(sb_catalog_errmsg(cat), "no backup at index 1");

  struct {
    sb_backup_info info;
    unsigned char later[32];
  } grown;
  memset(&grown, 0xa5, sizeof grown);
  grown.info.size = (uint32_t)sizeof grown;
  CHECK_STATUS(sb_catalog_backup_at(cat, 0, &grown.info), SB_OK);
  CHECK(grown.info.size == sizeof grown);
  CHECK(grown.info.id == 1);
  CHECK(strcmp(grown.info.destination, f.dest) == 0);
  int untouched = 1;
  for (size_t i = 0; i < sizeof grown.later; ++i) untouched = untouched && grown.later[i] == 0xa5;
  CHECK(untouched);

  sb_options_free(o);
  sb_catalog_free(cat);
  fixture_free(&f);
  return 0;
}

/* The typed message functions give the text sb_errmsg gives, for each kind of handle. */
static int test_errmsg(void) {
  CHECK(strcmp(sb_options_errmsg(NULL), "null handle") == 0);
  CHECK(strcmp(sb_catalog_errmsg(NULL), "null handle") == 0);
  CHECK(strcmp(sb_job_errmsg(NULL), "null handle") == 0);
  sb_options* o = sb_options_new();
  CHECK(strcmp(sb_options_errmsg(o), "") == 0);
  CHECK_STATUS(sb_options_set(o, "bogus", "1"), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "unknown option 'bogus'");
  CHECK(strcmp(sb_options_errmsg(o), sb_errmsg(o)) == 0);

  char* root = make_temp_dir("errmsg");
  char* missing = join(root, "none");
  sb_catalog* cat = NULL;
  CHECK_STATUS(sb_catalog_open(missing, 0, &cat), SB_NOT_FOUND);
  CHECK_CONTAINS(sb_catalog_errmsg(cat), "catalog is not usable");
  CHECK(strcmp(sb_catalog_errmsg(cat), sb_errmsg(cat)) == 0);
  sb_catalog_free(cat);

  CHECK_STATUS(sb_catalog_open(missing, SB_CATALOG_CREATE, &cat), SB_OK);
  sb_job* job = NULL;
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_job_errmsg(job), "no 'source' given");
  CHECK(strcmp(sb_job_errmsg(job), sb_errmsg(job)) == 0);
  sb_job_free(job);

  sb_catalog_free(cat);
  sb_options_free(o);
  remove_tree(root);
  free(missing);
  free(root);
  return 0;
}

/* Writes `size` bytes of text that compresses well to `path`. */
static void write_compressible(const char* path, size_t size) {
  FILE* f = fopen(path, "wb");
  CHECK(f != NULL);
  for (size_t at = 0; f && at < size;) {
    char line[64];
    const int n = snprintf(line, sizeof line, "row %zu status ok\n", at % 1000);
    const size_t take = (size_t)n < size - at ? (size_t)n : size - at;
    fwrite(line, 1, take, f);
    at += take;
  }
  if (f) fclose(f);
}

/* A backup of compressible data, then of the same file overwritten with incompressible
 * bytes of its size: the second returns SB_SUSPICIOUS with the evidence in its JSON, and
 * the first is kept. */
static int test_suspicious(void) {
  char* root = make_temp_dir("suspicious");
  char* src = join(root, "src");
  char* dest = join(root, "dest");
  char* cat_dir = join(root, "catalog");
  mkdir(src, 0755);
  char* file = join(src, "table.dat");
  write_compressible(file, 4u << 20);
  sb_catalog* cat = NULL;
  CHECK_STATUS(sb_catalog_open(cat_dir, SB_CATALOG_CREATE, &cat), SB_OK);
  sb_options* o = sb_options_new();
  CHECK_STATUS(sb_options_set(o, "source", src), SB_OK);
  CHECK_STATUS(sb_options_set(o, "destination", dest), SB_OK);
  CHECK_STATUS(sb_options_set(o, "compress", "medium"), SB_OK);
  CHECK_STATUS(sb_options_set(o, "alarm_compression_drop", "0%"), SB_INVALID_ARGUMENT);
  sb_job* job = NULL;
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  const uint64_t clean = sb_job_backup_id(job);
  sb_job_free(job);
  write_file(file, 4u << 20, 77); /* a pattern that does not compress */
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_SUSPICIOUS);
  CHECK(strcmp(sb_job_state(job), "complete") == 0);
  CHECK_CONTAINS(sb_job_errmsg(job), "looks like encrypted or destroyed data");
  CHECK_CONTAINS(sb_job_result_json(job), "\"rules\":[\"compression_drop\"]");
  CHECK_CONTAINS(sb_job_result_json(job), "\"previous_kept\":true");
  CHECK(sb_job_backup_id(job) == clean + 1);
  CHECK(strcmp(sb_status_name(SB_SUSPICIOUS), "SB_SUSPICIOUS") == 0);
  sb_job_free(job);
  const char* list = NULL;
  CHECK_STATUS(sb_catalog_list(cat, &list), SB_OK);
  CHECK_CONTAINS(list, "\"keep_until\":\"forever\"");
  sb_options_free(o);
  sb_catalog_free(cat);
  remove_tree(root);
  free(file);
  free(src);
  free(dest);
  free(cat_dir);
  free(root);
  return 0;
}

static const Test kTests[] = {
    {"version", test_version},         {"bad_arguments", test_bad_arguments},
    {"operations", test_operations},   {"progress", test_progress},
    {"cancel", test_cancel},           {"concurrent", test_concurrent},
    {"log", test_log},                 {"status_file", test_status_file},
    {"wording", test_wording},         {"deadline", test_deadline},
    {"buffers", test_buffers},         {"backup_info", test_backup_info},
    {"errmsg", test_errmsg},           {"suspicious", test_suspicious},
};

int main(int argc, char** argv) {
  const size_t n = sizeof kTests / sizeof kTests[0];
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < n; ++i) printf("%s\n", kTests[i].name);
    return 0;
  }
  if (argc >= 3) g_cli = argv[2];
  int ran = 0;
  for (size_t i = 0; i < n; ++i) {
    if (argc >= 2 && strcmp(argv[1], kTests[i].name) != 0) continue;
    const int before = capi_failures;
    kTests[i].fn();
    printf("%s %s\n", capi_failures == before ? "PASS" : "FAIL", kTests[i].name);
    ++ran;
  }
  if (ran == 0) {
    fprintf(stderr, "capi_test: no test named '%s'\n", argc >= 2 ? argv[1] : "");
    return 2;
  }
  return capi_failures == 0 ? 0 : 1;
}
