//! Sorted line files: line helpers, binary search, k-way merge, external
//! sort, ZipNum clusters.
//!
//! Every file here is a sequence of LF-terminated lines in plain byte order
//! (`LC_ALL=C sort`), with header lines (`!...`, or a CDX ` CDX ...`
//! legend) on top. Capture index lines of every profile start with
//! `key datetime`, which is all a lookup needs to know about them.
//!
//! | type | role |
//! |---|---|
//! | [`lines`] | resync to a line start, split lines and fields |
//! | [`Search`] | binary search over any `AsRef<[u8]>` (a map or a `Vec`) |
//! | [`KeyRange`], [`MatchType`], [`TimeFilter`] | pywb's query semantics |
//! | [`Merge`] | k-way merge of sorted readers, checking their order |
//! | [`Run`], [`ExternalSorter`] | bounded-memory sort through run files |
//! | [`zipnum`] | gzip blocks + secondary index, pywb's ZipNum layout |
//!
//! Nothing here opens a path or starts a thread, except that the external
//! sorter spills runs to anonymous temporary files: the command line maps
//! files and fans work out.

pub mod lines;
mod merge;
mod query;
mod search;
mod sort;
pub mod zipnum;

pub use merge::Merge;
pub use query::{
    civil_from_secs, datetime_to_secs, days_from_civil, ordered, prefix_key_for_url, url_shortcut,
    KeyRange, MatchType, Order, TimeFilter, Upper,
};
pub use search::{Disorder, OrderReport, PywbRange, Range, RangeRev, Search};
pub use sort::{merge_runs, reduce_runs, spill, ExternalSorter, Run, Span, MAX_FAN_IN, SPAN_BYTES};

/// Why a sorted-file operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input of a merge is not sorted.
    #[error(
        "{name}: line {line} is out of order: {got:?} sorts before the line above it \
         {previous:?}; sort the input first (`ukvs sort`)"
    )]
    OutOfOrder {
        /// The input (file name) at fault.
        name: String,
        /// 1-based line number of the offending line.
        line: u64,
        /// The line before it.
        previous: String,
        /// The offending line.
        got: String,
    },
    /// A binary search met a line that contradicts the file's order.
    #[error(
        "index not sorted near byte {offset} (line {line:?}): a binary search cannot \
         trust it; sort it (`ukvs sort`, or `LC_ALL=C sort`: a locale's order is not byte \
         order)"
    )]
    Unsorted {
        /// Byte offset of the line at fault.
        offset: u64,
        /// The line.
        line: String,
    },
    /// Reading an input failed. (The cause is part of the message, not a
    /// `source`, so that a report of the error chain says it once.)
    #[error("{}: {err}", lines::cannot_read(name, *line, *at))]
    Io {
        /// The input.
        name: String,
        /// Lines read before the failure.
        line: u64,
        /// Bytes of lines read before the failure.
        at: u64,
        /// The cause.
        err: std::io::Error,
    },
    /// Writing the output failed (the cause, its `source`, says which and
    /// why).
    #[error("writing {name}")]
    Write {
        /// The output.
        name: String,
        /// The cause.
        #[source]
        err: std::io::Error,
    },
    /// A line of a ZipNum secondary index cannot be read.
    #[error(
        "ZipNum index line {line}: {reason} (expected \
         `key datetime<TAB>shard<TAB>offset<TAB>length<TAB>block-no`)"
    )]
    BadIndexLine {
        /// 1-based line number in the `.idx` file.
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// A ZipNum block cannot be fetched (a shard missing, a remote
    /// store refusing or failing).
    #[error("ZipNum shard {shard}: block at byte {offset} cannot be read: {err}")]
    UnreadableBlock {
        /// Shard name from the secondary index.
        shard: String,
        /// Byte offset of the block in the shard.
        offset: u64,
        /// The cause (for a remote shard, naming the URL and status).
        #[source]
        err: std::io::Error,
    },
    /// A ZipNum block cannot be decompressed.
    #[error("ZipNum shard {shard}: block at byte {offset} is damaged: {err}; rebuild the cluster")]
    BadBlock {
        /// Shard name from the secondary index.
        shard: String,
        /// Byte offset of the block in the shard.
        offset: u64,
        /// The cause.
        #[source]
        err: std::io::Error,
    },
}
