//! Errors of the `.meta` and `accessK.data` parsers.
//!
//! Every variant carries the byte offset, in the file being parsed, of the
//! line where the trouble is; the caller adds the file name. An error means
//! the object's (or the access entry's) fields cannot be trusted, so the
//! caller reports it and goes on with the next object; nothing here is
//! fatal to a harvest.

/// A `.meta` or access-list parsing error. `Display` gives `offset N: what
/// is wrong (how to fix it)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A harvester field has no URL or Harvest-Time line, which every
    /// object needs to be indexed.
    #[error(
        "offset {offset}: the harvester fields have no {name} line; \
         an object cannot be indexed without it"
    )]
    MissingField { offset: u64, name: &'static str },
    /// A field that must have a value has an empty one.
    #[error("offset {offset}: the {name} field is empty")]
    EmptyField { offset: u64, name: &'static str },
    /// A known harvester field appears twice: which one holds is unknown.
    #[error(
        "offset {offset}: the {name} field appears a second time; \
         keep one {name} line per object"
    )]
    RepeatedField { offset: u64, name: &'static str },
    /// A line among the harvester fields is not `Name: value`.
    #[error(
        "offset {offset}: not a `Name: value` harvester field line: {line:?} \
         (the fields end with one empty line before the HTTP head)"
    )]
    BadFieldLine { offset: u64, line: String },
    /// `Harvest-Time` is not 14 digits (`YYYYMMDDhhmmss`, UTC).
    #[error("offset {offset}: Harvest-Time {value:?} is not 14 digits YYYYMMDDhhmmss (UTC)")]
    BadHarvestTime { offset: u64, value: String },
    /// `Content-Length` is not a decimal number of bytes.
    #[error("offset {offset}: Content-Length {value:?} is not a decimal number of bytes")]
    BadContentLength { offset: u64, value: String },
    /// `MD5` is not 32 hexadecimal digits.
    #[error("offset {offset}: MD5 {value:?} is not 32 hexadecimal digits")]
    BadMd5 { offset: u64, value: String },
    /// The harvester fields are not followed by an empty line: the file
    /// ends first, or the HTTP status line follows the last field directly.
    #[error(
        "offset {offset}: no empty line after the harvester fields \
         (the file is cut, or the HTTP head follows without one)"
    )]
    MissingEmptyLine { offset: u64 },
    /// The HTTP head does not start with `HTTP/x.y NNN`.
    #[error(
        "offset {offset}: the HTTP head does not start with a status line \
         `HTTP/x.y NNN reason`: {line:?}"
    )]
    BadStatusLine { offset: u64, line: String },
    /// The HTTP head has no closing empty line: the `.meta` file was cut.
    #[error(
        "offset {offset}: the HTTP head has no closing empty line \
         (the .meta file is cut short)"
    )]
    UnterminatedHead { offset: u64 },
    /// Bytes other than blanks follow the HTTP head's closing empty line;
    /// a `.meta` file holds no body (that is the data file).
    #[error(
        "offset {offset}: {length} bytes follow the HTTP head's closing empty line; \
         a .meta file ends with the head (the body belongs in the data file)"
    )]
    TrailingBytes { offset: u64, length: u64 },
    /// An access-list entry does not start with `Path:`.
    #[error(
        "offset {offset}: an access-list entry starts with {line:?}, not with \
         `Path: DAY/N/MD5URL`; skipped to the next empty line"
    )]
    MissingPath { offset: u64, line: String },
    /// An access-list `Path:` value is not `YYYY-MM-DD/N/MD5URL`.
    #[error(
        "offset {offset}: access-list path {path:?} is not YYYY-MM-DD/N/ and the \
         32 hex digits of an MD5; entry skipped"
    )]
    BadPath { offset: u64, path: String },
}

impl Error {
    /// Byte offset, in the parsed file, of the line in question.
    pub fn offset(&self) -> u64 {
        match *self {
            Error::MissingField { offset, .. }
            | Error::EmptyField { offset, .. }
            | Error::RepeatedField { offset, .. }
            | Error::BadFieldLine { offset, .. }
            | Error::BadHarvestTime { offset, .. }
            | Error::BadContentLength { offset, .. }
            | Error::BadMd5 { offset, .. }
            | Error::MissingEmptyLine { offset }
            | Error::BadStatusLine { offset, .. }
            | Error::UnterminatedHead { offset }
            | Error::TrailingBytes { offset, .. }
            | Error::MissingPath { offset, .. }
            | Error::BadPath { offset, .. } => offset,
        }
    }
}

/// `bytes` as text for a message: Latin-1 where not UTF-8, and cut after
/// 100 characters, since the offending line may be a whole binary file.
pub(crate) fn shown(bytes: &[u8]) -> String {
    const MAX: usize = 100;
    let text = match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    };
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text,
    }
}
