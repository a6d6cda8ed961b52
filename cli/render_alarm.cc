#include "cli/render_alarm.h"

#include <cstdio>

#include "util/escape.h"

namespace stripeback::cli {
namespace {

void files_json(util::JsonWriter& w, const std::vector<engine::AlarmFile>& files) {
  w.begin_array("files");
  for (const auto& f : files)
    w.begin_object().kv("path", f.path).kv("before", f.before).kv("after", f.after).end_object();
  w.end_array();
}

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * share);
  return buf;
}

std::string ratio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", r);
  return buf;
}

}  // namespace

std::string clear_keep_command(uint64_t backup_id) {
  return "stripeback keep " + std::to_string(backup_id) + " --clear";
}

void alarm_json(util::JsonWriter& w, const engine::BackupSummary& s) {
  if (s.alarm_compared_with) w.kv("alarm_compared_with", s.alarm_compared_with);
  if (!s.suspicious) return;
  const engine::Suspicion& a = *s.suspicious;
  w.begin_object("suspicious");
  w.kv("previous_backup", a.previous_backup);
  w.begin_array("rules");
  for (const auto& r : a.rules) w.value(r);
  w.end_array();
  if (a.pages) {
    const auto& p = *a.pages;
    w.begin_object("pages");
    w.kv("files_compared", p.files);
    w.kv("checked_before", p.checked_before);
    w.kv("failed_before", p.failed_before);
    w.kv("share_before", p.share_before);
    w.kv("checked_after", p.checked_after);
    w.kv("failed_after", p.failed_after);
    w.kv("share_after", p.share_after);
    files_json(w, p.top);
    w.end_object();
  }
  if (a.compression) {
    const auto& c = *a.compression;
    w.begin_object("compression");
    w.kv("files_compared", c.files);
    w.kv("raw_before", c.raw_before);
    w.kv("stored_before", c.stored_before);
    w.kv("ratio_before", c.ratio_before);
    w.kv("raw_after", c.raw_after);
    w.kv("stored_after", c.stored_after);
    w.kv("ratio_after", c.ratio_after);
    files_json(w, c.top);
    w.end_object();
  }
  w.kv("previous_kept", a.previous_kept);
  if (a.previous_kept) w.kv("clear_keep", clear_keep_command(a.previous_backup));
  else w.kv("keep_error", a.keep_error);
  w.end_object();
}

std::string alarm_text(const engine::BackupSummary& s) {
  if (!s.suspicious) return "";
  const engine::Suspicion& a = *s.suspicious;
  const std::string prev = std::to_string(a.previous_backup);
  std::string rules;
  for (const auto& r : a.rules) rules += (rules.empty() ? "" : ", ") + r;
  std::string t = "  SUSPICIOUS: this backup looks like encrypted or destroyed data (" + rules +
                  ") against backup " + prev + "\n";
  if (a.pages) {
    const auto& p = *a.pages;
    t += "    pages failing their checks: " + percent(p.share_before) + " (" +
         std::to_string(p.failed_before) + " of " + std::to_string(p.checked_before) +
         ") in backup " + prev + ", now " + percent(p.share_after) + " (" +
         std::to_string(p.failed_after) + " of " + std::to_string(p.checked_after) + "), over " +
         std::to_string(p.files) + " file(s)\n";
    for (const auto& f : p.top)
      t += "      " + util::escape_text(f.path) + ": " + percent(f.before) + " -> " +
           percent(f.after) + "\n";
  }
  if (a.compression) {
    const auto& c = *a.compression;
    t += "    compression ratio: " + ratio(c.ratio_before) + " in backup " + prev + ", now " +
         ratio(c.ratio_after) + ", over " + std::to_string(c.files) + " file(s)\n";
    for (const auto& f : c.top)
      t += "      " + util::escape_text(f.path) + ": " + ratio(f.before) + " -> " +
           ratio(f.after) + "\n";
  }
  if (a.previous_kept)
    t += "    backup " + prev + " is kept forever, out of reach of retention; once the data " +
         "is known to be sound: " + clear_keep_command(a.previous_backup) + "\n";
  else
    t += "    backup " + prev + " could not be kept: " + util::escape_text(a.keep_error) +
         "; keep it before any retention runs: stripeback keep " + prev + " --forever\n";
  return t;
}

}  // namespace stripeback::cli
