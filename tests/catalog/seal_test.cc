// The catalog's seal (catalog/seal.h): with a key attached every appended record carries a
// record MAC and a chain MAC; a record changed, removed, moved or added without the key is
// reported as tampering, damage is not; a wrong key is refused; compaction seals anew.
// The MAC here is a keyed test function (the engine's is HMAC-SHA256): what is tested is
// how the catalog uses it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "catalog/catalog.h"
#include "catalog/seal.h"
#include "tests/catalog/catalog_test_util.h"
#include "tests/support/temp_dir.h"
#include "util/bytes.h"
#include "util/crc32c.h"

namespace stripeback::catalog::test {
namespace {

// FNV-1a over the key and the parts, twice with different offsets: keyed, deterministic,
// and every byte counts.
class TestSealer final : public Sealer {
 public:
  explicit TestSealer(uint8_t key) : key_(key) {}
  Mac mac(std::initializer_list<std::span<const uint8_t>> parts) const override {
    uint64_t a = 1469598103934665603ull ^ key_, b = 0x9e3779b97f4a7c15ull * (key_ + 1u);
    for (auto part : parts) {
      for (uint8_t c : part) {
        a = (a ^ c) * 1099511628211ull;
        b = (b ^ c ^ (a >> 29)) * 0x100000001b3ull;
      }
      a = (a ^ 0xff) * 1099511628211ull;  // part boundaries count
    }
    Mac out{};
    for (int i = 0; i < 8; ++i) {
      out[static_cast<size_t>(i)] = static_cast<uint8_t>(a >> (8 * i));
      out[static_cast<size_t>(i) + 8] = static_cast<uint8_t>(b >> (8 * i));
    }
    return out;
  }

 private:
  uint8_t key_;
};

std::shared_ptr<const Sealer> key(uint8_t k) { return std::make_shared<const TestSealer>(k); }

SealParams params_for(const Sealer& s, uint8_t salt) {
  SealParams p;
  p.kdf = 2;
  p.salt.fill(salt);
  p.check = seal_check(s);
  p.kek_version = 1;
  p.sealed_ns = 1'700'000'000'000'000'000;
  return p;
}

std::unique_ptr<Catalog> open_sealed(const std::string& dir, uint8_t k, Create c = Create::yes) {
  auto cat = open_ok(dir, c);
  auto s = key(k);
  auto r = cat->attach_seal(s, params_for(*s, k));
  if (!r) ADD_FAILURE() << r.error().what;
  return cat;
}

// A backup of two pieces: begin, piece, piece, end (ids 1..).
void add_backup(Catalog& cat, const std::string& tag) {
  auto id = cat.begin_backup(sample_begin(tag));
  ASSERT_TRUE(id) << id.error().what;
  ASSERT_TRUE(cat.add_piece(*id, sample_piece(0, 1), {sample_file("/a", 1)}));
  ASSERT_TRUE(cat.add_piece(*id, sample_piece(0, 2), {sample_file("/b", 2, {"bk-c0-n2"})}));
  ASSERT_TRUE(cat.end_backup(*id, sample_end(2, BackupStatus::complete, 2)));
}

// Rewrites a frame's CRC after an edit, as someone who edits the log on purpose does.
void fix_crc(std::vector<uint8_t>& log, uint64_t offset) {
  uint8_t* p = log.data() + offset;
  const uint32_t length = util::get_le32(p + 4);
  util::put_le32(p + 8, frame_crc(length, std::span<const uint8_t>(p + 12, 12 + length)));
}

std::string findings(const Catalog& cat) {
  std::string out;
  for (const auto& f : cat.tampering()) out += f.what + "\n";
  return out;
}

// Reopens `dir` with key `k` and gives what it finds.
std::vector<TamperFinding> verify(const std::string& dir, uint8_t k) {
  auto cat = open_ok(dir, Create::no);
  auto s = key(k);
  auto r = cat->attach_seal(s, params_for(*s, k));
  if (!r) ADD_FAILURE() << r.error().what;
  return cat->tampering();
}

TEST(CatalogSeal, SealedRecordsVerifyAfterReopenAndTheHeaderSaysSealed) {
  testing::TempDir tmp;
  const std::string dir = tmp / "cat";
  {
    auto cat = open_sealed(dir, 7);
    add_backup(*cat, "first");
    EXPECT_TRUE(cat->sealed());
    EXPECT_TRUE(cat->tampering().empty()) << findings(*cat);
  }
  const auto log = read_bytes(log_path(dir));
  EXPECT_EQ(util::get_le16(log.data() + kFileMagic.size()), kSealedFormatVersion);
  const auto frames = frames_of(log);
  ASSERT_EQ(frames.size(), 5u);  // seal, begin, piece, piece, end
  EXPECT_EQ(frames[0].type, static_cast<uint16_t>(RecordType::seal));
  for (const auto& f : frames) EXPECT_EQ(f.seal.size(), kSealSize);
  {
    auto cat = open_ok(dir, Create::no);  // no key: sealed, nothing verified, nothing found
    EXPECT_TRUE(cat->sealed());
    EXPECT_FALSE(cat->seal_attached());
    EXPECT_TRUE(cat->tampering().empty());
    ASSERT_EQ(cat->backups().size(), 1u);
    EXPECT_EQ(cat->backups()[0].begin.tag, "first");
    EXPECT_TRUE(cat->warnings().empty()) << dump(cat->warnings());
    // Without the key nothing may be added.
    auto r = cat->set_setting("retention", "redundancy 1");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::invalid_argument);
    EXPECT_NE(r.error().what.find("is sealed"), std::string::npos) << r.error().what;
  }
  EXPECT_TRUE(verify(dir, 7).empty());
  {
    auto cat = open_sealed(dir, 7, Create::no);
    add_backup(*cat, "second");
    EXPECT_TRUE(cat->tampering().empty()) << findings(*cat);
  }
  EXPECT_TRUE(verify(dir, 7).empty());
  EXPECT_EQ(frames_of(read_bytes(log_path(dir))).size(), 9u);  // one seal record only
}

TEST(CatalogSeal, AWrongKeyIsRefusedAndIsNotTampering) {
  testing::TempDir tmp;
  const std::string dir = tmp / "cat";
  { add_backup(*open_sealed(dir, 7), "x"); }
  auto cat = open_ok(dir, Create::no);
  auto s = key(8);
  auto r = cat->attach_seal(s, params_for(*s, 8));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::wrong_key);
  EXPECT_NE(r.error().what.find("not the one the catalog"), std::string::npos) << r.error().what;
  EXPECT_TRUE(cat->tampering().empty());
}

// The first sealed record vouches for those written before the key was first attached.
TEST(CatalogSeal, RecordsFromBeforeSealingAreCoveredByTheChain) {
  testing::TempDir tmp;
  const std::string dir = tmp / "cat";
  { add_backup(*open_ok(dir), "unsealed"); }
  { add_backup(*open_sealed(dir, 7, Create::no), "sealed"); }
  EXPECT_TRUE(verify(dir, 7).empty());
  auto log = read_bytes(log_path(dir));
  const auto frames = frames_of(log);
  ASSERT_GE(frames.size(), 9u);
  ASSERT_TRUE(frames[0].seal.empty());  // begin of the unsealed backup
  // Its tag "unsealed" becomes "unsealeD": a valid record, changed.
  auto tag = std::search(log.begin() + static_cast<long>(frames[0].offset),
                          log.begin() + static_cast<long>(frames[0].offset + frames[0].size),
                          std::begin("unsealed"), std::end("unsealed") - 1);
  ASSERT_NE(tag, log.begin() + static_cast<long>(frames[0].offset + frames[0].size));
  tag[7] = 'D';
  fix_crc(log, frames[0].offset);
  write_bytes(log_path(dir), log);
  auto found = verify(dir, 7);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].sequence, frames[4].sequence);  // the seal record, first sealed one
  EXPECT_NE(found[0].what.find("does not follow"), std::string::npos) << found[0].what;
}

TEST(CatalogSeal, AChangedRecordIsTampering) {
  testing::TempDir tmp;
  const std::string dir = tmp / "cat";
  { add_backup(*open_sealed(dir, 7), "genuine"); }
  auto log = read_bytes(log_path(dir));
  const auto frames = frames_of(log);
  const Frame& begin = frames[1];
  auto tag = std::search(log.begin() + static_cast<long>(begin.offset),
                          log.begin() + static_cast<long>(begin.offset + begin.size),
                          std::begin("genuine"), std::end("genuine") - 1);
  *tag = 'G';
  fix_crc(log, begin.offset);
  write_bytes(log_path(dir), log);
  {
    auto cat = open_ok(dir, Create::no);
    EXPECT_TRUE(cat->warnings().empty()) << dump(cat->warnings());  // not damage
    EXPECT_EQ(cat->backups()[0].begin.tag, "Genuine");
  }
  auto found = verify(dir, 7);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].offset, begin.offset);
  EXPECT_NE(found[0].what.find("backup begin record with sequence 2"), std::string::npos)
      << found[0].what;
  EXPECT_NE(found[0].what.find("was changed"), std::string::npos) << found[0].what;
}

TEST(CatalogSeal, ARemovedRecordIsTampering) {
  testing::TempDir tmp;
  const std::string dir = tmp / "cat";
  { add_backup(*open_sealed(dir, 7), "x"); }
  auto log = read_bytes(log_path(dir));
  const auto frames = frames_of(log);
  const Frame& piece2 = frames[3];
  log.erase(log.begin() + static_cast<long>(piece2.offset),
            log.begin() + static_cast<long>(piece2.offset + piece2.size));
  write_bytes(log_path(dir), log);
  auto found = verify(dir, 7);
  ASSERT_EQ(found.size(), 1u) << found.size();
  EXPECT_EQ(found[0].sequence, frames[4].sequence);  // the end record after the gap
  EXPECT_NE(found[0].what.find("removed"), std::string::npos) << found[0].what;
}

TEST(CatalogSeal, SwappedRecordsAreTampering) {
  testing::TempDir tmp;
  const std::string dir = tmp / "cat";
  { add_backup(*open_sealed(dir, 7), "x"); }
  auto log = read_bytes(log_path(dir));
  const auto frames = frames_of(log);
  // Piece records 3 and 4 swapped, renumbered so the sequence still rises.
  std::vector<uint8_t> a(log.begin() + static_cast<long>(frames[2].offset),
                         log.begin() + static_cast<long>(frames[2].offset + frames[2].size));
  std::vector<uint8_t> b(log.begin() + static_cast<long>(frames[3].offset),
                         log.begin() + static_cast<long>(frames[3].offset + frames[3].size));
  util::put_le64(a.data() + 12, frames[3].sequence);
  util::put_le64(b.data() + 12, frames[2].sequence);
  std::vector<uint8_t> out(log.begin(), log.begin() + static_cast<long>(frames[2].offset));
  const uint64_t b_at = out.size();
  out.insert(out.end(), b.begin(), b.end());
  const uint64_t a_at = out.size();
  out.insert(out.end(), a.begin(), a.end());
  out.insert(out.end(), log.begin() + static_cast<long>(frames[3].offset + frames[3].size),
             log.end());
  fix_crc(out, b_at);
  fix_crc(out, a_at);
  write_bytes(log_path(dir), out);
  EXPECT_FALSE(verify(dir, 7).empty());
}

TEST(CatalogSeal, ARecordAddedWithoutTheKeyIsTampering) {
  testing::TempDir tmp;
  const std::string dir = tmp / "cat";
  { add_backup(*open_sealed(dir, 7), "x"); }
  auto log = read_bytes(log_path(dir));
  const auto frames = frames_of(log);
  auto rec = encode_setting({"retention", "redundancy 99", 5});
  ASSERT_TRUE(rec);
  append_frame(log, frames.back().sequence + 1, rec->type, rec->payload);
  write_bytes(log_path(dir), log);
  auto found = verify(dir, 7);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].what.find("setting record"), std::string::npos) << found[0].what;
  EXPECT_NE(found[0].what.find("carries no seal"), std::string::npos) << found[0].what;
}

TEST(CatalogSeal, DamageIsReportedAsDamageNotTampering) {
  testing::TempDir tmp;
  const std::string dir = tmp / "cat";
  { add_backup(*open_sealed(dir, 7), "x"); }
  auto log = read_bytes(log_path(dir));
  const auto frames = frames_of(log);
  log[frames[2].offset + kFrameHeaderSize + 3] ^= 0x40;  // CRC left as it was
  write_bytes(log_path(dir), log);
  auto cat = open_ok(dir, Create::no);
  EXPECT_FALSE(cat->warnings().empty());
  auto s = key(7);
  ASSERT_TRUE(cat->attach_seal(s, params_for(*s, 7)));
  EXPECT_TRUE(cat->tampering().empty()) << findings(*cat);
}

TEST(CatalogSeal, StrippedSealsAreTampering) {
  testing::TempDir tmp;
  const std::string dir = tmp / "cat";
  { add_backup(*open_sealed(dir, 7), "x"); }
  auto log = read_bytes(log_path(dir));
  const auto frames = frames_of(log);
  // Every record written again without its seal, the Seal record left out; header kept.
  std::vector<uint8_t> stripped(log.begin(), log.begin() + kFileHeaderSize);
  uint64_t seq = 0;
  for (const auto& f : frames)
    if (f.type != static_cast<uint16_t>(RecordType::seal))
      append_frame(stripped, ++seq, static_cast<RecordType>(f.type), f.payload);
  write_bytes(log_path(dir), stripped);
  auto cat = open_ok(dir, Create::no);
  ASSERT_EQ(cat->tampering().size(), 1u);  // seen without a key
  EXPECT_NE(cat->tampering()[0].what.find("stripped"), std::string::npos) << findings(*cat);
  // The Seal record alone removed: the others still carry seals.
  std::vector<uint8_t> no_seal_record(log.begin(), log.begin() + kFileHeaderSize);
  no_seal_record.insert(no_seal_record.end(),
                        log.begin() + static_cast<long>(frames[1].offset), log.end());
  write_bytes(log_path(dir), no_seal_record);
  auto cat2 = open_ok(dir, Create::no);
  EXPECT_NE(findings(*cat2).find("seal record is gone"), std::string::npos) << findings(*cat2);
  auto s = key(7);
  auto r = cat2->attach_seal(s, params_for(*s, 7));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::tampered);
}

// Another process's sealed appends are verified as they are read, and this one's chain
// goes on after them.
TEST(CatalogSeal, TwoWritersShareTheChain) {
  testing::TempDir tmp;
  const std::string dir = tmp / "cat";
  auto a = open_sealed(dir, 7);
  add_backup(*a, "a1");
  auto b = open_sealed(dir, 7, Create::no);
  add_backup(*b, "b1");
  add_backup(*a, "a2");
  add_backup(*b, "b2");
  EXPECT_TRUE(a->tampering().empty()) << findings(*a);
  EXPECT_TRUE(b->tampering().empty()) << findings(*b);
  EXPECT_TRUE(verify(dir, 7).empty());
  EXPECT_EQ(open_ok(dir, Create::no)->backups().size(), 4u);
}

TEST(CatalogSeal, CompactionSealsAnewAndCanChangeTheKey) {
  testing::TempDir tmp;
  const std::string dir = tmp / "cat";
  {
    auto cat = open_ok(dir);
    add_backup(*cat, "before");
  }
  {
    auto cat = open_ok(dir, Create::no);  // no key: an unsealed log compacts as ever
    ASSERT_TRUE(cat->compact());
  }
  {
    auto cat = open_sealed(dir, 7, Create::no);
    add_backup(*cat, "after");
    auto rep = cat->compact();
    ASSERT_TRUE(rep) << rep.error().what;
    EXPECT_TRUE(cat->tampering().empty()) << findings(*cat);
  }
  EXPECT_TRUE(verify(dir, 7).empty());
  {
    auto cat = open_ok(dir, Create::no);
    auto r = cat->compact();  // sealed, no key
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::invalid_argument);
  }
  {
    auto cat = open_sealed(dir, 7, Create::no);
    CompactOptions o;
    o.reseal = key(9);
    o.reseal_params = params_for(*o.reseal, 9);
    o.reseal_params.kek_version = 2;
    ASSERT_TRUE(cat->compact(o));
    add_backup(*cat, "under the new key");
    EXPECT_TRUE(cat->tampering().empty()) << findings(*cat);
    EXPECT_EQ(cat->seal_params()->kek_version, 2u);
  }
  EXPECT_TRUE(verify(dir, 9).empty());
  {
    auto cat = open_ok(dir, Create::no);
    auto s = key(7);
    auto r = cat->attach_seal(s, params_for(*s, 7));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::wrong_key);
    EXPECT_EQ(cat->backups().size(), 3u);
  }
  // A catalog that shows tampering is not compacted: that would seal the change.
  auto log = read_bytes(log_path(dir));
  const auto frames = frames_of(log);
  log[frames[1].offset + kFrameHeaderSize + 12] ^= 1;
  fix_crc(log, frames[1].offset);
  write_bytes(log_path(dir), log);
  auto cat = open_sealed(dir, 9, Create::no);
  ASSERT_FALSE(cat->tampering().empty());
  auto r = cat->compact();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::tampered);
}

}  // namespace
}  // namespace stripeback::catalog::test
