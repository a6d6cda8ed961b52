#!/usr/bin/env python3
"""Bit-flip campaign: flips one bit of a pristine backup (its pieces or its catalog log),
then runs `validate` and `restore` and classifies what they made of it. See
docs/reliability.md.

Trials aim at every region the piece format and the catalog format define (layout.py), of a
plain, a compressed and an encrypted backup: first one trial per (backup, region), then
targeted and uniformly random offsets. Each trial starts from a fresh copy of the pristine
backup, flips one bit, runs `validate` and `restore` into a new target, and is

  detected  validate or restore exited non-zero (or, both exiting 0 with every byte
            restored right, one of them reported the damage);
  harmless  both exited 0, the restore is byte-identical to the source, and the bit was in
            bytes no checksum covers (padding, unused header space);
  missed    anything else: restore exited 0 with wrong or missing files; a file with
            wrong content under its final name; validate passed what restore rejected; or
            validate and restore both passed a change to bytes the format covers with a
            checksum, so nothing checked what the format defines.

Exit 0 when no trial was missed, 1 otherwise (each miss printed with region, offset, bit
and seed).
"""

import argparse
import collections
import os
import random
import re
import shutil
import sys
import time

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layout  # noqa: E402
import rel_util as ru  # noqa: E402

KINDS = ("plain", "compressed", "encrypted", "level")
SKIPPED = 77  # ctest's SKIP_RETURN_CODE: not enough room to run
REPORTED = re.compile(r"corrupt|damaged|mismatch|malformed|torn|checksum", re.IGNORECASE)


class Backup:
    """One pristine backup of one kind: its files, their regions, and the live location
    (the paths the catalog records) that each trial restores it to."""

    def __init__(self, work, kind, sb, src, key, rng):
        self.kind = kind
        self.sb = sb
        self.key = key
        self.dir = os.path.join(work, kind)
        self.live = os.path.join(self.dir, "live")
        self.pristine = os.path.join(self.dir, "pristine")
        self.target = os.path.join(self.dir, "target")
        if kind == "level":  # a level 0, then a level 1 of its own copy with pages changed
            shutil.copytree(src, os.path.join(self.dir, "src"))
            src = os.path.join(self.dir, "src")
        args = ["backup", src, "--to", os.path.join(self.live, "pieces"), "--catalog",
                os.path.join(self.live, "cat"), "--channels", "2"]
        if kind == "compressed":
            args += ["--compress", "medium"]
        elif kind == "encrypted":
            args += ["--encrypt", "--key-file", key]
        runs = [args]
        if kind == "level":
            runs = [args + ["--level", "0", "--change-unit", "8K"],
                    args + ["--level", "1", "--change-unit", "8K"]]
        for n, run in enumerate(runs):
            if n:
                ru.mutate(src, rng)
            r = sb.run(run)
            if r.returncode != 0:
                raise SystemExit(f"the pristine {kind} backup failed:\n" + r.describe())
        self.expected = ru.snapshot(src)
        shutil.copytree(self.live, self.pristine)
        self.files = {}    # relative path -> regions
        self.sizes = {}
        for rel in self.relative_files():
            with open(os.path.join(self.pristine, rel), "rb") as f:
                data = f.read()
            regs = (layout.catalog_regions(data) if rel.endswith("catalog.log") else
                    layout.autobackup_regions(data) if rel.endswith(".sbcat") else
                    layout.piece_regions(data))
            check_partition(rel, regs, len(data))
            self.files[rel] = regs
            self.sizes[rel] = len(data)
        self.regions = collections.defaultdict(list)  # name -> [(rel, start, end, prot)]
        for rel, regs in self.files.items():
            for name, s, e, prot in regs:
                self.regions[name].append((rel, s, e, prot))

    def relative_files(self):
        # By size, not name: which channel writes which work set varies from run to run.
        d = os.path.join(self.pristine, "pieces")
        pieces = sorted((p for p in os.listdir(d) if p.endswith(".sbp")),
                        key=lambda p: (os.path.getsize(os.path.join(d, p)), p))
        # The newest catalog autobackup beside them, the one `catalog rebuild` reads (an
        # older one, of the level kind's level 0, is read by nothing while it is there).
        autobackups = sorted((p for p in os.listdir(d) if p.endswith(".sbcat")),
                             key=lambda p: int(p[:-len(".sbcat")].rsplit("-", 1)[1]))[-1:]
        return [os.path.join("pieces", p) for p in pieces + autobackups] + ["cat/catalog.log"]

    def reset(self):
        shutil.rmtree(self.live)
        shutil.copytree(self.pristine, self.live)
        shutil.rmtree(self.target, ignore_errors=True)

    def validate(self):
        pick = ["--backup", "2"] if self.kind == "level" else []  # as restore() picks
        return self.sb.run(["validate", "--catalog", os.path.join(self.live, "cat"),
                            "--key-file", self.key] + pick)

    def restore(self, cat="cat"):
        # The level 1 by its id: a default restore would take the level 0 (exit 0) when the
        # level 1's end record is hit, or fall back to it (exit 6), by design.
        pick = ["--backup", "2"] if self.kind == "level" else []
        return self.sb.run(["restore", "--to", self.target, "--catalog",
                            os.path.join(self.live, cat), "--key-file", self.key] + pick)

    def rebuild(self):
        """`catalog rebuild` from the pieces directory into a new catalog, `rebuilt`."""
        return self.sb.run(["catalog", "rebuild", "--from", os.path.join(self.live, "pieces"),
                            "--catalog", os.path.join(self.live, "rebuilt"), "--key-file",
                            self.key, "--json"])


def check_partition(rel, regs, size):
    """The regions of a file cover each of its bytes exactly once."""
    at = 0
    for name, s, e, _ in sorted(regs, key=lambda r: r[1]):
        if s != at or e < s:
            raise SystemExit(f"layout of {rel}: region {name} at {s}..{e}, expected it at {at}")
        at = e
    if at != size:
        raise SystemExit(f"layout of {rel}: regions end at {at} of {size} bytes")


def pick_in(ranges, rng):
    """A byte chosen uniformly among `ranges` [(rel, start, end, prot)]."""
    total = sum(e - s for _, s, e, _ in ranges)
    k = rng.randrange(total)
    for rel, s, e, prot in ranges:
        if k < e - s:
            return rel, s + k, prot
        k -= e - s
    raise AssertionError("unreachable")


def flip(path, offset, bit):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([b ^ (1 << bit)]))


def classify(protected, v, r, expected, target):
    """(class, reason) of one trial, as described at the top of this file."""
    wrong = ru.wrong_final_files(expected, target) if os.path.isdir(target) else []
    if wrong:
        return "missed", f"restore (exit {r.returncode}) left a wrong file under its final " \
                         f"name: {wrong[0]}"
    if r.returncode == 0:
        problems = ru.compare_tree(expected, target) if os.path.isdir(target) else [
            f"nothing restored ({len(expected)} files expected)"]
        if problems:
            return "missed", f"restore exited 0 but {problems[0]} ({len(problems)} problems)"
    if v.returncode == 0 and r.returncode != 0:
        return "missed", f"validate exited 0 but restore exited {r.returncode}"
    if v.returncode != 0 or r.returncode != 0:
        return "detected", f"validate exit {v.returncode}, restore exit {r.returncode}"
    if not protected:
        return "harmless", "unprotected byte, restore identical"
    for res in (v, r):
        m = REPORTED.search(res.err)
        if m:
            return "detected", f"both exited 0 and restored right; reported '{m.group(0)}'"
    return "missed", "validate and restore exited 0 and reported nothing, though the byte is " \
                     "under a checksum"


def classify_rebuild(protected, rb, r, expected, target):
    """(class, reason) of a trial on an autobackup, which only `catalog rebuild` reads: the
    rebuild must still succeed (from the other autobackup or from the pieces) and give a
    catalog that restores every file right; a flip under a checksum must be reported."""
    if rb.returncode != 0:
        return "missed", f"catalog rebuild exited {rb.returncode}"
    wrong = ru.wrong_final_files(expected, target) if os.path.isdir(target) else []
    if wrong:
        return "missed", f"restore from the rebuilt catalog (exit {r.returncode}) left a " \
                         f"wrong file under its final name: {wrong[0]}"
    if r.returncode != 0:
        return "missed", f"restore from the rebuilt catalog exited {r.returncode}"
    problems = ru.compare_tree(expected, target)
    if problems:
        return "missed", f"restore from the rebuilt catalog: {problems[0]} " \
                         f"({len(problems)} problems)"
    m = REPORTED.search(rb.out + rb.err)
    if m:
        return "detected", f"rebuild reported '{m.group(0)}', restore right"
    if not protected:
        return "harmless", "unprotected byte, rebuild and restore right"
    return "missed", "catalog rebuild reported nothing, though the byte is under a checksum"


class Campaign:
    def __init__(self, backups, rng, seed, verbose):
        self.backups = backups
        self.rng = rng
        self.seed = seed
        self.verbose = verbose
        self.table = collections.defaultdict(collections.Counter)  # (kind, region) -> class
        self.totals = collections.Counter()
        self.misses = []

    def plan(self, trials):
        """The sweep (every backup kind and region once, in a shuffled order), then
        targeted and random trials."""
        sweep = [(k, name) for k, b in sorted(self.backups.items()) for name in sorted(b.regions)]
        self.rng.shuffle(sweep)
        for i in range(trials):
            if i < len(sweep):
                yield ("sweep",) + sweep[i]
            elif self.rng.random() < 0.7:
                kind = self.rng.choice(sorted(self.backups))
                yield ("targeted", kind, self.rng.choice(sorted(self.backups[kind].regions)))
            else:
                yield ("random", self.rng.choice(sorted(self.backups)), None)

    def trial(self, n, mode, kind, region):
        b = self.backups[kind]
        if region is None:
            rel, offset, _ = pick_in([(rel, 0, size, True) for rel, size in b.sizes.items()],
                                     self.rng)
            region, protected = layout.region_at(b.files[rel], offset)
        else:
            rel, offset, protected = pick_in(b.regions[region], self.rng)
        bit = self.rng.randrange(8)
        b.reset()
        flip(os.path.join(b.live, rel), offset, bit)
        if rel.endswith(".sbcat"):
            v = b.rebuild()
            r = b.restore("rebuilt")
            cls, why = classify_rebuild(protected, v, r, b.expected, b.target)
        else:
            v = b.validate()
            r = b.restore()
            cls, why = classify(protected, v, r, b.expected, b.target)
        self.table[(kind, region)][cls] += 1
        self.totals[cls] += 1
        line = (f"trial {n} ({mode}, seed {self.seed}): {kind} {region} {rel} offset {offset} "
                f"bit {bit}: {cls.upper()}: {why}")
        if cls == "missed":
            self.misses.append(line)
            print(line, flush=True)
            print("  " + v.describe().replace("\n", "\n  "), flush=True)
            print("  " + r.describe().replace("\n", "\n  "), flush=True)
        elif self.verbose:
            print(line, flush=True)

    def report(self):
        print(f"{'backup':<11} {'region':<28} {'detected':>8} {'harmless':>8} {'missed':>6}")
        for (kind, region), c in sorted(self.table.items()):
            print(f"{kind:<11} {region:<28} {c['detected']:>8} {c['harmless']:>8} "
                  f"{c['missed']:>6}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=ru.default_binary(),
                    help="stripeback binary (default $STRIPEBACK_BIN)")
    ap.add_argument("--trials", type=int, default=200, help="trials (default 200)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: new)")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help="backups to flip bits in (default plain,compressed,encrypted,level)")
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="stop starting trials after this long (default: no bound)")
    ap.add_argument("--work", help="work directory (default: a new one in $TMPDIR or "
                    "/var/tmp, removed when nothing was missed)")
    ap.add_argument("--verbose", action="store_true", help="print every trial")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else ru.new_seed()
    kinds = [k for k in a.kinds.split(",") if k]
    for k in kinds:
        if k not in KINDS:
            ap.error(f"unknown backup kind '{k}' ({', '.join(KINDS)})")
    print(f"bit-flip campaign: seed {seed} (rerun with --seed {seed}), {a.trials} trials on "
          f"{', '.join(kinds)} backups", flush=True)
    work = ru.work_dir("bit-flip campaign", "sb-bitflip.", a.work)
    if work is None:
        return SKIPPED
    started = time.monotonic()
    rng = random.Random(seed)
    sb = ru.Stripeback(a.bin)
    src = os.path.join(work, "src")
    ru.make_source(src, rng, big=2 * ru.MIB + 3 * 8192)
    key = os.path.join(work, "key")
    r = sb.run(["keygen", key])
    if r.returncode != 0:
        raise SystemExit("keygen failed:\n" + r.describe())
    backups = {k: Backup(work, k, sb, src, key, rng) for k in kinds}
    for b in backups.values():  # the pristine backups themselves must be sound
        for cat, check in (("cat", b.validate), ("rebuilt", b.rebuild)):
            b.reset()
            v, r = check(), b.restore(cat)
            problems = ru.compare_tree(b.expected, b.target) if r.returncode == 0 else []
            if v.returncode or r.returncode or problems:
                raise SystemExit(f"the pristine {b.kind} backup does not {v.argv[1]} and "
                                 f"restore:\n{v.describe()}\n{r.describe()}\n{problems[:5]}")
    c = Campaign(backups, rng, seed, a.verbose)
    done = 0
    for n, (mode, kind, region) in enumerate(c.plan(a.trials), 1):
        if a.max_seconds and time.monotonic() - started > a.max_seconds:
            print(f"time bound reached after {done} of {a.trials} trials", flush=True)
            break
        c.trial(n, mode, kind, region)
        done += 1
    c.report()
    t = c.totals
    print(f"bit-flip campaign: {done} trials, {t['detected']} detected, {t['harmless']} "
          f"harmless, {t['missed']} missed, {time.monotonic() - started:.1f} s, seed {seed}",
          flush=True)
    if c.misses:
        print(f"bit-flip campaign: {len(c.misses)} missed; work directory kept in {work}; "
              f"rerun with --seed {seed}", flush=True)
        return 1
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
