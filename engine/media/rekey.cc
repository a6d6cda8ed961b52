#include "engine/media/rekey.h"

#include "engine/media/catalog_seal.h"

#include <random>

#include "engine/media/media_ops.h"
#include "engine/media/rekey_piece.h"
#include "engine/pieces/key_wraps.h"
#include "engine/transform/crypto.h"
#include "util/clock.h"
#include "util/crash_point.h"

namespace stripeback::engine {
namespace {

// A piece of the catalog to rekey: every piece of every backup that has not failed (a
// failed backup's pieces were removed).
struct Recorded {
  const catalog::Backup* backup;
  const catalog::PieceRecord* piece;
};

std::vector<Recorded> recorded_pieces(const std::vector<catalog::Backup>& backups) {
  std::vector<Recorded> out;
  for (const auto& b : backups) {
    if (b.ended && b.end.status == catalog::BackupStatus::failed) continue;
    for (const auto& p : b.pieces) out.push_back({&b, &p});
  }
  return out;
}

uint64_t random_id() {
  std::random_device rd;
  uint64_t id = 0;
  while (id == 0) id = (uint64_t{rd()} << 32) | rd();
  return id;
}

// Before anything is written: every encrypted piece that can be read must open with the
// old key or (done by an earlier run) the new one; else the keys are wrong. Returns how
// many open with the old key: those are the work.
Result<size_t> check_keys(std::vector<Result<RekeyTarget>>& targets, Keyring& old_keys,
                          Keyring& new_keys) {
  size_t work = 0;
  for (auto& t : targets) {
    if (!t || t->header.cipher == Cipher::none) continue;
    auto k = old_keys.open_data_key(t->header, t->path);
    if (k) ++work;
    if (k || k.error().code != Errc::wrong_key) continue;
    auto n = new_keys.open_data_key(t->header, t->path);
    if (n || n.error().code != Errc::wrong_key) continue;
    return k.error();
  }
  return work;
}

}  // namespace

const char* rekey_outcome_name(RekeyOutcome o) {
  switch (o) {
    case RekeyOutcome::rewrapped: return "rewrapped";
    case RekeyOutcome::catalog_only: return "catalog_only";
    case RekeyOutcome::old_format: return "old_format";
    case RekeyOutcome::already: return "already";
    case RekeyOutcome::unencrypted: return "unencrypted";
    case RekeyOutcome::failed: return "failed";
  }
  return "failed";
}

uint32_t RekeyReport::count(RekeyOutcome o) const {
  uint32_t n = 0;
  for (const auto& p : pieces) n += p.outcome == o;
  return n;
}

namespace {
// Compacts the catalog sealed anew under `new_keys` (which also leaves out superseded
// wraps); a failure is reported, not fatal: the rekey itself is done.
void reseal(catalog::Catalog& cat, Keyring& new_keys, RekeyReport& rep) {
  auto fresh = new_keys.new_catalog_seal(rep.kek_version);
  if (!fresh) {
    rep.compact_error = fresh.error().what;
    return;
  }
  catalog::CompactOptions co;
  co.reseal = fresh->second;
  co.reseal_params = fresh->first;
  util::crash_point("rekey-before-reseal");
  if (auto c = cat.compact(co); c) {
    rep.superseded_removed = c->records_before > c->records_after ? c->records_before - c->records_after : 0;
    rep.catalog_resealed = true;
  } else {
    rep.compact_error = c.error().what;
  }
}
}  // namespace

Result<RekeyReport> run_rekey(catalog::Catalog& cat, Keyring& old_keys, Keyring& new_keys,
                              const RekeyOptions& o) {
  if (old_keys.same_secret(new_keys))
    return fail(Errc::invalid_argument, "the new key is the old one: nothing to rekey");
  SB_ASSIGN(MaintenanceLock lock, MaintenanceLock::acquire(cat));
  SB_TRY(cat.refresh());
  // The seal: verified with the key it is under (the old one; the new one when a rekey
  // finished sealing anew already), and sealed anew under the new key once done.
  bool sealed_with_old = true;
  if (!cat.seal_attached()) {
    auto a = attach_catalog_key(cat, old_keys);
    if (!a && a.error().code == Errc::wrong_key && cat.sealed()) {
      SB_TRY(attach_catalog_key(cat, new_keys));
      sealed_with_old = false;
    } else if (!a) {
      return a.error();
    }
  }
  SB_TRY(check_catalog_trust(cat));
  const auto backups = cat.backups();
  const auto wraps = catalog_wraps(cat);
  old_keys.set_catalog_wraps(wraps);
  new_keys.set_catalog_wraps(wraps);

  RekeyReport rep;
  const auto pending = cat.pending_rekeys();
  rep.resumed = !pending.empty();
  rep.kek_version = rep.resumed ? pending.back().kek_version : cat.kek_version() + 1;
  const int64_t now = util::wall_now_ns();
  const auto pieces = recorded_pieces(backups);
  std::vector<Result<RekeyTarget>> targets;
  for (const auto& r : pieces) targets.push_back(read_rekey_target(*r.backup, *r.piece, now));
  SB_ASSIGN(const size_t work, check_keys(targets, old_keys, new_keys));
  // Nothing opens with the old key and no rekey is unfinished: done already (the same
  // command run twice), and nothing is written.
  const bool nothing = work == 0 && !rep.resumed;

  if (o.dry_run || nothing) {
    for (size_t i = 0; i < pieces.size(); ++i) {
      RekeyedPiece p{pieces[i].backup->id, pieces[i].piece->name, pieces[i].piece->location,
                     RekeyOutcome::failed, ""};
      if (!targets[i]) {
        p.detail = targets[i].error().what;
      } else if (targets[i]->header.cipher == Cipher::none) {
        p.outcome = RekeyOutcome::unencrypted;
      } else if (nothing || !old_keys.open_data_key(targets[i]->header, targets[i]->path)) {
        p.outcome = RekeyOutcome::already;
      } else {
        p.outcome = targets[i]->rewritable          ? RekeyOutcome::rewrapped
                    : has_key_slots(targets[i]->header) ? RekeyOutcome::catalog_only
                                                        : RekeyOutcome::old_format;
        p.detail = targets[i]->why_not;
      }
      rep.pieces.push_back(std::move(p));
    }
    if (nothing) {
      rep.kek_version = cat.kek_version();
      rep.finished = rep.count(RekeyOutcome::failed) == 0;
      // Killed after the done record, before the catalog was sealed anew: finish that.
      if (rep.finished && !o.dry_run && sealed_with_old && cat.sealed())
        reseal(cat, new_keys, rep);
    }
    return rep;
  }

  SB_TRY(new_keys.start_job());
  if (rep.resumed) {
    rep.rekey_id = pending.back().id;
  } else {
    catalog::Rekey intent{random_id(), false, now, rep.kek_version};
    SB_TRY(cat.add_rekey(intent));
    rep.rekey_id = intent.id;
    util::crash_point("rekey-intent-recorded");
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!targets[i]) {
      rep.pieces.push_back({pieces[i].backup->id, pieces[i].piece->name,
                            pieces[i].piece->location, RekeyOutcome::failed,
                            targets[i].error().what});
      continue;
    }
    rep.pieces.push_back(
        rekey_piece(cat, *targets[i], old_keys, new_keys, rep.kek_version, rep.rekey_id));
  }
  if (rep.count(RekeyOutcome::failed) == 0) {
    catalog::Rekey done{rep.rekey_id, true, util::wall_now_ns(), rep.kek_version,
                        rep.count(RekeyOutcome::rewrapped), rep.count(RekeyOutcome::catalog_only),
                        rep.count(RekeyOutcome::old_format), 0};
    SB_TRY(cat.add_rekey(done));
    rep.finished = true;
    util::crash_point("rekey-done-recorded");
    // A sealed catalog is compacted and sealed anew under the new key: the old key
    // verifies nothing after a rekey.
    if (cat.sealed()) {
      reseal(cat, new_keys, rep);
    } else if (rep.kek_version > 2) {
      // Version 2 is the first rekey's: before it no KeyWrap record was written.
      if (auto c = cat.compact(); c)
        rep.superseded_removed = c->records_before - c->records_after;
      else
        rep.compact_error = c.error().what;
    }
  }
  return rep;
}

}  // namespace stripeback::engine
