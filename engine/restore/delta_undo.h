// The undo log of a delta restore: what makes updating a file in place safe against a kill.
//
// A delta restore (restore --delta) updates an existing file by writing only the blocks
// that differ from the backup. Before it changes anything it saves the old bytes of every
// such block (and of any tail the new size cuts off) in an undo log beside the file, under a
// temporary name, and makes the log durable. Only then does it rename the file to a
// temporary name, write the new blocks in place, verify, and rename it back. A restore
// killed in between leaves the file under its temporary name with a complete undo log;
// the next restore into the target (restore_journal.h) applies the log, gives the file its
// old size and attributes and renames it back: every file is either as it was or verified
// new. The format (little-endian):
//   header  "SBUNDO01", u32 version (1), u32 mode, u32 uid, u32 gid, u64 old size,
//           i64 old mtime (ns), then zeros to 64 bytes
//   record  u32 "SBUR", u32 length, u64 file offset, 16-byte digest of the data, the data
// Thread safety: save() may be called from any channel.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "storage/storage.h"
#include "stripeback/result.h"

namespace stripeback::engine {

struct OldFile {
  uint64_t size = 0;
  uint32_t mode = 0, uid = 0, gid = 0;
  int64_t mtime_ns = 0;
};

class UndoLog {
 public:
  // Creates the log `name` (which must not exist) in `dir`, with the old file's size and
  // attributes; `shown` names the updated file in messages.
  static Result<std::unique_ptr<UndoLog>> create(storage::Directory& dir, const std::string& name,
                                                 const std::string& shown, const OldFile& old);
  // Saves the old bytes [off, off + len) of the file.
  Result<void> save(uint64_t off, const std::byte* data, uint32_t len);
  // Makes everything saved durable.
  Result<void> commit();
  Result<void> close();
  uint64_t bytes() const;  // of old data saved

 private:
  UndoLog() = default;
  std::unique_ptr<storage::WriteFile> out_;
  std::string shown_;
  mutable std::mutex mu_;
  uint64_t end_ = 0, bytes_ = 0;
};

// Puts a file a delta restore was updating back as it was: applies the undo log `undo` to
// `temp` (both in `dir`), gives it its old size and attributes (the owner too with
// `set_owner`), makes it durable and renames it to `final`, never over an existing file;
// then removes the log. Safe to repeat after a kill of its own.
// Both files are opened without following links and checked with fstat after the open:
// each must be a regular file with one link (a hard link would carry the writes outside the
// directory). With `log_owner` (a log left by another process: restore_journal.h), the undo
// log must also be owned by that uid and writable by nobody else, else nothing is touched
// and the error says why (Errc::invalid_argument).
Result<void> roll_back_delta(storage::Directory& dir, const std::string& temp,
                             const std::string& undo, const std::string& final, bool set_owner,
                             std::optional<uint32_t> log_owner = std::nullopt);

// Why a file left by a killed restore must not be trusted: "" when `st` is a regular file
// with one link, owned by `owner` (when given) and writable by no one else (when
// `private_mode`).
std::string distrust(const storage::FileInfo& st, std::optional<uint32_t> owner,
                     bool private_mode);

}  // namespace stripeback::engine
