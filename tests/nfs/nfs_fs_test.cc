// The NFS backend against a real nfs-ganesha: file calls, the engine, errors.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "io/file.h"
#include "io/io_engine.h"
#include "io/remote.h"
#include "nfs/nfs_engine.h"
#include "nfs/options.h"
#include "tests/nfs/nfs_server.h"
#include "tests/support/temp_dir.h"

namespace stripeback::nfs {
namespace {

using it::NfsServer;

std::vector<std::byte> pattern(size_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1103515245u + 12345u;
    b = static_cast<std::byte>(x >> 24);
  }
  return v;
}

std::string local(const std::string& rel) { return NfsServer::get().export_dir() + "/" + rel; }

TEST(NfsFs, DirectoriesStatListRenameUnlink) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  {
    auto md = io::make_dirs(s.url_of("fs/a/b/c"));
    ASSERT_TRUE(md) << md.error().what;
  }
  {
    auto md = io::make_dirs(s.url_of("fs/a/b/c"));
    ASSERT_TRUE(md) << md.error().what;
  }  // existing: fine
  auto st = io::lstat_path(s.url_of("fs/a/b"));
  ASSERT_TRUE(st) << st.error().what;
  EXPECT_TRUE(S_ISDIR(st->st_mode));
  {
    auto f = io::create_exclusive(s.url_of("fs/a/one"), 0640, io::Direct::yes);
    ASSERT_TRUE(f) << f.error().what;
    auto again = io::create_exclusive(s.url_of("fs/a/one"), 0640, io::Direct::no);
    ASSERT_FALSE(again);
    EXPECT_NE(again.error().what.find("fs/a/one"), std::string::npos) << again.error().what;
  }
  auto names = io::list_dir(s.url_of("fs/a"));
  ASSERT_TRUE(names) << names.error().what;
  std::sort(names->begin(), names->end());
  EXPECT_EQ(*names, (std::vector<std::string>{"b", "one"}));
  ASSERT_TRUE(io::rename_path(s.url_of("fs/a/one"), s.url_of("fs/a/two")));
  EXPECT_TRUE(io::lstat_path(s.url_of("fs/a/two")));
  ASSERT_TRUE(io::unlink_path(s.url_of("fs/a/two")));
  auto gone = io::lstat_path(s.url_of("fs/a/two"));
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, Errc::not_found) << gone.error().what;
}

TEST(NfsFs, SyncWriteAndReadRoundTrip) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  {
    auto md = io::make_dirs(s.url_of("rt"));
    ASSERT_TRUE(md) << md.error().what;
  }
  auto data = pattern(3 * 1024 * 1024 + 777, 1);
  {
    auto f = io::create_exclusive(s.url_of("rt/file"), 0644, io::Direct::no);
    ASSERT_TRUE(f) << f.error().what;
    ASSERT_TRUE(io::pwrite_all_fd(f->fd.get(), data.data(), data.size(), 0, "rt/file"));
    ASSERT_TRUE(io::datasync_fd(f->fd.get(), "rt/file"));
  }
  EXPECT_EQ(testing::read_file(local("rt/file")),
            std::string(reinterpret_cast<const char*>(data.data()), data.size()));
  auto f = io::open_read(s.url_of("rt/file"), io::Direct::yes);
  ASSERT_TRUE(f) << f.error().what;
  auto st = io::fstat_fd(f->fd.get(), "rt/file");
  ASSERT_TRUE(st);
  EXPECT_EQ(static_cast<size_t>(st->st_size), data.size());
  std::vector<std::byte> back(data.size() + 100);
  auto n = io::pread_fd(f->fd.get(), back.data(), back.size(), 0, "rt/file");
  ASSERT_TRUE(n) << n.error().what;
  ASSERT_EQ(*n, data.size());
  EXPECT_EQ(0, std::memcmp(back.data(), data.data(), data.size()));
}

// Several ops of 1 MiB, more than the in-flight limit, through the channel's engine.
TEST(NfsFs, EngineWritesAndReadsManyOpsInFlight) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  {
    auto md = io::make_dirs(s.url_of("eng"));
    ASSERT_TRUE(md) << md.error().what;
  }
  constexpr size_t kOps = 12, kLen = 1 << 20;
  auto data = pattern(kOps * kLen - 5000, 2);
  auto engine = io::make_engine({64});
  {
    auto f = io::create_exclusive(s.url_of("eng/big"), 0644, io::Direct::yes);
    ASSERT_TRUE(f) << f.error().what;
    std::vector<io::IoOp> ops;
    for (size_t i = 0; i < kOps; ++i) {
      size_t off = i * kLen;
      auto len = static_cast<uint32_t>(std::min(kLen, data.size() - off));
      ops.push_back({io::OpKind::write, f->fd.get(), off, data.data() + off, len, i});
    }
    ASSERT_TRUE(engine->submit(ops));
    std::vector<io::IoCompletion> comps(kOps);
    size_t got = 0;
    while (got < kOps) {
      size_t n = engine->reap(std::span(comps).subspan(got), 1,
                              io::Clock::now() + std::chrono::seconds(10));
      ASSERT_GT(n, 0u);
      got += n;
    }
    for (auto& c : comps) ASSERT_TRUE(c.result) << c.result.error().what;
  }
  auto f = io::open_read(s.url_of("eng/big"), io::Direct::yes);
  ASSERT_TRUE(f);
  std::vector<std::byte> back(kOps * kLen);
  std::vector<io::IoOp> ops;
  for (size_t i = 0; i < kOps; ++i)
    ops.push_back({io::OpKind::read, f->fd.get(), i * kLen, back.data() + i * kLen,
                   static_cast<uint32_t>(kLen), i});
  ASSERT_TRUE(engine->submit(ops));
  std::vector<io::IoCompletion> comps(kOps);
  size_t got = 0;
  while (got < kOps) got += engine->reap(std::span(comps).subspan(got), 1,
                                         io::Clock::now() + std::chrono::seconds(10));
  uint64_t total = 0;
  for (auto& c : comps) {
    ASSERT_TRUE(c.result) << c.result.error().what;
    total += *c.result;
  }
  EXPECT_EQ(total, data.size());  // the last op stops at end of file
  EXPECT_EQ(0, std::memcmp(back.data(), data.data(), data.size()));
  auto stats = io::remote_fs()->thread_stats();
  EXPECT_EQ(stats.servers, "127.0.0.1");
  EXPECT_GE(stats.rpcs, 2 * kOps);
  EXPECT_GE(stats.bytes_written, data.size());
  EXPECT_GT(stats.latency_max_s, 0.0);
}

TEST(NfsFs, MissingExportAndMissingFileAreNamed) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  auto f = io::open_read(s.url_of("no/such/file"), io::Direct::no);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code, Errc::not_found) << f.error().what;
  EXPECT_NE(f.error().what.find("no/such/file"), std::string::npos) << f.error().what;
  std::string other = "nfs://127.0.0.1/nonexistent/export" + s.query();
  auto g = io::lstat_path(other);
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().what.find("/nonexistent/export"), std::string::npos) << g.error().what;
}

TEST(NfsFs, StoppedServerFailsWithinTheRetryWindowWithoutSpinning) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  {
    auto md = io::make_dirs(s.url_of("stop"));
    ASSERT_TRUE(md) << md.error().what;
  }
  NfsOptions saved = options();
  NfsOptions o = saved;
  o.timeout = std::chrono::milliseconds(500);
  o.retry = std::chrono::milliseconds(1500);
  set_options(o);
  s.pause();
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  auto r = io::lstat_path(s.url_of("stop"));
  double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  auto elapsed = std::chrono::steady_clock::now() - t0;
  s.resume();
  set_options(saved);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::timed_out) << r.error().what;
  EXPECT_NE(r.error().what.find("127.0.0.1"), std::string::npos) << r.error().what;
  EXPECT_LT(elapsed, std::chrono::seconds(6));
  EXPECT_LT(cpu, 1.0) << "the client spun while the server was stopped";
  EXPECT_TRUE(io::lstat_path(s.url_of("stop")));  // and it recovers once the server runs
}

}  // namespace
}  // namespace stripeback::nfs
