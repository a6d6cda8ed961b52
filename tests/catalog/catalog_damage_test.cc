// Catalog: torn tails, flipped bits, replayed and foreign records. None may be misread,
// none may stop the rest of the log from loading.
#include <gtest/gtest.h>

#include "backends/local/local_storage.h"
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "catalog/catalog.h"
#include "catalog/payload.h"
#include "catalog/record_log.h"
#include "tests/catalog/catalog_test_util.h"
#include "tests/support/temp_dir.h"

namespace stripeback::catalog::test {
namespace {

// Two backups: 1 = begin, piece, piece, files, end(2); 2 = begin, end(0).
// Frames: 0 b1 begin, 1 piece, 2 piece, 3 files, 4 b1 end, 5 b2 begin, 6 b2 end.
std::vector<Frame> make_two_backups(const std::string& dir) {
  auto cat = open_ok(dir);
  if (!cat) return {};
  uint64_t a = *cat->begin_backup(sample_begin("a"));
  EXPECT_TRUE(cat->add_piece(a, sample_piece(0, 1), {sample_file("/a/1", 1)}));
  EXPECT_TRUE(cat->add_piece(a, sample_piece(1, 1), {sample_file("/a/2", 2)}));
  EXPECT_TRUE(cat->add_files(a, {sample_file("/a/3", 3)}));
  EXPECT_TRUE(cat->end_backup(a, sample_end(2)));
  uint64_t b = *cat->begin_backup(sample_begin("b"));
  EXPECT_TRUE(cat->end_backup(b, sample_end(0, BackupStatus::complete, 0)));
  auto frames = frames_of(read_bytes(log_path(dir)));
  EXPECT_EQ(frames.size(), 7u);
  return frames;
}

void flip_bit(const std::string& path, uint64_t offset, int bit) {
  auto bytes = read_bytes(path);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] ^= static_cast<uint8_t>(1u << bit);
  write_bytes(path, bytes);
}

std::vector<std::string> torn_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind("catalog.log.torn-", 0) == 0) out.push_back(e.path().string());
  }
  return out;
}

TEST(CatalogDamage, TornTailIsIgnoredThenCutAndSaved) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  auto frames = make_two_backups(dir);
  ASSERT_EQ(frames.size(), 7u);
  const uint64_t torn_at = frames[6].offset;
  auto full = read_bytes(log_path(dir));
  std::vector<uint8_t> kept(full.begin(), full.begin() + static_cast<long>(torn_at + 30));
  write_bytes(log_path(dir), kept);

  auto reader = open_ok(dir, Create::no);
  ASSERT_TRUE(reader);
  auto ws = reader->warnings();
  ASSERT_EQ(ws.size(), 1u) << dump(ws);
  EXPECT_EQ(ws[0].offset, torn_at);
  EXPECT_EQ(ws[0].length, 30u);
  EXPECT_EQ(ws[0].what.rfind("torn record at end of log (incomplete record", 0), 0u) << ws[0].what;
  auto b = reader->backups();
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].status_name(), "complete");
  EXPECT_EQ(b[1].status_name(), "incomplete");
  ASSERT_TRUE(reader->refresh());  // the tail is reported once, not once per load
  EXPECT_EQ(reader->warnings().size(), 1u);

  auto writer = open_ok(dir, Create::no);
  ASSERT_TRUE(writer);
  auto id = writer->begin_backup(sample_begin("c"));
  ASSERT_TRUE(id) << id.error().what;
  EXPECT_EQ(*id, 3u);
  EXPECT_TRUE(has_warning(writer->warnings(), torn_at, "cut 30 bytes of torn tail"))
      << dump(writer->warnings());

  auto saved = torn_files(dir);
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_NE(saved[0].find("-" + std::to_string(torn_at)), std::string::npos) << saved[0];
  EXPECT_EQ(read_bytes(saved[0]),
            std::vector<uint8_t>(kept.begin() + static_cast<long>(torn_at), kept.end()));

  ScanResult scan;
  auto now = frames_of(read_bytes(log_path(dir)), &scan);
  EXPECT_TRUE(scan.warnings.empty());
  EXPECT_FALSE(scan.torn_tail);
  ASSERT_EQ(now.size(), 7u);
  EXPECT_EQ(now[6].offset, torn_at);
  for (size_t i = 0; i < now.size(); ++i) EXPECT_EQ(now[i].sequence, i + 1);

  ASSERT_TRUE(reader->refresh());
  EXPECT_EQ(reader->backups().size(), 3u);
  auto fresh = open_ok(dir, Create::no);
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(fresh->warnings().empty()) << dump(fresh->warnings());
  b = fresh->backups();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[1].status_name(), "incomplete");
  EXPECT_EQ(b[2].begin.tag, "c");
}

TEST(CatalogDamage, TornHeaderOfLastRecord) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  auto frames = make_two_backups(dir);
  ASSERT_EQ(frames.size(), 7u);
  auto full = read_bytes(log_path(dir));
  write_bytes(
      log_path(dir),
      std::vector<uint8_t>(full.begin(), full.begin() + static_cast<long>(frames[6].offset + 7)));
  auto cat = open_ok(dir);
  ASSERT_TRUE(cat);
  EXPECT_TRUE(has_warning(cat->warnings(), frames[6].offset, "incomplete record header, 7 of 24"))
      << dump(cat->warnings());
  EXPECT_EQ(cat->backups().size(), 2u);
}

TEST(CatalogDamage, FlippedBitInMiddleRecordSkipsOnlyThatRecord) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  auto frames = make_two_backups(dir);
  ASSERT_EQ(frames.size(), 7u);
  flip_bit(log_path(dir), frames[2].offset + kFrameHeaderSize + 5, 3);  // second piece

  auto cat = open_ok(dir);
  ASSERT_TRUE(cat);
  auto ws = cat->warnings();
  ASSERT_EQ(ws.size(), 1u) << dump(ws);
  EXPECT_EQ(ws[0].offset, frames[2].offset);
  EXPECT_EQ(ws[0].length, frames[2].size);
  EXPECT_NE(ws[0].what.find("crc mismatch"), std::string::npos) << ws[0].what;
  EXPECT_NE(ws[0].what.find("1 record(s) lost"), std::string::npos) << ws[0].what;
  auto b = cat->backups();
  ASSERT_EQ(b.size(), 2u);
  ASSERT_EQ(b[0].pieces.size(), 1u);
  EXPECT_EQ(b[0].pieces[0].name, sample_piece(0, 1).name);
  ASSERT_EQ(b[0].files.size(), 2u);  // the first piece's file and the files record
  EXPECT_EQ(b[0].files[1].path, "/a/3");
  EXPECT_EQ(b[0].status_name(), "damaged");  // the end names 2 pieces
  EXPECT_EQ(b[1].status_name(), "complete");

  // Appending continues after the damage: the hole stays, sequence carries on.
  ASSERT_TRUE(cat->begin_backup(sample_begin("c")));
  auto now = frames_of(read_bytes(log_path(dir)));
  ASSERT_EQ(now.size(), 7u);
  EXPECT_EQ(now.back().sequence, 8u);
}

TEST(CatalogDamage, FlippedBitsInFrameHeaders) {
  // Magic, length, sequence and type of a middle record: each is caught and skipped.
  for (uint64_t field : {uint64_t{0}, uint64_t{4}, uint64_t{13}, uint64_t{20}}) {
    testing::TempDir tmp;
    std::string dir = tmp / "cat";
    auto frames = make_two_backups(dir);
    ASSERT_EQ(frames.size(), 7u);
    flip_bit(log_path(dir), frames[3].offset + field, 6);
    auto cat = open_ok(dir);
    ASSERT_TRUE(cat);
    auto ws = cat->warnings();
    ASSERT_EQ(ws.size(), 1u) << "field " << field << "\n" << dump(ws);
    EXPECT_EQ(ws[0].offset, frames[3].offset);
    EXPECT_EQ(ws[0].length, frames[3].size);
    if (field == 0) {
      EXPECT_NE(ws[0].what.find("bad magic"), std::string::npos) << ws[0].what;
    }
    auto b = cat->backups();
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b[0].files.size(), 2u);  // the files record is gone
    // The end record counts 3 files: a backup short of one is damaged, not complete.
    EXPECT_EQ(b[0].status_name(), "damaged");
    EXPECT_FALSE(b[0].usable());
    EXPECT_EQ(b[0].damage, "2 of its 3 file records are readable");
    EXPECT_EQ(b[1].status_name(), "complete");
  }
}

TEST(CatalogDamage, FlippedBitInBackupEndLeavesBackupIncomplete) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  auto frames = make_two_backups(dir);
  ASSERT_EQ(frames.size(), 7u);
  flip_bit(log_path(dir), frames[4].offset + kFrameHeaderSize + 9, 0);  // the status byte
  auto cat = open_ok(dir);
  ASSERT_TRUE(cat);
  EXPECT_TRUE(has_warning(cat->warnings(), frames[4].offset, "crc mismatch"))
      << dump(cat->warnings());
  auto b = cat->backups();
  ASSERT_EQ(b.size(), 2u);
  EXPECT_FALSE(b[0].ended);
  EXPECT_EQ(b[0].status_name(), "incomplete");
  EXPECT_FALSE(b[0].usable());
  EXPECT_TRUE(b[1].usable());
}

TEST(CatalogDamage, ReplayedRecordIsSkipped) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  auto frames = make_two_backups(dir);
  ASSERT_EQ(frames.size(), 7u);
  auto bytes = read_bytes(log_path(dir));
  uint64_t replay_at = bytes.size();
  bytes.insert(bytes.end(), bytes.begin() + static_cast<long>(frames[1].offset),
               bytes.begin() + static_cast<long>(frames[1].offset + frames[1].size));
  write_bytes(log_path(dir), bytes);
  auto cat = open_ok(dir);
  ASSERT_TRUE(cat);
  EXPECT_TRUE(
      has_warning(cat->warnings(), replay_at, "record with sequence 2 does not follow sequence 7"))
      << dump(cat->warnings());
  EXPECT_EQ(cat->backups()[0].pieces.size(), 2u);
  ASSERT_TRUE(cat->begin_backup(sample_begin("c")));  // written after the replayed bytes
  auto again = open_ok(dir);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->backups().size(), 3u);
  EXPECT_EQ(again->warnings().size(), 1u) << dump(again->warnings());
}

TEST(CatalogDamage, MissingRecordIsReportedAsSequenceGap) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  auto frames = make_two_backups(dir);
  ASSERT_EQ(frames.size(), 7u);
  auto bytes = read_bytes(log_path(dir));
  bytes.erase(bytes.begin() + static_cast<long>(frames[3].offset),
              bytes.begin() + static_cast<long>(frames[3].offset + frames[3].size));
  write_bytes(log_path(dir), bytes);
  auto cat = open_ok(dir);
  ASSERT_TRUE(cat);
  EXPECT_TRUE(has_warning(cat->warnings(), frames[3].offset, "sequence jumps from 3 to 5"))
      << dump(cat->warnings());
  EXPECT_EQ(cat->backups().size(), 2u);
}

// Appends a hand-made record, as another (perhaps newer) writer might have.
void append_raw(const std::string& dir, RecordType type, const std::vector<uint8_t>& payload) {
  auto bytes = read_bytes(log_path(dir));
  uint64_t last = frames_of(bytes).back().sequence;
  append_frame(bytes, last + 1, type, payload);
  write_bytes(log_path(dir), bytes);
}

TEST(CatalogDamage, RecordsForABackupWithoutBeginListItDamagedAndReserveItsId) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  make_two_backups(dir);
  auto files = encode_files(99, {sample_file("/ghost", 1)});
  ASSERT_TRUE(files);
  append_raw(dir, RecordType::files, (*files)[0].payload);
  auto cat = open_ok(dir);
  ASSERT_TRUE(cat);
  auto ws = cat->warnings();
  ASSERT_EQ(ws.size(), 1u) << dump(ws);
  EXPECT_NE(ws[0].what.find("files record for backup 99, whose begin record is missing"),
            std::string::npos)
      << ws[0].what;
  auto b = cat->backups();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2].id, 99u);
  EXPECT_EQ(b[2].status_name(), "damaged");
  EXPECT_FALSE(b[2].usable());
  EXPECT_EQ(b[2].damage, "its begin record is missing or unreadable");
  EXPECT_EQ(*cat->begin_backup(sample_begin("c")), 100u);
}

// Regression (found by fuzz_catalog_payload): a valid record naming backup id 2^64-1 made
// the next id wrap to 0, which the model refuses, so no later backup could be recorded.
// Ids outside 1..kMaxBackupId make a record malformed; it reserves nothing.
TEST(CatalogDamage, RecordsWithBackupIdsOutOfRangeAreIgnored) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  make_two_backups(dir);
  auto begin = encode_begin(3, sample_begin("huge"));
  ASSERT_TRUE(begin);
  std::vector<uint8_t> huge = begin->payload;
  std::fill(huge.begin() + 1, huge.begin() + 9, uint8_t{0xff});
  append_raw(dir, RecordType::backup_begin, huge);
  std::vector<uint8_t> zero = begin->payload;
  std::fill(zero.begin() + 1, zero.begin() + 9, uint8_t{0});
  append_raw(dir, RecordType::backup_begin, zero);

  auto cat = open_ok(dir);
  ASSERT_TRUE(cat);
  auto ws = cat->warnings();
  ASSERT_EQ(ws.size(), 2u) << dump(ws);
  EXPECT_NE(ws[0].what.find("backup id 18446744073709551615 is out of range"), std::string::npos)
      << ws[0].what;
  EXPECT_NE(ws[1].what.find("backup id 0 is out of range"), std::string::npos) << ws[1].what;
  EXPECT_EQ(cat->backups().size(), 2u);
  auto id = cat->begin_backup(sample_begin("next"));
  ASSERT_TRUE(id) << id.error().what;
  EXPECT_EQ(*id, 3u);
  ASSERT_TRUE(cat->add_piece(*id, sample_piece(0, 1), {sample_file("/n", 1)}));
  ASSERT_TRUE(cat->end_backup(*id, sample_end(1, BackupStatus::complete, 1)));
  auto again = open_ok(dir);
  ASSERT_TRUE(again);
  ASSERT_EQ(again->backups().size(), 3u);
  EXPECT_EQ(again->backups()[2].status_name(), "complete");
  // Writers refuse such ids too, so a reader never drops what was written.
  EXPECT_FALSE(encode_begin(0, sample_begin("x")));
  EXPECT_FALSE(encode_end(kMaxBackupId + 1, sample_end(0)));
  EXPECT_TRUE(encode_end(kMaxBackupId, sample_end(0)));
}

TEST(CatalogDamage, NewerPayloadVersionAndUnknownTypes) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  make_two_backups(dir);
  BackupBegin future = sample_begin("future");
  future.catalog_id = 0x0123456789abcdef;
  future.level = 0;  // every field this version knows
  future.change_unit = 65536;
  auto begin = encode_begin(3, future);
  ASSERT_TRUE(begin);
  std::vector<uint8_t> newer = begin->payload;
  newer[0] = kLevelPayloadVersion + 1;  // a later version with one more field
  newer.push_back(0x55);
  append_raw(dir, RecordType::backup_begin, newer);
  std::vector<uint8_t> sloppy = begin->payload;  // same version, stray byte: malformed
  sloppy[1] = 4;
  sloppy.push_back(0x55);
  append_raw(dir, RecordType::backup_begin, sloppy);
  append_raw(dir, static_cast<RecordType>(77), {1, 2, 3});

  auto cat = open_ok(dir);
  ASSERT_TRUE(cat);
  auto ws = cat->warnings();
  ASSERT_EQ(ws.size(), 2u) << dump(ws);
  EXPECT_NE(ws[0].what.find("malformed backup begin record (sequence 9): 1 unexpected bytes"),
            std::string::npos)
      << ws[0].what;
  EXPECT_NE(ws[1].what.find("unknown type 77"), std::string::npos) << ws[1].what;
  auto b = cat->backups();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2].begin.tag, "future");
  EXPECT_EQ(b[2].begin.catalog_id, 0x0123456789abcdefu);
  // The malformed record's id is unknown, so the next id follows the readable ones.
  EXPECT_EQ(*cat->begin_backup(sample_begin("next")), 4u);
}

TEST(CatalogDamage, FailedWriteLeavesNoPartialRecord) {
  testing::TempDir tmp;
  std::string dir = tmp / "cat";
  make_two_backups(dir);
  const auto before = read_bytes(log_path(dir));
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A file size limit just past the end makes the write fail part way (EFBIG).
    auto cat = Catalog::open(dir, Create::no, io::local_storage());
    if (!cat) ::_exit(2);
    uint64_t id = *(*cat)->begin_backup(sample_begin("doomed"));
    if (::signal(SIGXFSZ, SIG_IGN) == SIG_ERR) ::_exit(7);
    struct stat st {};
    if (::stat(log_path(dir).c_str(), &st) != 0) ::_exit(3);
    struct rlimit lim {};
    if (::getrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(4);
    lim.rlim_cur = static_cast<rlim_t>(st.st_size + 100);
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(5);
    std::vector<FileRecord> files;
    for (uint32_t i = 0; i < 50; ++i) files.push_back(sample_file("/f/" + std::to_string(i), i));
    auto r = (*cat)->add_files(id, files);
    ::_exit(r ? 6 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);

  auto cat = open_ok(dir);
  ASSERT_TRUE(cat);
  EXPECT_TRUE(cat->warnings().empty()) << dump(cat->warnings());
  auto b = cat->backups();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_TRUE(b[2].files.empty());
  ScanResult scan;
  EXPECT_EQ(frames_of(read_bytes(log_path(dir)), &scan).size(), 8u);
  EXPECT_FALSE(scan.torn_tail);
  EXPECT_GT(read_bytes(log_path(dir)).size(), before.size());
}

}  // namespace
}  // namespace stripeback::catalog::test
