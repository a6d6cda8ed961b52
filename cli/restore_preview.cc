#include "cli/restore_preview.h"

#include <cstdio>

#include "cli/render.h"
#include "engine/history/time_estimate.h"
#include "util/escape.h"
#include "util/json.h"
#include "util/units.h"

namespace stripeback::cli {
namespace {

using util::escape_text;
using util::format_bytes;

std::string level_text(int level) {
  return level < 0 ? std::string("full") : "level " + std::to_string(level);
}

// Where a piece is, in words: "disk /b", "s3 s3://bucket/p", "tape volume V1, V2".
std::string piece_place(const engine::PreviewPiece& p) {
  if (p.volumes.empty()) return p.medium + " " + p.location;
  std::string s = p.medium + (p.volumes.size() > 1 ? " volumes " : " volume ");
  for (size_t i = 0; i < p.volumes.size(); ++i) s += (i ? ", " : "") + p.volumes[i];
  return s;
}

std::string what(const engine::RestorePreview& p) {
  return p.verify_only ? "validate" : "restore";
}

}  // namespace

std::string preview_json(const engine::RestorePreview& p) {
  util::JsonWriter w;
  w.begin_object();
  w.kv("operation", what(p));
  w.kv("preview", true);
  if (!p.verify_only) w.kv("target", p.target);
  else w.kv("check_mode", p.check_mode);
  w.kv("delta", p.delta);
  w.kv("files", static_cast<uint64_t>(p.files.size()));
  w.kv("directories", p.directories);
  w.kv("bytes", p.bytes);
  w.kv("piece_bytes_read", p.bytes_to_read);
  w.begin_array("backups");
  for (const auto& b : p.backups) {
    w.begin_object().kv("id", b.id);
    if (b.level < 0) w.kv_null("level");
    else w.kv("level", b.level);
    w.kv("tag", b.tag).kv("start_time", format_time(b.start_ns)).kv("parent", b.parent);
    w.end_object();
  }
  w.end_array();
  w.begin_array("pieces");
  for (const auto& pc : p.pieces) {
    w.begin_object().kv("backup_id", pc.backup_id).kv("name", pc.name).kv("medium", pc.medium);
    if (pc.volumes.empty()) w.kv("location", pc.location);
    w.begin_array("volumes");
    for (const auto& v : pc.volumes) w.value(v);
    w.end_array();
    w.kv("bytes", pc.size).kv("bytes_to_read", pc.bytes_to_read).kv("whole", pc.whole);
    w.end_object();
  }
  w.end_array();
  w.begin_array("planned_files");
  for (const auto& f : p.files) {
    w.begin_object().kv("path", f.path);
    if (!p.verify_only) w.kv("target", f.target);
    w.kv("backup_id", f.backup_id).kv("bytes", f.bytes).end_object();
  }
  w.end_array();
  w.begin_object("estimate");
  if (p.seconds) w.kv("seconds", *p.seconds);
  else w.kv_null("seconds");
  w.begin_array("media");
  for (const auto& e : p.estimates) {
    w.begin_object().kv("medium", e.medium).kv("bytes", e.bytes).kv("jobs", e.jobs);
    if (e.jobs) w.kv("mb_per_s", e.mb_per_s).kv("seconds", e.seconds);
    else w.kv_null("mb_per_s").kv_null("seconds");
    w.end_object();
  }
  w.end_array();
  w.end_object();
  outcome_lists_json(w, p.fallbacks, p.warnings, p.errors);
  w.end_object();
  return w.str();
}

std::string preview_text(const engine::RestorePreview& p) {
  std::string s = what(p) + " preview: " + std::to_string(p.files.size()) + " files, " +
                  format_bytes(p.bytes);
  if (!p.verify_only) s += " to write under " + escape_text(p.target);
  else s += " to check (" + p.check_mode + ")";
  s += "; " + format_bytes(p.bytes_to_read) + " to read from " +
       std::to_string(p.pieces.size()) + " pieces of " + std::to_string(p.backups.size()) +
       " backups" + (p.delta ? " (at most: --delta reads only what differs)" : "") +
       "; nothing was read or written\n";
  for (const auto& b : p.backups)
    s += "  backup " + std::to_string(b.id) + " (" + level_text(b.level) + ", " +
         format_time(b.start_ns) + (b.tag.empty() ? "" : ", tag " + escape_text(b.tag)) +
         (b.parent ? "): parent, files build on it\n" : ")\n");
  for (const auto& pc : p.pieces)
    s += "  piece " + escape_text(pc.name) + " (backup " + std::to_string(pc.backup_id) + ", " +
         escape_text(piece_place(pc)) + "): " +
         (pc.whole ? "read whole, " + format_bytes(pc.bytes_to_read)
                   : format_bytes(pc.bytes_to_read) + " to read of " + format_bytes(pc.size)) +
         "\n";
  for (const auto& f : p.files)
    s += "  file " + escape_text(f.path) +
         (p.verify_only ? std::string() : " -> " + escape_text(f.target)) + ": " +
         format_bytes(f.bytes) + " (backup " + std::to_string(f.backup_id) + ")\n";
  if (p.seconds) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f s", *p.seconds);
    s += std::string("  estimate: ") + buf + "\n";
  } else {
    s += "  estimate: none\n";
  }
  for (const auto& e : p.estimates) {
    char buf[160];
    if (e.jobs)
      std::snprintf(buf, sizeof buf, "    %s: %s at %.1f MB/s, %.1f s (from %llu %s jobs)\n",
                    e.medium.c_str(), format_bytes(e.bytes).c_str(), e.mb_per_s, e.seconds,
                    static_cast<unsigned long long>(e.jobs), what(p).c_str());
    else
      std::snprintf(buf, sizeof buf, "    %s: %s, no finished %s from %s in the catalog's "
                    "history to estimate from\n",
                    e.medium.c_str(), format_bytes(e.bytes).c_str(), what(p).c_str(),
                    e.medium.c_str());
    s += buf;
  }
  for (const auto& f : p.fallbacks)
    s += "warning: '" + escape_text(f.file) + "' would be restored from backup " +
         std::to_string(f.used_backup) + ", not from its newest copy (" + escape_text(f.reason) +
         ")\n";
  for (const auto& w : p.warnings) s += "warning: " + escape_text(w) + "\n";
  for (const auto& e : p.errors) s += "error: " + escape_text(e) + "\n";
  return s;
}

int run_preview(const CommonFlags& c, const engine::RestoreOptions& o, catalog::Catalog& cat) {
  auto p = engine::preview_restore(o, cat);
  if (!p) return report(p.error());
  engine::estimate_time(*p, cat.jobs(), cat.backups());
  if (c.json) std::printf("%s\n", preview_json(*p).c_str());
  else std::fputs(preview_text(*p).c_str(), stdout);
  if (!p->errors.empty()) {
    for (const auto& e : p->errors) print_error(e);
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace stripeback::cli
