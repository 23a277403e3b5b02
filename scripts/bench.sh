#!/usr/bin/env bash
# Times `ukvs index` against its peers on the same generated ARC corpus, in
# one run on one machine, and prints the ratios.
#
#   scripts/bench.sh                      # 4 files x 5000 records (~250 MB gz)
#   FILES=10 RECORDS=7800 scripts/bench.sh   # the ~1 GB corpus of DESIGN.md
#
# Environment: FILES, RECORDS, SEED (corpus), THREADS (ukvs -j, default 2),
# REPS (runs per tool, median reported, default 3), BENCH_DIR (where corpora
# and the pywb venv live, default target/bench), GEN (path of
# gen_arc_corpus.py, default ../shared/tools/gen_arc_corpus.py).
#
# Peers: `gzip -dc` (decompression alone), pywb's `cdx-indexer -j`
# (installed into a venv under BENCH_DIR when missing) and `cdxj-indexer`
# (skipped when not installed: pip install -r scripts/requirements.txt).
# Targets (DESIGN.md section 5, 2 cores): sorted index of .arc.gz in at most
# 0.5x the wall time of `gzip -dc`; plain .arc at least 20x faster than pywb.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FILES=${FILES:-4}
RECORDS=${RECORDS:-5000}
SEED=${SEED:-1}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
BENCH_DIR=${BENCH_DIR:-$ROOT/target/bench}
GEN=${GEN:-$ROOT/../shared/tools/gen_arc_corpus.py}

mkdir -p "$BENCH_DIR"
GZ="$BENCH_DIR/gz-$FILES-$RECORDS-$SEED"
PLAIN="$BENCH_DIR/plain-$FILES-$RECORDS-$SEED"
if [ ! -d "$GZ" ]; then
    python3 "$GEN" --out "$GZ" --files "$FILES" --records-per-file "$RECORDS" --seed "$SEED" --gz
fi
if [ ! -d "$PLAIN" ]; then
    python3 "$GEN" --out "$PLAIN" --files "$FILES" --records-per-file "$RECORDS" --seed "$SEED" --plain
fi

(cd "$ROOT" && cargo build --release --quiet)
UKVS="${CARGO_TARGET_DIR:-$ROOT/target}/release/ukvs"

PYWB_INDEXER=$(command -v cdx-indexer || true)
if [ -z "$PYWB_INDEXER" ]; then
    if [ ! -x "$BENCH_DIR/venv/bin/cdx-indexer" ]; then
        echo "installing pywb into $BENCH_DIR/venv ..." >&2
        python3 -m venv "$BENCH_DIR/venv"
        "$BENCH_DIR/venv/bin/pip" install --quiet pywb
    fi
    PYWB_INDEXER="$BENCH_DIR/venv/bin/cdx-indexer"
fi
CDXJ_INDEXER=$(command -v cdxj-indexer || true)

gz_files=("$GZ"/*.arc.gz)
plain_files=("$PLAIN"/*.arc)
gz_mb=$(du -cm "${gz_files[@]}" | tail -1 | cut -f1)
plain_mb=$(du -cm "${plain_files[@]}" | tail -1 | cut -f1)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Median wall time in seconds of REPS runs of "$@" (stdout discarded).
median() {
    local times=()
    for _ in $(seq "$REPS"); do
        local start end
        start=$(date +%s.%N)
        "$@" > /dev/null 2> "$TMP/err" || { echo "failed: $*" >&2; cat "$TMP/err" >&2; return 1; }
        end=$(date +%s.%N)
        times+=("$(echo "$end - $start" | bc -l)")
    done
    printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'
}

cat "${gz_files[@]}" "${plain_files[@]}" > /dev/null   # warm the page cache

echo "corpus: $FILES files x $RECORDS records: ${gz_mb} MB .arc.gz, ${plain_mb} MB .arc; $(nproc) CPUs, ukvs -j $THREADS, median of $REPS"
t_gzip=$(median gzip -dc "${gz_files[@]}")
t_ukvs_gz=$(median "$UKVS" index -q -j "$THREADS" --tmp-dir "$TMP" "${gz_files[@]}")
t_ukvs_gz_cdxj=$(median "$UKVS" index -q -j "$THREADS" --format cdxj --tmp-dir "$TMP" "${gz_files[@]}")
t_ukvs_plain=$(median "$UKVS" index -q -j "$THREADS" --tmp-dir "$TMP" "${plain_files[@]}")
t_ukvs_gz_nosort=$(median "$UKVS" index -q -j "$THREADS" --no-sort "${gz_files[@]}")
t_pywb_gz=$(median "$PYWB_INDEXER" -j "${gz_files[@]}")
t_pywb_plain=$(median "$PYWB_INDEXER" -j "${plain_files[@]}")
if [ -n "$CDXJ_INDEXER" ]; then
    t_cdxj_gz=$(median "$CDXJ_INDEXER" "${gz_files[@]}")
    t_cdxj_plain=$(median "$CDXJ_INDEXER" "${plain_files[@]}")
fi

ratio() { printf '%.2f' "$(echo "scale=4; $1 / $2" | bc -l)"; }
printf '\n%-44s %9s %s\n' "job" "seconds" "ratio"
printf '%-44s %9s\n' "gzip -dc (.arc.gz)" "$t_gzip"
printf '%-44s %9s %sx gzip -dc (target <= 0.5)\n' "ukvs index, sorted ukvs (.arc.gz)" "$t_ukvs_gz" "$(ratio "$t_ukvs_gz" "$t_gzip")"
printf '%-44s %9s %sx gzip -dc\n' "ukvs index --format cdxj (.arc.gz)" "$t_ukvs_gz_cdxj" "$(ratio "$t_ukvs_gz_cdxj" "$t_gzip")"
printf '%-44s %9s %sx gzip -dc\n' "ukvs index --no-sort (.arc.gz)" "$t_ukvs_gz_nosort" "$(ratio "$t_ukvs_gz_nosort" "$t_gzip")"
printf '%-44s %9s %sx gzip -dc; ukvs is %sx faster\n' "pywb cdx-indexer -j (.arc.gz)" "$t_pywb_gz" "$(ratio "$t_pywb_gz" "$t_gzip")" "$(ratio "$t_pywb_gz" "$t_ukvs_gz")"
if [ -n "$CDXJ_INDEXER" ]; then
    printf '%-44s %9s %sx gzip -dc; ukvs is %sx faster\n' "cdxj-indexer (.arc.gz)" "$t_cdxj_gz" "$(ratio "$t_cdxj_gz" "$t_gzip")" "$(ratio "$t_cdxj_gz" "$t_ukvs_gz")"
fi
printf '%-44s %9s\n' "ukvs index, sorted ukvs (.arc)" "$t_ukvs_plain"
printf '%-44s %9s ukvs is %sx faster (target >= 20)\n' "pywb cdx-indexer -j (.arc)" "$t_pywb_plain" "$(ratio "$t_pywb_plain" "$t_ukvs_plain")"
if [ -n "$CDXJ_INDEXER" ]; then
    printf '%-44s %9s ukvs is %sx faster\n' "cdxj-indexer (.arc)" "$t_cdxj_plain" "$(ratio "$t_cdxj_plain" "$t_ukvs_plain")"
fi
