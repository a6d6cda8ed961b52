#!/usr/bin/env bash
# Configures and builds Stripeback. Usage: scripts/build.sh [release|ci|dev|tsan] [target...]
#   release  optimised binary, no tests (build/release)
#   ci       RelWithDebInfo, warnings are errors, tests and benchmarks (build/ci)
#   dev      ASan + UBSan, tests (build/dev)
#   tsan     ThreadSanitizer, tests (build/tsan)
#   minimal  MinSizeRel (-Os) without NFS, tape and encryption (STRIPEBACK_WITH_NFS/TAPE/
#            CRYPTO=OFF), xxhash compiled in: the embedded footprint (build/minimal)
# With targets, only those are built (e.g. `scripts/build.sh tsan catalog_test`).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
shift || true
case "$preset" in
  release) extra=(-DSTRIPEBACK_TESTS=OFF -DSTRIPEBACK_BENCH=OFF) ;;
  ci|dev|tsan|minimal) extra=() ;;
  *) echo "build.sh: unknown preset '$preset' (release, ci, dev, tsan or minimal)" >&2; exit 2 ;;
esac
targets=()
(($#)) && targets=(--target "$@")
cmake --preset "$preset" "${extra[@]}" >/dev/null
cmake --build "build/$preset" -j2 "${targets[@]}"
