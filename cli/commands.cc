#include "cli/commands.h"

#include "engine/media/catalog_seal.h"
#include "cli/render.h"
#include "cli/render_seal.h"
#include "cli/progress_view.h"
#include "engine/wiring/backends.h"
#include "cli/tape_commands.h"
#include "cli/report_commands.h"
#include "cli/recovery_restore.h"
#include "cli/restore_preview.h"
#include "cli/wal_reports.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cerrno>
#include <random>
#include <cstdlib>
#include <ctime>
#include <set>
#include <spdlog/spdlog.h>

#include "catalog/catalog.h"
#include "database/pg_backup.h"
#include "engine/backup/backup_job.h"
#include "engine/backup/buffer_budget.h"
#include "engine/transform/compress.h"
#include "engine/transform/crypto.h"
#include "cli/demo_data.h"
#include "engine/history/job_history.h"
#include "engine/format/piece_name.h"
#include "engine/restore/restore_job.h"
#include "options/job_options.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/json.h"
#include "util/units.h"

namespace stripeback::cli {

int exit_code_for(const Error& e) {
  switch (e.code) {
    case Errc::invalid_argument:
    case Errc::not_found:
    case Errc::exists:
      return kExitUsage;
    case Errc::wrong_key:
      return kExitWrongKey;
    case Errc::tampered:
      return kExitTampered;
    default:
      return kExitFailed;
  }
}

int report(const Error& e) {
  print_error(e.what);
  return exit_code_for(e);
}

namespace {

// The seal key of a command: the one it was given, else the catalog's configured one.
engine::KeySource seal_key_source(const CommonFlags& c, const catalog::Catalog& cat) {
  engine::KeySource k{c.keys.passphrase_file, c.keys.passphrase_env, c.keys.key_file};
  if (!k.empty()) return k;
  if (auto v = cat.setting("key-file"); v && !v->empty()) k.key_file = *v;
  else if (auto v2 = cat.setting("passphrase-file"); v2 && !v2->empty()) k.passphrase_file = *v2;
  else if (auto v3 = cat.setting("passphrase-env"); v3 && !v3->empty()) k.passphrase_env = *v3;
  return k;
}

Result<void> attach_seal_key(const CommonFlags& c, catalog::Catalog& cat) {
  const engine::KeySource src = seal_key_source(c, cat);
  if (src.empty()) {
    if (cat.sealed())
      spdlog::warn("catalog '{}' is sealed and no key was given: its records are not verified, "
                   "and nothing can be added to it (give --key-file, --passphrase-file or "
                   "--passphrase-env, or `stripeback configure key-file FILE`)",
                   cat.dir());
    return ok();
  }
  auto keys = engine::Keyring::load(src);
  if (!keys) {
    // A configured key that cannot be read does not stop a catalog that needs none.
    if (!cat.sealed() && c.keys.passphrase_file.empty() && c.keys.passphrase_env.empty() &&
        c.keys.key_file.empty())
      return ok();
    return keys.error().wrap("the key of the catalog's seal");
  }
  return engine::attach_catalog_key(cat, **keys);
}

}  // namespace

CommonFlags with_job_key(const CommonFlags& c, const options::Settings& f) {
  CommonFlags out = c;
  out.keys = {f.keys.passphrase_file, f.keys.passphrase_env, f.keys.key_file};
  return out;
}

Result<std::unique_ptr<catalog::Catalog>> open_catalog(const CommonFlags& c, catalog::Create create,
                                                       SealUse use) {
  std::string dir = c.catalog.empty() ? default_catalog_dir() : c.catalog;
  if (dir.empty())
    return fail(Errc::invalid_argument,
                "no catalog directory: give --catalog or set STRIPEBACK_CATALOG or HOME");
  SB_ASSIGN(storage::Storage * st, engine::storage_for(storage::Location::local(dir)));
  auto cat = catalog::Catalog::open(dir, create, *st);
  if (!cat) {
    Error e = cat.error();
    if (e.code != Errc::not_found) e.code = Errc::invalid_argument;
    return e.wrap("catalog is not usable");
  }
  for (const auto& w : (*cat)->warnings())
    spdlog::warn("catalog '{}': {} (offset {}, {} bytes)", dir, w.what, w.offset, w.length);
  if (use == SealUse::unattached) return cat;
  const bool inspect = use == SealUse::inspect;
  if (auto a = attach_seal_key(c, **cat); !a && !(inspect && a.error().code == Errc::tampered))
    return a.error();
  if (!inspect) {
    const auto found = (*cat)->tampering();
    if (!found.empty()) return engine::check_catalog_trust(**cat).error();
  }
  return cat;
}

std::string catalog_dir_of(const CommonFlags& c) {
  return c.catalog.empty() ? default_catalog_dir() : c.catalog;
}

void print_error(const std::string& message) {
  std::fprintf(stderr, "stripeback: %s\n", util::escape_text(message).c_str());
}

std::string default_catalog_dir() {
  if (const char* e = std::getenv("STRIPEBACK_CATALOG"); e && *e) return e;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/stripeback";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/state/stripeback";
  return "";
}

// backup --pg: how long to wait for PostgreSQL's archiver to take the last segment the
// backup needs before saying it has not.
constexpr int kPgArchiveWaitSeconds = 60;

int run_backup_cmd(const CommonFlags& c, const options::Settings& f,
                   const std::atomic<bool>& cancel) {
  auto opts = options::backup_options(f);
  if (!opts) return report(opts.error());
  engine::configure_s3(f.s3);
  engine::BackupOptions& o = *opts;
  o.cancel = &cancel;
  auto cat = open_catalog(with_job_key(c, f), catalog::Create::yes);
  if (!cat) return report(cat.error());
  ProgressView view(c, f.validate ? "validate" : "backup", f.tag, (*cat)->dir());
  if (!view.error().empty()) return report(Error{Errc::invalid_argument, 0, view.error()});
  o.progress = view.progress();
  const int64_t started = util::wall_now_ns();
  // --pg: PostgreSQL's backup mode around the copy; it ends before the backup is recorded
  // (engine's end_hot), or here when the job failed before its channels ran.
  std::unique_ptr<database::PgBackupMode> pg;
  if (!f.pg.empty()) {
    if (f.validate)
      return report(Error{Errc::invalid_argument, 0, "--pg is a backup; --validate reads only"});
    auto mode = database::PgBackupMode::connect(f.pg, o.sources);
    if (!mode) return report(mode.error());
    pg = std::move(*mode);
    const std::string label = "stripeback " + util::format_time_ns(started) +
                              (f.tag.empty() ? "" : " " + f.tag);
    if (auto r = pg->start(label, o); !r) return report(r.error());
  }
  auto sum = engine::run_backup(o, **cat);
  if (pg) {
    pg->end_if_open();
    for (const auto& w : pg->warnings()) spdlog::warn("{}", w);
    if (sum && sum->status == "complete")
      for (const auto& w : pg->wait_for_archive(kPgArchiveWaitSeconds)) spdlog::warn("{}", w);
  }
  view.finished(sum ? sum->verdict.bound_by : "");
  const engine::JobSpan span{started, util::wall_now_ns(), f.tag, cancel.load()};
  record_job(**cat, sum ? engine::backup_job_record(*sum, span)
                        : engine::failed_job_record(f.validate ? "validate-sources" : "backup",
                                                    sum.error().what, span));
  if (!sum) return report(sum.error());
  if (o.keys)
    for (const auto& w : o.keys->warnings()) spdlog::warn("{}", w);
  for (const auto& s : sum->skipped) spdlog::warn("skipped '{}': {}", s.path, s.why);
  for (const auto& w : sum->warnings) spdlog::warn("{}", w);
  if (c.json) std::printf("%s\n", backup_json(*sum).c_str());
  else std::fputs(backup_text(*sum).c_str(), stdout);
  if (sum->validate_only) {
    if (sum->status != "complete") {
      print_error("validate failed: " + sum->error);
      return kExitFailed;
    }
    if (!sum->pages.corrupt.empty()) {
      print_error(std::to_string(sum->pages.corrupt.size()) + " corrupt page(s) found, e.g. '" +
                  sum->pages.corrupt.front().file + "' block " +
                  std::to_string(sum->pages.corrupt.front().block) + ": " +
                  sum->pages.corrupt.front().reason);
      return kExitFailed;
    }
    return kExitOk;
  }
  std::string id = std::to_string(sum->backup_id);
  if (sum->status == "partial") {
    print_error("backup " + id + " is partial: " + sum->error);
    return kExitPartial;
  }
  if (sum->status != "complete") {
    print_error("backup " + id + " failed: " + sum->error);
    return kExitFailed;
  }
  if (!sum->fuzzy_files.empty())
    std::fprintf(stderr,
                 "stripeback: backup %s is hot: %zu file(s) changed while they were read "
                 "(fuzzy, as expected in backup mode: the database's redo makes them "
                 "consistent)\n",
                 id.c_str(), sum->fuzzy_files.size());
  if (sum->suspicious) {
    print_error("backup " + id + " is suspicious: it looks like encrypted or destroyed data (" +
                engine::suspicion_line(*sum->suspicious) + ")");
    return kExitSuspicious;
  }
  if (!sum->changed_files.empty()) {
    print_error("backup " + id + " is complete, but " +
                std::to_string(sum->changed_files.size()) +
                " file(s) changed while they were read, e.g. '" + sum->changed_files.front() +
                "': their copies may be inconsistent");
    return kExitChanged;
  }
  return kExitOk;
}

int run_restore_cmd(const CommonFlags& c, const options::Settings& f, bool verify_only,
                    const std::atomic<bool>& cancel) {
  auto opts = options::restore_options(f, verify_only);
  if (!opts) return report(opts.error());
  engine::configure_s3(f.s3);
  engine::RestoreOptions& o = *opts;
  o.cancel = &cancel;
  auto cat = open_catalog(with_job_key(c, f), catalog::Create::no);
  if (!cat) return report(cat.error());
  // A recovery target picks the backup; a gap in the archive refuses it before any write.
  std::optional<database::RecoveryPlan> plan;
  if (!verify_only) {
    auto p = plan_pg_restore(f, **cat, o);
    if (!p) return report(p.error());
    plan = std::move(*p);
  }
  // --preview: the plan, with nothing written (no status file, no job record).
  if (f.preview) return run_preview(c, o, **cat);
  ProgressView view(c, verify_only ? "validate" : "restore", f.tag, (*cat)->dir());
  if (!view.error().empty()) return report(Error{Errc::invalid_argument, 0, view.error()});
  o.progress = view.progress();
  const int64_t started = util::wall_now_ns();
  auto sum = engine::run_restore(o, **cat);
  view.finished(sum ? sum->verdict.bound_by : "");
  const engine::JobSpan span{started, util::wall_now_ns(), f.tag, cancel.load()};
  record_job(**cat, sum ? engine::restore_job_record(*sum, span)
                        : engine::failed_job_record(verify_only ? "validate" : "restore",
                                                    sum.error().what, span));
  if (!sum) return report(sum.error());
  if (o.keys)
    for (const auto& w : o.keys->warnings()) spdlog::warn("{}", w);
  std::optional<PgRestoreFiles> pg;
  Result<void> pg_written = ok();
  if (!verify_only && sum->status == "complete") {
    auto r = finish_pg_restore(f, **cat, *sum, plan);
    if (r) pg = std::move(*r);
    else pg_written = fail(r.error().wrap("restored, but the PostgreSQL data directory is not ready"));
  }
  if (c.json) {
    std::string json = restore_json(*sum);
    if (pg) json = json.substr(0, json.size() - 1) + "," + pg_restore_json_member(*pg) + "}";
    std::printf("%s\n", json.c_str());
  } else {
    std::fputs(restore_text(*sum).c_str(), stdout);
    if (pg) std::fputs(pg_restore_text(*pg).c_str(), stdout);
  }
  if (!pg_written) {
    print_error(pg_written.error().what);
    return kExitFailed;
  }
  if (sum->status != "complete") {
    for (const auto& e : sum->errors) print_error(e);
    return kExitFailed;
  }
  // Older data than asked for is not a plain success for a script checking the exit code.
  if (!sum->fallbacks.empty() && !f.allow_fallback && !verify_only) return kExitFellBack;
  return kExitOk;
}

// list --corrupt: the corrupt pages known now (catalog::Catalog::corrupt_pages()).
int list_corrupt(const CommonFlags& c, const catalog::Catalog& cat) {
  auto pages = cat.corrupt_pages();
  if (c.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("catalog", cat.dir());
    w.begin_array("corrupt");
    for (const auto& [p, by] : pages) {
      w.begin_object();
      w.kv("file", p.file);
      w.kv("block", p.block);
      w.kv("offset", p.offset);
      w.kv("reason", p.reason);
      w.kv("found", format_time(by.time_ns));
      w.kv("found_ns", by.time_ns);
      w.kv("operation", by.backup_id ? "backup" : "validate");
      if (by.backup_id) w.kv("backup_id", by.backup_id);
      else w.kv_null("backup_id");
      w.kv("format", by.format);
      w.end_object();
    }
    w.end_array();
    w.end_object();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  if (pages.empty()) {
    std::printf("(no corrupt pages recorded in %s)\n", util::escape_text(cat.dir()).c_str());
    return kExitOk;
  }
  std::printf("%10s %14s  %-19s  %-10s %s\n", "BLOCK", "OFFSET", "FOUND", "BY", "FILE: REASON");
  for (const auto& [p, by] : pages) {
    const std::string who = by.backup_id ? "backup " + std::to_string(by.backup_id) : "validate";
    std::printf("%10llu %14llu  %-19s  %-10s %s: %s\n", static_cast<unsigned long long>(p.block),
                static_cast<unsigned long long>(p.offset), format_time(by.time_ns).c_str(),
                who.c_str(), util::escape_text(p.file).c_str(), util::escape_text(p.reason).c_str());
  }
  return kExitOk;
}

namespace {

// The files of one backup: path, size, change, and the pieces holding them.
int list_files(const CommonFlags& c, const catalog::Backup& b) {
  if (c.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("backup_id", b.id);
    w.kv("tag", b.begin.tag);
    w.kv("status", b.status_name());
    w.begin_array("files");
    for (const auto& f : b.files) {
      w.begin_object();
      w.kv("path", f.path);
      w.kv("type", S_ISDIR(f.mode) ? "directory" : "file");
      w.kv("bytes", f.size);
      w.kv("mtime", format_time(f.mtime_ns));
      if (f.unit) {
        static const char* kChange[] = {"whole", "changed", "unchanged", "skipped"};
        w.kv("change", kChange[static_cast<int>(f.change) & 3]);
        if (f.parent) w.kv("parent", f.parent);
        if (f.held_by) w.kv("held_by", f.held_by);
      }
      w.begin_array("pieces");
      for (const auto& p : f.pieces) w.value(p);
      w.end_array();
      w.end_object();
    }
    w.end_array();
    w.end_object();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  std::printf("backup %llu (%s, %s): %zu file record(s)\n", static_cast<unsigned long long>(b.id),
              b.begin.tag.empty() ? "-" : util::escape_text(b.begin.tag).c_str(),
              b.status_name().c_str(), b.files.size());
  std::printf("%14s  %-20s  %s\n", "BYTES", "MODIFIED", "PATH -> PIECES");
  for (const auto& f : b.files) {
    std::string pieces;
    for (const auto& p : f.pieces) pieces += (pieces.empty() ? "" : ", ") + p;
    if (f.held_by) pieces = "held by backup " + std::to_string(f.held_by);
    std::printf("%14llu  %-20s  %s%s -> %s\n", static_cast<unsigned long long>(f.size),
                format_time(f.mtime_ns).c_str(), util::escape_text(f.path).c_str(),
                S_ISDIR(f.mode) ? "/" : "", pieces.empty() ? "-" : util::escape_text(pieces).c_str());
  }
  return kExitOk;
}

// The lines under the listing that say more of a backup: keys, hot mode, WAL, damage,
// locks, keeps, expired and damaged pieces.
void print_backup_notes(const catalog::Catalog& cat, const std::vector<catalog::Backup>& backups) {
  const auto archive = cat.wal_files();
  const auto wraps = cat.key_wraps();
  for (const auto& b : backups) {
    if (const KeyState k = key_state(b, wraps); k.catalog_only)
      std::printf("backup %llu: %u piece(s) open with key version %u only through the catalog's "
                  "wrap (their medium could not rewrite their key slot, or their format keeps "
                  "the key in the header): the older key still opens them on the medium\n",
                  static_cast<unsigned long long>(b.id), k.catalog_only, k.version);
    if (b.hot) {
      const std::string line = hot_text(*b.hot);  // "  hot: ...\n"
      std::printf("backup %llu is %s\n", static_cast<unsigned long long>(b.id),
                  util::escape_text(line.substr(2, line.size() - 3)).c_str());
    }
    std::fputs(wal_list_line(b, archive).c_str(), stdout);
    if (!b.damage.empty())
      std::printf("backup %llu is damaged: %s\n", static_cast<unsigned long long>(b.id),
                  util::escape_text(b.damage).c_str());
    if (b.lock)
      std::printf("backup %llu %s locked until %s (%s)\n", static_cast<unsigned long long>(b.id),
                  b.locked_at(util::wall_now_ns()) ? "is" : "was",
                  format_time(b.lock->until_ns).c_str(), storage::retention_mode_name(b.lock->mode));
    if (b.keep && b.keep->kind == catalog::Keep::Kind::forever)
      std::printf("backup %llu is kept forever\n", static_cast<unsigned long long>(b.id));
    else if (b.keep)
      std::printf("backup %llu %s kept until %s\n", static_cast<unsigned long long>(b.id),
                  b.kept_at(util::wall_now_ns()) ? "is" : "was",
                  format_time(b.keep->until_ns).c_str());
    for (const auto& p : b.pieces) {
      if (p.expired)
        std::printf("backup %llu: piece %s is expired: %s\n", static_cast<unsigned long long>(b.id),
                    util::escape_text(p.name).c_str(), util::escape_text(p.expired_reason).c_str());
      else if (p.damaged)
        std::printf("backup %llu: piece %s is damaged: %s; %zu file(s) will not restore from "
                    "it, the others will\n",
                    static_cast<unsigned long long>(b.id), util::escape_text(p.name).c_str(),
                    util::escape_text(p.damage).c_str(), p.damaged_files.size());
    }
  }
}

}  // namespace

int run_list_cmd(const CommonFlags& c, const ListFlags& f) {
  auto cat = open_catalog(c, catalog::Create::no, SealUse::inspect);
  if (!cat && cat.error().code == Errc::not_found) {
    // A fresh install: no catalog yet, so no backups.
    if (f.backup) return report(Error{Errc::not_found, 0, "backup " + std::to_string(*f.backup) +
                                                               " is not in the catalog (" +
                                                               catalog_dir_of(c) +
                                                               " does not exist yet)"});
    if (c.json) {
      util::JsonWriter w;
      w.begin_object();
      w.kv("catalog", catalog_dir_of(c));
      w.begin_array(f.corrupt ? "pages" : "backups");
      w.end_array();
      w.end_object();
      std::printf("%s\n", w.str().c_str());
    } else {
      std::printf("(no backups: the catalog %s does not exist yet)\n",
                  util::escape_text(catalog_dir_of(c)).c_str());
    }
    return kExitOk;
  }
  if (!cat) return report(cat.error());
  // Tampering is shown with whatever is listed, and the exit code says it (9).
  const bool tampered = !(*cat)->tampering().empty();
  const std::string seal = seal_text(**cat);
  auto tamper_exit = [&](int rc) {
    if (!tampered) return rc;
    std::fputs(seal.c_str(), stderr);
    return kExitTampered;
  };
  if (f.corrupt) return tamper_exit(list_corrupt(c, **cat));
  auto backups = (*cat)->backups();
  if (f.backup) {
    auto it = std::find_if(backups.begin(), backups.end(),
                           [&](const catalog::Backup& b) { return b.id == *f.backup; });
    if (it == backups.end())
      return report(Error{Errc::not_found, 0,
                          "backup " + std::to_string(*f.backup) + " is not in the catalog"});
    if (f.files) return tamper_exit(list_files(c, *it));
    backups = {*it};
  } else if (f.files) {
    return report(Error{Errc::invalid_argument, 0, "list --files needs --backup ID"});
  }
  if (c.json) {
    std::printf("%s\n", list_json(**cat, f.backup).c_str());
    return tampered ? kExitTampered : kExitOk;
  }
  if (!tampered) std::fputs(seal.c_str(), stdout);
  const auto full_check = last_full_checks(**cat);
  auto checked = [&](uint64_t id) -> int64_t {
    auto it = full_check.find(id);
    return it == full_check.end() ? 0 : it->second;
  };
  // A tag names the newest backup with it; the older ones are marked.
  std::map<std::string, uint64_t> newest_of_tag;
  for (const auto& b : (*cat)->backups())
    if (!b.begin.tag.empty()) newest_of_tag[b.begin.tag] = std::max(newest_of_tag[b.begin.tag], b.id);
  auto older_tag = [&](const catalog::Backup& b) {
    return !b.begin.tag.empty() && newest_of_tag[b.begin.tag] != b.id;
  };
  std::printf("%6s  %-18s %-20s  %-20s  %-10s %7s %12s %6s  %-6s %-8s %-20s  %s\n", "ID", "TAG",
              "STARTED (UTC)", "ENDED (UTC)", "STATUS", "FILES", "BYTES", "PIECES", "LEVEL",
              "PARENTS", "CHECKED", "DESTINATION");
  for (const auto& b : backups) {
    BackupTotals t = backup_totals(b);
    std::string tag = b.begin.tag.empty() ? "-" : util::escape_text(b.begin.tag);
    if (older_tag(b)) tag += " (older)";
    std::string level = b.begin.level < 0   ? "full"
                        : b.begin.level == 0 ? "0"
                        : b.begin.cumulative ? "1c"
                                             : "1";
    std::string parents;
    for (uint64_t p : backup_parents(b)) parents += (parents.empty() ? "" : ",") + std::to_string(p);
    const int64_t when = checked(b.id);
    std::printf("%6llu  %-18s %-20s  %-20s  %-10s %7llu %12s %6zu  %-6s %-8s %-20s  %s\n",
                static_cast<unsigned long long>(b.id), tag.c_str(),
                format_time(b.begin.start_time_ns).c_str(),
                b.ended ? format_time(b.end.end_time_ns).c_str() : "-", b.status_name().c_str(),
                static_cast<unsigned long long>(t.files), util::format_bytes(t.held).c_str(),
                b.pieces.size(), level.c_str(), parents.empty() ? "-" : parents.c_str(),
                when ? format_time(when).c_str() : "-",
                util::escape_text(b.begin.destination).c_str());
  }
  if (backups.empty())
    std::printf("(no backups in %s)\n", util::escape_text((*cat)->dir()).c_str());
  print_backup_notes(**cat, backups);
  return tamper_exit(kExitOk);
}

int run_demo_data_cmd(const DemoDataFlags& f) {
  auto size = util::parse_size(f.size);
  if (!size) return report(size.error());
  auto sum = engine::make_demo_data(f.dir, *size, f.seed);
  if (!sum) return report(sum.error());
  std::printf("generated %llu files, %s in %s (%.2f s)\n",
              static_cast<unsigned long long>(sum->files), util::format_bytes(sum->bytes).c_str(),
              util::escape_text(f.dir).c_str(), sum->elapsed_s);
  return kExitOk;
}

}  // namespace stripeback::cli

namespace stripeback::cli {

int run_keygen_cmd(const std::string& path) {
  if (auto r = engine::generate_key_file(path); !r) return report(r.error());
  std::printf("wrote a new 256-bit key to %s (mode 0600); keep a copy apart from the backups: "
              "without it they cannot be restored\n",
              util::escape_text(path).c_str());
  return kExitOk;
}

}  // namespace stripeback::cli
