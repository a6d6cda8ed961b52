// MemStorage keeps the Storage contract the engine relies on (requests through the
// IoLoop, exclusive create, rename without replace, inodes that outlive their names) and
// the shapes its StorageCaps describe (writes in order, reads in order, alignment, no
// directories).
#include "tests/support/mem_storage.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "storage/io_loop.h"

namespace stripeback::testing {
namespace {

using storage::Completion;
using storage::IoLoop;
using storage::OpKind;
using storage::Request;
using storage::StorageCaps;

std::byte* bytes_of(std::string& s) { return reinterpret_cast<std::byte*>(s.data()); }

Request request(storage::File& f, OpKind kind, uint64_t offset, std::string& buf, uint64_t tag) {
  Request r;
  r.file = &f;
  r.kind = kind;
  r.offset = offset;
  r.buf = bytes_of(buf);
  r.len = static_cast<uint32_t>(buf.size());
  r.tag = tag;
  return r;
}

std::vector<Completion> reap_all(IoLoop& loop) {
  std::vector<Completion> out(16);
  const size_t n = loop.reap(out, 0, storage::Clock::now());
  out.resize(n);
  return out;
}

TEST(MemStorage, WritesAndReadsGoThroughTheLoopAndCompleteWithTheirTags) {
  MemStorage mem;
  mem.make_dir("/d");
  IoLoop loop;
  auto w = mem.create(mem.at("/d/f"), {});
  ASSERT_TRUE(w.has_value()) << w.error().what;
  std::string a = "hello ", b = "world";
  ASSERT_TRUE(loop.submit(request(**w, OpKind::write, 0, a, 1)).has_value());
  ASSERT_TRUE(loop.submit(request(**w, OpKind::write, 6, b, 2)).has_value());
  EXPECT_EQ(loop.in_flight(), 2u);
  auto done = reap_all(loop);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].tag, 1u);
  EXPECT_EQ(*done[0].result, 6u);
  EXPECT_EQ(done[1].tag, 2u);
  EXPECT_EQ(loop.in_flight(), 0u);
  EXPECT_EQ(mem.contents("/d/f"), "hello world");

  auto r = mem.open_read(mem.at("/d/f"), {});
  ASSERT_TRUE(r.has_value());
  std::string got(8, '.');
  ASSERT_TRUE(loop.submit(request(**r, OpKind::read, 6, got, 7)).has_value());
  done = reap_all(loop);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(*done[0].result, 5u) << "a read past the end is short";
  EXPECT_EQ(got.substr(0, 5), "world");
  EXPECT_EQ(loop.names(), "mem");
}

TEST(MemStorage, CreateNeverReplacesAndNeedsItsDirectory) {
  MemStorage mem;
  mem.write_file("/d/f", "old");
  auto again = mem.create(mem.at("/d/f"), {});
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, Errc::exists);
  EXPECT_NE(again.error().what.find("mem://d/f"), std::string::npos) << again.error().what;
  EXPECT_EQ(mem.contents("/d/f"), "old");
  auto orphan = mem.create(mem.at("/none/f"), {});
  ASSERT_FALSE(orphan.has_value());
  EXPECT_EQ(orphan.error().code, Errc::not_found);
}

TEST(MemStorage, AnOpenFileKeepsItsBytesAcrossRenameAndRemove) {
  MemStorage mem;
  mem.write_file("/d/f", "abc");
  auto r = mem.open_read(mem.at("/d/f"), {});
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(mem.rename(mem.at("/d/f"), mem.at("/d/g"), false).has_value());
  ASSERT_TRUE(mem.remove(mem.at("/d/g")).has_value());
  EXPECT_FALSE(mem.exists("/d/g"));
  std::string got(3, '.');
  EXPECT_EQ(*(*r)->read_at(bytes_of(got), 3, 0), 3u);
  EXPECT_EQ(got, "abc");
}

TEST(MemStorage, RenameWithoutReplaceKeepsTheTargetAndDirectoriesMoveWhole) {
  MemStorage mem;
  mem.write_file("/d/a", "A");
  mem.write_file("/d/b", "B");
  auto kept = mem.rename(mem.at("/d/a"), mem.at("/d/b"), false);
  ASSERT_FALSE(kept.has_value());
  EXPECT_EQ(kept.error().code, Errc::exists);
  EXPECT_EQ(mem.contents("/d/b"), "B");
  ASSERT_TRUE(mem.rename(mem.at("/d/a"), mem.at("/d/b"), true).has_value());
  EXPECT_EQ(mem.contents("/d/b"), "A");
  EXPECT_FALSE(mem.exists("/d/a"));

  mem.write_file("/d/sub/deep/x", "X");
  ASSERT_TRUE(mem.rename(mem.at("/d/sub"), mem.at("/e"), false).has_value());
  EXPECT_EQ(mem.contents("/e/deep/x"), "X");
  EXPECT_EQ(mem.files("/d"), std::vector<std::string>{"/d/b"});
  EXPECT_EQ(mem.rename(mem.at("/e"), mem.at("/e/deep/y"), false).error().code,
            Errc::invalid_argument);
}

TEST(MemStorage, StatListAndRemoveTellFilesFromDirectories) {
  MemStorage mem;
  mem.write_file("/d/f", "12345", 0100600);
  mem.make_dir("/d/sub");
  auto f = mem.stat(mem.at("/d/f"), false);
  ASSERT_TRUE(f.has_value());
  EXPECT_TRUE(S_ISREG(f->mode));
  EXPECT_EQ(f->mode & 07777, 0600u);
  EXPECT_EQ(f->size, 5u);
  EXPECT_TRUE(S_ISDIR(mem.stat(mem.at("/d/sub"), false)->mode));
  EXPECT_NE(f->ino, mem.stat(mem.at("/d/sub"), false)->ino);
  EXPECT_EQ(*mem.list(mem.at("/d")), (std::vector<std::string>{"f", "sub"}));
  EXPECT_EQ(mem.list(mem.at("/d/f")).error().code, Errc::not_found);
  EXPECT_EQ(mem.stat(mem.at("/nothing"), false).error().code, Errc::not_found);
  EXPECT_EQ(mem.remove(mem.at("/d/sub")).error().code, Errc::invalid_argument);
  EXPECT_EQ(mem.make_dirs(mem.at("/d/f/x")).error().code, Errc::not_found);
}

TEST(MemStorage, DirectoriesOpenFilesByOneComponentAndWriteInPlace) {
  MemStorage mem;
  auto root = mem.open_dir(mem.at("/t"), true);
  ASSERT_TRUE(root.has_value()) << root.error().what;
  auto sub = (*root)->open_dir("a", true, 0700);
  ASSERT_TRUE(sub.has_value());
  EXPECT_EQ(mem.stat(mem.at("/t/a"), false)->mode & 07777, 0700u);
  auto w = (*sub)->create("f", {});
  ASSERT_TRUE(w.has_value());
  std::string data = "0123456789";
  ASSERT_TRUE((*w)->write_at(bytes_of(data), data.size(), 0).has_value());
  ASSERT_TRUE((*w)->close().has_value());
  auto in_place = (*sub)->open_write("f", {});
  ASSERT_TRUE(in_place.has_value()) << in_place.error().what;
  std::string patch = "xy";
  ASSERT_TRUE((*in_place)->write_at(bytes_of(patch), 2, 4).has_value());
  EXPECT_EQ(mem.contents("/t/a/f"), "0123xy6789") << "open_write never truncates";
  EXPECT_EQ(mem.bytes_written_to("/t/a/f"), 12u);
  mem.reset_counts();
  EXPECT_EQ(mem.bytes_written_to("/t/a/f"), 0u);
  EXPECT_EQ((*sub)->open_write("missing", {}).error().code, Errc::not_found)
      << "a directory opens only an existing file in place";
  EXPECT_FALSE(mem.exists("/t/a/missing"));
  EXPECT_EQ((*root)->open_dir("a/f", false, 0755).has_value(), false);
  EXPECT_EQ((*sub)->open_dir("f", false, 0755).error().code, Errc::invalid_argument);
}

TEST(MemStorage, CountsSyncsAndKnowsWhatIsNotYetDurable) {
  StorageCaps caps;
  caps.dir_sync = true;
  MemStorage mem(caps);
  auto dir = mem.open_dir(mem.at("/d"), true);
  ASSERT_TRUE(dir.has_value());
  auto w = (*dir)->create("f", {});
  ASSERT_TRUE(w.has_value());
  std::string data = "abc";
  ASSERT_TRUE((*w)->write_at(bytes_of(data), 3, 0).has_value());
  EXPECT_EQ(mem.unsynced(), std::vector<std::string>{"/d/f"});
  IoLoop loop;
  Request sync;
  sync.file = w->get();
  sync.kind = OpKind::sync;
  sync.tag = 9;
  ASSERT_TRUE(loop.submit(sync).has_value());
  auto done = reap_all(loop);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].result.has_value());
  EXPECT_TRUE(mem.unsynced().empty());
  ASSERT_TRUE((*dir)->sync().has_value());
  const auto c = mem.counts();
  EXPECT_EQ(c.syncs, 1u);
  EXPECT_EQ(c.dir_syncs, 1u);
  EXPECT_EQ(c.writes, 1u);
  EXPECT_EQ(c.write_bytes, 3u);
  EXPECT_EQ(c.creates, 1u);
  auto g = mem.thread_counters(true);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->name, "mem");
  ASSERT_NE(g->find("write_bytes"), nullptr);
  EXPECT_EQ(g->find("write_bytes")->number, 3u);
  EXPECT_FALSE(mem.thread_counters(true).has_value()) << "closing the thread drops its counts";
  mem.reset_counts();
  EXPECT_EQ(mem.counts().syncs, 0u);
}

TEST(MemStorage, SequentialFilesHoldWritesAheadOfTheirTurn) {
  StorageCaps caps;
  caps.random_write = false;
  caps.sequential_only = true;
  MemStorage mem(caps);
  IoLoop loop;
  auto w = mem.create(mem.at("/s"), {});
  ASSERT_TRUE(w.has_value());
  std::string a = "aaaa", b = "bbbb", c = "cccc";
  ASSERT_TRUE(loop.submit(request(**w, OpKind::write, 8, c, 3)).has_value());
  ASSERT_TRUE(loop.submit(request(**w, OpKind::write, 4, b, 2)).has_value());
  EXPECT_EQ(loop.in_flight(), 2u);
  EXPECT_TRUE(reap_all(loop).empty()) << "nothing is written before offset 0";
  EXPECT_FALSE((*w)->commit().has_value()) << "a commit with a gap fails";
  ASSERT_TRUE(loop.submit(request(**w, OpKind::write, 0, a, 1)).has_value());
  auto done = reap_all(loop);
  ASSERT_EQ(done.size(), 3u);
  for (const auto& d : done) EXPECT_TRUE(d.result.has_value());
  EXPECT_EQ(mem.contents("/s"), "aaaabbbbcccc");
  EXPECT_EQ(mem.counts().held_writes, 2u);

  auto rewrite = (*w)->write_at(bytes_of(a), 4, 0);
  ASSERT_FALSE(rewrite.has_value());
  EXPECT_NE(rewrite.error().what.find("append-only"), std::string::npos) << rewrite.error().what;
  EXPECT_EQ((*w)->truncate(4).error().code, Errc::unsupported);
  EXPECT_EQ(mem.open_write(mem.at("/s"), 0600).error().code, Errc::unsupported);

  // A write behind a gap that nothing will fill fails when the loop would wait for it...
  ASSERT_TRUE(loop.submit(request(**w, OpKind::write, 16, c, 4)).has_value());
  std::vector<Completion> out(4);
  ASSERT_EQ(loop.reap(out, 1, storage::Clock::now() + std::chrono::seconds(5)), 1u);
  ASSERT_FALSE(out[0].result.has_value());
  EXPECT_NE(out[0].result.error().what.find("never came"), std::string::npos)
      << out[0].result.error().what;
  // ... and when the file is abandoned, so nothing stays in flight.
  auto w2 = mem.create(mem.at("/s2"), {});
  ASSERT_TRUE(w2.has_value());
  ASSERT_TRUE(loop.submit(request(**w2, OpKind::write, 20, c, 5)).has_value());
  EXPECT_EQ(loop.in_flight(), 1u);
  (*w2)->abandon();
  done = reap_all(loop);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(done[0].result.has_value());
  EXPECT_EQ(loop.in_flight(), 0u);
}

TEST(MemStorage, ObjectStoreShapesRefuseRenameAndAppendAndPutWholeFiles) {
  StorageCaps caps;
  caps.rename = false;
  caps.append = false;
  caps.atomic_put = true;
  MemStorage store(caps), plain;
  store.write_file("/d/a", "old");
  EXPECT_EQ(store.rename(store.at("/d/a"), store.at("/d/b"), false).error().code,
            Errc::unsupported);
  EXPECT_EQ(store.open_write(store.at("/d/a"), 0600).error().code, Errc::unsupported);
  const std::string data = "new bytes";
  auto span = std::as_bytes(std::span(data));
  ASSERT_TRUE(store.put(store.at("/d/a"), span, {0600}).has_value());
  EXPECT_EQ(store.contents("/d/a"), "new bytes");
  EXPECT_EQ(store.counts().puts, 1u);
  EXPECT_EQ(store.put(store.at("/none/a"), span, {0600}).error().code, Errc::not_found);
  plain.write_file("/d/a", "old");
  EXPECT_EQ(plain.put(plain.at("/d/a"), span, {0600}).error().code, Errc::unsupported);
  EXPECT_EQ(plain.contents("/d/a"), "old");
}

TEST(MemStorage, InOrderMediaRefuseReadsElsewhere) {
  StorageCaps caps;
  caps.random_read = false;
  MemStorage mem(caps);
  mem.write_file("/f", "0123456789");
  auto r = mem.open_read(mem.at("/f"), {});
  ASSERT_TRUE(r.has_value());
  std::string buf(4, '.');
  EXPECT_EQ(*(*r)->read_at(bytes_of(buf), 4, 0), 4u);
  EXPECT_EQ(*(*r)->read_at(bytes_of(buf), 4, 4), 4u);
  auto back = (*r)->read_at(bytes_of(buf), 4, 0);
  ASSERT_FALSE(back.has_value());
  EXPECT_EQ(back.error().code, Errc::unsupported);
  EXPECT_NE(back.error().what.find("next offset 8"), std::string::npos) << back.error().what;
}

TEST(MemStorage, DirectIoChecksAlignmentAsODirectDoes) {
  StorageCaps caps;
  caps.alignment = 512;
  MemStorage mem(caps);
  mem.write_file("/f", std::string(2048, 'x'));
  auto direct = mem.open_read(mem.at("/f"), {true});
  ASSERT_TRUE(direct.has_value());
  EXPECT_TRUE((*direct)->direct());
  alignas(512) std::byte buf[1024];
  EXPECT_TRUE((*direct)->read_at(buf, 512, 512).has_value());
  auto odd = (*direct)->read_at(buf, 100, 512);
  ASSERT_FALSE(odd.has_value());
  EXPECT_EQ(odd.error().sys_errno, EINVAL);
  IoLoop loop;
  Request r;
  r.file = direct->get();
  r.kind = OpKind::read;
  r.offset = 3;
  r.buf = buf;
  r.len = 512;
  ASSERT_TRUE(loop.submit(r).has_value());
  auto done = reap_all(loop);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].result.error().sys_errno, EINVAL);
  auto dir = mem.open_dir(mem.at("/"), false);
  ASSERT_TRUE(dir.has_value());
  auto in_place = (*dir)->open_write("f", {true});
  ASSERT_TRUE(in_place.has_value());
  EXPECT_TRUE((*in_place)->direct()) << "a directory's open_write keeps direct I/O";
  EXPECT_EQ((*in_place)->write_at(buf, 100, 0).error().sys_errno, EINVAL);
  auto buffered = mem.open_read(mem.at("/f"), {false});
  EXPECT_FALSE((*buffered)->direct());
  EXPECT_TRUE((*buffered)->read_at(buf + 1, 100, 3).has_value());
}

TEST(MemStorage, ReverseReapHandsOutTheNewestFirst) {
  MemStorage::Options o;
  o.reverse_reap = true;
  MemStorage mem(o);
  mem.write_file("/f", "abcdef");
  auto r = mem.open_read(mem.at("/f"), {});
  IoLoop loop;
  std::string x(2, '.'), y(2, '.'), z(2, '.');
  ASSERT_TRUE(loop.submit(request(**r, OpKind::read, 0, x, 1)).has_value());
  ASSERT_TRUE(loop.submit(request(**r, OpKind::read, 2, y, 2)).has_value());
  ASSERT_TRUE(loop.submit(request(**r, OpKind::read, 4, z, 3)).has_value());
  auto done = reap_all(loop);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].tag, 3u);
  EXPECT_EQ(done[2].tag, 1u);
  EXPECT_EQ(x + y + z, "abcdef");
}

TEST(MemStorage, WithoutDirectoriesNamesAreFlatAndDirectoryCallsAreRefused) {
  StorageCaps caps;
  caps.directories = false;
  MemStorage mem(caps);
  auto w = mem.create(mem.at("/no/parent/needed"), {});
  ASSERT_TRUE(w.has_value()) << w.error().what;
  for (const Error& e : {mem.open_dir(mem.at("/no"), true).error(), mem.list(mem.at("/no")).error(),
                         mem.rename(mem.at("/no/parent/needed"), mem.at("/x"), false).error(),
                         mem.make_dirs(mem.at("/y")).error()}) {
    EXPECT_EQ(e.code, Errc::unsupported);
    EXPECT_NE(e.what.find("not supported on mem storage"), std::string::npos) << e.what;
  }
}

TEST(MemStorage, PreallocateReservesOnlyWhereTheCapsSaySo) {
  StorageCaps caps;
  caps.preallocate = true;
  MemStorage with(caps), without;
  for (MemStorage* m : {&with, &without}) {
    auto w = m->create(m->at("/f"), {});
    ASSERT_TRUE(w.has_value());
    ASSERT_TRUE((*w)->preallocate(0, 4096).has_value());
  }
  EXPECT_EQ(with.contents("/f")->size(), 4096u);
  EXPECT_EQ(without.contents("/f")->size(), 0u);
}

TEST(MemStorage, ASchemeScopeMakesItsUrlsParseAndEndsWithIt) {
  auto mem = std::make_shared<MemStorage>();
  {
    SchemeScope scope({{"mem", mem}});
    auto at = storage::Location::parse("mem://dest/x");
    ASSERT_TRUE(at.has_value()) << at.error().what;
    EXPECT_EQ(at->scheme, "mem");
    EXPECT_EQ(at->path, "/dest/x");
    EXPECT_EQ(at->str(), "mem://dest/x");
    EXPECT_EQ(at.value(), mem->at("/dest/x"));
    auto served = storage::registered_storage(*at);
    ASSERT_TRUE(served.has_value()) << served.error().what;
    EXPECT_EQ(*served, mem.get());
  }
  auto gone = storage::Location::parse("mem://dest/x");
  ASSERT_FALSE(gone.has_value());
  EXPECT_NE(gone.error().what.find("unknown scheme 'mem'"), std::string::npos) << gone.error().what;
}

}  // namespace
}  // namespace stripeback::testing
