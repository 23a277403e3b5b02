#!/usr/bin/env bash
# Capture tables: what `ukvs index --table` costs over the index alone,
# how fast `ukvs table` converts a CDXJ against DuckDB converting the same
# CDXJ with its own readers, the table's size against the gzip'd CDXJ, and
# a SURT-prefix query in DuckDB over the table against `ukvs lookup`.
#
#   scripts/bench_table.sh [RECORDS] [WORKDIR]
#   scripts/bench_table.sh 20000 /tmp/bt     # quick check
#
# 1. `ukvs index -q --format cdxj -o X.cdxj ARCHIVES` vs the same with
#    `--table X.parquet`, on a corpus of RECORDS captures (default 100000;
#    half ARC, half WARC, 4 files each) made by
#    shared/tools/gen_arc_corpus.py. Target: with the table <= 1.3x the
#    index alone. Rows per second of each.
# 2. `ukvs table X.cdxj -o T.parquet` vs DuckDB's `COPY (SELECT ... FROM
#    read_json(...)) TO 'T.parquet' (FORMAT parquet, COMPRESSION zstd)` on
#    the CDXJ widened to LINES lines (default 1000000; the issue's figure is
#    10000000: set LINES=10000000, about 3 GB) by copying each line under K
#    host variants (`com,foo)/p` -> `com,foo,wK)/p`). DuckDB gets the JSON
#    block of each line (its url, mime, status, digest, length, offset,
#    filename) plus key and datetime, and writes them as the columns it
#    reads: far fewer than ukvs computes (no host parts, domains, URL
#    parts). Target: ukvs >= 3x faster.
# 3. Sizes: the table (single file), its Hive directory, the CDXJ, and the
#    CDXJ gzip'd (gzip -6).
# 4. A SURT-prefix query (every capture of the most frequent host): DuckDB
#    `SELECT count(*) ... WHERE url_surtkey >= 'P' AND url_surtkey < 'P~'`
#    over the table vs `ukvs lookup X.cdxj --key P --match prefix | wc -l`;
#    the counts must agree.
#
# One run (RECORDS=40000, LINES=10000000, RUNS=1) on 2 cores shared with
# other builds (load average 13 to 32, mean 23): ukvs table 96.9 s (CPU
# 21.9 s) against DuckDB 95.9 s (CPU 27.6 s): 0.99x in time, 1.26x in
# CPU; the 3x target over DuckDB is not met. The table is 57.7 MB
# against 329 MB of gzip'd CDXJ (0.18x; DuckDB's 9-column file 30.5
# MB); a prefix query of 891 rows takes 704 ms in DuckDB (process start
# included) against 14.7 ms for `ukvs lookup` on the CDXJ. index 7.14 s
# and with --table 5.87 s (CPU 1.41 -> 1.57 s, 1.11x).
# 1M lines (perf): CPU 3.0 s before members went straight to their
# slots, plain columns replaced dictionaries that did not pay and zstd
# went to level 1; 2.3 s after, tables equal row for row. Where it goes
# now: mapping lines to column batches 53 % (reading the line 29 %, the
# builders' copies 18 %), encoding columns 37 % (zstd 11 %, dictionaries
# 10 %, page statistics 5 %), reading the CDXJ 7 % (its own thread).
#
# Timing: hyperfine --warmup 1, RUNS (default 5) runs each; results in
# WORKDIR/results (JSON). The machine may be shared: compare within a run.
# Needs python3 with duckdb, hyperfine, gzip.
set -euo pipefail
export LC_ALL=C

RECORDS=${1:-100000}
WORK=${2:-$(mktemp -d)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
UKVS=$CARGO_TARGET_DIR/release/ukvs
GEN=$ROOT/../shared/tools/gen_arc_corpus.py
LINES=${LINES:-1000000}
RUNS=${RUNS:-5}
mkdir -p "$WORK/results"
WORK=$(cd "$WORK" && pwd)

missing=()
command -v hyperfine > /dev/null || missing+=("hyperfine (apt-get install -y hyperfine)")
python3 -c 'import duckdb' 2> /dev/null || missing+=("duckdb (pip install duckdb)")
[ -f "$GEN" ] || missing+=("the corpus generator at $GEN")
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench_table.sh: missing:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 2
fi
[ -x "$UKVS" ] || (cd "$ROOT" && cargo build --release --quiet)

# ---------------------------------------------------------------- corpus
half=$((RECORDS / 2))
per_file=$((half / 4))
if [ ! -d "$WORK/arc" ]; then
    python3 "$GEN" --out "$WORK/arc" --files 4 --records-per-file "$per_file" > /dev/null
    python3 "$GEN" --out "$WORK/warc" --warc --files 4 --records-per-file "$per_file" \
        --seed 2 > /dev/null
fi
ARCHIVES=("$WORK/arc" "$WORK/warc")

mean() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['results'][${2:-0}]['mean'])" "$1"; }

# ---------------------------------------------------------------- 1. index
echo "== 1. ukvs index, without and with --table ($RECORDS records)"
hyperfine --warmup 1 --runs "$RUNS" --export-json "$WORK/results/index.json" \
    -n index "$UKVS index -q --format cdxj -o $WORK/idx.cdxj ${ARCHIVES[*]}" \
    -n index+table "$UKVS index -q --format cdxj -o $WORK/idx2.cdxj --table $WORK/idx2.parquet ${ARCHIVES[*]}"
cmp "$WORK/idx.cdxj" "$WORK/idx2.cdxj"
rows=$(grep -vc '^!' "$WORK/idx.cdxj")
t0=$(mean "$WORK/results/index.json" 0)
t1=$(mean "$WORK/results/index.json" 1)
python3 - "$rows" "$t0" "$t1" << 'EOF'
import sys
rows, t0, t1 = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"index alone: {t0:.2f} s ({rows / t0:,.0f} rows/s); with --table: {t1:.2f} s "
      f"({rows / t1:,.0f} rows/s): {t1 / t0:.2f}x (target <= 1.3x)")
EOF

# ---------------------------------------------------------------- 2. convert
echo "== 2. CDXJ -> Parquet: ukvs table vs DuckDB ($LINES lines)"
if [ ! -f "$WORK/wide.cdxj" ]; then
    python3 - "$WORK/idx.cdxj" "$WORK/wide.cdxj" "$LINES" << 'EOF'
import sys
src, dst, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [l for l in open(src, "rb") if not l.startswith(b"!")]
k = max(1, -(-want // len(lines)))
out = []
for i in range(k):
    for l in lines:
        if len(out) >= want:
            break
        key = l.split(b" ", 1)[0]
        if i and b")" not in key:
            continue  # dns: and other keys without a host: once
        if i:
            key_host, rest = l.split(b")", 1)
            l = key_host + b",w%d)" % i + rest
            l = l.replace(b'"url": "http://', b'"url": "http://www.w%d.' % i, 1)
        out.append(l)
out.sort()
open(dst, "wb").writelines(out)
EOF
fi
lines=$(wc -l < "$WORK/wide.cdxj")
# DuckDB reads each line as one VARCHAR column (read_csv with a
# delimiter no line holds: a space delimiter would split the JSON block),
# splits key and datetime off with split_part, and extracts the seven
# members from the JSON block with one json_extract_string call over a
# list of paths (one parse of the block per line). threads = 2: both
# cores, as ukvs uses them.
cat > "$WORK/duck.py" << EOF
import duckdb
con = duckdb.connect()
con.execute("SET threads = 2")
con.execute("""
COPY (
  SELECT key AS url_surtkey, strptime(ts, '%Y%m%d%H%M%S') AS fetch_time,
         v[1] AS url, v[2] AS content_mime_type, TRY_CAST(v[3] AS SMALLINT) AS fetch_status,
         v[4] AS content_digest, CAST(v[5] AS INTEGER) AS warc_record_length,
         CAST(v[6] AS INTEGER) AS warc_record_offset, v[7] AS warc_filename
  FROM (SELECT split_part(line, ' ', 1) AS key, split_part(line, ' ', 2) AS ts,
               json_extract_string(substr(line, strpos(line, ' {') + 1),
                 ['\$.url', '\$.mime', '\$.status', '\$.digest', '\$.length', '\$.offset',
                  '\$.filename']) AS v
        FROM read_csv('$WORK/wide.cdxj', columns = {'line': 'VARCHAR'}, delim = '\x01',
                      quote = '', escape = '', header = false))
) TO '$WORK/duck.parquet' (FORMAT parquet, COMPRESSION zstd)
""")
EOF
# OLD=path/to/an/earlier/ukvs is timed in the same run, and its table
# compared with this one's row for row (DuckDB EXCEPT ALL, both ways).
old=()
[ -n "${OLD:-}" ] && old=(-n "ukvs table (OLD)" "$OLD table -q $WORK/wide.cdxj -o $WORK/wide-old.parquet --crawl BENCH")
hyperfine --warmup 1 --runs "$RUNS" --export-json "$WORK/results/convert.json" \
    -n "ukvs table" "$UKVS table -q $WORK/wide.cdxj -o $WORK/wide.parquet --crawl BENCH" \
    -n "duckdb" "python3 $WORK/duck.py" "${old[@]}"
if [ -n "${OLD:-}" ]; then
    python3 - "$WORK/wide.parquet" "$WORK/wide-old.parquet" << 'EOF'
import duckdb, sys
new, old = sys.argv[1], sys.argv[2]
q = "SELECT count(*) FROM (SELECT * FROM read_parquet('{}') EXCEPT ALL SELECT * FROM read_parquet('{}'))"
a = duckdb.sql(q.format(new, old)).fetchall()[0][0]
b = duckdb.sql(q.format(old, new)).fetchall()[0][0]
n = duckdb.sql(f"SELECT count(*) FROM read_parquet('{new}')").fetchall()[0][0]
print(f"the new table against OLD's: {n:,} rows; {a} only in the new, {b} only in OLD's")
sys.exit(1 if a or b else 0)
EOF
fi
u=$(mean "$WORK/results/convert.json" 0)
d=$(mean "$WORK/results/convert.json" 1)
python3 -c "
u, d, n = $u, $d, $lines
print(f'ukvs table: {u:.2f} s ({n / u:,.0f} rows/s); duckdb: {d:.2f} s ({n / d:,.0f} rows/s): '
      f'ukvs {d / u:.2f}x faster (target >= 3x)')"
if [ -n "${OLD:-}" ]; then
    o=$(mean "$WORK/results/convert.json" 2)
    python3 -c "print(f'OLD ukvs table: {$o:.2f} s: the new one is {$o / $u:.2f}x faster')"
fi

# ---------------------------------------------------------------- 3. sizes
echo "== 3. sizes"
gzip -6 -c "$WORK/wide.cdxj" > "$WORK/wide.cdxj.gz"
"$UKVS" table -q "$WORK/wide.cdxj" -o "$WORK/wide-dir" --crawl BENCH
size() { du -sb "$1" | cut -f1; }
python3 -c "
c, g, t, d, k = $(size "$WORK/wide.cdxj"), $(size "$WORK/wide.cdxj.gz"), \
    $(size "$WORK/wide.parquet"), $(size "$WORK/wide-dir"), $(size "$WORK/duck.parquet")
print(f'CDXJ {c:,} B; gzip -6 {g:,} B; table {t:,} B ({t / g:.2f}x the gzip); '
      f'Hive directory {d:,} B; DuckDB\'s 9-column file {k:,} B')"

# ---------------------------------------------------------------- 4. query
echo "== 4. a SURT-prefix query"
prefix=$(cut -d')' -f1 "$WORK/wide.cdxj" | uniq -c | awk '$1 > n { n = $1; p = $2 } END { print p }')
prefix="$prefix)"
cat > "$WORK/query.py" << EOF
import duckdb
n = duckdb.sql("""SELECT count(*) FROM read_parquet('$WORK/wide.parquet')
                  WHERE url_surtkey >= '$prefix' AND url_surtkey < '$prefix~'""").fetchall()[0][0]
print(n)
EOF
a=$(python3 "$WORK/query.py")
b=$("$UKVS" lookup "$WORK/wide.cdxj" --key "$prefix" --match prefix | wc -l)
echo "prefix $prefix: DuckDB counts $a rows, ukvs lookup $b lines"
[ "$a" = "$b" ] || { echo "bench_table.sh: the counts differ" >&2; exit 1; }
hyperfine --warmup 1 --runs "$RUNS" --export-json "$WORK/results/query.json" \
    -n "duckdb over the table" "python3 $WORK/query.py" \
    -n "ukvs lookup" "$UKVS lookup $WORK/wide.cdxj --key '$prefix' --match prefix"
