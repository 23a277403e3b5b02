#!/usr/bin/env bash
# MementoMap generate and batch lookup: ukvs vs the reference `mementomap`
# (pip install mementomap==0.1.0b2) on the same synthetic sorted CDXJ.
#
#   scripts/bench_mementomap.sh [LINES] [WORKDIR]
#
# LINES (default 600000) captures are generated; a second input ten times
# larger checks that ukvs's peak memory stays flat. Batch lookups ask
# LOOKUPS keys (default 20000, half held); UKVS names another binary, and
# BASE an older build of ukvs to time beside it (generate only, to compare
# two builds in one run). Prints wall seconds (best of REPS runs, default
# 7, the same for every tool; the tools compared run in turns, see
# `measure`) and peak RSS (KiB) for each job, and the speed-ups, for the
# inputs in two page-cache states (see `prepare`): just written, and read
# back from the disk.
set -euo pipefail
export LC_ALL=C

LINES=${1:-600000}
WORK=${2:-$(mktemp -d)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$WORK"

# UKVS: a binary to time instead of this tree's (e.g. an older build).
if [ -z "${UKVS:-}" ]; then
    cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
    UKVS=$CARGO_TARGET_DIR/release/ukvs
fi
python3 -c "import mementomap" 2>/dev/null || {
    echo "the reference is missing: pip install mementomap==0.1.0b2" >&2
    exit 1
}

# Synthetic archive: Zipf-like hosts, paths of depth 0-5 with skewed
# fan-out, queries, 1-4 captures per URL; sorted in byte order.
gen() { # LINES OUT
    python3 - "$1" <<'EOF' | LC_ALL=C sort -S 25% > "$2"
import random, sys
n = int(sys.argv[1]); rnd = random.Random(42)
tlds = ["com", "org", "net", "edu", "pt", "uk,co", "de"]
words = ["news", "img", "about", "blog", "a", "b", "wiki", "2014", "index.html",
         "p", "search", "static", "js", "css", "video", "user"]
out = sys.stdout; count = 0
while count < n:
    h = int(rnd.paretovariate(1.1)) % 50000
    host = f"{tlds[h % len(tlds)]},site{h}"
    if rnd.random() < 0.3:
        host += f",sub{rnd.randrange(20)}"
    path = "".join("/" + (words[rnd.randrange(len(words))] if rnd.random() < 0.5
                          else f"s{rnd.randrange(40)}") for _ in range(rnd.randrange(6)))
    if rnd.random() < 0.15:
        path += f"?id={rnd.randrange(1000)}"
    sp = path or "/"
    dotted = ".".join(reversed(host.split(",")))
    for c in range(1 + rnd.randrange(4)):
        out.write(f'{host}){sp} 20{10 + c}0{1 + rnd.randrange(9)}15000000 '
                  f'{{"url": "http://{dotted}{sp}", "mime": "text/html", "status": "200", '
                  f'"digest": "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "length": "1234"}}\n')
        count += 1
EOF
}

[ -s "$WORK/in.cdxj" ] || gen "$LINES" "$WORK/in.cdxj"
[ -s "$WORK/in10.cdxj" ] || gen $((LINES * 10)) "$WORK/in10.cdxj"
# Each run's inputs are put in one of two page-cache states first:
#   written:  written a moment before (as a map's input usually is: the
#             index was just built), by cat from a copy kept aside, then
#             synced so that no writeback runs during the timing; the
#             page cache holds them as the writer left them;
#   readback: dropped from the page cache, then read back from the disk,
#             cached as reads cache them (in large folios where the
#             kernel and file system use them).
# Every tool reads the same cached pages either way: generate maps its
# input (ukvs) or reads it (the reference), lookup maps the map (ukvs) or
# reads it (the reference), and a map pays per page it maps. This machine may
# page cold file data out within seconds, so the state is made anew
# before every run: a run that faults its input back in times the disk.
STATE=readback
PREP=()
prepare() {
    local f
    for f in "${PREP[@]}"; do
        [ -s "$f.src" ] || cp "$f" "$f.src"
        cat "$f.src" > "$f"
        sync "$f"
        if [ "$STATE" = readback ]; then
            dd if="$f" iflag=nocache count=0 status=none
            cat "$f" > /dev/null
        fi
    done
}
echo "input: $(wc -l < "$WORK/in.cdxj") lines, $(du -h "$WORK/in.cdxj" | cut -f1); x10: $(wc -l < "$WORK/in10.cdxj") lines"

# The jobs timed, by label: `spec LABEL` sets CMD (the command), IN (its
# standard input) and OUT (the file it writes, "-": none).
spec() { # LABEL
    IN=/dev/null OUT=-
    case $1 in
        ref_generate_*)
            CMD=(python3 -m mementomap generate "$WORK/in.cdxj" "$WORK/ref.map") OUT=$WORK/ref.map ;;
        ukvs_generate_x10)
            CMD=("$UKVS" mementomap generate -q "$WORK/in10.cdxj" -o "$WORK/ukvs10.map") OUT=$WORK/ukvs10.map ;;
        ukvs_generate_compact)
            CMD=("$UKVS" mementomap generate -q --hcf 1 --pcf 1 "$WORK/in.cdxj" -o "$WORK/ukvs.c.map")
            OUT=$WORK/ukvs.c.map ;;
        ukvs_generate_*)
            CMD=("$UKVS" mementomap generate -q "$WORK/in.cdxj" -o "$WORK/ukvs.map") OUT=$WORK/ukvs.map ;;
        base_generate_*)
            CMD=("$BASE" mementomap generate -q "$WORK/in.cdxj" -o "$WORK/base.map") OUT=$WORK/base.map ;;
        ref_batchlookup_*)
            CMD=(python3 -m mementomap batchlookup "$WORK/ref.guard.map" "$WORK/q.txt") ;;
        ukvs_batchlookup_*)
            CMD=("$UKVS" mementomap lookup "$WORK/ukvs.look.map" -) IN=$WORK/q.txt ;;
        *) echo "no job $1" >&2; exit 2 ;;
    esac
}

# Readies the run of job LABEL: its command (see `spec`), no output file
# left from a run before, its inputs prepared.
ready() { # LABEL
    spec "$1"
    [ "$OUT" = - ] || rm -f "$OUT"
    prepare
}

# Best-of-REPS wall seconds of each job named, timed by the shell's
# microsecond clock (/usr/bin/time counts only hundredths and `time`
# milliseconds, too coarse for runs of tens of milliseconds), then the
# peak RSS of one more run of each. The jobs run in turns, one run of each
# per round: a slow spell of the machine (on a shared virtual machine one
# lasts longer than a job's REPS runs) then falls on every tool alike,
# not on whichever was timed during it. A job's output file is removed
# before each of its runs, so every run of every tool writes a new file
# (replacing one makes ext4 flush the new data at the rename or close,
# which times the disk, not the tool). The inputs PREP are prepared (see
# above) before each run.
REPS=${REPS:-7}
measure() { # LABEL...
    local label t t0 rss
    local -A best=()
    for _ in $(seq "$REPS"); do
        for label in "$@"; do
            ready "$label"
            t0=$EPOCHREALTIME
            "${CMD[@]}" < "$IN" > /dev/null 2> "$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
            t=$(awk "BEGIN{printf \"%.4f\", $EPOCHREALTIME - $t0}")
            if [ -z "${best[$label]:-}" ] || awk "BEGIN{exit !($t < ${best[$label]})}"; then
                best[$label]=$t
            fi
        done
    done
    for label in "$@"; do
        ready "$label"
        /usr/bin/time -f "%M" -o "$WORK/time" "${CMD[@]}" < "$IN" > /dev/null 2> "$WORK/err"
        read -r rss < "$WORK/time"
        printf "%-34s %8.4f s %10d KiB\n" "$label" "${best[$label]}" "$rss"
        echo "${best[$label]}" > "$WORK/$label.t"
    done
}

LOOKUPS=${LOOKUPS:-20000}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for STATE in written readback; do
    echo "== inputs $STATE"
    PREP=("$WORK/in.cdxj")
    measure ref_generate_$STATE ukvs_generate_$STATE ${BASE:+base_generate_$STATE}
    if [ $STATE = readback ]; then
        PREP=("$WORK/in10.cdxj")
        measure ukvs_generate_x10
        PREP=("$WORK/in.cdxj")
        measure ukvs_generate_compact
    fi

    # LOOKUPS keys: half held, half not; the reference crashes on keys
    # probing its last line, so its map gets two guard lines.
    if [ ! -s "$WORK/q.txt.src" ]; then
        python3 - "$WORK/in.cdxj" "$LOOKUPS" > "$WORK/q.txt.src" <<'EOF'
import random, sys
keys = [l.split(" ", 1)[0] for l in open(sys.argv[1])]
rnd = random.Random(7)
for _ in range(int(sys.argv[2]) // 2):
    k = rnd.choice(keys); print(k); print(k.rstrip("/") + "/zz" + str(rnd.randrange(99)))
EOF
    fi
    cp "$WORK/ref.map" "$WORK/ref.guard.map.src"
    printf '~~~~ 0\n~~~~~ 0\n' >> "$WORK/ref.guard.map.src"
    cp "$WORK/ukvs.map" "$WORK/ukvs.look.map.src"
    PREP=("$WORK/ref.guard.map" "$WORK/ukvs.look.map" "$WORK/q.txt")
    measure ref_batchlookup_$STATE ukvs_batchlookup_$STATE
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

ratio() { awk "BEGIN{printf \"%.1f\", $(cat "$WORK/$1.t") / ($(cat "$WORK/$2.t") > 0 ? $(cat "$WORK/$2.t") : 0.001)}"; }
for STATE in written readback; do
    echo "inputs $STATE: generate speed-up $(ratio ref_generate_$STATE ukvs_generate_$STATE)x," \
        "batch lookup ($(wc -l < "$WORK/q.txt") keys) speed-up $(ratio ref_batchlookup_$STATE ukvs_batchlookup_$STATE)x"
done
if [ -n "${BASE:-}" ]; then
    for STATE in written readback; do
        echo "inputs $STATE: generate, BASE's time / UKVS's time" \
            "$(awk "BEGIN{printf \"%.3f\", $(cat "$WORK/base_generate_$STATE.t") / $(cat "$WORK/ukvs_generate_$STATE.t")}")" \
            "(BASE's speed-up $(ratio ref_generate_$STATE base_generate_$STATE)x)"
    done
    tail -n +4 "$WORK/base.map" | cmp -s - <(tail -n +4 "$WORK/ukvs.map") \
        && echo "maps of BASE and UKVS: same body" || echo "maps of BASE and UKVS: bodies DIFFER"
fi
echo "map lines: ukvs $(grep -vc '^!' "$WORK/ukvs.map"), reference $(wc -l < "$WORK/ref.map")"
