//! Errors of the ARC reader.
//!
//! Every variant carries the byte offset in the stored file where the
//! trouble starts; the caller adds the file name. All variants but
//! [`Error::Io`] are non-fatal: the reader has already resynchronised and
//! the next call to [`Reader::read_record`](super::Reader::read_record)
//! goes on with the next good record.

/// An ARC reading error. `Display` gives `offset N: what happened (what was
/// done about it)`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the underlying stream failed. Fatal: the reader stops.
    #[error("offset {offset}: read error: {source}")]
    Io {
        offset: u64,
        #[source]
        source: std::io::Error,
    },
    /// A line that should be a record header is not one (used by
    /// [`Header::parse`](super::Header::parse)).
    #[error("offset {offset}: not an ARC header line: {line:?}")]
    BadHeader { offset: u64, line: String },
    /// Bytes that belong to no record were skipped (junk between records,
    /// a broken header line, an incomplete header at the end of the file).
    #[error(
        "offset {offset}: skipped {length} bytes that are not an ARC record \
         (damaged or foreign data); reading resumed at offset {}",
        offset + length
    )]
    Garbage { offset: u64, length: u64 },
    /// The file ends inside a record's header line (no line end after it):
    /// the record cannot be read. Its bytes were skipped and counted as a
    /// skipped record; the record before it keeps its declared length.
    #[error(
        "offset {offset}: the file ends inside a record header line ({length} bytes \
         with no line end); that record is lost, its bytes were skipped"
    )]
    TruncatedHeader { offset: u64, length: u64 },
    /// The length field is not a number (negative, text, missing).
    #[error(
        "offset {offset}: record length field {declared:?} is not a number; \
         its block was taken up to the next record ({actual} bytes)"
    )]
    InvalidLength {
        offset: u64,
        declared: String,
        actual: u64,
    },
    /// The declared length disagrees with where the record really ends (the
    /// next record header, or the end of its gzip member).
    #[error(
        "offset {offset}: record declares {declared} bytes but {actual} belong \
         to it (the next record or the end of its gzip member says so); block adjusted"
    )]
    LengthMismatch {
        offset: u64,
        declared: u64,
        actual: u64,
    },
    /// The file ends inside the record: the record is returned with
    /// [`Record::truncated`](super::Record::truncated) set.
    #[error("offset {offset}: record truncated: declares {declared} bytes, the file ends after {actual}")]
    Truncated {
        offset: u64,
        declared: u64,
        actual: u64,
    },
    /// The file ends inside a gzip member. What could be decoded is
    /// returned as a truncated record when it starts with a header line.
    #[error(
        "offset {offset}: gzip member truncated: the file ends {length} bytes after its start"
    )]
    TruncatedMember { offset: u64, length: u64 },
    /// A gzip member could not be decoded; its bytes were skipped up to the
    /// next gzip member or record header.
    #[error(
        "offset {offset}: corrupt gzip member ({reason}); skipped {length} bytes \
         to the next member or record"
    )]
    BadGzip {
        offset: u64,
        length: u64,
        reason: String,
    },
    /// A gzip member decodes to something that is not an ARC record.
    #[error("offset {offset}: gzip member of {length} bytes does not hold an ARC record; skipped")]
    NotARecord { offset: u64, length: u64 },
    /// One gzip member holds several records (typically the whole file was
    /// gzipped as one stream). Replay needs one member per record, so no
    /// record of this member can be given a usable offset: none is returned.
    #[error(
        "offset {offset}: gzip member of {length} bytes holds more than one ARC record \
         (file compressed as a single gzip stream?): record offsets cannot be given, \
         its records are not indexed; recompress it one member per record \
         (e.g. `warcio recompress`)"
    )]
    MultiRecordMember { offset: u64, length: u64 },
    /// The file was compressed as one gzip stream (`gzip file.arc`), not
    /// one member per record: its records were read from the decompressed
    /// stream, and their offsets and lengths are positions in it, which no
    /// replay tool can seek to in the compressed file.
    #[error(
        "offset {offset}: the file is compressed as a single gzip stream, not one \
         member per record: its records were read, with offsets and lengths in the \
         decompressed data (serve the decompressed file, or recompress it one record \
         per member)"
    )]
    SingleStream { offset: u64 },
    /// The file was compressed as one gzip stream and its first record is
    /// too large to read the stream again from its start: nothing of it
    /// was indexed.
    #[error(
        "offset {offset}: the file is compressed as a single gzip stream, not one \
         member per record, and its first record is too large to read the stream \
         again: its {length} bytes were not indexed (index the decompressed file, \
         or recompress it one record per member)"
    )]
    SingleStreamUnread { offset: u64, length: u64 },
    /// A record stored without gzip in a file that starts with a gzip
    /// member (non-gzip bytes inside an `.arc.gz`). Its bytes are intact, so it is returned with
    /// its exact plain offset and length; replay tools that expect a gzip
    /// member at every offset of the file may not read it.
    #[error(
        "offset {offset}: record of {length} bytes is not gzip-compressed in a file \
         of gzip members (non-gzip bytes inside a gzip file); indexed at \
         its uncompressed offset, which tools expecting a gzip member there cannot read"
    )]
    UncompressedRecord { offset: u64, length: u64 },
    /// A record's block is larger than the configured limit; it was skipped.
    #[error(
        "offset {offset}: record block of {declared} bytes exceeds the {limit}-byte \
         limit; skipped (raise the limit to index it)"
    )]
    RecordTooLarge {
        offset: u64,
        declared: u64,
        limit: u64,
    },
}

crate::reader::read_errors!(
    Io,
    BadHeader,
    Garbage,
    TruncatedHeader,
    InvalidLength,
    LengthMismatch,
    Truncated,
    TruncatedMember,
    BadGzip,
    NotARecord,
    MultiRecordMember,
    SingleStream,
    SingleStreamUnread,
    UncompressedRecord,
    RecordTooLarge,
);
