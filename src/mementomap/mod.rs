//! MementoMaps: compact summaries of what a web archive holds, so that
//! aggregators can route a lookup only to archives that may have the URL.
//!
//! ```text
//! sorted capture index ──► generate::Aggregator ──► record {key, Frequency}
//!  (UKVS, CDXJ, CDX,            │ one record per map key, exact URI-M and
//!   SURT list)                  │ URI-R counts, optional decompositions
//!                               ▼
//!                   generate::Generator ──► in-order records, held per host
//!                               └──► late records (query keys that sort
//!                                    before their neighbours): folded into
//!                                    their host's lines, or sorted aside
//!                                    and folded in later (merge::fold)
//!                                                             ▼
//!                           compact::Compactor (power-law rollups) ──► Spool
//!                                                             ▼
//!                           header::write_header + spool = the map file
//!
//! map file ──► lookup::Map::lookup (binary search over candidate keys)
//!          ──► merge::Merger (k-way, frequency algebra)
//!          ──► evaluate (cost, precision, recall)
//! ```
//!
//! | module | role |
//! |---|---|
//! | [`freq`] | the `frequency` field and its sum algebra |
//! | [`key`] | capture SURT -> map key; lookup candidates |
//! | [`record`] | one map line; combining lines of one key |
//! | [`generate`] | capture lines -> records, one pass, O(depth) memory |
//! | [`compact`] | the reference's single-pass rollup, loss-free |
//! | [`merge`] | k-way merge of sorted record streams; folds of map lines |
//! | [`lookup`] | binary search of a map in any `AsRef<[u8]>` |
//! | [`header`] | the UKVS header lines of a map |
//! | [`evaluate`] | relative cost and presence-decision quality |
//!
//! Nothing here touches files: inputs are byte slices or iterators of
//! lines, outputs are `Vec<u8>` or a [`compact::Spool`].

pub mod compact;
pub mod evaluate;
pub mod freq;
pub mod generate;
pub mod header;
pub mod key;
pub mod lookup;
pub mod merge;
pub mod record;

pub use compact::{Compactor, Params, Spool, Stats};
pub use freq::{Bound, Count, Frequency};
pub use record::Record;

/// Errors of the MementoMap module.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A map line does not parse.
    #[error("line {line}, byte {offset} of the line: {reason}")]
    Line {
        /// 1-based line number.
        line: u64,
        /// Byte offset in the line.
        offset: u64,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// Keys are not in byte order (sort with `LC_ALL=C sort` or `ukvs sort`).
    #[error("line {line}: key {key:?} sorts before the previous key {previous:?}; sort the input in byte order (LC_ALL=C sort)")]
    Unsorted {
        /// 1-based record number in the stream.
        line: u64,
        /// The previous key.
        previous: String,
        /// The offending key.
        key: String,
    },
    /// A lookup met lines out of order: the map is not sorted.
    #[error("the map is not sorted at byte {offset} ({line:?}); sort it (LC_ALL=C sort) before looking up")]
    UnsortedMap {
        /// Byte offset of the line at fault.
        offset: u64,
        /// The line.
        line: String,
    },
    /// Reading an input or writing the output failed. (The cause is part
    /// of the message, not a `source`, so that a report of the error chain
    /// does not say it twice.)
    #[error("{0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Io(e)
    }
}
