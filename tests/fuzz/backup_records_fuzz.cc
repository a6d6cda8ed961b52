// The body of a catalog autobackup (catalog/backup_records.h): decode_backup_records over
// the input, as `catalog rebuild` reads one. Invariants: it never crashes or misreads; the
// backups it finds (less those whose begin is lost) encode again, and decoding that gives
// the same backups with no warning: an autobackup written from a damaged copy is itself
// sound.
#include "catalog/backup_records.h"
#include "tests/fuzz/fuzz_check.h"

using namespace stripeback;
using namespace stripeback::catalog;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto first = decode_backup_records({data, size}, "fuzz");
  if (!first) return 0;
  std::vector<Backup> kept;
  for (const auto& b : first->backups)
    if (!b.begin_missing) kept.push_back(b);
  auto bytes = encode_backup_records(kept);
  if (!bytes) return 0;  // a field too long to store again
  auto again = decode_backup_records(*bytes, "again");
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->warnings.empty());
  FUZZ_CHECK(again->backups.size() == kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    const Backup& a = kept[i];
    const Backup& b = again->backups[i];
    FUZZ_CHECK(a.id == b.id);
    FUZZ_CHECK(a.status_name() == b.status_name());
    FUZZ_CHECK(a.pieces.size() == b.pieces.size());
    FUZZ_CHECK(a.files.size() == b.files.size());
    FUZZ_CHECK(a.begin.tag == b.begin.tag);
  }
  return 0;
}
