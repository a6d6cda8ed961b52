/* Memory of a program embedding libstripeback: `capi_footprint idle CATALOG` opens a
 * catalog and prints the resident set; `capi_footprint backup SOURCE DEST CATALOG` runs a
 * 2-channel backup and prints the peak resident set. Figures in kB from /proc/self/status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stripeback/stripeback.h>

static long status_kb(const char* field) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  size_t n = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, field, n) == 0 && line[n] == ':') kb = strtol(line + n + 1, NULL, 10);
  if (f) fclose(f);
  return kb;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "idle") == 0) {
    sb_catalog* cat = NULL;
    if (sb_catalog_open(argv[2], SB_CATALOG_CREATE, &cat) != SB_OK) return 1;
    const char* json = NULL;
    if (sb_catalog_list(cat, &json) != SB_OK) return 1;
    printf("idle_rss_kb %ld\n", status_kb("VmRSS"));
    sb_catalog_free(cat);
    return 0;
  }
  if (argc == 5 && strcmp(argv[1], "backup") == 0) {
    sb_catalog* cat = NULL;
    if (sb_catalog_open(argv[4], SB_CATALOG_CREATE, &cat) != SB_OK) return 1;
    sb_options* o = sb_options_new();
    sb_options_set(o, "source", argv[2]);
    sb_options_set(o, "destination", argv[3]);
    sb_options_set_int(o, "channels", 2);
    sb_job* job = NULL;
    sb_status st = sb_job_new(cat, SB_OP_BACKUP, o, &job);
    if (st == SB_OK) st = sb_job_run(job);
    printf("backup_status %s\nbackup_bytes %llu\npeak_rss_kb %ld\n", sb_status_name(st),
           (unsigned long long)sb_job_bytes_read(job), status_kb("VmHWM"));
    sb_job_free(job);
    sb_options_free(o);
    sb_catalog_free(cat);
    return st == SB_OK ? 0 : 1;
  }
  fprintf(stderr, "usage: capi_footprint idle CATALOG | backup SOURCE DEST CATALOG\n");
  return 2;
}
