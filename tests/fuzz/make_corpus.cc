// Writes the seed corpora of the fuzz targets from the real encoders:
//   fuzz_make_corpus DIR        (the repository's is tests/fuzz/corpus)
// Each seed is the target's mode byte followed by a valid encoding; block-sized encodings
// lose their trailing zeros (the targets pad their input back to a block).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "catalog/payload.h"
#include "catalog/record_log.h"
#include "engine/format/piece_format.h"
#include "backends/tape/label.h"

using namespace stripeback;

namespace {

std::filesystem::path g_out;

void put(const std::string& target, const std::string& name, uint8_t mode,
         std::span<const uint8_t> bytes, bool trim = false) {
  size_t n = bytes.size();
  while (trim && n > 0 && bytes[n - 1] == 0) --n;
  std::filesystem::create_directories(g_out / target);
  std::ofstream f(g_out / target / name, std::ios::binary | std::ios::trunc);
  f.put(static_cast<char>(mode));
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(n));
}
void put(const std::string& target, const std::string& name, uint8_t mode,
         std::span<const std::byte> bytes) {
  put(target, name, mode,
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
      true);
}
void put_text(const std::string& target, const std::string& name, const std::string& text,
              bool with_mode = true, uint8_t mode = 0) {
  std::filesystem::create_directories(g_out / target);
  std::ofstream f(g_out / target / name, std::ios::binary | std::ios::trunc);
  if (with_mode) f.put(static_cast<char>(mode));
  f << text;
}

util::Digest pattern_digest(uint8_t seed) {
  util::Digest d{};
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(seed + 31 * i);
  return d;
}

void piece_format_seeds() {
  using namespace engine;
  std::array<std::byte, kBlock> b;
  PieceHeader h;
  h.version = 1;  // the first seeds are version 1 pieces, as written before catalog ids
  h.backup_id = 7;
  h.channel = 1;
  h.piece_number = 2;
  h.created_ns = 1'700'000'000'000'000'000;
  h.name = "sb7-c1-p2.sbp";
  encode_piece_header(h, b);
  put("piece_header", "plain", 0, b);
  h.codec = Codec::zstd;
  h.cipher = Cipher::aes256gcm;
  h.crypto.kdf = Kdf::scrypt;
  h.crypto.log2_n = 15;
  h.crypto.r = 8;
  h.crypto.p = 1;
  h.crypto.salt.fill(0x5a);
  h.crypto.wrapped_key.fill(0xc3);
  h.key_id.fill(0x11);
  encode_piece_header(h, b);
  put("piece_header", "encrypted", 0, b);
  h.crypto.kdf = Kdf::key_file;
  h.name = std::string(300, 'n');
  encode_piece_header(h, b);
  put("piece_header", "key_file_long_name", 0, b);
  PieceHeader v2;  // version 2: the catalog id after the name (and key section)
  v2.version = 2;
  v2.backup_id = 7;
  v2.channel = 1;
  v2.piece_number = 2;
  v2.created_ns = 1'700'000'000'000'000'000;
  v2.catalog_id = 0x9f2c0e71d4a5b608;
  v2.name = "sb7-9f2c0e71d4a5b608-20231114T221320Z-4be1-c1-p2.sbp";
  encode_piece_header(v2, b);
  put("piece_header", "plain_v2", 0, b);
  v2.cipher = Cipher::aes256gcm;
  v2.crypto = h.crypto;
  encode_piece_header(v2, b);
  put("piece_header", "key_file_v2", 0, b);

  FrameHeader f;
  f.file_id = 3;
  f.sequence = 9;
  f.offset = 1 << 20;
  f.raw_len = 1 << 20;
  f.stored_len = 1 << 20;
  f.stored_crc = 0x12345678;
  f.raw_digest = pattern_digest(1);
  encode_frame_header(f, b);
  put("frame_header", "data", 0, b);
  f.digest_only = true;  // version 5: no payload CRC32C, the digest covers it
  f.stored_crc = 0;
  encode_frame_header(f, b);
  put("frame_header", "data_digest_only", 0, b);
  f.digest_only = false;
  f.stored_crc = 0x12345678;
  f.compressed = true;
  f.stored_len = 4000;
  encode_frame_header(f, b);
  put("frame_header", "compressed", 0, b);
  f.sealed = true;
  f.stored_len = 4000 + kTagSize;
  encode_frame_header(f, b);
  put("frame_header", "compressed_sealed", 0, b);
  FrameHeader z;
  z.type = FrameType::zero;
  z.raw_len = 1 << 20;
  z.raw_digest = pattern_digest(2);
  encode_frame_header(z, b);
  put("frame_header", "zero", 0, b);
  FrameHeader t;
  t.type = FrameType::trailer;
  t.stored_len = 1234;
  encode_frame_header(t, b);
  put("frame_header", "trailer", 0, b);

  Footer foot{12 << 20, 11, 0xcafef00d};
  encode_footer(foot, b);
  put("piece_footer", "footer", 0, b);
  encode_footer(Footer{4096, 0, 0}, b);
  put("piece_footer", "empty_piece", 0, b);

  FileMeta m;
  m.file_id = 0;
  m.path = "/db/data/users01.dbf";
  m.size = (3u << 20) + 17;
  m.mode = 0100640;
  m.mtime_ns = 1'690'000'000'123'456'789;
  m.uid = 1000;
  m.gid = 1000;
  m.digest = pattern_digest(3);
  put("piece_trailer", "file_meta", 1, encode_file_meta(m));
  Trailer tr;
  tr.files.push_back(m);
  tr.extents.push_back({{0, 1 << 20, 4096, 1 << 20, FrameType::data, pattern_digest(4)},
                        {1 << 20, 1 << 20, 8192 + (1 << 20), 0, FrameType::zero,
                         pattern_digest(5)}});
  m.file_id = 1;
  m.path = "/db/data/empty";
  m.size = 0;
  tr.files.push_back(m);
  tr.extents.emplace_back();
  put("piece_trailer", "two_files", 0, encode_trailer(tr));
  put("piece_trailer", "empty", 0, encode_trailer(Trailer{}));
}

catalog::FileRecord sample_file(const std::string& path, uint32_t n) {
  catalog::FileRecord f;
  f.path = path;
  f.size = 1000ull * n + 7;
  f.mode = 0100640;
  f.mtime_ns = 1'690'000'000'000'000'000 + n;
  f.uid = f.gid = 1000 + n;
  f.digest = pattern_digest(static_cast<uint8_t>(n));
  f.pieces = {"sb1-c1-p1.sbp"};
  return f;
}

catalog::PieceRecord sample_piece(uint32_t channel, bool tape) {
  catalog::PieceRecord p;
  p.name = "sb1-c" + std::to_string(channel) + "-p1.sbp";
  p.location = "/backup";
  p.channel = channel;
  p.number = 1;
  p.size = 3 << 20;
  p.checksum = 0xdeadbeef;
  if (tape) {
    catalog::MediaLocation t;
    t.block_size = 256 << 10;
    t.bytes = p.size;
    t.spans.push_back({"VOL001", "tape:iscsi://127.0.0.1:3261/iqn.x/1", 1, 0, 0, 12, 42});
    p.location = "tape";
    p.media = t;
  }
  return p;
}

catalog::JobRecord sample_job() {
  catalog::JobRecord j;
  j.type = "backup";
  j.status = "complete";
  j.start_ns = 1'700'000'000'000'000'000;
  j.end_ns = j.start_ns + 2'500'000'000;
  j.tag = "nightly";
  j.backup_ids = {1};
  j.bytes_in = 6 << 20;
  j.bytes_out = (6 << 20) + 8192;
  j.files = 2;
  j.bound_by = "read";
  j.stage = "source read (local)";
  j.evidence = "of 2 channel(s)' time: waiting for reads 70%";
  j.shares = {{"read", 0.9}, {"wait_read", 0.7}};
  catalog::IoFigures rd{6, 6 << 20, 2'000'000'000, {4, 1, 1, 300'000'000, 200'000'000}};
  catalog::IoFigures wr{7, (6 << 20) + 8192, 500'000'000, {7, 0, 0, 1'000'000, 400'000}};
  j.channels.push_back({1, "io_uring", "async", 16, 1 << 20, 8, 2'400'000'000, rd, wr});
  j.files_total = 3;
  j.file_io.push_back({"/db/data/a", 1, rd, {}});
  return j;
}

void catalog_seeds() {
  using namespace catalog;
  BackupBegin begin{"nightly", 1'700'000'000'000'000'000, "/backup", {"/db/data", "/db/wal"},
                    2, "db01", 4242};
  BackupEnd end{BackupStatus::complete, 1'700'000'100'000'000'000, 2, 6 << 20, 6 << 20, 2, ""};
  BackupEnd failed{BackupStatus::failed, 1'700'000'100'000'000'000, 0, 0, 0, 0,
                   "channel 2: no space left"};
  auto b = *encode_begin(1, begin);
  auto p1 = (*encode_piece(1, sample_piece(1, false), {sample_file("/db/data/a", 1)}))[0];
  auto p2 = (*encode_piece(1, sample_piece(2, true), {sample_file("/db/data/b", 2)}))[0];
  auto fl = (*encode_files(1, {sample_file("/db/wal/c", 3), sample_file("/db/wal/d", 4)}))[0];
  auto e = *encode_end(1, end);
  auto e2 = *encode_end(2, failed);
  put("catalog_payload", "begin", 0, b.payload);
  BackupBegin with_id = begin;  // version 2: the catalog id after the pid
  with_id.catalog_id = 0x9f2c0e71d4a5b608;
  put("catalog_payload", "begin_v2", 0, encode_begin(1, with_id)->payload);
  put("catalog_payload", "piece", 1, p1.payload);
  put("catalog_payload", "piece_tape", 1, p2.payload);
  put("catalog_payload", "files", 2, fl.payload);
  put("catalog_payload", "end_complete", 3, e.payload);
  put("catalog_payload", "end_failed", 3, e2.payload);
  put("catalog_payload", "setting", 7,
      encode_setting({"retention", "redundancy 2", 1764554400000000000})->payload);
  Crosscheck cc;
  cc.time_ns = 1764554400000000000;
  cc.pieces = {{1, "sb1-p1.sbp", false, ""}, {2, "sb2-p1.sbp", true, "missing"}};
  put("catalog_payload", "crosscheck", 8, encode_crosscheck(cc)->payload);
  cc.deep = true;
  cc.pieces[0].damaged = true;
  cc.pieces[0].damage = "1 frame(s) fail their payload checksum (at offset 8192)";
  cc.pieces[0].damaged_files = {"/db/a.dbf"};
  put("catalog_payload", "crosscheck_damaged", 8, encode_crosscheck(cc)->payload);
  Deletion del;
  del.id = 0x51;
  del.reason = "obsolete";
  del.backups = {1, 2};
  del.pieces = {{1, "sb1-p1.sbp", "/backup", 1 << 20}};
  put("catalog_payload", "deletion_intent", 9, encode_deletion(del)->payload);
  del.done = true;
  put("catalog_payload", "deletion_done", 9, encode_deletion(del)->payload);
  put("catalog_payload", "resume", 10,
      encode_resume({1, 1764554400000000000, "db1", 4242})->payload);
  put("catalog_payload", "job_backup", 6, encode_job(sample_job())->payload);
  put("catalog_payload", "keep_until", 14,
      encode_keep({1, 1764554400000000000, Keep::Kind::until, 1767225600000000000})->payload);
  put("catalog_payload", "keep_forever", 14,
      encode_keep({1, 1764554400000000000, Keep::Kind::forever, 0})->payload);
  put("catalog_payload", "keep_cleared", 14,
      encode_keep({1, 1764554400000000000, Keep::Kind::cleared, 0})->payload);

  std::vector<uint8_t> log;
  uint64_t seq = 0;
  for (const EncodedRecord* r : {&b, &p1, &p2, &fl, &e}) append_frame(log, ++seq, r->type, r->payload);
  put("catalog_scan", "one_backup", 0, log);
  std::vector<uint8_t> damaged = log;
  damaged[log.size() / 2] ^= 0x10;
  put("catalog_scan", "flipped_bit", 0, damaged);
  std::vector<uint8_t> torn(log.begin(), log.end() - 9);
  put("catalog_scan", "torn_tail", 0, torn);
  std::vector<uint8_t> replayed = log;
  auto b2 = *encode_begin(2, begin);
  append_frame(replayed, 2, b2.type, b2.payload);
  append_frame(replayed, ++seq + 1, e2.type, e2.payload);
  put("catalog_scan", "replayed_and_gap", 0, replayed);
  put("catalog_scan", "after_sequence_2", 4, log);
  std::vector<uint8_t> with_header = encode_file_header();
  with_header.insert(with_header.end(), log.begin(), log.begin() + 80);
  put("catalog_scan", "file_header", 1, with_header);
}

void tape_seeds() {
  tape::VolumeLabel l{"VOL001", 256 << 10, 1, 1'700'000'000'000'000'000};
  auto b = tape::encode_label(l);
  put("tape_label", "vol001", 0, b, true);
  l.volume_id = std::string(tape::kMaxVolumeId, 'Z');
  l.block_size = 1 << 20;
  b = tape::encode_label(l);
  put("tape_label", "longest_id", 0, b, true);
}

void text_seeds() {
  int i = 0;
  for (const char* url : {"nfs://127.0.0.1/srv/export/dir/?nfsport=22049&mountport=22050",
                          "nfs://h/export?nfsport=1&mountport=2/sub/file.dbf",
                          "nfs://10.0.0.1,10.0.1.1/export", "nfs://h/x?version=3&uid=0&gid=0",
                          "nfs://filer/./a//b/"})
    put_text("nfs_url", "url" + std::to_string(++i), url, false);
  for (const char* s : {"4096", "1M", "256k", "2GiB", "1TB"})
    put_text("units", std::string("size_") + s, s, true, 0);
  i = 0;
  for (const char* s : {"01:30", "1:02:03", "100:59:59"})
    put_text("units", "clock" + std::to_string(++i), s, true, 1);
  for (const char* s : {"500ms", "10s", "2m", "7"})
    put_text("units", std::string("interval_") + s, s, true, 2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_corpus DIR\n");
    return 2;
  }
  g_out = argv[1];
  piece_format_seeds();
  catalog_seeds();
  tape_seeds();
  text_seeds();
  return 0;
}
