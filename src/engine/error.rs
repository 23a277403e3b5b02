//! What kind of failure an engine error is, so that a front end answers
//! it (an exit code, an HTTP status) from its type, never from its text.
//!
//! ```text
//! remote::Error ─┐ (inside the io::Error of a read)
//! sorted::Error ─┼─► lookup::Error ─┐
//! io::Error ─────┘                  ├─► merged::Error ─► .kind() ─► Kind
//! live::Error ──────────────────────┘
//! fs::Error (inputs) ─┬► sort::Error ───────────────► .kind() ─► Kind
//! lookup::Error ───────┴► stats::Error ─┬────────────► .kind() ─► Kind
//! io, ukvs::Error ──────► index::Error ◄┘ (--stats) ─► .kind() ─► Kind
//! fs::Error ──► zipnum::Error ─┬► fold::Error ──────────► .kind() ─► Kind
//!               (+ index) ─────┴► wacz::Error ──────────► .kind() ─► Kind
//! lookup, merged, live ──► digests::Error, table::Error ─► .kind() ─► Kind
//! lookup::Error ──► lookup::BatchError ─────────────────► .kind() ─► Kind
//! fs, lookup (chains) ──► mementomap::Error ────────────► .kind() ─► Kind
//! ```
//!
//! This module sits below the jobs (it names none of them); each job's
//! error is its own enum (thiserror) naming the file, line or
//! byte offset at fault, and its `kind()` (built on [`Kind::of_io`] and
//! [`Kind::of_sorted`]) says its [`Kind`]. The front
//! ends map kinds, not variants: the server answers [`Kind::Remote`]
//! 502 and the others 500 (a client's own mistakes, its parameters, are
//! found and answered 400 before the engine is asked); the command line
//! exits 2 on any of them. [`Kind::Usage`] is the jobs' own: options a
//! front end let through that the job cannot take.
//!
//! What the jobs' enums would otherwise each write again is here too:
//! [`OpenError`] (a file that cannot be opened, their `Open` variant),
//! `output_variant!` (`output_error()`, the failure a closed pipe is told
//! from) and `kind_of!` (the kind of a cause kept in a chain, by type).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::remote;
use crate::sorted;

/// What failed, as a front end needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// An input is not what the job takes: compressed where a binary
    /// search needs a plain file, an archive given as an index, a line
    /// that does not parse, lines out of order. The message says how
    /// to fix it.
    BadInput,
    /// An index or block read broke on damage: a ZipNum block that does
    /// not inflate, a file cut short.
    Damaged,
    /// A file, directory or object that is not there.
    Missing,
    /// A remote store (HTTP, S3) failed or refused: an upstream's
    /// failure, which a server answers 502.
    Remote,
    /// Local I/O failed (permissions, a full disk, a closed pipe).
    Io,
    /// The options given to the job are out of range or do not fit
    /// together (or the input given cannot serve them, as stdin where a
    /// file is read twice): the message says which to change.
    Usage,
}

impl Kind {
    /// The kind of an I/O error: a failed remote request carried in it
    /// ([`remote::Error::in_io`]), a missing file, or other I/O.
    pub fn of_io(e: &io::Error) -> Kind {
        match e.kind() {
            _ if remote::Error::in_io(e).is_some() => Kind::Remote,
            io::ErrorKind::NotFound => Kind::Missing,
            io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => Kind::Damaged,
            _ => Kind::Io,
        }
    }

    /// The kind of an I/O error met reading on in a file already open:
    /// a line that breaks off is damage, even where the error does not
    /// say so (a remote store's failure stays [`Kind::Remote`]).
    pub fn of_read(e: &io::Error) -> Kind {
        match Kind::of_io(e) {
            Kind::Io | Kind::Missing => Kind::Damaged,
            k => k,
        }
    }

    /// The kind of the first error in a chain whose type this module
    /// knows (a sorted file's, an I/O error), for the causes a job keeps
    /// from a module that still reports with `anyhow`. (The jobs' own
    /// types sit above this module: a job looks for those first.)
    pub fn in_chain(e: &(dyn std::error::Error + 'static)) -> Option<Kind> {
        let mut cause = Some(e);
        while let Some(e) = cause {
            if let Some(e) = e.downcast_ref::<sorted::Error>() {
                return Some(Kind::of_sorted(e));
            }
            if let Some(e) = e.downcast_ref::<io::Error>() {
                return Some(Kind::of_io(e));
            }
            cause = e.source();
        }
        None
    }

    /// The kind of a sorted-file error (the format layer knows nothing
    /// of remote stores: the cause it carries tells).
    pub fn of_sorted(e: &sorted::Error) -> Kind {
        use sorted::Error as E;
        match e {
            E::OutOfOrder { .. } | E::Unsorted { .. } | E::BadIndexLine { .. } => Kind::BadInput,
            E::BadBlock { .. } => Kind::Damaged,
            E::Io { err, .. } | E::Write { err, .. } | E::UnreadableBlock { err, .. } => {
                Kind::of_io(err)
            }
        }
    }
}

/// `output_error()` for a job's error type whose `Output(io::Error)`
/// variant is its output's failure (and only that one is): a front end
/// tells a closed pipe (the reader went away, not an error) from it.
macro_rules! output_variant {
    ($ty:ident) => {
        impl $ty {
            /// The I/O error the output failed with, if that is what
            /// failed (a front end tells a closed pipe from it).
            pub fn output_error(&self) -> Option<&std::io::Error> {
                match self {
                    $ty::Output(e) => Some(e),
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use output_variant;

/// The kind of `e` when it is one of the job errors `types` (each with
/// its `kind()`), for the causes kept in a chain; `None` when it is none
/// of them.
macro_rules! kind_of {
    ($e:expr; $($t:ty),+ $(,)?) => {
        None$(.or_else(|| $e.downcast_ref::<$t>().map(<$t>::kind)))+
    };
}
pub(crate) use kind_of;

/// A file a job cannot open, named: the `Open` variant of the jobs that
/// open their inputs themselves (statistics, validation, MementoMaps,
/// packages) holds it, so they share its message and its kind.
#[derive(Debug, thiserror::Error)]
#[error("cannot open {}", .path.display())]
pub struct OpenError {
    pub path: PathBuf,
    #[source]
    pub cause: io::Error,
}

impl OpenError {
    /// What kind of failure this is: a missing file, or other I/O.
    pub fn kind(&self) -> Kind {
        Kind::of_io(&self.cause)
    }
}

/// Opens `path` for reading; the error names it.
pub fn open(path: &Path) -> Result<File, OpenError> {
    File::open(path).map_err(|cause| OpenError {
        path: path.to_path_buf(),
        cause,
    })
}

/// Inputs the jobs' tests share to check the kinds of their errors.
#[cfg(test)]
pub(crate) mod fixtures {
    use std::io::Write;
    use std::path::{Path, PathBuf};

    /// A gzip'd CDXJ index of 2000 sorted lines, cut in the middle of its
    /// stream: `cut.cdxj.gz` in `dir`.
    pub(crate) fn cut_gzip_index(dir: &Path) -> PathBuf {
        let path = dir.join("cut.cdxj.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        for i in 0..2000 {
            writeln!(
                gz,
                "com,example)/{i:05} 20200101000000 {{\"url\": \"http://example.com/{i:05}\"}}"
            )
            .unwrap();
        }
        let gz = gz.finish().unwrap();
        std::fs::write(&path, &gz[..gz.len() / 2]).unwrap();
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_failures_are_told_through_the_layers_that_wrap_them() {
        let failed = || {
            io::Error::other(remote::Error::Request {
                url: "http://h/a".into(),
                range: Some((0, 10)),
                status: Some(403),
                reason: "forbidden".into(),
            })
        };
        assert_eq!(Kind::of_io(&failed()), Kind::Remote);
        let block = sorted::Error::UnreadableBlock {
            shard: "a".into(),
            offset: 0,
            err: failed(),
        };
        assert_eq!(Kind::of_sorted(&block), Kind::Remote);
        let search = super::super::lookup::Error::Search {
            name: "x".into(),
            error: block,
        };
        assert_eq!(search.kind(), Kind::Remote);
        let merged = super::super::merged::Error::from(search);
        assert_eq!(merged.kind(), Kind::Remote);
        // The same text without the type is local.
        let text = io::Error::other("GET http://h/a bytes 0-9 failed: forbidden");
        assert_eq!(Kind::of_io(&text), Kind::Io);
        let unsorted = sorted::Error::Unsorted {
            offset: 3,
            line: "b".into(),
        };
        assert_eq!(Kind::of_sorted(&unsorted), Kind::BadInput);
        let missing = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(Kind::of_io(&missing), Kind::Missing);
    }
}
