#!/usr/bin/env bash
# The test command; `.ci/run` calls exactly this. Usage:
#   scripts/test.sh [--no-sanitizers] [--no-fuzz] [--fuzz-time SECONDS] [--long]
#                   [--only STAGE[,STAGE...]]
# By default, in this order:
#   ci     install what is needed, build build/ci (warnings are errors) and run the whole
#          suite (unit and integration) with ctest
#   minimal  build build/minimal (for size) without NFS, tape, encryption and test hooks,
#          xxhash compiled in (STRIPEBACK_WITH_NFS/TAPE/CRYPTO=OFF, STRIPEBACK_TEST_HOOKS=OFF):
#          the library, the C API tests and the CLI; run the C API tests, check that the
#          library and the CLI hold no test hook (tests/no_test_hooks_check.sh) and that the
#          CLI refuses nfs://, tape: and keys (exit 2)
#   asan   build build/dev (ASan + UBSan, a finding fails the test) and run every unit test
#          (the fuzz corpora replays included) and the integration tests in ASAN_IT
#   tsan   build build/tsan (ThreadSanitizer) and run the tests in TSAN_TESTS: catalog
#          writers on threads and processes, multi-channel backups and restores, the NFS
#          client, the tape I/O helper
#   fuzz   scripts/fuzz.sh for --fuzz-time seconds per target (default 20); skipped, and
#          said so, where clang++-14 with libFuzzer is not installed
# --no-sanitizers skips asan and tsan, --no-fuzz skips fuzz, --only runs just the stages
# named. --long runs every integration test under asan, every unit test and the 1 GiB
# round trips under tsan, and fuzzes 300 s per target (unless --fuzz-time says otherwise).
# Every stage runs even if an earlier one failed; the exit status is 1 if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."

# Integration tests under ASan + UBSan (about a minute): every suite of integration_test
# that runs on the small data sets. Left to --long: the 1 GiB round trips, the channel
# controls (rates and deadlines, timed), and the tape and NFS tests.
ASAN_IT_SUITES=(RoundTripVariants SelectiveRestore Corruption Crash Overwrite JsonOutput JsonParser
                SpecialFiles CatalogTail NoSpace CompressIncompressible CompressUsage
                Levels/Compress Compression/Encrypt EncryptCli Validate Checker Usage Incremental
                DeltaRestore SourceValidation ValidateSome Status Media Report HostileTarget
                Day2Resume Day2Backup Day2Report Day2Delete HostileCatalog)
ASAN_IT="^($(IFS='|'; echo "${ASAN_IT_SUITES[*]}"))\\."
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

sanitizers=1 fuzz=1 long=0 fuzz_time= only=
while (($#)); do
  case "$1" in
    --no-sanitizers) sanitizers=0; shift ;;
    --no-fuzz) fuzz=0; shift ;;
    --fuzz-time) fuzz_time=${2:?--fuzz-time needs seconds}; shift 2 ;;
    --long) long=1; shift ;;
    --only) only=${2:?--only needs stages (ci, minimal, asan, tsan, fuzz)}; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ -n $fuzz_time ]] || fuzz_time=$((long ? 300 : 20))

# UBSan stops at its first finding (the build says so too) and prints where it was.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"

stage_ci() {
  bash scripts/build.sh ci || return 1
  # Integration tests are marked RUN_SERIAL: they never overlap each other.
  (cd build/ci && ctest --output-on-failure -j2 --timeout 900)
}

stage_asan() {
  if ((long)); then
    bash scripts/build.sh dev || return 1
    (cd build/dev && ctest --output-on-failure -j2 --timeout 900 -L unit) || return 1
    (cd build/dev && ctest --output-on-failure -j2 --timeout 1800 -L integration)
  else
    # The unit test binaries and what the integration tests run; not the benchmarks.
    bash scripts/build.sh dev util_test io_test catalog_test tape_test engine_test \
        integration_test stripeback_cli fuzz_replays capi_test capi_storage_test || return 1
    (cd build/dev && ctest --output-on-failure -j2 --timeout 900 -L unit) || return 1
    (cd build/dev && ctest --output-on-failure --timeout 900 -R "$ASAN_IT")
  fi
}

stage_tsan() {
  if ((long)); then
    bash scripts/build.sh tsan || return 1
    (cd build/tsan && ctest --output-on-failure -j2 --timeout 900 -L unit) || return 1
    (cd build/tsan && ctest --output-on-failure --timeout 1800 -R "$TSAN_TESTS|^Channels/RoundTrip\.")
  else
    bash scripts/build.sh tsan catalog_test integration_test stripeback_cli nfs_test \
        tape_drive_test || return 1
    (cd build/tsan && ctest --output-on-failure --timeout 900 -R "$TSAN_TESTS")
  fi
}

stage_minimal() {
  bash scripts/build.sh minimal stripeback_cli capi_test capi_storage_test stripeback_static || return 1
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

stage_fuzz() {
  local rc=0
  bash scripts/fuzz.sh --time "$fuzz_time" || rc=$?
  if ((rc == 3)); then
    echo "test.sh: fuzz stage skipped: clang++-14 with libFuzzer is not installed" >&2
    return 0
  fi
  return $rc
}

bash scripts/install-deps.sh
stages=(ci minimal)
((sanitizers)) && stages+=(asan tsan)
((fuzz)) && stages+=(fuzz)
if [[ -n $only ]]; then
  IFS=, read -r -a stages <<<"$only"
  for s in "${stages[@]}"; do
    [[ $s =~ ^(ci|minimal|asan|tsan|fuzz)$ ]] || { echo "test.sh: unknown stage '$s'" >&2; exit 2; }
  done
fi
failed=() report=()
for s in "${stages[@]}"; do
  echo "test.sh: stage $s"
  start=$(date +%s)
  rc=0
  "stage_$s" || rc=$?
  secs=$(($(date +%s) - start))
  report+=("$(printf '%-5s %5d s  %s' "$s" "$secs" "$( ((rc)) && echo FAILED || echo ok)")")
  ((rc)) && failed+=("$s")
done
printf 'test.sh: %s\n' "${report[@]}"
if ((${#failed[@]})); then
  echo "test.sh: failed stages: ${failed[*]}" >&2
  exit 1
fi
