#include "cli/render.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "cli/render_alarm.h"
#include "database/wal_names.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/json.h"
#include "util/units.h"

namespace stripeback::cli {
namespace {

using util::escape_text;

void group_json(util::JsonWriter& w, const storage::CounterGroup& g) {
  w.begin_object(g.name);
  for (const auto& c : g.counters) {
    switch (c.kind) {
      case storage::Counter::Kind::number: w.kv(c.key, c.number); break;
      case storage::Counter::Kind::real: w.kv(c.key, c.real); break;
      case storage::Counter::Kind::text: w.kv(c.key, c.text); break;
      case storage::Counter::Kind::flag: w.kv(c.key, c.number != 0); break;
    }
  }
  w.end_object();
}

// --channels auto: the count chosen and why (a fixed count: the count, and a null reason).
void channels_json(util::JsonWriter& w, uint32_t chosen, const std::string& reason) {
  w.kv("channels_chosen", static_cast<uint64_t>(chosen));
  if (reason.empty()) w.kv_null("channels_reason");
  else w.kv("channels_reason", reason);
}

// "  channels: auto chose 8 (probe: 1=210 2=390 4=450 8=455 MB/s)"; nothing for a fixed count.
std::string channels_text(const std::string& reason, uint32_t chosen) {
  if (reason.empty()) return "";
  return "  channels: auto chose " + std::to_string(chosen) + " (" + escape_text(reason) + ")\n";
}

void channel_json(util::JsonWriter& w, const engine::ChannelStats& c) {
  w.begin_object();
  w.kv("channel", c.channel);
  w.kv("io_engine", c.io_engine);
  w.kv("direct_source", c.direct_source);
  w.kv("direct_sink", c.direct_sink);
  w.kv("files", c.files);
  w.kv("bytes_read", c.bytes_read);
  w.kv("bytes_written", c.bytes_written);
  w.kv("frames", c.frames);
  w.kv("zero_frames", c.zero_frames);
  w.kv("reads", c.reads);
  w.kv("writes", c.writes);
  w.kv("pieces", c.pieces);
  w.kv("checkpoints", static_cast<uint64_t>(c.checkpoints));
  w.kv("start_s", c.start_s);
  w.kv("elapsed_s", c.elapsed_s);
  w.kv("mb_per_s", util::mb_per_s(c.bytes_read, c.elapsed_s));  // what the channel read
  w.kv("read_busy_s", c.read_busy_s);
  w.kv("write_busy_s", c.write_busy_s);
  w.kv("wait_s", c.wait_s);
  w.kv("throttle_s", c.throttle_s);
  w.kv("cpu_s", c.cpu_s);
  w.kv("compress_in", c.bytes_compressed_in);
  w.kv("compress_out", c.bytes_compressed_out);
  w.kv("compress_s", c.compress_s);
  w.kv("page_check_s", c.page_check_s);
  w.kv("pages_checked", c.pages_checked);
  w.kv("pages_retried", c.pages_retried);
  w.kv("pages_corrupt", c.pages_corrupt);
  w.kv("encrypt_s", c.encrypt_s);
  w.begin_object("compress_levels");
  for (const auto& [level, bytes] : c.level_bytes) w.kv(std::to_string(level), bytes);
  w.end_object();
  for (const auto& g : c.backends) group_json(w, g);
  w.end_object();
}

}  // namespace

std::string group_text(const storage::CounterGroup& g) {
  std::string s = "    " + g.name + ":";
  bool first = true;
  char buf[64];
  for (const auto& c : g.counters) {
    s += first ? " " : ", ";
    first = false;
    s += c.key + " ";
    switch (c.kind) {
      case storage::Counter::Kind::number:
        s += c.unit == "bytes" ? util::format_bytes(c.number) : std::to_string(c.number);
        break;
      case storage::Counter::Kind::real:
        std::snprintf(buf, sizeof buf, "%.2f%s%s", c.real, c.unit.empty() ? "" : " ",
                      c.unit.c_str());
        s += buf;
        break;
      case storage::Counter::Kind::text: s += escape_text(c.text); break;
      case storage::Counter::Kind::flag: s += c.number ? "yes" : "no"; break;
    }
  }
  return s + "\n";
}

void hot_json(util::JsonWriter& w, const catalog::HotBackup& h) {
  if (h.database.empty()) return;
  w.begin_object(h.database);
  w.kv("data_dir", h.data_dir);
  w.kv("system_id", std::to_string(h.system_id));
  w.kv("timeline", static_cast<uint64_t>(h.timeline));
  w.kv("start_lsn", database::lsn_text(h.start_lsn));
  w.kv("stop_lsn", database::lsn_text(h.stop_lsn));
  w.kv("start_wal", h.start_wal);
  w.kv("stop_wal", h.stop_wal);
  w.kv("start_time", format_time(h.start_time_ns));
  w.kv("stop_time", format_time(h.stop_time_ns));
  w.kv("label", h.label);
  w.kv("tablespace_map", !h.tablespace_map.empty());
  w.end_object();
}

std::string hot_text(const catalog::HotBackup& h) {
  std::string s = "  hot: " + std::to_string(h.fuzzy.size()) + " fuzzy file(s)";
  if (h.database == "postgres")
    s += "; PostgreSQL backup mode from " + database::lsn_text(h.start_lsn) + " to " +
         database::lsn_text(h.stop_lsn) + " on timeline " + std::to_string(h.timeline) +
         ", needs WAL " + h.start_wal + " to " + h.stop_wal;
  return s + "\n";
}

// The verdict (engine/monitor/stats.h): "bound_by" as one word, and "verdict" with the evidence.
void verdict_json(util::JsonWriter& w, const engine::Verdict& v) {
  w.kv("bound_by", v.bound_by);
  w.begin_object("verdict");
  w.kv("bound_by", v.bound_by);
  w.kv("stage", v.stage);
  w.begin_object("busy");
  w.kv("read", v.read);
  w.kv("write", v.write);
  w.kv("cpu", v.cpu);
  w.kv("compress", v.compress);
  w.kv("encrypt", v.encrypt);
  w.kv("page_checks", v.page_checks);
  w.kv("throttle", v.throttle);
  w.kv("wait_read", v.wait_read);
  w.kv("wait_write", v.wait_write);
  w.kv("working", v.working);
  w.kv("machine_cpu", v.machine_cpu);
  w.end_object();
  w.kv("evidence", v.evidence);
  if (v.suggestion.empty()) w.kv_null("suggestion");
  else w.kv("suggestion", v.suggestion);
  w.end_object();
}

// The text summary's verdict line.
std::string verdict_text(const engine::Verdict& v) {
  if (v.bound_by == "none") return "";
  return "  bound by " + v.stage + ": " + v.evidence +
         (v.suggestion.empty() ? "" : "; " + v.suggestion) + "\n";
}

namespace {

// The page checks of a backup --check-logical: counts and each corrupt page.
void page_checks_json(util::JsonWriter& w, const engine::BackupSummary& s) {
  if (!s.page_format.empty()) {
    w.kv("check_logical", s.page_format);
    w.kv("pages_checked", s.pages.checked);
    w.kv("pages_retried", s.pages.retried);
    w.kv("pages_recovered", s.pages.recovered);
    w.kv("pages_newer", s.pages.newer);
    w.kv("pages_corrupt", static_cast<uint64_t>(s.pages.corrupt.size()));
    w.begin_array("corrupt");
    for (const auto& c : s.pages.corrupt)
      w.begin_object()
          .kv("file", c.file)
          .kv("block", c.block)
          .kv("offset", c.offset)
          .kv("reason", c.reason)
          .end_object();
    w.end_array();
  }
}

}  // namespace

std::string backup_json(const engine::BackupSummary& s) {
  util::JsonWriter w;
  w.begin_object();
  w.kv("operation", s.validate_only ? "validate" : "backup");
  if (s.validate_only) w.kv_null("backup_id");
  else w.kv("backup_id", s.backup_id);
  w.kv("status", s.status);
  if (!s.error.empty()) w.kv("error", s.error);
  w.kv("files", s.files);
  w.kv("bytes_read", s.bytes_read);
  w.kv("bytes_written", s.bytes_written);
  w.kv("pieces", s.pieces);
  if (s.lock) {
    w.kv("locked_until", format_time(s.lock->until_ns));
    w.kv("lock_mode", storage::retention_mode_name(s.lock->mode));
  }
  if (!s.labelled_volumes.empty()) {
    w.begin_array("labelled_volumes");
    for (const auto& v : s.labelled_volumes)
      w.begin_object().kv("drive", v.drive).kv("volume", v.volume_id).end_object();
    w.end_array();
  }
  if (s.resumed_from) {
    w.begin_object("resumed");
    w.kv("backup_id", s.resumed_from);
    w.kv("files_kept", s.resumed_files);
    w.kv("sections_kept", s.resumed_sections);
    w.kv("bytes_kept", s.resumed_bytes);
    w.begin_array("files_read_again");
    for (const auto& [path, why] : s.resumed_reread)
      w.begin_object().kv("path", path).kv("why", why).end_object();
    w.end_array();
    w.end_object();
  }
  w.kv("elapsed_s", s.elapsed_s);
  w.kv("mb_per_s", util::mb_per_s(s.bytes_read, s.elapsed_s));
  verdict_json(w, s.verdict);
  page_checks_json(w, s);
  alarm_json(w, s);
  w.kv("files_planned", s.files_planned);
  channels_json(w, s.channels_chosen, s.channels_reason);
  w.kv("sets", s.sets);
  w.kv("sections", s.sections);
  w.kv("multiplexing", s.buffers.multiplexing);
  w.kv("buffers", static_cast<uint64_t>(s.buffers.buffers));
  w.kv("buffer_size", static_cast<uint64_t>(s.buffers.buffer_size));
  w.kv("max_piece_size", s.max_piece_size);
  w.kv("checkpoint_bytes", s.checkpoint_bytes);
  w.kv("checkpoint_interval_s", s.checkpoint_interval_s);
  w.kv("section_size", s.section_size);
  w.kv("rate", s.rate);
  w.kv("job_rate", s.job_rate);
  w.kv("effective_rate", s.effective_rate);
  w.kv("deadline_hit", s.deadline_hit);
  w.kv("encryption", s.encryption);
  w.begin_array("changed_files");
  for (const auto& p : s.changed_files) w.value(p);
  w.end_array();
  w.kv("hot", s.hot.has_value());
  if (s.hot) {
    w.begin_array("fuzzy_files");
    for (const auto& p : s.fuzzy_files) w.value(p);
    w.end_array();
    hot_json(w, *s.hot);
  }
  if (s.level >= 0) {
    w.kv("level", static_cast<uint64_t>(s.level));
    w.kv("cumulative", s.cumulative);
    w.kv("change_unit", static_cast<uint64_t>(s.change_unit));
    w.begin_array("parents");
    for (uint64_t p : s.parents) w.value(p);
    w.end_array();
    w.begin_array("file_changes");
    for (const auto& f : s.file_changes) {
      w.begin_object();
      w.kv("path", f.path);
      w.kv("change", f.change);
      w.kv("units_written", f.units_written);
      if (f.parent) w.kv("parent", f.parent);
      if (f.held_by) w.kv("held_by", f.held_by);
      w.end_object();
    }
    w.end_array();
  } else {
    w.kv_null("level");
  }
  w.begin_array("channels");
  for (const auto& c : s.channels) channel_json(w, c);
  w.end_array();
  w.kv("excluded", static_cast<uint64_t>(s.excluded.size()));
  w.begin_array("excluded_paths");
  for (const auto& p : s.excluded) w.value(p);
  w.end_array();
  w.kv("skipped_backed_up", static_cast<uint64_t>(s.skipped_backed_up.size()));
  w.begin_array("skipped_backed_up_paths");
  for (const auto& p : s.skipped_backed_up) w.value(p);
  w.end_array();
  w.begin_array("skipped");
  for (const auto& k : s.skipped) {
    w.begin_object();
    w.kv("path", k.path);
    w.kv("reason", k.why);
    w.end_object();
  }
  w.end_array();
  w.begin_array("warnings");
  for (const auto& m : s.warnings) w.value(m);
  w.end_array();
  w.end_object();
  return w.str();
}

namespace {

// The first line of a backup's (or a source validation's) summary.
std::string backup_headline(const engine::BackupSummary& b) {
  char buf[512];
  if (b.validate_only) {
    std::snprintf(buf, sizeof buf, "validate %s: %llu files, %s read, %.2f s, %.1f MB/s (bound by %s)\n",
                  b.status.c_str(), static_cast<unsigned long long>(b.files),
                  util::format_bytes(b.bytes_read).c_str(), b.elapsed_s,
                  util::mb_per_s(b.bytes_read, b.elapsed_s), b.verdict.bound_by.c_str());
  } else {
    std::snprintf(buf, sizeof buf,
                  "backup %llu %s: %llu files, %s read, %s written, %u pieces, %.2f s, %.1f MB/s "
                  "(bound by %s)\n",
                  static_cast<unsigned long long>(b.backup_id), b.status.c_str(),
                  static_cast<unsigned long long>(b.files), util::format_bytes(b.bytes_read).c_str(),
                  util::format_bytes(b.bytes_written).c_str(), b.pieces, b.elapsed_s,
                  util::mb_per_s(b.bytes_read, b.elapsed_s), b.verdict.bound_by.c_str());
  }
  return buf;
}

}  // namespace

std::string backup_text(const engine::BackupSummary& b) {
  std::string s = backup_headline(b) + alarm_text(b);
  char buf[512];
  if (b.lock)
    s += "  pieces locked until " + format_time(b.lock->until_ns) + " (" +
         storage::retention_mode_name(b.lock->mode) + " mode)\n";
  for (const auto& v : b.labelled_volumes) {
    std::snprintf(buf, sizeof buf, "  labelled the blank volume in %s as %s\n",
                  escape_text(v.drive).c_str(), escape_text(v.volume_id).c_str());
    s += buf;
  }
  if (b.resumed_from) {
    std::snprintf(buf, sizeof buf,
                  "  resumed: %llu whole files and %llu sections (%s) kept from before the "
                  "interruption\n",
                  static_cast<unsigned long long>(b.resumed_files),
                  static_cast<unsigned long long>(b.resumed_sections),
                  util::format_bytes(b.resumed_bytes).c_str());
    s += buf;
  }
  if (!b.excluded.empty())
    s += "  excluded: " + std::to_string(b.excluded.size()) +
         " path(s) matched an exclusion pattern (a directory with all below it), not backed up\n";
  if (!b.skipped_backed_up.empty())
    s += "  skipped: " + std::to_string(b.skipped_backed_up.size()) +
         " file(s) held as they are by a backup begun since the given time: this "
         "backup does not hold them\n";
  if (b.hot) s += hot_text(*b.hot);
  s += verdict_text(b.verdict);
  s += channels_text(b.channels_reason, b.channels_chosen);
  if (!b.page_format.empty()) {
    std::snprintf(buf, sizeof buf,
                  "  pages (%s): %llu checked, %llu read again (%llu valid then), %llu changed "
                  "since the backup began, %zu corrupt\n",
                  b.page_format.c_str(), static_cast<unsigned long long>(b.pages.checked),
                  static_cast<unsigned long long>(b.pages.retried),
                  static_cast<unsigned long long>(b.pages.recovered),
                  static_cast<unsigned long long>(b.pages.newer), b.pages.corrupt.size());
    s += buf;
    for (const auto& c : b.pages.corrupt)
      s += "  corrupt: " + escape_text(c.file) + " block " + std::to_string(c.block) +
           " (offset " + std::to_string(c.offset) + "): " + c.reason + "\n";
  }
  std::snprintf(buf, sizeof buf,
                "  %u sets (%u sections), multiplexing %u, %zu x %s buffers per channel%s%s\n",
                b.sets, b.sections, b.buffers.multiplexing, b.buffers.buffers,
                util::format_bytes(b.buffers.buffer_size).c_str(),
                b.rate > 0 || b.job_rate > 0 ? ", rate-limited" : "",
                b.deadline_hit ? ", stopped at the deadline" : "");
  s += buf;
  if (b.encryption != "none") s += "  encrypted with " + b.encryption + "\n";
  if (b.level >= 0) {
    uint64_t n[4] = {0, 0, 0, 0}, units = 0;
    for (const auto& f : b.file_changes) {
      n[f.change == "new" ? 0 : f.change == "changed" ? 1 : f.change == "unchanged" ? 2 : 3]++;
      units += f.units_written;
    }
    std::string parents;
    for (uint64_t p : b.parents) parents += (parents.empty() ? "" : ", ") + std::to_string(p);
    std::snprintf(buf, sizeof buf,
                  "  level %d%s, change unit %s: %llu new (whole), %llu changed, %llu unchanged, "
                  "%llu skipped (held by earlier backups) files; %llu units written; parents: %s\n",
                  b.level, b.cumulative ? " cumulative" : "",
                  util::format_bytes(b.change_unit).c_str(), static_cast<unsigned long long>(n[0]),
                  static_cast<unsigned long long>(n[1]), static_cast<unsigned long long>(n[2]),
                  static_cast<unsigned long long>(n[3]),
                  static_cast<unsigned long long>(units), parents.empty() ? "none" : parents.c_str());
    s += buf;
  }
  for (const auto& c : b.channels) {
    std::snprintf(buf, sizeof buf,
                  "  channel %u [%s%s]: %llu files, %s read, %s written, %.2f s: reading %.2f s, "
                  "writing %.2f s, waiting %.2f s (throttled %.2f s), cpu %.2f s\n",
                  c.channel, c.io_engine.c_str(), c.direct_source ? ", O_DIRECT" : "",
                  static_cast<unsigned long long>(c.files),
                  util::format_bytes(c.bytes_read).c_str(),
                  util::format_bytes(c.bytes_written).c_str(), c.elapsed_s, c.read_busy_s,
                  c.write_busy_s, c.wait_s, c.throttle_s, c.cpu_s);
    s += buf;
    if (c.bytes_compressed_in > 0) {
      std::string levels;
      for (const auto& [level, bytes] : c.level_bytes)
        levels += (levels.empty() ? "" : ", ") + (level ? std::to_string(level) : "none") + " (" +
                  std::to_string(bytes * 100 / c.bytes_compressed_in) + "%)";
      std::snprintf(buf, sizeof buf,
                    "    compressed %s -> %s (%.2f : 1) in %.2f s cpu, zstd level %s\n",
                    util::format_bytes(c.bytes_compressed_in).c_str(),
                    util::format_bytes(c.bytes_compressed_out).c_str(),
                    c.bytes_compressed_out
                        ? static_cast<double>(c.bytes_compressed_in) /
                              static_cast<double>(c.bytes_compressed_out)
                        : 0.0,
                    c.compress_s, levels.c_str());
      s += buf;
    }
    if (c.pages_checked > 0) {
      std::snprintf(buf, sizeof buf,
                    "    pages: %llu checked (%.1f MB/s), %llu read again, %llu corrupt, in %.2f s "
                    "cpu\n",
                    static_cast<unsigned long long>(c.pages_checked),
                    util::mb_per_s(c.bytes_read, c.elapsed_s),
                    static_cast<unsigned long long>(c.pages_retried),
                    static_cast<unsigned long long>(c.pages_corrupt), c.page_check_s);
      s += buf;
    }
    if (c.encrypt_s > 0) {
      std::snprintf(buf, sizeof buf, "    sealed with AES-256-GCM in %.2f s cpu\n", c.encrypt_s);
      s += buf;
    }
    for (const auto& g : c.backends) s += group_text(g);
  }
  for (const auto& k : b.skipped)
    s += "  skipped '" + escape_text(k.path) + "': " + escape_text(k.why) + "\n";
  for (const auto& m : b.warnings) s += "  warning: " + escape_text(m) + "\n";
  if (!b.error.empty()) s += "error: " + escape_text(b.error) + "\n";
  return s;
}

std::string format_time(int64_t ns) { return util::format_time_ns(ns); }

void outcome_lists_json(util::JsonWriter& w, const std::vector<engine::Fallback>& fallbacks,
                        const std::vector<std::string>& warnings,
                        const std::vector<std::string>& errors) {
  w.begin_array("fallbacks");
  for (const auto& f : fallbacks)
    w.begin_object()
        .kv("file", f.file)
        .kv("from_backup", f.from_backup)
        .kv("backup_id", f.used_backup)
        .kv("reason", f.reason)
        .end_object();
  w.end_array();
  w.begin_array("warnings");
  for (const auto& e : warnings) w.value(e);
  w.end_array();
  w.begin_array("errors");
  for (const auto& e : errors) w.value(e);
  w.end_array();
}

std::string restore_json(const engine::RestoreSummary& s) {
  util::JsonWriter w;
  w.begin_object();
  w.kv("operation", s.verify_only ? "validate" : "restore");
  w.kv("status", s.status);
  w.kv("files", s.files);
  w.kv("bytes", s.bytes);
  w.kv("piece_bytes_read", s.piece_bytes_read);
  if (!s.verify_only) w.kv("bytes_written", s.bytes_written());
  channels_json(w, s.channels_chosen, s.channels_reason);
  if (s.delta.used) {
    w.begin_object("delta");
    w.kv("files_compared", s.delta.files);
    w.kv("unchanged", s.delta.unchanged);
    w.kv("updated", s.delta.updated);
    w.kv("restored_whole", s.delta.whole);
    w.kv("bytes_compared", s.delta.bytes_compared);
    w.kv("bytes_differing", s.delta.bytes_differing);
    w.kv("undo_bytes", s.delta.undo_bytes);
    w.kv("compare_s", s.delta.compare_s);
    w.end_object();
  }
  if (!s.media_pieces.empty()) {
    // Named for the one kind of removable media there is.
    w.kv("tape_bytes_read", s.media_bytes_read);
    w.begin_array("tape_pieces");
    for (const auto& p : s.media_pieces) w.value(p);
    w.end_array();
  }
  if (s.verify_only) {
    w.begin_object("check");
    w.kv("mode", s.check_mode);
    w.kv("frames_total", s.frames_total);
    w.kv("frames_selected", s.frames_selected);
    w.kv("frames_checked", s.frames_checked);
    w.kv("deadline_hit", s.deadline_hit);
    w.kv("pieces_audited", s.pieces_audited);
    w.begin_array("backups");
    for (const auto& fc : s.frame_checks) {
      w.begin_object();
      w.kv("id", fc.backup_id);
      w.kv("frames_checked", fc.frames_checked);
      w.kv("frames_failed", fc.frames_failed);
      if (fc.full_check_ns) w.kv("last_full_check", format_time(fc.full_check_ns));
      else w.kv_null("last_full_check");
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.kv("elapsed_s", s.elapsed_s);
  w.kv("mb_per_s", util::mb_per_s(s.bytes, s.elapsed_s));
  verdict_json(w, s.verdict);
  w.begin_array("backups");
  for (auto id : s.backups_used) w.begin_object().kv("id", id).kv("backup_id", id).end_object();
  w.end_array();
  w.begin_array("channels");
  for (const auto& c : s.channels) channel_json(w, c);
  w.end_array();
  outcome_lists_json(w, s.fallbacks, s.warnings, s.errors);
  w.end_object();
  return w.str();
}

std::string restore_text(const engine::RestoreSummary& r) {
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s %s: %llu files, %s, %.2f s, %.1f MB/s (bound by %s)\n",
                r.verify_only ? "validate" : "restore", r.status.c_str(),
                static_cast<unsigned long long>(r.files), util::format_bytes(r.bytes).c_str(),
                r.elapsed_s, util::mb_per_s(r.bytes, r.elapsed_s), r.verdict.bound_by.c_str());
  s += buf;
  s += verdict_text(r.verdict);
  s += channels_text(r.channels_reason, r.channels_chosen);
  if (r.verify_only && r.check_mode != "full") {
    std::snprintf(buf, sizeof buf,
                  "  checked (%s): %llu of %llu data frames (%llu selected)%s; pieces not walked "
                  "whole\n",
                  r.check_mode.c_str(), static_cast<unsigned long long>(r.frames_checked),
                  static_cast<unsigned long long>(r.frames_total),
                  static_cast<unsigned long long>(r.frames_selected),
                  r.deadline_hit ? ", the rest left for the next run (--max-duration)" : "");
    s += buf;
  }
  if (r.delta.used) {
    const uint64_t written = r.bytes_written();
    std::snprintf(buf, sizeof buf,
                  "  delta: %llu existing files compared (%s read in %.2f s): %llu unchanged, "
                  "%llu updated (%s written, %s of old bytes saved first), %llu restored whole\n",
                  static_cast<unsigned long long>(r.delta.files),
                  util::format_bytes(r.delta.bytes_compared).c_str(), r.delta.compare_s,
                  static_cast<unsigned long long>(r.delta.unchanged),
                  static_cast<unsigned long long>(r.delta.updated),
                  util::format_bytes(written).c_str(),
                  util::format_bytes(r.delta.undo_bytes).c_str(),
                  static_cast<unsigned long long>(r.delta.whole));
    s += buf;
  }
  for (const auto& c : r.channels) {
    std::snprintf(buf, sizeof buf,
                  "  channel %u [%s%s]: %llu files, %s read from pieces, %.2f s: reading %.2f s, "
                  "writing %.2f s, waiting %.2f s, cpu %.2f s\n",
                  c.channel, c.io_engine.c_str(), c.direct_sink ? ", O_DIRECT" : "",
                  static_cast<unsigned long long>(c.files),
                  util::format_bytes(c.bytes_read).c_str(), c.elapsed_s, c.read_busy_s,
                  c.write_busy_s, c.wait_s, c.cpu_s);
    s += buf;
    for (const auto& g : c.backends) s += group_text(g);
  }
  for (const auto& w : r.warnings) s += "warning: " + escape_text(w) + "\n";
  for (const auto& e : r.errors) s += "error: " + escape_text(e) + "\n";
  return s;
}

}  // namespace stripeback::cli
