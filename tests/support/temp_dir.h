// A temporary directory for a test, removed with everything in it when the object dies
// (kept when STRIPEBACK_KEEP_TEST_DIRS is set, for post-mortems).
#pragma once

#include <cstdint>
#include <string>

namespace stripeback::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "sbtest");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Writes `size` bytes of a deterministic pattern seeded by `seed` to `path`.
void write_pattern_file(const std::string& path, uint64_t size, uint32_t seed);
std::string read_file(const std::string& path);

}  // namespace stripeback::testing
