//! MementoMap jobs over files: generate, compact, merge, look up and
//! evaluate, for every front end.
//!
//! The algorithms live in [`crate::mementomap`]; this module owns the
//! files: memory maps of inputs, the temporary spools that let the
//! compactor rewind without holding a subtree in memory, gzip readers and
//! atomic outputs (temp file + rename), and the threads that read one
//! large input in parts. Each job takes a plain description
//! ([`GenerateJob`], [`CompactJob`], ...) and reports on stderr unless
//! told to be quiet.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::mementomap::compact::{Compactor, Params, Spool, Stats};
use crate::mementomap::evaluate::{evaluate, Evaluation};
use crate::mementomap::generate::{
    exclusion_key, Dimension, GenStats, Generator, Options, Orderer, Routed,
};
use crate::mementomap::header::{iso8601, Header};
use crate::mementomap::key::map_key;
use crate::mementomap::lookup::{DatetimeRange, Map};
use crate::mementomap::merge::{
    fold, fold_records, fold_records_from, key_at, Lines, Merger, Source, Summary,
};
use crate::mementomap::{Error as MapError, Frequency, Record};
use crate::sorted::lines::Numbered;
use crate::sorted::ExternalSorter;
use anyhow::{bail, Context};

use super::error::Kind;
use super::fs::{
    for_each_line, index_content_of, input_name, is_stdin, open_input, open_input_unbuffered,
    open_input_with, open_map, AlignedReader, Content, Expected,
};
use super::lookup::Source as IndexSource;
use super::output::Output;
use super::parts::{cuts_between_surts, for_each_part_line, shared_parts, PartInput, Span};

/// Why a MementoMap job failed. Its steps that name their own failures
/// give them here by variant; the others keep the chain of what failed
/// (file, line, cause) in [`Error::Job`], whose kind is that of the
/// first engine error in it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input file cannot be opened.
    #[error(transparent)]
    Open(#[from] super::error::OpenError),
    /// `--layout columns` with other than one `--by` dimension.
    #[error("--layout columns needs exactly one --by dimension")]
    Columns,
    /// `mementomap evaluate` with neither a map nor `--sweep`.
    #[error("give a MAP to evaluate, or --sweep")]
    NothingToEvaluate,
    /// `--datetime` on a map without datetime buckets.
    #[error(
        "{}: --datetime needs datetime buckets, but the second key column is not `datetime`",
        .map.display()
    )]
    NoDatetime { map: std::path::PathBuf },
    /// `--max-lines` / `--max-bytes` below the smallest map with full
    /// recall (`quota` names the options given).
    #[error(
        "the quota{quota} cannot be met with full recall: the smallest such map (`*` and \
         {zeros} exclusion entries) has {lines} lines and {bytes} bytes"
    )]
    Quota {
        quota: String,
        zeros: u64,
        lines: u64,
        bytes: u64,
    },
    /// The index being written stopped before its end (its own error
    /// says why).
    #[error("the index was not finished: no map is written")]
    Unfinished,
    /// A step failed: the chain names the file, line and cause.
    #[error(transparent)]
    Job(Chain),
}

/// The chain of errors of a step that failed, from what it was doing
/// to the first cause.
#[derive(Debug)]
pub struct Chain(anyhow::Error);

impl Chain {
    /// Each error of the chain, outermost first.
    pub fn causes(&self) -> impl Iterator<Item = &(dyn std::error::Error + 'static)> {
        self.0.chain()
    }
}

impl std::fmt::Display for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The outermost message: its causes are the `source`s.
        std::fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Chain {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Open(e) => e.kind(),
            Error::Columns | Error::NothingToEvaluate | Error::NoDatetime { .. } => Kind::Usage,
            Error::Quota { .. } => Kind::Usage,
            Error::Unfinished => Kind::Io,
            Error::Job(chain) => chain.causes().find_map(kind_of_cause).unwrap_or(Kind::Io),
        }
    }
}

/// A step's chain made typed: an error of this module at its top is
/// itself, anything else is kept whole in [`Error::Job`].
impl From<anyhow::Error> for Error {
    fn from(e: anyhow::Error) -> Error {
        match e.downcast::<Error>() {
            Ok(e) => e,
            Err(e) => Error::Job(Chain(e)),
        }
    }
}

/// The kind of one error of a chain when its type says one: this
/// module's, an input's, a source's, a map's format, a sorted file's,
/// I/O.
fn kind_of_cause(e: &(dyn std::error::Error + 'static)) -> Option<Kind> {
    let job = super::error::kind_of!(e; Error, super::fs::Error, super::lookup::Error);
    if job.is_some() {
        return job;
    }
    if e.downcast_ref::<MapError>().is_some() {
        return Some(Kind::BadInput);
    }
    if let Some(e) = e.downcast_ref::<crate::sorted::Error>() {
        return Some(Kind::of_sorted(e));
    }
    e.downcast_ref::<io::Error>().map(Kind::of_io)
}

/// Power-law rollup parameters (the reference tool's names and defaults).
#[derive(Debug, Clone)]
pub struct Rollup {
    /// Host compaction factor: smaller rolls up harder ("inf" = never).
    pub hcf: Option<f64>,
    /// Path compaction factor: smaller rolls up harder ("inf" = never).
    pub pcf: Option<f64>,
    /// Host power-law alpha.
    pub ha: f64,
    /// Host power-law k.
    pub hk: f64,
    /// Path power-law alpha.
    pub pa: f64,
    /// Path power-law k.
    pub pk: f64,
    /// Host levels tracked.
    pub hdepth: u16,
    /// Path levels tracked.
    pub pdepth: u16,
    /// Compact until the map has at most N data lines (100 % recall kept).
    pub max_lines: Option<u64>,
    /// Compact until the map file, headers included, has at most N bytes
    /// (100 % recall kept); an error when even the map `*` (plus exclusion
    /// entries) is bigger.
    pub max_bytes: Option<u64>,
}

impl Default for Rollup {
    /// No rollup, the reference tool's power-law parameters.
    fn default() -> Rollup {
        let p = Params::GENERATE;
        Rollup {
            hcf: None,
            pcf: None,
            ha: p.ha,
            hk: p.hk,
            pa: p.pa,
            pk: p.pk,
            hdepth: p.hdepth as u16,
            pdepth: p.pdepth as u16,
            max_lines: None,
            max_bytes: None,
        }
    }
}

impl Rollup {
    pub fn params(&self, default_factor: f64) -> Params {
        Params {
            hcf: self.hcf.unwrap_or(default_factor),
            pcf: self.pcf.unwrap_or(default_factor),
            ha: self.ha,
            hk: self.hk,
            pa: self.pa,
            pk: self.pk,
            hdepth: usize::from(self.hdepth),
            pdepth: usize::from(self.pdepth),
        }
    }
}

/// Options shared by the commands that write a map.
#[derive(Debug, Clone)]
pub struct MapOutput {
    /// Output map ("-" = stdout).
    pub output: PathBuf,
    /// URI of the archive, written as `!id {"uri": ...}`.
    pub id: Option<String>,
    /// Name written into `!meta`.
    pub name: Option<String>,
    /// The `source` of `!meta`, when not the inputs' names.
    pub source: Vec<String>,
    /// Directory for temporary files (default: beside the output, or the
    /// system's).
    pub tmp_dir: Option<PathBuf>,
    /// No summary on stderr.
    pub quiet: bool,
}

/// Build a MementoMap from sorted capture indexes.
///
/// Inputs: our UKVS capture index, CDXJ, CDX or a plain SURT list, plain
/// or gzipped, files or "-" for stdin, ZipNum clusters (local or remote)
/// and directories of sorted files; each must be sorted in byte order
/// (LC_ALL=C). Several inputs are merged into one sorted stream first, so
/// a URL found in two of them counts once as URI-R (captures are lines: a
/// line present in two inputs counts twice as URI-M). One streaming pass;
/// memory O(key depth): rollups rewind a temporary file, never a buffer.
/// Without rollup options every URI key gets its own line (the
/// reference's `generate`); with --hcf/--pcf or a quota the power-law
/// rollup of `compact` is applied on the way.
#[derive(Debug, Clone)]
pub struct GenerateJob {
    /// Sorted capture indexes ("-" = stdin).
    pub inputs: Vec<PathBuf>,
    pub out: MapOutput,
    pub rollup: Rollup,
    /// Keep query strings in keys (the reference drops them).
    pub keep_query: bool,
    /// Decompose counts in the OSLJ: datetime:year, datetime:month,
    /// status, mime (repeatable).
    pub by: Vec<Dimension>,
    /// File of SURT prefixes the archive cannot serve: their captures are
    /// not counted and `0/N` entries are written instead. pywb access
    /// rules (`.aclj`) are read too: their `exclude` and `block` rules
    /// (without user or date limits) are the prefixes, a `###` rule one
    /// exact key.
    pub exclude: Option<PathBuf>,
    /// Stop at the first bad input line instead of reporting and skipping.
    pub strict: bool,
    /// Threads reading one large input file in parts; 0 uses every core.
    pub threads: usize,
    /// Read a plain input file instead of mapping it into memory.
    pub no_mmap: bool,
    /// Where a decomposition goes: into the OSLJ, or as a second key column
    /// (one line per bucket plus a total line `key : freq`; needs exactly
    /// one --by).
    pub layout: Layout,
}

impl GenerateJob {
    /// The map of `inputs` written to `output` as the reference writes
    /// it: no rollup, decomposition or exclusions, one thread, quiet.
    pub fn new(inputs: Vec<PathBuf>, output: PathBuf) -> GenerateJob {
        GenerateJob {
            inputs,
            out: MapOutput {
                output,
                id: None,
                name: None,
                source: Vec::new(),
                tmp_dir: None,
                quiet: true,
            },
            rollup: Rollup::default(),
            keep_query: false,
            by: Vec::new(),
            exclude: None,
            strict: false,
            threads: 1,
            no_mmap: false,
            layout: Layout::Oslj,
        }
    }
}

/// The two organisations of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `key frequency {"datetime":{...}}`.
    Oslj,
    /// `key bucket frequency`.
    Columns,
}

/// Roll up an existing MementoMap with the power-law cut-offs.
///
/// Input must be sorted; output has the same headers with a fresh `!meta`.
/// Memory O(depth); a smaller factor compacts harder, and a compacted map
/// can be compacted again.
#[derive(Debug, Clone)]
pub struct CompactJob {
    /// Map to compact ("-" = stdin; .gz accepted).
    pub input: PathBuf,
    pub out: MapOutput,
    pub rollup: Rollup,
}

/// Merge sorted MementoMaps (e.g. of shards) into one.
///
/// A k-way streaming merge; equal keys are summed with the frequency
/// algebra. URI-R sums become upper bounds (`-`) unless --disjoint.
#[derive(Debug, Clone)]
pub struct MergeJob {
    /// Maps to merge (.gz accepted).
    pub inputs: Vec<PathBuf>,
    pub out: MapOutput,
    /// The inputs share no URI (key-disjoint shards): URI-R sums stay exact.
    pub disjoint: bool,
}

/// Look URLs or SURTs up in a MementoMap.
///
/// Prints `key frequency steps query` for the most specific entry (steps =
/// generalisations needed, 0 = exact), or `- - - query` when nothing
/// covers it. A `0` entry means "not held". Exit 0 when at least one query
/// is covered, 1 when none is. Binary search in a memory map: no loading.
#[derive(Debug, Clone)]
pub struct LookupJob {
    /// The map.
    pub map: PathBuf,
    /// URLs or SURTs; "-" or nothing = one per line from stdin.
    pub queries: Vec<String>,
    /// The map was generated with --keep-query.
    pub keep_query: bool,
    /// Worker threads for a batch; 0 uses every core.
    pub threads: usize,
    /// Count only captures made during RANGE (`2014`, `2010:2012`,
    /// `:2009`, `201603:`), from the map's datetime buckets (a `datetime`
    /// key column or OSLJ member); buckets that only overlap the range, or
    /// entries without buckets, give upper bounds (`n-`). An entry with no
    /// bucket in the range answers `0` (not held then).
    pub datetime: Option<DatetimeRange>,
}

/// Measure a map: relative cost and the presence decisions on queries
/// (TP/FP/TN/FN, accuracy, precision, recall).
///
/// Builds the archive's uncompacted map from --index in memory as the
/// truth. With --sweep, prints one row per compaction factor instead of
/// evaluating MAP, so an archive can pick its size.
#[derive(Debug, Clone)]
pub struct EvaluateJob {
    /// The map to evaluate (not needed with --sweep).
    pub map: Option<PathBuf>,
    /// The archive's sorted capture index.
    pub index: PathBuf,
    /// URLs or SURTs, one per line.
    pub queries: PathBuf,
    /// Evaluate the index compacted at a range of factors.
    pub sweep: bool,
    /// Factors for --sweep.
    pub factors: Vec<f64>,
}

// ---------------------------------------------------------------- inputs

/// A plain input file that can be read in parts (`None` for stdin,
/// compressed files, and what is not a regular, non-empty file: those are
/// read as streams); what holds no index lines is refused.
fn plain_input(p: &Path) -> anyhow::Result<Option<File>> {
    if is_stdin(p) {
        return Ok(None);
    }
    let f = super::error::open(p).map_err(Error::Open)?;
    let meta = f.metadata()?;
    if !meta.is_file() || meta.len() == 0 || index_content_of(p, &f)? != Content::Plain {
        return Ok(None);
    }
    Ok(Some(f))
}

/// A line of one of several inputs: bytes (no LF), input index, 1-based
/// line number.
type InputLine = (Vec<u8>, usize, u64);

/// A ZipNum cluster among a generation's inputs (its directory, its
/// `.idx`, or the URL of either), opened; `None` for a file or stdin.
type ClusterInput = Option<Box<IndexSource>>;

/// Whether `p` is read as a cluster or a directory of sorted files (as
/// `cat` and `stats` read them) rather than as one file.
fn is_listing(p: &Path) -> bool {
    !is_stdin(p)
        && (p.is_dir() || p.extension().is_some_and(|e| e == "idx") || super::cluster::is_remote(p))
}

/// The inputs of a generation as they are read: a ZipNum cluster, local
/// or remote, opened (its lines are read block after block); a directory
/// of sorted files replaced by its files, the parts of one index. The
/// job's inputs become what is read; its `!meta` source stays the names
/// given.
fn open_clusters(a: &mut GenerateJob) -> anyhow::Result<Vec<ClusterInput>> {
    if !a.inputs.iter().any(|p| is_listing(p)) {
        return Ok(a.inputs.iter().map(|_| None).collect());
    }
    let mut inputs = Vec::new();
    let mut clusters = Vec::new();
    for p in &a.inputs {
        if !is_listing(p) {
            inputs.push(p.clone());
            clusters.push(None);
            continue;
        }
        match super::lookup::listing(p)? {
            super::lookup::Listing::Cluster(idx) => {
                clusters.push(Some(Box::new(IndexSource::cluster(&idx, a.no_mmap)?)));
                inputs.push(p.clone());
            }
            super::lookup::Listing::File(f) => {
                inputs.push(f);
                clusters.push(None);
            }
            super::lookup::Listing::Dir(files) => {
                clusters.extend(files.iter().map(|_| None));
                inputs.extend(files);
            }
        }
    }
    if a.out.source.is_empty() {
        a.out.source = a.inputs.iter().map(|p| p.display().to_string()).collect();
    }
    a.inputs = inputs;
    Ok(clusters)
}

/// The lines of a cluster, numbered from 1, as input `i`.
fn cluster_lines(
    i: usize,
    cluster: &IndexSource,
) -> anyhow::Result<impl Iterator<Item = anyhow::Result<InputLine>> + '_> {
    let name = cluster.name();
    let failed = move |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot read {name}: {e}");
    let lines = cluster.every_line().map_err(|e| failed(&e))?;
    Ok(lines.zip(1..).map(move |(line, no)| match line {
        Ok(line) => Ok((line.into_owned(), i, no)),
        Err(e) => Err(failed(&e)),
    }))
}

/// The lines of several sorted inputs in byte order (a k-way merge; equal
/// lines in input order). Memory: one line per input (a cluster's: one
/// block and the blocks read ahead).
fn merged_lines<'s>(
    inputs: &[PathBuf],
    clusters: &'s [ClusterInput],
) -> anyhow::Result<impl Iterator<Item = anyhow::Result<InputLine>> + 's> {
    let mut streams: Vec<Box<dyn Iterator<Item = anyhow::Result<InputLine>> + 's>> =
        Vec::with_capacity(inputs.len());
    for (i, (p, cluster)) in inputs.iter().zip(clusters).enumerate() {
        if let Some(cluster) = cluster {
            streams.push(Box::new(cluster_lines(i, cluster)?));
            continue;
        }
        let mut r = Numbered::new(input_name(p), open_input(p)?);
        streams.push(Box::new(std::iter::from_fn(move || {
            let mut buf = Vec::new();
            match r.read(&mut buf) {
                Ok(false) => None,
                Ok(true) => Some(Ok((buf, i, r.line()))),
                Err(e) => Some(Err(anyhow::Error::new(e).context(r.cannot_read()))),
            }
        })));
    }
    // Errors first, so a failing input stops the run at once.
    Ok(itertools::kmerge_by(
        streams,
        |x: &anyhow::Result<InputLine>, y: &anyhow::Result<InputLine>| match (x, y) {
            (Ok((lx, ix, _)), Ok((ly, iy, _))) => (lx, ix) < (ly, iy),
            (Err(_), _) => true,
            (Ok(_), Err(_)) => false,
        },
    ))
}

/// Records of a sorted map file (headers skipped).
fn map_source(p: &Path) -> anyhow::Result<Source> {
    let mut r = Numbered::new(input_name(p), open_map(p)?);
    let mut buf = Vec::new();
    Ok(Box::new(std::iter::from_fn(move || loop {
        match r.read(&mut buf) {
            Ok(false) => return None,
            Ok(true) => {}
            Err(e) => {
                let said = format!("{}: {e}", r.cannot_read());
                return Some(Err(MapError::Io(io::Error::new(e.kind(), said))));
            }
        }
        let line = buf.as_slice();
        if line.is_empty() || line[0] == b'!' {
            continue;
        }
        return Some(Record::parse(line, r.line()).map_err(|e| match e {
            MapError::Line {
                line,
                offset,
                reason,
            } => MapError::Line {
                line,
                offset,
                reason: format!("{}: {reason}", r.name()),
            },
            other => other,
        }));
    })))
}

/// The SURT profile the `!meta` headers of `inputs` record (indexes made
/// by `ukvs index`, maps made from them), `None` when none records one;
/// inputs that record different profiles are refused, since their keys do
/// not meet.
fn surt_profile_of(
    inputs: &[PathBuf],
    expected: Expected,
) -> anyhow::Result<Option<crate::surt::Options>> {
    let mut headers = Vec::new();
    for p in inputs {
        let name = p.display().to_string();
        headers.extend(
            read_headers(p, expected)?
                .into_iter()
                .map(|h| (name.clone(), h)),
        );
    }
    crate::capture::surt_profile_in_headers(headers.iter().map(|(n, h)| (n.as_str(), h.as_bytes())))
        .map_err(anyhow::Error::msg)
}

/// Records a SURT profile in a map's `!meta`.
fn record_surt_profile(header: &mut Header, profile: Option<crate::surt::Options>) {
    if let Some(o) = profile {
        header
            .extra
            .insert("surt".into(), crate::capture::surt_profile(&o));
    }
}

/// Header lines of an index or a map (for compact to carry `!id` over,
/// and for the SURT profile).
fn read_headers(p: &Path, expected: Expected) -> anyhow::Result<Vec<String>> {
    // A ZipNum cluster holds no header lines.
    if is_stdin(p) || (expected == Expected::Index && is_listing(p)) {
        return Ok(Vec::new());
    }
    let mut r = open_input_with(p, 16 << 10, expected)?;
    let mut out = Vec::new();
    let mut line = String::new();
    while r.read_line(&mut line).unwrap_or(0) > 0 && line.starts_with('!') {
        out.push(line.trim_end().to_string());
        line.clear();
    }
    Ok(out)
}

// ---------------------------------------------------------------- spools

/// An unnamed working file in the temporary directory, buffered; a failed
/// write (a full disk) names the directory, which the user can change.
struct WorkFile {
    w: BufWriter<File>,
    dir: PathBuf,
}

impl WorkFile {
    fn new(tmp: &Path, capacity: usize) -> anyhow::Result<WorkFile> {
        let file = tempfile::tempfile_in(tmp)
            .with_context(|| format!("creating a temporary file in {}", tmp.display()))?;
        Ok(WorkFile {
            w: BufWriter::with_capacity(capacity, file),
            dir: tmp.to_path_buf(),
        })
    }

    fn named(&self, e: io::Error) -> io::Error {
        work_file_error(e, &self.dir)
    }

    /// The file, everything written.
    fn into_file(self) -> io::Result<File> {
        let dir = self.dir;
        self.w
            .into_inner()
            .map_err(|e| work_file_error(e.into_error(), &dir))
    }
}

impl Write for WorkFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.w.write(buf).map_err(|e| self.named(e))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.w.write_all(buf).map_err(|e| self.named(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush().map_err(|e| self.named(e))
    }
}

/// Memory for the maps of the parts of a generation: what is left of it
/// over all parts, and the most one part may hold.
struct MapMemory {
    left: AtomicUsize,
    part_max: usize,
}

impl MapMemory {
    fn new(all: usize, part_max: usize) -> MapMemory {
        MapMemory {
            left: AtomicUsize::new(all),
            part_max,
        }
    }

    /// Whether `n` more bytes fit; they are taken when they do.
    fn take(&self, n: usize) -> bool {
        let take = |left: usize| left.checked_sub(n);
        self.left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, take)
            .is_ok()
    }

    /// Gives back `n` bytes taken.
    fn give_back(&self, n: usize) {
        self.left.fetch_add(n, Ordering::Relaxed);
    }
}

/// The map lines of one part of a generation: held in memory while its
/// [`MapMemory`] lasts, then in an unnamed working file. A part's map is
/// small next to its input (one line per URI key); held in memory, it goes
/// to the output with one write, where a file costs a write, a copy into
/// the output and the release of its pages.
struct PartMap<'m> {
    mem: Vec<u8>,
    /// Past what this gives, the lines go to `file`.
    memory: &'m MapMemory,
    file: Option<WorkFile>,
    /// Write buffer of the file, once there is one.
    capacity: usize,
    tmp: PathBuf,
}

/// A finished [`PartMap`]: its bytes, or its file at its start.
enum Part {
    Mem(Vec<u8>),
    File(File),
}

impl<'m> PartMap<'m> {
    fn new(tmp: &Path, memory: &'m MapMemory, capacity: usize) -> PartMap<'m> {
        PartMap {
            // Reserved whole, so that growing never copies it: untouched,
            // the reservation costs address space, not memory.
            mem: Vec::with_capacity(memory.part_max),
            memory,
            file: None,
            capacity,
            tmp: tmp.to_path_buf(),
        }
    }

    fn finish(self) -> anyhow::Result<Part> {
        match self.file {
            None => Ok(Part::Mem(self.mem)),
            Some(w) => {
                let mut file = w.into_file()?;
                file.seek(SeekFrom::Start(0))?;
                Ok(Part::File(file))
            }
        }
    }
}

impl Write for PartMap<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.file.is_none() {
            let fits = self.mem.len() + buf.len() <= self.memory.part_max;
            if fits && self.memory.take(buf.len()) {
                self.mem.extend_from_slice(buf);
                return Ok(());
            }
            let mut w = WorkFile::new(&self.tmp, self.capacity)
                .map_err(|e| io::Error::other(format!("{e:#}")))?;
            w.write_all(&self.mem)?;
            // In a file now: its memory is free for the other parts.
            self.memory.give_back(self.mem.len());
            self.mem = Vec::new();
            self.file = Some(w);
        }
        match &mut self.file {
            Some(w) => w.write_all(buf),
            None => Ok(()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

impl Part {
    /// The lines, read from the start.
    fn into_reader(self) -> Box<dyn Read + Send> {
        match self {
            Part::Mem(bytes) => Box::new(io::Cursor::new(bytes)),
            Part::File(file) => Box::new(file),
        }
    }
}

/// A failed write of a working file, naming its directory.
fn work_file_error(e: io::Error, dir: &Path) -> io::Error {
    io::Error::new(
        e.kind(),
        format!(
            "cannot write a working file in {} (--tmp-dir): {e}",
            dir.display()
        ),
    )
}

/// A [`Spool`] on a temporary file: the tail stays in memory, the rest is
/// written out; rewinding past the buffer truncates the file.
struct FileSpool {
    file: File,
    file_len: u64,
    buf: Vec<u8>,
    /// The directory of the (unnamed) file, for messages.
    dir: PathBuf,
}

impl FileSpool {
    fn new(tmp: &Path) -> anyhow::Result<FileSpool> {
        Ok(FileSpool {
            file: tempfile::tempfile_in(tmp)
                .with_context(|| format!("creating a temporary file in {}", tmp.display()))?,
            file_len: 0,
            buf: Vec::with_capacity(1 << 20),
            dir: tmp.to_path_buf(),
        })
    }

    /// A reader of everything spooled so far; the spool stays usable.
    fn reader(&mut self) -> io::Result<File> {
        self.flush_buf()?;
        let mut f = self.file.try_clone()?;
        f.seek(SeekFrom::Start(0))?;
        Ok(f)
    }

    /// Flushes and returns the file positioned at its start.
    fn into_reader(mut self) -> io::Result<File> {
        self.flush_buf()?;
        self.file.seek(SeekFrom::Start(0))?;
        Ok(self.file)
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        let written = self
            .file
            .seek(SeekFrom::Start(self.file_len))
            .and_then(|_| self.file.write_all(&self.buf));
        written.map_err(|e| work_file_error(e, &self.dir))?;
        self.file_len += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

impl Spool for FileSpool {
    fn position(&self) -> u64 {
        self.file_len + self.buf.len() as u64
    }
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= 1 << 20 {
            self.flush_buf()?;
        }
        Ok(())
    }
    fn truncate(&mut self, pos: u64) -> io::Result<()> {
        if pos >= self.file_len {
            self.buf.truncate((pos - self.file_len) as usize);
        } else {
            self.buf.clear();
            self.file.set_len(pos)?;
            self.file_len = pos;
        }
        Ok(())
    }
}

fn tmp_dir(out: &MapOutput) -> PathBuf {
    if let Some(d) = &out.tmp_dir {
        return d.clone();
    }
    if !is_stdin(&out.output) {
        if let Some(parent) = out.output.parent() {
            if parent.as_os_str().is_empty() {
                return PathBuf::from(".");
            }
            return parent.to_path_buf();
        }
    }
    std::env::temp_dir()
}

/// Writes `header` then the spooled body to the output, atomically for
/// files.
fn write_output(out: &MapOutput, header: &[u8], mut body: impl Read) -> anyhow::Result<()> {
    let mut w = Output::create(&out.output)?;
    w.write_all(header)?;
    io::copy(&mut body, &mut w)?;
    Ok(w.commit()?)
}

/// The time a map is written, for its `updated_at`: SOURCE_DATE_EPOCH
/// (seconds) when set, as reproducible builds use it, so that a map can be
/// made again byte for byte; else the clock.
fn now() -> String {
    let fixed = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(secs) = fixed {
        return iso8601(secs);
    }
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    iso8601(secs)
}

fn header_for(out: &MapOutput, sources: &[PathBuf], total: Option<Frequency>) -> Header {
    let source = match out.source.is_empty() {
        true => sources.iter().map(|p| p.display().to_string()).collect(),
        false => out.source.clone(),
    };
    Header {
        id: out.id.clone(),
        name: out.name.clone(),
        source,
        updated_at: Some(now()),
        total,
        ..Header::default()
    }
}

/// `header` with the total and the compaction parameters of the finished
/// map.
fn finished_header(header: &Header, total: Option<Frequency>, params: &Params) -> Header {
    let mut h = header.clone();
    h.total = total;
    h.extra.insert("compaction".into(), params_json(params));
    h
}

fn params_json(p: &Params) -> serde_json::Value {
    let f = |x: f64| {
        if x.is_finite() {
            serde_json::json!(x)
        } else {
            serde_json::json!("inf")
        }
    };
    serde_json::json!({
        "hcf": f(p.hcf), "pcf": f(p.pcf), "ha": p.ha, "hk": p.hk, "pa": p.pa, "pk": p.pk,
        "hdepth": p.hdepth, "pdepth": p.pdepth,
    })
}

// ---------------------------------------------------------------- compaction

/// Result of compacting a record stream into a spool.
struct Compacted {
    spool: FileSpool,
    stats: Stats,
    params: Params,
    /// Zero entries written (only counted for the `*` fallback).
    zeros: usize,
}

/// Runs the compactor over `records`.
fn compact_stream(
    records: impl Iterator<Item = Result<Record, MapError>>,
    params: Params,
    tmp: &Path,
) -> anyhow::Result<Compacted> {
    let mut c = Compactor::new(params, FileSpool::new(tmp)?);
    for r in records {
        c.push(&r?)?;
    }
    let (spool, stats) = c.finish()?;
    Ok(Compacted {
        spool,
        stats,
        params,
        zeros: 0,
    })
}

/// Compaction honouring --max-lines / --max-bytes: the least compaction
/// (largest factor) that meets the quota. Rollups only generalise, so every
/// candidate keeps 100 % recall; if even factor 0 is too big, the map
/// becomes the single line `*` (plus exclusion entries), the smallest map
/// with full recall; if that is too big too, the quota cannot be met.
/// `bytes` gives the size of the finished file (headers included) a
/// candidate would make.
fn compact_with_quota(
    raw: &mut File,
    rollup: &Rollup,
    base: Params,
    tmp: &Path,
    bytes: &dyn Fn(&mut Compacted) -> anyhow::Result<u64>,
) -> anyhow::Result<Compacted> {
    let fits = |c: &mut Compacted| -> anyhow::Result<bool> {
        if rollup.max_lines.is_some_and(|n| c.stats.lines_out > n) {
            return Ok(false);
        }
        match rollup.max_bytes {
            Some(n) => Ok(bytes(c)? <= n),
            None => Ok(true),
        }
    };
    let mut run = |params: Params| -> anyhow::Result<Compacted> {
        raw.seek(SeekFrom::Start(0))?;
        let src = map_lines(AlignedReader::with_capacity(1 << 20, raw.try_clone()?));
        compact_stream(src, params, tmp)
    };
    let mut first = run(base)?;
    if fits(&mut first)? {
        return Ok(first);
    }
    // Halve the factor until it fits, then bisect between the last two.
    let start = if base.hcf.is_finite() {
        base.hcf.min(base.pcf).max(1.0)
    } else {
        64.0
    };
    let mut hi = start; // does not fit
    let mut f = start;
    let mut best = None;
    for _ in 0..40 {
        f /= 2.0;
        let mut c = run(base.with_factor(f))?;
        if fits(&mut c)? {
            best = Some((f, c));
            break;
        }
        hi = f;
    }
    if best.is_none() {
        let mut c = run(base.with_factor(0.0))?;
        if fits(&mut c)? {
            best = Some((0.0, c));
        }
    }
    let Some((mut lo, mut good)) = best else {
        let mut c = everything_line(raw, base, tmp)?;
        if fits(&mut c)? {
            return Ok(c);
        }
        let size = bytes(&mut c)?;
        let quota = format!(
            "{}{}",
            rollup
                .max_lines
                .map(|n| format!(" --max-lines {n}"))
                .unwrap_or_default(),
            rollup
                .max_bytes
                .map(|n| format!(" --max-bytes {n}"))
                .unwrap_or_default()
        );
        return Err(Error::Quota {
            quota,
            zeros: c.zeros as u64,
            lines: c.stats.lines_out as u64,
            bytes: size,
        }
        .into());
    };
    for _ in 0..8 {
        let mid = if lo == 0.0 {
            hi / 2.0
        } else {
            (lo * hi).sqrt()
        };
        let mut c = run(base.with_factor(mid))?;
        if fits(&mut c)? {
            lo = mid;
            good = c;
        } else {
            hi = mid;
        }
    }
    Ok(good)
}

/// The map that says "anything may be here": `*` with the total, plus the
/// zero entries (a zero `*` entry replaces the total line; no line when
/// nothing is held).
fn everything_line(raw: &mut File, base: Params, tmp: &Path) -> anyhow::Result<Compacted> {
    raw.seek(SeekFrom::Start(0))?;
    let mut total: Option<Frequency> = None;
    let mut zeros = Vec::new();
    let mut lines_in = 0;
    for r in map_lines(BufReader::new(raw.try_clone()?)) {
        let r = r?;
        lines_in += 1;
        if r.freq.is_zero() {
            zeros.push(r);
        } else {
            total = Some(total.map_or(r.freq, |t| t.plus(r.freq)));
        }
    }
    let mut spool = FileSpool::new(tmp)?;
    let mut stats = Stats {
        lines_in,
        ..Stats::default()
    };
    let mut line = Vec::new();
    let star = match total {
        Some(t) if !zeros.iter().any(|z| z.key == b"*") => Some(Record::new(b"*".to_vec(), t)),
        _ => None,
    };
    // `*` sorts before every other key.
    for r in star.iter().chain(&zeros) {
        r.write_to(&mut line);
        stats.lines_out += 1;
    }
    spool.append(&line)?;
    stats.rollups = u64::from(star.is_some());
    stats.total = total;
    Ok(Compacted {
        spool,
        stats,
        params: base.with_factor(0.0),
        zeros: zeros.len(),
    })
}

fn map_lines(r: impl BufRead + 'static) -> impl Iterator<Item = Result<Record, MapError>> {
    let mut r = r;
    let mut buf = Vec::new();
    let mut no = 0;
    std::iter::from_fn(move || loop {
        buf.clear();
        match r.read_until(b'\n', &mut buf) {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e) => return Some(Err(MapError::Io(e))),
        }
        no += 1;
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if line.is_empty() || line[0] == b'!' {
            continue;
        }
        return Some(Record::parse(line, no));
    })
}

/// Compacts `records` per the rollup options (quota or plain) and writes
/// the map with its headers.
fn finish_map(
    records: impl Iterator<Item = Result<Record, MapError>>,
    rollup: &Rollup,
    params: Params,
    out: &MapOutput,
    header: Header,
    columns: Option<(&str, &str)>,
) -> anyhow::Result<Stats> {
    let tmp = tmp_dir(out);
    // The headers carry the total and the parameters used, so a quota in
    // bytes is checked against the finished file of each candidate.
    let final_header = |c: &Compacted| finished_header(&header, c.stats.total, &c.params);
    let quota = rollup.max_lines.is_some() || rollup.max_bytes.is_some();
    let compacted = if quota {
        // The quota search compacts several times: keep the uncompacted
        // stream in a file to re-read.
        let mut raw = FileSpool::new(&tmp)?;
        let mut line = Vec::new();
        for r in records {
            line.clear();
            r?.write_to(&mut line);
            raw.append(&line)?;
        }
        let mut raw = raw.into_reader()?;
        let bytes = |c: &mut Compacted| -> anyhow::Result<u64> {
            let head = final_header(c).to_bytes().len() as u64;
            let body = match columns {
                None => c.spool.position(),
                Some((dim, all)) => {
                    let mut n = 0u64;
                    let mut line = Vec::new();
                    for r in map_lines(AlignedReader::with_capacity(1 << 20, c.spool.reader()?)) {
                        line.clear();
                        r?.write_columns(dim, all, &mut line);
                        n += line.len() as u64;
                    }
                    n
                }
            };
            Ok(head + body)
        };
        compact_with_quota(&mut raw, rollup, params, &tmp, &bytes)?
    } else {
        compact_stream(records, params, &tmp)?
    };
    let header = final_header(&compacted);
    let stats = compacted.stats;
    let mut body = compacted.spool.into_reader()?;
    if let Some((dim, all)) = columns {
        // Rollups work on whole keys; the bucket lines are spread out last.
        let mut spool = FileSpool::new(&tmp)?;
        let mut line = Vec::new();
        for r in map_lines(AlignedReader::with_capacity(1 << 20, body)) {
            line.clear();
            r?.write_columns(dim, all, &mut line);
            spool.append(&line)?;
        }
        body = spool.into_reader()?;
    }
    write_output(
        out,
        &header.to_bytes(),
        AlignedReader::with_capacity(1 << 20, body),
    )?;
    Ok(stats)
}

// ---------------------------------------------------------------- commands

/// The generator's options for a job: its exclusions read, its layout
/// checked.
fn generate_options(a: &GenerateJob) -> anyhow::Result<Options> {
    if a.layout == Layout::Columns && a.by.len() != 1 {
        return Err(Error::Columns.into());
    }
    let mut exclude = Vec::new();
    if let Some(p) = &a.exclude {
        let text = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
        exclude = if crate::acl::Rules::looks_like_aclj(&text) {
            let rules = crate::acl::Rules::parse(&text)
                .with_context(|| format!("reading the access rules {}", p.display()))?;
            for key in rules.allowed_inside_denied() {
                crate::report!(
                    "ukvs mementomap generate: {}: the allow rule {} lies inside a denied prefix; \
                     the map counts the whole prefix as not held",
                    p.display(),
                    String::from_utf8_lossy(&key)
                );
            }
            rules
                .denied()
                .into_iter()
                .filter_map(|(key, exact)| match exact {
                    true => map_key(&key, a.keep_query),
                    false => exclusion_key(&key),
                })
                .collect()
        } else {
            text.split(|&b| b == b'\n')
                .filter_map(exclusion_key)
                .collect()
        };
    }
    Ok(Options {
        keep_query: a.keep_query,
        by: a.by.clone(),
        exclude,
    })
}

pub fn generate(a: GenerateJob) -> Result<ExitCode, Error> {
    Ok(generate_job(a)?)
}

fn generate_job(mut a: GenerateJob) -> anyhow::Result<ExitCode> {
    // Every input is refused before it is read when it holds no index
    // lines: by `plain_input`, or where it is opened as a stream.
    let opts = generate_options(&a)?;
    let clusters = open_clusters(&mut a)?;
    let tmp = tmp_dir(&a.out);
    let (results, prepared): (Vec<anyhow::Result<PassOne>>, _) =
        if let [Some(cluster)] = clusters.as_slice() {
            // One cluster: its lines block after block, in one pass.
            let results = vec![whole_pass(opts, &tmp, a.strict, |feed| {
                for item in cluster_lines(0, cluster)? {
                    let (line, input, no) = item?;
                    feed.line(input, &line, no)?;
                }
                Ok(())
            })];
            (results, prepare(&a))
        } else if let [p] = a.inputs.as_slice() {
            match plain_input(p)? {
                Some(file) => {
                    // One regular file: its parts (cut between two SURTs, so
                    // every URL is in one part) are read in parallel.
                    // Exclusion entries count withheld URLs per part; their
                    // sum would turn an unknown count into a bound, so they
                    // keep one pass.
                    let threads = match opts.exclude.is_empty() {
                        true => super::thread_count(a.threads),
                        false => 1,
                    };
                    // More parts than threads: a large host then makes one
                    // part larger, not one thread later.
                    let cuts = cuts_between_surts(&file, threads, super::parts::PARALLEL_FROM)
                        .with_context(|| format!("reading {}", p.display()))?;
                    // A thread with no part left takes half of what another
                    // has left to read: one part more, at most SHARES_MAX.
                    let parts_max = cuts.len() - 1 + super::parts::SHARES_MAX;
                    let late_mem = LATE_MEM / parts_max;
                    // A part's share of the memory of maps is what it was before
                    // any part is shared; shared parts take what is left.
                    let map_mem = &MapMemory::new(PARTS_MEM, PARTS_MEM / (cuts.len() - 1));
                    let parts: Vec<(u64, u64)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
                    let file = &file;
                    // Mapped once the cuts are found: every cut lies within the map.
                    let input = &PartInput::open(file, a.no_mmap);
                    let read = |span: &Span| {
                        pass_one(opts.clone(), &tmp, late_mem, map_mem, a.strict, |feed| {
                            for_each_part_line(input, span, |line, no| feed.line(0, line, no))
                                .with_context(|| format!("reading {}", p.display()))
                        })
                    };
                    // This thread, idle while the others read, prepares the
                    // writing of the map.
                    shared_parts(file, &parts, threads, read, || prepare(&a))
                }
                None => {
                    let input = open_input_unbuffered(p)?;
                    let results = vec![whole_pass(opts, &tmp, a.strict, |feed| {
                        let name = input_name(p);
                        for_each_line::<anyhow::Error>(&name, input, |line, no| {
                            feed.line(0, line, no).map(|()| true)
                        })
                        .map(drop)
                    })];
                    (results, prepare(&a))
                }
            }
        } else {
            // Several sorted inputs may overlap (the same URL in two
            // indexes): merged into one sorted stream, the captures of a
            // SURT are adjacent again, so a URL counts once as URI-R.
            let merged = merged_lines(&a.inputs, &clusters)?;
            let results = vec![whole_pass(opts, &tmp, a.strict, |feed| {
                for item in merged {
                    let (line, input, no) = item?;
                    feed.line(input, &line, no)?;
                }
                Ok(())
            })];
            (results, prepare(&a))
        };
    finish_generate(&a, results, prepared)
}

/// What writing a generated map needs besides its parts, made while they
/// are read: the SURT profile the inputs record and, when the parts' maps
/// are the map's body as they are ([`body_as_is`]), the output, created.
/// Their errors are reported where they were before the parts were read
/// in parallel: the profile's before the parts', the output's after.
struct Prepared {
    profile: anyhow::Result<Option<crate::surt::Options>>,
    output: anyhow::Result<Option<Output>>,
}

fn prepare(a: &GenerateJob) -> Prepared {
    let output = match body_as_is(a) {
        true => Output::create(&a.out.output).map(Some).map_err(Into::into),
        false => Ok(None),
    };
    Prepared {
        profile: surt_profile_of(&a.inputs, Expected::Index),
        output,
    }
}

/// Whether the parts' maps of a generation are the map's body as they
/// are, or folded together: nothing rolls up, no quota, OSLJ lines.
fn body_as_is(a: &GenerateJob) -> bool {
    let quota = a.rollup.max_lines.is_some() || a.rollup.max_bytes.is_some();
    !a.rollup.params(f64::INFINITY).rolls_up() && !quota && matches!(a.layout, Layout::Oslj)
}

/// [`generate`] over the lines of an index as it is written (`ukvs index
/// --mementomap`): its header lines, then its data lines in chunks (each
/// line ending in LF), then an empty chunk when the index is complete;
/// without it no map is written. `a.inputs` names the index, as the
/// map's source.
/// The map is the one `generate` makes of the finished index.
pub fn generate_from_chunks(
    a: GenerateJob,
    headers: &[Vec<u8>],
    chunks: impl Iterator<Item = std::sync::Arc<Vec<u8>>>,
) -> Result<ExitCode, Error> {
    let opts = generate_options(&a)?;
    let tmp = tmp_dir(&a.out);
    let results = vec![pass_one(
        opts,
        &tmp,
        LATE_MEM,
        &MapMemory::new(PARTS_MEM, PARTS_MEM),
        a.strict,
        |feed| {
            let mut no = 0;
            for line in headers {
                no += 1;
                feed.line(0, line, no)?;
            }
            for chunk in chunks {
                if chunk.is_empty() {
                    return Ok(());
                }
                for line in chunk.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                    no += 1;
                    feed.line(0, line, no)?;
                }
            }
            Err(Error::Unfinished.into())
        },
    )];
    let name = a
        .inputs
        .first()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let profile = crate::capture::surt_profile_in_headers(
        headers.iter().map(|h| (name.as_str(), h.as_slice())),
    )
    .map_err(anyhow::Error::msg);
    let prepared = Prepared {
        profile,
        output: Ok(None),
    };
    Ok(finish_generate(&a, results, prepared)?)
}

/// The map of a generation's first pass: its parts put together (and
/// compacted as asked) under the map's headers.
fn finish_generate(
    a: &GenerateJob,
    results: Vec<anyhow::Result<PassOne>>,
    prepared: Prepared,
) -> anyhow::Result<ExitCode> {
    let profile = prepared.profile?;
    let names: Vec<String> = a.inputs.iter().map(|p| p.display().to_string()).collect();
    // Line numbers of a part count from the lines of the parts before it.
    let mut gstats = GenStats::default();
    let mut parts = Vec::new();
    let mut base = 0;
    let mut shown = 0;
    for r in results {
        let part = r?;
        for (input, mut e) in part.bad {
            if let MapError::Line { line, .. } = &mut e {
                *line += base;
            }
            if a.strict {
                bail!("{}: {e}", names[input]);
            }
            if shown < 10 && !a.out.quiet {
                shown += 1;
                crate::report!("ukvs: {}: {e} (skipped)", names[input]);
            }
        }
        base += part.stats.lines;
        gstats += part.stats;
        parts.push((part.map, part.late, part.summary));
    }
    let params = a.rollup.params(f64::INFINITY);
    let mut header = header_for(&a.out, &a.inputs, None);
    record_surt_profile(&mut header, profile);
    if !a.by.is_empty() {
        let dims: Vec<&str> =
            a.by.iter()
                .map(|d| match d {
                    Dimension::Year => "datetime:year",
                    Dimension::Month => "datetime:month",
                    Dimension::Status => "status",
                    Dimension::Mime => "mime",
                })
                .collect();
        header
            .extra
            .insert("decompositions".into(), serde_json::json!(dims));
    }
    let columns = match a.layout {
        Layout::Oslj => None,
        Layout::Columns => match a.by.as_slice() {
            [d] => {
                header.keys = vec!["surt".into(), d.name().into()];
                let all = if d.name() == "datetime" { ":" } else { "*" };
                Some((d.name(), all))
            }
            _ => bail!("--layout columns needs exactly one --by dimension"),
        },
    };
    // Parts cut between hosts follow each other in key order: when
    // nothing rolls up, their maps are the map's body as they are.
    let mut last: Option<&[u8]> = None;
    let ordered = parts.iter().all(|(_, _, f)| match (&f.first, last) {
        (None, _) => true,
        (Some(first), prev) => {
            let ok = prev.map_or(true, |l| l < first.as_slice());
            last = Some(&f.last);
            ok
        }
    });
    let tmp = tmp_dir(&a.out);
    let map_mem = &MapMemory::new(PARTS_MEM, PARTS_MEM / parts.len().max(1));
    let stats = if body_as_is(a) {
        // Nothing rolls up: the parts' maps are the body, as they are when
        // they follow each other in key order (parts cut between hosts
        // do), folded together when not.
        let mut stats = Stats {
            total: gstats.total,
            ..Stats::default()
        };
        let header = finished_header(&header, stats.total, &params).to_bytes();
        let mut w = match prepared.output? {
            Some(w) => w,
            None => Output::create(&a.out.output)?,
        };
        w.write_all(&header)?;
        if ordered {
            for (part, late, f) in parts {
                stats.lines_in += match (part, late) {
                    (Part::Mem(bytes), None) => {
                        w.append_bytes(&bytes)?;
                        f.lines
                    }
                    (Part::File(mut file), None) => {
                        w.append_file(&mut file)?;
                        f.lines
                    }
                    (part, late) => write_part(part, late, &mut w)?.lines,
                };
            }
            stats.lines_out = stats.lines_in;
        } else {
            let mut sources = Vec::new();
            for (part, late, _) in parts {
                sources.push(Lines::Read(Box::new(folded_reader(
                    part, late, &tmp, map_mem,
                )?)));
            }
            let folded = fold(sources, &mut w)?;
            stats.lines_in = folded.lines;
            stats.lines_out = folded.lines;
        }
        w.commit()?;
        stats
    } else {
        let mut sources: Vec<Source> = Vec::new();
        for (part, late, _) in parts {
            sources.push(Box::new(map_lines(folded_reader(
                part, late, &tmp, map_mem,
            )?)));
        }
        // The parts come from disjoint URLs: sums stay exact.
        let merged = Merger::new(sources, true);
        finish_map(merged, &a.rollup, params, &a.out, header, columns)?
    };
    if !a.out.quiet {
        report_generate(&gstats, &stats);
    }
    Ok(ExitCode::SUCCESS)
}

/// The write buffer of a part's map: a part's lines are few next to its
/// input, and every fresh buffer page costs a fault.
const PART_BUF: usize = 128 << 10;

/// Memory for the records that arrive out of order, over all parts.
const LATE_MEM: usize = 256 << 20;

/// Bytes of a part's map read at a time when its late records are folded in.
const FOLD_WINDOW: usize = 1 << 20;

/// Memory for the parts' maps, over all parts: past their share, the
/// lines of a part go to a temporary file.
const PARTS_MEM: usize = 16 << 20;

/// What the first pass of generation leaves: the map lines of its part in
/// memory or a temporary file with what [`Summary`] says of them,
/// counters, and the bad lines (input index, error; line numbers local to
/// the part).
struct PassOne {
    map: Part,
    /// The part's late records that came back from the sort, folded into
    /// `map` where the map is written: folded here, the whole map would be
    /// copied for them.
    late: Option<LateLines>,
    summary: Summary,
    stats: GenStats,
    bad: Vec<(usize, MapError)>,
}

/// Map lines of late records, sorted by key.
type LateLines = std::iter::Peekable<Box<dyn Iterator<Item = io::Result<Vec<u8>>> + Send>>;

/// What the first pass of a generation hands its lines to, each with the
/// input it comes from and its number there: a type, not a trait object,
/// so that the reading loop calls the generator with no indirection.
struct Feed<'m> {
    g: Generator<PartMap<'m>>,
    /// The bad lines kept (input index, error).
    bad: Vec<(usize, MapError)>,
    /// Set by a bad line when `strict`: the lines after it are ignored.
    stop: bool,
    strict: bool,
}

impl Feed<'_> {
    /// One line; an error only for what is not the line's fault.
    #[inline]
    fn line(&mut self, input: usize, line: &[u8], no: u64) -> anyhow::Result<()> {
        if self.stop {
            return Ok(());
        }
        match self.g.push_line(line, no) {
            Ok(()) => Ok(()),
            Err(e @ MapError::Line { .. }) => {
                if self.bad.len() < 10 {
                    self.bad.push((input, e));
                }
                self.stop = self.strict;
                Ok(())
            }
            Err(e) => Err(anyhow::Error::new(e)),
        }
    }
}

/// [`pass_one`] over one stream of lines (a cluster, a stream, merged
/// inputs): all the memory for late records and maps is its own.
fn whole_pass(
    opts: Options,
    tmp: &Path,
    strict: bool,
    lines: impl FnOnce(&mut Feed<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<PassOne> {
    let map_mem = MapMemory::new(PARTS_MEM, PARTS_MEM);
    pass_one(opts, tmp, LATE_MEM, &map_mem, strict, lines)
}

/// Runs the first pass over the lines `lines` hands to its feed: counts
/// per map key, written in order to a [`PartMap`] holding what `map_mem`
/// gives it in memory, late records to an external sorter. Bad lines are kept (the first ten, or the first one
/// when `strict`, which also stops the pass).
fn pass_one(
    opts: Options,
    tmp: &Path,
    late_mem: usize,
    map_mem: &MapMemory,
    strict: bool,
    lines: impl FnOnce(&mut Feed<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<PassOne> {
    // Late records (keys that the query cut moved backwards) are sorted
    // with bounded memory.
    let sorter = Rc::new(RefCell::new(ExternalSorter::new(
        late_mem,
        Some(tmp.to_path_buf()),
    )));
    let sink_sorter = Rc::clone(&sorter);
    let main = PartMap::new(tmp, map_mem, PART_BUF);
    let g = Generator::new(opts, main).with_late_sink(Box::new(move |r: &Record| {
        let line = r.to_line();
        sink_sorter
            .borrow_mut()
            .push(line.strip_suffix(b"\n").unwrap_or(&line))
    }));
    let mut feed = Feed {
        g,
        bad: Vec::new(),
        stop: false,
        strict,
    };
    lines(&mut feed)?;
    let Feed { g, bad, .. } = feed;
    let (main, _late_in_memory, stats, written) = g.finish()?;
    let main = main.finish()?;
    let sorted = Rc::try_unwrap(sorter)
        .map_err(|_| anyhow::anyhow!("late-record sorter still shared"))?
        .into_inner()
        .finish()?;
    let sorted: Box<dyn Iterator<Item = io::Result<Vec<u8>>> + Send> = Box::new(sorted);
    let mut late = sorted.peekable();
    let mut summary = written;
    let late = match late.peek() {
        None => None,
        Some(first) => {
            // A late key sorts at or before the last key written (that
            // is what makes it late), but may sort before the first one.
            // (Exclusion entries may sort anywhere; with them the input
            // is read in one part, which needs no first or last.)
            if let Ok(line) = first {
                let key = key_at(line, 0);
                if summary.first.as_deref().map_or(true, |f| key < f) {
                    summary.first = Some(key.to_vec());
                }
            }
            Some(late)
        }
    };
    Ok(PassOne {
        map: main,
        late,
        summary,
        stats,
        bad,
    })
}

/// Writes the map lines of `part` to `out`, with its late records folded
/// in; what was written.
fn write_part(
    part: Part,
    late: Option<LateLines>,
    out: &mut impl Write,
) -> anyhow::Result<Summary> {
    let late = late
        .into_iter()
        .flatten()
        .map(|line| Record::parse(&line?, 0));
    Ok(match part {
        // In memory: folded from where it is.
        Part::Mem(bytes) => fold_records(&bytes, late, out)?,
        Part::File(file) => fold_records_from(file, FOLD_WINDOW, late, out)?,
    })
}

/// The lines of `part` with its late records folded in, for the parts
/// read again line by line: with late records, folded first into a part
/// of their own holding what `map_mem` gives it in memory.
fn folded_reader(
    part: Part,
    late: Option<LateLines>,
    tmp: &Path,
    map_mem: &MapMemory,
) -> anyhow::Result<AlignedReader<Box<dyn Read + Send>>> {
    let part = match late {
        None => part,
        late => {
            let mut map = PartMap::new(tmp, map_mem, 1 << 20);
            write_part(part, late, &mut map)?;
            map.finish()?
        }
    };
    Ok(AlignedReader::with_capacity(1 << 20, part.into_reader()))
}

fn report_generate(g: &GenStats, s: &Stats) {
    crate::report!(
        "ukvs mementomap generate: {} lines, {} captures, {} map lines ({} rollups), {} excluded, {}, total {}",
        g.lines, g.captures, s.lines_out, s.rollups, g.excluded, g.skipped, s.total.unwrap_or_default()
    );
    if g.capped > 0 {
        crate::report!(
            "ukvs: {} SURTs had more than {} URL variants: their URI-R counts are upper bounds",
            g.capped,
            crate::mementomap::generate::GROUP_URL_CAP
        );
    }
}

pub fn compact(a: CompactJob) -> Result<ExitCode, Error> {
    Ok(compact_job(a)?)
}

fn compact_job(a: CompactJob) -> anyhow::Result<ExitCode> {
    let params = a.rollup.params(1.0);
    let mut header = header_for(&a.out, std::slice::from_ref(&a.input), None);
    if header.id.is_none() {
        // Keep the archive's identity across compactions.
        for h in read_headers(&a.input, Expected::Map)? {
            if let Some(rest) = h.strip_prefix("!id ") {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(rest) {
                    header.id = v.get("uri").and_then(|u| u.as_str()).map(String::from);
                }
            }
        }
    }
    record_surt_profile(
        &mut header,
        surt_profile_of(std::slice::from_ref(&a.input), Expected::Map)?,
    );
    let src = normalized(map_source(&a.input)?, &tmp_dir(&a.out))?;
    let stats = finish_map(src, &a.rollup, params, &a.out, header, None)?;
    if !a.out.quiet {
        crate::report!(
            "ukvs mementomap compact: {} lines in, {} lines out, {} rollups",
            stats.lines_in,
            stats.lines_out,
            stats.rollups
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Map keys as the reference's `compact` reads them (query cut, trailing
/// `/` and `,` stripped; our root form `host)/`), back in key order: keys
/// moved backwards by the cut are sorted aside and merged in.
fn normalized(
    records: impl Iterator<Item = Result<Record, MapError>>,
    tmp: &Path,
) -> anyhow::Result<Merger> {
    let mut main = WorkFile::new(tmp, 1 << 20)?;
    let mut late = ExternalSorter::new(256 << 20, Some(tmp.to_path_buf()));
    let mut order = Orderer::default();
    let mut line = Vec::new();
    for r in records {
        let mut r = r?;
        if let Some(k) = map_key(&r.key, false) {
            r.key = k;
        }
        line.clear();
        match order.route(r) {
            Routed::InOrder(r) => {
                r.write_to(&mut line);
                main.write_all(&line)?;
            }
            Routed::Late(r) => {
                r.write_to(&mut line);
                late.push(line.strip_suffix(b"\n").unwrap_or(&line))?;
            }
        }
    }
    let mut main = main.into_file()?;
    main.seek(SeekFrom::Start(0))?;
    let late = late.finish()?.enumerate().map(|(i, l)| match l {
        Ok(l) => Record::parse(&l, i as u64 + 1),
        Err(e) => Err(MapError::Io(e)),
    });
    let sources: Vec<Source> = vec![
        Box::new(map_lines(AlignedReader::with_capacity(1 << 20, main))),
        Box::new(late),
    ];
    // Keys that collapse into one came from different URIs of one map.
    Ok(Merger::new(sources, true))
}

pub fn merge(a: MergeJob) -> Result<ExitCode, Error> {
    Ok(merge_job(a)?)
}

fn merge_job(a: MergeJob) -> anyhow::Result<ExitCode> {
    let profile = surt_profile_of(&a.inputs, Expected::Map)?;
    let sources = a
        .inputs
        .iter()
        .map(|p| map_source(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let merged = Merger::new(sources, a.disjoint);
    let tmp = tmp_dir(&a.out);
    let mut spool = FileSpool::new(&tmp)?;
    let mut total: Option<Frequency> = None;
    let mut n = 0u64;
    let mut line = Vec::new();
    for r in merged {
        let r = r?;
        // Wildcards overlap the keys below them: only exact keys and the
        // topmost entries would give a true total, so sum exact keys only.
        if !r.freq.is_zero() && !r.key.ends_with(b"*") {
            total = Some(match total {
                None => r.freq,
                Some(t) if a.disjoint => t.plus(r.freq),
                Some(t) => t.add_overlapping(r.freq),
            });
        }
        line.clear();
        r.write_to(&mut line);
        spool.append(&line)?;
        n += 1;
    }
    let mut header = header_for(&a.out, &a.inputs, total);
    record_surt_profile(&mut header, profile);
    write_output(
        &a.out,
        &header.to_bytes(),
        BufReader::new(spool.into_reader()?),
    )?;
    if !a.out.quiet {
        crate::report!(
            "ukvs mementomap merge: {} maps, {n} lines out",
            a.inputs.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn lookup(a: LookupJob) -> Result<ExitCode, Error> {
    Ok(lookup_job(a)?)
}

fn lookup_job(a: LookupJob) -> anyhow::Result<ExitCode> {
    let mut map = crate::engine::maps::MapFile::open(&a.map, false, a.keep_query)?;
    let from_stdin = a.queries.is_empty() || a.queries.iter().any(|q| q == "-");
    let stdin = io::stdin();
    let mut queries_in = BufReader::with_capacity(1 << 16, stdin.lock());
    let mut first_chunk = Vec::new();
    if from_stdin {
        first_chunk =
            crate::engine::batch::read_chunk(&mut queries_in, crate::engine::batch::CHUNK)?;
        // Sampling reads the map once: worth it from a few thousand
        // queries on.
        if first_chunk.len() >= 4096 {
            if let Err(e) = map.sample(4 << 10) {
                // A map out of order (the reference writes some): each
                // query is still answered where the search can trust it.
                crate::report!("ukvs: {}: {e}; searching without samples", a.map.display());
            }
        }
    }
    if a.datetime.is_some() && !map.has_datetime() {
        return Err(Error::NoDatetime { map: a.map.clone() }.into());
    }
    let stdout = io::stdout();
    let mut w = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut any = false;
    let one = |q: &str, w: &mut Vec<u8>| map.answer(q, a.datetime.as_ref(), w);
    // Answers chunk by chunk: the queries of a chunk in parallel, the
    // chunk's output in input order.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(super::thread_count(a.threads))
        .build()
        .context("starting threads")?;
    let mut answer = |queries: &[String], w: &mut BufWriter<io::StdoutLock>| -> io::Result<()> {
        let (bufs, hit) = crate::engine::batch::answer_in_order(&pool, queries, 512, |qs, buf| {
            qs.iter()
                .try_fold(false, |hit, q| Ok::<_, io::Error>(one(q, buf)? || hit))
        })?;
        any |= hit;
        for buf in &bufs {
            w.write_all(buf)?;
        }
        Ok(())
    };
    let args: Vec<String> = a.queries.iter().filter(|q| *q != "-").cloned().collect();
    answer(&args, &mut w)?;
    if from_stdin {
        let mut chunk = first_chunk;
        while !chunk.is_empty() {
            answer(&chunk, &mut w)?;
            chunk = crate::engine::batch::read_chunk(&mut queries_in, crate::engine::batch::CHUNK)?;
        }
    }
    w.flush()?;
    Ok(if any {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub fn run_evaluate(a: EvaluateJob) -> Result<ExitCode, Error> {
    Ok(evaluate_job(a)?)
}

fn evaluate_job(a: EvaluateJob) -> anyhow::Result<ExitCode> {
    // URL queries are keyed as the index's keys are.
    let surt_opts =
        surt_profile_of(std::slice::from_ref(&a.index), Expected::Index)?.unwrap_or_default();
    let index = read_all(&a.index, Expected::Index)?;
    let (records, _) = crate::mementomap::generate::records_of(&index, &Options::default())
        .with_context(|| format!("reading {}", a.index.display()))?;
    drop(index);
    let mut truth = Vec::new();
    let mut urirs = 0u64;
    for r in &records {
        r.write_to(&mut truth);
        urirs += r.freq.urir.value.unwrap_or(0);
    }
    let truth_map = Map::new(truth.as_slice());
    let queries_text = read_all(&a.queries, Expected::Queries)?;
    let queries: Vec<Vec<u8>> = String::from_utf8_lossy(&queries_text)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|q| crate::engine::maps::query_surt(q, &surt_opts))
        .collect();
    let stdout = io::stdout();
    let mut w = stdout.lock();
    writeln!(
        w,
        "factor lines relative_cost tp fp tn fn accuracy precision recall"
    )?;
    let row = |label: String, e: Evaluation, w: &mut io::StdoutLock| -> io::Result<()> {
        writeln!(
            w,
            "{label} {} {:.6} {} {} {} {} {:.4} {:.4} {:.4}",
            e.map_lines,
            e.relative_cost(),
            e.tp,
            e.fp,
            e.tn,
            e.fn_,
            e.accuracy(),
            e.precision(),
            e.recall()
        )
    };
    if a.sweep {
        for &f in &a.factors {
            let (body, stats) = crate::mementomap::compact::compact_records(
                &records,
                Params::COMPACT.with_factor(f),
            )?;
            let m = Map::new(body.as_slice());
            let e = evaluate(
                &m,
                stats.lines_out,
                &truth_map,
                urirs,
                false,
                queries.iter().map(Vec::as_slice),
            )?;
            row(format!("{f}"), e, &mut w)?;
        }
    } else {
        let Some(mp) = &a.map else {
            return Err(Error::NothingToEvaluate.into());
        };
        let body = read_all(mp, Expected::Map)?;
        let lines = body
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty() && l[0] != b'!')
            .count() as u64;
        let m = Map::new(body.as_slice());
        let e = evaluate(
            &m,
            lines,
            &truth_map,
            urirs,
            false,
            queries.iter().map(Vec::as_slice),
        )?;
        row(mp.display().to_string(), e, &mut w)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn read_all(p: &Path, expected: Expected) -> anyhow::Result<Vec<u8>> {
    let mut r = open_input_with(p, 1 << 20, expected)?;
    let mut v = Vec::new();
    r.read_to_end(&mut v)
        .with_context(|| format!("reading {}", p.display()))?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::fixtures::cut_gzip_index;

    fn job(inputs: Vec<PathBuf>, output: PathBuf) -> GenerateJob {
        GenerateJob::new(inputs, output)
    }

    #[test]
    fn errors_say_their_kind_and_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let map = dir.path().join("out.map");
        let absent = dir.path().join("absent.cdxj");
        let err = generate(job(vec![absent.clone()], map.clone())).unwrap_err();
        assert_eq!(err.kind(), Kind::Missing, "{err:?}");
        assert!(
            err.to_string().contains(&*absent.to_string_lossy()),
            "{err}"
        );

        let cut = cut_gzip_index(dir.path());
        let err = generate(job(vec![cut.clone()], map.clone())).unwrap_err();
        assert_eq!(err.kind(), Kind::Damaged, "{err:?}");
        let chain = format!("{:#}", anyhow::Error::from(err));
        let named = format!("cannot read {} after line ", cut.display());
        assert!(chain.contains(&named), "{chain}");
        assert!(!map.exists());

        let columns = GenerateJob {
            layout: Layout::Columns,
            ..job(vec![absent.clone()], map.clone())
        };
        let err = generate(columns).unwrap_err();
        assert_eq!(err.kind(), Kind::Usage);
        assert_eq!(
            err.to_string(),
            "--layout columns needs exactly one --by dimension"
        );
        let evaluate = EvaluateJob {
            map: None,
            index: absent.clone(),
            queries: absent,
            sweep: false,
            factors: Vec::new(),
        };
        let err = run_evaluate(evaluate).unwrap_err();
        // The index is read first: it is missing.
        assert_eq!(err.kind(), Kind::Missing, "{err:?}");
    }
}
