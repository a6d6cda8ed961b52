#include "backends/nfs/nfs_fs.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "backends/nfs/nfs_engine.h"
#include "backends/nfs/options.h"
#include "storage/async/engine_queue.h"
#include "storage/io_loop.h"
#include "storage/path_directory.h"

namespace stripeback::nfs {
namespace {

struct Handle {
  NfsUrl url;
  std::string mount, rel, name;
  bool write = false;
};

std::mutex g_mu;
std::map<int, Handle> g_handles;
int g_next_id = 1;
// Exports found so far, by server list and options: mount paths.
std::map<std::string, std::set<std::string>> g_mounts;
std::atomic<unsigned> g_thread_counter{0};

struct ThreadState {
  unsigned index = g_thread_counter.fetch_add(1);
  std::map<std::string, std::unique_ptr<Connection>> conns;
  ConnStats closed;
  std::set<std::string> servers;
};
thread_local ThreadState t_state;

std::string group_key(const NfsUrl& u) {
  std::string k;
  for (const auto& s : u.servers) k += s + ",";
  return k + "?" + u.query();
}

bool under(const std::string& path, const std::string& mount) {
  if (mount == "/") return true;
  return path == mount || (path.rfind(mount, 0) == 0 && path[mount.size()] == '/');
}

std::string rel_of(const std::string& path, const std::string& mount) {
  if (mount == "/") return path;
  std::string r = path.substr(mount.size());
  return r.empty() ? "/" : r;
}

const std::string& server_for(const NfsUrl& u) {
  return u.servers[t_state.index % u.servers.size()];
}

Connection& conn_for(const NfsUrl& u, const std::string& mount) {
  const std::string& server = server_for(u);
  std::string key = server + mount + "?" + u.query();
  auto& c = t_state.conns[key];
  if (!c) {
    c = std::make_unique<Connection>(u, server, mount);
    t_state.servers.insert(server);
  }
  return *c;
}

// Finds the export holding u.path: a known one, else the longest prefix the server mounts.
Result<std::string> find_mount(const NfsUrl& u, const std::string& shown) {
  const std::string gk = group_key(u);
  {
    std::lock_guard lock(g_mu);
    std::string best;
    bool found = false;
    for (const auto& m : g_mounts[gk])
      if (under(u.path, m) && (!found || m.size() > best.size())) {
        best = m;
        found = true;
      }
    if (found) return best;
  }
  std::optional<Error> first;
  for (std::string cand = u.path;; cand = parent_of(cand)) {
    Connection& c = conn_for(u, cand);
    auto r = c.connect();
    if (r) {
      std::lock_guard lock(g_mu);
      g_mounts[gk].insert(cand);
      return cand;
    }
    if (!first) first = r.error();
    // Only "no such export here" makes a parent worth trying.
    if (r.error().code == Errc::timed_out || cand == "/") break;
  }
  Error e = *first;
  e.what = "unable to reach '" + shown + "': " + e.what;
  if (e.code == Errc::io) e.code = Errc::not_found;
  return e;
}

struct Located {
  Connection* conn;
  std::string rel;
  NfsUrl url;
  std::string mount;
};

Result<Located> locate(const std::string& path) {
  SB_ASSIGN(NfsUrl u, parse_nfs_url(path));
  SB_ASSIGN(std::string mount, find_mount(u, path));
  Connection& c = conn_for(u, mount);
  return Located{&c, rel_of(u.path, mount), u, mount};
}

std::string q(const std::string& s) { return "'" + s + "'"; }

struct stat to_stat(const nfs_stat_64& s) {
  struct stat st {};
  st.st_mode = static_cast<mode_t>(s.nfs_mode);
  st.st_size = static_cast<off_t>(s.nfs_size);
  st.st_uid = static_cast<uid_t>(s.nfs_uid);
  st.st_gid = static_cast<gid_t>(s.nfs_gid);
  st.st_nlink = static_cast<nlink_t>(s.nfs_nlink);
  st.st_ino = static_cast<ino_t>(s.nfs_ino);
  st.st_mtim.tv_sec = static_cast<time_t>(s.nfs_mtime);
  st.st_mtim.tv_nsec = static_cast<long>(s.nfs_mtime_nsec);
  st.st_atim.tv_sec = static_cast<time_t>(s.nfs_atime);
  st.st_atim.tv_nsec = static_cast<long>(s.nfs_atime_nsec);
  st.st_ctim.tv_sec = static_cast<time_t>(s.nfs_ctime);
  st.st_ctim.tv_nsec = static_cast<long>(s.nfs_ctime_nsec);
  st.st_blksize = 1 << 20;
  return st;
}

int new_id(Handle h) {
  std::lock_guard lock(g_mu);
  int id = g_next_id++;
  g_handles.emplace(id, std::move(h));
  return id;
}

Result<Handle> handle_copy(int id) {
  std::lock_guard lock(g_mu);
  auto it = g_handles.find(id);
  if (it == g_handles.end())
    return fail(Errc::invalid_argument, "NFS file id " + std::to_string(id) + " is not open");
  return it->second;
}

class NfsFs {
 public:

  Result<int> open_read(const std::string& path) {
    SB_ASSIGN(Located l, locate(path));
    nfsfh* fh = nullptr;
    const std::string what = "unable to open " + q(path) + " for read";
    SB_TRY(l.conn->call(
        what,
        [&](nfs_context* c, nfs_cb cb, void* p) {
          return nfs_open_async(c, l.rel.c_str(), O_RDONLY, cb, p);
        },
        [&](int, void* data) { fh = static_cast<nfsfh*>(data); }));
    int id = new_id(Handle{l.url, l.mount, l.rel, path, false});
    l.conn->handles()[id] = fh;
    return id;
  }

  // Opens an existing regular file for writing in place (a link is refused, not followed).
  Result<int> open_write(const std::string& path) {
    SB_ASSIGN(struct stat st, stat(path));
    if (!S_ISREG(st.st_mode))
      return fail(Errc::invalid_argument, q(path) + " is not a regular file");
    SB_ASSIGN(Located l, locate(path));
    nfsfh* fh = nullptr;
    SB_TRY(l.conn->call(
        "unable to open " + q(path) + " for write",
        [&](nfs_context* c, nfs_cb cb, void* p) {
          return nfs_open_async(c, l.rel.c_str(), O_WRONLY | O_SYNC, cb, p);
        },
        [&](int, void* data) { fh = static_cast<nfsfh*>(data); }));
    int id = new_id(Handle{l.url, l.mount, l.rel, path, true});
    l.conn->handles()[id] = fh;
    return id;
  }

  Result<int> create_exclusive(const std::string& path, mode_t mode) {
    SB_ASSIGN(Located l, locate(path));
    nfsfh* fh = nullptr;
    const std::string what = "unable to create " + q(path);
    auto r = l.conn->call(
        what,
        [&](nfs_context* c, nfs_cb cb, void* p) {
          return nfs_create_async(c, l.rel.c_str(), O_WRONLY | O_EXCL | O_SYNC,
                                  static_cast<int>(mode), cb, p);
        },
        [&](int, void* data) { fh = static_cast<nfsfh*>(data); });
    if (!r) {
      // After a reconnect the retried CREATE can meet the file the first attempt made.
      if (r.error().sys_errno != EEXIST || l.conn->stats.retries == 0) return r.error();
      SB_ASSIGN(struct stat st, stat(path));
      if (!S_ISREG(st.st_mode) || st.st_size != 0) return r.error();
    }
    int id = new_id(Handle{l.url, l.mount, l.rel, path, true});
    if (fh != nullptr) l.conn->handles()[id] = fh;
    return id;
  }

  Result<struct stat> stat(const std::string& path) {
    SB_ASSIGN(Located l, locate(path));
    struct stat st {};
    SB_TRY(l.conn->call(
        "unable to stat " + q(path),
        [&](nfs_context* c, nfs_cb cb, void* p) {
          return nfs_lstat64_async(c, l.rel.c_str(), cb, p);
        },
        [&](int, void* data) { st = to_stat(*static_cast<nfs_stat_64*>(data)); }));
    return st;
  }

  Result<struct stat> fstat(int id) {
    SB_ASSIGN(Target t, target_of_id(id));
    struct stat st {};
    SB_TRY(t.conn->call(
        "unable to stat " + q(t.name),
        [&](nfs_context*, nfs_cb cb, void* p) {
          auto fh = handle_on(*t.conn, id);
          if (!fh) return -1;
          return nfs_fstat64_async(t.conn->ctx(), *fh, cb, p);
        },
        [&](int, void* data) { st = to_stat(*static_cast<nfs_stat_64*>(data)); }));
    return st;
  }

  Result<std::vector<std::string>> list_dir(const std::string& path) {
    SB_ASSIGN(Located l, locate(path));
    std::vector<std::string> names;
    SB_TRY(l.conn->call(
        "unable to list " + q(path),
        [&](nfs_context* c, nfs_cb cb, void* p) {
          names.clear();
          return nfs_opendir_async(c, l.rel.c_str(), cb, p);
        },
        [&](int, void* data) {
          auto* dir = static_cast<nfsdir*>(data);
          while (nfsdirent* e = nfs_readdir(l.conn->ctx(), dir)) {
            if (std::strcmp(e->name, ".") != 0 && std::strcmp(e->name, "..") != 0)
              names.emplace_back(e->name);
          }
          nfs_closedir(l.conn->ctx(), dir);
        }));
    return names;
  }

  Result<void> make_dirs(const std::string& path) {
    SB_ASSIGN(NfsUrl u, parse_nfs_url(path));
    // Below the export (or the deepest directory that mounts), parents first; an existing
    // directory is what we want.
    SB_ASSIGN(std::string mount, find_mount(u, path));
    std::vector<std::string> chain;
    for (std::string p = u.path; p != mount && p != "/"; p = parent_of(p)) chain.push_back(p);
    std::reverse(chain.begin(), chain.end());
    for (const auto& p : chain) {
      NfsUrl sub = u;
      sub.path = p;
      std::string name = sub.str();
      auto st = stat(name);
      if (st) {
        if (!S_ISDIR(st->st_mode))
          return Error{Errc::invalid_argument, ENOTDIR,
                       "unable to create directory " + q(name) + ": not a directory"};
        continue;
      }
      if (st.error().sys_errno != ENOENT) return st.error();
      SB_ASSIGN(Located l, locate(name));
      auto r = l.conn->call(
          "unable to create directory " + q(name),
          [&](nfs_context* c, nfs_cb cb, void* pr) {
            return nfs_mkdir2_async(c, l.rel.c_str(), 0755, cb, pr);
          },
          [](int, void*) {});
      if (!r && r.error().sys_errno != EEXIST) return r.error();
    }
    return ok();
  }

  Result<void> unlink(const std::string& path) {
    SB_ASSIGN(Located l, locate(path));
    auto r = l.conn->call(
        "unable to remove " + q(path),
        [&](nfs_context* c, nfs_cb cb, void* p) { return nfs_unlink_async(c, l.rel.c_str(), cb, p); },
        [](int, void*) {});
    if (!r && r.error().sys_errno == ENOENT && l.conn->stats.retries > 0) return ok();
    return r;
  }

  Result<void> rename(const std::string& from, const std::string& to) {
    SB_ASSIGN(Located a, locate(from));
    SB_ASSIGN(Located b, locate(to));
    if (a.conn != b.conn)
      return fail(Errc::invalid_argument,
                  "unable to rename " + q(from) + " to " + q(to) + ": different exports");
    return a.conn->call(
        "unable to rename " + q(from) + " to " + q(to),
        [&](nfs_context* c, nfs_cb cb, void* p) {
          return nfs_rename_async(c, a.rel.c_str(), b.rel.c_str(), cb, p);
        },
        [](int, void*) {});
  }

  Result<void> set_attributes(const std::string& path, bool set_owner, uid_t uid, gid_t gid,
                              mode_t mode, int64_t mtime_ns) {
    SB_ASSIGN(Located l, locate(path));
    if (set_owner) {
      SB_TRY(l.conn->call(
          "unable to set the owner of " + q(path),
          [&](nfs_context* c, nfs_cb cb, void* p) {
            return nfs_lchown_async(c, l.rel.c_str(), static_cast<int>(uid),
                                    static_cast<int>(gid), cb, p);
          },
          [](int, void*) {}));
    }
    SB_TRY(l.conn->call(
        "unable to set the mode of " + q(path),
        [&](nfs_context* c, nfs_cb cb, void* p) {
          return nfs_chmod_async(c, l.rel.c_str(), static_cast<int>(mode & 07777), cb, p);
        },
        [](int, void*) {}));
    // libnfs takes microseconds: the nanoseconds below them are lost.
    timeval tv[2];
    tv[0].tv_sec = tv[1].tv_sec = static_cast<time_t>(mtime_ns / 1000000000);
    tv[0].tv_usec = tv[1].tv_usec = static_cast<suseconds_t>((mtime_ns % 1000000000) / 1000);
    return l.conn->call(
        "unable to set the modification time of " + q(path),
        [&](nfs_context* c, nfs_cb cb, void* p) {
          return nfs_utimes_async(c, l.rel.c_str(), tv, cb, p);
        },
        [](int, void*) {});
  }

  Result<size_t> pread(int id, std::byte* buf, size_t len, uint64_t offset) {
    SB_ASSIGN(Target t, target_of_id(id));
    size_t done = 0;
    while (done < len) {
      size_t want = std::min<size_t>(len - done, t.conn->alive() ? t.conn->read_max() : 65536);
      if (want == 0) want = 65536;
      size_t got = 0;
      SB_TRY(t.conn->call(
          "unable to read " + q(t.name) + " at offset " + std::to_string(offset + done),
          [&](nfs_context*, nfs_cb cb, void* p) {
            auto fh = handle_on(*t.conn, id);
            if (!fh) return -1;
            return nfs_pread_async(t.conn->ctx(), *fh, offset + done, want, cb, p);
          },
          [&](int n, void* data) {
            got = std::min<size_t>(static_cast<size_t>(n), want);
            std::memcpy(buf + done, data, got);
          }));
      t.conn->stats.bytes_read += got;
      done += got;
      if (got < want) break;
    }
    return done;
  }

  Result<void> pwrite_all(int id, const std::byte* buf, size_t len, uint64_t off) {
    SB_ASSIGN(Target t, target_of_id(id));
    size_t done = 0;
    while (done < len) {
      size_t want = std::min<size_t>(len - done, t.conn->alive() ? t.conn->write_max() : 65536);
      if (want == 0) want = 65536;
      size_t put = 0;
      SB_TRY(t.conn->call(
          "unable to write " + q(t.name) + " at offset " + std::to_string(off + done),
          [&](nfs_context*, nfs_cb cb, void* p) {
            auto fh = handle_on(*t.conn, id);
            if (!fh) return -1;
            return nfs_pwrite_async(t.conn->ctx(), *fh, off + done, want, buf + done, cb, p);
          },
          [&](int n, void*) { put = static_cast<size_t>(n); }));
      if (put == 0)
        return fail(Errc::io, "unable to write " + q(t.name) + ": the server wrote nothing");
      t.conn->stats.bytes_written += put;
      done += put;
    }
    return ok();
  }

  // Writes are FILE_SYNC, so a COMMIT adds nothing but it is cheap and covers any server
  // that answered a stable write as unstable.
  Result<void> sync(int id) {
    SB_ASSIGN(Target t, target_of_id(id));
    return t.conn->call(
        "unable to sync " + q(t.name),
        [&](nfs_context*, nfs_cb cb, void* p) {
          auto fh = handle_on(*t.conn, id);
          if (!fh) return -1;
          return nfs_fsync_async(t.conn->ctx(), *fh, cb, p);
        },
        [](int, void*) {});
  }

  Result<void> truncate(int id, uint64_t size) {
    SB_ASSIGN(Target t, target_of_id(id));
    return t.conn->call(
        "unable to trim " + q(t.name),
        [&](nfs_context*, nfs_cb cb, void* p) {
          auto fh = handle_on(*t.conn, id);
          if (!fh) return -1;
          return nfs_ftruncate_async(t.conn->ctx(), *fh, size, cb, p);
        },
        [](int, void*) {});
  }

  void close(int id) {
    {
      std::lock_guard lock(g_mu);
      g_handles.erase(id);
    }
    // NFSv3 has no CLOSE: the handle is freed locally, on this thread's connections; other
    // threads' copies go with their contexts.
    for (auto& [key, c] : t_state.conns) {
      auto it = c->handles().find(id);
      if (it == c->handles().end()) continue;
      if (c->ctx() != nullptr) nfs_close_async(c->ctx(), it->second, [](int, nfs_context*, void*, void*) {}, nullptr);
      c->handles().erase(it);
    }
  }

  std::string name_of(int id) {
    auto h = handle_copy(id);
    return h ? h->name : "NFS file id " + std::to_string(id);
  }


  // The calling thread's counters (its connections, open and closed).
  std::optional<storage::CounterGroup> thread_counters() {
    if (t_state.servers.empty()) return std::nullopt;
    ConnStats s = t_state.closed;
    uint32_t max_read = 0, max_write = 0;
    for (auto& [key, c] : t_state.conns) {
      s.add(c->stats);
      max_read = std::max(max_read, c->read_max());
      max_write = std::max(max_write, c->write_max());
    }
    std::string servers;
    for (const auto& sv : t_state.servers) servers += (servers.empty() ? "" : ",") + sv;
    storage::CounterGroup g;
    g.name = "nfs";
    g.text("servers", servers)
        .num("rpcs", s.rpcs)
        .num("bytes_read", s.bytes_read, "bytes")
        .num("bytes_written", s.bytes_written, "bytes")
        .num("retries", s.retries)
        .num("reconnects", s.reconnects)
        .num("commits", s.commits)
        .num("rewritten_bytes", s.rewritten, "bytes")
        .real("avg_latency_ms",
              s.rpcs ? 1000.0 * s.latency_sum_s / static_cast<double>(s.rpcs) : 0, "ms")
        .real("max_latency_ms", 1000.0 * s.latency_max_s, "ms")
        .num("read_size", max_read, "bytes")
        .num("write_size", max_write, "bytes");
    return g;
  }

  void close_thread() { t_state.conns.clear(); }
};


storage::FileInfo info_of(const struct stat& st) {
  storage::FileInfo i;
  i.size = static_cast<uint64_t>(st.st_size);
  i.mode = st.st_mode;
  i.uid = st.st_uid;
  i.gid = st.st_gid;
  i.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  i.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  i.ino = static_cast<uint64_t>(st.st_ino);
  i.nlink = static_cast<uint32_t>(st.st_nlink);
  return i;
}

NfsFs& fs() {
  static NfsFs f;
  return f;
}

const char kQueueKey = 0;

// Queues `r` on the thread's NFS engine (its connections); the requests of a loop between
// two reaps go out together.
Result<void> submit_on(storage::IoLoop& loop, int id, const storage::Request& r) {
  loop.queue<io::EngineQueue>(&kQueueKey, [] {
        return std::make_unique<io::EngineQueue>(make_nfs_engine(), "nfs", /*can_wake=*/true,
                                                 std::vector<std::pair<std::byte*, size_t>>{});
      }).add(id, r);
  return ok();
}

class NfsReadFile final : public storage::ReadFile {
 public:
  NfsReadFile(int id, std::string name) : id_(id), name_(std::move(name)) {}
  ~NfsReadFile() override { fs().close(id_); }
  const std::string& name() const override { return name_; }
  Result<void> submit(storage::IoLoop& loop, const storage::Request& r) override {
    return submit_on(loop, id_, r);
  }
  Result<storage::FileInfo> stat() override {
    SB_ASSIGN(struct stat st, fs().fstat(id_));
    return info_of(st);
  }
  Result<size_t> read_at(std::byte* buf, size_t len, uint64_t off) override {
    return fs().pread(id_, buf, len, off);
  }

 private:
  int id_;
  std::string name_;
};

class NfsWriteFile final : public storage::WriteFile {
 public:
  NfsWriteFile(int id, std::string name) : id_(id), name_(std::move(name)) {}
  ~NfsWriteFile() override { fs().close(id_); }
  const std::string& name() const override { return name_; }
  Result<void> submit(storage::IoLoop& loop, const storage::Request& r) override {
    return submit_on(loop, id_, r);
  }
  Result<void> write_at(const std::byte* buf, size_t len, uint64_t off) override {
    return fs().pwrite_all(id_, buf, len, off);
  }
  Result<storage::FileInfo> stat() override {
    SB_ASSIGN(struct stat st, fs().fstat(id_));
    return info_of(st);
  }
  Result<void> preallocate(uint64_t, uint64_t) override { return ok(); }  // NFSv3: no ALLOCATE
  Result<void> truncate(uint64_t size) override { return fs().truncate(id_, size); }
  Result<void> commit() override { return fs().sync(id_); }
  Result<void> set_attrs(const storage::Attrs& a) override {
    return fs().set_attributes(name_, a.set_owner, a.uid, a.gid, static_cast<mode_t>(a.mode),
                               a.mtime_ns);
  }
  Result<void> close() override { return ok(); }
  void abandon() override {}

 private:
  int id_;
  std::string name_;
};

class NfsStorage final : public storage::Storage {
 public:
  NfsStorage() {
    caps_.preallocate = false;
    caps_.dir_sync = false;  // NFSv3 servers commit CREATE, REMOVE and RENAME before replying
  }
  const char* scheme() const override { return "nfs"; }
  const storage::StorageCaps& caps() const override { return caps_; }

  Result<std::unique_ptr<storage::ReadFile>> open_read(const storage::Location& at,
                                                       const storage::OpenOptions&) override {
    std::string url = at.str();
    SB_ASSIGN(int id, fs().open_read(url));
    return std::unique_ptr<storage::ReadFile>(std::make_unique<NfsReadFile>(id, url));
  }
  Result<std::unique_ptr<storage::WriteFile>> create(const storage::Location& at,
                                                     const storage::CreateOptions& o) override {
    std::string url = at.str();
    SB_ASSIGN(int id, fs().create_exclusive(url, o.mode));
    return std::unique_ptr<storage::WriteFile>(std::make_unique<NfsWriteFile>(id, url));
  }
  // In place: the existing file, else a new one.
  Result<std::unique_ptr<storage::WriteFile>> open_write(const storage::Location& at,
                                                         mode_t mode) override {
    std::string url = at.str();
    auto id = fs().open_write(url);
    if (!id && id.error().code == Errc::not_found) id = fs().create_exclusive(url, mode);
    if (!id) return id.error();
    return std::unique_ptr<storage::WriteFile>(std::make_unique<NfsWriteFile>(*id, url));
  }
  Result<std::unique_ptr<storage::Directory>> open_dir(const storage::Location& at,
                                                       bool create) override {
    if (create) SB_TRY(fs().make_dirs(at.str()));
    SB_ASSIGN(struct stat st, fs().stat(at.str()));
    if (!S_ISDIR(st.st_mode))
      return fail(Errc::invalid_argument, "'" + at.str() + "' is not a directory");
    return storage::make_path_directory(*this, at);
  }
  Result<storage::FileInfo> stat(const storage::Location& at, bool) override {
    SB_ASSIGN(struct stat st, fs().stat(at.str()));
    return info_of(st);
  }
  Result<std::vector<std::string>> list(const storage::Location& dir) override {
    return fs().list_dir(dir.str());
  }
  Result<void> remove(const storage::Location& at) override { return fs().unlink(at.str()); }
  Result<void> rename(const storage::Location& from, const storage::Location& to,
                      bool replace) override {
    if (!replace && fs().stat(to.str()))
      return Error{Errc::exists, EEXIST, "'" + to.str() + "' exists"};
    return fs().rename(from.str(), to.str());
  }
  Result<void> set_attrs(const storage::Location& at, const storage::Attrs& a) override {
    return fs().set_attributes(at.str(), a.set_owner, a.uid, a.gid, static_cast<mode_t>(a.mode),
                               a.mtime_ns);
  }
  Result<void> make_dirs(const storage::Location& at, mode_t) override {
    return fs().make_dirs(at.str());
  }
  Result<void> sync_dir(const storage::Location&) override { return ok(); }
  std::optional<storage::CounterGroup> thread_counters(bool close_thread) override {
    auto g = fs().thread_counters();
    if (close_thread) fs().close_thread();
    return g;
  }

 private:
  storage::StorageCaps caps_;
};

}  // namespace

ConnStats& thread_closed_stats() { return t_state.closed; }

storage::Storage& nfs_storage() {
  static NfsStorage s;
  return s;
}

Result<Target> target_of_id(int id) {
  SB_ASSIGN(Handle h, handle_copy(id));
  Connection& c = conn_for(h.url, h.mount);
  return Target{&c, h.rel, h.name, h.write};
}

Result<nfsfh*> handle_on(Connection& conn, int id) {
  auto it = conn.handles().find(id);
  if (it != conn.handles().end() && conn.alive()) return it->second;
  SB_ASSIGN(Handle h, handle_copy(id));
  nfsfh* fh = nullptr;
  // O_SYNC: pwrite() sends FILE_SYNC WRITEs (the engine sends its own, see nfs_engine.h).
  int flags = h.write ? (O_WRONLY | O_SYNC) : O_RDONLY;
  SB_TRY(conn.call(
      "unable to open " + q(h.name),
      [&](nfs_context* c, nfs_cb cb, void* p) { return nfs_open_async(c, h.rel.c_str(), flags, cb, p); },
      [&](int, void* data) { fh = static_cast<nfsfh*>(data); }));
  conn.handles()[id] = fh;
  return fh;
}


}  // namespace stripeback::nfs
