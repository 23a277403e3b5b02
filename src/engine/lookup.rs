//! Index sources and the queries answered over them, for every front end.
//!
//! ```text
//! Collection::open(paths) ─► [Source]      one per sorted file, or per ZipNum
//!      │                       │            cluster (its .idx mapped, blocks
//!      │                       │            read one at a time)
//!      ▼                       ▼
//! Collection::lines(range) ─► Lines        every source's lines of a KeyRange,
//!                                           merged in byte order (ties in
//!                                           source order), one at a time
//! ordered(lines, Order, limit)              reverse / closest / limit, holding
//!                                           at most `limit` items
//! ```
//!
//! Nothing here holds a whole answer: lines stream from the maps (or from
//! one decompressed ZipNum block per source) to the caller, so a query that
//! matches everything costs memory in proportion to one block, not to the
//! answer. Only an answer in reverse or closest order waits for its end,
//! and holds at most its limit.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::cluster::{self, Shards};
use super::error::Kind as Failure;
use crate::sorted::zipnum::{Block, BlockLines, Cluster};
use crate::sorted::{
    self, lines, prefix_key_for_url, url_shortcut, KeyRange, MatchType, Search, TimeFilter,
};
pub use crate::sorted::{ordered, Order};

pub use super::fs::Expected;

/// What can go wrong opening or searching index sources. Each variant
/// names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be opened, listed, mapped or read.
    /// (The I/O error is said in the message, not given as the source,
    /// so that a report of the whole chain says it once.)
    #[error("cannot {what} {path}: {error}")]
    Io {
        what: &'static str,
        path: String,
        error: io::Error,
    },
    /// A compressed file was given as a sorted index or map.
    #[error(
        "{name} is {kind}-compressed: a binary search needs a plain file ({})",
        match expected {
            Expected::Index => "decompress it, or build a cluster with `ukvs zipnum build`",
            Expected::Map | Expected::Queries => "decompress it",
        }
    )]
    Compressed {
        name: String,
        kind: &'static str,
        expected: Expected,
    },
    /// An archive was given as a sorted index or map.
    #[error(
        "{name} holds {format} records, not {}: {}",
        expected.lines(),
        expected.from_archive(Some(name))
    )]
    Archive {
        name: String,
        format: &'static str,
        expected: Expected,
    },
    /// A directory holds more than one ZipNum `.idx` file.
    #[error("{0} holds several .idx files; name the one to use")]
    SeveralIdx(String),
    /// A directory holds no index at all.
    #[error(
        "{0} is a directory without an index (.idx, .cdx, .cdxj or .ukvs files, or those \
         compressed: .cdxj.gz, .cdxj.zst...)"
    )]
    Empty(String),
    /// The search found damage (lines out of order, a bad block).
    /// (The search's error is part of the message, not a `source`, so
    /// that a report of the whole chain says it once.)
    #[error("searching {name}: {error}")]
    Search { name: String, error: sorted::Error },
    /// The sources record SURT profiles that do not meet.
    #[error("{0}")]
    Profiles(String),
    /// A WACZ package's ZIP or index cannot be read.
    #[error("{name}: {error}")]
    Package {
        name: String,
        error: crate::wacz::Error,
    },
}

/// What can stop a batch of lookups ([`Collection::batch`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// A source cannot be searched (its error names it).
    #[error(transparent)]
    Source(#[from] Error),
    /// A source cannot be sampled for many queries: see the cause.
    #[error("reading {name}")]
    Sample {
        name: String,
        #[source]
        cause: sorted::Error,
    },
    /// The queries cannot be read.
    #[error("reading queries")]
    Queries(#[source] io::Error),
    /// The worker threads cannot be started (too many threads for the
    /// system: give fewer with `-j`).
    #[error("starting threads")]
    Threads(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Answers waiting in a temporary file cannot be written or read
    /// back (a full disk).
    #[error(transparent)]
    Spill(io::Error),
    /// The answers cannot be written.
    #[error(transparent)]
    Output(io::Error),
}

impl BatchError {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Failure {
        match self {
            BatchError::Source(e) => e.kind(),
            BatchError::Sample { cause, .. } => Failure::of_sorted(cause),
            BatchError::Threads(_) => Failure::Io,
            BatchError::Queries(e) | BatchError::Spill(e) | BatchError::Output(e) => {
                Failure::of_io(e)
            }
        }
    }
}

super::error::output_variant!(BatchError);

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Failure {
        match self {
            Error::Io { error, .. } => Failure::of_io(error),
            Error::Compressed { .. }
            | Error::Archive { .. }
            | Error::SeveralIdx(_)
            | Error::Empty(_)
            | Error::Profiles(_) => Failure::BadInput,
            Error::Search { error, .. } => Failure::of_sorted(error),
            Error::Package { .. } => Failure::BadInput,
        }
    }

    fn io<'p>(what: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> Error + 'p {
        move |error| Error::Io {
            what,
            path: path.display().to_string(),
            error,
        }
    }
}

/// The bytes of an index file: mapped, or read into memory.
pub enum Bytes {
    Map(memmap2::Mmap),
    Vec(Vec<u8>),
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Vec(v) => v,
        }
    }
}

/// Opens `path` for searching: memory-mapped, or read into memory with
/// `no_mmap` or when it cannot be mapped (an empty file, a pipe).
pub fn open_bytes(path: &Path, no_mmap: bool) -> Result<Bytes, Error> {
    let mut file = File::open(path).map_err(Error::io("open", path))?;
    if !no_mmap {
        // No advice: a search reads a few pages here and there.
        let map =
            super::fs::map_file(&file, memmap2::Advice::Normal).map_err(Error::io("map", path))?;
        if let Some(map) = map {
            return Ok(Bytes::Map(map));
        }
    }
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)
        .map_err(Error::io("read", path))?;
    Ok(Bytes::Vec(buf))
}

/// Refuses the bytes of the file `name` when a binary search cannot use
/// them: bisecting compressed bytes, or an archive's records, would only
/// report disorder, or find nothing.
pub fn searchable(name: &str, bytes: &[u8], expected: Expected) -> Result<(), Error> {
    use super::fs::Content;
    let kind = match super::fs::content(&bytes[..bytes.len().min(4096)]) {
        Content::Plain => return Ok(()),
        Content::Archive(format) => {
            return Err(Error::Archive {
                name: name.to_string(),
                format,
                expected,
            })
        }
        Content::Gzip => "gzip",
        Content::Zstd => "zstd",
        Content::Unread(kind) => kind,
    };
    Err(Error::Compressed {
        name: name.to_string(),
        kind,
        expected,
    })
}

/// One index taking part in a lookup: a sorted file, or a ZipNum cluster.
pub struct Source {
    /// The path given (for a cluster, its `.idx` file), for messages.
    name: String,
    path: PathBuf,
    kind: Kind,
    /// A search found the file out of order (told once; from then on
    /// [`Source::lines_as_pywb`] searches it as pywb does at once).
    disordered: std::sync::atomic::AtomicBool,
    /// A line out of order near either end of a plain file, found when
    /// it was opened ([`Search::disorder_near_ends`]): every search of it
    /// fails (or, for the server, answers as pywb does).
    early_disorder: Option<(u64, Vec<u8>)>,
    /// Lines of a URL-keyed CDX file left out (reported) because they
    /// could not be read.
    skipped: u64,
}

/// Lines of a plain file's range that [`Source::lines_as_pywb`] keeps
/// from the read that checks their order, so that a short answer costs
/// one search, not two (borrowed lines: 16 bytes each).
const HELD_LINES: usize = 1024;

/// Bytes at each end of a plain file whose order is checked when it is
/// opened for searches: a few pages, next to which the cost of a lookup
/// is the same.
const ENDS_CHECKED: usize = 64 << 10;

enum Kind {
    Plain(Search<Bytes>),
    Cluster {
        cluster: Cluster<Bytes>,
        shards: Shards,
    },
}

/// Names of the files a directory of sorted indexes is read from: plain
/// (`*.cdx`, `*.cdxj`, `*.ukvs`), or compressed copies of them, which only
/// the jobs that read front to back can read.
fn is_index_name(name: &str) -> bool {
    let stem = compressed_stem(name).unwrap_or(name);
    [".cdx", ".cdxj", ".ukvs", ".wacz"]
        .iter()
        .any(|ext| stem.len() > ext.len() && stem.ends_with(ext))
}

/// The name without its `.gz` or `.zst`, when it says it is compressed.
fn compressed_stem(name: &str) -> Option<&str> {
    match name.rsplit_once('.') {
        Some((stem, "gz" | "zst")) => Some(stem),
        _ => None,
    }
}

/// The indexes at a path given as a source (see [`Source::open`]).
pub enum Listing {
    /// A ZipNum cluster's `.idx` file.
    Cluster(PathBuf),
    /// A sorted file: the path itself.
    File(PathBuf),
    /// A directory's sorted files, in name order.
    Dir(Vec<PathBuf>),
}

/// What `path` holds as sources, without opening them: for the jobs that
/// read a directory's files front to back (`cat`, `stats`), which take
/// compressed files too.
pub fn listing(path: &Path) -> Result<Listing, Error> {
    // A URL names a remote cluster (its directory or its idx).
    if cluster::is_remote(path) {
        return Ok(Listing::Cluster(path.to_path_buf()));
    }
    if path.extension().is_some_and(|e| e == "idx") && !path.is_dir() {
        return Ok(Listing::Cluster(path.to_path_buf()));
    }
    if !path.is_dir() {
        return Ok(Listing::File(path.to_path_buf()));
    }
    let mut idx = Vec::new();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(Error::io("list", path))? {
        let p = entry.map_err(Error::io("list", path))?.path();
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        let Some(name) = name else { continue };
        if name.starts_with('.') || !p.is_file() {
            continue;
        }
        if p.extension().is_some_and(|e| e == "idx") {
            idx.push(p);
        } else if is_index_name(&name) {
            files.push(p);
        }
    }
    match (idx.len(), files.is_empty()) {
        (1, _) => Ok(Listing::Cluster(idx.remove(0))),
        (0, false) => {
            files.sort();
            Ok(Listing::Dir(files))
        }
        (0, true) => Err(Error::Empty(path.display().to_string())),
        _ => Err(Error::SeveralIdx(path.display().to_string())),
    }
}

impl Source {
    /// The sources at `path`: a sorted file; a ZipNum cluster (its
    /// directory holding one `.idx` file, or the `.idx` file, or the URL
    /// of either: `http://`, `https://`, `s3://`); or a
    /// directory of sorted files (`*.cdx`, `*.cdxj`, `*.ukvs`, in name
    /// order). A directory's compressed copies (`*.cdxj.gz`, `*.cdx.zst`
    /// and the like) cannot be searched: each is reported as skipped, and
    /// refused when the directory holds nothing else.
    pub fn open(path: &Path, no_mmap: bool) -> Result<Vec<Source>, Error> {
        let (files, in_dir) = match listing(path)? {
            Listing::Cluster(idx) => return Ok(vec![Source::cluster(&idx, no_mmap)?]),
            Listing::File(file) => (vec![file], false),
            Listing::Dir(files) => (files, true),
        };
        let named_compressed = |f: &Path| {
            let name = f.file_name().map(|n| n.to_string_lossy());
            name.is_some_and(|n| compressed_stem(&n).is_some())
        };
        let mut sources = Vec::new();
        let mut skipped = Vec::new();
        for f in &files {
            match Source::file(f, no_mmap) {
                Ok(s) => sources.push(s),
                Err(e @ Error::Compressed { .. }) if in_dir && named_compressed(f) => {
                    skipped.push(e)
                }
                Err(e) => return Err(e),
            }
        }
        let mut skipped = skipped.into_iter();
        if sources.is_empty() {
            if let Some(e) = skipped.next() {
                return Err(e);
            }
        }
        for e in skipped {
            crate::report!("ukvs: skipped {e}");
        }
        Ok(sources)
    }

    /// A sorted file, or a WACZ package ([`Source::wacz`]), told by its
    /// first bytes.
    fn file(path: &Path, no_mmap: bool) -> Result<Source, Error> {
        match super::fs::is_package(path) {
            true => Source::wacz(path, no_mmap),
            false => Source::plain(path, no_mmap),
        }
    }

    /// The index of the WACZ package at `path`. A `cdxj-gzip-1.0` index
    /// is read as a ZipNum cluster whose one shard is the package itself:
    /// its `.idx` lines become a secondary index with the data entry's
    /// offset in the ZIP added, so a lookup finds the block by a binary
    /// search and reads and inflates that block alone, in place. A plain
    /// `.cdxj` entry (or a data entry the writer deflated whole, against
    /// the spec) is read into memory and searched there.
    pub fn wacz(path: &Path, no_mmap: bool) -> Result<Source, Error> {
        use crate::wacz::{IndexLayout, Method, Package};
        let name = path.display().to_string();
        let bytes = open_bytes(path, no_mmap)?;
        let bad = |e: crate::wacz::Error| Error::Package {
            name: name.clone(),
            error: e,
        };
        let all = bytes.as_ref();
        let package = Package::read(io::Cursor::new(all)).map_err(bad)?;
        let contents = |e: &crate::wacz::Entry| {
            let range = e.range();
            let stored = usize::try_from(range.start)
                .ok()
                .zip(usize::try_from(range.end).ok())
                .and_then(|(a, b)| all.get(a..b))
                .ok_or_else(|| crate::wacz::Error::BadEntry {
                    entry: e.name.clone(),
                    reason: "its bytes run past the end of the file: the file is cut short".into(),
                })?;
            e.contents(stored)
        };
        let idx_text = match package.entry("indexes/index.idx") {
            Some(idx) => Some(contents(idx).map_err(bad)?),
            None => None,
        };
        let data_name = idx_text.as_deref().and_then(crate::wacz::idx_data_name);
        let layout = package.index(data_name.as_deref()).map_err(bad)?;
        let kind = match (&layout, idx_text) {
            (IndexLayout::CdxjGzip { idx, data }, Some(text)) if data.method == Method::Stored => {
                let entries = crate::wacz::parse_idx(&idx.name, &text).map_err(bad)?;
                let secondary = crate::wacz::zipnum_idx(&entries, &data.name, data.data_start);
                let shards = super::cluster::one_file(&data.name, path);
                Kind::Cluster {
                    cluster: Cluster::new(Bytes::Vec(secondary)),
                    shards,
                }
            }
            (IndexLayout::CdxjGzip { data, .. }, _) => {
                let gz = contents(data).map_err(bad)?;
                let mut text = Vec::new();
                flate2::read::MultiGzDecoder::new(&gz[..])
                    .read_to_end(&mut text)
                    .map_err(|e| {
                        bad(crate::wacz::Error::BadEntry {
                            entry: data.name.clone(),
                            reason: format!("cannot inflate: {e}"),
                        })
                    })?;
                Kind::Plain(Search::new(Bytes::Vec(text)))
            }
            (IndexLayout::Cdxj(e), _) => {
                Kind::Plain(Search::new(Bytes::Vec(contents(e).map_err(bad)?)))
            }
        };
        let early_disorder = match &kind {
            Kind::Plain(search) => search.disorder_near_ends(ENDS_CHECKED),
            Kind::Cluster { .. } => None,
        };
        Ok(Source {
            name,
            path: path.to_path_buf(),
            kind,
            disordered: Default::default(),
            early_disorder,
            skipped: 0,
        })
    }

    fn plain(path: &Path, no_mmap: bool) -> Result<Source, Error> {
        let mut bytes = open_bytes(path, no_mmap)?;
        let name = path.display().to_string();
        searchable(&name, bytes.as_ref(), Expected::Index)?;
        let mut skipped = 0;
        if let Some(legend) = url_keyed_legend(bytes.as_ref()) {
            let keyed;
            (keyed, skipped) = surt_keyed_lines(&name, &legend, bytes.as_ref());
            bytes = Bytes::Vec(keyed);
        }
        let search = Search::new(bytes);
        let early_disorder = search.disorder_near_ends(ENDS_CHECKED);
        Ok(Source {
            name,
            path: path.to_path_buf(),
            kind: Kind::Plain(search),
            disordered: Default::default(),
            early_disorder,
            skipped,
        })
    }

    /// The ZipNum cluster whose `.idx` file is `idx` (a path, or the URL
    /// of the idx or of its directory: see [`cluster::open_remote`]).
    pub fn cluster(idx: &Path, no_mmap: bool) -> Result<Source, Error> {
        let (name, bytes, shards) = match idx.to_str().filter(|_| cluster::is_remote(idx)) {
            Some(url) => {
                let (name, bytes, shards) =
                    cluster::open_remote(url).map_err(|error| Error::Io {
                        what: "read the ZipNum cluster",
                        path: url.to_string(),
                        error,
                    })?;
                (name, Bytes::Vec(bytes), shards)
            }
            None => {
                let shards = cluster::local_shards(idx)
                    .map_err(Error::io("read the ZipNum location file beside", idx))?;
                (idx.display().to_string(), open_bytes(idx, no_mmap)?, shards)
            }
        };
        Ok(Source {
            path: PathBuf::from(&name),
            name,
            kind: Kind::Cluster {
                cluster: Cluster::new(bytes),
                shards,
            },
            disordered: Default::default(),
            early_disorder: None,
            skipped: 0,
        })
    }

    /// The file's name as given, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file searched: the sorted file, or the cluster's `.idx`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lines left out when the file was opened (a URL-keyed CDX file's
    /// lines that could not be read; each was reported).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Whether this is a ZipNum cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.kind, Kind::Cluster { .. })
    }

    /// The header lines (`!...`) of a sorted file; none for a cluster.
    pub fn headers(&self) -> Vec<&[u8]> {
        match &self.kind {
            Kind::Plain(search) => search.headers().collect(),
            Kind::Cluster { .. } => Vec::new(),
        }
    }

    /// The search of a sorted file.
    pub fn search(&self) -> Option<&Search<Bytes>> {
        match &self.kind {
            Kind::Plain(search) => Some(search),
            Kind::Cluster { .. } => None,
        }
    }

    /// The search of a sorted file, to sample it.
    pub fn search_mut(&mut self) -> Option<&mut Search<Bytes>> {
        match &mut self.kind {
            Kind::Plain(search) => Some(search),
            Kind::Cluster { .. } => None,
        }
    }

    /// The blocks of a cluster that `range` can touch (none for a file).
    pub fn blocks(&self, range: &KeyRange) -> Result<Vec<Block>, Error> {
        match &self.kind {
            Kind::Plain(_) => Ok(Vec::new()),
            Kind::Cluster { cluster, .. } => cluster.blocks(range).map_err(|e| self.failed(e)),
        }
    }

    /// Proves the order of the whole source (a full pass), reporting up to
    /// `max` disorders.
    pub fn check_order(&self, max: usize) -> Result<sorted::OrderReport, Error> {
        match &self.kind {
            Kind::Plain(search) => Ok(search.check_order(max)),
            Kind::Cluster { cluster, shards } => cluster
                .check_order(max, shards.reader(usize::MAX))
                .map_err(|e| self.failed(e)),
        }
    }

    /// The lines of `range`, one at a time, in index order; `at` is the
    /// range's lower bound in a sorted file when the caller found it
    /// already ([`Search::lower_bounds`]).
    pub fn lines<'s>(
        &'s self,
        range: &'s KeyRange,
        at: Option<usize>,
    ) -> Result<SourceLines<'s>, Error> {
        match &self.kind {
            Kind::Plain(_) if self.early_disorder.is_some() => {
                let (offset, line) = self.early_disorder.clone().unwrap_or_default();
                Err(self.failed(sorted::Error::Unsorted {
                    offset,
                    line: String::from_utf8_lossy(&line).into_owned(),
                }))
            }
            Kind::Plain(search) => {
                let found = match at {
                    Some(pos) => search.range_from(range, pos),
                    None => search.range(range),
                };
                Ok(SourceLines::Plain(found.map_err(|e| self.failed(e))?))
            }
            Kind::Cluster { cluster, shards } => {
                let blocks = cluster.blocks(range).map_err(|e| self.failed(e))?;
                Ok(self.block_lines(blocks, range, shards))
            }
        }
    }

    /// The lines of `range` as pywb's CDX server finds them, for a server
    /// that answers as pywb does rather than fail: a sorted file's range
    /// is first read through, checked ([`Source::lines`]), and given if
    /// it is in order; a file out of order there is told once on stderr
    /// (file, byte offset, how to fix it) and from then on searched as
    /// pywb searches it ([`Search::pywb_range`]), unchecked. A range of
    /// up to [`HELD_LINES`] lines (an exact lookup's) is given from that
    /// first read; a longer one is read again, which keeps memory bounded
    /// whatever the answer's size. A cluster's lines are
    /// [`Source::lines`].
    pub fn lines_as_pywb<'s>(&'s self, range: &'s KeyRange) -> Result<SourceLines<'s>, Error> {
        use std::sync::atomic::Ordering;
        let Kind::Plain(search) = &self.kind else {
            return self.lines(range, None);
        };
        if !self.disordered.load(Ordering::Relaxed) {
            let mut held = Vec::new();
            let mut whole = true;
            let found = match &self.early_disorder {
                Some((offset, _)) => Err(sorted::Error::Unsorted {
                    offset: *offset,
                    line: String::new(),
                }),
                None => search.range(range).and_then(|lines| {
                    for line in lines {
                        let (_, line) = line?;
                        match held.len() < HELD_LINES {
                            true => held.push(line),
                            false => whole = false,
                        }
                    }
                    Ok(())
                }),
            };
            match found {
                Ok(()) if whole => return Ok(SourceLines::Held(held.into_iter())),
                Ok(()) => return self.lines(range, None),
                Err(sorted::Error::Unsorted { offset, .. }) => {
                    if !self.disordered.swap(true, Ordering::Relaxed) {
                        // Once per file: where the order first breaks,
                        // which the search may have met far from there.
                        let report = search.check_order(1);
                        let (line, offset) = report
                            .found
                            .first()
                            .map_or((0, offset), |d| (d.line_no, d.offset));
                        crate::report!(
                            "ukvs: {}: line {line} (byte {offset}) is out of byte order \
                             ({} lines in all): answering from what pywb's search of the file \
                             finds, which can miss captures; sort it with `ukvs sort` (or \
                             `LC_ALL=C sort`)",
                            self.name,
                            report.count
                        );
                    }
                }
                Err(e) => return Err(self.failed(e)),
            }
        }
        Ok(SourceLines::Pywb(search.pywb_range(range)))
    }

    /// Every data line (no header line), in index order.
    pub fn every_line(&self) -> Result<SourceLines<'_>, Error> {
        static ALL: std::sync::OnceLock<KeyRange> = std::sync::OnceLock::new();
        let all = ALL.get_or_init(KeyRange::all);
        self.lines(all, None)
    }

    /// The lines of `range` no greater than `at_most` (when given), last
    /// first: [`Source::lines`] reversed, read from the end of the range.
    /// A sorted file is scanned backwards from the range's end
    /// ([`Search::range_rev`]); a cluster's blocks are read from the last
    /// one that can hold the range, one block held at a time. `blocks`
    /// gives the blocks to read instead (a page of them).
    pub fn lines_rev<'s>(
        &'s self,
        range: &'s KeyRange,
        at_most: Option<&[u8]>,
        blocks: Option<Vec<Block>>,
    ) -> Result<SourceLinesRev<'s>, Error> {
        match &self.kind {
            Kind::Plain(_) if self.early_disorder.is_some() => {
                let (offset, line) = self.early_disorder.clone().unwrap_or_default();
                Err(self.failed(sorted::Error::Unsorted {
                    offset,
                    line: String::from_utf8_lossy(&line).into_owned(),
                }))
            }
            Kind::Plain(_) if blocks.is_some() => Ok(SourceLinesRev::Done),
            Kind::Plain(search) => Ok(SourceLinesRev::Plain(
                search
                    .range_rev(range, at_most)
                    .map_err(|e| self.failed(e))?,
            )),
            Kind::Cluster { shards, cluster } => {
                let mut blocks = match blocks {
                    Some(b) => b,
                    None => cluster.blocks(range).map_err(|e| self.failed(e))?,
                };
                if let Some(most) = at_most {
                    // A block whose first key sorts above `most` holds
                    // only lines above it.
                    while blocks.len() > 1 && blocks.last().is_some_and(|b| &b.first_key[..] > most)
                    {
                        blocks.pop();
                    }
                }
                Ok(SourceLinesRev::Cluster(Box::new(BlocksRev {
                    blocks,
                    range,
                    at_most: at_most.map(<[u8]>::to_vec),
                    shards,
                    held: Vec::new(),
                    after: None,
                    done: false,
                })))
            }
        }
    }

    /// The lines of a page of a cluster's blocks within `range` (pywb's
    /// paged queries); nothing for a sorted file.
    pub fn page_lines<'s>(&'s self, blocks: Vec<Block>, range: &'s KeyRange) -> SourceLines<'s> {
        match &self.kind {
            Kind::Plain(_) => SourceLines::Done,
            Kind::Cluster { shards, .. } => self.block_lines(blocks, range, shards),
        }
    }

    fn block_lines<'s>(
        &'s self,
        blocks: Vec<Block>,
        range: &'s KeyRange,
        shards: &'s Shards,
    ) -> SourceLines<'s> {
        let reader = shards.range_reader(blocks.len(), range);
        SourceLines::Cluster(Box::new(BlockLines::new(blocks, range, reader)))
    }

    fn failed(&self, error: sorted::Error) -> Error {
        Error::Search {
            name: self.name.clone(),
            error,
        }
    }
}

/// The legend of a CDX file keyed by URLs rather than SURTs (wget's
/// ` CDX a b a m s k r M V g u`), `None` for any other file.
fn url_keyed_legend(bytes: &[u8]) -> Option<crate::ukvs::convert::CdxLegend> {
    let first = lines::line_at(bytes, 0).0;
    let legend = crate::ukvs::convert::CdxLegend::parse(first)?.ok()?;
    legend.is_url_keyed().then_some(legend)
}

/// The lines of a URL-keyed CDX file as a search reads them: each made a
/// CDXJ line keyed by the SURT of its URL
/// ([`surt_keyed_cdxj`](crate::ukvs::convert::surt_keyed_cdxj)), sorted
/// in byte order, in memory (O(n) once, when the file is opened; such
/// files are small, one per crawl). A line that cannot be read is
/// reported with its number and byte offset and left out; gives the lines
/// and how many were left out.
fn surt_keyed_lines(
    name: &str,
    legend: &crate::ukvs::convert::CdxLegend,
    bytes: &[u8],
) -> (Vec<u8>, u64) {
    let mut skipped = 0;
    let mut keyed: Vec<Vec<u8>> = Vec::new();
    let mut buf = Vec::new();
    let mut pos = 0;
    let mut no = 0u64;
    while pos < bytes.len() {
        let at = pos;
        let (line, next) = lines::line_at(bytes, pos);
        pos = next.max(pos + 1);
        no += 1;
        if line.is_empty() || lines::is_header(line) {
            continue;
        }
        match crate::ukvs::convert::surt_keyed_cdxj(legend, line, no, &mut buf) {
            Ok(()) => keyed.push(buf.clone()),
            Err(e) => {
                skipped += 1;
                crate::report!("ukvs: {name}: byte {at}: {e}; left out");
            }
        }
    }
    keyed.sort_unstable();
    let mut out = Vec::with_capacity(bytes.len() + keyed.len() * 32);
    for l in keyed {
        out.extend_from_slice(&l);
        out.push(b'\n');
    }
    (out, skipped)
}

/// The lines of one source within a range, one at a time.
pub enum SourceLines<'s> {
    Plain(sorted::Range<'s, 's>),
    /// A short range of a plain file, read and checked already.
    Held(std::vec::IntoIter<&'s [u8]>),
    /// A file out of order, searched as pywb searches it.
    Pywb(sorted::PywbRange<'s, 's>),
    Cluster(Box<BlockLines<'s, cluster::Reader<'s>>>),
    Done,
}

impl<'s> Iterator for SourceLines<'s> {
    type Item = Result<Cow<'s, [u8]>, sorted::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            SourceLines::Plain(r) => r.next().map(|l| l.map(|(_, line)| Cow::Borrowed(line))),
            SourceLines::Held(r) => r.next().map(|line| Ok(Cow::Borrowed(line))),
            SourceLines::Pywb(r) => r.next().map(|(_, line)| Ok(Cow::Borrowed(line))),
            SourceLines::Cluster(b) => b.next().map(|l| l.map(Cow::Owned)),
            SourceLines::Done => None,
        }
    }
}

/// The lines of one source within a range, last first
/// ([`Source::lines_rev`]).
pub enum SourceLinesRev<'s> {
    Plain(sorted::RangeRev<'s>),
    Cluster(Box<BlocksRev<'s>>),
    Done,
}

impl<'s> Iterator for SourceLinesRev<'s> {
    type Item = Result<Cow<'s, [u8]>, sorted::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            SourceLinesRev::Plain(r) => r.next().map(|l| l.map(|(_, line)| Cow::Borrowed(line))),
            SourceLinesRev::Cluster(b) => b.next().map(|l| l.map(Cow::Owned)),
            SourceLinesRev::Done => None,
        }
    }
}

/// A cluster's lines of a range, last first: its blocks from the last,
/// each read whole (its lines within the range, as [`BlockLines`] gives
/// them) and handed out backwards, each line checked against the one
/// handed out before it.
pub struct BlocksRev<'s> {
    /// Blocks still to read; the last is read next.
    blocks: Vec<Block>,
    range: &'s KeyRange,
    at_most: Option<Vec<u8>>,
    shards: &'s Shards,
    /// The lines of the block being read; the last is handed out next.
    held: Vec<Vec<u8>>,
    after: Option<Vec<u8>>,
    done: bool,
}

impl Iterator for BlocksRev<'_> {
    type Item = Result<Vec<u8>, sorted::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            if let Some(line) = self.held.pop() {
                if self.after.as_ref().is_some_and(|a| line > *a) {
                    self.done = true;
                    return Some(Err(sorted::Error::Unsorted {
                        offset: 0,
                        line: String::from_utf8_lossy(&line).into_owned(),
                    }));
                }
                if self.at_most.as_ref().is_some_and(|m| line > *m) {
                    continue;
                }
                self.after = Some(line.clone());
                return Some(Ok(line));
            }
            let block = self.blocks.pop()?;
            let lines = BlockLines::new(
                vec![block],
                self.range,
                self.shards.range_reader(1, self.range),
            );
            match lines.collect::<Result<Vec<_>, _>>() {
                Ok(l) => self.held = l,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        None
    }
}

/// The sources of one lookup or one served collection, searched as one
/// index.
pub struct Collection {
    sources: Vec<Source>,
}

/// A line of an answer and the source it came from (an index into
/// [`Collection::sources`]).
#[derive(Clone, Debug)]
pub struct Hit<'s> {
    pub line: Cow<'s, [u8]>,
    pub source: usize,
}

impl Collection {
    /// Opens every path (see [`Source::open`]), in order.
    pub fn open<P: AsRef<Path>>(paths: &[P], no_mmap: bool) -> Result<Collection, Error> {
        let mut sources = Vec::new();
        for p in paths {
            sources.extend(Source::open(p.as_ref(), no_mmap)?);
        }
        Ok(Collection { sources })
    }

    pub fn sources(&self) -> &[Source] {
        &self.sources
    }

    pub fn sources_mut(&mut self) -> &mut [Source] {
        &mut self.sources
    }

    /// The SURT options URLs are keyed with: the profile the indexes'
    /// `!meta` records (`ukvs index --keep-www` and the like), else the
    /// reference's defaults. Indexes keyed with different profiles cannot
    /// be searched with one key.
    pub fn surt_options(&self) -> Result<crate::surt::Options, Error> {
        let headers = self
            .sources
            .iter()
            .flat_map(|s| s.headers().into_iter().map(move |h| (s.name(), h)));
        crate::capture::surt_profile_in_headers(headers)
            .map(Option::unwrap_or_default)
            .map_err(Error::Profiles)
    }

    /// Names of the value fields between the datetime and the JSON block:
    /// from a `!fields {.., values: [..]}` header or a CDX legend of the
    /// first sorted file that has one, else the default UKVS capture
    /// profile's (`offset`, `digest`).
    pub fn value_names(&self) -> Vec<String> {
        self.sources
            .iter()
            .find_map(|s| value_names_in(s.headers()))
            .unwrap_or_else(|| vec!["offset".into(), "digest".into()])
    }

    /// Every source's lines in `range`, merged in byte order (ties in
    /// source order), one at a time. `at(i)` is the range's lower bound in
    /// source `i` when the caller found it already.
    pub fn lines<'s>(
        &'s self,
        range: &'s KeyRange,
        at: impl Fn(usize) -> Option<usize>,
    ) -> Result<Lines<'s>, Error> {
        let mut each = Vec::with_capacity(self.sources.len());
        for (i, s) in self.sources.iter().enumerate() {
            each.push(s.lines(range, at(i))?);
        }
        Ok(Lines::new(self, each))
    }

    /// [`Collection::lines`] with each source read through
    /// [`Source::lines_as_pywb`]: a file out of order gives what pywb's
    /// search of it finds (and is told once) instead of failing.
    pub fn lines_as_pywb<'s>(&'s self, range: &'s KeyRange) -> Result<Lines<'s>, Error> {
        let mut each = Vec::with_capacity(self.sources.len());
        for s in &self.sources {
            each.push(s.lines_as_pywb(range)?);
        }
        Ok(Lines::new(self, each))
    }

    /// Merges per-source line streams (one per source, in source order).
    pub fn merge<'s>(&'s self, each: Vec<SourceLines<'s>>) -> Lines<'s> {
        Lines::new(self, each)
    }
}

/// Sorted streams merged into one: the least head next, ties in stream
/// order (the rule of a k-way merge with a source tie-break, and of
/// Python's `heapq.merge`). `less` orders two items; an error ends the
/// merge after it is given. Items come with the index of their stream.
pub struct MergeBy<I, T, F> {
    each: Vec<I>,
    /// The next item of each stream, once read.
    heads: Vec<Option<T>>,
    less: F,
    started: bool,
    failed: bool,
}

impl<I, T, E, F> MergeBy<I, T, F>
where
    I: Iterator<Item = Result<T, E>>,
    F: Fn(&T, &T) -> bool,
{
    pub fn new(each: Vec<I>, less: F) -> MergeBy<I, T, F> {
        let heads = each.iter().map(|_| None).collect();
        MergeBy {
            each,
            heads,
            less,
            started: false,
            failed: false,
        }
    }

    /// Reads the next item of stream `i` into its head.
    fn fill(&mut self, i: usize) -> Result<(), E> {
        self.heads[i] = self.each[i].next().transpose()?;
        Ok(())
    }
}

impl<I, T, E, F> Iterator for MergeBy<I, T, F>
where
    I: Iterator<Item = Result<T, E>>,
    F: Fn(&T, &T) -> bool,
{
    type Item = Result<(T, usize), E>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if !self.started {
            self.started = true;
            for i in 0..self.each.len() {
                if let Err(e) = self.fill(i) {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
        // Few streams: a scan for the least head beats a heap. The first
        // of equal heads wins, so ties keep stream order.
        let mut best: Option<usize> = None;
        for (i, h) in self.heads.iter().enumerate() {
            if let Some(item) = h {
                let head = |b: usize| self.heads[b].as_ref().expect("a head");
                if best.map_or(true, |b| (self.less)(item, head(b))) {
                    best = Some(i);
                }
            }
        }
        let i = best?;
        let item = self.heads[i].take().expect("the chosen head");
        if let Err(e) = self.fill(i) {
            self.failed = true;
            return Some(Err(e));
        }
        Some(Ok((item, i)))
    }
}

/// Byte order of two lines.
type ByteOrder = fn(&Cow<[u8]>, &Cow<[u8]>) -> bool;

/// One source's lines, its errors naming it.
type NamedLines<'s> = Box<dyn Iterator<Item = Result<Cow<'s, [u8]>, Error>> + Send + 's>;

/// Every source's lines of a range, merged in byte order (see
/// [`Collection::lines`]).
pub struct Lines<'s> {
    merged: MergeBy<NamedLines<'s>, Cow<'s, [u8]>, ByteOrder>,
}

impl<'s> Lines<'s> {
    fn new(collection: &'s Collection, each: Vec<SourceLines<'s>>) -> Lines<'s> {
        let each = each
            .into_iter()
            .zip(&collection.sources)
            .map(|(lines, source)| -> NamedLines<'s> {
                Box::new(lines.map(move |l| l.map_err(|e| source.failed(e))))
            })
            .collect();
        Lines {
            merged: MergeBy::new(each, |a, b| a < b),
        }
    }
}

impl<'s> Iterator for Lines<'s> {
    type Item = Result<Hit<'s>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.merged
            .next()
            .map(|r| r.map(|(line, source)| Hit { line, source }))
    }
}

/// How a batch writes one found line.
pub type WriteLine<'a> = dyn Fn(&mut dyn std::io::Write, &[u8]) -> std::io::Result<()> + Sync + 'a;

/// What a lookup keeps of the lines in its range, and in which order.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    pub time: TimeFilter,
    /// Access rules: lines an `exclude` rule covers are left out.
    pub acl: Option<crate::acl::Rules>,
    pub order: Order,
    pub limit: Option<usize>,
}

/// The key range of a URL under `match_type` (the `*.host` and `prefix*`
/// forms apply without one), the URL without its `*`, and whether the
/// canonicaliser rejected it (it is then looked up as given, as
/// cdxj-indexer keys it).
pub fn url_range(
    url: &str,
    surt: &crate::surt::Options,
    match_type: Option<MatchType>,
) -> (KeyRange, String, Option<String>) {
    let (url, m) = url_shortcut(url, match_type);
    let (mut key, err) = crate::surt::key(url.as_bytes(), surt);
    if m == MatchType::Prefix {
        key = prefix_key_for_url(url, key);
    }
    (
        KeyRange::new(&key, m),
        url.to_string(),
        err.map(|e| e.to_string()),
    )
}

impl Collection {
    /// The answer to one query: every source's lines in the range, merged
    /// in byte order (ties in source order), filtered and ordered as
    /// asked, one at a time. `at(i)` is the range's lower bound in source
    /// `i` when the caller found it already.
    pub fn answer<'s>(
        &'s self,
        range: &'s KeyRange,
        at: impl Fn(usize) -> Option<usize>,
        filters: &'s Filters,
    ) -> Result<Box<dyn Iterator<Item = Result<Hit<'s>, Error>> + 's>, Error> {
        let found = self.lines(range, at)?.filter(move |h| match h {
            Ok(hit) => {
                let (key, datetime) = lines::key_datetime(&hit.line);
                (!filters.time.is_active() || filters.time.accepts(datetime))
                    && filters.acl.as_ref().map_or(true, |rules| {
                        rules.access(key, datetime) != crate::acl::Access::Exclude
                    })
            }
            Err(_) => true,
        });
        Ok(ordered(found, &filters.order, filters.limit, |h: &Hit| {
            lines::key_datetime(&h.line).1
        }))
    }

    /// Answers a batch of exact queries, one per line of `queries` (keys,
    /// or URLs with `as_url`), writing each answer with `write` to `out` in
    /// input order, on `threads` threads, in bounded memory (answers wait
    /// in [`Spill`](super::batch::Spill)s). Gives whether any query found
    /// something and how many URLs could not be canonicalised.
    pub fn batch(
        &mut self,
        queries: &mut dyn std::io::BufRead,
        as_url: bool,
        filters: &Filters,
        threads: usize,
        out: &mut dyn std::io::Write,
        write: &WriteLine<'_>,
    ) -> Result<(bool, u64), BatchError> {
        use super::batch::{self, Spill};
        use std::sync::atomic::{AtomicU64, Ordering};
        let surt = self.surt_options()?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(super::thread_count(threads))
            .build()
            .map_err(|e| BatchError::Threads(Box::new(e)))?;
        let mut any = false;
        let mut sampled = false;
        let uncanonical = AtomicU64::new(0);
        // Sampling costs a page per step of each file: worth it from a few
        // thousand queries on.
        const SAMPLE_AFTER: usize = 4096;
        const SAMPLE_STEP: usize = 4 << 10;
        loop {
            let qs = batch::read_chunk(queries, batch::CHUNK).map_err(BatchError::Queries)?;
            if qs.is_empty() {
                break;
            }
            if !sampled && qs.len() >= SAMPLE_AFTER {
                // Many queries: keep the top of every search in memory.
                for source in &mut self.sources {
                    let name = source.name.clone();
                    if let Kind::Plain(search) = &mut source.kind {
                        search
                            .sample(SAMPLE_STEP)
                            .map_err(|cause| BatchError::Sample { name, cause })?;
                    }
                }
            }
            sampled = true;
            let coll = &*self;
            let (bufs, hit) = batch::answer_in_order(&pool, &qs, 1024, |qs, buf: &mut Spill| {
                let ranges: Vec<KeyRange> = qs
                    .iter()
                    .map(|q| {
                        if as_url {
                            let (range, _, err) = url_range(q, &surt, Some(MatchType::Exact));
                            if err.is_some() {
                                uncanonical.fetch_add(1, Ordering::Relaxed);
                            }
                            range
                        } else {
                            KeyRange::new(q.as_bytes(), MatchType::Exact)
                        }
                    })
                    .collect();
                // The lower bounds in each sampled index, found together.
                let starts: Vec<&[u8]> = ranges.iter().map(|r| &r.start[..]).collect();
                let mut bounds = Vec::with_capacity(coll.sources.len());
                for source in &coll.sources {
                    bounds.push(match &source.kind {
                        Kind::Plain(search) if search.is_sampled() => {
                            Some(search.lower_bounds(&starts).map_err(|e| source.failed(e))?)
                        }
                        _ => None,
                    });
                }
                let mut hit = false;
                for (i, range) in ranges.iter().enumerate() {
                    let at = |s: usize| bounds[s].as_ref().map(|b| b[i]);
                    for found in coll.answer(range, at, filters)? {
                        write(buf, &found?.line).map_err(BatchError::Spill)?;
                        hit = true;
                    }
                }
                Ok::<_, BatchError>(hit)
            })?;
            any |= hit;
            for buf in bufs {
                buf.copy_to(out).map_err(BatchError::Output)?;
            }
        }
        Ok((any, uncanonical.load(Ordering::Relaxed)))
    }
}

/// The `values` list of a `!fields` header body, read leniently (its keys
/// may be unquoted): the quoted strings after `values`.
pub fn parse_values(body: &[u8]) -> Option<Vec<String>> {
    let text = std::str::from_utf8(body).ok()?;
    let at = text.find("values")?;
    let list = &text[at..];
    let open = list.find('[')?;
    let close = list[open..].find(']')? + open;
    let names = list[open + 1..close]
        .split(',')
        .map(|s| s.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
        .filter(|s| !s.is_empty())
        .collect();
    Some(names)
}

/// Names of the value fields between the datetime and the JSON block that
/// the header lines of one file give: its `!fields` values, or the
/// columns of a CDX legend after key and datetime; `None` when they give
/// none.
pub fn value_names_in<'h>(headers: impl IntoIterator<Item = &'h [u8]>) -> Option<Vec<String>> {
    for h in headers {
        if let Some(names) = h.strip_prefix(b"!fields ").and_then(parse_values) {
            return Some(names);
        }
        // A CDX legend names its columns after key and datetime.
        if let Some(Ok(legend)) = crate::ukvs::convert::CdxLegend::parse(h) {
            if legend.letters.get(1) == Some(&b'b') {
                return Some(
                    legend.letters[2..]
                        .iter()
                        .map(|&c| crate::ukvs::convert::cdx_column_name(c))
                        .collect(),
                );
            }
        }
    }
    None
}

/// Key and datetime of a line (its first two fields).
pub fn key_datetime(line: &[u8]) -> (&[u8], &[u8]) {
    lines::key_datetime(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader or writer that fails as `kind` says.
    struct Failing(io::ErrorKind);

    impl io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(self.0.into())
        }
    }

    impl io::Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(self.0.into())
        }

        fn flush(&mut self) -> io::Result<()> {
            Err(self.0.into())
        }
    }

    #[test]
    fn batch_errors_say_their_kind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.cdxj");
        std::fs::write(&path, "a)/ 2020 {}\nb)/ 2020 {}\n").unwrap();
        let mut coll = Collection::open(&[&path], false).unwrap();
        let write = |w: &mut dyn io::Write, line: &[u8]| {
            w.write_all(line)?;
            w.write_all(b"\n")
        };
        let filters = Filters::default();
        let mut queries = io::BufReader::new(Failing(io::ErrorKind::PermissionDenied));
        let err = coll
            .batch(&mut queries, false, &filters, 1, &mut Vec::new(), &write)
            .unwrap_err();
        assert_eq!(err.kind(), Failure::Io);
        assert_eq!(err.to_string(), "reading queries");
        let mut out = Failing(io::ErrorKind::BrokenPipe);
        let err = coll
            .batch(&mut &b"a)/\n"[..], false, &filters, 1, &mut out, &write)
            .unwrap_err();
        assert_eq!(
            err.output_error().map(io::Error::kind),
            Some(io::ErrorKind::BrokenPipe)
        );
        let mut out = Vec::new();
        let (any, _) = coll
            .batch(
                &mut &b"b)/\nc)/\n"[..],
                false,
                &filters,
                1,
                &mut out,
                &write,
            )
            .unwrap();
        assert!(any);
        assert_eq!(out, b"b)/ 2020 {}\n");
    }

    #[test]
    fn fields_header_values() {
        let names = parse_values(br#"{keys: ["surt", "datetime"], values: ["offset", "digest"]}"#);
        assert_eq!(
            names,
            Some(vec!["offset".to_string(), "digest".to_string()])
        );
    }

    /// `lines_as_pywb` on a sorted file gives what `lines` gives, for
    /// ranges held from the checking read and for longer ones read again.
    #[test]
    fn pywb_lines_of_a_sorted_file_are_its_lines() {
        use crate::sorted::MatchType;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.cdxj");
        let mut text = String::new();
        for host in ["a", "b", "c"] {
            let n = if host == "b" {
                HELD_LINES + 1
            } else {
                HELD_LINES
            };
            for i in 0..n {
                text.push_str(&format!(
                    "com,{host})/ {:014} {{}}\n",
                    20000101000000u64 + i as u64
                ));
            }
        }
        std::fs::write(&path, text).unwrap();
        let source = Source::open(&path, false).unwrap().remove(0);
        let all = |l: SourceLines<'_>| l.map(|l| l.unwrap().into_owned()).collect::<Vec<_>>();
        for (key, want) in [
            ("com,a)/", HELD_LINES),
            ("com,b)/", HELD_LINES + 1),
            ("com,d)/", 0),
        ] {
            let range = KeyRange::new(key.as_bytes(), MatchType::Exact);
            let pywb = all(source.lines_as_pywb(&range).unwrap());
            assert_eq!(pywb.len(), want, "{key}");
            assert_eq!(pywb, all(source.lines(&range, None).unwrap()), "{key}");
        }
    }
}
