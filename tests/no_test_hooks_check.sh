#!/usr/bin/env bash
# A build without test hooks (STRIPEBACK_TEST_HOOKS=OFF) ships none: the strings of its
# library (libstripeback.a and libstripeback.so, capi/) and of its CLI name none of the
# hooks' variables, the library does not name STRIPEBACK_IO either (the CLI reads it), and
# the CLI runs as usual with malformed hook values in its environment. Usage:
#   tests/no_test_hooks_check.sh BUILD_DIR
# (ctest runs it as no_test_hooks in such a build; scripts/test.sh's minimal stage runs it).
# The library and the CLI must have been built (targets stripeback_static,
# stripeback_shared, stripeback_cli).
set -euo pipefail
build=${1:?usage: no_test_hooks_check.sh BUILD_DIR}
hooks=(STRIPEBACK_CRASH_AT STRIPEBACK_FAKE_NOW STRIPEBACK_FAULTS
       STRIPEBACK_TEST_NFS_VERIFIER_CHANGE)
cli=$build/cli/stripeback
libs=("$build/capi/libstripeback.a" "$build/capi/libstripeback.so")

failed=0
# Prints the names from the rest of the arguments that the strings of file $1 contain.
named_in() {
  local file=$1 name
  shift
  local text
  text=$(strings -a "$file")
  for name in "$@"; do
    if grep -qF -- "$name" <<<"$text"; then echo "$name"; fi
  done
}
check() {
  local file=$1 found
  shift
  if [[ ! -e $file ]]; then
    echo "no_test_hooks_check: '$file' is missing: build stripeback_static," \
         "stripeback_shared and stripeback_cli first" >&2
    failed=1
    return
  fi
  found=$(named_in "$(readlink -f "$file")" "$@")
  if [[ -n $found ]]; then
    echo "no_test_hooks_check: '$file' names" $found "(none may be in a build without test hooks)" >&2
    failed=1
  fi
}
for lib in "${libs[@]}"; do check "$lib" "${hooks[@]}" STRIPEBACK_IO; done
check "$cli" "${hooks[@]}"
((failed == 0)) || exit 1

# The CLI neither says it has hooks nor looks at their variables.
if "$cli" --version | grep -qF "(test hooks)"; then
  echo "no_test_hooks_check: '$cli --version' says it has test hooks" >&2
  exit 1
fi
catalog=$(mktemp -d "${TMPDIR:-/tmp}/sb-nohooks-XXXXXX")
trap 'rm -rf "$catalog"' EXIT
rc=0
out=$(STRIPEBACK_CRASH_AT=x:0 STRIPEBACK_FAKE_NOW=never STRIPEBACK_FAULTS=scribble \
      STRIPEBACK_TEST_NFS_VERIFIER_CHANGE=maybe "$cli" list --catalog "$catalog" 2>&1) || rc=$?
if ((rc != 0)); then
  echo "no_test_hooks_check: 'stripeback list' with malformed hook values exited $rc: $out" >&2
  exit 1
fi
echo "no_test_hooks_check: no test hook in $cli, ${libs[*]}"
