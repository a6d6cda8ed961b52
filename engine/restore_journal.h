// The restore journal: how a restore finds and removes the temporary files an earlier,
// killed restore into the same target left behind, and only those.
//
// Every file a restore writes is first created under a new random name in its final
// directory, `.sbrestore-<16 hex digits>` (constant length, so any name the file system
// allows can be restored; created O_EXCL, so nothing planted at that name is ever written
// through). Before creating one, the restore appends the temporary's path below the target
// to its journal, `<target>/.sbrestore-journal-<16 hex>`: a header (host, pid, process start
// time) and NUL-terminated relative paths. A restore that ends removes its journal; one that
// is killed leaves it, and the next restore into that target whose journal owner is gone
// removes every listed temporary that is still there and still has the temporary form, then
// the journal. Journals of a running restore (or of another host) are left alone.
//
// Local targets are reached without following symbolic links; NFS targets by path.
// Thread safety: note() and settle() may be called from any channel.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/file.h"
#include "stripeback/result.h"

namespace stripeback::engine {

inline constexpr const char* kRestoreTempPrefix = ".sbrestore-";
inline constexpr const char* kRestoreJournalPrefix = ".sbrestore-journal-";

// A fresh temporary name: kRestoreTempPrefix and 16 random hex digits.
std::string restore_temp_name();
// True for names restore_temp_name() makes.
bool is_restore_temp_name(const std::string& name);

class RestoreJournal {
 public:
  // Creates a new journal in the target (a directory opened as `target_fd`, or a URL with
  // target_fd -1).
  static Result<std::unique_ptr<RestoreJournal>> create(const std::string& target,
                                                        int target_fd);
  ~RestoreJournal();
  // Records a temporary about to be created, by its components below the target.
  Result<void> note(const std::vector<std::string>& rel);
  // A noted temporary is gone (renamed into place or removed).
  void settle();
  // Removes the journal when every noted temporary has settled; otherwise keeps it for the
  // next restore and says so in the returned warning.
  std::string finish();
  const std::string& path() const { return path_; }

 private:
  RestoreJournal() = default;
  std::string path_;
  io::UniqueFd fd_;
  std::mutex mu_;
  uint64_t offset_ = 0;
  uint64_t open_temps_ = 0;
};

// Removes the temporaries listed by journals in the target whose restore is gone, and those
// journals. Returns one message per journal handled (what was removed, or why not).
std::vector<std::string> clean_restore_leftovers(const std::string& target, int target_fd);

}  // namespace stripeback::engine
