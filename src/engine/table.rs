//! Capture tables: index lines -> Parquet files in Common Crawl's flat
//! schema ([`crate::table`]), one file or a Hive-partitioned directory.
//!
//! ```text
//! sorted index lines ──► Row::from_line ──► column builders (one set per partition)
//!                                                │ every BATCH rows
//!                                                ▼
//!                                      ArrowWriter (zstd, dictionaries, page statistics)
//!                                                │ a row group per GROUP rows
//!                                                ▼
//!              FILE.parquet, or DIR/crawl=C/subset=S/part-00000.parquet
//! ```
//!
//! Lines come in key order (an index as `ukvs index` writes it, or the
//! sources of a collection merged by key), so every row group, and every
//! file, is sorted by `url_surtkey`; the sink checks the order and refuses
//! input that breaks it. Memory is one row group per partition open at
//! once, whatever the input's size: a collection with a handful of crawls
//! and Common Crawl's three subsets holds a few.
//!
//! Row groups of [`GROUP`] rows keep a SURT-prefix query to a few groups
//! (their minimum and maximum keys prune the rest), and pages of
//! [`PAGE_ROWS`] rows with the page index narrow it further for readers
//! that use it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use arrow_array::builder::{
    Int16Builder, Int32Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::Schema;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::format::SortingColumn;

use super::output::{Output, OutputDir};
use crate::table::{Naming, Partition, Row};

/// Rows per row group: about 4 to 8 MB of Parquet for index lines, so
/// that a prefix query reads little beyond the rows it wants.
pub const GROUP: usize = 128 * 1024;

/// Rows per page, the unit the page index lets a reader skip to.
pub const PAGE_ROWS: usize = 8 * 1024;

/// Rows gathered before they are handed to the writer.
const BATCH: usize = 16 * 1024;

/// Lines handed to the thread pool at once (fewer are mapped in place).
const PARALLEL_FROM: usize = 256;

/// Lines read ahead from a collection or a stream, for the pool.
const READ_AHEAD: usize = 8 * 1024;

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
) -> anyhow::Result<Summary> {
    let names = super::lookup::value_names_in(headers.iter().map(Vec::as_slice))
        .unwrap_or_else(|| vec!["offset".into(), "digest".into()]);
    let mut sink = TableSink::create(out, names, "the index")?;
    sink.line_no = headers.len() as u64;
    for chunk in chunks.take_while(|c| !c.is_empty()) {
        let lines: Vec<&[u8]> = chunk
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        sink.lines(&lines)?;
    }
    sink.finish()
}

/// The table of every line of a collection (`ukvs table`): its sources
/// merged by key, less what its delta hides.
pub fn from_collection(
    out: &TableOutput,
    merged: super::merged::Merged<'_>,
    names: Vec<String>,
    source: &str,
) -> anyhow::Result<Summary> {
    let mut sink = TableSink::create(out, names, source)?;
    let all = crate::sorted::KeyRange::all();
    let mut ahead = Vec::with_capacity(READ_AHEAD);
    for line in merged.lines(&all)? {
        ahead.push(line.with_context(|| format!("cannot read {source}"))?);
        if ahead.len() == READ_AHEAD {
            sink.lines(&ahead.iter().map(|l| l.as_ref()).collect::<Vec<_>>())?;
            ahead.clear();
        }
    }
    sink.lines(&ahead.iter().map(|l| l.as_ref()).collect::<Vec<_>>())?;
    sink.finish()
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
pub fn from_stream(out: &TableOutput, path: &Path) -> anyhow::Result<Summary> {
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
    super::fs::for_each_line::<anyhow::Error>(&source, input, |line, _| {
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

/// Rows into one Parquet file.
struct PartWriter {
    builders: Builders,
    writer: ArrowWriter<Output>,
    schema: Arc<Schema>,
}

/// The table being written.
pub struct TableSink {
    out: TableOutput,
    dir: Option<OutputDir>,
    parts: BTreeMap<Partition, PartWriter>,
    props: WriterProperties,
    names: Vec<String>,
    previous: Vec<u8>,
    line_no: u64,
    summary: Summary,
    source: String,
}

impl TableSink {
    /// Starts the table; `names` name the value columns of the lines to
    /// come (see [`super::lookup::value_names_in`]), `source` names them
    /// in messages.
    pub fn create(out: &TableOutput, names: Vec<String>, source: &str) -> anyhow::Result<Self> {
        let group = if out.group_rows == 0 {
            GROUP
        } else {
            out.group_rows
        };
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
            .set_dictionary_enabled(true)
            .set_statistics_enabled(EnabledStatistics::Page)
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
                    .with_context(|| format!("cannot write {}", out.path.display()))?,
            )
        } else {
            None
        };
        Ok(TableSink {
            out: out.clone(),
            dir,
            parts: BTreeMap::new(),
            props,
            names,
            previous: Vec::new(),
            line_no: 0,
            summary: Summary::default(),
            source: source.to_owned(),
        })
    }

    /// Takes one line of the index (headers are passed over; a `!fields`
    /// header or CDX legend names the values of the lines after it).
    pub fn line(&mut self, line: &[u8]) -> anyhow::Result<()> {
        self.lines(&[line])
    }

    /// Takes lines of the index in order, mapped to rows on the thread
    /// pool (a row depends on its line, the names and the naming alone),
    /// then written in order.
    pub fn lines(&mut self, lines: &[&[u8]]) -> anyhow::Result<()> {
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
            let rows: Vec<Result<Row, crate::table::Error>> = if data < PARALLEL_FROM {
                rest[..data]
                    .iter()
                    .map(|l| Row::from_line(l, names, naming))
                    .collect()
            } else {
                rest[..data]
                    .par_iter()
                    .map(|l| Row::from_line(l, names, naming))
                    .collect()
            };
            rest = &rest[data..];
            for row in rows {
                self.row(row)?;
            }
        }
        Ok(())
    }

    fn row(&mut self, row: Result<Row, crate::table::Error>) -> anyhow::Result<()> {
        self.line_no += 1;
        let row = match row {
            Ok(row) => row,
            Err(e) => {
                self.summary.skipped += 1;
                crate::report!(
                    "ukvs table: {}: line {}: no row: {e}",
                    self.source,
                    self.line_no
                );
                return Ok(());
            }
        };
        let key = row.url_surtkey.as_bytes();
        if key < self.previous.as_slice() {
            bail!(
                "{}: line {}: the key {} comes after {}: a table is written from sorted \
                 lines (sort the index with `ukvs sort` first)",
                self.source,
                self.line_no,
                row.url_surtkey,
                String::from_utf8_lossy(&self.previous)
            );
        }
        self.previous.clear();
        self.previous.extend_from_slice(key);
        // A single file has one writer for every partition.
        let single = Partition::default();
        let which = match self.dir {
            Some(_) => &row.partition,
            None => &single,
        };
        if !self.parts.contains_key(which) {
            let p = self.open_part(which)?;
            self.parts.insert(which.clone(), p);
        }
        let Some(part) = self.parts.get_mut(which) else {
            bail!("the writer of a partition was lost");
        };
        part.builders.push(&row);
        self.summary.rows += 1;
        if part.builders.len >= BATCH {
            part.flush_batch()?;
        }
        Ok(())
    }

    fn open_part(&self, partition: &Partition) -> anyhow::Result<PartWriter> {
        // One file holds every row: its partition columns tell them
        // apart. A directory's paths say them.
        let with_partitions = self.dir.is_none();
        let schema = crate::table::schema(with_partitions);
        let output = match &self.dir {
            None => Output::create(&self.out.path)
                .with_context(|| format!("cannot write {}", self.out.path.display()))?,
            Some(dir) => {
                let sub = format!(
                    "crawl={}/subset={}",
                    hive_escape(&partition.crawl),
                    hive_escape(&partition.subset)
                );
                std::fs::create_dir_all(dir.path().join(&sub)).with_context(|| {
                    format!("cannot create {}", dir.path().join(&sub).display())
                })?;
                dir.file(&format!("{sub}/part-00000.parquet"))
                    .with_context(|| format!("cannot write {}", dir.target().display()))?
            }
        };
        let writer = ArrowWriter::try_new(output, Arc::clone(&schema), Some(self.props.clone()))
            .context("cannot start a Parquet file")?;
        Ok(PartWriter {
            builders: Builders::new(with_partitions),
            writer,
            schema,
        })
    }

    /// Writes what is left and puts the files in place.
    pub fn finish(mut self) -> anyhow::Result<Summary> {
        if self.parts.is_empty() && self.dir.is_none() {
            // An empty table is still a file with the schema.
            let p = self.open_part(&Partition::default())?;
            self.parts.insert(Partition::default(), p);
        }
        let name = self.out.path.display().to_string();
        for (_, mut part) in std::mem::take(&mut self.parts) {
            part.flush_batch()?;
            let output = part
                .writer
                .into_inner()
                .with_context(|| format!("cannot write {name}"))?;
            output
                .commit()
                .with_context(|| format!("cannot write {name}"))?;
            self.summary.files += 1;
        }
        if let Some(dir) = self.dir.take() {
            dir.commit()
                .with_context(|| format!("cannot write {name}"))?;
        }
        Ok(self.summary)
    }
}

impl PartWriter {
    fn flush_batch(&mut self) -> anyhow::Result<()> {
        if self.builders.len == 0 {
            return Ok(());
        }
        let columns = self.builders.finish();
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)
            .context("cannot assemble the rows")?;
        self.writer
            .write(&batch)
            .context("cannot write the Parquet file")?;
        Ok(())
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

/// One builder per column, in the schema's order.
struct Builders {
    len: usize,
    with_partitions: bool,
    strings: Vec<StringBuilder>,
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
    fn new(with_partitions: bool) -> Builders {
        let n = STRINGS_A
            + STRINGS_B
            + STRINGS_C
            + STRINGS_D
            + if with_partitions { 2 } else { 0 }
            + STRINGS_EXTRA_A
            + STRINGS_EXTRA_B;
        Builders {
            len: 0,
            with_partitions,
            strings: (0..n).map(|_| StringBuilder::new()).collect(),
            url_port: Int32Builder::new(),
            fetch_time: TimestampMicrosecondBuilder::new().with_timezone("UTC"),
            fetch_status: Int16Builder::new(),
            offset: Int32Builder::new(),
            length: Int32Builder::new(),
            offset_long: Int64Builder::new(),
            length_long: Int64Builder::new(),
        }
    }

    fn push(&mut self, r: &Row) {
        let h = &r.host;
        let mut strings: Vec<Option<&str>> = vec![
            Some(&r.url_surtkey),
            Some(&r.url),
            Some(&h.name),
            h.parts[0].as_deref(),
            h.parts[1].as_deref(),
            h.parts[2].as_deref(),
            h.parts[3].as_deref(),
            h.parts[4].as_deref(),
            h.registry_suffix.as_deref(),
            h.registered_domain.as_deref(),
            h.private_suffix.as_deref(),
            h.private_domain.as_deref(),
            h.reversed.as_deref(),
            Some(&r.url_protocol),
            // url_port
            Some(&r.url_path),
            r.url_query.as_deref(),
            // fetch_time, fetch_status
            r.fetch_redirect.as_deref(),
            r.content_digest.as_deref(),
            r.content_mime_type.as_deref(),
            r.content_mime_detected.as_deref(),
            r.content_charset.as_deref(),
            r.content_languages.as_deref(),
            r.content_truncated.as_deref(),
            Some(&r.warc_filename),
            // offset, length
            r.warc_segment.as_deref(),
        ];
        if self.with_partitions {
            strings.push(Some(&r.partition.crawl));
            strings.push(Some(&r.partition.subset));
        }
        strings.extend([
            r.record_type.as_deref(),
            r.revisit_refers_to_uri.as_deref(),
            r.revisit_refers_to_date.as_deref(),
            r.revisit_refers_to.as_deref(),
            r.revisit_profile.as_deref(),
            r.content_payload_digest.as_deref(),
            r.fetch_ip.as_deref(),
            r.fetch_time_raw.as_deref(),
            r.arc_serial.as_deref(),
            r.arc_describes.as_deref(),
            r.arc_replaces.as_deref(),
            // offset_long, length_long
            r.extra_fields.as_deref(),
        ]);
        for (b, v) in self.strings.iter_mut().zip(strings) {
            b.append_option(v);
        }
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
        self.len += 1;
    }

    /// The columns gathered so far, in the schema's order; the builders
    /// start over.
    fn finish(&mut self) -> Vec<ArrayRef> {
        self.len = 0;
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.strings.len() + 7);
        let mut s = self
            .strings
            .iter_mut()
            .map(|b| Arc::new(b.finish()) as ArrayRef);
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
    fn builders_follow_the_schema() {
        for with_partitions in [true, false] {
            let mut b = Builders::new(with_partitions);
            let line = br#"com,example)/ 20140216050221 151 sha1:AAAA {"url":"http://example.com/","status":200,"length":5000000000,"filename":"f.arc"}"#;
            let naming = Naming {
                crawl: "c".into(),
                subset: None,
            };
            let names = vec!["offset".to_string(), "digest".to_string()];
            b.push(&Row::from_line(line, &names, &naming).unwrap());
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
    fn hive_values_are_escaped() {
        assert_eq!(hive_escape("CC-MAIN-2024-10"), "CC-MAIN-2024-10");
        assert_eq!(hive_escape("a/b=c"), "a%2Fb%3Dc");
        assert_eq!(hive_escape(""), "__HIVE_DEFAULT_PARTITION__");
    }
}
