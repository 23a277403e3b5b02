#!/usr/bin/env bash
# Times `ukvs index` of a WACZ package (~1 GB, its WARCs read in place)
# against the other ways to get that index, in one run:
#
#   unzip of the package + `ukvs index` of the extracted WARCs;
#   py-wacz's indexing alone: its WACZIndexer (cdxj-indexer underneath)
#   over the same WARCs with the options `wacz create` gives it, writing
#   index.cdx.gz + index.idx to files (no ZIP, no hashing);
#   py-wacz's `wacz create` whole: that indexing, plus copying the WARCs
#   into the ZIP (CRC-32) and hashing each entry for datapackage.json.
#
# ukvs runs with py-wacz's indexing options (cdxj, --post-append,
# --digest-records, --fields referrer,req.http:cookie). Wall and CPU
# (user + sys, all threads) seconds of each; the ratios are against the
# in-place run (target: ukvs at least 10x faster than py-wacz's
# indexing). Python runs on one core; ukvs with -j THREADS. On a loaded
# machine wall times mostly measure the load: compare CPU. The package
# is made once by py-wacz from a generated corpus and cached in WORKDIR.
#
#   scripts/bench_wacz.sh [WORKDIR]             # default /tmp/ukvs-bench-wacz
#   FILES=8 RECORDS=2400 scripts/bench_wacz.sh  # ~250 MB instead
#
# Env: FILES, RECORDS, SEED (corpus: default 32 files x 2400 captures,
# about 1 GB of .warc.gz), THREADS (ukvs -j, default 2), JOBS (generator
# processes, default 2), GEN (gen_arc_corpus.py, default
# ../shared/tools/gen_arc_corpus.py), UKVS (a ukvs binary instead of
# building target/release/ukvs). Needs python3 with py-wacz
# (pip install wacz==0.6.0), unzip, GNU time (/usr/bin/time).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-/tmp/ukvs-bench-wacz}
FILES=${FILES:-32}
RECORDS=${RECORDS:-2400}
SEED=${SEED:-1}
THREADS=${THREADS:-2}
JOBS=${JOBS:-2}
GEN=${GEN:-$ROOT/../shared/tools/gen_arc_corpus.py}

missing=()
command -v unzip > /dev/null || missing+=("unzip (apt-get install -y unzip)")
[ -x /usr/bin/time ] || missing+=("GNU time at /usr/bin/time (apt-get install -y time)")
python3 -c 'import wacz' 2> /dev/null || missing+=("py-wacz (pip install wacz==0.6.0)")
[ -f "$GEN" ] || missing+=("$GEN (set GEN)")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'missing: %s\n' "${missing[@]}" >&2
  exit 1
fi

if [ -z "${UKVS:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
  UKVS=$ROOT/target/release/ukvs
fi

mkdir -p "$WORK"
KEY="$FILES-$RECORDS-$SEED"
PKG=$WORK/bench.wacz
OPTS=(--format cdxj --post-append --digest-records --fields referrer,req.http:cookie -j "$THREADS")

# wall and CPU seconds of a command: "wall user+sys"
timed() {
  /usr/bin/time -f '%e %U %S' -o "$WORK/run.time" "$@" > /dev/null 2>&1
  awk '{printf "%.2f %.2f", $1, $2 + $3}' "$WORK/run.time"
}

if [ "$(cat "$WORK/key" 2> /dev/null)" != "$KEY" ] || [ ! -f "$PKG" ]; then
  rm -rf "$WORK/gen" "$PKG"
  echo "making the corpus ($FILES files x $RECORDS captures) ..." >&2
  python3 "$GEN" --out "$WORK/gen" --warc --files "$FILES" --records-per-file "$RECORDS" \
    --seed "$SEED" --jobs "$JOBS" > /dev/null
  python3 -m wacz create -o "$PKG" "$WORK"/gen/*.warc.gz > /dev/null
  echo "$KEY" > "$WORK/key"
fi

size=$(stat -c %s "$PKG")
echo "package: $PKG, $((size / 1000000)) MB, $(ls "$WORK"/gen/*.warc.gz | wc -l) WARCs" >&2

# Warm the page cache, then one run of each.
cat "$PKG" > /dev/null
read -r in_wall in_cpu <<< "$(timed "$UKVS" index "$PKG" "${OPTS[@]}" -o "$WORK/in.cdxj")"
rm -rf "$WORK/x"
read -r uz_wall uz_cpu <<< "$(timed unzip -q "$PKG" -d "$WORK/x")"
read -r ex_wall ex_cpu <<< "$(timed "$UKVS" index "$WORK/x/archive" "${OPTS[@]}" -o "$WORK/ex.cdxj")"
rm -rf "$WORK/x"
same=$(cmp -s "$WORK/in.cdxj" "$WORK/ex.cdxj" && echo yes || echo NO)

# py-wacz's indexing alone, as `wacz create` calls it (wacz/main.py).
cat > "$WORK/pyindex.py" << 'PY'
import sys
from io import TextIOWrapper
from wacz.waczindexer import WACZIndexer
idx_path, data_path, inputs = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(idx_path, "wb") as idx, open(data_path, "wb") as data:
    text = TextIOWrapper(idx, "utf-8", write_through=True)
    WACZIndexer(text, inputs, sort=True, post_append=True, compress=data, lines=1024,
                digest_records=True, fields="referrer,req.http:cookie",
                data_out_name="index.cdx.gz", hash_type=None, main_url=None, main_ts=None,
                detect_pages=False, passed_pages_dict={}, extract_text=False,
                signing_url=None, signing_token=None, split_seeds=False).process_all()
PY
read -r pi_wall pi_cpu <<< "$(timed python3 "$WORK/pyindex.py" "$WORK/py.idx" "$WORK/py.cdx.gz" \
  "$WORK"/gen/*.warc.gz)"
read -r py_wall py_cpu <<< "$(timed python3 -m wacz create -o "$WORK/again.wacz" "$WORK"/gen/*.warc.gz)"
rm -f "$WORK/again.wacz" "$WORK/py.idx" "$WORK/py.cdx.gz"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.1f", a / b; else print "-" }'; }
two_wall=$(awk -v a="$uz_wall" -v b="$ex_wall" 'BEGIN{printf "%.2f", a + b}')
two_cpu=$(awk -v a="$uz_cpu" -v b="$ex_cpu" 'BEGIN{printf "%.2f", a + b}')
cat << REPORT
# scripts/bench_wacz.sh: $FILES x $RECORDS captures, $((size / 1000000)) MB package, -j $THREADS
                                      wall s   cpu s
ukvs index PKG (in place)           $(printf '%8s %7s' "$in_wall" "$in_cpu")
unzip PKG                           $(printf '%8s %7s' "$uz_wall" "$uz_cpu")
ukvs index of the extracted WARCs   $(printf '%8s %7s' "$ex_wall" "$ex_cpu")
  unzip + index                     $(printf '%8s %7s' "$two_wall" "$two_cpu")
py-wacz indexing alone (1 core)     $(printf '%8s %7s' "$pi_wall" "$pi_cpu")
py-wacz wacz create (index+zip+hash)$(printf '%8s %7s' "$py_wall" "$py_cpu")
ratios (wall): unzip+index / in place $(ratio "$two_wall" "$in_wall")x, py-wacz indexing / in place $(ratio "$pi_wall" "$in_wall")x, wacz create / in place $(ratio "$py_wall" "$in_wall")x
ratios (cpu):  unzip+index / in place $(ratio "$two_cpu" "$in_cpu")x, py-wacz indexing / in place $(ratio "$pi_cpu" "$in_cpu")x, wacz create / in place $(ratio "$py_cpu" "$in_cpu")x
same lines in place and extracted: $same
REPORT
