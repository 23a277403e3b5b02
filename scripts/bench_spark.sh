#!/usr/bin/env bash
# The Spark job (spark/ukvs_spark.py on local[2]) against single-machine
# ukvs on the same corpus, with Spark's fixed start-up cost separated from
# its cost per record, and what those per-core figures make of a cluster.
#
#   scripts/bench_spark.sh [RECORDS] [WORKDIR]
#   REPEAT=2 scripts/bench_spark.sh 8000 /tmp/bsp     # quick check
#
# On 2 cores: about 10 minutes for the default 40000 captures (500 MB of
# .gz, 40 s of it to generate the corpus) and REPEAT=8.
#
# Corpus (cached in WORKDIR): RECORDS captures, half ARC and half WARC, 8
# .gz files each, made by shared/tools/gen_arc_corpus.py. "small" is one
# ARC and one WARC file of it (1/8); "large" is all 16 files REPEAT times
# (hard links in REPEAT directories: the index then holds each line REPEAT
# times, and the archives are read from the page cache, so this measures
# computing, not disks). Spark's start-up (20 s here) dwarfs what a few
# hundred MB cost, hence the repeats.
#
# 1. Single machine: `ukvs index -j 2 --mementomap --stats` then `ukvs
#    zipnum build` (the job's outputs, made the single-machine way), and
#    the same with -j 1 (one core).
# 2. Spark: `ukvs_spark.py --master local[2] --shards 4` on "small" and on
#    "large", RUNS (default 2) runs of "small", 1 of "large" (the fastest
#    counted). The two
#    points give a line: seconds = fixed + per_record * records, where
#    fixed is the start-up (JVM, session, Python workers, the driver's
#    merges) and per_record what each record costs on 2 cores.
# 3. From the per-core rate (records/s and archive MB/s per core, Spark's
#    variable part), what a cluster of NODES (default 100) nodes of
#    NODE_CORES (default 16) cores indexes per hour, start-up left out.
#
# Needs python3 with pyspark, pyarrow and pandas
# (scripts/requirements.txt), a Java runtime and lscpu. The machine may be
# shared: compare within one run.
set -euo pipefail
export LC_ALL=C

RECORDS=${1:-40000}
WORK=${2:-$(mktemp -d)}
RUNS=${RUNS:-2}
REPEAT=${REPEAT:-8}
NODES=${NODES:-100}
NODE_CORES=${NODE_CORES:-16}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
GEN=$ROOT/../shared/tools/gen_arc_corpus.py
export SPARK_LOCAL_IP=127.0.0.1

cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
UKVS=$CARGO_TARGET_DIR/release/ukvs
export PATH=$CARGO_TARGET_DIR/release:$PATH
mkdir -p "$WORK"
lscpu | grep -E '^(Model name|CPU\(s\))' || true

per_file=$((RECORDS / 16))
if [ ! -d "$WORK/corpus" ]; then
  echo "generating $RECORDS captures in $WORK/corpus"
  python3 "$GEN" --out "$WORK/gen-arc" --files 8 --records-per-file "$per_file" --seed 1 >/dev/null
  python3 "$GEN" --warc --out "$WORK/gen-warc" --files 8 --records-per-file "$per_file" --seed 1 >/dev/null
  mkdir -p "$WORK/corpus.tmp"
  mv "$WORK"/gen-arc/*.arc.gz "$WORK"/gen-warc/*.warc.gz "$WORK/corpus.tmp/"
  mv "$WORK/corpus.tmp" "$WORK/corpus"
  rm -rf "$WORK/gen-arc" "$WORK/gen-warc"
fi
rm -rf "$WORK/small" "$WORK/large"
mkdir -p "$WORK/small"
ln "$(ls "$WORK"/corpus/*.arc.gz | head -1)" "$(ls "$WORK"/corpus/*.warc.gz | head -1)" "$WORK/small/"
for k in $(seq "$REPEAT"); do
  mkdir -p "$WORK/large/$k" && ln "$WORK"/corpus/* "$WORK/large/$k/"
done

# Wall seconds of a command, its output thrown away.
seconds() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}

single() { # THREADS CORPUS
  rm -rf "$WORK/single" && mkdir "$WORK/single"
  "$UKVS" index -q -j "$1" "$2" -o "$WORK/single/x.ukvs" \
    --mementomap "$WORK/single/x.map" --stats "$WORK/single/x.json"
  "$UKVS" zipnum build "$WORK/single/x.ukvs" -o "$WORK/single/cluster"
}

spark() { # CORPUS
  rm -rf "$WORK/spark-out"
  python3 "$ROOT/spark/ukvs_spark.py" --master 'local[2]' --shards 4 \
    --conf spark.ui.enabled=false --conf spark.ui.showConsoleProgress=false \
    -o "$WORK/spark-out" "$1"
}

fastest() { # COMMAND...: the fastest of RUNS runs
  local best="" t
  for _ in $(seq "$RUNS"); do
    t=$(seconds "$@")
    best=$(python3 -c "print(min(x for x in [$t, ${best:-$t}]))")
  done
  echo "$best"
}

records() { "$UKVS" index -q -j 0 "$1" | grep -vc '^!'; }
megabytes() { find "$1" -type f -printf '%s\n' | awk '{n += $1} END {printf "%.1f", n / 1e6}'; }

r_small=$(records "$WORK/small"); r_large=$(records "$WORK/large")
mb_large=$(megabytes "$WORK/large")
echo "corpus: small $r_small records, large $r_large records, $mb_large MB"

single1=$(fastest single 1 "$WORK/large")
single2=$(fastest single 2 "$WORK/large")
spark_small=$(fastest spark "$WORK/small")
spark_large=$(RUNS=1 fastest spark "$WORK/large")

python3 - "$r_small" "$r_large" "$mb_large" "$single1" "$single2" \
  "$spark_small" "$spark_large" "$NODES" "$NODE_CORES" <<'EOF'
import sys
rs, rl, mb, s1, s2, ps, pl, nodes, cores = map(float, sys.argv[1:])
per_record = (pl - ps) / (rl - rs)       # seconds per record on 2 cores
fixed = ps - per_record * rs
spark_core = 1 / (per_record * 2)        # records/s per core
mb_per_record = mb / rl
print(f"single machine, index + map + stats + zipnum, -j 1: {s1:.2f} s "
      f"({rl / s1:,.0f} records/s)")
print(f"single machine, -j 2: {s2:.2f} s ({rl / s2:,.0f} records/s, "
      f"{rl / s2 / 2:,.0f} per core)")
print(f"spark local[2]: small {ps:.2f} s, large {pl:.2f} s")
print(f"spark fixed start-up: {fixed:.1f} s; per record: {per_record * 1e6:.1f} us "
      f"on 2 cores = {spark_core:,.0f} records/s per core "
      f"({spark_core * mb_per_record:.1f} MB/s of archives per core)")
print(f"spark per-core rate / single machine per-core rate: "
      f"{spark_core / (rl / s1):.2f} (-j 1), {spark_core / (rl / s2 / 2):.2f} (-j 2)")
hour = spark_core * nodes * cores * 3600
print(f"{nodes:.0f} nodes x {cores:.0f} cores: {hour / 1e9:.2f} billion records/hour, "
      f"{hour * mb_per_record / 1e6:.1f} TB/hour of archives like these "
      f"(start-up once: {fixed:.0f} s)")
EOF
