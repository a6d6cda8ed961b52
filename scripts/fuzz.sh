#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, build/fuzz with clang++-14) and runs each for
# the same time, --jobs of them at once. Usage:
#   scripts/fuzz.sh [--time SECONDS] [--jobs N] [--out DIR] [--build-only|--no-build]
#                   [--list] [target...]
#   --time SECONDS  how long each target runs (default 10)
#   --jobs N        how many targets run at once, one core each (default 1)
#   --out DIR       where crashes, new corpus entries and logs go
#                   (default /var/tmp/stripeback-fuzz; never the repository)
#   --build-only    build the targets and stop; --no-build runs what is built
#   --list          print the target names and exit
#   target...       some of the targets (default: all)
# Each target starts from its committed seeds (tests/fuzz/corpus/<target>, only read) plus
# what earlier runs left in DIR/corpus/<target>, where new inputs go. A crash or a broken
# invariant is saved as DIR/crashes/<target>/crash-*; replay it with
#   build/fuzz/tests/fuzz/fuzz_<target> DIR/crashes/<target>/crash-...
# Exit status: 0 no crash, 1 a target crashed (or the build failed), 2 usage, 3 no usable
# clang (nothing run).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(piece_header frame_header piece_footer piece_trailer catalog_scan catalog_payload
         tape_label nfs_url units s3_xml s3_url)
time_s=10
jobs=1
out=/var/tmp/stripeback-fuzz
build=1 run=1
chosen=()
while (($#)); do
  case "$1" in
    --time) time_s=${2:?--time needs a number of seconds}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --build-only) run=0; shift ;;
    --no-build) build=0; shift ;;
    --list) printf '%s\n' "${TARGETS[@]}"; exit 0 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1'" >&2; exit 2 ;;
    *)
      if [[ " ${TARGETS[*]} " != *" $1 "* ]]; then
        echo "fuzz.sh: unknown target '$1' (known: ${TARGETS[*]})" >&2; exit 2
      fi
      chosen+=("$1"); shift ;;
  esac
done
[[ $time_s =~ ^[0-9]+$ && $time_s -gt 0 ]] || { echo "fuzz.sh: --time wants seconds above 0" >&2; exit 2; }
[[ $jobs =~ ^[0-9]+$ && $jobs -gt 0 ]] || { echo "fuzz.sh: --jobs wants a number above 0" >&2; exit 2; }
((build || run)) || { echo "fuzz.sh: --build-only and --no-build leave nothing to do" >&2; exit 2; }
((${#chosen[@]})) || chosen=("${TARGETS[@]}")

# libFuzzer ships in libclang-rt-14-dev; without it clang links no fuzzer.
if ! command -v clang++-14 >/dev/null ||
   ! compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  echo "fuzz.sh: skipped: clang++-14 with libFuzzer is not installed" \
       "(apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 3
fi

if ((build)); then
  cmake --preset fuzz >/dev/null
  cmake --build build/fuzz -j2 --target fuzz_targets
fi
((run)) || exit 0

# Runs one target and prints its line of the table; fails when it crashed.
fuzz_one() {
  local t=$1 log="$out/logs/$1.log" before start rc=0 secs runs crashes corpus
  mkdir -p "$out/crashes/$t" "$out/corpus/$t"
  before=$(find "$out/crashes/$t" -type f | wc -l)
  start=$(date +%s)
  # -timeout: one input taking over 10 s is a finding too (a decoder must not hang).
  "build/fuzz/tests/fuzz/fuzz_$t" -max_total_time="$time_s" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$out/crashes/$t/" \
      "$out/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  secs=$(($(date +%s) - start))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  crashes=$(($(find "$out/crashes/$t" -type f | wc -l) - before))
  corpus=$(find "$out/corpus/$t" -type f | wc -l)
  printf '%-16s %12s %8s %8s %8s\n' "$t" "${runs:-?}" "$secs" "$corpus" "$crashes"
  if ((rc != 0 || crashes > 0)); then
    echo "fuzz.sh: $t failed (exit $rc); see $log and $out/crashes/$t/" >&2
    grep -m5 -E 'ERROR|invariant failed|SUMMARY' "$log" >&2 || true
    return 1
  fi
}

mkdir -p "$out/crashes" "$out/corpus" "$out/logs"
status=0
printf '%-16s %12s %8s %8s %8s\n' target executions seconds corpus crashes
# Up to --jobs targets at once; each is one process on one core.
running=0
for t in "${chosen[@]}"; do
  if ((running >= jobs)); then
    wait -n || status=1
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
