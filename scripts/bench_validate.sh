#!/usr/bin/env bash
# Throughput of `ukvs validate` on a synthetic capture index (default about
# 1 GB), pinned to one core, median of N runs, with `cat` and `wc -l` on the
# same file as baselines. Target: >= 300 MB/s.
#
#   scripts/bench_validate.sh [SIZE_MB] [RUNS]
#
# The index is generated once into $BENCH_DIR (default /tmp/ukvs-bench) in
# byte order, shaped like `ukvs index` output: keys `surt datetime`, values
# `offset digest`, an OSLJ with url, mime, status, length, filename.
set -euo pipefail

SIZE_MB=${1:-1024}
RUNS=${2:-3}
BENCH_DIR=${BENCH_DIR:-/tmp/ukvs-bench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
FILE=$BENCH_DIR/capture-${SIZE_MB}M.ukvs

mkdir -p "$BENCH_DIR"
(cd "$ROOT" && cargo build --release --quiet)
BIN=$CARGO_TARGET_DIR/release/ukvs

if [ ! -s "$FILE" ]; then
    echo "generating $FILE (${SIZE_MB} MB)" >&2
    python3 - "$FILE" "$SIZE_MB" <<'PY'
import base64, hashlib, sys
path, size = sys.argv[1], int(sys.argv[2]) * 1024 * 1024
mimes = ["text/html", "image/jpeg", "text/css", "application/javascript", "image/png"]
with open(path + ".tmp", "w", buffering=1 << 22) as out:
    out.write('!context ["https://oduwsdl.github.io/contexts/ukvs"]\n')
    out.write('!fields {"keys":["surt","datetime"],"values":["offset","digest"]}\n')
    out.write('!meta {"type":"CaptureIndex","generator":"bench_validate.sh"}\n')
    written, host, offset = 0, 0, 0
    while written < size:
        host += 1
        chunk = []
        # Zero-padded numbers keep the generated keys in byte order.
        for page in range(40):
            surt = f"com,site{host:07d})/dir/page{page:03d}.html"
            url = f"http://www.site{host:07d}.com/dir/page{page:03d}.html"
            for cap in range(3):
                dt = f"2004{(page % 12) + 1:02d}{cap + 10:02d}1{host % 10}3045"
                digest = base64.b32encode(hashlib.sha1(f"{host}/{page}/{cap}".encode()).digest()).decode()
                mime = mimes[(host + page) % len(mimes)]
                length = 300 + (host * 7 + page * 13 + cap) % 20000
                status = 200 if cap else 301
                chunk.append(
                    f'{surt} {dt} {offset} sha1:{digest} {{"url":"{url}","mime":"{mime}",'
                    f'"status":{status},"length":{length},"filename":"BENCH-{host // 1000:05d}.arc.gz"}}\n'
                )
                offset += length
        text = "".join(chunk)
        out.write(text)
        written += len(text)
import os
os.replace(path + ".tmp", path)
PY
fi

BYTES=$(stat -c %s "$FILE")
PIN=""
if command -v taskset >/dev/null; then PIN="taskset -c 0"; fi

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Prints "WALL CPU" seconds of one run; CPU is user+sys of the process,
# which stays meaningful when other jobs share the core (wall time does
# not).
one_run() {
    local t0 t1 cpu
    t0=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o "$BENCH_DIR/time.out" "$@" >/dev/null 2>&1 || true
    cpu=$(tail -1 "$BENCH_DIR/time.out" | awk '{print $1 + $2}')
    t1=$(date +%s.%N)
    echo "$(echo "$t1 - $t0" | bc -l) $cpu"
}
timeit() {
    local runs
    runs=$(for _ in $(seq "$RUNS"); do one_run "$@"; done)
    echo "$(echo "$runs" | awk '{print $1}' | median) $(echo "$runs" | awk '{print $2}' | median)"
}

cat "$FILE" >/dev/null # warm the page cache
read -r W_CAT C_CAT < <(timeit $PIN cat "$FILE")
read -r W_WC C_WC < <(timeit $PIN wc -l "$FILE")
read -r W_VAL C_VAL < <(timeit $PIN "$BIN" validate "$FILE")
"$BIN" validate "$FILE" | tail -1 >&2

mbps() { echo "scale=1; $BYTES / 1048576 / $1" | bc -l; }
printf 'file: %s (%d bytes), median of %d runs, load: %s\n' "$FILE" "$BYTES" "$RUNS" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-14s wall %7.3f s %8s MB/s | cpu %7.3f s %8s MB/s\n' "cat" "$W_CAT" "$(mbps "$W_CAT")" "$C_CAT" "$(mbps "$C_CAT")"
printf '%-14s wall %7.3f s %8s MB/s | cpu %7.3f s %8s MB/s\n' "wc -l" "$W_WC" "$(mbps "$W_WC")" "$C_WC" "$(mbps "$C_WC")"
printf '%-14s wall %7.3f s %8s MB/s | cpu %7.3f s %8s MB/s  (target >= 300 MB/s, one core)\n' "ukvs validate" "$W_VAL" "$(mbps "$W_VAL")" "$C_VAL" "$(mbps "$C_VAL")"
