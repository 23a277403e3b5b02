//! ARC reader: header lines, plain and per-record-gzip files, damage recovery.
//!
//! * [`Header`]: the parsed header line of one record, every form met in the
//!   wild (v1 5 fields, v2 10 fields, revision-3.0 7 fields, and their
//!   quirks); [`HeaderView`] is the borrowed, allocation-free form the
//!   parser produces (module `header`, sans I/O).
//! * [`Record`]: one record with its exact `offset` and `length` in the
//!   stored file and its block (the bytes after the header line).
//! * [`Reader`]: reads records from any `Read` (plain `.arc` and
//!   per-record-gzip `.arc.gz`, told apart record by record from the magic
//!   bytes), resynchronises after damage and reports it as non-fatal
//!   [`Error`]s carrying byte offsets; [`Stats`] counts what was skipped.
//! * [`FileDesc`]: the version block and Heritrix `<arcmetadata>` fields of
//!   a `filedesc://` record.
//! * [`rev3`]: revision-3.0 record addresses (`ari:`) and record roles
//!   (request, metadata, duplicate, transform).
//!
//! ```
//! use ukvs::arc::{Reader, Record};
//! let data = b"filedesc://x.arc 0.0.0.0 20040101000000 text/plain 3\n1 0\n\n\
//!              http://example.com/ 1.2.3.4 20040101000001 text/html 5\nhello\n";
//! let mut rdr = Reader::new(&data[..]);
//! let mut rec = Record::default();
//! let mut offsets = vec![];
//! while rdr.read_record(&mut rec).expect("well-formed") {
//!     offsets.push((rec.offset, rec.length));
//! }
//! assert_eq!(offsets, [(0, 56), (58, 60)]);
//! ```

mod error;
mod filedesc;
mod header;
mod reader;
pub mod rev3;

pub use error::Error;
pub use filedesc::FileDesc;
pub use header::{is_date_like, is_ip_like, parse_length, Form, HeaderView};
pub use reader::{Options, Reader, Stats};

use crate::input::SharedBlock;
pub use crate::input::SharedBytes;

/// Which header-line layout a record used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderKind {
    /// `URL IP date mime length`
    #[default]
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
    /// Which layout the line used.
    pub kind: HeaderKind,
    /// The URL, spaces and control bytes included, as written.
    pub url: Vec<u8>,
    pub ip: Vec<u8>,
    /// The date field as written (repair is the capture layer's job).
    pub date: Vec<u8>,
    /// The mime field as written; may hold spaces or be empty.
    pub mime: Vec<u8>,
    pub result_code: Vec<u8>,
    pub checksum: Vec<u8>,
    pub location: Vec<u8>,
    /// The v2 `offset` field or the rev-3.0 `serial` field, as written
    /// (not the record's offset in the stored file: see [`Record::offset`]).
    pub offset_field: Vec<u8>,
    pub filename: Vec<u8>,
    /// The length field as written.
    pub length_raw: Vec<u8>,
    /// The declared length when it parses as a non-negative number.
    pub length: Option<u64>,
    /// The IP and date fields were written in swapped order.
    pub transposed: bool,
}

/// One ARC record as stored.
///
/// Its block is read with [`Record::block`]. A reader over a shared input
/// ([`Reader::from_shared`]) lends the record a range of that input instead
/// of copying the block; [`Record::block_mut`] makes it the record's own.
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
    /// The block when the record owns it.
    pub(crate) buf: Vec<u8>,
    /// The block when it is a range of a shared input.
    pub(crate) shared: Option<SharedBlock>,
    /// The record was stored as its own gzip member.
    pub compressed: bool,
    /// The file ends inside this record: `block` is incomplete.
    pub truncated: bool,
}

impl Record {
    /// Whether this is a `filedesc:` record (the ARC file's own header).
    pub fn is_filedesc(&self) -> bool {
        self.header.url.starts_with(b"filedesc:")
    }

    /// The record block: the declared-length bytes after the header line
    /// (HTTP head + body for `http:` records), fewer when truncated.
    pub fn block(&self) -> &[u8] {
        match &self.shared {
            Some(s) => s.as_slice(),
            None => &self.buf,
        }
    }

    /// The block as a buffer the record owns, copied out of the shared
    /// input first if it is a range of one.
    pub fn block_mut(&mut self) -> &mut Vec<u8> {
        if let Some(s) = self.shared.take() {
            self.buf.clear();
            self.buf.extend_from_slice(s.as_slice());
        }
        &mut self.buf
    }

    /// Bytes the record's own block buffer can hold without growing.
    pub fn buffer_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Whether the block is a range of a shared input, not a copy.
    pub fn block_is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Makes the block `bytes[start..end]` of a shared input.
    pub(crate) fn share_block(&mut self, bytes: SharedBytes, start: usize, end: usize) {
        self.buf.clear();
        self.shared = Some(SharedBlock { bytes, start, end });
    }

    /// Empties the record, keeping its buffers for reuse (a shared input
    /// is let go).
    pub fn clear(&mut self) {
        self.offset = 0;
        self.length = 0;
        self.header_line.clear();
        self.header.clear();
        self.buf.clear();
        self.shared = None;
        self.compressed = false;
        self.truncated = false;
    }
}

impl crate::reader::Clear for Record {
    fn clear(&mut self) {
        Record::clear(self);
    }
}
