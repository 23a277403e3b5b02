#!/usr/bin/env bash
# Times the ARC reader (every record of every file read, gzip members
# decoded one by one, blocks in memory) against `gzip -dc` of the same
# files, on a corpus made by gen_arc_corpus.py.
#
#   scripts/bench_arc.sh [FILES [RECORDS_PER_FILE]]     (default 4 x 1500, ~70 MB gz)
#
# Env: BENCH_DIR (corpus cache, default /tmp/ukvs-bench-arc), GEN (path of
# gen_arc_corpus.py, default ../shared/tools/gen_arc_corpus.py),
# CARGO_TARGET_DIR as usual. Prints wall and user seconds and the ratios;
# on a loaded machine compare user times (CPU), on an idle one wall times.
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-4}
recs=${2:-1500}
dir=${BENCH_DIR:-/tmp/ukvs-bench-arc}/${files}x${recs}
gen=${GEN:-../shared/tools/gen_arc_corpus.py}

if [ ! -d "$dir/gz" ]; then
    python3 "$gen" --out "$dir/gz" --files "$files" --records-per-file "$recs" --seed 1 >&2
    python3 "$gen" --out "$dir/plain" --plain --files "$files" --records-per-file "$recs" --seed 1 >&2
fi

cargo build --release --bench arc_read >&2
bin=$(cargo bench --bench arc_read --no-run --message-format=json 2>/dev/null \
    | sed -n 's/.*"executable":"\([^"]*arc_read[^"]*\)".*/\1/p' | tail -1)
[ -x "$bin" ] || { echo "arc_read bench binary not found" >&2; exit 1; }

# run LABEL CMD...: prints "LABEL wall user" and remembers them.
declare -A WALL USER
run() {
    local label=$1; shift
    local out
    out=$( { /usr/bin/time -f "%e %U" "$@" > /dev/null; } 2>&1 | tail -1 )
    WALL[$label]=${out% *}
    USER[$label]=${out#* }
    printf '%-22s wall %6.2f s  user %6.2f s\n' "$label" "${WALL[$label]}" "${USER[$label]}"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

gz=("$dir"/gz/*.arc.gz)
plain=("$dir"/plain/*.arc)
echo "corpus: $dir ($(du -sh "$dir/gz" | cut -f1) gz, $(du -sh "$dir/plain" | cut -f1) plain), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
run "gzip -dc" sh -c 'gzip -dc "$@"' _ "${gz[@]}"
run "arc_read gz -j1" "$bin" -j 1 "${gz[@]}"
run "arc_read gz -j2" "$bin" -j 2 "${gz[@]}"
run "cat plain" sh -c 'cat "$@"' _ "${plain[@]}"
run "arc_read plain -j1" "$bin" -j 1 "${plain[@]}"
"$bin" -j 1 "${gz[@]}"
echo "gz -j2 / gzip -dc: wall $(ratio "${WALL[arc_read gz -j2]}" "${WALL[gzip -dc]}")x, user $(ratio "${USER[arc_read gz -j2]}" "${USER[gzip -dc]}")x (target <= 0.5x wall)"
echo "gz -j1 / gzip -dc: wall $(ratio "${WALL[arc_read gz -j1]}" "${WALL[gzip -dc]}")x, user $(ratio "${USER[arc_read gz -j1]}" "${USER[gzip -dc]}")x"
