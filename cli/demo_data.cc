#include "cli/demo_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "storage/async/file.h"
#include "util/bytes.h"

namespace stripeback::engine {
namespace {

constexpr size_t kPage = 8192;

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint64_t next() {  // splitmix64
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }

 private:
  uint64_t s_;
};

enum class Kind { table, sparse, random };

struct FileSpec {
  std::string rel;
  double share;     // of the total size
  uint64_t extra;   // bytes added so sizes are not multiples of 1 MiB
  Kind kind;
  mode_t mode;
  int64_t age_s;    // mtime = now - age
};

const FileSpec kSpecs[] = {
    {"oradata/PROD/system01.dbf", 0.22, 8192 * 3, Kind::table, 0640, 86400 * 30},
    {"oradata/PROD/sysaux01.dbf", 0.12, 8192 * 17, Kind::sparse, 0640, 86400 * 29},
    {"oradata/PROD/users01.dbf", 0.20, 8192 * 5, Kind::table, 0640, 3600},
    {"oradata/PROD/undotbs01.dbf", 0.14, 8192 * 11, Kind::random, 0640, 600},
    {"oradata/PROD/temp/temp01.dbf", 0.08, 0, Kind::sparse, 0600, 60},
    {"oradata/PROD/idx/level1/indx01.dbf", 0.10, 4096 + 100, Kind::table, 0644, 7200},
    {"oradata/PROD/idx/level1/level2/indx02.dbf", 0.06, 1, Kind::random, 0644, 7300},
    {"fra/PROD/archivelog/arch_0001.arc", 0.04, 12345, Kind::random, 0440, 86400},
    {"fra/PROD/archivelog/arch_0002.arc", 0.03, 777, Kind::table, 0440, 80000},
    {"fra/PROD/archivelog/arch_0003.arc", 0.01, 4095, Kind::table, 0440, 70000},
    {"oradata/PROD/control01.ctl", 0.0, 8192 * 9, Kind::table, 0600, 5},
    {"oradata/PROD/empty.dat", 0.0, 0, Kind::table, 0644, 100},
};

// A pool of text-like rows: pages are filled from it, so they compress about as well as
// ordinary table data (a few times), not infinitely.
std::vector<std::string> make_rows(Rng& rng) {
  static const char* kWords[] = {"ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO", "FOXTROT",
                                 "GOLF", "HOTEL", "INDIA", "JULIET", "KILO", "LIMA",
                                 "PENDING", "SHIPPED", "PAID", "OPEN", "CLOSED", "EUR", "USD"};
  std::vector<std::string> rows;
  for (int i = 0; i < 4096; ++i) {
    std::string r;
    r += std::to_string(100000 + rng.below(900000)) + "|";
    for (int k = 0; k < 4; ++k) r += std::string(kWords[rng.below(19)]) + "|";
    r += std::to_string(rng.below(1000000)) + "." + std::to_string(rng.below(100)) + "|";
    r += "2026-" + std::to_string(1 + rng.below(12)) + "-" + std::to_string(1 + rng.below(28));
    r += "\n";
    rows.push_back(r);
  }
  return rows;
}

void fill_page(uint8_t* p, Kind kind, uint64_t page_no, uint32_t file_no, Rng& rng,
               const std::vector<std::string>& rows) {
  if (kind == Kind::random) {
    for (size_t i = 0; i < kPage; i += 8) util::put_le64(p + i, rng.next());
    return;
  }
  std::memset(p, 0, kPage);
  // Page header: type, format, file number, page number, change number; checksum last.
  p[0] = 0x06;
  p[1] = 0xa2;
  util::put_le32(p + 4, file_no);
  util::put_le64(p + 8, page_no);
  util::put_le64(p + 16, 0x1000000 + page_no * 3 + rng.below(3));
  size_t pos = 32;
  size_t fill = kPage - 64 - rng.below(2048);  // rows leave some free space in each page
  while (pos < fill) {
    const std::string& r = rows[rng.below(static_cast<uint32_t>(rows.size()))];
    size_t n = std::min(r.size(), fill - pos);
    std::memcpy(p + pos, r.data(), n);
    pos += n;
  }
  uint32_t x = 0;
  for (size_t i = 0; i < kPage - 4; i += 4) x ^= util::get_le32(p + i);
  util::put_le32(p + kPage - 4, x);
}

Result<void> write_file(const std::string& path, uint64_t size, Kind kind, uint32_t file_no,
                        Rng& rng, const std::vector<std::string>& rows) {
  io::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return sys_error(errno, "unable to create demo file '" + path + "'");
  constexpr size_t kChunk = 1 << 20;
  std::vector<uint8_t> buf(kChunk);
  uint64_t off = 0;
  uint64_t page_no = 0;
  while (off < size) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, size - off));
    // Sparse files: the second half is free space (all zeros), as in a half-empty tablespace;
    // table files have an occasional empty megabyte too.
    bool zero = (kind == Kind::sparse && off >= size / 2) ||
                (kind == Kind::table && rng.below(16) == 0);
    if (zero) {
      std::memset(buf.data(), 0, n);
      page_no += n / kPage;
    } else {
      for (size_t i = 0; i < n; i += kPage) {
        uint8_t page[kPage];
        fill_page(page, kind == Kind::sparse ? Kind::table : kind, page_no++, file_no, rng,
                  rows);
        std::memcpy(buf.data() + i, page, std::min(kPage, n - i));
      }
    }
    size_t done = 0;
    while (done < n) {
      ssize_t w = ::pwrite(fd.get(), buf.data() + done, n - done,
                           static_cast<off_t>(off + done));
      if (w < 0) {
        if (errno == EINTR) continue;
        return sys_error(errno, "unable to write demo file '" + path + "'");
      }
      done += static_cast<size_t>(w);
    }
    off += n;
  }
  if (::fsync(fd.get()) != 0) return sys_error(errno, "unable to sync demo file '" + path + "'");
  return ok();
}

}  // namespace

Result<DemoDataSummary> make_demo_data(const std::string& dir, uint64_t total_bytes,
                                       uint32_t seed) {
  namespace fs = std::filesystem;
  if (total_bytes < (4u << 20))
    return fail(Errc::invalid_argument, "demo data size must be at least 4 MiB");
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
    return fail(Errc::exists, "demo data directory '" + dir + "' is not empty");
  auto start = std::chrono::steady_clock::now();
  Rng rng(seed);
  auto rows = make_rows(rng);
  DemoDataSummary sum;
  time_t now = ::time(nullptr);
  uint32_t file_no = 0;
  for (const FileSpec& s : kSpecs) {
    std::string path = dir + "/" + s.rel;
    SB_TRY(io::make_dirs(fs::path(path).parent_path().string()));
    uint64_t base = static_cast<uint64_t>(static_cast<double>(total_bytes) * s.share);
    base -= base % kPage;
    uint64_t size = base + s.extra;
    SB_TRY(write_file(path, size, s.kind, ++file_no, rng, rows));
    if (::chmod(path.c_str(), s.mode) != 0)
      return sys_error(errno, "unable to set the mode of '" + path + "'");
    timespec ts[2];
    ts[0].tv_sec = now - s.age_s;
    ts[0].tv_nsec = 0;
    ts[1].tv_sec = now - s.age_s;
    ts[1].tv_nsec = static_cast<long>(rng.below(1000000000));
    if (::utimensat(AT_FDCWD, path.c_str(), ts, 0) != 0)
      return sys_error(errno, "unable to set the mtime of '" + path + "'");
    ++sum.files;
    sum.bytes += size;
  }
  sum.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return sum;
}

}  // namespace stripeback::engine
