#!/usr/bin/env bash
# Times `ukvs index` on WARC against its peers on the same generated
# corpus, in one run on one machine, and prints the ratios of DESIGN.md
# section 5 ("index .warc.gz, ~250 MB"):
#
#   ukvs index (sorted, ukvs profile) <= 0.3x the wall time of `gzip -dc`,
#   >= 10x faster than cdxj-indexer, <= 0.5x the wall time of FastWARC
#   iterating every record and checking its payload digest.
#
# On the same records recompressed as .warc.zst (one zstd frame per record,
# level 3) it times `ukvs index` against `zstd -dc` (and FastWARC), and on a
# third copy that opens each file with the IIPC dictionary frame
# (0x184D2A5D) against `zstd -dc -D DICT` (--no-asyncio: see below). Then the peak RSS of
# `ukvs index` (sorted and --no-sort) on half, all and twice the .warc.gz
# files, to show whether it grows with the input.
#
#   scripts/bench_warc.sh [WORKDIR]          # default /tmp/ukvs-bench-warc
#   REPS=3 scripts/bench_warc.sh /tmp/w      # fewer runs per tool
#
# Env: REPS (runs per tool, median reported, default 5), THREADS (ukvs -j,
# default 2), FILES, RECORDS, SEED (corpus: default 8 files x 2400 captures,
# seed 1, ~246 MB of .warc.gz, 45,589 WARC records), JOBS (generator and
# recompression processes, default 2), DICT (0: skip the dictionary
# variant), FASTWARC_QUIRKS (FastWARC quirks_mode, default 1; 0 and 1 read
# this corpus alike), GEN (path of gen_arc_corpus.py, default
# ../shared/tools/gen_arc_corpus.py), UKVS (a ukvs binary to use instead of
# building target/release/ukvs). About 1.5 minutes with REPS=5 on 2 cores
# once the corpus exists; making it takes about 15 s more.
#
# The jobs run interleaved, one round of all of them per repetition, and
# the report says how many CPUs other processes took meanwhile: on a
# shared machine compare CPU seconds, the wall-time targets mean 2 idle
# cores.
#
# Corpora are cached in WORKDIR (gz/, zst/, zst-dict/, zst-dict.dict) and
# remade when FILES, RECORDS or SEED change. Needs: python3 with the
# `zstandard` package, gzip, zstd, GNU time (/usr/bin/time); peers skipped
# with a note when missing: cdxj-indexer and fastwarc (pip install
# cdxj-indexer==1.5.0 fastwarc).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-/tmp/ukvs-bench-warc}
FILES=${FILES:-8}
RECORDS=${RECORDS:-2400}
SEED=${SEED:-1}
REPS=${REPS:-5}
THREADS=${THREADS:-2}
JOBS=${JOBS:-2}
DICT=${DICT:-1}
FASTWARC_QUIRKS=${FASTWARC_QUIRKS:-1}
GEN=${GEN:-$ROOT/../shared/tools/gen_arc_corpus.py}

# ---------------------------------------------------------------- tools
missing=()
command -v python3 > /dev/null || missing+=("python3")
command -v gzip > /dev/null || missing+=("gzip (apt-get install -y gzip)")
command -v zstd > /dev/null || missing+=("zstd (apt-get install -y zstd)")
[ -x /usr/bin/time ] || missing+=("GNU time at /usr/bin/time (apt-get install -y time)")
python3 -c 'import zstandard' 2> /dev/null || missing+=("python3 module zstandard (pip install zstandard)")
[ -f "$GEN" ] || missing+=("the corpus generator $GEN (set GEN=path/to/gen_arc_corpus.py)")
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench_warc.sh: missing:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi
CDXJ_INDEXER=$(command -v cdxj-indexer || true)
HAVE_FASTWARC=0
python3 -c 'import fastwarc.warc' 2> /dev/null && HAVE_FASTWARC=1
[ -n "$CDXJ_INDEXER" ] || echo "note: cdxj-indexer not found, its row is skipped (pip install cdxj-indexer==1.5.0)" >&2
[ "$HAVE_FASTWARC" = 1 ] || echo "note: fastwarc not importable, its rows are skipped (pip install fastwarc)" >&2

if [ -n "${UKVS:-}" ]; then
    [ -x "$UKVS" ] || { echo "UKVS=$UKVS is not an executable" >&2; exit 1; }
else
    (cd "$ROOT" && cargo build --release --quiet) || {
        echo "cargo build --release failed (retry, or set UKVS=path/to/ukvs)" >&2
        exit 1
    }
    UKVS="${CARGO_TARGET_DIR:-$ROOT/target}/release/ukvs"
fi

# ---------------------------------------------------------------- corpus
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
# The generator's MANIFEST.json records its parameters; a cached corpus
# made with others is made again (with everything derived from it).
corpus_ok() {
    python3 - "$WORK/gz/MANIFEST.json" "$FILES" "$RECORDS" "$SEED" << 'EOF'
import json, sys
try:
    m = json.load(open(sys.argv[1]))
except OSError:
    sys.exit(1)
want = {"files": int(sys.argv[2]), "records_per_file": int(sys.argv[3]), "seed": sys.argv[4]}
p = m.get("params", {})
ok = all(str(p.get(k)) == str(v) for k, v in want.items()) and p.get("warc") and p.get("gz") and not p.get("corrupt")
sys.exit(0 if ok else 1)
EOF
}
if ! corpus_ok; then
    rm -rf "$WORK/gz" "$WORK/gz.tmp" "$WORK/zst" "$WORK/zst-dict" "$WORK/zst-dict.dict" "$WORK/x2"
    echo "generating $FILES x $RECORDS WARC captures (seed $SEED) in $WORK/gz ..." >&2
    python3 "$GEN" --warc --out "$WORK/gz.tmp" --files "$FILES" --records-per-file "$RECORDS" \
        --seed "$SEED" --jobs "$JOBS" >&2
    mv "$WORK/gz.tmp" "$WORK/gz"
    corpus_ok || { echo "$WORK/gz/MANIFEST.json does not say what was asked; see gen_arc_corpus.py" >&2; exit 1; }
fi

# recompress SRC DST [DICT_OUT]: every gzip member of SRC/*.warc.gz
# decompressed and written again as its own zstd frame (level 3) in
# DST/*.warc.zst. With DICT_OUT a dictionary is trained on a sample of the
# records, written raw to DICT_OUT (for `zstd -D`), and every file opens
# with the IIPC skippable frame 0x184D2A5D holding it zstd-compressed;
# every record frame uses it.
recompress() {
    rm -rf "$2.tmp"
    mkdir -p "$2.tmp"
    python3 - "$1" "$2.tmp" "$JOBS" "${3:-}" << 'EOF'
import os, struct, sys, zlib
import multiprocessing
import zstandard as zstd

SRC, DST, JOBS, DICT_OUT = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
LEVEL = 3
NAMES = sorted(n for n in os.listdir(SRC) if n.endswith(".warc.gz"))

def records(path):
    """The decompressed gzip members of PATH, one by one (fed in 64 KiB
    slices, so that unused_data stays small)."""
    data = memoryview(open(path, "rb").read())
    pos = 0
    while pos < len(data):
        d, out = zlib.decompressobj(31), []
        while not d.eof:
            if pos >= len(data):
                sys.exit(f"{path}: the last gzip member is truncated")
            chunk = data[pos:pos + 65536]
            out.append(d.decompress(chunk))
            pos += len(chunk) - len(d.unused_data)
        yield b"".join(out)

def convert(name):
    zd = zstd.ZstdCompressionDict(open(DICT_OUT, "rb").read()) if DICT_OUT else None
    cz = zstd.ZstdCompressor(level=LEVEL, dict_data=zd) if zd else zstd.ZstdCompressor(level=LEVEL)
    with open(os.path.join(DST, name[:-len(".gz")] + ".zst"), "wb") as out:
        if zd:
            frame = zstd.ZstdCompressor(level=19).compress(zd.as_bytes())
            out.write(struct.pack("<II", 0x184D2A5D, len(frame)) + frame)
        for rec in records(os.path.join(SRC, name)):
            out.write(cz.compress(rec))

if __name__ == "__main__":
    if DICT_OUT:
        # Every 8th record of the first two files, at most 8 KiB of each:
        # a few seconds of training, ~8% smaller frames than without.
        samples = []
        for name in NAMES[:2]:
            samples += [r[:8192] for i, r in enumerate(records(os.path.join(SRC, name))) if i % 8 == 0]
        d = zstd.train_dictionary(112640, samples, level=LEVEL, threads=JOBS)
        with open(DICT_OUT, "wb") as f:
            f.write(d.as_bytes())
    # fork: this script comes from stdin, which a spawned worker cannot re-read
    with multiprocessing.get_context("fork").Pool(JOBS) as pool:
        pool.map(convert, NAMES)
EOF
    mv "$2.tmp" "$2"
}
if [ ! -d "$WORK/zst" ]; then
    echo "recompressing into $WORK/zst (one zstd frame per record) ..." >&2
    recompress "$WORK/gz" "$WORK/zst"
fi
if [ "$DICT" = 1 ] && { [ ! -d "$WORK/zst-dict" ] || [ ! -f "$WORK/zst-dict.dict" ]; }; then
    echo "recompressing into $WORK/zst-dict (IIPC dictionary frame) ..." >&2
    recompress "$WORK/gz" "$WORK/zst-dict" "$WORK/zst-dict.dict.tmp"
    mv "$WORK/zst-dict.dict.tmp" "$WORK/zst-dict.dict"
fi

gz_files=("$WORK"/gz/*.warc.gz)
zst_files=("$WORK"/zst/*.warc.zst)
dict_files=()
[ "$DICT" = 1 ] && dict_files=("$WORK"/zst-dict/*.warc.zst)
half=$(((${#gz_files[@]} + 1) / 2))
half_files=("${gz_files[@]:0:$half}")
# Twice the corpus, as symbolic links under two names each (no disk).
rm -rf "$WORK/x2"
mkdir "$WORK/x2"
for f in "${gz_files[@]}"; do
    ln -s "$f" "$WORK/x2/a-${f##*/}"
    ln -s "$f" "$WORK/x2/b-${f##*/}"
done
x2_files=("$WORK"/x2/*.warc.gz)

TMP=$(mktemp -d "$WORK/run.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# A copy of the binary, so that a rebuild of target/ during the run (by
# cargo meanwhile) cannot change what is timed half way.
cp "$UKVS" "$TMP/ukvs"
UKVS=$TMP/ukvs

# FastWARC: every record of every file, HTTP heads parsed, the payload
# digest checked where the record has one and every record read to its
# end. argv: quirks (0/1), dictionary file or "", files. Counts go to
# stderr (shown once, before the timed runs).
cat > "$TMP/fastwarc_iter.py" << 'EOF'
import sys
from fastwarc.warc import ArchiveIterator
from fastwarc.stream_io import ZstdReader

quirks = sys.argv[1] == "1"
dictionary = open(sys.argv[2], "rb").read() if sys.argv[2] else None
records = checked = failed = 0
for path in sys.argv[3:]:
    with open(path, "rb") as f:
        stream = ZstdReader(f, dictionary=dictionary) if dictionary else f
        for rec in ArchiveIterator(stream, parse_http=True, quirks_mode=quirks):
            records += 1
            if rec.headers.get("WARC-Payload-Digest"):
                checked += 1
                if not rec.verify_payload_digest(consume=True):
                    failed += 1
            else:
                rec.reader.consume()
print(f"{records} records, {checked} payload digests checked, {failed} reported failing", file=sys.stderr)
EOF

# ---------------------------------------------------------------- timing
# job LABEL WARM_SET CMD...: registers a timed job. run_jobs then runs
# every job once per round, REPS rounds, the jobs interleaved so that load
# from elsewhere (a build running meanwhile) spreads over all of them
# rather than landing on whichever runs during it. Before each run the
# files of WARM_SET (gz, zst, dict, fresh_gz, fresh_zst) are read once
# more: a page cache under reclaim would otherwise time the disk. Wall
# time from the shell's microsecond clock; CPU (user + sys, all threads)
# and peak RSS from GNU time. Leaves the median wall, median CPU and
# largest RSS (MB) in W[LABEL], C[LABEL], M[LABEL]. A failing run stops
# the script with the tool's stderr.
declare -A W C M SET
JOBS_ORDER=()
job() {
    local label=$1
    SET[$label]=$2
    shift 2
    JOBS_ORDER+=("$label")
    declare -ga "CMD_$label"
    local -n cmd="CMD_$label"
    cmd=("$@")
}
run_jobs() {
    local label t0 t1 user sys kb
    for label in "${JOBS_ORDER[@]}"; do : > "$TMP/$label.runs"; done
    for round in $(seq "$REPS"); do
        echo "  round $round of $REPS" >&2
        for label in "${JOBS_ORDER[@]}"; do
            local -n cmd="CMD_$label" warm="${SET[$label]}_files"
            cat "${warm[@]}" > /dev/null
            t0=$EPOCHREALTIME
            /usr/bin/time -f '%U %S %M' -o "$TMP/time" "${cmd[@]}" > /dev/null 2> "$TMP/err" || {
                echo "failed: ${cmd[*]}" >&2
                cat "$TMP/err" >&2
                exit 1
            }
            t1=$EPOCHREALTIME
            read -r user sys kb < "$TMP/time"
            echo "$t0 $t1 $user $sys $kb" >> "$TMP/$label.runs"
            unset -n cmd warm
        done
    done
    for label in "${JOBS_ORDER[@]}"; do
        W[$label]=$(awk '{ printf "%.3f\n", $2 - $1 }' "$TMP/$label.runs" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
        C[$label]=$(awk '{ printf "%.2f\n", $3 + $4 }' "$TMP/$label.runs" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
        M[$label]=$(awk '$5 > m { m = $5 } END { print int(m / 1024) }' "$TMP/$label.runs")
    done
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }'; }
# verdict VALUE OP TARGET: "met" or "MISSED".
verdict() { awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN { ok = (op == "<=") ? v <= t : v >= t; print ok ? "met" : "MISSED" }'; }

# Drop the corpora from the page cache once, so that the reads before each
# run cache them the way files read from disk are cached: in large folios
# where the kernel and file system use them (Linux 6.x on ext4 does), not
# in the 4 KiB pages a file just written is left in. ukvs maps its input
# and pays for every page it maps (the peers copy with read(2)), so this
# is the state archive files are read in ("read back"); the "just written"
# rows time ukvs on fresh copies, the state right after a crawler or
# converter wrote them.
for f in "${gz_files[@]}" "${zst_files[@]}" "${dict_files[@]}"; do
    dd if="$f" iflag=nocache count=0 status=none
done
cat "${gz_files[@]}" "${zst_files[@]}" "${dict_files[@]}" > /dev/null

UK=("$UKVS" index -q -j "$THREADS" --tmp-dir "$TMP")
gz_mb=$(du -cmL "${gz_files[@]}" | tail -1 | cut -f1)
zst_mb=$(du -cmL "${zst_files[@]}" | tail -1 | cut -f1)
dict_mb=0
[ "$DICT" = 1 ] && dict_mb=$(du -cmL "${dict_files[@]}" | tail -1 | cut -f1)

# Once, untimed: what each tool reads, so that the rows compare like with
# like (ukvs --format cdxj against cdxj-indexer line by line).
echo "checking the tools on the corpus (untimed) ..." >&2
"${UK[@]}" --format cdxj -o "$TMP/ukvs.cdxj" "${gz_files[@]}"
ukvs_lines=$(grep -vc '^!' "$TMP/ukvs.cdxj" || true)
"${UK[@]}" --format cdxj -o "$TMP/ukvs-zst.cdxj" "${zst_files[@]}"
zst_lines=$(grep -vc '^!' "$TMP/ukvs-zst.cdxj" || true)
check="ukvs --format cdxj: $ukvs_lines lines on .warc.gz, $zst_lines on .warc.zst"
if [ "$DICT" = 1 ]; then
    "${UK[@]}" --format cdxj -o "$TMP/ukvs-dict.cdxj" "${dict_files[@]}"
    check+=", $(grep -vc '^!' "$TMP/ukvs-dict.cdxj" || true) on .warc.zst with dictionary"
fi
echo "$check"
if [ -n "$CDXJ_INDEXER" ]; then
    "$CDXJ_INDEXER" "${gz_files[@]}" > "$TMP/ref.cdxj"
    if LC_ALL=C sort "$TMP/ref.cdxj" | cmp -s - <(grep -v '^!' "$TMP/ukvs.cdxj" | LC_ALL=C sort); then
        echo "cdxj-indexer: $(wc -l < "$TMP/ref.cdxj") lines, the same lines as ukvs --format cdxj"
    else
        echo "cdxj-indexer: $(wc -l < "$TMP/ref.cdxj") lines; DIFFERENT from ukvs --format cdxj (scripts/cdxj_diff.py tells how)"
    fi
fi
if [ "$HAVE_FASTWARC" = 1 ]; then
    echo "FastWARC on .warc.gz: $(python3 "$TMP/fastwarc_iter.py" "$FASTWARC_QUIRKS" "" "${gz_files[@]}" 2>&1)"
    echo "FastWARC on .warc.zst: $(python3 "$TMP/fastwarc_iter.py" "$FASTWARC_QUIRKS" "" "${zst_files[@]}" 2>&1)"
    [ "$DICT" = 1 ] && echo "FastWARC on .warc.zst with dictionary: $(python3 "$TMP/fastwarc_iter.py" \
        "$FASTWARC_QUIRKS" "$WORK/zst-dict.dict" "${dict_files[@]}" 2>&1)"
    echo "  (FastWARC fails the digests of revisit records, whose WARC-Payload-Digest is the original's, and of non-HTTP resource records; see gen_arc_corpus.py)"
fi
rm -f "$TMP"/*.cdxj

# cpu_now: CPU seconds used so far by the whole machine (/proc/stat) in
# MACHINE_CPU and by this script's children in OWN_CPU (bash `times` must
# run in this shell: a subshell has no children yet). What others took of
# the CPUs during the timing is the difference.
cpu_now() {
    MACHINE_CPU=$(awk -v hz="$(getconf CLK_TCK)" '/^cpu / { printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat)
    times > "$TMP/times"
    OWN_CPU=$(tail -1 "$TMP/times" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.2f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }')
}
# "Just written": fresh copies (written with write(2), then synced so that
# no writeback runs during the timing), left in the page cache as written.
mkdir "$TMP/fresh_gz" "$TMP/fresh_zst"
for f in "${gz_files[@]}"; do cat "$f" > "$TMP/fresh_gz/${f##*/}"; done
for f in "${zst_files[@]}"; do cat "$f" > "$TMP/fresh_zst/${f##*/}"; done
sync
fresh_gz_files=("$TMP"/fresh_gz/*.warc.gz)
fresh_zst_files=("$TMP"/fresh_zst/*.warc.zst)

FW=(python3 "$TMP/fastwarc_iter.py" "$FASTWARC_QUIRKS")
# zstd 1.5.3+ reads and writes in helper threads by default ("asyncio");
# with one-record frames its threads hand over every few KiB, and its time
# then swings 3-10x with the scheduler (0.6-2.4 s here on the same files,
# slowest on an idle machine). --no-asyncio times the decompression alone,
# as `gzip -dc` does; both are shown.
NOASYNC=()
zstd -H 2>&1 | grep -q -- '--\[no-\]asyncio' && NOASYNC=(--no-asyncio)
job gzip gz gzip -dc "${gz_files[@]}"
job ukvs_gz gz "${UK[@]}" -o /dev/null "${gz_files[@]}"
job ukvs_gz_fresh fresh_gz "${UK[@]}" -o /dev/null "${fresh_gz_files[@]}"
job ukvs_gz_cdxj gz "${UK[@]}" --format cdxj -o /dev/null "${gz_files[@]}"
job ukvs_gz_nosort gz "${UK[@]}" --no-sort -o /dev/null "${gz_files[@]}"
[ -n "$CDXJ_INDEXER" ] && job cdxj gz "$CDXJ_INDEXER" "${gz_files[@]}"
[ "$HAVE_FASTWARC" = 1 ] && job fw_gz gz "${FW[@]}" "" "${gz_files[@]}"
job zstd zst zstd -dcq "${zst_files[@]}"
[ ${#NOASYNC[@]} -gt 0 ] && job zstd_sync zst zstd -dcq "${NOASYNC[@]}" "${zst_files[@]}"
job ukvs_zst zst "${UK[@]}" -o /dev/null "${zst_files[@]}"
job ukvs_zst_fresh fresh_zst "${UK[@]}" -o /dev/null "${fresh_zst_files[@]}"
[ "$HAVE_FASTWARC" = 1 ] && job fw_zst zst "${FW[@]}" "" "${zst_files[@]}"
if [ "$DICT" = 1 ]; then
    job zstd_dict dict zstd -dcq "${NOASYNC[@]}" -D "$WORK/zst-dict.dict" "${dict_files[@]}"
    job ukvs_dict dict "${UK[@]}" -o /dev/null "${dict_files[@]}"
    [ "$HAVE_FASTWARC" = 1 ] && job fw_dict dict "${FW[@]}" "$WORK/zst-dict.dict" "${dict_files[@]}"
fi

LOAD0=$(cut -d" " -f1-3 /proc/loadavg)
cpu_now
T0=$EPOCHREALTIME M0=$MACHINE_CPU O0=$OWN_CPU
echo "timing: ${#JOBS_ORDER[@]} jobs, $REPS rounds, $(nproc) CPUs, ukvs -j $THREADS ..." >&2
run_jobs
cpu_now
OTHERS=$(awk -v t0="$T0" -v t1="$EPOCHREALTIME" -v m="$MACHINE_CPU" -v m0="$M0" -v o="$OWN_CPU" -v o0="$O0" \
    'BEGIN { x = ((m - m0) - (o - o0)) / (t1 - t0); printf "%.2f", x < 0 ? 0 : x }')

# Peak RSS against input size: one run each on half, all and twice the
# .warc.gz files (sorted output holds the index lines up to --mem, 1G by
# default; --no-sort holds only lines written ahead of their turn; RSS
# counts the mapped pages of the inputs, which --no-mmap leaves out).
declare -A RSS
for set in half gz x2; do
    files_of_set="${set}_files[@]"
    for mode in sorted nosort nommap; do
        extra=()
        [ "$mode" = nosort ] && extra=(--no-sort)
        [ "$mode" = nommap ] && extra=(--no-mmap)
        /usr/bin/time -f '%M' -o "$TMP/time" "${UK[@]}" "${extra[@]}" -o /dev/null "${!files_of_set}" 2> "$TMP/err" || {
            echo "failed: ukvs index ${extra[*]} on the $set set" >&2
            cat "$TMP/err" >&2
            exit 1
        }
        RSS[$set.$mode]=$(($(tail -1 "$TMP/time") / 1024))
    done
done

# ---------------------------------------------------------------- report
echo
echo "corpus: $WORK: ${#gz_files[@]} files x $RECORDS captures (seed $SEED): ${gz_mb} MB .warc.gz, ${zst_mb} MB .warc.zst (level 3)$([ "$DICT" = 1 ] && echo ", ${dict_mb} MB .warc.zst with IIPC dictionary")"
echo "$(nproc) CPUs, ukvs -j $THREADS, median of $REPS runs; load average before the timing: $LOAD0, after: $(cut -d" " -f1-3 /proc/loadavg)"
echo "other processes used $OTHERS CPUs on average during the timing (wall times suffer when they do, CPU seconds much less)"
if awk -v x="$OTHERS" 'BEGIN { exit !(x > 0.2) }'; then
    echo "WARNING: the CPUs were shared; the wall times below are not the idle $(nproc)-core figures the targets mean (compare CPU seconds, or run again when the machine is idle)"
fi
echo "page cache: inputs dropped once, then read back before every run (\"read back\"); \"just written\": fresh copies as written"
echo
row() { printf '%-50s %7s %7s %7s  %s\n' "$@"; }
row "job" "wall s" "CPU s" "RSS MB" "ratios (wall)"
row "gzip -dc (.warc.gz)" "${W[gzip]}" "${C[gzip]}" "${M[gzip]}" ""
row "ukvs index, sorted ukvs (.warc.gz)" "${W[ukvs_gz]}" "${C[ukvs_gz]}" "${M[ukvs_gz]}" \
    "$(ratio "${W[ukvs_gz]}" "${W[gzip]}")x gzip -dc (target <= 0.3); CPU $(ratio "${C[ukvs_gz]}" "${C[gzip]}")x"
row "ukvs index, sorted ukvs, just written" "${W[ukvs_gz_fresh]}" "${C[ukvs_gz_fresh]}" "${M[ukvs_gz_fresh]}" \
    "$(ratio "${W[ukvs_gz_fresh]}" "${W[gzip]}")x gzip -dc"
row "ukvs index --format cdxj (.warc.gz)" "${W[ukvs_gz_cdxj]}" "${C[ukvs_gz_cdxj]}" "${M[ukvs_gz_cdxj]}" \
    "$(ratio "${W[ukvs_gz_cdxj]}" "${W[gzip]}")x gzip -dc"
row "ukvs index --no-sort (.warc.gz)" "${W[ukvs_gz_nosort]}" "${C[ukvs_gz_nosort]}" "${M[ukvs_gz_nosort]}" \
    "$(ratio "${W[ukvs_gz_nosort]}" "${W[gzip]}")x gzip -dc"
if [ -n "$CDXJ_INDEXER" ]; then
    row "cdxj-indexer (.warc.gz)" "${W[cdxj]}" "${C[cdxj]}" "${M[cdxj]}" \
        "ukvs $(ratio "${W[cdxj]}" "${W[ukvs_gz]}")x faster (target >= 10), --format cdxj $(ratio "${W[cdxj]}" "${W[ukvs_gz_cdxj]}")x"
fi
if [ "$HAVE_FASTWARC" = 1 ]; then
    row "FastWARC iterate + verify digests (.warc.gz)" "${W[fw_gz]}" "${C[fw_gz]}" "${M[fw_gz]}" \
        "ukvs $(ratio "${W[fw_gz]}" "${W[ukvs_gz]}")x faster (target >= 2); CPU $(ratio "${C[fw_gz]}" "${C[ukvs_gz]}")x"
fi
# ZREF: the zstd baseline of the ratios (--no-asyncio when there is one).
ZREF=zstd ZNAME="zstd -dc"
[ ${#NOASYNC[@]} -gt 0 ] && ZREF=zstd_sync ZNAME="zstd -dc --no-asyncio"
row "zstd -dc (.warc.zst)" "${W[zstd]}" "${C[zstd]}" "${M[zstd]}" ""
[ ${#NOASYNC[@]} -gt 0 ] && row "zstd -dc --no-asyncio (.warc.zst)" "${W[zstd_sync]}" "${C[zstd_sync]}" "${M[zstd_sync]}" ""
row "ukvs index, sorted ukvs (.warc.zst)" "${W[ukvs_zst]}" "${C[ukvs_zst]}" "${M[ukvs_zst]}" \
    "$(ratio "${W[ukvs_zst]}" "${W[$ZREF]}")x $ZNAME, $(ratio "${W[ukvs_zst]}" "${W[zstd]}")x zstd -dc; CPU $(ratio "${C[ukvs_zst]}" "${C[$ZREF]}")x"
row "ukvs index, sorted ukvs, just written" "${W[ukvs_zst_fresh]}" "${C[ukvs_zst_fresh]}" "${M[ukvs_zst_fresh]}" \
    "$(ratio "${W[ukvs_zst_fresh]}" "${W[$ZREF]}")x $ZNAME"
if [ "$HAVE_FASTWARC" = 1 ]; then
    row "FastWARC iterate + verify digests (.warc.zst)" "${W[fw_zst]}" "${C[fw_zst]}" "${M[fw_zst]}" \
        "ukvs $(ratio "${W[fw_zst]}" "${W[ukvs_zst]}")x faster"
fi
if [ "$DICT" = 1 ]; then
    row "$ZNAME -D (.warc.zst, dictionary)" "${W[zstd_dict]}" "${C[zstd_dict]}" "${M[zstd_dict]}" ""
    row "ukvs index, sorted ukvs (.warc.zst, dictionary)" "${W[ukvs_dict]}" "${C[ukvs_dict]}" "${M[ukvs_dict]}" \
        "$(ratio "${W[ukvs_dict]}" "${W[zstd_dict]}")x $ZNAME -D"
    if [ "$HAVE_FASTWARC" = 1 ]; then
        row "FastWARC iterate + verify (.warc.zst, dictionary)" "${W[fw_dict]}" "${C[fw_dict]}" "${M[fw_dict]}" \
            "ukvs $(ratio "${W[fw_dict]}" "${W[ukvs_dict]}")x faster"
    fi
fi

echo
echo "targets (DESIGN.md section 5, index .warc.gz ~250 MB, 2 cores; wall time ratios):"
tgt() { printf '  %-40s %6s   target %-6s %s\n' "$1" "$2" "$3 $4" "$(verdict "$2" "$3" "$4")"; }
r=$(ratio "${W[ukvs_gz]}" "${W[gzip]}")
tgt "ukvs / gzip -dc" "$r" "<=" 0.3
if [ -n "$CDXJ_INDEXER" ]; then
    r=$(ratio "${W[cdxj]}" "${W[ukvs_gz]}")
    tgt "cdxj-indexer / ukvs" "$r" ">=" 10
fi
if [ "$HAVE_FASTWARC" = 1 ]; then
    r=$(ratio "${W[fw_gz]}" "${W[ukvs_gz]}")
    tgt "FastWARC / ukvs" "$r" ">=" 2
fi
printf '  %-40s %6s   (no target)\n' "ukvs .warc.zst / zstd -dc" "$(ratio "${W[ukvs_zst]}" "${W[zstd]}")"
[ ${#NOASYNC[@]} -gt 0 ] && printf '  %-40s %6s   (no target)\n' "ukvs .warc.zst / zstd -dc --no-asyncio" \
    "$(ratio "${W[ukvs_zst]}" "${W[zstd_sync]}")"

echo
echo "peak RSS of ukvs index -j $THREADS on .warc.gz (MB), one run each:"
printf '  %-10s %10s %10s %10s\n' "" "half ($half)" "all (${#gz_files[@]})" "x2 ($((2 * ${#gz_files[@]})))"
printf '  %-10s %10s %10s %10s\n' "sorted" "${RSS[half.sorted]}" "${RSS[gz.sorted]}" "${RSS[x2.sorted]}"
printf '  %-10s %10s %10s %10s\n' "--no-sort" "${RSS[half.nosort]}" "${RSS[gz.nosort]}" "${RSS[x2.nosort]}"
printf '  %-10s %10s %10s %10s\n' "--no-mmap" "${RSS[half.nommap]}" "${RSS[gz.nommap]}" "${RSS[x2.nommap]}"
echo "  (x2: every file twice, under two names; DESIGN.md: O(threads x largest record buffer), never O(input))"
