// Files the engine reads from a catalog directory or a destination that are not what their
// names say: a FIFO, a directory, a link to a device, garbage. Each is refused at once with
// an error naming it; nothing blocks, reads without end or throws.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "engine/wiring/backends.h"
#include "engine/media/catalog_autobackup.h"
#include "engine/pieces/change_map.h"
#include "tests/support/temp_dir.h"

namespace stripeback::engine {
namespace {

using Clock = std::chrono::steady_clock;

// Makes `path` one of the hostile kinds.
void plant(const std::string& path, const std::string& kind) {
  if (kind == "fifo") ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  else if (kind == "directory") ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  else if (kind == "device") ASSERT_EQ(::symlink("/dev/zero", path.c_str()), 0);
  else std::ofstream(path, std::ios::binary) << std::string(100000, '\x5a');
}

const char* kKinds[] = {"fifo", "directory", "device", "garbage"};

TEST(HostileFiles, ChangeMapsFileThatIsNotOneIsRefusedAtOnce) {
  for (const char* kind : kKinds) {
    testing::TempDir dir;
    ASSERT_EQ(::mkdir((dir.path() + "/maps").c_str(), 0700), 0);
    plant(dir.path() + "/maps/7.sbmap", kind);
    const auto t0 = Clock::now();
    auto m = load_media_maps(dir.path(), 7, nullptr);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << kind;
    ASSERT_FALSE(m.has_value()) << kind;
    EXPECT_NE(m.error().what.find("7.sbmap"), std::string::npos) << kind << ": " << m.error().what;
  }
}

TEST(HostileFiles, AutobackupThatIsNotOneIsRefusedAtOnce) {
  for (const char* kind : kKinds) {
    testing::TempDir dir;
    const std::string name = autobackup_name({0x0123456789abcdef, "20261203T120000Z", 4, 0});
    plant(dir.path() + "/" + name, kind);
    auto place = place_of(dir.path());
    ASSERT_TRUE(place.has_value());
    const auto t0 = Clock::now();
    auto r = read_catalog_autobackup(*place, name, nullptr);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << kind;
    ASSERT_FALSE(r.has_value()) << kind;
    EXPECT_NE(r.error().what.find(name), std::string::npos) << kind << ": " << r.error().what;
  }
}

}  // namespace
}  // namespace stripeback::engine
