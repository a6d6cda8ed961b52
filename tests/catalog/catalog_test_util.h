// Helpers shared by the catalog tests: sample records, field-by-field comparison, and
// direct access to the log's bytes for damage tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "backends/local/local_storage.h"
#include "catalog/record_log.h"
#include "tests/support/temp_dir.h"

namespace stripeback::catalog::test {

inline BackupBegin sample_begin(const std::string& tag) {
  BackupBegin b;
  b.tag = tag;
  b.start_time_ns = 1'700'000'000'123'456'789;
  b.destination = "/media/tape0";
  b.sources = {"/db/data", "/db/wal with spaces"};
  b.channels = 4;
  b.host = "db01";
  b.pid = -42;
  return b;
}

// Names the piece sample_piece(0, 1) by default, so a backup made of them adds up.
inline FileRecord sample_file(const std::string& path, uint32_t n,
                              std::vector<std::string> pieces = {"bk-c0-n1"}) {
  FileRecord f;
  f.path = path;
  f.size = 1000ull * n + 7;
  f.mode = 0100640;
  f.mtime_ns = -5 + static_cast<int64_t>(n);  // negative for the first few
  f.uid = 1000 + n;
  f.gid = 2000 + n;
  for (size_t i = 0; i < f.digest.size(); ++i) f.digest[i] = static_cast<uint8_t>(i * 17 + n);
  f.pieces = std::move(pieces);
  return f;
}

inline PieceRecord sample_piece(uint32_t channel, uint32_t number) {
  PieceRecord p;
  p.name = "bk-c" + std::to_string(channel) + "-n" + std::to_string(number);
  p.location = "/media/tape" + std::to_string(channel);
  p.channel = channel;
  p.number = number;
  p.size = (uint64_t{1} << 33) + number;
  p.checksum = 0xdeadbeef ^ number;
  return p;
}

inline BackupEnd sample_end(uint32_t pieces, BackupStatus status = BackupStatus::complete,
                            uint64_t files = 3) {
  BackupEnd e;
  e.status = status;
  e.end_time_ns = 1'700'000'100'000'000'000;
  e.files = files;
  e.bytes_read = 123456789;
  e.bytes_written = 98765432;
  e.pieces = pieces;
  e.message = status == BackupStatus::complete ? "" : "channel 2: no space left";
  return e;
}

inline void expect_equal(const FileRecord& a, const FileRecord& b) {
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.mtime_ns, b.mtime_ns);
  EXPECT_EQ(a.uid, b.uid);
  EXPECT_EQ(a.gid, b.gid);
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_EQ(a.pieces, b.pieces);
}

inline void expect_equal(const PieceRecord& a, const PieceRecord& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.location, b.location);
  EXPECT_EQ(a.channel, b.channel);
  EXPECT_EQ(a.number, b.number);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.checksum, b.checksum);
}

inline void expect_equal(const BackupBegin& a, const BackupBegin& b) {
  EXPECT_EQ(a.tag, b.tag);
  EXPECT_EQ(a.start_time_ns, b.start_time_ns);
  EXPECT_EQ(a.destination, b.destination);
  EXPECT_EQ(a.sources, b.sources);
  EXPECT_EQ(a.channels, b.channels);
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.pid, b.pid);
}

inline void expect_equal(const BackupEnd& a, const BackupEnd& b) {
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.end_time_ns, b.end_time_ns);
  EXPECT_EQ(a.files, b.files);
  EXPECT_EQ(a.bytes_read, b.bytes_read);
  EXPECT_EQ(a.bytes_written, b.bytes_written);
  EXPECT_EQ(a.pieces, b.pieces);
  EXPECT_EQ(a.message, b.message);
}

inline std::unique_ptr<Catalog> open_ok(const std::string& dir, Create create = Create::yes) {
  auto c = Catalog::open(dir, create, io::local_storage());
  if (!c) ADD_FAILURE() << "open '" << dir << "': " << c.error().what;
  return c ? std::move(c).value() : nullptr;
}

inline std::string log_path(const std::string& dir) { return dir + "/catalog.log"; }
std::vector<uint8_t> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
// Frames of the log as the scanner sees them (offsets are file offsets).
std::vector<Frame> frames_of(const std::vector<uint8_t>& log, ScanResult* scan = nullptr);
// Whether some warning starts at `offset` and its text contains `text`.
bool has_warning(const std::vector<LoadWarning>& ws, uint64_t offset, const std::string& text);
std::string dump(const std::vector<LoadWarning>& ws);

}  // namespace stripeback::catalog::test
