#!/usr/bin/env bash
# The embedded stores a live collection's delta could use (ARCHITECTURE.md
# src/serve, "Live collections"), side by side in one run: redb, which
# `src/engine/live.rs` uses, and fjall. Durable ingest (each commit
# fsync'd, as a POST's), a full scan, 10,000 short range scans, space.
#
#   scripts/bench_store.sh                  # 100,000 lines, 5,000-line commits
#   N=1000000 BATCH=5000 scripts/bench_store.sh
#
# Needs network or a filled cargo cache the first time (fjall is no
# dependency of the crate). Env: N, BATCH, DIR (default: a temporary
# directory on the disk of /tmp).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
N=${N:-100000}
BATCH=${BATCH:-5000}
DIR=${DIR:-$(mktemp -d)}
cargo build --release --quiet --manifest-path "$here/bench_store/Cargo.toml"
"$here/bench_store/target/release/bench-store" "$DIR" "$N" "$BATCH"
rm -rf "$DIR/redb" "$DIR/fjall"
