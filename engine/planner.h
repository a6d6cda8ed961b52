// Planner: expands backup sources into the list of files to copy, largest first, and hands
// them out to whichever channel asks next.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::engine {

struct FileTask {
  std::string path;  // absolute, lexically normal
  uint64_t size = 0;
  uint32_t mode = 0;
  int64_t mtime_ns = 0;
  uint32_t uid = 0, gid = 0;
};

struct SkippedEntry {
  std::string path;
  std::string why;  // "symbolic link", "socket", "unreadable directory: ..."
};

struct Plan {
  std::vector<FileTask> files;  // largest first; ties by path
  std::vector<FileTask> dirs;   // directories walked (their mode, owner and mtime are kept)
  std::vector<SkippedEntry> skipped;
  uint64_t total_bytes = 0;
};

// Walks every source (a file or a directory, recursively, never following symbolic links
// below the named sources). A source that does not exist, or is neither a regular file nor
// a directory, is an invalid_argument error naming it. A file reached twice is taken once.
Result<Plan> make_plan(const std::vector<std::string>& sources);

// Hands out plan entries to channels; safe to call from any thread.
class WorkQueue {
 public:
  explicit WorkQueue(const std::vector<FileTask>& files) : files_(files) {}
  const FileTask* next() {
    size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    return i < files_.size() ? &files_[i] : nullptr;
  }

 private:
  const std::vector<FileTask>& files_;
  std::atomic<size_t> next_{0};
};

// Absolute, lexically normal form of a path (no symlink resolution).
std::string normal_path(const std::string& path);

}  // namespace stripeback::engine
