#!/usr/bin/env bash
# A fold of a live collection against `ukvs merge` of the same files:
# an N-line base (CDXJ) and N lines POSTed to its delta (5,000 a POST,
# through `ukvs serve --data`), then `ukvs fold` (offline) of the delta
# into the base, and `ukvs merge` of the base and the delta's lines as a
# file. The fold's base must be the merge's output, byte for byte.
#
#   scripts/bench_fold.sh                 # N=1000000
#   N=10000000 scripts/bench_fold.sh      # the 10M-line case
#   KEEP=1 DIR=/big/dir N=10000000 scripts/bench_fold.sh  # then again
#   DIR=/big/dir N=10000000 scripts/bench_fold.sh          # with no load
#
# Figures (N=10,000,000, 2 cores, one delta loaded (145,600 lines/s,
# 0.75x its text) and folded by each build in turn): fold 6.7-7.0 s
# warm, 7.7-7.8 s cold (two runs) against 8.7 and 10.3 s for the same
# commit with glibc's malloc in place of mimalloc; merge 3.4-3.8 s warm,
# 4.3-4.6 s cold: fold/merge 1.89-2.08x warm, 1.67-1.81x cold (glibc
# 2.27x and 2.39x), fold/(merge + its sync) 1.58-1.73x.
#
# Env: N, UKVS (default target/release/ukvs, built if missing), DIR
# (default: a temporary directory on the disk of /tmp), JOBS (parallel
# POSTs while loading, default 2), KEEP (1: keep DIR, with a copy of the
# loaded delta in DIR/data.loaded; a later run given that DIR folds a
# copy of it again, with no making or loading).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
JOBS=${JOBS:-2}
UKVS=${UKVS:-target/release/ukvs}
[ -x "$UKVS" ] || cargo build --release --quiet
DIR=${DIR:-$(mktemp -d)}
KEEP=${KEEP:-0}
server=
trap 'kill $server 2>/dev/null || true; rm -rf "$DIR/data" "$DIR/data.fold2" "$DIR/posts" "$DIR/merged.cdxj" "$DIR/merged.keep"; [ "$KEEP" = 1 ] || rm -rf "$DIR/data.loaded"' EXIT

if [ -d "$DIR/data.loaded" ]; then
    KEEP=1
    echo "folding the delta kept in $DIR/data.loaded again"
    rm -rf "$DIR/data"
    cp -a "$DIR/data.loaded" "$DIR/data"
else

echo "making $N base lines and $N delta lines in $DIR"
python3 - "$DIR" "$N" <<'PY'
import random, sys
d, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(1)
b32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
def lines(tag, out):
    with open(out, "w") as f:
        for i in range(n):
            h, p = rnd.randrange(200000), rnd.randrange(50)
            dt = "20%02d%02d%02d%06d" % (10 + rnd.randrange(10), 1 + rnd.randrange(12), 1 + rnd.randrange(28), rnd.randrange(240000))
            dig = "".join(rnd.choice(b32) for _ in range(32))
            f.write('com,example,host%d)/page/%d %s {"url": "http://host%d.example.com/page/%d", "mime": "text/html", "status": "200", "digest": "%s", "length": "%d", "offset": "%d", "filename": "%s-%05d.warc.gz"}\n'
                    % (h, p, dt, h, p, dig, 500 + rnd.randrange(50000), (i % 20000) * 50000, tag, i // 20000))
lines("base", d + "/base.unsorted")
lines("delta", d + "/delta.unsorted")
PY
LC_ALL=C sort -S 25% "$DIR/base.unsorted" -o "$DIR/base.cdxj"
LC_ALL=C sort -S 25% "$DIR/delta.unsorted" -o "$DIR/delta.cdxj"
rm "$DIR/base.unsorted" "$DIR/delta.unsorted"
ls -l "$DIR/base.cdxj" "$DIR/delta.cdxj"

rm -rf "$DIR/data" "$DIR/posts"
mkdir -p "$DIR/posts"
# POSTed in the order a crawl's indexes come: unsorted.
shuf --random-source=<(yes) "$DIR/delta.cdxj" | split -l 5000 - "$DIR/posts/p"
"$UKVS" serve --quiet --bind 127.0.0.1:0 --data "$DIR/data" "web=$DIR/base.cdxj" 2>"$DIR/serve.log" &
server=$!
for _ in $(seq 100); do grep -q http:// "$DIR/serve.log" && break; sleep 0.1; done
addr=$(grep -o 'http://[^/]*' "$DIR/serve.log" | head -1)
start=$(date +%s.%N)
ls "$DIR/posts"/p* | xargs -P "$JOBS" -I{} curl -sf --data-binary @{} "$addr/web" -o /dev/null
loaded=$(date +%s.%N)
echo "loaded the delta: $(echo "$N / ($loaded - $start)" | bc) lines/s ($JOBS POSTs at once, each durable)"
kill -TERM $server; wait $server || true
du -sb "$DIR/data/web/store" | awk -v t="$(stat -c %s "$DIR/delta.cdxj")" '{printf "delta on disk: %.1f MB for %.1f MB of text (%.2fx)\n", $1/1e6, t/1e6, $1/t}'
[ "$KEEP" = 1 ] && cp -a "$DIR/data" "$DIR/data.loaded"
fi

# Each timed run starts with no dirty pages (sync), so that none pays
# for the writeback of the one before, and with the page cache in one of
# two states: "cold", the cache dropped (where /proc/sys/vm/drop_caches
# can be written), and "warm", the cache dropped and then the run's
# inputs read into it (as a delta written a moment ago and a base in use
# are): the merge's two files, the fold's base and store. The
# fold's time holds the fsync of its base (a fold is durable before it
# is recorded); the merge's does not (`ukvs merge` renames its output
# into place unsynced), so the sync after the merge is reported too.
now() { date +%s.%N; }
settle() { # cold|warm, then the inputs to warm
    local cache=$1
    shift
    rm -f "$DIR/merged.cdxj"
    sync
    if [ -w /proc/sys/vm/drop_caches ]; then echo 3 > /proc/sys/vm/drop_caches; else echo "cannot drop the page cache: the cold runs are not cold"; fi
    [ "$cache" = cold ] || find "$@" -type f -exec cat {} + > /dev/null
}
cp -a "$DIR/data" "$DIR/data.fold2"
for cache in warm cold; do
    settle $cache "$DIR/base.cdxj" "$DIR/delta.cdxj"
    t0=$(now)
    "$UKVS" merge "$DIR/base.cdxj" "$DIR/delta.cdxj" -o "$DIR/merged.cdxj"
    t1=$(now)
    sync
    t2=$(now)
    mv "$DIR/merged.cdxj" "$DIR/merged.keep"
    settle $cache "$DIR/base.cdxj" "$DIR/data"
    mv "$DIR/merged.keep" "$DIR/merged.cdxj"
    t3=$(now)
    /usr/bin/time -f "fold ($cache): %e s wall, %U s user, %S s sys, %M KB peak" "$UKVS" fold --data "$DIR/data/web" "$DIR/base.cdxj"
    t4=$(now)
    folded=$(ls "$DIR/data/web"/base-*.cdxj)
    cmp "$folded" "$DIR/merged.cdxj" && echo "the fold's base is the merge's output"
    merge=$(echo "$t1 - $t0" | bc)
    synced=$(echo "$t2 - $t1" | bc)
    fold=$(echo "$t4 - $t3" | bc)
    printf "%s: merge %.2f s (its sync after: %.2f s), fold %.2f s: fold/merge %.2fx, fold/(merge + sync) %.2fx (N=%d)\n" \
        "$cache" "$merge" "$synced" "$fold" "$(echo "$fold / $merge" | bc -l)" "$(echo "$fold / ($merge + $synced)" | bc -l)" "$N"
    rm -rf "$DIR/data"
    mv "$DIR/data.fold2" "$DIR/data" 2>/dev/null || true
done
