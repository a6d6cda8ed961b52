#include "cli/recovery_restore.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "database/recovery_files.h"
#include "database/wal_names.h"
#include "engine/pieces/target_paths.h"
#include "engine/restore/path_remap.h"
#include "util/escape.h"
#include "util/json.h"

namespace stripeback::cli {
namespace {

bool asks_recovery(const database::RecoveryTarget& t) {
  return t.kind != database::TargetKind::none || t.standby;
}

std::string absolute(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) != nullptr) return buf;
  return path;
}

std::string this_binary() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "stripeback";
  return std::string(buf, static_cast<size_t>(n));
}

// Where the restore put the data directory of `hot` (remapped with --remap).
std::string restored_data_dir(const options::Settings& s, const catalog::HotBackup& hot) {
  std::string root = s.target;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  const std::string place = engine::remap_place(s.remaps, engine::restore_relative(hot.data_dir));
  return (root == "/" ? "" : root) + (place == "/" ? "" : place);
}

bool is_dir(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::string restore_command_for(const std::string& catalog_dir) {
  return database::shell_quote(this_binary()) + " archive-get --catalog " +
         database::shell_quote(absolute(catalog_dir)) + " %f %p";
}

Result<std::optional<database::RecoveryPlan>> plan_pg_restore(const options::Settings& s,
                                                              const catalog::Catalog& cat,
                                                              engine::RestoreOptions& o) {
  if (!asks_recovery(s.recovery)) return std::optional<database::RecoveryPlan>{};
  database::BackupFilter filter;
  filter.backup_id = o.backup_id;
  if (o.tag) filter.tag = *o.tag;
  SB_ASSIGN(auto plan, database::plan_recovery(cat.backups(), cat.wal_files(), s.recovery, filter));
  o.backup_id = plan.backup_id;
  o.tag.reset();
  return std::optional<database::RecoveryPlan>(std::move(plan));
}

Result<std::optional<PgRestoreFiles>> finish_pg_restore(
    const options::Settings& s, const catalog::Catalog& cat, const engine::RestoreSummary& sum,
    const std::optional<database::RecoveryPlan>& plan) {
  std::optional<catalog::HotBackup> hot;
  uint64_t id = 0;
  if (plan) {
    hot = plan->hot;
    id = plan->backup_id;
  } else {
    for (const auto& b : cat.backups())
      for (uint64_t used : sum.backups_used)
        if (b.id == used && database::has_postgres_record(b) && b.id > id) {
          hot = b.hot;
          id = b.id;
        }
  }
  if (!hot) return std::optional<PgRestoreFiles>{};
  database::RecoveryFiles f;
  f.data_dir = restored_data_dir(s, *hot);
  // Some paths only: the data directory is not whole, and may not be there.
  if (!plan && (!s.paths.empty() || !is_dir(f.data_dir))) return std::optional<PgRestoreFiles>{};
  f.restore_root = s.target;
  if (!s.remaps.empty())
    f.remap = [&s](const std::string& path) { return engine::remap_place(s.remaps, path); };
  f.hot = *hot;
  PgRestoreFiles out;
  out.backup_id = id;
  out.data_dir = f.data_dir;
  if (plan) {
    f.recovery = s.recovery;
    f.restore_command = restore_command_for(cat.dir());
    out.target = s.recovery.standby ? "standby" : database::target_text(s.recovery);
    out.restore_command = f.restore_command;
  }
  SB_ASSIGN(out.files, database::write_recovery_files(f));
  return std::optional<PgRestoreFiles>(std::move(out));
}

std::string pg_restore_text(const PgRestoreFiles& p) {
  std::string files;
  for (const auto& f : p.files) files += (files.empty() ? "" : ", ") + f;
  std::string s = "PostgreSQL data directory " + util::escape_text(p.data_dir) + " (backup " +
                  std::to_string(p.backup_id) + "): wrote " + util::escape_text(files) + "\n";
  if (p.target.empty())
    return s + "  no recovery settings: the server starts once the WAL from the backup's "
               "start to its end is in pg_wal/ (or restore with --target-* or --standby)\n";
  if (p.target == "standby")
    return s + "  starts as a standby replaying the archived WAL\n";
  return s + "  recovers to " + p.target + " from the archive when started\n";
}

std::string pg_restore_json_member(const PgRestoreFiles& p) {
  util::JsonWriter w;
  w.begin_object();
  w.begin_object("postgres");
  w.kv("backup_id", p.backup_id);
  w.kv("data_dir", p.data_dir);
  w.begin_array("written");
  for (const auto& f : p.files) w.value(f);
  w.end_array();
  if (p.target.empty()) w.kv_null("recovery_target");
  else w.kv("recovery_target", p.target);
  if (p.restore_command.empty()) w.kv_null("restore_command");
  else w.kv("restore_command", p.restore_command);
  w.end_object();
  w.end_object();
  const std::string& s = w.str();
  return s.substr(1, s.size() - 2);  // the member alone, without the enclosing braces
}

}  // namespace stripeback::cli
