// PieceWriter and PieceReader on MemStorage, every byte of the piece going out as requests
// through an IoLoop as a channel sends them: the piece reads back with its index and maps,
// damage made in memory (payload, frame header, footer, a cut-off end) is caught with the
// piece and offset named, and preallocated space is trimmed when the piece completes.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/pieces/change_map.h"
#include "engine/pieces/piece_reader.h"
#include "engine/pieces/piece_writer.h"
#include "storage/io_loop.h"
#include "tests/engine/mem_job_util.h"
#include "util/digest.h"

namespace stripeback::engine {
namespace {

using testing::MemStorage;

constexpr uint32_t kFrame = 1 << 20;
constexpr uint32_t kUnit = 64 << 10;
const std::string kPath = "/src/file.dbf";

// 2 MiB of data, 1 MiB of zeros, a short tail: data, zero and short frames.
std::string piece_data() {
  return pattern(2 << 20, 21) + std::string(kFrame, '\0') + pattern(5000, 22);
}

DigestMap map_of(const std::string& data) {
  DigestMap m;
  m.unit = kUnit;
  for (uint64_t off = 0; off < data.size(); off += kUnit)
    m.digests.push_back(
        util::digest(data.data() + off, std::min<uint64_t>(kUnit, data.size() - off)));
  return m;
}

// Sends `block` at its placement and keeps it until the write is reaped.
class Sender {
 public:
  explicit Sender(PieceWriter& w) : w_(w) {}
  void send(std::unique_ptr<AlignedBlock> block, const FramePlacement& p) {
    send_raw(block->data, p);
    kept_.push_back(std::move(block));
  }
  void send_raw(std::byte* data, const FramePlacement& p) {
    storage::Request r{&w_.file(), storage::OpKind::write, p.offset, data, p.length, p.offset};
    ASSERT_TRUE(loop_.submit(r).has_value());
  }
  // Reaps every write; each must have written its whole length.
  void reap_all() {
    std::vector<storage::Completion> done(64);
    while (loop_.in_flight() > 0) {
      const size_t n = loop_.reap(done, 1, storage::Clock::now() + std::chrono::seconds(1));
      for (size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(done[i].result.has_value()) << done[i].result.error().what;
        EXPECT_GT(*done[i].result, 0u);
      }
      if (n == 0) break;
    }
    EXPECT_EQ(loop_.in_flight(), 0u);
  }

 private:
  PieceWriter& w_;
  storage::IoLoop loop_;
  std::vector<std::unique_ptr<AlignedBlock>> kept_;
};

// Writes a piece holding `data` as kPath at `path` on `mem`, with its change map;
// preallocating ahead of each frame. Returns the piece's size.
uint64_t write_piece(MemStorage& mem, const std::string& path, const std::string& data) {
  storage::CreateOptions co;
  co.direct = true;
  auto file = mem.create(mem.at(path), co);
  EXPECT_TRUE(file.has_value()) << file.error().what;
  PieceHeader h;
  h.backup_id = 7;
  h.channel = 1;
  h.piece_number = 1;
  h.name = "p.sbp";
  auto started = PieceWriter::start(std::move(*file), mem.caps(), h);
  EXPECT_TRUE(started.has_value()) << started.error().what;
  PieceWriter& w = **started;
  Sender out(w);
  auto head = w.header_block();
  out.send(std::move(head->block), head->placement);
  FileMeta meta;
  meta.path = kPath;
  meta.size = data.size();
  const uint32_t id = w.add_file(meta);
  auto record = w.file_frame(id);
  out.send(std::move(record->block), record->placement);
  for (uint64_t off = 0; off < data.size(); off += kFrame) {
    const auto n = static_cast<uint32_t>(std::min<uint64_t>(kFrame, data.size() - off));
    auto buf = AlignedBlock::make(2 * kBlock + kFrame);
    std::memcpy(buf->data + kBlock, data.data() + off, n);
    FrameHeader fh;
    fh.type = FrameType::data;
    fh.file_id = id;
    fh.offset = off;
    fh.raw_len = n;
    w.preallocate_ahead();
    auto f = encode_frame(fh, w.next(), {buf->data, nullptr, 0},
                          {nullptr, w.cipher(), w.version()});
    EXPECT_TRUE(f.has_value());
    const FramePlacement p = w.add(*f);
    out.send(std::move(buf), p);
  }
  auto map = w.map_frame(id, map_of(data));
  out.send(std::move(map->block), map->placement);
  out.reap_all();
  uint32_t crc = 0;
  auto tail = w.trailer_block(&crc);
  EXPECT_TRUE(tail.has_value());
  out.send(std::move(tail->block), tail->placement);
  out.reap_all();
  EXPECT_TRUE(w.complete().has_value());
  return w.size();
}

std::unique_ptr<PieceReader> open_piece(MemStorage& mem, const std::string& path) {
  auto file = mem.open_read(mem.at(path), {true});
  EXPECT_TRUE(file.has_value());
  auto r = PieceReader::open(std::move(*file));
  EXPECT_TRUE(r.has_value()) << r.error().what;
  return r ? std::move(*r) : nullptr;
}

// Reads and checks the frame of extent `e`; its raw bytes, or the error.
Result<std::string> read_frame(const PieceReader& pr, const Extent& e, uint32_t file_id) {
  auto buf = AlignedBlock::make(kBlock + align_up(e.stored_len));
  const size_t len = kBlock + align_up(e.stored_len);
  SB_ASSIGN(size_t got, pr.file()->read_at(buf->data, len, e.frame_offset));
  if (got != len) return fail(Errc::corrupt, "short read");
  SB_ASSIGN(const std::byte* raw, verify_frame(buf->data, e, file_id, pr.path(), kPath));
  return std::string(reinterpret_cast<const char*>(raw), e.raw_len);
}

storage::StorageCaps aligned_caps() {
  storage::StorageCaps caps;
  caps.alignment = 4096;
  return caps;
}

TEST(PieceOnMem, WrittenThroughTheLoopOnAnAlignedMediumItReadsBackWithItsIndexAndMap) {
  MemStorage::Options o;
  o.caps = aligned_caps();
  o.reverse_reap = true;
  MemStorage mem(o);
  mem.make_dir("/d");
  const std::string data = piece_data();
  const uint64_t size = write_piece(mem, "/d/p.sbp", data);
  EXPECT_EQ(mem.contents("/d/p.sbp")->size(), size);
  EXPECT_TRUE(mem.unsynced().empty());

  auto pr = open_piece(mem, "/d/p.sbp");
  ASSERT_TRUE(pr);
  EXPECT_TRUE(pr->direct());
  EXPECT_EQ(pr->header().backup_id, 7u);
  const int id = pr->find_file(kPath);
  ASSERT_EQ(id, 0);
  const auto& ex = pr->trailer().extents[0];
  ASSERT_EQ(ex.size(), 4u);
  EXPECT_EQ(ex[2].type, FrameType::zero);
  EXPECT_EQ(ex[3].raw_len, 5000u);
  std::string back;
  for (const Extent& e : ex) {
    if (e.type == FrameType::zero) {
      back += std::string(e.raw_len, '\0');
      continue;
    }
    auto raw = read_frame(*pr, e, 0);
    ASSERT_TRUE(raw.has_value()) << raw.error().what;
    back += *raw;
  }
  EXPECT_TRUE(same_bytes(back, data));
  auto maps = pr->read_maps(0);
  ASSERT_TRUE(maps.has_value()) << maps.error().what;
  auto joined = join_maps(*maps, data.size(), kUnit, kPath);
  ASSERT_TRUE(joined.has_value()) << joined.error().what;
  EXPECT_EQ(joined->digests, map_of(data).digests);
}

TEST(PieceOnMem, AByteFlippedInAPayloadIsCaughtNamingPieceOffsetAndFile) {
  MemStorage mem;
  write_piece(mem, "/p.sbp", piece_data());
  auto pr = open_piece(mem, "/p.sbp");
  ASSERT_TRUE(pr);
  const Extent e = pr->trailer().extents[0][1];
  const uint64_t at = e.frame_offset + kBlock + 4321;
  ASSERT_TRUE(mem.overwrite(
      "/p.sbp", at, std::string(1, static_cast<char>((*mem.contents("/p.sbp"))[at] ^ 0x01))));
  auto raw = read_frame(*pr, e, 0);
  ASSERT_FALSE(raw.has_value());
  EXPECT_EQ(raw.error().code, Errc::corrupt);
  EXPECT_NE(raw.error().what.find("mem://p.sbp"), std::string::npos) << raw.error().what;
  EXPECT_NE(raw.error().what.find(std::to_string(e.frame_offset + kBlock)), std::string::npos)
      << raw.error().what;
  EXPECT_NE(raw.error().what.find(kPath), std::string::npos) << raw.error().what;
  // The frame before it is untouched and still verifies.
  EXPECT_TRUE(read_frame(*pr, pr->trailer().extents[0][0], 0).has_value());
}

TEST(PieceOnMem, AnAlteredFrameHeaderIsCaught) {
  MemStorage mem;
  write_piece(mem, "/p.sbp", piece_data());
  auto pr = open_piece(mem, "/p.sbp");
  ASSERT_TRUE(pr);
  const Extent e = pr->trailer().extents[0][0];
  // A byte inside the encoded header (its first kFrameHeaderSize bytes).
  const uint64_t at = e.frame_offset + 16;
  ASSERT_TRUE(mem.overwrite(
      "/p.sbp", at, std::string(1, static_cast<char>((*mem.contents("/p.sbp"))[at] ^ 0x10))));
  auto raw = read_frame(*pr, e, 0);
  ASSERT_FALSE(raw.has_value());
  EXPECT_EQ(raw.error().code, Errc::corrupt);
  EXPECT_NE(raw.error().what.find("mem://p.sbp"), std::string::npos) << raw.error().what;
}

TEST(PieceOnMem, ADamagedFooterOrACutOffEndIsRefusedWhenThePieceIsOpened) {
  MemStorage mem;
  const uint64_t size = write_piece(mem, "/p.sbp", piece_data());
  const std::string whole = *mem.contents("/p.sbp");

  std::string bad_footer = whole;
  bad_footer[size - kBlock + 3] = static_cast<char>(bad_footer[size - kBlock + 3] ^ 0x20);
  mem.write_file("/footer.sbp", bad_footer);
  mem.write_file("/short.sbp", whole.substr(0, size - 2 * kBlock));
  for (const std::string p : {"/footer.sbp", "/short.sbp"}) {
    auto file = mem.open_read(mem.at(p), {});
    ASSERT_TRUE(file.has_value());
    auto r = PieceReader::open(std::move(*file));
    ASSERT_FALSE(r.has_value()) << p;
    EXPECT_EQ(r.error().code, Errc::corrupt) << r.error().what;
    EXPECT_NE(r.error().what.find("mem:/" + p), std::string::npos) << r.error().what;
  }
}

TEST(PieceOnMem, PreallocatedSpaceIsTrimmedWhenThePieceCompletes) {
  storage::StorageCaps caps;
  caps.preallocate = true;
  MemStorage with(caps), without;
  const std::string data = piece_data();
  const uint64_t a = write_piece(with, "/p.sbp", data);
  const uint64_t b = write_piece(without, "/p.sbp", data);
  EXPECT_EQ(a, b);
  EXPECT_GT(with.counts().preallocates, 0u);
  EXPECT_EQ(without.counts().preallocates, 0u);
  EXPECT_EQ(with.contents("/p.sbp")->size(), a);
  EXPECT_TRUE(same_bytes(with.contents("/p.sbp"), without.contents("/p.sbp")))
      << "the same bytes either way";
  EXPECT_EQ(with.counts().syncs, 1u) << "complete() commits the piece once";
  EXPECT_TRUE(with.unsynced().empty());
}

}  // namespace
}  // namespace stripeback::engine
