#!/usr/bin/env bash
# The seed formats' trees: `ukvs index` of a Kulturarw3 tree of many small
# objects and of a Nedlib harvest, against reading every file of the same
# tree (`find TREE -type f | xargs cat > /dev/null`), side by side in one
# run, with the trees as just written (in the page cache) and evicted from
# it before each run.
#
#   scripts/bench_seeds.sh [OBJECTS] [WORKDIR]     # OBJECTS default 100000
#
# Target: indexing runs at >= 50 % of the speed of reading the files, that
# is in at most 2x the time of `find | xargs cat`.
set -euo pipefail
export LC_ALL=C

OBJECTS=${1:-100000}
WORK=${2:-$(mktemp -d)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$WORK"
command -v hyperfine > /dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 2; }
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
UKVS=$WORK/ukvs
cp "$CARGO_TARGET_DIR/release/ukvs" "$UKVS"

K3=$WORK/k3-$OBJECTS
ND=$WORK/nedlib-$((OBJECTS / 2))
[ -d "$K3" ] || python3 "$ROOT/scripts/gen_kulturarw3.py" --out "$K3" --objects "$OBJECTS" --seed 1 > /dev/null
[ -d "$ND" ] || python3 "$ROOT/scripts/gen_nedlib.py" --out "$ND" --objects $((OBJECTS / 2)) --seed 1 > /dev/null

# Drops a tree's files from the page cache.
EVICT="python3 -c 'import os, sys
for d in sys.argv[1:]:
    for r, _, fs in os.walk(d):
        for f in fs:
            fd = os.open(os.path.join(r, f), os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)'"

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs"
for tree in "$K3" "$ND"; do
    echo "tree: $tree: $(find "$tree" -type f | wc -l) files, $(du -sh "$tree" | cut -f1)"
    "$UKVS" index -q --format cdxj "$tree" > "$WORK/out.cdxj" || true
    echo "  indexed: $(wc -l < "$WORK/out.cdxj") captures"
    hyperfine -w 1 -r 5 -N \
        -n "cached: find | xargs cat" "sh -c 'find $tree -type f -print0 | xargs -0 cat > /dev/null'" \
        -n "cached: ukvs index" "$UKVS index -q --format cdxj -o $WORK/out.cdxj $tree"
    hyperfine -r 5 --prepare "$EVICT $tree" \
        -n "evicted: find | xargs cat" "find $tree -type f -print0 | xargs -0 cat > /dev/null" \
        -n "evicted: ukvs index" "$UKVS index -q --format cdxj -o $WORK/out.cdxj $tree"
done
