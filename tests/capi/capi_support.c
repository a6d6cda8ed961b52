#define _GNU_SOURCE
#include "capi_support.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int capi_failures = 0;

char* join(const char* a, const char* b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char* p = malloc(n);
  snprintf(p, n, "%s/%s", a, b);
  return p;
}

char* make_temp_dir(const char* what) {
  const char* base = getenv("TMPDIR");
  if (base == NULL || *base == '\0') base = "/tmp";
  size_t n = strlen(base) + strlen(what) + 32;
  char* p = malloc(n);
  snprintf(p, n, "%s/sbcapi-%s-XXXXXX", base, what);
  if (mkdtemp(p) == NULL) {
    perror("mkdtemp");
    exit(2);
  }
  return p;
}

static int remove_one(const char* path, const struct stat* st, int flag, struct FTW* ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

void remove_tree(const char* path) { nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS); }

void write_file(const char* path, uint64_t size, uint32_t seed) {
  FILE* f = fopen(path, "wb");
  if (f == NULL) {
    perror(path);
    exit(2);
  }
  uint32_t x = seed * 2654435761u + 1;
  static unsigned char buf[65536];
  uint64_t done = 0;
  while (done < size) {
    size_t n = sizeof buf;
    if (size - done < n) n = (size_t)(size - done);
    for (size_t i = 0; i < n; ++i) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      buf[i] = (unsigned char)x;
    }
    /* some all-zero blocks, as datafiles have */
    if ((done / sizeof buf) % 7 == 3) memset(buf, 0, n);
    fwrite(buf, 1, n, f);
    done += n;
  }
  fclose(f);
}

void make_tree(const char* dir, const uint64_t* sizes, size_t n, uint32_t seed) {
  mkdir(dir, 0755);
  char* sub = join(dir, "sub");
  mkdir(sub, 0755);
  for (size_t i = 0; i < n; ++i) {
    char name[64];
    snprintf(name, sizeof name, "file%zu.dbf", i);
    char* p = join(i % 2 ? sub : dir, name);
    write_file(p, sizes[i], seed + (uint32_t)i);
    free(p);
  }
  free(sub);
}

int same_file(const char* a, const char* b) {
  FILE* fa = fopen(a, "rb");
  FILE* fb = fopen(b, "rb");
  int same = fa != NULL && fb != NULL;
  while (same) {
    int ca = fgetc(fa), cb = fgetc(fb);
    if (ca != cb) same = 0;
    if (ca == EOF || cb == EOF) break;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

int count_pieces(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) return 0;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".sbp") != NULL) ++n;
  closedir(d);
  return n;
}
