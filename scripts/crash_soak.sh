#!/usr/bin/env bash
# Crash soak of live collections: the SIGKILL tests of `tests/it/live.rs`
# (three writers POSTing and deleting) and `tests/it/fold.rs` (writers
# and folds), each run for ROUNDS kills (the tests run 4 and 24) under
# each of SEEDS, which change when the kills come. After each run a test
# checks that every answered POST is whole, every answered delete gone,
# every unanswered write all there or absent, nothing doubled, and (the
# fold test) that the collection answers as its model. Prints one line a
# run and exits non-zero if any failed; a failed run's output is kept.
#
#   scripts/crash_soak.sh                    # 100 rounds, seeds 1 2 3
#   ROUNDS=500 SEEDS="11 12" scripts/crash_soak.sh
#
# Builds the tests in release mode (the server's timings as users run
# it). Needs only cargo.
set -euo pipefail

ROUNDS=${ROUNDS:-100}
SEEDS=${SEEDS:-1 2 3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TESTS="live::sigkill_during_concurrent_posts_and_deletes_keeps_every_answered_write_whole
fold::sigkill_during_concurrent_posts_deletes_and_folds_keeps_every_answered_write"
LOGS=$(mktemp -d)

cd "$ROOT"
cargo test --release --quiet --test it --no-run
failed=0
for seed in $SEEDS; do
    for t in $TESTS; do
        log="$LOGS/$(basename "${t%%::*}")-$seed.log"
        start=$(date +%s)
        if UKVS_KILL_ROUNDS=$ROUNDS UKVS_KILL_SEED=$seed \
            cargo test --release --quiet --test it -- --exact "$t" --nocapture > "$log" 2>&1; then
            status="ok $(grep -h 'rounds, ' "$log" | tail -1 || true)"
            rm -f "$log"
        else
            status="FAILED (output in $log)"
            failed=$((failed + 1))
        fi
        printf '%-6s seed %-6s %4s rounds %5s s  %s\n' "${t%%::*}" "$seed" "$ROUNDS" \
            "$(($(date +%s) - start))" "$status"
    done
done
[ "$failed" = 0 ] && rmdir "$LOGS"
exit $((failed > 0))
