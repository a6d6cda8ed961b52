#include "cli/catalog_commands.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <set>
#include <spdlog/spdlog.h>

#include "catalog/catalog.h"
#include "cli/job_flags.h"
#include "engine/wiring/backends.h"
#include "engine/media/catalog_rebuild.h"
#include "engine/transform/crypto.h"
#include "engine/format/piece_name.h"
#include "util/escape.h"
#include "util/json.h"

namespace stripeback::cli {
namespace {

std::string esc(const std::string& s) { return util::escape_text(s); }

int run_rebuild(const CatalogFlags& f, const CommonFlags& c) {
  engine::RebuildOptions o;
  // A relative directory is recorded as the absolute one, as a backup's destination is, so
  // the rebuilt catalog finds its pieces from any working directory.
  for (const auto& m : f.from)
    o.media.push_back(m.find("://") != std::string::npos || m.rfind("tape:", 0) == 0 ||
                              m.empty() || m[0] == '/'
                          ? m
                          : std::filesystem::absolute(m).lexically_normal().string());
  o.use_autobackup = !f.no_autobackup;
  if (!f.catalog_id.empty()) {
    char* end = nullptr;
    o.catalog_id = std::strtoull(f.catalog_id.c_str(), &end, 16);
    if (f.catalog_id.size() != 16 || *end != '\0' || o.catalog_id == 0)
      return report(Error{Errc::invalid_argument, 0,
                            "--catalog-id '" + f.catalog_id + "' is not 16 hex digits"});
  }
  std::shared_ptr<engine::Keyring> keys;
  if (!f.keys.passphrase_file.empty() || !f.keys.passphrase_env.empty() || !f.keys.key_file.empty()) {
    auto k = engine::Keyring::load({f.keys.passphrase_file, f.keys.passphrase_env, f.keys.key_file});
    if (!k) return report(k.error());
    keys = *k;
    o.keys = keys.get();
  }
  // The rebuilt records are sealed with the key of the pieces (docs/security.md).
  CommonFlags with_key = c;
  with_key.keys = f.keys;
  auto cat = open_catalog(with_key, catalog::Create::yes, SealUse::inspect);
  if (!cat) return report(cat.error());
  if (const auto found = (*cat)->tampering(); !found.empty())
    return report(Error{Errc::tampered, 0,
                        "the catalog in '" + (*cat)->dir() + "' shows tampering (" +
                            found.front().what +
                            "): a rebuild into it would keep the tampered records; rebuild "
                            "into a new directory (--catalog NEW), or move its catalog.log "
                            "aside first"});
  auto rep = engine::rebuild_catalog(**cat, o);
  if (!rep) return report(rep.error());
  uint64_t added = 0;
  for (const auto& b : rep->backups) added += b.added ? 1 : 0;
  if (c.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("catalog", (*cat)->dir());
    if (rep->catalog_id) w.kv("catalog_id", engine::format_catalog_id(rep->catalog_id));
    else w.kv_null("catalog_id");
    w.kv("added", added);
    w.begin_array("media");
    for (const auto& m : rep->media) {
      w.begin_object();
      w.kv("medium", m.medium);
      if (m.autobackup.empty()) w.kv_null("autobackup");
      else w.kv("autobackup", m.autobackup);
      w.kv("pieces_found", m.pieces_found).kv("pieces_known", m.pieces_known);
      w.kv("pieces_read", m.pieces_read);
      w.begin_array("unreadable");
      for (const auto& u : m.unreadable) w.value(u);
      w.end_array();
      w.end_object();
    }
    w.end_array();
    w.begin_array("backups");
    for (const auto& b : rep->backups) {
      w.begin_object();
      w.kv("id", b.id).kv("from", b.from).kv("added", b.added);
      if (!b.status.empty()) w.kv("status", b.status);
      w.kv("files", b.files).kv("pieces", b.pieces);
      if (!b.reason.empty()) w.kv("reason", b.reason);
      w.begin_array("notes");
      for (const auto& n : b.notes) w.value(n);
      w.end_array();
      w.end_object();
    }
    w.end_array();
    w.begin_array("warnings");
    for (const auto& x : rep->warnings) w.value(x);
    w.end_array();
    w.end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("catalog %s (%s)\n", esc((*cat)->dir()).c_str(),
                rep->catalog_id ? engine::format_catalog_id(rep->catalog_id).c_str() : "no identity");
    for (const auto& m : rep->media) {
      std::printf("medium %s: autobackup %s, %llu piece(s) found, %llu already known, %llu read",
                  esc(m.medium).c_str(), m.autobackup.empty() ? "none" : esc(m.autobackup).c_str(),
                  static_cast<unsigned long long>(m.pieces_found),
                  static_cast<unsigned long long>(m.pieces_known),
                  static_cast<unsigned long long>(m.pieces_read));
      if (!m.unreadable.empty())
        std::printf(", %llu unreadable", static_cast<unsigned long long>(m.unreadable.size()));
      std::printf("\n");
    }
    for (const auto& b : rep->backups) {
      if (b.added)
        std::printf("backup %llu: added from its %s, %s, %llu file(s), %llu piece(s)\n",
                    static_cast<unsigned long long>(b.id),
                    b.from == "autobackup" ? "autobackup" : "pieces", b.status.c_str(),
                    static_cast<unsigned long long>(b.files),
                    static_cast<unsigned long long>(b.pieces));
      else
        std::printf("backup %llu: not added: %s\n", static_cast<unsigned long long>(b.id),
                    esc(b.reason).c_str());
      for (const auto& n : b.notes) std::printf("  %s\n", esc(n).c_str());
    }
    std::printf("%llu backup(s) added\n", static_cast<unsigned long long>(added));
  }
  for (const auto& x : rep->warnings) spdlog::warn("{}", x);
  return kExitOk;
}

int run_compact(const CommonFlags& c) {
  auto cat = open_catalog(c, catalog::Create::no);
  if (!cat) return report(cat.error());
  const size_t before = (*cat)->backups().size();
  // The records of backups a finished deletion removed go (delete obsolete, delete expired).
  catalog::CompactOptions opts;
  const auto gone = (*cat)->deleted_backups();
  const std::set<uint64_t> drop(gone.begin(), gone.end());
  opts.drop_backup = [drop](uint64_t id) { return drop.count(id) != 0; };
  auto rep = (*cat)->compact(opts);
  if (!rep) return report(rep.error());
  const size_t after = (*cat)->backups().size();
  if (c.json) {
    util::JsonWriter w;
    w.begin_object();
    w.kv("catalog", (*cat)->dir());
    w.kv("records_before", rep->records_before).kv("records_after", rep->records_after);
    w.kv("bytes_before", rep->bytes_before).kv("bytes_after", rep->bytes_after);
    w.kv("damaged_bytes", rep->damaged_bytes);
    w.kv("backups_before", static_cast<uint64_t>(before));
    w.kv("backups_after", static_cast<uint64_t>(after));
    w.begin_array("saved");
    for (const auto& s : rep->saved) w.value(s);
    w.end_array();
    w.begin_array("dropped_backups");
    for (uint64_t id : rep->dropped_backups) w.value(id);
    w.end_array();
    w.end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("compacted %s: %llu record(s) kept of %llu, %llu -> %llu bytes, %llu damaged "
                "byte(s) dropped\n",
                esc((*cat)->dir()).c_str(), static_cast<unsigned long long>(rep->records_after),
                static_cast<unsigned long long>(rep->records_before),
                static_cast<unsigned long long>(rep->bytes_before),
                static_cast<unsigned long long>(rep->bytes_after),
                static_cast<unsigned long long>(rep->damaged_bytes));
    for (const auto& s : rep->saved) std::printf("  damaged bytes saved to %s\n", esc(s).c_str());
  }
  return kExitOk;
}

}  // namespace

void add_catalog_commands(CLI::App* cat, CatalogFlags& f, CommonFlags& common) {
  cat->require_subcommand(1);
  auto* rebuild = cat->add_subcommand(
      "rebuild",
      "re-create the records of the backups found on backup media (newest catalog autobackup "
      "first, then the pieces it does not name; tape volumes are read whole, in order) in a "
      "new or an existing catalog; nothing already in the catalog is added again");
  rebuild->add_option("--from", f.from, "directory or nfs:// URL holding pieces, or a tape drive (tape:iscsi://... or "
                      "tape:/dev/sgN) whose volume is read from its start; repeatable: give "
                      "the drives of every volume a backup spans")
      ->required();
  rebuild->add_flag("--no-autobackup", f.no_autobackup,
                    "ignore catalog autobackups: rebuild from the pieces alone");
  rebuild->add_option("--catalog-id", f.catalog_id,
                      "take the pieces of this catalog (16 hex digits), when the media hold "
                      "several catalogs' pieces");
  add_key_flags(rebuild, f.keys,
                "of encrypted pieces, which also seals the rebuilt catalog (docs/security.md)");
  auto* compact = cat->add_subcommand(
      "compact",
      "rewrite the catalog's record log without torn or corrupt regions (saved beside it), "
      "atomically, under the catalog's lock");
  add_common(rebuild, common);
  add_common(compact, common);
  add_catalog_key_flags(compact, common);
}

int run_catalog_cmd(const CLI::App& cat, const CatalogFlags& f, const CommonFlags& common) {
  for (const auto* sub : cat.get_subcommands()) {
    if (sub->get_name() == "rebuild") return run_rebuild(f, common);
    if (sub->get_name() == "compact") return run_compact(common);
  }
  return kExitUsage;
}

}  // namespace stripeback::cli
