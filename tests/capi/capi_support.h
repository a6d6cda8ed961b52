/* Small helpers for the C API tests (plain C): temporary trees, file comparison, checks. */
#ifndef STRIPEBACK_TESTS_CAPI_SUPPORT_H
#define STRIPEBACK_TESTS_CAPI_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int capi_failures;

#define CHECK(cond)                                                                \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);     \
      ++capi_failures;                                                             \
    }                                                                              \
  } while (0)

#define CHECK_STATUS(expr, want)                                                   \
  do {                                                                             \
    int got_ = (int)(expr);                                                        \
    if (got_ != (int)(want)) {                                                     \
      fprintf(stderr, "%s:%d: %s returned %d, wanted %d (%s)\n", __FILE__, __LINE__, \
              #expr, got_, (int)(want), #want);                                    \
      ++capi_failures;                                                             \
    }                                                                              \
  } while (0)

#define CHECK_CONTAINS(text, part)                                                 \
  do {                                                                             \
    const char* t_ = (text);                                                       \
    if (t_ == NULL || strstr(t_, (part)) == NULL) {                                \
      fprintf(stderr, "%s:%d: '%s' does not contain '%s'\n", __FILE__, __LINE__,  \
              t_ ? t_ : "(null)", (part));                                         \
      ++capi_failures;                                                             \
    }                                                                              \
  } while (0)

/* A new empty directory below $TMPDIR (or /tmp); the path is malloc'ed. */
char* make_temp_dir(const char* what);
/* Removes a tree (no error when missing). */
void remove_tree(const char* path);
/* Writes `size` pseudo-random bytes (from `seed`), with a run of zeros, to `path`. */
void write_file(const char* path, uint64_t size, uint32_t seed);
/* Makes `dir`/sub and files of the given sizes in it (and one in sub). */
void make_tree(const char* dir, const uint64_t* sizes, size_t n, uint32_t seed);
/* 1 when both files exist with the same bytes. */
int same_file(const char* a, const char* b);
/* Files in `dir` whose name ends in ".sbp" (backup pieces) or holds ".sbp". */
int count_pieces(const char* dir);
/* "a" + "/" + "b", malloc'ed. */
char* join(const char* a, const char* b);

#endif
