#!/usr/bin/env bash
# Benchmarks of sorted-file handling (not tests): `ukvs sort` against GNU
# sort at the same memory bound, on an input that fits in memory (both
# tools sorting it whole, and with a small bound that spills) and on a
# >= 1 GB one; batch exact lookups on the >= 1 GB index, and one lookup as
# a whole process.
#
# Usage: scripts/bench_sorted.sh [WORKDIR] (default: a fresh temp dir)
# Env:   SORT_MB (default 136 MiB = 142 MB), SORT_MEMS (default "512M 64M"),
#        REPS (default 5) for the input that fits in memory;
#        SIZE_MB (default 1100; 0 skips the big input), MEM (default 256M),
#        THREADS (default 2), LOOKUPS (default 1000000), UKVS (default
#        target/release/ukvs).
# The synthetic CDXJ is generated here (deterministic), so nothing is
# downloaded. Figures are medians of 3 runs; the machine may be shared, so
# compare the two tools within one run rather than across runs.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
size_mb=${SIZE_MB:-1100}
sort_mb=${SORT_MB:-136}
sort_mems=${SORT_MEMS:-512M 64M}
reps=${REPS:-5}
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

# Shuffled synthetic CDXJ of about SIZE MiB (deterministic: nothing is
# downloaded), written to OUT.
gen_cdxj() { # SIZE_MB OUT
    echo "generating ~$1 MiB of unsorted CDXJ in $work/$2"
    python3 - "$1" "$2" <<'PY'
import random, sys
target = int(sys.argv[1]) << 20
rng = random.Random(42)
mimes = ["text/html", "image/jpeg", "application/javascript", "text/css", "image/png"]
tlds = ["com", "org", "net", "uk,co", "de", "fr", "edu"]
written = 0
with open(sys.argv[2], "w", buffering=1 << 22) as out:
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
}

# The input as a job usually finds it, in one of two page-cache states:
#   written:  written a moment before (here by cat, then synced so that no
#             writeback runs during the timing), cached as the writer left
#             it;
#   readback: dropped from the page cache, then read back from the disk
#             (cached as reads cache it, e.g. in large folios).
# Both are in the page cache: the timing is of the tools, not the disk.
prepare() { # STATE SRC DST
    cat "$2" >"$3"
    sync "$3"
    if [ "$1" = readback ]; then
        dd if="$3" iflag=nocache count=0 status=none
        cat "$3" >/dev/null
    fi
}

# Median wall seconds (shell clock) of REPS runs of each command given as
# a string, the runs interleaved (GNU, ukvs, GNU, ukvs, ...) so that a
# busy moment of a shared machine hits both alike; the input is prepared
# anew before every run. Prints "gnu ukvs" medians.
interleaved() { # STATE SRC DST CMD1 CMD2
    local state=$1 src=$2 dst=$3 i t0 t
    : >a.runs
    : >b.runs
    for i in $(seq "$reps"); do
        for which in a b; do
            prepare "$state" "$src" "$dst"
            rm -f out.cdxj
            t0=$EPOCHREALTIME
            if [ $which = a ]; then sh -c "$4"; else sh -c "$5"; fi
            t=$(awk "BEGIN{printf \"%.4f\", $EPOCHREALTIME - $t0}")
            echo "$t" >>$which.runs
        done
    done
    echo "$(sort -n a.runs | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')" \
        "$(sort -n b.runs | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')"
}

[ -s sort.src.cdxj ] || gen_cdxj "$sort_mb" sort.src.cdxj
echo "== sort, fits in memory: $(($(stat -c %s sort.src.cdxj) / 1000000)) MB," \
    "$(wc -l <sort.src.cdxj) lines, $threads threads, median of $reps (wall seconds)"
echo "   load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for mem in $sort_mems; do
    for state in written readback; do
        read -r g u < <(interleaved "$state" sort.src.cdxj sort.cdxj \
            "LC_ALL=C sort -S $mem --parallel=$threads -T '$work' -o out.cdxj sort.cdxj && mv out.cdxj gnu.sorted" \
            "'$ukvs' sort --mem $mem -j $threads --tmp-dir '$work' -o out.cdxj sort.cdxj && mv out.cdxj ukvs.sorted")
        cmp -s gnu.sorted ukvs.sorted || { echo "outputs differ (--mem $mem, $state)" >&2; exit 1; }
        awk -v m="$mem" -v s="$state" -v g="$g" -v u="$u" 'BEGIN {
            printf "sort --mem %-5s %-9s GNU sort %.3fs  ukvs %.3fs  ukvs/GNU %.2fx\n", m, s, g, u, u / g }'
    done
done
echo "   outputs identical; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$size_mb" -gt 0 ] || exit 0

if [ ! -s input.cdxj ]; then
    gen_cdxj "$size_mb" input.cdxj
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

echo "== one lookup as a whole process"
key=$(sed -n 1p keys.txt)
if command -v perf >/dev/null && perf stat -r 1 true >/dev/null 2>&1; then
    perf stat -r 101 "$ukvs" lookup ukvs.cdxj --key "$key" 2>&1 >/dev/null |
        awk '/task-clock/ { cpu = $1 } /elapsed/ { wall = $1 * 1000 }
             END { printf "single lookup: %.2f ms wall, %.2f ms CPU (mean of 101, perf stat)\n", wall, cpu }'
else
    s=$(date +%s%N)
    for _ in $(seq 101); do
        "$ukvs" lookup ukvs.cdxj --key "$key" >/dev/null
    done
    e=$(date +%s%N)
    awk -v ns="$((e - s))" 'BEGIN { printf "single lookup: %.2f ms (mean of 101, incl. fork/exec)\n", ns / 101 / 1e6 }'
fi
