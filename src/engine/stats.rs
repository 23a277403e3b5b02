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

use anyhow::{bail, Context};

use crate::sorted::lines::Numbered;
use crate::sorted::ExternalSorter;
use crate::stats::{is_header, KeyRuns, Layout, Report, Scan};

use super::lookup::{Listing, Source};
use super::parts::{cuts_between_surts, for_each_part_line, shared_parts, PartInput, Span};
use super::progress::Progress;

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

fn open_inputs(job: &StatsJob) -> anyhow::Result<Vec<Input>> {
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
fn plain_or_stream(p: &Path) -> anyhow::Result<Input> {
    let file = File::open(p).with_context(|| format!("cannot open {}", p.display()))?;
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
    fn report(&self, text: String) -> anyhow::Result<()> {
        if self.strict {
            bail!("{text}");
        }
        let mut n = self.count.lock().unwrap_or_else(|e| e.into_inner());
        *n += 1;
        if *n <= SHOWN && !self.quiet {
            let line = format!("ukvs stats: {text} (skipped)");
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
#[derive(Clone, Copy)]
enum At {
    Offset(u64),
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
    ) -> anyhow::Result<()> {
        match self.fields(line) {
            None => Ok(()),
            Some(Ok(f)) => {
                let key = self.key_of(&f);
                let f = crate::stats::Fields { key: &key, ..f };
                scan.counts.add(&f);
                match keys {
                    Some(sorter) => sorter
                        .push(&key)
                        .context("cannot sort the keys of unsorted input")?,
                    None => scan.keys.add(&key),
                }
                Ok(())
            }
            Some(Err(e)) => self.skipped.report(format!("{}: {at}: {e}", self.name)),
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
pub fn run(job: &StatsJob, progress: Option<&dyn Progress>) -> anyhow::Result<Outcome> {
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
            bail!(
                "{} is not sorted (the key {key} comes after a larger one); give --unsorted \
                 to count distinct URLs and hosts of unsorted input, which sorts its keys",
                i.name()
            );
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
) -> anyhow::Result<Scan> {
    let name = super::fs::input_name(path);
    let layout = layout_of_file(file).with_context(|| format!("cannot read {}", path.display()))?;
    let threads = super::thread_count(job.threads);
    let cuts = cuts_between_surts(file, threads, PARALLEL_FROM)
        .with_context(|| format!("cannot read {name}"))?;
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
        for_each_part_line(input, span, |line, _| {
            feed.line(&mut scan, None, line, At::Offset(at))?;
            at += line.len() as u64 + 1;
            ticker.add(line.len() as u64 + 1);
            Ok(())
        })
        .with_context(|| format!("cannot read {name}"))?;
        Ok(scan)
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
    fn open(input: &'s Input, progress: Option<&'s dyn Progress>) -> anyhow::Result<Self> {
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
    fn next_into(&mut self, buf: &mut Vec<u8>) -> anyhow::Result<Option<At>> {
        match self {
            InputLines::Stream { rdr, ticker } => {
                let before = rdr.at();
                match rdr.read(buf) {
                    Ok(false) => Ok(None),
                    Ok(true) => {
                        ticker.add(rdr.at() - before);
                        Ok(Some(At::Line(rdr.line())))
                    }
                    Err(e) => Err(anyhow::Error::new(e).context(rdr.cannot_read())),
                }
            }
            InputLines::Cluster { lines, name, no } => match lines.next() {
                None => Ok(None),
                Some(line) => {
                    let line = line.map_err(|e| anyhow::anyhow!("cannot read {name}: {e}"))?;
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
) -> anyhow::Result<Scan> {
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
        super::fs::for_each_line::<anyhow::Error>(&names[0], input, |line, no| {
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
fn read_keys_again(inputs: &[Input], sorter: &mut ExternalSorter) -> anyhow::Result<()> {
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
                sorter
                    .push(&key)
                    .context("cannot sort the keys of unsorted input")?;
            }
        }
    }
    Ok(())
}

/// The key figures of sorted keys.
fn sorted_keys(sorter: ExternalSorter, top: usize) -> anyhow::Result<KeyRuns> {
    let mut runs = KeyRuns::new(top);
    for key in sorter
        .finish()
        .context("cannot sort the keys of unsorted input")?
    {
        runs.add(&key.context("cannot read sorted keys back")?);
    }
    Ok(runs)
}

/// The statistics of an index as it is written (`ukvs index --stats`):
/// its lines, headers first, in chunks of whole lines (each ending in
/// LF). The figures are those `ukvs stats` gives of the finished index.
pub fn scan_chunks(
    top: usize,
    chunks: impl Iterator<Item = std::sync::Arc<Vec<u8>>>,
) -> anyhow::Result<Report> {
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
        bail!(
            "the index's keys are not in byte order (the key {} comes after a larger one); \
             run `ukvs stats` on the index instead",
            String::from_utf8_lossy(key)
        );
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
pub fn write_report(report: &Report, format: &ReportFormat, path: &Path) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = super::output::Output::create(path)?;
    let name = out.name();
    match format {
        ReportFormat::Text => crate::stats::write_text(report, &mut out),
        ReportFormat::Json => out.write_all(report.to_json().as_bytes()),
        ReportFormat::Csv => crate::stats::write_csv(report, &mut out),
        ReportFormat::Html(title) => crate::stats::html::write_html(report, title, &mut out),
    }
    .with_context(|| format!("cannot write {name}"))?;
    out.commit()?;
    Ok(())
}
