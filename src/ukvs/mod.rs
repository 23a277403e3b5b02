//! The UKVS line model: headers, fields, quoted values, OSLJ; writer and
//! validation.
//!
//! A UKVS file is a run of header lines (`!name value`) followed by data
//! lines (key fields, value fields, an optional single-line JSON object,
//! the "OSLJ"). Everything here works on bytes: a line is a `&[u8]` without
//! its terminator and every view borrows from it, so a reader can walk a
//! memory map or a reused buffer without allocating per line.
//!
//! | type | role |
//! |---|---|
//! | [`Line`], [`Header`], [`Record`] | one classified line, borrowed |
//! | [`Tokens`], [`Token`], [`Field`] | the fields and OSLJ of a data line |
//! | [`Schema`], [`Headers`] | what `!fields` declares; all headers of a file |
//! | [`Writer`], [`format_record`] | strict output: headers first, byte order checked, quoting |
//! | [`expand`] | one record -> one JSON object |
//! | [`Validator`], [`Problem`], [`Summary`] | everything `ukvs validate` checks |
//! | [`LineReader`] | lines out of any `Read` with one reused buffer |
//! | [`convert`] | classic CDX and CDXJ lines -> capture-index records |
//! | [`outback`] | OutbackCDX's query form: parameters, key ranges, its capture fields and answer shapes |
//! | [`post`] | lines POSTed to a live collection: checked, re-keyed, given capture ids |
//! | [`frequency`] | MementoMap frequency and datetime-key syntax |
//!
//! Reading is forgiving (runs of spaces, JSON5 in header values and the
//! OSLJ); writing is strict (one space, compact strict JSON). The grammar
//! is in `FORMATS.md`, section 1.

pub mod convert;
mod expand;
pub mod frequency;
mod header;
mod json;
mod line;
pub mod outback;
pub mod post;
mod reader;
mod validate;
mod writer;

pub use expand::expand;
pub use header::{Headers, Schema};
pub use json::{parse_json5, to_compact};
pub use line::{classify, unescape, Field, Header, Line, Record, Token, Tokens};
#[cfg(test)]
pub(crate) use reader::Noting;
pub use reader::{read_gap, LineReader, LINE_ALIGN};
pub use validate::{Problem, ProblemKind, Summary, Validator};
pub use writer::{format_field, format_record, Writer};

/// Errors of the UKVS layer. Line numbers count from 1 and include header
/// lines; columns count bytes from 1.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A data line sorts before the one written just before it. Sort the
    /// input (`LC_ALL=C sort`) or write through an unchecked writer.
    #[error(
        "line {line}: out of byte order: {got:?} sorts before the previous line {previous:?} (sort with LC_ALL=C)"
    )]
    OutOfOrder {
        previous: String,
        got: String,
        line: u64,
    },
    /// A header line came after the first data line; headers must come
    /// first so that readers know the fields before the records.
    #[error("line {line}: header `!{name}` after the first data line (move headers to the top)")]
    HeaderAfterData { name: String, line: u64 },
    /// A data line has a different number of fields than `!fields` declares.
    #[error("line {line}: {got} fields where `!fields` declares {expected} (use `-` for unknown values)")]
    Arity {
        line: u64,
        expected: usize,
        got: usize,
    },
    /// Bytes that cannot be read as a field or value: unterminated quote,
    /// bad escape, text after the closing quote.
    #[error("line {line}, column {column}: {what}")]
    Syntax {
        line: u64,
        column: usize,
        what: String,
    },
    /// A header value or OSLJ that is neither JSON nor JSON5.
    #[error("line {line}: invalid JSON: {message}")]
    Json { line: u64, message: String },
    /// `!fields` is not `{keys: [...], values: [...]}` with string names.
    #[error("line {line}: bad `!fields` header: {what}")]
    BadFields { line: u64, what: String },
    /// Expansion found the same name twice (a field and an OSLJ member, or
    /// two fields). Rename one of them.
    #[error("line {line}: name `{name}` appears both as a field and in the JSON block")]
    Clash { line: u64, name: String },
    /// A line handed to the writer contains a newline or starts like a
    /// header line; it would change the meaning of the file.
    #[error("line {line}: {what}")]
    InvalidLine { line: u64, what: String },
    /// Input that is neither UKVS, CDXJ nor classic CDX.
    #[error("line {line}: cannot convert: {what}")]
    Convert { line: u64, what: String },
    /// Reading or writing failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Error {
    /// The line the error names, if it names one.
    pub fn line(&self) -> Option<u64> {
        match *self {
            Error::OutOfOrder { line, .. }
            | Error::HeaderAfterData { line, .. }
            | Error::Arity { line, .. }
            | Error::Syntax { line, .. }
            | Error::Json { line, .. }
            | Error::BadFields { line, .. }
            | Error::Clash { line, .. }
            | Error::InvalidLine { line, .. }
            | Error::Convert { line, .. } => Some(line),
            Error::Io(_) => None,
        }
    }

    /// The message without its leading `line N: ` (`line N, ` before a
    /// column), for callers that print `file:line: ` themselves.
    pub fn detail(&self) -> String {
        let full = self.to_string();
        let Some(line) = self.line() else {
            return full;
        };
        let colon = format!("line {line}: ");
        let comma = format!("line {line}, ");
        full.strip_prefix(&colon)
            .or_else(|| full.strip_prefix(&comma))
            .map_or_else(|| full.clone(), str::to_owned)
    }
}
