// The NFS backend against a real nfs-ganesha: file calls, the engine, errors.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "backends/nfs/nfs_fs.h"
#include "storage/io_loop.h"
#include "backends/nfs/options.h"
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

storage::Storage& st() { return nfs_storage(); }

storage::Location at(const std::string& rel) {
  auto l = storage::Location::parse(NfsServer::get().url_of(rel));
  EXPECT_TRUE(l) << l.error().what;
  return l ? *l : storage::Location{};
}

TEST(NfsFs, DirectoriesStatListRenameUnlink) {
  SB_REQUIRE_NFS();
  {
    auto md = st().make_dirs(at("fs/a/b/c"));
    ASSERT_TRUE(md) << md.error().what;
  }
  {
    auto md = st().make_dirs(at("fs/a/b/c"));
    ASSERT_TRUE(md) << md.error().what;
  }  // existing: fine
  auto info = st().stat(at("fs/a/b"), false);
  ASSERT_TRUE(info) << info.error().what;
  EXPECT_TRUE(S_ISDIR(info->mode));
  {
    auto f = st().create(at("fs/a/one"), {true, 0640});
    ASSERT_TRUE(f) << f.error().what;
    auto again = st().create(at("fs/a/one"), {false, 0640});
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code, Errc::exists) << again.error().what;
    EXPECT_NE(again.error().what.find("fs/a/one"), std::string::npos) << again.error().what;
  }
  auto names = st().list(at("fs/a"));
  ASSERT_TRUE(names) << names.error().what;
  std::sort(names->begin(), names->end());
  EXPECT_EQ(*names, (std::vector<std::string>{"b", "one"}));
  ASSERT_TRUE(st().rename(at("fs/a/one"), at("fs/a/two"), false));
  EXPECT_TRUE(st().stat(at("fs/a/two"), false));
  {
    auto f = st().create(at("fs/a/three"), {false, 0640});
    ASSERT_TRUE(f) << f.error().what;
  }
  // Without replace, an existing name stays.
  auto kept = st().rename(at("fs/a/two"), at("fs/a/three"), false);
  ASSERT_FALSE(kept);
  EXPECT_EQ(kept.error().code, Errc::exists) << kept.error().what;
  ASSERT_TRUE(st().remove(at("fs/a/three")));
  ASSERT_TRUE(st().remove(at("fs/a/two")));
  auto gone = st().stat(at("fs/a/two"), false);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, Errc::not_found) << gone.error().what;
}

TEST(NfsFs, SyncWriteAndReadRoundTrip) {
  SB_REQUIRE_NFS();
  {
    auto md = st().make_dirs(at("rt"));
    ASSERT_TRUE(md) << md.error().what;
  }
  auto data = pattern(3 * 1024 * 1024 + 777, 1);
  {
    auto f = st().create(at("rt/file"), {false, 0644});
    ASSERT_TRUE(f) << f.error().what;
    ASSERT_TRUE((*f)->write_at(data.data(), data.size(), 0));
    ASSERT_TRUE((*f)->commit());
  }
  EXPECT_EQ(testing::read_file(local("rt/file")),
            std::string(reinterpret_cast<const char*>(data.data()), data.size()));
  auto f = st().open_read(at("rt/file"), {true});
  ASSERT_TRUE(f) << f.error().what;
  auto info = (*f)->stat();
  ASSERT_TRUE(info);
  EXPECT_EQ(info->size, data.size());
  std::vector<std::byte> back(data.size() + 100);
  auto n = (*f)->read_at(back.data(), back.size(), 0);
  ASSERT_TRUE(n) << n.error().what;
  ASSERT_EQ(*n, data.size());
  EXPECT_EQ(0, std::memcmp(back.data(), data.data(), data.size()));
}

// Several requests of 1 MiB, more than the in-flight limit, through a channel's I/O loop.
TEST(NfsFs, EngineWritesAndReadsManyOpsInFlight) {
  SB_REQUIRE_NFS();
  {
    auto md = st().make_dirs(at("eng"));
    ASSERT_TRUE(md) << md.error().what;
  }
  constexpr size_t kOps = 12, kLen = 1 << 20;
  auto data = pattern(kOps * kLen - 5000, 2);
  storage::IoLoop loop(64);
  {
    auto f = st().create(at("eng/big"), {true, 0644});
    ASSERT_TRUE(f) << f.error().what;
    for (size_t i = 0; i < kOps; ++i) {
      size_t off = i * kLen;
      auto len = static_cast<uint32_t>(std::min(kLen, data.size() - off));
      ASSERT_TRUE(loop.submit({f->get(), storage::OpKind::write, off, data.data() + off, len, i}));
    }
    std::vector<storage::Completion> comps(kOps);
    size_t got = 0;
    while (got < kOps) {
      size_t n = loop.reap(std::span(comps).subspan(got), 1,
                           storage::Clock::now() + std::chrono::seconds(10));
      ASSERT_GT(n, 0u);
      got += n;
    }
    for (auto& c : comps) ASSERT_TRUE(c.result) << c.result.error().what;
  }
  auto f = st().open_read(at("eng/big"), {true});
  ASSERT_TRUE(f);
  std::vector<std::byte> back(kOps * kLen);
  for (size_t i = 0; i < kOps; ++i)
    ASSERT_TRUE(loop.submit({f->get(), storage::OpKind::read, i * kLen, back.data() + i * kLen,
                             static_cast<uint32_t>(kLen), i}));
  std::vector<storage::Completion> comps(kOps);
  size_t got = 0;
  while (got < kOps) got += loop.reap(std::span(comps).subspan(got), 1,
                                      storage::Clock::now() + std::chrono::seconds(10));
  uint64_t total = 0;
  for (auto& c : comps) {
    ASSERT_TRUE(c.result) << c.result.error().what;
    total += *c.result;
  }
  EXPECT_EQ(total, data.size());  // the last op stops at end of file
  EXPECT_EQ(0, std::memcmp(back.data(), data.data(), data.size()));
  EXPECT_EQ(loop.names(), "nfs");
  auto g = st().thread_counters(false);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->name, "nfs");
  EXPECT_EQ(g->find("servers")->text, "127.0.0.1");
  EXPECT_GE(g->find("rpcs")->number, 2 * kOps);
  EXPECT_GE(g->find("bytes_written")->number, data.size());
  EXPECT_GT(g->find("max_latency_ms")->real, 0.0);
}

TEST(NfsFs, MissingExportAndMissingFileAreNamed) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  auto f = st().open_read(at("no/such/file"), {false});
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code, Errc::not_found) << f.error().what;
  EXPECT_NE(f.error().what.find("no/such/file"), std::string::npos) << f.error().what;
  std::string other = "nfs://127.0.0.1/nonexistent/export" + s.query();
  auto g = st().stat(*storage::Location::parse(other), false);
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().what.find("/nonexistent/export"), std::string::npos) << g.error().what;
}

TEST(NfsFs, StoppedServerFailsWithinTheRetryWindowWithoutSpinning) {
  SB_REQUIRE_NFS();
  auto& s = NfsServer::get();
  {
    auto md = st().make_dirs(at("stop"));
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
  auto r = st().stat(at("stop"), false);
  double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  auto elapsed = std::chrono::steady_clock::now() - t0;
  s.resume();
  set_options(saved);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::timed_out) << r.error().what;
  EXPECT_NE(r.error().what.find("127.0.0.1"), std::string::npos) << r.error().what;
  EXPECT_LT(elapsed, std::chrono::seconds(6));
  EXPECT_LT(cpu, 1.0) << "the client spun while the server was stopped";
  EXPECT_TRUE(st().stat(at("stop"), false));  // and it recovers once the server runs
}

}  // namespace
}  // namespace stripeback::nfs
