#include "tests/integration/it_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#ifndef STRIPEBACK_BIN
#error "STRIPEBACK_BIN must name the stripeback binary under test"
#endif

namespace stripeback::it {
namespace fs = std::filesystem;

namespace {

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::string octal(unsigned v) {
  std::ostringstream os;
  os << std::oct << v;
  return os.str();
}

struct DataSet {
  std::unique_ptr<TempDir> dir;
  std::string path;
  bool tried = false;
};

const std::string& make_data_set(DataSet& ds, const std::string& size, const char* seed,
                                 const char* name) {
  if (ds.tried) return ds.path;
  ds.tried = true;
  ds.dir = std::make_unique<TempDir>(std::string("sbit-") + name);
  if (ds.dir->path().empty()) return ds.path;
  std::string path = *ds.dir / "data";
  RunResult r = sb({"demo-data", path, "--size", size, "--seed", seed});
  if (!r.exited(0)) {
    ADD_FAILURE() << "unable to generate the " << name << " data set:\n" << r.describe();
    return ds.path;
  }
  if (files_under(path).size() < 5) {
    ADD_FAILURE() << "the " << name << " data set in " << path << " has too few files";
    return ds.path;
  }
  ds.path = path;
  return ds.path;
}

}  // namespace

namespace {
std::string reachable_copy;  // set by binary_reachable_by_postgres() when a copy is needed
}  // namespace

// STRIPEBACK_TEST_BIN runs the tests against another build of the CLI (an older one, to
// see a regression test fail before its fix).
const char* binary() {
  if (!reachable_copy.empty()) return reachable_copy.c_str();
  static const char* bin = [] {
    const char* other = std::getenv("STRIPEBACK_TEST_BIN");
    return other && *other ? other : STRIPEBACK_BIN;
  }();
  return bin;
}

bool binary_reachable_by_postgres(std::string* error) {
  namespace fs = std::filesystem;
  const std::string own = binary();
  RunResult can = stripeback::testing::run(
      {"/usr/sbin/runuser", "-u", "postgres", "--", "/usr/bin/test", "-x", own}, {});
  if (can.exited(0)) return true;
  struct stat st {};
  if (::stat(own.c_str(), &st) != 0) {
    *error = "cannot stat the CLI under test '" + own + "': " + std::strerror(errno);
    return false;
  }
  const std::string top = "/var/tmp/stripeback-it-bin";
  const std::string dir = top + "/" + std::to_string(st.st_ino) + "-" + std::to_string(st.st_size) +
                          "-" + std::to_string(st.st_mtim.tv_sec);
  const std::string copy = dir + "/stripeback";
  std::error_code ec;
  if (!fs::exists(copy, ec)) {
    // Copies of builds a day old are gone with their builds (one in use is never that old).
    for (const auto& e : fs::directory_iterator(top, ec)) {
      std::error_code tec;
      const auto age = fs::file_time_type::clock::now() - fs::last_write_time(e.path(), tec);
      if (!tec && age > std::chrono::hours(24)) fs::remove_all(e.path(), tec);
    }
    ec.clear();
    fs::create_directories(dir, ec);
    ::chmod(top.c_str(), 0755);
    ::chmod(dir.c_str(), 0755);
    // Copied beside its place and renamed, so that tests running at once never see half.
    const std::string tmp = dir + "/.stripeback." + std::to_string(::getpid());
    fs::copy_file(own, tmp, fs::copy_options::overwrite_existing, ec);
    if (ec || ::chmod(tmp.c_str(), 0755) != 0 || ::rename(tmp.c_str(), copy.c_str()) != 0) {
      *error = "cannot copy the CLI under test to " + copy + " for the postgres user: " +
               (ec ? ec.message() : std::string(std::strerror(errno)));
      return false;
    }
  }
  reachable_copy = copy;
  return true;
}

bool cli_has_test_hooks() {
  static const bool has = [] {
    RunResult r = sb({"--version"});
    if (!r.exited(0)) ADD_FAILURE() << "unable to ask the CLI its version:\n" << r.describe();
    return r.out.find("(test hooks)") != std::string::npos;
  }();
  return has;
}

namespace {

std::vector<std::string> sb_argv(const std::vector<std::string>& args) {
  std::vector<std::string> argv{binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

RunOptions sb_options(const Env& env, std::chrono::milliseconds timeout) {
  RunOptions o;
  o.timeout = timeout;
  o.env = {{"STRIPEBACK_IO", std::nullopt},
           {"STRIPEBACK_CATALOG", std::nullopt},
           {"STRIPEBACK_CRASH_AT", std::nullopt},
           {"STRIPEBACK_FAKE_NOW", std::nullopt},
           {"STRIPEBACK_FAULTS", std::nullopt},
           {"STRIPEBACK_TEST_NFS_VERIFIER_CHANGE", std::nullopt},
           {"XDG_STATE_HOME", "/dev/null/not-a-catalog"},
           {"SPDLOG_LEVEL", std::nullopt}};
  for (const auto& e : env) o.env.push_back(e);
  return o;
}

}  // namespace

RunResult sb(const std::vector<std::string>& args, const Env& env,
             std::chrono::milliseconds timeout) {
  return stripeback::testing::run(sb_argv(args), sb_options(env, timeout));
}

std::unique_ptr<stripeback::testing::Subprocess> sb_start(const std::vector<std::string>& args,
                                                          const Env& env,
                                                          std::chrono::milliseconds timeout) {
  return std::make_unique<stripeback::testing::Subprocess>(sb_argv(args), sb_options(env, timeout));
}

Json parse_json(const RunResult& r) {
  std::string error;
  auto j = Json::parse(r.out, &error);
  if (!j) {
    ADD_FAILURE() << "stdout is not one JSON document (" << error << "):\n" << r.describe();
    return Json{};
  }
  return *j;
}

::testing::AssertionResult contains(const std::string& haystack, const std::string& needle) {
  if (haystack.find(needle) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected to find\n  \"" << needle << "\"\nin\n  \"" << haystack << "\"";
}

const std::string& big_data() {
  static DataSet ds;
  const char* size = std::getenv("STRIPEBACK_IT_SIZE");
  return make_data_set(ds, size && *size ? size : "1G", "1", "big");
}

const std::string& small_data() {
  static DataSet ds;
  return make_data_set(ds, "48M", "7", "small");
}

void make_file(const std::string& path, uint64_t size, uint32_t seed, unsigned mode,
               std::optional<int64_t> mtime) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  ASSERT_FALSE(ec) << "unable to create the directory of " << path << ": " << ec.message();
  stripeback::testing::write_pattern_file(path, size, seed);
  ASSERT_EQ(file_size(path), size) << path;
  ASSERT_EQ(::chmod(path.c_str(), static_cast<mode_t>(mode)), 0) << path;
  if (mtime) {
    timespec ts[2];
    ts[0].tv_sec = 0;
    ts[0].tv_nsec = UTIME_OMIT;
    ts[1].tv_sec = static_cast<time_t>(*mtime / 1000000000);
    ts[1].tv_nsec = static_cast<long>(*mtime % 1000000000);
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), ts, 0), 0) << path;
  }
}

void write_text(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size())) << path;
  ::close(fd);
}

std::string status_file_text(int64_t pid, const std::string& host, uint64_t backup_id) {
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const std::string t = std::to_string(now);
  return "operation=backup\nbackup_id=" + std::to_string(backup_id) + "\ntag=nightly\npid=" +
         std::to_string(pid) + "\nproc_start=4242\nhost=" + host + "\nstarted_ns=" + t +
         "\nlast_update_ns=" + t + "\nlast_progress_ns=" + t +
         "\nbytes_done=1048576\nbytes_total=2097152\nrate=80000.0\neta_s=13.0\n"
         "hang_after_s=60.0\nfinished=0\nverdict=\nchannel=1 reading " + t +
         " 1048576\nend=1\n";
}

int64_t unused_pid(int64_t n) {
  std::ifstream in("/proc/sys/kernel/pid_max");
  int64_t max = 4194304;  // the largest pid_max Linux allows
  if (!(in >> max)) max = 4194304;
  return max + n;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

namespace {
// Entries below `dir` (links not followed) for which `keep` holds, sorted; `out` may start
// with entries of its own.
template <typename Keep>
std::vector<std::string> walk(const std::string& dir, std::vector<std::string> out, Keep keep) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (keep(*it, ec)) out.push_back(it->path().string());
  }
  if (ec) ADD_FAILURE() << "unable to list " << dir << ": " << ec.message();
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

std::vector<std::string> files_under(const std::string& dir) {
  return walk(dir, {}, [](const fs::directory_entry& e, std::error_code& ec) {
    return e.is_regular_file(ec) && !e.is_symlink(ec);
  });
}

std::vector<std::string> dirs_under(const std::string& dir) {
  return walk(dir, {dir}, [](const fs::directory_entry& e, std::error_code& ec) {
    return e.is_directory(ec) && !e.is_symlink(ec);
  });
}

std::vector<std::string> entries_under(const std::string& dir) {
  return walk(dir, {}, [](const fs::directory_entry& e, std::error_code& ec) {
    return e.is_symlink(ec) || !e.is_directory(ec);
  });
}

std::vector<std::string> pieces_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    if (it->path().extension() == ".sbp") out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t file_size(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

uint64_t total_size(const std::vector<std::string>& files) {
  uint64_t n = 0;
  for (const auto& f : files) n += file_size(f);
  return n;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

::testing::AssertionResult same_file(const std::string& original, const std::string& restored) {
  struct stat a, b;
  if (::lstat(original.c_str(), &a) != 0)
    return ::testing::AssertionFailure()
           << "cannot stat original " << original << ": " << std::strerror(errno);
  if (::lstat(restored.c_str(), &b) != 0)
    return ::testing::AssertionFailure()
           << "restored file " << restored << " is missing: " << std::strerror(errno);
  if (!S_ISREG(b.st_mode))
    return ::testing::AssertionFailure() << restored << " is not a regular file";
  if (a.st_size != b.st_size)
    return ::testing::AssertionFailure()
           << restored << " has " << b.st_size << " bytes, the original " << a.st_size;
  if ((a.st_mode & 07777) != (b.st_mode & 07777))
    return ::testing::AssertionFailure() << restored << " has mode 0" << octal(b.st_mode & 07777)
                                         << ", the original 0" << octal(a.st_mode & 07777);
  if (mtime_ns(a) != mtime_ns(b))
    return ::testing::AssertionFailure() << restored << " has mtime " << mtime_ns(b)
                                         << " ns, the original " << mtime_ns(a) << " ns";
  if (a.st_uid != b.st_uid || a.st_gid != b.st_gid)
    return ::testing::AssertionFailure()
           << restored << " is owned by " << b.st_uid << ":" << b.st_gid << ", the original by "
           << a.st_uid << ":" << a.st_gid;
  int fa = ::open(original.c_str(), O_RDONLY | O_CLOEXEC);
  int fb = ::open(restored.c_str(), O_RDONLY | O_CLOEXEC);
  if (fa < 0 || fb < 0) {
    if (fa >= 0) ::close(fa);
    if (fb >= 0) ::close(fb);
    return ::testing::AssertionFailure() << "cannot open " << original << " or " << restored;
  }
  constexpr size_t kChunk = 1 << 20;
  std::vector<char> ba(kChunk), bb(kChunk);
  uint64_t off = 0;
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  while (true) {
    ssize_t na = ::pread(fa, ba.data(), kChunk, static_cast<off_t>(off));
    ssize_t nb = ::pread(fb, bb.data(), kChunk, static_cast<off_t>(off));
    if (na < 0 || nb < 0) {
      result = ::testing::AssertionFailure() << "read error comparing " << restored;
      break;
    }
    if (na != nb) {
      result = ::testing::AssertionFailure() << restored << ": short read at offset " << off;
      break;
    }
    if (na == 0) break;
    if (std::memcmp(ba.data(), bb.data(), static_cast<size_t>(na)) != 0) {
      size_t i = 0;
      while (ba[i] == bb[i]) ++i;
      result = ::testing::AssertionFailure()
               << restored << " differs from " << original << " at byte " << off + i;
      break;
    }
    off += static_cast<uint64_t>(na);
  }
  ::close(fa);
  ::close(fb);
  return result;
}

::testing::AssertionResult same_dir(const std::string& original, const std::string& restored) {
  struct stat a, b;
  if (::lstat(original.c_str(), &a) != 0)
    return ::testing::AssertionFailure()
           << "cannot stat original " << original << ": " << std::strerror(errno);
  if (::lstat(restored.c_str(), &b) != 0)
    return ::testing::AssertionFailure()
           << "restored directory " << restored << " is missing: " << std::strerror(errno);
  if (!S_ISDIR(b.st_mode))
    return ::testing::AssertionFailure() << restored << " is not a directory";
  if ((a.st_mode & 07777) != (b.st_mode & 07777))
    return ::testing::AssertionFailure()
           << "directory " << restored << " has mode 0" << octal(b.st_mode & 07777)
           << ", the original 0" << octal(a.st_mode & 07777);
  if (mtime_ns(a) != mtime_ns(b))
    return ::testing::AssertionFailure() << "directory " << restored << " has mtime " << mtime_ns(b)
                                         << " ns, the original " << mtime_ns(a) << " ns";
  if (a.st_uid != b.st_uid || a.st_gid != b.st_gid)
    return ::testing::AssertionFailure()
           << "directory " << restored << " is owned by " << b.st_uid << ":" << b.st_gid
           << ", the original by " << a.st_uid << ":" << a.st_gid;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult restored_tree(const std::string& root, const std::string& source) {
  return restored_exactly(root, files_under(source), dirs_under(source));
}

::testing::AssertionResult restored_exactly(const std::string& root,
                                            const std::vector<std::string>& originals,
                                            const std::vector<std::string>& dirs) {
  if (originals.empty()) return ::testing::AssertionFailure() << "no originals to compare";
  for (const auto& d : dirs) {
    auto r = same_dir(d, restored_path(root, d));
    if (!r) return r;
  }
  std::set<std::string> expected;
  for (const auto& o : originals) {
    auto r = same_file(o, restored_path(root, o));
    if (!r) return r;
    expected.insert(restored_path(root, o));
  }
  std::vector<std::string> extra;
  for (const auto& e : entries_under(root))
    if (!expected.count(e)) extra.push_back(e);
  if (!extra.empty()) {
    auto f = ::testing::AssertionFailure();
    f << extra.size() << " unexpected entries below " << root << ":";
    for (const auto& e : extra) f << "\n  " << e;
    return f;
  }
  return ::testing::AssertionSuccess();
}

uint64_t backup_id_of(const Json& j) {
  auto id = j["backup_id"].as_u64();
  if (!id) {
    ADD_FAILURE() << "no numeric backup_id in the backup's JSON";
    return 0;
  }
  return *id;
}

std::vector<std::string> warnings_with(const Json& j, const std::string& text) {
  std::vector<std::string> out;
  for (const auto& w : j["warnings"].items())
    if (w.as_string().find(text) != std::string::npos) out.push_back(w.as_string());
  return out;
}

std::vector<std::string> quoted_pieces(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = text.find('\''); at != std::string::npos;) {
    size_t end = text.find('\'', at + 1);
    if (end == std::string::npos) break;
    std::string q = text.substr(at + 1, end - at - 1);
    bool piece = q.size() > 4 && q.compare(q.size() - 4, 4, ".sbp") == 0 &&
                 q.find('/') == std::string::npos;
    if (piece) {
      out.push_back(q);
      at = text.find('\'', end + 1);
    } else {
      at = end;  // the closing quote may open the next quoted name
    }
  }
  return out;
}

std::vector<std::string> base_names(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) out.push_back(fs::path(p).filename().string());
  return out;
}

}  // namespace stripeback::it
