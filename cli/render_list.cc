#include "cli/render.h"
#include "cli/render_seal.h"

#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "database/recovery_plan.h"
#include "database/wal_names.h"
#include "engine/format/piece_name.h"
#include "util/clock.h"
#include "util/json.h"

namespace stripeback::cli {

BackupTotals backup_totals(const catalog::Backup& b) {
  BackupTotals t;
  for (const auto& f : b.files)
    if (S_ISREG(f.mode)) {
      ++t.files;
      t.bytes += f.size;
      if (f.change == catalog::FileChange::whole) t.held += f.size;
      else if (f.change == catalog::FileChange::changed)
        t.held += std::min<uint64_t>(f.size, f.units_written * f.unit);
    }
  return t;
}

std::vector<uint64_t> backup_parents(const catalog::Backup& b) {
  std::set<uint64_t> ids;
  for (const auto& f : b.files)
    if (f.parent) ids.insert(f.parent);
  return {ids.begin(), ids.end()};
}

std::map<uint64_t, int64_t> last_full_checks(const catalog::Catalog& cat) {
  std::map<uint64_t, int64_t> full_check;
  for (const auto& fc : cat.frame_checks())
    if (fc.full_check_ns)
      full_check[fc.backup_id] = std::max(full_check[fc.backup_id], fc.full_check_ns);
  return full_check;
}

KeyState key_state(const catalog::Backup& b, const std::map<std::string, catalog::KeyWrap>& wraps) {
  KeyState k;
  for (const auto& p : b.pieces)
    if (auto it = wraps.find(p.name); it != wraps.end()) {
      k.version = std::max(k.version, it->second.kek_version);
      k.catalog_only += it->second.in_piece ? 0 : 1;
    }
  return k;
}

std::string list_json(const catalog::Catalog& cat, std::optional<uint64_t> only) {
  const auto full_check = last_full_checks(cat);
  const auto backups = cat.backups();
  const auto archive = cat.wal_files();
  const auto wraps = cat.key_wraps();
  // A tag names the newest backup with it; the older ones are marked.
  std::map<std::string, uint64_t> newest_of_tag;
  for (const auto& b : backups)
    if (!b.begin.tag.empty()) newest_of_tag[b.begin.tag] = std::max(newest_of_tag[b.begin.tag], b.id);
  util::JsonWriter w;
  w.begin_object();
  w.kv("catalog", cat.dir());
  if (uint64_t id = cat.identity()) w.kv("catalog_id", engine::format_catalog_id(id));
  w.begin_array("backups");
  for (const auto& b : backups) {
    if (only && b.id != *only) continue;
    BackupTotals t = backup_totals(b);
    w.begin_object();
    w.kv("id", b.id);
    w.kv("backup_id", b.id);
    w.kv("tag", b.begin.tag);
    if (!b.begin.tag.empty()) w.kv("tag_newest", newest_of_tag[b.begin.tag] == b.id);
    w.kv("start_time", format_time(b.begin.start_time_ns));
    w.kv("start_time_ns", b.begin.start_time_ns);
    if (b.ended) {
      w.kv("end_time", format_time(b.end.end_time_ns));
      w.kv("end_time_ns", b.end.end_time_ns);
    } else {
      w.kv_null("end_time");
    }
    w.kv("status", b.status_name());
    w.kv("files", t.files);
    w.kv("bytes", t.bytes);
    w.kv("bytes_held", t.held);
    if (b.ended) {
      w.kv("bytes_read", b.end.bytes_read);
      w.kv("bytes_written", b.end.bytes_written);
    }
    w.kv("pieces", static_cast<uint64_t>(b.pieces.size()));
    w.kv("destination", b.begin.destination);
    if (b.lock) {
      w.kv("locked_until", format_time(b.lock->until_ns));
      w.kv("lock_mode", storage::retention_mode_name(b.lock->mode));
    } else {
      w.kv_null("locked_until");
      w.kv_null("lock_mode");
    }
    // stripeback keep: the date (or "forever") of its latest keep, and whether it holds now.
    if (!b.keep) w.kv_null("keep_until");
    else if (b.keep->kind == catalog::Keep::Kind::forever) w.kv("keep_until", "forever");
    else w.kv("keep_until", format_time(b.keep->until_ns));
    w.kv("kept", b.kept_at(util::wall_now_ns()));
    w.begin_array("piece_list");
    for (const auto& p : b.pieces) {
      w.begin_object();
      w.kv("name", p.name);
      w.kv("location", p.location);
      w.kv("bytes", p.size);
      w.kv("status", p.expired ? "expired" : p.damaged ? "damaged" : "available");
      if (p.expired) w.kv("reason", p.expired_reason);
      if (p.damaged) {
        w.kv("damage", p.damage);
        w.begin_array("damaged_files");
        for (const auto& f : p.damaged_files) w.value(f);
        w.end_array();
      }
      if (p.crosschecked_ns) w.kv("crosschecked", format_time(p.crosschecked_ns));
      else w.kv_null("crosschecked");
      if (auto k = wraps.find(p.name); k != wraps.end()) {
        w.kv("key_version", static_cast<uint64_t>(k->second.kek_version));
        w.kv("key_wrap", k->second.in_piece ? "piece" : "catalog");
      }
      w.end_object();
    }
    w.end_array();
    if (const KeyState k = key_state(b, wraps); k.version) {
      w.kv("key_version", static_cast<uint64_t>(k.version));
      w.kv("key_catalog_only_pieces", static_cast<uint64_t>(k.catalog_only));
    }
    if (b.begin.level >= 0) {
      w.kv("level", static_cast<uint64_t>(b.begin.level));
      w.kv("cumulative", b.begin.cumulative);
      w.kv("change_unit", static_cast<uint64_t>(b.begin.change_unit));
      w.begin_array("parents");
      for (uint64_t p : backup_parents(b)) w.value(p);
      w.end_array();
    } else {
      w.kv_null("level");
    }
    if (auto it = full_check.find(b.id); it != full_check.end()) {
      w.kv("last_full_check", format_time(it->second));
      w.kv("last_full_check_ns", it->second);
    } else {
      w.kv_null("last_full_check");
    }
    w.kv("hot", b.hot.has_value());
    if (b.hot) {
      w.begin_array("fuzzy_files");
      for (const auto& p : b.hot->fuzzy) w.value(p);
      w.end_array();
      hot_json(w, *b.hot);
    }
    if (b.ended && !b.end.message.empty()) w.kv("message", b.end.message);
    if (!b.damage.empty()) w.kv("damage", b.damage);
    // A backup of a PostgreSQL cluster: whether the archive holds the WAL it needs.
    if (database::has_postgres_record(b)) {
      const auto missing = database::missing_backup_wal(archive, *b.hot);
      w.kv("wal_complete", !missing.has_value());
      if (missing) w.kv("first_missing_wal", *missing);
      else w.kv_null("first_missing_wal");
    } else {
      w.kv_null("wal_complete");
      w.kv_null("first_missing_wal");
    }
    w.end_object();
  }
  w.end_array();
  seal_json(w, cat);
  w.end_object();
  return w.str();
}

}  // namespace stripeback::cli
