#!/usr/bin/env bash
# Configures and builds Stripeback. Usage: scripts/build.sh [release|ci|dev]
#   release  optimised binary, no tests (build/release)
#   ci       RelWithDebInfo, warnings are errors, tests and benchmarks (build/ci)
#   dev      ASan + UBSan, tests (build/dev)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
case "$preset" in
  release) extra=(-DSTRIPEBACK_TESTS=OFF -DSTRIPEBACK_BENCH=OFF) ;;
  ci|dev) extra=() ;;
  *) echo "build.sh: unknown preset '$preset' (release, ci or dev)" >&2; exit 2 ;;
esac
cmake --preset "$preset" "${extra[@]}" >/dev/null
cmake --build "build/$preset" -j2
