#!/usr/bin/env python3
"""Kill harness: SIGKILLs backups (plain, level 0 and 1, resumed), restores (plain and
delta), validates, deletions, compactions and catalog rebuilds at random moments and at
every named crash point, all into one catalog and one destination, and checks after each
what a crash must never leave behind. See docs/reliability.md.

Invariants checked:
  * the catalog opens (`stripeback list` exits 0) after every kill;
  * a backup whose process was killed is listed `incomplete`, unless the kill landed after
    its end record was durable; no backup is ever `failed` or `damaged`, and no backup's
    status changes once its process has gone;
  * every `complete` backup lists as many files as it was given, validates, and restores
    byte-identical (content, size, mode, mtime) to its source as it was at that backup;
  * a killed restore leaves no file under its final name with wrong content, and a second
    restore into its target (--force) removes its temporaries and restores everything;
  * a killed `backup --resume last` leaves its backup complete or still incomplete, and
    a resume run after it completes it; a resume of a backup with a level is refused;
  * a killed `delete obsolete|expired` leaves each backup as it was, `deleting` or gone, and
    a rerun leaves none `deleting`; the newest complete backup is never obsolete;
  * a killed `catalog compact` changes no backup; a killed `catalog rebuild` into a fresh
    catalog is finished by a rerun, whose complete backups restore identical;
  * a killed `restore --delta` leaves each file under its name either as it was or as the
    backup has it, and the next delta restore gives exactly the backup's files (others
    left alone) with no leftovers;
  * every piece in the destination belongs to a backup the catalog knows;
  * a fresh backup at the end succeeds, restores identical and leaves a clean log.

Exit 0 when every invariant held, 1 otherwise (each violation printed with the seed);
77 (skipped) with less than 2 GiB free, or when crash points were asked for and the binary
was built without test hooks (STRIPEBACK_TEST_HOOKS=OFF).
"""

import argparse
import collections
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rel_util as ru  # noqa: E402

BACKUP_KINDS = ("plain", "compress-encrypt", "multiplex", "sectioned")
LEVEL_KINDS = ("level0", "level1")  # `--level 0|1`; never resumed

# The operations of the random loops and their weights (--ops picks among them). Backups,
# restores and validates keep roughly their old shares of the mix among themselves.
OPS = {"backup": 30, "level": 10, "resume": 8, "restore": 17, "delta": 8, "validate": 9,
       "delete": 8, "compact": 5, "rebuild": 5}

# Crash points a backup reaches (docs/reliability.md), each run for every backup kind; a
# count of 2 reaches the second piece or the second catalog append (the first piece record).
BACKUP_POINTS = ("piece-written:1", "piece-written:2", "piece-synced:1", "piece-synced:2",
                 "catalog-written:1", "catalog-synced:1", "catalog-written:2",
                 "catalog-synced:2", "catalog-tail-saved", "backup-pieces-recorded",
                 "backup-files-recorded", "backup-ended")
RESTORE_POINTS = ("restore-file-synced:1", "restore-file-synced:3", "restore-file-renamed:1",
                  "restore-file-renamed:3")
TORN_TAIL = b"SBC1\x07\x00\x00\x00\xde\xad"  # the start of a record header, cut short
# Crash points of the other operations, run once each after the ones above.
LEVEL_POINTS = ("piece-synced:1", "backup-files-recorded")
# A resume appends its Resume record first (catalog-synced:1), then one record per piece.
RESUME_POINTS = ("catalog-synced:1", "piece-synced:1", "backup-pieces-recorded", "backup-ended")
DELTA_POINTS = ("delta-undo-synced:1", "delta-file-renamed:1", "delta-block-written:1")
DELETE_POINTS = (("obsolete", "delete-intent-recorded"), ("obsolete", "delete-pieces-removed"),
                 ("expired", "delete-intent-recorded"), ("expired", "delete-pieces-removed"))
COMPACT_POINTS = ("catalog-compact-written", "catalog-compact-renamed")
REBUILD_POINTS = ("catalog-written:1", "catalog-synced:1")  # its one append


SKIPPED = 77  # ctest's SKIP_RETURN_CODE: not enough room to run
KEEP_UNFINISHED = 2  # killed backups whose unfinished pieces stay in the destination


def piece_owner(name):
    """The backup id in a piece name (`sb<id>-...`), or None."""
    try:
        return int(name[2:name.index("-")])
    except ValueError:
        return None


class Harness:
    """One epoch: a source, a catalog and a destination, and what happened to them.
    `counts` and `stages` are shared by the epochs of a run."""

    def __init__(self, sb, work, rng, seed, counts, stages):
        self.work = work
        self.sb = sb
        self.rng = rng
        self.seed = seed
        self.src = os.path.join(work, "src")
        self.pieces = os.path.join(work, "pieces")
        self.cat = os.path.join(work, "cat")
        self.key = os.path.join(work, "key")
        self.restores = os.path.join(work, "restores")
        self.snapshots = {}   # backup id -> source snapshot at that backup
        self.kinds = {}       # backup id -> kind
        self.statuses = {}    # backup id -> status once its process has gone
        self.killed = set()   # ids of backups whose process was killed
        self.estimate = {}    # operation -> seconds it takes when left alone
        self.failures = []
        self.counts = counts
        self.stages = stages  # where the random kills landed
        self.low_space = False
        self.serial = 0
        self.torn = b""  # torn bytes at the end of the log that no append has cut yet

    # Reporting ----------------------------------------------------------------------------
    def fail(self, what, result=None):
        msg = f"INVARIANT VIOLATED (seed {self.seed}): {what}"
        if result is not None:
            msg += "\n" + result.describe()
        print(msg, flush=True)
        self.failures.append(what)

    def log(self, text):
        print(text, flush=True)

    # Catalog --------------------------------------------------------------------------------
    def list_backups(self, context, changing=(), deleting=False):
        """The catalog's backups, checked: `changing` names backups whose status may move
        on (a resume), `deleting` allows `deleting` (a deletion under way)."""
        r = self.sb.run(["list", "--catalog", self.cat, "--json"])
        if r.returncode != 0:
            self.fail(f"the catalog does not open after {context}", r)
            return {}, r
        try:
            doc = json.loads(r.out)
        except ValueError:
            self.fail(f"`list --json` printed no JSON after {context}", r)
            return {}, r
        backups = {b["id"]: b for b in doc["backups"]}
        # A kill must leave nothing the next load takes for damage (a record naming a
        # backup it cannot find, a record that does not add up), listed backup or not.
        if "damaged" in r.err:
            self.fail(f"the catalog reports damage after {context}", r)
        for bid, b in backups.items():
            st = b["status"]
            allowed = ("complete", "incomplete") + (("deleting",) if deleting else ()) + (
                ("expired",) if self.statuses.get(bid) == "expired" else ())
            if st not in allowed:
                self.fail(f"backup {bid} is {st} after {context}", r)
            elif st == "deleting" or bid in changing:
                pass
            elif bid in self.statuses and self.statuses[bid] != st:
                self.fail(f"backup {bid} changed from {self.statuses[bid]} to {st} after "
                          f"{context}", r)
            if st == "complete" and bid in self.snapshots and b["files"] != len(
                    self.snapshots[bid]):
                self.fail(f"complete backup {bid} lists {b['files']} files, it was given "
                          f"{len(self.snapshots[bid])}", r)
        return backups, r

    def complete_ids(self, kinds=None):
        return sorted(b for b, st in self.statuses.items()
                      if st == "complete" and (kinds is None or self.kinds[b] in kinds))

    def expected_for(self, backup_id):
        """What a restore of `backup_id` (None: the default choice) must produce."""
        if backup_id is not None:
            return self.snapshots[backup_id]
        out = {}
        for bid in reversed(self.complete_ids()):
            for path, snap in self.snapshots[bid].items():
                out.setdefault(path, snap)
        return out

    # Operations ------------------------------------------------------------------------------
    def backup_args(self, kind):
        args = ["backup", self.src, "--to", self.pieces, "--catalog", self.cat, "--json",
                "--channels", "2"]
        if kind == "compress-encrypt":
            args += ["--compress", "low", "--encrypt", "--key-file", self.key]
        elif kind == "multiplex":
            args += ["--files-per-set", "3", "--max-open-files", "2", "--max-piece-size", "2M"]
        elif kind == "sectioned":
            args += ["--section-size", "1M"]
        elif kind in LEVEL_KINDS:
            args += ["--level", kind[-1]]
        return args

    def forget(self, bid):
        for d in (self.snapshots, self.kinds, self.statuses):
            d.pop(bid, None)
        self.killed.discard(bid)

    def launch(self, op, args, kill_after=None, env=None):
        """Runs a command; kills it after `kill_after` seconds if it is still running."""
        p = self.sb.start(args, env)
        if kill_after is not None:
            try:
                p.wait(timeout=kill_after)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
        r = self.sb.finish(p)
        if r.signal == signal.SIGKILL:
            self.counts["kills"] += 1
        elif kill_after is not None and env is None:
            self.counts["finished_first"] += 1
        if r.returncode == 0:
            old = self.estimate.get(op, r.elapsed)
            self.estimate[op] = 0.7 * old + 0.3 * r.elapsed
        return r

    def rerun(self, op, args):
        """Runs an operation again after its kill; how long it took calibrates the next
        kills of that operation."""
        r = self.sb.run(args)
        if r.returncode == 0:
            old = self.estimate.get(op, r.elapsed)
            self.estimate[op] = 0.7 * old + 0.3 * r.elapsed
        return r

    def kill_delay(self, op):
        return self.rng.uniform(0.0, self.estimate.get(op, 0.5))

    def backup(self, kind, kill_after=None, env=None, expect_status=None):
        before = {}
        if os.path.exists(self.cat):  # the first backup creates the catalog
            before, _ = self.list_backups("the previous operation")
        snap = ru.snapshot(self.src)
        r = self.launch("backup-" + kind, self.backup_args(kind), kill_after, env)
        what = f"backup {kind}" + (f" with STRIPEBACK_CRASH_AT={env['STRIPEBACK_CRASH_AT']}"
                                   if env else "")
        after, lr = self.list_backups(what)
        new = sorted(set(after) - set(before))
        killed = r.signal == signal.SIGKILL
        if r.returncode != 0 and not killed:
            self.fail(f"{what} failed", r)
        if len(new) > 1:
            self.fail(f"{what} added {len(new)} backups to the catalog: {new}", lr)
        if not new:
            if not killed:
                self.fail(f"{what} ended without a backup in the catalog", r)
            elif not env:
                self.stages["backup: before its begin record"] += 1
            return None, r, "not begun"
        bid = new[0]
        st = after[bid]["status"]
        if killed and not env:
            self.stages["backup: " + ("after its end record" if st == "complete" else
                                      "with piece records" if after[bid]["pieces"] else
                                      "begun, no piece record")] += 1
        self.snapshots[bid] = snap
        self.kinds[bid] = kind
        self.statuses[bid] = st
        if killed:
            self.killed.add(bid)
        elif st != "complete":
            self.fail(f"{what} exited {r.returncode} but backup {bid} is {st}", r)
        if expect_status and st != expect_status:
            self.fail(f"{what}: backup {bid} is {st}, expected {expect_status}", lr)
        return bid, r, st

    def new_target(self):
        self.serial += 1
        return os.path.join(self.restores, f"r{self.serial}")

    def restore(self, backup_id, kill_after=None, env=None, min_final=0, min_temps=0):
        target = self.new_target()
        failures = len(self.failures)
        args = ["restore", "--to", target, "--catalog", self.cat, "--key-file", self.key]
        if backup_id is not None:
            args += ["--backup", str(backup_id)]
        expected = self.expected_for(backup_id)
        r = self.launch("restore", args, kill_after, env)
        what = f"restore of backup {backup_id if backup_id is not None else '(default)'}"
        if env:
            what += f" with STRIPEBACK_CRASH_AT={env['STRIPEBACK_CRASH_AT']}"
        if r.signal == signal.SIGKILL:
            if os.path.isdir(target):
                for bad in ru.wrong_final_files(expected, target):
                    self.fail(f"killed {what} left a wrong file under its final name: {bad}")
                files, temps = ru.restored_files(target)
                self.counts["temp_files_left"] += len(temps)
                if not env:
                    self.stages["restore: " + ("no file in place" if not files else
                                               "all files in place" if len(files) == len(
                                                   expected) else "some files in place")] += 1
                if len(files) < min_final or len(temps) < min_temps:
                    self.fail(f"killed {what}: {len(files)} files under their final name and "
                              f"{len(temps)} temporary files; at least {min_final} and "
                              f"{min_temps} expected at this point")
            elif min_final or min_temps:
                self.fail(f"killed {what}: no restore target was made")
            elif not env:
                self.stages["restore: before the target was made"] += 1
            outcome = "killed"
            if os.path.isdir(target):
                outcome += ", then " + self.restore_again(args, expected, target, what)
        elif r.returncode != 0:
            self.fail(f"{what} failed", r)
            outcome = "failed"
        else:
            for p in ru.compare_tree(expected, target):
                self.fail(f"{what}: {p}")
            outcome = f"restored {len(expected)} files"
        self.list_backups(what)
        self.settle_target(target, failures)
        return r, outcome

    def settle_target(self, target, failures):
        """Keeps a restore target for inspection when checks on it failed, else removes it."""
        if len(self.failures) > failures:
            self.log(f"restore target kept for inspection: {target}")
        else:
            shutil.rmtree(target, ignore_errors=True)

    def restore_again(self, args, expected, target, what):
        """A restore into the target of a killed one (with --force: some files may be in
        place) removes the killed one's temporaries and journal and restores everything."""
        r = self.sb.run(args + ["--force"])
        if r.returncode != 0:
            self.fail(f"a restore into the target of the killed {what} failed", r)
            return "restore again failed"
        problems = ru.compare_tree(expected, target)
        for p in problems:
            self.fail(f"a restore into the target of the killed {what}: {p}")
        self.counts["restored_again"] += 1
        return "restored again" if not problems else "restored again wrong"

    def validate(self, backup_id, kill_after=None):
        args = ["validate", "--catalog", self.cat, "--key-file", self.key]
        if backup_id is not None:
            args += ["--backup", str(backup_id)]
        r = self.launch("validate", args, kill_after)
        what = f"validate of backup {backup_id if backup_id is not None else '(default)'}"
        if r.signal != signal.SIGKILL and r.returncode != 0:
            self.fail(f"{what} failed", r)
        self.list_backups(what)
        if r.signal == signal.SIGKILL:
            self.stages["validate"] += 1
        return r, "killed" if r.signal == signal.SIGKILL else f"exit {r.returncode}"

    def crash_suffix(self, env):
        return f" with STRIPEBACK_CRASH_AT={env['STRIPEBACK_CRASH_AT']}" if env else ""

    def resume(self, kill_after=None, env=None):
        """`backup --resume last` with the sources, destination and flags of the backup it
        resumes (the newest incomplete one). Returns (backup id, result, outcome), or None
        when no backup is incomplete."""
        incomplete = [b for b, st in self.statuses.items() if st == "incomplete"]
        if not incomplete:
            return None
        bid = max(incomplete)
        kind = self.kinds[bid]
        args = self.backup_args(kind) + ["--resume", "last"]
        what = f"backup --resume last of backup {bid} ({kind}){self.crash_suffix(env)}"
        before, _ = self.list_backups("the previous operation")
        snap = ru.snapshot(self.src)
        if kind in LEVEL_KINDS:  # refused, and nothing changes: never killed
            r = self.sb.run(args)
            after, lr = self.list_backups(what)
            if r.returncode == 0 or r.signal:
                self.fail(f"{what} was not refused (backups with a level are not resumed)", r)
            if set(after) != set(before):
                self.fail(f"the refused {what} changed the backups: {sorted(before)} -> "
                          f"{sorted(after)}", lr)
            return bid, r, "refused (it has a level)"
        self.snapshots[bid] = snap  # a resume backs up the source as it is now
        r = self.launch("resume", args, kill_after, env)
        killed = r.signal == signal.SIGKILL
        after, lr = self.list_backups(what, changing={bid})
        if set(after) - set(before):
            self.fail(f"{what} added backups {sorted(set(after) - set(before))}", lr)
        st = after.get(bid, {}).get("status")
        if not killed and (r.returncode != 0 or st != "complete"):
            self.fail(f"{what} exited {r.returncode}, backup {bid} is {st}", r)
        if killed and not env:
            self.stages["resume: " + ("completed" if st == "complete" else "still incomplete")] += 1
        outcome = "killed" if killed else f"exit {r.returncode}"
        if killed and st == "incomplete":
            # Still resumable: a resume now finishes it.
            r2 = self.rerun("resume", args)
            after, lr = self.list_backups(f"a resume after the killed {what}", changing={bid})
            st = after.get(bid, {}).get("status")
            if r2.returncode != 0 or st != "complete":
                self.fail(f"a resume after the killed {what} exited {r2.returncode}, backup "
                          f"{bid} is {st}", r2)
            else:
                self.counts["resumed_again"] += 1
                outcome += ", resumed again"
        if st is not None:
            self.statuses[bid] = st
        return bid, r, f"{outcome}, backup {bid} {st}"

    def expire_one(self):
        """Removes a piece of the oldest complete backup without a level (none depends on
        it) that is not the newest, and has `crosscheck` mark it expired. Returns its id."""
        ids = self.complete_ids(BACKUP_KINDS)
        if len(ids) < 2 or ids[0] == self.complete_ids()[-1]:
            return None
        bid = ids[0]
        backups, _ = self.list_backups("choosing a backup to expire")
        pieces = backups.get(bid, {}).get("piece_list", [])
        if not pieces:
            return None
        victim = self.rng.choice(pieces)
        os.unlink(os.path.join(victim["location"], victim["name"]))
        r = self.sb.run(["crosscheck", "--catalog", self.cat])
        self.statuses[bid] = "expired"
        after, lr = self.list_backups(f"crosscheck after removing piece {victim['name']}")
        if after.get(bid, {}).get("status") != "expired":
            self.fail(f"crosscheck did not expire backup {bid} after its piece "
                      f"{victim['name']} was removed", r)
        return bid

    def delete(self, which, kill_after=None, env=None):
        """`delete obsolete|expired`, killed or not; a killed one is run again, which must
        finish what it left `deleting`."""
        before, _ = self.list_backups("the previous operation")
        newest = self.complete_ids()[-1:]
        args = ["delete", which, "--catalog", self.cat]
        what = f"delete {which}{self.crash_suffix(env)}"
        r = self.launch("delete", args, kill_after, env)
        killed = r.signal == signal.SIGKILL
        after, lr = self.list_backups(what, deleting=True)
        if not killed and r.returncode != 0:
            self.fail(f"{what} failed", r)
        pending = sorted(b for b, x in after.items() if x["status"] == "deleting")
        gone = sorted(set(before) - set(after))
        if pending and not killed:
            self.fail(f"{what} exited {r.returncode} leaving backups {pending} deleting", lr)
        if killed and not env:
            self.stages["delete: " + ("nothing begun" if not pending and not gone else
                                      "some deleting" if pending else "done")] += 1
        outcome = f"{'killed' if killed else 'exit ' + str(r.returncode)}, gone {gone}, " \
                  f"deleting {pending}"
        if killed:
            r2 = self.rerun("delete", args)
            after, lr = self.list_backups(f"a rerun of the killed {what}", deleting=True)
            left = sorted(b for b, x in after.items() if x["status"] == "deleting")
            if r2.returncode != 0 or left:
                self.fail(f"a rerun of the killed {what} exited {r2.returncode} leaving "
                          f"backups {left} deleting", r2)
            for b in pending:
                if b in after:
                    self.fail(f"backup {b}, deleting after the killed {what}, is still there "
                              f"after a rerun", lr)
            gone = sorted(set(before) - set(after))
            outcome += f", rerun: gone {gone}"
            self.counts["deletes_rerun"] += 1
        for b in gone:
            if which == "obsolete" and b in newest:
                self.fail(f"{what} deleted backup {b}, the newest complete one", lr)
            if which == "expired" and self.statuses.get(b) != "expired":
                self.fail(f"{what} deleted backup {b}, which was {self.statuses.get(b)}", lr)
            self.forget(b)
        self.counts["backups_deleted"] += len(gone)
        return r, outcome

    def compact(self, kill_after=None, env=None):
        before, _ = self.list_backups("the previous operation")
        args = ["catalog", "compact", "--catalog", self.cat]
        what = f"catalog compact{self.crash_suffix(env)}"
        r = self.launch("compact", args, kill_after, env)
        killed = r.signal == signal.SIGKILL
        if not killed and r.returncode != 0:
            self.fail(f"{what} failed", r)
        after, lr = self.list_backups(what)
        if set(after) != set(before):
            self.fail(f"{what} changed the backups: {sorted(before)} -> {sorted(after)}", lr)
        outcome = "killed" if killed else f"exit {r.returncode}"
        if killed:
            if not env:
                self.stages["compact"] += 1
            r2 = self.rerun("compact", args)
            if r2.returncode != 0:
                self.fail(f"a compaction after the killed {what} failed", r2)
            after, lr = self.list_backups(f"a compaction after the killed {what}")
            if set(after) != set(before):
                self.fail(f"a compaction after the killed {what} changed the backups", lr)
            outcome += ", compacted again"
        return r, outcome

    def rebuild(self, fresh, kill_after=None, env=None):
        """`catalog rebuild --from <pieces>` into a new catalog (or into the catalog itself,
        which knows every backup there). A killed one is run again; then every complete
        backup is complete in the new catalog and one of them restores identical from it."""
        self.serial += 1
        into = os.path.join(self.work, f"rebuilt{self.serial}") if fresh else self.cat
        args = ["catalog", "rebuild", "--from", self.pieces, "--catalog", into,
                "--key-file", self.key, "--json"]
        what = f"catalog rebuild into {'a new catalog' if fresh else 'the catalog'}" + \
            self.crash_suffix(env)
        before, _ = self.list_backups("the previous operation")
        r = self.launch("rebuild", args, kill_after, env)
        killed = r.signal == signal.SIGKILL
        if not killed and r.returncode != 0:
            self.fail(f"{what} failed", r)
        if killed and not env:
            self.stages["rebuild"] += 1
        outcome = "killed" if killed else f"exit {r.returncode}"
        if not fresh:
            after, lr = self.list_backups(what)
            if set(after) != set(before):
                self.fail(f"{what} changed the backups: {sorted(before)} -> {sorted(after)}",
                          lr)
            return r, outcome
        if killed:
            r2 = self.rerun("rebuild", args)
            outcome += ", rebuilt again"
            if r2.returncode != 0:
                self.fail(f"a rebuild after the killed {what} failed", r2)
        lr = self.sb.run(["list", "--catalog", into, "--json"])
        try:
            rebuilt = {b["id"]: b for b in json.loads(lr.out)["backups"]}
        except (ValueError, KeyError):
            self.fail(f"the catalog made by {what} does not list", lr)
            return r, outcome + ", does not list"
        ids = self.complete_ids()
        for b in ids:
            got = rebuilt.get(b, {})
            if got.get("status") != "complete" or got.get("files") != len(self.snapshots[b]):
                self.fail(f"complete backup {b} ({len(self.snapshots[b])} files) is "
                          f"{got.get('status', 'missing')} with {got.get('files')} files in "
                          f"the catalog made by {what}", lr)
        if ids:  # one of them, through the rebuilt catalog
            b = self.rng.choice(ids)
            target = self.new_target()
            rr = self.sb.run(["restore", "--to", target, "--catalog", into, "--key-file",
                              self.key, "--backup", str(b)])
            problems = ru.compare_tree(self.snapshots[b], target) if rr.returncode == 0 else [
                "exit " + str(rr.returncode)]
            for p in problems:
                self.fail(f"backup {b} restored from the catalog made by {what}: {p}", rr)
            if not problems:
                shutil.rmtree(target, ignore_errors=True)
            outcome += f", {len(rebuilt)} backups, backup {b} restored from it"
        if not self.failures:
            shutil.rmtree(into, ignore_errors=True)
        self.counts["rebuilds_checked"] += 1
        return r, outcome

    def delta_restore(self, kill_after=None, env=None, same=False):
        """`restore --delta` of a complete backup into a target holding an older backup or a
        modified copy. Killed, each file under its name must be as it was or as the backup
        has it; the next delta restore must give exactly the backup's files (others left
        alone) and remove what the killed one left."""
        ids = self.complete_ids()
        if not ids:
            return None
        # Over the same backup or the one before: backups far apart differ in every
        # block, and a file that differs that much is restored whole, not updated in place.
        at = self.rng.randrange(len(ids))
        new = ids[at]
        old = new if same or at == 0 or self.rng.random() < 0.5 else ids[at - 1]
        target = self.new_target()
        failures = len(self.failures)
        r0 = self.sb.run(["restore", "--to", target, "--catalog", self.cat, "--key-file",
                          self.key, "--backup", str(old)])
        if r0.returncode != 0:
            self.fail(f"a restore of backup {old} before a delta restore failed", r0)
            return r0, "restore failed"
        if same:  # one page: that file is updated in place
            touch_page(target, self.rng)
        elif old == new or self.rng.random() < 0.5:
            ru.mutate(target, self.rng)
            touch_page(target, self.rng)
        was = {orig: snap for orig, snap in ru.snapshot(target).items()}
        was = {orig[len(target):]: snap for orig, snap in was.items()}
        want = self.snapshots[new]
        args = ["restore", "--delta", "--to", target, "--catalog", self.cat, "--key-file",
                self.key, "--backup", str(new)]
        what = f"delta restore of backup {new} over backup {old}{self.crash_suffix(env)}"
        r = self.launch("delta", args, kill_after, env)
        killed = r.signal == signal.SIGKILL
        if killed:
            files, temps = ru.restored_files(target)
            for orig, p in sorted(files.items()):
                size, digest = os.lstat(p).st_size, ru.file_digest(p)
                versions = [v for v in (was.get(orig), want.get(orig)) if v]
                # Content only: an unchanged file gets its mode and mtime back in place.
                if not any(v[0] == size and v[3] == digest for v in versions):
                    self.fail(f"killed {what} left {orig} neither as it was nor as the backup "
                              f"has it")
            if not env:
                self.stages["delta restore: " + ("no temporary file" if not temps else
                                                 "temporary files left")] += 1
            self.counts["temp_files_left"] += len(temps)
            last = self.rerun("delta", args)
            outcome = "killed, then restored again"
        else:
            last = r
            outcome = "restored" if r.returncode == 0 else "failed"
        if last.returncode != 0:
            self.fail(f"{what}{' (the one after the kill)' if killed else ''} failed", last)
        else:
            expected = dict(was)
            expected.update(want)  # files the backup does not hold are left alone
            for p in ru.compare_tree(expected, target):
                self.fail(f"{what}{': the restore after the kill' if killed else ''}: {p}")
        self.counts["delta_restores"] += 1
        self.list_backups(what)
        self.settle_target(target, failures)
        return r, outcome

    # Phases ----------------------------------------------------------------------------------
    def setup(self, short_window):
        ru.make_source(self.src, self.rng)
        os.makedirs(self.restores)
        r = self.sb.run(["keygen", self.key])
        if r.returncode != 0:
            raise SystemExit("keygen failed:\n" + r.describe())
        # The encrypted backups seal the catalog (docs/security.md): with the key configured
        # every command verifies it, and `list` exits 9 if a kill ever left a record the
        # seal does not vouch for.
        r = self.sb.run(["configure", "key-file", self.key, "--catalog", self.cat])
        if r.returncode != 0:
            raise SystemExit("configure key-file failed:\n" + r.describe())
        for kind in BACKUP_KINDS:  # complete backups of each kind, and how long each takes
            bid, r, st = self.backup(kind)
            self.log(f"[setup] backup {kind}: {st} as backup {bid} in {r.elapsed:.2f} s")
            ru.mutate(self.src, self.rng)
        # A policy, so that `delete obsolete` finds something; with a resume window of 0 the
        # backups of killed jobs are obsolete at once (else they stay 7 days for a resume).
        settings = [["retention", "redundancy", "2"]]
        if short_window:
            settings.append(["resume-window", "0"])
        for setting in settings:
            r = self.sb.run(["configure"] + setting + ["--catalog", self.cat])
            if r.returncode != 0:
                self.fail(f"configure {' '.join(setting)} failed", r)
        self.log(f"[setup] retention redundancy 2, resume window "
                 f"{'0' if short_window else '7 days (default)'}")
        for bid in (self.complete_ids()[0], None):
            r, outcome = self.restore(bid)
            self.log(f"[setup] restore of {bid}: {outcome} in {r.elapsed:.2f} s")
        r, outcome = self.validate(None)
        self.log(f"[setup] validate: {outcome} in {r.elapsed:.2f} s")

    def random_kills(self, loops, deadline, ops):
        done = 0
        weights = [OPS[o] for o in ops]
        for i in range(1, loops + 1):
            if deadline and time.monotonic() > deadline:
                self.log(f"time bound reached after {done} of {loops} loops")
                break
            if not ru.enough_space(self.src):
                self.log(f"less than {ru.MIN_FREE >> 30} GiB free: stopping after {done} of "
                         f"{loops} loops")
                self.low_space = True
                break
            op = self.rng.choices(ops, weights)[0]
            if op == "resume":
                res = self.resume(self.kill_delay("resume"))
                if res is not None:
                    self.log(f"[{i}] resume: {res[2]} after {res[1].elapsed:.2f} s")
                    self.reclaim()
                    done += 1
                    continue
                op = "backup"  # nothing to resume: make something to resume later
            if op == "delta" and not self.complete_ids():
                op = "restore"
            if op in ("backup", "level"):
                if op == "backup":
                    kind = self.rng.choice(BACKUP_KINDS)
                else:  # a level 1 needs a level 0 to build on
                    kind = "level1" if self.complete_ids(LEVEL_KINDS) and \
                        self.rng.random() < 0.7 else "level0"
                bid, r, st = self.backup(kind, self.kill_delay("backup-" + kind))
                self.log(f"[{i}] backup {kind}: {'killed' if r.signal else 'finished'} after "
                         f"{r.elapsed:.2f} s, backup {bid} {st}")
                self.reclaim()
                if self.rng.random() < 0.7:
                    ru.mutate(self.src, self.rng)
            elif op == "delta":
                r, outcome = self.delta_restore(self.kill_delay("delta"))
                self.log(f"[{i}] delta restore: {outcome} after {r.elapsed:.2f} s")
            elif op == "delete":
                which = self.rng.choice(("obsolete", "expired"))
                expired = self.expire_one() if which == "expired" and \
                    self.rng.random() < 0.5 else None
                r, outcome = self.delete(which, self.kill_delay("delete"))
                self.log(f"[{i}] delete {which}" + (f" (backup {expired} expired)" if expired
                                                    else "") + f": {outcome}")
            elif op == "compact":
                r, outcome = self.compact(self.kill_delay("compact"))
                self.log(f"[{i}] catalog compact: {outcome} after {r.elapsed:.2f} s")
            elif op == "rebuild":
                fresh = self.rng.random() < 0.7
                r, outcome = self.rebuild(fresh, self.kill_delay("rebuild"))
                self.log(f"[{i}] catalog rebuild ({'new' if fresh else 'same'} catalog): "
                         f"{outcome}")
            elif op == "restore":
                ids = self.complete_ids()
                bid = self.rng.choice(ids) if self.rng.random() < 0.7 else None
                r, outcome = self.restore(bid, self.kill_delay("restore"))
                self.log(f"[{i}] restore of {bid}: {outcome} after {r.elapsed:.2f} s")
            else:
                ids = self.complete_ids()
                bid = self.rng.choice(ids) if self.rng.random() < 0.5 else None
                r, outcome = self.validate(bid, self.kill_delay("validate"))
                self.log(f"[{i}] validate of {bid}: {outcome} after {r.elapsed:.2f} s")
            done += 1
        return done

    def crash_points(self):
        for point in BACKUP_POINTS:
            for kind in BACKUP_KINDS:
                if point == "catalog-tail-saved":
                    with open(os.path.join(self.cat, "catalog.log"), "ab") as f:
                        f.write(TORN_TAIL)
                    self.torn += TORN_TAIL
                    saved_before = set(glob.glob(os.path.join(self.cat, "catalog.log.torn-*")))
                expect = "complete" if point == "backup-ended" else "incomplete"
                bid, r, st = self.backup(kind, env={"STRIPEBACK_CRASH_AT": point},
                                         expect_status=None if bid_free(point) else expect)
                self.counts["point_runs"] += 1
                if r.signal != signal.SIGKILL:
                    self.fail(f"backup {kind} never reached crash point {point}", r)
                if bid_free(point) and bid is not None:
                    self.fail(f"a crash at {point} (before the begin record) left backup {bid}")
                if point == "catalog-tail-saved":
                    self.check_tail_saved(saved_before)
                elif bid is not None:
                    self.torn = b""  # its begin record was appended: the tail was cut
                self.log(f"[point] {point} in backup {kind}: "
                         f"{'killed' if r.signal else 'not reached'}, backup {bid} {st}")
                self.reclaim()
                ru.mutate(self.src, self.rng)
        for point in RESTORE_POINTS:
            for kind in ("plain", "compress-encrypt"):
                bid = self.complete_ids((kind,))[-1]
                n = int(point.split(":")[1])
                # Channels finish files concurrently: at the n-th rename, n files carry their
                # final name; at the n-th synced file, that one at least is still temporary.
                renamed = "renamed" in point
                r, outcome = self.restore(bid, env={"STRIPEBACK_CRASH_AT": point},
                                          min_final=n if renamed else 0,
                                          min_temps=0 if renamed else 1)
                self.counts["point_runs"] += 1
                if r.signal != signal.SIGKILL:
                    self.fail(f"restore of backup {bid} never reached crash point {point}", r)
                self.log(f"[point] {point} in restore of backup {bid} ({self.kinds[bid]}): "
                         f"{outcome}")

    def other_crash_points(self):
        """The crash points of level backups, resumes, delta restores, deletions,
        compaction and rebuild, each once."""
        def point_run(r, what, point, must_reach=True):
            self.counts["point_runs"] += 1
            if must_reach and r.signal != signal.SIGKILL:
                self.fail(f"{what} never reached crash point {point}", r)

        for point in LEVEL_POINTS:
            for kind in LEVEL_KINDS:
                bid, r, st = self.backup(kind, env={"STRIPEBACK_CRASH_AT": point},
                                         expect_status="incomplete")
                point_run(r, f"backup {kind}", point)
                self.log(f"[point] {point} in backup {kind}: backup {bid} {st}")
                self.reclaim()
                ru.mutate(self.src, self.rng)
        for point in RESUME_POINTS:
            # Killed after its second piece record, so the resume keeps something.
            bid, r, st = self.backup("multiplex", env={"STRIPEBACK_CRASH_AT": "catalog-synced:3"},
                                     expect_status="incomplete")
            point_run(r, "backup multiplex", "catalog-synced:3")
            if self.rng.random() < 0.5:
                ru.mutate(self.src, self.rng)
            res = self.resume(env={"STRIPEBACK_CRASH_AT": point})
            if res is None:
                self.fail(f"no incomplete backup to resume at {point}")
                continue
            # A resume that finds every piece durable writes none: piece-synced may not come.
            point_run(res[1], "backup --resume last", point, must_reach=point != "piece-synced:1")
            self.log(f"[point] {point} in backup --resume last: {res[2]}")
            self.reclaim()
        for point in DELTA_POINTS:
            res = self.delta_restore(env={"STRIPEBACK_CRASH_AT": point}, same=True)
            if res is None:
                self.fail(f"no complete backup for a delta restore at {point}")
                continue
            point_run(res[0], "delta restore", point)
            self.log(f"[point] {point} in delta restore: {res[1]}")
        for which, point in DELETE_POINTS:
            if which == "expired":
                expired = self.expire_one()
                if expired is None:
                    self.fail(f"no backup to expire before delete expired at {point}")
                    continue
            else:  # one more complete backup makes the third newest obsolete
                self.backup(self.rng.choice(BACKUP_KINDS))
                ru.mutate(self.src, self.rng)
            # Retention is per file: one more backup need not make a backup obsolete (a file
            # only an older backup holds keeps it). The point must come when something is.
            rep = self.sb.run(["report", "obsolete", "--catalog", self.cat])
            planned = which == "expired" or "obsolete:" in rep.out
            r, outcome = self.delete(which, env={"STRIPEBACK_CRASH_AT": point})
            point_run(r, f"delete {which}", point, must_reach=planned)
            self.log(f"[point] {point} in delete {which}: {outcome}")
        for point in COMPACT_POINTS:
            r, outcome = self.compact(env={"STRIPEBACK_CRASH_AT": point})
            point_run(r, "catalog compact", point)
            self.log(f"[point] {point} in catalog compact: {outcome}")
        for point in REBUILD_POINTS:
            r, outcome = self.rebuild(True, env={"STRIPEBACK_CRASH_AT": point})
            point_run(r, "catalog rebuild", point)
            self.log(f"[point] {point} in catalog rebuild: {outcome}")

    def check_tail_saved(self, saved_before):
        log_path = os.path.join(self.cat, "catalog.log")
        with open(log_path, "rb") as f:
            if not f.read().endswith(self.torn):
                self.fail("a crash at catalog-tail-saved cut the torn tail off the log")
        saved = set(glob.glob(os.path.join(self.cat, "catalog.log.torn-*"))) - saved_before
        if len(saved) != 1:
            self.fail(f"a crash at catalog-tail-saved left {len(saved)} new saved tails")
            return
        with open(saved.pop(), "rb") as f:
            if f.read() != self.torn:
                self.fail("the saved torn tail does not hold the torn bytes")

    def final_checks(self):
        # The pieces an interrupted backup recorded are kept for a resume, not leftovers:
        # the warning names only those the catalog does not record.
        known, _ = self.list_backups("the end of the epoch")
        recorded = {pc["name"] for b in known.values() for pc in b.get("piece_list", [])}
        left = [p for p in self.piece_files()
                if self.unfinished(p) and os.path.basename(p) not in recorded]
        bid, r, st = self.backup("plain")
        self.log(f"[final] fresh backup: {st} as backup {bid}")
        try:
            warnings = json.loads(r.out).get("warnings", []) if r.returncode == 0 else []
        except ValueError:
            warnings = []
            self.fail("the final backup's --json output is not JSON", r)
        # One warning counts the unfinished pieces and names (at least the first of) them.
        names = [os.path.basename(p) for p in left]
        if left and not any(w.startswith(f"{len(left)} piece(s) ") and
                            any(n in w for n in names) for w in warnings):
            self.fail(f"the final backup does not warn of the {len(left)} unfinished pieces "
                      f"of killed backups, e.g. {names[0]}", r)
        backups, lr = self.list_backups("the final backup")
        if "torn" in lr.err:
            self.fail("the log still reports a torn tail after the final backup", lr)
        for b in self.killed:
            if backups.get(b, {}).get("status") == "complete":
                self.log(f"[final] killed backup {b} is complete: the kill came after its "
                         "end record; it is checked like the others")
        ids = self.complete_ids()
        for b in ids:
            self.validate(b)
            self.restore(b)
        self.restore(None)
        self.counts["verified"] += len(ids)
        self.log(f"[final] {len(ids)} complete backups validated and restored")
        known = set(backups)
        for p in self.piece_files():
            if piece_owner(os.path.basename(p)) not in known:
                self.fail(f"piece {os.path.basename(p)} belongs to no backup in the catalog")

    def piece_files(self):
        return sorted(glob.glob(os.path.join(self.pieces, "*.sbp")))

    def unfinished(self, piece):
        owner = piece_owner(os.path.basename(piece))
        return owner in self.killed and self.statuses.get(owner) == "incomplete"

    def reclaim(self):
        """Removes the unfinished pieces of all but the last few killed backups, as the
        warning of the next backup asks an operator to: each holds up to 64 MiB that were
        allocated ahead of its writes. The pieces such a backup recorded stay: they are
        not named by the warning, and a later resume keeps them."""
        dead = sorted(b for b in self.killed if self.statuses.get(b) == "incomplete")
        keep = set(dead[-KEEP_UNFINISHED:])
        if not set(dead) - keep:
            return
        backups, _ = self.list_backups("choosing pieces to reclaim")
        recorded = {p["name"] for b in backups.values() for p in b.get("piece_list", [])}
        for p in self.piece_files():
            name = os.path.basename(p)
            if self.unfinished(p) and piece_owner(name) not in keep and name not in recorded:
                os.unlink(p)


def touch_page(target, rng):
    """Rewrites one 4 KiB page of the largest file below `target`, keeping its size."""
    files = ru.snapshot(target)
    if not files:
        return
    path = max(files, key=lambda p: (files[p][0], p))
    size = files[path][0]
    if size < 4096:
        return
    with open(path, "r+b") as f:
        f.seek(rng.randrange(size // 4096) * 4096)
        f.write(rng.randbytes(4096))


def bid_free(point):
    """Points reached before the begin record is written: no backup is recorded. (A kill
    after a write and before its fdatasync leaves the record in the page cache, so
    catalog-written:1 does record the backup.)"""
    return point == "catalog-tail-saved"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=ru.default_binary(), help="stripeback binary "
                    "(default $STRIPEBACK_BIN)")
    ap.add_argument("--loops", type=int, default=60, help="random kills (default 60)")
    ap.add_argument("--epoch-loops", type=int, default=100,
                    help="random kills per catalog and destination (default 100)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: new)")
    ap.add_argument("--crash-points", action=argparse.BooleanOptionalAction, default=True,
                    help="also crash at every named crash point (default yes)")
    ap.add_argument("--ops", default=",".join(OPS),
                    help="operations the random loops choose among (default all: "
                    f"{','.join(OPS)})")
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="stop the random kills after this long (default: no bound)")
    ap.add_argument("--work", help="work directory (default: a new one in $TMPDIR or "
                    "/var/tmp, removed when every invariant held)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--keep-going", action="store_true",
                    help="after an epoch with violations, go on with the next one")
    a = ap.parse_args()
    if a.epoch_loops < 1:
        ap.error("--epoch-loops must be at least 1")
    ops = [o for o in a.ops.split(",") if o]
    for o in ops:
        if o not in OPS:
            ap.error(f"unknown operation '{o}' ({', '.join(OPS)})")
    if not ops:
        ap.error("--ops names no operation")
    sb = ru.Stripeback(a.bin)
    hooks_missing = a.crash_points and not sb.has_test_hooks()
    if hooks_missing:
        print(f"kill harness: crash points skipped: {a.bin} was built without test hooks "
              "(STRIPEBACK_TEST_HOOKS=OFF: its --version does not say \"(test hooks)\"), "
              "so STRIPEBACK_CRASH_AT arms nothing", flush=True)
        a.crash_points = False
        if a.loops == 0:
            return SKIPPED
    seed = a.seed if a.seed is not None else ru.new_seed()
    print(f"kill harness: seed {seed} (rerun with --seed {seed}), {a.loops} loops of "
          f"{','.join(ops)}, crash points {'on' if a.crash_points else 'off'}", flush=True)
    work = ru.work_dir("kill harness", "sb-kill.", a.work)
    if work is None:
        return SKIPPED
    started = time.monotonic()
    deadline = started + a.max_seconds if a.max_seconds else None
    rng = random.Random(seed)
    counts, stages = collections.Counter(), collections.Counter()
    # Killed backups leave their pieces, and every complete backup stays, so the destination
    # only grows: a long run starts a new catalog and destination every --epoch-loops.
    loops = epoch = violations = 0
    while True:
        epoch += 1
        edir = os.path.join(work, f"epoch{epoch}")
        h = Harness(sb, edir, rng, seed, counts, stages)
        # Half the epochs make a killed backup obsolete at once (resume window 0).
        h.setup(short_window=rng.random() < 0.5)
        loops += h.random_kills(min(a.epoch_loops, a.loops - loops), deadline, ops)
        if a.crash_points and epoch == 1:
            h.crash_points()
            h.other_crash_points()
        h.final_checks()
        violations += len(h.failures)
        if h.failures:
            print(f"kill harness: {len(h.failures)} invariant(s) violated in epoch {epoch}; "
                  f"its directory is kept: {edir}; rerun with --seed {seed}", flush=True)
            if not a.keep_going:
                break
        elif not a.keep:
            shutil.rmtree(edir, ignore_errors=True)
        if loops >= a.loops or h.low_space or (deadline and time.monotonic() > deadline):
            break
    c = counts
    for stage, n in sorted(stages.items()):
        print(f"  random kills of a {stage}: {n}")
    print(f"kill harness: {loops} loops in {epoch} epoch(s), {c['kills']} processes killed "
          f"({c['kills'] - c['point_runs']} at random moments, {c['point_runs']} at crash "
          f"points), {c['finished_first']} finished before their kill, "
          f"{c['temp_files_left']} temporary files left by killed restores "
          f"({c['restored_again']} targets restored again), "
          f"{c['verified']} complete backups verified, {c['resumed_again']} killed resumes "
          f"resumed again, {c['deletes_rerun']} killed deletes run again "
          f"({c['backups_deleted']} backups deleted), {c['delta_restores']} delta restores, "
          f"{c['rebuilds_checked']} rebuilt catalogs checked, "
          f"{violations} invariant(s) violated, {time.monotonic() - started:.1f} s, "
          f"seed {seed}", flush=True)
    if violations:
        return 1
    if not a.keep and not a.work:
        shutil.rmtree(work, ignore_errors=True)
    if h.low_space:
        print(f"kill harness: skipped the rest: less than {ru.MIN_FREE >> 30} GiB free")
        return SKIPPED
    if hooks_missing:
        return SKIPPED  # the random kills passed; the crash points asked for did not run
    return 0


if __name__ == "__main__":
    sys.exit(main())
