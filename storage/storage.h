// Storage: the one seam between the engine and the media it reads and writes.
//
// A Storage serves one scheme (local files, NFS, a tape drive; a test's fault injector
// wraps any of them). It opens ReadFile and WriteFile objects at Locations, and lists,
// stats, removes and renames as the medium allows; StorageCaps says what the medium can do
// and the engine branches on that, never on which backend it is talking to.
//
// I/O is asynchronous: a Request names the File it acts on, and the File submits it itself
// (to the calling thread's io_uring ring, NFS connections or tape drive helper) through the
// IoLoop of that thread (storage/io_loop.h). Submitting never blocks on the medium;
// completions are reaped from the loop. Metadata I/O (a piece's header and trailer when
// opening it, the catalog's records) may use the blocking read_at/write_at calls.
//
// Errors name the object (the location as text) and the cause.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/location.h"
#include "stripeback/result.h"

namespace stripeback::storage {

class IoLoop;

struct StorageCaps {
  bool random_read = true;       // reads at any offset (else: in order, from the start)
  bool random_write = true;      // writes at any offset; false with sequential_only
  bool sequential_only = false;  // a WriteFile takes its bytes in order (it orders them)
  bool preallocate = false;      // WriteFile::preallocate reserves space
  bool dir_sync = false;         // Directory::sync makes created names durable
  bool directories = true;       // names are organised in directories (list, rename, ...)
  bool removable = false;        // data lives on volumes that come and go (tape)
  bool durable_writes = false;   // a completed write is already durable (commit is cheap)
  // What an object store lacks and has (a file system has rename and append, and neither of
  // the others):
  bool rename = true;            // a name can be renamed over another (temporaries go in place)
  bool append = true;            // an existing file can be opened and written again
  bool atomic_put = false;       // put() replaces a whole object at once
  bool multipart = false;        // a new file is written as parts in order, then completed
  // Objects can be locked against deletion and overwriting until a date (S3 Object Lock):
  // CreateOptions::retention and PutOptions::retention apply, set_retention() extends.
  bool retention = false;
  uint32_t alignment = 1;        // offsets and lengths of direct I/O are multiples of this
  uint32_t max_io = 1u << 20;    // largest request worth issuing
};

enum class OpKind : uint8_t { read, write, sync };

class File;

// A lock on an object: until `until_ns` (wall clock, ns since the epoch) the medium refuses
// to delete or overwrite it. In governance mode a user with a special permission may lift
// it; in compliance mode no one can, and the date can only be moved later.
struct Retention {
  enum class Mode : uint8_t { governance = 1, compliance = 2 };
  Mode mode = Mode::compliance;
  int64_t until_ns = 0;
};
const char* retention_mode_name(Retention::Mode m);  // "governance", "compliance"

class File;

struct Request {
  File* file = nullptr;
  OpKind kind = OpKind::read;
  uint64_t offset = 0;
  std::byte* buf = nullptr;  // caller-owned; valid until the completion is reaped
  uint32_t len = 0;          // bytes to transfer (0 for sync)
  uint64_t tag = 0;          // returned unchanged in the completion
  // The buffer region (IoLoop::register_buffers) `buf` lies in, or -1. A backend that can
  // (io_uring) has the kernel pin such regions once instead of on every transfer.
  int16_t region = -1;
};

struct Completion {
  uint64_t tag = 0;
  OpKind kind = OpKind::read;
  Result<uint32_t> result = uint32_t{0};  // bytes transferred, or the error
};

using Clock = std::chrono::steady_clock;

// What stat() tells (lstat-like: a link is reported as a link).
struct FileInfo {
  uint64_t size = 0;
  uint32_t mode = 0;  // type and permission bits, as st_mode
  uint32_t uid = 0, gid = 0;
  int64_t mtime_ns = 0;
  uint64_t dev = 0;   // local: st_dev (0 elsewhere)
  int64_t ctime_ns = 0;  // status change time
  uint64_t ino = 0;      // inode number (file id on NFS)
  uint32_t nlink = 1;    // hard links to it (1 where the medium has no such count)
};

// Attributes given to a restored file or directory: owner (when set), permission bits,
// then mtime (in that order: chown clears set-id bits).
struct Attrs {
  bool set_owner = false;
  uint32_t uid = 0, gid = 0;
  uint32_t mode = 0;
  int64_t mtime_ns = 0;
  // The permission bits of `st_mode` (type bits dropped), and the rest as given.
  static Attrs of(bool set_owner, uint32_t uid, uint32_t gid, uint32_t st_mode, int64_t mtime_ns) {
    return Attrs{set_owner, uid, gid, st_mode & 07777, mtime_ns};
  }
};

struct OpenOptions {
  bool direct = true;  // O_DIRECT where the medium and file system allow it
};

struct CreateOptions {
  bool direct = true;
  mode_t mode = 0640;
  // Removable media: which stream of the set this file is (backup id, channel, piece), for
  // its label.
  uint64_t set_id = 0;
  uint32_t channel = 0, number = 0;
  // Lock the new object once written (caps().retention; refused elsewhere).
  std::optional<Retention> retention = std::nullopt;
};

struct PutOptions {
  mode_t mode = 0640;
  std::optional<Retention> retention = std::nullopt;  // as CreateOptions::retention
};

// Where a file went on removable media: one span per volume it occupies.
struct MediaSpan {
  std::string volume_id, drive;
  uint32_t file = 0;
  uint64_t block = 0, first_seq = 0, blocks = 0, address = 0;
};
struct MediaPlacement {
  uint32_t block_size = 0;
  uint64_t bytes = 0;
  std::vector<MediaSpan> spans;
};

class File {
 public:
  virtual ~File() = default;
  // The location as shown in messages.
  virtual const std::string& name() const = 0;
  // Direct I/O is in effect: requests must be aligned to the storage's alignment.
  virtual bool direct() const { return false; }
  // Queues `r` (whose file is this) on `loop`. Fails only when the request cannot be queued
  // at all; failures of the I/O itself arrive as completions.
  virtual Result<void> submit(IoLoop& loop, const Request& r) = 0;
};

class ReadFile : public File {
 public:
  virtual Result<FileInfo> stat() = 0;
  // Blocking read for metadata; returns fewer bytes only at the end of the file.
  virtual Result<size_t> read_at(std::byte* buf, size_t len, uint64_t offset) = 0;
};

class WriteFile : public File {
 public:
  // Blocking write of all of `len` bytes (metadata: catalog records).
  virtual Result<void> write_at(const std::byte* buf, size_t len, uint64_t offset) = 0;
  // Reserves [offset, offset + len) (with caps().preallocate; a no-op elsewhere). Writes
  // inside reserved space do not extend the file.
  virtual Result<void> preallocate(uint64_t offset, uint64_t len) = 0;
  virtual Result<void> truncate(uint64_t size) = 0;
  // Makes every completed write durable (fdatasync, NFS COMMIT, the tape stream's end).
  virtual Result<void> commit() = 0;
  virtual Result<void> set_attrs(const Attrs& a) = 0;
  // Releases the file after commit().
  virtual Result<void> close() = 0;
  // Gives the file up after a failure: closes it and leaves what was written where it is.
  virtual void abandon() = 0;
  // On removable media, where the file went (after commit()).
  virtual std::optional<MediaPlacement> placement() const { return std::nullopt; }
  // The open file's own attributes (fstat after open: what is written is this file, whatever
  // its name points at now). Errc::unsupported where the medium cannot tell.
  virtual Result<FileInfo> stat();
};

// A directory, reached without following symbolic links at or below it: every name given
// here is one component (safe_component() in the restore code checks them first).
class Directory {
 public:
  virtual ~Directory() = default;
  virtual const Location& location() const = 0;
  // The subdirectory `name`, created first (with `mode`) when missing and `create` is set.
  // A name that is a link or a file is refused (invalid_argument).
  virtual Result<std::unique_ptr<Directory>> open_dir(const std::string& name, bool create,
                                                      mode_t mode = 0755) = 0;
  // Creates a new file; never replaces or follows anything at `name` (Errc::exists).
  virtual Result<std::unique_ptr<WriteFile>> create(const std::string& name,
                                                    const CreateOptions& o) = 0;
  // Opens a file for reading; never follows a link at `name`.
  virtual Result<std::unique_ptr<ReadFile>> open(const std::string& name, const OpenOptions& o) = 0;
  // Opens an existing regular file for writing in place: never creates, truncates or
  // follows a link at `name` (a delta restore updates files this way). Errc::unsupported
  // where the medium cannot.
  virtual Result<std::unique_ptr<WriteFile>> open_write(const std::string& name,
                                                        const OpenOptions& o);
  virtual Result<FileInfo> stat(const std::string& name) = 0;
  virtual Result<std::vector<std::string>> list() = 0;
  virtual Result<void> remove(const std::string& name) = 0;
  // Without `replace`, an existing `to` stays and the result is Errc::exists.
  virtual Result<void> rename(const std::string& from, const std::string& to, bool replace) = 0;
  virtual Result<void> set_attrs(const Attrs& a) = 0;
  // Makes the names created, renamed and removed in it durable (with caps().dir_sync).
  virtual Result<void> sync() = 0;
};

// One backend's counters for one thread (a channel), published by name; the job collects
// them without knowing their fields and cli/ renders them. Values are numbers, texts or
// flags; `unit` is "", "bytes", "s" or "ms", for the text rendering.
struct Counter {
  std::string key;
  enum class Kind : uint8_t { number, real, text, flag } kind = Kind::number;
  uint64_t number = 0;
  double real = 0;
  std::string text;
  std::string unit;
};
struct CounterGroup {
  std::string name;  // "nfs", "tape", ...: the JSON object's key
  std::vector<Counter> counters;
  CounterGroup& num(std::string key, uint64_t v, std::string unit = "");
  CounterGroup& real(std::string key, double v, std::string unit = "");
  CounterGroup& text(std::string key, std::string v);
  CounterGroup& flag(std::string key, bool v);
  const Counter* find(const std::string& key) const;
};

class Storage {
 public:
  virtual ~Storage() = default;
  virtual const char* scheme() const = 0;  // for messages: "local", "nfs", "tape", ...
  virtual const StorageCaps& caps() const = 0;
  virtual Result<std::unique_ptr<ReadFile>> open_read(const Location& at,
                                                      const OpenOptions& o) = 0;
  // Creates a new file, never replacing one (Errc::exists).
  virtual Result<std::unique_ptr<WriteFile>> create(const Location& at, const CreateOptions& o) = 0;
  // Opens a file for writing in place (created, with `mode`, when missing; never
  // truncated): for logs appended to, like the catalog's.
  virtual Result<std::unique_ptr<WriteFile>> open_write(const Location& at, mode_t mode);
  // The directory at `at`; with `create`, made (with its parents) when missing.
  virtual Result<std::unique_ptr<Directory>> open_dir(const Location& at, bool create);
  // stat (links followed when `follow`).
  virtual Result<FileInfo> stat(const Location& at, bool follow);
  virtual Result<std::vector<std::string>> list(const Location& dir);
  virtual Result<void> remove(const Location& at);
  virtual Result<void> rename(const Location& from, const Location& to, bool replace);
  virtual Result<void> set_attrs(const Location& at, const Attrs& a);
  virtual Result<void> make_dirs(const Location& at, mode_t mode = 0755);
  virtual Result<void> sync_dir(const Location& dir);
  // Replaces the whole object at `at` with `data` at once: a reader sees the old bytes or
  // the new ones, never part of either (with caps().atomic_put; Errc::unsupported elsewhere).
  virtual Result<void> put(const Location& at, std::span<const std::byte> data,
                           const PutOptions& o);
  // Object locks (caps().retention; Errc::unsupported elsewhere). retention_available()
  // checks, before anything is written, that objects under `dir` can be locked (an S3
  // bucket with Object Lock enabled), naming the cause when not. set_retention() moves the
  // lock of the object `at` to `r` (a compliance lock only later).
  virtual Result<void> retention_available(const Location& dir);
  virtual Result<void> set_retention(const Location& at, const Retention& r);
  // Writes begun and never completed nor abandoned (an S3 multipart upload whose writer was
  // killed): the names under `dir` they were for, each once; empty on media where an
  // unfinished write is a file like any other. abandon_unfinished() drops every unfinished
  // write of the name `at` (its parts are freed; a completed object of that name stays).
  virtual Result<std::vector<std::string>> unfinished(const Location& dir);
  virtual Result<void> abandon_unfinished(const Location& at);
  // The calling thread's counters of this backend (nullopt when the thread used none).
  // Call at the end of a channel, on its thread; `close_thread` drops its connections.
  virtual std::optional<CounterGroup> thread_counters(bool close_thread);
  // The name of the kernel pseudo file system (proc, sysfs, ...) the directory `dir` is
  // on, whose "files" are views of kernel state a walk leaves alone; nullopt for a file
  // system that holds files, and on every medium without such file systems.
  virtual std::optional<std::string> pseudo_file_system(const Location& dir, const FileInfo& st);

 protected:
  // "<op> is not supported on <scheme> storage ('<location>')", Errc::unsupported.
  Error unsupported(const char* op, const Location& at) const;
};

// Writes `data` as the whole file `at`, so that a crash leaves the old file or the new one:
// with atomic_put, one put(); with rename, a temporary next to it (".NAME.tmp", a leftover
// of an earlier attempt removed first) written, made durable and renamed over `at`, then
// the directory synced (with dir_sync). Fails with Errc::unsupported on a medium with
// neither. `before_replace` runs once the temporary is durable, before it goes in place.
struct AtomicWriteOptions {
  mode_t mode = 0600;
  std::optional<Retention> retention = std::nullopt;  // with caps().retention (refused elsewhere)
  std::function<void()> before_replace;
};
Result<void> write_file_atomic(Storage& st, const Location& at, std::span<const std::byte> data,
                               const AtomicWriteOptions& o = {});

}  // namespace stripeback::storage
