#!/usr/bin/env bash
# CPU per GiB (user + sys, GNU time) of backup, restore and validate of a 2 GiB demo data
# set with 2 channels, uncompressed, for two builds one right after the other, page cache
# dropped before each command. Run as root:
#   AFTER=build/release/cli/stripeback BEFORE=/path/to/older/stripeback bash bench/cpu_per_gib.sh
# ROUNDS="1 2 3" (default) and W (work directory, default /var/tmp/stripeback-cpu).
set -euo pipefail
W=${W:-/var/tmp/stripeback-cpu}
AFTER=${AFTER:-build/release/cli/stripeback}
BEFORE=${BEFORE:?set BEFORE to the stripeback binary to compare with}
mkdir -p "$W"
DS=${DS:-$W/ds}
[[ -d $DS ]] || "$AFTER" demo-data --size 2G "$DS" >/dev/null
bytes=$(du -sb "$DS" | cut -f1)
gib=$(echo "$bytes/1073741824" | bc -l)
for round in ${ROUNDS:-1 2 3}; do
for name in before after; do
  if [[ $name == before ]]; then B=$BEFORE; else B=$AFTER; fi
  rm -rf $W/p-$name $W/c-$name $W/r-$name; sync; echo 3 > /proc/sys/vm/drop_caches
  t=$( { /usr/bin/time -f "%e %U %S %M" $B backup "$DS" --to $W/p-$name --catalog $W/c-$name --channels 2 >/dev/null; } 2>&1 | tail -1)
  echo "$round $name backup $t" | awk -v g=$gib '{printf "%s %-6s %-8s %6.2f s  cpu/GiB %.3f  rss %d MB\n",$1,$2,$3,$4,($5+$6)/g,$7/1024}'
  sync; echo 3 > /proc/sys/vm/drop_caches
  t=$( { /usr/bin/time -f "%e %U %S %M" $B restore --to $W/r-$name --catalog $W/c-$name --channels 2 >/dev/null; } 2>&1 | tail -1)
  echo "$round $name restore $t" | awk -v g=$gib '{printf "%s %-6s %-8s %6.2f s  cpu/GiB %.3f  rss %d MB\n",$1,$2,$3,$4,($5+$6)/g,$7/1024}'
  sync; echo 3 > /proc/sys/vm/drop_caches
  t=$( { /usr/bin/time -f "%e %U %S %M" $B validate --catalog $W/c-$name >/dev/null; } 2>&1 | tail -1)
  echo "$round $name validate $t" | awk -v g=$gib '{printf "%s %-6s %-8s %6.2f s  cpu/GiB %.3f  rss %d MB\n",$1,$2,$3,$4,($5+$6)/g,$7/1024}'
  rm -rf $W/r-$name
done
done
