//! Errors of the WARC reader.
//!
//! Every variant carries the byte offset in the stored file where the
//! trouble starts; the caller adds the file name. All variants but
//! [`Error::Io`] are non-fatal: the reader has already resynchronised and
//! the next call to [`Reader::read_record`](super::Reader::read_record)
//! goes on with the next good record.

/// A WARC reading error. `Display` gives `offset N: what happened (what was
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
    /// Bytes that belong to no record were skipped.
    #[error(
        "offset {offset}: skipped {length} bytes that are not a WARC record \
         (damaged or foreign data); reading resumed at offset {}",
        offset + length
    )]
    Garbage { offset: u64, length: u64 },
    /// A record's header block goes on past the limit (1 MiB): the record
    /// is skipped.
    #[error(
        "offset {offset}: the WARC header is longer than {limit} bytes (the limit); \
         that record is lost"
    )]
    HeaderTooLong { offset: u64, limit: u64 },
    /// The file ends inside a record's header block.
    #[error(
        "offset {offset}: the file ends inside a WARC header ({length} bytes); \
         that record is lost"
    )]
    TruncatedHeader { offset: u64, length: u64 },
    /// The header has no usable `Content-Length`: the block was taken up to
    /// the next record.
    #[error(
        "offset {offset}: Content-Length {declared:?} is missing or not a number; \
         the block was taken up to the next record ({actual} bytes)"
    )]
    InvalidLength {
        offset: u64,
        declared: String,
        actual: u64,
    },
    /// `Content-Length` disagrees with where the record really ends (the
    /// next record, or the end of its gzip member or zstd frame).
    #[error(
        "offset {offset}: Content-Length says {declared} bytes but {actual} belong \
         to the record (the next record or the end of its compressed member says so); \
         block adjusted"
    )]
    LengthMismatch {
        offset: u64,
        declared: u64,
        actual: u64,
    },
    /// The file ends inside the record's block: the record is returned
    /// with [`Record::truncated`](super::Record::truncated) set.
    #[error(
        "offset {offset}: record truncated: Content-Length {declared}, the file ends \
         after {actual} bytes of the block"
    )]
    Truncated {
        offset: u64,
        declared: u64,
        actual: u64,
    },
    /// The file ends inside a gzip member or zstd frame.
    #[error("offset {offset}: {what} truncated: the file ends {length} bytes after its start")]
    TruncatedMember {
        offset: u64,
        length: u64,
        what: &'static str,
    },
    /// A gzip member or zstd frame could not be decoded; its bytes were
    /// skipped up to the next record.
    #[error(
        "offset {offset}: corrupt {what} ({reason}); skipped {length} bytes to the next record"
    )]
    BadMember {
        offset: u64,
        length: u64,
        what: &'static str,
        reason: String,
    },
    /// A gzip member or zstd frame decoded to its end, but its check value
    /// (CRC-32, or zstd's content checksum) does not match: the record is
    /// returned, and its bytes may be damaged.
    #[error(
        "offset {offset}: {what} of {length} bytes fails its checksum: the record is \
         indexed, but its bytes may be damaged"
    )]
    BadChecksum {
        offset: u64,
        length: u64,
        what: &'static str,
    },
    /// A gzip member or zstd frame decodes to something that is not a WARC
    /// record.
    #[error("offset {offset}: {what} of {length} bytes does not hold a WARC record; skipped")]
    NotARecord {
        offset: u64,
        length: u64,
        what: &'static str,
    },
    /// One gzip member or zstd frame holds several records: none of them
    /// can be given a replayable offset, so none is returned.
    #[error(
        "offset {offset}: {what} of {length} bytes holds more than one WARC record: \
         record offsets cannot be given, its records are not indexed; recompress \
         the file one {what} per record (e.g. `warcio recompress`)"
    )]
    MultiRecordMember {
        offset: u64,
        length: u64,
        what: &'static str,
    },
    /// The file was compressed as one stream (`gzip file.warc`): its
    /// records were read from the decompressed stream, and their offsets
    /// and lengths are positions in it, which no replay tool can seek to in
    /// the compressed file.
    #[error(
        "offset {offset}: the file is compressed as a single {what} stream, not one \
         member or frame per record: its records were read, with offsets and lengths \
         in the decompressed data (serve the decompressed file, or recompress it one \
         record per member or frame, e.g. `warcio recompress`)"
    )]
    SingleStream { offset: u64, what: &'static str },
    /// The file was compressed as one stream and its first record is too
    /// large to read it again from the start: nothing of it was indexed.
    #[error(
        "offset {offset}: the file is compressed as a single {what} stream, not one \
         member or frame per record, and its first record is too large to read the \
         stream again: its {length} bytes were not indexed (index the decompressed \
         file, or recompress it one record per member or frame)"
    )]
    SingleStreamUnread {
        offset: u64,
        length: u64,
        what: &'static str,
    },
    /// A record stored without compression in a file of gzip members or
    /// zstd frames. Its bytes are intact, so it is returned with its exact
    /// plain offset and length.
    #[error(
        "offset {offset}: record of {length} bytes is not compressed in a file of \
         compressed records; indexed at its uncompressed offset, which tools \
         expecting a compressed record there cannot read"
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
    /// The zstd dictionary frame at the start of the file cannot be used.
    #[error("offset {offset}: unusable zstd dictionary ({reason}); frames that need it will fail")]
    BadDictionary { offset: u64, reason: String },
}

crate::reader::read_errors!(
    Io,
    Garbage,
    TruncatedHeader,
    HeaderTooLong,
    InvalidLength,
    LengthMismatch,
    Truncated,
    TruncatedMember,
    BadMember,
    BadChecksum,
    NotARecord,
    MultiRecordMember,
    SingleStream,
    SingleStreamUnread,
    UncompressedRecord,
    RecordTooLarge,
    BadDictionary,
);
