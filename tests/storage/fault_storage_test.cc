#include "storage/fault_storage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "storage/io_loop.h"

namespace stripeback::storage {

namespace {

using namespace std::chrono_literals;

Location loc(std::string path) {
  Location l;
  l.path = std::move(path);
  return l;
}

std::vector<std::byte> bytes(size_t n, char c) {
  return std::vector<std::byte>(n, static_cast<std::byte>(c));
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// ---- A tiny in-memory Storage: flat maps of paths; requests complete at once. ----

class MemStorage;

class MemQueue final : public Queue {
 public:
  const char* name() const override { return "mem"; }
  size_t in_flight() const override { return done.size(); }
  size_t reap(std::span<Completion> out, size_t, Clock::time_point) override {
    size_t n = 0;
    while (n < out.size() && !done.empty()) {
      out[n++] = std::move(done.front());
      done.pop_front();
    }
    return n;
  }
  std::deque<Completion> done;
};

class MemStorage final : public Storage {
 public:
  struct Calls {
    int submits = 0, foreign = 0;  // requests; those not naming the file they reached
    int writes = 0, reads = 0, commits = 0, renames = 0, removes = 0, dir_syncs = 0;
    int opens = 0, creates = 0;
  };

  const char* scheme() const override { return "mem"; }
  const StorageCaps& caps() const override { return caps_; }
  Result<std::unique_ptr<ReadFile>> open_read(const Location& at, const OpenOptions&) override;
  Result<std::unique_ptr<WriteFile>> create(const Location& at, const CreateOptions&) override;
  Result<std::unique_ptr<Directory>> open_dir(const Location& at, bool create) override;
  Result<FileInfo> stat(const Location& at, bool) override { return stat_path(at.path); }
  Result<std::vector<std::string>> list(const Location& dir) override {
    return list_path(dir.path);
  }
  Result<void> remove(const Location& at) override { return remove_path(at.path); }
  Result<void> rename(const Location& from, const Location& to, bool replace) override {
    return rename_path(from.path, to.path, replace);
  }
  Result<void> set_attrs(const Location&, const Attrs&) override { return ok(); }
  Result<void> make_dirs(const Location& at, mode_t) override {
    std::lock_guard lock(mu);
    dirs.insert(at.path);
    return ok();
  }
  Result<void> sync_dir(const Location&) override {
    std::lock_guard lock(mu);
    ++calls.dir_syncs;
    return ok();
  }

  Result<FileInfo> stat_path(const std::string& p) {
    std::lock_guard lock(mu);
    FileInfo fi;
    if (auto it = files.find(p); it != files.end()) {
      fi.size = it->second.size();
      fi.mode = 0100640;
      return fi;
    }
    if (dirs.count(p)) {
      fi.mode = 040755;
      return fi;
    }
    return sys_error(ENOENT, "unable to stat '" + p + "'");
  }
  Result<std::vector<std::string>> list_path(const std::string& dir) {
    std::lock_guard lock(mu);
    std::vector<std::string> names;
    const std::string prefix = dir + "/";
    for (const auto& [p, data] : files)
      if (p.compare(0, prefix.size(), prefix) == 0 && p.find('/', prefix.size()) == p.npos)
        names.push_back(p.substr(prefix.size()));
    return names;
  }
  Result<void> remove_path(const std::string& p) {
    std::lock_guard lock(mu);
    ++calls.removes;
    if (files.erase(p) == 0) return sys_error(ENOENT, "unable to remove '" + p + "'");
    return ok();
  }
  Result<void> rename_path(const std::string& from, const std::string& to, bool replace) {
    std::lock_guard lock(mu);
    ++calls.renames;
    auto it = files.find(from);
    if (it == files.end()) return sys_error(ENOENT, "unable to rename '" + from + "'");
    if (!replace && files.count(to)) return sys_error(EEXIST, "unable to rename '" + from + "'");
    auto data = std::move(it->second);
    files.erase(it);
    files[to] = std::move(data);
    return ok();
  }
  Result<std::unique_ptr<WriteFile>> create_path(const std::string& p);

  Result<uint32_t> write(const std::string& p, const std::byte* buf, size_t len, uint64_t off) {
    std::lock_guard lock(mu);
    ++calls.writes;
    auto& data = files[p];
    if (data.size() < off + len) data.resize(off + len);
    std::copy(buf, buf + len, data.begin() + static_cast<ptrdiff_t>(off));
    return static_cast<uint32_t>(len);
  }
  Result<uint32_t> read(const std::string& p, std::byte* buf, size_t len, uint64_t off) {
    std::lock_guard lock(mu);
    ++calls.reads;
    const auto& data = files[p];
    if (off >= data.size()) return uint32_t{0};
    const size_t n = std::min<size_t>(len, data.size() - off);
    std::copy_n(data.begin() + static_cast<ptrdiff_t>(off), n, buf);
    return static_cast<uint32_t>(n);
  }
  // A request reaching `f`, done now; its completion waits in this storage's queue.
  Result<void> submit(const File* f, const std::string& p, IoLoop& loop, const Request& r) {
    {
      std::lock_guard lock(mu);
      ++calls.submits;
      if (r.file != f) ++calls.foreign;
    }
    Completion c;
    c.tag = r.tag;
    c.kind = r.kind;
    if (r.kind == OpKind::write) c.result = write(p, r.buf, r.len, r.offset);
    if (r.kind == OpKind::read) c.result = read(p, r.buf, r.len, r.offset);
    loop.queue<MemQueue>(this, [] { return std::make_unique<MemQueue>(); }).done.push_back(c);
    return ok();
  }

  std::vector<std::byte> content(const std::string& p) {
    std::lock_guard lock(mu);
    auto it = files.find(p);
    return it == files.end() ? std::vector<std::byte>{} : it->second;
  }
  bool exists(const std::string& p) {
    std::lock_guard lock(mu);
    return files.count(p) > 0;
  }
  Calls counts() {
    std::lock_guard lock(mu);
    return calls;
  }

  std::mutex mu;
  std::map<std::string, std::vector<std::byte>> files;
  std::set<std::string> dirs;
  Calls calls;

 private:
  StorageCaps caps_;
};

class MemReadFile final : public ReadFile {
 public:
  MemReadFile(MemStorage& m, std::string p) : m_(m), p_(std::move(p)) {}
  const std::string& name() const override { return p_; }
  Result<void> submit(IoLoop& loop, const Request& r) override {
    return m_.submit(this, p_, loop, r);
  }
  Result<FileInfo> stat() override { return m_.stat_path(p_); }
  Result<size_t> read_at(std::byte* buf, size_t len, uint64_t offset) override {
    SB_ASSIGN(uint32_t n, m_.read(p_, buf, len, offset));
    return size_t{n};
  }

 private:
  MemStorage& m_;
  std::string p_;
};

class MemWriteFile final : public WriteFile {
 public:
  MemWriteFile(MemStorage& m, std::string p) : m_(m), p_(std::move(p)) {}
  const std::string& name() const override { return p_; }
  Result<void> submit(IoLoop& loop, const Request& r) override {
    return m_.submit(this, p_, loop, r);
  }
  Result<void> write_at(const std::byte* buf, size_t len, uint64_t offset) override {
    SB_TRY(m_.write(p_, buf, len, offset));
    return ok();
  }
  Result<void> preallocate(uint64_t, uint64_t) override { return ok(); }
  Result<void> truncate(uint64_t size) override {
    std::lock_guard lock(m_.mu);
    m_.files[p_].resize(size);
    return ok();
  }
  Result<void> commit() override {
    std::lock_guard lock(m_.mu);
    ++m_.calls.commits;
    return ok();
  }
  Result<void> set_attrs(const Attrs&) override { return ok(); }
  Result<void> close() override { return ok(); }
  void abandon() override {}

 private:
  MemStorage& m_;
  std::string p_;
};

class MemDirectory final : public Directory {
 public:
  MemDirectory(MemStorage& m, Location at) : m_(m), at_(std::move(at)) {}
  const Location& location() const override { return at_; }
  Result<std::unique_ptr<ReadFile>> open(const std::string& name, const OpenOptions& o) override {
    return m_.open_read(at_.join(name), o);
  }
  Result<std::unique_ptr<Directory>> open_dir(const std::string& name, bool create,
                                              mode_t) override {
    return m_.open_dir(at_.join(name), create);
  }
  Result<std::unique_ptr<WriteFile>> create(const std::string& name,
                                            const CreateOptions&) override {
    return m_.create_path(p(name));
  }
  Result<FileInfo> stat(const std::string& name) override { return m_.stat_path(p(name)); }
  Result<std::vector<std::string>> list() override { return m_.list_path(at_.path); }
  Result<void> remove(const std::string& name) override { return m_.remove_path(p(name)); }
  Result<void> rename(const std::string& from, const std::string& to, bool replace) override {
    return m_.rename_path(p(from), p(to), replace);
  }
  Result<void> set_attrs(const Attrs&) override { return ok(); }
  Result<void> sync() override { return m_.sync_dir(at_); }

 private:
  std::string p(const std::string& name) const { return at_.path + "/" + name; }
  MemStorage& m_;
  Location at_;
};

Result<std::unique_ptr<ReadFile>> MemStorage::open_read(const Location& at, const OpenOptions&) {
  std::lock_guard lock(mu);
  ++calls.opens;
  if (!files.count(at.path)) return sys_error(ENOENT, "unable to open '" + at.path + "' for read");
  return std::unique_ptr<ReadFile>(std::make_unique<MemReadFile>(*this, at.path));
}

Result<std::unique_ptr<WriteFile>> MemStorage::create(const Location& at, const CreateOptions&) {
  return create_path(at.path);
}

Result<std::unique_ptr<WriteFile>> MemStorage::create_path(const std::string& p) {
  std::lock_guard lock(mu);
  ++calls.creates;
  if (files.count(p)) return sys_error(EEXIST, "unable to create '" + p + "'");
  files[p];
  return std::unique_ptr<WriteFile>(std::make_unique<MemWriteFile>(*this, p));
}

Result<std::unique_ptr<Directory>> MemStorage::open_dir(const Location& at, bool create) {
  std::lock_guard lock(mu);
  ++calls.opens;
  if (!dirs.count(at.path)) {
    if (!create) return sys_error(ENOENT, "unable to open directory '" + at.path + "'");
    dirs.insert(at.path);
  }
  return std::unique_ptr<Directory>(std::make_unique<MemDirectory>(*this, at));
}

// ---- Helpers for the tests ----

struct FaultStorageTest : ::testing::Test {
  std::shared_ptr<MemStorage> mem = std::make_shared<MemStorage>();
  std::shared_ptr<FaultStorage> fs = std::make_shared<FaultStorage>(mem);
  IoLoop loop;

  std::unique_ptr<WriteFile> create(const std::string& p) {
    auto f = fs->create(loc(p), CreateOptions{});
    EXPECT_TRUE(f.has_value()) << f.error().what;
    return f ? std::move(f).value() : nullptr;
  }
  std::unique_ptr<ReadFile> open(const std::string& p) {
    auto f = fs->open_read(loc(p), OpenOptions{});
    EXPECT_TRUE(f.has_value()) << f.error().what;
    return f ? std::move(f).value() : nullptr;
  }
  // Submits one request and reaps its completion (waiting up to 5 s).
  Completion roundtrip(File& f, OpKind kind, std::byte* buf, uint32_t len, uint64_t off,
                       uint64_t tag) {
    Request r;
    r.file = &f;
    r.kind = kind;
    r.offset = off;
    r.buf = buf;
    r.len = len;
    r.tag = tag;
    auto s = loop.submit(r);
    EXPECT_TRUE(s.has_value()) << s.error().what;
    std::vector<Completion> out(1);
    EXPECT_EQ(loop.reap(out, 1, Clock::now() + 5s), 1u);
    return out[0];
  }
};

// ---- Tests ----

TEST_F(FaultStorageTest, ForwardsUnchangedWhenNoRuleMatches) {
  fs->add(FaultRule::fail(FaultOp::write, EIO).only(".nothing"));
  auto w = create("/m/a.sbp");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->name(), "/m/a.sbp");
  auto head = bytes(16, 'h');
  ASSERT_TRUE(w->write_at(head.data(), head.size(), 0).has_value());
  auto body = bytes(4096, 'b');
  Completion c = roundtrip(*w, OpKind::write, body.data(), 4096, 16, 77);
  EXPECT_EQ(c.tag, 77u);
  EXPECT_EQ(c.kind, OpKind::write);
  ASSERT_TRUE(c.result.has_value()) << c.result.error().what;
  EXPECT_EQ(*c.result, 4096u);
  Completion s = roundtrip(*w, OpKind::sync, nullptr, 0, 0, 78);
  EXPECT_TRUE(s.result.has_value());
  ASSERT_TRUE(w->commit().has_value());
  ASSERT_TRUE(w->close().has_value());

  // The bytes are in the inner storage; the inner files saw their own requests.
  auto data = mem->content("/m/a.sbp");
  ASSERT_EQ(data.size(), 16u + 4096u);
  EXPECT_EQ(data[0], std::byte{'h'});
  EXPECT_EQ(data[16], std::byte{'b'});
  EXPECT_EQ(mem->counts().foreign, 0);
  EXPECT_EQ(mem->counts().submits, 2);
  EXPECT_EQ(mem->counts().commits, 1);
  EXPECT_EQ(loop.names(), "mem");  // nothing faulted: no fault queue on the loop

  auto r = open("/m/a.sbp");
  ASSERT_TRUE(r);
  std::vector<std::byte> back(4096);
  Completion rc = roundtrip(*r, OpKind::read, back.data(), 4096, 16, 5);
  ASSERT_TRUE(rc.result.has_value());
  EXPECT_EQ(*rc.result, 4096u);
  EXPECT_EQ(back, body);
  std::vector<std::byte> h(16);
  auto n = r->read_at(h.data(), 16, 0);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, 16u);
  EXPECT_EQ(h, head);
  auto st = r->stat();
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->size, 16u + 4096u);

  EXPECT_EQ(fs->seen(FaultOp::write), 2u);
  EXPECT_EQ(fs->seen(FaultOp::sync), 2u);
  EXPECT_EQ(fs->seen(FaultOp::read), 2u);
  EXPECT_EQ(fs->seen(FaultOp::open), 2u);
  EXPECT_EQ(fs->seen(FaultOp::close), 1u);
  EXPECT_EQ(fs->fired(), 0u);
  EXPECT_STREQ(fs->scheme(), "mem");
}

TEST_F(FaultStorageTest, NthWriteRequestFailsWithEio) {
  const size_t id = fs->add(FaultRule::fail(FaultOp::write, EIO, 2));
  auto w = create("/m/x.sbp");
  ASSERT_TRUE(w);
  auto one = bytes(4096, '1'), two = bytes(4096, '2'), three = bytes(4096, '3');
  Request rs[3];
  std::byte* bufs[3] = {one.data(), two.data(), three.data()};
  for (uint32_t i = 0; i < 3; ++i) {
    rs[i].file = w.get();
    rs[i].kind = OpKind::write;
    rs[i].offset = 4096u * i;
    rs[i].buf = bufs[i];
    rs[i].len = 4096;
    rs[i].tag = 100 + i;
  }
  ASSERT_TRUE(loop.submit(std::span<const Request>(rs)).has_value());
  EXPECT_EQ(loop.in_flight(), 3u);
  std::vector<Completion> out(8);
  size_t got = 0;
  while (got < 3) got += loop.reap(std::span(out).subspan(got), 3 - got, Clock::now() + 5s);
  EXPECT_EQ(loop.in_flight(), 0u);
  std::map<uint64_t, Completion*> by_tag;
  for (size_t i = 0; i < got; ++i) by_tag[out[i].tag] = &out[i];
  ASSERT_EQ(by_tag.size(), 3u);
  EXPECT_TRUE(by_tag[100]->result.has_value());
  EXPECT_TRUE(by_tag[102]->result.has_value());
  const Completion& bad = *by_tag[101];
  ASSERT_FALSE(bad.result.has_value());
  EXPECT_EQ(bad.kind, OpKind::write);
  EXPECT_EQ(bad.result.error().code, Errc::io);
  EXPECT_EQ(bad.result.error().sys_errno, EIO);
  EXPECT_EQ(bad.result.error().what, "unable to write '/m/x.sbp' at offset 4096: " +
                                         std::string(std::strerror(EIO)) + " (injected)");
  // The faulted request never reached the inner file.
  EXPECT_EQ(mem->counts().submits, 2);
  auto data = mem->content("/m/x.sbp");
  ASSERT_EQ(data.size(), 3u * 4096u);
  EXPECT_EQ(data[0], std::byte{'1'});
  EXPECT_EQ(data[4096], std::byte{0});
  EXPECT_EQ(data[8192], std::byte{'3'});
  EXPECT_EQ(loop.names(), "mem+fault");
  EXPECT_EQ(fs->fired(FaultOp::write), 1u);
  EXPECT_EQ(fs->rule_fired(id), 1u);
}

TEST_F(FaultStorageTest, BlockingWriteFailsWithNoSpaceAndQuota) {
  fs->add(FaultRule::fail(FaultOp::write, ENOSPC, 1));
  fs->add(FaultRule::fail(FaultOp::write, EDQUOT, 2));
  auto w = create("/m/cat.db");
  ASSERT_TRUE(w);
  auto b = bytes(512, 'x');
  auto e1 = w->write_at(b.data(), b.size(), 4096);
  ASSERT_FALSE(e1.has_value());
  EXPECT_EQ(e1.error().code, Errc::no_space);
  EXPECT_EQ(e1.error().sys_errno, ENOSPC);
  EXPECT_EQ(e1.error().what,
            "unable to write '/m/cat.db' at offset 4096: No space left on device (injected)");
  auto e2 = w->write_at(b.data(), b.size(), 0);
  ASSERT_FALSE(e2.has_value());
  EXPECT_EQ(e2.error().code, Errc::no_space);
  EXPECT_EQ(e2.error().sys_errno, EDQUOT);
  EXPECT_TRUE(ends_with(e2.error().what, std::string(std::strerror(EDQUOT)) + " (injected)"));
  EXPECT_NE(e2.error().what.find("'/m/cat.db'"), std::string::npos);
  EXPECT_TRUE(w->write_at(b.data(), b.size(), 0).has_value());
  EXPECT_EQ(mem->counts().writes, 1);
  EXPECT_EQ(mem->content("/m/cat.db").size(), 512u);
}

TEST_F(FaultStorageTest, EveryOneFromTheNthOn) {
  fs->add(FaultRule::fail(FaultOp::sync, EIO, 2).onward());
  auto w = create("/m/p.sbp");
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->commit().has_value());
  for (int i = 0; i < 3; ++i) {
    auto r = w->commit();
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().what, "unable to sync '/m/p.sbp': Input/output error (injected)");
  }
  Completion c = roundtrip(*w, OpKind::sync, nullptr, 0, 0, 9);
  ASSERT_FALSE(c.result.has_value());
  EXPECT_EQ(c.kind, OpKind::sync);
  EXPECT_EQ(c.result.error().what, "unable to sync '/m/p.sbp': Input/output error (injected)");
  EXPECT_EQ(mem->counts().commits, 1);
  EXPECT_EQ(fs->seen(FaultOp::sync), 5u);
  EXPECT_EQ(fs->fired(FaultOp::sync), 4u);
}

TEST_F(FaultStorageTest, SubstringFilterCountsOnlyMatchingObjects) {
  fs->add(FaultRule::fail(FaultOp::write, EIO, 2).only(".sbp"));
  auto a = create("/m/a.sbp"), cat = create("/m/catalog.db"), b = create("/m/b.sbp");
  auto buf = bytes(64, 'z');
  EXPECT_TRUE(a->write_at(buf.data(), 64, 0).has_value());    // 1st .sbp
  EXPECT_TRUE(cat->write_at(buf.data(), 64, 0).has_value());  // not counted
  auto r = b->write_at(buf.data(), 64, 0);                    // 2nd .sbp
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what.find("'/m/b.sbp'"), std::string::npos);
  EXPECT_TRUE(cat->write_at(buf.data(), 64, 64).has_value());
  EXPECT_TRUE(a->write_at(buf.data(), 64, 64).has_value());  // the 3rd: only the 2nd fails
  EXPECT_EQ(fs->seen(FaultOp::write), 5u);
  EXPECT_EQ(fs->fired(FaultOp::write), 1u);
}

TEST_F(FaultStorageTest, SubstringFilterOnADirectory) {
  fs->add(FaultRule::fail(FaultOp::open, ENOSPC).onward().only("/repo/catalog"));
  auto root = fs->open_dir(loc("/repo"), true);
  ASSERT_TRUE(root.has_value()) << root.error().what;
  auto data = (*root)->open_dir("data", true, 0755);
  ASSERT_TRUE(data.has_value());
  EXPECT_TRUE((*data)->create("p1.sbp", CreateOptions{}).has_value());
  auto cat = (*root)->open_dir("catalog", true, 0755);
  ASSERT_FALSE(cat.has_value());
  EXPECT_EQ(cat.error().code, Errc::no_space);
  EXPECT_EQ(cat.error().what,
            "unable to open directory '/repo/catalog': No space left on device (injected)");
  EXPECT_FALSE(mem->dirs.count("/repo/catalog"));
  auto direct = fs->create(loc("/repo/catalog/c.db"), CreateOptions{});
  ASSERT_FALSE(direct.has_value());
  EXPECT_EQ(direct.error().what,
            "unable to create '/repo/catalog/c.db': No space left on device (injected)");
  EXPECT_EQ(fs->fired(FaultOp::open), 2u);
  EXPECT_EQ(fs->seen(FaultOp::open), 5u);
}

TEST_F(FaultStorageTest, ShortWriteRequestCompletesWithFewerBytes) {
  fs->add(FaultRule::short_write(100, 1));
  fs->add(FaultRule::short_write(0, 3));
  auto w = create("/m/s.sbp");
  ASSERT_TRUE(w);
  auto buf = bytes(4096, 's');
  Completion c = roundtrip(*w, OpKind::write, buf.data(), 4096, 0, 1);
  ASSERT_TRUE(c.result.has_value());
  EXPECT_EQ(*c.result, 100u);
  EXPECT_EQ(c.tag, 1u);
  EXPECT_EQ(mem->content("/m/s.sbp").size(), 100u);  // only 100 bytes transferred
  // The caller resubmits the rest.
  Completion rest = roundtrip(*w, OpKind::write, buf.data() + 100, 3996, 100, 2);
  ASSERT_TRUE(rest.result.has_value());
  EXPECT_EQ(*rest.result, 3996u);
  EXPECT_EQ(mem->content("/m/s.sbp"), buf);
  // A write that transfers nothing completes with 0, without reaching the inner file.
  const int submits = mem->counts().submits;
  Completion none = roundtrip(*w, OpKind::write, buf.data(), 4096, 4096, 3);
  ASSERT_TRUE(none.result.has_value());
  EXPECT_EQ(*none.result, 0u);
  EXPECT_EQ(mem->counts().submits, submits);
  EXPECT_EQ(fs->fired(FaultOp::write), 2u);
}

TEST_F(FaultStorageTest, ShortBlockingWriteIsAnErrorNamingTheFile) {
  fs->add(FaultRule::short_write(100));
  auto w = create("/m/cat.db");
  ASSERT_TRUE(w);
  auto buf = bytes(4096, 'c');
  auto r = w->write_at(buf.data(), 4096, 8192);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::io);
  EXPECT_EQ(r.error().what,
            "unable to write '/m/cat.db' at offset 8192: only 100 of 4096 bytes written "
            "(injected)");
  EXPECT_EQ(mem->content("/m/cat.db").size(), 8192u + 100u);
}

TEST_F(FaultStorageTest, ShortRead) {
  auto w = create("/m/r.sbp");
  auto buf = bytes(4096, 'r');
  ASSERT_TRUE(w->write_at(buf.data(), buf.size(), 0).has_value());
  fs->add(FaultRule::short_read(10, 1));
  fs->add(FaultRule::short_read(512, 2));
  auto r = open("/m/r.sbp");
  std::vector<std::byte> back(4096);
  auto n = r->read_at(back.data(), 4096, 0);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, 10u);
  Completion c = roundtrip(*r, OpKind::read, back.data(), 4096, 0, 4);
  ASSERT_TRUE(c.result.has_value());
  EXPECT_EQ(*c.result, 512u);
}

TEST_F(FaultStorageTest, DelayedCompletionArrivesNoEarlierThanTheDelay) {
  fs->add(FaultRule::delayed(FaultOp::write, 150ms, 1));
  auto w = create("/m/d.sbp");
  ASSERT_TRUE(w);
  auto buf = bytes(4096, 'd');
  Request r;
  r.file = w.get();
  r.kind = OpKind::write;
  r.buf = buf.data();
  r.len = 4096;
  r.tag = 42;
  const auto t0 = Clock::now();
  ASSERT_TRUE(loop.submit(r).has_value());
  EXPECT_EQ(loop.in_flight(), 1u);
  std::vector<Completion> out(4);
  EXPECT_EQ(loop.reap(out, 0, Clock::now()), 0u);         // not yet
  EXPECT_EQ(loop.reap(out, 1, Clock::now() + 10ms), 0u);  // still not
  ASSERT_EQ(loop.reap(out, 1, Clock::now() + 5s), 1u);
  EXPECT_GE(Clock::now() - t0, 150ms);
  EXPECT_EQ(out[0].tag, 42u);
  ASSERT_TRUE(out[0].result.has_value());
  EXPECT_EQ(*out[0].result, 4096u);
  EXPECT_EQ(loop.in_flight(), 0u);
  // The inner file did the write, as its own request.
  EXPECT_EQ(mem->content("/m/d.sbp"), buf);
  EXPECT_EQ(mem->counts().foreign, 0);
}

TEST_F(FaultStorageTest, DelayedRequestsAmongUndelayedOnes) {
  fs->add(FaultRule::delayed(FaultOp::write, 200ms, 2));
  auto w = create("/m/e.sbp");
  auto buf = bytes(3 * 512, 'e');
  Request rs[3];
  for (uint32_t i = 0; i < 3; ++i) {
    rs[i].file = w.get();
    rs[i].kind = OpKind::write;
    rs[i].offset = 512u * i;
    rs[i].buf = buf.data() + 512 * i;
    rs[i].len = 512;
    rs[i].tag = i;
  }
  const auto t0 = Clock::now();
  ASSERT_TRUE(loop.submit(std::span<const Request>(rs)).has_value());
  std::vector<Completion> out(3);
  size_t got = loop.reap(out, 2, Clock::now() + 5s);
  ASSERT_EQ(got, 2u);
  EXPECT_LT(Clock::now() - t0, 200ms);
  EXPECT_NE(out[0].tag, 1u);
  EXPECT_NE(out[1].tag, 1u);
  ASSERT_EQ(loop.reap(std::span(out).subspan(2), 1, Clock::now() + 5s), 1u);
  EXPECT_GE(Clock::now() - t0, 200ms);
  EXPECT_EQ(out[2].tag, 1u);
  EXPECT_EQ(mem->content("/m/e.sbp"), buf);
}

TEST_F(FaultStorageTest, DelayedThenFailed) {
  fs->add(FaultRule::delayed(FaultOp::write, 30ms));
  fs->add(FaultRule::fail(FaultOp::write, EIO));
  auto w = create("/m/f.sbp");
  auto buf = bytes(512, 'f');
  const auto t0 = Clock::now();
  Completion c = roundtrip(*w, OpKind::write, buf.data(), 512, 0, 8);
  EXPECT_GE(Clock::now() - t0, 30ms);
  ASSERT_FALSE(c.result.has_value());
  EXPECT_EQ(c.result.error().sys_errno, EIO);
  EXPECT_EQ(mem->counts().submits, 0);
  EXPECT_EQ(fs->fired(FaultOp::write), 2u);
}

TEST_F(FaultStorageTest, DelayedBlockingCall) {
  mem->files["/m/a"];
  fs->add(FaultRule::delayed(FaultOp::rename, 30ms));
  const auto t0 = Clock::now();
  ASSERT_TRUE(fs->rename(loc("/m/a"), loc("/m/b"), false).has_value());
  EXPECT_GE(Clock::now() - t0, 30ms);
  EXPECT_TRUE(mem->exists("/m/b"));
}

TEST_F(FaultStorageTest, RenameRemoveSyncAndOpenFaults) {
  mem->files["/m/a.tmp"];
  mem->files["/m/old.sbp"];
  mem->dirs.insert("/m");
  fs->add(FaultRule::fail(FaultOp::rename, EIO).onward());
  fs->add(FaultRule::fail(FaultOp::remove, EIO).onward());
  fs->add(FaultRule::fail(FaultOp::sync, EIO).onward());

  auto rn = fs->rename(loc("/m/a.tmp"), loc("/m/a.sbp"), false);
  ASSERT_FALSE(rn.has_value());
  EXPECT_EQ(rn.error().what,
            "unable to rename '/m/a.tmp' to '/m/a.sbp': Input/output error (injected)");
  EXPECT_TRUE(mem->exists("/m/a.tmp"));
  auto rm = fs->remove(loc("/m/old.sbp"));
  ASSERT_FALSE(rm.has_value());
  EXPECT_EQ(rm.error().what, "unable to remove '/m/old.sbp': Input/output error (injected)");
  EXPECT_TRUE(mem->exists("/m/old.sbp"));
  auto sd = fs->sync_dir(loc("/m"));
  ASSERT_FALSE(sd.has_value());
  EXPECT_EQ(sd.error().what, "unable to sync directory '/m': Input/output error (injected)");

  auto dir = fs->open_dir(loc("/m"), false);
  ASSERT_TRUE(dir.has_value());
  auto drn = (*dir)->rename("a.tmp", "a.sbp", false);
  ASSERT_FALSE(drn.has_value());
  EXPECT_EQ(drn.error().what,
            "unable to rename '/m/a.tmp' to '/m/a.sbp': Input/output error (injected)");
  auto drm = (*dir)->remove("old.sbp");
  ASSERT_FALSE(drm.has_value());
  EXPECT_EQ(drm.error().what, "unable to remove '/m/old.sbp': Input/output error (injected)");
  auto ds = (*dir)->sync();
  ASSERT_FALSE(ds.has_value());
  EXPECT_EQ(ds.error().what, "unable to sync directory '/m': Input/output error (injected)");
  EXPECT_EQ(mem->counts().renames, 0);
  EXPECT_EQ(mem->counts().removes, 0);
  EXPECT_EQ(mem->counts().dir_syncs, 0);
  EXPECT_EQ(fs->fired(FaultOp::rename), 2u);
  EXPECT_EQ(fs->fired(FaultOp::remove), 2u);
  EXPECT_EQ(fs->fired(FaultOp::sync), 2u);

  // Opens: the first open_read, the second create, the Directory::create after that.
  fs->clear_rules();
  fs->add(FaultRule::fail(FaultOp::open, EIO, 2));
  fs->add(FaultRule::fail(FaultOp::open, ENOSPC, 4));
  fs->add(FaultRule::fail(FaultOp::open, EACCES, 5));
  EXPECT_TRUE(fs->open_read(loc("/m/old.sbp"), OpenOptions{}).has_value());  // 1
  auto o = fs->open_read(loc("/m/old.sbp"), OpenOptions{});                  // 2
  ASSERT_FALSE(o.has_value());
  EXPECT_EQ(o.error().what, "unable to open '/m/old.sbp' for read: Input/output error (injected)");
  EXPECT_TRUE(fs->create(loc("/m/n1.sbp"), CreateOptions{}).has_value());  // 3
  auto c = fs->create(loc("/m/n2.sbp"), CreateOptions{});                  // 4
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, Errc::no_space);
  EXPECT_FALSE(mem->exists("/m/n2.sbp"));
  auto dc = (*dir)->create("n3.sbp", CreateOptions{});  // 5
  ASSERT_FALSE(dc.has_value());
  EXPECT_EQ(dc.error().code, Errc::invalid_argument);
  EXPECT_EQ(dc.error().what,
            "unable to create '/m/n3.sbp': " + std::string(std::strerror(EACCES)) + " (injected)");
  EXPECT_FALSE(mem->exists("/m/n3.sbp"));
  // Errors of the inner storage come through as they are.
  auto missing = fs->open_read(loc("/m/none"), OpenOptions{});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, Errc::not_found);
  EXPECT_EQ(missing.error().what.find("(injected)"), std::string::npos);
}

TEST_F(FaultStorageTest, OtherKinds) {
  mem->files["/m/a"];
  mem->dirs.insert("/m");
  fs->add(FaultRule::fail(FaultOp::stat, EIO).onward());
  fs->add(FaultRule::fail(FaultOp::list, EIO).onward());
  fs->add(FaultRule::fail(FaultOp::set_attrs, EPERM).onward());
  fs->add(FaultRule::fail(FaultOp::truncate, ENOSPC).onward());
  fs->add(FaultRule::fail(FaultOp::preallocate, ENOSPC).onward());
  fs->add(FaultRule::fail(FaultOp::make_dirs, EDQUOT).onward());
  fs->add(FaultRule::fail(FaultOp::close, EIO).onward());
  fs->add(FaultRule::fail(FaultOp::read, EIO).onward());

  EXPECT_EQ(fs->stat(loc("/m/a"), true).error().what,
            "unable to stat '/m/a': Input/output error (injected)");
  EXPECT_EQ(fs->list(loc("/m")).error().what, "unable to list '/m': Input/output error (injected)");
  EXPECT_EQ(fs->set_attrs(loc("/m/a"), Attrs{}).error().sys_errno, EPERM);
  EXPECT_EQ(
      fs->make_dirs(loc("/m/x/y")).error().what,
      "unable to create directory '/m/x/y': " + std::string(std::strerror(EDQUOT)) + " (injected)");
  auto dir = fs->open_dir(loc("/m"), false);
  ASSERT_TRUE(dir.has_value());
  EXPECT_FALSE((*dir)->stat("a").has_value());
  EXPECT_FALSE((*dir)->list().has_value());
  EXPECT_FALSE((*dir)->set_attrs(Attrs{}).has_value());

  auto w = create("/m/w");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->truncate(10).error().what,
            "unable to truncate '/m/w' to 10 bytes: No space left on device (injected)");
  EXPECT_EQ(w->preallocate(0, 1 << 20).error().code, Errc::no_space);
  EXPECT_FALSE(w->set_attrs(Attrs{}).has_value());
  EXPECT_EQ(w->close().error().what, "unable to close '/m/w': Input/output error (injected)");
  w->abandon();

  auto r = open("/m/a");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->stat().has_value());
  std::vector<std::byte> buf(512);
  auto ra = r->read_at(buf.data(), 512, 1024);
  ASSERT_FALSE(ra.has_value());
  EXPECT_EQ(ra.error().what, "unable to read '/m/a' at offset 1024: Input/output error (injected)");
  Completion c = roundtrip(*r, OpKind::read, buf.data(), 512, 0, 3);
  ASSERT_FALSE(c.result.has_value());
  EXPECT_EQ(c.kind, OpKind::read);
  EXPECT_EQ(c.result.error().what,
            "unable to read '/m/a' at offset 0: Input/output error (injected)");
  EXPECT_EQ(mem->counts().reads, 0);

  EXPECT_EQ(fs->fired(FaultOp::stat), 3u);
  EXPECT_EQ(fs->fired(FaultOp::list), 2u);
  EXPECT_EQ(fs->fired(FaultOp::set_attrs), 3u);
  EXPECT_EQ(fs->fired(FaultOp::read), 2u);
  EXPECT_EQ(fs->fired(), 3u + 2u + 3u + 1u + 1u + 1u + 1u + 2u);
}

TEST_F(FaultStorageTest, CountersAndReset) {
  const size_t a = fs->add(FaultRule::fail(FaultOp::write, EIO, 2).onward());
  const size_t b = fs->add(FaultRule::delayed(FaultOp::write, 1ms, 3));
  EXPECT_NE(a, b);
  auto w = create("/m/c");
  auto buf = bytes(8, 'c');
  for (int i = 0; i < 4; ++i) (void)w->write_at(buf.data(), 8, 0);
  EXPECT_EQ(fs->seen(FaultOp::write), 4u);
  EXPECT_EQ(fs->seen(FaultOp::open), 1u);
  EXPECT_EQ(fs->seen(FaultOp::rename), 0u);
  EXPECT_EQ(fs->fired(FaultOp::write), 4u);  // a: 2nd, 3rd, 4th; b: 3rd
  EXPECT_EQ(fs->rule_fired(a), 3u);
  EXPECT_EQ(fs->rule_fired(b), 1u);
  EXPECT_EQ(fs->rule_fired(99), 0u);
  EXPECT_STREQ(fault_op_name(FaultOp::set_attrs), "set_attrs");

  fs->reset_counts();
  EXPECT_EQ(fs->seen(FaultOp::write), 0u);
  EXPECT_EQ(fs->fired(), 0u);
  EXPECT_EQ(fs->rule_fired(a), 0u);
  EXPECT_TRUE(w->write_at(buf.data(), 8, 0).has_value());  // the rules count afresh
  EXPECT_FALSE(w->write_at(buf.data(), 8, 0).has_value());
  fs->clear_rules();
  EXPECT_TRUE(w->write_at(buf.data(), 8, 0).has_value());
  EXPECT_EQ(fs->rule_fired(a), 0u);
}

TEST_F(FaultStorageTest, ThreadsShareOneFaultStorage) {
  mem->files["/m/a"];
  fs->add(FaultRule::fail(FaultOp::stat, EIO, 201).onward());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i)
        if (!fs->stat(loc("/m/a"), false).has_value()) ++failures;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(fs->seen(FaultOp::stat), 400u);
  EXPECT_EQ(fs->fired(FaultOp::stat), 200u);
  EXPECT_EQ(failures.load(), 200);
}

TEST_F(FaultStorageTest, WrappedFilesOutliveTheFaultStorage) {
  auto w = create("/m/late");
  fs->add(FaultRule::fail(FaultOp::write, EIO, 2));
  fs.reset();
  auto buf = bytes(8, 'l');
  EXPECT_TRUE(w->write_at(buf.data(), 8, 0).has_value());
  EXPECT_FALSE(w->write_at(buf.data(), 8, 0).has_value());
}

}  // namespace
}  // namespace stripeback::storage
