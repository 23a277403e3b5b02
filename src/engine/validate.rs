//! Checking UKVS files (`ukvs validate`): one pass over each file, mapped
//! or streamed, through [`crate::ukvs::Validator`], problems and a summary
//! written to the writer the front end gives.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::Kind;
use super::fs::{for_each_line, open_input};
use super::parts::{for_each_mapped_line, Span};
use crate::ukvs::convert;
use crate::ukvs::{Problem, ProblemKind, Summary, Validator};

/// Why a file could not be checked (its problems are no error: they are
/// written out and make [`check_file`] answer `false`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file cannot be opened, read or decompressed, or holds no
    /// index lines (the line and byte are named where known).
    #[error(transparent)]
    Input(#[from] super::fs::Error),
    /// The file cannot be opened.
    #[error(transparent)]
    Open(#[from] super::error::OpenError),
    /// The file cannot be mapped (`--no-mmap` reads it instead).
    #[error("cannot map {}", .path.display())]
    Map {
        path: PathBuf,
        #[source]
        cause: io::Error,
    },
    /// A WACZ package whose entries cannot be checked: its chain says
    /// why.
    #[error("cannot read {name}")]
    Package {
        name: String,
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A mapped file broke off while it was read (cut short by another
    /// process).
    #[error(transparent)]
    Read(#[from] io::Error),
    /// The problems and summaries cannot be written.
    #[error(transparent)]
    Output(io::Error),
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Input(e) => e.kind(),
            Error::Open(e) => e.kind(),
            Error::Map { cause, .. } | Error::Output(cause) => Kind::of_io(cause),
            Error::Read(cause) => Kind::of_read(cause),
            Error::Package { cause, .. } => Kind::in_chain(cause.as_ref()).unwrap_or(Kind::Damaged),
        }
    }
}

super::error::output_variant!(Error);

/// How files are checked.
#[derive(Clone, Debug)]
pub struct ValidateJob {
    /// Problems printed per file (all are counted).
    pub max_problems: u64,
    /// Only problems, no summaries.
    pub quiet: bool,
    /// Read plain files instead of mapping them.
    pub no_mmap: bool,
}

/// What a line out of byte order is told with: where it is, and how to
/// fix the file (a file sorted in a locale's order, by `sort` without
/// `LC_ALL=C`, is the usual cause).
fn disorder_hint(offset: u64) -> String {
    format!(" (byte offset {offset}; sort the file with `ukvs sort`, or `LC_ALL=C sort`)")
}

/// Validates one file; `Ok(false)` when it has problems. A file whose
/// first line is a CDX legend is checked as classic CDX ([`CdxCheck`]).
pub fn check_file(path: &Path, args: &ValidateJob, out: &mut impl Write) -> Result<bool, Error> {
    let name = path.display().to_string();
    // A WACZ package: its entries against its datapackage.json, then its
    // index's lines as any index's.
    let mut package_problems = 0;
    if path.as_os_str() != "-" && super::fs::is_package(path) {
        let report = super::package::check_package(path).map_err(|e| Error::Package {
            name: name.clone(),
            cause: e.into(),
        })?;
        for p in &report.problems {
            writeln!(out, "{name}: {p}").map_err(Error::Output)?;
        }
        package_problems = report.problems.len();
        if !args.quiet {
            writeln!(
                out,
                "{name}: package: {} entries hashed as datapackage.json says, {} problems",
                report.checked, package_problems
            )
            .map_err(Error::Output)?;
        }
    }
    let mut v = Validator::new();
    let mut cdx: Option<CdxCheck> = None;
    let mut first = true;
    let mut printed = 0u64;
    // Byte offset of the line fed next.
    let mut offset = 0u64;
    let mut feed = |line: &[u8], out: &mut dyn Write| -> io::Result<()> {
        let at = offset;
        offset += line.len() as u64 + 1;
        if std::mem::take(&mut first) && convert::CdxLegend::parse(line).is_some() {
            cdx = Some(CdxCheck::new(line));
        }
        let problems = match &mut cdx {
            Some(c) => c.line(line),
            None => v.line(line).to_vec(),
        };
        for p in problems {
            if printed < args.max_problems {
                let hint = match p.kind {
                    ProblemKind::OutOfOrder { .. } => disorder_hint(at),
                    _ => String::new(),
                };
                writeln!(out, "{name}:{}: {}{hint}", p.line, p.kind)?;
            }
            printed += 1;
        }
        Ok(())
    };
    // The shared line loops: a map's lines in place (no copy from the
    // page cache; pages read are given back), a stream's from its reader.
    match map_plain_file(path, args.no_mmap)? {
        Some(map) => {
            let whole = Span::new(0, map.len() as u64);
            for_each_mapped_line::<Error>(&Arc::new(map), &whole, |line, _| {
                feed(line, out).map_err(Error::Output)
            })?;
        }
        None => {
            let rdr = open_input(path)?;
            for_each_line::<Error>(&name, rdr, |line, _| {
                feed(line, out).map(|()| true).map_err(Error::Output)
            })?;
        }
    }
    let (s, dialect) = match cdx {
        Some(c) => c.finish(),
        None => (v.finish(), ""),
    };
    if printed > args.max_problems {
        writeln!(
            out,
            "{name}: ... {} more problems not shown (--max-problems)",
            printed - args.max_problems
        )
        .map_err(Error::Output)?;
    }
    if !args.quiet {
        writeln!(
            out,
            "{name}: {dialect}{} lines ({} headers, {} records), {} keys, {} duplicate keys, {} identical lines, {}{}, {} problems: {}",
            s.lines,
            s.headers,
            s.records,
            s.keys,
            s.duplicate_keys,
            s.identical_lines,
            if s.sorted { "sorted" } else { "NOT sorted" },
            if s.mementomap { ", MementoMap" } else { "" },
            s.problems,
            if s.problems == 0 { "valid" } else { "INVALID" },
        )
        .map_err(Error::Output)?;
    }
    Ok(s.problems == 0 && package_problems == 0)
}

/// Maps a plain (not compressed), non-empty regular file read-only;
/// `None` for stdin, compressed files, empty files, non-regular files and
/// `--no-mmap`, which are streamed instead. A file that holds no index
/// lines is refused.
fn map_plain_file(path: &Path, no_mmap: bool) -> Result<Option<memmap2::Mmap>, Error> {
    if no_mmap || path.as_os_str() == "-" {
        return Ok(None);
    }
    let file = super::error::open(path)?;
    if super::fs::index_content_of(path, &file)? != super::fs::Content::Plain {
        return Ok(None);
    }
    super::fs::map_file(&file, memmap2::Advice::Sequential).map_err(|cause| Error::Map {
        path: path.to_path_buf(),
        cause,
    })
}

/// Checks a classic CDX file (its first line a legend): the legend can be
/// used, every data line has the legend's columns (what `ukvs cat`
/// converts), and the lines are in byte order, except in a URL-keyed file
/// (wget's), whose searches key and sort its lines themselves.
struct CdxCheck {
    legend: Result<convert::CdxLegend, String>,
    summary: Summary,
    previous: Vec<u8>,
    previous_line: u64,
    previous_key: Vec<u8>,
}

impl CdxCheck {
    fn new(legend_line: &[u8]) -> CdxCheck {
        let legend = match convert::CdxLegend::parse(legend_line) {
            Some(l) => l,
            None => Err("not a CDX legend".into()),
        };
        CdxCheck {
            legend,
            summary: Summary {
                sorted: true,
                ..Summary::default()
            },
            previous: Vec::new(),
            previous_line: 0,
            previous_key: Vec::new(),
        }
    }

    /// The problems of the next line (the legend is line 1).
    fn line(&mut self, line: &[u8]) -> Vec<Problem> {
        self.summary.lines += 1;
        let n = self.summary.lines;
        let mut problems = Vec::new();
        let mut problem = |kind| problems.push(Problem { line: n, kind });
        if n == 1 {
            self.summary.headers += 1;
            if let Err(what) = &self.legend {
                problem(ProblemKind::Header {
                    what: format!("bad CDX legend: {what}"),
                });
            }
        } else if line.is_empty() {
            problem(ProblemKind::Blank);
        } else if let Ok(legend) = &self.legend {
            self.summary.records += 1;
            if line.ends_with(b"\r") {
                problem(ProblemKind::CarriageReturn);
            }
            if let Err(e) = convert::from_cdx(legend, line, n) {
                problem(ProblemKind::Cdx { what: e.detail() });
            }
            let key = line
                .split(|&b| b == legend.delimiter)
                .next()
                .unwrap_or(line);
            if self.summary.records > 1 && key == self.previous_key.as_slice() {
                self.summary.duplicate_keys += 1;
            } else {
                self.summary.keys += 1;
            }
            if line == self.previous.as_slice() {
                self.summary.identical_lines += 1;
            }
            if self.summary.records > 1 && line < self.previous.as_slice() {
                self.summary.sorted = false;
                // A URL-keyed file is in crawl order; its searches sort it.
                if !legend.is_url_keyed() {
                    problem(ProblemKind::OutOfOrder {
                        previous_line: self.previous_line,
                    });
                }
            }
            self.previous_key.clear();
            self.previous_key.extend_from_slice(key);
            self.previous.clear();
            self.previous.extend_from_slice(line);
            self.previous_line = n;
        }
        self.summary.problems += problems.len() as u64;
        problems
    }

    /// The summary, and what kind of CDX the file is, for the summary line.
    fn finish(self) -> (Summary, &'static str) {
        let dialect = match &self.legend {
            Ok(l) if l.is_url_keyed() => "CDX keyed by URL (searched in SURT order), ",
            _ => "CDX, ",
        };
        (self.summary, dialect)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: ValidateJob = ValidateJob {
        max_problems: 10,
        quiet: false,
        no_mmap: false,
    };

    #[test]
    fn a_missing_file_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let absent = dir.path().join("absent.ukvs");
        let err = check_file(&absent, &JOB, &mut Vec::new()).unwrap_err();
        assert_eq!(err.kind(), Kind::Missing);
        assert_eq!(err.to_string(), format!("cannot open {}", absent.display()));
    }

    #[test]
    fn a_gzip_cut_short_is_damaged_and_an_archive_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let path = crate::engine::error::fixtures::cut_gzip_index(dir.path());
        let err = check_file(&path, &JOB, &mut Vec::new()).unwrap_err();
        assert_eq!(err.kind(), Kind::Damaged, "{err:?}");
        let named = format!("cannot read {} after line ", path.display());
        assert!(err.to_string().starts_with(&named), "{err}");
        // WARC records where index lines are expected.
        let warc = dir.path().join("a.warc");
        std::fs::write(&warc, b"WARC/1.0\r\nWARC-Type: warcinfo\r\n\r\n").unwrap();
        let err = check_file(&warc, &JOB, &mut Vec::new()).unwrap_err();
        assert_eq!(err.kind(), Kind::BadInput, "{err:?}");
    }

    #[test]
    fn a_closed_output_is_told_from_other_failures() {
        struct Closed;
        impl io::Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ok.cdxj");
        std::fs::write(
            &path,
            "com,example)/ 20200101000000 {\"url\": \"http://example.com/\"}\n",
        )
        .unwrap();
        assert!(check_file(&path, &JOB, &mut Vec::new()).unwrap());
        let err = check_file(&path, &JOB, &mut Closed).unwrap_err();
        let closed = err.output_error().map(io::Error::kind);
        assert_eq!(closed, Some(io::ErrorKind::BrokenPipe));
        assert_eq!(err.kind(), Kind::Io);
    }
}
