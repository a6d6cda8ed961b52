#include "cli/commands.h"
#include "cli/render.h"
#include "cli/progress_view.h"
#include "engine/wiring/backends.h"
#include "cli/tape_commands.h"
#include "cli/report_commands.h"

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
#include "engine/backup/backup_job.h"
#include "engine/backup/buffer_budget.h"
#include "engine/transform/compress.h"
#include "engine/transform/crypto.h"
#include "cli/demo_data.h"
#include "engine/history/job_history.h"
#include "engine/format/piece_name.h"
#include "engine/restore/restore_job.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/json.h"
#include "util/units.h"

namespace stripeback::cli {

static Result<engine::Checkpoints> parse_checkpoint_interval(const std::string& spec) {
  engine::Checkpoints c;
  if (spec.empty()) return c;  // the defaults
  if (spec == "off") return engine::Checkpoints{0, std::chrono::milliseconds(0)};
  c = engine::Checkpoints{0, std::chrono::milliseconds(0)};
  bool size_given = false, time_given = false;
  size_t at = 0;
  while (at <= spec.size()) {
    size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    const std::string part = spec.substr(at, comma - at);
    at = comma + 1;
    const bool is_time = !part.empty() && (part.find(':') != std::string::npos ||
                                           part.back() == 's' || part.back() == 'm' ||
                                           part.back() == 'h');
    const bool is_size = !is_time && util::parse_size(part).has_value();
    if (is_time && !time_given) {
      SB_ASSIGN(c.interval, util::parse_duration(part, "--checkpoint-interval"));
      time_given = true;
    } else if (is_size && !size_given) {
      SB_ASSIGN(c.bytes, util::parse_size(part));
      size_given = true;
    } else {
      return fail(Errc::invalid_argument,
                  "invalid --checkpoint-interval '" + spec +
                      "': expected a size (1G), a time (5m, 00:05), both (1G,5m) or off");
    }
  }
  return c;
}

int exit_code_for(const Error& e) {
  switch (e.code) {
    case Errc::invalid_argument:
    case Errc::not_found:
    case Errc::exists:
      return kExitUsage;
    case Errc::wrong_key:
      return kExitWrongKey;
    default:
      return kExitFailed;
  }
}

int report(const Error& e) {
  print_error(e.what);
  return exit_code_for(e);
}

Result<std::unique_ptr<catalog::Catalog>> open_catalog(const CommonFlags& c, catalog::Create create) {
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
  return cat;
}

std::string catalog_dir_of(const CommonFlags& c) {
  return c.catalog.empty() ? default_catalog_dir() : c.catalog;
}

namespace {

Result<std::shared_ptr<engine::Keyring>> load_keys(const KeyFlags& k) {
  engine::KeySource src{k.passphrase_file, k.passphrase_env, k.key_file};
  return engine::Keyring::load(src);
}

Result<std::optional<size_t>> buffer_size_of(const CommonFlags& c) {
  if (!c.buffer_size) return std::optional<size_t>();
  auto v = util::parse_size(*c.buffer_size);
  if (!v) return v.error().wrap("--buffer-size");
  SB_TRY(engine::check_buffer_overrides(std::nullopt, *v));
  return std::optional<size_t>(*v);
}

Result<engine::ChannelConfig> channel_config(const CommonFlags& c) {
  engine::ChannelConfig cfg;
  if (c.buffers) cfg.buffers = *c.buffers;
  SB_ASSIGN(auto size, buffer_size_of(c));
  if (size) cfg.buffer_size = *size;
  cfg.direct = c.no_direct ? io::Direct::no : io::Direct::yes;
  return cfg;
}

// Refuses, as bad usage, I/O buffers that would take more memory than a job may have
// (engine::buffer_memory_limit), naming the flags that set them and the total.
Result<void> check_buffer_memory(const CommonFlags& c, uint32_t channels, uint64_t per_channel,
                                 bool compressing) {
  uint64_t physical = 0;
  uint64_t limit = engine::buffer_memory_limit(&physical);
  uint64_t total = per_channel * channels;
  if (total <= limit) return ok();
  std::string given = "--buffers " + (c.buffers ? std::to_string(*c.buffers) : "(default)") +
                      ", --buffer-size " + c.buffer_size.value_or("(default)");
  std::string why = physical ? "half of this machine's " + util::format_bytes(physical) +
                                   " of memory, and at most " +
                                   util::format_bytes(engine::kMaxBufferMemory)
                             : "the most any job may have";
  return fail(Errc::invalid_argument,
              "I/O buffers would take " + util::format_bytes(total) + ": " +
                  util::format_bytes(per_channel) + " per channel (" + given +
                  (compressing ? ", doubled by --compress" : "") + ") x " +
                  std::to_string(channels) + " channel(s) (--channels), above the limit of " +
                  util::format_bytes(limit) + " (" + why +
                  "); lower --buffers, --buffer-size or --channels");
}

// A size flag: empty means not given (0).
Result<uint64_t> size_flag(const std::string& text, const char* flag) {
  if (text.empty()) return uint64_t{0};
  auto v = util::parse_size(text);
  if (!v) return v.error().wrap(flag);
  if (*v == 0) return fail(Errc::invalid_argument, std::string(flag) + " must be above zero");
  return *v;
}

}  // namespace

void print_error(const std::string& message) {
  std::fprintf(stderr, "stripeback: %s\n", util::escape_text(message).c_str());
}

std::string default_catalog_dir() {
  if (const char* e = std::getenv("STRIPEBACK_CATALOG"); e && *e) return e;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/stripeback";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/state/stripeback";
  return "";
}

namespace {

// Every backup flag checked and turned into engine options before anything is opened or
// written (the catalog included): bad usage leaves no trace.
Result<engine::BackupOptions> backup_options(const CommonFlags& c, const BackupFlags& f) {
  engine::BackupOptions o;
  SB_ASSIGN(o.channel, channel_config(c));
  o.sources = f.sources;
  o.one_file_system = f.one_file_system;
  o.skip_unreadable = f.skip_unreadable;
  o.destination = f.to;
  o.tag = f.tag;
  o.channels = f.channels;
  if (c.buffers) o.buffers = *c.buffers;
  SB_ASSIGN(o.buffer_size, buffer_size_of(c));
  o.files_per_set = f.files_per_set;
  o.channel.max_open_files = f.max_open_files;
  SB_ASSIGN(o.channel.max_piece_size, size_flag(f.max_piece_size, "--max-piece-size"));
  SB_ASSIGN(o.section_size, size_flag(f.section_size, "--section-size"));
  SB_ASSIGN(uint64_t rate, size_flag(f.rate, "--rate"));
  SB_ASSIGN(uint64_t job_rate, size_flag(f.job_rate, "--job-rate"));
  o.channel.rate = static_cast<double>(rate);
  o.job_rate = static_cast<double>(job_rate);
  if (!f.duration.empty()) {
    SB_ASSIGN(auto d, util::parse_duration(f.duration, "--duration"));
    if (d < std::chrono::seconds(1))
      return fail(Errc::invalid_argument, "--duration must be at least one second");
    o.duration = std::chrono::ceil<std::chrono::seconds>(d);
  }
  SB_ASSIGN(auto checkpoint, parse_checkpoint_interval(f.checkpoint_interval));
  o.channel.checkpoint_bytes = checkpoint.bytes;
  o.channel.checkpoint_interval = checkpoint.interval;
  o.partial = f.partial;
  o.minimize_load = f.minimize_load;
  if ((f.partial || f.minimize_load) && f.duration.empty())
    return fail(Errc::invalid_argument, "--partial and --minimize-load need --duration");
  SB_ASSIGN(int level, engine::parse_compress(f.compress));
  o.channel.compress_level = level;
  SB_ASSIGN(auto tape, tape_backup_options(f));
  if (tape) {
    o.media = std::move(*tape);
    o.channels = static_cast<uint32_t>(o.media->drives.size());
  }
  if (f.cpu_budget) {
    if (level != engine::kCompressAuto)
      return fail(Errc::invalid_argument, "--cpu-budget needs --compress auto");
    if (!(*f.cpu_budget > 0) || *f.cpu_budget > 1024)
      return fail(Errc::invalid_argument,
                  "--cpu-budget must be a number of cores above 0 (e.g. 0.5 or 1.5)");
    o.channel.cpu_budget = *f.cpu_budget / o.channels;
  }
  o.level = f.level;
  o.cumulative = f.cumulative;
  o.require_parent = f.require_parent;
  o.optimize = f.optimize;
  o.force = f.force;
  o.validate_only = f.validate;
  if (f.validate && !f.to_all.empty())
    return fail(Errc::invalid_argument, "backup --validate writes nothing: it takes no --to");
  if (!f.validate && f.to_all.empty())
    return fail(Errc::invalid_argument,
                "backup needs --to DIR or tape:URL (or --validate to read and check the "
                "sources without writing)");
  if (!f.check_logical.empty()) o.check_logical = f.check_logical;
  o.max_corrupt = f.max_corrupt;
  if (!f.resume.empty()) {
    if (f.resume == "last") {
      o.resume = 0;
    } else if (f.resume.find_first_not_of("0123456789") == std::string::npos && f.resume.size() < 19) {
      o.resume = std::stoull(f.resume);
      if (*o.resume == 0) return fail(Errc::invalid_argument, "--resume: backup ids start at 1");
    } else {
      return fail(Errc::invalid_argument, "--resume takes a backup id or 'last', not '" + f.resume + "'");
    }
  }
  if (!f.page_size.empty()) {
    SB_ASSIGN(uint64_t ps, size_flag(f.page_size, "--page-size"));
    if (ps > 65536) return fail(Errc::invalid_argument, "--page-size must be at most 32K");
    o.page_size = static_cast<uint32_t>(ps);
  }
  if (!f.change_unit.empty()) {
    if (!f.level) return fail(Errc::invalid_argument, "--change-unit needs --level");
    SB_ASSIGN(uint64_t unit, size_flag(f.change_unit, "--change-unit"));
    if (unit > engine::kMaxChangeUnit)
      return fail(Errc::invalid_argument,
                  "--change-unit must be a power of two from 8 KiB to 1 MiB");
    o.change_unit = static_cast<uint32_t>(unit);
  }
  SB_ASSIGN(o.keys, load_keys(f.keys));
  if (f.encrypt && !o.keys)
    return fail(Errc::invalid_argument,
                "--encrypt needs --passphrase-file, --passphrase-env or --key-file");
  if (!f.encrypt && o.keys)
    return fail(Errc::invalid_argument,
                "a passphrase or key was given without --encrypt: add --encrypt to encrypt "
                "this backup");
  bool compressing = level != 0;
  SB_TRY(check_buffer_memory(
      c, o.channels,
      engine::backup_channel_buffer_bytes(o.buffers, o.buffer_size, compressing, o.validate_only),
      compressing));
  return o;
}

}  // namespace

int run_backup_cmd(const CommonFlags& c, const BackupFlags& f, const std::atomic<bool>& cancel) {
  auto opts = backup_options(c, f);
  if (!opts) return report(opts.error());
  engine::BackupOptions& o = *opts;
  o.cancel = &cancel;
  auto cat = open_catalog(c, catalog::Create::yes);
  if (!cat) return report(cat.error());
  ProgressView view(c, f.validate ? "validate" : "backup", f.tag, (*cat)->dir());
  if (!view.error().empty()) return report(Error{Errc::invalid_argument, 0, view.error()});
  o.progress = view.progress();
  const int64_t started = util::wall_now_ns();
  auto sum = engine::run_backup(o, **cat);
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
  if (!sum->changed_files.empty()) {
    print_error("backup " + id + " is complete, but " +
                std::to_string(sum->changed_files.size()) +
                " file(s) changed while they were read, e.g. '" + sum->changed_files.front() +
                "': their copies may be inconsistent");
    return kExitChanged;
  }
  return kExitOk;
}

// validate --sample, --seed, --part, --max-duration.
Result<engine::FrameSelection> frame_selection(const RestoreFlags& f) {
  engine::FrameSelection s;
  if (!f.sample.empty()) {
    std::string t = f.sample;
    if (t.back() == '%') t.pop_back();
    char* end = nullptr;
    errno = 0;
    const double pct = t.empty() ? 0 : std::strtod(t.c_str(), &end);
    if (t.empty() || errno != 0 || end != t.c_str() + t.size() || !(pct > 0) || pct > 100)
      return fail(Errc::invalid_argument, "--sample wants a share above 0 and at most 100%, "
                                          "like 10%; got '" + f.sample + "'");
    s.sample = pct / 100;
    s.seed = f.seed ? *f.seed : std::random_device{}() * uint64_t{0x100000000} + std::random_device{}();
  } else if (f.seed) {
    return fail(Errc::invalid_argument, "--seed goes with --sample");
  }
  if (!f.part.empty()) {
    unsigned k = 0, n = 0;
    char extra = 0;
    if (std::sscanf(f.part.c_str(), "%u/%u%c", &k, &n, &extra) != 2 || n == 0 || k == 0 ||
        k > n || n > 1000000)
      return fail(Errc::invalid_argument, "--part wants K/N with 1 <= K <= N <= 1000000, like "
                                          "2/7; got '" + f.part + "'");
    s.part = k;
    s.parts = n;
  }
  if (!f.max_duration.empty()) {
    SB_ASSIGN(s.max_duration, util::parse_duration(f.max_duration, "--max-duration"));
  }
  return s;
}

int run_restore_cmd(const CommonFlags& c, const RestoreFlags& f, const std::atomic<bool>& cancel) {
  auto cfg = channel_config(c);
  if (!cfg) return report(cfg.error());
  if (auto m = check_buffer_memory(
          c, f.channels, engine::restore_channel_buffer_bytes(cfg->buffers, cfg->buffer_size),
          false);
      !m)
    return report(m.error());
  auto cat = open_catalog(c, catalog::Create::no);
  if (!cat) return report(cat.error());
  engine::RestoreOptions o;
  o.target = f.to;
  if (!f.tag.empty()) o.tag = f.tag;
  o.backup_id = f.backup;
  o.paths = f.paths;
  o.channels = f.channels;
  o.force = f.force;
  o.delta = f.delta;
  if (f.delta && f.force)
    return report(Error{Errc::invalid_argument, 0,
                        "--delta and --force are alternatives: --delta updates existing files "
                        "in place, --force replaces them whole"});
  o.fallback = !f.no_fallback;
  if (f.no_fallback && f.allow_fallback)
    return report(Error{Errc::invalid_argument, 0,
                        "--no-fallback and --allow-fallback exclude each other"});
  o.verify_only = f.verify_only;
  o.channel = *cfg;
  o.cancel = &cancel;
  auto keys = load_keys(f.keys);
  if (!keys) return report(keys.error());
  o.keys = *keys;
  o.media_drives = f.tape_drives;
  if (auto sel = frame_selection(f); !sel) return report(sel.error());
  else o.select = *sel;
  ProgressView view(c, f.verify_only ? "validate" : "restore", f.tag, (*cat)->dir());
  if (!view.error().empty()) return report(Error{Errc::invalid_argument, 0, view.error()});
  o.progress = view.progress();
  const int64_t started = util::wall_now_ns();
  auto sum = engine::run_restore(o, **cat);
  view.finished(sum ? sum->verdict.bound_by : "");
  const engine::JobSpan span{started, util::wall_now_ns(), f.tag, cancel.load()};
  record_job(**cat, sum ? engine::restore_job_record(*sum, span)
                        : engine::failed_job_record(f.verify_only ? "validate" : "restore",
                                                    sum.error().what, span));
  if (!sum) return report(sum.error());
  if (o.keys)
    for (const auto& w : o.keys->warnings()) spdlog::warn("{}", w);
  if (c.json) std::printf("%s\n", restore_json(*sum).c_str());
  else std::fputs(restore_text(*sum).c_str(), stdout);
  if (sum->status != "complete") {
    for (const auto& e : sum->errors) print_error(e);
    return kExitFailed;
  }
  // Older data than asked for is not a plain success for a script checking the exit code.
  if (!sum->fallbacks.empty() && !f.allow_fallback && !f.verify_only) return kExitFellBack;
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

}  // namespace

int run_list_cmd(const CommonFlags& c, const ListFlags& f) {
  auto cat = open_catalog(c, catalog::Create::no);
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
  if (f.corrupt) return list_corrupt(c, **cat);
  auto backups = (*cat)->backups();
  if (f.backup) {
    auto it = std::find_if(backups.begin(), backups.end(),
                           [&](const catalog::Backup& b) { return b.id == *f.backup; });
    if (it == backups.end())
      return report(Error{Errc::not_found, 0,
                          "backup " + std::to_string(*f.backup) + " is not in the catalog"});
    if (f.files) return list_files(c, *it);
    backups = {*it};
  } else if (f.files) {
    return report(Error{Errc::invalid_argument, 0, "list --files needs --backup ID"});
  }
  if (c.json) {
    std::printf("%s\n", list_json(**cat, f.backup).c_str());
    return kExitOk;
  }
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
  for (const auto& b : backups) {
    if (!b.damage.empty())
      std::printf("backup %llu is damaged: %s\n", static_cast<unsigned long long>(b.id),
                  util::escape_text(b.damage).c_str());
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
  return kExitOk;
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
