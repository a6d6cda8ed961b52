#include "database/wal_archive.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <span>
#include <utility>

#include "database/wal_names.h"
#include "database/wal_object.h"
#include "engine/transform/compress.h"
#include "engine/transform/page_check.h"
#include "engine/wiring/backends.h"
#include "util/bytes.h"
#include "util/clock.h"

namespace stripeback::database {
namespace {

namespace fs = std::filesystem;

// PostgreSQL's long page header (the first page of a segment): xlp_magic u16, xlp_info u16,
// xlp_tli u32, xlp_pageaddr u64, xlp_rem_len u32 and padding, then xlp_sysid u64.
constexpr size_t kSysidAt = 24;
constexpr uint16_t kLongHeaderBit = 0x0002;  // XLP_LONG_HEADER in xlp_info
constexpr uint64_t kMaxFile = uint64_t{1} << 30;  // the largest WAL segment PostgreSQL makes

// A local file's bytes, mapped read-only: no buffer to clear and fill, no copy out of the
// page cache (a 16 MiB segment read into a fresh vector cost more than compressing it).
class LocalBytes {
 public:
  LocalBytes() = default;
  LocalBytes(void* map, size_t size) : map_(map), size_(size) {}
  LocalBytes(LocalBytes&& o) noexcept : map_(std::exchange(o.map_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  LocalBytes& operator=(LocalBytes&&) = delete;
  ~LocalBytes() {
    if (map_) ::munmap(map_, size_);
  }
  std::span<const std::byte> span() const { return {static_cast<const std::byte*>(map_), size_}; }

 private:
  void* map_ = nullptr;
  size_t size_ = 0;
};

Result<LocalBytes> read_local(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sys_error(errno, "unable to open '" + path + "' for read");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error(errno, "unable to stat '" + path + "'");
  if (!S_ISREG(st.st_mode)) return fail(Errc::invalid_argument, "'" + path + "' is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > kMaxFile)
    return fail(Errc::invalid_argument, "'" + path + "' is larger than any WAL segment");
  if (st.st_size == 0) return LocalBytes{};
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (map == MAP_FAILED) return sys_error(errno, "unable to read '" + path + "'");
  // PostgreSQL does not change a file it has handed to archive_command; one that shrinks
  // under the map would fault, so its size is checked again once mapped.
  struct stat again {};
  if (::fstat(fd, &again) != 0 || again.st_size != st.st_size) {
    ::munmap(map, size);
    return fail(Errc::io, "'" + path + "' changed size while it was read");
  }
  return LocalBytes(map, size);
}

Result<std::vector<std::byte>> read_object(const storage::Location& at, storage::Storage& st) {
  SB_ASSIGN(auto in, st.open_read(at, {false}));
  SB_ASSIGN(storage::FileInfo info, in->stat());
  if (info.size > kMaxFile + (uint64_t{1} << 20))
    return fail(Errc::corrupt, "archived WAL file '" + at.str() + "' is too large to be one");
  std::vector<std::byte> buf(info.size);
  size_t got = 0;
  while (got < buf.size()) {
    SB_ASSIGN(size_t n, in->read_at(buf.data() + got, buf.size() - got, got));
    if (n == 0) return fail(Errc::corrupt, "archived WAL file '" + at.str() + "' is cut short");
    got += n;
  }
  return buf;
}

std::string hex16(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// The 16 hex digits of a segment's number (its name after the timeline), or empty.
std::string segment_digits(const std::string& name) {
  return name.size() >= 24 ? name.substr(8, 16) : std::string();
}

}  // namespace

Result<ArchiveConfig> archive_config(const catalog::Catalog& cat, const std::string& catalog_dir) {
  ArchiveConfig c;
  c.destination = cat.setting("destination").value_or("");
  if (auto comp = cat.setting("compression")) {
    auto level = engine::parse_compress(*comp);
    if (!level) return level.error().wrap("setting 'compression' of the catalog");
    // The archive has no channel to adapt to: auto stores at the cheapest level that
    // compresses.
    c.level = *level == engine::kCompressAuto ? 1 : *level;
  }
  if (auto k = cat.setting("key-file")) c.keys.key_file = *k;
  else if (auto p = cat.setting("passphrase-file")) c.keys.passphrase_file = *p;
  else if (auto e = cat.setting("passphrase-env")) c.keys.passphrase_env = *e;
  if (auto a = cat.setting("archive-async")) c.async = *a == "on";
  c.spool = cat.setting("archive-spool-path").value_or(catalog_dir + "/archive-spool");
  if (auto n = cat.setting("archive-parallel")) {
    const unsigned long v = n->find_first_not_of("0123456789") == std::string::npos &&
                                    !n->empty() && n->size() <= 2
                                ? std::stoul(*n)
                                : 0;
    if (v < 1 || v > 64)
      return fail(Errc::invalid_argument,
                  "setting 'archive-parallel' of the catalog: '" + *n + "' is not 1 to 64");
    c.parallel = static_cast<uint32_t>(v);
  }
  return c;
}

uint64_t system_id_for(const std::string& wal_path, std::span<const std::byte> bytes) {
  std::error_code ec;
  const fs::path dir = fs::absolute(fs::path(wal_path), ec).parent_path();
  for (const fs::path& data : {dir.parent_path(), fs::current_path(ec)}) {
    if (data.empty() || !fs::exists(data / "global" / "pg_control", ec)) continue;
    if (auto c = engine::read_pg_control(data.string()); c && c->system_id != 0)
      return c->system_id;
  }
  if (bytes.size() >= kSysidAt + 8) {
    const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
    if ((util::get_le16(b + 2) & kLongHeaderBit) != 0) return util::get_le64(b + kSysidAt);
  }
  return 0;
}

std::string wal_object_location(const std::string& destination, uint64_t system_id,
                                const std::string& name) {
  std::string d = destination;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d + "/wal/" + hex16(system_id) + "/" + name;
}

Result<PushResult> push_wal(catalog::Catalog& cat, const ArchiveConfig& cfg,
                            engine::Keyring* keys, const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  if (wal_kind(name) == WalKind::other)
    return fail(Errc::invalid_argument,
                "'" + name + "' is not a WAL segment, partial segment, timeline history or "
                             "backup history file");
  if (cfg.destination.empty())
    return fail(Errc::invalid_argument,
                "the catalog has no destination for the log archive (configure destination "
                "DIR|URL)");
  if (engine::is_media_drive(cfg.destination))
    return fail(Errc::invalid_argument, "the destination '" + cfg.destination +
                                            "' is a drive of removable media, which cannot "
                                            "hold the log archive: configure a directory or URL");
  SB_ASSIGN(LocalBytes mapped, read_local(path));
  const std::span<const std::byte> bytes = mapped.span();
  PushResult out;
  catalog::WalFile& w = out.file;
  w.name = name;
  w.size = bytes.size();
  w.digest = util::digest(bytes.data(), bytes.size());
  // A file archived before is not written again; other bytes under its name are refused
  // (the archive keeps the first).
  (void)cat.refresh();
  if (auto old = cat.wal_file(name)) {
    if (old->size == w.size && old->digest == w.digest) {
      out.file = *old;
      out.already = true;
      return out;
    }
    return fail(Errc::exists, "WAL file '" + name + "' is archived already with other bytes: "
                                  "archived digest " + util::to_hex(old->digest) + ", " +
                                  std::to_string(old->size) + " bytes; this one " +
                                  util::to_hex(w.digest) + ", " + std::to_string(w.size) +
                                  " bytes; the archived file is kept");
  }
  w.system_id = system_id_for(path, bytes);
  WalObjectInfo info;
  SB_ASSIGN(std::vector<std::byte> object, encode_wal_object(name, bytes, cfg.level, keys, &info, &w.digest));
  w.flags = info.flags;
  w.stored_size = object.size();
  const std::string where = wal_object_location(cfg.destination, w.system_id, name);
  auto stored = [&]() -> Result<void> {
    SB_ASSIGN(engine::Place p, engine::place_of(where));
    if (auto r = p.storage->make_dirs(p.at.parent(), 0755); !r && r.error().code != Errc::unsupported)
      return r.error();
    return storage::write_file_atomic(*p.storage, p.at, object);
  }();
  if (!stored) return stored.error().wrap("unable to archive WAL file '" + name + "' to '" + where + "'");
  w.stored_at = where;
  w.time_ns = util::wall_now_ns();
  SB_ASSIGN(bool added, cat.add_wal(w));
  out.already = !added;
  return out;
}

Result<std::vector<std::byte>> fetch_wal(const catalog::Catalog& cat, engine::Keyring* keys,
                                         const std::string& name) {
  auto rec = cat.wal_file(name);
  if (!rec) return fail(Errc::not_found, "WAL file '" + name + "' is not in the archive");
  SB_ASSIGN(engine::Place p, engine::place_of(rec->stored_at));
  auto object = read_object(p.at, *p.storage);
  if (!object) return object.error().wrap("unable to read archived WAL file '" + name + "'");
  SB_ASSIGN(std::vector<std::byte> raw, decode_wal_object(name, *object, keys, rec->stored_at));
  if (raw.size() != rec->size || util::digest(raw.data(), raw.size()) != rec->digest)
    return fail(Errc::corrupt, "archived WAL file '" + rec->stored_at +
                                   "' does not hold the bytes the catalog recorded (digest " +
                                   util::to_hex(rec->digest) + ")");
  return raw;
}

Result<void> write_local_atomic(const std::string& path, const std::vector<std::byte>& bytes) {
  const std::string tmp = path + ".sbtmp";
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return sys_error(errno, "unable to create '" + tmp + "'");
  size_t done = 0;
  int err = 0;
  while (done < bytes.size() && err == 0) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    else done += static_cast<size_t>(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return sys_error(err, "unable to write '" + path + "'");
  }
  return ok();
}

std::vector<catalog::WalFile> obsolete_wal(const std::vector<catalog::Backup>& backups,
                                           const std::vector<catalog::WalFile>& files) {
  std::string oldest;
  for (const auto& b : backups)
    if (b.hot && !b.hot->start_wal.empty()) {
      const std::string d = segment_digits(b.hot->start_wal);
      if (!d.empty() && (oldest.empty() || d < oldest)) oldest = d;
    }
  std::vector<catalog::WalFile> out;
  if (oldest.empty()) return out;
  for (const auto& f : files) {
    const WalKind k = wal_kind(f.name);
    if (k == WalKind::timeline_history || k == WalKind::other) continue;
    if (segment_digits(f.name) < oldest) out.push_back(f);
  }
  return out;
}

std::vector<std::string> remove_wal(catalog::Catalog& cat,
                                    const std::vector<catalog::WalFile>& files) {
  std::vector<std::string> errors;
  for (const auto& f : files) {
    auto gone = [&]() -> Result<void> {
      SB_ASSIGN(engine::Place p, engine::place_of(f.stored_at));
      auto r = p.storage->remove(p.at);
      if (!r && r.error().code != Errc::not_found) return r.error();
      return ok();
    }();
    if (gone) {
      catalog::WalFile w = f;
      w.event = catalog::WalFile::Event::removed;
      w.time_ns = util::wall_now_ns();
      if (auto r = cat.add_wal(w); !r) gone = fail(r.error());
    }
    if (!gone) errors.push_back("unable to remove archived WAL file '" + f.stored_at + "': " +
                                gone.error().what);
  }
  return errors;
}

}  // namespace stripeback::database
