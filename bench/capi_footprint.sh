#!/usr/bin/env bash
# The footprint of an embedded libstripeback (docs/embedding.md, docs/benchmarks.md): sizes
# of the stripped example statically linked against libstripeback.a (its system libraries
# shared) and of the stripped CLI, the resident set of a program that opened a catalog, and
# the peak resident set of a 2-channel backup of 1 GiB of demo data.
# Usage: bench/capi_footprint.sh BUILD_DIR [SIZE]   (BUILD_DIR fully built, e.g. build/ci)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: capi_footprint.sh BUILD_DIR [SIZE]}" && pwd)
size=${2:-1G}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/sb-footprint-XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
export PKG_CONFIG_PATH=$work/prefix/lib/pkgconfig
static_link() {
  cc -O2 -Wl,--gc-sections "$1" -o "$2" $(pkg-config --cflags stripeback) "$work/prefix/lib/libstripeback.a" \
     $(pkg-config --libs --static stripeback | sed 's/-lstripeback//')
  strip "$2"
}
static_link "$src/examples/backup_firmware.c" "$work/backup_firmware"
static_link "$src/bench/capi_footprint.c" "$work/capi_footprint"
cp "$build/cli/stripeback" "$work/cli" && strip "$work/cli"
# A build with STRIPEBACK_XXHASH_HEADER_ONLY needs no libxxhash: then a fully static
# program links (every system library from its .a).
if ! grep -q libxxhash "$PKG_CONFIG_PATH/stripeback.pc"; then
  cc -O2 -static -Wl,--gc-sections "$src/examples/backup_firmware.c" -o "$work/backup_firmware_full_static" \
     $(pkg-config --cflags stripeback) "$work/prefix/lib/libstripeback.a" \
     $(pkg-config --libs --static stripeback | sed 's/-lstripeback//')
  strip "$work/backup_firmware_full_static"
  printf 'stripped example, fully static (-static): %s bytes\n' \
    "$(stat -c %s "$work/backup_firmware_full_static")"
fi
printf 'stripped example, libstripeback.a linked in: %s bytes\n' "$(stat -c %s "$work/backup_firmware")"
printf 'stripped CLI (dynamic: no static spdlog): %s bytes\n' "$(stat -c %s "$work/cli")"
printf 'libstripeback.a: %s bytes; libstripeback.so stripped: ' "$(stat -c %s "$work/prefix/lib/libstripeback.a")"
cp "$work/prefix/lib/libstripeback.so.0" "$work/so" && strip "$work/so" && stat -c %s "$work/so"
"$work/capi_footprint" idle "$work/catalog"
"$work/cli" demo-data "$work/data" --size "$size" >/dev/null
"$work/capi_footprint" backup "$work/data" "$work/dest" "$work/catalog"
