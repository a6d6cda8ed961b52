/* A caller-supplied storage (sb_storage_ops) used as backup destination and restore source:
 * a "mystore" whose objects are files below a root directory, reached only through the
 * functions given, counting the calls; and one that is full, whose writes fail with ENOSPC.
 * Run as `capi_storage_test` (ctest: CApi.storage). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capi_support.h"
#include "stripeback/stripeback.h"

typedef struct {
  char root[512];
  atomic_int opens, reads, writes, syncs, lists, removes, renames;
  int full; /* every write fails with -ENOSPC */
} Store;

static void full(const Store* s, const char* path, char* out, size_t n) {
  snprintf(out, n, "%s/%s", s->root, path);
}

static int st_open(void* user, const char* path, int flags, void** file) {
  Store* s = user;
  char p[1024];
  full(s, path, p, sizeof p);
  int fd = flags == SB_OPEN_WRITE ? open(p, O_WRONLY | O_CREAT | O_TRUNC, 0640) : open(p, O_RDONLY);
  if (fd < 0) return -errno;
  ++s->opens;
  *file = (void*)(intptr_t)(fd + 1);
  return 0;
}
static int fd_of(void* file) { return (int)(intptr_t)file - 1; }
static int st_read(void* user, void* file, uint64_t off, void* buf, size_t len, size_t* done) {
  Store* s = user;
  ssize_t n = pread(fd_of(file), buf, len, (off_t)off);
  if (n < 0) return -errno;
  ++s->reads;
  *done = (size_t)n;
  return 0;
}
static int st_write(void* user, void* file, uint64_t off, const void* buf, size_t len) {
  Store* s = user;
  if (s->full) return -ENOSPC;
  size_t done = 0;
  while (done < len) {
    ssize_t n = pwrite(fd_of(file), (const char*)buf + done, len - done, (off_t)(off + done));
    if (n < 0) return -errno;
    done += (size_t)n;
  }
  ++s->writes;
  return 0;
}
static int st_sync(void* user, void* file) {
  Store* s = user;
  ++s->syncs;
  return fsync(fd_of(file)) == 0 ? 0 : -errno;
}
static int st_stat(void* user, const char* path, sb_storage_stat* out) {
  char p[1024];
  full(user, path, p, sizeof p);
  struct stat st;
  if (stat(p, &st) != 0) return -errno;
  out->size = (uint64_t)st.st_size;
  out->mode = st.st_mode;
  out->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  return 0;
}
static int st_list(void* user, const char* dir, void (*entry)(void*, const char*), void* ctx) {
  Store* s = user;
  char p[1024];
  full(s, dir, p, sizeof p);
  DIR* d = opendir(p);
  if (d == NULL) return -errno;
  ++s->lists;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) entry(ctx, e->d_name);
  closedir(d);
  return 0;
}
static int st_remove(void* user, const char* path) {
  Store* s = user;
  char p[1024];
  full(s, path, p, sizeof p);
  ++s->removes;
  return unlink(p) == 0 ? 0 : -errno;
}
static int st_rename(void* user, const char* from, const char* to) {
  Store* s = user;
  char a[1024], b[1024];
  full(s, from, a, sizeof a);
  full(s, to, b, sizeof b);
  ++s->renames;
  return rename(a, b) == 0 ? 0 : -errno;
}
static int st_close(void* user, void* file) {
  (void)user;
  return close(fd_of(file)) == 0 ? 0 : -errno;
}
static int st_mkdir(void* user, const char* path) {
  char p[1024];
  full(user, path, p, sizeof p);
  for (char* c = p + strlen(((Store*)user)->root) + 1; *c; ++c)
    if (*c == '/') {
      *c = '\0';
      mkdir(p, 0755);
      *c = '/';
    }
  if (mkdir(p, 0755) != 0 && errno != EEXIST) return -errno;
  return 0;
}

static sb_storage_ops ops_for(Store* s) {
  sb_storage_ops o;
  memset(&o, 0, sizeof o);
  o.version = SB_STORAGE_OPS_VERSION;
  o.open = st_open;
  o.read = st_read;
  o.write = st_write;
  o.sync = st_sync;
  o.stat = st_stat;
  o.list = st_list;
  o.remove = st_remove;
  o.rename = st_rename;
  o.close = st_close;
  o.mkdir = st_mkdir;
  o.user = s;
  return o;
}

int main(void) {
  static const uint64_t sizes[] = {4u << 20, 123457, 0, (2u << 20) + 1};
  char* root = make_temp_dir("storage");
  char* src = join(root, "src");
  char* cat_dir = join(root, "catalog");
  char* store_root = join(root, "store");
  char* target = join(root, "restored");
  mkdir(store_root, 0755);
  make_tree(src, sizes, 4, 11);
  static Store store;
  snprintf(store.root, sizeof store.root, "%s", store_root);
  sb_storage_ops ops = ops_for(&store);

  sb_options* o = sb_options_new();
  /* registration errors */
  CHECK_STATUS(sb_options_add_storage(o, "nfs", &ops), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "served by the library itself");
  CHECK_STATUS(sb_options_add_storage(o, "9x", &ops), SB_INVALID_ARGUMENT);
  CHECK_STATUS(sb_options_add_storage(o, "mystore", NULL), SB_INVALID_ARGUMENT);
  sb_storage_ops bad = ops;
  bad.version = 99;
  CHECK_STATUS(sb_options_add_storage(o, "mystore", &bad), SB_UNSUPPORTED);
  bad = ops;
  bad.read = NULL;
  CHECK_STATUS(sb_options_add_storage(o, "mystore", &bad), SB_INVALID_ARGUMENT);
  CHECK_CONTAINS(sb_options_errmsg(o), "every function but mkdir must be set");
  CHECK_STATUS(sb_options_add_storage(o, "mystore", &ops), SB_OK);

  sb_catalog* cat = NULL;
  CHECK_STATUS(sb_catalog_open(cat_dir, SB_CATALOG_CREATE, &cat), SB_OK);
  CHECK_STATUS(sb_options_set(o, "source", src), SB_OK);
  CHECK_STATUS(sb_options_set(o, "destination", "mystore://vault/pieces"), SB_OK);
  CHECK_STATUS(sb_options_set(o, "max_piece_size", "2M"), SB_OK);
  sb_job* job = NULL;
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, o, &job), SB_OK);
  sb_status st = sb_job_run(job);
  CHECK_STATUS(st, SB_OK);
  if (st != SB_OK) fprintf(stderr, "backup: %s\n", sb_job_errmsg(job));
  sb_job_free(job);
  CHECK(store.writes > 0);
  CHECK(store.syncs > 0);
  char* pieces = join(store_root, "vault/pieces");
  CHECK(count_pieces(pieces) >= 2);

  /* restore and validate with the storage registered: round trip identical */
  sb_options* r = sb_options_new();
  CHECK_STATUS(sb_options_add_storage(r, "mystore", &ops), SB_OK);
  CHECK_STATUS(sb_options_set(r, "target", target), SB_OK);
  const int reads_before = store.reads;
  CHECK_STATUS(sb_job_new(cat, SB_OP_RESTORE, r, &job), SB_OK);
  st = sb_job_run(job);
  CHECK_STATUS(st, SB_OK);
  if (st != SB_OK) fprintf(stderr, "restore: %s\n", sb_job_errmsg(job));
  sb_job_free(job);
  CHECK(store.reads > reads_before);
  for (int i = 0; i < 4; ++i) {
    char name[64];
    snprintf(name, sizeof name, "%sfile%d.dbf", i % 2 ? "sub/" : "", i);
    char* orig = join(src, name);
    char* copy = join(target, orig);
    CHECK(same_file(orig, copy));
    free(orig);
    free(copy);
  }
  sb_options* v = sb_options_new();
  CHECK_STATUS(sb_options_add_storage(v, "mystore", &ops), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_VALIDATE, v, &job), SB_OK);
  CHECK_STATUS(sb_job_run(job), SB_OK);
  sb_job_free(job);

  /* without the storage the pieces cannot be reached, and the job says why */
  sb_options* none = sb_options_new();
  CHECK_STATUS(sb_job_new(cat, SB_OP_VALIDATE, none, &job), SB_OK);
  st = sb_job_run(job);
  CHECK(st != SB_OK);
  CHECK_CONTAINS(sb_job_errmsg(job), "mystore");
  sb_job_free(job);

  /* a destination that fills up: the backup ends as SB_NO_SPACE, naming the file and the
   * cause, and leaves no piece there */
  char* full_root = join(root, "full");
  mkdir(full_root, 0755);
  static Store full_store;
  snprintf(full_store.root, sizeof full_store.root, "%s", full_root);
  full_store.full = 1;
  sb_storage_ops full_ops = ops_for(&full_store);
  sb_options* f = sb_options_new();
  CHECK_STATUS(sb_options_add_storage(f, "fullstore", &full_ops), SB_OK);
  CHECK_STATUS(sb_options_set(f, "source", src), SB_OK);
  CHECK_STATUS(sb_options_set(f, "destination", "fullstore://vault"), SB_OK);
  CHECK_STATUS(sb_job_new(cat, SB_OP_BACKUP, f, &job), SB_OK);
  st = sb_job_run(job);
  CHECK_STATUS(st, SB_NO_SPACE);
  CHECK_CONTAINS(sb_job_errmsg(job), "unable to write 'fullstore://vault/");
  CHECK_CONTAINS(sb_job_errmsg(job), "No space left on device");
  CHECK(strcmp(sb_job_state(job), "failed") == 0);
  sb_job_free(job);
  char* full_vault = join(full_root, "vault");
  CHECK(count_pieces(full_vault) == 0);

  sb_options_free(f);
  free(full_vault);
  free(full_root);
  sb_options_free(none);
  sb_options_free(v);
  sb_options_free(r);
  sb_options_free(o);
  sb_catalog_free(cat);
  remove_tree(root);
  free(pieces);
  free(root);
  free(src);
  free(cat_dir);
  free(store_root);
  free(target);
  printf("%s storage\n", capi_failures ? "FAIL" : "PASS");
  return capi_failures ? 1 : 0;
}
