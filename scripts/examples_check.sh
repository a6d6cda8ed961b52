#!/usr/bin/env bash
# Installs a build of libstripeback into a temporary prefix and builds the examples against
# it as an embedder would: with pkg-config (shared, and the static archive) and with CMake's
# find_package(Stripeback); then runs each: a backup with the firmware example, a listing
# and validation with the C++ one. Usage: scripts/examples_check.sh BUILD_DIR
# (ctest runs it as CApi.examples). A sanitized build's library needs its sanitizer runtime
# in the programs too: SB_EXAMPLES_FLAGS (ctest sets it from the build, e.g.
# -fsanitize=address,undefined) is added to every compile and link.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: examples_check.sh BUILD_DIR}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/sb-examples-XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/stripeback/stripeback.h lib/libstripeback.a lib/pkgconfig/stripeback.pc \
         lib/cmake/Stripeback/StripebackConfig.cmake; do
  [[ -e $prefix/$f ]] || { echo "examples_check: '$prefix/$f' was not installed" >&2; exit 1; }
done
ls "$prefix"/lib/libstripeback.so.* >/dev/null

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
read -r -a sanitize <<<"${SB_EXAMPLES_FLAGS:-}"
ex=$src/examples
bin=$work/bin
mkdir -p "$bin"
# pkg-config, shared library
cc -std=c99 -Wall -Werror "${sanitize[@]}" "$ex/backup_firmware.c" -o "$bin/backup_firmware" \
   $(pkg-config --cflags --libs stripeback) -Wl,-rpath,"$prefix/lib"
c++ -std=c++17 -Wall -Werror "${sanitize[@]}" "$ex/list_backups.cpp" -o "$bin/list_backups" \
   $(pkg-config --cflags --libs stripeback) -Wl,-rpath,"$prefix/lib"
# pkg-config, the static archive (its dependencies from Requires.private / Libs.private)
cc -std=c99 -Wall -Werror "${sanitize[@]}" "$ex/backup_firmware.c" -o "$bin/backup_firmware_static" \
   $(pkg-config --cflags stripeback) "$prefix/lib/libstripeback.a" \
   $(pkg-config --libs --static stripeback | sed 's/-lstripeback//')
if ldd "$bin/backup_firmware_static" | grep -q libstripeback; then
  echo "examples_check: the static example links libstripeback.so" >&2
  exit 1
fi
# CMake find_package
cmake -S "$ex" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_RPATH="$prefix/lib" -DCMAKE_C_FLAGS="${sanitize[*]}" \
      -DCMAKE_CXX_FLAGS="${sanitize[*]}" >/dev/null
cmake --build "$work/cmake" >/dev/null

data=$work/data
mkdir -p "$data/src/sub"
head -c 3000000 /dev/urandom >"$data/src/a.dbf"
head -c 70000 /dev/urandom >"$data/src/sub/b.dbf"
n=0
for b in "$bin/backup_firmware" "$bin/backup_firmware_static" "$work/cmake/backup_firmware" \
         "$work/cmake/backup_firmware_static"; do
  n=$((n + 1))
  out=$("$b" "$data/src" "$data/dest$n" "$data/catalog" 2 2>/dev/null)
  [[ $out == "backup $n complete: 2 files, 3070000 bytes read"* ]] || {
    echo "examples_check: $b printed: $out" >&2; exit 1; }
done
rc=0
"$bin/backup_firmware" "$data/src" "nfs-like:/x" "$data/catalog" 0 2>/dev/null || rc=$?
((rc == 2)) || { echo "examples_check: bad channels exited $rc, not 2" >&2; exit 1; }
for l in "$bin/list_backups" "$work/cmake/list_backups"; do
  out=$("$l" "$data/catalog")
  [[ $out == *"backup 4 validated: 2 files"* ]] || {
    echo "examples_check: $l printed: $out" >&2; exit 1; }
done
echo "examples_check: 6 example builds (pkg-config shared and static, CMake shared and static, C and C++) ran"
