//! WARC reader: WARC/1.0 and 1.1 records, plain, per-record gzip and
//! per-record zstd files, damage recovery.
//!
//! * [`Record`]: one record with its exact `offset` and `length` in the
//!   stored file, its parsed header ([`Head`]) and its block (the
//!   `Content-Length` bytes after the header).
//! * [`Reader`]: reads records from any `Read` (`.warc`, `.warc.gz` one
//!   gzip member per record, `.warc.zst` one zstd frame per record, with
//!   or without the dictionary frame of the IIPC profile), told apart
//!   record by record from the magic bytes. It resynchronises after damage
//!   and reports it as non-fatal [`Error`]s carrying byte offsets; a file
//!   compressed as one stream is read and reported. [`Stats`] counts what
//!   was skipped.
//! * [`RecordType`]: the eight `WARC-Type`s of ISO 28500.
//! * [`warc_fields`]: the `Name: value` lines of a warcinfo or metadata
//!   block.
//!
//! ```
//! use ukvs::warc::{Reader, Record, RecordType};
//! let data = b"WARC/1.0\r\nWARC-Type: resource\r\nWARC-Target-URI: http://example.com/\r\n\
//!              WARC-Date: 2020-01-02T03:04:05Z\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n";
//! let mut rdr = Reader::new(&data[..]);
//! let mut rec = Record::default();
//! assert!(rdr.read_record(&mut rec).expect("well-formed"));
//! assert_eq!(rec.record_type(), RecordType::Resource);
//! assert_eq!((rec.offset, rec.length, rec.block()), (0, 128, &b"hello"[..]));
//! assert!(!rdr.read_record(&mut rec).unwrap());
//! ```

mod error;
mod header;
mod reader;

pub use error::Error;
pub use header::{warc_fields, Head};
pub(crate) use reader::{is_skippable_start, is_zstd_start};
pub use reader::{Options, Reader, Stats};

use crate::input::SharedBlock;
pub use crate::input::SharedBytes;

/// Whether a file starting with `first` (a few KiB are enough) is WARC:
/// its first record, past any leading whitespace, is a WARC version line,
/// plain or in a gzip member or zstd frame; a zstd skippable frame (the
/// dictionary of the IIPC profile) counts too. Anything else is left to
/// the ARC reader.
pub fn is_warc(first: &[u8]) -> bool {
    use std::io::Read;
    let start = first.iter().position(|&b| !crate::input::is_ws(b));
    let a = &first[start.unwrap_or(first.len())..];
    let mut head = [0u8; 5];
    let n = if crate::input::is_gzip_start(a) {
        // Empty members may come first.
        let mut rest = a;
        let mut n = 0;
        for _ in 0..16 {
            let mut dec = flate2::bufread::GzDecoder::new(rest);
            while n < head.len() {
                match dec.read(&mut head[n..]) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => n += k,
                }
            }
            rest = dec.into_inner();
            if n > 0 || !crate::input::is_gzip_start(rest) {
                break;
            }
        }
        n
    } else if reader::is_zstd_start(a) || reader::is_skippable_start(a) {
        return true;
    } else {
        let n = a.len().min(5);
        head[..n].copy_from_slice(&a[..n]);
        n
    };
    n == 5 && head.eq_ignore_ascii_case(b"WARC/")
}

/// How a record is stored in its file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Plain bytes.
    #[default]
    None,
    /// Its own gzip member.
    Gzip,
    /// Its own zstd frame.
    Zstd,
}

/// `WARC-Type`, ISO 28500 section 6.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecordType {
    Warcinfo,
    Response,
    Resource,
    Request,
    Metadata,
    Revisit,
    Conversion,
    Continuation,
    /// Any other value, or none.
    Other,
}

impl RecordType {
    /// The type named by a `WARC-Type` value (case ignored, as warcio does).
    pub fn from_name(name: &[u8]) -> RecordType {
        const NAMES: [(&[u8], RecordType); 8] = [
            (b"response", RecordType::Response),
            (b"request", RecordType::Request),
            (b"revisit", RecordType::Revisit),
            (b"metadata", RecordType::Metadata),
            (b"resource", RecordType::Resource),
            (b"warcinfo", RecordType::Warcinfo),
            (b"conversion", RecordType::Conversion),
            (b"continuation", RecordType::Continuation),
        ];
        NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map_or(RecordType::Other, |&(_, t)| t)
    }

    /// The lower-case `WARC-Type` name (`other` for unknown types).
    pub fn name(self) -> &'static str {
        match self {
            RecordType::Warcinfo => "warcinfo",
            RecordType::Response => "response",
            RecordType::Resource => "resource",
            RecordType::Request => "request",
            RecordType::Metadata => "metadata",
            RecordType::Revisit => "revisit",
            RecordType::Conversion => "conversion",
            RecordType::Continuation => "continuation",
            RecordType::Other => "other",
        }
    }
}

/// One WARC record as stored.
///
/// A reader over a shared input ([`Reader::from_shared`]) lends a plain
/// record's block as a range of that input instead of copying it.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// Offset in the stored file: the version line (plain), or the gzip
    /// member or zstd frame that holds the record.
    pub offset: u64,
    /// Length in the stored file: header and block without the two CRLFs
    /// that end a plain record (as warcio and cdxj-indexer report it), or
    /// the whole gzip member or zstd frame.
    pub length: u64,
    /// How the record was stored.
    pub compression: Compression,
    /// The file ends inside this record: the block is incomplete.
    pub truncated: bool,
    /// Bytes of empty gzip members right before the record's member,
    /// which cdxj-indexer (warcio) counts as part of the record.
    pub empty_lead: u64,
    /// The header block.
    pub head: Head,
    /// The block when the record owns it: `buf[buf_start..]`.
    pub(crate) buf: Vec<u8>,
    pub(crate) buf_start: usize,
    /// The block when it is a range of a shared input.
    pub(crate) shared: Option<SharedBlock>,
}

impl Record {
    /// The record's `WARC-Type`.
    pub fn record_type(&self) -> RecordType {
        self.head
            .get("WARC-Type")
            .map_or(RecordType::Other, RecordType::from_name)
    }

    /// The value of the header field `name` (case ignored; the first when
    /// repeated).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.head.get(name)
    }

    /// The block: the `Content-Length` bytes after the header (fewer when
    /// truncated, as many as really belong to the record when the length
    /// was wrong).
    pub fn block(&self) -> &[u8] {
        match &self.shared {
            Some(s) => s.as_slice(),
            None => self.buf.get(self.buf_start..).unwrap_or_default(),
        }
    }

    /// Bytes the record's own block buffer can hold without growing.
    pub fn buffer_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Whether the block is a range of a shared input, not a copy.
    pub fn block_is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Empties the record, keeping its buffers for reuse (a shared input
    /// is let go).
    pub fn clear(&mut self) {
        self.offset = 0;
        self.length = 0;
        self.compression = Compression::None;
        self.truncated = false;
        self.empty_lead = 0;
        self.head.clear();
        self.buf.clear();
        self.buf_start = 0;
        self.shared = None;
    }
}

impl crate::reader::Clear for Record {
    fn clear(&mut self) {
        Record::clear(self);
    }
}
