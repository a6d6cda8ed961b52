#!/usr/bin/env bash
# The test command: installs what is needed, builds with warnings as errors, and runs the
# whole test suite (unit and integration) with ctest. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh ci
cd build/ci
# Integration tests are marked RUN_SERIAL: they never overlap each other.
ctest --output-on-failure -j2 --timeout 900
