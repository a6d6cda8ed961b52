#include "database/pg_backup.h"

#include <limits.h>
#include <stdlib.h>

#include <chrono>
#include <thread>

#include "database/wal_names.h"
#include "storage/location.h"
#include "util/clock.h"

#if STRIPEBACK_WITH_PG
#include <libpq-fe.h>
#endif

namespace stripeback::database {
namespace {

// Directories whose contents base backups leave out (PostgreSQL's documentation, "Backing Up
// the Data Directory"): written anew at every start, or meaningless in a copy. The
// directories themselves are kept (empty).
constexpr const char* kContentsLeftOut[] = {"pg_wal",      "pg_dynshmem", "pg_notify",
                                             "pg_replslot", "pg_serial",   "pg_snapshots",
                                             "pg_stat_tmp", "pg_subtrans", "pg_tblspc"};
// Files left out at the top of the data directory: the running server's own, and the
// labels an earlier backup left (this backup's come from pg_backup_stop).
constexpr const char* kTopFilesLeftOut[] = {"postmaster.pid", "postmaster.opts", "backup_label",
                                             "tablespace_map", "backup_label.old"};

std::string base_name(const std::string& p) {
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// Left out wherever it is, tablespaces included: temporary files and relation caches.
bool left_out_anywhere(const std::string& path) {
  const std::string name = base_name(path);
  return name.rfind("pgsql_tmp", 0) == 0 || name == "pg_internal.init";
}

}  // namespace

bool PgBackupMode::left_out(const std::string& rel) {
  if (left_out_anywhere(rel)) return true;
  const size_t slash = rel.find('/');
  const std::string first = rel.substr(0, slash);
  if (slash != std::string::npos) {
    for (const char* d : kContentsLeftOut)
      if (first == d) return true;
    return false;
  }
  for (const char* f : kTopFilesLeftOut)
    if (rel == f) return true;
  return false;
}

#if STRIPEBACK_WITH_PG

namespace {

using Rows = std::vector<std::vector<std::string>>;

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// `r`, its error prefixed with `context`.
template <typename T>
Result<T> about(Result<T> r, const std::string& context) {
  if (!r) return r.error().wrap(context);
  return r;
}

// Runs `sql` with text parameters; the rows as text (NULL as empty).
Result<Rows> query(PGconn* conn, const std::string& sql, const std::vector<std::string>& params = {}) {
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  PGresult* res = PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr,
                               values.data(), nullptr, nullptr, 0);
  const ExecStatusType st = PQresultStatus(res);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    std::string why = res ? PQresultErrorMessage(res) : PQerrorMessage(conn);
    PQclear(res);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    if (why.empty()) why = "no answer";
    if (PQstatus(conn) != CONNECTION_OK) why += " (the connection is gone)";
    return fail(Errc::io, why);
  }
  Rows rows;
  for (int r = 0; r < PQntuples(res); ++r) {
    std::vector<std::string> row;
    for (int c = 0; c < PQnfields(res); ++c) row.emplace_back(PQgetvalue(res, r, c));
    rows.push_back(std::move(row));
  }
  PQclear(res);
  return rows;
}

Result<std::string> one_value(PGconn* conn, const std::string& sql,
                              const std::vector<std::string>& params = {}) {
  SB_ASSIGN(Rows rows, query(conn, sql, params));
  if (rows.empty() || rows[0].empty())
    return fail(Errc::io, "PostgreSQL returned no row for: " + sql);
  return rows[0][0];
}

// The value of `key` in a backup_label ("START TIMELINE: 1"), or empty.
std::string label_field(const std::string& label, const std::string& key) {
  const std::string at = key + ": ";
  size_t pos = label.find(at);
  if (pos == std::string::npos) return {};
  pos += at.size();
  return label.substr(pos, label.find('\n', pos) - pos);
}

}  // namespace

struct PgBackupMode::Impl {
  PGconn* conn = nullptr;
  std::string data_dir;                 // the source as the backup names it
  std::vector<std::string> spaces;      // tablespace directories, as sources
  bool archiving = false;               // archive_mode on or always
  bool open = false;                    // in backup mode
  catalog::HotBackup hot;               // what the start said
  ~Impl() {
    if (conn) PQfinish(conn);
  }
};

PgBackupMode::PgBackupMode(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PgBackupMode::~PgBackupMode() { end_if_open(); }

Result<std::unique_ptr<PgBackupMode>> PgBackupMode::connect(const std::string& conninfo,
                                                            const std::vector<std::string>& sources) {
  if (sources.size() != 1)
    return fail(Errc::invalid_argument,
                "--pg: give the cluster's data directory as the one SOURCE (its tablespaces "
                "are followed); " + std::to_string(sources.size()) + " sources were given");
  auto impl = std::make_unique<Impl>();
  impl->conn = PQconnectdb(conninfo.c_str());
  if (PQstatus(impl->conn) != CONNECTION_OK) {
    std::string why = PQerrorMessage(impl->conn);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return fail(Errc::invalid_argument, "--pg: cannot connect to PostgreSQL: " + why);
  }
  PGconn* c = impl->conn;
  const int version = PQserverVersion(c);
  if (version < 150000)
    return fail(Errc::unsupported, "--pg: the server is PostgreSQL " +
                                       std::to_string(version / 10000) +
                                       "; backups through its backup mode need 15 or later "
                                       "(pg_backup_start)");
  // The connection is ours alone: no statement timeout may cut pg_backup_stop short.
  SB_TRY(about(query(c, "SET statement_timeout = 0"), "--pg"));
  SB_ASSIGN(std::string dir, about(one_value(c, "SHOW data_directory"), "--pg"));
  impl->data_dir = sources.front();
  while (impl->data_dir.size() > 1 && impl->data_dir.back() == '/') impl->data_dir.pop_back();
  if (!storage::has_scheme(impl->data_dir) && real_path(impl->data_dir) != real_path(dir))
    return fail(Errc::invalid_argument, "--pg: the source '" + impl->data_dir +
                                            "' is not the data directory of the cluster the "
                                            "connection reaches ('" + dir + "')");
  SB_ASSIGN(std::string sysid,
            about(one_value(c, "SELECT system_identifier FROM pg_control_system()"), "--pg"));
  impl->hot.system_id = std::strtoull(sysid.c_str(), nullptr, 10);
  SB_ASSIGN(std::string seg, about(one_value(c, "SELECT setting FROM pg_settings WHERE name = "
                                                "'wal_segment_size'"),
                                      "--pg"));
  impl->hot.wal_segment_size = static_cast<uint32_t>(std::strtoul(seg.c_str(), nullptr, 10));
  SB_ASSIGN(std::string mode, about(one_value(c, "SHOW archive_mode"), "--pg"));
  impl->archiving = mode == "on" || mode == "always";
  SB_ASSIGN(Rows spaces, about(query(c, "SELECT pg_tablespace_location(oid) FROM pg_tablespace "
                                        "WHERE spcname NOT IN ('pg_default', 'pg_global')"),
                                  "--pg"));
  for (const auto& row : spaces)
    if (!row.empty() && !row[0].empty()) impl->spaces.push_back(row[0]);
  impl->hot.database = "postgres";
  impl->hot.data_dir = impl->data_dir;
  return std::unique_ptr<PgBackupMode>(new PgBackupMode(std::move(impl)));
}

Result<void> PgBackupMode::start(const std::string& label, engine::BackupOptions& opts) {
  Impl& m = *impl_;
  SB_ASSIGN(std::string lsn, about(one_value(m.conn, "SELECT pg_backup_start($1, true)", {label}),
                                   "--pg: PostgreSQL's backup mode could not begin"));
  m.open = true;
  m.hot.label = label;
  m.hot.start_time_ns = util::wall_now_ns();
  SB_ASSIGN(m.hot.start_lsn, parse_lsn(lsn, "pg_backup_start's LSN"));
  opts.hot = true;
  opts.pages_changing_from = m.hot.start_lsn;
  for (const auto& s : m.spaces) opts.sources.push_back(s);
  const std::string dir = m.data_dir;
  const std::vector<std::string> spaces = m.spaces;
  opts.exclude = [dir, spaces](const std::string& path) {
    if (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/')
      return left_out(path.substr(dir.size() + 1));
    return left_out_anywhere(path);
  };
  opts.end_hot = [this](bool copied, catalog::HotBackup& hot) { return stop(copied, hot); };
  return ok();
}

Result<void> PgBackupMode::stop(bool copied, catalog::HotBackup& hot) {
  Impl& m = *impl_;
  if (!m.open) return fail(Errc::invalid_argument, "--pg: the backup mode has ended already");
  m.open = false;
  auto rows = query(m.conn, "SELECT lsn, labelfile, spcmapfile FROM pg_backup_stop(false)");
  if (!rows || rows->empty() || rows->front().size() < 3)
    return fail(Errc::io, "--pg: PostgreSQL's backup mode could not be ended (" +
                              (rows ? std::string("no row") : rows.error().what) +
                              "): without its backup_label the copy cannot be recovered");
  const auto& row = rows->front();
  hot = m.hot;
  hot.stop_time_ns = util::wall_now_ns();
  SB_ASSIGN(hot.stop_lsn, parse_lsn(row[0], "pg_backup_stop's LSN"));
  hot.backup_label = row[1];
  hot.tablespace_map = row[2];
  hot.timeline = static_cast<uint32_t>(
      std::strtoul(label_field(hot.backup_label, "START TIMELINE").c_str(), nullptr, 10));
  // "START WAL LOCATION: 0/2000028 (file 000000010000000000000002)"
  const std::string start = label_field(hot.backup_label, "START WAL LOCATION");
  const size_t file = start.find("(file ");
  if (file != std::string::npos) hot.start_wal = start.substr(file + 6, 24);
  const uint32_t seg = hot.wal_segment_size ? hot.wal_segment_size : kDefaultWalSegmentSize;
  if (hot.start_wal.empty()) hot.start_wal = segment_name({hot.timeline, segment_of(hot.start_lsn, seg)}, seg);
  // The last byte the backup needs is just before the stop LSN.
  hot.stop_wal = segment_name({hot.timeline, segment_of(hot.stop_lsn - 1, seg)}, seg);
  m.hot = hot;
  // A copy that is not whole is not a backup to recover: the mode ended all the same.
  (void)copied;
  return ok();
}

void PgBackupMode::end_if_open() {
  if (!impl_ || !impl_->open) return;
  catalog::HotBackup ignored;
  if (auto r = stop(false, ignored); !r) warnings_.push_back(r.error().what);
}

std::vector<std::string> PgBackupMode::wait_for_archive(int timeout_s) {
  Impl& m = *impl_;
  std::vector<std::string> out;
  if (m.hot.stop_wal.empty()) return out;  // no backup mode ended
  if (!m.archiving) {
    out.push_back("--pg: archive_mode is off: the WAL this backup needs (" + m.hot.start_wal +
                  " to " + m.hot.stop_wal + ") is not archived, and restoring the backup needs it");
    return out;
  }
  // pg_backup_stop switched to a new segment, so the archiver takes the last one the backup
  // needs soon; it archives in name order, so the last name it archived tells.
  const uint32_t seg = m.hot.wal_segment_size ? m.hot.wal_segment_size : kDefaultWalSegmentSize;
  const auto want = segment_pos(m.hot.stop_wal, seg);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string last;
  while (true) {
    auto got = one_value(m.conn, "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver");
    if (!got) {
      out.push_back("--pg: cannot ask PostgreSQL what it archived: " + got.error().what);
      return out;
    }
    last = *got;
    const auto at = segment_pos(last, seg);
    if (at && want && at->timeline >= want->timeline && at->number >= want->number) return out;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  out.push_back("--pg: PostgreSQL has not archived " + m.hot.stop_wal + " within " +
                std::to_string(timeout_s) + " s (the last it archived: " +
                (last.empty() ? std::string("none") : last) +
                "; see pg_stat_archiver): until it has, the backup cannot be recovered");
  return out;
}

#else  // !STRIPEBACK_WITH_PG

struct PgBackupMode::Impl {};
PgBackupMode::PgBackupMode(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PgBackupMode::~PgBackupMode() = default;
Result<std::unique_ptr<PgBackupMode>> PgBackupMode::connect(const std::string&,
                                                            const std::vector<std::string>&) {
  return fail(Errc::unsupported, "--pg: this build has no PostgreSQL support (libpq)");
}
Result<void> PgBackupMode::start(const std::string&, engine::BackupOptions&) {
  return fail(Errc::unsupported, "--pg: this build has no PostgreSQL support (libpq)");
}
Result<void> PgBackupMode::stop(bool, catalog::HotBackup&) { return ok(); }
void PgBackupMode::end_if_open() {}
std::vector<std::string> PgBackupMode::wait_for_archive(int) { return {}; }

#endif

}  // namespace stripeback::database
