#!/usr/bin/env python3
"""Kill harness: SIGKILLs backups, restores and validates at random moments and at every
named crash point, all into one catalog and one destination, and checks after each what a
crash must never leave behind. See docs/reliability.md.

Invariants checked:
  * the catalog opens (`stripeback list` exits 0) after every kill;
  * a backup whose process was killed is listed `incomplete`, unless the kill landed after
    its end record was durable; no backup is ever `failed` or `damaged`, and no backup's
    status changes once its process has gone;
  * every `complete` backup lists as many files as it was given, validates, and restores
    byte-identical (content, size, mode, mtime) to its source as it was at that backup;
  * a killed restore leaves no file under its final name with wrong content, and a second
    restore into its target (--force) removes its temporaries and restores everything;
  * every piece in the destination belongs to a backup the catalog knows;
  * a fresh backup at the end succeeds, restores identical and leaves a clean log.

Exit 0 when every invariant held, 1 otherwise (each violation printed with the seed).
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

# Crash points a backup reaches (docs/reliability.md), each run for every backup kind; a
# count of 2 reaches the second piece or the second catalog append (the first piece record).
BACKUP_POINTS = ("piece-written:1", "piece-written:2", "piece-synced:1", "piece-synced:2",
                 "catalog-written:1", "catalog-synced:1", "catalog-written:2",
                 "catalog-synced:2", "catalog-tail-saved", "backup-pieces-recorded",
                 "backup-files-recorded", "backup-ended")
RESTORE_POINTS = ("restore-file-synced:1", "restore-file-synced:3", "restore-file-renamed:1",
                  "restore-file-renamed:3")
TORN_TAIL = b"SBC1\x07\x00\x00\x00\xde\xad"  # the start of a record header, cut short


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
    def list_backups(self, context):
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
        for bid, b in backups.items():
            st = b["status"]
            if st not in ("complete", "incomplete"):
                self.fail(f"backup {bid} is {st} after {context}", r)
            if bid in self.statuses and self.statuses[bid] != st:
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
        return args

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
        if len(self.failures) > failures:
            self.log(f"restore target kept for inspection: {target}")
        else:
            shutil.rmtree(target, ignore_errors=True)
        return r, outcome

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

    # Phases ----------------------------------------------------------------------------------
    def setup(self):
        ru.make_source(self.src, self.rng)
        os.makedirs(self.restores)
        r = self.sb.run(["keygen", self.key])
        if r.returncode != 0:
            raise SystemExit("keygen failed:\n" + r.describe())
        for kind in BACKUP_KINDS:  # complete backups of each kind, and how long each takes
            bid, r, st = self.backup(kind)
            self.log(f"[setup] backup {kind}: {st} as backup {bid} in {r.elapsed:.2f} s")
            ru.mutate(self.src, self.rng)
        for bid in (self.complete_ids()[0], None):
            r, outcome = self.restore(bid)
            self.log(f"[setup] restore of {bid}: {outcome} in {r.elapsed:.2f} s")
        r, outcome = self.validate(None)
        self.log(f"[setup] validate: {outcome} in {r.elapsed:.2f} s")

    def random_kills(self, loops, deadline):
        done = 0
        for i in range(1, loops + 1):
            if deadline and time.monotonic() > deadline:
                self.log(f"time bound reached after {done} of {loops} loops")
                break
            if not ru.enough_space(self.src):
                self.log(f"less than {ru.MIN_FREE >> 30} GiB free: stopping after {done} of "
                         f"{loops} loops")
                self.low_space = True
                break
            pick = self.rng.random()
            if pick < 0.55:
                kind = self.rng.choice(BACKUP_KINDS)
                bid, r, st = self.backup(kind, self.kill_delay("backup-" + kind))
                self.log(f"[{i}] backup {kind}: {'killed' if r.signal else 'finished'} after "
                         f"{r.elapsed:.2f} s, backup {bid} {st}")
                self.reclaim()
                if self.rng.random() < 0.7:
                    ru.mutate(self.src, self.rng)
            elif pick < 0.85:
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
        allocated ahead of its writes."""
        dead = sorted(b for b in self.killed if self.statuses.get(b) == "incomplete")
        keep = set(dead[-KEEP_UNFINISHED:])
        for p in self.piece_files():
            if self.unfinished(p) and piece_owner(os.path.basename(p)) not in keep:
                os.unlink(p)


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
    seed = a.seed if a.seed is not None else ru.new_seed()
    print(f"kill harness: seed {seed} (rerun with --seed {seed}), {a.loops} loops, "
          f"crash points {'on' if a.crash_points else 'off'}", flush=True)
    work = ru.work_dir("kill harness", "sb-kill.", a.work)
    if work is None:
        return SKIPPED
    started = time.monotonic()
    deadline = started + a.max_seconds if a.max_seconds else None
    sb, rng = ru.Stripeback(a.bin), random.Random(seed)
    counts, stages = collections.Counter(), collections.Counter()
    # Killed backups leave their pieces, and every complete backup stays, so the destination
    # only grows: a long run starts a new catalog and destination every --epoch-loops.
    loops = epoch = violations = 0
    while True:
        epoch += 1
        edir = os.path.join(work, f"epoch{epoch}")
        h = Harness(sb, edir, rng, seed, counts, stages)
        h.setup()
        loops += h.random_kills(min(a.epoch_loops, a.loops - loops), deadline)
        if a.crash_points and epoch == 1:
            h.crash_points()
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
          f"{c['verified']} complete backups verified, "
          f"{violations} invariant(s) violated, {time.monotonic() - started:.1f} s, "
          f"seed {seed}", flush=True)
    if violations:
        return 1
    if not a.keep and not a.work:
        shutil.rmtree(work, ignore_errors=True)
    if h.low_space:
        print(f"kill harness: skipped the rest: less than {ru.MIN_FREE >> 30} GiB free")
        return SKIPPED
    return 0


if __name__ == "__main__":
    sys.exit(main())
