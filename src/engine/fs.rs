//! Input files: mapped into memory (the one place that maps files), or
//! opened as streams (a path or `-` for stdin, gzip found by its magic
//! bytes whatever the name).

// Mapping a file and dropping mapped pages are unsafe calls; each says
// why it holds.
#![allow(unsafe_code)]

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use flate2::read::MultiGzDecoder;
use thiserror::Error as ThisError;

use crate::sorted::lines::cannot_read;
use crate::ukvs::{read_gap, LINE_ALIGN};

/// Maps a non-empty regular file read-only; `None` for anything else
/// (pipes, terminals, empty files), which callers read instead. `advice`
/// tells the kernel how the map will be read (`Normal` gives none).
///
/// Every command that maps a whole file maps it here. The map is only
/// read. If another process truncates the file while it is mapped,
/// reading past the new end raises SIGBUS, which [`super::sigbus`] turns
/// into a message naming the file and exit code 2 (the output, written
/// atomically, is then not committed; the next run removes the temporary
/// file left behind); if it rewrites bytes, the result may mix old and
/// new contents. Files this tool writes are replaced by rename, never
/// changed in place (a rename leaves a map on the old file), so neither
/// happens to them. Commands that map their inputs take `--no-mmap` to
/// read files that may be changed instead.
pub fn map_file(file: &File, advice: memmap2::Advice) -> io::Result<Option<memmap2::Mmap>> {
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() == 0 {
        return Ok(None);
    }
    // SAFETY: see above; the map is never written, and a concurrent change
    // of the file is the documented exception.
    let map = unsafe { memmap2::Mmap::map(file) }?;
    super::sigbus::watch(&map, file);
    #[cfg(unix)]
    if advice != memmap2::Advice::Normal {
        let _ = map.advise(advice);
    }
    Ok(Some(map))
}

/// Bytes of a mapped input released at a time (see [`Behind`]).
const RELEASE_STEP: usize = 8 << 20;

/// The pages of a mapped input that reading has moved past, given back in
/// steps while the file is read.
///
/// Unmapping a large file costs time in proportion to its mapped pages; at
/// the end of a file, that time would hold up the end of the run. Released
/// in steps as reading goes on, it is spread over the run and done in
/// parallel with other files' work. Releasing only drops the mappings: the
/// bytes stay in the page cache and the map stays valid (a later read of a
/// released page maps it again), so a wrong offset costs time, never data.
pub struct Behind {
    map: Arc<memmap2::Mmap>,
    /// Bytes from the start released so far (or never to release: those
    /// before the part of the map this reader reads).
    done: usize,
    /// Bytes released at a time.
    step: usize,
}

impl Behind {
    pub fn new(map: Arc<memmap2::Mmap>) -> Behind {
        Behind::starting_at(map, 0, RELEASE_STEP)
    }

    /// For a reader of the map from `offset` on, releasing `step` bytes at
    /// a time. A page that begins before `offset` is never released: its
    /// first bytes may be another reader's (with pages larger than
    /// [`PAGE`], the kernel may round a release down to take it: that
    /// costs the other reader a fault, never a byte).
    pub fn starting_at(map: Arc<memmap2::Mmap>, offset: u64, step: usize) -> Behind {
        let done = usize::try_from(offset).map_or(usize::MAX, |o| o.saturating_add(PAGE - 1));
        Behind {
            map,
            done: done - done % PAGE,
            step,
        }
    }

    /// Releases the pages wholly below `offset` once a step of them has
    /// gathered; the caller needs no byte below `offset` any more.
    pub fn release_below(&mut self, offset: u64) {
        self.release(offset, self.step);
    }

    /// Releases the pages wholly below `offset`, however few: the reader
    /// is done with them.
    pub fn release_all_below(&mut self, offset: u64) {
        self.release(offset, 1);
    }

    fn release(&mut self, offset: u64, at_least: usize) {
        let upto = usize::try_from(offset).map_or(self.map.len(), |o| o.min(self.map.len()));
        let upto = upto - upto % PAGE;
        if upto < self.done.saturating_add(at_least) {
            return;
        }
        // SAFETY: MADV_DONTNEED on a read-only shared file mapping drops
        // page mappings only; the range stays mapped and reads the file's
        // bytes again on the next access, so no reference into the map is
        // invalidated. (On a private mapping it would throw away written
        // pages; this map is never written.)
        #[cfg(unix)]
        let _ = unsafe {
            self.map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                self.done,
                upto - self.done,
            )
        };
        self.done = upto;
    }
}

/// Page size assumed for rounding release ranges. With larger pages the
/// kernel rounds a range's start down and its end up to its pages: pages
/// still read may be released, which costs a fault, never a byte.
const PAGE: usize = 4096;

// ------------------------------------------------------------- streams

/// An input that cannot be opened, or that holds something other than
/// what the job reads. (Causes are part of the message, not a `source`,
/// so that a report of the whole chain says them once.)
#[derive(Debug, ThisError)]
#[non_exhaustive]
pub enum Error {
    /// The input cannot be opened, read or decompressed.
    #[error("cannot {what} {name}: {cause}")]
    Io {
        /// `open`, `read` or `decompress`.
        what: &'static str,
        name: String,
        cause: io::Error,
    },
    /// The input holds archive records: index it first, as `todo` says.
    #[error("{name} holds {format} records, not {}: {todo}", expected.lines())]
    Archive {
        name: String,
        format: &'static str,
        expected: Expected,
        todo: String,
    },
    /// The input is compressed in a format no command reads.
    #[error(
        "{name} is {kind}-compressed: decompress it first ({} are read plain, or gzip- or \
         zstd-compressed)",
        expected.files()
    )]
    Unread {
        name: String,
        kind: &'static str,
        expected: Expected,
    },
    /// A line cannot be read (a damaged gzip member, say): the input,
    /// the line it follows and the byte near which it happened. (Here
    /// the cause is the `source`, as a job's context gave it.)
    #[error("{}", cannot_read(name, *line, *at))]
    Line {
        name: String,
        line: u64,
        at: u64,
        #[source]
        cause: io::Error,
    },
    /// A WACZ package whose index cannot be had: the message names the
    /// package and the entry.
    #[error("{0}")]
    Package(String),
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> super::error::Kind {
        use super::error::Kind;
        match self {
            Error::Io { cause, .. } => Kind::of_io(cause),
            Error::Line { cause, .. } => Kind::of_read(cause),
            Error::Archive { .. } | Error::Unread { .. } => Kind::BadInput,
            Error::Package(_) => Kind::Damaged,
        }
    }

    fn io(what: &'static str, name: impl std::fmt::Display) -> impl FnOnce(io::Error) -> Error {
        move |cause| Error::Io {
            what,
            name: name.to_string(),
            cause,
        }
    }
}

/// `e` and its causes, as a report of an error chain gives them.
fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The first bytes of gzip data.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// A display name for an input path (`<stdin>` for `-`).
pub fn input_name(path: &Path) -> String {
    if is_stdin(path) {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// Whether `path` names standard input (`-`).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Opens an input to read: a path, or `-` for stdin, through a buffer of
/// 1 MiB. Gzip and zstd content (found by their magic bytes, whatever the
/// name) is decompressed, concatenated members or frames as one stream.
/// What holds no index lines (an archive, or another compression) is
/// refused ([`as_expected`]).
pub fn open_input(path: &Path) -> Result<Box<dyn BufRead + Send>, Error> {
    open_input_with(path, 1 << 20, Expected::Index)
}

/// [`open_input`] for a MementoMap.
pub fn open_map(path: &Path) -> Result<Box<dyn BufRead + Send>, Error> {
    open_input_with(path, 1 << 20, Expected::Map)
}

/// [`open_input`] for queries (URLs or SURTs, one per line).
pub fn open_queries(path: &Path) -> Result<Box<dyn BufRead + Send>, Error> {
    open_input_with(path, 1 << 20, Expected::Queries)
}

/// [`open_input`] with a buffer of `capacity` bytes (a small one to read
/// only the headers at a file's start), for an input `expected` to hold
/// index or map lines.
pub fn open_input_with(
    path: &Path,
    capacity: usize,
    expected: Expected,
) -> Result<Box<dyn BufRead + Send>, Error> {
    let raw: Box<dyn Read + Send> = match is_stdin(path) {
        true => Box::new(io::stdin()),
        false => Box::new(File::open(path).map_err(Error::io("open", path.display()))?),
    };
    let mut rdr = AlignedReader::with_capacity(capacity, raw);
    let first = rdr
        .fill_buf()
        .map_err(Error::io("read", input_name(path)))?;
    Ok(match as_expected(path, content(first), expected)? {
        PACKAGE => package_index(path, capacity)?,
        Content::Gzip => Box::new(BufReader::with_capacity(capacity, MultiGzDecoder::new(rdr))),
        Content::Zstd => Box::new(BufReader::with_capacity(capacity, zstd_decoder(path, rdr)?)),
        _ => Box::new(rdr),
    })
}

/// [`open_input`] for a reader that reads large blocks itself (a
/// `LineReader`): a plain file is given as it is, with no buffer in
/// between that would copy every byte once more.
pub fn open_input_unbuffered(path: &Path) -> Result<Box<dyn Read + Send>, Error> {
    if is_stdin(path) {
        return Ok(open_input(path)?);
    }
    let file = File::open(path).map_err(Error::io("open", path.display()))?;
    Ok(match index_content_of(path, &file)? {
        PACKAGE => package_index(path, 1 << 20)?,
        Content::Gzip => Box::new(MultiGzDecoder::new(AlignedReader::with_capacity(
            1 << 20,
            file,
        ))),
        Content::Zstd => Box::new(zstd_decoder(
            path,
            AlignedReader::with_capacity(1 << 20, file),
        )?),
        _ => Box::new(file),
    })
}

/// A buffered reader like `BufReader`, whose reads from the stream land
/// aligned with it (see [`read_gap`]): a `BufReader` of 1 MiB often holds
/// its bytes 16 bytes into a page, and its reads of a file's page-aligned
/// blocks are then the slow case that function names.
pub struct AlignedReader<R> {
    inner: R,
    /// Room for `cap` bytes after a gap of up to a cache line.
    buf: Vec<u8>,
    cap: usize,
    /// The bytes not consumed yet: `buf[pos..end]`.
    pos: usize,
    end: usize,
    /// Bytes read from `inner` so far.
    read: u64,
}

impl<R: Read> AlignedReader<R> {
    pub fn with_capacity(cap: usize, inner: R) -> AlignedReader<R> {
        let cap = cap.max(1);
        AlignedReader {
            inner,
            buf: vec![0; cap + LINE_ALIGN],
            cap,
            pos: 0,
            end: 0,
            read: 0,
        }
    }
}

impl<R: Read> Read for AlignedReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        // A read as large as the buffer, with nothing buffered, goes
        // straight to the stream, as `BufReader`'s does.
        if self.pos == self.end && out.len() >= self.cap {
            let n = self.inner.read(out)?;
            self.read += n as u64;
            return Ok(n);
        }
        let n = {
            let have = self.fill_buf()?;
            let n = have.len().min(out.len());
            out[..n].copy_from_slice(&have[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }

    /// What is buffered, then the rest straight from the stream into
    /// `out` (a file reserves its size there once, as it does for a
    /// `BufReader`): where that lands is `out`'s to say.
    fn read_to_end(&mut self, out: &mut Vec<u8>) -> io::Result<usize> {
        let held = self.end - self.pos;
        out.extend_from_slice(&self.buf[self.pos..self.end]);
        (self.pos, self.end) = (0, 0);
        let n = self.inner.read_to_end(out)?;
        self.read += n as u64;
        Ok(held + n)
    }
}

impl<R: Read> BufRead for AlignedReader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.end {
            let gap = read_gap(&self.buf, 0, self.read);
            let n = self.inner.read(&mut self.buf[gap..gap + self.cap])?;
            self.read += n as u64;
            (self.pos, self.end) = (gap, gap + n);
        }
        Ok(&self.buf[self.pos..self.end])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.end);
    }
}

/// Hands every line of the stream `r` (the input `name`) to `f`, without
/// its LF, with its 1-based number, until `f` says to stop (false):
/// straight from the UKVS module's block reader, which copies a line only
/// when it straddles two reads, so memory stays flat however large the
/// input. A read error (a damaged gzip member, say) names the input, the
/// line it follows and the byte near which it happened
/// ([`Error::Line`]). The lines read.
pub fn for_each_line<E: From<Error>>(
    name: &str,
    r: impl Read,
    mut f: impl FnMut(&[u8], u64) -> Result<bool, E>,
) -> Result<u64, E> {
    let mut lines = crate::ukvs::LineReader::new(r);
    let mut no = 0u64;
    loop {
        let at = lines.offset();
        let line = lines.next_line().map_err(|cause| Error::Line {
            name: name.to_string(),
            line: no,
            at,
            cause,
        })?;
        let Some(line) = line else {
            return Ok(no);
        };
        no += 1;
        if !f(line, no)? {
            return Ok(no);
        }
    }
}

/// A zstd decoder of `rdr`'s frames, one after the other.
fn zstd_decoder<R: BufRead>(
    path: &Path,
    rdr: R,
) -> Result<zstd::stream::read::Decoder<'static, R>, Error> {
    zstd::stream::read::Decoder::with_buffer(rdr).map_err(Error::io("decompress", input_name(path)))
}

/// What an input holds, told from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    /// Bytes as they are: lines.
    Plain,
    /// Gzip-compressed.
    Gzip,
    /// Zstd-compressed.
    Zstd,
    /// Archive records, not index lines: `WARC` or `ARC`.
    Archive(&'static str),
    /// Compressed in a format no command reads (`bzip2`, `xz`, ...).
    Unread(&'static str),
}

/// Magic bytes of the compressions no command reads, and their names.
const UNREAD: [(&[u8], &str); 4] = [
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x04\x22\x4d\x18", "lz4"),
    (b"PK\x03\x04", "zip"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
];

/// What a file that starts with `first` (a few KiB, or what a pipe gave
/// at once) holds. Archives are told first (a `.warc.gz` is gzip too);
/// index lines start with a SURT, a URL, `!` or ` CDX`, never with the
/// magic bytes of a compression.
pub fn content(first: &[u8]) -> Content {
    if let Some(format) = archive_format(first) {
        return Content::Archive(format);
    }
    if first.starts_with(&GZIP_MAGIC) {
        return Content::Gzip;
    }
    if crate::warc::is_zstd_start(first) || crate::warc::is_skippable_start(first) {
        return Content::Zstd;
    }
    // bzip2: `BZh`, the block size, then the magic of a block or of the
    // end of the stream.
    if first.len() >= 10
        && first.starts_with(b"BZh")
        && (b'1'..=b'9').contains(&first[3])
        && (first[4..10] == *b"1AY&SY" || first[4..10] == *b"\x17rE8P\x90")
    {
        return Content::Unread("bzip2");
    }
    match UNREAD.iter().find(|(magic, _)| first.starts_with(magic)) {
        Some(&(_, name)) => Content::Unread(name),
        None => Content::Plain,
    }
}

/// The [`content`] of a file, from its first 4 KiB (read where they are,
/// without moving the file's position).
fn content_of(file: &File) -> io::Result<Content> {
    let mut first = [0u8; 4096];
    let got = read_full_at(file, &mut first, 0)?;
    Ok(content(&first[..got]))
}

/// The [`content`] of `file`, opened from `path` where index lines are
/// expected; an error naming it when it holds something else (see
/// [`as_expected`]), or cannot be read.
pub fn index_content_of(path: &Path, file: &File) -> Result<Content, Error> {
    let content = content_of(file).map_err(Error::io("read", path.display()))?;
    as_expected(path, content, Expected::Index)
}

/// What an input is expected to hold: its refusals say what to give
/// instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// Index lines (a sorted index, or lines to sort).
    Index,
    /// A MementoMap's lines.
    Map,
    /// Queries: URLs or SURTs, one per line.
    Queries,
}

impl Expected {
    /// The lines expected, for messages.
    pub fn lines(self) -> &'static str {
        match self {
            Expected::Index => "index lines",
            Expected::Map => "map lines",
            Expected::Queries => "queries (URLs or SURTs, one per line)",
        }
    }

    /// The files expected, for messages.
    pub fn files(self) -> &'static str {
        match self {
            Expected::Index => "indexes",
            Expected::Map => "maps",
            Expected::Queries => "queries",
        }
    }

    /// What to do with the archive `name` (stdin when `None`) to get what
    /// is expected.
    pub fn from_archive(self, name: Option<&str>) -> String {
        let (index, it) = match name {
            Some(name) => (format!("`ukvs index {name} -o INDEX`"), "it"),
            None => ("`ukvs index FILE -o INDEX`".to_string(), "them"),
        };
        match self {
            Expected::Index => format!("index {it} first ({index}), then give INDEX"),
            Expected::Map => format!(
                "index {it} first ({index}), make a map of the index \
                 (`ukvs mementomap generate INDEX -o MAP`), then give MAP"
            ),
            // The SURTs of an index are queries.
            Expected::Queries => format!(
                "index {it} first ({index}), then give the keys of INDEX \
                 (`grep -v '^!' INDEX | cut -d' ' -f1 | uniq`), or URLs or SURTs of your own"
            ),
        }
    }
}

/// Whether the file at `path` starts as a ZIP (a WACZ package). Only a
/// regular file is looked at: reading the first bytes of a pipe
/// (`/dev/stdin`) would take them from the job that reads it.
pub fn is_package(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
        && File::open(path)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok_and(|()| magic == *b"PK\x03\x04")
}

/// What a ZIP file is when index lines are expected: a WACZ package,
/// whose own index is read ([`package_index`]).
const PACKAGE: Content = Content::Unread("zip");

/// The lines of the index of the WACZ package at `path`, as one stream:
/// its `cdxj-gzip-1.0` data file (named by `indexes/index.idx`) inflated
/// member after member, or its plain `indexes/*.cdxj`. The entry is read
/// from the package in place; the errors name the package and the entry.
pub fn package_index(path: &Path, capacity: usize) -> Result<Box<dyn BufRead + Send>, Error> {
    use crate::wacz::{IndexLayout, Package};
    use std::io::Seek;
    let name = path.display();
    // What failed, with the causes (as `context` would give them).
    let failed = |what: String| {
        move |e: &(dyn std::error::Error + 'static)| {
            let causes = with_causes(e);
            Error::Package(match what.is_empty() {
                true => causes,
                false => format!("{what}: {causes}"),
            })
        }
    };
    let mut file = File::open(path).map_err(Error::io("open", &name))?;
    let package = Package::read(BufReader::new(&mut file))
        .map_err(|e| failed(format!("{name}: cannot read"))(&e))?;
    let len = file.metadata().map_or(0, |m| m.len());
    let stored = |file: &mut File, e: &crate::wacz::Entry| -> Result<Vec<u8>, Error> {
        if e.range().end > len {
            return Err(Error::Package(format!(
                "{name}: entry {}: its bytes run past the end of the file (cut short)",
                e.name
            )));
        }
        let size = usize::try_from(e.compressed_size).map_err(|e| failed(String::new())(&e))?;
        let mut buf = vec![0; size];
        file.seek(io::SeekFrom::Start(e.data_start))
            .map_err(|e| failed(String::new())(&e))?;
        file.read_exact(&mut buf)
            .map_err(|err| failed(format!("{name}: entry {}: cut short", e.name))(&err))?;
        e.contents(&buf).map_err(|e| failed(String::new())(&e))
    };
    // The `.idx` names its data file: read it first (it is small).
    let data_name = match package.entry("indexes/index.idx") {
        Some(idx) => crate::wacz::idx_data_name(&stored(&mut file, idx)?),
        None => None,
    };
    let layout = package
        .index(data_name.as_deref())
        .map_err(|e| failed(format!("{name}: cannot read its index"))(&e))?;
    let (entry, gzip) = match &layout {
        IndexLayout::CdxjGzip { data, .. } => (data.clone(), true),
        IndexLayout::Cdxj(e) => (e.clone(), false),
    };
    file.seek(io::SeekFrom::Start(entry.data_start))
        .map_err(Error::io("read", &name))?;
    let raw = AlignedReader::with_capacity(capacity, file.take(entry.compressed_size));
    let contents: Box<dyn Read + Send> = match entry.method {
        crate::wacz::Method::Stored => Box::new(raw),
        crate::wacz::Method::Deflated => Box::new(flate2::bufread::DeflateDecoder::new(raw)),
        crate::wacz::Method::Other(n) => {
            return Err(Error::Package(format!(
                "{name}: entry {} is compressed with ZIP method {n}; WACZ entries are stored or \
                 deflated",
                entry.name
            )))
        }
    };
    Ok(match gzip {
        true => Box::new(BufReader::with_capacity(
            capacity,
            MultiGzDecoder::new(BufReader::new(contents)),
        )),
        false => Box::new(BufReader::with_capacity(capacity, contents)),
    })
}

/// The `content` of the input at `path` when it holds the lines
/// `expected`, or the error that says why it does not, and what to do.
fn as_expected(path: &Path, content: Content, expected: Expected) -> Result<Content, Error> {
    let name = input_name(path);
    match content {
        // A package's index is read in place (not from stdin: the
        // central directory is at the end).
        PACKAGE if expected == Expected::Index && !is_stdin(path) => Ok(content),
        Content::Archive(format) => {
            let named = (!is_stdin(path)).then_some(name.as_str());
            let todo = expected.from_archive(named);
            Err(Error::Archive {
                todo,
                name,
                format,
                expected,
            })
        }
        Content::Unread(kind) => Err(Error::Unread {
            name,
            kind,
            expected,
        }),
        c => Ok(c),
    }
}

/// Reads into `buf` from offset `at` of `file` (positioned reads, which
/// leave the file's position as it is) until `buf` is full or the file
/// ends; the bytes read.
pub fn read_full_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The format of an archive whose file starts with `first` (a few KiB):
/// `WARC`, or `ARC` (its first line the header line of a record), plain,
/// gzip or zstd; `None` for anything else, such as an index whose first
/// line is the key of a `filedesc://` record.
pub fn archive_format(first: &[u8]) -> Option<&'static str> {
    let zstd = crate::warc::is_zstd_start(first) || crate::warc::is_skippable_start(first);
    // A `.warc.zst` may open with its dictionary, in a skippable frame of
    // its own magic; no index does.
    if zstd && first.starts_with(&0x184D_2A5Du32.to_le_bytes()) {
        return Some("WARC");
    }
    if !zstd && crate::warc::is_warc(first) {
        return Some("WARC");
    }
    // The first bytes of the text, decompressed when they are not.
    let mut head = [0u8; 1024];
    let mut got = 0;
    let mut fill = |mut dec: Box<dyn Read + '_>| {
        while got < head.len() {
            match dec.read(&mut head[got..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
    };
    if zstd {
        if let Ok(dec) = zstd::stream::read::Decoder::with_buffer(first) {
            fill(Box::new(dec));
        }
    } else if first.starts_with(&GZIP_MAGIC) {
        fill(Box::new(MultiGzDecoder::new(first)));
    } else {
        fill(Box::new(first));
    }
    let text = &head[..got];
    let start = text.iter().position(|&b| !crate::input::is_ws(b));
    if zstd
        && text[start.unwrap_or(got)..]
            .get(..5)
            .is_some_and(|w| w.eq_ignore_ascii_case(b"WARC/"))
    {
        return Some("WARC");
    }
    let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
    // An ARC record's header line: a `filedesc://` first, or, in a file cut
    // from a larger one, any record's in one of the layouts exactly (an
    // index such as NetarchiveSuite's, `URL IP date mime length file
    // offset`, starts like a header).
    let arc = crate::arc::HeaderView::parse(line).is_some_and(|h| {
        h.is_plausible() && (line.starts_with(b"filedesc://") || h.form == crate::arc::Form::Exact)
    });
    arc.then_some("ARC")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ukvs::Noting;
    use std::io::Write;

    #[test]
    fn aligned_reader_reads_every_byte_aligned() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for (cap, step) in [(2, 1), (1000, 333), (4096, 1 << 20), (1 << 20, 4096)] {
            let mut r = AlignedReader::with_capacity(cap, Noting::new(&data, step));
            // Half in reads smaller than the buffer: every read of the
            // stream fills the reader's buffer, aligned.
            let mut got = Vec::new();
            let mut piece = vec![0u8; (cap / 3).max(1)];
            while got.len() < data.len() / 2 {
                let n = r.read(&mut piece).unwrap();
                got.extend_from_slice(&piece[..n]);
            }
            assert_eq!(r.inner.misaligned, 0, "cap {cap} step {step}");
            // The rest in reads larger than it, which go past it once it
            // is empty, into the caller's buffer.
            let mut chunk = vec![0u8; 3 * cap];
            loop {
                let n = r.read(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&chunk[..n]);
            }
            assert!(got == data, "cap {cap} step {step}");
            assert_eq!(r.fill_buf().unwrap(), b"");
            // What is buffered, then the rest, to the end.
            let mut r = AlignedReader::with_capacity(cap, Noting::new(&data, step));
            let mut all = vec![0u8; 10];
            r.read_exact(&mut all).unwrap();
            assert_eq!(r.read_to_end(&mut all).unwrap(), data.len() - 10);
            assert!(all == data, "read_to_end: cap {cap} step {step}");
        }
    }

    #[test]
    fn released_pages_read_the_same_bytes() {
        let data: Vec<u8> = (0..3 * RELEASE_STEP + 1234)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
            .collect();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&data).unwrap();
        let map = Arc::new(
            map_file(&file, memmap2::Advice::Normal)
                .unwrap()
                .expect("a regular file maps"),
        );
        let mut behind = Behind::new(map.clone());
        // Less than a step: nothing yet.
        behind.release_below(RELEASE_STEP as u64 - 1);
        assert_eq!(behind.done, 0);
        behind.release_below(RELEASE_STEP as u64 + 100);
        assert_eq!(behind.done, RELEASE_STEP);
        assert_eq!(&map[..], &data[..], "released pages map again");
        // Past the end: up to the last whole page.
        behind.release_below(u64::MAX);
        assert_eq!(behind.done, data.len() - data.len() % PAGE);
        assert_eq!(&map[..], &data[..]);
        // Going back releases nothing more.
        behind.release_below(0);
        assert_eq!(behind.done, data.len() - data.len() % PAGE);
    }

    /// A reader of a part releases only pages wholly inside what it read:
    /// not the page its part starts in, which may be another part's too.
    #[test]
    fn a_part_releases_only_its_own_pages() {
        let data = vec![b'x'; 8 * PAGE + 10];
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&data).unwrap();
        let map = Arc::new(map_file(&file, memmap2::Advice::Normal).unwrap().unwrap());
        let mut behind = Behind::starting_at(map.clone(), PAGE as u64 + 1, 2 * PAGE);
        assert_eq!(behind.done, 2 * PAGE);
        behind.release_below(3 * PAGE as u64 + 5);
        assert_eq!(behind.done, 2 * PAGE, "less than a step");
        behind.release_below(4 * PAGE as u64);
        assert_eq!(behind.done, 4 * PAGE);
        behind.release_all_below(5 * PAGE as u64 - 1);
        assert_eq!(behind.done, 4 * PAGE, "no whole page more");
        behind.release_all_below(5 * PAGE as u64);
        assert_eq!(behind.done, 5 * PAGE, "a page, less than a step");
        assert_eq!(&map[..], &data[..]);
        // A reader from a page's start releases that page.
        let behind = Behind::starting_at(map, 2 * PAGE as u64, PAGE);
        assert_eq!(behind.done, 2 * PAGE);
    }

    /// Archives, compressions and index lines are told apart by their
    /// first bytes, whatever the file's name.
    #[test]
    fn contents_are_told_by_their_first_bytes() {
        let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
        let read = |name: &str| std::fs::read(samples.join(name)).unwrap();
        let first = |bytes: &[u8]| content(&bytes[..bytes.len().min(4096)]);
        let index = read("expected.ukvs");
        let warc = {
            let mut plain = Vec::new();
            MultiGzDecoder::new(&read("example.warc.gz")[..])
                .read_to_end(&mut plain)
                .unwrap();
            plain
        };
        let zstd = |b: &[u8]| zstd::stream::encode_all(b, 3).unwrap();
        // A skippable frame first, as pzstd writes, or a WARC's dictionary.
        let skippable = |magic: u32, b: &[u8]| {
            let mut v = magic.to_le_bytes().to_vec();
            v.extend_from_slice(&4u32.to_le_bytes());
            v.extend_from_slice(b"\0\0\0\0");
            v.extend_from_slice(&zstd(b));
            v
        };
        let gzip = |b: &[u8]| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(b).unwrap();
            e.finish().unwrap()
        };
        for (what, bytes, expected) in [
            (
                "a WARC, gzip",
                read("example.warc.gz"),
                Content::Archive("WARC"),
            ),
            ("a WARC", warc.clone(), Content::Archive("WARC")),
            ("a WARC, zstd", zstd(&warc), Content::Archive("WARC")),
            (
                "a WARC, zstd with a dictionary",
                skippable(0x184D_2A5D, b"dict"),
                Content::Archive("WARC"),
            ),
            (
                "an ARC, gzip",
                read("example.arc.gz"),
                Content::Archive("ARC"),
            ),
            ("an ARC", read("example.arc"), Content::Archive("ARC")),
            ("an index", index.clone(), Content::Plain),
            ("an index, gzip", gzip(&index), Content::Gzip),
            ("an index, zstd", zstd(&index), Content::Zstd),
            (
                "an index, pzstd",
                skippable(0x184D_2A50, &index),
                Content::Zstd,
            ),
            (
                "bzip2",
                b"BZh91AY&SY\x85\x1b".to_vec(),
                Content::Unread("bzip2"),
            ),
            (
                "xz",
                b"\xfd7zXZ\x00\x00\x04".to_vec(),
                Content::Unread("xz"),
            ),
            (
                "a CDX header",
                b" CDX N b a m s k r M S V g\n".to_vec(),
                Content::Plain,
            ),
            (
                "a SURT",
                b"com,example)/ 20140101000000 {}\n".to_vec(),
                Content::Plain,
            ),
            (
                "a key like bzip2's magic",
                b"BZh9 x\n".to_vec(),
                Content::Plain,
            ),
            (
                "an index whose first key is a filedesc's (CDX)",
                b"filedesc://live-web-example.arc.gz 20140216050221 filedesc://live-web-example.arc.gz warc/filedesc - 3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ - - 149 0 example.arc\n".to_vec(),
                Content::Plain,
            ),
            (
                "a NetarchiveSuite CDX",
                b"dns:ad.doubleclick.net 130.225.24.33 20040708140337 text/dns 61 IAH-20040708140334-00000-pc770.sb.statsbiblioteket.dk.arc 86809\n".to_vec(),
                Content::Plain,
            ),
            (
                "an ARC cut from a larger one",
                b"http://210.179.120.1/test 210.179.120.1 20030801004548 no-type 188\nHTTP/1.0 200 OK\n".to_vec(),
                Content::Archive("ARC"),
            ),
            (
                "an index whose first key is a filedesc's (UKVS)",
                b"filedesc://live-web-example.arc.gz 20140216050221 0 sha1:3OW3I5Z4ZVHCNP4ZORJVUJAZCH3GCM7Q {\"url\":\"filedesc://live-web-example.arc.gz\"}\n".to_vec(),
                Content::Plain,
            ),
            ("nothing", Vec::new(), Content::Plain),
        ] {
            assert_eq!(first(&bytes), expected, "{what}");
        }
        let index_content_at = |name: &str| {
            index_content_of(
                &samples.join(name),
                &File::open(samples.join(name)).unwrap(),
            )
        };
        let err = index_content_at("example.warc.gz").unwrap_err();
        assert_eq!(err.kind(), super::super::error::Kind::BadInput);
        let err = err.to_string();
        assert!(
            err.contains("example.warc.gz holds WARC records, not index lines"),
            "{err}"
        );
        assert!(index_content_at("expected.ukvs").is_ok());
    }

    /// Every archive and every index of the repository's test data is
    /// told for what it is (but one ARC whose first header line is
    /// deliberately no header at all).
    #[test]
    fn the_test_data_is_told_for_what_it_is() {
        let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let mut seen = [0, 0];
        for dir in ["arc", "warc", "cdxj", "ukvs", "ukvs-bad"] {
            for e in std::fs::read_dir(data.join(dir)).unwrap() {
                let path = e.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                let archive = [".arc", ".arc.gz", ".warc", ".warc.gz"]
                    .iter()
                    .any(|x| name.ends_with(x));
                let index = [".cdxj", ".ukvs"].iter().any(|x| name.ends_with(x));
                let got = content_of(&File::open(&path).unwrap()).unwrap();
                if archive && name != "test-arc-1.0-invalid-fields.arc" {
                    assert!(matches!(got, Content::Archive(_)), "{name}: {got:?}");
                    seen[0] += 1;
                } else if index {
                    assert_eq!(got, Content::Plain, "{name}");
                    seen[1] += 1;
                }
            }
        }
        assert!(seen[0] > 20 && seen[1] > 20, "{seen:?}");
    }

    #[test]
    fn empty_files_are_not_mapped() {
        let file = tempfile::tempfile().unwrap();
        assert!(map_file(&file, memmap2::Advice::Normal).unwrap().is_none());
    }
}
