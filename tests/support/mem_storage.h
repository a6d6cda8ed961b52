// MemStorage: a Storage for tests whose files and directories live in memory, so engine
// code can be run end to end without a disk, a server or the command-line binary.
//
//   auto mem = std::make_shared<testing::MemStorage>();     // or MemStorage(caps)
//   testing::SchemeScope scope({{"mem", mem}});             // "mem://dest" reaches it
//   mem->write_file("/src/a.dbf", bytes);
//   ... run_backup(... destination "mem://dest" ...) ...
//   EXPECT_EQ(mem->counts().syncs, ...);
//
// Names: a location's path ("mem://dest/x" and Location::local("/dest/x") both name
// "/dest/x"); the inspection helpers below take such paths. The root "/" always exists.
//
// Files are inodes: an open file keeps its bytes when its name is renamed or removed, as
// on a POSIX file system. There are no links. stat() reports the process's uid and gid,
// a wall-clock mtime and ctime (updated by writes, truncates and attribute changes) and a
// unique inode number.
//
// I/O: a request is carried out when it is submitted, under the storage's lock; its
// completion waits in a queue the storage keeps on the caller's IoLoop until reaped
// (reap never waits: nothing else produces completions). With Options::reverse_reap,
// completions are handed out newest first, as a medium that completes out of order might.
//
// StorageCaps are honoured, so a test chooses the medium's shape:
//   sequential_only,  a file made by create() takes its bytes in order, through
//   multipart         storage::OrderedWrites as a tape stream does: a write ahead of its
//                     turn is held until the bytes before it arrive; one behind them fails;
//                     a write still held when its loop would wait for ever, or when the
//                     file is abandoned, completes as failed. truncate is refused and
//                     commit() fails while a write is held.
//   !random_read      a ReadFile is read in order from offset 0; a read elsewhere fails
//                     (Errc::unsupported).
//   !random_write,    open_write (writing in place) is refused (Errc::unsupported).
//   !append
//   !rename           rename is refused (Errc::unsupported).
//   atomic_put        put() replaces a whole file at once (else it is refused).
//   !directories      one flat namespace: create and open at any path; open_dir, list,
//                     remove, rename, make_dirs and sync_dir are refused (unsupported).
//   alignment > 1     a file opened or created with direct I/O checks every request and
//                     every read_at/write_at: offset, length and buffer address must be
//                     multiples of the alignment (else the error is EINVAL, as O_DIRECT).
//   preallocate       preallocate() extends the file with zeros; without it, a no-op.
//   dir_sync          sync_dir() and Directory::sync() are counted whatever it says.
//
// Thread safety: every call may come from any thread (one mutex); a file, like the
// engine's, is used by one thread at a time. Files handed out share the storage's state
// and may outlive the MemStorage object; directories refer to it and must not.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/registry.h"
#include "storage/storage.h"

namespace stripeback::testing {

class MemStorage : public storage::Storage {
 public:
  struct Options {
    storage::StorageCaps caps;
    bool reverse_reap = false;   // completions newest first
    std::string scheme = "mem";  // what scheme() says (messages, summaries)
  };

  // What was done to the storage since it was made (or reset_counts()).
  struct Counts {
    uint64_t creates = 0, opens = 0;       // files created; opened to read or write in place
    uint64_t reads = 0, read_bytes = 0;    // requests and read_at
    uint64_t writes = 0, write_bytes = 0;  // requests and write_at
    uint64_t syncs = 0;                    // WriteFile::commit and sync requests
    uint64_t dir_syncs = 0;                // sync_dir and Directory::sync
    uint64_t renames = 0, removes = 0, truncates = 0, preallocates = 0, set_attrs = 0;
    uint64_t puts = 0;         // whole files replaced by put() (their bytes in write_bytes)
    uint64_t held_writes = 0;  // written in order: writes that came ahead of their turn
  };

  MemStorage();
  explicit MemStorage(const storage::StorageCaps& caps);
  explicit MemStorage(Options o);
  ~MemStorage() override;

  // The location of `path` under this storage's scheme ("/dest" -> mem://dest).
  storage::Location at(const std::string& path) const;

  // ---- inspection and set-up for tests (paths as above) ----
  // Writes a whole file (replacing one there), creating its directories.
  void write_file(const std::string& path, std::string_view bytes, uint32_t mode = 0100644);
  // Overwrites bytes of an existing file at `offset` (extending it as needed), as a
  // program changing it would: mtime and ctime move on. False when there is no such file.
  bool overwrite(const std::string& path, uint64_t offset, std::string_view bytes);
  void make_dir(const std::string& path);
  // The bytes of the file at `path`, or nullopt when there is none.
  std::optional<std::string> contents(const std::string& path) const;
  bool exists(const std::string& path) const;
  bool is_dir(const std::string& path) const;
  // The names directly in `dir` (files and directories), sorted; empty when it is missing.
  std::vector<std::string> names(const std::string& dir) const;
  // Every file's path below `dir` (recursively), sorted.
  std::vector<std::string> files(const std::string& dir = "/") const;
  // Bytes written (requests and write_at) to the file now at `path` since it was made or
  // reset_counts().
  uint64_t bytes_written_to(const std::string& path) const;
  // Files written or truncated since their last commit or sync request, sorted.
  std::vector<std::string> unsynced() const;
  Counts counts() const;
  // Zeroes counts() and every file's bytes_written_to().
  void reset_counts();

  // ---- storage::Storage ----
  const char* scheme() const override;
  const storage::StorageCaps& caps() const override;
  Result<std::unique_ptr<storage::ReadFile>> open_read(const storage::Location& at,
                                                       const storage::OpenOptions& o) override;
  Result<std::unique_ptr<storage::WriteFile>> create(const storage::Location& at,
                                                     const storage::CreateOptions& o) override;
  Result<std::unique_ptr<storage::WriteFile>> open_write(const storage::Location& at,
                                                         mode_t mode) override;
  Result<std::unique_ptr<storage::Directory>> open_dir(const storage::Location& at,
                                                       bool create) override;
  Result<storage::FileInfo> stat(const storage::Location& at, bool follow) override;
  Result<std::vector<std::string>> list(const storage::Location& dir) override;
  Result<void> remove(const storage::Location& at) override;
  Result<void> rename(const storage::Location& from, const storage::Location& to,
                      bool replace) override;
  Result<void> set_attrs(const storage::Location& at, const storage::Attrs& a) override;
  Result<void> make_dirs(const storage::Location& at, mode_t mode = 0755) override;
  Result<void> sync_dir(const storage::Location& dir) override;
  Result<void> put(const storage::Location& at, std::span<const std::byte> data,
                   const storage::PutOptions& o) override;
  // The group "mem": this thread's requests and bytes on this storage (reads, read_bytes,
  // writes, write_bytes, syncs); nullopt when the thread made none.
  std::optional<storage::CounterGroup> thread_counters(bool close_thread) override;

  // Shared with the files handed out.
  struct State;

  // A file written in place: created with `mode` when missing unless `must_exist`; with
  // direct I/O when asked (Directory::open_write; Storage::open_write has no such option).
  Result<std::unique_ptr<storage::WriteFile>> open_in_place(const storage::Location& at,
                                                            mode_t mode, bool must_exist,
                                                            bool direct);

 private:
  std::shared_ptr<State> s_;
};

// Makes storages reachable by scheme ("mem://dest") on the calling thread while it lives,
// through the backend registry (storage/registry.h); jobs started on this thread install
// the same registry on their own threads. The registry in force before comes back after.
class SchemeScope {
 public:
  SchemeScope(std::initializer_list<std::pair<std::string, std::shared_ptr<storage::Storage>>> s);
  SchemeScope(const SchemeScope&) = delete;
  SchemeScope& operator=(const SchemeScope&) = delete;

 private:
  static std::shared_ptr<const storage::Registry> make(
      std::initializer_list<std::pair<std::string, std::shared_ptr<storage::Storage>>> s);
  storage::ScopedRegistry scoped_;
};

}  // namespace stripeback::testing
