//! Record reader over plain, per-record gzip and per-record zstd WARC files.
//!
//! # Model
//!
//! A file is a sequence of *units*, each a gzip member (`1f 8b 08`), a
//! zstd frame (`28 b5 2f fd`), a zstd skippable frame (`5? 2a 4d 18`) or a
//! plain record (`WARC/1.x` and its header). The kind is decided unit by
//! unit from the first bytes, so `.warc`, `.warc.gz`, `.warc.zst` and
//! damaged mixtures go through one path. Whitespace between units (the two
//! CRLFs that end a record, stray blank lines) is skipped silently.
//!
//! * A gzip member or zstd frame is decoded on its own, over the reader's
//!   buffer, which it consumes exactly: the member's offset and compressed
//!   length are the record's `offset` and `length`. It must hold one
//!   record; trailing whitespace is separator.
//! * A plain record's `length` is its header and `Content-Length` block,
//!   the two CRLFs after it excluded, as warcio and cdxj-indexer report it.
//! * The IIPC zstd profile opens the file with a skippable frame
//!   (`0x184D2A5D`) that holds the dictionary of every later frame, itself
//!   raw or zstd-compressed: it is loaded once and used for every frame.
//!   Other skippable frames are passed over.
//!
//! # Damage
//!
//! `Content-Length` is the only truth of where a record ends. It is
//! trusted when the bytes after the block are a record boundary
//! (whitespace, then a record, a member, a frame or the end of the file).
//! When they are not, the reader works out where the record really ends,
//! reports it with a non-fatal [`Error`] and goes on:
//!
//! * a record start inside the block, or a version line that straddles its
//!   end: the length was too long; the block is cut there and the rest is
//!   read again ([`Error::LengthMismatch`]);
//! * else the record ends where its length says, as warcio reads it, and
//!   what follows (junk, or block bytes the length did not count) is
//!   skipped to the next record ([`Error::Garbage`]).
//!
//! Without a usable `Content-Length` the block runs to the next record
//! ([`Error::InvalidLength`]). A member or frame that fails to decode is
//! skipped to the next record ([`Error::BadMember`]); one that ends with the
//! file gives a [`Record::truncated`] record ([`Error::TruncatedMember`]); one
//! that holds several records gives none ([`Error::MultiRecordMember`]).
//! When the file's first unit holds several records, the file was
//! compressed as one stream: its records are read from the decompressed
//! stream, with offsets in it, and the file is reported once
//! ([`Error::SingleStream`]). A record start is a version line followed by
//! a field line ([`header::looks_like_record`]), or a member or frame that
//! decodes to one, so a `WARC/1.0` mentioned in a payload is not taken for
//! a record.
//!
//! # Cost
//!
//! One buffer of `Options::buffer_size` (1 MiB) plus the largest record
//! block; the caller's [`Record`] buffers are reused, one zstd context
//! serves every frame of a file, and a reader over shared bytes lends
//! plain blocks without copying them.

use std::io::{self, BufRead, Read};

use flate2::bufread::{GzDecoder, MultiGzDecoder};
use zstd::stream::raw::{Decoder as ZDecoder, InBuffer, Operation, OutBuffer};

use super::header::{self, is_warc_magic, looks_like_record, version_prefix_ok, Parsed};
use super::{Compression, Error, Record};
use crate::input::{is_gzip_start, is_ws, Input, SharedBlock, Src};
use crate::reader::{Format, Step};
pub use crate::reader::{Options, Stats};

/// Longest header block looked for.
const MAX_HEAD: usize = 1 << 20;

/// Bytes looked at past a candidate record start to judge it.
const PEEK: usize = 2048;

/// Longest version line looked for across the end of a block.
const VERSION_LINE: usize = 32;

/// Decoded bytes of a member between two looks for a second record.
const DECODE_STEP: usize = 256 << 10;

/// How far past a second record a file's first member is decoded to see
/// whether it ends (then more members may follow: one bad member) or goes
/// on (the file is one stream). Well within what a mark keeps.
const MULTI_LOOK: u64 = 4 << 20;

/// Largest zstd dictionary read (zstd's own trainer makes 110 KB ones).
const MAX_DICT: usize = 16 << 20;

/// Magic of the skippable frame that holds the IIPC profile's dictionary.
const DICT_FRAME: u32 = 0x184D_2A5D;

/// How a unit is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Codec {
    Gzip,
    Zstd,
}

impl Codec {
    fn what(self) -> &'static str {
        match self {
            Codec::Gzip => "gzip member",
            Codec::Zstd => "zstd frame",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Codec::Gzip => "gzip",
            Codec::Zstd => "zstd",
        }
    }
}

/// Why decoding a member stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    End,
    /// The file's first member holds a second record and goes on past
    /// `MULTI_LOOK` (or fails to decode before it ends).
    Multi,
    /// The file's first member holds a second record and ends within
    /// `MULTI_LOOK`.
    MultiEnded,
    TooLarge,
}

/// Reads WARC records with exact offsets from any `Read` (give it the raw
/// file, not a decompressing reader: gzip and zstd are handled here,
/// record by record).
///
/// ```no_run
/// # fn main() -> std::io::Result<()> {
/// use ukvs::warc::{Reader, Record};
/// let file = std::fs::File::open("x.warc.gz")?;
/// let mut rdr = Reader::new(file);
/// let mut rec = Record::default();
/// loop {
///     match rdr.read_record(&mut rec) {
///         Ok(true) => println!("{} {} {:?}", rec.offset, rec.length, rec.record_type()),
///         Ok(false) => break,
///         Err(e) if e.is_fatal() => { eprintln!("x.warc.gz: {e}"); break }
///         Err(e) => eprintln!("x.warc.gz: {e}"), // reported, reading goes on
///     }
/// }
/// # Ok(()) }
/// ```
pub type Reader<R> = crate::reader::Reader<R, WarcState>;

/// What the WARC format keeps besides the reader's [`Core`].
#[derive(Default)]
pub struct WarcState {
    /// Whether the file's first unit was compressed (unknown before it).
    compressed_file: Option<bool>,
    /// Units read so far (skippable frames aside).
    units: u64,
    /// The zstd context, with the file's dictionary once one is read.
    zstd: Option<ZDecoder<'static>>,
    dict: Option<Vec<u8>>,
    /// Where the run of empty members just read started.
    empty_from: Option<u64>,
}

impl Format for WarcState {
    type Record = Record;
    type Error = Error;

    const LOOK: usize = 8;

    fn step<R: Read>(step: &mut Step<'_, R, WarcState>, rec: &mut Record) -> io::Result<bool> {
        let a = step.core.src.avail();
        if is_skippable_start(a) {
            return step.read_skippable();
        }
        let codec = if is_gzip_start(a) {
            Some(Codec::Gzip)
        } else if is_zstd_start(a) {
            Some(Codec::Zstd)
        } else {
            None
        };
        let compressed = *step.st.compressed_file.get_or_insert(codec.is_some());
        step.st.units += 1;
        if let Some(codec) = codec {
            return step.read_member(rec, codec);
        }
        step.st.empty_from = None;
        let got = step.read_plain(rec)?;
        step.core
            .plain_in_compressed(got, compressed, || Error::UncompressedRecord {
                offset: rec.offset,
                length: rec.length,
            });
        Ok(got)
    }
}

impl<R: Read> Step<'_, R, WarcState> {
    // ----------------------------------------------------------------
    // zstd skippable frames

    /// A skippable frame: the dictionary when it opens the file, else
    /// passed over.
    fn read_skippable(&mut self) -> io::Result<bool> {
        let start = self.core.src.pos();
        let a = self.core.src.avail();
        if a.len() < 8 {
            let n = a.len();
            self.core.src.consume(n);
            self.core.stats.skipped_bytes += n as u64;
            self.core.pending.push_back(Error::Garbage {
                offset: start,
                length: n as u64,
            });
            return Ok(false);
        }
        let magic = u32::from_le_bytes([a[0], a[1], a[2], a[3]]);
        let size = u64::from(u32::from_le_bytes([a[4], a[5], a[6], a[7]]));
        self.core.src.consume(8);
        if magic == DICT_FRAME && self.st.units == 0 && self.st.dict.is_none() {
            if size > MAX_DICT as u64 {
                let got = self.core.src.discard(size)?;
                self.core.stats.skipped_bytes += 8 + got;
                self.core.pending.push_back(Error::BadDictionary {
                    offset: start,
                    reason: format!("{size} bytes, more than the {MAX_DICT}-byte limit"),
                });
                return Ok(false);
            }
            let mut dict = Vec::new();
            let got = self.core.src.read_block(&mut dict, size)?;
            self.core.stats.separator_bytes += 8 + got;
            if got < size {
                self.core.pending.push_back(Error::BadDictionary {
                    offset: start,
                    reason: format!("the file ends {got} bytes into its {size} bytes"),
                });
                return Ok(false);
            }
            if is_zstd_start(&dict) {
                match zstd::bulk::decompress(&dict, MAX_DICT) {
                    Ok(d) => dict = d,
                    Err(e) => {
                        self.core.pending.push_back(Error::BadDictionary {
                            offset: start,
                            reason: format!("cannot decompress it: {e}"),
                        });
                        return Ok(false);
                    }
                }
            }
            match ZDecoder::with_dictionary(&dict) {
                Ok(d) => {
                    self.st.zstd = Some(d);
                    self.st.dict = Some(dict);
                }
                Err(e) => self.core.pending.push_back(Error::BadDictionary {
                    offset: start,
                    reason: e.to_string(),
                }),
            }
            return Ok(false);
        }
        let got = self.core.src.discard(size)?;
        self.core.stats.separator_bytes += 8 + got;
        Ok(false)
    }

    // ----------------------------------------------------------------
    // gzip members and zstd frames

    fn read_member(&mut self, rec: &mut Record, codec: Codec) -> io::Result<bool> {
        let start = self.core.src.pos();
        // Keep the compressed bytes: a corrupt member is re-scanned from
        // just after its start, and a single-stream file is read again
        // from its start through a decompressor.
        self.core.src.set_mark();
        let first_unit = self.st.units == 1;
        let limit = self.core.opts.max_block.saturating_add(MAX_HEAD as u64);
        let res = match codec {
            Codec::Gzip => self.inflate(rec, limit, first_unit),
            Codec::Zstd => self.unzstd(rec, limit, first_unit),
        };
        self.core.stats.members += 1;
        let end = self.core.src.pos();
        let what = codec.what();
        let stop = match res {
            Ok(stop) => stop,
            Err(e) => {
                // Errors of the underlying reader are I/O failures, not
                // damage, and end the read.
                if self.core.src.failed() {
                    return Err(e);
                }
                // The member decoded to its end and only its check value
                // disagrees: the record is kept, and reported (rescanning
                // would find record starts inside stored deflate blocks).
                if e.to_string().contains("checksum") && !rec.buf.is_empty() {
                    self.core.src.clear_mark();
                    let length = end - start;
                    self.core.pending.push_back(Error::BadChecksum {
                        offset: start,
                        length,
                        what,
                    });
                    return Ok(self.split_member(rec, start, length, codec, false));
                }
                if self.core.src.at_eof() {
                    self.core.src.clear_mark();
                    let length = end - start;
                    self.core.pending.push_back(Error::TruncatedMember {
                        offset: start,
                        length,
                        what,
                    });
                    let got = self.split_member(rec, start, length, codec, true);
                    rec.truncated = got;
                    return Ok(got);
                }
                self.core.rescan_after(start, rec);
                self.scan(None)?;
                return Ok(self.core.skipped(start, 0, |length| Error::BadMember {
                    offset: start,
                    length,
                    what,
                    reason: e.to_string(),
                }));
            }
        };
        let length = end - start;
        if matches!(stop, Stop::Multi | Stop::MultiEnded) {
            rec.clear();
            // A member that holds two records and ends, with more of the
            // file after it: one bad member in a file of one record per
            // member. Else the file is one compressed stream.
            if stop == Stop::MultiEnded && !self.core.at_end_after_ws(MAX_HEAD)? {
                self.core.src.clear_mark();
                self.multi_member(rec, start, length, what);
                return Ok(false);
            }
            if self.core.src.rewind(start) {
                self.core.src.clear_mark();
                self.decompress_rest(codec)?;
                self.core.pending.push_back(Error::SingleStream {
                    offset: start,
                    what: codec.name(),
                });
                return Ok(false);
            }
            // Too far into the stream to read it again (its first record
            // is larger than the bytes kept behind a mark).
            self.core.src.clear_mark();
            self.core.src.discard(u64::MAX)?;
            return Ok(self
                .core
                .skipped(start, 1, |length| Error::SingleStreamUnread {
                    offset: start,
                    length,
                    what: codec.name(),
                }));
        }
        self.core.src.clear_mark();
        if stop == Stop::TooLarge {
            rec.clear();
            let max = self.core.opts.max_block;
            return Ok(self.core.skipped(start, 1, |_| Error::RecordTooLarge {
                offset: start,
                declared: limit,
                limit: max,
            }));
        }
        if rec.buf.is_empty() {
            self.core.stats.separator_bytes += length;
            self.st.empty_from.get_or_insert(start);
            // An empty member is no unit: the next one may be the first.
            self.st.units -= 1;
            return Ok(false);
        }
        let got = self.split_member(rec, start, length, codec, false);
        if let Some(from) = self.st.empty_from.take() {
            rec.empty_lead = start - from;
        }
        Ok(got)
    }

    /// Decodes one gzip member into `rec.buf`.
    fn inflate(&mut self, rec: &mut Record, limit: u64, first_unit: bool) -> io::Result<Stop> {
        // A member held whole by the buffer (all of them, in a mapped
        // file) is decoded in one call. The file's first member is left
        // to the loop below, which looks for a second record in it; so is
        // any member that call does not take (damage, a member running
        // past the buffer, `limit` bytes or more), which the loop then
        // reports as it always has.
        if !first_unit {
            let max = usize::try_from(limit)
                .unwrap_or(usize::MAX)
                .saturating_sub(1);
            if let Some(n) = crate::input::member::member(self.core.src.avail(), &mut rec.buf, max)
            {
                self.core.src.consume(n);
                return Ok(Stop::End);
            }
        }
        let mut dec = GzDecoder::new(&mut self.core.src);
        let mut look = SecondLook::default();
        loop {
            let want = (limit.saturating_sub(rec.buf.len() as u64)).min(DECODE_STEP as u64);
            if want == 0 {
                io::copy(&mut dec, &mut io::sink())?;
                return Ok(Stop::TooLarge);
            }
            match (&mut dec).take(want).read_to_end(&mut rec.buf)? {
                0 => return Ok(Stop::End),
                _ if first_unit && look.found(&rec.buf) => break,
                _ => {}
            }
        }
        // Two records in the file's first member: decoded on (not kept) to
        // see whether the member ends soon with more members after it.
        let start = dec.get_ref().pos();
        let mut scratch = vec![0; 64 << 10];
        loop {
            if dec.get_ref().pos().saturating_sub(start) > MULTI_LOOK {
                return Ok(Stop::Multi);
            }
            match dec.read(&mut scratch) {
                Ok(0) => return Ok(Stop::MultiEnded),
                Ok(_) => {}
                Err(_) => return Ok(Stop::Multi),
            }
        }
    }

    /// Decodes one zstd frame into `rec.buf`, with one context for the
    /// whole file (its dictionary loaded once).
    fn unzstd(&mut self, rec: &mut Record, limit: u64, first_unit: bool) -> io::Result<Stop> {
        if self.st.zstd.is_none() {
            self.st.zstd = Some(ZDecoder::new()?);
        }
        let Some(dctx) = self.st.zstd.as_mut() else {
            unreachable!("set above")
        };
        dctx.reinit()?;
        let mut too_large = false;
        let mut look = SecondLook::default();
        loop {
            if rec.buf.len() as u64 >= limit {
                // Decoded on only to find where the frame ends.
                too_large = true;
                rec.buf.clear();
            }
            rec.buf.reserve(DECODE_STEP);
            let input = self.core.src.fill_buf()?;
            if input.is_empty() {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let mut inb = InBuffer::around(input);
            let pos = rec.buf.len();
            let mut out = OutBuffer::around_pos(&mut rec.buf, pos);
            let hint = dctx.run(&mut inb, &mut out)?;
            let used = inb.pos();
            self.core.src.consume(used);
            if hint == 0 {
                let multi = first_unit && !too_large && look.found(&rec.buf);
                return Ok(match (multi, too_large) {
                    (true, _) => Stop::MultiEnded,
                    (_, true) => Stop::TooLarge,
                    _ => Stop::End,
                });
            }
            if first_unit && !too_large && look.found(&rec.buf) {
                break;
            }
        }
        // As for gzip: decoded on to see whether the frame ends soon.
        let start = self.core.src.pos();
        let mut scratch: Vec<u8> = Vec::with_capacity(64 << 10);
        loop {
            if self.core.src.pos().saturating_sub(start) > MULTI_LOOK {
                return Ok(Stop::Multi);
            }
            let input = self.core.src.fill_buf()?;
            if input.is_empty() {
                return Ok(Stop::Multi);
            }
            scratch.clear();
            let mut inb = InBuffer::around(input);
            let mut out = OutBuffer::around(&mut scratch);
            let Ok(hint) = dctx.run(&mut inb, &mut out) else {
                return Ok(Stop::Multi);
            };
            let used = inb.pos();
            self.core.src.consume(used);
            if hint == 0 {
                return Ok(Stop::MultiEnded);
            }
        }
    }

    /// From here on, reads the rest of the file through a decompressor:
    /// the file is one compressed stream.
    fn decompress_rest(&mut self, codec: Codec) -> io::Result<()> {
        let old = std::mem::replace(&mut self.core.src, Src::new(Input::Gone, 64));
        let input = match codec {
            Codec::Gzip => Input::Gunzip(Box::new(MultiGzDecoder::new(old))),
            Codec::Zstd => Input::Unzstd(Box::new(match &self.st.dict {
                Some(d) => zstd::stream::read::Decoder::with_dictionary(old, d)?,
                None => zstd::stream::read::Decoder::with_buffer(old)?,
            })),
        };
        self.core.src = Src::new(input, self.core.opts.buffer_size);
        self.st.compressed_file = Some(false);
        self.core.stats.single_stream = true;
        Ok(())
    }

    /// Splits the decoded member in `rec.buf` into header and block.
    /// Returns false (with an error pending) when it is not one record.
    ///
    /// The member is authoritative for where the record ends (it is what a
    /// replay tool seeks to), so `Content-Length` only decides how much of
    /// it is block: trailing whitespace is separator, a second record makes
    /// the member refused as a whole, anything else belongs to the block.
    fn split_member(
        &mut self,
        rec: &mut Record,
        offset: u64,
        length: u64,
        codec: Codec,
        truncated: bool,
    ) -> bool {
        let what = codec.what();
        let hlen = match header::parse(&rec.buf, &mut rec.head) {
            Parsed::Complete(n) => n,
            _ => {
                rec.clear();
                self.core.stats.skipped_bytes += length;
                self.core.stats.skipped_records += u64::from(truncated);
                if !truncated {
                    self.core.pending.push_back(Error::NotARecord {
                        offset,
                        length,
                        what,
                    });
                }
                return false;
            }
        };
        let data = &rec.buf;
        let total = data.len();
        let declared = content_length(rec.head.get("Content-Length"));
        // Looked for only when the member is not one clean record.
        let multi = || find_record(data, hlen).is_some();
        let block_end = match declared {
            Some(l) if (hlen as u64).saturating_add(l) <= total as u64 => {
                let e = hlen + l as usize;
                match data[e..].iter().position(|&b| !is_ws(b)) {
                    None => e,
                    Some(k) => {
                        if is_warc_magic(&data[e + k..]) || multi() {
                            return self.multi_member(rec, offset, length, what);
                        }
                        let actual = strip_separator(data).len().max(hlen);
                        if !truncated {
                            self.core.pending.push_back(Error::LengthMismatch {
                                offset,
                                declared: l,
                                actual: (actual - hlen) as u64,
                            });
                        }
                        actual
                    }
                }
            }
            Some(l) => {
                if multi() {
                    return self.multi_member(rec, offset, length, what);
                }
                // The member ends first: all of it is block (a request's
                // block may end with a blank line of its own).
                if !truncated {
                    self.core.pending.push_back(Error::LengthMismatch {
                        offset,
                        declared: l,
                        actual: (total - hlen) as u64,
                    });
                }
                total
            }
            None => {
                if multi() {
                    return self.multi_member(rec, offset, length, what);
                }
                let actual = strip_separator(data).len().max(hlen);
                self.core.pending.push_back(Error::InvalidLength {
                    offset,
                    declared: declared_text(&rec.head),
                    actual: (actual - hlen) as u64,
                });
                actual
            }
        };
        // The block stays where it was decoded, after the header.
        rec.buf.truncate(block_end);
        rec.buf_start = hlen;
        rec.offset = offset;
        rec.length = length;
        rec.compression = match codec {
            Codec::Gzip => Compression::Gzip,
            Codec::Zstd => Compression::Zstd,
        };
        true
    }

    fn multi_member(
        &mut self,
        rec: &mut Record,
        offset: u64,
        length: u64,
        what: &'static str,
    ) -> bool {
        rec.clear();
        self.core.stats.skipped_bytes += length;
        self.core.stats.skipped_records += 1;
        self.core.pending.push_back(Error::MultiRecordMember {
            offset,
            length,
            what,
        });
        false
    }

    // ----------------------------------------------------------------
    // plain records

    /// Reads a plain record at the current position, or skips what is not
    /// one.
    fn read_plain(&mut self, rec: &mut Record) -> io::Result<bool> {
        let start = self.core.src.pos();
        // The header block: lines up to an empty one.
        let mut at = 0;
        loop {
            match self.core.src.peek_line_at(at, MAX_HEAD - at)? {
                Some(n) => {
                    let line = &self.core.src.avail()[at..at + n];
                    if at == 0 && header::version_of(line.trim_ascii_end()).is_none() {
                        return self.skip_garbage();
                    }
                    at += n;
                    if line.trim_ascii().is_empty() {
                        break;
                    }
                }
                None => {
                    let have = self.core.src.avail().len();
                    if have >= MAX_HEAD && at > 0 {
                        // A record's header that goes on past the limit:
                        // the record is lost, reading resumes at the next.
                        self.core.stats.skipped_records += 1;
                        self.core.pending.push_back(Error::HeaderTooLong {
                            offset: start,
                            limit: MAX_HEAD as u64,
                        });
                        return self.skip_garbage();
                    }
                    if self.core.src.fill(have + 1)? > have {
                        // No line end within the limit: not a header.
                        return self.skip_garbage();
                    }
                    if at == 0 && !version_prefix_ok(self.core.src.avail()) {
                        return self.skip_garbage();
                    }
                    // The file ends inside the header.
                    self.core.src.consume(have);
                    self.core.stats.skipped_bytes += have as u64;
                    self.core.stats.skipped_records += 1;
                    self.core.pending.push_back(Error::TruncatedHeader {
                        offset: start,
                        length: have as u64,
                    });
                    return Ok(false);
                }
            }
        }
        let parsed = header::parse(&self.core.src.avail()[..at], &mut rec.head);
        debug_assert_eq!(parsed, Parsed::Complete(at));
        self.core.src.consume(at);
        rec.offset = start;
        let block_start = self.core.src.pos();
        let Some(declared) = content_length(rec.head.get("Content-Length")) else {
            self.block_to_next_record(rec)?;
            self.core.pending.push_back(Error::InvalidLength {
                offset: start,
                declared: declared_text(&rec.head),
                actual: rec.block().len() as u64,
            });
            rec.length = block_start - start + rec.block().len() as u64;
            return Ok(true);
        };
        if declared > self.core.opts.max_block {
            let got = self.core.src.discard(declared)?;
            self.core.stats.skipped_bytes += at as u64 + got;
            self.core.stats.skipped_records += 1;
            rec.clear();
            self.core.pending.push_back(Error::RecordTooLarge {
                offset: start,
                declared,
                limit: self.core.opts.max_block,
            });
            return Ok(false);
        }
        let got = match self.core.src.take_shared(declared) {
            Some((bytes, s, e)) => {
                rec.shared = Some(SharedBlock {
                    bytes,
                    start: s,
                    end: e,
                });
                declared
            }
            None => self.core.src.read_block(&mut rec.buf, declared)?,
        };
        rec.length = self.core.src.pos() - start;
        if got < declared {
            rec.truncated = true;
            self.core.pending.push_back(Error::Truncated {
                offset: start,
                declared,
                actual: got,
            });
            return Ok(true);
        }
        if self.at_boundary()? {
            return Ok(true);
        }
        // The length disagrees with what follows: see the module docs.
        let inside = match find_record(rec.block(), 0) {
            Some(k) => Some(k),
            None => self.record_across_end(rec.block())?,
        };
        if let Some(k) = inside {
            let keep = strip_separator(&rec.block()[..k]).len();
            self.give_back(rec, k, block_start);
            truncate_block(rec, keep);
            rec.length = block_start - start + keep as u64;
            self.core.pending.push_back(Error::LengthMismatch {
                offset: start,
                declared,
                actual: keep as u64,
            });
            return Ok(true);
        }
        // Else the record ends where its length says (the bytes after it
        // are junk, or a block longer than declared): the next step skips
        // them to the next record and reports them.
        Ok(true)
    }

    /// Extends the block (from what it holds now) up to the next record
    /// start, without the separator before it.
    fn block_to_next_record(&mut self, rec: &mut Record) -> io::Result<()> {
        if let Some(s) = rec.shared.take() {
            rec.buf.clear();
            rec.buf.extend_from_slice(s.as_slice());
        }
        self.scan(Some(&mut rec.buf))?;
        let keep = strip_separator(&rec.buf).len();
        rec.buf.truncate(keep);
        Ok(())
    }

    /// Where a record starts in the last line of `block` when that line
    /// runs on past the block's end into the input: a `Content-Length` a
    /// few bytes too long ends inside the next record's version line.
    fn record_across_end(&mut self, block: &[u8]) -> io::Result<Option<usize>> {
        let last = memchr::memrchr(b'\n', block).map_or(0, |i| i + 1);
        let tail = &block[last..];
        if tail.is_empty() || tail.len() >= VERSION_LINE || !version_prefix_ok(tail) {
            return Ok(None);
        }
        self.core.src.fill(PEEK)?;
        let mut line = Vec::with_capacity(tail.len() + PEEK);
        line.extend_from_slice(tail);
        let a = self.core.src.avail();
        line.extend_from_slice(&a[..a.len().min(PEEK)]);
        Ok(looks_like_record(&line).then_some(last))
    }

    /// Returns the block's bytes from `k` on to the input.
    fn give_back(&mut self, rec: &mut Record, k: usize, block_start: u64) {
        match &mut rec.shared {
            Some(s) => {
                s.end = s.start + k;
                self.core.src.rewind(block_start + k as u64);
            }
            None => {
                self.core.src.unread(&rec.buf[k..]);
                rec.buf.truncate(k);
            }
        }
    }

    /// Junk at the current position: skipped to the next record.
    fn skip_garbage(&mut self) -> io::Result<bool> {
        let start = self.core.src.pos();
        // The current position is known not to start a record.
        self.core.src.consume(1);
        self.scan(None)?;
        Ok(self.core.skipped(start, 0, |length| Error::Garbage {
            offset: start,
            length,
        }))
    }

    /// Whether the current position is a record boundary: whitespace, then
    /// the end of the file, a member, a frame or a record. Consumes nothing.
    fn at_boundary(&mut self) -> io::Result<bool> {
        let i = self.core.src.ws_ahead(MAX_HEAD)?;
        if i > MAX_HEAD || self.core.src.fill(i + 1)? <= i {
            return Ok(true);
        }
        self.core.src.fill(i + PEEK)?;
        let a = &self.core.src.avail()[i..];
        Ok(is_gzip_start(a) || is_zstd_start(a) || is_skippable_start(a) || looks_like_record(a))
    }

    /// Moves forward to the next record start (a record, or a member or
    /// frame that decodes to one), or to the end of the file. The current
    /// position counts. Bytes passed over are appended to `sink` (up to
    /// the block limit) when given.
    fn scan(&mut self, mut sink: Option<&mut Vec<u8>>) -> io::Result<()> {
        // A version line is found at its `/`, whatever the case of `WARC`
        // before it, so the 4 bytes before `i` are kept when passing on.
        let mut i = 0usize;
        loop {
            if i > PEEK {
                self.core
                    .src
                    .pass(i - 4, &mut sink, self.core.opts.max_block);
                i = 4;
            }
            let n = self.core.src.fill(i + 1)?;
            if n <= i {
                self.core.src.pass(n, &mut sink, self.core.opts.max_block);
                return Ok(());
            }
            let a = self.core.src.avail();
            let Some(j) = memchr::memchr3(b'/', 0x1f, 0x28, &a[i..]) else {
                i = a.len();
                continue;
            };
            let p = i + j;
            i = p + 1;
            let h = match a[p] {
                b'/' if p >= 4 && is_warc_magic(&a[p - 4..]) => p - 4,
                b'/' => continue,
                _ => p,
            };
            if self.record_starts_at(h)? {
                self.core.src.pass(h, &mut sink, self.core.opts.max_block);
                return Ok(());
            }
        }
    }

    /// Whether a record, or a member or frame holding one, starts `h`
    /// bytes ahead.
    fn record_starts_at(&mut self, h: usize) -> io::Result<bool> {
        self.core.src.fill(h + PEEK)?;
        let a = &self.core.src.avail()[h..];
        if is_gzip_start(a) {
            let mut head = [0u8; 8];
            let mut dec = GzDecoder::new(a);
            let n = read_up_to(&mut dec, &mut head);
            return Ok(is_warc_magic(&head[..n]));
        }
        if is_zstd_start(a) {
            if self.st.zstd.is_none() {
                self.st.zstd = Some(ZDecoder::new()?);
            }
            let Some(dctx) = self.st.zstd.as_mut() else {
                unreachable!("set above")
            };
            dctx.reinit()?;
            let mut head = [0u8; 8];
            let mut out = OutBuffer::around(&mut head[..]);
            let mut inb = InBuffer::around(a);
            let ok = dctx.run(&mut inb, &mut out).is_ok();
            let n = out.pos();
            return Ok(ok && is_warc_magic(&head[..n]));
        }
        Ok(looks_like_record(a))
    }
}

/// Reads into `buf` until it is full or the reader stops.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}

/// The magic of a zstd frame.
pub(crate) fn is_zstd_start(b: &[u8]) -> bool {
    b.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
}

/// The magic of a zstd skippable frame (`0x184D2A50` to `0x184D2A5F`).
pub(crate) fn is_skippable_start(b: &[u8]) -> bool {
    b.len() >= 4 && b[0] & 0xf0 == 0x50 && b[1..4] == [0x2a, 0x4d, 0x18]
}

/// `Content-Length` as a number.
fn content_length(v: Option<&[u8]>) -> Option<u64> {
    let v = v?;
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

fn declared_text(head: &header::Head) -> String {
    head.get("Content-Length").map_or_else(
        || "(none)".to_string(),
        |v| String::from_utf8_lossy(v).into_owned(),
    )
}

/// Without the two line ends that close a record.
fn strip_separator(b: &[u8]) -> &[u8] {
    b.strip_suffix(b"\r\n\r\n")
        .or_else(|| b.strip_suffix(b"\n\n"))
        .unwrap_or(b)
}

fn truncate_block(rec: &mut Record, n: usize) {
    match &mut rec.shared {
        Some(s) => s.end = s.start + n,
        None => rec.buf.truncate(n),
    }
}

/// Where `WARC/` (any case) starts in `data`.
fn warc_magics(data: &[u8]) -> impl Iterator<Item = usize> + '_ {
    memchr::memchr2_iter(b'W', b'w', data).filter(move |&k| is_warc_magic(&data[k..]))
}

/// Where a record starts in `data` at or after `from`, at a line start
/// (or at `from` itself).
fn find_record(data: &[u8], from: usize) -> Option<usize> {
    warc_magics(data.get(from..)?)
        .map(|k| from + k)
        .find(|&k| (k == from || data[k - 1] == b'\n') && looks_like_record(&data[k..]))
}

/// Looks, while a file's first member is decoded, for a second record
/// after the first (the file is then one compressed stream). Each call
/// looks only at what was decoded since the last, so the cost is linear
/// in the member.
#[derive(Default)]
struct SecondLook {
    /// The first record's header length and declared length, once read.
    head: Option<(usize, Option<u64>)>,
    /// Decoded bytes already looked at.
    searched: usize,
    /// No header in the first bytes: nothing to find.
    given_up: bool,
}

impl SecondLook {
    fn found(&mut self, data: &[u8]) -> bool {
        if self.given_up {
            return false;
        }
        let (hlen, declared) = match self.head {
            Some(h) => h,
            None => {
                let mut head = header::Head::default();
                match header::parse(&data[..data.len().min(MAX_HEAD)], &mut head) {
                    Parsed::Complete(n) => {
                        let h = (n, content_length(head.get("Content-Length")));
                        self.head = Some(h);
                        self.searched = n;
                        h
                    }
                    Parsed::Incomplete if data.len() < MAX_HEAD => return false,
                    _ => {
                        self.given_up = true;
                        return false;
                    }
                }
            }
        };
        let from = match declared {
            // The next record starts right after the block and its
            // separator.
            Some(l) => {
                let Ok(e) = usize::try_from((hlen as u64).saturating_add(l)) else {
                    return false;
                };
                let from = e.max(self.searched);
                if from >= data.len() {
                    return false;
                }
                match data[from..].iter().position(|&b| !is_ws(b)) {
                    None => {
                        self.searched = data.len();
                        return false;
                    }
                    Some(k) => {
                        let rest = &data[from + k..];
                        if rest.len() < 16 {
                            // Too little decoded to tell yet.
                            return false;
                        }
                        self.given_up = true;
                        return looks_like_record(rest);
                    }
                }
            }
            None => self.searched,
        };
        // No length: any record start at a line start after the header.
        let start = from.saturating_sub(6).max(hlen.saturating_sub(1));
        let found = warc_magics(&data[start..])
            .map(|k| start + k)
            .any(|k| k > start && data[k - 1] == b'\n' && looks_like_record(&data[k..]));
        // The last bytes may hold the start of a record still cut.
        self.searched = data.len().saturating_sub(FIELD_LOOK_BACK).max(from);
        found
    }
}

/// Bytes looked at again after each step, for a record start that was cut
/// by the end of what was decoded.
const FIELD_LOOK_BACK: usize = 2048;

#[cfg(test)]
mod tests;
