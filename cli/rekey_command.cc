#include "cli/rekey_command.h"

#include <cstdio>

#include "cli/job_flags.h"
#include "engine/media/rekey.h"
#include "util/escape.h"
#include "util/json.h"

namespace stripeback::cli {
namespace {

// Adds the three ways of naming one key; `prefix` is "" for the old key, "new-" for the new.
void add_key_source(CLI::App* app, engine::KeySource& k, const std::string& prefix,
                    const std::string& which) {
  auto* pf = app->add_option("--" + prefix + "passphrase-file", k.passphrase_file,
                             "file whose first line is the " + which + " passphrase");
  auto* pe = app->add_option("--" + prefix + "passphrase-env", k.passphrase_env,
                             "environment variable holding the " + which + " passphrase");
  auto* kf = app->add_option("--" + prefix + "key-file", k.key_file,
                             "file holding the " + which + " 256-bit key");
  pf->excludes(pe)->excludes(kf);
  pe->excludes(kf);
}

void print_json(const engine::RekeyReport& r, bool dry_run) {
  using engine::RekeyOutcome;
  util::JsonWriter w;
  w.begin_object();
  w.kv("operation", "rekey");
  w.kv("dry_run", dry_run);
  if (r.rekey_id) w.kv("rekey_id", r.rekey_id);
  w.kv("kek_version", static_cast<uint64_t>(r.kek_version));
  w.kv("resumed", r.resumed);
  w.kv("finished", r.finished);
  w.kv("superseded_records_removed", r.superseded_removed);
  w.kv("catalog_resealed", r.catalog_resealed);
  if (!r.compact_error.empty()) w.kv("compact_error", r.compact_error);
  for (auto o : {RekeyOutcome::rewrapped, RekeyOutcome::catalog_only, RekeyOutcome::old_format,
                 RekeyOutcome::already, RekeyOutcome::unencrypted, RekeyOutcome::failed})
    w.kv(engine::rekey_outcome_name(o), static_cast<uint64_t>(r.count(o)));
  w.begin_array("pieces");
  for (const auto& p : r.pieces) {
    w.begin_object();
    w.kv("backup_id", p.backup_id);
    w.kv("name", p.name);
    w.kv("location", p.location);
    w.kv("outcome", engine::rekey_outcome_name(p.outcome));
    if (!p.detail.empty()) w.kv("detail", p.detail);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  std::printf("%s\n", w.str().c_str());
}

void print_text(const engine::RekeyReport& r, bool dry_run) {
  using engine::RekeyOutcome;
  const char* would = dry_run ? "would be " : "";
  for (const auto& p : r.pieces) {
    const std::string name = util::escape_text(p.name);
    const std::string why = util::escape_text(p.detail);
    switch (p.outcome) {
      case RekeyOutcome::catalog_only:
        std::printf("catalog only: piece %s of backup %llu %srewrapped in the catalog only (%s)\n",
                    name.c_str(), static_cast<unsigned long long>(p.backup_id), would, why.c_str());
        break;
      case RekeyOutcome::old_format:
        std::printf("needs a rewrite: piece %s of backup %llu: %s; the new key opens it through "
                    "the catalog, the old key still opens the piece itself\n",
                    name.c_str(), static_cast<unsigned long long>(p.backup_id), why.c_str());
        break;
      case RekeyOutcome::failed:
        std::printf("failed: piece %s of backup %llu: %s\n", name.c_str(),
                    static_cast<unsigned long long>(p.backup_id), why.c_str());
        break;
      default:
        break;
    }
  }
  std::printf("%s%u piece(s) %srewrapped in place, %u in the catalog only, %u of an old format, "
              "%u already done, %u not encrypted, %u failed; key version %u%s\n",
              dry_run ? "dry run: " : "", r.count(RekeyOutcome::rewrapped), would,
              r.count(RekeyOutcome::catalog_only), r.count(RekeyOutcome::old_format),
              r.count(RekeyOutcome::already), r.count(RekeyOutcome::unencrypted),
              r.count(RekeyOutcome::failed), r.kek_version,
              dry_run       ? ""
              : r.finished ? (r.resumed ? " (an interrupted rekey finished)" : "")
                           : "; unfinished: run it again with the same keys");
  if (r.superseded_removed > 0)
    std::printf("catalog compacted: %llu record(s) of earlier rekeys (wraps under retired keys) "
                "removed\n", static_cast<unsigned long long>(r.superseded_removed));
  if (r.catalog_resealed)
    std::printf("catalog sealed anew under key version %u: the old key verifies nothing\n",
                r.kek_version);
  if (!r.compact_error.empty())
    std::fprintf(stderr, "warning: the rekey is done, but the catalog could not be compacted "
                 "(%s): the wraps of earlier rekeys, under retired keys, stay in catalog.log "
                 "until `stripeback catalog compact` succeeds\n",
                 util::escape_text(r.compact_error).c_str());
}

}  // namespace

void add_rekey_flags(CLI::App* rekey, CommonFlags& c, RekeyFlags& f) {
  add_key_source(rekey, f.old_key, "", "current");
  add_key_source(rekey, f.new_key, "new-", "new");
  rekey->add_flag("--dry-run", f.dry_run, "say what would be rewrapped; change nothing");
  add_common(rekey, c);
}

int run_rekey_cmd(const CommonFlags& c, const RekeyFlags& f) {
  if (f.old_key.empty() || f.new_key.empty())
    return report(Error{Errc::invalid_argument, 0,
                        "rekey needs the current key (--key-file, --passphrase-file or "
                        "--passphrase-env) and the new one (--new-key-file, "
                        "--new-passphrase-file or --new-passphrase-env)"});
  auto old_keys = engine::Keyring::load(f.old_key);
  if (!old_keys) return report(old_keys.error());
  auto new_keys = engine::Keyring::load(f.new_key);
  if (!new_keys) return report(new_keys.error().wrap("new key"));
  // The engine verifies the catalog's seal with the key it is sealed with, old or new.
  auto cat = open_catalog(c, catalog::Create::no, SealUse::unattached);
  if (!cat) return report(cat.error());
  engine::RekeyOptions o;
  o.dry_run = f.dry_run;
  auto rep = engine::run_rekey(**cat, **old_keys, **new_keys, o);
  if (!rep) return report(rep.error());
  if (c.json) print_json(*rep, f.dry_run);
  else print_text(*rep, f.dry_run);
  for (const auto* k : {&**old_keys, &**new_keys})
    for (const auto& w : k->warnings()) std::fprintf(stderr, "warning: %s\n", w.c_str());
  return rep->finished || f.dry_run ? kExitOk : kExitFailed;
}

}  // namespace stripeback::cli
