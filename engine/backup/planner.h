// Planner: expands backup sources into the list of files to copy, largest first, and hands
// them out to whichever channel asks next.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/backup/exclude.h"
#include "stripeback/result.h"

namespace stripeback::engine {

struct FileTask {
  std::string path;  // absolute, lexically normal
  uint64_t size = 0;
  uint32_t mode = 0;
  int64_t mtime_ns = 0;
  uint32_t uid = 0, gid = 0;
  int64_t ctime_ns = 0;  // for backup optimization (--optimize)
  uint64_t ino = 0;
};

struct SkippedEntry {
  std::string path;
  std::string why;  // "symbolic link", "socket", "unreadable directory: ..."
};

struct Plan {
  std::vector<FileTask> files;  // largest first; ties by path
  std::vector<FileTask> dirs;   // directories walked (their mode, owner and mtime are kept)
  std::vector<SkippedEntry> skipped;
  // Left out by PlanOptions::rules (backup --exclude), in walk order: a directory stands for
  // everything below it, which is not walked.
  std::vector<std::string> excluded;
  uint64_t total_bytes = 0;
};

struct PlanOptions {
  // Do not descend into directories on another file system (a different st_dev) than the
  // source they are below; each is reported as skipped.
  bool one_file_system = false;
  // A directory below a source that cannot be listed is reported as skipped; without this,
  // it fails the plan (Errc::io), as an unreadable file fails the job.
  bool skip_unreadable = false;
  // Asked for every entry below a source before it is looked at: true leaves it out (a
  // directory with all below it), unrecorded (backup --pg: what a base backup leaves out).
  std::function<bool(const std::string& path)> exclude;
  // Exclusion patterns (exclude.h), matched against each entry's path relative to its
  // source: an entry they match is left out (a directory with all below it, not walked)
  // and recorded in Plan::excluded. Null: none.
  const ExcludeRules* rules = nullptr;
};

// Walks every source (a file or a directory, recursively). A source named by a symbolic
// link is followed, and its files are recorded under the link's path; symbolic links found
// below the sources are reported as skipped and never followed. Directories on a pseudo
// file system of the kernel (Storage::pseudo_file_system: /proc, /sys, /dev, ...), a source
// included, are reported as skipped, not walked. A source that does not exist, or is neither
// a regular file nor a directory, is an invalid_argument error naming it. A file reached
// twice is taken once.
Result<Plan> make_plan(const std::vector<std::string>& sources, const PlanOptions& opts = {});

// A unit of work for one channel: a whole file, or one section of a file larger than the
// section size (sections of one file go to whichever channels ask, in parallel).
struct WorkUnit {
  const FileTask* file = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint32_t section = 0;   // from 0
  uint32_t sections = 1;  // sections the file was split into
};

// A backup set: the units one channel takes at once and may multiplex into its pieces.
using WorkSet = std::vector<WorkUnit>;

struct SetOptions {
  uint64_t section_size = 0;    // 0: never split files
  uint32_t files_per_set = 64;  // units per set
  uint32_t channels = 1;        // at least this many sets when there are enough files
  uint64_t align = 1 << 20;     // section boundaries are multiples of this
  // When the files were last backed up (one per file, in the order of `files`; the lowest
  // value for never). Empty: not known, all files are alike.
  std::vector<int64_t> last_backup;
};

// Splits files into units and groups them into sets: files larger than the section size
// become one set per section, so that different channels take them; the other files are
// spread over max(files / files_per_set, channels) sets, balanced by bytes, each keeping the
// caller's order. Sets come out largest first. With `last_backup`, this is done for each
// group of files last backed up at the same time, oldest group first: a set (and so what a
// channel multiplexes) never mixes files that are due with files backed up since, and the
// queue hands out the most overdue work first, sections included.
std::vector<WorkSet> make_sets(const std::vector<FileTask>& files, const SetOptions& opts);

// Hands out sets to channels; safe to call from any thread. Channel c (from 1) of the first
// `channels` gets set c - 1 first: every channel has work of its own however late it starts
// (a channel whose storage is slow to open, after the others have read a few small sets,
// would otherwise find none left). The later sets go to whichever channel asks first.
class WorkQueue {
 public:
  WorkQueue(const std::vector<WorkSet>& sets, uint32_t channels)
      : sets_(sets), own_(std::min<size_t>(channels, sets.size())), next_(own_),
        own_taken_(own_) {}
  const WorkSet* next(uint32_t channel) {
    if (channel >= 1 && channel <= own_ && !own_taken_[channel - 1].exchange(true))
      return &sets_[channel - 1];
    size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    return i < sets_.size() ? &sets_[i] : nullptr;
  }

 private:
  const std::vector<WorkSet>& sets_;
  const size_t own_;  // sets kept for the channel of the same number
  std::atomic<size_t> next_;
  std::vector<std::atomic<bool>> own_taken_;
};


}  // namespace stripeback::engine
