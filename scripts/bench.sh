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

# Median wall time in seconds of REPS runs of "$@" (stdout discarded);
# the median CPU time (user + system, all threads) of the same runs is
# appended to $TMP/cpu, one line per call, for the load-independent view.
# Before each run the corpus is read once more: a page cache under
# reclaim (seen here: pages idle for a minute are paged out) would
# otherwise time the disk for whichever tool runs after a long one.
# Wall times come from the shell's clock in milliseconds (/usr/bin/time
# counts hundredths, 5% of a 0.2 s run).
median() {
    local walls=() cpus=()
    for _ in $(seq "$REPS"); do
        cat "${gz_files[@]}" "${plain_files[@]}" > /dev/null
        local t0 t1
        t0=$(date +%s%N)
        /usr/bin/time -f '%U %S' -o "$TMP/time" "$@" > /dev/null 2> "$TMP/err" \
            || { echo "failed: $*" >&2; cat "$TMP/err" >&2; return 1; }
        t1=$(date +%s%N)
        read -r user sys < "$TMP/time"
        wall=$(echo "scale=3; ($t1 - $t0) / 1000000000" | bc -l)
        walls+=("$wall")
        cpus+=("$(echo "$user + $sys" | bc -l)")
    done
    printf '%s\n' "${cpus[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.2f\n", a[int((NR+1)/2)]}' >> "$TMP/cpu"
    printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'
}
# The CPU seconds of the latest `median` call.
cpu() { tail -1 "$TMP/cpu"; }

# Drop the corpus from the page cache once, so that the reads before each
# run cache it the way files read from disk are cached: in large folios
# where the kernel and file system use them (Linux 6.x on ext4 does), not
# in the 4 KiB pages a file just written is left in. A reader that maps
# its input pays for every page it maps (ukvs index does; the peers copy
# with read(2)), so this is the state archive files are read in; every
# tool reads the same cached pages either way.
for f in "${gz_files[@]}" "${plain_files[@]}"; do
    dd if="$f" iflag=nocache count=0 status=none
done
cat "${gz_files[@]}" "${plain_files[@]}" > /dev/null   # warm the page cache
LOAD0=$(cut -d" " -f1-3 /proc/loadavg)

echo "corpus: $FILES files x $RECORDS records: ${gz_mb} MB .arc.gz, ${plain_mb} MB .arc; $(nproc) CPUs, ukvs -j $THREADS, median of $REPS"
t_gzip=$(median gzip -dc "${gz_files[@]}")
c_gzip=$(cpu)
t_ukvs_gz=$(median "$UKVS" index -q -j "$THREADS" --tmp-dir "$TMP" "${gz_files[@]}")
c_ukvs_gz=$(cpu)
t_ukvs_gz_cdxj=$(median "$UKVS" index -q -j "$THREADS" --format cdxj --tmp-dir "$TMP" "${gz_files[@]}")
c_ukvs_gz_cdxj=$(cpu)
t_ukvs_plain=$(median "$UKVS" index -q -j "$THREADS" --tmp-dir "$TMP" "${plain_files[@]}")
c_ukvs_plain=$(cpu)
t_ukvs_gz_nosort=$(median "$UKVS" index -q -j "$THREADS" --no-sort "${gz_files[@]}")
c_ukvs_gz_nosort=$(cpu)
t_pywb_gz=$(median "$PYWB_INDEXER" -j "${gz_files[@]}")
c_pywb_gz=$(cpu)
t_pywb_plain=$(median "$PYWB_INDEXER" -j "${plain_files[@]}")
c_pywb_plain=$(cpu)
if [ -n "$CDXJ_INDEXER" ]; then
    t_cdxj_gz=$(median "$CDXJ_INDEXER" "${gz_files[@]}")
    c_cdxj_gz=$(cpu)
    t_cdxj_plain=$(median "$CDXJ_INDEXER" "${plain_files[@]}")
    c_cdxj_plain=$(cpu)
fi

ratio() {
    if [ "$(echo "$2 == 0" | bc -l)" = 1 ]; then printf 'n/a'; else printf '%.2f' "$(echo "scale=4; $1 / $2" | bc -l)"; fi
}
row() { printf '%-40s %8s %7s  %s\n' "$1" "$2" "$3" "$4"; }
echo "load average before the run: $LOAD0 (wall times suffer on a busy machine; CPU seconds much less)"
echo
row "job" "wall s" "CPU s" "ratios (wall; CPU)"
row "gzip -dc (.arc.gz)" "$t_gzip" "$c_gzip" ""
row "ukvs index, sorted ukvs (.arc.gz)" "$t_ukvs_gz" "$c_ukvs_gz" \
    "$(ratio "$t_ukvs_gz" "$t_gzip")x gzip -dc (target <= 0.5); CPU $(ratio "$c_ukvs_gz" "$c_gzip")x"
row "ukvs index --format cdxj (.arc.gz)" "$t_ukvs_gz_cdxj" "$c_ukvs_gz_cdxj" \
    "$(ratio "$t_ukvs_gz_cdxj" "$t_gzip")x gzip -dc; CPU $(ratio "$c_ukvs_gz_cdxj" "$c_gzip")x"
row "ukvs index --no-sort (.arc.gz)" "$t_ukvs_gz_nosort" "$c_ukvs_gz_nosort" \
    "$(ratio "$t_ukvs_gz_nosort" "$t_gzip")x gzip -dc; CPU $(ratio "$c_ukvs_gz_nosort" "$c_gzip")x"
row "pywb cdx-indexer -j (.arc.gz)" "$t_pywb_gz" "$c_pywb_gz" \
    "$(ratio "$t_pywb_gz" "$t_gzip")x gzip -dc; ukvs $(ratio "$t_pywb_gz" "$t_ukvs_gz")x faster; CPU $(ratio "$c_pywb_gz" "$c_ukvs_gz")x"
if [ -n "$CDXJ_INDEXER" ]; then
    row "cdxj-indexer (.arc.gz)" "$t_cdxj_gz" "$c_cdxj_gz" \
        "$(ratio "$t_cdxj_gz" "$t_gzip")x gzip -dc; ukvs $(ratio "$t_cdxj_gz" "$t_ukvs_gz")x faster; CPU $(ratio "$c_cdxj_gz" "$c_ukvs_gz")x"
fi
row "ukvs index, sorted ukvs (.arc)" "$t_ukvs_plain" "$c_ukvs_plain" ""
row "pywb cdx-indexer -j (.arc)" "$t_pywb_plain" "$c_pywb_plain" \
    "ukvs $(ratio "$t_pywb_plain" "$t_ukvs_plain")x faster (target >= 20); CPU $(ratio "$c_pywb_plain" "$c_ukvs_plain")x"
if [ -n "$CDXJ_INDEXER" ]; then
    row "cdxj-indexer (.arc)" "$t_cdxj_plain" "$c_cdxj_plain" \
        "ukvs $(ratio "$t_cdxj_plain" "$t_ukvs_plain")x faster; CPU $(ratio "$c_cdxj_plain" "$c_ukvs_plain")x"
fi
