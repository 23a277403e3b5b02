//! ZipNum clusters: a sorted index cut into gzip blocks, with a small
//! sorted secondary index that a binary search can afford to read.
//!
//! Layout (pywb's, also Common Crawl's):
//!
//! * shard files: concatenated gzip members, one per block of N lines;
//!   inside a block the lines are LF-separated and the last line of the
//!   block has no LF;
//! * the secondary index (`.idx`), one line per block, in block order:
//!   `first-key<TAB>shard<TAB>offset<TAB>length<TAB>block-no`, where
//!   `first-key` is the first two space-separated fields (`key datetime`) of
//!   the block's first line, `offset`/`length` are bytes of the member in
//!   the shard and `block-no` counts from 1;
//! * the `.loc` file: `shard<TAB>location[<TAB>location...]` per shard,
//!   each location a path relative to it or a URL, tried in order
//!   ([`parse_loc`]). Common Crawl's layout has no `.loc`: its idx is
//!   `cluster.idx` and the shard column names the file beside it
//!   (`cdx-00000.gz`).
//!
//! [`BlockWriter`] cuts lines into blocks; [`Cluster`] finds the blocks a
//! [`KeyRange`] can touch and scans them, fetching bytes through a
//! [`FetchBlock`] (a closure giving a block's gzip member, or the engine's
//! reader giving it inflated from a cache) so this module never opens a
//! file.

use std::io::{self, Read, Write};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;

use super::lines::{key_datetime, Lines};
use super::query::KeyRange;
use super::search::{OrderReport, Search};
use super::Error;

/// Lines per block unless told otherwise (pywb's and Common Crawl's).
pub const DEFAULT_LINES_PER_BLOCK: usize = 3000;

/// One line of the secondary index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// `key datetime` of the block's first line.
    pub first_key: Vec<u8>,
    /// Shard name (resolved to a path through the `.loc` file).
    pub shard: String,
    /// Byte offset of the gzip member in the shard.
    pub offset: u64,
    /// Byte length of the gzip member.
    pub length: u64,
    /// Block number, from 1.
    pub block_no: u64,
}

impl Block {
    /// Parses a secondary-index line (`line_no` is for the error).
    pub fn parse(line: &[u8], line_no: u64) -> Result<Block, Error> {
        let bad = |reason: &str| Error::BadIndexLine {
            line: line_no,
            reason: reason.to_string(),
        };
        // Tabs, not spaces, separate the columns: the first key itself
        // holds a space (`key datetime`).
        let mut fields = line.split(|&b| b == b'\t');
        let first_key = fields.next().ok_or_else(|| bad("empty line"))?.to_vec();
        let mut next_field = |what: &str| {
            fields
                .next()
                .ok_or_else(|| bad(&format!("missing {what}")))
                .and_then(|f| {
                    std::str::from_utf8(f).map_err(|_| bad(&format!("{what} is not UTF-8")))
                })
        };
        let shard = next_field("shard")?.to_string();
        let number = |s: &str, what: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| bad(&format!("{what} {s:?} is not a number")))
        };
        let offset = number(next_field("offset")?, "offset")?;
        let length = number(next_field("length")?, "length")?;
        // Some secondary indexes stop at the length; the number is only
        // informative, so its absence is not an error.
        let block_no = match next_field("block number") {
            Ok(s) => number(s, "block number")?,
            Err(_) => 0,
        };
        Ok(Block {
            first_key,
            shard,
            offset,
            length,
            block_no,
        })
    }

    /// The secondary-index line, without LF.
    pub fn to_line(&self) -> Vec<u8> {
        let mut out = self.first_key.clone();
        out.extend_from_slice(
            format!(
                "\t{}\t{}\t{}\t{}",
                self.shard, self.offset, self.length, self.block_no
            )
            .as_bytes(),
        );
        out
    }
}

/// `key datetime` of a line: the first-key column of the secondary index.
pub fn first_key(line: &[u8]) -> Vec<u8> {
    let (key, datetime) = key_datetime(line);
    if datetime.is_empty() && key.len() == line.len() {
        return key.to_vec();
    }
    [key, b" ", datetime].concat()
}

/// Compresses one block (lines LF-separated, no final LF) as a gzip member.
pub fn compress_block(block: &[u8], level: u32) -> io::Result<Vec<u8>> {
    let mut enc = GzEncoder::new(Vec::with_capacity(block.len() / 4), Compression::new(level));
    enc.write_all(block)?;
    enc.finish()
}

/// Decompresses the bytes of one or more consecutive blocks.
///
/// Multi-member aware, so a reader may fetch several adjacent blocks with
/// one read (as pywb does) and inflate them in one go. A single member
/// (what a ZipNum block is) is inflated in one call into a buffer of the
/// size its trailer gives ([`inflate_member`]): about a third faster than
/// the streaming decoder, which is the fallback for anything else.
pub fn decompress_block(bytes: &[u8], shard: &str, offset: u64) -> Result<Vec<u8>, Error> {
    if let Some(text) = inflate_member(bytes) {
        return Ok(text);
    }
    let mut out = Vec::with_capacity(bytes.len() * 4);
    MultiGzDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(|err| Error::BadBlock {
            shard: shard.to_string(),
            offset,
            err,
        })?;
    Ok(out)
}

/// Deflate expands at most this many times (RFC 1951's longest match
/// for one bit): a trailer claiming more is not trusted.
const MAX_RATIO: usize = 1032;

/// The text of `bytes` when they are exactly one gzip member, inflated
/// in one call into a buffer sized from the member's trailer (ISIZE),
/// its CRC-32 and size checked. `None` when they are not (several
/// members, a header or trailer that does not add up, bad data): the
/// caller then reads them with the streaming decoder, which names the
/// fault.
pub fn inflate_member(bytes: &[u8]) -> Option<Vec<u8>> {
    let body = bytes.get(gzip_header_len(bytes)?..bytes.len().checked_sub(8)?)?;
    let trailer = &bytes[bytes.len() - 8..];
    let crc = u32::from_le_bytes(trailer[..4].try_into().ok()?);
    let size = u32::from_le_bytes(trailer[4..].try_into().ok()?) as usize;
    if size > body.len().saturating_mul(MAX_RATIO) {
        return None;
    }
    let mut out = Vec::with_capacity(size);
    let mut d = flate2::Decompress::new(false);
    let status = d
        .decompress_vec(body, &mut out, flate2::FlushDecompress::Finish)
        .ok()?;
    // The deflate stream must end where the trailer starts, having made
    // exactly the bytes the trailer counts.
    if status != flate2::Status::StreamEnd || d.total_in() != body.len() as u64 || out.len() != size
    {
        return None;
    }
    let mut sum = flate2::Crc::new();
    sum.update(&out);
    (sum.sum() == crc).then_some(out)
}

/// The length of the gzip member header at the start of `bytes` (RFC
/// 1952: fixed 10 bytes, then the optional extra field, name, comment
/// and header CRC its flags announce); `None` if it is not one.
fn gzip_header_len(bytes: &[u8]) -> Option<usize> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    let fixed = bytes.get(..10)?;
    if fixed[..3] != [0x1f, 0x8b, 8] {
        return None;
    }
    let flags = fixed[3];
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let xlen = bytes.get(at..at + 2)?;
        at += 2 + u16::from_le_bytes([xlen[0], xlen[1]]) as usize;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            at += memchr::memchr(0, bytes.get(at..)?)? + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    (at <= bytes.len()).then_some(at)
}

/// The lines of a `.loc` file: each shard's locations in the order given
/// (pywb reads the first that answers); blank lines skipped, a shard
/// named twice gets the locations of both lines.
pub fn parse_loc(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        let mut parts = line.trim_end().split('\t');
        let Some(shard) = parts.next().filter(|s| !s.is_empty()) else {
            continue;
        };
        let locations = parts.filter(|p| !p.is_empty()).map(str::to_string);
        match out.iter_mut().find(|(s, _)| s == shard) {
            Some((_, l)) => l.extend(locations),
            None => out.push((shard.to_string(), locations.collect())),
        }
    }
    out
}

/// A block as a reader hands it to [`BlockLines`]: its gzip member, to
/// be inflated a piece at a time, or its text inflated already (shared
/// with a cache).
#[derive(Clone, Debug)]
pub enum BlockBytes {
    Gzip(Vec<u8>),
    Text(Arc<[u8]>),
}

/// Reads the blocks of a cluster: `fetch(block, ahead)` gives one block,
/// `ahead` being the blocks the same scan reads next (in order), which a
/// reader of slow storage may start fetching. Any
/// `FnMut(shard, offset, length) -> gzip bytes` is one.
pub trait FetchBlock {
    fn fetch(&mut self, block: &Block, ahead: &[Block]) -> io::Result<BlockBytes>;
}

impl<F: FnMut(&str, u64, u64) -> io::Result<Vec<u8>>> FetchBlock for F {
    fn fetch(&mut self, block: &Block, _ahead: &[Block]) -> io::Result<BlockBytes> {
        self(&block.shard, block.offset, block.length).map(BlockBytes::Gzip)
    }
}

/// Cuts sorted lines into blocks: push lines, take finished blocks.
#[derive(Debug)]
pub struct BlockWriter {
    lines_per_block: usize,
    level: u32,
    buf: Vec<u8>,
    count: usize,
    first_key: Vec<u8>,
}

/// A finished block: its first key and its gzip member.
#[derive(Debug)]
pub struct FinishedBlock {
    /// `key datetime` of its first line.
    pub first_key: Vec<u8>,
    /// The gzip member.
    pub gzip: Vec<u8>,
    /// Lines in the block.
    pub lines: usize,
}

impl BlockWriter {
    /// Blocks of `lines_per_block` lines (at least 1), gzip `level` 0-9.
    pub fn new(lines_per_block: usize, level: u32) -> BlockWriter {
        BlockWriter {
            lines_per_block: lines_per_block.max(1),
            level,
            buf: Vec::new(),
            count: 0,
            first_key: Vec::new(),
        }
    }

    /// Adds a line; returns a block when this line completed one.
    ///
    /// LFs go between lines, not after them: pywb's blocks end without
    /// one, and a reader splitting on LF then sees no empty last line.
    pub fn push(&mut self, line: &[u8]) -> io::Result<Option<FinishedBlock>> {
        if self.count == 0 {
            self.first_key = first_key(line);
        } else {
            self.buf.push(b'\n');
        }
        self.buf.extend_from_slice(line);
        self.count += 1;
        if self.count >= self.lines_per_block {
            return self.flush();
        }
        Ok(None)
    }

    /// The last, partial block (if any line is pending).
    pub fn flush(&mut self) -> io::Result<Option<FinishedBlock>> {
        if self.count == 0 {
            return Ok(None);
        }
        let gzip = compress_block(&self.buf, self.level)?;
        let block = FinishedBlock {
            first_key: std::mem::take(&mut self.first_key),
            gzip,
            lines: self.count,
        };
        self.buf.clear();
        self.count = 0;
        Ok(Some(block))
    }
}

/// A ZipNum cluster's secondary index, searchable like a plain index.
#[derive(Debug)]
pub struct Cluster<D> {
    idx: Search<D>,
}

impl<D: AsRef<[u8]>> Cluster<D> {
    /// Wraps the bytes of a `.idx` file.
    pub fn new(idx: D) -> Cluster<D> {
        Cluster {
            idx: Search::new(idx).order_by_prefix_before(b'\t'),
        }
    }

    /// The blocks that can hold lines of `range`, in order: from the block
    /// before the first whose first key is `>= start` (its lines before
    /// that key may still be in range, duplicates included), up to the
    /// last whose first key is not past the range.
    pub fn blocks(&self, range: &KeyRange) -> Result<Vec<Block>, Error> {
        let buf = self.idx.as_bytes();
        let pos = self.idx.lower_bound(&range.start)?;
        // Step back one block: the block before holds every line between
        // its first key and this block's first key.
        // Never step back into the header lines of the index itself.
        let mut start = pos;
        if start > self.idx.body_start() {
            start = super::lines::line_start(buf, start - 1);
        }
        let mut out = Vec::new();
        for (at, line) in Lines::new(buf, start) {
            // The line number is only worth counting for an error message.
            let line_no = || {
                let before = buf.get(..at).unwrap_or_default();
                memchr::memchr_iter(b'\n', before).count() as u64 + 1
            };
            let block = Block::parse(line, 0).map_err(|e| match e {
                Error::BadIndexLine { reason, .. } => Error::BadIndexLine {
                    line: line_no(),
                    reason,
                },
                other => other,
            })?;
            // A block whose first key is already past the range holds
            // nothing for it; the first candidate is always taken, since
            // its tail may hold the first matches.
            // A block starting past the range ends the list. When it is the
            // first block, no block can hold the range: the list is empty.
            if block.first_key >= range.start && range.is_past(&block.first_key) {
                break;
            }
            out.push(block);
        }
        Ok(out)
    }

    /// Checks the whole cluster's order: the `.idx` lines, then every line
    /// of every block against the one before it, across block and shard
    /// boundaries (blocks fetched one at a time with
    /// `fetch(shard, offset, length)`). Reports the first `max` disorders
    /// (those of the `.idx` carry no block) and their count.
    pub fn check_order(
        &self,
        max: usize,
        mut fetch: impl FetchBlock,
    ) -> Result<OrderReport, Error> {
        let mut report = self.idx.check_order(max);
        let mut prev: Option<Vec<u8>> = None;
        let blocks = self.blocks(&KeyRange::all())?;
        for (i, block) in blocks.iter().enumerate() {
            let ahead = blocks.get(i + 1..).unwrap_or_default();
            let text = block_text(block, ahead, &mut fetch)?;
            for (no, (at, line)) in Lines::new(&text, 0).enumerate() {
                let place = || Some((block.shard.clone(), block.block_no));
                report.check(
                    max,
                    prev.as_deref(),
                    line,
                    (no as u64 + 1, at as u64),
                    place,
                );
                let p = prev.get_or_insert_with(Vec::new);
                p.clear();
                p.extend_from_slice(line);
            }
        }
        Ok(report)
    }

    /// The lines of `range`, fetching each block's bytes with
    /// `fetch(shard, offset, length)`. Lines are checked to ascend.
    pub fn range(
        &self,
        range: &KeyRange,
        fetch: impl FnMut(&str, u64, u64) -> io::Result<Vec<u8>>,
    ) -> Result<Vec<Vec<u8>>, Error> {
        self.range_lines(range, fetch)?.collect()
    }

    /// The lines of `blocks` (found by [`Cluster::blocks`], or a page of
    /// them) that fall in `range`, one at a time: one block is held in
    /// memory at once, whatever the size of the answer.
    pub fn range_lines<'r, F>(
        &self,
        range: &'r KeyRange,
        fetch: F,
    ) -> Result<BlockLines<'r, F>, Error>
    where
        F: FetchBlock,
    {
        Ok(BlockLines::new(self.blocks(range)?, range, fetch))
    }
}

/// Lines of a run of blocks within a key range, checked to ascend (see
/// [`Cluster::range_lines`]). A block given as gzip is inflated a piece
/// at a time and no further than the range (an exact lookup stops at the
/// first line past its key, about half a block on average); a block given
/// inflated ([`BlockBytes::Text`], from a cache) is read in place, the
/// first line of the range found by bisection.
pub struct BlockLines<'r, F> {
    blocks: Vec<Block>,
    /// The next block of `blocks` to read.
    next_block: usize,
    range: &'r KeyRange,
    fetch: F,
    /// The block being read, with its shard and number (for messages):
    /// some while a block is open.
    decoder: Option<MultiGzDecoder<io::Cursor<Vec<u8>>>>,
    open: bool,
    place: (String, u64, u64),
    /// Inflated bytes not yet handed out start at `pos`; `eof` once the
    /// block is inflated whole. An inflated block is `text` instead.
    buf: Vec<u8>,
    text: Option<Arc<[u8]>>,
    pos: usize,
    eof: bool,
    prev: Vec<u8>,
    started: bool,
    done: bool,
}

/// Bytes inflated at a time.
const INFLATE_STEP: usize = 32 << 10;

impl<'r, F> BlockLines<'r, F>
where
    F: FetchBlock,
{
    /// The lines of `blocks` within `range`.
    pub fn new(blocks: Vec<Block>, range: &'r KeyRange, fetch: F) -> BlockLines<'r, F> {
        BlockLines {
            blocks,
            next_block: 0,
            range,
            fetch,
            decoder: None,
            open: false,
            place: (String::new(), 0, 0),
            buf: Vec::new(),
            text: None,
            pos: 0,
            eof: false,
            prev: Vec::new(),
            started: false,
            done: false,
        }
    }

    /// Where the next whole line of the current block lies in `buf`
    /// (`start..end`), inflating more as needed; `None` at the end of the
    /// block.
    fn next_line(&mut self) -> Result<Option<(usize, usize)>, Error> {
        if let Some(text) = &self.text {
            if self.pos >= text.len() {
                return Ok(None);
            }
            let end = memchr::memchr(b'\n', &text[self.pos..]).map_or(text.len(), |i| self.pos + i);
            let at = (self.pos, end);
            self.pos = end + 1;
            return Ok(Some(at));
        }
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.pos..]) {
                let at = (self.pos, self.pos + i);
                self.pos += i + 1;
                return Ok(Some(at));
            }
            if self.eof {
                if self.pos < self.buf.len() {
                    let at = (self.pos, self.buf.len());
                    self.pos = self.buf.len();
                    return Ok(Some(at));
                }
                return Ok(None);
            }
            self.buf.drain(..self.pos);
            self.pos = 0;
            let len = self.buf.len();
            self.buf.resize(len + INFLATE_STEP, 0);
            let dec = self.decoder.as_mut().expect("a block being read");
            let n = match dec.read(&mut self.buf[len..]) {
                Ok(n) => n,
                Err(err) => {
                    return Err(Error::BadBlock {
                        shard: self.place.0.clone(),
                        offset: self.place.2,
                        err,
                    })
                }
            };
            self.buf.truncate(len + n);
            self.eof = n == 0;
        }
    }
}

impl<F> Iterator for BlockLines<'_, F>
where
    F: FetchBlock,
{
    type Item = Result<Vec<u8>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            if !self.open {
                let block = self.blocks.get(self.next_block)?;
                let ahead = self.blocks.get(self.next_block + 1..).unwrap_or_default();
                self.next_block += 1;
                let bytes = match self.fetch.fetch(block, ahead) {
                    Ok(b) => b,
                    Err(err) => {
                        self.done = true;
                        return Some(Err(Error::UnreadableBlock {
                            shard: block.shard.clone(),
                            offset: block.offset,
                            err,
                        }));
                    }
                };
                self.place = (block.shard.clone(), block.block_no, block.offset);
                self.buf.clear();
                self.pos = 0;
                self.eof = false;
                self.open = true;
                match bytes {
                    BlockBytes::Gzip(gzip) => {
                        self.decoder = Some(MultiGzDecoder::new(io::Cursor::new(gzip)));
                        self.text = None;
                    }
                    BlockBytes::Text(text) => {
                        self.decoder = None;
                        // Inflated already: the range's first line is
                        // found by bisecting the block (its probes
                        // checked), not by reading every line before it.
                        if !self.started {
                            match Search::new(&text[..]).lower_bound(&self.range.start) {
                                Ok(at) => self.pos = at,
                                Err(e) => {
                                    self.done = true;
                                    return Some(Err(e));
                                }
                            }
                        }
                        self.text = Some(text);
                    }
                }
            }
            let (start, end) = match self.next_line() {
                Ok(Some(at)) => at,
                Ok(None) => {
                    self.decoder = None;
                    self.text = None;
                    self.open = false;
                    continue;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            // Lines before the range are only checked and remembered: no
            // allocation per line skipped.
            let line = match &self.text {
                Some(text) => &text[start..end],
                None => &self.buf[start..end],
            };
            if self.started && line < &self.prev[..] {
                self.done = true;
                return Some(Err(Error::Unsorted {
                    offset: start as u64,
                    line: format!(
                        "{} (block {} of shard {})",
                        String::from_utf8_lossy(line),
                        self.place.1,
                        self.place.0
                    ),
                }));
            }
            if line >= &self.range.start[..] && self.range.is_past(line) {
                self.done = true;
                return None;
            }
            let keep = line >= &self.range.start[..];
            self.prev.clear();
            self.prev.extend_from_slice(line);
            self.started = true;
            if keep {
                return Some(Ok(self.prev.clone()));
            }
        }
    }
}

fn block_text(
    block: &Block,
    ahead: &[Block],
    fetch: &mut impl FetchBlock,
) -> Result<Arc<[u8]>, Error> {
    let bytes = fetch
        .fetch(block, ahead)
        .map_err(|err| Error::UnreadableBlock {
            shard: block.shard.clone(),
            offset: block.offset,
            err,
        })?;
    match bytes {
        BlockBytes::Text(text) => Ok(text),
        BlockBytes::Gzip(gzip) => Ok(decompress_block(&gzip, &block.shard, block.offset)?.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_key_is_key_and_datetime() {
        assert_eq!(first_key(b"com,a)/ 2014 http://a/ x"), b"com,a)/ 2014");
        assert_eq!(first_key(b"com,a)/"), b"com,a)/");
    }

    #[test]
    fn step_back_stays_below_index_headers() {
        let mut w = BlockWriter::new(2, 6);
        let mut shard = Vec::new();
        let mut idx = b"!meta {}\n".to_vec();
        let mut blocks = Vec::new();
        for l in [&b"a 1"[..], b"a 2", b"b 1"] {
            blocks.extend(w.push(l).unwrap());
        }
        blocks.extend(w.flush().unwrap());
        for (i, b) in blocks.into_iter().enumerate() {
            let entry = Block {
                first_key: b.first_key,
                shard: "s".into(),
                offset: shard.len() as u64,
                length: b.gzip.len() as u64,
                block_no: i as u64 + 1,
            };
            shard.extend_from_slice(&b.gzip);
            idx.extend_from_slice(&entry.to_line());
            idx.push(b'\n');
        }
        let cluster = Cluster::new(idx);
        let fetch = |_: &str, o: u64, l: u64| Ok(shard[o as usize..(o + l) as usize].to_vec());
        let range = KeyRange::new(b"a", crate::sorted::MatchType::Exact);
        assert_eq!(
            cluster.range(&range, fetch).unwrap(),
            vec![b"a 1".to_vec(), b"a 2".to_vec()]
        );
    }

    /// Gives blocks inflated (as the engine's cache does), recording the
    /// blocks it is told come next.
    struct Inflated<'a> {
        shard: &'a [u8],
        told: &'a std::cell::RefCell<Vec<(u64, Vec<u64>)>>,
    }

    impl FetchBlock for Inflated<'_> {
        fn fetch(&mut self, block: &Block, ahead: &[Block]) -> io::Result<BlockBytes> {
            self.told
                .borrow_mut()
                .push((block.block_no, ahead.iter().map(|b| b.block_no).collect()));
            let gzip = &self.shard[block.offset as usize..(block.offset + block.length) as usize];
            let text =
                decompress_block(gzip, &block.shard, block.offset).map_err(io::Error::other)?;
            Ok(BlockBytes::Text(text.into()))
        }
    }

    #[test]
    fn inflated_blocks_read_as_gzip_ones() {
        // Blocks of 2 lines, LF-terminated or not, keys straddling blocks.
        let lines: Vec<String> = (0..23).map(|i| format!("k{} {i:02}", i / 3)).collect();
        let mut w = BlockWriter::new(2, 6);
        let (mut shard, mut idx, mut n) = (Vec::new(), Vec::new(), 0);
        let mut finished = Vec::new();
        for l in &lines {
            finished.extend(w.push(l.as_bytes()).unwrap());
        }
        finished.extend(w.flush().unwrap());
        for b in finished {
            n += 1;
            let entry = Block {
                first_key: b.first_key,
                shard: "s".into(),
                offset: shard.len() as u64,
                length: b.gzip.len() as u64,
                block_no: n,
            };
            shard.extend_from_slice(&b.gzip);
            idx.extend_from_slice(&entry.to_line());
            idx.push(b'\n');
        }
        let cluster = Cluster::new(idx);
        use crate::sorted::MatchType;
        let exact = (0..9).map(|k| (format!("k{k}"), MatchType::Exact));
        let prefix = ["k", "k1", "j", "l"].map(|k| (k.to_string(), MatchType::Prefix));
        for (key, m) in exact.chain(prefix) {
            let key = key.as_str();
            let range = KeyRange::new(key.as_bytes(), m);
            let gz = |_: &str, o: u64, l: u64| Ok(shard[o as usize..(o + l) as usize].to_vec());
            let want = cluster.range(&range, gz).unwrap();
            let want_n = lines
                .iter()
                .filter(|l| match m {
                    MatchType::Exact => l.split(' ').next() == Some(key),
                    _ => l.starts_with(key),
                })
                .count();
            assert_eq!(want.len(), want_n, "{key}");
            let told = std::cell::RefCell::new(Vec::new());
            let inflated = Inflated {
                shard: &shard,
                told: &told,
            };
            let got: Vec<Vec<u8>> = cluster
                .range_lines(&range, inflated)
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(got, want, "{key}");
            // Each block is told the blocks after it in the scan.
            let told = told.into_inner();
            for w in told.windows(2) {
                assert_eq!(w[0].1.first(), Some(&w[1].0));
            }
        }
    }

    /// The streaming decoder, the oracle of the one-call path.
    fn streamed(gzip: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        MultiGzDecoder::new(gzip).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn one_call_inflation_agrees_with_the_streaming_decoder() {
        let text: Vec<u8> = (0..5000)
            .flat_map(|i| format!("com,a)/{} 2014 x\n", i % 97).into_bytes())
            .collect();
        for len in [0, 1, 100, text.len()] {
            let gzip = compress_block(&text[..len], 6).unwrap();
            assert_eq!(inflate_member(&gzip).as_deref(), Some(&text[..len]));
            assert_eq!(decompress_block(&gzip, "s", 0).unwrap(), &text[..len]);
        }
        // A header with a name and a comment (as gzip(1) writes).
        let mut enc = flate2::GzBuilder::new()
            .filename("x.cdx")
            .comment("c")
            .write(Vec::new(), Compression::new(6));
        enc.write_all(&text).unwrap();
        let named = enc.finish().unwrap();
        assert_eq!(inflate_member(&named).as_deref(), Some(&text[..]));
        // Two members: not one call's, but still read whole.
        let a = compress_block(&text[..100], 6).unwrap();
        let two = [a.clone(), a].concat();
        assert_eq!(inflate_member(&two), None);
        assert_eq!(
            decompress_block(&two, "s", 0).unwrap(),
            [&text[..100], &text[..100]].concat()
        );
        // A wrong CRC or size, a cut member: left to the streaming
        // decoder, which names the fault.
        let good = compress_block(&text, 6).unwrap();
        for at in [good.len() - 8, good.len() - 4, good.len() / 2] {
            let mut bad = good.clone();
            bad[at] ^= 0x55;
            assert_eq!(inflate_member(&bad), None, "byte {at} changed");
            assert!(!streamed(&bad).is_ok_and(|t| t == text));
        }
        assert_eq!(inflate_member(&good[..good.len() - 1]), None);
        assert!(matches!(
            decompress_block(&good[..good.len() / 2], "s", 7),
            Err(Error::BadBlock { offset: 7, .. })
        ));
    }

    #[test]
    fn index_line_round_trip() {
        let line = b"com,example)/ 20140127171200\tzipnum\t0\t275\t1";
        let b = Block::parse(line, 1).unwrap();
        assert_eq!(b.shard, "zipnum");
        assert_eq!((b.offset, b.length, b.block_no), (0, 275, 1));
        assert_eq!(b.to_line(), line);
        assert!(Block::parse(b"k\tshard\tx\t1\t1", 3).is_err());
    }
}
