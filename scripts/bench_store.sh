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
# 3 opens fjall 2's files; RocksDB 11.8 (rust-rocksdb 0.25), the same
# entries: `rocks`, a WriteBatch per commit with its WAL fdatasync'd, as
# OutbackCDX writes (`+dig`: the digest keys in a column family of the
# same batch; `-universal`, `-lz4`), or `rocks-sst`: a table per commit
# (SstFileWriter) ingested. CDX11 lines as pywb's and OpenWayback's
# indexers write them (~200 bytes). Durable ingest (each commit
# fsync'd, as a POST's) with its CPU seconds, a full scan, 10,000 short
# range scans, space.
#
#   scripts/bench_store.sh                  # 100,000 lines, 5,000-line commits
#   N=1000000 BATCH=5000 scripts/bench_store.sh
#   N=1000000 STORES=fjall scripts/bench_store.sh     # the chosen layout only
#   N=1000000 STORES=fjall+dig,fjall3,fjall3-ingest scripts/bench_store.sh
#   N=1000000 STORES=fjall+dig,rocks+dig,fjall+dig,rocks+dig scripts/bench_store.sh
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
# RocksDB against fjall+dig, in the same runs, alternated (load 2-7;
# CPU s as above, of which making the batches takes 1.2 at 1M and 10.8
# at 10M; disk after the memtables' flush, fjall's with its journal):
#   N=1000000                     CPU s        10k scans s   disk/text
#   fjall+dig                   9.8-10.2       0.23-0.30     1.04x
#   fjall+dig MEMTABLE_MB=64   11.6, 10.9      0.30-0.31     1.04x
#   rocks+dig (64 MiB memtables) 6.0-7.2       0.07-0.15     0.67x
#   rocks+dig MEMTABLE_MB=8     8.9,  7.8      0.12-0.13     0.60-0.62x
#   rocks (no digest keys)      4.2,  5.1      0.08          0.33x
#   rocks-lz4+dig               5.9,  5.8      0.06-0.07     0.82x
#   rocks-universal+dig         6.2,  6.7      0.09          0.67x
#   rocks-sst+dig              11.0, 11.0      0.09-0.16     0.57x
#   rocks-sst-universal+dig     8.5,  8.6      0.22          0.67-0.71x
#   N=10000000 (load 3-10)
#   fjall+dig                 138.6-153.7      0.35-0.51     0.88x
#   fjall+dig MEMTABLE_MB=64  155.3            0.88          0.88x
#   rocks+dig                 100.5-107.3      0.18-0.23     0.62x
#   rocks+dig MEMTABLE_MB=8   135.8, 145.0     0.19-0.20     0.61-0.62x
#   rocks+dig BLOCK=16384      91.0            0.43          0.55x
#   rocks-lz4+dig              98.8            0.21          0.81x
#   rocks-universal+dig       101.8            0.29          0.63x
# Wall rates: fjall+dig 90-167k lines/s at 1M, 76-104k at 10M;
# rocks+dig 143-198k, 107-150k (56-68k with 8 MiB memtables). With
# fjall's 8 MiB memtables RocksDB spends 0.75-0.95x fjall's CPU; its
# 64 MiB ones (fjall does worse with them) make the 0.6-0.7x. The
# digest keys are 40-50% of RocksDB's tables (id->line alone: 0.33x
# the text with zstd at the bottom, 0.49x in lz4). rocks-sst piles up
# first-level tables (each batch spans every host) and pays their
# merges. What the RocksDB
# stores sync per commit (strace): `rocks`, the WAL (one fdatasync);
# `rocks-sst`, the table, the MANIFEST twice and the linked table
# (fdatasync), the directory (fsync). A clean build of bench_store
# with rust-rocksdb 0.25 (RocksDB's C++, ~340 files, nearly all of it):
# 24 min on the 2 shared cores at load 4-13, 1,495 CPU s.
# Debian 12's packaged RocksDB 7.8.3 instead (`apt-get install -y clang
# librocksdb-dev`; `rocksdb = "=0.20.1"`, default features off, the
# newest whose C API 7.8.3 has; `Cache::new_lru_cache` then returns a
# Result; built with ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu
# ROCKSDB_INCLUDE_DIR=/usr/include): a clean build in 37 s (71 CPU s),
# no C++ compiled. On a quiet machine (load about 1.5), CPU s with the
# compactions left after ingest (ingest alone):
#   N=1000000   fjall+dig  8.3 (8.3), 8.0 (7.9)   10k scans 0.19-0.20 s  1.04x
#               rocks+dig  7.9 (6.8), 8.1 (6.9)   10k scans 0.07 s       0.67x
#   N=10000000  fjall+dig  109.8 (109.6)          10k scans 0.39 s       0.88x
#               rocks+dig  114.7 (114.5)          10k scans 0.27 s       0.64x
# (its checksums in software: Debian builds it portable).
#
# Needs network or a filled cargo cache the first time (redb is no
# dependency of the crate; rocksdb needs clang and libclang). Env: N,
# BATCH, DIR (default: a temporary directory on the disk of /tmp),
# STORES, COMPACTION, BLOCK, MEMTABLE_MB, L0, WORKERS (see
# scripts/bench_store/src/main.rs), CARGO_TARGET_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
N=${N:-100000}
BATCH=${BATCH:-5000}
DIR=${DIR:-$(mktemp -d)}
if ! command -v clang > /dev/null || ! ls /usr/lib/llvm-*/lib/libclang*.so* > /dev/null 2>&1; then
    echo "bench_store.sh: building rocksdb needs clang and libclang: apt-get install -y clang libclang-dev" >&2
    exit 1
fi
cargo build --release --quiet --manifest-path "$here/bench_store/Cargo.toml"
"${CARGO_TARGET_DIR:-$here/bench_store/target}/release/bench-store" "$DIR" "$N" "$BATCH"
rm -rf "$DIR/redb" "$DIR/fjall" "$DIR/fjall3" "$DIR/rocks"
