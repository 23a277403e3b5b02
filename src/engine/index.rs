//! Indexing jobs: ARC and WARC files -> one sorted capture index.
//!
//! Files are read in parallel (rayon, one file per task). Each worker owns
//! a reader (`arc::Reader` or `warc::Reader`, chosen from the file's first
//! bytes), a `capture::Indexer` and a line buffer that it hands to
//! the main thread in chunks; the main thread is the only writer. Sorted
//! output goes through `sorted::ExternalSorter`, whose result is the byte
//! order of the whole line: the bytes are the same for any `-j` because the
//! set of lines is, and memory stays under `--mem` because the sorter
//! spills runs to `--tmp-dir`. `--no-sort` writes each file's lines in
//! input order instead, holding only the lines of files indexed ahead of
//! the one being written (moved to `--tmp-dir` past `--mem`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, sync_channel, SyncSender};
use std::sync::Arc;

use crate::arc;
use crate::capture::hash::Lanes;
use crate::capture::{self, Indexer, Outcome, Profile};
use crate::warc;
use rayon::prelude::*;

use super::error::Kind;
use super::fs::Behind;
use super::output::Output as Dest;
pub use super::progress::Progress;
use super::seeds;

/// Why an index job failed, or why one of its inputs was left out.
///
/// The job's own failures end the run ([`run`] returns them). An input
/// that cannot be read (`Input`, `Package`, `Problem`, `Orphan`,
/// `NoInputs`) is reported with this error's message and counted, and
/// the run goes on (`--strict` stops it before anything is indexed);
/// damaged records inside an archive are reported and skipped as the
/// reader finds them, by file and byte offset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `--no-sort` with an output that is made of a sorted index.
    #[error(
        "a MementoMap, statistics, a digest file and a table are made of a sorted index: \
         drop --no-sort"
    )]
    UnsortedTaps,
    /// The list of paths on stdin (`-`) cannot be read.
    #[error("cannot read paths from stdin")]
    Stdin(#[source] io::Error),
    /// Stdin (`-`) holds something other than paths, one a line.
    #[error(
        "stdin holds {held}, not paths: `-` reads the paths of the files to index, \
         one a line; to index a stream, give it as a path (`/dev/stdin`, whose lines \
         name the file `stdin`, or a named pipe that bears the file's name)"
    )]
    StdinHolds {
        /// What it holds: archive records, or compressed bytes.
        held: String,
    },
    /// An input (a file or directory) that is not there or cannot be read.
    #[error("{}: {cause}", .path.display())]
    Input { path: PathBuf, cause: io::Error },
    /// A WACZ package (or ZIP) that cannot be read.
    #[error("{}: {cause}", .path.display())]
    Package {
        path: PathBuf,
        cause: crate::wacz::Error,
    },
    /// With `--verify-digests`: a package entry whose digest differs from
    /// the one its `datapackage.json` states, or cannot be checked.
    #[error("{}: {problem}", .path.display())]
    Problem { path: PathBuf, problem: String },
    /// A Nedlib data file without its `.meta` file, or the reverse.
    #[error("{}: {what}", .path.display())]
    Orphan { path: PathBuf, what: String },
    /// The inputs hold no archive.
    #[error("no ARC or WARC files to index")]
    NoInputs,
    /// A thread (`what` says which) could not be started.
    #[error("{what}")]
    Threads {
        what: &'static str,
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The index lines cannot be sorted: the temporary runs cannot be
    /// written (`--tmp-dir` puts them elsewhere).
    #[error("cannot sort index lines")]
    Sort(#[source] io::Error),
    /// The sorted runs cannot be read back.
    #[error(transparent)]
    Sorted(#[from] io::Error),
    /// `--no-sort`: a temporary file for lines held back (`what` says
    /// which step) failed.
    #[error("{what}")]
    Temp {
        what: String,
        #[source]
        cause: io::Error,
    },
    /// The index cannot be written (`what` names the output).
    #[error("{what}")]
    Write {
        what: String,
        #[source]
        cause: io::Error,
    },
    /// The UKVS index cannot be written (`what` says which part).
    #[error("{what}")]
    Ukvs {
        what: &'static str,
        #[source]
        cause: crate::ukvs::Error,
    },
    /// The output cannot be created or put in place.
    #[error(transparent)]
    Output(io::Error),
    /// A MementoMap, statistics, digest file or table made beside the
    /// index (`what` says which) failed: the cause says how.
    #[error("{what}")]
    Tap {
        what: &'static str,
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The statistics made beside the index cannot be written.
    #[error(transparent)]
    Report(super::stats::Error),
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Kind {
        match self {
            Error::UnsortedTaps | Error::StdinHolds { .. } | Error::Orphan { .. } => Kind::BadInput,
            Error::NoInputs => Kind::Missing,
            Error::Package { .. } | Error::Problem { .. } => Kind::Damaged,
            Error::Stdin(cause)
            | Error::Input { cause, .. }
            | Error::Sort(cause)
            | Error::Sorted(cause)
            | Error::Temp { cause, .. }
            | Error::Write { cause, .. }
            | Error::Output(cause) => Kind::of_io(cause),
            Error::Ukvs { cause, .. } => match cause {
                crate::ukvs::Error::Io(e) => Kind::of_io(e),
                _ => Kind::BadInput,
            },
            Error::Threads { .. } => Kind::Io,
            Error::Tap { cause, .. } => kind_in_chain(cause.as_ref()),
            Error::Report(e) => e.kind(),
        }
    }

    /// The I/O error the index's output failed with, if that is what
    /// failed (a front end tells a closed pipe from it).
    pub fn output_error(&self) -> Option<&io::Error> {
        match self {
            Error::Output(e) | Error::Write { cause: e, .. } => Some(e),
            Error::Ukvs {
                cause: crate::ukvs::Error::Io(e),
                ..
            } => Some(e),
            Error::Report(e) => e.output_error(),
            _ => None,
        }
    }
}

/// The kind of the first engine error in a chain (the outputs made
/// beside the index that still report with `anyhow`), by type.
fn kind_in_chain(e: &(dyn std::error::Error + 'static)) -> Kind {
    use super::{digests, fs, lookup, mementomap, stats, table};
    let mut cause = Some(e);
    while let Some(e) = cause {
        let job = super::error::kind_of!(e; stats::Error, lookup::Error, fs::Error,
            digests::Error, table::Error, mementomap::Error);
        if let Some(kind) = job {
            return kind;
        }
        cause = e.source();
    }
    Kind::in_chain(e).unwrap_or(Kind::Io)
}

/// What to index, and how.
#[derive(Clone, Debug)]
pub struct IndexJob {
    /// Files, directories (searched for archives), or `-` for a list of
    /// paths on stdin.
    pub inputs: Vec<PathBuf>,
    /// The index file, written whole or not at all; stdout when `None`.
    pub output: Option<PathBuf>,
    pub profile: Profile,
    /// Worker threads; 0 uses every core.
    pub threads: usize,
    /// Lines in input order instead of sorted.
    pub no_sort: bool,
    /// Memory for sorting (or held-back lines) before spilling, in bytes.
    pub mem: u64,
    pub tmp_dir: Option<PathBuf>,
    /// Also the records the profile leaves out.
    pub all_records: bool,
    /// No summary on stderr.
    pub quiet: bool,
    /// Stop at the first damaged record, writing nothing.
    pub strict: bool,
    /// Append request bodies to POST keys (`--post-append`).
    pub post_append: bool,
    /// Recompute and check the records' digests.
    pub verify_digests: bool,
    /// cdxj-indexer's records, fields and line shapes for the `cdxj`
    /// profile, when options change them.
    pub cdxj: Option<Arc<capture::fields::Custom>>,
    /// Lines name each file by its path from this directory
    /// (`--dir-root`), not by its base name.
    pub dir_root: Option<PathBuf>,
    /// Read files instead of mapping them.
    pub no_mmap: bool,
    /// How URLs become keys.
    pub surt: crate::surt::Options,
    /// Also a MementoMap of the index, made from its lines as they are
    /// written (`inputs` of the job: the index's name, as its source).
    pub mementomap: Option<super::mementomap::GenerateJob>,
    /// Also the statistics of the index, made the same way.
    pub stats: Option<StatsOutput>,
    /// Also the digest file of the index, made the same way.
    pub digests: Option<super::digests::DigestOutput>,
    /// Also the capture table of the index (Parquet), made the same way.
    pub table: Option<super::table::TableOutput>,
}

impl IndexJob {
    /// A job indexing `inputs` into `output` (stdout when `None`) in the
    /// `cdxj` profile, every option at its default: sorted, on every
    /// core, 1 GiB for the sort, files mapped, nothing made beside the
    /// index. Callers change the fields they need.
    pub fn new(inputs: Vec<PathBuf>, output: Option<PathBuf>) -> IndexJob {
        IndexJob {
            inputs,
            output,
            profile: Profile::Cdxj,
            threads: 0,
            no_sort: false,
            mem: 1 << 30,
            tmp_dir: None,
            all_records: false,
            quiet: false,
            strict: false,
            post_append: false,
            verify_digests: false,
            cdxj: None,
            dir_root: None,
            no_mmap: false,
            surt: crate::surt::Options::default(),
            mementomap: None,
            stats: None,
            digests: None,
            table: None,
        }
    }
}

/// Where the statistics of an index go when it is written.
#[derive(Clone, Debug)]
pub struct StatsOutput {
    pub path: PathBuf,
    pub format: super::stats::ReportFormat,
    /// Largest hosts and domains listed (0 = all).
    pub top: usize,
}

/// What a worker tells the writer.
enum Msg {
    /// Index lines (each ending in `\n`) of file `file`, in file order.
    Lines { file: usize, buf: Vec<u8> },
    /// A damaged spot or an unreadable file.
    Error { text: String },
    /// Something the user should know that does not fail the run.
    Warning { text: String },
    /// The `!meta` object of a file (from its warcinfo or filedesc
    /// record), sent as soon as that record is read.
    Meta { meta: String },
    /// A file's first record was read (after its `Meta` when that record
    /// gave it), before any of its lines.
    Started,
    /// The file is finished.
    Done { file: usize, stats: FileStats },
}

#[derive(Default, Debug, Clone, Copy)]
struct FileStats {
    records: u64,
    /// Records the reader had to give up on (damage).
    skipped: u64,
    /// Bytes that belonged to no readable record.
    skipped_bytes: u64,
    filtered: u64,
    errors: u64,
    bytes: u64,
    /// Records whose URL could not be canonicalised (key = URL).
    uncanonical: u64,
}

/// Per file, how many URLs kept as keys are reported one by one.
const KEY_WARNINGS: u64 = 5;

/// Lines are handed over in chunks of about this many bytes.
const CHUNK: usize = 256 * 1024;

pub fn run(job: &IndexJob, progress: Option<&dyn Progress>) -> Result<ExitCode, Error> {
    if job.no_sort
        && (job.mementomap.is_some()
            || job.stats.is_some()
            || job.digests.is_some()
            || job.table.is_some())
    {
        return Err(Error::UnsortedTaps);
    }
    let profile = job.profile;
    let opts = capture::Options {
        profile,
        all_records: job.all_records,
        surt: job.surt.clone(),
        verify_digests: job.verify_digests,
        cdxj: job.cdxj.clone(),
    };
    let mut input_errors = Vec::new();
    let mut names = std::collections::HashMap::new();
    let mut held = Held::new();
    let paths = collect_inputs(&job.inputs, &mut names, &mut input_errors, &mut held)?;
    let (paths, members, handles) = open_packages(paths, &mut names, &mut held, &mut input_errors);
    if job.verify_digests {
        verify_packages(&paths, &members, &mut input_errors);
    }
    for e in &input_errors {
        crate::report!("ukvs index: {e}");
    }
    if paths.is_empty() {
        crate::report!("ukvs index: {}", Error::NoInputs);
        input_errors.push(Error::NoInputs);
    }
    if job.strict && !input_errors.is_empty() {
        return Ok(ExitCode::from(2));
    }

    let threads = if job.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        job.threads
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Threads {
            what: "cannot start worker threads",
            cause: Box::new(e),
        })?;

    let total_bytes: u64 = paths
        .iter()
        .zip(&members)
        .filter_map(|(p, m)| match m {
            Some(m) => Some(m.compressed_size),
            None => std::fs::metadata(p).ok().map(|m| m.len()),
        })
        .sum();
    if let Some(p) = progress {
        p.start(total_bytes);
    }

    let mut out = Output::open(job.output.as_deref(), profile, !job.no_sort)?;
    let abort = AtomicBool::new(false);
    let (tx, rx) = sync_channel::<Msg>(threads * 4);
    let mut sink = Sink::new(job, profile, &paths);

    let result: Result<(), Error> = std::thread::scope(|scope| {
        let worker_paths = &paths;
        let members = &members;
        let names_ref = &names;
        let abort_ref = &abort;
        let opts_ref = &opts;
        let no_mmap = job.no_mmap;
        let post_append = job.post_append;
        let custom = job.cdxj.as_deref();
        let pair_request = custom.is_some_and(|c| c.needs_request());
        let record_digests = custom.is_some_and(|c| c.needs_record_digest());
        let dir_root = job.dir_root.as_deref();
        let pb = progress;
        let pool = &pool;
        scope.spawn(move || {
            pool.install(|| {
                worker_paths
                    .par_iter()
                    .zip(handles)
                    .enumerate()
                    .for_each_with(tx, |tx, (i, (path, opened))| {
                        if !abort_ref.load(Ordering::Relaxed) {
                            let known = names_ref.get(path);
                            let job = Job {
                                file: i,
                                post_append,
                                pair_request,
                                record_digests,
                                dir_root,
                                path,
                                member: members[i].as_ref(),
                                name: known.map(|k| k.name.as_slice()),
                                seed: known.and_then(|k| k.seed),
                                opts: opts_ref,
                                abort: abort_ref,
                                pb,
                            };
                            index_file(&job, opened, no_mmap, tx);
                        }
                    });
            });
        });
        let r = sink.consume(rx, &mut out, progress, &abort);
        if r.is_err() {
            abort.store(true, Ordering::Relaxed);
        }
        r
    });
    if let Some(p) = progress {
        p.done();
    }
    result?;

    let errors = sink.errors + input_errors.len() as u64;
    if job.strict && errors > 0 {
        // The temporary output is dropped, so no file appears.
        return Ok(ExitCode::from(2));
    }
    // The workers are done: their pool sorts what the sink holds.
    let taps = pool.install(|| sink.finish(&mut out, &opts, job))?;
    out.commit()?;
    if let Some(taps) = taps {
        taps.finish()?;
    }
    if !job.quiet {
        crate::report!(
            "ukvs index: {} files, {} records indexed, {} left out by the profile, \
             {} damaged records skipped ({} bytes), {} errors{}",
            sink.files_done,
            sink.records,
            sink.filtered,
            sink.skipped,
            sink.skipped_bytes,
            errors,
            if sink.uncanonical > 0 {
                format!(
                    ", {} URLs kept as keys (not canonicalisable)",
                    sink.uncanonical
                )
            } else {
                String::new()
            }
        );
    }
    Ok(if errors > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// Expands the command-line inputs into files, in a stable order. Files
/// of the tree formats found in a directory get, in `names`, the
/// `filename` their lines give: their path from that directory.
fn collect_inputs(
    inputs: &[PathBuf],
    names: &mut Names,
    errors: &mut Vec<Error>,
    handles: &mut Held,
) -> Result<Vec<PathBuf>, Error> {
    let mut paths = Vec::new();
    for input in inputs {
        if input.as_os_str() == "-" {
            let mut stdin = io::stdin().lock();
            let first = stdin.fill_buf().map_err(Error::Stdin)?;
            let held = match super::fs::content(first) {
                super::fs::Content::Archive(format) => Some(format!("{format} records")),
                super::fs::Content::Plain => None,
                _ => Some("compressed bytes".to_string()),
            };
            if let Some(held) = held {
                return Err(Error::StdinHolds { held });
            }
            for line in stdin.lines() {
                let line = line.map_err(Error::Stdin)?;
                let line = line.trim_end_matches('\r');
                if !line.is_empty() {
                    add_input(Path::new(line), &mut paths, names, errors, handles);
                }
            }
        } else {
            add_input(input, &mut paths, names, errors, handles);
        }
    }
    Ok(paths)
}

/// What the walk learnt of the files that do not go by their base name.
type Names = std::collections::HashMap<PathBuf, Known>;

/// A file of a seed format, as the walk found it.
struct Known {
    /// The `filename` its lines give.
    name: Vec<u8>,
    /// Its format, when the walk read its first bytes to tell it (the
    /// indexing then reads the file once, and does not tell it again).
    seed: Option<seeds::Seed>,
    /// The handle the walk told the format from, for the worker that
    /// indexes the file (`open_packages` takes it): `None` past the
    /// budget of held handles (`Held`), or for a file the walk did not
    /// open.
    opened: Option<File>,
    /// Whether its first bytes, as the walk read them, are a ZIP's: the
    /// package check does not open it again.
    zip: bool,
}

impl Known {
    /// A file the walk told by `first`, its first bytes.
    fn told(name: Vec<u8>, seed: seeds::Seed, first: &[u8], opened: Option<File>) -> Known {
        Known {
            name,
            seed: Some(seed),
            opened,
            zip: first.starts_with(&ZIP_MAGIC),
        }
    }

    /// A file named on the command line: read only by its worker.
    fn named(name: Vec<u8>) -> Known {
        Known {
            name,
            seed: None,
            opened: None,
            zip: false,
        }
    }
}

/// How many handles the walk and the package check may keep open for
/// the workers: every input is told before the first is indexed, so
/// each held handle stays open until its worker reads it. A quarter of the
/// process's limit on open files leaves the rest to the workers, the
/// sort's spill files and the output; past it, a file is closed after
/// its first bytes are read and its worker opens it again. Never more
/// than [`HELD_MAX`], however high the limit: each handle pins kernel
/// memory until the run reaches its file.
struct Held {
    left: usize,
}

/// The most handles [`Held`] keeps, whatever the open-file limit.
const HELD_MAX: usize = 1 << 16;

impl Held {
    fn new() -> Held {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        let left = limit.map_or(HELD_MAX, |n| usize::try_from(n / 4).unwrap_or(HELD_MAX));
        let left = left.min(HELD_MAX);
        Held { left }
    }

    /// `f`, when the budget allows one more handle kept open.
    fn keep(&mut self, f: File) -> Option<File> {
        self.left = self.left.checked_sub(1)?;
        Some(f)
    }
}

fn add_input(
    path: &Path,
    paths: &mut Vec<PathBuf>,
    names: &mut Names,
    errors: &mut Vec<Error>,
    held: &mut Held,
) {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            let before = paths.len();
            walk_dir(path, path, paths, names, errors, held);
            if paths.len() == before {
                crate::report!(
                    "ukvs index: warning: {}: no ARC or WARC files (*.arc, *.arc.gz, *.warc, \
                     *.warc.gz, *.warc.zst, *.wacz), Kulturarw3 objects or Nedlib .meta files in this \
                     directory",
                    path.display()
                );
            }
        }
        Ok(_) => {
            if path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("meta"))
            {
                let data = seeds::nedlib_data_path(path);
                if let Some(n) = data.file_name() {
                    let name = os_bytes(n);
                    names.insert(path.to_path_buf(), Known::named(name));
                }
            }
            paths.push(path.to_path_buf())
        }
        Err(cause) => errors.push(Error::Input {
            path: path.to_path_buf(),
            cause,
        }),
    }
}

/// The inputs with each WACZ package (a `.wacz` file, or any ZIP) put
/// in the place of the WARCs it holds, in the package's order: the path
/// stays the package's, beside the entry read (`None` for a file of its
/// own). A package that cannot be read is an input error (reported, the
/// run goes on); one that holds no WARC is only told.
///
/// Each file of its own comes with the handle its first bytes were read
/// from (by the walk, or here to tell a ZIP), for its worker to index it
/// from: `None` past the budget of `held` handles, or for what is no
/// regular file (a pipe's bytes are the job's to read).
fn open_packages(
    paths: Vec<PathBuf>,
    names: &mut Names,
    held: &mut Held,
    errors: &mut Vec<Error>,
) -> (
    Vec<PathBuf>,
    Vec<Option<crate::wacz::Entry>>,
    Vec<Option<File>>,
) {
    let mut out = Vec::with_capacity(paths.len());
    let mut members = Vec::with_capacity(paths.len());
    let mut handles = Vec::with_capacity(paths.len());
    for path in paths {
        let told = names.get_mut(&path).filter(|k| k.seed.is_some());
        // The walk's handles already count against `held`.
        let (zip, opened, counted) = match told {
            Some(k) => (k.zip, k.opened.take(), true),
            None if named_package(&path) => (true, None, false),
            None => {
                let (zip, f) = first_bytes_zip(&path);
                (zip, f, false)
            }
        };
        if !(named_package(&path) || zip) {
            out.push(path);
            members.push(None);
            handles.push(opened.and_then(|f| if counted { Some(f) } else { held.keep(f) }));
            continue;
        }
        let read = match opened {
            Some(f) => Ok(f),
            None => File::open(&path),
        };
        let read = read
            .and_then(|mut f| io::Seek::rewind(&mut f).map(|()| f))
            .map_err(crate::wacz::Error::from)
            .and_then(|f| crate::wacz::Package::read(io::BufReader::new(f)));
        let package = match read {
            Ok(p) => p,
            Err(cause) => {
                errors.push(Error::Package { path, cause });
                continue;
            }
        };
        let before = out.len();
        for entry in package.archives() {
            out.push(path.clone());
            members.push(Some(entry.clone()));
            handles.push(None);
        }
        if out.len() == before {
            crate::report!(
                "ukvs index: warning: {}: a ZIP without WARCs under archive/ (not a WACZ?)",
                path.display()
            );
        }
    }
    (out, members, handles)
}

/// Whether a regular file starts as a ZIP (`engine::fs::is_package`'s
/// test), and the handle it was read from. What is no regular file is
/// not opened: reading the first bytes of a pipe (`/dev/stdin`) would
/// take them from the job that reads it.
fn first_bytes_zip(path: &Path) -> (bool, Option<File>) {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return (false, None);
    }
    let Ok(mut f) = File::open(path) else {
        return (false, None);
    };
    let mut magic = [0u8; 4];
    let zip = f.read_exact(&mut magic).is_ok_and(|()| magic == ZIP_MAGIC);
    (zip, Some(f))
}

/// With `--verify-digests`: each WARC of the packages among the inputs
/// hashed and compared with the digest its `datapackage.json` states.
/// A mismatch (or an entry that cannot be checked) is an input error
/// naming the package and the entry; the entry is indexed all the same,
/// as the others are.
fn verify_packages(
    paths: &[PathBuf],
    members: &[Option<crate::wacz::Entry>],
    errors: &mut Vec<Error>,
) {
    let mut packages: Vec<&PathBuf> = paths
        .iter()
        .zip(members)
        .filter_map(|(p, m)| m.as_ref().map(|_| p))
        .collect();
    packages.dedup();
    for package in packages {
        match super::package::check_package_archives(package) {
            Ok(report) => {
                errors.extend(report.problems.into_iter().map(|problem| Error::Problem {
                    path: package.clone(),
                    problem,
                }))
            }
            Err(e) => errors.push(Error::Problem {
                path: package.clone(),
                problem: format!("{e:#}"),
            }),
        }
    }
}

/// Whether the file is named as a WACZ package (`.wacz`): a package
/// whatever its first bytes.
fn named_package(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().to_ascii_lowercase().ends_with(".wacz"))
}

/// The first bytes of a ZIP file (`engine::fs::is_package`'s test).
const ZIP_MAGIC: [u8; 4] = *b"PK\x03\x04";

/// How a file is named in messages: its path, or for a package's WARC,
/// the package and the entry.
fn shown_name(path: &Path, member: Option<&crate::wacz::Entry>) -> PathBuf {
    match member {
        Some(m) => PathBuf::from(format!("{} entry {}", path.display(), m.name)),
        None => path.to_path_buf(),
    }
}

/// Whether the file is named as a WARC: its first bytes decide, but a
/// WARC whose first record is damaged does not show what it is.
fn named_warc(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().to_ascii_lowercase().contains(".warc"))
}

fn is_archive_name(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy().to_ascii_lowercase();
    [".arc", ".arc.gz", ".warc", ".warc.gz", ".warc.zst", ".wacz"]
        .iter()
        .any(|ext| name.ends_with(ext))
}

/// ARC and WARC files (by name), Kulturarw3 files and Nedlib `.meta`
/// files (by their bytes) under `dir`, depth first, sorted by name at each
/// level; symbolic links to directories are not followed. A Nedlib data
/// file without its `.meta` file, or the reverse, is an error.
///
/// The files a name does not tell are opened here, once: what the walk
/// decides from their first bytes (which files are inputs, the orphans
/// of a Nedlib directory, a directory with nothing to index) is reported
/// before any file is indexed, and the handle of a seed file goes to its
/// worker in `names` (within `held`).
fn walk_dir(
    root: &Path,
    dir: &Path,
    paths: &mut Vec<PathBuf>,
    names: &mut Names,
    errors: &mut Vec<Error>,
    held: &mut Held,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(cause) => {
            errors.push(Error::Input {
                path: dir.to_path_buf(),
                cause,
            });
            return;
        }
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    // Nedlib objects of this directory: data files beside their .meta
    // files are read with them, not sniffed on their own.
    let listing: Vec<String> = entries
        .iter()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let pairing = crate::nedlib::pair(&listing);
    let paired: std::collections::HashSet<&str> = pairing.pairs.iter().map(|p| p.data).collect();
    let mut nedlib_seen = false;
    for e in &entries {
        let path = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk_dir(root, &path, paths, names, errors, held);
            continue;
        }
        if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let file_name = e.file_name();
        if is_archive_name(&file_name) {
            paths.push(path);
            continue;
        }
        if paired.contains(file_name.to_string_lossy().as_ref()) {
            continue;
        }
        let mut first = Vec::with_capacity(seeds::SNIFF);
        let Ok(f) = File::open(&path).and_then(|f| {
            (&f).take(seeds::SNIFF as u64)
                .read_to_end(&mut first)
                .map(|_| f)
        }) else {
            continue;
        };
        let rel = |p: &Path| os_bytes(p.strip_prefix(root).unwrap_or(p).as_os_str());
        let Some(seed) = seeds::sniff(&path, &first) else {
            continue;
        };
        let named = match seed {
            seeds::Seed::Kulturarw3 => path.clone(),
            seeds::Seed::NedlibMeta => {
                nedlib_seen = true;
                let data = seeds::nedlib_data_path(&path);
                if !data.is_file() {
                    continue;
                }
                data
            }
        };
        let name = rel(&named);
        names.insert(path.clone(), Known::told(name, seed, &first, held.keep(f)));
        paths.push(path);
    }
    if nedlib_seen {
        for o in &pairing.orphans {
            errors.push(Error::Orphan {
                path: dir.join(o.name),
                what: o.to_string(),
            });
        }
    }
}

/// Files smaller than this are read, not mapped.
const MAP_FROM: u64 = 256 << 10;

/// Bytes read from an unmapped file to tell its format.
const SNIFF_BYTES: u64 = 64 << 10;

/// Lines held for records still hashing before a new record is read.
const MAX_HELD: usize = 4096;

/// A record whose digest is being computed: it digests its block from
/// `start` on.
struct InLane<T> {
    seq: u64,
    rec: T,
    start: usize,
}

/// What the pipeline needs of a record, ARC or WARC.
trait Rec: Default {
    fn block(&self) -> &[u8];
    fn offset(&self) -> u64;
    /// Offset just past the record in the file.
    fn end(&self) -> u64;
    /// Offset and length of the bytes the reference counts as the
    /// stored record (`--digest-records` hashes them).
    fn stored(&self) -> (u64, u64);
    /// The request paired with this response, for its line's fields.
    fn request(&self) -> Option<Arc<capture::fields::Request>> {
        None
    }
    fn buffer_capacity(&self) -> usize;
    fn clear(&mut self);
    fn digest_start(&self, ix: &Indexer) -> Option<usize>;
    fn write(&self, ix: &mut Indexer, hashed: Option<[u8; 20]>, out: &mut Vec<u8>) -> Outcome;
    /// The file's `!meta` object when this record describes the file.
    fn file_meta(&self, name: &[u8]) -> Option<String>;
    /// Records kept by this thread from its last file of this format.
    fn take_spare() -> Vec<Self>;
    fn keep_spare(spare: Vec<Self>);
}

/// What the pipeline needs of a reader.
trait RecReader {
    type Rec: Rec;
    type Error: std::fmt::Display;
    fn read(&mut self, rec: &mut Self::Rec) -> Result<bool, Self::Error>;
    fn is_fatal(e: &Self::Error) -> bool;
    fn position(&self) -> u64;
    /// Records given up on, and bytes in no record.
    fn skipped(&self) -> (u64, u64);
}

/// The `Rec` methods every stored record of a format module has alike.
macro_rules! stored_record {
    ($fmt:ident) => {
        fn block(&self) -> &[u8] {
            $fmt::Record::block(self)
        }
        fn offset(&self) -> u64 {
            self.offset
        }
        fn end(&self) -> u64 {
            self.offset + self.length
        }
        fn buffer_capacity(&self) -> usize {
            $fmt::Record::buffer_capacity(self)
        }
        fn clear(&mut self) {
            $fmt::Record::clear(self);
        }
    };
}

/// `RecReader` for a format module's `Reader`.
macro_rules! format_reader {
    ($fmt:ident) => {
        impl<R: io::Read> RecReader for $fmt::Reader<R> {
            type Rec = $fmt::Record;
            type Error = $fmt::Error;
            fn read(&mut self, rec: &mut $fmt::Record) -> Result<bool, $fmt::Error> {
                self.read_record(rec)
            }
            fn is_fatal(e: &$fmt::Error) -> bool {
                e.is_fatal()
            }
            fn position(&self) -> u64 {
                $fmt::Reader::position(self)
            }
            fn skipped(&self) -> (u64, u64) {
                (self.stats().skipped_records, self.stats().skipped_bytes)
            }
        }
    };
}

format_reader!(arc);
format_reader!(warc);

impl Rec for arc::Record {
    stored_record!(arc);
    fn stored(&self) -> (u64, u64) {
        (self.offset, self.length)
    }
    fn digest_start(&self, ix: &Indexer) -> Option<usize> {
        ix.digest_start(self)
    }
    fn write(&self, ix: &mut Indexer, hashed: Option<[u8; 20]>, out: &mut Vec<u8>) -> Outcome {
        ix.write_hashed(self, hashed, out)
    }
    fn file_meta(&self, name: &[u8]) -> Option<String> {
        self.is_filedesc().then(|| filedesc_meta(name, self))
    }
    fn take_spare() -> Vec<Self> {
        SPARE_ARC.take()
    }
    fn keep_spare(spare: Vec<Self>) {
        SPARE_ARC.set(spare);
    }
}

impl Rec for warc::Record {
    stored_record!(warc);
    fn stored(&self) -> (u64, u64) {
        // warcio counts empty gzip members before a record as its own.
        (self.offset - self.empty_lead, self.length + self.empty_lead)
    }
    fn digest_start(&self, ix: &Indexer) -> Option<usize> {
        ix.warc_digest_start(self)
    }
    fn write(&self, ix: &mut Indexer, hashed: Option<[u8; 20]>, out: &mut Vec<u8>) -> Outcome {
        ix.write_warc(self, hashed, out)
    }
    fn file_meta(&self, name: &[u8]) -> Option<String> {
        (self.record_type() == warc::RecordType::Warcinfo).then(|| warcinfo_meta(name, self))
    }
    fn take_spare() -> Vec<Self> {
        SPARE_WARC.take()
    }
    fn keep_spare(spare: Vec<Self>) {
        SPARE_WARC.set(spare);
    }
}

/// A WARC record with the POST or PUT exchange it belongs to.
#[derive(Default)]
struct PairedRec {
    rec: warc::Record,
    post: Option<std::sync::Arc<capture::post::PostAppend>>,
    /// The request of a response's exchange (for `req.http:` fields).
    request: Option<Arc<capture::fields::Request>>,
    /// Paired with the record before it: not paired again.
    taken: bool,
}

impl Rec for PairedRec {
    fn block(&self) -> &[u8] {
        self.rec.block()
    }
    fn offset(&self) -> u64 {
        self.rec.offset
    }
    fn end(&self) -> u64 {
        self.rec.offset + self.rec.length
    }
    fn stored(&self) -> (u64, u64) {
        self.rec.stored()
    }
    fn request(&self) -> Option<Arc<capture::fields::Request>> {
        self.request.clone()
    }
    fn buffer_capacity(&self) -> usize {
        self.rec.buffer_capacity()
    }
    fn clear(&mut self) {
        self.rec.clear();
        self.post = None;
        self.request = None;
        self.taken = false;
    }
    fn digest_start(&self, ix: &Indexer) -> Option<usize> {
        ix.warc_digest_start(&self.rec)
    }
    fn write(&self, ix: &mut Indexer, hashed: Option<[u8; 20]>, out: &mut Vec<u8>) -> Outcome {
        ix.write_warc_post(&self.rec, hashed, self.post.as_deref(), out)
    }
    fn file_meta(&self, name: &[u8]) -> Option<String> {
        self.rec.file_meta(name)
    }
    fn take_spare() -> Vec<Self> {
        let spare: Vec<warc::Record> = SPARE_WARC.take();
        spare
            .into_iter()
            .map(|rec| PairedRec {
                rec,
                ..PairedRec::default()
            })
            .collect()
    }
    fn keep_spare(spare: Vec<Self>) {
        SPARE_WARC.set(spare.into_iter().map(|p| p.rec).collect());
    }
}

/// A WARC reader that reads one record ahead, to pair each request with
/// its response as cdxj-indexer does for `--post-append` and `req.http:`
/// fields (adjacent records only; a record paired with the one before it
/// is not paired with the one after).
struct Paired<R> {
    inner: warc::Reader<R>,
    /// Key POST and PUT exchanges by their bodies.
    post_append: bool,
    /// Give responses their request's head.
    pair_request: bool,
    ahead: Option<PairedRec>,
    /// Errors met while reading ahead, returned after the record before
    /// them (a warning about a record does not keep it from pairing).
    errors: std::collections::VecDeque<warc::Error>,
}

impl<R: io::Read> Paired<R> {
    fn new(inner: warc::Reader<R>, job: &Job) -> Paired<R> {
        Paired {
            inner,
            post_append: job.post_append,
            pair_request: job.pair_request,
            ahead: None,
            errors: std::collections::VecDeque::new(),
        }
    }
}

impl<R: io::Read> RecReader for Paired<R> {
    type Rec = PairedRec;
    type Error = warc::Error;
    fn read(&mut self, out: &mut PairedRec) -> Result<bool, warc::Error> {
        if let Some(e) = self.errors.pop_front() {
            return Err(e);
        }
        match self.ahead.take() {
            Some(cur) => *out = cur,
            None => {
                out.clear();
                if !self.inner.read_record(&mut out.rec)? {
                    return Ok(false);
                }
            }
        }
        if out.taken {
            return Ok(true);
        }
        let mut next = PairedRec::default();
        loop {
            match self.inner.read_record(&mut next.rec) {
                Ok(true) => {
                    if let Some(request) = capture::fields::exchange(&out.rec, &next.rec) {
                        next.taken = true;
                        if self.post_append {
                            if let Some(p) = capture::warc::post_pair(&out.rec, &next.rec) {
                                let p = std::sync::Arc::new(p);
                                out.post = Some(p.clone());
                                next.post = Some(p);
                            }
                        }
                        if self.pair_request {
                            // The response's line reads its request.
                            let request = capture::fields::Request::of(request).map(Arc::new);
                            match out.rec.header("WARC-Type") {
                                Some(b"response") => out.request = request,
                                _ => next.request = request,
                            }
                        }
                    }
                    self.ahead = Some(next);
                    break;
                }
                Ok(false) => break,
                Err(e) => {
                    let fatal = e.is_fatal();
                    self.errors.push_back(e);
                    if fatal {
                        break;
                    }
                }
            }
        }
        Ok(true)
    }
    fn is_fatal(e: &warc::Error) -> bool {
        e.is_fatal()
    }
    fn position(&self) -> u64 {
        // The record read ahead still needs its bytes.
        self.ahead
            .as_ref()
            .map_or_else(|| self.inner.position(), |a| a.rec.offset)
    }
    fn skipped(&self) -> (u64, u64) {
        self.inner.skipped()
    }
}

/// The lines of one file in record order: a record gets a number when it
/// is read, and its line is written out once the lines of every record
/// before it are.
#[derive(Default)]
struct InOrder {
    /// Lines of records `first..`, `None` while a record is hashing.
    held: std::collections::VecDeque<Option<Vec<u8>>>,
    first: u64,
}

impl InOrder {
    /// Numbers the next record.
    fn open(&mut self) -> u64 {
        self.held.push_back(None);
        self.first + self.held.len() as u64 - 1
    }

    /// Records numbered and not written out.
    fn held(&self) -> usize {
        self.held.len()
    }

    /// `write` makes the line of record `seq`; it goes to `out` now if no
    /// record before it is pending (the usual case: no copy), else later.
    fn finish(&mut self, seq: u64, out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
        let at = (seq - self.first) as usize;
        if at == 0 {
            write(out);
            self.held.pop_front();
            self.first += 1;
            while let Some(Some(_)) = self.held.front() {
                if let Some(Some(line)) = self.held.pop_front() {
                    out.extend_from_slice(&line);
                }
                self.first += 1;
            }
        } else {
            let mut line = Vec::new();
            write(&mut line);
            self.held[at] = Some(line);
        }
    }
}

/// Writes the lines of one file's records and counts them.
struct Emit<'a> {
    indexer: &'a mut Indexer,
    stats: &'a mut FileStats,
    tx: &'a SyncSender<Msg>,
    /// The file's name in messages.
    shown: &'a Path,
    /// The file, read again for each record's SHA-256 (`--digest-records`).
    stored: Option<File>,
    /// Or its bytes, when it is read in place: hashed where they are.
    held: Option<crate::input::SharedBytes>,
    /// Where the records' bytes start in `stored` (a WACZ's WARC is read
    /// from the package).
    base: u64,
    /// Records need their paired request or stored digest.
    give: bool,
}

impl Emit<'_> {
    /// The SHA-256 of the stored bytes of `rec`, read again from its file;
    /// a file that cannot be read again (a pipe) is reported once, and its
    /// lines go without.
    fn stored_digest<T: Rec>(&mut self, rec: &T) -> Option<String> {
        use std::io::Seek;
        let (offset, length) = rec.stored();
        if let Some(held) = &self.held {
            let bytes = (**held).as_ref();
            let range = usize::try_from(offset)
                .ok()
                .zip(usize::try_from(length).ok());
            let stored = range.and_then(|(o, l)| bytes.get(o..o.checked_add(l)?));
            // A record's bytes are those the reader read: always there.
            return stored.map(capture::fields::record_digest);
        }
        let file = self.stored.as_mut()?;
        let mut hasher = capture::fields::RecordHasher::default();
        let read = file
            .seek(io::SeekFrom::Start(self.base + offset))
            .and_then(|_| io::copy(&mut Read::by_ref(file).take(length), &mut hasher));
        match read {
            Ok(n) if n == length => Some(hasher.finish()),
            other => {
                let why = match other {
                    Err(e) => e.to_string(),
                    Ok(n) => format!("only {n} of its {length} bytes are there"),
                };
                self.stored = None;
                self.stats.errors += 1;
                let text = format!(
                    "{}: offset {offset}: cannot read the record's {length} stored bytes \
                     again for its SHA-256: {why} (--digest-records needs a file whose \
                     offsets are those of its bytes, not a stream or a file gzipped as one \
                     stream); the file's lines go without recordDigest",
                    self.shown.display()
                );
                let _ = self.tx.send(Msg::Error { text });
                None
            }
        }
    }

    /// Hands `buf` to the writer once it holds a chunk; false when the
    /// writer is gone.
    fn send_full(&self, file: usize, buf: &mut Vec<u8>) -> bool {
        if buf.len() < CHUNK {
            return true;
        }
        let chunk = std::mem::replace(buf, Vec::with_capacity(CHUNK + 4096));
        self.tx.send(Msg::Lines { file, buf: chunk }).is_ok()
    }

    /// Appends the line of `rec` (its digest computed here when `digest`
    /// is `None`), counts it, and warns about a URL kept as its key.
    fn line<T: Rec>(&mut self, rec: &T, digest: Option<[u8; 20]>, out: &mut Vec<u8>) {
        if self.give {
            let stored = self.stored_digest(rec);
            self.indexer.give(rec.request(), stored);
        }
        match rec.write(self.indexer, digest, out) {
            Outcome::Indexed => self.stats.records += 1,
            Outcome::Filtered => self.stats.filtered += 1,
        }
        if let Some(n) = self.indexer.take_notice() {
            let text = format!("{}: offset {}: {n}", self.shown.display(), rec.offset());
            let _ = self.tx.send(Msg::Warning { text });
        }
        if let Some(e) = self.indexer.take_digest_error() {
            self.stats.errors += 1;
            let text = format!("{}: offset {}: {e}", self.shown.display(), rec.offset());
            let _ = self.tx.send(Msg::Error { text });
        }
        if let Some(e) = self.indexer.take_key_error() {
            self.stats.uncanonical += 1;
            if self.stats.uncanonical <= KEY_WARNINGS {
                let more = if self.stats.uncanonical == KEY_WARNINGS {
                    "; further ones in this file are counted only"
                } else {
                    ""
                };
                let text = format!(
                    "{}: offset {}: {e}; the key is the URL (as the reference indexers write it){more}",
                    self.shown.display(),
                    rec.offset(),
                );
                let _ = self.tx.send(Msg::Warning { text });
            }
        }
    }
}

thread_local! {
    /// Records whose buffers outlive one file on this thread: the next
    /// file reads into them instead of into fresh pages (each costs a
    /// fault, and a freed heap is given back to the system).
    static SPARE_ARC: std::cell::RefCell<Vec<arc::Record>> = const { std::cell::RefCell::new(Vec::new()) };
    static SPARE_WARC: std::cell::RefCell<Vec<warc::Record>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Keeps the records of a finished file for the next one on this thread,
/// but not a buffer larger than [`KEEP_BLOCK_MAX`].
fn keep_spare<T: Rec>(mut spare: Vec<T>) {
    spare.retain(|r| r.buffer_capacity() <= KEEP_BLOCK_MAX);
    // Let go of the file's map.
    spare.iter_mut().for_each(T::clear);
    T::keep_spare(spare);
}

/// The largest record buffer kept from one file for the next.
const KEEP_BLOCK_MAX: usize = 64 << 20;

/// One input file and what indexing it needs.
struct Job<'a> {
    /// The file's number in the input order.
    file: usize,
    /// Pair WARC requests and responses (`--post-append`).
    post_append: bool,
    /// Pair them for the request's fields in the response's line.
    pair_request: bool,
    /// Give each record the SHA-256 of its stored bytes.
    record_digests: bool,
    /// `--dir-root`.
    dir_root: Option<&'a Path>,
    path: &'a Path,
    /// The WARC of a WACZ package at `path` this job reads.
    member: Option<&'a crate::wacz::Entry>,
    /// The `filename` its lines give when not its base name (files of
    /// the tree formats).
    name: Option<&'a [u8]>,
    /// Its seed format, when the walk told it already.
    seed: Option<seeds::Seed>,
    opts: &'a capture::Options,
    abort: &'a AtomicBool,
    pb: Option<&'a dyn Progress>,
}

/// Indexes one file, sending its lines, errors and summary to the writer.
/// The file is mapped into memory unless `no_mmap` (or it cannot be: a
/// pipe, an empty file), so that records are read in place. `opened` is
/// the handle its first bytes were read from before the run (by the walk
/// or the package check), when one was kept: the file is read from it,
/// not opened again.
fn index_file(job: &Job, opened: Option<File>, no_mmap: bool, tx: &mut SyncSender<Msg>) {
    if let Some(entry) = job.member {
        return index_member(job, entry, no_mmap, tx);
    }
    // A handle handed over is past the first bytes read from it.
    let handed = opened.is_some();
    let opened = match opened {
        Some(f) => Ok(f),
        None => File::open(job.path),
    };
    // A file that cannot be mapped (a file system without mmap, or no
    // address space left for it) is read instead.
    let opened = opened.map(|f| {
        // A small file is read: mapping and unmapping it costs more than
        // copying it (trees of the seed formats hold one object per file).
        let small = f.metadata().is_ok_and(|m| m.len() < MAP_FROM);
        let map = if no_mmap || small {
            None
        } else {
            // Read ahead in large steps: the file is read once, front to
            // back.
            crate::engine::fs::map_file(&f, memmap2::Advice::Sequential)
                .ok()
                .flatten()
        };
        (f, map)
    });
    // The seed format: the walk's, or told from the first bytes here.
    let seed_of = |first: &[u8]| {
        job.seed
            .or_else(|| seeds::sniff(job.path, &first[..first.len().min(seeds::SNIFF)]))
    };
    match opened {
        Ok((_, Some(map))) => match seed_of(&map) {
            Some(seed) => index_seed(job, seed, &map[..], tx),
            None => {
                let map = std::sync::Arc::new(map);
                let behind = Some(Behind::new(map.clone()));
                let is_warc = warc::is_warc(&map[..]) || named_warc(job.path);
                index_in_place(job, map, is_warc, behind, tx);
            }
        },
        Ok((mut f, None)) => {
            let len_at_open = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
            // The first bytes tell the format; they are read again.
            let mut first = Vec::new();
            let got = match handed {
                true => io::Seek::rewind(&mut f),
                false => Ok(()),
            }
            .and_then(|()| (&mut f).take(SNIFF_BYTES).read_to_end(&mut first));
            let is_warc = warc::is_warc(&first) || named_warc(job.path);
            if let Some(seed) = got.as_ref().ok().and_then(|_| seed_of(&first)) {
                let mut all = first;
                match f.read_to_end(&mut all) {
                    Ok(_) => index_seed(job, seed, &all, tx),
                    Err(e) => file_failed(job, tx, format!("cannot read: {e}")),
                }
                return;
            }
            let input = io::Cursor::new(first).chain(f);
            match got {
                Err(e) => {
                    file_failed(job, tx, format!("cannot read: {e}"));
                }
                Ok(_) if is_warc && (job.post_append || job.pair_request) => index_records(
                    job,
                    Paired::new(warc::Reader::new(input), job),
                    None,
                    None,
                    tx,
                ),
                Ok(_) if is_warc => index_records(job, warc::Reader::new(input), None, None, tx),
                Ok(_) => index_records(job, arc::Reader::new(input), None, None, tx),
            }
            // A file cut short while it was read ends inside a record,
            // which is reported; this says why.
            let len_now = std::fs::metadata(job.path).map(|m| m.len());
            if let (Some(was), Ok(now)) = (len_at_open, len_now) {
                if now < was {
                    let text = format!(
                        "{}: the file shrank from {was} to {now} bytes while it was read: \
                         what was past byte {now} is not indexed",
                        job.path.display()
                    );
                    let _ = tx.send(Msg::Error { text });
                }
            }
        }
        Err(e) => {
            file_failed(job, tx, format!("cannot open: {e}"));
        }
    }
}

/// The stored bytes of a package's entry, shared from the package's map:
/// its WARC is read in place, as a file of its own would be.
struct EntryBytes {
    map: Arc<memmap2::Mmap>,
    range: std::ops::Range<usize>,
}

impl AsRef<[u8]> for EntryBytes {
    fn as_ref(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
}

/// Indexes the WARC (or ARC) `entry` of the package at `job.path`. A
/// stored entry is read in place from the package's map (or with
/// `no_mmap`, from the file); a deflated one (the spec stores WARCs, some
/// writers do not) through an inflating stream, its offsets then those of
/// the inflated bytes.
fn index_member(job: &Job, entry: &crate::wacz::Entry, no_mmap: bool, tx: &mut SyncSender<Msg>) {
    let shown = shown_name(job.path, Some(entry));
    let failed = |tx: &mut SyncSender<Msg>, what: String| {
        let _ = tx.send(Msg::Error {
            text: format!("{}: {what}", shown.display()),
        });
        let stats = FileStats {
            errors: 1,
            ..FileStats::default()
        };
        let _ = tx.send(Msg::Done {
            file: job.file,
            stats,
        });
    };
    let f = match File::open(job.path) {
        Ok(f) => f,
        Err(e) => return failed(tx, format!("cannot open: {e}")),
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let range = entry.range();
    if range.end > len {
        let what = format!(
            "its {} stored bytes at offset {} run past the end of the package ({len} bytes): \
             the file is cut short",
            entry.compressed_size, entry.data_start
        );
        return failed(tx, what);
    }
    let stored = entry.method == crate::wacz::Method::Stored;
    let map = match no_mmap || !stored || entry.compressed_size < MAP_FROM {
        true => None,
        false => crate::engine::fs::map_file(&f, memmap2::Advice::Sequential)
            .ok()
            .flatten(),
    };
    if let Some(map) = map {
        let bytes = Arc::new(EntryBytes {
            map: Arc::new(map),
            range: range.start as usize..range.end as usize,
        });
        let is_warc = warc::is_warc(bytes.as_ref().as_ref()) || named_warc(Path::new(&entry.name));
        index_in_place(job, bytes, is_warc, None, tx);
        return;
    }
    let mut f = f;
    if let Err(e) = std::io::Seek::seek(&mut f, io::SeekFrom::Start(range.start)) {
        return failed(tx, format!("cannot read: {e}"));
    }
    let mut input = match entry.reader(f.take(entry.compressed_size)) {
        Ok(r) => io::BufReader::with_capacity(1 << 20, r),
        Err(e) => return failed(tx, e.to_string()),
    };
    let first = match input.fill_buf() {
        Ok(b) => b,
        Err(e) => return failed(tx, format!("cannot read: {e}")),
    };
    let is_warc = warc::is_warc(first) || named_warc(Path::new(&entry.name));
    match is_warc {
        true if job.post_append || job.pair_request => index_records(
            job,
            Paired::new(warc::Reader::new(input), job),
            None,
            None,
            tx,
        ),
        true => index_records(job, warc::Reader::new(input), None, None, tx),
        false => index_records(job, arc::Reader::new(input), None, None, tx),
    }
}

/// Indexes a file of a seed format (`bytes` its contents): a Kulturarw3
/// file, or a Nedlib `.meta` file with its data file, as `seed` says.
fn index_seed(job: &Job, seed: seeds::Seed, bytes: &[u8], tx: &SyncSender<Msg>) {
    let base = job.path.file_name().map_or_else(Vec::new, os_bytes);
    let name = job.name.unwrap_or(&base);
    // Nedlib lines name the data file, Kulturarw3 lines the file itself.
    let rooted = job.dir_root.map(|root| {
        let named = match seed {
            seeds::Seed::NedlibMeta => seeds::nedlib_data_path(job.path),
            seeds::Seed::Kulturarw3 => job.path.to_path_buf(),
        };
        relative_name(&named, root)
    });
    let name = rooted.as_deref().unwrap_or(name);
    let done = match seed {
        seeds::Seed::NedlibMeta => {
            let data_path = seeds::nedlib_data_path(job.path);
            match std::fs::read(&data_path) {
                Ok(data) => seeds::nedlib(bytes, &data, job.path, name, job.opts),
                Err(e) => {
                    let what = format!("cannot read its data file {}: {e}", data_path.display());
                    return file_failed(job, tx, what);
                }
            }
        }
        seeds::Seed::Kulturarw3 => seeds::kulturarw3(bytes, job.path, name, job.opts),
    };
    let stats = FileStats {
        records: done.records,
        skipped: done.skipped,
        errors: done.errors.len() as u64,
        bytes: bytes.len() as u64,
        uncanonical: done.uncanonical,
        ..FileStats::default()
    };
    for text in done.errors {
        if tx.send(Msg::Error { text }).is_err() {
            return;
        }
    }
    if !done.lines.is_empty() {
        let _ = tx.send(Msg::Lines {
            file: job.file,
            buf: done.lines,
        });
    }
    if let Some(pb) = job.pb {
        pb.advance(bytes.len() as u64);
    }
    let _ = tx.send(Msg::Done {
        file: job.file,
        stats,
    });
}

/// Reports a file that could not be read at all, and ends it.
fn file_failed(job: &Job, tx: &SyncSender<Msg>, what: String) {
    let _ = tx.send(Msg::Error {
        text: format!("{}: {what}", job.path.display()),
    });
    let stats = FileStats {
        errors: 1,
        ..FileStats::default()
    };
    let _ = tx.send(Msg::Done {
        file: job.file,
        stats,
    });
}

/// Indexes an archive read in place from `bytes` (a file's map, or a
/// stored entry of a package): WARC records (paired when the job asks)
/// or ARC records.
fn index_in_place(
    job: &Job,
    bytes: crate::input::SharedBytes,
    is_warc: bool,
    behind: Option<Behind>,
    tx: &mut SyncSender<Msg>,
) {
    let held = Some(bytes.clone());
    if is_warc {
        let rdr = warc::Reader::from_shared(bytes, warc::Options::default());
        if job.post_append || job.pair_request {
            index_records(job, Paired::new(rdr, job), behind, held, tx);
        } else {
            index_records(job, rdr, behind, held, tx);
        }
    } else {
        let rdr = arc::Reader::from_shared(bytes, arc::Options::default());
        index_records(job, rdr, behind, held, tx);
    }
}

/// Indexes the records of one file read by `rdr`, releasing the pages of
/// its map (when it is mapped) as it goes. `held` is the file's bytes when
/// it is read in place: the records' stored bytes are hashed from there
/// instead of read again.
fn index_records<D: RecReader>(
    job: &Job,
    mut rdr: D,
    mut behind: Option<Behind>,
    held: Option<crate::input::SharedBytes>,
    tx: &mut SyncSender<Msg>,
) {
    let Job {
        file,
        post_append: _,
        pair_request: _,
        record_digests,
        dir_root,
        path,
        member,
        name: _,
        opts,
        abort,
        pb,
        seed: _,
    } = *job;
    let mut stats = FileStats::default();
    // A package's WARC is named as the package's own index names it.
    let name = match (member, dir_root) {
        (Some(m), _) => m.archive_name().as_bytes().to_vec(),
        (None, Some(root)) => relative_name(path, root),
        (None, None) => path.file_name().map_or_else(Vec::new, os_bytes),
    };
    let shown = shown_name(path, member);
    let shown = shown.as_path();
    let mut indexer = Indexer::new(opts.clone(), &name);
    let mut buf = Vec::with_capacity(CHUNK + 4096);
    let (mut meta_found, mut started) = (false, false);
    // Digests are computed several records at a time (`hash::Lanes`): a
    // record enters a free lane when it is read and leaves it when its
    // digest is done, so small records pass a large one. Their lines wait
    // in `order` for the records before them.
    let mut lanes = Lanes::new();
    let mut slots: Vec<Option<InLane<D::Rec>>> = (0..Lanes::WIDTH).map(|_| None).collect();
    let mut spare = D::Rec::take_spare();
    let mut order = InOrder::default();
    let mut done = Vec::new();
    let mut last_end = 0u64;
    let mut more = true;
    let give = opts.cdxj.is_some();
    let stored = match record_digests && held.is_none() {
        true => match File::open(path) {
            Ok(f) => Some(f),
            Err(e) => {
                stats.errors += 1;
                let text = format!(
                    "{}: cannot open again for --digest-records: {e}",
                    shown.display()
                );
                let _ = tx.send(Msg::Error { text });
                None
            }
        },
        false => None,
    };
    let mut w = Emit {
        indexer: &mut indexer,
        stats: &mut stats,
        tx,
        shown,
        stored,
        held: held.filter(|_| record_digests),
        base: member.map_or(0, |m| m.data_start),
        give,
    };
    loop {
        if abort.load(Ordering::Relaxed) {
            return;
        }
        while more && lanes.has_room() && order.held() < MAX_HELD {
            // The spare record with the largest buffer: a large block then
            // reuses a large buffer instead of growing another one into
            // fresh pages (each costs a fault).
            let largest = (0..spare.len()).max_by_key(|&i| spare[i].buffer_capacity());
            let mut rec = largest.map_or_else(D::Rec::default, |i| spare.swap_remove(i));
            match rdr.read(&mut rec) {
                Ok(true) => {
                    if !meta_found && opts.profile == Profile::Ukvs {
                        if let Some(meta) = rec.file_meta(&name) {
                            meta_found = true;
                            let _ = w.tx.send(Msg::Meta { meta });
                        }
                    }
                    if !started {
                        // An unsorted index of one file opens with what
                        // its first record says of it.
                        started = true;
                        let _ = w.tx.send(Msg::Started);
                    }
                    let end = rec.end();
                    if let Some(pb) = pb {
                        pb.advance(end.saturating_sub(last_end));
                    }
                    last_end = last_end.max(end);
                    let seq = order.open();
                    match rec.digest_start(w.indexer) {
                        Some(start) => {
                            let lane = slots.iter().position(Option::is_none).unwrap_or(0);
                            slots[lane] = Some(InLane { seq, rec, start });
                            lanes.start(lane);
                        }
                        None => {
                            order.finish(seq, &mut buf, |out| w.line(&rec, None, out));
                            spare.push(rec);
                            if let Some(behind) = &mut behind {
                                behind.release_below(in_use(&slots, &rdr));
                            }
                            // Files of records that need no hashing never
                            // leave this loop until their end.
                            if !w.send_full(file, &mut buf) {
                                return;
                            }
                        }
                    }
                }
                Ok(false) => {
                    more = false;
                    spare.push(rec);
                }
                Err(e) => {
                    spare.push(rec);
                    w.stats.errors += 1;
                    let fatal = D::is_fatal(&e);
                    let text = format!("{}: {e}", shown.display());
                    if w.tx.send(Msg::Error { text }).is_err() || fatal {
                        more = false;
                    }
                }
            }
        }
        if lanes.is_empty() {
            if more {
                continue;
            }
            break;
        }
        lanes.advance(
            |lane| {
                slots[lane].as_ref().map_or(&[][..], |l| {
                    &l.rec.block()[l.start.min(l.rec.block().len())..]
                })
            },
            &mut done,
        );
        for (lane, digest) in done.drain(..) {
            if let Some(l) = slots[lane].take() {
                order.finish(l.seq, &mut buf, |out| w.line(&l.rec, Some(digest), out));
                spare.push(l.rec);
            }
        }
        if let Some(behind) = &mut behind {
            behind.release_below(in_use(&slots, &rdr));
        }
        if !w.send_full(file, &mut buf) {
            return;
        }
    }
    keep_spare(spare);
    indexer.finish(&mut buf);
    stats.bytes = last_end;
    (stats.skipped, stats.skipped_bytes) = rdr.skipped();
    if !buf.is_empty() {
        let _ = tx.send(Msg::Lines { file, buf });
    }
    let _ = tx.send(Msg::Done { file, stats });
}

/// Where the bytes of the file still to be read start: blocks still in a
/// lane are the only bytes behind the reader that are.
fn in_use<D: RecReader>(slots: &[Option<InLane<D::Rec>>], rdr: &D) -> u64 {
    let lanes = slots.iter().flatten().map(|l| l.rec.offset()).min();
    lanes.unwrap_or_else(|| rdr.position())
}

/// The `!meta` object for one input file: its name, its filedesc record's
/// header fields, version block (version line and field-names line) and
/// Heritrix `<arcmetadata>` fields.
fn filedesc_meta(name: &[u8], rec: &arc::Record) -> String {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let fd = arc::FileDesc::parse(rec.block());
    let mut metadata = serde_json::Map::new();
    for (k, v) in fd.metadata {
        // Repeated elements (several `<dc:subject>`) become a list.
        match metadata.get_mut(&k) {
            Some(serde_json::Value::Array(list)) => list.push(v.into()),
            Some(first) => *first = serde_json::Value::Array(vec![first.take(), v.into()]),
            None => {
                metadata.insert(k, v.into());
            }
        }
    }
    let mut desc = serde_json::Map::new();
    desc.insert("url".into(), text(&rec.header.url).into());
    desc.insert("date".into(), text(&rec.header.date).into());
    desc.insert("version".into(), fd.version.into());
    desc.insert("origin".into(), fd.origin.into());
    if !fd.fields.is_empty() {
        desc.insert("field_names".into(), fd.fields.into());
    }
    if !metadata.is_empty() {
        desc.insert("metadata".into(), metadata.into());
    }
    let mut m = serde_json::Map::new();
    m.insert("filename".into(), text(name).into());
    m.insert("filedesc".into(), desc.into());
    serde_json::Value::Object(m).to_string()
}

/// The `!meta` object for one WARC file: its name and its warcinfo
/// record's date and fields (repeated names become lists).
fn warcinfo_meta(name: &[u8], rec: &warc::Record) -> String {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut fields = serde_json::Map::new();
    for (k, v) in warc::warc_fields(rec.block()) {
        let (k, v) = (text(k), serde_json::Value::from(text(v)));
        match fields.get_mut(&k) {
            Some(serde_json::Value::Array(list)) => list.push(v),
            Some(first) => *first = serde_json::Value::Array(vec![first.take(), v]),
            None => {
                fields.insert(k, v);
            }
        }
    }
    let mut info = serde_json::Map::new();
    for (key, field) in [
        ("date", "WARC-Date"),
        ("filename", "WARC-Filename"),
        ("record_id", "WARC-Record-ID"),
    ] {
        if let Some(v) = rec.header(field) {
            info.insert(key.into(), text(v).into());
        }
    }
    info.insert("version".into(), text(rec.head.version()).into());
    if !fields.is_empty() {
        info.insert("fields".into(), fields.into());
    }
    let mut m = serde_json::Map::new();
    m.insert("filename".into(), text(name).into());
    m.insert("warcinfo".into(), info.into());
    serde_json::Value::Object(m).to_string()
}

/// The name of `path` from the directory `root`, as cdxj-indexer's
/// `--dir-root` gives it (Python's `os.path.relpath`): both made absolute
/// from the working directory and normalised without looking at the file
/// system, `..` for each step up, `/` between parts.
fn relative_name(path: &Path, root: &Path) -> Vec<u8> {
    use std::path::Component;
    let absolute = |p: &Path| -> Vec<std::ffi::OsString> {
        let p = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let mut parts = Vec::new();
        for c in p.components() {
            match c {
                Component::Normal(n) => parts.push(n.to_os_string()),
                Component::ParentDir => {
                    parts.pop();
                }
                _ => {}
            }
        }
        parts
    };
    let (path, root) = (absolute(path), absolute(root));
    let common = path.iter().zip(&root).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<Vec<u8>> = vec![b"..".to_vec(); root.len() - common];
    parts.extend(path[common..].iter().map(|p| os_bytes(p)));
    if parts.is_empty() {
        return b".".to_vec();
    }
    parts.join(&b'/')
}

#[cfg(unix)]
fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    s.as_bytes().to_vec()
}

#[cfg(not(unix))]
fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    s.to_string_lossy().into_owned().into_bytes()
}

/// The writer side: collects lines (sorted or in file order), errors and
/// counts.
struct Sink {
    no_sort: bool,
    strict: bool,
    paths: usize,
    sorter: Option<crate::sorted::ExternalSorter>,
    profile: Profile,
    /// The SURT profile, recorded in the `!meta` header.
    surt: crate::surt::Options,
    /// The header line of cdxj-indexer's CDX shapes.
    cdx_header: Option<&'static [u8]>,
    /// `--no-sort`: lines of files indexed ahead of `next_file`.
    pending: BTreeMap<usize, Pending>,
    /// Bytes of `pending` in memory, kept under `mem` by spilling.
    pending_bytes: usize,
    mem: usize,
    tmp_dir: Option<PathBuf>,
    next_file: usize,
    headers_written: bool,
    /// A file's first record was read (`--no-sort` of one file writes its
    /// headers then).
    started: bool,
    metas: Vec<String>,
    records: u64,
    filtered: u64,
    skipped: u64,
    skipped_bytes: u64,
    errors: u64,
    files_done: u64,
    uncanonical: u64,
}

impl Sink {
    fn new(job: &IndexJob, profile: Profile, paths: &[PathBuf]) -> Sink {
        Sink {
            no_sort: job.no_sort,
            strict: job.strict,
            paths: paths.len(),
            sorter: (!job.no_sort).then(|| {
                crate::sorted::ExternalSorter::new(
                    usize::try_from(job.mem).unwrap_or(usize::MAX),
                    job.tmp_dir.clone(),
                )
            }),
            profile,
            surt: job.surt.clone(),
            cdx_header: job.cdxj.as_ref().and_then(|c| c.shape.header()),
            pending: BTreeMap::new(),
            pending_bytes: 0,
            mem: usize::try_from(job.mem).unwrap_or(usize::MAX),
            tmp_dir: job.tmp_dir.clone(),
            next_file: 0,
            headers_written: false,
            started: false,
            metas: Vec::new(),
            records: 0,
            filtered: 0,
            skipped: 0,
            skipped_bytes: 0,
            errors: 0,
            files_done: 0,
            uncanonical: 0,
        }
    }

    fn consume(
        &mut self,
        rx: std::sync::mpsc::Receiver<Msg>,
        out: &mut Output,
        pb: Option<&dyn Progress>,
        abort: &AtomicBool,
    ) -> Result<(), Error> {
        for msg in rx {
            match msg {
                Msg::Lines { file, buf } => {
                    if let Some(sorter) = &mut self.sorter {
                        for line in buf.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                            sorter.push(line).map_err(Error::Sort)?;
                        }
                    } else {
                        self.pending_bytes += buf.len();
                        self.pending.entry(file).or_default().chunks.push(buf);
                        self.flush_in_order(out)?;
                        self.spill_pending()?;
                    }
                }
                Msg::Error { text, .. } => {
                    self.errors += 1;
                    match pb {
                        Some(pb) => pb.print(&text),
                        None => crate::report!("{text}"),
                    }
                    if self.strict {
                        abort.store(true, Ordering::Relaxed);
                        return Ok(());
                    }
                }
                Msg::Warning { text } => match pb {
                    Some(pb) => pb.print(&format!("warning: {text}")),
                    None => crate::report!("warning: {text}"),
                },
                Msg::Meta { meta } => self.metas.push(meta),
                Msg::Started => {
                    self.started = true;
                    if self.no_sort {
                        self.flush_in_order(out)?;
                    }
                }
                Msg::Done { file, stats } => {
                    self.records += stats.records;
                    self.uncanonical += stats.uncanonical;
                    self.filtered += stats.filtered;
                    self.skipped += stats.skipped;
                    self.skipped_bytes += stats.skipped_bytes;
                    self.files_done += 1;
                    if let Some(pb) = pb {
                        pb.message(format!(
                            "{} records, {}/{} files",
                            self.records, self.files_done, self.paths
                        ));
                    }
                    if self.no_sort {
                        self.pending.entry(file).or_default().done = true;
                        self.flush_in_order(out)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The lines that open the index.
    fn header_lines(&self, metas: &[String]) -> Vec<Vec<u8>> {
        let mut lines = capture::header_lines(self.profile, &self.surt, metas);
        lines.extend(self.cdx_header.map(<[u8]>::to_vec));
        lines
    }

    fn write_headers(&mut self, out: &mut Output, metas: &[String]) -> Result<(), Error> {
        if !self.headers_written {
            self.headers_written = true;
            for line in self.header_lines(metas) {
                out.header(&line)?;
            }
        }
        Ok(())
    }

    /// `--no-sort`: writes the lines of finished files in input order.
    /// The headers must come first: of several files, they carry no
    /// per-file `!meta`; of one, they wait for its first record (or its
    /// end) and carry the `!meta` that record gives (a filedesc, or a
    /// warcinfo that comes first), as the sorted index does.
    fn flush_in_order(&mut self, out: &mut Output) -> Result<(), Error> {
        if !self.headers_written {
            let one = self.paths == 1;
            let ended = self.pending.get(&0).is_some_and(|p| p.done);
            if one && !self.started && !ended {
                return Ok(());
            }
            let metas = match one {
                true => std::mem::take(&mut self.metas),
                false => Vec::new(),
            };
            self.write_headers(out, &metas)?;
        }
        while let Some(p) = self.pending.get_mut(&self.next_file) {
            if let Some(mut file) = p.spilled.take() {
                copy_spilled(&mut file, out)?;
            }
            for chunk in p.chunks.drain(..) {
                self.pending_bytes -= chunk.len();
                out.chunk(&chunk)?;
            }
            if !p.done {
                break;
            }
            self.pending.remove(&self.next_file);
            self.next_file += 1;
        }
        Ok(())
    }

    /// `--no-sort`: while the lines held for files ahead of the one being
    /// written exceed `--mem`, moves the largest holding to a temporary
    /// file (after what it spilled before, so its order stays).
    fn spill_pending(&mut self) -> Result<(), Error> {
        while self.pending_bytes > self.mem {
            let Some(p) = self
                .pending
                .values_mut()
                .max_by_key(|p| p.chunks.iter().map(Vec::len).sum::<usize>())
            else {
                return Ok(());
            };
            if p.chunks.is_empty() {
                return Ok(());
            }
            if p.spilled.is_none() {
                let dir = self.tmp_dir.clone().unwrap_or_else(std::env::temp_dir);
                let file = tempfile::tempfile_in(&dir).map_err(|cause| Error::Temp {
                    what: format!("creating a temporary file in {}", dir.display()),
                    cause,
                })?;
                p.spilled = Some(file);
            }
            let file = p.spilled.as_mut().expect("just created");
            for chunk in p.chunks.drain(..) {
                self.pending_bytes -= chunk.len();
                file.write_all(&chunk).map_err(|cause| Error::Temp {
                    what: "cannot write a temporary file".into(),
                    cause,
                })?;
            }
        }
        Ok(())
    }

    /// Writes the sorted lines (or, with `--no-sort`, what is left), and
    /// hands them to the MementoMap, statistics and digest file the job
    /// asks for.
    fn finish(
        &mut self,
        out: &mut Output,
        _opts: &capture::Options,
        job: &IndexJob,
    ) -> Result<Option<Taps>, Error> {
        let Some(sorter) = self.sorter.take() else {
            self.write_headers(out, &[])?;
            return Ok(None);
        };
        let metas = std::mem::take(&mut self.metas);
        let headers = self.header_lines(&metas);
        let mut taps = Taps::start(job, &headers)?;
        self.write_headers(out, &metas)?;
        sorter.par_for_each_sorted(|line| {
            out.line(line)?;
            if let Some(t) = &mut taps {
                t.line(line);
            }
            Ok::<(), Error>(())
        })?;
        Ok(taps)
    }
}

/// A MementoMap, statistics and a digest file made from the index's lines
/// as they are written, each on a thread of its own: the lines go to them in chunks,
/// so the writer only copies them once more.
struct Taps {
    chunk: Vec<u8>,
    senders: Vec<SyncSender<Arc<Vec<u8>>>>,
    map: Option<std::thread::JoinHandle<anyhow::Result<ExitCode>>>,
    stats: Option<(
        std::thread::JoinHandle<anyhow::Result<crate::stats::Report>>,
        StatsOutput,
    )>,
    digests: Option<std::thread::JoinHandle<anyhow::Result<super::digests::Summary>>>,
    table: Option<std::thread::JoinHandle<anyhow::Result<super::table::Summary>>>,
}

/// Lines go to the taps in chunks of about this many bytes.
const TAP_CHUNK: usize = 256 * 1024;

impl Taps {
    fn start(job: &IndexJob, headers: &[Vec<u8>]) -> Result<Option<Taps>, Error> {
        if job.mementomap.is_none()
            && job.stats.is_none()
            && job.digests.is_none()
            && job.table.is_none()
        {
            return Ok(None);
        }
        let mut taps = Taps {
            chunk: Vec::with_capacity(TAP_CHUNK + 4096),
            senders: Vec::new(),
            map: None,
            stats: None,
            digests: None,
            table: None,
        };
        if let Some(out) = &job.table {
            let (out, headers) = (out.clone(), headers.to_vec());
            taps.table = Some(taps.spawn("table", Vec::new(), move |chunks| {
                Ok(super::table::from_chunks(&out, &headers, chunks)?)
            })?);
        }
        if let Some(out) = &job.digests {
            let (out, headers) = (out.clone(), headers.to_vec());
            taps.digests = Some(taps.spawn("digests", Vec::new(), move |chunks| {
                Ok(super::digests::from_chunks(&out, &headers, chunks)?)
            })?);
        }
        if let Some(map) = &job.mementomap {
            let (map, headers) = (map.clone(), headers.to_vec());
            taps.map = Some(taps.spawn("mementomap", Vec::new(), move |chunks| {
                Ok(super::mementomap::generate_from_chunks(
                    map, &headers, chunks,
                )?)
            })?);
        }
        if let Some(st) = &job.stats {
            // The statistics read the headers as lines, and stop at the
            // empty chunk that ends the index.
            let top = st.top;
            let mut head = Vec::new();
            for h in headers {
                head.extend_from_slice(h);
                head.push(b'\n');
            }
            let scan = taps.spawn("stats", head, move |chunks| {
                Ok(super::stats::scan_chunks(
                    top,
                    chunks.take_while(|c| !c.is_empty()),
                )?)
            })?;
            taps.stats = Some((scan, st.clone()));
        }
        Ok(Some(taps))
    }

    /// Starts the tap `name` on a thread of its own: `make` reads the
    /// chunks of lines sent to it (`first` before them, unless empty)
    /// and makes the tap's output.
    fn spawn<T: Send + 'static>(
        &mut self,
        name: &str,
        first: Vec<u8>,
        make: impl FnOnce(mpsc::IntoIter<Arc<Vec<u8>>>) -> anyhow::Result<T> + Send + 'static,
    ) -> Result<std::thread::JoinHandle<anyhow::Result<T>>, Error> {
        let (tx, rx) = sync_channel::<Arc<Vec<u8>>>(8);
        if !first.is_empty() {
            tx.send(Arc::new(first)).ok();
        }
        self.senders.push(tx);
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || make(rx.into_iter()))
            .map_err(|e| Error::Threads {
                what: "cannot start a thread",
                cause: Box::new(e),
            })
    }

    fn line(&mut self, line: &[u8]) {
        self.chunk.extend_from_slice(line);
        self.chunk.push(b'\n');
        if self.chunk.len() >= TAP_CHUNK {
            self.send();
        }
    }

    fn send(&mut self) {
        let chunk = Arc::new(std::mem::replace(
            &mut self.chunk,
            Vec::with_capacity(TAP_CHUNK + 4096),
        ));
        for tx in &self.senders {
            // A tap that stopped says why when it is joined.
            let _ = tx.send(Arc::clone(&chunk));
        }
    }

    /// The index is complete: the taps finish their outputs.
    fn finish(mut self) -> Result<(), Error> {
        if !self.chunk.is_empty() {
            self.send();
        }
        // An empty chunk says the index is complete.
        for tx in std::mem::take(&mut self.senders) {
            let _ = tx.send(Arc::new(Vec::new()));
        }
        if let Some(map) = self.map.take() {
            joined(map.join()).map_err(tap("cannot make the MementoMap"))?;
        }
        if let Some((stats, out)) = self.stats.take() {
            let report = joined(stats.join()).map_err(tap("cannot make the statistics"))?;
            super::stats::write_report(&report, &out.format, &out.path).map_err(Error::Report)?;
        }
        if let Some(digests) = self.digests.take() {
            joined(digests.join()).map_err(tap("cannot make the digest file"))?;
        }
        if let Some(table) = self.table.take() {
            joined(table.join()).map_err(tap("cannot make the table"))?;
        }
        Ok(())
    }
}

/// A tap thread's result (a panic, which no input should cause, as an
/// error).
fn joined<T>(r: std::thread::Result<anyhow::Result<T>>) -> anyhow::Result<T> {
    r.unwrap_or_else(|_| Err(anyhow::anyhow!("a thread making an output failed")))
}

/// A tap's failure, its `anyhow` chain kept as the cause.
fn tap(what: &'static str) -> impl FnOnce(anyhow::Error) -> Error {
    move |e| Error::Tap {
        what,
        cause: e.into(),
    }
}

/// `--no-sort`: the lines of one file not written yet.
#[derive(Default)]
struct Pending {
    /// Lines moved to disk (they come before `chunks`).
    spilled: Option<File>,
    chunks: Vec<Vec<u8>>,
    /// The file is indexed to its end.
    done: bool,
}

/// Writes the lines of a spilled temporary file, whole lines at a time.
fn copy_spilled(file: &mut File, out: &mut Output) -> Result<(), Error> {
    use std::io::{Read, Seek};
    let unread = |cause| Error::Temp {
        what: "cannot read a temporary file".into(),
        cause,
    };
    file.rewind().map_err(unread)?;
    let mut rdr = super::fs::AlignedReader::with_capacity(CHUNK, file);
    let mut buf = Vec::with_capacity(CHUNK + 4096);
    loop {
        let n = rdr
            .by_ref()
            .take(CHUNK as u64)
            .read_to_end(&mut buf)
            .map_err(unread)?;
        if n == 0 {
            break;
        }
        // Keep a partial last line for the next round.
        let cut = memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1);
        out.chunk(&buf[..cut])?;
        buf.drain(..cut);
    }
    if !buf.is_empty() {
        out.chunk(&buf)?;
    }
    Ok(())
}

/// Where index lines go: UKVS output passes through `crate::Writer`, which
/// checks each line (and, when sorted, the byte order) as it goes out;
/// CDXJ and CDX lines are written as they are.
enum Output {
    Ukvs(crate::ukvs::Writer<Dest>),
    Plain(Dest),
}

impl Output {
    fn open(path: Option<&Path>, profile: Profile, sorted: bool) -> Result<Output, Error> {
        let dest = Dest::create(path.unwrap_or(Path::new("-")))
            .map_err(Error::Output)?
            .durable();
        Ok(match (profile, sorted) {
            (Profile::Ukvs, true) => Output::Ukvs(crate::ukvs::Writer::new(dest)),
            (Profile::Ukvs, false) => Output::Ukvs(crate::ukvs::Writer::unsorted(dest)),
            _ => Output::Plain(dest),
        })
    }

    fn header(&mut self, line: &[u8]) -> Result<(), Error> {
        match self {
            Output::Ukvs(w) => w
                .raw_header(line)
                .map_err(ukvs_failed("cannot write the index header")),
            Output::Plain(d) => write_line(d, line),
        }
    }

    fn line(&mut self, line: &[u8]) -> Result<(), Error> {
        match self {
            Output::Ukvs(w) => w
                .write_line(line)
                .map_err(ukvs_failed("cannot write an index line")),
            Output::Plain(d) => write_line(d, line),
        }
    }

    /// Lines each ending in `\n`.
    fn chunk(&mut self, chunk: &[u8]) -> Result<(), Error> {
        match self {
            Output::Ukvs(_) => {
                for line in chunk.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                    self.line(line)?;
                }
                Ok(())
            }
            Output::Plain(d) => d.write_all(chunk).map_err(|cause| Error::Write {
                what: format!("cannot write {}", d.name()),
                cause,
            }),
        }
    }

    fn commit(self) -> Result<(), Error> {
        let dest = match self {
            Output::Ukvs(w) => w.finish().map_err(ukvs_failed("cannot write the index"))?,
            Output::Plain(d) => d,
        };
        dest.commit().map_err(Error::Output)
    }
}

/// A UKVS writer's failure, with what it was writing.
fn ukvs_failed(what: &'static str) -> impl FnOnce(crate::ukvs::Error) -> Error {
    move |cause| Error::Ukvs { what, cause }
}

fn write_line(d: &mut Dest, line: &[u8]) -> Result<(), Error> {
    d.write_all(line)
        .and_then(|()| d.write_all(b"\n"))
        .map_err(|cause| Error::Write {
            what: format!("cannot write {}", d.name()),
            cause,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--dir-root` names, as Python's `os.path.relpath` gives them.
    #[test]
    fn relative_names_as_relpath_gives_them() {
        let name =
            |p: &str, r: &str| String::from_utf8(relative_name(p.as_ref(), r.as_ref())).unwrap();
        assert_eq!(name("/a/b/c.warc", "/a"), "b/c.warc");
        assert_eq!(name("/a/b/c.warc", "/a/b/"), "c.warc");
        assert_eq!(name("/a/b/c.warc", "/a/x/y"), "../../b/c.warc");
        assert_eq!(name("/a/./b/../c.warc", "/a"), "c.warc");
        assert_eq!(name("/a", "/a"), ".");
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            name("x/y.warc.gz", "./"),
            "x/y.warc.gz",
            "relative to {}",
            cwd.display()
        );
        assert_eq!(name("x/y.warc.gz", "x/z"), "../y.warc.gz");
    }

    fn job(inputs: Vec<PathBuf>, output: Option<PathBuf>) -> IndexJob {
        IndexJob {
            threads: 1,
            mem: 1 << 20,
            quiet: true,
            ..IndexJob::new(inputs, output)
        }
    }

    #[test]
    fn a_missing_input_is_missing_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let absent = dir.path().join("absent.warc.gz");
        let (mut names, mut errors) = (Names::new(), Vec::new());
        let mut held = Held::new();
        let paths = collect_inputs(
            std::slice::from_ref(&absent),
            &mut names,
            &mut errors,
            &mut held,
        )
        .unwrap();
        assert!(paths.is_empty());
        let [err] = &errors[..] else {
            panic!("{errors:?}")
        };
        assert_eq!(err.kind(), Kind::Missing);
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("{}: ", absent.display())),
            "{text}"
        );
        // A run over it alone fails with its message counted (exit 2),
        // and writes nothing.
        let out = dir.path().join("out.cdxj");
        let code = run(&job(vec![absent], Some(out.clone())), None).unwrap();
        assert_eq!(code, ExitCode::from(2));
    }

    #[test]
    fn a_damaged_package_is_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("broken.wacz");
        std::fs::write(&package, b"PK\x03\x04 this is no zip archive").unwrap();
        let mut errors = Vec::new();
        let (paths, _, _) = open_packages(
            vec![package.clone()],
            &mut Names::new(),
            &mut Held::new(),
            &mut errors,
        );
        assert!(paths.is_empty());
        let [err] = &errors[..] else {
            panic!("{errors:?}")
        };
        assert_eq!(err.kind(), Kind::Damaged, "{err:?}");
        assert!(
            err.to_string()
                .starts_with(&format!("{}: ", package.display())),
            "{err}"
        );
    }

    #[test]
    fn bad_options_are_bad_input_and_an_output_nowhere_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let stats = StatsOutput {
            path: dir.path().join("stats.json"),
            format: super::super::stats::ReportFormat::Json,
            top: 10,
        };
        let unsorted = IndexJob {
            no_sort: true,
            stats: Some(stats),
            ..job(vec![], None)
        };
        let err = run(&unsorted, None).unwrap_err();
        assert_eq!(err.kind(), Kind::BadInput);
        assert!(err.to_string().ends_with("drop --no-sort"), "{err}");
        // An output in a directory that is not there.
        let out = dir.path().join("no-such-dir").join("out.cdxj");
        let err = run(&job(vec![], Some(out)), None).unwrap_err();
        assert_eq!(err.kind(), Kind::Missing, "{err:?}");
        assert!(err.output_error().is_some());
    }
}
