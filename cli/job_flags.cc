#include "cli/job_flags.h"

#include <CLI/CLI.hpp>
#include <string>

#include "options/schema.h"

namespace stripeback::cli {
namespace {

// Live progress and the status file (docs/monitoring.md): backup, restore, validate.
void add_progress(CLI::App* app, CommonFlags& c) {
  app->add_option("--progress", c.progress,
                  "draw the job's progress on stderr, redrawn a few times a second and "
                  "cleared at the end: auto (when stderr is a terminal, the default), always, "
                  "never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->group("Monitoring");
  app->add_flag("--progress-json{-}", c.progress_json,
                "write one JSON status line per second (the fields of `stripeback status "
                "--json`) to stderr, or with =FILE to FILE")
      ->option_text("[=FILE]")
      ->group("Monitoring");
  app->add_option("--status-listen", c.status_listen,
                  "serve GET /status (JSON) and GET /metrics (Prometheus) while the job runs, "
                  "on a Unix socket path or [HOST:]PORT (HOST 127.0.0.1 unless given)")
      ->option_text("ADDR")
      ->group("Monitoring");
  app->add_option("--hang-after", c.hang_after,
                  "call the job stalled in `stripeback status` when it makes no progress for "
                  "this many seconds (default 60)")
      ->check(CLI::Range(1.0, 86400.0 * 7))
      ->group("Monitoring");
}

// One flag of the schema, bound to a slot of `f` that apply() reads after the parse.
void add_schema_flag(CLI::App* app, JobFlags& f, const options::Option& o) {
  auto& b = f.bound.emplace_back();
  b.option = &o;
  const std::string name(o.flag);
  const std::string help(o.help);
  CLI::Option* opt = nullptr;
  if (o.type == options::Type::flag) {
    opt = app->add_flag(name, b.on, help);
  } else if (!o.cli_bare.empty()) {
    opt = app->add_flag(name + "{" + std::string(o.cli_bare) + "}", b.value, help);
  } else if (o.type == options::Type::list) {
    opt = app->add_option(name, b.values, help);
    if (name.starts_with("--")) opt->allow_extra_args(false);
    if (o.cli_delimiter != 0) opt->delimiter(o.cli_delimiter);
  } else {
    opt = app->add_option(name, b.value, help);
  }
  // The value's name, and the default when one is worth showing: "N [2]".
  std::string text(o.placeholder);
  if (!o.default_text.empty()) {
    opt->default_str(std::string(o.default_text));
    text += (text.empty() ? "[" : " [") + std::string(o.default_text) + "]";
  }
  if (!text.empty()) opt->option_text(text);
  if (!o.group.empty()) opt->group(std::string(o.group));
  if (o.cli_required) opt->required();
  b.flag = opt;
}

// The schema's options of one job, in its order; the monitoring and output flags after.
void add_job_options(CLI::App* app, JobFlags& f, options::Jobs job) {
  for (const auto& o : options::schema())
    if ((o.jobs & job) != 0 && !o.flag.empty()) add_schema_flag(app, f, o);
}

}  // namespace

Result<void> JobFlags::apply() {
  for (const auto& b : bound) {
    if (b.flag->count() == 0) continue;
    const options::Option& o = *b.option;
    if (o.type == options::Type::flag) {
      SB_TRY(options::set_option(o, settings, (b.on != o.cli_inverted) ? "true" : "false"));
    } else if (o.type == options::Type::list) {
      o.reset(settings);
      for (const auto& v : b.values) SB_TRY(options::set_option(o, settings, v));
    } else {
      SB_TRY(options::set_option(o, settings, b.value));
    }
  }
  return ok();
}

void add_common(CLI::App* app, CommonFlags& c) {
  app->add_option("--catalog", c.catalog,
                  "catalog directory (default: $STRIPEBACK_CATALOG, else "
                  "$XDG_STATE_HOME/stripeback or ~/.local/state/stripeback)");
  app->add_flag("--json", c.json, "print the result as one JSON document on stdout");
}

void add_key_flags(CLI::App* app, KeyFlags& k, const std::string& of) {
  auto* pf = app->add_option("--passphrase-file", k.passphrase_file,
                             "file whose first line is the passphrase " + of);
  auto* pe = app->add_option("--passphrase-env", k.passphrase_env,
                             "environment variable holding the passphrase " + of);
  auto* kf = app->add_option("--key-file", k.key_file, "key file " + of);
  pf->excludes(pe)->excludes(kf);
  pe->excludes(kf);
}

void add_catalog_key_flags(CLI::App* app, CommonFlags& c) {
  add_key_flags(app, c.keys,
                "of the catalog's seal (default: the catalog's configured key; see "
                "docs/security.md)");
}

void add_backup_flags(CLI::App* backup, JobFlags& f, CommonFlags& common, NfsFlags& nfs_flags) {
  add_job_options(backup, f, options::kBackup);
  add_common(backup, common);
  add_progress(backup, common);
  add_nfs_flags(backup, nfs_flags);
}

void add_restore_flags(CLI::App* restore, JobFlags& f, CommonFlags& common, NfsFlags& nfs_flags) {
  add_job_options(restore, f, options::kRestore);
  restore->add_option("--tape-spool", f.tape_spool,
                      "accepted for old scripts and ignored: pieces on tape are read straight "
                      "from the tape, with no spool")
      ->group("Tape");
  add_common(restore, common);
  add_progress(restore, common);
  add_nfs_flags(restore, nfs_flags);
}

void add_validate_flags(CLI::App* validate, JobFlags& f, CommonFlags& common) {
  add_job_options(validate, f, options::kValidate);
  add_common(validate, common);
  add_progress(validate, common);
}

}  // namespace stripeback::cli
