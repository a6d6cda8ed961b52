#include "storage/storage.h"

namespace stripeback::storage {

namespace {
Counter make(std::string key, Counter::Kind kind, std::string unit) {
  Counter c;
  c.key = std::move(key);
  c.kind = kind;
  c.unit = std::move(unit);
  return c;
}
}  // namespace

CounterGroup& CounterGroup::num(std::string key, uint64_t v, std::string unit) {
  counters.push_back(make(std::move(key), Counter::Kind::number, std::move(unit)));
  counters.back().number = v;
  return *this;
}

CounterGroup& CounterGroup::real(std::string key, double v, std::string unit) {
  counters.push_back(make(std::move(key), Counter::Kind::real, std::move(unit)));
  counters.back().real = v;
  return *this;
}

CounterGroup& CounterGroup::text(std::string key, std::string v) {
  counters.push_back(make(std::move(key), Counter::Kind::text, ""));
  counters.back().text = std::move(v);
  return *this;
}

CounterGroup& CounterGroup::flag(std::string key, bool v) {
  counters.push_back(make(std::move(key), Counter::Kind::flag, ""));
  counters.back().number = v ? 1 : 0;
  return *this;
}

const Counter* CounterGroup::find(const std::string& key) const {
  for (const auto& c : counters)
    if (c.key == key) return &c;
  return nullptr;
}

Result<std::unique_ptr<WriteFile>> Directory::open_write(const std::string& name,
                                                        const OpenOptions&) {
  return Error{Errc::unsupported, 0,
               "updating a file in place is not supported on this storage ('" +
                   location().join(name).str() + "')"};
}

Result<FileInfo> WriteFile::stat() {
  return Error{Errc::unsupported, 0, "unable to stat '" + name() + "': not supported on this storage"};
}

Error Storage::unsupported(const char* op, const Location& at) const {
  return Error{Errc::unsupported, 0,
               std::string(op) + " is not supported on " + scheme() + " storage ('" + at.str() +
                   "')"};
}

Result<std::unique_ptr<WriteFile>> Storage::open_write(const Location& at, mode_t) {
  return unsupported("writing in place", at);
}
Result<std::unique_ptr<Directory>> Storage::open_dir(const Location& at, bool) {
  return unsupported("opening a directory", at);
}
Result<FileInfo> Storage::stat(const Location& at, bool) { return unsupported("stat", at); }
Result<std::vector<std::string>> Storage::list(const Location& dir) {
  return unsupported("listing", dir);
}
Result<void> Storage::remove(const Location& at) { return unsupported("removing", at); }
Result<void> Storage::rename(const Location& from, const Location&, bool) {
  return unsupported("renaming", from);
}
Result<void> Storage::set_attrs(const Location& at, const Attrs&) {
  return unsupported("setting attributes", at);
}
Result<void> Storage::make_dirs(const Location& at, mode_t) {
  return unsupported("creating directories", at);
}
Result<void> Storage::sync_dir(const Location& dir) { return unsupported("syncing a directory", dir); }
std::optional<CounterGroup> Storage::thread_counters(bool) { return std::nullopt; }

std::optional<std::string> Storage::pseudo_file_system(const Location&, const FileInfo&) {
  return std::nullopt;
}

Result<void> Storage::put(const Location& at, std::span<const std::byte>, const PutOptions&) {
  return unsupported("put", at);
}
Result<void> Storage::retention_available(const Location& dir) {
  return unsupported("locking objects (Object Lock)", dir);
}
Result<void> Storage::set_retention(const Location& at, const Retention&) {
  return unsupported("locking objects (Object Lock)", at);
}
Result<std::vector<std::string>> Storage::unfinished(const Location&) {
  return std::vector<std::string>{};
}
Result<void> Storage::abandon_unfinished(const Location&) { return ok(); }

const char* retention_mode_name(Retention::Mode m) {
  return m == Retention::Mode::governance ? "governance" : "compliance";
}

Result<void> write_file_atomic(Storage& st, const Location& at, std::span<const std::byte> data,
                               const AtomicWriteOptions& o) {
  const StorageCaps& caps = st.caps();
  if (caps.atomic_put) {
    if (o.before_replace) o.before_replace();
    return st.put(at, data, PutOptions{o.mode, o.retention});
  }
  if (o.retention) return st.set_retention(at, *o.retention);  // refused: no locks here
  if (!caps.rename)
    return Error{Errc::unsupported, 0,
                 "'" + at.str() + "' cannot be replaced whole on " + st.scheme() +
                     " storage (it has neither rename nor atomic put)"};
  const Location dir = at.parent();
  const Location tmp = dir.join("." + at.name() + ".tmp");
  (void)st.remove(tmp);  // of an earlier attempt killed half-way
  CreateOptions co;
  co.direct = false;
  co.mode = o.mode;
  SB_ASSIGN(auto out, st.create(tmp, co));
  auto written = [&]() -> Result<void> {
    SB_TRY(out->write_at(data.data(), data.size(), 0));
    SB_TRY(out->commit());
    SB_TRY(out->close());
    if (o.before_replace) o.before_replace();
    SB_TRY(st.rename(tmp, at, /*replace=*/true));
    if (caps.dir_sync) SB_TRY(st.sync_dir(dir));
    return ok();
  }();
  if (!written) {
    out->abandon();
    (void)st.remove(tmp);
  }
  return written;
}

}  // namespace stripeback::storage
