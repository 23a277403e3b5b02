#!/usr/bin/env bash
# Fuzzes every target of fuzz/ for SECONDS each (libFuzzer through
# cargo-fuzz), keeping each target's corpus in fuzz/corpus/TARGET between
# runs. A crash, hang or runaway allocation is minimised (`cargo fuzz
# tmin`) and copied to tests/data/fuzz/TARGET/, where `cargo test`
# (tests/it/fuzz.rs) replays it through the same function; fix the bug,
# then commit the input with the fix. Prints executions and coverage per
# target at the end.
#
#   scripts/fuzz.sh 300              # five minutes per target
#   TARGETS="warc_stream arc_stream" scripts/fuzz.sh 600
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`); it runs on the stable
# toolchain with RUSTC_BOOTSTRAP=1, which this script sets. Seeds come from
# tests/data (and ../shared/corpus when it is there) on the first run.
set -euo pipefail

SECONDS_PER=${1:?usage: scripts/fuzz.sh SECONDS}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FUZZ=$ROOT/fuzz
SHARED=$ROOT/../shared/corpus
export RUSTC_BOOTSTRAP=1
ALL="warc_stream arc_stream surt ukvs_lines cdx_convert mementomap_lines zipnum_idx pywb_lines kulturarw3_objects nedlib_meta stats_lines generate_lines post_body digest_spellings outback_query wayback_params wacz_package"
TARGETS=${TARGETS:-$ALL}

command -v cargo-fuzz > /dev/null || { echo "needs cargo-fuzz: cargo install cargo-fuzz" >&2; exit 2; }

# Seeds: small real inputs of each kind (files over 1 MiB are left out:
# libFuzzer mutates small inputs best).
seed() {
  local target=$1; shift
  local dir=$FUZZ/corpus/$target
  [ -d "$dir" ] && return
  mkdir -p "$dir"
  for src in "$@"; do
    [ -e "$src" ] || continue
    find "$src" -type f -size -1024k | while read -r f; do
      cp "$f" "$dir/$(printf '%s' "$f" | sha1sum | cut -c1-16)"
    done
  done
}
seed warc_stream "$ROOT/tests/data/warc" "$SHARED/webrecorder__warcio" "$SHARED/internetarchive__CDX-Writer/tests"
seed arc_stream "$ROOT/tests/data/arc" "$ROOT/samples" "$SHARED/netarchivesuite__jwat"
seed surt "$ROOT/tests/data/surt"
seed ukvs_lines "$ROOT/tests/data/ukvs" "$ROOT/tests/data/ukvs-bad" "$ROOT/samples/expected.ukvs"
seed cdx_convert "$ROOT/tests/data/cdxj" "$SHARED/webrecorder__pywb/sample_archive/cdx"
seed mementomap_lines "$ROOT/tests/data/ukvs"
seed zipnum_idx "$SHARED/webrecorder__pywb/sample_archive/zipcdx"
seed pywb_lines "$ROOT/tests/data/cdxj" "$ROOT/tests/data/ukvs" "$SHARED/webrecorder__pywb/sample_archive/cdx"
seed kulturarw3_objects "$ROOT/tests/data/kulturarw3"
seed nedlib_meta "$ROOT/tests/data/nedlib"
seed stats_lines "$ROOT/tests/data/cdxj" "$ROOT/tests/data/ukvs" "$SHARED/internetarchive__CDX-Writer/_expected_from_tests/default"
seed outback_query "$ROOT/tests/data/fuzz/outback_query" "$ROOT/tests/data/outbackcdx"
seed generate_lines "$ROOT/tests/data/cdxj" "$ROOT/tests/data/ukvs" "$ROOT/samples/expected.ukvs" "$SHARED/internetarchive__CDX-Writer/_expected_from_tests/default"
seed post_body "$ROOT/tests/data/cdx" "$ROOT/tests/data/outbackcdx" "$ROOT/tests/data/cdxj" "$ROOT/tests/data/ukvs"
seed digest_spellings "$ROOT/tests/data/cdxj" "$ROOT/tests/data/ukvs"
seed wayback_params "$ROOT/tests/data/wayback/queries"
seed wacz_package "$ROOT/tests/data/wacz"
# The SURT vectors file is one URL per line: split it into seeds.
if [ "$(ls "$FUZZ/corpus/surt" | wc -l)" -lt 50 ] && [ -f "$ROOT/tests/data/surt/vectors.tsv" ]; then
  awk -F'\t' 'NR <= 2000 { print $1 }' "$ROOT/tests/data/surt/vectors.tsv" | while read -r u; do
    printf '%s' "$u" > "$FUZZ/corpus/surt/$(printf '%s' "$u" | sha1sum | cut -c1-16)"
  done
fi

cd "$FUZZ"
cargo fuzz build -O > /dev/null
REPORT=$(mktemp)
for t in $TARGETS; do
  # Findings of earlier runs are in tests/data/fuzz already: only this
  # run's are counted.
  rm -rf "artifacts/$t"
  mkdir -p "artifacts/$t"
  log=$(mktemp)
  echo "fuzzing $t for ${SECONDS_PER}s ..."
  set +e
  cargo fuzz run -O "$t" "corpus/$t" -- -max_total_time="$SECONDS_PER" \
    -rss_limit_mb=2048 -timeout=10 -max_len=262144 -print_final_stats=1 > "$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  found=$(ls "artifacts/$t" 2> /dev/null | wc -l)
  printf '%-18s execs %10s  cov %6s  ft %6s  exit %3s  findings %s\n' \
    "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$rc" "$found" >> "$REPORT"
  if [ "$found" -gt 0 ]; then
    mkdir -p "$ROOT/tests/data/fuzz/$t"
    for a in "artifacts/$t"/*; do
      min="$a.min"
      cargo fuzz tmin -O "$t" "$a" -- -runs=2000 > /dev/null 2>&1 || true
      # tmin writes minimized-from-* beside the input.
      m=$(ls -t "artifacts/$t"/minimized-from-* 2> /dev/null | head -1 || true)
      cp "${m:-$a}" "$ROOT/tests/data/fuzz/$t/$(basename "$a")"
      echo "  $t: $(basename "$a") -> tests/data/fuzz/$t/ (minimised: ${m:+yes})"
    done
    tail -40 "$log"
  fi
  rm -f "$log"
done
echo
cat "$REPORT"
rm -f "$REPORT"
