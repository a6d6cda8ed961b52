// FaultStorage: a Storage for tests that wraps another one, forwards every call to it and
// injects faults where its rules say: an operation fails with a chosen errno, a transfer
// comes back short, or an operation is held back for a while.
//
//   auto fs = std::make_shared<FaultStorage>(inner);
//   fs->add(FaultRule::fail(FaultOp::write, ENOSPC, 3).only(".sbp"));  // 3rd write to a piece
//   fs->add(FaultRule::fail(FaultOp::sync, EIO).onward());              // every sync fails
//   ... run the code under test on *fs ...
//   EXPECT_EQ(fs->fired(FaultOp::write), 1u);
//
// The files and directories it hands out wrap the inner ones, so their calls are counted
// and faulted too. A request submitted to a wrapped file that no rule touches goes to the
// inner file (as its own, same tag) on the caller's loop. A faulted request never reaches
// the inner file: its completion is delivered through a queue FaultStorage keeps on the
// loop. A delayed request is run by the inner file on a private loop of that queue, and
// its completion is delivered no earlier than the delay after it was submitted.
//
// Which calls are which kind:
//   open        Storage::open_read, Storage::create, Storage::open_dir,
//               Directory::create, Directory::open_dir
//   write       write requests (File::submit) and WriteFile::write_at
//   sync        sync requests, WriteFile::commit, Directory::sync, Storage::sync_dir
//   read        read requests and ReadFile::read_at
//   rename, remove, list, stat, set_attrs    the Storage and Directory calls of that name
//               (stat and set_attrs also of ReadFile and WriteFile)
//   truncate    WriteFile::truncate
//   preallocate WriteFile::preallocate
//   make_dirs   Storage::make_dirs
//   close       WriteFile::close
// WriteFile::abandon, caps(), scheme() and thread_counters() are forwarded unchanged.
//
// Each rule counts the operations it matches (its kind, and its substring when it has
// one); it fires on the nth of them, or on every one from the nth on. All rules see every
// operation. When several fire on one operation, it waits for the sum of their delays and
// then the first failing or short rule (in the order added) decides its result.
//
// An injected error is sys_error(errno, what) with " (injected)" appended, `what` naming
// the object as the backends do: "unable to write 'x.sbp' at offset 4096: No space left
// on device (injected)".
//
// Rules and counters are guarded by a mutex: channel threads may share one FaultStorage.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/storage.h"

namespace stripeback::storage {

enum class FaultOp : uint8_t {
  open,
  write,
  sync,
  rename,
  remove,
  read,
  set_attrs,
  truncate,
  list,
  stat,
  preallocate,
  make_dirs,
  close,
};
inline constexpr size_t kFaultOpCount = 13;
static_assert(static_cast<size_t>(FaultOp::close) + 1 == kFaultOpCount);
const char* fault_op_name(FaultOp op);  // "open", "write", ...

struct FaultRule {
  enum class Effect : uint8_t {
    fail,      // the operation fails with `err` (the inner storage is not called)
    short_io,  // a read or write transfers only `short_len` bytes (less than asked)
    delay,     // the operation takes `delay` longer; its result is the inner one
  };

  FaultOp op = FaultOp::write;
  uint64_t nth = 1;          // 1-based, among the operations this rule matches
  bool from_nth_on = false;  // fire on every matching operation from the nth on
  // Only operations whose object's text (a location, a file's name; either side of a
  // rename) contains this; empty: every one.
  std::string match;
  Effect effect = Effect::fail;
  int err = EIO;
  uint32_t short_len = 0;
  std::chrono::milliseconds delay{0};

  // The nth `op` fails with `err` (EIO, ENOSPC, EDQUOT, ...).
  static FaultRule fail(FaultOp op, int err, uint64_t nth = 1);
  // The nth write transfers only `bytes` of its length. A request completes with `bytes`
  // (the caller must treat it as an error or resubmit the rest); write_at writes `bytes`
  // and then fails, naming the file. A request's shortened part goes to the inner file,
  // so with direct I/O `bytes` must be a multiple of the alignment.
  static FaultRule short_write(uint32_t bytes, uint64_t nth = 1);
  // The nth read transfers only `bytes`: a request completes with them, read_at returns
  // them (as at the end of the file).
  static FaultRule short_read(uint32_t bytes, uint64_t nth = 1);
  // The nth `op` is held back `d`: a blocking call sleeps first, a request's completion
  // comes no earlier than `d` after its submission.
  static FaultRule delayed(FaultOp op, std::chrono::milliseconds d, uint64_t nth = 1);

  // Copies with one more condition: every matching operation from the nth on; only
  // objects whose text contains `substring`.
  FaultRule onward() const;
  FaultRule only(std::string substring) const;
};

// Rules from text, for running the whole program under faults (engine::test_hooks::
// set_faults, which the CLI of a test build feeds from STRIPEBACK_FAULTS; see
// docs/reliability.md): rules separated by ';', each "OP:N[+]:EFFECT[:MATCH]" where OP is
// a kind above by name, N the occurrence ("+": and every one after it), EFFECT an errno
// name (EIO, ENOSPC, EDQUOT, EROFS, EACCES, EPERM), "short=BYTES" or "delay=MS", and MATCH
// a substring of the object's text. Example: "write:3:ENOSPC:.sbp;rename:1:EIO".
Result<std::vector<FaultRule>> parse_fault_rules(std::string_view spec);

class FaultStorage : public Storage {
 public:
  explicit FaultStorage(std::shared_ptr<Storage> inner);
  ~FaultStorage() override;

  // Adds a rule; returns its id for rule_fired(). A short rule's op must be read or write.
  size_t add(FaultRule r);
  // Drops every rule (counters stay; the ids of later rules go on from the last).
  void clear_rules();
  // Operations seen (faulted ones included), by kind.
  uint64_t seen(FaultOp op) const;
  // Rule firings on operations of that kind; fired() over every kind.
  uint64_t fired(FaultOp op) const;
  uint64_t fired() const;
  // How many times the rule with this id fired (0 for an unknown or dropped id).
  uint64_t rule_fired(size_t id) const;
  // Zeroes seen and fired, and each rule's own count of matching operations.
  void reset_counts();

  Storage& inner() { return *inner_; }

  const char* scheme() const override;
  const StorageCaps& caps() const override;
  Result<std::unique_ptr<ReadFile>> open_read(const Location& at, const OpenOptions& o) override;
  Result<std::unique_ptr<WriteFile>> create(const Location& at, const CreateOptions& o) override;
  Result<std::unique_ptr<WriteFile>> open_write(const Location& at, mode_t mode) override;
  Result<std::unique_ptr<Directory>> open_dir(const Location& at, bool create) override;
  Result<FileInfo> stat(const Location& at, bool follow) override;
  Result<std::vector<std::string>> list(const Location& dir) override;
  Result<void> remove(const Location& at) override;
  Result<void> rename(const Location& from, const Location& to, bool replace) override;
  Result<void> set_attrs(const Location& at, const Attrs& a) override;
  Result<void> make_dirs(const Location& at, mode_t mode = 0755) override;
  Result<void> sync_dir(const Location& dir) override;
  std::optional<CounterGroup> thread_counters(bool close_thread) override;

  // Shared with the files and directories handed out, which may outlive this object.
  struct State;

 private:
  std::shared_ptr<Storage> inner_;
  std::shared_ptr<State> state_;
};

}  // namespace stripeback::storage
