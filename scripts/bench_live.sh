#!/usr/bin/env bash
# Ingest benchmark of live collections (`ukvs serve --data`), loopback
# only, one run: POST the CDX11 lines of an index in batches of BATCH
# lines (one WARC's worth) from several posters at once, every POST
# answered only once durable (fsync'd), while wrk sends exact lookups;
# then report the ingest rate, lookup latency idle and during ingest, and
# the delta's disk space per line against the CDX text.
# Targets: >= 200,000 lines/s ingested; lookup p99 < 10 ms during ingest;
# OutbackCDX claims 1/4 to 1/5 of the CDX text on disk.
# Figures (1,000,000 lines, load 2.8 from other builds; ARCHITECTURE.md
# has the story): 76,400 lines/s, 14.3 us of server CPU per line;
# lookups 32,400/s (37 us CPU each, p99 1.3 ms) over the first tenth,
# 8,600/s (p99 15.3 ms) during ingest, 15,900/s (92 us, p99 2.7 ms) over
# all; the delta 1.06x the CDX text. On a quiet machine (load 2.3 with
# the bench's own processes): 82,900 lines/s, 13.8 us a line; lookups
# 36,200/s (33 us, p99 0.98 ms) over the first tenth, 8,100/s (p99
# 12.8 ms) during ingest, 16,300/s (89 us, p99 2.6 ms) over all; the
# build before (quiet): 92,200 lines/s, 11.8 us; p99 21.7 ms during
# ingest; 13,700/s, 118 us, p99 4.5 ms over all.
# Without a digest index (DIGEST_INDEX=0), runs alternated with the
# default, load 2-3: 103,800 and 100,700 lines/s (10.7-10.8 us a line)
# against 73,200 and 62,800 (15.5-17.4 us), 0.61-0.63x the CDX text
# against 1.06-1.09x. 10,000,000 lines (INPUT= one kept input, load
# 9-10): 39,200 lines/s (35 us a line: the merges of a delta that size),
# p99 28.8 ms during ingest, 1.05x the text; without a digest index
# 55,200 lines/s (26.9 us), p99 30.1 ms, 0.61x. FOLD=cluster at 10M
# lines: 58-63 s (5.6-5.8 us of CPU a line); the collection 0.72x the
# text after it (the cluster 0.29x, the digest index and journal 0.43x);
# idle lookups in the 10 s after it 6,400/s over 3,000-line blocks
# (10,200-13,400 over 300-line ones) against 6,800-7,800 over the delta.
# LOOKUP_RATE=1000 at 10M lines (713-765 lookups/s): 54,900-83,600
# lines/s, 17.4-17.8 us a line, p99 during ingest 48.9-99.7 ms.
# On a quiet machine (one batch at a time into the memtables, the same
# input): 102,100-102,900 lines/s, 14.2-14.9 us a line, p99 28.6-30.2 ms
# with 8 MiB memtables; 108,000-112,300 lines/s, 12.9-13.5 us, p99
# 13.0-20.2 ms with 64 MiB (`serve --write-memory 256`, the default).
# SERVER_LOG=1 at 10M lines (three runs, one with wrk at nice -10,
# which changed nothing): wrk's p99 during ingest 16.8-35.7 ms, the
# server's own (request to answer) 5.1-5.3 ms, p99.9 8.5-9.9 ms, max
# 205-234 ms: most of what wrk waits is spent before the server's
# handler starts or after it ends; the slowest lookups wait inside it.
# With mimalloc as the allocator, LOOKUP_RATE=1000, alternated with the
# same commit on glibc's malloc (load about 2): 1,000,000 lines at
# 148,000-164,000 lines/s (8.0-8.9 us a line) against 134,000-146,000
# (8.9-9.7 us), p99 during ingest 4.7-5.1 ms against 5.0-5.8, idle
# lookups over all 32,000-34,400/s (40-43 us) against 18,800-25,400/s
# (61-87 us); 10,000,000 lines at 115,300 and 131,200 lines/s (12.7 us)
# against 107,600 (13.5 us), p99 during ingest 24.7-33.0 ms against
# 24.3, the delta 1.07x the text.
# wrk's p99 is corrected for coordinated omission (see SERVER_LOG
# below), so the stalls that hold every lookup at once set it: at 10M
# lines during ingest (four runs, the answers also timed on the
# loopback with tcpdump) the server's p99 was 7.1-7.3 ms, its p99.9
# 86-97 ms and its slowest 216-257 ms, where wrk said 22.0-34.0 ms;
# those times corrected as wrk corrects gave 34.3 ms where wrk said
# 34.0. The stalls were lsm-tree deleting the tables a compaction
# retired while it held locks that reads take (ARCHITECTURE.md). With
# the store keeping a reference to every table and deleting retired
# ones on a thread of its own (two runs, the same input, load about 2):
# p99 during ingest 8.22 and 7.94 ms, on the loopback p99 6.6-7.1 ms,
# p99.9 10.1-11.1 ms and the slowest 17.3-23.6 ms, against 22.0 and
# 26.3 ms (p99.9 86-97, slowest 216-218) for the build before in the
# two runs before them; ingest 116,100-117,200 lines/s against
# 110,500-112,700.
# At 10M lines (LOOKUP_RATE=1000, the same input, two runs of each
# build alternated, load about 2): search threads waiting on a channel
# instead of rayon's pool, p99 during ingest 6.70-7.00 ms against
# 7.90-7.93; entries without the CDX line's offset and filename and
# with its digest as bytes, then digest partitions without bloom
# filters in 16 KiB blocks: the delta 0.98x, 0.91x, then 0.86x the text
# (settled) against 1.07x, 4.1-4.2x the text written during ingest
# against 5.4-5.5x, 11.3 us of server CPU a line against 11.5-13.0
# (129,800-130,200 lines/s against 110,900-131,600: the rate of one
# build spreads by a fifth between runs). At 1M lines the same builds:
# 157,400-160,500 lines/s against 162,700-173,300 (8.0-8.3 us a line
# against 7.6-8.1), 2.3x the text written against 2.8x; the delta
# 2.23x the text against 1.02x, being mostly journal: with smaller
# entries no memtable has been written out yet at a million lines, and
# a journal goes once every memtable it fed has. Without the digest
# index (DIGEST_INDEX=0, 10M lines, two runs each alternated): 196,500
# and 198,800 lines/s against 196,600 and 199,800 (7.2-7.3 us a line
# for both), the delta 0.49x the text against 0.62-0.63x, 2.8x written
# against 3.8x, p99 during ingest 7.25-7.52 ms against 8.01-8.05.
# With the allocator keeping freed pages a minute (main.rs), against a
# delay of 0 (10M lines, alternated, SETTLE=0): 227,700 and 234,600
# lines/s (5.8-5.9 us a line) without the digest index against 183,800
# and 200,900 (7.0-7.6 us); 154,600 (9.2 us) with it against 132,900
# (10.9 us); p99 during ingest 6.3-7.3 ms for either; the server's peak
# memory 1.2-1.3x (1.08 GB with the digest index, 0.90-0.96 without).
#
#   scripts/bench_live.sh                        # 1,000,000 lines
#   LINES=10000000 scripts/bench_live.sh         # the 10M-line run
#   LINES=100000 DURATION=3 scripts/bench_live.sh  # quick smoke test
#
# The index is synthesized CDX11 as a crawler's indexer writes it, one
# WARC after another: each batch of BATCH lines is one WARC file
# (crawl-NNNNN.warc.gz, offsets ascending, its captures in time order),
# URLs drawn from HOSTS hosts of 1-80 paths (pages, ?id= queries, images,
# scripts; the lower-numbered hosts more often) with the repeats a
# recrawl gives (about 1.8 captures per URL, up to a few hundred for a
# busy home page), real-looking MIME types,
# status codes, base32 SHA-1 digests and lengths; keys are the SURTs of
# the URLs. Lines are posted in crawl order (not sorted), as OutbackCDX
# clients post them.
#
# Steps: a first tenth of the batches is posted alone (the collection is
# created, and lookups find something); wrk runs DURATION s idle; then
# the other batches are posted by POSTERS parallel curl processes while
# wrk runs until the last POST is answered (lookups of URLs of the whole
# index, found or not yet); then wrk runs DURATION s idle again.
# Last, the delta is folded into one base (FOLD) and wrk runs DURATION
# s idle over it.
#
# Env: LINES (default 1000000), BATCH (lines per POST, default 5000),
# POSTERS (parallel posters, default 4), HOSTS (default LINES/40),
# QUERIES (distinct lookup URLs, default 50000), SEED (default 1),
# DIGEST_INDEX (0: the collection is made by `serve --no-digest-index`,
# keeping no index of digests, as OutbackCDX keeps none; default 1),
# WRITE_MEMORY (the server's --write-memory in MiB; default its own),
# LOOKUP_RATE (lookups/s that wrk offers during ingest: each connection
# waits CONNS/LOOKUP_RATE s after an answer before its next lookup, as a
# replay's users do; default 0: as fast as answered, a closed loop that
# takes whatever the writes leave of the cores, so that its p99 is
# mostly time queued),
# FOLD (what the delta is folded into at the end: cluster, the default,
# a ZipNum cluster; file, a sorted file; none: no fold),
# DURATION (seconds of each idle wrk run, default 10), WRK_THREADS
# (default 1), CONNS (wrk connections, default 16), SETTLE (seconds to
# wait after the lookups for the store's merges to settle before its
# space is measured again, default 120; 0: no wait), KEEP (1: keep the work
# dir), INPUT (the work dir of a run kept with KEEP=1: its batches and
# URLs are posted and looked up again, not generated; LINES, BATCH,
# HOSTS, QUERIES and SEED are then theirs), UKVS (the binary, default
# target/release/ukvs), SERVER_LOG (1: the server logs each request,
# and the report adds the lookups' times inside the server during
# ingest, from request to answer, beside wrk's, which also count what
# comes before the server's handler starts and after it ends, and are
# corrected for coordinated omission: at its end wrk adds, for every
# answer slower than twice a connection's mean time between requests
# (about 19 ms at LOOKUP_RATE=1000), the answers that requests sent at
# that pace would have waited for behind it, so that one stall of 200
# ms weighs about ten answers a connection, as it would for users who
# do not wait for each other). The work dir is
# made under ${TMPDIR:-/tmp}; it needs about 3x the CDX text on disk.
#
# Needs python3 (the generator), wrk (`apt-get install -y wrk`), curl and
# GNU xargs. wrk, the posters and the server share the machine's cores.
set -euo pipefail
# A bench says why it stops: any command that fails names its line.
trap 'echo "bench_live.sh: line $LINENO: \"$BASH_COMMAND\" failed (exit $?)" >&2' ERR

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LINES=${LINES:-1000000}
BATCH=${BATCH:-5000}
POSTERS=${POSTERS:-4}
HOSTS=${HOSTS:-$((LINES / 40 + 1))}
QUERIES=${QUERIES:-50000}
SEED=${SEED:-1}
DURATION=${DURATION:-10}
WRK_THREADS=${WRK_THREADS:-1}
DIGEST_INDEX=${DIGEST_INDEX:-1}
SERVE_ARGS=()
[ "$DIGEST_INDEX" = 0 ] && SERVE_ARGS+=(--no-digest-index)
[ -n "${WRITE_MEMORY:-}" ] && SERVE_ARGS+=(--write-memory "$WRITE_MEMORY")
CONNS=${CONNS:-16}
FOLD=${FOLD:-cluster}
LOOKUP_RATE=${LOOKUP_RATE:-0}
# Each connection waits CONNS/LOOKUP_RATE s before its next lookup.
PACE_MS=$(awk -v r="$LOOKUP_RATE" -v c="$CONNS" 'BEGIN { printf "%d", (r > 0 ? c * 1000 / r : 0) }')
KEEP=${KEEP:-0}
SETTLE=${SETTLE:-120}
SERVER_LOG=${SERVER_LOG:-0}
QUIET=(--quiet)
[ "$SERVER_LOG" = 1 ] && QUIET=()
INPUT=${INPUT:-}
UKVS=${UKVS:-${CARGO_TARGET_DIR:-$ROOT/target}/release/ukvs}
COLL=bench

missing=()
command -v python3 > /dev/null || missing+=("python3")
command -v wrk > /dev/null || missing+=("wrk (apt-get install -y wrk)")
command -v curl > /dev/null || missing+=("curl (apt-get install -y curl)")
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench_live.sh: missing:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi
if [ ! -x "$UKVS" ]; then
    (cd "$ROOT" && cargo build --release --quiet) || {
        echo "cargo build --release failed (retry, or set UKVS=path/to/ukvs)" >&2
        exit 1
    }
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ukvs-bench-live.XXXXXX")
SERVER_PID=
WRK_PID=
cleanup() {
    [ -n "$WRK_PID" ] && kill -INT "$WRK_PID" 2> /dev/null || true
    if [ -n "$SERVER_PID" ]; then
        kill -TERM "$SERVER_PID" 2> /dev/null || true
        wait "$SERVER_PID" 2> /dev/null || true
    fi
    if [ "$KEEP" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cp "$UKVS" "$WORK/ukvs"
UKVS=$WORK/ukvs

# ------------------------------------------------------------ the index
# One file per batch (batches/b00000.cdx ...), each with the CDX legend
# first, as cdx-indexer writes a WARC's file; and QUERIES URLs of the
# index in random order (urls.txt).
if [ -n "$INPUT" ]; then
    # The same lines as a kept run, for two builds side by side.
    echo "reading the batches and URLs of $INPUT ..." >&2
    ln -s "$INPUT/batches" "$WORK/batches"
    cp "$INPUT/urls.txt" "$WORK/urls.txt"
    LINES=$(cat "$WORK"/batches/*.cdx | grep -vc '^ CDX')
else
echo "generating $LINES CDX11 lines in batches of $BATCH (seed $SEED) in $WORK ..." >&2
mkdir "$WORK/batches"
python3 - "$LINES" "$BATCH" "$HOSTS" "$QUERIES" "$SEED" "$WORK" << 'EOF'
import base64, os, random, sys

LINES, BATCH, HOSTS, QUERIES, SEED = (int(a) for a in sys.argv[1:6])
WORK = sys.argv[6]
rng = random.Random(SEED)
TLDS = ["com", "org", "net", "de", "fr", "uk", "au", "io", "jp", "gov"]
WORDS = ["example", "archive", "news", "shop", "blog", "wiki", "media", "data", "forum", "museum",
         "library", "city", "school", "travel", "sport", "music", "health", "tech", "food", "film"]
PAGES = [("text/html", "200")] * 10 + [("text/html", "301"), ("text/html", "302"), ("text/html", "404"),
                                       ("warc/revisit", "-")]
ASSETS = [("image/jpeg", "/img/%d.jpg"), ("image/png", "/img/%d.png"), ("text/css", "/css/site%d.css"),
          ("application/javascript", "/js/app%d.js")]

def host(h):
    tld, word = TLDS[h % len(TLDS)], WORDS[(h // len(TLDS)) % len(WORDS)]
    sub = "www" if h % 3 == 0 else "h%d" % h
    return "%s.%s%d.%s" % (sub, word, h // 200, tld)

def surt(url):
    rest = url.split("://", 1)[1]
    hostname, _, path = rest.partition("/")
    parts = hostname.split(".")
    if parts[0] == "www":
        parts = parts[1:]
    return ",".join(reversed(parts)) + ")/" + path.lower()

def url_of(h, p):
    base = "http://" + host(h)
    if p == 0:
        return base + "/", "text/html"
    if p % 6 == 0:
        mime, pat = ASSETS[p % len(ASSETS)]
        return base + pat % p, mime
    if p % 5 == 0:
        return base + "/s%d/article?id=%d&lang=en" % (p % 7, p * 37), "text/html"
    return base + "/s%d/page-%d.html" % (p % 7, p), "text/html"

paths = [rng.randint(1, 80) for _ in range(HOSTS)]
picked = []
n, warc, t = 0, 0, 1262304000  # 2010-01-01
import time as _t
while n < LINES:
    size = min(BATCH, LINES - n)
    offset = 0
    out = [" CDX N b a m s k r M S V g\n"]
    for i in range(size):
        # Busy hosts are crawled more, but no host takes over the crawl:
        # a URL has a few captures, as across recrawls.
        h = int(HOSTS * rng.random() ** 1.5)
        p = rng.randrange(paths[h])
        url, mime = url_of(h, p)
        status = "200"
        if mime == "text/html":
            mime, status = PAGES[rng.randrange(len(PAGES))]
        t += rng.randint(0, 3)
        ts = _t.strftime("%Y%m%d%H%M%S", _t.gmtime(t))
        digest = base64.b32encode(rng.getrandbits(160).to_bytes(20, "big")).decode()
        length = rng.randint(300, 60000)
        redirect = "-" if status not in ("301", "302") else url + "/"
        out.append("%s %s %s %s %s %s %s - %d %d crawl-%05d.warc.gz\n" % (
            surt(url), ts, url, mime, status, digest, redirect, length, offset, warc))
        offset += length
        if rng.random() < 2.0 * QUERIES / LINES:
            picked.append(url)
    with open(os.path.join(WORK, "batches", "b%05d.cdx" % warc), "w") as f:
        f.write("".join(out))
    n += size
    warc += 1
rng.shuffle(picked)
with open(os.path.join(WORK, "urls.txt"), "w") as f:
    f.write("".join(u + "\n" for u in picked[:QUERIES]))
print("%d lines in %d batches, %d hosts, %d query URLs" % (n, warc, HOSTS, min(QUERIES, len(picked))),
      file=sys.stderr)
EOF
fi
cdx_bytes=$(cat "$WORK"/batches/*.cdx | grep -v '^ CDX' | wc -c)
nbatches=$(find "$WORK/batches/" -name '*.cdx' | wc -l)

# wrk: exact lookups (`/NAME/cdx?url=`) of URLs picked at random; done()
# prints one RESULT line: requests, duration (us), p50, p99, max (us),
# and the errors (connect, read, write, status >= 400, timeout).
cat > "$WORK/lookup.lua" << 'EOF'
local paths, n, id, pace = {}, 0, 0, 0
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
    paths[n] = "/" .. args[1] .. "/cdx?url=" .. encode(line)
  end
  math.randomseed(tonumber(args[3]) * 1000 + id)
  pace = tonumber(args[4] or "0")
end
function request()
  return wrk.format(nil, paths[math.random(n)])
end
function delay()
  return pace
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
EOF

# ------------------------------------------------------------ the server
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$UKVS" serve ${QUIET[@]+"${QUIET[@]}"} --bind "127.0.0.1:$port" --data "$WORK/data" ${SERVE_ARGS[@]+"${SERVE_ARGS[@]}"} 2> "$WORK/serve.log" &
SERVER_PID=$!
up=0
for _ in $(seq 100); do
    if curl -sf "http://127.0.0.1:$port/health" > /dev/null; then up=1; break; fi
    kill -0 "$SERVER_PID" 2> /dev/null || break
    sleep 0.1
done
if [ "$up" = 0 ]; then
    echo "bench_live.sh: the server did not start; its log ($WORK/serve.log):" >&2
    cat "$WORK/serve.log" >&2
    exit 1
fi
URL="http://127.0.0.1:$port/$COLL"
WRK=(wrk -t"$WRK_THREADS" -c"$CONNS" --latency --timeout 10s -s "$WORK/lookup.lua" "http://127.0.0.1:$port")

# Posts every batch file named on stdin, POSTERS at once; fails on any
# answer but 200 "Added N records".
post_all() {
    xargs -P "$POSTERS" -I{} sh -c '
        out=$(curl -s -w "\n%{http_code}" --data-binary @"$1" "$2") || { echo "POST $1: curl failed" >&2; exit 255; }
        code=$(printf "%s" "$out" | tail -n 1)
        [ "$code" = 200 ] || { echo "POST $1: $code $out" >&2; exit 255; }
    ' _ {} "$URL"
}

# The batch files by name, from an array: `ls | head -n` under pipefail
# fails at random (head closes the pipe before ls has written every name:
# SIGPIPE, exit 141) and set -e then stopped the bench without a word.
batches=("$WORK"/batches/*.cdx)
first=$(( (nbatches + 9) / 10 ))
printf '%s\n' "${batches[@]:0:first}" | post_all
pre_lines=$(( first * BATCH < LINES ? first * BATCH : LINES ))

wrk_result() { grep '^RESULT ' "$1" | tail -n 1; }
# The server's CPU time (user + system, in clock ticks): on a machine
# other work shares, CPU time per lookup and per line says what the
# server spends, where rates say how much of the machine it got.
ticks=$(getconf CLK_TCK)
cpu() { awk '{ print $14 + $15 }' "/proc/$SERVER_PID/stat"; }
# Bytes the server has written to disk (journal, flushes, compactions).
written() { awk '$1 == "write_bytes:" { print $2 }' "/proc/$SERVER_PID/io"; }
c0=$(cpu)
echo "idle lookups ($DURATION s) over $pre_lines lines ..." >&2
"${WRK[@]}" -d"${DURATION}s" -- "$COLL" "$WORK/urls.txt" "$SEED" > "$WORK/idle1.wrk"
c1=$(cpu)

echo "posting $((nbatches - first)) batches with $POSTERS posters while wrk runs ..." >&2
"${WRK[@]}" -d3600s -- "$COLL" "$WORK/urls.txt" "$((SEED + 1))" "$PACE_MS" > "$WORK/busy.wrk" &
WRK_PID=$!
sleep 0.5
c2=$(cpu)
w0=$(written)
t0=$EPOCHREALTIME
log0=$(wc -l < "$WORK/serve.log")
printf '%s\n' "${batches[@]:first}" | post_all
t1=$EPOCHREALTIME
log1=$(wc -l < "$WORK/serve.log")
kill -INT "$WRK_PID"
wait "$WRK_PID" || true
WRK_PID=
c3=$(cpu)
w1=$(written)
ingested=$((LINES - pre_lines))

echo "idle lookups ($DURATION s) over $LINES lines ..." >&2
c4=$(cpu)
"${WRK[@]}" -d"${DURATION}s" -- "$COLL" "$WORK/urls.txt" "$((SEED + 2))" > "$WORK/idle2.wrk"
c5=$(cpu)

stored=$(curl -s "$URL" | sed -n 's/.*live: \([0-9]*\) line.*/\1/p')
# Bytes allocated, not apparent sizes: the store allocates its journal
# file ahead (32 MiB, sparse), which `du -b` counted as written.
delta_bytes=$(du -s --block-size=1 "$WORK/data/$COLL" | cut -f1)
# Then once the store's merges have settled (its size unchanged and the
# server idle over two 2 s polls in a row, at most SETTLE s): what the
# lines take, without the tables a merge in flight has not retired yet.
settled_bytes=$delta_bytes
settled_secs=0
last=-1
calm=0
while [ "$settled_secs" -lt "$SETTLE" ]; do
    cs=$(cpu)
    sleep 2
    settled_secs=$((settled_secs + 2))
    settled_bytes=$(du -s --block-size=1 "$WORK/data/$COLL" | cut -f1)
    if [ "$settled_bytes" = "$last" ] && [ $(($(cpu) - cs)) -le $((ticks / 10)) ]; then
        calm=$((calm + 1))
        [ "$calm" -ge 2 ] && break
    else
        calm=0
    fi
    last=$settled_bytes
done

# The fold: every line into one base (FOLD=cluster: a ZipNum cluster;
# file: a sorted file), timed; then lookups and space again.
if [ "$FOLD" != none ]; then
    echo "folding the delta into a $FOLD ..." >&2
    c6=$(cpu)
    f0=$EPOCHREALTIME
    folded=$(curl -s -X POST "$URL/fold?into=$FOLD")
    f1=$EPOCHREALTIME
    c7=$(cpu)
    case "$folded" in
        "Folded $LINES records"*) ;;
        *) echo "bench_live.sh: the fold answered: $folded" >&2; exit 1 ;;
    esac
    echo "idle lookups ($DURATION s) over the folded $FOLD ..." >&2
    c8=$(cpu)
    "${WRK[@]}" -d"${DURATION}s" -- "$COLL" "$WORK/urls.txt" "$((SEED + 3))" > "$WORK/idle3.wrk"
    c9=$(cpu)
    # The folded generations' files go when the store's journal moves
    # past them: at its next writes, or when the server stops.
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" 2> /dev/null || true
    SERVER_PID=
    folded_bytes=$(du -s --block-size=1 "$WORK/data/$COLL" | cut -f1)
    base_bytes=$(du -s -c --block-size=1 "$WORK/data/$COLL"/base-* | tail -n 1 | cut -f1)
fi

# ------------------------------------------------------------ report
row() {
    read -r _ r d p50 p99 max ec er ew es et < <(wrk_result "$2")
    awk -v name="$1" -v r="$r" -v d="$d" -v p50="$p50" -v p99="$p99" -v max="$max" \
        -v err="$((ec + er + ew + es + et))" -v cpu="$3" -v hz="$ticks" \
        'BEGIN { printf "%-26s %10.0f %9.2f %9.2f %9.1f %7d %9.0f\n", name, r / (d / 1e6), p50 / 1000, p99 / 1000, max / 1000, err, cpu / hz * 1e6 / r }'
}
rate=$(awk -v n="$ingested" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
busy_p99=$(awk '{ printf "%.2f", $5 / 1000 }' < <(wrk_result "$WORK/busy.wrk"))
echo
echo "ukvs $("$UKVS" --version | cut -d' ' -f2), $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -1)), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$LINES CDX11 lines in $nbatches POSTs of $BATCH; $POSTERS posters; wrk -t$WRK_THREADS -c$CONNS; exact lookups of $(wc -l < "$WORK/urls.txt") URLs$([ "$PACE_MS" = 0 ] || echo ", during ingest at most $LOOKUP_RATE/s (each connection waits $PACE_MS ms)"); digest index $([ "$DIGEST_INDEX" = 0 ] && echo off || echo on)"
echo
printf '%-26s %10s %9s %9s %9s %7s %9s\n' "lookups" "req/s" "p50 ms" "p99 ms" "max ms" "errors" "cpu us"
row "idle, first tenth in" "$WORK/idle1.wrk" "$((c1 - c0))"
row "during ingest" "$WORK/busy.wrk" "$((c3 - c2))"
row "idle, all in" "$WORK/idle2.wrk" "$((c5 - c4))"
[ "$FOLD" = none ] || row "idle, folded ($FOLD)" "$WORK/idle3.wrk" "$((c9 - c8))"
echo "(cpu us: the server's CPU time per lookup; during ingest it includes the POSTs')"
busy_reqs=$(wrk_result "$WORK/busy.wrk" | cut -d' ' -f2)
idle_us=$(awk -v a="$((c1 - c0))" -v b="$((c5 - c4))" -v r1="$(wrk_result "$WORK/idle1.wrk" | cut -d' ' -f2)" \
    -v r2="$(wrk_result "$WORK/idle2.wrk" | cut -d' ' -f2)" -v hz="$ticks" \
    'BEGIN { printf "%.1f", (a + b) / hz * 1e6 / (r1 + r2) }')
echo
printf '%-34s %s\n' "ingest (every POST durable)" "$ingested lines in $secs s: $rate lines/s (target >= 200000: $(awk -v r="$rate" 'BEGIN { print (r >= 200000 ? "met" : "MISSED") }'))"
printf '%-34s %s\n' "server CPU per line ingested" "$(awk -v c="$((c3 - c2))" -v hz="$ticks" -v n="$ingested" -v r="$busy_reqs" -v u="$idle_us" \
    'BEGIN { t = c / hz * 1e6; printf "%.2f us (%.1f s of CPU during ingest, less %.0f lookups at the idle runs %.1f us each)", (t - r * u) / n, t / 1e6, r, u }')"
printf '%-34s %s\n' "written to disk during ingest" "$(awk -v w="$((w1 - w0))" -v n="$ingested" -v b="$cdx_bytes" -v l="$LINES" \
    'BEGIN { printf "%.0f bytes a line, %.1f x its CDX text (journal, flushes, compactions)", w / n, w / (b * n / l) }')"
printf '%-34s %s\n' "lookup p99 during ingest" "$busy_p99 ms (target < 10 ms: $(awk -v p="$busy_p99" 'BEGIN { print (p < 10 ? "met" : "MISSED") }'))"
if [ "$SERVER_LOG" = 1 ]; then
    # Log lines: PEER METHOD TARGET STATUS 0.123ms
    sed -n "$((log0 + 1)),${log1}p" "$WORK/serve.log" |
        awk '$2 == "GET" && $5 ~ /ms$/ { sub(/ms$/, "", $5); print $5 }' | sort -g > "$WORK/busy.server"
    printf '%-34s %s\n' "  the same, inside the server" "$(awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "no lookups logged"; exit }
        printf "p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.1f ms (%d lookups)", v[int(NR * 0.5) + 1], v[int(NR * 0.99) + 1], v[int(NR * 0.999) + 1], v[NR], NR }' "$WORK/busy.server")"
fi
printf '%-34s %s\n' "lines in the delta" "$stored (of $LINES posted)"
printf '%-34s %s\n' "CDX text" "$cdx_bytes bytes, $(awk -v b="$cdx_bytes" -v n="$LINES" 'BEGIN { printf "%.1f", b / n }') bytes/line"
printf '%-34s %s\n' "delta on disk" "$delta_bytes bytes, $(awk -v b="$delta_bytes" -v n="$LINES" 'BEGIN { printf "%.1f", b / n }') bytes/line, $(awk -v a="$delta_bytes" -v b="$cdx_bytes" 'BEGIN { printf "%.2f", a / b }') x the CDX text (OutbackCDX: 0.20-0.25)"
if [ "$SETTLE" -gt 0 ]; then
    printf '%-34s %s\n' "delta on disk, $settled_secs s later" "$settled_bytes bytes, $(awk -v b="$settled_bytes" -v n="$LINES" 'BEGIN { printf "%.1f", b / n }') bytes/line, $(awk -v a="$settled_bytes" -v b="$cdx_bytes" 'BEGIN { printf "%.2f", a / b }') x the CDX text$([ "$calm" -ge 2 ] && echo ", merges settled" || echo ", merges still running")"
fi
if [ "$FOLD" != none ]; then
    printf '%-34s %s\n' "fold into a $FOLD" "$(awk -v a="$f0" -v b="$f1" -v c="$((c7 - c6))" -v hz="$ticks" -v n="$LINES" \
        'BEGIN { printf "%.1f s (%.1f s of CPU, %.2f us a line)", b - a, c / hz, c / hz * 1e6 / n }')"
    printf '%-34s %s\n' "folded, on disk (server stopped)" "$folded_bytes bytes, $(awk -v b="$folded_bytes" -v n="$LINES" 'BEGIN { printf "%.1f", b / n }') bytes/line, $(awk -v a="$folded_bytes" -v b="$cdx_bytes" 'BEGIN { printf "%.2f", a / b }') x the CDX text: the base $(awk -v a="$base_bytes" -v b="$cdx_bytes" 'BEGIN { printf "%.2f", a / b }')x, the store (digest index, journal) $(awk -v a="$((folded_bytes - base_bytes))" -v b="$cdx_bytes" 'BEGIN { printf "%.2f", a / b }')x"
fi
[ "$stored" = "$LINES" ] || { echo "bench_live.sh: the delta holds $stored lines, not $LINES" >&2; exit 1; }
