// What a resume keeps of a file the interrupted runs' pieces hold (engine/backup/resume.h):
// extents read in one state of the file are kept while the file is still in that state;
// extents of a file two runs read in different states never are, even when the latest
// state matches the file now.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/backup/resume.h"

namespace stripeback::engine {
namespace {

FileMeta meta(const std::string& path, uint64_t size, int64_t mtime_ns) {
  FileMeta m;
  m.path = path;
  m.size = size;
  m.mtime_ns = mtime_ns;
  m.ctime_ns = mtime_ns;
  m.ino = 42;
  return m;
}

// A trailer listing one file, with its whole content as one extent or none.
Trailer trailer_of(const FileMeta& m, bool with_extent) {
  Trailer t;
  t.files.push_back(m);
  t.extents.emplace_back();
  if (with_extent) {
    Extent e;
    e.file_offset = 0;
    e.raw_len = static_cast<uint32_t>(m.size);
    t.extents.back().push_back(e);
  }
  return t;
}

FileTask task_of(const FileMeta& m) {
  FileTask f;
  f.path = m.path;
  f.size = m.size;
  f.mtime_ns = m.mtime_ns;
  f.ctime_ns = m.ctime_ns;
  f.ino = m.ino;
  return f;
}

TEST(ResumeHeld, AFileInTheSameStateIsKept) {
  const FileMeta m = meta("/src/a.log", 62, 1000);
  ResumePoint rp;
  hold_trailer(rp, trailer_of(m, true), "p1");
  hold_trailer(rp, trailer_of(m, false), "p2");  // listed again, same state
  const FileTask now = task_of(m);
  std::vector<WorkSet> sets{{WorkUnit{&now, 0, 62}}};
  auto kept = keep_finished_units(rp, sets);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].pieces, std::vector<std::string>{"p1"});
  EXPECT_TRUE(rp.reread.empty());
  EXPECT_TRUE(sets.empty());  // nothing left to read
}

// The run that was interrupted first read the file; it then changed (same size); a resume
// listed it in a piece in its new state before its data was durable, and was killed too.
// The next resume must not take the first run's extent with the new state's record.
TEST(ResumeHeld, ExtentsOfAnEarlierStateAreNotKeptUnderALaterOne) {
  const FileMeta before = meta("/src/a.log", 62, 1000);
  const FileMeta after = meta("/src/a.log", 62, 2000);
  ResumePoint rp;
  hold_trailer(rp, trailer_of(before, true), "run1-p1");
  hold_trailer(rp, trailer_of(after, false), "run2-p1");
  ASSERT_TRUE(rp.held["/src/a.log"].states_differ);
  const FileTask now = task_of(after);  // the latest state is the file's state now
  std::vector<WorkSet> sets{{WorkUnit{&now, 0, 62}}};
  auto kept = keep_finished_units(rp, sets);
  EXPECT_TRUE(kept.empty());
  ASSERT_EQ(rp.reread.size(), 1u);
  EXPECT_NE(rp.reread[0].second.find("different states"), std::string::npos)
      << rp.reread[0].second;
  ASSERT_EQ(sets.size(), 1u);  // read again whole
  ASSERT_EQ(sets[0].size(), 1u);
  EXPECT_EQ(sets[0][0].length, 62u);
}

}  // namespace
}  // namespace stripeback::engine
