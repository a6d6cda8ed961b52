// The state a MemStorage (mem_storage.h) shares with the files it hands out: its names,
// their inodes and its counts, under one mutex; and the makers of those files
// (mem_files.cc). Internal to tests/support/mem_*.cc.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "tests/support/mem_storage.h"

namespace stripeback::testing {
namespace mem {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline std::string quoted(const std::string& s) { return "'" + s + "'"; }

// "/a//b/" -> "/a/b"; "" -> "/".
inline std::string clean(const std::string& path) {
  std::string out = "/";
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out += (out.size() > 1 ? "/" : "") + path.substr(i, j - i);
    i = j + 1;
  }
  return out;
}

inline std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

inline bool below(const std::string& path, const std::string& dir) {
  return dir == "/" ? path.size() > 1 : path.starts_with(dir + "/");
}

struct Inode {
  bool dir = false;
  uint32_t mode = 0;
  uint32_t uid = 0, gid = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  uint64_t ino = 0;
  std::string data;
  uint64_t written = 0;  // bytes written since it was made or the counts were reset
  bool dirty = false;    // written or truncated since the last sync
};

inline storage::FileInfo info_of(const Inode& n) {
  storage::FileInfo i;
  i.size = n.data.size();
  i.mode = n.mode;
  i.uid = n.uid;
  i.gid = n.gid;
  i.mtime_ns = n.mtime_ns;
  i.ctime_ns = n.ctime_ns;
  i.ino = n.ino;
  return i;
}

inline void apply_attrs(Inode& n, const storage::Attrs& a) {
  if (a.set_owner) {
    n.uid = a.uid;
    n.gid = a.gid;
  }
  n.mode = (n.mode & ~07777u) | (a.mode & 07777);
  n.mtime_ns = a.mtime_ns;
  n.ctime_ns = now_ns();
}

// This thread's requests on a storage (by its id), for thread_counters().
struct ThreadCounts {
  uint64_t reads = 0, read_bytes = 0, writes = 0, write_bytes = 0, syncs = 0;
};
ThreadCounts& thread_counts(uint64_t storage_id);
// This thread's counts of the storage, dropped with `close`; nullopt when it has none.
std::optional<ThreadCounts> take_thread_counts(uint64_t storage_id, bool close);

inline std::atomic<uint64_t> next_storage_id{1};

}  // namespace mem

struct MemStorage::State {
  Options o;
  uint64_t id = mem::next_storage_id++;
  mutable std::mutex mu;
  std::map<std::string, std::shared_ptr<mem::Inode>> names;
  uint64_t next_ino = 2;
  Counts counts;
  char ordered_key = 0;  // its address keys the loops' queues of writes in order

  explicit State(Options opts) : o(std::move(opts)) { names["/"] = new_inode(true, 040755); }

  std::shared_ptr<mem::Inode> new_inode(bool dir, uint32_t mode) {
    auto n = std::make_shared<mem::Inode>();
    n->dir = dir;
    n->mode = mode;
    n->uid = static_cast<uint32_t>(::getuid());
    n->gid = static_cast<uint32_t>(::getgid());
    n->mtime_ns = n->ctime_ns = mem::now_ns();
    n->ino = next_ino++;
    return n;
  }

  std::shared_ptr<mem::Inode> find(const std::string& path) const {
    auto it = names.find(path);
    return it == names.end() ? nullptr : it->second;
  }

  // The parent directory of `path` exists (always, in a flat namespace).
  Result<void> parent_exists(const std::string& path, const std::string& what) const {
    if (!o.caps.directories) return ok();
    auto p = find(mem::parent_of(path));
    if (!p) return sys_error(ENOENT, what);
    if (!p->dir) return sys_error(ENOTDIR, what);
    return ok();
  }

  Result<void> make_dirs(const std::string& path, uint32_t mode, const std::string& shown) {
    std::string at;
    for (size_t i = 1; i <= path.size(); ++i) {
      if (i < path.size() && path[i] != '/') continue;
      at = path.substr(0, i);
      if (at == "/") continue;
      auto n = find(at);
      if (n && !n->dir)
        return sys_error(ENOTDIR, "unable to create directory " + mem::quoted(shown));
      if (!n) names[at] = new_inode(true, S_IFDIR | (mode & 07777));
    }
    return ok();
  }
};

namespace mem {

// A file of the storage with state `s`, open on inode `n`; `name` is its location as shown.
std::unique_ptr<storage::ReadFile> make_read_file(std::shared_ptr<MemStorage::State> s,
                                                  std::shared_ptr<Inode> n, std::string name,
                                                  bool direct);
// Written in order from `end` on, where the medium is sequential.
std::unique_ptr<storage::WriteFile> make_write_file(std::shared_ptr<MemStorage::State> s,
                                                    std::shared_ptr<Inode> n, std::string name,
                                                    bool direct, uint64_t end);

}  // namespace mem
}  // namespace stripeback::testing
