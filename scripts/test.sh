#!/usr/bin/env bash
# The test command; `.ci/run` calls exactly this. Usage:
#   scripts/test.sh [--no-sanitizers] [--no-fuzz] [--fuzz-time SECONDS] [--long]
#                   [--only STAGE[,STAGE...]]
# By default, in this order:
#   ci     install what is needed, build build/ci-asan (ASan + UBSan, a finding fails the
#          test; warnings are errors) and run the whole suite with ctest: unit tests, the
#          fuzz corpora replays, integration tests (real ganesha and tgtd), reliability runs
#   minimal  build build/minimal (for size) without NFS, tape, encryption and test hooks,
#          xxhash compiled in (STRIPEBACK_WITH_NFS/TAPE/CRYPTO=OFF, STRIPEBACK_TEST_HOOKS=OFF):
#          the library, the C API tests and the CLI; run the C API tests and the examples,
#          check that the library and the CLI hold no test hook
#          (tests/no_test_hooks_check.sh) and that the CLI refuses nfs://, tape: and keys
#          (exit 2)
#   tsan   build build/tsan (ThreadSanitizer) and run the tests in TSAN_TESTS: catalog
#          writers on threads and processes, multi-channel backups and restores, the NFS
#          client, the tape I/O helper
#   fuzz   scripts/fuzz.sh for --fuzz-time seconds per target (default 6), two targets at a
#          time; skipped, and said so, where clang++-14 with libFuzzer is not installed
# The first stage builds alone; the later stages' builds then run at low priority (nice,
# idle I/O class) beside its tests. The tests of minimal and fuzz (no server, no timing)
# run there too, right after their builds; tsan's (ganesha and tgtd, which the ci stage's
# tests also start) run once the ci stage's tests are done.
# --no-sanitizers runs the ci stage in build/ci (RelWithDebInfo, no sanitizer) and skips tsan;
# --no-fuzz skips fuzz; --only runs just the stages named (asan, the stage the ci stage took
# over, means ci). --long runs the ci stage's integration tests on the full 1 GiB data set,
# every unit test and the 1 GiB round trips under tsan, and fuzzes 300 s per target
# (unless --fuzz-time says otherwise).
# Every stage runs even if an earlier one failed; the exit status is 1 if any failed. The
# build and test seconds of each stage are printed at the end (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."

# Under TSan (about a minute and a half): what runs threads or processes against shared
# state. The catalog's writers on threads and forked processes; backups and restores with
# several channels (a thread each), with the auto compression level, two jobs on one
# catalog; the NFS client (a connection per channel, replies on their own threads); the
# tape I/O helper thread and its ring of buffers.
TSAN_TESTS='^(CatalogConcurrency\.'
TSAN_TESTS+='|RoundTripVariants\.(SmallBuffersManyFrames|SyncFallbackEngine)'
TSAN_TESTS+='|RoundTripVariants\.ConcurrentBackupsShareCatalogAndDestination'
TSAN_TESTS+='|Levels/Compress\.RoundTripIdenticalAndSmaller/auto'
TSAN_TESTS+='|DeltaRestore\.OnePercentOfPagesChangedWritesOnlyThosePages'
TSAN_TESTS+='|Status\.ARunningJobIsListedWithItsProgressAndChannels|ValidateSome\.MaxDuration'
TSAN_TESTS+='|nfs_test$|Modes/HelperTest\.)'
# Of nfs_test, under TSan, what runs the client on several threads: the engine's many
# operations in flight, a multi-channel backup from and to the server, multipath, a server
# restarted under a running backup. The rest of it (URL parsing, error texts, retry
# windows) runs single-threaded and is covered by the ci stage; --long runs all of it.
TSAN_NFS_FILTER='NfsFs.EngineWritesAndReadsManyOpsInFlight'
TSAN_NFS_FILTER+=':NfsIntegration.BackupFromNfsToNfsAndRestoreLocallyIsIdentical'
TSAN_NFS_FILTER+=':NfsIntegration.MultipathSpreadsChannelsOverServerAddresses'
TSAN_NFS_FILTER+=':NfsIntegration.ServerRestartedMidBackupIsSurvivedByteExact'
# The integration tests' large data set under ASan: 256 MiB instead of 1 GiB, the same
# files each a quarter of the size (`stripeback demo-data` scales them; the round trip
# checks every kind is there); --long and the build without sanitizers use the full size.
ASAN_IT_SIZE=256M

sanitizers=1 fuzz=1 long=0 fuzz_time= only=
while (($#)); do
  case "$1" in
    --no-sanitizers) sanitizers=0; shift ;;
    --no-fuzz) fuzz=0; shift ;;
    --fuzz-time) fuzz_time=${2:?--fuzz-time needs seconds}; shift 2 ;;
    --long) long=1; shift ;;
    --only) only=${2:?--only needs stages (ci, minimal, tsan, fuzz)}; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ -n $fuzz_time ]] || fuzz_time=$((long ? 300 : 6))
ci_preset=ci-asan
((sanitizers)) || ci_preset=ci

# UBSan stops at its first finding (the build says so too) and prints where it was.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"

# Each stage is a build_<stage> and a test_<stage>; a build only makes what its tests run.
build_ci() { bash scripts/build.sh "$ci_preset"; }
test_ci() {
  local size= rc=0 s3_ours=0
  ((long)) || [[ $ci_preset != ci-asan ]] || size=$ASAN_IT_SIZE
  # One S3 gateway for the whole run: each test process would otherwise start and stop its
  # own (about 25 s each). One that was running before is used and left running.
  if ! bash scripts/s3-server.sh status >/dev/null 2>&1; then
    if bash scripts/s3-server.sh start >/dev/null 2>build/s3-server-start.log; then
      s3_ours=1
    else
      echo "test.sh: no S3 gateway for the run ($(tail -1 build/s3-server-start.log));" \
           "the S3 tests start their own or say why they skip" >&2
    fi
  fi
  # Three at a time on two cores: many tests wait on servers, PostgreSQL or their child
  # processes. Those that time something run alone (RUN_SERIAL, tests/integration and
  # tests/reliability CMakeLists.txt).
  (cd "build/$ci_preset" && STRIPEBACK_IT_SIZE=$size ctest --output-on-failure -j3 --timeout 900) ||
    rc=$?
  ((s3_ours == 0)) || bash scripts/s3-server.sh stop >/dev/null 2>&1 || true
  return $rc
}

build_minimal() {
  bash scripts/build.sh minimal stripeback_cli capi_test capi_storage_test stripeback_static
}
test_minimal() {
  (cd build/minimal && ctest --output-on-failure -j2 --timeout 300 -R '^(CApi\.|no_test_hooks$)') \
    || return 1
  local sb=build/minimal/cli/stripeback out rc
  for to in nfs://127.0.0.1/export/x tape:/dev/sg9; do
    rc=0
    out=$("$sb" backup /etc/hostname --to "$to" --catalog "$(mktemp -d)" 2>&1) || rc=$?
    if ((rc != 2)) || [[ $out != *"this build has no"*"=OFF): $to"* ]]; then
      echo "test.sh: minimal: backup --to $to exited $rc: $out" >&2
      return 1
    fi
  done
  rc=0
  out=$("$sb" keygen "$(mktemp -d)/key" 2>&1) || rc=$?
  if ((rc != 2)) || [[ $out != *"this build has no encryption support (STRIPEBACK_WITH_CRYPTO=OFF)"* ]]; then
    echo "test.sh: minimal: keygen exited $rc: $out" >&2
    return 1
  fi
  echo "test.sh: minimal: nfs://, tape: and encryption refused with exit 2"
}

build_tsan() {
  if ((long)); then
    bash scripts/build.sh tsan
  else
    bash scripts/build.sh tsan catalog_test integration_test stripeback_cli nfs_test \
        tape_drive_test
  fi
}
test_tsan() {
  if ((long)); then
    (cd build/tsan && ctest --output-on-failure -j2 --timeout 900 -L unit) || return 1
    (cd build/tsan && ctest --output-on-failure --timeout 1800 -R "$TSAN_TESTS|^Channels/RoundTrip\.")
  else
    (cd build/tsan && GTEST_FILTER=$TSAN_NFS_FILTER ctest --output-on-failure --timeout 900 \
        -R "$TSAN_TESTS")
  fi
}

# fuzz.sh exits 3 when there is no clang with libFuzzer: the stage is skipped, not failed.
fuzz_skipped() {
  echo "test.sh: fuzz stage skipped: clang++-14 with libFuzzer is not installed" >&2
}
build_fuzz() {
  local rc=0
  bash scripts/fuzz.sh --build-only || rc=$?
  ((rc == 3)) && { fuzz_skipped; return 0; }
  return $rc
}
test_fuzz() {
  local rc=0
  bash scripts/fuzz.sh --no-build --time "$fuzz_time" --jobs 2 || rc=$?
  ((rc == 3)) && { fuzz_skipped; return 0; }
  return $rc
}

run_start=$(date +%s)
bash scripts/install-deps.sh
stages=(ci minimal)
((sanitizers)) && stages+=(tsan)
((fuzz)) && stages+=(fuzz)
# Stages whose tests run in the background right after their build, beside the first
# stage's tests: they start no server and time nothing.
beside=" minimal fuzz "
if [[ -n $only ]]; then
  IFS=, read -r -a named <<<"$only"
  stages=()
  for s in "${named[@]}"; do
    [[ $s == asan ]] && s=ci
    [[ $s =~ ^(ci|minimal|tsan|fuzz)$ ]] || { echo "test.sh: unknown stage '$s'" >&2; exit 2; }
    [[ " ${stages[*]} " == *" $s "* ]] || stages+=("$s")
  done
fi

# The builds after the first run in the background, one after another, each writing
# <stage>.{log,rc,secs} in a directory of this run's own (kept when a stage failed); a
# stage's tests wait for its build. A stage in $beside also runs its tests there, writing
# <stage>.test.{log,rc,secs}.
mkdir -p build
state=$(mktemp -d build/test-stages.XXXXXX)
background_builds() {
  local s start rc
  for s in "$@"; do
    start=$(date +%s)
    rc=0
    "build_$s" >"$state/$s.log" 2>&1 || rc=$?
    echo $(($(date +%s) - start)) >"$state/$s.secs"
    echo $rc >"$state/$s.rc"
    [[ $beside == *" $s "* ]] || continue
    start=$(date +%s)
    ((rc)) || "test_$s" >"$state/$s.test.log" 2>&1 || rc=$?
    echo $(($(date +%s) - start)) >"$state/$s.test.secs"
    echo $rc >"$state/$s.test.rc"
  done
}
# Waits for the tests a stage ran in the background and prints what they printed.
wait_for_tests_beside() {
  local s=$1
  until [[ -f $state/$s.test.rc ]]; do
    if ! kill -0 "$bg_pid" 2>/dev/null && [[ ! -f $state/$s.test.rc ]]; then
      echo "test.sh: $s: the background stopped before its tests ran" >&2
      return 1
    fi
    sleep 2
  done
  [[ ! -f $state/$s.test.log ]] || cat "$state/$s.test.log"
  return "$(<"$state/$s.test.rc")"
}
wait_for_build() {
  local s=$1
  until [[ -f $state/$s.rc ]]; do
    if ! kill -0 "$bg_pid" 2>/dev/null && [[ ! -f $state/$s.rc ]]; then
      echo "test.sh: $s: the background builds stopped before building it" >&2
      echo 0 >"$state/$s.secs"
      return 1
    fi
    sleep 2
  done
  local rc secs
  rc=$(<"$state/$s.rc") secs=$(<"$state/$s.secs")
  if ((rc)); then
    echo "test.sh: $s: build failed after $secs s (beside earlier tests); its log:" >&2
    tail -n 60 "$state/$s.log" >&2
  else
    echo "test.sh: $s: built in $secs s beside earlier tests (log: $state/$s.log)"
  fi
  return "$rc"
}

bg_pid=
if ((${#stages[@]} > 1)); then
  trap '[[ -n $bg_pid ]] && kill -- -"$bg_pid" 2>/dev/null' EXIT
fi
failed=() report=()
for i in "${!stages[@]}"; do
  s=${stages[$i]}
  echo "test.sh: stage $s"
  start=$(date +%s)
  rc=0
  if ((i == 0)); then
    "build_$s" || rc=$?
    build_secs=$(($(date +%s) - start))
    if ((${#stages[@]} > 1)); then
      # Its own process group (set -m), so that an interrupted run stops the builds too;
      # lowest CPU priority and the idle I/O class, so the tests keep their timing.
      set -m
      (renice -n 19 -p "$BASHPID" >/dev/null || true
       ionice -c 3 -p "$BASHPID" || true
       background_builds "${stages[@]:1}") &
      bg_pid=$!
      set +m
    fi
  else
    wait_for_build "$s" || rc=$?
    build_secs=$(<"$state/$s.secs")
  fi
  test_start=$(date +%s)
  if ((i > 0)) && [[ $beside == *" $s "* ]]; then
    ((rc)) || wait_for_tests_beside "$s" || rc=$?
    test_secs=$(cat "$state/$s.test.secs" 2>/dev/null || echo 0)
  else
    ((rc)) || "test_$s" || rc=$?
    test_secs=$(($(date +%s) - test_start))
  fi
  report+=("$(printf '%-7s build %5d s  test %5d s  %s' "$s" "$build_secs" "$test_secs" \
      "$( ((rc)) && echo FAILED || echo ok)")")
  ((rc)) && failed+=("$s")
done
bg_pid=
printf 'test.sh: %s\n' "${report[@]}"
echo "test.sh: later stages' builds (and minimal's and fuzz's tests) ran beside the tests before them; $(($(date +%s) - run_start)) s in all"
if ((${#failed[@]})); then
  echo "test.sh: failed stages: ${failed[*]} (background build logs: $state)" >&2
  exit 1
fi
rm -rf "$state"
