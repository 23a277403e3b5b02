//! Statistics jobs: the holdings statistics ([`crate::stats`]) of one or
//! more indexes, in one scan.
//!
//! ```text
//! one plain file ──► parts cut between hosts ──► a Scan per part, on threads ──► absorbed in order
//! gzip, stdin, ZipNum cluster, several inputs ──► one stream (several: merged by key) ──► one Scan
//!                                  keys out of order ──► keys sorted (ExternalSorter) ──► KeyRuns
//! ```
//!
//! The distinct counts need the keys in byte order. Indexes are sorted as
//! a rule, and then nothing is held but the current URL and host. A scan
//! that finds a key below the one before it reads the keys again and
//! sorts them within `--mem` (spilling to `--tmp-dir`), so the counts stay
//! exact; input that cannot be read twice (stdin) needs `--unsorted`,
//! which sorts the keys from the start. Several inputs are merged by key,
//! so that a URL in two of them counts once.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, Seek};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::sorted::lines::Numbered;
use crate::sorted::{self, ExternalSorter};
use crate::stats::{is_header, KeyRuns, Layout, Report, Scan};

use super::error::Kind;
use super::lookup::{Listing, Source};
use super::parts::{cuts_between_surts, for_each_part_line, shared_parts, PartInput, Span};
use super::progress::Progress;

/// Why a statistics job failed. Each variant names the input (and,
/// where known, the line or byte offset) at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input cannot be opened or read, or holds no index lines.
    #[error(transparent)]
    Input(#[from] super::fs::Error),
    /// A cluster or directory that cannot be listed, opened or read.
    #[error(transparent)]
    Source(#[from] super::lookup::Error),
    /// An input file cannot be opened.
    #[error(transparent)]
    Open(#[from] super::error::OpenError),
    /// An input cannot be read (`what` names it, and the line and byte
    /// near which it broke when they are known).
    #[error("{what}")]
    Read {
        what: String,
        #[source]
        cause: io::Error,
    },
    /// A part of a plain file that failed: how, in `cause`.
    #[error("cannot read {name}")]
    Part {
        name: String,
        #[source]
        cause: Box<Error>,
    },
    /// A part's reader broke (the file was cut short while it was read).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A cluster's lines broke off (a block that does not inflate, a
    /// remote store that fails).
    #[error("cannot read {name}: {cause}")]
    Lines { name: String, cause: sorted::Error },
    /// With `--strict`: a data line that is not a capture, by input and
    /// line (or byte offset in a plain file read in parts).
    #[error("{name}: {at}: {cause}")]
    Line {
        name: String,
        at: At,
        cause: crate::stats::Error,
    },
    /// Input that cannot be read twice is not sorted: `--unsorted` sorts
    /// its keys.
    #[error(
        "{name} is not sorted (the key {key} comes after a larger one); give --unsorted \
         to count distinct URLs and hosts of unsorted input, which sorts its keys"
    )]
    Unsorted { name: String, key: String },
    /// The index being written (`ukvs index --stats`) is not in byte
    /// order.
    #[error(
        "the index's keys are not in byte order (the key {key} comes after a larger one); \
         run `ukvs stats` on the index instead"
    )]
    NotInOrder { key: String },
    /// The keys of unsorted input cannot be sorted (`what` says which
    /// step): see the cause; `--tmp-dir` puts the runs elsewhere.
    #[error("{what}")]
    Sort {
        what: &'static str,
        #[source]
        cause: io::Error,
    },
    /// The report cannot be written to the output named.
    #[error("cannot write {name}")]
    Write {
        name: String,
        #[source]
        cause: io::Error,
    },
    /// The report's output cannot be created or put in place.
    #[error(transparent)]
    Output(io::Error),
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Input(e) => e.kind(),
            Error::Source(e) => e.kind(),
            Error::Open(e) => e.kind(),
            Error::Write { cause, .. } | Error::Sort { cause, .. } | Error::Output(cause) => {
                Kind::of_io(cause)
            }
            Error::Read { cause, .. } | Error::Io(cause) => Kind::of_read(cause),
            Error::Part { cause, .. } => cause.kind(),
            Error::Lines { cause, .. } => Kind::of_sorted(cause),
            Error::Line { .. } | Error::Unsorted { .. } | Error::NotInOrder { .. } => {
                Kind::BadInput
            }
        }
    }

    /// The I/O error the report's output failed with, if that is what
    /// failed (a front end tells a closed pipe from it).
    pub fn output_error(&self) -> Option<&io::Error> {
        match self {
            Error::Output(e) | Error::Write { cause: e, .. } => Some(e),
            _ => None,
        }
    }
}

/// Keys of unsorted input that cannot be sorted.
fn sorting(cause: io::Error) -> Error {
    Error::Sort {
        what: "cannot sort the keys of unsorted input",
        cause,
    }
}

/// What to summarise, and how.
#[derive(Debug, Clone)]
pub struct StatsJob {
    /// Index files (UKVS, CDXJ, CDX; plain or gzip), ZipNum clusters
    /// (directory or `.idx`), directories of index files, or `-` (stdin).
    pub inputs: Vec<PathBuf>,
    /// Largest hosts and domains listed (0 = all).
    pub top: usize,
    /// Threads for one large plain file; 0 uses every core.
    pub threads: usize,
    /// Memory for sorting the keys of unsorted input, in bytes.
    pub mem: u64,
    pub tmp_dir: Option<PathBuf>,
    /// The keys are not in order: sort them from the start (needed for
    /// unsorted stdin; files are read again when found unsorted).
    pub unsorted: bool,
    /// Stop at the first line that is not a capture.
    pub strict: bool,
    /// Read plain input files, a cluster's `.idx` and the sorted files of
    /// a directory instead of mapping them.
    pub no_mmap: bool,
    /// No notes on stderr.
    pub quiet: bool,
}

/// A finished job: the report, and how many lines were skipped.
#[derive(Debug)]
pub struct Outcome {
    pub report: Report,
    /// Data lines that were not captures (reported on stderr).
    pub skipped: u64,
}

/// Files smaller than this are read in one part: a thread costs more
/// than it saves on less.
const PARALLEL_FROM: u64 = 4 << 20;

/// How many skipped lines are shown one by one.
const SHOWN: u64 = 10;

/// Progress is told every this many bytes.
const STEP: u64 = 4 << 20;

/// One input, as it is read.
enum Input {
    /// A plain file: read in parts, on threads.
    Plain { path: PathBuf, file: File },
    /// Read front to back: stdin, gzip, or what is not a regular file.
    Stream { path: PathBuf },
    /// A ZipNum cluster, block by block.
    Cluster(Box<Source>),
}

impl Input {
    fn name(&self) -> String {
        match self {
            Input::Plain { path, .. } | Input::Stream { path } => super::fs::input_name(path),
            Input::Cluster(s) => s.name().to_string(),
        }
    }

    fn rereadable(&self) -> bool {
        !matches!(self, Input::Stream { path } if path == Path::new("-"))
    }

    fn size(&self) -> u64 {
        match self {
            Input::Plain { file, .. } => file.metadata().map_or(0, |m| m.len()),
            Input::Stream { path } => std::fs::metadata(path).map_or(0, |m| m.len()),
            Input::Cluster(_) => 0,
        }
    }
}

fn open_inputs(job: &StatsJob) -> Result<Vec<Input>, Error> {
    let mut out = Vec::new();
    for p in &job.inputs {
        if p == Path::new("-") {
            out.push(Input::Stream { path: p.clone() });
            continue;
        }
        let is_idx = p.extension().is_some_and(|e| e == "idx");
        if p.is_dir() || is_idx || super::cluster::is_remote(p) {
            // Its files are read as they are, compressed or not.
            match super::lookup::listing(p)? {
                Listing::Cluster(idx) => {
                    out.push(Input::Cluster(Box::new(Source::cluster(
                        &idx,
                        job.no_mmap,
                    )?)));
                }
                Listing::File(f) => out.push(plain_or_stream(&f)?),
                Listing::Dir(files) => {
                    for f in files {
                        out.push(plain_or_stream(&f)?);
                    }
                }
            }
            continue;
        }
        out.push(plain_or_stream(p)?);
    }
    Ok(out)
}

/// A plain, regular, non-empty file is read in parts; anything else
/// (compressed, stdin, a pipe) as a stream. What holds no index lines is
/// refused.
fn plain_or_stream(p: &Path) -> Result<Input, Error> {
    let file = super::error::open(p)?;
    let plain = super::fs::index_content_of(p, &file)? == super::fs::Content::Plain;
    let regular = file.metadata().is_ok_and(|m| m.is_file() && m.len() > 0);
    Ok(match plain && regular {
        true => Input::Plain {
            path: p.to_path_buf(),
            file,
        },
        false => Input::Stream {
            path: p.to_path_buf(),
        },
    })
}

/// Lines that were not captures, reported as they come (the first
/// [`SHOWN`]), shared by the threads.
struct Skipped<'p> {
    count: Mutex<u64>,
    strict: bool,
    quiet: bool,
    progress: Option<&'p dyn Progress>,
}

impl Skipped<'_> {
    fn report(&self, e: Error) -> Result<(), Error> {
        if self.strict {
            return Err(e);
        }
        let mut n = self.count.lock().unwrap_or_else(|e| e.into_inner());
        *n += 1;
        if *n <= SHOWN && !self.quiet {
            let line = format!("ukvs stats: {e} (skipped)");
            match self.progress {
                Some(p) => p.print(&line),
                None => crate::report!("{line}"),
            }
        }
        Ok(())
    }

    fn total(&self) -> u64 {
        *self.count.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where a line is, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// The byte offset of a line of a plain file read in parts.
    Offset(u64),
    /// The line number in a stream.
    Line(u64),
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Offset(o) => write!(f, "offset {o}"),
            At::Line(n) => write!(f, "line {n}"),
        }
    }
}

/// The lines of one input going into a scan: its layout (a CDX legend, or
/// guessed from the first data line), and where its keys go.
struct Feed<'a> {
    name: &'a str,
    layout: Option<Layout>,
    skipped: &'a Skipped<'a>,
}

impl<'a> Feed<'a> {
    fn new(name: &'a str, layout: Option<Layout>, skipped: &'a Skipped<'a>) -> Feed<'a> {
        Feed {
            name,
            layout,
            skipped,
        }
    }

    /// The fields of a data line; `None` for a header (a CDX legend sets
    /// the layout), and the first data line sets it when no legend did.
    fn fields<'l>(
        &mut self,
        line: &'l [u8],
    ) -> Option<Result<crate::stats::Fields<'l>, crate::stats::Error>> {
        if is_header(line) {
            if let Some(l) = Layout::from_legend(line) {
                self.layout = Some(l);
            }
            return None;
        }
        let layout = self.layout.get_or_insert_with(|| Layout::guess(line));
        Some(layout.fields(line))
    }

    /// Counts a line; its key goes to `keys` when given (the keys are
    /// sorted later), else into the scan's runs.
    fn line(
        &mut self,
        scan: &mut Scan,
        keys: Option<&mut ExternalSorter>,
        line: &[u8],
        at: At,
    ) -> Result<(), Error> {
        match self.fields(line) {
            None => Ok(()),
            Some(Ok(f)) => {
                let key = self.key_of(&f);
                let f = crate::stats::Fields { key: &key, ..f };
                scan.counts.add(&f);
                match keys {
                    Some(sorter) => sorter.push(&key).map_err(sorting)?,
                    None => scan.keys.add(&key),
                }
                Ok(())
            }
            Some(Err(cause)) => self.skipped.report(Error::Line {
                name: self.name.to_string(),
                at,
                cause,
            }),
        }
    }

    /// The key of a line, for a second reading (skipped lines were
    /// reported the first time).
    fn key<'l>(&mut self, line: &'l [u8]) -> Option<Cow<'l, [u8]>> {
        let f = self.fields(line)?.ok()?;
        Some(self.key_of(&f))
    }

    /// The key a line counts under (the SURT of a URL key, [`Layout::key`]).
    fn key_of<'l>(&self, f: &crate::stats::Fields<'l>) -> Cow<'l, [u8]> {
        match &self.layout {
            Some(layout) => layout.key(f),
            None => Cow::Borrowed(f.key),
        }
    }
}

/// Tells the progress display about bytes read, in steps.
struct Ticker<'p> {
    progress: Option<&'p dyn Progress>,
    pending: u64,
}

impl Ticker<'_> {
    fn add(&mut self, n: u64) {
        self.pending += n;
        if self.pending >= STEP {
            if let Some(p) = self.progress {
                p.advance(self.pending);
            }
            self.pending = 0;
        }
    }
}

impl Drop for Ticker<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.progress {
            p.advance(self.pending);
        }
    }
}

/// The layout a plain file's first lines give (its legend, or its first
/// data line), read through a small buffer.
fn layout_of_file(mut file: &File) -> io::Result<Option<Layout>> {
    file.seek(io::SeekFrom::Start(0))?;
    let mut r = io::BufReader::with_capacity(64 << 10, file);
    let mut line = Vec::new();
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        let l = line.strip_suffix(b"\n").unwrap_or(&line);
        if let Some(legend) = Layout::from_legend(l) {
            return Ok(Some(legend));
        }
        if !is_header(l) {
            return Ok(Some(Layout::guess(l)));
        }
    }
}

/// Runs the job.
pub fn run(job: &StatsJob, progress: Option<&dyn Progress>) -> Result<Outcome, Error> {
    let inputs = open_inputs(job)?;
    if let Some(p) = progress {
        p.start(inputs.iter().map(Input::size).sum());
    }
    let skipped = Skipped {
        count: Mutex::new(0),
        strict: job.strict,
        quiet: job.quiet,
        progress,
    };
    let mem = usize::try_from(job.mem).unwrap_or(usize::MAX);
    let mut scan = if job.unsorted {
        let mut sorter = ExternalSorter::new(mem, job.tmp_dir.clone());
        let mut scan = scan_stream(job, &inputs, &skipped, progress, Some(&mut sorter))?;
        scan.keys = sorted_keys(sorter, job.top)?;
        scan
    } else {
        match inputs.as_slice() {
            [Input::Plain { path, file }] => scan_parts(job, path, file, &skipped, progress)?,
            _ => scan_stream(job, &inputs, &skipped, progress, None)?,
        }
    };
    if let Some(key) = scan.out_of_order() {
        let key = String::from_utf8_lossy(key).into_owned();
        if let Some(i) = inputs.iter().find(|i| !i.rereadable()) {
            return Err(Error::Unsorted {
                name: i.name(),
                key,
            });
        }
        if !job.quiet {
            let line = format!(
                "ukvs stats: the keys are not sorted (the key {key} comes after a larger one): \
                 reading them again to sort them"
            );
            match progress {
                Some(p) => p.print(&line),
                None => crate::report!("{line}"),
            }
        }
        let mut sorter = ExternalSorter::new(mem, job.tmp_dir.clone());
        read_keys_again(&inputs, &mut sorter)?;
        scan.keys = sorted_keys(sorter, job.top)?;
    }
    if let Some(p) = progress {
        p.done();
    }
    Ok(Outcome {
        report: scan.finish(),
        skipped: skipped.total(),
    })
}

/// One plain file, in parts cut between hosts, on threads.
fn scan_parts(
    job: &StatsJob,
    path: &Path,
    file: &File,
    skipped: &Skipped<'_>,
    progress: Option<&dyn Progress>,
) -> Result<Scan, Error> {
    let name = super::fs::input_name(path);
    let layout = layout_of_file(file).map_err(|cause| Error::Read {
        what: format!("cannot read {}", path.display()),
        cause,
    })?;
    let threads = super::thread_count(job.threads);
    let cuts = cuts_between_surts(file, threads, PARALLEL_FROM).map_err(|cause| Error::Read {
        what: format!("cannot read {name}"),
        cause,
    })?;
    let parts: Vec<(u64, u64)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    // Mapped once the cuts are found: every cut lies within the map.
    let input = &PartInput::open(file, job.no_mmap);
    let read = |span: &Span| {
        let mut scan = Scan::new(job.top);
        let mut feed = Feed::new(&name, layout.clone(), skipped);
        let mut ticker = Ticker {
            progress,
            pending: 0,
        };
        let mut at = span.from;
        for_each_part_line::<Error>(input, span, |line, _| {
            feed.line(&mut scan, None, line, At::Offset(at))?;
            at += line.len() as u64 + 1;
            ticker.add(line.len() as u64 + 1);
            Ok(())
        })
        .map_err(|cause| Error::Part {
            name: name.clone(),
            cause: Box::new(cause),
        })?;
        Ok::<_, Error>(scan)
    };
    let (results, ()) = shared_parts(file, &parts, threads, read, || ());
    let mut whole: Option<Scan> = None;
    for r in results {
        let part = r?;
        match &mut whole {
            Some(w) => w.absorb(part),
            None => whole = Some(part),
        }
    }
    Ok(whole.unwrap_or_else(|| Scan::new(job.top)))
}

/// One input's lines front to back, each read into the caller's buffer:
/// a stream's lines go from its reader's buffer into it, with no
/// allocation per line.
enum InputLines<'s> {
    Stream {
        rdr: Numbered<Box<dyn BufRead + Send>>,
        ticker: Ticker<'s>,
    },
    Cluster {
        lines: super::lookup::SourceLines<'s>,
        name: &'s str,
        no: u64,
    },
}

impl<'s> InputLines<'s> {
    fn open(input: &'s Input, progress: Option<&'s dyn Progress>) -> Result<Self, Error> {
        Ok(match input {
            Input::Plain { path, .. } | Input::Stream { path } => InputLines::Stream {
                rdr: Numbered::new(input.name(), super::fs::open_input(path)?),
                ticker: Ticker {
                    progress,
                    pending: 0,
                },
            },
            Input::Cluster(source) => InputLines::Cluster {
                lines: source.every_line()?,
                name: source.name(),
                no: 0,
            },
        })
    }

    /// Reads the next line (without LF) into `buf`: where it is, or
    /// `None` at the end.
    fn next_into(&mut self, buf: &mut Vec<u8>) -> Result<Option<At>, Error> {
        match self {
            InputLines::Stream { rdr, ticker } => {
                let before = rdr.at();
                match rdr.read(buf) {
                    Ok(false) => Ok(None),
                    Ok(true) => {
                        ticker.add(rdr.at() - before);
                        Ok(Some(At::Line(rdr.line())))
                    }
                    Err(cause) => Err(Error::Read {
                        what: rdr.cannot_read(),
                        cause,
                    }),
                }
            }
            InputLines::Cluster { lines, name, no } => match lines.next() {
                None => Ok(None),
                Some(line) => {
                    let line = line.map_err(|cause| Error::Lines {
                        name: name.to_string(),
                        cause,
                    })?;
                    *no += 1;
                    buf.clear();
                    buf.extend_from_slice(&line);
                    Ok(Some(At::Line(*no)))
                }
            },
        }
    }
}

/// Every input as one stream (several merged by key), into one scan.
fn scan_stream(
    job: &StatsJob,
    inputs: &[Input],
    skipped: &Skipped<'_>,
    progress: Option<&dyn Progress>,
    mut keys: Option<&mut ExternalSorter>,
) -> Result<Scan, Error> {
    let names: Vec<String> = inputs.iter().map(Input::name).collect();
    let mut feeds: Vec<Feed<'_>> = names.iter().map(|n| Feed::new(n, None, skipped)).collect();
    let mut scan = Scan::new(job.top);
    if let [Input::Plain { path, .. } | Input::Stream { path }] = inputs {
        // One stream (gzip, stdin): its lines straight from the reader's
        // buffer, with nothing to merge.
        let mut ticker = Ticker {
            progress,
            pending: 0,
        };
        let input = super::fs::open_input(path)?;
        super::fs::for_each_line::<Error>(&names[0], input, |line, no| {
            ticker.add(line.len() as u64 + 1);
            feeds[0].line(&mut scan, keys.as_deref_mut(), line, At::Line(no))?;
            Ok(true)
        })?;
        return Ok(scan);
    }
    // Every input's next line, merged by key (ties in input order); a
    // line is fed from its input's buffer, which is then read into again.
    let mut each = Vec::with_capacity(inputs.len());
    let mut heads: Vec<(Vec<u8>, Option<At>)> = Vec::with_capacity(inputs.len());
    for input in inputs {
        let mut lines = InputLines::open(input, progress)?;
        let mut buf = Vec::new();
        let at = lines.next_into(&mut buf)?;
        each.push(lines);
        heads.push((buf, at));
    }
    loop {
        let mut best: Option<usize> = None;
        for (i, (line, at)) in heads.iter().enumerate() {
            if at.is_some() && best.map_or(true, |b| key_of(line) < key_of(&heads[b].0)) {
                best = Some(i);
            }
        }
        let Some(i) = best else { break };
        let (line, at) = &mut heads[i];
        if let Some(at) = at.take() {
            feeds[i].line(&mut scan, keys.as_deref_mut(), line, at)?;
        }
        *at = each[i].next_into(line)?;
    }
    Ok(scan)
}

/// The first field of a line (its key; headers sort first).
fn key_of(line: &[u8]) -> &[u8] {
    &line[..memchr::memchr(b' ', line).unwrap_or(line.len())]
}

/// Reads the keys of every input again, into `sorter`.
fn read_keys_again(inputs: &[Input], sorter: &mut ExternalSorter) -> Result<(), Error> {
    let quiet = Skipped {
        count: Mutex::new(0),
        strict: false,
        quiet: true,
        progress: None,
    };
    for input in inputs {
        let name = input.name();
        let mut feed = Feed::new(&name, None, &quiet);
        let mut lines = InputLines::open(input, None)?;
        let mut line = Vec::new();
        while lines.next_into(&mut line)?.is_some() {
            if let Some(key) = feed.key(&line) {
                sorter.push(&key).map_err(sorting)?;
            }
        }
    }
    Ok(())
}

/// The key figures of sorted keys.
fn sorted_keys(sorter: ExternalSorter, top: usize) -> Result<KeyRuns, Error> {
    let mut runs = KeyRuns::new(top);
    for key in sorter.finish().map_err(sorting)? {
        runs.add(&key.map_err(|cause| Error::Sort {
            what: "cannot read sorted keys back",
            cause,
        })?);
    }
    Ok(runs)
}

/// The statistics of an index as it is written (`ukvs index --stats`):
/// its lines, headers first, in chunks of whole lines (each ending in
/// LF). The figures are those `ukvs stats` gives of the finished index.
pub fn scan_chunks(
    top: usize,
    chunks: impl Iterator<Item = std::sync::Arc<Vec<u8>>>,
) -> Result<Report, Error> {
    let skipped = Skipped {
        count: Mutex::new(0),
        strict: false,
        quiet: false,
        progress: None,
    };
    let mut feed = Feed::new("the index", None, &skipped);
    let mut scan = Scan::new(top);
    let mut at = 0u64;
    for chunk in chunks {
        for line in chunk.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            at += 1;
            feed.line(&mut scan, None, line, At::Line(at))?;
        }
    }
    if let Some(key) = scan.out_of_order() {
        return Err(Error::NotInOrder {
            key: String::from_utf8_lossy(key).into_owned(),
        });
    }
    Ok(scan.finish())
}

/// How a report is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportFormat {
    /// For reading in a terminal.
    Text,
    Json,
    /// Rows `figure,key,value`.
    Csv,
    /// A self-contained page with charts, under this title.
    Html(String),
}

impl ReportFormat {
    /// The format a file name asks for: `.json`, `.csv`, `.html`/`.htm`,
    /// else text.
    pub fn for_path(path: &Path, title: &str) -> ReportFormat {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("json") => ReportFormat::Json,
            Some("csv") => ReportFormat::Csv,
            Some("html" | "htm") => ReportFormat::Html(title.to_string()),
            _ => ReportFormat::Text,
        }
    }
}

/// Writes a report to `path` (`-` = stdout), whole or not at all.
pub fn write_report(report: &Report, format: &ReportFormat, path: &Path) -> Result<(), Error> {
    use std::io::Write;
    let mut out = super::output::Output::create(path).map_err(Error::Output)?;
    let name = out.name();
    match format {
        ReportFormat::Text => crate::stats::write_text(report, &mut out),
        ReportFormat::Json => out.write_all(report.to_json().as_bytes()),
        ReportFormat::Csv => crate::stats::write_csv(report, &mut out),
        ReportFormat::Html(title) => crate::stats::html::write_html(report, title, &mut out),
    }
    .map_err(|cause| Error::Write { name, cause })?;
    out.commit().map_err(Error::Output)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINES: &str = "com,example)/ 20200101000000 {\"url\": \"http://example.com/\", \
                         \"mime\": \"text/html\", \"status\": \"200\"}\n\
                         org,example)/ 20200102000000 {\"url\": \"http://example.org/\", \
                         \"mime\": \"text/html\", \"status\": \"200\"}\n";

    fn job(inputs: Vec<PathBuf>) -> StatsJob {
        StatsJob {
            inputs,
            top: 10,
            threads: 1,
            mem: 1 << 20,
            tmp_dir: None,
            unsorted: false,
            strict: false,
            no_mmap: false,
            quiet: true,
        }
    }

    #[test]
    fn a_missing_input_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let absent = dir.path().join("absent.cdxj");
        let err = run(&job(vec![absent.clone()]), None).unwrap_err();
        assert_eq!(err.kind(), Kind::Missing);
        assert_eq!(
            err.to_string(),
            format!("cannot open {}", absent.display()),
            "{err:?}"
        );
    }

    #[test]
    fn a_gzip_cut_short_is_damaged_and_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = crate::engine::error::fixtures::cut_gzip_index(dir.path());
        let err = run(&job(vec![path.clone()]), None).unwrap_err();
        assert_eq!(err.kind(), Kind::Damaged, "{err:?}");
        let named = format!("cannot read {} after line ", path.display());
        assert!(err.to_string().starts_with(&named), "{err}");
        // The whole file reads.
        let whole = dir.path().join("whole.cdxj");
        std::fs::write(&whole, LINES).unwrap();
        let done = run(&job(vec![whole]), None).unwrap();
        assert_eq!(done.skipped, 0);
    }

    #[test]
    fn strict_stops_at_a_line_that_is_no_capture_as_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.cdxj");
        std::fs::write(&path, format!("{LINES}org,example)/x\n")).unwrap();
        // Without --strict the line is counted as skipped.
        let done = run(&job(vec![path.clone()]), None).unwrap();
        assert_eq!(done.skipped, 1);
        let err = run(
            &StatsJob {
                strict: true,
                ..job(vec![path.clone()])
            },
            None,
        )
        .unwrap_err();
        assert_eq!(err.kind(), Kind::BadInput, "{err:?}");
        // Read in parts, a plain file's line is named by its byte offset.
        let offset = LINES.len();
        let name = path.display();
        assert_eq!(err.to_string(), format!("cannot read {name}"));
        let line = std::error::Error::source(&err).expect("the line at fault");
        let at = format!("{name}: offset {offset}: ");
        assert!(line.to_string().starts_with(&at), "{line}");
    }

    #[test]
    fn an_index_written_out_of_order_is_bad_input() {
        let mut lines: Vec<&str> = LINES.lines().collect();
        lines.reverse();
        let chunk = std::sync::Arc::new(format!("{}\n", lines.join("\n")).into_bytes());
        let err = scan_chunks(10, std::iter::once(chunk)).unwrap_err();
        assert_eq!(err.kind(), Kind::BadInput);
        assert!(
            err.to_string()
                .starts_with("the index's keys are not in byte order (the key com,example)/"),
            "{err}"
        );
    }
}
