// Helpers for engine tests run on MemStorage (tests/support/mem_storage.h): file contents
// that compress poorly, a catalog in a temporary directory, and backup and restore calls
// that fail the test when the job cannot start.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "backends/local/local_storage.h"
#include "catalog/catalog.h"
#include "engine/backup/backup_job.h"
#include "engine/restore/restore_job.h"
#include "tests/support/mem_storage.h"
#include "tests/support/temp_dir.h"

namespace stripeback::engine {

// `n` bytes of a xorshift sequence seeded by `seed` (no two seeds alike, no zero blocks).
inline std::string pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : s) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

// A catalog in a temporary directory (a local file lock guards it), for jobs whose data is
// on MemStorage.
class CatalogDir {
 public:
  CatalogDir() {
    auto c = catalog::Catalog::open(dir_ / "cat", catalog::Create::yes, io::local_storage());
    EXPECT_TRUE(c.has_value()) << c.error().what;
    if (c) cat_ = std::move(*c);
  }
  catalog::Catalog& cat() { return *cat_; }
  const std::string& path() const { return dir_.path(); }

 private:
  testing::TempDir dir_;
  std::unique_ptr<catalog::Catalog> cat_;
};

inline BackupOptions backup_options(std::string source, std::string destination) {
  BackupOptions o;
  o.sources = {std::move(source)};
  o.destination = std::move(destination);
  return o;
}

inline RestoreOptions restore_options(std::string target) {
  RestoreOptions o;
  o.target = std::move(target);
  return o;
}

// Runs the job; a job that cannot start fails the test and gives an empty summary.
inline BackupSummary backup_or_fail(const BackupOptions& o, catalog::Catalog& cat) {
  auto s = run_backup(o, cat);
  EXPECT_TRUE(s.has_value()) << s.error().what;
  return s ? *s : BackupSummary{};
}
inline RestoreSummary restore_or_fail(const RestoreOptions& o, catalog::Catalog& cat) {
  auto s = run_restore(o, cat);
  EXPECT_TRUE(s.has_value()) << s.error().what;
  return s ? *s : RestoreSummary{};
}

// Whether a file's bytes (nullopt: no such file) are `want`; on failure the message says
// where they first differ instead of printing megabytes.
inline ::testing::AssertionResult same_bytes(const std::optional<std::string>& got,
                                             const std::optional<std::string>& want) {
  if (!got || !want) {
    if (!got && !want) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << (got ? "unexpected file" : "no such file");
  }
  if (*got == *want) return ::testing::AssertionSuccess();
  size_t at = 0;
  while (at < got->size() && at < want->size() && (*got)[at] == (*want)[at]) ++at;
  return ::testing::AssertionFailure() << got->size() << " bytes where " << want->size()
                                       << " were expected, first difference at offset " << at;
}

// The summary's errors, one a line, for failure messages.
inline std::string errors_of(const RestoreSummary& s) {
  std::string out;
  for (const auto& e : s.errors) out += e + "\n";
  return out;
}

}  // namespace stripeback::engine
