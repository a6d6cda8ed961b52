/* The public header is plain C99: this file is compiled with -std=c99 -pedantic-errors. */
#include "stripeback/stripeback.h"

int c99_header_check(void);
int c99_header_check(void) {
  sb_progress p = {0};
  sb_storage_ops ops = {0};
  ops.version = SB_STORAGE_OPS_VERSION;
  (void)p;
  (void)ops;
  return SB_VERSION_NUMBER > 0 ? SB_OK : SB_ERROR;
}
