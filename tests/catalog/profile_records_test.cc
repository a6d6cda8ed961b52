// File profile records: a backup's profiles survive a reopen joined from every record, a
// large set is split over several records, a deleted backup's are gone and a compaction
// that drops the backup drops them; unknown backups and malformed payloads are refused.
#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "catalog/payload.h"
#include "tests/catalog/catalog_test_util.h"
#include "tests/support/temp_dir.h"
#include "util/bytes.h"

namespace stripeback::catalog::test {
namespace {

FileProfile profile_of(const std::string& path, uint64_t n) {
  return {path, 1000 * n, n, (uint64_t{1} << 40) + n, 7 * n};
}

// Rewrites the type of every frame of type `from` to `to`, its CRC made again.
size_t retype_frames(std::vector<uint8_t>& log, uint16_t from, uint16_t to) {
  size_t n = 0;
  for (const Frame& f : frames_of(log)) {
    if (f.type != from) continue;
    uint8_t* h = log.data() + f.offset;
    util::put_le16(h + 20, to);
    const uint32_t length = util::get_le32(h + 4);
    util::put_le32(h + 8, frame_crc(length, std::span<const uint8_t>(h + 12, f.size - 12)));
    ++n;
  }
  return n;
}

void expect_same(const FileProfile& a, const FileProfile& b) {
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.pages_checked, b.pages_checked);
  EXPECT_EQ(a.pages_failed, b.pages_failed);
  EXPECT_EQ(a.bytes_raw, b.bytes_raw);
  EXPECT_EQ(a.bytes_stored, b.bytes_stored);
}

uint64_t backup_with_profiles(Catalog& cat, const FileProfiles& p) {
  auto id = cat.begin_backup(sample_begin("p"));
  EXPECT_TRUE(id);
  FileProfiles q = p;
  q.backup_id = *id;
  EXPECT_TRUE(cat.add_file_profiles(q));
  EXPECT_TRUE(cat.add_piece(*id, sample_piece(0, 1), {sample_file("/db/a", 1)}));
  EXPECT_TRUE(cat.end_backup(*id, sample_end(1, BackupStatus::complete, 1)));
  return *id;
}

TEST(ProfileRecords, ProfilesSurviveAReopenInOrder) {
  testing::TempDir tmp;
  FileProfiles p;
  p.files = {profile_of("/db/base/1/16384", 1), profile_of("/db/base/1/16384.1", 2),
             {"/db/not compressed", 8, 0, 0, 0}, {"/db/not checked", 0, 0, 4096, 100}};
  uint64_t id = 0;
  {
    auto cat = open_ok(tmp / "cat");
    id = backup_with_profiles(*cat, p);
    EXPECT_FALSE(cat->file_profiles(id + 1));
    auto now = cat->file_profiles(id);
    ASSERT_TRUE(now);
    ASSERT_EQ(now->files.size(), 4u);
  }
  auto cat = open_ok(tmp / "cat", Create::no);
  EXPECT_TRUE(cat->warnings().empty());
  auto got = cat->file_profiles(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->backup_id, id);
  ASSERT_EQ(got->files.size(), p.files.size());
  for (size_t i = 0; i < p.files.size(); ++i) expect_same(got->files[i], p.files[i]);
}

TEST(ProfileRecords, ManyFilesAreSplitOverRecordsAndJoinedAgain) {
  FileProfiles p;
  p.backup_id = 3;
  const std::string long_dir(60000, 'd');
  for (uint64_t i = 0; i < 400; ++i) p.files.push_back(profile_of("/" + long_dir + "/" + std::to_string(i), i));
  auto recs = encode_file_profiles(p);
  ASSERT_TRUE(recs);
  ASSERT_GT(recs->size(), 1u);  // 400 x 60 KB do not fit one payload of 16 MiB
  std::vector<FileProfile> joined;
  for (const auto& r : *recs) {
    EXPECT_EQ(r.type, RecordType::file_profile);
    EXPECT_LE(r.payload.size(), kMaxPayload);
    auto d = decode_file_profiles(r.payload);
    ASSERT_TRUE(d) << d.error().what;
    EXPECT_EQ(d->backup_id, 3u);
    joined.insert(joined.end(), d->files.begin(), d->files.end());
  }
  ASSERT_EQ(joined.size(), p.files.size());
  for (size_t i = 0; i < joined.size(); ++i) expect_same(joined[i], p.files[i]);
}

TEST(ProfileRecords, AnEntryIsCompact) {
  FileProfiles p{9, {profile_of("/db/base/1/16384", 3)}};
  auto recs = encode_file_profiles(p);
  ASSERT_TRUE(recs);
  ASSERT_EQ(recs->size(), 1u);
  // 13 bytes of record head; the entry: length 1, path 1 + 16, numbers 2 + 1 + 6 + 1.
  EXPECT_EQ(recs->front().payload.size(), 13u + 1 + 17 + 2 + 1 + 6 + 1);
}

TEST(ProfileRecords, DeletedAndCompactedBackupsLoseTheirProfiles) {
  testing::TempDir tmp;
  auto cat = open_ok(tmp / "cat");
  FileProfiles p{0, {profile_of("/db/a", 1)}};
  const uint64_t first = backup_with_profiles(*cat, p);
  const uint64_t second = backup_with_profiles(*cat, p);
  ASSERT_TRUE(cat->file_profiles(first));
  CompactOptions o;
  o.drop_backup = [&](uint64_t id) { return id == first; };
  auto rep = cat->compact(o);
  ASSERT_TRUE(rep) << rep.error().what;
  EXPECT_FALSE(cat->file_profiles(first));
  EXPECT_TRUE(cat->file_profiles(second));
  EXPECT_TRUE(cat->warnings().empty());
}

TEST(ProfileRecords, UnknownBackupsAndMalformedPayloadsAreRefused) {
  testing::TempDir tmp;
  auto cat = open_ok(tmp / "cat");
  auto r = cat->add_file_profiles({42, {profile_of("/x", 1)}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::not_found);
  EXPECT_FALSE(encode_file_profiles({1, {}}));
  EXPECT_FALSE(encode_file_profiles({1, {{"", 1, 0, 0, 0}}}));
  EXPECT_FALSE(encode_file_profiles({0, {profile_of("/x", 1)}}));
  auto good = encode_file_profiles({1, {profile_of("/x", 1)}});
  ASSERT_TRUE(good);
  auto payload = good->front().payload;
  auto cut = payload;
  cut.pop_back();
  EXPECT_FALSE(decode_file_profiles(cut));
  auto extra = payload;
  extra.push_back(0);
  EXPECT_FALSE(decode_file_profiles(extra));
  // More failing pages than checked: not a profile any writer makes.
  auto bad = encode_file_profiles({1, {{"/x", 1, 2, 0, 0}}});
  ASSERT_TRUE(bad);
  EXPECT_FALSE(decode_file_profiles(bad->front().payload));
  // A newer version's entry may carry more fields: they are skipped.
  FileProfiles one{1, {{"/x", 5, 1, 0, 0}}};
  auto v = encode_file_profiles(one);
  ASSERT_TRUE(v);
  auto newer = v->front().payload;
  newer[0] = kPayloadVersion + 1;
  newer[13] = static_cast<uint8_t>(newer[13] + 1);  // the entry's length, one byte longer
  newer.push_back(0x55);
  auto d = decode_file_profiles(newer);
  ASSERT_TRUE(d) << d.error().what;
  EXPECT_EQ(d->files.at(0).pages_checked, 5u);
}

TEST(ProfileRecords, AnOlderReaderSkipsTheRecordWithAWarning) {
  // What a build without type 18 does with it is what this build does with a type it does
  // not know: the record is skipped and reported, the backup it names stays whole.
  testing::TempDir tmp;
  const uint64_t id = [&] {
    auto cat = open_ok(tmp / "cat");
    return backup_with_profiles(*cat, {0, {profile_of("/db/a", 1)}});
  }();
  auto bytes = read_bytes(log_path(tmp / "cat"));
  // Rewrites every type-18 frame as type 60 (no build knows it), keeping its CRC valid.
  ASSERT_GT(retype_frames(bytes, 18, 60), 0u);
  write_bytes(log_path(tmp / "cat"), bytes);
  auto cat = open_ok(tmp / "cat", Create::no);
  EXPECT_FALSE(cat->file_profiles(id));
  ASSERT_EQ(cat->warnings().size(), 1u);
  EXPECT_NE(cat->warnings()[0].what.find("unknown type 60"), std::string::npos);
  EXPECT_EQ(cat->backups().at(0).status_name(), "complete");
}

}  // namespace
}  // namespace stripeback::catalog::test
