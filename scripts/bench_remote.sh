#!/usr/bin/env bash
# Exact lookups on a ZipNum cluster with the default 3000-line blocks,
# `ukvs serve` with and without its block cache, the same cluster read
# over loopback HTTP (scripts/range_server.py, one ranged GET per block),
# and pywb's CDX API on the same cluster, one server at a time, loopback.
# Targets: Zipf(1.0) keys p99 < 5 ms and >= 50x pywb's req/s; uniform keys
# from a cold cache >= 25x pywb; remote over loopback at most 3x the local
# time per lookup.
#
#   scripts/bench_remote.sh                          # 10,000,000 index lines
#   LINES=300000 DURATION=5 scripts/bench_remote.sh  # quick smoke test
#
# The index is made by scripts/bench_serve.sh's generator (hosts with 1-80
# paths, 1-3 captures per URL), kept in the work dir; each row starts its
# server afresh (an empty block cache), then wrk sends `GET
# /bench/cdx?url=URL` for URLs drawn from QUERIES existing ones, either
# Zipf(1.0)-distributed over a random ranking of them (real replay
# traffic) or uniformly. Zipf rows get WARMUP seconds of the same load
# first, measured on their own (the table's "warm-up p99": from an empty
# cache), then DURATION seconds measured; uniform rows none (cold cache).
# Each row gives the 1-minute load average as it ends: the machine may
# be shared.
#
# Latency is wrk's (4.x): a closed loop of CONNS connections, each
# sending its next request when the answer to the last is in, timed from
# send to answer. It is not corrected for coordinated omission: while the
# server stalls, fewer requests are sent and timed, so its p99 is that of
# the requests made at the server's own pace, not of a fixed arrival
# rate (which wrk2's -R would give).
#
# OLD=path/to/ukvs runs every ukvs row a second time with that binary
# (rows `old-...`), one after the other in the same run, so a change can
# be measured against the binary before it on the same busy machine.
#
# Env: LINES (default 10000000), QUERIES (default 100000), SEED (1),
# DURATION (seconds per run, 20), WARMUP (5), CONNS (32), WRK_THREADS (2),
# CACHE (--cache of the cached rows, default 1G), PYWB (0: skip pywb),
# OLD (a second ukvs binary to compare, see above),
# KEEP (1: keep the work dir), UKVS (default target/release/ukvs), DATA (a
# directory where the generated cluster and query lists are kept and
# found again by the next run with the same LINES, QUERIES and SEED).
# Needs python3, wrk, curl, and pywb's `wayback` unless PYWB=0.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LINES=${LINES:-10000000}
QUERIES=${QUERIES:-100000}
SEED=${SEED:-1}
DURATION=${DURATION:-20}
WARMUP=${WARMUP:-5}
CONNS=${CONNS:-32}
WRK_THREADS=${WRK_THREADS:-2}
CACHE=${CACHE:-1G}
PYWB=${PYWB:-1}
KEEP=${KEEP:-0}
UKVS=${UKVS:-${CARGO_TARGET_DIR:-$ROOT/target}/release/ukvs}
COLL=bench

missing=()
command -v python3 > /dev/null || missing+=("python3")
command -v wrk > /dev/null || missing+=("wrk (apt-get install -y wrk)")
command -v curl > /dev/null || missing+=("curl")
[ "$PYWB" = 0 ] || command -v wayback > /dev/null || missing+=("pywb's wayback (pip install pywb), or PYWB=0")
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench_remote.sh: missing: ${missing[*]}" >&2
    exit 1
fi
[ -x "$UKVS" ] || (cd "$ROOT" && cargo build --release --quiet)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ukvs-bench-remote.XXXXXX")
PIDS=()
stop() {
    for p in "${PIDS[@]}"; do
        kill -TERM "$p" 2> /dev/null || true
        wait "$p" 2> /dev/null || true
    done
    PIDS=()
}
cleanup() {
    stop
    if [ "$KEEP" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cp "$UKVS" "$WORK/ukvs"
UKVS=$WORK/ukvs
OLD=${OLD:-}
if [ -n "$OLD" ]; then
    cp "$OLD" "$WORK/ukvs-old"
    OLD=$WORK/ukvs-old
fi

# ---------------------------------------------------------------- index
KEPT=${DATA:+$DATA/lines$LINES-queries$QUERIES-seed$SEED}
if [ -n "$KEPT" ] && [ -f "$KEPT/done" ]; then
    echo "reusing $KEPT" >&2
    cp -r "$KEPT/www" "$KEPT/urls.tsv" "$KEPT/zipf.txt" "$KEPT/uniform.txt" "$WORK/"
else
# bench_serve.sh's generator, taken from it as it is.
sed -n "/^python3 - \"\$LINES\"/,/^EOF\$/p" "$ROOT/scripts/bench_serve.sh" | sed '1d;$d' > "$WORK/gen.py"
[ -s "$WORK/gen.py" ] || { echo "cannot find the generator in scripts/bench_serve.sh" >&2; exit 1; }
echo "generating $LINES lines ..." >&2
python3 "$WORK/gen.py" "$LINES" "$QUERIES" "$SEED" "$WORK/urls.tsv" |
    LC_ALL=C sort -S 25% --parallel=2 -T "$WORK" > "$WORK/index.cdxj"
mkdir "$WORK/www"
"$UKVS" zipnum build -o "$WORK/www/cluster" "$WORK/index.cdxj"
rm "$WORK/index.cdxj"

# Request lists: Zipf(1.0) over a random ranking of the query URLs, and
# uniform; 500,000 draws each, percent-encoded once here.
python3 - "$WORK/urls.tsv" "$SEED" "$WORK" << 'EOF'
import bisect, random, sys, urllib.parse
urls = [l.split("\t")[0] for l in open(sys.argv[1]) if l.strip()]
rng = random.Random(int(sys.argv[2]))
rng.shuffle(urls)
cum, t = [], 0.0
for r in range(1, len(urls) + 1):
    t += 1.0 / r
    cum.append(t)
def write(name, picks):
    with open(f"{sys.argv[3]}/{name}.txt", "w") as f:
        for u in picks:
            f.write("/bench/cdx?url=" + urllib.parse.quote(u, safe="") + "\n")
write("zipf", (urls[bisect.bisect_left(cum, rng.random() * t)] for _ in range(500000)))
write("uniform", (rng.choice(urls) for _ in range(500000)))
EOF
if [ -n "$KEPT" ]; then
    mkdir -p "$KEPT"
    cp -r "$WORK/www" "$WORK/urls.tsv" "$WORK/zipf.txt" "$WORK/uniform.txt" "$KEPT/"
    touch "$KEPT/done"
fi
fi
sync
BLOCKS=$(wc -l < "$WORK/www/cluster/index.idx")

cat > "$WORK/lookup.lua" << 'EOF'
local paths, n, i, id = {}, 0, 0, 0
function setup(thread)
  id = id + 1
  thread:set("id", id)
end
function init(args)
  for line in io.lines(args[1]) do
    n = n + 1
    paths[n] = line
  end
  i = (id * 7919) % n
end
function request()
  i = i % n + 1
  return wrk.format(nil, paths[i])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout, latency:percentile(99.9)))
end
EOF

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_http() {
    for _ in $(seq 900); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$1" || true)" != 000 ] && return 0
        sleep 0.1
    done
    echo "no answer from $1" >&2
    exit 1
}

# The loopback HTTP store of the shards and idx.
HPORT=$(free_port)
python3 "$ROOT/scripts/range_server.py" "$WORK/www" --port "$HPORT" > /dev/null &
PIDS+=($!)
STORE_PID=$!
wait_http "http://127.0.0.1:$HPORT/cluster/index.idx"

declare -A RPS P50 P99 P999 ERR HITS WARM LOAD
ROWS=()
# run NAME SERVER SOURCE CACHE KEYS: one row.
run() {
    local name=$1 server=$2 source=$3 cache=$4 keys=$5 port pid bin=$UKVS
    port=$(free_port)
    if [ "$server" = old ]; then
        bin=$OLD
        server=ukvs
    fi
    if [ "$server" = ukvs ]; then
        "$bin" serve --bind "127.0.0.1:$port" --quiet --cache "$cache" "$COLL=$source" 2> "$WORK/$name.log" &
        pid=$!
    else
        mkdir -p "$WORK/pywb"
        printf 'collections:\n  %s: %s\n' "$COLL" "$WORK/www/cluster/index.idx" > "$WORK/pywb/config.yaml"
        (cd "$WORK/pywb" && exec wayback -b 127.0.0.1 -p "$port") > "$WORK/$name.log" 2>&1 &
        pid=$!
    fi
    wait_http "http://127.0.0.1:$port/$COLL/cdx?url=x"
    local WRK=(wrk -t"$WRK_THREADS" -c"$CONNS" --latency --timeout 10s -s "$WORK/lookup.lua" "http://127.0.0.1:$port")
    WARM[$name]=-
    if [ "$keys" = zipf ] && [ "$WARMUP" != 0 ]; then
        "${WRK[@]}" -d"${WARMUP}s" -- "$WORK/$keys.txt" > "$WORK/$name.warm"
        local wr wd wp50 wp99 we
        read -r _ wr wd wp50 wp99 we _ < <(grep '^RESULT ' "$WORK/$name.warm")
        WARM[$name]=$(awk -v x="$wp99" 'BEGIN { printf "%.2f", x / 1000 }')
    fi
    if [ "$server" = ukvs ]; then curl -s "http://127.0.0.1:$port/$COLL/stats" > "$WORK/$name.stats0"; fi
    "${WRK[@]}" -d"${DURATION}s" -- "$WORK/$keys.txt" > "$WORK/$name.wrk"
    local r d p50 p99 e p999
    read -r _ r d p50 p99 e p999 < <(grep '^RESULT ' "$WORK/$name.wrk")
    LOAD[$name]=$(cut -d' ' -f1 /proc/loadavg)
    RPS[$name]=$(awk -v r="$r" -v d="$d" 'BEGIN { printf "%.0f", r / (d / 1e6) }')
    P50[$name]=$(awk -v x="$p50" 'BEGIN { printf "%.2f", x / 1000 }')
    P99[$name]=$(awk -v x="$p99" 'BEGIN { printf "%.2f", x / 1000 }')
    P999[$name]=$(awk -v x="$p999" 'BEGIN { printf "%.2f", x / 1000 }')
    ERR[$name]=$e
    HITS[$name]=-
    if [ "$server" = ukvs ]; then
        curl -s "http://127.0.0.1:$port/$COLL/stats" > "$WORK/$name.stats"
        # Over the measured run only, not the warm-up.
        HITS[$name]=$(python3 - "$WORK/$name.stats0" "$WORK/$name.stats" << 'EOF'
import json, sys
a, b = (json.load(open(p))["blockCache"] for p in sys.argv[1:])
h, m = b["hits"] - a["hits"], b["misses"] - a["misses"]
print("%.1f%%" % (100 * h / (h + m)) if h + m else "-")
EOF
)
    fi
    kill -TERM "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
    ROWS+=("$name")
    echo "$name: ${RPS[$name]} req/s, p99 ${P99[$name]} ms" >&2
}

LOCAL=$WORK/www/cluster
REMOTE=http://127.0.0.1:$HPORT/cluster/
SERVERS=(ukvs)
[ -n "$OLD" ] && SERVERS+=(old)
for s in "${SERVERS[@]}"; do
    p=${s/#ukvs/}
    p=${p:+$p-}
    run "${p}local-cache-zipf" "$s" "$LOCAL" "$CACHE" zipf
    run "${p}local-nocache-zipf" "$s" "$LOCAL" 0 zipf
    run "${p}remote-cache-zipf" "$s" "$REMOTE" "$CACHE" zipf
    run "${p}local-cache-uniform" "$s" "$LOCAL" "$CACHE" uniform
    run "${p}local-nocache-uniform" "$s" "$LOCAL" 0 uniform
    run "${p}remote-cache-uniform" "$s" "$REMOTE" "$CACHE" uniform
done
if [ "$PYWB" != 0 ]; then
    run pywb-zipf pywb "$LOCAL" - zipf
    run pywb-uniform pywb "$LOCAL" - uniform
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else printf "n/a" }'; }
echo
echo "exact lookups, $LINES lines, $BLOCKS blocks of 3000 lines; wrk -t$WRK_THREADS -c$CONNS -d${DURATION}s; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-26s %9s %8s %8s %9s %7s %9s %12s %6s\n' row 'req/s' 'p50 ms' 'p99 ms' 'p99.9 ms' errors 'hit rate' 'warm-up p99' load
for row in "${ROWS[@]}"; do
    printf '%-26s %9s %8s %8s %9s %7s %9s %12s %6s\n' "$row" "${RPS[$row]}" "${P50[$row]}" "${P99[$row]}" "${P999[$row]}" "${ERR[$row]}" "${HITS[$row]}" "${WARM[$row]}" "${LOAD[$row]}"
done
echo "(Zipf rows: measured after WARMUP=${WARMUP}s of the same traffic on the fresh server; 'warm-up p99' is that first phase's own, from an empty cache)"
echo
if [ "$PYWB" != 0 ]; then
    echo "Zipf, cached vs pywb: $(ratio "${RPS[local-cache-zipf]}" "${RPS[pywb-zipf]}")x (target >= 50x); p99 ${P99[local-cache-zipf]} ms (target < 5) after ${WARMUP}s of warm-up, ${WARM[local-cache-zipf]} ms during it"
    echo "uniform, cold cache vs pywb: $(ratio "${RPS[local-cache-uniform]}" "${RPS[pywb-uniform]}")x (target >= 25x)"
fi
echo "cache vs none (Zipf): $(ratio "${RPS[local-cache-zipf]}" "${RPS[local-nocache-zipf]}")x req/s"
echo "remote/local time per lookup: Zipf $(ratio "${RPS[local-cache-zipf]}" "${RPS[remote-cache-zipf]}")x, uniform $(ratio "${RPS[local-cache-uniform]}" "${RPS[remote-cache-uniform]}")x (target <= 3x)"
if [ -n "$OLD" ]; then
    echo "old binary:"
    if [ "$PYWB" != 0 ]; then
        echo "  Zipf, cached vs pywb: $(ratio "${RPS[old-local-cache-zipf]}" "${RPS[pywb-zipf]}")x; p99 ${P99[old-local-cache-zipf]} ms"
        echo "  uniform, cold cache vs pywb: $(ratio "${RPS[old-local-cache-uniform]}" "${RPS[pywb-uniform]}")x"
    fi
    echo "  remote/local: Zipf $(ratio "${RPS[old-local-cache-zipf]}" "${RPS[old-remote-cache-zipf]}")x, uniform $(ratio "${RPS[old-local-cache-uniform]}" "${RPS[old-remote-cache-uniform]}")x"
fi
