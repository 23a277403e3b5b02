#!/usr/bin/env bash
# Load test of the HTTP CDX server, `ukvs serve`, against pywb 2.10's CDX
# API on the same generated index, side by side in one run, loopback only.
# Targets: ukvs answers >= 20x the requests per second of pywb, with a p99
# latency under 5 ms and no errors.
#
#   scripts/bench_serve.sh                          # 10,000,000 index lines
#   LINES=200000 DURATION=5 scripts/bench_serve.sh  # quick smoke test
#
# A sorted CDXJ index of LINES lines (1-3 captures per URL over many hosts)
# is generated and cut into a ZipNum cluster; each of four servers (ukvs
# and pywb, each on the plain file and on the cluster) then runs alone
# while wrk sends exact lookups, `GET /bench/cdx?url=URL`, for URLs picked
# at random from QUERIES existing ones. The files are served as just
# written (still in the page cache), as after a fresh index build.
#
# Env: LINES (default 10000000), LINES_PER_BLOCK (of the cluster; default
# 3000, pywb's and Common Crawl's), QUERIES (distinct query URLs, default
# 100000), SEED (default 1), DURATION (seconds per timed run, default 20),
# WARMUP (seconds of load before each timed run, default 2; 0 = none),
# WRK_THREADS (default 2), CONNS (connections, default 32), CHECKS (URLs
# whose answers are compared with the index before timing, default 5),
# COLD (1: evict the index files from the page cache before each server
# starts), KEEP (1: keep the work dir), UKVS (the ukvs binary, default
# target/release/ukvs). The work dir is made under ${TMPDIR:-/tmp}.
#
# About 3 minutes in all with the defaults on 2 cores, 1.5 of them to
# generate and sort the 2.5 GB index and cut its cluster (LINES=200000
# DURATION=5: 45 s). Needs python3, pywb 2.10
# (`pip install pywb==2.10.*`, the `wayback` command), wrk (`apt-get
# install -y wrk`), curl, GNU time (/usr/bin/time) and util-linux
# (`look`, `fincore`). wrk shares the cores with the server under test, the
# same for both servers; the report says how many CPUs other processes
# took during each timed run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LINES=${LINES:-10000000}
QUERIES=${QUERIES:-100000}
SEED=${SEED:-1}
DURATION=${DURATION:-20}
LINES_PER_BLOCK=${LINES_PER_BLOCK:-3000}
WARMUP=${WARMUP:-2}
WRK_THREADS=${WRK_THREADS:-2}
CONNS=${CONNS:-32}
CHECKS=${CHECKS:-5}
COLD=${COLD:-0}
KEEP=${KEEP:-0}
UKVS=${UKVS:-${CARGO_TARGET_DIR:-$ROOT/target}/release/ukvs}
COLL=bench

# ---------------------------------------------------------------- tools
missing=()
command -v python3 > /dev/null || missing+=("python3")
command -v wayback > /dev/null || missing+=("pywb's wayback (pip install 'pywb==2.10.*')")
command -v wrk > /dev/null || missing+=("wrk (apt-get install -y wrk)")
command -v curl > /dev/null || missing+=("curl (apt-get install -y curl)")
command -v look > /dev/null || missing+=("look (apt-get install -y bsdextrautils)")
command -v fincore > /dev/null || missing+=("fincore (apt-get install -y util-linux)")
[ -x /usr/bin/time ] || missing+=("GNU time at /usr/bin/time (apt-get install -y time)")
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench_serve.sh: missing:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi
if [ ! -x "$UKVS" ]; then
    (cd "$ROOT" && cargo build --release --quiet) || {
        echo "cargo build --release failed (retry, or set UKVS=path/to/ukvs)" >&2
        exit 1
    }
fi
PYWB_VERSION=$(python3 -c 'import pywb; print(pywb.__version__)')

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ukvs-bench-serve.XXXXXX")
SERVER_PID=
stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    kill -TERM "$SERVER_PID" 2> /dev/null || true
    for _ in $(seq 50); do
        kill -0 "$SERVER_PID" 2> /dev/null || break
        sleep 0.1
    done
    kill -KILL "$SERVER_PID" 2> /dev/null || true
    wait "$SERVER_PID" 2> /dev/null || true
    SERVER_PID=
}
cleanup() {
    stop_server
    if [ "$KEEP" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# A copy of the binary, so that a rebuild of target/ during the run cannot
# change what is measured half way.
cp "$UKVS" "$WORK/ukvs"
UKVS=$WORK/ukvs

# ---------------------------------------------------------------- index
# The generator writes unsorted CDXJ on stdout: hosts hostN.DOMAIN.TLD
# with 1-80 paths each (the root, pages and ?id= queries) and 1-3
# captures per URL, until LINES lines; and, in argv[4], QUERIES of those
# URLs in random order as `URL<TAB>SURT key`. Deterministic for a SEED.
echo "generating $LINES CDXJ lines (seed $SEED) in $WORK ..." >&2
t0=$EPOCHREALTIME
python3 - "$LINES" "$QUERIES" "$SEED" "$WORK/urls.tsv" << 'EOF' | LC_ALL=C sort -S 25% --parallel=2 -T "$WORK" > "$WORK/index.cdxj"
import base64, random, sys

LINES, QUERIES, SEED, URLS_OUT = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = random.Random(SEED)
TLDS = ["com", "org", "net", "de", "fr", "uk", "io", "jp"]
DOMAINS = ["example", "archive", "news", "shop", "blog", "wiki", "media", "data", "forum", "museum"]
KINDS = [("text/html", "200")] * 6 + [("image/jpeg", "200"), ("text/css", "200"),
         ("application/javascript", "200"), ("text/html", "301"), ("text/html", "404"), ("warc/revisit", "-")]
LINE = ('%s %s {"url": "%s", "mime": "%s", "status": "%s", "digest": "sha1:%s", '
        '"length": "%d", "offset": "%d", "filename": "crawl-%05d.warc.gz"}\n')
# URLs average 2 captures: keep each with this chance to end with ~QUERIES.
p_pick = min(1.0, 2.2 * QUERIES / max(LINES, 1))
picked, out, n, h = [], [], 0, 0
while n < LINES:
    tld, dom, sub = TLDS[h % len(TLDS)], DOMAINS[(h // len(TLDS)) % len(DOMAINS)], "host%d" % h
    host, surt = "%s.%s.%s" % (sub, dom, tld), "%s,%s,%s)" % (tld, dom, sub)
    h += 1
    for p in range(rng.randint(1, 80)):
        if n >= LINES:
            break
        path = "/" if p == 0 else "/s%d/article?id=%d" % (p % 7, p) if p % 5 == 0 else "/s%d/p%d.html" % (p % 7, p)
        url, key = "http://" + host + path, surt + path
        if rng.random() < p_pick:
            picked.append(url + "\t" + key)
        for _ in range(min(rng.randint(1, 3), LINES - n)):
            r = rng.getrandbits(64)
            ts = "%04d%02d%02d%02d%02d%02d" % (2010 + r % 14, 1 + (r >> 4) % 12, 1 + (r >> 8) % 28,
                                                (r >> 13) % 24, (r >> 18) % 60, (r >> 24) % 60)
            mime, status = KINDS[(r >> 30) % len(KINDS)]
            digest = base64.b32encode(rng.getrandbits(160).to_bytes(20, "big")).decode()
            out.append(LINE % (key, ts, url, mime, status, digest, 500 + (r >> 36) % 50000,
                               (r >> 20) % 1000000000, (r >> 40) % 10000))
            n += 1
    if len(out) >= 10000:
        sys.stdout.write("".join(out))
        out.clear()
sys.stdout.write("".join(out))
rng.shuffle(picked)
with open(URLS_OUT, "w") as f:
    f.write("".join(u + "\n" for u in picked[:QUERIES]))
print(f"{n} lines, {h} hosts, {min(len(picked), QUERIES)} query URLs", file=sys.stderr)
EOF
t1=$EPOCHREALTIME
"$UKVS" zipnum build --lines-per-block "$LINES_PER_BLOCK" -o "$WORK/cluster" "$WORK/index.cdxj"
t2=$EPOCHREALTIME
# Written back now, so that no writeback runs during the timing; the pages
# stay cached.
sync
index_mb=$(du -m "$WORK/index.cdxj" | cut -f1)
cluster_mb=$(du -sm "$WORK/cluster" | cut -f1)
echo "index.cdxj: $(wc -l < "$WORK/index.cdxj") lines, $index_mb MB ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }') s to generate and sort);" \
    "ZipNum cluster: $(wc -l < "$WORK/cluster/index.idx") blocks, $cluster_mb MB ($(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.0f", b - a }') s)" >&2

# pywb reads its collections from config.yaml in the directory it runs in.
mkdir "$WORK/pywb-plain" "$WORK/pywb-zipnum"
printf 'collections:\n  %s: %s\n' "$COLL" "$WORK/index.cdxj" > "$WORK/pywb-plain/config.yaml"
printf 'collections:\n  %s: %s\n' "$COLL" "$WORK/cluster/index.idx" > "$WORK/pywb-zipnum/config.yaml"

# wrk: each thread loads the URL list, percent-encodes it once and sends
# exact lookups of URLs picked at random (seeded per thread); done() prints
# one RESULT line: requests, duration (us), bytes, p50, p99, max (us) and
# the connect, read, write, status (>= 400) and timeout error counts.
cat > "$WORK/lookup.lua" << 'EOF'
local paths, n, id = {}, 0, 0
function setup(thread)
  id = id + 1
  thread:set("id", id)
end
local function encode(s)
  return (s:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", string.byte(c)) end))
end
function init(args)
  for line in io.lines(args[2]) do
    n = n + 1
    paths[n] = "/" .. args[1] .. "/cdx?url=" .. encode(line:match("^[^\t]+"))
  end
  math.randomseed(tonumber(args[3]) * 1000 + id)
end
function request()
  return wrk.format(nil, paths[math.random(n)])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d %d %d %d %d %d %d\n", summary.requests, summary.duration,
    summary.bytes, latency:percentile(50), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
EOF

# The expected answer to each checked URL: its lines in the index, with the
# fields both servers add for the collection they come from.
head -n "$CHECKS" "$WORK/urls.tsv" > "$WORK/check.tsv"
i=0
while IFS=$'\t' read -r url key; do
    i=$((i + 1))
    LC_ALL=C look "$key " "$WORK/index.cdxj" |
        sed "s/}\$/, \"source\": \"$COLL\", \"source-coll\": \"$COLL\"}/" > "$WORK/expect.$i"
done < "$WORK/check.tsv"

# ---------------------------------------------------------------- runs
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# cpu_ticks PID: user + system clock ticks of a process so far.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
HZ=$(getconf CLK_TCK)
# resident FILE...: percent of the files' bytes in the page cache.
resident() { fincore --bytes --noheadings -o RES,SIZE "$@" | awk '{ r += $1; s += $2 } END { printf "%.0f", s ? 100 * r / s : 0 }'; }

declare -A RPS P50 P99 MAX ERR ERRS RSS ANON CPU BPR CHECK CACHED OTHERS NOTE
ROWS=()

# measure SERVER KIND: starts SERVER (ukvs or pywb) on KIND (plain or
# zipnum), checks its answers, then load-tests it; results in the arrays
# above under "SERVER.KIND".
measure() {
    local server=$1 kind=$2 row="$1.$2" port log files url key out i rc
    port=$(free_port)
    log="$WORK/$row.log"
    if [ "$kind" = plain ]; then files=("$WORK/index.cdxj"); else files=("$WORK"/cluster/*); fi
    if [ "$COLD" = 1 ]; then
        for f in "${files[@]}"; do dd if="$f" iflag=nocache count=0 status=none; done
    fi
    if [ "$server" = ukvs ]; then
        local path=$WORK/index.cdxj
        [ "$kind" = zipnum ] && path=$WORK/cluster
        "$UKVS" serve --bind "127.0.0.1:$port" --quiet "$COLL=$path" 2> "$log" &
        SERVER_PID=$!
    else
        # exec: the shell's process becomes pywb's, whose memory is read
        (cd "$WORK/pywb-$kind" && exec wayback -b 127.0.0.1 -p "$port") > "$log" 2>&1 &
        SERVER_PID=$!
    fi
    echo "$server on the $kind index: pid $SERVER_PID, port $port" >&2
    # Ready once a lookup gets any HTTP answer (pywb takes a few seconds).
    for i in $(seq 600); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/$COLL/cdx?url=x" || true)" != 000 ] && break
        kill -0 "$SERVER_PID" 2> /dev/null || { echo "$server exited while starting:" >&2; cat "$log" >&2; exit 1; }
        [ "$i" = 600 ] && { echo "$server did not answer within 60 s:" >&2; cat "$log" >&2; exit 1; }
        sleep 0.1
    done

    # Correctness, once, untimed: the answer to each checked URL must be its
    # lines of the index, byte for byte.
    CHECK[$row]=ok
    i=0
    while IFS=$'\t' read -r url key; do
        i=$((i + 1))
        out=$WORK/$row.answer.$i
        curl -sS -G --data-urlencode "url=$url" "http://127.0.0.1:$port/$COLL/cdx" -o "$out"
        if ! cmp -s "$out" "$WORK/expect.$i"; then
            CHECK[$row]=WRONG
            echo "$server ($kind): wrong answer for $url:" >&2
            diff "$WORK/expect.$i" "$out" | head -20 >&2 || true
        fi
    done < "$WORK/check.tsv"

    local WRK=(wrk -t"$WRK_THREADS" -c"$CONNS" --latency --timeout 10s -s "$WORK/lookup.lua" "http://127.0.0.1:$port")
    [ "$WARMUP" != 0 ] && "${WRK[@]}" -d"${WARMUP}s" -- "$COLL" "$WORK/urls.tsv" "$SEED" > /dev/null
    CACHED[$row]=$(resident "${files[@]}")
    local c0 m0 c1 m1 t0 t1 wu ws
    c0=$(cpu_ticks "$SERVER_PID") m0=$(machine_ticks) t0=$EPOCHREALTIME
    /usr/bin/time -f '%U %S' -o "$WORK/$row.time" \
        "${WRK[@]}" -d"${DURATION}s" -- "$COLL" "$WORK/urls.tsv" "$SEED" > "$WORK/$row.wrk"
    t1=$EPOCHREALTIME m1=$(machine_ticks)
    if ! kill -0 "$SERVER_PID" 2> /dev/null; then
        echo "$server ($kind) died during the load:" >&2
        cat "$log" >&2
        exit 1
    fi
    c1=$(cpu_ticks "$SERVER_PID")
    RSS[$row]=$(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$SERVER_PID/status")
    ANON[$row]=$(awk '/^RssAnon:/ { printf "%.0f", $2 / 1024 }' "/proc/$SERVER_PID/status")
    read -r wu ws < "$WORK/$row.time"

    local r d b p50 p99 max ec er ew es et
    read -r _ r d b p50 p99 max ec er ew es et < <(grep '^RESULT ' "$WORK/$row.wrk")
    RPS[$row]=$(awk -v r="$r" -v d="$d" 'BEGIN { printf "%.0f", r / (d / 1e6) }')
    P50[$row]=$(awk -v x="$p50" 'BEGIN { printf "%.2f", x / 1000 }')
    P99[$row]=$(awk -v x="$p99" 'BEGIN { printf "%.2f", x / 1000 }')
    MAX[$row]=$(awk -v x="$max" 'BEGIN { printf "%.1f", x / 1000 }')
    ERR[$row]=$((ec + er + ew + es + et))
    ERRS[$row]="connect $ec, read $er, write $ew, status >= 400 $es, timeout $et"
    BPR[$row]=$((r > 0 ? b / r : 0))
    # Server CPU as a share of one core; what the rest of the machine took
    # besides the server and wrk, in CPUs.
    CPU[$row]=$(awk -v c="$((c1 - c0))" -v hz="$HZ" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", 100 * c / hz / (t1 - t0) }')
    OTHERS[$row]=$(awk -v m="$((m1 - m0))" -v c="$((c1 - c0))" -v hz="$HZ" -v wu="$wu" -v ws="$ws" -v t0="$t0" -v t1="$t1" \
        'BEGIN { x = ((m - c) / hz - wu - ws) / (t1 - t0); printf "%.2f", x < 0 ? 0 : x }')

    # ukvs must stop cleanly on SIGTERM (exit 0) and, with --quiet, log
    # nothing but its start and stop lines.
    kill -TERM "$SERVER_PID"
    rc=0
    wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    NOTE[$row]=
    if [ "$server" = ukvs ]; then
        [ "$rc" = 0 ] || NOTE[$row]+="exited $rc after SIGTERM; "
        local extra
        extra=$(grep -cv -e '^ukvs serve: listening on ' -e '^ukvs serve: stopping' "$log" || true)
        [ "$extra" = 0 ] || NOTE[$row]+="$extra unexpected log lines (first: $(grep -v -e '^ukvs serve: listening on ' -e '^ukvs serve: stopping' "$log" | head -1)); "
    fi
    ROWS+=("$row")
}

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); wrk -t$WRK_THREADS -c$CONNS -d${DURATION}s, warm-up ${WARMUP}s, $(wc -l < "$WORK/urls.tsv") query URLs" >&2
measure ukvs plain
measure ukvs zipnum
measure pywb plain
measure pywb zipnum

# ---------------------------------------------------------------- report
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else printf "n/a" }'; }
# verdict VALUE OP TARGET: "met" or "MISSED".
verdict() { awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN { ok = (op == "<") ? v < t : (op == "==") ? v == t : v >= t; print ok ? "met" : "MISSED" }'; }

echo
echo "ukvs serve vs pywb $PYWB_VERSION CDX API: exact lookups, $LINES index lines ($index_mb MB plain, $cluster_mb MB ZipNum)"
echo "wrk -t$WRK_THREADS -c$CONNS -d${DURATION}s, $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -1)); files as just written$([ "$COLD" = 1 ] && echo ", evicted from the page cache before each server start")"
echo
printf '%-6s %-7s %9s %8s %8s %8s %7s %7s %8s %6s %6s %7s %7s %6s\n' \
    server index 'req/s' 'p50 ms' 'p99 ms' 'max ms' errors 'RSS MB' 'anon MB' 'CPU %' 'B/req' cached others check
for row in "${ROWS[@]}"; do
    printf '%-6s %-7s %9s %8s %8s %8s %7s %7s %8s %6s %6s %6s%% %7s %6s\n' "${row%.*}" "${row#*.}" \
        "${RPS[$row]}" "${P50[$row]}" "${P99[$row]}" "${MAX[$row]}" "${ERR[$row]}" "${RSS[$row]}" \
        "${ANON[$row]}" "${CPU[$row]}" "${BPR[$row]}" "${CACHED[$row]}" "${OTHERS[$row]}" "${CHECK[$row]}"
done
echo
echo "RSS: peak (VmHWM) after the run, mapped index pages included; anon: RssAnon at the end (the"
echo "server's own memory). CPU: server CPU time over the run, 100 = one core. B/req: bytes"
echo "received per answer, headers included. cached: share of the index files in the page cache"
echo "at the start of the run. others: CPUs taken by other processes (not the server, not wrk)."
echo
rp=$(ratio "${RPS[ukvs.plain]}" "${RPS[pywb.plain]}")
rz=$(ratio "${RPS[ukvs.zipnum]}" "${RPS[pywb.zipnum]}")
echo "ukvs/pywb req/s: plain ${rp}x, ZipNum ${rz}x" \
    "(target >= 20x: plain $(verdict "$rp" '>=' 20), ZipNum $(verdict "$rz" '>=' 20))"
echo "ukvs p99: plain ${P99[ukvs.plain]} ms, ZipNum ${P99[ukvs.zipnum]} ms" \
    "(target < 5 ms: plain $(verdict "${P99[ukvs.plain]}" '<' 5), ZipNum $(verdict "${P99[ukvs.zipnum]}" '<' 5))"
echo "ukvs errors: plain ${ERR[ukvs.plain]}, ZipNum ${ERR[ukvs.zipnum]}" \
    "(target 0: plain $(verdict "${ERR[ukvs.plain]}" '==' 0), ZipNum $(verdict "${ERR[ukvs.zipnum]}" '==' 0))"
for row in "${ROWS[@]}"; do
    [ "${ERR[$row]}" = 0 ] || echo "$row errors: ${ERRS[$row]}"
    [ -z "${NOTE[$row]}" ] || echo "$row: ${NOTE[$row]%; }"
    [ "${CHECK[$row]}" = ok ] || echo "$row: WRONG answers to the checked URLs (see above)"
done
if [ "$COLD" != 1 ]; then
    echo "page cache: not dropped (files as written); COLD=1 evicts the index files before each server starts"
fi
