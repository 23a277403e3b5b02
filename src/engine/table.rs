//! Capture tables: index lines -> Parquet files in Common Crawl's flat
//! schema ([`crate::table`]), one file or a Hive-partitioned directory.
//!
//! ```text
//! sorted index lines, READ_AHEAD at a time
//!      │ chunks of CHUNK lines, one per task of the pool:
//!      ▼ Row::from_line (borrowing the line) ──► column builders ──► a batch per partition
//! batches in line order (keys checked, skipped lines reported)
//!      │ one task per column: ArrowColumnWriter (dictionary, statistics, zstd),
//!      │ while the next READ_AHEAD lines are mapped
//!      ▼ a row group closed every GROUP rows
//! FILE.parquet, or DIR/crawl=C/subset=S/part-00000.parquet
//! ```
//!
//! Lines come in key order (an index as `ukvs index` writes it, or the
//! sources of a collection merged by key), so every row group, and every
//! file, is sorted by `url_surtkey`; the sink checks the order and refuses
//! input that breaks it. Memory is one row group per partition open at
//! once (encoded pages), and up to three times READ_AHEAD lines (those
//! being encoded, those being mapped, and for `ukvs table` those being
//! read on the caller's thread), whatever
//! the input's size: a collection with a handful of crawls and Common
//! Crawl's three subsets holds a few.
//!
//! Row groups of [`GROUP`] rows keep a SURT-prefix query to a few groups
//! (their minimum and maximum keys prune the rest), and pages of
//! [`PAGE_ROWS`] rows with the page index narrow it further for readers
//! that use it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::io;

use super::error::Kind;
use arrow_array::builder::{
    ArrayBuilder, Int16Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::Schema;
use parquet::arrow::arrow_writer::{compute_leaves, get_column_writers, ArrowColumnWriter};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::format::SortingColumn;
use parquet::schema::types::{ColumnPath, SchemaDescriptor};

use super::output::{Output, OutputDir};
use crate::table::{Host, Naming, Partition, Row};

/// Why a table was not written (no table is then left behind).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The index cannot be opened, read or decompressed (the line and
    /// byte are named where known).
    #[error(transparent)]
    Input(#[from] super::fs::Error),
    /// The collection's sources cannot be opened or searched.
    #[error(transparent)]
    Merged(Box<super::merged::Error>),
    /// The collection's lines broke off: see the cause.
    #[error("cannot read {source_name}")]
    Read {
        source_name: String,
        #[source]
        cause: Box<super::merged::Error>,
    },
    /// The lines are not sorted: sort the index with `ukvs sort` first.
    #[error(
        "{source_name}: line {line}: the key {got} comes after {previous}: a table is written \
         from sorted lines (sort the index with `ukvs sort` first)"
    )]
    OutOfOrder {
        source_name: String,
        line: u64,
        previous: String,
        got: String,
    },
    /// A file or directory of the table cannot be created or written
    /// (`what`: `create` or `write`).
    #[error("cannot {what} {path}")]
    Io {
        what: &'static str,
        path: String,
        #[source]
        cause: io::Error,
    },
    /// A Parquet file cannot be started or written (`what` says which),
    /// the Parquet writer's error as the cause.
    #[error("{what}")]
    Parquet {
        what: &'static str,
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The Parquet writer failed.
    #[error(transparent)]
    Encode(Box<dyn std::error::Error + Send + Sync>),
    /// A file of the table cannot be finished or put in place.
    #[error("cannot write {name}")]
    Finish {
        name: String,
        #[source]
        cause: Box<Error>,
    },
    /// A finished file cannot be put in place.
    #[error(transparent)]
    Output(io::Error),
    /// The writer of a partition went missing (a fault of this program).
    #[error("the writer of a partition was lost")]
    Lost,
    /// The thread encoding the table stopped before it finished it (a
    /// fault of this program).
    #[error("the table writer stopped unexpectedly")]
    WriterStopped,
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Input(e) => e.kind(),
            Error::Merged(e) | Error::Read { cause: e, .. } => e.kind(),
            Error::OutOfOrder { .. } => Kind::BadInput,
            Error::Io { cause, .. } | Error::Output(cause) => Kind::of_io(cause),
            Error::Parquet { cause, .. } | Error::Encode(cause) => {
                Kind::in_chain(cause.as_ref()).unwrap_or(Kind::Io)
            }
            Error::Finish { cause, .. } => cause.kind(),
            Error::Lost | Error::WriterStopped => Kind::Io,
        }
    }

    fn io<'p>(what: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> Error + 'p {
        move |cause| Error::Io {
            what,
            path: path.display().to_string(),
            cause,
        }
    }

    fn parquet(what: &'static str) -> impl FnOnce(parquet::errors::ParquetError) -> Error {
        move |e| Error::Parquet {
            what,
            cause: Box::new(e),
        }
    }
}

impl From<super::merged::Error> for Error {
    fn from(e: super::merged::Error) -> Error {
        Error::Merged(Box::new(e))
    }
}

impl From<parquet::errors::ParquetError> for Error {
    fn from(e: parquet::errors::ParquetError) -> Error {
        Error::Encode(Box::new(e))
    }
}

/// Rows per row group: about 4 to 8 MB of Parquet for index lines, so
/// that a prefix query reads little beyond the rows it wants.
pub const GROUP: usize = 128 * 1024;

/// Rows per page, the unit the page index lets a reader skip to: 8
/// pages a row group. Every page costs a zstd context set up afresh
/// (the parquet crate makes one per page), for the 18 or so columns an
/// index leaves null as for the others; pages of 16,384 rows rather
/// than 8,192 take 4 % less time and make tables 12 % smaller.
pub const PAGE_ROWS: usize = 16 * 1024;

/// Lines mapped to one batch of rows by one task of the pool.
const CHUNK: usize = 8 * 1024;

/// Lines read ahead from a collection or a stream, for the pool.
const READ_AHEAD: usize = 8 * CHUNK;

/// The zstd level of every page: level 3 makes tables 2 to 3 % smaller
/// for about 6 % more time (and its larger match tables are cleared for
/// every page).
const ZSTD_LEVEL: i32 = 1;

/// Columns whose values are (nearly) all distinct within a row group:
/// a dictionary of them costs a hash per value and is dropped for plain
/// encoding once it outgrows its page, so they are written plain (the
/// table comes out 8 % smaller too: no dictionary page, then plain
/// pages, for each).
const NO_DICTIONARY: &[&str] = &[
    "url_surtkey",
    "url",
    "url_path",
    "url_query",
    "fetch_time",
    "content_digest",
    "warc_record_offset",
    "warc_record_length",
    "content_payload_digest",
    "warc_record_offset_long",
    "warc_record_length_long",
];

/// Columns written without statistics: their values are spread over
/// a row group's whole range whatever the group (a URL's scheme and
/// host do not follow its SURT key's order; paths, queries and digests
/// follow none), so a minimum and maximum prune nothing, and they cost
/// two comparisons a value. Every other column has row-group
/// statistics; `url_surtkey` page statistics too.
const NO_STATISTICS: &[&str] = &[
    "url",
    "url_path",
    "url_query",
    "content_digest",
    "content_payload_digest",
    "extra_fields",
];

/// Where a table goes, and how rows are named.
#[derive(Debug, Clone)]
pub struct TableOutput {
    /// A file (`.parquet`, or `-` for stdout) or a directory.
    pub path: PathBuf,
    pub naming: Naming,
    /// Rows per row group (0: [`GROUP`]).
    pub group_rows: usize,
}

impl TableOutput {
    /// A directory output unless the path names a `.parquet` file or
    /// stdout.
    pub fn is_dir(&self) -> bool {
        !(self.path == Path::new("-")
            || self
                .path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("parquet")))
    }
}

/// What a written table holds.
#[derive(Debug, Default, Clone, Copy)]
pub struct Summary {
    pub rows: u64,
    /// Lines that made no row (reported on stderr as they were met).
    pub skipped: u64,
    pub files: usize,
}

/// The table of an index being written (`ukvs index --table`): its
/// header lines, then its sorted lines in chunks (each line ending in
/// `\n`) until an empty chunk or the channel's end.
pub fn from_chunks(
    out: &TableOutput,
    headers: &[Vec<u8>],
    chunks: impl Iterator<Item = Arc<Vec<u8>>>,
) -> Result<Summary, Error> {
    let names = super::lookup::value_names_in(headers.iter().map(Vec::as_slice))
        .unwrap_or_else(|| vec!["offset".into(), "digest".into()]);
    let mut sink = TableSink::create(out, names, "the index")?;
    sink.line_no = headers.len() as u64;
    // Chunks are gathered up to READ_AHEAD lines, for the pool to map
    // several CHUNKs of them at once.
    let mut held: Vec<Arc<Vec<u8>>> = Vec::new();
    let mut held_lines = 0;
    let flush = |sink: &mut TableSink, held: &mut Vec<Arc<Vec<u8>>>| {
        let lines: Vec<&[u8]> = held
            .iter()
            .flat_map(|c| c.split(|&b| b == b'\n'))
            .filter(|l| !l.is_empty())
            .collect();
        let r = sink.lines(&lines);
        held.clear();
        r
    };
    for chunk in chunks.take_while(|c| !c.is_empty()) {
        held_lines += memchr::memchr_iter(b'\n', &chunk).count();
        held.push(chunk);
        if held_lines >= READ_AHEAD {
            flush(&mut sink, &mut held)?;
            held_lines = 0;
        }
    }
    flush(&mut sink, &mut held)?;
    sink.finish()
}

/// The table of every line of a collection (`ukvs table`): its sources
/// merged by key, less what its delta hides. The lines are read on this
/// thread while the sink maps and encodes those read before on another.
pub fn from_collection(
    out: &TableOutput,
    merged: super::merged::Merged<'_>,
    names: Vec<String>,
    source: &str,
) -> Result<Summary, Error> {
    /// What the reader hands the sink.
    enum Ahead<'a> {
        Lines(Vec<std::borrow::Cow<'a, [u8]>>),
        /// Every line was read: the table may be finished.
        End,
    }
    let mut sink = TableSink::create(out, names, source)?;
    let all = crate::sorted::KeyRange::all();
    let (tx, rx) = std::sync::mpsc::sync_channel::<Ahead<'_>>(1);
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> Result<Option<Summary>, Error> {
            for ahead in rx {
                match ahead {
                    Ahead::Lines(lines) => {
                        sink.lines(&lines.iter().map(|l| l.as_ref()).collect::<Vec<_>>())?
                    }
                    Ahead::End => return sink.finish().map(Some),
                }
            }
            // The reader stopped on an error: no table.
            Ok(None)
        });
        let read = (|| -> Result<(), Error> {
            let mut ahead = Vec::with_capacity(READ_AHEAD);
            for line in merged.lines(&all)? {
                ahead.push(line.map_err(|cause| Error::Read {
                    source_name: source.to_string(),
                    cause: Box::new(cause),
                })?);
                if ahead.len() == READ_AHEAD {
                    let full = std::mem::replace(&mut ahead, Vec::with_capacity(READ_AHEAD));
                    if tx.send(Ahead::Lines(full)).is_err() {
                        // The sink failed: its error says why.
                        return Ok(());
                    }
                }
            }
            let _ = tx.send(Ahead::Lines(ahead));
            let _ = tx.send(Ahead::End);
            Ok(())
        })();
        drop(tx);
        let written = writer.join().map_err(|_| Error::WriterStopped)?;
        read?;
        written?.ok_or(Error::WriterStopped)
    })
}

/// Whether an input is read front to back rather than opened as a
/// source to merge: stdin, or a gzip or zstd file (no binary search).
pub fn is_stream(path: &Path) -> bool {
    use std::io::Read;
    if path == Path::new("-") {
        return true;
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic[..2] == [0x1f, 0x8b] || magic == [0x28, 0xb5, 0x2f, 0xfd])
}

/// The table of one index read front to back (stdin, gzip, zstd): its
/// headers name its values.
pub fn from_stream(out: &TableOutput, path: &Path) -> Result<Summary, Error> {
    let source = super::fs::input_name(path);
    let mut sink = TableSink::create(out, vec!["offset".into(), "digest".into()], &source)?;
    let input = super::fs::open_input(path)?;
    // Lines end to end, with where each ends.
    let (mut buf, mut ends) = (Vec::new(), Vec::with_capacity(READ_AHEAD));
    let flush = |sink: &mut TableSink, buf: &mut Vec<u8>, ends: &mut Vec<usize>| {
        let mut start = 0;
        let lines: Vec<&[u8]> = ends
            .iter()
            .map(|&end| {
                let line = &buf[start..end];
                start = end;
                line
            })
            .collect();
        let r = sink.lines(&lines);
        buf.clear();
        ends.clear();
        r
    };
    super::fs::for_each_line::<Error>(&source, input, |line, _| {
        buf.extend_from_slice(line);
        ends.push(buf.len());
        if ends.len() == READ_AHEAD {
            flush(&mut sink, &mut buf, &mut ends)?;
        }
        Ok(true)
    })?;
    flush(&mut sink, &mut buf, &mut ends)?;
    sink.finish()
}

/// Rows into one Parquet file: the row group in progress is one encoder
/// per column, fed batches on the thread pool (a column per task), and
/// closed into the file every [`GROUP`] rows.
struct PartWriter {
    file: SerializedFileWriter<Output>,
    writers: Vec<ArrowColumnWriter>,
    /// Rows in the row group in progress.
    rows: usize,
    /// Batches waiting to be encoded.
    pending: Vec<RecordBatch>,
    schema: Arc<Schema>,
    parquet: SchemaDescriptor,
    props: Arc<WriterProperties>,
    group: usize,
}

/// The table being written.
pub struct TableSink {
    out: TableOutput,
    dir: Option<OutputDir>,
    parts: BTreeMap<Partition, PartWriter>,
    props: WriterProperties,
    group: usize,
    names: Vec<String>,
    previous: String,
    line_no: u64,
    summary: Summary,
    source: String,
}

/// What one chunk of lines makes, mapped on the pool: a batch per
/// partition met (in a single file, one), the lines that made no row,
/// and where the chunk's keys fall out of order if they do.
struct ChunkOut {
    batches: Vec<(Partition, RecordBatch)>,
    skipped: Vec<(usize, crate::table::Error)>,
    /// The index and key of the chunk's first row.
    first: Option<(usize, String)>,
    /// The index and key of the first line whose key is below the one
    /// before it in the chunk, and that one.
    disorder: Option<(usize, String, String)>,
    /// The key of the chunk's last row.
    last: Option<String>,
    rows: u64,
}

impl TableSink {
    /// Starts the table; `names` name the value columns of the lines to
    /// come (see [`super::lookup::value_names_in`]), `source` names them
    /// in messages.
    pub fn create(out: &TableOutput, names: Vec<String>, source: &str) -> Result<Self, Error> {
        let group = if out.group_rows == 0 {
            GROUP
        } else {
            out.group_rows
        };
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
            .set_dictionary_enabled(true);
        for column in NO_DICTIONARY {
            props = props.set_column_dictionary_enabled(ColumnPath::from(*column), false);
        }
        // Row-group statistics on every column (what readers prune row
        // groups by) but those no range of a group can narrow; page
        // statistics (the column index) on the key alone, the one column
        // whose pages are sorted.
        for column in NO_STATISTICS {
            props = props
                .set_column_statistics_enabled(ColumnPath::from(*column), EnabledStatistics::None);
        }
        props = props.set_column_statistics_enabled(
            ColumnPath::from("url_surtkey"),
            EnabledStatistics::Page,
        );
        let props = props
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_max_row_group_size(group)
            .set_data_page_row_count_limit(PAGE_ROWS.min(group))
            .set_sorting_columns(Some(vec![SortingColumn {
                column_idx: 0,
                descending: false,
                nulls_first: false,
            }]))
            .set_created_by(format!("ukvs {}", env!("CARGO_PKG_VERSION")))
            .build();
        let dir = if out.is_dir() {
            Some(
                // A table written before is replaced whole.
                OutputDir::create(&out.path, |name| name.starts_with("crawl="))
                    .map_err(Error::io("write", &out.path))?,
            )
        } else {
            None
        };
        Ok(TableSink {
            out: out.clone(),
            dir,
            parts: BTreeMap::new(),
            props,
            group,
            names,
            previous: String::new(),
            line_no: 0,
            summary: Summary::default(),
            source: source.to_owned(),
        })
    }

    /// Takes one line of the index (headers are passed over; a `!fields`
    /// header or CDX legend names the values of the lines after it).
    pub fn line(&mut self, line: &[u8]) -> Result<(), Error> {
        self.lines(&[line])
    }

    /// Takes lines of the index in order: chunks of them are mapped to
    /// column batches on the thread pool (a row depends on its line, the
    /// names and the naming alone), then checked and written in order.
    pub fn lines(&mut self, lines: &[&[u8]]) -> Result<(), Error> {
        use rayon::prelude::*;
        let mut rest = lines;
        while !rest.is_empty() {
            // Header lines change the names of the lines after them.
            let headers = rest
                .iter()
                .take_while(|l| crate::stats::is_header(l))
                .count();
            for line in &rest[..headers] {
                self.line_no += 1;
                if let Some(names) = super::lookup::value_names_in([*line]) {
                    self.names = names;
                }
            }
            rest = &rest[headers..];
            let data = rest
                .iter()
                .take_while(|l| !crate::stats::is_header(l))
                .count();
            let (names, naming) = (&self.names, &self.out.naming);
            let by_partition = self.dir.is_some();
            let map = |chunk: &[&[u8]]| build_chunk(chunk, names, naming, by_partition);
            let these = &rest[..data];
            // The batches of the lines before are encoded while these
            // are mapped: neither waits on the slowest task of the other.
            let parts = &mut self.parts;
            let (outs, encoded) = rayon::join(
                || -> Vec<ChunkOut> {
                    if data <= CHUNK {
                        vec![map(these)]
                    } else {
                        these.par_chunks(CHUNK).map(map).collect()
                    }
                },
                || parts.values_mut().try_for_each(PartWriter::encode),
            );
            encoded?;
            rest = &rest[data..];
            for (i, out) in outs.into_iter().enumerate() {
                self.chunk(out, self.line_no + (i * CHUNK) as u64)?;
            }
            self.line_no += data as u64;
        }
        Ok(())
    }

    /// Takes a chunk's batches in order; `line_no` is that of the line
    /// before the chunk.
    fn chunk(&mut self, out: ChunkOut, line_no: u64) -> Result<(), Error> {
        let disorder_at = out.disorder.as_ref().map_or(usize::MAX, |d| d.0);
        for (i, e) in &out.skipped {
            if *i > disorder_at {
                break;
            }
            self.summary.skipped += 1;
            crate::report!(
                "ukvs table: {}: line {}: no row: {e}",
                self.source,
                line_no + *i as u64 + 1
            );
        }
        let out_of_order = |at: usize, previous: &str, got: &str| Error::OutOfOrder {
            source_name: self.source.clone(),
            line: line_no + at as u64 + 1,
            previous: previous.to_string(),
            got: got.to_string(),
        };
        if let Some((at, first)) = &out.first {
            if first.as_str() < self.previous.as_str() {
                return Err(out_of_order(*at, &self.previous, first));
            }
        }
        if let Some((at, previous, got)) = &out.disorder {
            return Err(out_of_order(*at, previous, got));
        }
        if let Some(last) = out.last {
            self.previous = last;
        }
        self.summary.rows += out.rows;
        for (partition, batch) in out.batches {
            // A single file has one writer for every partition.
            let which = if self.dir.is_some() {
                partition
            } else {
                Partition::default()
            };
            if !self.parts.contains_key(&which) {
                let p = self.open_part(&which)?;
                self.parts.insert(which.clone(), p);
            }
            let Some(part) = self.parts.get_mut(&which) else {
                return Err(Error::Lost);
            };
            part.pending.push(batch);
        }
        Ok(())
    }

    fn open_part(&self, partition: &Partition) -> Result<PartWriter, Error> {
        // One file holds every row: its partition columns tell them
        // apart. A directory's paths say them.
        let with_partitions = self.dir.is_none();
        let schema = crate::table::schema(with_partitions);
        let output = match &self.dir {
            None => Output::create(&self.out.path).map_err(Error::io("write", &self.out.path))?,
            Some(dir) => {
                let sub = format!(
                    "crawl={}/subset={}",
                    hive_escape(&partition.crawl),
                    hive_escape(&partition.subset)
                );
                let subdir = dir.path().join(&sub);
                std::fs::create_dir_all(&subdir).map_err(Error::io("create", &subdir))?;
                dir.file(&format!("{sub}/part-00000.parquet"))
                    .map_err(Error::io("write", dir.target()))?
            }
        };
        PartWriter::create(output, schema, self.props.clone(), self.group)
            .map_err(Error::parquet("cannot start a Parquet file"))
    }

    /// Writes what is left and puts the files in place.
    pub fn finish(mut self) -> Result<Summary, Error> {
        if self.parts.is_empty() && self.dir.is_none() {
            // An empty table is still a file with the schema.
            let p = self.open_part(&Partition::default())?;
            self.parts.insert(Partition::default(), p);
        }
        let name = self.out.path.display().to_string();
        let failed = |cause: Error| Error::Finish {
            name: name.clone(),
            cause: Box::new(cause),
        };
        for (_, part) in std::mem::take(&mut self.parts) {
            let output = part.finish().map_err(failed)?;
            output.commit().map_err(|e| failed(Error::Output(e)))?;
            self.summary.files += 1;
        }
        if let Some(dir) = self.dir.take() {
            dir.commit().map_err(|e| failed(Error::Output(e)))?;
        }
        Ok(self.summary)
    }
}

/// The rows of a chunk of data lines, in their builders (one set per
/// partition when `by_partition`). The host columns are computed once
/// per run of lines with the same host: sorted lines bring a host's
/// captures together.
fn build_chunk(lines: &[&[u8]], names: &[String], naming: &Naming, by_partition: bool) -> ChunkOut {
    let mut out = ChunkOut {
        batches: Vec::new(),
        skipped: Vec::new(),
        first: None,
        last: None,
        disorder: None,
        rows: 0,
    };
    let mut sets: Vec<(Partition, Builders)> = Vec::new();
    let mut last_set = 0;
    let mut host = Host::default();
    let mut host_of = None::<String>;
    let mut previous = String::new();
    for (i, line) in lines.iter().enumerate() {
        let row = match Row::from_line(line, names, naming) {
            Ok(row) => row,
            Err(e) => {
                out.skipped.push((i, e));
                continue;
            }
        };
        if out.first.is_none() {
            out.first = Some((i, row.url_surtkey.to_string()));
        } else if *row.url_surtkey < *previous {
            out.disorder = Some((
                i,
                std::mem::take(&mut previous),
                row.url_surtkey.into_owned(),
            ));
            break;
        }
        previous.clear();
        previous.push_str(&row.url_surtkey);
        if host_of.as_deref() != Some(&*row.host_name) {
            host = Host::of(&row.host_name);
            host_of = Some(row.host_name.to_string());
        }
        let same =
            |p: &Partition| !by_partition || (p.crawl == row.crawl && p.subset == row.subset);
        if !sets.get(last_set).is_some_and(|(p, _)| same(p)) {
            last_set = match sets.iter().position(|(p, _)| same(p)) {
                Some(at) => at,
                None => {
                    let p = if by_partition {
                        row.partition()
                    } else {
                        Partition::default()
                    };
                    sets.push((p, Builders::new(!by_partition, lines.len())));
                    sets.len() - 1
                }
            };
        }
        sets[last_set].1.push(&row, &host);
        out.rows += 1;
    }
    if out.first.is_some() {
        out.last = Some(previous);
    }
    for (p, mut b) in sets {
        let schema = crate::table::schema(!by_partition);
        match RecordBatch::try_new(schema, b.finish()) {
            Ok(batch) => out.batches.push((p, batch)),
            // The builders follow the schema (a unit test holds them to
            // it): a batch that cannot be assembled is a bug.
            Err(e) => unreachable!("the column builders do not fit the schema: {e}"),
        }
    }
    out
}

impl PartWriter {
    fn create(
        output: Output,
        schema: Arc<Schema>,
        mut props: WriterProperties,
        group: usize,
    ) -> parquet::errors::Result<PartWriter> {
        let parquet = ArrowSchemaConverter::new()
            .with_coerce_types(props.coerce_types())
            .convert(&schema)?;
        // The Arrow schema goes in the metadata, as ArrowWriter puts it
        // (readers take the timestamp's zone from it).
        add_encoded_arrow_schema_to_metadata(&schema, &mut props);
        let props = Arc::new(props);
        let file =
            SerializedFileWriter::new(output, parquet.root_schema_ptr(), Arc::clone(&props))?;
        let writers = get_column_writers(&parquet, &props, &schema)?;
        Ok(PartWriter {
            file,
            writers,
            rows: 0,
            pending: Vec::new(),
            schema,
            parquet,
            props,
            group,
        })
    }

    /// Encodes the pending batches, a column per task, closing a row
    /// group every `group` rows.
    fn encode(&mut self) -> Result<(), Error> {
        let mut pending: std::collections::VecDeque<RecordBatch> =
            std::mem::take(&mut self.pending).into();
        let mut now = Vec::new();
        while let Some(batch) = pending.pop_front() {
            let room = self.group - self.rows;
            let batch = if batch.num_rows() > room {
                pending.push_front(batch.slice(room, batch.num_rows() - room));
                batch.slice(0, room)
            } else {
                batch
            };
            self.rows += batch.num_rows();
            now.push(batch);
            if self.rows == self.group {
                self.encode_now(&std::mem::take(&mut now))?;
                self.close_group()?;
            }
        }
        self.encode_now(&now)
    }

    fn encode_now(&mut self, batches: &[RecordBatch]) -> Result<(), Error> {
        use rayon::prelude::*;
        if batches.is_empty() {
            return Ok(());
        }
        let fields = self.schema.fields();
        self.writers
            .par_iter_mut()
            .enumerate()
            .try_for_each(|(i, w)| -> parquet::errors::Result<()> {
                for batch in batches {
                    for leaf in compute_leaves(&fields[i], batch.column(i))? {
                        w.write(&leaf)?;
                    }
                }
                Ok(())
            })
            .map_err(Error::parquet("cannot write the Parquet file"))
    }

    /// Closes the row group in progress into the file (nothing when it
    /// is empty).
    fn close_group(&mut self) -> Result<(), Error> {
        use rayon::prelude::*;
        if self.rows == 0 {
            return Ok(());
        }
        let fresh = get_column_writers(&self.parquet, &self.props, &self.schema)?;
        let writers = std::mem::replace(&mut self.writers, fresh);
        let chunks = writers
            .into_par_iter()
            .map(ArrowColumnWriter::close)
            .collect::<parquet::errors::Result<Vec<_>>>()
            .map_err(Error::parquet("cannot write the Parquet file"))?;
        let mut group = self.file.next_row_group()?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut group)?;
        }
        group.close()?;
        self.rows = 0;
        Ok(())
    }

    /// The file, finished.
    fn finish(mut self) -> Result<Output, Error> {
        self.encode()?;
        self.close_group()?;
        Ok(self.file.into_inner()?)
    }
}

/// A partition value as Hive writes it in a path: `/`, `=`, `%` and
/// control characters percent-encoded.
fn hive_escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        if c.is_control() || "/=%\\:#?*\"'<>|{}[]^".contains(c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                s.push_str(&format!("%{b:02X}"));
            }
        } else {
            s.push(c);
        }
    }
    if s.is_empty() {
        "__HIVE_DEFAULT_PARTITION__".into()
    } else {
        s
    }
}

thread_local! {
    /// Bytes per row of each string column in the last chunk this
    /// thread built.
    static BYTES_PER_ROW: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One builder per column, in the schema's order.
struct Builders {
    with_partitions: bool,
    strings: Vec<StringBuilder>,
    /// Per string column, the nulls it met before its first value (all
    /// of them for a column without one: appended at once, as a null
    /// array, in [`Builders::finish`]), or None once it holds a value.
    leading_nulls: Vec<Option<usize>>,
    url_port: Int32Builder,
    fetch_time: TimestampMicrosecondBuilder,
    fetch_status: Int16Builder,
    offset: Int32Builder,
    length: Int32Builder,
    offset_long: Int64Builder,
    length_long: Int64Builder,
}

/// String columns before `url_port` (surtkey .. protocol), between
/// `url_port` and `fetch_time` (path, query), between `fetch_status` and
/// the offset (redirect .. filename), after the length (segment, then
/// crawl and subset when the file holds them, then ukvs's own).
const STRINGS_A: usize = 14;
const STRINGS_B: usize = 2;
const STRINGS_C: usize = 8;
const STRINGS_D: usize = 1;
const STRINGS_EXTRA_A: usize = 11;
const STRINGS_EXTRA_B: usize = 1;

impl Builders {
    /// Builders for about `rows` rows, their string columns sized by
    /// the bytes per row of the last chunk this thread built (a column
    /// that was all null takes no room until it holds a value).
    fn new(with_partitions: bool, rows: usize) -> Builders {
        let n = STRINGS_A
            + STRINGS_B
            + STRINGS_C
            + STRINGS_D
            + if with_partitions { 2 } else { 0 }
            + STRINGS_EXTRA_A
            + STRINGS_EXTRA_B;
        let per_row = BYTES_PER_ROW.with(|b| b.borrow().clone());
        let per_row = |i: usize| per_row.get(i).copied().unwrap_or(16.0);
        Builders {
            with_partitions,
            strings: (0..n)
                .map(|i| {
                    // An eighth more than the last chunk's, for longer
                    // lines than its.
                    let bytes = (per_row(i) * 1.125 * rows as f64) as usize;
                    StringBuilder::with_capacity(rows, bytes)
                })
                .collect(),
            leading_nulls: vec![Some(0); n],
            url_port: Int32Builder::with_capacity(rows),
            fetch_time: TimestampMicrosecondBuilder::with_capacity(rows).with_timezone("UTC"),
            fetch_status: Int16Builder::with_capacity(rows),
            offset: Int32Builder::with_capacity(rows),
            length: Int32Builder::with_capacity(rows),
            offset_long: Int64Builder::with_capacity(rows),
            length_long: Int64Builder::with_capacity(rows),
        }
    }

    /// Appends a row; `h` is the host columns of its `host_name`.
    fn push(&mut self, r: &Row<'_>, h: &Host) {
        let mut columns = self.strings.iter_mut().zip(self.leading_nulls.iter_mut());
        let mut put = |v: Option<&str>| {
            if let Some((b, leading)) = columns.next() {
                match (v, leading.as_mut()) {
                    (None, Some(n)) => *n += 1,
                    (None, None) => b.append_null(),
                    (Some(v), None) => b.append_value(v),
                    (Some(v), Some(n)) => {
                        for _ in 0..*n {
                            b.append_null();
                        }
                        *leading = None;
                        b.append_value(v);
                    }
                }
            }
        };
        put(Some(&r.url_surtkey));
        put(Some(&r.url));
        put(Some(&h.name));
        for part in &h.parts {
            put(part.as_deref());
        }
        put(h.registry_suffix.as_deref());
        put(h.registered_domain.as_deref());
        put(h.private_suffix.as_deref());
        put(h.private_domain.as_deref());
        put(h.reversed.as_deref());
        put(Some(&r.url_protocol));
        // url_port
        put(Some(&r.url_path));
        put(r.url_query.as_deref());
        // fetch_time, fetch_status
        put(r.fetch_redirect.as_deref());
        put(r.content_digest.as_deref());
        put(r.content_mime_type.as_deref());
        put(r.content_mime_detected.as_deref());
        put(r.content_charset.as_deref());
        put(r.content_languages.as_deref());
        put(r.content_truncated.as_deref());
        put(Some(&r.warc_filename));
        // offset, length
        put(r.warc_segment.as_deref());
        if self.with_partitions {
            put(Some(&r.crawl));
            put(Some(&r.subset));
        }
        for v in [
            &r.record_type,
            &r.revisit_refers_to_uri,
            &r.revisit_refers_to_date,
            &r.revisit_refers_to,
            &r.revisit_profile,
            &r.content_payload_digest,
            &r.fetch_ip,
            &r.fetch_time_raw,
            &r.arc_serial,
            &r.arc_describes,
            &r.arc_replaces,
        ] {
            put(v.as_deref());
        }
        // offset_long, length_long
        put(r.extra_fields.as_deref());
        self.url_port.append_option(r.url_port);
        self.fetch_time.append_value(r.fetch_time);
        self.fetch_status.append_value(r.fetch_status);
        let small = |v: Option<u64>| v.and_then(|v| i32::try_from(v).ok());
        let large = |v: Option<u64>| {
            v.filter(|&v| i32::try_from(v).is_err())
                .and_then(|v| i64::try_from(v).ok())
        };
        self.offset.append_option(small(r.warc_record_offset));
        self.length.append_option(small(r.warc_record_length));
        self.offset_long.append_option(large(r.warc_record_offset));
        self.length_long.append_option(large(r.warc_record_length));
    }

    /// The columns gathered so far, in the schema's order; the builders
    /// start over.
    fn finish(&mut self) -> Vec<ArrayRef> {
        BYTES_PER_ROW.with(|b| {
            *b.borrow_mut() = self
                .strings
                .iter()
                .map(|s| s.values_slice().len() as f64 / s.len().max(1) as f64)
                .collect()
        });
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.strings.len() + 7);
        let mut s = self
            .strings
            .iter_mut()
            .zip(self.leading_nulls.iter_mut())
            .map(|(b, leading)| match leading.replace(0) {
                None => Arc::new(b.finish()) as ArrayRef,
                Some(n) => arrow_array::new_null_array(&arrow_schema::DataType::Utf8, n),
            });
        cols.extend(s.by_ref().take(STRINGS_A));
        cols.push(Arc::new(self.url_port.finish()));
        cols.extend(s.by_ref().take(STRINGS_B));
        cols.push(Arc::new(self.fetch_time.finish()));
        cols.push(Arc::new(self.fetch_status.finish()));
        cols.extend(s.by_ref().take(STRINGS_C));
        cols.push(Arc::new(self.offset.finish()));
        cols.push(Arc::new(self.length.finish()));
        let after = STRINGS_D + if self.with_partitions { 2 } else { 0 } + STRINGS_EXTRA_A;
        cols.extend(s.by_ref().take(after));
        cols.push(Arc::new(self.offset_long.finish()));
        cols.push(Arc::new(self.length_long.finish()));
        cols.extend(s);
        cols
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_their_kind_and_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let out = TableOutput {
            path: dir.path().join("t.parquet"),
            naming: Naming::default(),
            group_rows: 0,
        };
        let absent = dir.path().join("absent.cdxj.gz");
        let err = from_stream(&out, &absent).unwrap_err();
        assert_eq!(err.kind(), Kind::Missing, "{err:?}");
        assert!(
            err.to_string().contains(&*absent.to_string_lossy()),
            "{err}"
        );
        let cut = crate::engine::error::fixtures::cut_gzip_index(dir.path());
        let err = from_stream(&out, &cut).unwrap_err();
        assert_eq!(err.kind(), Kind::Damaged, "{err:?}");
        let named = format!("cannot read {} after line ", cut.display());
        assert!(err.to_string().starts_with(&named), "{err}");
        let unsorted = dir.path().join("unsorted.cdxj");
        std::fs::write(
            &unsorted,
            "com,b)/ 20200101000000 {\"url\": \"http://b.com/\", \"status\": \"200\"}\n\
             com,a)/ 20200101000000 {\"url\": \"http://a.com/\", \"status\": \"200\"}\n",
        )
        .unwrap();
        let err = from_stream(&out, &unsorted).unwrap_err();
        assert_eq!(err.kind(), Kind::BadInput, "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "{}: line 2: the key com,a)/ comes after com,b)/: a table is written from \
                 sorted lines (sort the index with `ukvs sort` first)",
                unsorted.display()
            )
        );
        assert!(!out.path.exists());
    }

    #[test]
    fn builders_follow_the_schema() {
        for with_partitions in [true, false] {
            let mut b = Builders::new(with_partitions, 1);
            let line = br#"com,example)/ 20140216050221 151 sha1:AAAA {"url":"http://example.com/","status":200,"length":5000000000,"filename":"f.arc"}"#;
            let naming = Naming {
                crawl: "c".into(),
                subset: None,
            };
            let names = vec!["offset".to_string(), "digest".to_string()];
            let row = Row::from_line(line, &names, &naming).unwrap();
            b.push(&row, &Host::of(&row.host_name));
            let schema = crate::table::schema(with_partitions);
            let batch = RecordBatch::try_new(schema, b.finish()).unwrap();
            assert_eq!(batch.num_rows(), 1);
            let long = batch
                .column_by_name("warc_record_length_long")
                .unwrap()
                .as_any()
                .downcast_ref::<arrow_array::Int64Array>()
                .unwrap();
            assert_eq!(long.value(0), 5_000_000_000);
            assert!(batch
                .column_by_name("warc_record_length")
                .unwrap()
                .is_null(0));
        }
    }

    #[test]
    fn statistics_where_they_prune() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("i.cdxj");
        std::fs::write(
            &index,
            "com,a)/x 20200101000000 {\"url\": \"https://a.com/x?q\", \"digest\": \"sha1:B\", \"status\": \"200\"}\n\
             com,b)/ 20200101000000 {\"url\": \"http://b.com/\", \"digest\": \"sha1:A\", \"status\": \"404\"}\n",
        )
        .unwrap();
        let out = TableOutput {
            path: dir.path().join("t.parquet"),
            naming: Naming::default(),
            group_rows: 0,
        };
        from_stream(&out, &index).unwrap();
        let file = std::fs::File::open(&out.path).unwrap();
        let meta = SerializedFileReader::new(file).unwrap().metadata().clone();
        let group = meta.row_group(0);
        let column = |name: &str| {
            group
                .columns()
                .iter()
                .find(|c| c.column_path().string() == name)
                .unwrap()
        };
        let key = column("url_surtkey");
        let stats = key.statistics().unwrap();
        assert_eq!(stats.min_bytes_opt(), Some(&b"com,a)/x"[..]));
        assert_eq!(stats.max_bytes_opt(), Some(&b"com,b)/"[..]));
        assert!(key.column_index_offset().is_some());
        let host = column("url_host_name").statistics().unwrap();
        assert_eq!(host.min_bytes_opt(), Some(&b"a.com"[..]));
        assert_eq!(
            column("fetch_status")
                .statistics()
                .unwrap()
                .null_count_opt(),
            Some(0)
        );
        assert!(column("url_host_name").column_index_offset().is_none());
        for name in NO_STATISTICS {
            assert!(column(name).statistics().is_none(), "{name}");
        }
    }

    #[test]
    fn hive_values_are_escaped() {
        assert_eq!(hive_escape("CC-MAIN-2024-10"), "CC-MAIN-2024-10");
        assert_eq!(hive_escape("a/b=c"), "a%2Fb%3Dc");
        assert_eq!(hive_escape(""), "__HIVE_DEFAULT_PARTITION__");
    }
}
