// Job records (record type 7): the history of jobs round-trips through the payload and the
// log, survives a reopen with its sequence, is bounded in files, and is refused (ignored
// with a warning, never misread) when malformed.
#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "catalog/payload.h"
#include "tests/catalog/catalog_test_util.h"
#include "tests/support/temp_dir.h"
#include "util/bytes.h"

namespace stripeback::catalog::test {
namespace {

IoFigures figures(uint64_t n) {
  IoFigures f;
  f.ios = n;
  f.bytes = n << 20;
  f.busy_ns = static_cast<int64_t>(n) * 1'000'000;
  f.waits = {n / 2, n / 4, n - n / 2 - n / 4, static_cast<int64_t>(n) * 300'000,
             n ? 250'000 : 0};
  return f;
}

JobRecord sample_job(size_t files = 2) {
  JobRecord j;
  j.type = "backup";
  j.status = "failed";
  j.message = "channel 2: no space left on device";
  j.start_ns = 1'700'000'000'000'000'000;
  j.end_ns = j.start_ns + 2'000'000'000;
  j.tag = "nightly";
  j.backup_ids = {3, 9};
  j.bytes_in = 123456789;
  j.bytes_out = 98765432;
  j.files = 17;
  j.compress_in = 1000;
  j.compress_out = 250;
  j.bound_by = "read";
  j.stage = "source read (local)";
  j.evidence = "waiting for reads 71%";
  j.suggestion = "more channels";
  j.shares = {{"read", 0.875}, {"wait_read", 0.71}, {"cpu", 0}};
  j.channels.push_back({1, "io_uring", "async", 16, 1 << 20, 8, 1'900'000'000, figures(40),
                        figures(41)});
  j.channels.push_back({2, "sync", "sync", 4, 4 << 20, 1, 1'800'000'000, figures(3), figures(0)});
  for (size_t i = 0; i < files; ++i)
    j.file_io.push_back({"/db/f" + std::to_string(i), static_cast<uint32_t>(1 + i % 2),
                         figures(i + 1), figures(0)});
  j.files_total = files + 5;
  return j;
}

void expect_equal(const IoFigures& a, const IoFigures& b) {
  EXPECT_EQ(a.ios, b.ios);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.busy_ns, b.busy_ns);
  EXPECT_EQ(a.waits.ready, b.waits.ready);
  EXPECT_EQ(a.waits.short_waits, b.waits.short_waits);
  EXPECT_EQ(a.waits.long_waits, b.waits.long_waits);
  EXPECT_EQ(a.waits.total_ns, b.waits.total_ns);
  EXPECT_EQ(a.waits.max_ns, b.waits.max_ns);
}

void expect_equal(const JobRecord& a, const JobRecord& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.message, b.message);
  EXPECT_EQ(a.start_ns, b.start_ns);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.tag, b.tag);
  EXPECT_EQ(a.backup_ids, b.backup_ids);
  EXPECT_EQ(a.bytes_in, b.bytes_in);
  EXPECT_EQ(a.bytes_out, b.bytes_out);
  EXPECT_EQ(a.files, b.files);
  EXPECT_EQ(a.compress_in, b.compress_in);
  EXPECT_EQ(a.compress_out, b.compress_out);
  EXPECT_EQ(a.bound_by, b.bound_by);
  EXPECT_EQ(a.stage, b.stage);
  EXPECT_EQ(a.evidence, b.evidence);
  EXPECT_EQ(a.suggestion, b.suggestion);
  ASSERT_EQ(a.shares.size(), b.shares.size());
  for (size_t i = 0; i < a.shares.size(); ++i) {
    EXPECT_EQ(a.shares[i].name, b.shares[i].name);
    EXPECT_NEAR(a.shares[i].share, b.shares[i].share, 1e-6);
  }
  ASSERT_EQ(a.channels.size(), b.channels.size());
  for (size_t i = 0; i < a.channels.size(); ++i) {
    EXPECT_EQ(a.channels[i].channel, b.channels[i].channel);
    EXPECT_EQ(a.channels[i].io_engine, b.channels[i].io_engine);
    EXPECT_EQ(a.channels[i].io_mode, b.channels[i].io_mode);
    EXPECT_EQ(a.channels[i].buffers, b.channels[i].buffers);
    EXPECT_EQ(a.channels[i].buffer_size, b.channels[i].buffer_size);
    EXPECT_EQ(a.channels[i].multiplexing, b.channels[i].multiplexing);
    EXPECT_EQ(a.channels[i].elapsed_ns, b.channels[i].elapsed_ns);
    expect_equal(a.channels[i].read, b.channels[i].read);
    expect_equal(a.channels[i].write, b.channels[i].write);
  }
  EXPECT_EQ(a.files_total, b.files_total);
  ASSERT_EQ(a.file_io.size(), b.file_io.size());
  for (size_t i = 0; i < a.file_io.size(); ++i) {
    EXPECT_EQ(a.file_io[i].path, b.file_io[i].path);
    EXPECT_EQ(a.file_io[i].channel, b.file_io[i].channel);
    expect_equal(a.file_io[i].read, b.file_io[i].read);
    expect_equal(a.file_io[i].write, b.file_io[i].write);
  }
}

TEST(JobRecord, PayloadRoundTrips) {
  const JobRecord j = sample_job();
  auto e = encode_job(j);
  ASSERT_TRUE(e) << e.error().what;
  EXPECT_EQ(e->type, RecordType::job);
  EXPECT_EQ(static_cast<uint16_t>(e->type), 7u);
  auto d = decode_job(e->payload);
  ASSERT_TRUE(d) << d.error().what;
  expect_equal(*d, j);
  EXPECT_EQ(d->sequence, 0u);
  // Encoding what was decoded gives the same bytes.
  EXPECT_EQ(encode_job(*d)->payload, e->payload);
}

TEST(JobRecord, AJobWithoutBackupsChannelsOrFilesRoundTrips) {
  JobRecord j;
  j.type = "validate-sources";
  j.status = "cancelled";
  auto e = encode_job(j);
  ASSERT_TRUE(e);
  auto d = decode_job(e->payload);
  ASSERT_TRUE(d) << d.error().what;
  expect_equal(*d, j);
}

TEST(JobRecord, KeepsAtMostTheFirstThousandFilesAndCountsTheRest) {
  JobRecord j = sample_job(JobRecord::kMaxFiles + 20);
  j.files_total = 0;  // below the count kept: the writer raises it
  auto d = decode_job(encode_job(j)->payload);
  ASSERT_TRUE(d) << d.error().what;
  ASSERT_EQ(d->file_io.size(), JobRecord::kMaxFiles);
  EXPECT_EQ(d->file_io.back().path, "/db/f" + std::to_string(JobRecord::kMaxFiles - 1));
  EXPECT_EQ(d->files_total, JobRecord::kMaxFiles);
}

TEST(JobRecord, WritersRefuseWhatReadersWouldRefuse) {
  JobRecord j = sample_job();
  j.type.clear();
  EXPECT_FALSE(encode_job(j));
  j = sample_job();
  j.backup_ids = {0};
  EXPECT_FALSE(encode_job(j));
  j = sample_job();
  j.tag.assign(kMaxString + 1, 't');
  EXPECT_FALSE(encode_job(j));
  j = sample_job();
  j.file_io[0].read.waits.max_ns = j.file_io[0].read.waits.total_ns + 1;
  EXPECT_FALSE(encode_job(j));
}

TEST(JobRecord, MalformedPayloadsAreRefused) {
  const auto good = encode_job(sample_job())->payload;
  // Every truncation is refused, never misread.
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(decode_job(cut)) << "cut at " << n;
  }
  auto with = [&](auto change) {
    auto p = good;
    change(p);
    return decode_job(p);
  };
  auto stray = with([](std::vector<uint8_t>& p) { p.push_back(0); });
  ASSERT_FALSE(stray);
  EXPECT_NE(stray.error().what.find("unexpected bytes"), std::string::npos) << stray.error().what;
  EXPECT_FALSE(with([](std::vector<uint8_t>& p) { p[0] = 0; }));  // version 0
  // A newer version may append fields: they are skipped.
  auto newer = with([](std::vector<uint8_t>& p) {
    p[0] = kPayloadVersion + 1;
    p.push_back(0x55);
  });
  EXPECT_TRUE(newer) << newer.error().what;
  // A count of files beyond the bound, and one of channels beyond the bytes left.
  JobRecord none = sample_job(0);
  none.channels.clear();
  auto p = encode_job(none)->payload;
  std::vector<uint8_t> many = p;
  util::put_le32(many.data() + many.size() - 4, JobRecord::kMaxFiles + 1);
  auto too_many = decode_job(many);
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().what.find("too many files"), std::string::npos);
  std::vector<uint8_t> chans = p;
  util::put_le32(chans.data() + chans.size() - 16, 0xffffffffu);
  EXPECT_FALSE(decode_job(chans));
  // A wait longer than all the waits together (the second channel's longest read wait,
  // whose 8 bytes end 64 + 8 bytes before its entry, the last one, ends).
  JobRecord odd = sample_job(0);
  auto op = encode_job(odd)->payload;
  const size_t max_at = op.size() - 12 - 64 - 8;
  util::put_le64(op.data() + max_at, 1'000'000'000'000);
  auto bad = decode_job(op);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what.find("inconsistent"), std::string::npos) << bad.error().what;
}

TEST(JobRecord, JobsSurviveAReopenWithTheirSequence) {
  testing::TempDir tmp;
  uint64_t seq1 = 0, seq2 = 0;
  {
    auto cat = open_ok(tmp / "cat");
    ASSERT_TRUE(cat);
    auto id = cat->begin_backup(sample_begin("t"));
    ASSERT_TRUE(id);
    auto s1 = cat->add_job(sample_job());
    ASSERT_TRUE(s1) << s1.error().what;
    JobRecord r = sample_job(0);
    r.type = "restore";
    r.status = "complete";
    auto s2 = cat->add_job(r);
    ASSERT_TRUE(s2);
    seq1 = *s1;
    seq2 = *s2;
    EXPECT_EQ(seq1, 2u);  // after the begin record
    EXPECT_EQ(seq2, 3u);
    ASSERT_EQ(cat->jobs().size(), 2u);
    EXPECT_EQ(cat->jobs()[1].sequence, seq2);
  }
  auto cat = open_ok(tmp / "cat", Create::no);
  ASSERT_TRUE(cat);
  EXPECT_TRUE(cat->warnings().empty());
  auto jobs = cat->jobs();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].sequence, seq1);
  expect_equal(jobs[0], sample_job());
  EXPECT_EQ(jobs[1].sequence, seq2);
  EXPECT_EQ(jobs[1].type, "restore");
  // Job records change no backup.
  ASSERT_EQ(cat->backups().size(), 1u);
  EXPECT_EQ(cat->backups()[0].status_name(), "incomplete");
}

TEST(JobRecord, AMalformedJobRecordIsIgnoredWithAWarning) {
  testing::TempDir tmp;
  const std::string dir = tmp / "cat";
  {
    auto cat = open_ok(dir);
    ASSERT_TRUE(cat);
    ASSERT_TRUE(cat->add_job(sample_job()));
  }
  // A stray byte after the fields of this version, re-framed with a valid CRC: only the
  // payload is wrong.
  auto log = read_bytes(log_path(dir));
  auto frames = frames_of(log);
  ASSERT_EQ(frames.size(), 1u);
  std::vector<uint8_t> payload(frames[0].payload.begin(), frames[0].payload.end());
  payload.push_back(1);
  std::vector<uint8_t> rebuilt(log.begin(), log.begin() + static_cast<std::ptrdiff_t>(frames[0].offset));
  append_frame(rebuilt, 1, RecordType::job, payload);
  write_bytes(log_path(dir), rebuilt);
  auto cat = open_ok(dir, Create::no);
  ASSERT_TRUE(cat);
  EXPECT_TRUE(cat->jobs().empty());
  auto ws = cat->warnings();
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_NE(ws[0].what.find("malformed job record (sequence 1)"), std::string::npos) << ws[0].what;
}

}  // namespace
}  // namespace stripeback::catalog::test
