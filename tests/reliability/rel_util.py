"""Shared helpers of the reliability harnesses (kill_harness.py, bitflip.py).

They drive the real `stripeback` binary as child processes: `Stripeback` runs it with a
clean environment (no inherited catalog, I/O mode or test hook), `snapshot()` records a
source tree by content digest so a restore can be compared with the files as they were at
their backup, and `make_source()` / `mutate()` build and change small data sets with the
shapes that matter to the piece format (compressible pages, incompressible runs, all-zero
megabytes, sizes that are not multiples of 4 KiB, an empty file, nested directories).
"""

import hashlib
import os
import random
import shutil
import stat
import subprocess
import tempfile
import time

MIB = 1 << 20
TEMP_MARK = ".sbrestore-"  # restore's temporaries (`.sbrestore-<hex>`) and journal
JOURNAL_MARK = ".sbrestore-journal-"


class Result:
    """How one command ended: exit code, or the signal that ended it, and its output."""

    def __init__(self, argv, returncode, out, err, elapsed):
        self.argv = argv
        self.returncode = returncode
        self.out = out
        self.err = err
        self.elapsed = elapsed

    @property
    def signal(self):
        return -self.returncode if self.returncode < 0 else 0

    def describe(self):
        how = f"signal {self.signal}" if self.signal else f"exit {self.returncode}"
        return (f"$ {' '.join(self.argv)}\n  -> {how} after {self.elapsed:.2f} s\n"
                f"  stdout: {self.out.strip()[:2000]}\n  stderr: {self.err.strip()[:2000]}")


class Stripeback:
    """Runs the binary under test. Every command states its catalog (--catalog); the
    environment it inherits cannot point it anywhere else."""

    def __init__(self, binary, timeout=120):
        if not binary or not os.access(binary, os.X_OK):
            raise SystemExit(f"stripeback binary '{binary}' is not executable "
                             "(give --bin or set STRIPEBACK_BIN)")
        self.binary = binary
        self.timeout = timeout
        env = dict(os.environ)
        for name in ("STRIPEBACK_IO", "STRIPEBACK_CATALOG", "STRIPEBACK_CRASH_AT",
                     "STRIPEBACK_FAKE_NOW", "STRIPEBACK_FAULTS",
                     "STRIPEBACK_TEST_NFS_VERIFIER_CHANGE", "SPDLOG_LEVEL"):
            env.pop(name, None)
        env["XDG_STATE_HOME"] = "/dev/null/not-a-catalog"
        self.env = env

    def _env(self, extra):
        env = dict(self.env)
        env.update(extra or {})
        return env

    def start(self, args, env=None):
        argv = [self.binary] + [str(a) for a in args]
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=self._env(env), text=True)
        p.sb_argv = argv
        p.sb_started = time.monotonic()
        return p

    def finish(self, p):
        try:
            out, err = p.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            err += f"\n(killed by the harness after {self.timeout} s)"
        return Result(p.sb_argv, p.returncode, out, err, time.monotonic() - p.sb_started)

    def run(self, args, env=None):
        return self.finish(self.start(args, env))

    def has_test_hooks(self):
        """Whether the binary was built with test hooks (STRIPEBACK_TEST_HOOKS=ON): its
        --version says "(test hooks)". Without them STRIPEBACK_CRASH_AT arms nothing."""
        r = self.run(["--version"])
        return r.returncode == 0 and "(test hooks)" in r.out


def file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            h.update(block)
    return h.hexdigest()


def snapshot(root):
    """{absolute path: (size, permission bits, mtime_ns, sha256)} of the regular files
    below `root` (symbolic links not followed)."""
    out = {}
    for d, _, files in os.walk(root):
        for name in files:
            p = os.path.join(d, name)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                out[p] = (st.st_size, stat.S_IMODE(st.st_mode), st.st_mtime_ns, file_digest(p))
    return out


def restored_files(target):
    """{original path: restored path} of the regular files below a restore target, and the
    list of temporary files (not yet renamed into place) found there."""
    files, temps = {}, []
    for d, _, names in os.walk(target):
        for name in names:
            p = os.path.join(d, name)
            if TEMP_MARK in name:
                temps.append(p)
            elif stat.S_ISREG(os.lstat(p).st_mode):
                files[p[len(target):]] = p
    return files, temps


def compare_file(expected, restored_path):
    """None when `restored_path` matches the snapshot entry `expected`, else what differs."""
    st = os.lstat(restored_path)
    size, mode, mtime_ns, digest = expected
    if st.st_size != size:
        return f"size {st.st_size}, expected {size}"
    if file_digest(restored_path) != digest:
        return "content differs"
    if stat.S_IMODE(st.st_mode) != mode:
        return f"mode {oct(stat.S_IMODE(st.st_mode))}, expected {oct(mode)}"
    if st.st_mtime_ns != mtime_ns:
        return f"mtime {st.st_mtime_ns}, expected {mtime_ns}"
    return None


def compare_tree(expected, target):
    """Problems (a list of strings, empty when none) of a finished restore into `target`
    that should hold exactly the files of the snapshot `expected`."""
    files, temps = restored_files(target)
    problems = [f"{'restore journal' if JOURNAL_MARK in t else 'temporary file'} of "
                f"{os.lstat(t).st_size} bytes left behind: {t}" for t in temps]
    for orig, snap in sorted(expected.items()):
        if orig not in files:
            problems.append(f"missing: {orig}")
            continue
        why = compare_file(snap, files[orig])
        if why:
            problems.append(f"{orig}: {why}")
    problems += [f"unexpected file: {orig}" for orig in sorted(set(files) - set(expected))]
    return problems


def wrong_final_files(expected, target):
    """Files under their final name in `target` that do not match `expected` (the contract
    of a restore that did not finish: what carries a final name is right)."""
    files, _ = restored_files(target)
    bad = []
    for orig, p in sorted(files.items()):
        why = compare_file(expected[orig], p) if orig in expected else "not in the backup"
        if why:
            bad.append(f"{orig}: {why}")
    return bad


# Data sets --------------------------------------------------------------------------------

_WORDS = [b"ALPHA", b"BRAVO", b"CHARLIE", b"DELTA", b"ECHO", b"PAID", b"OPEN", b"CLOSED",
          b"EUR", b"USD", b"PENDING", b"SHIPPED"]


def table_bytes(rng, n):
    """Text-like rows: compresses a few times, like table data."""
    rows = []
    size = 0
    while size < n:
        row = b"|".join([str(rng.randrange(100000, 999999)).encode(), rng.choice(_WORDS),
                         rng.choice(_WORDS), str(rng.randrange(10**6)).encode()]) + b"\n"
        rows.append(row)
        size += len(row)
    return b"".join(rows)[:n]


def block_bytes(rng, n, kind):
    if kind == "zero":
        return bytes(n)
    if kind == "random":
        return rng.randbytes(n)
    return table_bytes(rng, n)


def write_file(path, rng, size, kinds=("table",), mode=0o644):
    """Writes `size` bytes, each megabyte of one of `kinds` (table, random, zero)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        off = 0
        while off < size:
            n = min(MIB, size - off)
            f.write(block_bytes(rng, n, kinds[(off // MIB) % len(kinds)]))
            off += n
    os.chmod(path, mode)


def make_source(root, rng, big=4 * MIB + 3 * 8192):
    """A small data set: one large file (megabytes of table data, one all-zero, one
    random), smaller ones of odd sizes, an empty file and nested directories."""
    write_file(os.path.join(root, "db/big01.dbf"), rng, big, ("table", "zero", "random", "table"),
               0o640)
    write_file(os.path.join(root, "db/users01.dbf"), rng, MIB + 4096 + 100, ("table", "zero"))
    write_file(os.path.join(root, "db/undo01.dbf"), rng, 300_001, ("random",), 0o600)
    write_file(os.path.join(root, "arch/a/arch_0001.arc"), rng, 70_000, ("table",), 0o440)
    write_file(os.path.join(root, "arch/a/b/arch_0002.arc"), rng, 4095, ("random",))
    write_file(os.path.join(root, "arch/arch_0003.arc"), rng, 4097, ("table",))
    write_file(os.path.join(root, "ctl/control01.ctl"), rng, 8192 * 9, ("table",), 0o600)
    write_file(os.path.join(root, "ctl/control02.ctl"), rng, 100, ("table",), 0o600)
    write_file(os.path.join(root, "empty.dat"), rng, 0)
    for i in range(4):
        write_file(os.path.join(root, f"misc/m{i}.log"), rng, rng.randrange(1, 200_000),
                   ("table", "random"))


GROW_BELOW = 512 << 10  # files grow only while smaller than this
CUT_BELOW = MIB         # and only files smaller than this are cut (large ones keep sections)
MISC_FILES = (4, 8)     # the small files come and go within these bounds


def mutate(root, rng):
    """Changes the data set a little, as a database would between backups: rewrites a
    range of a file, grows or shrinks a small one, adds or removes a small file. The data
    set stays within a few MiB however often it is called. Returns what it did."""
    files = sorted(snapshot(root))
    done = []
    for _ in range(rng.randrange(1, 4)):
        path = rng.choice(files)
        size = os.path.getsize(path)
        what = rng.random()
        if (what < 0.6 or size >= CUT_BELOW) and size > 0:
            off = rng.randrange(size) // 4096 * 4096
            n = min(size - off, rng.randrange(1, 3 * 4096))
            with open(path, "r+b") as f:
                f.seek(off)
                f.write(block_bytes(rng, n, rng.choice(("table", "random"))))
            done.append(f"rewrote {n} bytes at {off} of {path}")
        elif what < 0.8 and size < GROW_BELOW:
            with open(path, "ab") as f:
                f.write(block_bytes(rng, rng.randrange(1, 100_000), "table"))
            done.append(f"grew {path}")
        elif size < CUT_BELOW:
            os.truncate(path, size // 2)
            done.append(f"cut {path} to {size // 2} bytes")
    small = [f for f in files if "/misc/" in f]
    extra = os.path.join(root, "misc", f"new{rng.randrange(1000)}.log")
    if rng.random() < 0.3 and len(small) < MISC_FILES[1] and not os.path.exists(extra):
        write_file(extra, rng, rng.randrange(1, 50_000))
        done.append(f"added {extra}")
    if rng.random() < 0.3 and len(small) > MISC_FILES[0]:
        victim = rng.choice(small)
        os.unlink(victim)
        done.append(f"removed {victim}")
    return done


MIN_FREE = 2 << 30  # a run stops (skipped) rather than fill the file system


def enough_space(path):
    return shutil.disk_usage(path).free >= MIN_FREE


def work_dir(tool, prefix, given):
    """The run's work directory (`given`, or a new one below $TMPDIR or /var/tmp), or None,
    said on stdout, when the file system has less than MIN_FREE left."""
    base = os.environ.get("TMPDIR") or "/var/tmp"
    work = os.path.realpath(given or tempfile.mkdtemp(prefix=prefix, dir=base))
    os.makedirs(work, exist_ok=True)
    if not enough_space(work):
        print(f"{tool}: skipped: less than {MIN_FREE >> 30} GiB free in {work}")
        return None
    return work


def default_binary():
    return os.environ.get("STRIPEBACK_BIN", "")


def new_seed():
    return random.SystemRandom().randrange(1, 2**32)
