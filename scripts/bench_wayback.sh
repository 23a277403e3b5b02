#!/usr/bin/env bash
# The Wayback CDX API of `ukvs serve` (`/NAME/cdx/search/cdx`) against the
# same work done client-side over the pywb API (`/NAME/cdx`), on one
# generated index and its ZipNum cluster, loopback, one run.
#
#   scripts/bench_wayback.sh                        # 10,000,000 index lines
#   LINES=300000 scripts/bench_wayback.sh           # quick
#
# The index: CDX11 lines of HOSTS hosts, each with URLS_PER_HOST URLs of
# 1-6 captures (a sorted file written in order), and its ZipNum cluster
# (3,000-line blocks). Measured, on the file and on the cluster:
#   collapse  `url=HOST/*&collapse=urlkey`: one line per URL of a host,
#             against the host's lines fetched from the pywb API
#             (`matchType=prefix&output=text`, page by page on the
#             cluster) and collapsed by the client (the first line of
#             each urlkey);
#   paging    every line of a host through resume keys
#             (`limit=PAGE&showResumeKey=true`), checked equal to the
#             whole answer, against the host fetched from the pywb API in
#             one answer (it has no resume key to page a file by; a
#             cluster it answers a page of blocks at a time);
#   last N    `limit=-10` of a host, read from the end of its range,
#             against the tail of the host's whole answer (checked equal).
# Reported: lines answered per second (and lines read per second for
# the collapse), the server's peak resident memory. Each answer is
# checked against the other before timing is trusted.
#
# Env: LINES (default 10000000), HOSTS (default 20), PAGE (lines a page,
# default 10000), UKVS (default target/release/ukvs, built if missing),
# KEEP (1: keep the work dir under ${TMPDIR:-/tmp}). Needs python3 with
# requests, curl.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LINES=${LINES:-10000000}
HOSTS=${HOSTS:-20}
PAGE=${PAGE:-10000}
KEEP=${KEEP:-0}
UKVS=${UKVS:-${CARGO_TARGET_DIR:-$ROOT/target}/release/ukvs}

command -v python3 > /dev/null || { echo "needs python3" >&2; exit 2; }
python3 -c 'import requests' 2> /dev/null || { echo "needs python3 requests" >&2; exit 2; }
if [ ! -x "$UKVS" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ukvs-bench-wayback.XXXXXX")
SERVER=
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2> /dev/null || true
  [ "$KEEP" = 1 ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

echo "== generating $LINES lines over $HOSTS hosts"
python3 - "$WORK/all.cdx" "$LINES" "$HOSTS" << 'EOF'
import base64, random, sys
path, lines, hosts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1)
per_host = lines // hosts
with open(path, 'w') as out:
    out.write(' CDX N b a m s k r M S V g\n')
    for h in range(hosts):
        host = f'host{h:03d}.example'
        surt = f'example,host{h:03d})'
        written = 0
        u = 0
        while written < per_host:
            path_ = f'/p{u:08d}/page.html'
            n = min(rng.randint(1, 6), per_host - written)
            ts = sorted(f'20{rng.randint(10, 23)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{rng.randint(0, 235959):06d}' for _ in range(n))
            for t in ts:
                dig = base64.b32encode(rng.getrandbits(160).to_bytes(20, 'big')).decode()
                out.write(f'{surt}{path_} {t} http://{host}{path_} text/html 200 {dig} - - {rng.randint(500, 90000)} {rng.randint(0, 1 << 30)} crawl-{h}.warc.gz\n')
            written += n
            u += 1
EOF
"$UKVS" zipnum build "$WORK/all.cdx" -o "$WORK/cluster" --lines-per-block 3000 -q 2> /dev/null \
  || "$UKVS" zipnum build "$WORK/all.cdx" -o "$WORK/cluster" --lines-per-block 3000
ls -la "$WORK/all.cdx" | awk '{printf "index: %.0f MB\n", $5 / 1e6}'

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$UKVS" serve --quiet --bind "127.0.0.1:$PORT" "f=$WORK/all.cdx" "c=$WORK/cluster" 2> "$WORK/serve.log" &
SERVER=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break; sleep 0.1; done

python3 - "http://127.0.0.1:$PORT" "$PAGE" "$SERVER" << 'EOF'
import sys, time, requests
base, page, pid = sys.argv[1], int(sys.argv[2]), sys.argv[3]
host = 'host007.example'
s = requests.Session()
s.headers['Accept-Encoding'] = 'identity'

def timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t

def text_lines(r):
    r.raise_for_status()
    return r.text.splitlines()

def wayback_collapse(coll):
    r = s.get(f'{base}/{coll}/cdx/search/cdx', params={'url': host + '/*', 'collapse': 'urlkey'})
    return text_lines(r)

def pywb_lines(coll, params):
    # pywb's API answers a cluster a page of blocks at a time.
    params = dict(params, output='text', limit=100000000)
    if coll == 'f':
        return text_lines(s.get(f'{base}/{coll}/cdx', params=params))
    n = s.get(f'{base}/{coll}/cdx', params=dict(params, showNumPages='true')).json()['pages']
    lines = []
    for i in range(n):
        lines.extend(text_lines(s.get(f'{base}/{coll}/cdx', params=dict(params, page=i))))
    return lines

def pywb_collapse(coll):
    lines = pywb_lines(coll, {'url': host + '/*'})
    out, last = [], None
    for l in lines:
        k = l.split(' ', 1)[0]
        if k != last:
            f = l.split(' ')
            out.append(' '.join(f[i] for i in (0, 1, 2, 3, 4, 5, 8)))
            last = k
    return out, len(lines)

def wayback_pages(coll):
    out, key = [], None
    while True:
        p = {'url': host, 'matchType': 'host', 'limit': page, 'showResumeKey': 'true'}
        if key:
            p['resumeKey'] = key
        r = s.get(f'{base}/{coll}/cdx/search/cdx', params=p)
        body = r.text
        if '\n\n' in body:
            lines, key = body.split('\n\n', 1)
            key = key.strip()
            out.extend(lines.splitlines())
        else:
            out.extend(body.splitlines())
            return out

def rss():
    with open(f'/proc/{pid}/status') as f:
        for l in f:
            if l.startswith('VmHWM'):
                return l.split()[1] + ' kB'

for coll, kind in (('f', 'file'), ('c', 'cluster')):
    w, tw = timed(lambda: wayback_collapse(coll))
    (p, read), tp = timed(lambda: pywb_collapse(coll))
    assert w == p, 'collapse answers differ'
    print(f'{kind:8} collapse=urlkey {host}/*: wayback API {len(w)} lines in {tw:.2f} s '
          f'({len(w)/tw:,.0f} lines/s, {read/tw:,.0f} lines read/s); '
          f'pywb API + client {len(p)} lines in {tp:.2f} s ({len(p)/tp:,.0f} lines/s)')
    w, tw = timed(lambda: wayback_pages(coll))
    whole = text_lines(s.get(f'{base}/{coll}/cdx/search/cdx', params={'url': host, 'matchType': 'host'}))
    assert w == whole, 'resume-key pages differ from the whole answer'
    t = time.perf_counter()
    one = pywb_lines(coll, {'url': host, 'matchType': 'host'})
    tone = time.perf_counter() - t
    print(f'{kind:8} host {host} by resume keys ({page} a page): {len(w)} lines in {tw:.2f} s '
          f'({len(w)/tw:,.0f} lines/s); pywb API, one answer (a cluster: page by page): {len(one)} lines in {tone:.2f} s '
          f'({len(one)/tone:,.0f} lines/s)')
    # The last lines of the host: read from the end of its range, against
    # the tail of the whole answer read front to back.
    w, tw = timed(lambda: text_lines(s.get(f'{base}/{coll}/cdx/search/cdx',
                                           params={'url': host, 'matchType': 'host', 'limit': -10})))
    t = time.perf_counter()
    tail = text_lines(s.get(f'{base}/{coll}/cdx/search/cdx', params={'url': host, 'matchType': 'host'}))[-10:]
    ttail = time.perf_counter() - t
    assert w == tail, 'limit=-10 differs from the tail of the whole answer'
    print(f'{kind:8} host {host} limit=-10 (read from the end): {tw*1000:.1f} ms; '
          f'the whole answer\'s tail: {ttail*1000:.1f} ms')
print('server peak resident memory:', rss())
EOF
