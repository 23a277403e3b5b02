#!/usr/bin/env bash
# MementoMap generate and batch lookup: ukvs vs the reference `mementomap`
# (pip install mementomap==0.1.0b2) on the same synthetic sorted CDXJ.
#
#   scripts/bench_mementomap.sh [LINES] [WORKDIR]
#
# LINES (default 600000) captures are generated; a second input ten times
# larger checks that ukvs's peak memory stays flat. Prints wall seconds
# (best of REPS runs, default 7, the same for every tool) and peak RSS
# (KiB) for each job, and the speed-ups.
set -euo pipefail
export LC_ALL=C

LINES=${1:-600000}
WORK=${2:-$(mktemp -d)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
UKVS=$CARGO_TARGET_DIR/release/ukvs
mkdir -p "$WORK"

cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
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
# Drop the inputs from the page cache once, so that the reads before each
# run cache them the way files read from disk are cached: in large folios
# where the kernel and file system use them (Linux 6.x on ext4 does), not
# in the 4 KiB pages a file just written is left in. ukvs maps its input
# and pays for every page it maps; the reference reads it. Every tool
# reads the same cached pages either way.
for f in "$WORK/in.cdxj" "$WORK/in10.cdxj"; do
    dd if="$f" iflag=nocache count=0 status=none
done
echo "input: $(wc -l < "$WORK/in.cdxj") lines, $(du -h "$WORK/in.cdxj" | cut -f1); x10: $(wc -l < "$WORK/in10.cdxj") lines"

# Best-of-REPS wall seconds, timed by the shell's microsecond clock
# (/usr/bin/time counts only hundredths and `time` milliseconds, too coarse
# for runs of tens of milliseconds), then the peak RSS of one more run. The
# output file OUT ("-": none) is removed before each run, so every run of
# every tool writes a new file (replacing one makes ext4 flush the new
# data at the rename or close, which times the disk, not the tool).
# The input is read before each run: this machine pages cold file data
# out within seconds, and a run that faults it back in from the disk
# times the disk.
REPS=${REPS:-7}
WARM=()
measure() { # LABEL OUT CMD...
    local label=$1 out=$2; shift 2
    local best="" t rss
    for _ in $(seq "$REPS"); do
        [ "$out" = - ] || rm -f "$out"
        [ "${#WARM[@]}" -eq 0 ] || cat "${WARM[@]}" > /dev/null
        local t0=$EPOCHREALTIME
        "$@" > /dev/null 2> "$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
        t=$(awk "BEGIN{printf \"%.4f\", $EPOCHREALTIME - $t0}")
        if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
    done
    /usr/bin/time -f "%M" -o "$WORK/time" "$@" > /dev/null 2> "$WORK/err"
    read -r rss < "$WORK/time"
    printf "%-34s %8.4f s %10d KiB\n" "$label" "$best" "$rss"
    echo "$best" > "$WORK/$label.t"
}

WARM=("$WORK/in.cdxj")
measure ref_generate "$WORK/ref.map" python3 -m mementomap generate "$WORK/in.cdxj" "$WORK/ref.map"
measure ukvs_generate "$WORK/ukvs.map" "$UKVS" mementomap generate -q "$WORK/in.cdxj" -o "$WORK/ukvs.map"
WARM=("$WORK/in10.cdxj")
measure ukvs_generate_x10 "$WORK/ukvs10.map" "$UKVS" mementomap generate -q "$WORK/in10.cdxj" -o "$WORK/ukvs10.map"
WARM=("$WORK/in.cdxj")
measure ukvs_generate_compact "$WORK/ukvs.c.map" "$UKVS" mementomap generate -q --hcf 1 --pcf 1 "$WORK/in.cdxj" -o "$WORK/ukvs.c.map"

# 10k lookup keys: half held, half not; the reference crashes on keys
# probing its last line, so its map gets two guard lines.
python3 - "$WORK/in.cdxj" > "$WORK/q.txt" <<'EOF'
import random, sys
keys = [l.split(" ", 1)[0] for l in open(sys.argv[1])]
rnd = random.Random(7)
for _ in range(5000):
    k = rnd.choice(keys); print(k); print(k.rstrip("/") + "/zz" + str(rnd.randrange(99)))
EOF
cp "$WORK/ref.map" "$WORK/ref.guard.map"
printf '~~~~ 0\n~~~~~ 0\n' >> "$WORK/ref.guard.map"
WARM=("$WORK/ref.guard.map" "$WORK/ukvs.map" "$WORK/q.txt")
measure ref_batchlookup - python3 -m mementomap batchlookup "$WORK/ref.guard.map" "$WORK/q.txt"
measure ukvs_batchlookup - sh -c "'$UKVS' mementomap lookup '$WORK/ukvs.map' - < '$WORK/q.txt'"

ratio() { awk "BEGIN{printf \"%.1f\", $(cat "$WORK/$1.t") / ($(cat "$WORK/$2.t") > 0 ? $(cat "$WORK/$2.t") : 0.001)}"; }
echo "generate speed-up: $(ratio ref_generate ukvs_generate)x"
echo "batch lookup speed-up: $(ratio ref_batchlookup ukvs_batchlookup)x"
echo "map lines: ukvs $(grep -vc '^!' "$WORK/ukvs.map"), reference $(wc -l < "$WORK/ref.map")"
