// A small C++ program on the Stripeback C API: lists a catalog's backups and validates the
// newest one. RAII owners keep every handle freed on every path.
//
//   list_backups CATALOG
#include <cstdio>
#include <memory>
#include <string_view>

#include <stripeback/stripeback.h>

namespace {

struct Free {
  void operator()(sb_catalog* c) const { sb_catalog_free(c); }
  void operator()(sb_options* o) const { sb_options_free(o); }
  void operator()(sb_job* j) const { sb_job_free(j); }
};
template <class T>
using Owned = std::unique_ptr<T, Free>;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CATALOG\n", argv[0]);
    return 2;
  }
  sb_catalog* raw = nullptr;
  const sb_status opened = sb_catalog_open(argv[1], 0, &raw);
  Owned<sb_catalog> cat(raw);
  if (opened != SB_OK) {
    std::fprintf(stderr, "list_backups: %s\n", sb_catalog_errmsg(cat.get()));
    return 2;
  }
  const char* json = nullptr;
  if (sb_catalog_list(cat.get(), &json) != SB_OK) {
    std::fprintf(stderr, "list_backups: %s\n", sb_catalog_errmsg(cat.get()));
    return 1;
  }
  const size_t n = sb_catalog_backup_count(cat.get());
  uint64_t newest = 0;
  for (size_t i = 0; i < n; ++i) {
    sb_backup_info b{};
    b.size = sizeof b;
    if (sb_catalog_backup_at(cat.get(), i, &b) != SB_OK) {
      std::fprintf(stderr, "list_backups: %s\n", sb_catalog_errmsg(cat.get()));
      return 1;
    }
    std::printf("%llu %-9s %llu files %llu bytes -> %s\n", static_cast<unsigned long long>(b.id),
                b.status, static_cast<unsigned long long>(b.files),
                static_cast<unsigned long long>(b.bytes), b.destination);
    if (std::string_view(b.status) == "complete") newest = b.id;
  }
  if (newest == 0) {
    std::printf("no complete backup to validate\n");
    return 0;
  }
  Owned<sb_options> opts(sb_options_new());
  if (!opts || sb_options_set_int(opts.get(), "backup_id", static_cast<int64_t>(newest)) != SB_OK)
    return 1;
  sb_job* j = nullptr;
  sb_status st = sb_job_new(cat.get(), SB_OP_VALIDATE, opts.get(), &j);
  Owned<sb_job> job(j);
  if (st == SB_OK) st = sb_job_run(job.get());
  if (st != SB_OK) {
    std::fprintf(stderr, "list_backups: validate %llu: %s: %s\n",
                 static_cast<unsigned long long>(newest), sb_status_name(st),
                 sb_job_errmsg(job.get()));
    return 1;
  }
  std::printf("backup %llu validated: %llu files, %llu bytes read\n",
              static_cast<unsigned long long>(newest),
              static_cast<unsigned long long>(sb_job_files(job.get())),
              static_cast<unsigned long long>(sb_job_bytes_read(job.get())));
  return 0;
}
