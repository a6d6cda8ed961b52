// Damaged pieces are detected at restore: the job fails (exit 1), the error names the
// piece, the byte offset and the affected file, and the affected file is not left behind
// (neither under its name nor as a temporary file), while unaffected files come back intact.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <string>

#include "engine/format/piece_format.h"
#include "engine/pieces/piece_reader.h"
#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

using engine::FrameType;
using engine::kBlock;

struct Target {
  std::string piece;          // piece path
  std::string file;           // original path of the file whose frame is hit
  uint64_t frame_offset = 0;  // piece offset of the frame header block
  uint32_t stored_len = 0;
};

// Backs up the small data set with one channel and returns a data frame in the middle of
// the file with the most data frames in the largest piece, checked against the frame
// header actually on disk.
void back_up_and_pick(const TempDir& t, Target* out) {
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  RunResult b =
      sb({"backup", data, "--to", t / "pieces", "--catalog", t / "cat", "--channels", "1"});
  SB_ASSERT_EXIT(b, 0);
  auto pieces = pieces_in(t / "pieces");
  ASSERT_FALSE(pieces.empty());
  std::string piece = pieces.front();
  for (const auto& p : pieces)
    if (file_size(p) > file_size(piece)) piece = p;

  auto reader = engine::PieceReader::open(piece, io::Direct::no);
  ASSERT_TRUE(reader.has_value()) << reader.error().what;
  const auto& tr = (*reader)->trailer();
  size_t best = tr.files.size();
  size_t best_count = 0;
  for (size_t i = 0; i < tr.files.size(); ++i) {
    size_t n = 0;
    for (const auto& e : tr.extents[i]) n += e.type == FrameType::data ? 1 : 0;
    if (n > best_count) {
      best = i;
      best_count = n;
    }
  }
  ASSERT_LT(best, tr.files.size()) << "no data frame in " << piece;
  std::vector<const engine::Extent*> data_extents;
  for (const auto& e : tr.extents[best])
    if (e.type == FrameType::data) data_extents.push_back(&e);
  const engine::Extent& e = *data_extents[data_extents.size() / 2];

  // Confirm on disk that this is a data frame of that file with a payload.
  int fd = ::open(piece.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::array<std::byte, kBlock> block{};
  ssize_t n = ::pread(fd, block.data(), kBlock, static_cast<off_t>(e.frame_offset));
  ::close(fd);
  ASSERT_EQ(n, static_cast<ssize_t>(kBlock));
  auto h = engine::decode_frame_header(block);
  ASSERT_TRUE(h.has_value()) << h.error().what;
  ASSERT_EQ(h->type, FrameType::data);
  ASSERT_EQ(h->file_id, static_cast<uint32_t>(best));
  ASSERT_GT(h->stored_len, 0u);
  ASSERT_EQ(h->stored_len, e.stored_len);
  *out = {piece, tr.files[best].path, e.frame_offset, h->stored_len};
}

void flip_byte(const std::string& path, uint64_t offset) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  unsigned char c = 0;
  ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(offset)), 1);
  c ^= 0x5a;
  ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(offset)), 1);
  ASSERT_EQ(::fsync(fd), 0);
  ::close(fd);
}

// The offset the error reports for `piece`, or nullopt when there is none.
std::optional<uint64_t> reported_offset(const std::string& err, const std::string& piece) {
  const std::string head = "piece '" + piece + "' is corrupt at offset ";
  for (size_t at = err.find(head); at != std::string::npos; at = err.find(head, at + 1)) {
    const size_t from = at + head.size();
    size_t to = from;
    while (to < err.size() && err[to] >= '0' && err[to] <= '9') ++to;
    if (to > from) return std::stoull(err.substr(from, to - from));
  }
  return std::nullopt;
}

// After a failed restore: the affected file is absent, no temporary file remains, and
// whatever else was restored is identical to its original.
void expect_clean_failure(const std::string& root, const std::string& affected) {
  EXPECT_FALSE(exists(restored_path(root, affected)))
      << "the damaged file was left behind at " << restored_path(root, affected);
  auto originals = files_under(small_data());
  size_t restored = 0;
  for (const auto& e : entries_under(root)) {
    EXPECT_EQ(e.find(".sbrestore-"), std::string::npos) << "temporary file left behind: " << e;
    bool known = false;
    for (const auto& o : originals) {
      if (restored_path(root, o) != e) continue;
      known = true;
      EXPECT_NE(o, affected);
      EXPECT_TRUE(same_file(o, e));
      ++restored;
    }
    EXPECT_TRUE(known) << "unexpected entry " << e;
  }
  ::testing::Test::RecordProperty("unaffected_files_restored", static_cast<int>(restored));
}

TEST(Corruption, FlippedPayloadByteFailsRestoreNamingPieceOffsetAndFile) {
  TempDir t("sbit-corrupt");
  Target tg;
  back_up_and_pick(t, &tg);
  if (HasFatalFailure()) return;
  uint64_t flip_at = tg.frame_offset + kBlock + tg.stored_len / 2;
  flip_byte(tg.piece, flip_at);
  if (HasFatalFailure()) return;

  RunResult r = sb({"restore", "--to", t / "restore", "--catalog", t / "cat"});
  SB_EXPECT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, tg.piece));
  EXPECT_TRUE(contains(r.err, "'" + tg.file + "'"));
  auto off = reported_offset(r.err, tg.piece);
  ASSERT_TRUE(off.has_value()) << "no offset reported for " << tg.piece << ":\n" << r.describe();
  // The reported offset locates the damage: within the damaged frame, at or before the
  // flipped byte.
  EXPECT_GE(*off, tg.frame_offset);
  EXPECT_LE(*off, flip_at);
  expect_clean_failure(t / "restore", tg.file);
}

TEST(Corruption, FlippedPayloadByteFailsRestoreOfThatFileAlone) {
  TempDir t("sbit-corrupt1");
  Target tg;
  back_up_and_pick(t, &tg);
  if (HasFatalFailure()) return;
  flip_byte(tg.piece, tg.frame_offset + kBlock + tg.stored_len - 1);
  if (HasFatalFailure()) return;
  RunResult r = sb({"restore", "--to", t / "restore", "--catalog", t / "cat", tg.file});
  SB_EXPECT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, tg.piece));
  EXPECT_TRUE(contains(r.err, tg.file));
  EXPECT_TRUE(reported_offset(r.err, tg.piece).has_value()) << r.describe();
  EXPECT_TRUE(entries_under(t / "restore").empty())
      << "a failed single-file restore left files behind";
}

TEST(Corruption, DamagedFrameHeaderFailsRestore) {
  TempDir t("sbit-corrupt-hdr");
  Target tg;
  back_up_and_pick(t, &tg);
  if (HasFatalFailure()) return;
  flip_byte(tg.piece, tg.frame_offset + 17);  // inside the frame's file offset field
  if (HasFatalFailure()) return;
  RunResult r = sb({"restore", "--to", t / "restore", "--catalog", t / "cat"});
  SB_EXPECT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, tg.piece));
  EXPECT_TRUE(contains(r.err, tg.file));
  auto off = reported_offset(r.err, tg.piece);
  ASSERT_TRUE(off.has_value()) << r.describe();
  EXPECT_EQ(*off, tg.frame_offset);
  expect_clean_failure(t / "restore", tg.file);
}

TEST(Corruption, DamagedPieceTrailerFailsRestoreNamingPiece) {
  TempDir t("sbit-corrupt-tr");
  Target tg;
  back_up_and_pick(t, &tg);
  if (HasFatalFailure()) return;
  uint64_t size = file_size(tg.piece);
  // The trailer payload sits just before the footer block.
  auto reader = engine::PieceReader::open(tg.piece, io::Direct::no);
  ASSERT_TRUE(reader.has_value()) << reader.error().what;
  uint64_t trailer = (*reader)->footer().trailer_offset;
  (*reader).reset();
  ASSERT_LT(trailer + kBlock, size - kBlock);
  flip_byte(tg.piece, trailer + kBlock + 5);
  if (HasFatalFailure()) return;
  RunResult r = sb({"restore", "--to", t / "restore", "--catalog", t / "cat"});
  SB_EXPECT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, tg.piece));
  auto off = reported_offset(r.err, tg.piece);
  ASSERT_TRUE(off.has_value()) << r.describe();
  EXPECT_EQ(*off, trailer + kBlock);
  expect_clean_failure(t / "restore", tg.file);
}

// A piece that is missing or cut short: the restore fails naming the piece, and files in
// other pieces are still restored intact.
void lose_piece(bool truncate_it) {
  const std::string& data = small_data();
  ASSERT_FALSE(data.empty());
  TempDir t(truncate_it ? "sbit-truncpiece" : "sbit-nopiece");
  RunResult b =
      sb({"backup", data, "--to", t / "pieces", "--catalog", t / "cat", "--channels", "2"});
  SB_ASSERT_EXIT(b, 0);
  auto pieces = pieces_in(t / "pieces");
  ASSERT_EQ(pieces.size(), 2u);
  auto reader = engine::PieceReader::open(pieces[0], io::Direct::no);
  ASSERT_TRUE(reader.has_value()) << reader.error().what;
  std::vector<std::string> lost;
  for (const auto& f : (*reader)->trailer().files) lost.push_back(f.path);
  (*reader).reset();
  ASSERT_FALSE(lost.empty());
  if (truncate_it) {
    ASSERT_EQ(::truncate(pieces[0].c_str(), static_cast<off_t>(file_size(pieces[0]) - kBlock)), 0);
  } else {
    ASSERT_EQ(::unlink(pieces[0].c_str()), 0);
  }

  RunResult r = sb({"restore", "--to", t / "restore", "--catalog", t / "cat"});
  SB_EXPECT_EXIT(r, 1);
  EXPECT_TRUE(contains(r.err, pieces[0]));
  for (const auto& f : lost)
    EXPECT_FALSE(exists(restored_path(t / "restore", f))) << f << " restored from a lost piece";
  std::vector<std::string> kept;
  for (const auto& f : files_under(data))
    if (std::find(lost.begin(), lost.end(), f) == lost.end()) kept.push_back(f);
  ASSERT_FALSE(kept.empty());
  for (const auto& f : kept) EXPECT_TRUE(same_file(f, restored_path(t / "restore", f)));
}

TEST(Corruption, MissingPieceFailsRestoreNamingIt) { lose_piece(false); }
TEST(Corruption, TruncatedPieceFailsRestoreNamingIt) { lose_piece(true); }

// One flipped byte in a data frame: a deep crosscheck records the piece damaged with the
// one file it hits, not the backup expired. Every other file still restores from it (a
// restore of one intact file by --backup too), the hit file fails alone (exit 1), and a
// later quick crosscheck, which cannot see inside frames, keeps the finding; a deep one
// after a repair clears it.
TEST(Corruption, DeepCrosscheckCondemnsOnlyTheDamagedFile) {
  TempDir t("sbit-corrupt-deep");
  Target tg;
  back_up_and_pick(t, &tg);
  if (HasFatalFailure()) return;
  const std::string piece_copy = t / "piece.orig";
  ASSERT_EQ(::system(("cp '" + tg.piece + "' '" + piece_copy + "'").c_str()), 0);
  flip_byte(tg.piece, tg.frame_offset + kBlock + tg.stored_len / 2);
  if (HasFatalFailure()) return;
  RunResult deep = sb({"crosscheck", "--deep", "--catalog", t / "cat", "--json"});
  SB_ASSERT_EXIT(deep, 0);
  Json dj = parse_json(deep);
  ASSERT_EQ(dj["backups"].size(), 1u);
  EXPECT_EQ(dj["backups"][0]["status"].as_string(), "available");
  ASSERT_EQ(dj["backups"][0]["damaged_files"].size(), 1u) << deep.out;
  EXPECT_EQ(dj["backups"][0]["damaged_files"][0].as_string(), tg.file);
  // The backup stays restorable: everything but the hit file comes back, that one fails.
  RunResult all = sb({"restore", "--to", t / "r1", "--catalog", t / "cat"});
  SB_EXPECT_EXIT(all, 1);
  EXPECT_TRUE(contains(all.err, tg.file));
  expect_clean_failure(t / "r1", tg.file);
  std::string intact;
  for (const auto& f : files_under(small_data()))
    if (f != tg.file) intact = f;
  ASSERT_FALSE(intact.empty());
  RunResult one = sb({"restore", "--to", t / "r2", "--catalog", t / "cat", "--backup", "1", intact});
  SB_EXPECT_EXIT(one, 0);
  EXPECT_TRUE(same_file(intact, restored_path(t / "r2", intact)));
  // A quick crosscheck keeps what the deep one found.
  SB_ASSERT_EXIT(sb({"crosscheck", "--catalog", t / "cat"}), 0);
  RunResult l = sb({"list", "--catalog", t / "cat", "--json"});
  Json lj = parse_json(l);
  ASSERT_EQ(lj["backups"].size(), 1u);
  bool damaged = false;
  for (const auto& p : lj["backups"][0]["piece_list"].items())
    damaged = damaged || p["status"].as_string() == "damaged";
  EXPECT_TRUE(damaged) << l.out;
  EXPECT_EQ(lj["backups"][0]["status"].as_string(), "complete");
  RunResult text = sb({"list", "--catalog", t / "cat"});
  EXPECT_TRUE(contains(text.out, "is damaged")) << text.out;
  // Repaired (the piece put back as written), a deep crosscheck clears the finding.
  ASSERT_EQ(::system(("cp '" + piece_copy + "' '" + tg.piece + "'").c_str()), 0);
  SB_ASSERT_EXIT(sb({"crosscheck", "--deep", "--catalog", t / "cat"}), 0);
  Json after = parse_json(sb({"list", "--catalog", t / "cat", "--json"}));
  for (const auto& p : after["backups"][0]["piece_list"].items())
    EXPECT_EQ(p["status"].as_string(), "available");
}

// A level 0's digest map is needed only by the level 1s built on it: with its map frame
// damaged, the level 0 itself still restores (frame by frame), with a warning.
TEST(Corruption, DamagedDigestMapOfALevelZeroStillRestoresIt) {
  TempDir t("sbit-corrupt-map");
  make_file(t / "src/a.dbf", 3 << 20, 121);
  SB_ASSERT_EXIT(sb({"backup", t / "src", "--to", t / "pieces", "--catalog", t / "cat",
                     "--channels", "1", "--level", "0"}), 0);
  auto pieces = pieces_in(t / "pieces");
  ASSERT_EQ(pieces.size(), 1u);
  uint64_t map_at = 0;
  {
    auto reader = engine::PieceReader::open(pieces[0], io::Direct::no);
    ASSERT_TRUE(reader.has_value()) << reader.error().what;
    const auto& tr = (*reader)->trailer();
    ASSERT_EQ(tr.maps.size(), 1u);
    ASSERT_FALSE(tr.maps[0].empty()) << "a level 0 writes a digest map";
    map_at = tr.maps[0][0].frame_offset;
  }
  flip_byte(pieces[0], map_at + kBlock + 20);
  if (HasFatalFailure()) return;
  RunResult r = sb({"restore", "--to", t / "r", "--catalog", t / "cat", "--backup", "1"});
  SB_EXPECT_EXIT(r, 0);
  EXPECT_TRUE(contains(r.out + r.err, "digest map")) << r.describe();
  EXPECT_TRUE(same_file(t / "src/a.dbf", restored_path(t / "r", t / "src/a.dbf")));
}

// A damaged level 1: the file comes back from the level 0's older copy, and the restore
// says so by its exit code (6), unless --allow-fallback.
TEST(Corruption, ARestoreThatFellBackToAnOlderCopyExitsSix) {
  TempDir t("sbit-corrupt-fallback");
  make_file(t / "src/a.dbf", 2 << 20, 122);
  SB_ASSERT_EXIT(sb({"backup", t / "src", "--to", t / "p0", "--catalog", t / "cat",
                     "--channels", "1", "--level", "0"}), 0);
  make_file(t / "src/a.dbf", 2 << 20, 123);
  SB_ASSERT_EXIT(sb({"backup", t / "src", "--to", t / "p1", "--catalog", t / "cat",
                     "--channels", "1", "--level", "1"}), 0);
  auto pieces = pieces_in(t / "p1");
  ASSERT_EQ(pieces.size(), 1u);
  auto reader = engine::PieceReader::open(pieces[0], io::Direct::no);
  ASSERT_TRUE(reader.has_value()) << reader.error().what;
  const engine::Extent* data = nullptr;
  for (const auto& e : (*reader)->trailer().extents[0])
    if (e.type == FrameType::data) data = &e;
  ASSERT_NE(data, nullptr);
  flip_byte(pieces[0], data->frame_offset + kBlock + data->stored_len / 2);
  if (HasFatalFailure()) return;
  RunResult r = sb({"restore", "--to", t / "r", "--catalog", t / "cat", "--json"});
  SB_EXPECT_EXIT(r, 6);
  EXPECT_EQ(parse_json(r)["fallbacks"].size(), 1u) << r.out;
  RunResult allowed = sb({"restore", "--to", t / "r2", "--catalog", t / "cat", "--allow-fallback"});
  SB_EXPECT_EXIT(allowed, 0);
  RunResult both = sb({"restore", "--to", t / "r3", "--catalog", t / "cat", "--allow-fallback",
                       "--no-fallback"});
  SB_EXPECT_EXIT(both, 2);
}

}  // namespace
}  // namespace stripeback::it
