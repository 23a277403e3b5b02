//! Errors of the Kulturarw3 reader and of the tree-path check.
//!
//! Every variant carries the byte offset of the object it concerns (the
//! first byte of its `MIME-version` line) or, for [`Error::Garbage`], of
//! the first skipped byte; the caller adds the file name. None is fatal:
//! the reader has already resynchronised when it hands one out.
//!
//! Two kinds, told apart by [`Error::keeps_object`]: damage to the
//! object's frame (truncation, a missing closing delimiter, an unusable
//! main header, no `Content` part, no URL) loses the object, and its bytes
//! are skipped up to the next object; damage to a field (`HTTP-Content-MD5`,
//! `HTTP-archive-time`, no `Header-Info` part) and a disagreement with the
//! tree path leave the object whole, so it is yielded and the error comes
//! right after it.

use std::fmt;

/// A Kulturarw3 reading error. `Display` gives `offset N: what happened
/// (what was done about it)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bytes that start no object were skipped (foreign data between
    /// objects, or a file that is not Kulturarw3 at all).
    #[error(
        "offset {offset}: skipped {length} bytes that are not a Kulturarw3 object \
         (damaged or foreign data); reading resumed at offset {}",
        offset + length
    )]
    Garbage { offset: u64, length: u64 },
    /// The data ends inside the object, before its closing delimiter
    /// (`--BOUNDARY--`): the object is lost. Copy the file again from its
    /// source if a whole copy exists.
    #[error(
        "offset {offset}: object truncated: the file ends {length} bytes after its start, \
         before the closing delimiter; the object is lost"
    )]
    Truncated { offset: u64, length: u64 },
    /// Another object starts before this one's closing delimiter (two
    /// concatenated objects with the first one cut short or its last line
    /// lost): this object is lost, reading goes on with the next one.
    #[error(
        "offset {offset}: no closing delimiter before the next object at offset {}; \
         the {length} bytes of this object were skipped",
        offset + length
    )]
    MissingCloseDelimiter { offset: u64, length: u64 },
    /// The main header cannot frame an object (no multipart boundary, or
    /// no empty line ending it within 64 KiB): the object is lost and its
    /// bytes were skipped up to the next object.
    #[error("offset {offset}: unusable main header ({reason}); skipped {length} bytes")]
    BadHeader {
        offset: u64,
        length: u64,
        reason: &'static str,
    },
    /// A field without which the object cannot be indexed is absent or
    /// empty (`HTTP-URL`): the object was skipped.
    #[error("offset {offset}: the object has no {field} field; skipped")]
    MissingField { offset: u64, field: &'static str },
    /// A part is absent. Without `Content` the object is skipped; without
    /// `Header-Info` it is kept, with no status and the media type of the
    /// `Content` part.
    #[error("offset {offset}: the object has no {part} part{}", if *part == Part::Content { "; skipped" } else { "; kept without it" })]
    MissingPart { offset: u64, part: Part },
    /// `HTTP-archive-time` is absent or not a number of seconds since 1970
    /// that a 14-digit date can hold: the object is kept without a
    /// datetime (the tree path's EPOCH may stand in for it).
    #[error(
        "offset {offset}: HTTP-archive-time {value:?} is absent or not seconds since \
         1970-01-01 (0 to 253402300799); the object is kept without a datetime"
    )]
    BadArchiveTime { offset: u64, value: String },
    /// `HTTP-Content-MD5` is neither 32 hex digits nor the 24-character
    /// base64 form of 16 bytes: nothing to check the content against.
    #[error(
        "offset {offset}: HTTP-Content-MD5 {value:?} is not an MD5 (32 hex digits or \
         24 base64 characters); the content was not checked, the object is kept"
    )]
    BadContentMd5 { offset: u64, value: String },
    /// The MD5 of the `Content` part is not the one `HTTP-Content-MD5`
    /// declares: the content or the field was altered after archiving.
    /// The object is kept as stored.
    #[error(
        "offset {offset}: content MD5 is {computed} but HTTP-Content-MD5 says {declared}; \
         the object is kept as stored"
    )]
    Md5Mismatch {
        offset: u64,
        declared: String,
        computed: String,
    },
    /// A component of the tree path `archive/XX/HOST/SNAPSHOT/MD5URL.EPOCH`
    /// disagrees with the object stored there (see
    /// [`check_path`](super::check_path)); the object is kept. A file moved
    /// or renamed by hand, or a crawler that named things differently.
    #[error(
        "offset {offset}: tree path {field} is {in_path:?} but the object gives {expected:?}; \
         the object is kept"
    )]
    PathMismatch {
        offset: u64,
        field: PathField,
        in_path: String,
        expected: String,
    },
}

impl Error {
    /// Byte offset in the file where the problem starts.
    pub fn offset(&self) -> u64 {
        match *self {
            Error::Garbage { offset, .. }
            | Error::Truncated { offset, .. }
            | Error::MissingCloseDelimiter { offset, .. }
            | Error::BadHeader { offset, .. }
            | Error::MissingField { offset, .. }
            | Error::MissingPart { offset, .. }
            | Error::BadArchiveTime { offset, .. }
            | Error::BadContentMd5 { offset, .. }
            | Error::Md5Mismatch { offset, .. }
            | Error::PathMismatch { offset, .. } => offset,
        }
    }

    /// Whether the object this error concerns was yielded all the same
    /// (the error follows it); `false` when its bytes were skipped.
    pub fn keeps_object(&self) -> bool {
        match self {
            Error::MissingPart { part, .. } => *part != Part::Content,
            Error::BadArchiveTime { .. }
            | Error::BadContentMd5 { .. }
            | Error::Md5Mismatch { .. }
            | Error::PathMismatch { .. } => true,
            Error::Garbage { .. }
            | Error::Truncated { .. }
            | Error::MissingCloseDelimiter { .. }
            | Error::BadHeader { .. }
            | Error::MissingField { .. } => false,
        }
    }
}

/// The parts of an object the reader looks for, by their `HTTP-part`
/// name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Part {
    ArchiveInfo,
    HeaderInfo,
    Content,
}

impl Part {
    /// The `HTTP-part` value naming the part.
    pub fn name(self) -> &'static str {
        match self {
            Part::ArchiveInfo => "Archive-Info",
            Part::HeaderInfo => "Header-Info",
            Part::Content => "Content",
        }
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The components of `archive/XX/HOST/SNAPSHOT/MD5URL.EPOCH` that
/// [`check_path`](super::check_path) compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PathField {
    /// `XX`: the first two hex digits of the MD5 of `HOST`.
    Xx,
    /// `HOST`: the host of `HTTP-URL`.
    Host,
    /// `MD5URL`: the MD5 of `HTTP-URL`.
    Md5Url,
    /// `EPOCH`: `HTTP-archive-time`.
    Epoch,
}

impl fmt::Display for PathField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathField::Xx => "XX (MD5 of the host directory)",
            PathField::Host => "HOST",
            PathField::Md5Url => "MD5URL",
            PathField::Epoch => "EPOCH",
        })
    }
}
