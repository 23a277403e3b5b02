#!/usr/bin/env bash
# Holdings statistics: `ukvs stats` against the Internet Archive's
# `cdxsummary` (pip install cdxsummary==0.1.1b5) on the same sorted
# 11-field CDX, side by side in one run, and what the statistics and the
# MementoMap cost when `ukvs index` writes them from the same scan.
#
#   scripts/bench_stats.sh [LINES] [WORKDIR]
#   scripts/bench_stats.sh 100000 /tmp/bs   # quick check
#
# On 2 cores: 2 minutes for 100000 lines, 1 of them to generate the 1.2 GB
# corpus; about 5 minutes for 1000000, 1.5 of them in cdxsummary's runs.
#
# 1. `ukvs stats --json --top 0 IN.cdx` vs `cdxsummary -r IN.cdx` on a
#    LINES-line (default 1000000) sorted CDX with its legend line. Target:
#    ukvs >= 50x faster. The figures both report must be equal (captures,
#    urls, hosts, bytes, first, last, mimestatus, pathquery, cdxsummary's
#    yearmonth = our months, tophosts as host -> count maps without the
#    hosts with a port, which cdxsummary writes as `wiki:8000.povi.com`);
#    the script fails (exit 1) before any timing when they are not.
# 2. `ukvs stats --json --top 0` on the CDXJ of the same captures (same
#    lines), which must report what the CDX gives but for the MIME types and
#    status codes (the cdx11 and cdxj profiles write those differently:
#    `unk` vs none for a missing type, 226 for FTP, the revisits' status):
#    its time and its ratio to the CDX's ("about as fast").
# 3. `ukvs index -q -o X.ukvs ARCHIVES` vs the one pass `ukvs index -q -o
#    X.ukvs --mementomap X.map --stats X.json ARCHIVES`. Target: one pass
#    <= 1.15x the index alone. Both must write the same index, and X.json
#    must be what `ukvs stats --json X.ukvs` reports.
#
# Inputs (all cached in WORKDIR, so a rerun only times): a corpus of RECORDS
# captures (env, default 100000; half ARC, half WARC, 8 files each, about
# 12 KB of .gz per capture) made by shared/tools/gen_arc_corpus.py, indexed
# with `ukvs index --format cdx11` and `--format cdxj`. The captures both
# hold (every cdx11 line; the CDXJ's dns: and screenshot: lines are left
# out, as cdxsummary skips keys without `)`) are widened to LINES lines by
# copying each under K host variants (`com,foo)/p` -> `com,foo,w3)/p`,
# `http://www.foo.com/p` -> `http://www.w3.foo.com/p`; the last copy takes
# an even spread of the lines) and sorted in byte order.
#
# Timing: hyperfine, --warmup 1, RUNS (default 10) runs of ukvs, REF_RUNS
# (default 3) of cdxsummary (about 8 s per million lines), INDEX_RUNS
# (default 5) of each index job; means and minimums from its JSON export
# (WORKDIR/results). Every job is timed in two page-cache states: "cached",
# the inputs in the page cache (the CDX and CDXJ as just written: fresh
# copies made before the runs, as after the index was built; the archives
# as read by the warm-up run), then "evicted", every input dropped from the
# page cache before each run (posix_fadvise DONTNEED, as `dd iflag=nocache`
# in bench_mementomap.sh), so each run reads it from the disk. ukvs uses
# every core (-j 0); cdxsummary one. Output files are removed before each
# run. The machine may be shared: compare the tools within one run.
#
# Needs python3 (3.11, for the generator), cdxsummary, hyperfine
# (`apt-get install -y hyperfine`) and lscpu.
set -euo pipefail
export LC_ALL=C

LINES=${1:-1000000}
WORK=${2:-$(mktemp -d)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
UKVS=$CARGO_TARGET_DIR/release/ukvs
GEN=$ROOT/../shared/tools/gen_arc_corpus.py
RECORDS=${RECORDS:-100000}
RUNS=${RUNS:-10}
REF_RUNS=${REF_RUNS:-3}
INDEX_RUNS=${INDEX_RUNS:-5}
FILES=8 # per format
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)

# ---------------------------------------------------------------- tools
missing=()
command -v python3 > /dev/null || missing+=("python3")
command -v cdxsummary > /dev/null || missing+=("cdxsummary (pip install cdxsummary==0.1.1b5)")
command -v hyperfine > /dev/null || missing+=("hyperfine (apt-get install -y hyperfine)")
command -v lscpu > /dev/null || missing+=("lscpu (apt-get install -y util-linux)")
[ -f "$GEN" ] || missing+=("the corpus generator at $GEN (shared/tools beside the repository)")
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench_stats.sh: missing:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi
if [ "$RECORDS" -lt $((2 * FILES)) ] || [ "$LINES" -lt 1 ]; then
    echo "bench_stats.sh: LINES must be >= 1 and RECORDS >= $((2 * FILES))" >&2
    exit 1
fi
REF_VERSION=$(cdxsummary -v 2>&1 | awk '{ print $NF }')
[ "$REF_VERSION" = 0.1.1b5 ] || echo "note: cdxsummary $REF_VERSION, not the 0.1.1b5 this script was checked with" >&2

cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" || {
    echo "cargo build --release failed (a source file may be mid-edit: retry)" >&2
    exit 1
}
# A copy of the binary, so that a rebuild of target/ during the run cannot
# change what is measured half way.
RUN=$WORK/run
RES=$WORK/results
mkdir -p "$RUN" "$RES"
rm -f "$RUN/ukvs" "$RES"/*.json
cp "$UKVS" "$RUN/ukvs"
UKVS=$RUN/ukvs

CPU_MODEL=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "machine: $CPU_MODEL, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); ukvs $("$UKVS" --version | awk '{ print $NF }'), cdxsummary $REF_VERSION, $(hyperfine --version)"

# ---------------------------------------------------------------- inputs
# The archives: RECORDS captures, half ARC (seed 1), half WARC (seed 2: a
# different crawl), written to a temporary name and renamed when whole.
CORPUS=$WORK/corpus-$RECORDS
if [ ! -d "$CORPUS" ]; then
    per=$((RECORDS / 2 / FILES))
    echo "generating $((2 * FILES * per)) captures in $FILES ARC and $FILES WARC files ..." >&2
    rm -rf "$CORPUS.tmp"
    python3 "$GEN" --out "$CORPUS.tmp/arc" --files "$FILES" --records-per-file "$per" --seed 1 --jobs "$(nproc)" >&2
    python3 "$GEN" --warc --out "$CORPUS.tmp/warc" --files "$FILES" --records-per-file "$per" --seed 2 --jobs "$(nproc)" >&2
    sync "$CORPUS.tmp"/*/*.gz
    mv "$CORPUS.tmp" "$CORPUS"
fi
ARCHIVES=("$CORPUS"/arc/*.gz "$CORPUS"/warc/*.gz)

BASE=$WORK/base-$RECORDS
[ -s "$BASE.cdx" ] || { "$UKVS" index -q --format cdx11 -o "$BASE.cdx.tmp" "$CORPUS/arc" "$CORPUS/warc" && mv "$BASE.cdx.tmp" "$BASE.cdx"; }
[ -s "$BASE.cdxj" ] || { "$UKVS" index -q --format cdxj -o "$BASE.cdxj.tmp" "$CORPUS/arc" "$CORPUS/warc" && mv "$BASE.cdxj.tmp" "$BASE.cdxj"; }

# Widen to LINES lines: the captures both indexes hold (the same record:
# file name and offset), each copied under K host variants; variant 0 is
# the capture itself. Unsorted here, sorted below.
IN=$WORK/in-$RECORDS-$LINES
if [ ! -s "$IN.cdx" ] || [ ! -s "$IN.cdxj" ]; then
    echo "widening to $LINES lines ..." >&2
    python3 - "$LINES" "$BASE.cdx" "$BASE.cdxj" "$IN.cdx.body" "$IN.cdxj.body" << 'EOF'
import json, re, sys

lines, base_cdx, base_cdxj, out_cdx, out_cdxj = int(sys.argv[1]), *sys.argv[2:6]
LEGEND = " CDX N b a m s k r M S V g\n"
TEXT = dict(encoding="utf-8", errors="surrogateescape", newline="")

with open(base_cdx, **TEXT) as f:
    first = f.readline()
    if first != LEGEND:
        sys.exit(f"{base_cdx}: the first line is {first!r}, not the CDX legend")
    cdx = {}
    for line in f:
        fields = line.split(" ")
        if ")" in fields[0]:
            cdx[(fields[10].rstrip("\n"), fields[9])] = line
cdxj = {}
with open(base_cdxj, **TEXT) as f:
    for line in f:
        d = json.loads(line.split(" ", 2)[2])
        pair = (d.get("filename"), d.get("offset"))
        if pair in cdx:
            cdxj[pair] = line
pairs = [p for p in cdx if p in cdxj]
base = len(pairs)
if base == 0:
    sys.exit("no capture is in both the CDX and the CDXJ")

WWW = re.compile(r"(?i)www\d*\.")
JSON_URL = re.compile(r'\{"url": "((?:[^"\\]|\\.)*)"')

def url_variant(url, v):
    # http://user@www.foo.com:81/p -> http://user@www.wV.foo.com:81/p
    s = url.find("://")
    if s < 0:
        return url
    s += 3
    end = min([i for i in (url.find(c, s) for c in "/?#") if i >= 0] or [len(url)])
    at = url.rfind("@", s, end)
    if at >= 0:
        s = at + 1
    m = WWW.match(url, s)
    if m:
        s = m.end()
    return f"{url[:s]}w{v}.{url[s:]}"

def key_variant(key, v):
    # com,foo:8080)/p -> com,foo,wV:8080)/p
    p = key.index(")")
    host = key[:p]
    c = host.find(":")
    host = f"{host},w{v}" if c < 0 else f"{host[:c]},w{v}{host[c:]}"
    return host + key[p:]

def cdx_variant(line, v):
    f = line.split(" ")
    f[0], f[2] = key_variant(f[0], v), url_variant(f[2], v)
    return " ".join(f)

def cdxj_variant(line, v):
    key, ts, js = line.split(" ", 2)
    m = JSON_URL.match(js)
    if not m:
        sys.exit(f"no url first in {line!r}")
    js = '{"url": "' + url_variant(m.group(1), v) + '"' + js[m.end():]
    return f"{key_variant(key, v)} {ts} {js}"

k = -(-lines // base)
rest = lines - (k - 1) * base
with open(out_cdx, "w", **TEXT) as oc, open(out_cdxj, "w", **TEXT) as oj:
    for v in range(k):
        for i, p in enumerate(pairs):
            # the last variant: `rest` lines spread evenly over the base
            if v == k - 1 and (i * rest) // base == ((i + 1) * rest) // base:
                continue
            if v == 0:
                oc.write(cdx[p]); oj.write(cdxj[p])
            else:
                oc.write(cdx_variant(cdx[p], v)); oj.write(cdxj_variant(cdxj[p], v))
print(f"{base} captures in both indexes, {k} host variants", file=sys.stderr)
EOF
    { printf ' CDX N b a m s k r M S V g\n'; sort -S 25% -T "$WORK" "$IN.cdx.body"; } > "$IN.cdx.tmp"
    sort -S 25% -T "$WORK" "$IN.cdxj.body" > "$IN.cdxj.tmp"
    rm -f "$IN.cdx.body" "$IN.cdxj.body"
    mv "$IN.cdx.tmp" "$IN.cdx"
    mv "$IN.cdxj.tmp" "$IN.cdxj"
fi
n_cdx=$(($(wc -l < "$IN.cdx") - 1))
n_cdxj=$(wc -l < "$IN.cdxj")
if [ "$n_cdx" != "$LINES" ] || [ "$n_cdxj" != "$LINES" ]; then
    echo "bench_stats.sh: $IN.cdx has $n_cdx captures and $IN.cdxj $n_cdxj, not $LINES" >&2
    exit 1
fi
echo "corpus: ${#ARCHIVES[@]} files, $(du -sm "$CORPUS" | cut -f1) MB, $(($(wc -l < "$BASE.cdx") - 1)) cdx11 lines;" \
    "CDX: $LINES lines + legend, $(du -m "$IN.cdx" | cut -f1) MB; CDXJ: $LINES lines, $(du -m "$IN.cdxj" | cut -f1) MB"

# ---------------------------------------------------------------- checks
# Untimed, once: the figures both tools report must be equal.
echo "checking the figures ..." >&2
"$UKVS" stats --json --top 0 -q "$IN.cdx" > "$RES/ukvs.cdx.report"
"$UKVS" stats --json --top 0 -q "$IN.cdxj" > "$RES/ukvs.cdxj.report"
cdxsummary -r "$IN.cdx" > "$RES/cdxsummary.report" 2> "$RES/cdxsummary.err" || {
    cat "$RES/cdxsummary.err" >&2
    exit 1
}
python3 - "$RES/ukvs.cdx.report" "$RES/cdxsummary.report" "$RES/ukvs.cdxj.report" << 'EOF'
import json, sys

ours, ref, ours_j = (json.load(open(p)) for p in sys.argv[1:4])
bad = []

def check(name, a, b, show):
    same = a == b
    print(f"  {name:<11} {'equal' if same else 'DIFFERENT'}: {show(a)}" + ("" if same else f" vs {show(b)}"))
    if not same:
        bad.append(name)

def nested(d):
    return {k: {k2: n for k2, n in v.items() if n} for k, v in d.items() if any(v.values())}

def size(d):
    return f"{len(d)} keys, {sum(d.values())} captures"

print("ukvs stats (CDX) vs cdxsummary -r:")
for f in ["captures", "urls", "hosts", "bytes", "first", "last"]:
    check(f, ours[f], ref[f], str)
check("mimestatus", nested(ours["mimestatus"]), nested(ref["mimestatus"]),
      lambda d: f"{len(d)} types, {sum(map(len, d.values()))} pairs")
check("pathquery", nested(ours["pathquery"]), nested(ref["pathquery"]),
      lambda d: f"{sum(map(len, d.values()))} cells")
ym = {y + m: n for y, ms in ref["yearmonth"].items() for m, n in ms.items() if n}
check("months", {k: n for k, n in ours["months"].items() if n}, ym, size)
th = lambda d: {h: n for h, n in d.items() if ":" not in h}
check("tophosts", th(ours["tophosts"]), th(ref["tophosts"]),
      lambda d: f"{len(d)} hosts without a port, {sum(d.values())} captures")
print(f"  ({sum(':' in h for h in ours['tophosts'])} hosts with a port left out: "
      f"ukvs writes e.g. {next((h for h in ours['tophosts'] if ':' in h), '-')}, "
      f"cdxsummary {next((h for h in ref['tophosts'] if ':' in h), '-')})")

print("ukvs stats, CDXJ vs CDX:")
profile = {"mime", "status", "mimestatus"}
for f in ours:
    if f in profile or f in ("format",):
        continue
    check(f, ours_j.get(f), ours[f], lambda x: (f"{len(x)} keys" if isinstance(x, dict) else str(x)))
moved = sum(abs(ours_j["mime"].get(m, 0) - ours["mime"].get(m, 0)) for m in set(ours["mime"]) | set(ours_j["mime"])) // 2
moved_s = sum(abs(ours_j["status"].get(s, 0) - ours["status"].get(s, 0)) for s in set(ours["status"]) | set(ours_j["status"])) // 2
print(f"  (not compared, written differently by the profiles: mime, {moved} captures in another type;"
      f" status, {moved_s} with another code)")
if bad:
    sys.exit(f"bench_stats.sh: the reports differ: {', '.join(bad)} (see {sys.argv[1]}, {sys.argv[2]}, {sys.argv[3]})")
EOF

# ---------------------------------------------------------------- runs
# Fresh copies of the indexes, written back to the disk (so that no
# writeback runs during the timing) and still in the page cache: as just
# written, as after the index was built.
cp "$IN.cdx" "$RUN/in.cdx"
cp "$IN.cdxj" "$RUN/in.cdxj"
sync "$RUN/in.cdx" "$RUN/in.cdxj"
q() { printf '%q ' "$@"; }
EVICT="python3 -c 'import os, sys; [os.posix_fadvise(os.open(f, os.O_RDONLY), 0, 0, os.POSIX_FADV_DONTNEED) for f in sys.argv[1:]]'"
CMD_UKVS_CDX=$(q "$UKVS" stats --json --top 0 -q "$RUN/in.cdx")
CMD_UKVS_CDXJ=$(q "$UKVS" stats --json --top 0 -q "$RUN/in.cdxj")
CMD_REF=$(q cdxsummary -r "$RUN/in.cdx")
CMD_INDEX=$(q "$UKVS" index -q -o "$RUN/idx.ukvs" "$CORPUS/arc" "$CORPUS/warc")
CMD_ONE=$(q "$UKVS" index -q -o "$RUN/one.ukvs" --mementomap "$RUN/one.map" --stats "$RUN/one.json" "$CORPUS/arc" "$CORPUS/warc")

# bench STATE NAME RUNS PREPARE CMD: one hyperfine job, exported to
# RES/STATE.NAME.json.
bench() {
    local state=$1 name=$2 runs=$3 prepare=$4 cmd=$5
    local args=(--style basic --shell bash --warmup 1 --runs "$runs" --export-json "$RES/$state.$name.json" -n "$state: $name")
    [ -z "$prepare" ] || args+=(--prepare "$prepare")
    hyperfine "${args[@]}" "$cmd"
}
# One state after the other, every "cached" job first: a run on evicted
# files leaves them cached as read, no longer as written.
for state in cached evicted; do
    echo
    echo "== $state: $([ $state = cached ] && echo "inputs in the page cache (CDX and CDXJ as just written)" || echo "inputs evicted from the page cache before each run")"
    p_cdx='' p_cdxj='' p_arc=''
    if [ $state = evicted ]; then
        p_cdx="$EVICT $(q "$RUN/in.cdx")"
        p_cdxj="$EVICT $(q "$RUN/in.cdxj")"
        p_arc="; $EVICT $(q "${ARCHIVES[@]}")"
    fi
    bench $state ukvs-cdx "$RUNS" "$p_cdx" "$CMD_UKVS_CDX"
    bench $state ukvs-cdxj "$RUNS" "$p_cdxj" "$CMD_UKVS_CDXJ"
    bench $state cdxsummary "$REF_RUNS" "$p_cdx" "$CMD_REF"
    bench $state index "$INDEX_RUNS" "rm -f $(q "$RUN/idx.ukvs")$p_arc" "$CMD_INDEX"
    bench $state onepass "$INDEX_RUNS" "rm -f $(q "$RUN/one.ukvs" "$RUN/one.map" "$RUN/one.json")$p_arc" "$CMD_ONE"
done

# The one pass writes the index the index alone writes, and the statistics
# `ukvs stats` reports of it.
cmp -s "$RUN/idx.ukvs" "$RUN/one.ukvs" || {
    echo "bench_stats.sh: the one pass wrote another index than index alone ($RUN/idx.ukvs, $RUN/one.ukvs)" >&2
    exit 1
}
"$UKVS" stats --json -q "$RUN/idx.ukvs" > "$RES/idx.report"
python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' "$RES/idx.report" "$RUN/one.json" || {
    echo "bench_stats.sh: index --stats wrote other statistics than ukvs stats of the index ($RUN/one.json, $RES/idx.report)" >&2
    exit 1
}

# ---------------------------------------------------------------- report
echo
python3 - "$RES" "$LINES" "$CPU_MODEL" "$(nproc)" "$(du -sm "$CORPUS" | cut -f1)" "${#ARCHIVES[@]}" << 'EOF'
import json, sys

res, lines, cpu, ncpu, corpus_mb, nfiles = sys.argv[1:7]
lines = int(lines)
R = {}
for state in ("cached", "evicted"):
    for job in ("ukvs-cdx", "ukvs-cdxj", "cdxsummary", "index", "onepass"):
        R[state, job] = json.load(open(f"{res}/{state}.{job}.json"))["results"][0]

LABEL = {
    "ukvs-cdx": f"ukvs stats CDX ({lines} lines)",
    "ukvs-cdxj": f"ukvs stats CDXJ ({lines} lines)",
    "cdxsummary": f"cdxsummary -r CDX ({lines} lines)",
    "index": f"ukvs index ({nfiles} files, {corpus_mb} MB)",
    "onepass": "ukvs index --mementomap --stats",
}
print(f"Summary: {cpu}, {ncpu} CPUs; wall seconds (hyperfine, --warmup 1), user and system CPU seconds per run")
print(f"{'state':<8} {'job':<38} {'runs':>4} {'mean':>9} {'+-':>8} {'min':>9} {'user':>8} {'sys':>7}")
for (state, job), r in R.items():
    print(f"{state:<8} {LABEL[job]:<38} {len(r['times']):>4} {r['mean']:>9.4f} {r['stddev'] or 0:>8.4f} "
          f"{r['min']:>9.4f} {r['user']:>8.3f} {r['system']:>7.3f}")
print()

def ratio(state, a, b, key):
    return R[state, a][key] / R[state, b][key]

def line(title, a, b, target=None, better=None):
    parts = []
    for state in ("cached", "evicted"):
        m, n = ratio(state, a, b, "mean"), ratio(state, a, b, "min")
        verdict = ""
        if target is not None:
            verdict = " " + ("met" if (m >= target if better == ">=" else m <= target) else "MISSED")
        parts.append(f"{state} {m:.2f}x (min {n:.2f}x){verdict}")
    print(f"{title}: " + "; ".join(parts))

line("1. cdxsummary / ukvs stats, CDX (target >= 50x)", "cdxsummary", "ukvs-cdx", 50, ">=")
line("2. ukvs stats CDXJ / CDX (about as fast)", "ukvs-cdxj", "ukvs-cdx")
line("3. index one pass / index alone (target <= 1.15x)", "onepass", "index", 1.15, "<=")
print("ratios of the means (of the minimums in brackets); cached: inputs in the page cache,"
      " evicted: read from the disk in each run")
EOF
