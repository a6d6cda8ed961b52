#include "engine/media/catalog_autobackup.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <limits>
#include <set>

#include "engine/transform/crypto.h"
#include "engine/format/piece_format.h"
#include "engine/format/piece_name.h"
#include "util/bytes.h"
#include "util/crc32c.h"
#include "util/option_words.h"

namespace stripeback::engine {
namespace {

constexpr char kMagic[8] = {'S', 'B', 'C', 'A', 'T', 'B', 'K', '1'};
constexpr uint16_t kVersion = 1;
constexpr size_t kHead = 64;          // the file header; the body follows (or the key block)
constexpr size_t kSealedAad = 36;     // magic .. creation time: what the seal vouches for
constexpr uint16_t kFlagSealed = 1;
constexpr uint64_t kMaxFile = 1ull << 32;
constexpr std::string_view kPrefix = "sb-catalog-";
constexpr std::string_view kSuffix = ".sbcat";

int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string utc_stamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

bool all_of(std::string_view s, bool (*ok)(char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), ok);
}

}  // namespace

std::string autobackup_name(const AutobackupName& n) {
  return std::string(kPrefix) + format_catalog_id(n.catalog_id) + "-" + n.stamp + "-" +
         std::to_string(n.backup_id) + std::string(kSuffix);
}

std::optional<AutobackupName> parse_autobackup_name(std::string_view name) {
  if (name.size() < kPrefix.size() + kSuffix.size() || name.substr(0, kPrefix.size()) != kPrefix ||
      name.substr(name.size() - kSuffix.size()) != kSuffix)
    return std::nullopt;
  std::string_view mid = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  // <16 hex>-<YYYYMMDDTHHMMSSZ>-<decimal id>
  if (mid.size() < 16 + 1 + 16 + 1 + 1 || mid[16] != '-' || mid[33] != '-') return std::nullopt;
  std::string_view hex = mid.substr(0, 16), stamp = mid.substr(17, 16), id = mid.substr(34);
  auto is_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  auto is_dec = [](char c) { return c >= '0' && c <= '9'; };
  if (!all_of(hex, +is_hex) || !all_of(id, +is_dec) || id.size() > 19 || stamp[8] != 'T' ||
      stamp[15] != 'Z')
    return std::nullopt;
  AutobackupName n;
  n.catalog_id = std::stoull(std::string(hex), nullptr, 16);
  n.stamp = std::string(stamp);
  n.backup_id = std::stoull(std::string(id));
  if (n.catalog_id == 0) return std::nullopt;
  return n;
}

Result<std::string> write_catalog_autobackup(const catalog::Catalog& cat, const std::string& dest,
                                             uint64_t backup_id, Keyring* keys,
                                             const std::optional<storage::Retention>& lock) {
  SB_ASSIGN(Place dir, place_of(dest));
  if (!dir.storage->caps().directories)
    return fail(Errc::unsupported, "'" + dest + "' has no directories to keep a catalog copy in");
  const uint64_t catalog_id = cat.identity();
  if (catalog_id == 0) return fail(Errc::invalid_argument, "the catalog has no identity yet");
  std::vector<catalog::Backup> mine;
  for (auto& b : cat.backups())
    if (b.begin.destination == dest) mine.push_back(std::move(b));
  SB_ASSIGN(std::vector<uint8_t> body, catalog::encode_backup_records(mine));

  AutobackupName n{catalog_id, utc_stamp(), backup_id, 0};
  const std::string name = autobackup_name(n);
  const std::string shown = dir.at.join(name).str();
  util::ByteWriter head;
  head.bytes(kMagic, sizeof kMagic);
  head.u16(kVersion);
  head.u16(keys ? kFlagSealed : 0);
  head.u64(catalog_id);
  head.u64(backup_id);
  head.i64(wall_ns());
  std::vector<uint8_t> file = head.take();
  std::vector<uint8_t> key_block;
  if (keys) {
    // Sealed as a piece's frame is: a piece header with a fresh wrapped data key, then the
    // records encrypted with it and their tag.
    PieceHeader h;
    h.version = kKeyBlockVersion;
    h.backup_id = backup_id;
    h.catalog_id = catalog_id;
    h.name = name;
    SB_ASSIGN(auto cipher, keys->new_piece(h));
    key_block.resize(kBlock);
    encode_piece_header(h, std::span<std::byte, kBlock>(
                               reinterpret_cast<std::byte*>(key_block.data()), kBlock));
    body.resize(body.size() + kTagSize);
    SB_TRY(cipher->seal(reinterpret_cast<std::byte*>(body.data()), body.size() - kTagSize, 0,
                        std::span<const uint8_t>(file.data(), kSealedAad)));
  }
  util::ByteWriter rest;
  rest.u64(body.size());
  rest.u32(util::crc32c(body.data(), body.size()));
  file.insert(file.end(), rest.buffer().begin(), rest.buffer().end());
  const uint32_t head_crc = util::crc32c(file.data(), file.size());
  file.resize(file.size() + 4);
  util::put_le32(file.data() + file.size() - 4, head_crc);
  file.resize(kHead, 0);
  file.insert(file.end(), key_block.begin(), key_block.end());
  file.insert(file.end(), body.begin(), body.end());

  auto what = [&](const Error& e) {
    return e.wrap("unable to write the catalog autobackup '" + shown + "'");
  };
  auto bytes = std::as_bytes(std::span(file));
  storage::AtomicWriteOptions wo;
  wo.retention = lock;
  if (auto r = storage::write_file_atomic(*dir.storage, dir.at.join(name), bytes, wo); !r)
    return what(r.error());
  // Only the newest few are kept; one that cannot be removed stays (and is harmless).
  if (auto names = dir.storage->list(dir.at)) {
    std::vector<std::pair<AutobackupName, std::string>> own;
    std::set<uint64_t> ended;
    for (const auto& b : mine)
      if (b.ended) ended.insert(b.id);
    for (const auto& x : *names) {
      if (auto p = parse_autobackup_name(x); p && p->catalog_id == catalog_id) {
        p->written_ns = autobackup_written_ns(dir, x);
        own.emplace_back(*p, x);
      }
      // The temporary file of a writer killed before its rename, once its backup has ended
      // (another backup's, still being written, is left alone).
      if (x.size() > 5 && x[0] == '.' && x.compare(x.size() - 4, 4, ".tmp") == 0)
        if (auto p = parse_autobackup_name(std::string_view(x).substr(1, x.size() - 5));
            p && p->catalog_id == catalog_id && p->backup_id != backup_id &&
            ended.count(p->backup_id))
          (void)dir.storage->remove(dir.at.join(x));
    }
    std::sort(own.begin(), own.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i + kAutobackupsKept < own.size(); ++i)
      (void)dir.storage->remove(dir.at.join(own[i].second));
    if (dir.storage->caps().dir_sync) (void)dir.storage->sync_dir(dir.at);
  }
  return name;
}

int64_t autobackup_written_ns(const Place& dir, const std::string& name) {
  constexpr int64_t kUnknown = std::numeric_limits<int64_t>::max();
  auto in = dir.storage->open_read(dir.at.join(name), {false});
  if (!in) return kUnknown;
  auto st = (*in)->stat();
  if (!st || !S_ISREG(st->mode) || st->size < kHead) return kUnknown;
  uint8_t head[kHead];
  auto got = (*in)->read_at(reinterpret_cast<std::byte*>(head), kHead, 0);
  if (!got || *got != kHead || std::memcmp(head, kMagic, sizeof kMagic) != 0 ||
      util::get_le32(head + 48) != util::crc32c(head, 48))
    return kUnknown;
  // magic, u16 version, u16 flags, u64 catalog id, u64 backup id, then i64 when.
  return static_cast<int64_t>(util::get_le64(head + sizeof kMagic + 2 + 2 + 8 + 8));
}

Result<catalog::DecodedRecords> read_catalog_autobackup(const Place& dir, const std::string& name,
                                                        Keyring* keys) {
  const storage::Location at = dir.at.join(name);
  const std::string shown = at.str();
  auto bad = [&](const std::string& why) {
    return fail(Errc::corrupt, "catalog autobackup '" + shown + "' is damaged: " + why);
  };
  SB_ASSIGN(auto in, dir.storage->open_read(at, {false}));
  SB_ASSIGN(storage::FileInfo st, in->stat());
  if (!S_ISREG(st.mode)) return bad("it is not a regular file");
  if (st.size < kHead || st.size > kMaxFile) return bad("its size is " + std::to_string(st.size));
  std::vector<uint8_t> buf(st.size);
  SB_ASSIGN(size_t got, in->read_at(reinterpret_cast<std::byte*>(buf.data()), buf.size(), 0));
  if (got != buf.size()) return bad("it is cut short");
  if (std::memcmp(buf.data(), kMagic, sizeof kMagic) != 0) return bad("bad magic");
  if (util::get_le32(buf.data() + 48) != util::crc32c(buf.data(), 48))
    return bad("header checksum mismatch");
  util::ByteReader r({buf.data() + sizeof kMagic, 40});
  const uint16_t version = r.u16();
  const uint16_t flags = r.u16();
  const uint64_t catalog_id = r.u64();
  (void)r.u64();  // the backup whose end wrote it
  (void)r.i64();  // when
  const uint64_t body_len = r.u64();
  const uint32_t body_crc = r.u32();
  if (version != kVersion)
    return fail(Errc::unsupported, "catalog autobackup '" + shown + "' has version " +
                                       std::to_string(version) + "; this build reads version 1");
  const bool sealed = (flags & kFlagSealed) != 0;
  const size_t body_at = kHead + (sealed ? kBlock : 0);
  if (buf.size() < body_at || buf.size() - body_at != body_len) return bad("length mismatch");
  std::span<uint8_t> body(buf.data() + body_at, body_len);
  if (util::crc32c(body.data(), body.size()) != body_crc) return bad("checksum mismatch");
  if (sealed) {
    if (!keys)
      return fail(Errc::invalid_argument,
                  "catalog autobackup '" + shown + "' is encrypted: give its passphrase or key " +
                      "with " + key_options());
    auto h = decode_piece_header({reinterpret_cast<const std::byte*>(buf.data() + kHead), kBlock});
    if (!h) return bad(h.error().what);
    if (h->catalog_id != catalog_id || h->name != name) return bad("its key block is another file's");
    if (body.size() < kTagSize) return bad("shorter than its tag");
    SB_ASSIGN(auto cipher, keys->open_piece(*h, shown));
    if (auto o = cipher->open(reinterpret_cast<std::byte*>(body.data()), body.size(), 0,
                              std::span<const uint8_t>(buf.data(), kSealedAad));
        !o)
      return bad(o.error().what);
    body = body.first(body.size() - kTagSize);
  }
  SB_ASSIGN(auto records, catalog::decode_backup_records(body, shown));
  if (records.catalog_id != 0 && records.catalog_id != catalog_id)
    return bad("its records are another catalog's");
  return records;
}

}  // namespace stripeback::engine
