//! Printing index files as UKVS or NDJSON (`ukvs cat`): UKVS, CDXJ and
//! classic CDX read line by line, converted, normalised and written to the
//! writer the front end gives.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::Kind;
use super::fs::{for_each_line, open_input};
use super::lookup;
use crate::ukvs::convert::{self, Source};
use crate::ukvs::{
    classify, expand, format_record, parse_json5, Headers, Line, Record, Schema, Token, Writer,
};

/// What to print, and how.
#[derive(Clone, Debug)]
pub struct CatJob {
    pub files: Vec<PathBuf>,
    /// One JSON object per record instead of UKVS lines.
    pub json: bool,
    pub from: InputFormat,
}

/// The format of the input files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// Judged from each file's first line.
    Auto,
    Ukvs,
    Cdxj,
    Cdx,
}

/// Why a `cat` run stopped. A bad line, a file that cannot be opened or
/// whose `!fields` differ, is no error of the run: it is reported by
/// file and line, counted, and skipped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input's lines cannot be read (a damaged gzip member: the line
    /// and byte near which it broke are named).
    #[error(transparent)]
    Input(#[from] super::fs::Error),
    /// A ZipNum cluster whose blocks cannot be listed.
    #[error("cannot read {name}: {cause}")]
    Cluster {
        name: String,
        cause: Box<lookup::Error>,
    },
    /// A ZipNum cluster's lines broke off (a block that does not
    /// inflate, a remote store that fails).
    #[error("cannot read {name}: {cause}")]
    Lines {
        name: String,
        cause: crate::sorted::Error,
    },
    /// The output cannot be written (a closed pipe among others).
    #[error(transparent)]
    Output(io::Error),
    /// The output writer refused what it was given.
    #[error(transparent)]
    Write(crate::ukvs::Error),
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Input(e) => e.kind(),
            Error::Cluster { cause, .. } => cause.kind(),
            Error::Lines { cause, .. } => Kind::of_sorted(cause),
            Error::Output(e) => Kind::of_io(e),
            Error::Write(_) => Kind::BadInput,
        }
    }
}

super::error::output_variant!(Error);

/// A writer's failure as the run's: its I/O error as the output's.
fn write_err(e: crate::ukvs::Error) -> Error {
    match e {
        crate::ukvs::Error::Io(io) => Error::Output(io),
        other => Error::Write(other),
    }
}

/// Maps library errors to anyhow, keeping I/O errors as themselves so that
/// a broken pipe is recognised by `cli::main`.
fn lib_err(e: crate::ukvs::Error) -> anyhow::Error {
    match e {
        crate::ukvs::Error::Io(io) => io.into(),
        other => other.into(),
    }
}

/// The message of an error on line `n`, without the `line N: ` that
/// library errors start with (the caller prints `file:n: ` already).
fn message_at(e: &anyhow::Error, n: u64) -> String {
    match e.downcast_ref::<crate::ukvs::Error>() {
        Some(lib) if lib.line() == Some(n) => lib.detail(),
        _ => format!("{e:#}"),
    }
}

/// State shared across files: the writer and the schema of the output.
struct Out<W: Write> {
    json: bool,
    writer: Writer<W>,
    /// The `!fields` of the first file, once its headers are written.
    schema: Option<Schema>,
    buf: Vec<u8>,
    bad: u64,
    /// Converted captures that share `surt datetime`, held back and sorted
    /// before writing: CDX and CDXJ order such ties by URL or JSON text,
    /// UKVS by offset, so sorted input stays sorted only if ties are
    /// re-sorted.
    pending: Vec<Vec<u8>>,
    /// Length of the `surt datetime` prefix of `pending[0]`.
    pending_key_len: usize,
}

/// Most ties are a handful of records; past this many the group is written
/// as it is, so memory stays bounded on pathological input.
const MAX_PENDING: usize = 100_000;

impl<W: Write> Out<W> {
    /// Queues one converted line (non-JSON output), flushing the previous
    /// group when the key changes.
    fn push_converted(&mut self, line: &[u8]) -> anyhow::Result<()> {
        let mut tokens = Record::new(line).tokens();
        let _ = (tokens.next(), tokens.next());
        let key_len = tokens.position();
        let same = self
            .pending
            .first()
            .is_some_and(|p| p.get(..self.pending_key_len) == line.get(..key_len));
        if !same || self.pending.len() >= MAX_PENDING {
            self.flush_pending().map_err(lib_err)?;
            self.pending_key_len = key_len;
        }
        self.pending.push(line.to_vec());
        Ok(())
    }

    /// Writes the held-back group in byte order.
    fn flush_pending(&mut self) -> Result<(), crate::ukvs::Error> {
        self.pending.sort_unstable();
        for l in self.pending.drain(..) {
            self.writer.write_line(&l)?;
        }
        Ok(())
    }
}

/// Converts every file of `job` into `wtr`; gives the writer back and the
/// number of bad lines and files.
pub fn cat_all<W: Write>(args: &CatJob, wtr: W) -> Result<(W, u64), Error> {
    let mut out = Out {
        json: args.json,
        writer: Writer::unsorted(wtr),
        schema: None,
        buf: Vec::new(),
        bad: 0,
        pending: Vec::new(),
        pending_key_len: 0,
    };
    for path in &args.files {
        let is_idx = path.extension().is_some_and(|e| e == "idx");
        if path.is_dir() || is_idx || super::cluster::is_remote(path) {
            // A ZipNum cluster (its directory or its `.idx`), or a
            // directory of sorted files.
            // Its files are read front to back, compressed or not.
            let listed = lookup::listing(path).and_then(|l| match l {
                lookup::Listing::Cluster(idx) => {
                    Ok((Some(lookup::Source::cluster(&idx, false)?), vec![]))
                }
                lookup::Listing::File(file) => Ok((None, vec![file])),
                lookup::Listing::Dir(files) => Ok((None, files)),
            });
            match listed {
                Ok((cluster, files)) => {
                    if let Some(cluster) = &cluster {
                        cat_cluster(cluster, args.from, &mut out)?;
                    }
                    for file in &files {
                        cat_path(file, args.from, &mut out)?;
                    }
                }
                Err(e) => {
                    crate::report!("ukvs cat: {e:#}");
                    out.bad += 1;
                }
            }
            continue;
        }
        cat_path(path, args.from, &mut out)?;
    }
    // A group of ties is written when the key changes or here, never at
    // a file's end: the files of a directory are the parts of one index,
    // and a group cut between two of them is still one group.
    out.flush_pending().map_err(write_err)?;
    // A file with headers only still gets its headers out.
    let bad = out.bad;
    let w = out.writer.finish().map_err(write_err)?;
    Ok((w, bad))
}

/// Per-file reading state.
struct FileState<'n> {
    /// The file's name, for messages.
    name: &'n str,
    from: InputFormat,
    /// Lines read so far.
    n: u64,
    source: Option<Source>,
    headers: Headers,
    /// Schema the records of this file are read with, set at the first
    /// data line.
    schema: Option<Schema>,
    /// Why the rest of this file is skipped (its `!fields` differ from the
    /// first file's, its CDX legend cannot be used), once it is.
    skip: Option<&'static str>,
    /// The objects of CDXJ `!meta 0 {...}` lines, kept in the output's
    /// `!meta`.
    cdxj_meta: Vec<Value>,
}

/// Converts the file (or stream) at `path` into `out`; one that cannot
/// be opened is reported and counted.
fn cat_path<W: Write>(path: &Path, from: InputFormat, out: &mut Out<W>) -> Result<(), Error> {
    let name = path.display().to_string();
    let rdr = match open_input(path) {
        Ok(r) => r,
        Err(e) => {
            crate::report!("ukvs cat: {e:#}");
            out.bad += 1;
            return Ok(());
        }
    };
    let mut file = FileState::new(&name, from);
    let mut whole = true;
    for_each_line::<Error>(&name, rdr, |line, _| {
        whole = file.line(line, out)?;
        Ok(whole)
    })?;
    match whole {
        true => file.finish(out),
        false => Ok(()),
    }
}

/// Converts the lines of a ZipNum cluster, block after block, into `out`
/// (a cluster holds no header lines).
fn cat_cluster<W: Write>(
    cluster: &lookup::Source,
    from: InputFormat,
    out: &mut Out<W>,
) -> Result<(), Error> {
    let name = cluster.name();
    let mut file = FileState::new(name, from);
    let lines = cluster.every_line().map_err(|cause| Error::Cluster {
        name: name.to_string(),
        cause: Box::new(cause),
    })?;
    for line in lines {
        let line = line.map_err(|cause| Error::Lines {
            name: name.to_string(),
            cause,
        })?;
        if !file.line(&line, out)? {
            return Ok(());
        }
    }
    file.finish(out)
}

impl FileState<'_> {
    fn new(name: &str, from: InputFormat) -> FileState<'_> {
        FileState {
            name,
            from,
            n: 0,
            source: match from {
                InputFormat::Auto => None,
                InputFormat::Ukvs => Some(Source::Ukvs),
                InputFormat::Cdxj => Some(Source::Cdxj),
                InputFormat::Cdx => None,
            },
            headers: Headers::default(),
            schema: None,
            skip: None,
            cdxj_meta: Vec::new(),
        }
    }

    /// Converts the file's next line into `out`, reporting a bad one;
    /// `false` when the rest of the file is skipped.
    fn line<W: Write>(&mut self, line: &[u8], out: &mut Out<W>) -> Result<bool, Error> {
        self.n += 1;
        let n = self.n;
        let from = self.from;
        if let Err(e) = cat_line(line, n, self, from, out) {
            // A closed output ends the run; other failures, this line.
            let closed = e.downcast_ref::<io::Error>();
            if closed.is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe) {
                let io = e
                    .downcast::<io::Error>()
                    .unwrap_or_else(|_| io::ErrorKind::BrokenPipe.into());
                return Err(Error::Output(io));
            }
            crate::report!("{}:{n}: {}", self.name, message_at(&e, n));
            out.bad += 1;
        }
        if let Some(why) = self.skip {
            crate::report!("{}: skipped: {why}", self.name);
            out.bad += 1;
            return Ok(false);
        }
        Ok(true)
    }

    /// Ends the file: the headers of a file without records (only the
    /// first file's count), and the captures held back.
    fn finish<W: Write>(mut self, out: &mut Out<W>) -> Result<(), Error> {
        if out.schema.is_none() {
            if let Some(source) = self.source.take() {
                start_records(&source, &mut self, out).map_err(write_err)?;
            }
        }
        Ok(())
    }
}

fn cat_line<W: Write>(
    line: &[u8],
    n: u64,
    st: &mut FileState<'_>,
    from: InputFormat,
    out: &mut Out<W>,
) -> anyhow::Result<()> {
    if st.source.is_none() {
        if classify(line) == Line::Blank {
            return Ok(());
        }
        let sniffed = match convert::sniff(line, n) {
            Ok(s) => s,
            Err(e) => {
                st.skip = Some("its CDX legend cannot be used");
                return Err(lib_err(e));
            }
        };
        st.source = Some(match (from, sniffed) {
            (InputFormat::Cdx, s @ Source::Cdx(_)) => s,
            (InputFormat::Cdx, _) => match convert::legend_by_count(line) {
                // No legend: the columns are pywb's for their number, and
                // this line is the first record.
                Some(legend) => {
                    st.source = Some(Source::Cdx(legend));
                    return cat_line(line, n, st, from, out);
                }
                None => {
                    st.skip = Some("not a CDX file");
                    anyhow::bail!(
                        "--from cdx but the first line is neither a CDX legend nor a line of \
                         9, 10 or 11 columns; add the legend line (` CDX N b a m s k r M S V g`)"
                    )
                }
            },
            (_, s) => s,
        });
        if matches!(st.source, Some(Source::Cdx(_))) {
            return Ok(()); // The legend line itself.
        }
    }
    // The source is taken out for the call so `st` can be borrowed
    // mutably below without cloning the CDX legend per line.
    let source = st.source.take().unwrap_or(Source::Ukvs);
    let result = cat_classified(line, n, &source, st, out);
    st.source = Some(source);
    result
}

/// Handles one line of a file whose format is known.
fn cat_classified<W: Write>(
    line: &[u8],
    n: u64,
    source: &Source,
    st: &mut FileState<'_>,
    out: &mut Out<W>,
) -> anyhow::Result<()> {
    match (source, classify(line)) {
        (_, Line::Blank) => Ok(()),
        (Source::Ukvs, Line::Header(h)) => {
            if st.schema.is_some() {
                anyhow::bail!(
                    "header `!{}` after the first data line; skipped",
                    String::from_utf8_lossy(h.name)
                );
            }
            st.headers.add(&h, n).map_err(lib_err)
        }
        // CDXJ files may carry `!meta 0 {...}` lines of their own.
        (Source::Cdxj, Line::Header(h)) => {
            let name = String::from_utf8_lossy(h.name);
            if st.schema.is_some() {
                anyhow::bail!("header `!{name}` after the first data line; skipped");
            }
            let Some(json) = convert::cdxj_meta(line) else {
                anyhow::bail!(
                    "`!{name}` in a CDXJ file is not a `!meta <n> {{...}}` line; skipped"
                );
            };
            let v =
                parse_json5(json).map_err(|m| anyhow::anyhow!("invalid JSON in `!meta`: {m}"))?;
            anyhow::ensure!(v.is_object(), "the JSON of `!meta` is not an object");
            st.cdxj_meta.push(v);
            Ok(())
        }
        (Source::Cdx(_), Line::Header(_)) => {
            anyhow::bail!("a line starting with `!` in a CDX file")
        }
        (Source::Ukvs, Line::Data(r)) => {
            if st.schema.is_none() {
                start_records(source, st, out).map_err(lib_err)?;
            }
            if st.skip.is_some() {
                return Ok(());
            }
            match &st.schema {
                Some(schema) => emit_ukvs(r, schema, n, out),
                None => Ok(()),
            }
        }
        (Source::Cdxj | Source::Cdx(_), Line::Data(r)) => {
            if st.schema.is_none() {
                start_records(source, st, out).map_err(lib_err)?;
            }
            if st.skip.is_some() {
                return Ok(());
            }
            let cap = match source {
                Source::Cdx(legend) => convert::from_cdx(legend, r.as_bytes(), n),
                _ => convert::from_cdxj(r.as_bytes(), n),
            }
            .map_err(lib_err)?;
            let mut buf = std::mem::take(&mut out.buf);
            cap.format(&mut buf);
            let res = if out.json {
                emit_ukvs(Record::new(&buf), &convert::capture_schema(), n, out)
            } else {
                // Capture::format writes the strict form already.
                out.push_converted(&buf)
            };
            out.buf = buf;
            res
        }
    }
}

/// At the first record of a file: fix its schema, write the output headers
/// if this is the first file, or check that `!fields` agree.
fn start_records<W: Write>(
    source: &Source,
    st: &mut FileState<'_>,
    out: &mut Out<W>,
) -> Result<(), crate::ukvs::Error> {
    let headers = match source {
        Source::Ukvs => std::mem::take(&mut st.headers),
        s => convert::capture_headers(s, &st.cdxj_meta),
    };
    let schema = headers.schema();
    match &out.schema {
        None => {
            if !out.json {
                for l in headers.lines() {
                    out.writer.raw_header(&l)?;
                }
            }
            out.schema = Some(schema.clone());
        }
        Some(first) if first.keys != schema.keys || first.values != schema.values => {
            st.skip = Some("its `!fields` differ from the first file's");
        }
        Some(_) => {}
    }
    st.schema = Some(schema);
    Ok(())
}

/// Writes one record: expanded to JSON, or normalised UKVS.
fn emit_ukvs<W: Write>(
    r: Record<'_>,
    schema: &Schema,
    n: u64,
    out: &mut Out<W>,
) -> anyhow::Result<()> {
    if out.json {
        let obj = expand(&r, schema, n).map_err(lib_err)?;
        let w = out.writer.get_mut();
        serde_json::to_writer(&mut *w, &Value::Object(obj)).map_err(io::Error::from)?;
        w.write_all(b"\n")?;
        return Ok(());
    }
    let mut values: Vec<Option<std::borrow::Cow<'_, [u8]>>> = Vec::new();
    let mut oslj = None;
    for t in r.tokens() {
        match t.map_err(|(at, what)| anyhow::anyhow!("column {}: {what}", at + 1))? {
            Token::Field(f) => values.push(f.value()),
            Token::Json(j) => {
                let v = parse_json5(j).map_err(|m| anyhow::anyhow!("invalid JSON block: {m}"))?;
                anyhow::ensure!(v.is_object(), "the JSON block is not an object");
                oslj = Some(v);
            }
        }
    }
    anyhow::ensure!(!values.is_empty(), "no key field before the JSON block");
    if schema.declared && values.len() != schema.arity() {
        anyhow::bail!(
            "{} fields where `!fields` declares {}",
            values.len(),
            schema.arity()
        );
    }
    let fields: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
    let mut buf = Vec::new();
    format_record(&mut buf, &fields, oslj.as_ref());
    out.writer.write_line(&buf).map_err(lib_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(files: Vec<PathBuf>) -> CatJob {
        CatJob {
            files,
            json: false,
            from: InputFormat::Auto,
        }
    }

    #[test]
    fn a_missing_file_is_counted_and_the_run_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("a.cdxj");
        std::fs::write(
            &good,
            "com,example)/ 20200101000000 {\"url\": \"http://example.com/\"}\n",
        )
        .unwrap();
        let files = vec![dir.path().join("absent.cdxj"), good];
        let (out, bad) = cat_all(&job(files), Vec::new()).unwrap();
        assert_eq!(bad, 1);
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("com,example)/ 20200101000000 "), "{out}");
    }

    #[test]
    fn a_gzip_cut_short_is_damaged_and_a_closed_output_is_told() {
        let dir = tempfile::tempdir().unwrap();
        let path = crate::engine::error::fixtures::cut_gzip_index(dir.path());
        let err = cat_all(&job(vec![path.clone()]), Vec::new()).unwrap_err();
        assert_eq!(err.kind(), Kind::Damaged, "{err:?}");
        let named = format!("cannot read {} after line ", path.display());
        assert!(err.to_string().starts_with(&named), "{err}");
        assert!(err.output_error().is_none());

        #[derive(Debug)]
        struct Closed;
        impl io::Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
        }
        let good = dir.path().join("a.cdxj");
        std::fs::write(
            &good,
            "com,example)/ 20200101000000 {\"url\": \"http://example.com/\"}\n",
        )
        .unwrap();
        let err = cat_all(&job(vec![good]), Closed).unwrap_err();
        let closed = err.output_error().map(io::Error::kind);
        assert_eq!(closed, Some(io::ErrorKind::BrokenPipe), "{err:?}");
    }
}
