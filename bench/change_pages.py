#!/usr/bin/env python3
"""Overwrite a fraction of the 8 KiB pages of a directory tree in place with random bytes.

Used by bench/incremental_bench.sh to make the changes a level 1 backup picks up. The
pages are drawn without replacement, uniformly over all whole pages of all regular files
below DIR (files in sorted path order; a file's tail shorter than a page is never
touched, so no file changes size). The choice and the new bytes depend only on --seed,
--salt and the tree's file list and sizes, so the same arguments change the same pages
the same way. Every new page differs from the one it replaces. Files are fsynced.

Prints one JSON object: files, pages_total, pages_changed, files_changed, unit,
units_total (change units of --unit bytes over all files, tails included),
units_changed (distinct units holding at least one changed page) and changed (each
changed file's absolute path and the number of distinct units changed in it).
"""
import argparse
import collections
import json
import os
import random
import sys

PAGE = 8192


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--percent", type=float, default=1.0, help="share of the pages to change (default 1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--salt", default="", help="a word that makes a different choice for the same seed")
    ap.add_argument("--unit", type=int, default=65536, help="change unit to count touched units in")
    args = ap.parse_args()
    if not 0 < args.percent <= 100:
        sys.exit("change_pages: --percent must be in (0, 100]")
    if args.unit < PAGE or args.unit % PAGE:
        sys.exit("change_pages: --unit must be a multiple of 8 KiB")

    files = []
    for root, dirs, names in os.walk(args.dir):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(root, n)
            if os.path.isfile(p) and not os.path.islink(p):
                files.append((p, os.path.getsize(p)))
    files.sort()

    # Whole pages per file, and the first global page index of each file.
    starts, total = [], 0
    for _, size in files:
        starts.append(total)
        total += size // PAGE
    units_total = sum((size + args.unit - 1) // args.unit for _, size in files)
    want = round(total * args.percent / 100)
    if want == 0:
        sys.exit("change_pages: the tree has too few whole pages to change any")

    rng = random.Random(f"stripeback incremental_bench seed={args.seed} salt={args.salt}")
    chosen = sorted(rng.sample(range(total), want))

    # Group by file (chosen is sorted, files are laid out in order).
    by_file = {}
    fi = 0
    for g in chosen:
        while fi + 1 < len(files) and starts[fi + 1] <= g:
            fi += 1
        by_file.setdefault(fi, []).append(g - starts[fi])

    units = set()
    for fi, pages in by_file.items():
        path = files[fi][0]
        fd = os.open(path, os.O_RDWR)
        try:
            for pg in pages:
                off = pg * PAGE
                old = os.pread(fd, PAGE, off)
                new = rng.randbytes(PAGE)
                while new == old:
                    new = rng.randbytes(PAGE)
                if os.pwrite(fd, new, off) != PAGE:
                    sys.exit(f"change_pages: short write to {path} at {off}")
                units.add((fi, off // args.unit))
            os.fsync(fd)
        finally:
            os.close(fd)

    per_file = collections.Counter(fi for fi, _ in units)
    json.dump({
        "files": len(files),
        "pages_total": total,
        "pages_changed": want,
        "files_changed": len(by_file),
        "unit": args.unit,
        "units_total": units_total,
        "units_changed": len(units),
        "changed": {os.path.abspath(files[fi][0]): n for fi, n in sorted(per_file.items())},
    }, sys.stdout)
    print()


if __name__ == "__main__":
    main()
