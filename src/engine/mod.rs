//! The engine: whole jobs over files, for every front end.
//!
//! The format and algorithm modules above it ([`crate::sorted`],
//! [`crate::mementomap`], ...) take bytes and readers; this layer owns what
//! they leave out: opening and mapping files, writing outputs atomically,
//! thread pools, and answering queries over a set of index sources. The
//! command line (`src/cli/`) and the HTTP server (`src/serve/`) only turn
//! their inputs into calls here and print what comes back.
//!
//! | module | role |
//! |---|---|
//! | [`fs`] | the one place that maps files, and gives mapped pages back; inputs opened as streams (plain, gzip, zstd, stdin), told from archives, and read line by line |
//! | [`sigbus`] | a mapped input cut short by another process: reported by name |
//! | [`index`] | indexing jobs: archives -> one sorted capture index, on a thread pool |
//! | [`output`] | output files that appear whole or not at all |
//! | [`batch`] | batches of queries answered on every core, in input order, in bounded memory |
//! | [`format`] | how found lines are printed: as they are, CDXJ, JSON, TimeMaps |
//! | [`sort`] | external sort and k-way merge of index files; header rules |
//! | [`zipnum`] | ZipNum clusters built whole, beside their directory |
//! | [`validate`] | checking UKVS files, mapped or streamed |
//! | [`cat`] | UKVS, CDXJ and CDX files printed as normalised UKVS or NDJSON |
//! | [`cluster`] | a ZipNum cluster's idx and shards, local or remote, in our, pywb's (`.loc`, several locations per shard) or Common Crawl's layout (`cluster.idx`, no `.loc`); its blocks read through the block cache, a scan's next remote blocks in flight |
//! | [`blocks`] | the process's cache of ZipNum blocks (packed) and lookups' pieces of them (inflated), shared by every thread, one read per block however many threads want it, with hit and miss counts |
//! | [`packed`] | a ZipNum block as the cache holds it: zstd-packed in chunks of 32 KiB cut at line ends, each chunk's first line kept for bisection |
//! | [`error`] | what kind of failure an engine error is ([`error::Kind`]: bad input, damage, missing, remote, I/O), for the front ends to map to statuses and exit codes |
//! | [`remote`] | objects on HTTP servers and in S3 read by byte range (`object_store`, on a small runtime of its own): retries with backoff, errors naming URL and status |
//! | [`searches`] | the fixed threads a server's searches run on, handed over without a lock (tokio's blocking pool the fallback when all are busy) |
//! | [`lookup`] | index sources (files, directories, ZipNum clusters) and queries over them |
//! | [`digests`] | digest files: captures keyed by payload digest, made from an index or as it is written; lookups by digest and of revisits' originals |
//! | [`merged`] | a collection read as one: bases + delta - tombstones, for the server and the offline tools |
//! | [`live`] | the delta of a live collection: added lines and tombstones in generations of an embedded crash-safe store (fjall) |
//! | [`fold`] | a live collection's bases and delta folded into a new base, swapped in atomically |
//! | [`maps`] | MementoMap lookups over a mapped map |
//! | [`mementomap`] | MementoMap jobs: generate, compact, merge, look up, evaluate |
//! | [`package`] | WACZ packages read: their entries checked against `datapackage.json`, a WARC entry found and copied by range |
//! | [`wacz`] | WACZ packages made (`ukvs wacz create`) from WARCs the index job indexes |

/// Writes a line to stderr as `eprintln!` does, but goes on when stderr
/// is gone (a closed pipe, as in `ukvs ... 2>&1 | head`), where
/// `eprintln!` panics: a message no one reads must not stop a job before
/// it writes its output.
#[macro_export]
macro_rules! report {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod batch;
pub mod blocks;
pub mod cat;
pub mod cluster;
pub mod digests;
pub mod error;
pub mod fold;
pub mod format;
pub mod fs;
pub mod index;
pub mod live;
pub mod lookup;
pub mod maps;
pub mod mementomap;
pub mod merged;
pub mod output;
pub mod package;
pub mod packed;
pub mod parts;
pub mod progress;
pub mod remote;
pub mod searches;
pub mod seeds;
pub mod sigbus;
pub mod sort;
pub mod stats;
pub mod table;
pub mod validate;
pub mod wacz;
pub mod zipnum;

/// Threads for `-j N` (0 = every core).
pub fn thread_count(j: usize) -> usize {
    if j > 0 {
        j
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}
