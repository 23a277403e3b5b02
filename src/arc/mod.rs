//! ARC reader: header lines, plain and per-record-gzip files, damage recovery.
//!
//! Interface fixed for the rest of the crate (the reader lives in
//! submodules):
//!
//! * [`Header`]: the parsed header line of one record, every form met in the
//!   wild (v1 5 fields, v2 10 fields, revision-3.0 7 fields).
//! * [`Record`]: one record with its exact `offset` and `length` in the
//!   stored file and its block (the bytes after the header line).

/// Which header-line layout a record used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderKind {
    /// `URL IP date mime length`
    V1,
    /// `URL IP date mime result-code checksum location offset filename length`
    V2,
    /// `URL IP date mime serial checksum length` (ARC revision 3.0 proposal)
    Rev3,
}

/// The parsed header line of one ARC record. Fields are raw bytes as written;
/// absent fields are empty (v1 lines have no checksum, location, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub url: Vec<u8>,
    pub ip: Vec<u8>,
    pub date: Vec<u8>,
    pub mime: Vec<u8>,
    pub result_code: Vec<u8>,
    pub checksum: Vec<u8>,
    pub location: Vec<u8>,
    pub filename: Vec<u8>,
    /// The length field as written.
    pub length_raw: Vec<u8>,
    /// The declared length when it parses as a non-negative number.
    pub length: Option<u64>,
}

/// One ARC record as stored.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// Offset in the stored file: the header line (plain) or the gzip member
    /// that holds the record (`.arc.gz`).
    pub offset: u64,
    /// Length in the stored file: header line + block (plain) or the whole
    /// gzip member (`.arc.gz`), as the reference indexers report it.
    pub length: u64,
    /// The header line, without its line terminator.
    pub header_line: Vec<u8>,
    pub header: Header,
    /// The record block: the declared-length bytes after the header line
    /// (HTTP head + body for `http:` records), fewer when truncated.
    pub block: Vec<u8>,
}
