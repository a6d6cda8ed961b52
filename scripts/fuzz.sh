#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, build/fuzz with clang++-14) and runs each in
# turn. Usage:
#   scripts/fuzz.sh [--time SECONDS] [--out DIR] [--list] [target...]
#   --time SECONDS  how long each target runs (default 20)
#   --out DIR       where crashes, new corpus entries and logs go
#                   (default /var/tmp/stripeback-fuzz; never the repository)
#   --list          print the target names and exit
#   target...       some of the targets (default: all)
# Each target starts from its committed seeds (tests/fuzz/corpus/<target>, only read) plus
# what earlier runs left in DIR/corpus/<target>, where new inputs go. A crash or a broken
# invariant is saved as DIR/crashes/<target>/crash-*; replay it with
#   build/fuzz/tests/fuzz/fuzz_<target> DIR/crashes/<target>/crash-...
# Exit status: 0 no crash, 1 a target crashed, 2 usage, 3 no usable clang (nothing run).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(piece_header frame_header piece_footer piece_trailer catalog_scan catalog_payload
         tape_label nfs_url units)
time_s=20
out=/var/tmp/stripeback-fuzz
chosen=()
while (($#)); do
  case "$1" in
    --time) time_s=${2:?--time needs a number of seconds}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --list) printf '%s\n' "${TARGETS[@]}"; exit 0 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1'" >&2; exit 2 ;;
    *)
      if [[ " ${TARGETS[*]} " != *" $1 "* ]]; then
        echo "fuzz.sh: unknown target '$1' (known: ${TARGETS[*]})" >&2; exit 2
      fi
      chosen+=("$1"); shift ;;
  esac
done
[[ $time_s =~ ^[0-9]+$ && $time_s -gt 0 ]] || { echo "fuzz.sh: --time wants seconds above 0" >&2; exit 2; }
((${#chosen[@]})) || chosen=("${TARGETS[@]}")

# libFuzzer ships in libclang-rt-14-dev; without it clang links no fuzzer.
if ! command -v clang++-14 >/dev/null ||
   ! compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  echo "fuzz.sh: skipped: clang++-14 with libFuzzer is not installed" \
       "(apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 3
fi

cmake --preset fuzz >/dev/null
cmake --build build/fuzz -j2 --target fuzz_targets

mkdir -p "$out/crashes" "$out/corpus" "$out/logs"
status=0
printf '%-16s %12s %8s %8s %8s\n' target executions seconds corpus crashes
for t in "${chosen[@]}"; do
  mkdir -p "$out/crashes/$t" "$out/corpus/$t"
  log="$out/logs/$t.log"
  before=$(find "$out/crashes/$t" -type f | wc -l)
  start=$(date +%s)
  rc=0
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
    status=1
    echo "fuzz.sh: $t failed (exit $rc); see $log and $out/crashes/$t/" >&2
    grep -m5 -E 'ERROR|invariant failed|SUMMARY' "$log" >&2 || true
  fi
done
exit $status
