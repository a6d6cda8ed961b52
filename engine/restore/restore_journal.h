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
// A delta restore (delta_undo.h) notes, before it creates a file's undo log, an entry that
// starts with '/': the file's directory components, its temporary name, its undo log's name
// and its final name. For such an entry a later restore puts the file back as it was when
// it is still under its temporary name, and removes the undo log.
//
// The target is reached through its Directory (storage.h), never following links.
// Thread safety: note() and settle() may be called from any channel.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/storage.h"
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
  // Creates a new journal in the target directory (which must outlive the journal).
  static Result<std::unique_ptr<RestoreJournal>> create(storage::Directory& root);
  ~RestoreJournal();
  // Records a temporary about to be created, by its components below the target.
  Result<void> note(const std::vector<std::string>& rel);
  // Records a file a delta restore is about to update in place: the components of its
  // directory below the target, the temporary name it gets while updated, its undo log's
  // name and its final name.
  Result<void> note_delta(const std::vector<std::string>& dir, const std::string& temp,
                          const std::string& undo, const std::string& final);
  // A noted temporary is gone (renamed into place or removed).
  void settle();
  // Removes the journal when every noted temporary has settled; otherwise keeps it for the
  // next restore and says so in the returned warning.
  std::string finish();
  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }

 private:
  RestoreJournal() = default;
  storage::Directory* root_ = nullptr;
  std::string name_, path_;
  std::unique_ptr<storage::WriteFile> file_;
  Result<void> append(std::string entry);
  std::mutex mu_;
  uint64_t offset_ = 0;
  uint64_t open_temps_ = 0;
};

// Removes the temporaries listed by journals in the target whose restore is gone, and those
// journals. Returns one message per journal handled (what was removed, or why not).
// Files a killed delta restore was updating are put back as they were (`set_owner`: their
// owner too). Called after `own` (this restore's journal) is created: only journals and
// undo logs owned by the owner the medium gives `own`, writable by no one else, with one
// link, are trusted; others are left alone and reported. A listed temporary is removed only
// while it is a regular file with one link.
std::vector<std::string> clean_restore_leftovers(storage::Directory& root, bool set_owner,
                                                 const RestoreJournal& own);

}  // namespace stripeback::engine
