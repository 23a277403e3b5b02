#!/usr/bin/env bash
# The embedded stores a live collection's delta could use (ARCHITECTURE.md
# src/serve, "Live collections"), side by side in one run: redb (the
# first layout: a lines table and an ids table), the same two tables in
# fjall, and what `src/engine/live.rs` keeps: fjall, one entry per
# capture (id -> the line less its key and datetime), lz4, leveled
# compaction; and that without compression; that with the digest
# partition live.rs writes in the same batch (`fjall+dig`); the same
# in fjall 3.1 (`fjall3`), written through fjall 3's ingestion
# (`fjall3-ingest`, `fjall3-ingest1`), and with other fjall 3 options
# (`fjall3-l01plain`, `fjall3-16k`, `fjall3-kv`); `compat`: whether fjall
# 3 opens fjall 2's files. CDX11 lines as pywb's and OpenWayback's
# indexers write them (~200 bytes). Durable ingest (each commit
# fsync'd, as a POST's) with its CPU seconds, a full scan, 10,000 short
# range scans, space.
#
#   scripts/bench_store.sh                  # 100,000 lines, 5,000-line commits
#   N=1000000 BATCH=5000 scripts/bench_store.sh
#   N=1000000 STORES=fjall scripts/bench_store.sh     # the chosen layout only
#   N=1000000 STORES=fjall+dig,fjall3,fjall3-ingest scripts/bench_store.sh
#
# N=1000000 BATCH=5000 on 2 shared cores (load 2-3), CPU seconds of
# ingest plus the compactions left after it (two runs each):
#   fjall+dig (today's live.rs)         12.1, 12.6   10k scans 0.25-0.29 s
#   fjall+dig COMPACTION=leveled:16      9.0, 10.1   10k scans 0.52-0.70 s
#   fjall3                              15.8, 18.8
#   fjall3 WORKERS=1                    11.7, 11.9
#   fjall3-ingest WORKERS=1 L0=16        8.6,  6.9   10k scans 0.86-1.10 s
#   fjall3-ingest1 WORKERS=1 L0=16       6.7,  6.0     before compactions
# Tables 0.82x the text in every fjall layout (+ the journal: 34 MB in
# fjall 2, 67 MB in fjall 3). fjall 3 refuses fjall 2's files.
#
# Needs network or a filled cargo cache the first time (redb is no
# dependency of the crate). Env: N, BATCH, DIR (default: a temporary
# directory on the disk of /tmp), STORES, COMPACTION, BLOCK, MEMTABLE_MB,
# L0, WORKERS (see scripts/bench_store/src/main.rs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
N=${N:-100000}
BATCH=${BATCH:-5000}
DIR=${DIR:-$(mktemp -d)}
cargo build --release --quiet --manifest-path "$here/bench_store/Cargo.toml"
"${CARGO_TARGET_DIR:-$here/bench_store/target}/release/bench-store" "$DIR" "$N" "$BATCH"
rm -rf "$DIR/redb" "$DIR/fjall" "$DIR/fjall3" "$DIR/rocks"
