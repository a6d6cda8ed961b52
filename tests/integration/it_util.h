// Shared helpers for the integration tests, which run the real `stripeback` binary: the
// command runner, the generated data sets (made once per test process, on first use), and
// tree comparisons that check every restored file's bytes, size, mode, owner and mtime.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/json_value.h"
#include "tests/support/run.h"
#include "tests/support/temp_dir.h"

namespace stripeback::it {

using stripeback::testing::Json;
using stripeback::testing::RunOptions;
using stripeback::testing::RunResult;
using stripeback::testing::TempDir;
using Env = std::vector<std::pair<std::string, std::optional<std::string>>>;

// Path of the binary under test.
const char* binary();
// For tests whose PostgreSQL runs stripeback itself (archive_command, restore_command, as
// the postgres user): makes binary() a path postgres can run. That is the build's own when
// postgres can reach it; else (a checkout in a directory only root may enter) a copy in
// /var/tmp/stripeback-it-bin/, made once per build. False, with why in *error, when no
// such path can be had.
bool binary_reachable_by_postgres(std::string* error);

// Whether the CLI under test was built with test hooks (STRIPEBACK_TEST_HOOKS=ON): its
// --version says "(test hooks)". Asked once per process.
bool cli_has_test_hooks();

// Runs `stripeback args...`. The child's environment has STRIPEBACK_IO, STRIPEBACK_CATALOG
// and the test hooks' variables removed and the default catalog location made unusable, so
// every test states its catalog; `env` applies on top.
RunResult sb(const std::vector<std::string>& args, const Env& env = {},
             std::chrono::milliseconds timeout = std::chrono::minutes(3));

// Starts `stripeback args...` in the background, with the environment sb() gives.
std::unique_ptr<stripeback::testing::Subprocess> sb_start(
    const std::vector<std::string>& args, const Env& env = {},
    std::chrono::milliseconds timeout = std::chrono::minutes(3));

// Parses a command's stdout as one JSON document; reports a failure (and returns null)
// when it is not one.
Json parse_json(const RunResult& r);

// "haystack contains needle", with both shown on failure.
::testing::AssertionResult contains(const std::string& haystack, const std::string& needle);

// The ~1 GiB demo data set ($STRIPEBACK_IT_SIZE overrides the size), and a small one
// (48 MiB): each generated on first use in this process with `stripeback demo-data` and
// removed at exit. Empty when generation failed (already reported as a test failure).
const std::string& big_data();
const std::string& small_data();

// Creates `path` (and its parent directories) holding `size` bytes of a pattern seeded by
// `seed`, with permission bits `mode` and, when given, that mtime.
void make_file(const std::string& path, uint64_t size, uint32_t seed, unsigned mode = 0644,
               std::optional<int64_t> mtime_ns = std::nullopt);
// Overwrites `path` with `text`.
void write_text(const std::string& path, const std::string& text);

// The text a job writes to its status file (<catalog>/jobs/<host>.<pid>.status,
// docs/monitoring.md): a backup job of process `pid` on `host` writing backup `backup_id`
// (0: none yet), last updated now, half done.
std::string status_file_text(int64_t pid, const std::string& host, uint64_t backup_id = 0);
// A pid no process has now: `n` (from 1) above the kernel's pid_max.
int64_t unused_pid(int64_t n);
// This machine's host name, as a job writes it.
std::string host_name();

// Regular files below `dir` (absolute paths, symbolic links not followed), sorted.
std::vector<std::string> files_under(const std::string& dir);
// `dir` itself and every directory below it (absolute paths, links not followed), sorted.
std::vector<std::string> dirs_under(const std::string& dir);
// Every non-directory entry below `dir`, sorted (absolute paths).
std::vector<std::string> entries_under(const std::string& dir);
// The `*.sbp` files in `dir`, sorted.
std::vector<std::string> pieces_in(const std::string& dir);
uint64_t file_size(const std::string& path);
uint64_t total_size(const std::vector<std::string>& files);
bool exists(const std::string& path);  // lstat succeeds

// Where restore --to `root` puts the file backed up from absolute path `original`.
inline std::string restored_path(const std::string& root, const std::string& original) {
  return root + original;
}

// `restored` is a regular file with the same size, permission bits, owner, mtime (to the
// nanosecond) and bytes as `original`.
::testing::AssertionResult same_file(const std::string& original, const std::string& restored);

// `restored` is a directory with the same permission bits, owner and mtime (to the
// nanosecond) as the directory `original`.
::testing::AssertionResult same_dir(const std::string& original, const std::string& restored);

// The tree below `root` holds exactly the files `originals` restored (each identical, see
// same_file) and nothing else but directories: no extra file, no temporary file. Each of
// `dirs` (original directories) is restored with its attributes (see same_dir).
::testing::AssertionResult restored_exactly(const std::string& root,
                                            const std::vector<std::string>& originals,
                                            const std::vector<std::string>& dirs = {});
// restored_exactly() for a whole backed-up directory tree: its files and directories.
::testing::AssertionResult restored_tree(const std::string& root, const std::string& source);

// The id of the backup a successful `backup --json` reported.
uint64_t backup_id_of(const Json& backup_json);

// The warnings of a `backup --json` document that contain `text`.
std::vector<std::string> warnings_with(const Json& backup_json, const std::string& text);
// The piece names quoted in `text` ('...sbp', without a directory), in order.
std::vector<std::string> quoted_pieces(const std::string& text);
// The file names (without directory) of `paths`.
std::vector<std::string> base_names(const std::vector<std::string>& paths);

}  // namespace stripeback::it

// Skips the current test, saying why, when the CLI under test has no test hooks; for tests
// that arm one through its variable (`hook`: STRIPEBACK_CRASH_AT, STRIPEBACK_FAKE_NOW,
// STRIPEBACK_FAULTS or STRIPEBACK_TEST_NFS_VERIFIER_CHANGE), which such a CLI ignores.
#define SB_REQUIRE_TEST_HOOK(hook)                                                        \
  if (stripeback::it::cli_has_test_hooks()) {                                             \
  } else                                                                                  \
    GTEST_SKIP() << "needs the test hook " hook ", and the CLI under test ("              \
                 << stripeback::it::binary()                                              \
                 << ") was built without test hooks (STRIPEBACK_TEST_HOOKS=OFF: its "     \
                    "--version does not say \"(test hooks)\")"

// Asserts that a command exited normally with `code`, printing its command and output
// otherwise.
#define SB_ASSERT_EXIT(result, code) ASSERT_TRUE((result).exited(code)) << (result).describe()
#define SB_EXPECT_EXIT(result, code) EXPECT_TRUE((result).exited(code)) << (result).describe()
