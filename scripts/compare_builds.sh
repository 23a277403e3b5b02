#!/usr/bin/env bash
# Runs the main jobs of two ukvs builds on one generated corpus, `cmp`s
# every output of one against the other's, and times both side by side
# with hyperfine (warm cache: a warm-up run each, then RUNS runs; the
# inputs stay in the page cache): the median wall time and the mean CPU
# time (user + system, which other work on a loaded machine disturbs
# less). Exits 1 when any output differs (a MementoMap's `!meta` line,
# which names its source and the time it was made, is left out).
#
#   scripts/compare_builds.sh OLD/ukvs NEW/ukvs
#   RUNS=5 ARC_FILES=6 scripts/compare_builds.sh old new
#
# Environment: BENCH_DIR (corpus and outputs, default
# /tmp/ukvs-bench-house), GEN (gen_arc_corpus.py), ARC_FILES and
# ARC_RECORDS (the .arc.gz corpus, default 3 x 4000), WARC_FILES and
# WARC_RECORDS (the .warc.gz corpus, default 2 x 3000), SEED_OBJECTS
# (the Kulturarw3 objects and Nedlib objects of the seed-format tree,
# default 3000 each, made by scripts/gen_kulturarw3.py and
# gen_nedlib.py), SEED, THREADS
# (-j of the jobs, default 2), RUNS (default 3), ONLY (a regex: the jobs
# whose names match).
#
# Only options both builds know are used: the jobs are those of an
# older build too (index in each profile, --stats and --mementomap in
# the same scan, sort, merge, stats, lookup, mementomap generate,
# validate, cat). The jobs that read an index read the same bytes, made
# once by NEW (and checked equal to OLD's by the index jobs).
set -euo pipefail

OLD=$(realpath "${1:?usage: scripts/compare_builds.sh OLD_BIN NEW_BIN}")
NEW=$(realpath "${2:?usage: scripts/compare_builds.sh OLD_BIN NEW_BIN}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${BENCH_DIR:-/tmp/ukvs-bench-house}
GEN=${GEN:-$ROOT/../shared/tools/gen_arc_corpus.py}
SEED=${SEED:-7}
THREADS=${THREADS:-2}
RUNS=${RUNS:-3}

mkdir -p "$DIR"
ARC=$DIR/arc
WARC=$DIR/warc
[ -d "$ARC" ] || python3 "$GEN" --out "$ARC" --files "${ARC_FILES:-3}" \
    --records-per-file "${ARC_RECORDS:-4000}" --seed "$SEED" --gz
[ -d "$WARC" ] || python3 "$GEN" --out "$WARC" --files "${WARC_FILES:-2}" \
    --records-per-file "${WARC_RECORDS:-3000}" --seed "$SEED" --warc
# A tree of the seed formats: every file is told by its first bytes.
SEEDS=$DIR/seeds
if [ ! -d "$SEEDS" ]; then
    python3 "$ROOT/scripts/gen_kulturarw3.py" --out "$SEEDS/k" --seed "$SEED" \
        --objects "${SEED_OBJECTS:-3000}" --concatenated 200 > /dev/null
    python3 "$ROOT/scripts/gen_nedlib.py" --out "$SEEDS/n" --seed "$SEED" \
        --objects "${SEED_OBJECTS:-3000}" > /dev/null
    rm -f "$SEEDS"/*/truth.tsv
fi
echo "corpus: $(du -sh "$ARC" | cut -f1) ARC (.arc.gz), $(du -sh "$WARC" | cut -f1) WARC (.warc.gz), $(du -sh "$SEEDS" | cut -f1) Kulturarw3 and Nedlib"

# The indexes the reading jobs read, made by NEW.
IN=$DIR/in
rm -rf "$IN" && mkdir -p "$IN"
J="-j $THREADS"
"$NEW" index -q $J --format ukvs -o "$IN/arc.ukvs" "$ARC"
"$NEW" index -q $J --format ukvs -o "$IN/warc.ukvs" "$WARC"
"$NEW" index -q $J --format cdxj -o "$IN/arc.cdxj" "$ARC"
"$NEW" index -q $J --format cdx11 -o "$IN/arc.cdx" "$ARC"
"$NEW" index -q $J --no-sort --format cdxj -o "$IN/unsorted.cdxj" "$ARC" "$WARC"
# Queries: every 5th key and every 50th URL of the ARC index.
awk 'NR % 5 == 0 { print $1 }' "$IN/arc.cdxj" > "$IN/keys.txt"
awk 'NR % 50 == 0 && match($0, /"url": "[^"]*"/) { print substr($0, RSTART + 8, RLENGTH - 9) }' \
    "$IN/arc.cdxj" > "$IN/urls.txt"

# NAME and command, `$U` the binary, `$O` the job's output directory.
JOBS=(
    "index-ukvs|\$U index -q $J --format ukvs -o \$O/out $ARC"
    "index-cdxj|\$U index -q $J --format cdxj -o \$O/out $ARC"
    "index-cdx11|\$U index -q $J --format cdx11 -o \$O/out $ARC"
    "index-cdx9-warc|\$U index -q $J --format cdx9 -o \$O/out $WARC"
    "index-cdxj-warc|\$U index -q $J --format cdxj -o \$O/out $WARC"
    "index-cdxj11-warc|\$U index -q $J --format cdxj-indexer-cdx11 -o \$O/out $WARC"
    "index-pywacz-warc|\$U index -q $J --format cdxj -p -d -f referrer,req.http:cookie -o \$O/out $WARC"
    "index-scheme-www|\$U index -q $J --format ukvs --with-scheme --keep-www -o \$O/out $ARC"
    "index-seeds|\$U index -q $J --format cdxj -o \$O/out $SEEDS"
    "index-nosort|\$U index -q $J --no-sort --format ukvs -o \$O/out $ARC"
    "index-nommap|\$U index -q $J --no-mmap --format ukvs -o \$O/out $ARC"
    "index-stats-map|\$U index -q $J --format ukvs -o \$O/out --stats \$O/stats.json --mementomap \$O/map $ARC"
    "sort|\$U sort $J -o \$O/out $IN/unsorted.cdxj"
    "merge|\$U merge -o \$O/out $IN/arc.ukvs $IN/warc.ukvs"
    "stats-json|\$U stats -q $J --json -o \$O/out $IN/arc.ukvs $IN/warc.ukvs"
    "stats-text|\$U stats -q $J -o \$O/out $IN/arc.cdx"
    "lookup-keys|\$U lookup $J --keys $IN/keys.txt $IN/arc.ukvs > \$O/out"
    "lookup-urls|\$U lookup $J --output json --urls $IN/urls.txt $IN/arc.cdxj > \$O/out"
    "mementomap|\$U mementomap generate -q --id x --name x -o \$O/out $IN/arc.ukvs"
    "validate|\$U validate $IN/arc.ukvs $IN/warc.ukvs > \$O/out"
    "cat-cdxj|\$U cat -o \$O/out $IN/arc.cdxj"
    "cat-json|\$U cat --json -o \$O/out $IN/arc.ukvs"
)

OUT=$DIR/out
rm -rf "$OUT"
differ=0
printf '%-18s %-7s %9s %9s %7s %9s %9s %7s\n' job outputs "old wall" "new wall" new/old \
    "old cpu" "new cpu" new/old
for spec in "${JOBS[@]}"; do
    name=${spec%%|*}
    cmd=${spec#*|}
    [[ $name =~ ${ONLY:-.} ]] || continue
    for side in old new; do
        mkdir -p "$OUT/$side/$name"
    done
    old_cmd=$(U=$OLD O=$OUT/old/$name; eval "echo \"$cmd\"")
    new_cmd=$(U=$NEW O=$OUT/new/$name; eval "echo \"$cmd\"")
    bash -c "$old_cmd" 2> "$OUT/old/$name.stderr" || echo "$name: old exit $?" >&2
    bash -c "$new_cmd" 2> "$OUT/new/$name.stderr" || echo "$name: new exit $?" >&2
    same=same
    for f in "$OUT/old/$name"/*; do
        g=$OUT/new/$name/$(basename "$f")
        # A MementoMap's `!meta` names its source (the output's own path
        # for `index --mementomap`) and the time it was made: the rest
        # is compared.
        if [ "$(head -c 4 "$f")" = "!id " ] || grep -q '^!meta {"type":"MementoMap"' "$f" 2> /dev/null; then
            cmp -s <(grep -v '^!meta ' "$f") <(grep -v '^!meta ' "$g") && continue
            same=DIFFER
            differ=1
            echo "$name: $(basename "$f") differs" >&2
        elif ! cmp -s "$f" "$g"; then
            same=DIFFER
            differ=1
            echo "$name: $(basename "$f") differs" >&2
        fi
    done
    [ "$(ls "$OUT/old/$name" | wc -l)" -gt 0 ] || { same=NONE; differ=1; }
    hyperfine -N --style none --warmup 1 --runs "$RUNS" \
        --export-json "$OUT/$name.json" -n old "bash -c '$old_cmd'" -n new "bash -c '$new_cmd'" \
        > /dev/null 2>&1 || true
    python3 - "$OUT/$name.json" "$name" "$same" <<'EOF'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
o, n = r["old"]["median"], r["new"]["median"]
cpu = lambda x: x["user"] + x["system"]
co, cn = cpu(r["old"]), cpu(r["new"])
print(f"{sys.argv[2]:<18} {sys.argv[3]:<7} {o:9.3f} {n:9.3f} {n / o:7.3f} {co:9.3f} {cn:9.3f} {cn / co:7.3f}")
EOF
done
echo "wall: median of $RUNS warm runs (inputs in the page cache), -j $THREADS; cpu: mean user+system"
exit $differ
