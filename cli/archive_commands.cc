#include "cli/archive_commands.h"

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <functional>
#include <thread>

#include "database/wal_archive.h"
#include "database/wal_names.h"
#include "util/digest.h"

namespace stripeback::cli {
namespace {

namespace fs = std::filesystem;
using database::ArchiveConfig;

// Async archive-push takes at most this many ready files besides the one asked for.
constexpr size_t kMaxReadyPerCall = 64;

const char* kPushFooter =
    "For PostgreSQL's archive_command:\n"
    "  archive_command = 'stripeback archive-push --catalog DIR %p'\n"
    "%p is the path of the WAL file relative to the data directory (pg_wal/...), which\n"
    "PostgreSQL runs the command in. The file goes to <destination>/wal/<system id>/<name>,\n"
    "compressed and encrypted as 'configure compression' and the key settings say, and is\n"
    "recorded in the catalog once it is durable. With 'configure archive-async on' the\n"
    "files PostgreSQL has marked ready (pg_wal/archive_status/*.ready) are pushed too,\n"
    "'configure archive-parallel N' at a time.\n"
    "Exit codes: 0 archived (or archived before with the same bytes); 1 not archived: the\n"
    "message names the file and the cause (other bytes archived under its name, the\n"
    "destination full or read-only, ...), PostgreSQL keeps the file and retries; 2 bad usage\n"
    "or settings (no destination, a tape destination, a file PostgreSQL does not archive).";

const char* kGetFooter =
    "For PostgreSQL's restore_command:\n"
    "  restore_command = 'stripeback archive-get --catalog DIR %f %p'\n"
    "%f is the name of the file asked for, %p the path to write it to (relative to the data\n"
    "directory). The file is checked against its recorded digest, decrypted, decompressed\n"
    "and written to a temporary file renamed to %p. With 'configure archive-async on' the\n"
    "next 'archive-parallel' segments are fetched into the spool directory\n"
    "('configure archive-spool-path DIR') for the calls that follow.\n"
    "Exit codes: 0 restored; 1 not in the archive (nothing printed: PostgreSQL asks for\n"
    "history files that do not exist); 2 bad usage; 4 the key does not open the file;\n"
    "7 any other failure (named on stderr).";

void add_catalog_flag(CLI::App* cmd, CommonFlags& c) {
  cmd->add_option("--catalog", c.catalog,
                  "catalog directory (default: $STRIPEBACK_CATALOG, else "
                  "$XDG_STATE_HOME/stripeback or ~/.local/state/stripeback)");
}

struct Archive {
  std::unique_ptr<catalog::Catalog> cat;
  ArchiveConfig cfg;
  std::shared_ptr<engine::Keyring> keys;
};

Result<Archive> open_archive(const CommonFlags& c, bool for_push) {
  Archive a;
  SB_ASSIGN(a.cat, open_catalog(c, catalog::Create::no));
  SB_ASSIGN(a.cfg, database::archive_config(*a.cat, catalog_dir_of(c)));
  if (!a.cfg.keys.empty()) {
    SB_ASSIGN(a.keys, engine::Keyring::load(a.cfg.keys));
    if (for_push) SB_TRY(a.keys->start_job());
  }
  return a;
}

// Runs `work(i)` for i in [0, n) on up to `threads` threads.
void run_parallel(size_t n, uint32_t threads, const std::function<void(size_t)>& work) {
  std::atomic<size_t> next{0};
  auto loop = [&] {
    for (size_t i = next++; i < n; i = next++) work(i);
  };
  std::vector<std::thread> pool;
  for (uint32_t t = 1; t < std::min<size_t>(threads, n); ++t) pool.emplace_back(loop);
  loop();
  for (auto& t : pool) t.join();
}

// The files PostgreSQL has marked ready for archiving in the pg_wal that holds `wal_path`,
// other than that one, in name order.
std::vector<std::string> ready_files(const std::string& wal_path) {
  const fs::path wal_dir = fs::path(wal_path).parent_path();
  std::error_code ec;
  std::vector<std::string> out;
  const std::string own = fs::path(wal_path).filename().string();
  for (const auto& e : fs::directory_iterator(wal_dir / "archive_status", ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() <= 6 || !n.ends_with(".ready")) continue;
    const std::string name = n.substr(0, n.size() - 6);
    if (name != own && database::wal_kind(name) != database::WalKind::other)
      out.push_back((wal_dir / name).string());
  }
  std::sort(out.begin(), out.end());
  if (out.size() > kMaxReadyPerCall) out.resize(kMaxReadyPerCall);
  return out;
}

// Async archive-push leaves a note in the spool (archive-out/NAME.ok) for each file it
// pushed ahead of PostgreSQL's asking: the identity of the file it read (device, inode,
// size, modification time). When PostgreSQL then asks for that file and finds it with the
// same identity, it is the file archived already, and the call exits 0 without reading it
// again; any other file under that name takes the whole path (read, digest, compare).
std::string file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

std::string pushed_note(const ArchiveConfig& cfg, const std::string& name) {
  return cfg.spool + "/archive-out/" + name + ".ok";
}

// Whether `path` was pushed ahead by an earlier call, as its note says; the note goes.
bool pushed_ahead(const ArchiveConfig& cfg, const catalog::Catalog& cat, const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  const std::string note = pushed_note(cfg, name);
  std::ifstream in(note);
  std::string said;
  if (!in || !std::getline(in, said)) return false;
  const std::string now = file_identity(path);
  std::error_code ec;
  fs::remove(note, ec);
  return !now.empty() && said == now && cat.wal_file(name).has_value();
}

void note_pushed_ahead(const ArchiveConfig& cfg, const std::string& path, const std::string& identity) {
  const std::string note = pushed_note(cfg, fs::path(path).filename().string());
  std::error_code ec;
  fs::create_directories(fs::path(note).parent_path(), ec);
  std::ofstream(note) << identity << "\n";
}

// The segments after `name` that async archive-get fetches ahead: the next `n` of its
// timeline that the archive holds.
std::vector<std::string> next_segments(const catalog::Catalog& cat, const std::string& name,
                                       uint32_t n) {
  std::vector<std::string> out;
  if (database::wal_kind(name) != database::WalKind::segment) return out;
  auto rec = cat.wal_file(name);
  uint32_t size = database::kDefaultWalSegmentSize;
  if (rec && rec->size >= (1u << 20) && rec->size <= (1u << 30) && (rec->size & (rec->size - 1)) == 0)
    size = static_cast<uint32_t>(rec->size);
  auto pos = database::segment_pos(name, size);
  if (!pos) return out;
  for (uint32_t i = 1; i <= n; ++i) {
    const std::string next = database::segment_name({pos->timeline, pos->number + i}, size);
    if (cat.wal_file(next)) out.push_back(next);
  }
  return out;
}

// Async archive-get: the spool's copy of `name` when it holds the recorded bytes (it is
// taken out of the spool), else nullopt.
std::optional<std::vector<std::byte>> from_spool(const catalog::Catalog& cat,
                                                 const std::string& spool_in,
                                                 const std::string& name) {
  const std::string path = spool_in + "/" + name;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  auto rec = cat.wal_file(name);
  std::vector<std::byte> bytes;
  if (rec) {
    std::ifstream in(path, std::ios::binary);
    bytes.resize(fs::file_size(path, ec));
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!in || ec || bytes.size() != rec->size ||
        util::digest(bytes.data(), bytes.size()) != rec->digest)
      rec.reset();
  }
  fs::remove(path, ec);
  if (!rec) return std::nullopt;
  return bytes;
}

// Removes spooled segments of `name`'s timeline before it: recovery has gone past them.
void prune_spool(const std::string& spool_in, const std::string& name) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(spool_in, ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() == name.size() && n.compare(0, 8, name, 0, 8) == 0 && n < name &&
        database::wal_kind(n) == database::WalKind::segment)
      fs::remove(e.path(), ec);
  }
}

void prefetch(const Archive& a, const std::string& spool_in, const std::string& name) {
  std::vector<std::string> want;
  std::error_code ec;
  for (const auto& n : next_segments(*a.cat, name, a.cfg.parallel))
    if (!fs::exists(spool_in + "/" + n, ec)) want.push_back(n);
  if (want.empty()) return;
  fs::create_directories(spool_in, ec);
  // A segment that cannot be fetched now is left to the call that asks for it.
  run_parallel(want.size(), a.cfg.parallel, [&](size_t i) {
    if (auto bytes = database::fetch_wal(*a.cat, a.keys.get(), want[i]))
      (void)database::write_local_atomic(spool_in + "/" + want[i], *bytes);
  });
}

}  // namespace

void add_archive_push(CLI::App* cmd, CommonFlags& c, ArchiveFlags& f) {
  cmd->add_option("WAL_PATH", f.wal_path, "the WAL file to archive (%p)")->required();
  add_catalog_flag(cmd, c);
  cmd->footer(kPushFooter);
}

void add_archive_get(CLI::App* cmd, CommonFlags& c, ArchiveFlags& f) {
  cmd->add_option("NAME", f.name, "the archived file asked for (%f)")->required();
  cmd->add_option("PATH", f.to, "where to write it (%p)")->required();
  add_catalog_flag(cmd, c);
  cmd->footer(kGetFooter);
}

int run_archive_push_cmd(const CommonFlags& c, const ArchiveFlags& f) {
  auto a = open_archive(c, true);
  if (!a) {
    print_error("archive-push '" + f.wal_path + "': " + a.error().what);
    return a.error().code == Errc::invalid_argument ? kExitUsage : kExitFailed;
  }
  std::vector<std::string> paths{f.wal_path};
  if (a->cfg.async) {
    if (pushed_ahead(a->cfg, *a->cat, f.wal_path)) return kExitOk;
    // The ready files the archive does not hold yet (those it holds were pushed ahead by
    // an earlier call, and PostgreSQL asks for them in turn).
    for (auto& more : ready_files(f.wal_path))
      if (!a->cat->wal_file(fs::path(more).filename().string())) paths.push_back(std::move(more));
  }
  // Every file is pushed (in parallel in async mode); only the one asked for decides the
  // exit: PostgreSQL asks again for the others, which are then archived already.
  std::vector<Result<database::PushResult>> results(paths.size(), fail(Errc::cancelled, ""));
  run_parallel(paths.size(), a->cfg.async ? a->cfg.parallel : 1, [&](size_t i) {
    const std::string identity = i > 0 ? file_identity(paths[i]) : "";
    results[i] = database::push_wal(*a->cat, a->cfg, a->keys.get(), paths[i]);
    if (i > 0 && results[i] && !identity.empty() && identity == file_identity(paths[i]))
      note_pushed_ahead(a->cfg, paths[i], identity);
  });
  if (!results[0]) {
    print_error("archive-push: " + results[0].error().what);
    return results[0].error().code == Errc::invalid_argument ? kExitUsage : kExitFailed;
  }
  return kExitOk;
}

int run_archive_get_cmd(const CommonFlags& c, const ArchiveFlags& f) {
  auto a = open_archive(c, false);
  if (!a) {
    print_error("archive-get '" + f.name + "': " + a.error().what);
    return a.error().code == Errc::wrong_key ? kExitWrongKey : kExitArchiveError;
  }
  const std::string spool_in = a->cfg.spool + "/archive-in";
  std::optional<std::vector<std::byte>> bytes;
  if (a->cfg.async) {
    bytes = from_spool(*a->cat, spool_in, f.name);
    prune_spool(spool_in, f.name);
  }
  if (!bytes) {
    auto got = database::fetch_wal(*a->cat, a->keys.get(), f.name);
    if (!got) {
      if (got.error().code == Errc::not_found && !a->cat->wal_file(f.name)) return kExitFailed;
      print_error("archive-get: " + got.error().what);
      return got.error().code == Errc::wrong_key ? kExitWrongKey : kExitArchiveError;
    }
    bytes = std::move(*got);
  }
  if (auto w = database::write_local_atomic(f.to, *bytes); !w) {
    print_error("archive-get '" + f.name + "': " + w.error().what);
    return kExitArchiveError;
  }
  if (a->cfg.async) prefetch(*a, spool_in, f.name);
  return kExitOk;
}

}  // namespace stripeback::cli
