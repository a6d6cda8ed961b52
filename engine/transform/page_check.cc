#include "engine/transform/page_check.h"

#include <sys/stat.h>

#include <bit>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "engine/wiring/backends.h"
#include "storage/location.h"
#include "util/bytes.h"
#include "util/crc32c.h"
#include "util/option_words.h"

namespace stripeback::engine {
namespace {

// pg_control: the fields after floatFormat (the double 1234567.0, FLOATFORMAT_VALUE) have
// kept their order since 9.3: blcksz, relseg_size, xlog_blcksz, xlog_seg_size, nameDataLen,
// indexMaxKeys, toast_max_chunk_size, loblksize (u32 each), float8ByVal (bool, padded),
// data_checksum_version (u32), mock_authentication_nonce (32 bytes), crc (CRC-32C of all
// before it). Before it, at fixed offsets since 9.3: the cluster's state (u32) at 16 and
// the latest checkpoint's position (XLogRecPtr) at 32.
constexpr double kFloatFormat = 1234567.0;
constexpr size_t kStateAt = 16;
constexpr size_t kCheckpointAt = 32;
constexpr size_t kControlRead = 8192;

// Page header (PageHeaderData): pd_lsn (u32 xlogid, u32 xrecoff), pd_checksum u16 at 8,
// pd_flags u16 at 10, pd_lower 12, pd_upper 14, pd_special 16, pd_pagesize_version 18,
// pd_prune_xid u32 at 20; 24 bytes.
constexpr uint32_t kPageHeader = 24;
constexpr uint16_t kValidFlags = 0x0007;  // PD_HAS_FREE_LINES | PD_PAGE_FULL | PD_ALL_VISIBLE
constexpr uint16_t kLayoutVersion = 4;
constexpr uint32_t kMaxAlign = 8;

// How far past the checkpoint a backup began after the pd_lsn of a page being written may
// lie: 1 PiB of log, more than any cluster writes during one backup (12 days at 1 GiB/s).
constexpr uint64_t kPlausibleWal = uint64_t{1} << 50;

constexpr uint32_t kSums = 32;
constexpr uint32_t kFnvPrime = 16777619;
constexpr uint32_t kBaseOffsets[kSums] = {
    0x5B1F36E9, 0xB8525960, 0x02AB50AA, 0x1DE66D2A, 0x79FF467A, 0x9BB9F8A3, 0x217E7CD2,
    0x83E13D2C, 0xF8D4474F, 0xE39EB970, 0x42C6AE16, 0x993216FA, 0x7B093B5D, 0x98DAFF3C,
    0xF718902A, 0x0B1C9CDB, 0xE58F764B, 0x187636BC, 0x5D7B3BB1, 0xE73DE7DE, 0x92BEC979,
    0xCCA6C0B2, 0x304A0979, 0x85AA43D4, 0x783125BB, 0x6CA8EAA2, 0xE407EAC6, 0x4B5CFC3E,
    0x9FBF8C76, 0x15CA20BE, 0xF2CA9FD3, 0x959BD756};

inline uint32_t mix(uint32_t sum, uint32_t value) {
  const uint32_t t = sum ^ value;
  return (t * kFnvPrime) ^ (t >> 17);
}

uint16_t u16_at(const std::byte* p, size_t off) {
  return util::get_le16(reinterpret_cast<const uint8_t*>(p) + off);
}

std::string hex4(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

// A log position as PostgreSQL writes it: "5A3F1B2C/9D8E7F60".
std::string lsn_text(uint64_t lsn) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%X/%X", static_cast<unsigned>(lsn >> 32),
                static_cast<unsigned>(lsn & 0xffffffffu));
  return buf;
}

bool all_digits(const std::string& s, size_t from, size_t to) {
  if (from >= to) return false;
  for (size_t i = from; i < to; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// A relation file's name: <relfilenode>[_fsm|_vm|_init][.<segment>]. The segment, or -1.
long relation_segment(const std::string& name) {
  size_t dot = name.find('.');
  std::string base = dot == std::string::npos ? name : name.substr(0, dot);
  long seg = 0;
  if (dot != std::string::npos) {
    if (!all_digits(name, dot + 1, name.size()) || name.size() - dot > 10) return -1;
    seg = std::stol(name.substr(dot + 1));
  }
  for (const char* fork : {"_fsm", "_vm", "_init"}) {
    const size_t n = std::strlen(fork);
    if (base.size() > n && base.compare(base.size() - n, n, fork) == 0) {
      base.resize(base.size() - n);
      break;
    }
  }
  return all_digits(base, 0, base.size()) ? seg : -1;
}

std::vector<std::string> split(const std::string& rel) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= rel.size()) {
    size_t j = rel.find('/', i);
    if (j == std::string::npos) j = rel.size();
    if (j > i) out.push_back(rel.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

Result<PgControl> parse_control(const std::vector<uint8_t>& b, const std::string& path) {
  uint8_t pattern[8];
  std::memcpy(pattern, &kFloatFormat, sizeof pattern);
  for (size_t off = 0; off + 84 <= b.size() && off < 1024; off += 8) {
    if (std::memcmp(b.data() + off, pattern, sizeof pattern) != 0) continue;
    PgControl c;
    c.page_size = util::get_le32(b.data() + off + 8);
    c.segment_pages = util::get_le32(b.data() + off + 12);
    c.checksum_version = util::get_le32(b.data() + off + 44);
    const size_t crc_at = off + 48 + 32;
    if (util::crc32c(b.data(), crc_at) != util::get_le32(b.data() + crc_at))
      return fail(Errc::corrupt, "'" + path + "' fails its CRC check: it is damaged or of an "
                                 "unknown PostgreSQL version");
    c.checkpoint_lsn = util::get_le64(b.data() + kCheckpointAt);
    c.state = static_cast<PgState>(util::get_le32(b.data() + kStateAt));
    if (c.page_size < 1024 || c.page_size > 32768 || (c.page_size & (c.page_size - 1)) != 0 ||
        c.segment_pages == 0 || c.checksum_version > 1)
      return fail(Errc::corrupt, "'" + path + "' gives an impossible page size " +
                                     std::to_string(c.page_size) + " or segment size");
    return c;
  }
  return fail(Errc::corrupt, "'" + path + "' is not a PostgreSQL control file this version reads");
}

class PostgresValidator final : public PageValidator {
 public:
  PostgresValidator(storage::Location data_dir, PgControl c) : dir_(std::move(data_dir)), c_(c) {}
  const char* name() const override { return "postgres"; }
  uint32_t page_size() const override { return c_.page_size; }

  std::optional<uint64_t> first_block(const std::string& path) const override {
    const long seg = segment_of(path);
    if (seg < 0) return std::nullopt;
    return static_cast<uint64_t>(seg) * c_.segment_pages;
  }

  std::string check_block(uint64_t block, const std::byte* page) const override {
    const uint16_t upper = u16_at(page, 14);
    if (upper == 0) {
      // A new page: valid only when every byte is zero (as PostgreSQL reads it).
      for (uint32_t i = 0; i < c_.page_size; ++i)
        if (page[i] != std::byte{0})
          return "bad header: pd_upper is 0 (a new page) but the page is not all zeros";
      return "";
    }
    if (c_.checksum_version != 0) {
      const uint16_t stored = u16_at(page, 8);
      const uint16_t computed = pg_page_checksum(page, c_.page_size, block);
      if (stored != computed)
        return "checksum mismatch: stored " + hex4(stored) + ", computed " + hex4(computed);
    }
    const uint16_t flags = u16_at(page, 10), lower = u16_at(page, 12),
                   special = u16_at(page, 16), size_version = u16_at(page, 18);
    if ((flags & ~kValidFlags) != 0) return "bad header: unknown flag bits in pd_flags " + hex4(flags);
    if (lower < kPageHeader || lower > upper || upper > special || special > c_.page_size ||
        special % kMaxAlign != 0)
      return "bad header: pd_lower " + std::to_string(lower) + ", pd_upper " +
             std::to_string(upper) + ", pd_special " + std::to_string(special) +
             " are out of order or out of the page";
    if ((size_version & 0xff00u) != c_.page_size || (size_version & 0xffu) != kLayoutVersion)
      return "bad header: page size and layout version " + hex4(size_version) + " (expected " +
             hex4((c_.page_size & 0xff00u) | kLayoutVersion) + ")";
    return "";
  }

  std::string judge_failed(const std::byte* page, std::string why) const override {
    // pd_lsn: the high and the low 32 bits.
    const auto* p = reinterpret_cast<const uint8_t*>(page);
    const uint64_t lsn = (uint64_t{util::get_le32(p)} << 32) | util::get_le32(p + 4);
    return judge_failed_page(c_, lsn, std::move(why));
  }

 private:
  // The segment number of a relation file of this cluster, or -1 for anything else: a file
  // under base/<db>/, global/ or pg_tblspc/<oid>/<version dir>/<db>/ named as a relation
  // fork; not WAL, not config or map files, not temporary relations (t<backend>_<node>).
  // Paths of files on a server are URLs: compared as locations, by server and path.
  long segment_of(const std::string& text) const {
    auto at = storage::has_scheme(text) ? storage::Location::parse(text)
                                        : Result<storage::Location>(storage::Location::local(text));
    if (!at || at->scheme != dir_.scheme || at->authority != dir_.authority || at->query != dir_.query)
      return -1;
    const std::string& path = at->path;
    const std::string& dir = dir_.path;
    const size_t skip = dir == "/" ? 0 : dir.size();
    if (path.size() <= skip + 1 || path.compare(0, skip, dir, 0, skip) != 0 || path[skip] != '/')
      return -1;
    auto c = split(path.substr(skip + 1));
    const bool in_base = c.size() == 3 && c[0] == "base" && all_digits(c[1], 0, c[1].size());
    const bool in_global = c.size() == 2 && c[0] == "global";
    const bool in_space = c.size() == 5 && c[0] == "pg_tblspc" && all_digits(c[1], 0, c[1].size()) &&
                          c[2].rfind("PG_", 0) == 0 && all_digits(c[3], 0, c[3].size());
    if (!in_base && !in_global && !in_space) return -1;
    return relation_segment(c.back());
  }

  storage::Location dir_;
  PgControl c_;
};

// Up to `max` bytes from the start of the file at `at`.
Result<std::vector<uint8_t>> read_head(const Place& dir, const std::string& name, size_t max) {
  SB_ASSIGN(auto in, dir.storage->open_read(dir.at.join(name), storage::OpenOptions{false}));
  std::vector<uint8_t> b(max);
  size_t got = 0;
  while (got < max) {
    SB_ASSIGN(size_t n, in->read_at(reinterpret_cast<std::byte*>(b.data()) + got, max - got, got));
    if (n == 0) break;
    got += n;
  }
  b.resize(got);
  return b;
}

bool is_data_dir(const Place& dir) {
  auto regular = [&](const char* name) {
    auto st = dir.storage->stat(dir.at.join(name), /*follow=*/true);
    return st && S_ISREG(st->mode);
  };
  return regular("PG_VERSION") && regular("global/pg_control");
}

Result<PgControl> read_control(const Place& dir) {
  const std::string path = dir.at.join("global/pg_control").str();
  auto head = read_head(dir, "global/pg_control", kControlRead);
  if (!head)
    return fail(Errc::not_found, "unable to read '" + path + "': no PostgreSQL control file (" +
                                     head.error().what + ")");
  return parse_control(*head, path);
}

Result<std::unique_ptr<PageValidator>> validator_at(const Place& dir,
                                                    std::optional<uint32_t> page_size,
                                                    std::optional<uint64_t> changing_from = {}) {
  SB_ASSIGN(PgControl c, read_control(dir));
  c.redo_from = changing_from;
  if (page_size) {
    if (*page_size < 1024 || *page_size > 32768 || (*page_size & (*page_size - 1)) != 0)
      return fail(Errc::invalid_argument, util::option_word("page_size") + " must be a power of two from 1K to 32K");
    c.page_size = *page_size;
  }
  return std::unique_ptr<PageValidator>(std::make_unique<PostgresValidator>(dir.at, c));
}

}  // namespace

namespace {

// The block sums: 32 independent FNV-1a-like lanes over the page's 32-bit words, row by row
// (the layout the algorithm was designed for, so the compiler vectorizes the inner loop;
// on x86-64 an AVX2 version is chosen at run time where the CPU has it).
[[gnu::always_inline]] inline uint32_t checksum_rows(const std::byte* page, uint32_t rows) {
  uint32_t sums[kSums];
  std::memcpy(sums, kBaseOffsets, sizeof sums);
  for (uint32_t i = 0; i < rows; ++i) {
    uint32_t row[kSums];
    std::memcpy(row, page + size_t{i} * sizeof row, sizeof row);
    if constexpr (std::endian::native != std::endian::little)
      for (auto& w : row) w = util::get_le32(reinterpret_cast<const uint8_t*>(&w));
    // The checksum field (the low half of the third word) counts as zero.
    if (i == 0) row[2] &= 0xffff0000u;
    for (uint32_t j = 0; j < kSums; ++j) sums[j] = mix(sums[j], row[j]);
  }
  for (uint32_t round = 0; round < 2; ++round)
    for (uint32_t j = 0; j < kSums; ++j) sums[j] = mix(sums[j], 0);
  uint32_t result = 0;
  for (uint32_t v : sums) result ^= v;
  return result;
}

uint32_t checksum_portable(const std::byte* page, uint32_t rows) {
  return checksum_rows(page, rows);
}

// The choice is a function pointer set on first use, not an ifunc (target_clones): an ifunc
// resolver runs while the dynamic loader relocates the program, before a sanitizer's runtime
// is up, and an instrumented resolver crashes there; a static build has no loader to run it.
#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target("avx2")]] uint32_t checksum_avx2(const std::byte* page, uint32_t rows) {
  return checksum_rows(page, rows);
}

using ChecksumFn = uint32_t (*)(const std::byte*, uint32_t);

ChecksumFn pick_checksum() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? checksum_avx2 : checksum_portable;
}

uint32_t checksum_block(const std::byte* page, uint32_t rows) {
  static const ChecksumFn fn = pick_checksum();
  return fn(page, rows);
}
#else
uint32_t checksum_block(const std::byte* page, uint32_t rows) {
  return checksum_portable(page, rows);
}
#endif

}  // namespace

uint16_t pg_page_checksum(const std::byte* page, uint32_t page_size, uint64_t block) {
  uint32_t result = checksum_block(page, page_size / (4 * kSums));
  result ^= static_cast<uint32_t>(block);
  return static_cast<uint16_t>(result % 65535 + 1);
}

std::string judge_failed_page(const PgControl& c, uint64_t lsn, std::string why) {
  // A stopped cluster wrote every page before it was marked so (a standby's, shut down in
  // recovery, too): nothing is rewriting a page and no redo is due to replace one, so a
  // page that fails is corrupt, whatever its pd_lsn. A cluster shut down cleanly wrote its
  // shutdown checkpoint last, so no page of it can have a pd_lsn past that checkpoint, and
  // the reason says so (a standby's pages may lie up to where it had replayed).
  if (c.state == PgState::shut_down || c.state == PgState::shut_down_in_recovery) {
    if (c.state == PgState::shut_down && lsn > c.checkpoint_lsn)
      why += "; its pd_lsn " + lsn_text(lsn) + " is past the shutdown checkpoint at " +
             lsn_text(c.checkpoint_lsn) + ", which no page of a cluster shut down cleanly has";
    return why;
  }
  // Running (or stopped without a shutdown checkpoint, as after a crash, whose redo is
  // still to come): a page changed since the latest checkpoint may be half-written now and
  // the redo from that checkpoint replaces it. But only so far past it: no cluster writes
  // kPlausibleWal of log during one backup, so a pd_lsn further ahead is not a write in
  // progress but damage (random bytes over the page, most likely).
  if (c.redo_from) {
    // In backup mode (backup --pg) the redo a restore replays begins at the backup's start:
    // a page stamped from there on may be mid-write; one stamped before was not written
    // since, so what fails in it is damage.
    if (lsn < *c.redo_from)
      return why + "; its pd_lsn " + lsn_text(lsn) + " is before the backup's start at " +
             lsn_text(*c.redo_from) + ", so no write was in progress";
    if (lsn - *c.redo_from <= kPlausibleWal) return "";
    return why + "; its pd_lsn " + lsn_text(lsn) + " is more than 1 PiB of log past the " +
           "backup's start at " + lsn_text(*c.redo_from) + ", further than any write in progress";
  }
  if (c.checkpoint_lsn == 0 || lsn <= c.checkpoint_lsn) return why;
  if (lsn - c.checkpoint_lsn <= kPlausibleWal) return "";
  return why + "; its pd_lsn " + lsn_text(lsn) + " is more than 1 PiB of log past the " +
         "checkpoint at " + lsn_text(c.checkpoint_lsn) + ", further than any write in progress";
}

Result<PgControl> read_pg_control(const std::string& data_dir) {
  SB_ASSIGN(Place dir, place_of(data_dir));
  return read_control(dir);
}

Result<std::unique_ptr<PageValidator>> postgres_validator(const std::string& data_dir,
                                                          std::optional<uint32_t> page_size) {
  SB_ASSIGN(Place dir, place_of(data_dir));
  return validator_at(dir, page_size);
}

Result<std::unique_ptr<PageValidator>> make_validator(const std::string& format,
                                                      const std::vector<std::string>& sources,
                                                      std::optional<uint32_t> page_size,
                                                      std::optional<uint64_t> changing_from) {
  if (format != "auto" && format != "postgres")
    return fail(Errc::invalid_argument, util::option_word("check_logical") + ": unknown page format '" + format +
                                            "' (known: auto, postgres)");
  // The data directory: a source that is one, or the nearest one above a source (on the
  // source's own storage: a local path or a server's).
  for (const auto& s : sources) {
    auto p = place_of(s);
    if (!p) continue;
    Place dir = *p;
    while (true) {
      if (is_data_dir(dir)) return validator_at(dir, page_size, changing_from);
      if (dir.at.path.empty() || dir.at.path == "/" || dir.at.path == ".") break;
      dir.at = dir.at.parent();
    }
  }
  return fail(Errc::invalid_argument,
              util::option_word("check_logical") + std::string(format == "auto" ? "" : "=" + format) +
                  ": no source is or lies in a PostgreSQL data directory (PG_VERSION and "
                  "global/pg_control)");
}

}  // namespace stripeback::engine
