//! WACZ packages (Web Archive Collection Zipped, webrecorder/specs
//! `wacz/1.2.0`): a ZIP holding WARCs (`archive/`), an index
//! (`indexes/`), page lists (`pages/`) and `datapackage.json`.
//!
//! | type | role |
//! |---|---|
//! | [`Package`] | the ZIP's entries (from its central directory) and where each entry's bytes lie |
//! | [`Entry`] | one entry: name, method, offset and sizes of its stored bytes |
//! | [`IndexLayout`] | which index a package holds: `cdxj-gzip-1.0` (`index.idx` + `index.cdx.gz`) or plain CDXJ |
//! | [`IdxEntry`], [`parse_idx`] | the lines of a `cdxj-gzip-1.0` `.idx` file, and their conversion to a ZipNum secondary index |
//! | [`IdxWriter`] | writes the `.idx` and `.cdx.gz` of the `cdxj-gzip-1.0` layout |
//! | [`Resource`], [`parse_datapackage`] | the resources `datapackage.json` lists, with their digests |
//! | [`byte_range`], [`RangeError`] | the HTTP `Range` a replay system asks of an entry's bytes |
//!
//! A leaf module: it reads a ZIP through any `Read + Seek` (a memory map
//! in a `Cursor`, or a file) and parses bytes; opening files is the
//! engine's. The WARCs of a package are stored uncompressed (the spec
//! says so, and py-wacz writes them so), which lets the engine read them
//! in place: a WARC's record offsets are offsets within its entry's
//! stored bytes, as py-wacz's index records them.

use std::io::{self, Read, Seek, Write};

use flate2::read::DeflateDecoder;
use sha2::Digest as _;

pub mod zlib;

use crate::sorted::zipnum::Block;

/// The `format` of a compressed WACZ index (spec 1.2.0, "indexes").
pub const CDXJ_GZIP: &str = "cdxj-gzip-1.0";

/// Lines per block of the compressed index, py-wacz's and
/// ArchiveWeb.page's default.
pub const DEFAULT_LINES_PER_BLOCK: usize = 1024;

/// What is wrong with a package. Every variant names the entry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The ZIP's central directory cannot be read: the file is not a ZIP,
    /// is cut short, or is damaged there.
    #[error("not a readable ZIP file ({reason}); a WACZ is a ZIP: check the download is complete")]
    BadZip { reason: String },
    /// An entry's local header or bytes are damaged or outside the file.
    #[error("entry {entry}: {reason}")]
    BadEntry { entry: String, reason: String },
    /// An entry is compressed with a method this reader does not inflate.
    #[error("entry {entry} is compressed with {method}; WACZ entries are stored or deflated")]
    Method { entry: String, method: String },
    /// No index: neither `indexes/index.idx` with its data file nor a
    /// `.cdxj` file under `indexes/`.
    #[error(
        "no index in the package (indexes/index.idx with indexes/index.cdx.gz, or \
         indexes/*.cdxj); index its WARCs instead: `ukvs index FILE.wacz`"
    )]
    NoIndex,
    /// A line of the `.idx` file cannot be read.
    #[error("{entry}: line {line}: {reason}")]
    BadIdxLine {
        entry: String,
        line: u64,
        reason: String,
    },
    /// `datapackage.json` is not what the spec describes.
    #[error("datapackage.json: {0}")]
    BadDatapackage(String),
    /// Reading failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// How an entry's bytes are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Stored,
    Deflated,
    /// Any other ZIP method (by number); its bytes cannot be read here.
    Other(u16),
}

/// One entry of the package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The path inside the ZIP (`archive/data.warc.gz`).
    pub name: String,
    pub method: Method,
    /// Offset of the entry's stored bytes in the ZIP file.
    pub data_start: u64,
    /// Bytes stored (compressed when deflated).
    pub compressed_size: u64,
    /// Bytes once inflated.
    pub size: u64,
}

impl Entry {
    /// The byte range of the stored bytes in the ZIP file.
    pub fn range(&self) -> std::ops::Range<u64> {
        self.data_start..self.data_start + self.compressed_size
    }

    /// Whether this is a WARC (or ARC) of the package: a file under
    /// `archive/`.
    pub fn is_archive(&self) -> bool {
        self.name.starts_with("archive/") && !self.name.ends_with('/')
    }

    /// The `filename` the package's index gives this WARC: its path under
    /// `archive/` (py-wacz writes WARCs flat, so their base name).
    pub fn archive_name(&self) -> &str {
        self.name.strip_prefix("archive/").unwrap_or(&self.name)
    }

    /// The entry's contents from `stored`, its stored bytes: as they are,
    /// or inflated.
    pub fn reader<'a, R: Read + 'a>(&self, stored: R) -> Result<Box<dyn Read + 'a>, Error> {
        match self.method {
            Method::Stored => Ok(Box::new(stored)),
            Method::Deflated => Ok(Box::new(DeflateDecoder::new(stored))),
            Method::Other(n) => Err(Error::Method {
                entry: self.name.clone(),
                method: format!("method {n}"),
            }),
        }
    }

    /// The entry's contents, given its stored bytes.
    pub fn contents(&self, stored: &[u8]) -> Result<Vec<u8>, Error> {
        // The stated size is the ZIP's word, not a promise: reserve no
        // more than the stored bytes can plausibly inflate to at first.
        let guess = self.size.min(stored.len() as u64 * 4).min(1 << 30);
        let mut out = Vec::with_capacity(guess as usize);
        self.reader(stored)?
            .read_to_end(&mut out)
            .map_err(|e| Error::BadEntry {
                entry: self.name.clone(),
                reason: format!("cannot inflate: {e}"),
            })?;
        Ok(out)
    }
}

/// The entries of a package, in the order of its central directory.
#[derive(Clone, Debug)]
pub struct Package {
    pub entries: Vec<Entry>,
}

/// Which index a package holds.
#[derive(Clone, Debug)]
pub enum IndexLayout {
    /// `cdxj-gzip-1.0`: the `.idx` entry and the data entry it names.
    CdxjGzip { idx: Entry, data: Entry },
    /// A plain CDXJ entry.
    Cdxj(Entry),
}

impl Package {
    /// Reads the central directory of the ZIP in `rdr` (and each entry's
    /// local header, for where its bytes start).
    pub fn read<R: Read + Seek>(rdr: R) -> Result<Package, Error> {
        let mut zip = zip::ZipArchive::new(rdr).map_err(|e| Error::BadZip {
            reason: e.to_string(),
        })?;
        let mut entries = Vec::with_capacity(zip.len());
        for i in 0..zip.len() {
            let f = zip.by_index_raw(i).map_err(|e| Error::BadZip {
                reason: format!("entry {}: {e}", i + 1),
            })?;
            let method = match f.compression() {
                zip::CompressionMethod::Stored => Method::Stored,
                zip::CompressionMethod::Deflated => Method::Deflated,
                #[allow(deprecated)]
                other => Method::Other(other.to_u16()),
            };
            entries.push(Entry {
                name: f.name().to_string(),
                method,
                data_start: f.data_start(),
                compressed_size: f.compressed_size(),
                size: f.size(),
            });
        }
        Ok(Package { entries })
    }

    /// The entry named `name`.
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The WARCs (and ARCs) under `archive/`, in directory order.
    pub fn archives(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.is_archive())
    }

    /// The package's index: `indexes/index.idx` and the data file its
    /// `!meta` names (`data_name`, read from the `.idx`; `index.cdx.gz`
    /// when it names none), else the first `indexes/*.cdxj`.
    pub fn index(&self, data_name: Option<&str>) -> Result<IndexLayout, Error> {
        if let Some(idx) = self.entry("indexes/index.idx") {
            let data = format!("indexes/{}", data_name.unwrap_or("index.cdx.gz"));
            return match self.entry(&data) {
                Some(d) => Ok(IndexLayout::CdxjGzip {
                    idx: idx.clone(),
                    data: d.clone(),
                }),
                None => Err(Error::BadEntry {
                    entry: idx.name.clone(),
                    reason: format!("names {data}, which the package does not hold"),
                }),
            };
        }
        self.entries
            .iter()
            .find(|e| e.name.starts_with("indexes/") && e.name.ends_with(".cdxj"))
            .map(|e| IndexLayout::Cdxj(e.clone()))
            .ok_or(Error::NoIndex)
    }
}

/// The data file an `.idx` file's `!meta` line names (`"filename"`).
pub fn idx_data_name(idx: &[u8]) -> Option<String> {
    let first = idx.split(|&b| b == b'\n').next()?;
    let json = first.strip_prefix(b"!meta 0 ")?;
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    let name = v.get("filename")?.as_str()?;
    // Only a name inside `indexes/`: the package's own entries.
    (!name.contains("..") && !name.starts_with('/')).then(|| name.to_string())
}

/// One block of a `cdxj-gzip-1.0` index, as its `.idx` line gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxEntry {
    /// `key datetime` of the block's first line (the text before its
    /// `{`, trimmed).
    pub prefix: Vec<u8>,
    /// Offset and length of the block's gzip member in the data file.
    pub offset: u64,
    pub length: u64,
    /// `sha256:<hex>` of the member, when the writer recorded one.
    pub digest: Option<String>,
}

/// Reads the lines of a `cdxj-gzip-1.0` `.idx` file (`entry` names it in
/// errors): `!meta` lines are skipped, every other non-empty line is
/// `prefix {"offset": N, "length": N[, "digest": "..."]}`.
pub fn parse_idx(entry: &str, idx: &[u8]) -> Result<Vec<IdxEntry>, Error> {
    let mut out = Vec::new();
    for (no, line) in idx.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line.starts_with(b"!") {
            continue;
        }
        let bad = |reason: &str| Error::BadIdxLine {
            entry: entry.to_string(),
            line: no as u64 + 1,
            reason: reason.to_string(),
        };
        let brace = memchr::memchr(b'{', line).ok_or_else(|| bad("no JSON object"))?;
        let v: serde_json::Value =
            serde_json::from_slice(&line[brace..]).map_err(|e| bad(&format!("bad JSON: {e}")))?;
        let num = |name: &str| {
            let f = v.get(name).ok_or_else(|| bad(&format!("no \"{name}\"")))?;
            // Written as numbers; read strings too, as pywb does.
            f.as_u64()
                .or_else(|| f.as_str().and_then(|s| s.parse().ok()))
                .ok_or_else(|| bad(&format!("\"{name}\" is not a number")))
        };
        out.push(IdxEntry {
            prefix: line[..brace].trim_ascii().to_vec(),
            offset: num("offset")?,
            length: num("length")?,
            digest: v.get("digest").and_then(|d| d.as_str()).map(str::to_string),
        });
    }
    Ok(out)
}

/// The `.idx` entries as a ZipNum secondary index (tab-separated
/// `first-key shard offset length block-no` lines, see
/// [`crate::sorted::zipnum`]), with offsets moved by `base`: a ZipNum
/// reader then finds the blocks of a data file stored at `base` in the
/// ZIP, reading them from the ZIP file itself.
pub fn zipnum_idx(entries: &[IdxEntry], shard: &str, base: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 64);
    for (i, e) in entries.iter().enumerate() {
        let block = Block {
            first_key: e.prefix.clone(),
            shard: shard.to_string(),
            // Past the end of any file when it overflows: a read of it
            // fails, naming the block.
            offset: base.saturating_add(e.offset),
            length: e.length,
            block_no: i as u64 + 1,
        };
        out.extend_from_slice(&block.to_line());
        out.push(b'\n');
    }
    out
}

/// Writes the two files of a `cdxj-gzip-1.0` index as py-wacz (through
/// cdxj-indexer's `CompressedWriter`) writes them: blocks of
/// `lines_per_block` sorted CDXJ lines, each line with its LF, each block
/// one gzip member (made by `compress`); per block one `.idx` line, the
/// text of its first line before `{`, trimmed, then
/// `{"offset": N, "length": N, "digest": "sha256:<hex>"}`, under a
/// `!meta 0 {"format": "cdxj-gzip-1.0", "filename": "<data name>"}` line
/// written with the first block.
pub struct IdxWriter<I, D, C> {
    idx: I,
    data: D,
    compress: C,
    data_name: String,
    lines_per_block: usize,
    digests: bool,
    block: Vec<u8>,
    lines: usize,
    prefix: Vec<u8>,
    offset: u64,
}

impl<I: Write, D: Write, C: FnMut(&[u8]) -> io::Result<Vec<u8>>> IdxWriter<I, D, C> {
    /// A writer of `idx` and `data` (named `data_name` in the `!meta`
    /// line); `compress` makes a block's gzip member.
    pub fn new(idx: I, data: D, data_name: &str, compress: C) -> IdxWriter<I, D, C> {
        IdxWriter {
            idx,
            data,
            compress,
            data_name: data_name.to_string(),
            lines_per_block: DEFAULT_LINES_PER_BLOCK,
            digests: true,
            block: Vec::new(),
            lines: 0,
            prefix: Vec::new(),
            offset: 0,
        }
    }

    /// Lines per block (at least 1).
    pub fn lines_per_block(mut self, n: usize) -> Self {
        self.lines_per_block = n.max(1);
        self
    }

    /// Whether `.idx` lines carry the member's SHA-256 (py-wacz's do).
    pub fn digests(mut self, yes: bool) -> Self {
        self.digests = yes;
        self
    }

    /// Adds one line (without its LF).
    pub fn push(&mut self, line: &[u8]) -> io::Result<()> {
        if self.lines == 0 {
            let end = memchr::memchr(b'{', line).unwrap_or(line.len());
            self.prefix.clear();
            self.prefix.extend_from_slice(python_strip(&line[..end]));
            if self.offset == 0 {
                // json.dumps of {"format": ..., "filename": ...}.
                let name = serde_json::to_string(&self.data_name).map_err(io::Error::other)?;
                writeln!(
                    self.idx,
                    "!meta 0 {{\"format\": \"{CDXJ_GZIP}\", \"filename\": {name}}}"
                )?;
            }
        }
        self.block.extend_from_slice(line);
        self.block.push(b'\n');
        self.lines += 1;
        if self.lines == self.lines_per_block {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> io::Result<()> {
        if self.lines == 0 {
            return Ok(());
        }
        let member = (self.compress)(&self.block)?;
        self.idx.write_all(&self.prefix)?;
        write!(
            self.idx,
            " {{\"offset\": {}, \"length\": {}",
            self.offset,
            member.len()
        )?;
        if self.digests {
            let hex = hex(&sha2::Sha256::digest(&member));
            write!(self.idx, ", \"digest\": \"sha256:{hex}\"")?;
        }
        self.idx.write_all(b"}\n")?;
        self.data.write_all(&member)?;
        self.offset += member.len() as u64;
        self.block.clear();
        self.lines = 0;
        Ok(())
    }

    /// Writes the last block; gives the writers back.
    pub fn finish(mut self) -> io::Result<(I, D)> {
        self.flush_block()?;
        Ok((self.idx, self.data))
    }
}

/// Python's `str.strip()` on ASCII whitespace (what cdxj-indexer trims
/// the prefix with).
fn python_strip(b: &[u8]) -> &[u8] {
    let ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let start = b.iter().position(|c| !ws(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !ws(c)).map_or(start, |i| i + 1);
    &b[start..end]
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// One resource of `datapackage.json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    pub path: String,
    /// The algorithm (`sha256`, `md5`) and the digest in lowercase hex.
    pub hash: Option<(String, String)>,
    pub bytes: Option<u64>,
}

/// The resources `datapackage.json` lists. Both layouts are read: WACZ
/// 1.1 (`"hash": "sha256:<hex>"`, `"bytes"`) and 1.0 (`"stats": {"hash":
/// "<hex>", "bytes"}` with `"hashing": "sha256"`).
pub fn parse_datapackage(json: &[u8]) -> Result<Vec<Resource>, Error> {
    let bad = |s: &str| Error::BadDatapackage(s.to_string());
    let v: serde_json::Value = serde_json::from_slice(json)
        .map_err(|e| Error::BadDatapackage(format!("not JSON: {e}")))?;
    let list = v
        .get("resources")
        .and_then(|r| r.as_array())
        .ok_or_else(|| bad("no \"resources\" list"))?;
    let mut out = Vec::with_capacity(list.len());
    for r in list {
        let path = r
            .get("path")
            .and_then(|p| p.as_str())
            .ok_or_else(|| bad("a resource without \"path\""))?;
        let stats = r.get("stats");
        let field = |name: &str| r.get(name).or_else(|| stats.and_then(|s| s.get(name)));
        let hash = field("hash")
            .and_then(|h| h.as_str())
            .map(|h| match h.split_once(':') {
                Some((alg, hex)) => (alg.to_ascii_lowercase(), hex.to_ascii_lowercase()),
                None => {
                    let alg = r
                        .get("hashing")
                        .and_then(|a| a.as_str())
                        .unwrap_or("sha256");
                    (alg.to_ascii_lowercase(), h.to_ascii_lowercase())
                }
            });
        out.push(Resource {
            path: path.to_string(),
            hash,
            bytes: field("bytes").and_then(|b| b.as_u64()),
        });
    }
    Ok(out)
}

/// The digest of `rdr`'s bytes with `alg` (`sha256` or `md5`) in hex,
/// and their count; `None` for another algorithm.
pub fn digest_reader(alg: &str, mut rdr: impl Read) -> io::Result<Option<(String, u64)>> {
    fn run<H: sha2::Digest>(mut h: H, rdr: &mut dyn Read) -> io::Result<(String, u64)> {
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0u64;
        loop {
            match rdr.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => {
                    h.update(&buf[..k]);
                    n += k as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok((hex(&h.finalize()), n))
    }
    match alg {
        "sha256" => run(sha2::Sha256::new(), &mut rdr).map(Some),
        "md5" => run(md5::Md5::new(), &mut rdr).map(Some),
        _ => Ok(None),
    }
}

/// Why a `Range` header cannot be answered with part of an entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RangeError {
    /// Not `bytes=FIRST-LAST`, `bytes=FIRST-` or `bytes=-SUFFIX` (416).
    #[error("Range {0:?} is not bytes=FIRST-LAST, bytes=FIRST- or bytes=-SUFFIX")]
    Malformed(String),
    /// Several ranges in one request: not served (416).
    #[error("Range {0:?} asks for several ranges; ask for one at a time")]
    Several(String),
    /// The range starts at or past the end of the entry's `size` bytes.
    #[error("Range {range:?} starts past the end of the entry ({size} bytes)")]
    Unsatisfiable { range: String, size: u64 },
}

/// The bytes of an entry of `size` bytes that an HTTP `Range` header
/// (RFC 9110 section 14.1.2) asks for, as `first..end` (end exclusive):
/// `bytes=FIRST-LAST` (LAST past the end is cut to it), `bytes=FIRST-`,
/// `bytes=-SUFFIX` (the last SUFFIX bytes). One range only: replay
/// systems (pywb, warcio) ask for one record at a time. Spaces around
/// the parts are allowed, as the RFC's optional whitespace.
pub fn byte_range(value: &str, size: u64) -> Result<std::ops::Range<u64>, RangeError> {
    let malformed = || RangeError::Malformed(value.to_string());
    let (unit, spec) = value.trim().split_once('=').ok_or_else(malformed)?;
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return Err(malformed());
    }
    if spec.contains(',') {
        return Err(RangeError::Several(value.to_string()));
    }
    let (first, last) = spec.split_once('-').ok_or_else(malformed)?;
    let (first, last) = (first.trim(), last.trim());
    // Digits only: `u64::from_str` would take a leading `+`.
    let number = |s: &str| -> Result<u64, RangeError> {
        match !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            true => s.parse().map_err(|_| malformed()),
            false => Err(malformed()),
        }
    };
    let unsatisfiable = || RangeError::Unsatisfiable {
        range: value.to_string(),
        size,
    };
    if first.is_empty() {
        let suffix = number(last)?;
        if suffix == 0 || size == 0 {
            return Err(unsatisfiable());
        }
        return Ok(size - suffix.min(size)..size);
    }
    let first = number(first)?;
    let end = match last.is_empty() {
        true => size,
        false => {
            let last = number(last)?;
            if last < first {
                return Err(malformed());
            }
            last.saturating_add(1).min(size)
        }
    };
    if first >= size {
        return Err(unsatisfiable());
    }
    Ok(first..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idx_lines_read_both_layouts() {
        let idx = b"!meta 0 {\"format\": \"cdxj-gzip-1.0\", \"filename\": \"index.cdx.gz\"}\n\
            com,example)/ 20201007212236 {\"offset\": 0, \"length\": 194}\n\
            org,a)/ 2021 {\"offset\": 194, \"length\": 20, \"digest\": \"sha256:ab\"}\n";
        let e = parse_idx("indexes/index.idx", idx).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].prefix, b"com,example)/ 20201007212236");
        assert_eq!((e[1].offset, e[1].length), (194, 20));
        assert_eq!(e[1].digest.as_deref(), Some("sha256:ab"));
        assert_eq!(idx_data_name(idx).as_deref(), Some("index.cdx.gz"));
        let z = zipnum_idx(&e, "s", 100);
        let b = Block::parse(z.split(|&b| b == b'\n').nth(1).unwrap(), 2).unwrap();
        assert_eq!((b.offset, b.length, b.block_no), (294, 20, 2));
        let err = parse_idx("i", b"a 1 {\"offset\": 1}\n").unwrap_err();
        assert!(err.to_string().contains("line 1") && err.to_string().contains("length"));
    }

    #[test]
    fn writer_cuts_blocks_and_names_the_data() {
        let mut w = IdxWriter::new(Vec::new(), Vec::new(), "index.cdx.gz", |b: &[u8]| {
            Ok(b.to_vec())
        })
        .lines_per_block(2);
        for l in [&b"a 1 {\"x\": 1}"[..], b" b 2 {}", b"c 3 {}"] {
            w.push(l).unwrap();
        }
        let (idx, data) = w.finish().unwrap();
        let idx = String::from_utf8(idx).unwrap();
        let lines: Vec<&str> = idx.lines().collect();
        assert_eq!(
            lines[0],
            "!meta 0 {\"format\": \"cdxj-gzip-1.0\", \"filename\": \"index.cdx.gz\"}"
        );
        assert!(lines[1].starts_with("a 1 {\"offset\": 0, \"length\": 21, \"digest\": \"sha256:"));
        assert!(lines[2].starts_with("c 3 {\"offset\": 21, \"length\": 7,"));
        assert_eq!(data, b"a 1 {\"x\": 1}\n b 2 {}\nc 3 {}\n");
        let back = parse_idx("i", idx.as_bytes()).unwrap();
        assert_eq!(back[1].offset, 21);
    }

    #[test]
    fn datapackage_both_versions() {
        let v11 = br#"{"resources": [{"name": "a", "path": "archive/a.warc", "hash": "sha256:AB", "bytes": 3}]}"#;
        let v10 = br#"{"resources": [{"path": "archive/a.warc", "stats": {"hash": "ab", "bytes": 3}, "hashing": "sha256"}]}"#;
        let want = vec![Resource {
            path: "archive/a.warc".into(),
            hash: Some(("sha256".into(), "ab".into())),
            bytes: Some(3),
        }];
        assert_eq!(parse_datapackage(v11).unwrap(), want);
        assert_eq!(parse_datapackage(v10).unwrap(), want);
        assert!(parse_datapackage(b"{}").is_err());
    }

    #[test]
    fn ranges_as_rfc_9110_reads_them() {
        assert_eq!(byte_range("bytes=0-9", 100), Ok(0..10));
        assert_eq!(byte_range("bytes=90-200", 100), Ok(90..100));
        assert_eq!(byte_range(" bytes = 5 - ", 100), Ok(5..100));
        assert_eq!(byte_range("bytes=-10", 100), Ok(90..100));
        assert_eq!(byte_range("bytes=-1000", 100), Ok(0..100));
        assert_eq!(byte_range("BYTES=99-99", 100), Ok(99..100));
        for bad in [
            "",
            "bytes",
            "bytes=",
            "bytes=-",
            "bytes=a-1",
            "bytes=+1-2",
            "lines=1-2",
        ] {
            assert!(
                matches!(byte_range(bad, 100), Err(RangeError::Malformed(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            byte_range("bytes=9-1", 100),
            Err(RangeError::Malformed(_))
        ));
        assert!(matches!(
            byte_range("bytes=0-1,5-6", 100),
            Err(RangeError::Several(_))
        ));
        for past in ["bytes=100-", "bytes=100-200", "bytes=-0"] {
            assert!(
                matches!(byte_range(past, 100), Err(RangeError::Unsatisfiable { .. })),
                "{past}"
            );
        }
        assert!(byte_range("bytes=0-", 0).is_err());
        let big = format!("bytes={}-{}", u64::MAX, u64::MAX);
        assert!(byte_range(&big, 100).is_err());
    }

    #[test]
    fn strip_is_pythons() {
        assert_eq!(python_strip(b"  a b \t"), b"a b");
        assert_eq!(python_strip(b"   "), b"");
        assert_eq!(python_strip(b""), b"");
    }
}
