#!/usr/bin/env bash
# Configures and builds Stripeback. Usage:
#   scripts/build.sh [release|ci|ci-asan|dev|tsan|minimal] [target...]
#   release  optimised binary, no tests (build/release)
#   ci       RelWithDebInfo, warnings are errors, tests and benchmarks (build/ci)
#   ci-asan  ASan + UBSan at -O1 -g1, warnings are errors, tests, no benchmarks: the build
#            the ci stage of scripts/test.sh runs the whole suite in (build/ci-asan)
#   dev      ASan + UBSan at -O1 -g, tests and benchmarks (build/dev)
#   tsan     ThreadSanitizer, tests (build/tsan)
#   minimal  MinSizeRel (-Os) without NFS, tape and encryption (STRIPEBACK_WITH_NFS/TAPE/
#            CRYPTO=OFF), xxhash compiled in: the embedded footprint (build/minimal)
# ci-asan and tsan compile the product libraries and the CLI as unity sources
# (docs/testing.md).
# With targets, only those are built (e.g. `scripts/build.sh tsan catalog_test`).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
shift || true
case "$preset" in
  release) extra=(-DSTRIPEBACK_TESTS=OFF -DSTRIPEBACK_BENCH=OFF) ;;
  ci|ci-asan|dev|tsan|minimal) extra=() ;;
  *) echo "build.sh: unknown preset '$preset' (release, ci, ci-asan, dev, tsan or minimal)" >&2
     exit 2 ;;
esac
targets=()
(($#)) && targets=(--target "$@")
cmake --preset "$preset" "${extra[@]}" >/dev/null
cmake --build "build/$preset" -j2 "${targets[@]}"
