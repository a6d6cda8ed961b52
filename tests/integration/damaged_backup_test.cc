// A backup whose catalog records do not add up (a Files or Piece record lost to a flipped
// bit) is listed damaged, and no command acting on it reports success.
#include <cstdio>
#include <fstream>
#include <iterator>

#include "catalog/record_log.h"
#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Flips one payload bit of the last record of `type` in the catalog's log.
void damage_last(const std::string& cat, catalog::RecordType type) {
  std::string log = cat + "/catalog.log";
  auto bytes = read_all(log);
  auto scan = catalog::scan_records({bytes.data() + 24, bytes.size() - 24}, 24, 0);
  const catalog::Frame* last = nullptr;
  for (const auto& f : scan.frames)
    if (f.type == static_cast<uint16_t>(type)) last = &f;
  ASSERT_NE(last, nullptr);
  uint64_t at = last->offset + last->size - 1;
  bytes[at] ^= 0x10;
  std::ofstream out(log, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::string record_name(const ::testing::TestParamInfo<catalog::RecordType>& p) {
  return catalog::record_type_name(static_cast<uint16_t>(p.param));
}

class DamagedBackup : public ::testing::TestWithParam<catalog::RecordType> {
 protected:
  void SetUp() override {
    src_ = t_ / "src";
    cat_ = t_ / "cat";
    make_file(src_ + "/a.dbf", 3u << 20, 41);
    make_file(src_ + "/b.dbf", 70000, 42);
    SB_ASSERT_EXIT(sb({"backup", src_, "--to", t_ / "p", "--catalog", cat_, "--tag", "old"}), 0);
    make_file(src_ + "/a.dbf", 3u << 20, 43);  // changed since backup 1
    SB_ASSERT_EXIT(sb({"backup", src_, "--to", t_ / "p", "--catalog", cat_, "--tag", "new"}), 0);
    damage_last(cat_, GetParam());
  }
  TempDir t_{"sbit-damaged"};
  std::string src_, cat_;
};

TEST_P(DamagedBackup, IsListedDamagedAndNoCommandSucceedsOnIt) {
  RunResult l = sb({"list", "--catalog", cat_, "--json"});
  SB_ASSERT_EXIT(l, 0);
  Json j = parse_json(l);
  ASSERT_EQ(j["backups"].size(), 2u);
  EXPECT_EQ(j["backups"][0]["status"].as_string(), "complete");
  EXPECT_EQ(j["backups"][1]["status"].as_string(), "damaged");
  EXPECT_FALSE(j["backups"][1]["damage"].as_string().empty());
  RunResult lt = sb({"list", "--catalog", cat_});
  EXPECT_TRUE(contains(lt.out, "backup 2 is damaged: "));

  for (const char* cmd : {"restore", "validate"}) {
    std::vector<std::string> args{cmd, "--catalog", cat_, "--backup", "2"};
    if (std::string(cmd) == "restore") args.insert(args.end(), {"--to", t_ / "r1"});
    RunResult r = sb(args);
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    EXPECT_TRUE(contains(r.err, "backup 2 is damaged")) << cmd;
  }
  EXPECT_FALSE(exists(t_ / "r1"));
  // Without --backup: no quiet fall back to the older backup's copy of a.dbf.
  RunResult r = sb({"restore", "--catalog", cat_, "--to", t_ / "r2"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "backup 2 is damaged"));
  EXPECT_TRUE(contains(r.err, "--backup"));
  EXPECT_FALSE(exists(t_ / "r2"));
  RunResult v = sb({"validate", "--catalog", cat_});
  EXPECT_EQ(v.exit_code, 1) << v.describe();
  RunResult tagged = sb({"restore", "--catalog", cat_, "--to", t_ / "r3", "--tag", "new"});
  EXPECT_EQ(tagged.exit_code, 1) << tagged.describe();
  // The older backup stays restorable when asked for by name.
  RunResult old = sb({"restore", "--catalog", cat_, "--to", t_ / "r4", "--backup", "1"});
  SB_EXPECT_EXIT(old, 0);
  EXPECT_TRUE(exists(restored_path(t_ / "r4", src_ + "/b.dbf")));
}

INSTANTIATE_TEST_SUITE_P(Records, DamagedBackup,
                         ::testing::Values(catalog::RecordType::files,
                                           catalog::RecordType::piece),
                         record_name);

}  // namespace
}  // namespace stripeback::it
