#!/usr/bin/env bash
# Benchmarks of sorted-file handling (not tests): `ukvs sort` against GNU
# sort at the same memory bound, batch exact lookups on a >= 1 GB index,
# and one lookup as a whole process.
#
# Usage: scripts/bench_sorted.sh [WORKDIR] (default: a fresh temp dir)
# Env:   SIZE_MB (default 1100), MEM (default 256M), THREADS (default 2),
#        LOOKUPS (default 1000000), UKVS (default target/release/ukvs).
# The synthetic CDXJ is generated here (deterministic), so nothing is
# downloaded. Figures are medians of 3 runs; the machine may be shared, so
# compare the two tools within one run rather than across runs.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
size_mb=${SIZE_MB:-1100}
mem=${MEM:-256M}
threads=${THREADS:-2}
lookups=${LOOKUPS:-1000000}
ukvs=${UKVS:-${CARGO_TARGET_DIR:-$here/target}/release/ukvs}
mkdir -p "$work"
cd "$work"

if [ ! -x "$ukvs" ]; then
    (cd "$here" && cargo build --release --quiet)
fi

# Median of three wall times (seconds) of a command; the largest peak RSS
# of the three runs is left in peak.kb and the CPU seconds (user + sys) of
# the median run in cpu.s (on a loaded machine the wall time overstates
# the cost; CPU time does not).
median3() {
    local t u s kb max=0
    : >runs.txt
    for _ in 1 2 3; do
        /usr/bin/time -f '%e %U %S %M' -o time.out "$@" >/dev/null
        read -r t u s kb <time.out
        echo "$t $(echo "$u + $s" | bc)" >>runs.txt
        [ "$kb" -gt "$max" ] && max=$kb
    done
    echo "$max" >peak.kb
    sort -n runs.txt | sed -n 2p | cut -d' ' -f2 >cpu.s
    sort -n runs.txt | sed -n 2p | cut -d' ' -f1
}

if [ ! -s input.cdxj ]; then
    echo "generating ~${size_mb} MB of unsorted CDXJ in $work/input.cdxj"
    python3 - "$size_mb" <<'PY'
import random, sys
target = int(sys.argv[1]) << 20
rng = random.Random(42)
mimes = ["text/html", "image/jpeg", "application/javascript", "text/css", "image/png"]
tlds = ["com", "org", "net", "uk,co", "de", "fr", "edu"]
written = 0
with open("input.cdxj", "w", buffering=1 << 22) as out:
    while written < target:
        buf = []
        for _ in range(10000):
            host = "%s,h%d" % (rng.choice(tlds), rng.randrange(200000))
            path = "/p%d/%d.html" % (rng.randrange(50), rng.randrange(1000))
            ts = "20%02d%02d%02d%02d%02d%02d" % (rng.randrange(0, 24), rng.randrange(1, 13), rng.randrange(1, 29),
                                                 rng.randrange(24), rng.randrange(60), rng.randrange(60))
            url = "http://www.%s%s" % (".".join(reversed(host.split(","))), path)
            line = ('%s)%s %s {"url":"%s","mime":"%s","status":"200","digest":"sha1:%032X",'
                    '"length":"%d","offset":"%d","filename":"crawl-%03d.warc.gz"}\n'
                    % (host, path, ts, url, rng.choice(mimes), rng.getrandbits(128),
                       rng.randrange(300, 90000), rng.randrange(1 << 30), rng.randrange(1000)))
            buf.append(line)
        chunk = "".join(buf)
        out.write(chunk)
        written += len(chunk)
PY
fi
bytes=$(stat -c %s input.cdxj)
echo "input: $((bytes >> 20)) MB, $(wc -l <input.cdxj) lines; memory bound $mem; $threads threads"

# Warm the page cache for both tools alike.
cat input.cdxj >/dev/null

echo "== sort (median of 3, wall seconds, peak RSS of the last run)"
t=$(median3 env LC_ALL=C sort -S "$mem" --parallel="$threads" -T "$work" -o gnu.cdxj input.cdxj)
echo "GNU sort -S $mem --parallel=$threads: ${t}s wall, $(cat cpu.s)s CPU, peak RSS $(($(cat peak.kb) >> 10)) MB"
t=$(median3 "$ukvs" sort --mem "$mem" -j "$threads" --tmp-dir "$work" -o ukvs.cdxj input.cdxj)
echo "ukvs sort --mem $mem -j $threads:       ${t}s wall, $(cat cpu.s)s CPU, peak RSS $(($(cat peak.kb) >> 10)) MB"
cmp gnu.cdxj ukvs.cdxj && echo "outputs identical"

echo "== batch exact lookups ($lookups keys sampled from the index, warm)"
if [ ! -s keys.txt ]; then
    shuf -n "$lookups" --random-source=<(yes) ukvs.cdxj | cut -d' ' -f1 >keys.txt
fi
cat ukvs.cdxj >/dev/null
t=$(median3 "$ukvs" lookup ukvs.cdxj --keys keys.txt -j "$threads")
awk -v n="$lookups" -v t="$t" -v c="$(cat cpu.s)" -v j="$threads" 'BEGIN {
    printf "ukvs lookup --keys -j %d: %.2fs wall (%.0f lookups/s), %.2fs CPU (%.0f lookups/s per core)\n", j, t, n / t, c, n / c }'

echo "== one lookup as a whole process (101 runs, mean wall time incl. fork/exec)"
key=$(sed -n 1p keys.txt)
s=$(date +%s%N)
for _ in $(seq 101); do
    "$ukvs" lookup ukvs.cdxj --key "$key" >/dev/null
done
e=$(date +%s%N)
awk -v ns="$((e - s))" 'BEGIN { printf "single lookup: %.2f ms\n", ns / 101 / 1e6 }'
