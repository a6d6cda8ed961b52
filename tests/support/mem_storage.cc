// See mem_storage.h.
#include "tests/support/mem_storage.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "tests/support/mem_state.h"

namespace stripeback::testing {

using mem::apply_attrs;
using mem::below;
using mem::clean;
using mem::info_of;
using mem::Inode;
using mem::now_ns;
using mem::parent_of;
using mem::quoted;
using storage::FileInfo;
using storage::Location;

MemStorage::MemStorage() : MemStorage(Options{}) {}
MemStorage::MemStorage(const storage::StorageCaps& caps)
    : MemStorage(Options{caps, false, "mem"}) {}
MemStorage::MemStorage(Options o) : s_(std::make_shared<State>(std::move(o))) {}
MemStorage::~MemStorage() = default;

Location MemStorage::at(const std::string& path) const {
  Location l;
  l.scheme = s_->o.scheme;
  l.path = clean(path);
  return l;
}

void MemStorage::write_file(const std::string& path, std::string_view bytes, uint32_t mode) {
  const std::string p = clean(path);
  std::lock_guard lock(s_->mu);
  (void)s_->make_dirs(parent_of(p), 0755, p);
  auto n = s_->new_inode(false, mode);
  n->data.assign(bytes);
  s_->names[p] = std::move(n);
}

bool MemStorage::overwrite(const std::string& path, uint64_t offset, std::string_view bytes) {
  std::lock_guard lock(s_->mu);
  auto n = s_->find(clean(path));
  if (!n || n->dir) return false;
  if (n->data.size() < offset + bytes.size()) n->data.resize(offset + bytes.size(), '\0');
  std::memcpy(n->data.data() + offset, bytes.data(), bytes.size());
  n->mtime_ns = n->ctime_ns = now_ns();
  return true;
}

void MemStorage::make_dir(const std::string& path) {
  const std::string p = clean(path);
  std::lock_guard lock(s_->mu);
  (void)s_->make_dirs(p, 0755, p);
}

std::optional<std::string> MemStorage::contents(const std::string& path) const {
  std::lock_guard lock(s_->mu);
  auto n = s_->find(clean(path));
  if (!n || n->dir) return std::nullopt;
  return n->data;
}

bool MemStorage::exists(const std::string& path) const {
  std::lock_guard lock(s_->mu);
  return s_->find(clean(path)) != nullptr;
}

bool MemStorage::is_dir(const std::string& path) const {
  std::lock_guard lock(s_->mu);
  auto n = s_->find(clean(path));
  return n && n->dir;
}

std::vector<std::string> MemStorage::names(const std::string& dir) const {
  const std::string d = clean(dir);
  std::lock_guard lock(s_->mu);
  std::vector<std::string> out;
  const size_t skip = d == "/" ? 1 : d.size() + 1;
  for (const auto& [p, n] : s_->names)
    if (below(p, d) && p.find('/', skip) == std::string::npos) out.push_back(p.substr(skip));
  return out;
}

std::vector<std::string> MemStorage::files(const std::string& dir) const {
  const std::string d = clean(dir);
  std::lock_guard lock(s_->mu);
  std::vector<std::string> out;
  for (const auto& [p, n] : s_->names)
    if (!n->dir && below(p, d)) out.push_back(p);
  return out;
}

uint64_t MemStorage::bytes_written_to(const std::string& path) const {
  std::lock_guard lock(s_->mu);
  auto n = s_->find(clean(path));
  return n ? n->written : 0;
}

std::vector<std::string> MemStorage::unsynced() const {
  std::lock_guard lock(s_->mu);
  std::vector<std::string> out;
  for (const auto& [p, n] : s_->names)
    if (!n->dir && n->dirty) out.push_back(p);
  return out;
}

MemStorage::Counts MemStorage::counts() const {
  std::lock_guard lock(s_->mu);
  return s_->counts;
}

void MemStorage::reset_counts() {
  std::lock_guard lock(s_->mu);
  s_->counts = Counts{};
  for (auto& [p, n] : s_->names) n->written = 0;
}

const char* MemStorage::scheme() const { return s_->o.scheme.c_str(); }
const storage::StorageCaps& MemStorage::caps() const { return s_->o.caps; }

Result<std::unique_ptr<storage::ReadFile>> MemStorage::open_read(const Location& at,
                                                                 const storage::OpenOptions& o) {
  const std::string p = clean(at.path);
  std::lock_guard lock(s_->mu);
  auto n = s_->find(p);
  const std::string what = "unable to open " + quoted(at.str()) + " for read";
  if (!n) return sys_error(ENOENT, what);
  if (n->dir) return sys_error(EISDIR, what);
  ++s_->counts.opens;
  return mem::make_read_file(s_, n, at.str(), o.direct);
}

Result<std::unique_ptr<storage::WriteFile>> MemStorage::create(const Location& at,
                                                               const storage::CreateOptions& o) {
  const std::string p = clean(at.path);
  const std::string what = "unable to create " + quoted(at.str());
  std::lock_guard lock(s_->mu);
  if (s_->find(p)) return sys_error(EEXIST, what);
  SB_TRY(s_->parent_exists(p, what));
  auto n = s_->new_inode(false, S_IFREG | (o.mode & 07777));
  s_->names[p] = n;
  ++s_->counts.creates;
  return mem::make_write_file(s_, n, at.str(), o.direct, 0);
}

Result<std::unique_ptr<storage::WriteFile>> MemStorage::open_write(const Location& at,
                                                                   mode_t mode) {
  return open_in_place(at, mode, /*must_exist=*/false, /*direct=*/false);
}

Result<std::unique_ptr<storage::WriteFile>> MemStorage::open_in_place(const Location& at,
                                                                      mode_t mode, bool must_exist,
                                                                      bool direct) {
  if (!s_->o.caps.random_write || !s_->o.caps.append) return unsupported("writing in place", at);
  const std::string p = clean(at.path);
  const std::string what = "unable to open " + quoted(at.str()) + " for write";
  std::lock_guard lock(s_->mu);
  auto n = s_->find(p);
  if (n && n->dir) return sys_error(EISDIR, what);
  if (!n) {
    if (must_exist) return sys_error(ENOENT, what);
    SB_TRY(s_->parent_exists(p, what));
    n = s_->new_inode(false, S_IFREG | (mode & 07777));
    s_->names[p] = n;
  }
  ++s_->counts.opens;
  return mem::make_write_file(s_, n, at.str(), direct, n->data.size());
}

namespace {

// A directory of a MemStorage: its calls are the storage's on the joined location, except
// that a subdirectory must be a directory, and a file opened in place must exist and may
// use direct I/O (as a local directory's would).
class MemDirectory final : public storage::Directory {
 public:
  MemDirectory(MemStorage& st, Location at) : st_(st), at_(std::move(at)) {}
  const Location& location() const override { return at_; }

  Result<std::unique_ptr<storage::Directory>> open_dir(const std::string& name, bool create,
                                                       mode_t mode) override {
    const Location sub = at_.join(name);
    auto info = st_.stat(sub, false);
    if (info && !S_ISDIR(info->mode))
      return fail(Errc::invalid_argument, quoted(sub.str()) + " is not a directory (a file)");
    if (!info) {
      if (info.error().code != Errc::not_found || !create) return info.error();
      SB_TRY(st_.make_dirs(sub, mode));
    }
    return std::unique_ptr<storage::Directory>(std::make_unique<MemDirectory>(st_, sub));
  }
  Result<std::unique_ptr<storage::WriteFile>> create(const std::string& name,
                                                     const storage::CreateOptions& o) override {
    return st_.create(at_.join(name), o);
  }
  Result<std::unique_ptr<storage::ReadFile>> open(const std::string& name,
                                                  const storage::OpenOptions& o) override {
    return st_.open_read(at_.join(name), o);
  }
  Result<std::unique_ptr<storage::WriteFile>> open_write(const std::string& name,
                                                         const storage::OpenOptions& o) override {
    return st_.open_in_place(at_.join(name), 0600, /*must_exist=*/true, o.direct);
  }
  Result<FileInfo> stat(const std::string& name) override {
    return st_.stat(at_.join(name), false);
  }
  Result<std::vector<std::string>> list() override { return st_.list(at_); }
  Result<void> remove(const std::string& name) override { return st_.remove(at_.join(name)); }
  Result<void> rename(const std::string& from, const std::string& to, bool replace) override {
    return st_.rename(at_.join(from), at_.join(to), replace);
  }
  Result<void> set_attrs(const storage::Attrs& a) override { return st_.set_attrs(at_, a); }
  Result<void> sync() override { return st_.sync_dir(at_); }

 private:
  MemStorage& st_;
  Location at_;
};

}  // namespace

Result<std::unique_ptr<storage::Directory>> MemStorage::open_dir(const Location& at, bool create) {
  if (!s_->o.caps.directories) return unsupported("opening a directory", at);
  if (create) SB_TRY(make_dirs(at, 0755));
  SB_ASSIGN(FileInfo info, stat(at, true));
  if (!S_ISDIR(info.mode))
    return sys_error(ENOTDIR, "unable to open directory " + quoted(at.str()));
  return std::unique_ptr<storage::Directory>(std::make_unique<MemDirectory>(*this, at));
}

Result<FileInfo> MemStorage::stat(const Location& at, bool) {
  std::lock_guard lock(s_->mu);
  auto n = s_->find(clean(at.path));
  if (!n) return sys_error(ENOENT, "unable to stat " + quoted(at.str()));
  return info_of(*n);
}

Result<std::vector<std::string>> MemStorage::list(const Location& dir) {
  if (!s_->o.caps.directories) return unsupported("listing", dir);
  {
    std::lock_guard lock(s_->mu);
    auto n = s_->find(clean(dir.path));
    if (!n) return sys_error(ENOENT, "unable to list " + quoted(dir.str()));
    if (!n->dir) return sys_error(ENOTDIR, "unable to list " + quoted(dir.str()));
  }
  return names(dir.path);
}

Result<void> MemStorage::remove(const Location& at) {
  if (!s_->o.caps.directories) return Storage::remove(at);
  const std::string p = clean(at.path);
  std::lock_guard lock(s_->mu);
  auto n = s_->find(p);
  const std::string what = "unable to remove " + quoted(at.str());
  if (!n) return sys_error(ENOENT, what);
  if (n->dir) return sys_error(EISDIR, what);
  s_->names.erase(p);
  ++s_->counts.removes;
  return ok();
}

Result<void> MemStorage::rename(const Location& from, const Location& to, bool replace) {
  if (!s_->o.caps.directories || !s_->o.caps.rename) return Storage::rename(from, to, replace);
  const std::string a = clean(from.path), b = clean(to.path);
  const std::string what = "unable to rename " + quoted(from.str()) + " to " + quoted(to.str());
  std::lock_guard lock(s_->mu);
  auto n = s_->find(a);
  if (!n) return sys_error(ENOENT, what);
  SB_TRY(s_->parent_exists(b, what));
  if (a == b) return ok();
  if (below(b, a)) return sys_error(EINVAL, what);
  if (auto old = s_->find(b)) {
    if (!replace) return Error{Errc::exists, EEXIST, quoted(to.str()) + " exists"};
    if (old->dir || n->dir) return sys_error(EISDIR, what);
  }
  ++s_->counts.renames;
  n->ctime_ns = now_ns();
  if (n->dir) {
    // The names below the directory move with it.
    std::vector<std::pair<std::string, std::shared_ptr<Inode>>> moved;
    for (auto it = s_->names.begin(); it != s_->names.end();) {
      if (below(it->first, a)) {
        moved.emplace_back(b + it->first.substr(a.size()), it->second);
        it = s_->names.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [p, node] : moved) s_->names[p] = std::move(node);
  }
  s_->names.erase(a);
  s_->names[b] = std::move(n);
  return ok();
}

Result<void> MemStorage::set_attrs(const Location& at, const storage::Attrs& a) {
  std::lock_guard lock(s_->mu);
  auto n = s_->find(clean(at.path));
  if (!n) return sys_error(ENOENT, "unable to set the attributes of " + quoted(at.str()));
  ++s_->counts.set_attrs;
  apply_attrs(*n, a);
  return ok();
}

Result<void> MemStorage::make_dirs(const Location& at, mode_t mode) {
  if (!s_->o.caps.directories) return Storage::make_dirs(at, mode);
  std::lock_guard lock(s_->mu);
  return s_->make_dirs(clean(at.path), mode, at.str());
}

Result<void> MemStorage::put(const Location& at, std::span<const std::byte> data,
                             const storage::PutOptions& o) {
  if (!s_->o.caps.atomic_put) return Storage::put(at, data, o);
  const mode_t mode = o.mode;
  const std::string p = clean(at.path);
  const std::string what = "unable to put " + quoted(at.str());
  std::lock_guard lock(s_->mu);
  if (auto old = s_->find(p); old && old->dir) return sys_error(EISDIR, what);
  SB_TRY(s_->parent_exists(p, what));
  auto n = s_->new_inode(false, S_IFREG | (mode & 07777));
  n->data.assign(reinterpret_cast<const char*>(data.data()), data.size());
  n->written = data.size();
  s_->names[p] = std::move(n);
  ++s_->counts.puts;
  s_->counts.write_bytes += data.size();
  return ok();
}

Result<void> MemStorage::sync_dir(const Location& dir) {
  if (!s_->o.caps.directories) return Storage::sync_dir(dir);
  std::lock_guard lock(s_->mu);
  auto n = s_->find(clean(dir.path));
  if (!n || !n->dir)
    return sys_error(n ? ENOTDIR : ENOENT, "unable to sync directory " + quoted(dir.str()));
  ++s_->counts.dir_syncs;
  return ok();
}

std::optional<storage::CounterGroup> MemStorage::thread_counters(bool close_thread) {
  auto t = mem::take_thread_counts(s_->id, close_thread);
  if (!t) return std::nullopt;
  storage::CounterGroup g;
  g.name = s_->o.scheme;
  g.num("reads", t->reads)
      .num("read_bytes", t->read_bytes, "bytes")
      .num("writes", t->writes)
      .num("write_bytes", t->write_bytes, "bytes")
      .num("syncs", t->syncs);
  return g;
}

SchemeScope::SchemeScope(
    std::initializer_list<std::pair<std::string, std::shared_ptr<storage::Storage>>> s)
    : scoped_(make(s)) {}

std::shared_ptr<const storage::Registry> SchemeScope::make(
    std::initializer_list<std::pair<std::string, std::shared_ptr<storage::Storage>>> s) {
  auto r = std::make_shared<storage::Registry>();
  for (const auto& [scheme, st] : s) r->add(scheme, st);
  return r;
}

}  // namespace stripeback::testing
