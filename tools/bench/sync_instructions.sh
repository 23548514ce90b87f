#!/bin/sh
# Instructions per work-item of a first sync point on simd_cpu (see sync_instructions.cpp):
#   tools/bench/sync_instructions.sh BUILD_DIR [ITEMS=256] [barrier|reduce]
# Needs valgrind (Debian: valgrind). Deterministic: the same binary gives the same count.
set -eu
exe="$1/tools/bench/ki_sync_instructions"
items="${2:-256}"
kind="${3:-barrier}"
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$exe" "$1" "$items" "$kind" 2>&1 |
    sed -n 's/.*refs: *//p' | tr -d ,
}
a=$(count 20)
b=$(count 40)
echo "$kind, $items work-items per group: $(( (b - a) / (20 * 64 * items) )) instructions per work-item"
