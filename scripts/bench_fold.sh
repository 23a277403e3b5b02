#!/usr/bin/env bash
# A fold of a live collection against `ukvs merge` of the same files:
# an N-line base (CDXJ) and N lines POSTed to its delta (5,000 a POST,
# through `ukvs serve --data`), then `ukvs fold` (offline) of the delta
# into the base, and `ukvs merge` of the base and the delta's lines as a
# file. The fold's base must be the merge's output, byte for byte.
#
#   scripts/bench_fold.sh                 # N=1000000
#   N=10000000 scripts/bench_fold.sh      # the 10M-line case
#
# Env: N, UKVS (default target/release/ukvs, built if missing), DIR
# (default: a temporary directory on the disk of /tmp), JOBS (parallel
# POSTs while loading, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
JOBS=${JOBS:-2}
UKVS=${UKVS:-target/release/ukvs}
[ -x "$UKVS" ] || cargo build --release --quiet
DIR=${DIR:-$(mktemp -d)}
trap 'kill $server 2>/dev/null || true; rm -rf "$DIR/data" "$DIR/posts"' EXIT

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

sync
t0=$(date +%s.%N)
"$UKVS" merge "$DIR/base.cdxj" "$DIR/delta.cdxj" -o "$DIR/merged.cdxj"
t1=$(date +%s.%N)
/usr/bin/time -f "fold: %e s wall, %M KB peak" "$UKVS" fold --data "$DIR/data/web" "$DIR/base.cdxj"
t2=$(date +%s.%N)
merge=$(echo "$t1 - $t0" | bc)
fold=$(echo "$t2 - $t1" | bc)
folded=$(ls "$DIR/data/web"/base-*.cdxj)
cmp "$folded" "$DIR/merged.cdxj" && echo "the fold's base is the merge's output"
printf "merge %.2f s, fold %.2f s: fold/merge %.2fx (N=%d)\n" "$merge" "$fold" "$(echo "$fold / $merge" | bc -l)" "$N"
rm -f "$DIR/merged.cdxj"
