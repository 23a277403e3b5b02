//! The archive readers' input: a buffer with exact file offsets, and the
//! bytes a record's block may be lent from.
//!
//! The ARC and WARC readers need three things a plain `BufReader` does not give:
//! the exact file offset of every byte (offsets of records and gzip
//! members), lookahead of a whole header line at any point, and going back
//! (to re-scan the bytes of a gzip member that failed to decode, or to
//! return the tail of a block that turned out to hold the next record).
//! `Src` is a growable buffer over any `Read` with a position counter, a
//! *mark* that keeps bytes from being discarded so that they can be
//! re-read, and `unread` to push bytes back.
//!
//! It implements `BufRead`, so `flate2::bufread::GzDecoder` reads from it
//! directly and consumes exactly the bytes of one member: after the
//! decoder is done, `pos()` is the end of that member.
//!
//! A `Src` can also stand over bytes that are all in memory already (a
//! memory-mapped file, see [`Src::shared`]): nothing is read or copied
//! then, every byte stays available, and [`Src::take_shared`] hands out a
//! record's block as a range of those bytes instead of a copy.

use std::io::{self, BufRead, Read};
use std::sync::Arc;

use flate2::bufread::MultiGzDecoder;

pub(crate) mod member;

/// An input held whole in memory and shared by the records read from it
/// (a memory-mapped file, or any bytes): see `arc::Reader::from_shared`
/// and `warc::Reader::from_shared`.
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A record's block lent by a shared input: `bytes[start..end]`.
#[derive(Clone)]
pub(crate) struct SharedBlock {
    pub(crate) bytes: SharedBytes,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl SharedBlock {
    pub(crate) fn as_slice(&self) -> &[u8] {
        &(*self.bytes).as_ref()[self.start..self.end]
    }
}

impl std::fmt::Debug for SharedBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedBlock({}..{})", self.start, self.end)
    }
}

/// `1f 8b 08` with no reserved flag bits set: the start of a gzip member.
pub(crate) fn is_gzip_start(b: &[u8]) -> bool {
    b.len() >= 3
        && b[0] == 0x1f
        && b[1] == 0x8b
        && b[2] == 8
        && b.get(3).map_or(true, |f| f & 0xe0 == 0)
}

/// The bytes writers put between records (LF, CRLF, blank lines).
pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b'\n' | b'\r' | b' ' | b'\t' | 0x0b | 0x0c)
}

/// Bytes kept behind a mark at most; past that the mark is dropped (a
/// corrupt member is then re-scanned from where decoding stopped).
const MAX_MARK: usize = 16 << 20;

/// The most a reader reserves ahead for one block before its bytes arrive.
const READ_RESERVE_MAX: u64 = 64 << 20;

/// Reads at least this long bypass the buffer once it is empty.
const DIRECT_READ_MIN: u64 = 64 << 10;

/// What a reader reads: the file, or, once the file turned out to be
/// compressed as one stream (`gzip x.warc`, `gzip x.arc`), that stream
/// decompressed, read through the `Src` that held the file so that the
/// bytes it had buffered are not lost.
pub(crate) enum Input<R> {
    Raw(R),
    Gunzip(Box<MultiGzDecoder<Src<Input<R>>>>),
    Unzstd(Box<zstd::stream::read::Decoder<'static, Src<Input<R>>>>),
    /// In place only while the source is being swapped.
    Gone,
}

impl<R: Read> Read for Input<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Raw(r) => r.read(buf),
            Input::Gunzip(d) => d.read(buf),
            Input::Unzstd(d) => d.read(buf),
            Input::Gone => Ok(0),
        }
    }
}

pub(crate) struct Src<R> {
    inner: R,
    /// The bytes read so far, unless `shared` holds the whole input.
    buf: Vec<u8>,
    /// The whole input, in place of `buf` and `inner`.
    shared: Option<SharedBytes>,
    /// First unconsumed byte in `buf`.
    start: usize,
    /// End of valid data in `buf`.
    end: usize,
    /// File offset of `buf[start]`.
    pos: u64,
    /// The inner reader returned 0.
    eof: bool,
    /// File offset that must stay in the buffer (see `set_mark`).
    mark: Option<u64>,
    /// Usual capacity of `buf`; it grows past it only for lookahead or marks.
    chunk: usize,
    /// The inner reader failed (as opposed to a decoder reading from us).
    failed: bool,
}

impl<R: Read> Src<R> {
    pub(crate) fn new(inner: R, chunk: usize) -> Src<R> {
        let chunk = chunk.max(64);
        Src {
            inner,
            buf: vec![0; chunk],
            shared: None,
            start: 0,
            end: 0,
            pos: 0,
            eof: false,
            mark: None,
            chunk,
            failed: false,
        }
    }

    /// A `Src` over `bytes`, the whole input; `inner` is never read.
    pub(crate) fn shared(inner: R, bytes: SharedBytes) -> Src<R> {
        let end = (*bytes).as_ref().len();
        Src {
            inner,
            buf: Vec::new(),
            shared: Some(bytes),
            start: 0,
            end,
            pos: 0,
            // Set, as for a stream, only once more bytes are asked for than
            // are left: a gzip decoder that has read a member's trailer at
            // the end of the file has not hit the end yet.
            eof: false,
            mark: None,
            chunk: 64,
            failed: false,
        }
    }

    /// The buffered bytes: `buf`, or the whole input when it is shared.
    fn data(&self) -> &[u8] {
        match &self.shared {
            Some(bytes) => (**bytes).as_ref(),
            None => &self.buf,
        }
    }

    /// Consumes the next `n` bytes and returns the input they are part of
    /// with their range in it, when the input is shared and holds `n` more
    /// bytes; else consumes nothing and returns `None` (read them with
    /// `read_to`).
    pub(crate) fn take_shared(&mut self, n: u64) -> Option<(SharedBytes, usize, usize)> {
        let bytes = self.shared.as_ref()?;
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.end - self.start)?;
        let range = (Arc::clone(bytes), self.start, self.start + n);
        self.consume(n);
        Some(range)
    }

    /// File offset of the next unconsumed byte.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// The unconsumed bytes now in the buffer (maybe fewer than the file has).
    pub(crate) fn avail(&self) -> &[u8] {
        &self.data()[self.start..self.end]
    }

    /// Whether reading the inner reader failed: a decoder error seen after
    /// this is an I/O error, not damage.
    pub(crate) fn failed(&self) -> bool {
        self.failed
    }

    /// Whether nothing is left, in the buffer or in the file.
    pub(crate) fn at_eof(&self) -> bool {
        self.eof && self.start == self.end
    }

    /// Marks the current position: bytes from here on are kept (up to
    /// `MAX_MARK`) so that `rewind` can come back to them.
    pub(crate) fn set_mark(&mut self) {
        self.mark = Some(self.pos);
    }

    pub(crate) fn clear_mark(&mut self) {
        self.mark = None;
    }

    /// Goes back to file offset `to` if those bytes are still buffered
    /// (they are when `to` is at or after a live mark). Returns whether it
    /// could.
    pub(crate) fn rewind(&mut self, to: u64) -> bool {
        if to > self.pos {
            return false;
        }
        if self.mark.is_some_and(|m| self.pos - m > MAX_MARK as u64) {
            // A stream drops a mark this far behind when it refills (see
            // `make_room`); neither a stream that has not refilled yet nor
            // shared bytes go back further, so that both always read the
            // same records.
            self.mark = None;
            return false;
        }
        let back = self.pos - to;
        match usize::try_from(back) {
            Ok(back) if back <= self.start => {
                self.start -= back;
                self.pos = to;
                true
            }
            _ => false,
        }
    }

    /// Pushes `data` back in front of the unconsumed bytes; `pos` moves back
    /// by its length. The caller guarantees these are the bytes it just
    /// consumed.
    pub(crate) fn unread(&mut self, data: &[u8]) {
        let n = data.len();
        if self.shared.is_some() {
            // Every byte is still there: only the position moves back.
            debug_assert!(n <= self.start && data == &self.data()[self.start - n..self.start]);
            let n = n.min(self.start);
            self.start -= n;
            self.pos -= n as u64;
            return;
        }
        if n <= self.start {
            self.buf[self.start - n..self.start].copy_from_slice(data);
            self.start -= n;
        } else {
            let mut buf = Vec::with_capacity((n + self.end - self.start).max(self.chunk));
            buf.extend_from_slice(data);
            buf.extend_from_slice(&self.buf[self.start..self.end]);
            self.end = buf.len();
            buf.resize(buf.len().max(self.chunk), 0);
            self.buf = buf;
            self.start = 0;
            self.mark = None;
        }
        self.pos = self.pos.saturating_sub(n as u64);
    }

    pub(crate) fn consume(&mut self, n: usize) {
        let n = n.min(self.end - self.start);
        self.start += n;
        self.pos += n as u64;
    }

    /// Appends the next `n` bytes (fewer at the end of the file) to `out`
    /// and consumes them; returns how many. What the buffer holds is
    /// copied; once it is empty and no mark keeps bytes, the rest of a
    /// large read goes from the inner reader straight into `out`, sparing
    /// the copy through the buffer.
    pub(crate) fn read_to(&mut self, out: &mut Vec<u8>, n: u64) -> io::Result<u64> {
        let mut left = n;
        while left > 0 {
            let have = self.end - self.start;
            if have == 0
                && self.mark.is_none()
                && left >= DIRECT_READ_MIN
                && !self.eof
                && self.shared.is_none()
            {
                let got = match (&mut self.inner).take(left).read_to_end(out) {
                    Ok(got) => got as u64,
                    Err(e) => {
                        self.failed = true;
                        return Err(e);
                    }
                };
                self.pos += got;
                left -= got;
                if left > 0 {
                    self.eof = true;
                }
                break;
            }
            if self.fill(1)? == 0 {
                break;
            }
            let a = self.avail();
            let k = a.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            out.extend_from_slice(&a[..k]);
            self.consume(k);
            left -= k as u64;
        }
        Ok(n - left)
    }

    /// Makes at least `want` unconsumed bytes available, or all that is left
    /// of the file; returns how many are available. Reads in large chunks.
    pub(crate) fn fill(&mut self, want: usize) -> io::Result<usize> {
        if self.shared.is_some() {
            // Every byte is there; asking for more is reaching the end.
            self.eof |= self.end - self.start < want;
            return Ok(self.end - self.start);
        }
        while self.end - self.start < want && !self.eof {
            self.make_room(want)?;
            let n = loop {
                match self.inner.read(&mut self.buf[self.end..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.failed = true;
                        return Err(e);
                    }
                }
            };
            if n == 0 {
                self.eof = true;
            }
            self.end += n;
        }
        Ok(self.end - self.start)
    }

    /// Ensures free space after `end` for at least `want` unconsumed bytes
    /// in total, moving kept bytes to the front or growing the buffer.
    ///
    /// Policy: read into the free tail while it holds at least a quarter
    /// chunk (few, large reads); otherwise slide the kept bytes to the
    /// front (a memmove of at most one chunk, rare); grow only when the
    /// caller needs more lookahead than a chunk, or a mark keeps bytes.
    fn make_room(&mut self, want: usize) -> io::Result<()> {
        // Keep bytes from the mark when it is near enough, else from start.
        let keep_from = match self.mark {
            Some(m) if m <= self.pos && ((self.pos - m) as usize) <= self.start => {
                let back = (self.pos - m) as usize;
                if back > MAX_MARK {
                    self.mark = None;
                    self.start
                } else {
                    self.start - back
                }
            }
            _ => self.start,
        };
        let have = self.end - self.start;
        let need_more = want.saturating_sub(have).max(self.chunk / 4).max(1);
        if self.buf.len() - self.end >= need_more {
            return Ok(());
        }
        if keep_from > 0 {
            self.buf.copy_within(keep_from..self.end, 0);
            self.start -= keep_from;
            self.end -= keep_from;
        }
        // Give back memory grown for one large lookahead or mark.
        if self.buf.len() > 4 * self.chunk && self.end + need_more <= self.chunk {
            self.buf.truncate(self.chunk);
            self.buf.shrink_to_fit();
        }
        if self.buf.len() - self.end < need_more {
            let len = (self.end + need_more).max(self.chunk);
            self.buf.resize(len, 0);
        }
        Ok(())
    }

    /// Consumes the separator bytes ([`is_ws`]) at the current position;
    /// returns how many.
    pub(crate) fn skip_ws(&mut self) -> io::Result<u64> {
        let mut skipped = 0;
        loop {
            let a = self.avail();
            let n = a.iter().take_while(|&&b| is_ws(b)).count();
            let all = n == a.len();
            self.consume(n);
            skipped += n as u64;
            if !all || self.fill(1)? == 0 {
                return Ok(skipped);
            }
        }
    }

    /// How many separator bytes lie ahead of the current position, looking
    /// no further than a little past `max`. Consumes nothing.
    pub(crate) fn ws_ahead(&mut self, max: usize) -> io::Result<usize> {
        let mut i = 0;
        loop {
            let n = self.fill(i + 1)?;
            if n <= i {
                return Ok(i);
            }
            let a = self.avail();
            i += a[i..].iter().take_while(|&&b| is_ws(b)).count();
            if i < a.len() || i > max {
                return Ok(i);
            }
        }
    }

    /// Consumes up to `n` bytes; returns how many there were.
    pub(crate) fn discard(&mut self, n: u64) -> io::Result<u64> {
        let mut left = n;
        while left > 0 {
            let avail = self.fill(1)?;
            if avail == 0 {
                break;
            }
            let k = avail.min(usize::try_from(left).unwrap_or(usize::MAX));
            self.consume(k);
            left -= k as u64;
        }
        Ok(n - left)
    }

    /// Appends up to `n` bytes to `out`, growing it as data arrives: a
    /// declared length (which may be a lie) reserves at most
    /// `READ_RESERVE_MAX` up front. Returns bytes read.
    pub(crate) fn read_block(&mut self, out: &mut Vec<u8>, n: u64) -> io::Result<u64> {
        out.reserve(usize::try_from(n.min(READ_RESERVE_MAX)).unwrap_or(0));
        self.read_to(out, n)
    }

    /// Consumes `n` bytes, appending them to `sink` (when given) as long as
    /// it holds less than `limit`.
    pub(crate) fn pass(&mut self, n: usize, sink: &mut Option<&mut Vec<u8>>, limit: u64) {
        if let Some(out) = sink.as_deref_mut() {
            let room = usize::try_from(limit)
                .unwrap_or(usize::MAX)
                .saturating_sub(out.len());
            let a = self.avail();
            out.extend_from_slice(&a[..n.min(room).min(a.len())]);
        }
        self.consume(n);
    }

    /// Length of the line starting at the current position, LF included,
    /// looking at most `max` bytes ahead; `None` when there is no LF within
    /// `max` bytes or before the end of the file.
    pub(crate) fn peek_line(&mut self, max: usize) -> io::Result<Option<usize>> {
        self.peek_line_at(0, max)
    }

    /// Like `peek_line` for the line starting `at` bytes after the current
    /// position.
    pub(crate) fn peek_line_at(&mut self, at: usize, max: usize) -> io::Result<Option<usize>> {
        let mut searched = 0;
        loop {
            let avail = self.end - self.start;
            let hi = avail.min(at + max);
            if hi > at + searched {
                let from = self.start + at + searched;
                if let Some(i) = memchr::memchr(b'\n', &self.data()[from..self.start + hi]) {
                    return Ok(Some(searched + i + 1));
                }
                searched = hi - at;
            }
            if searched >= max || self.eof {
                return Ok(None);
            }
            self.fill(avail + 1)?;
        }
    }
}

impl<R: Read> Read for Src<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(out.len());
        out[..n].copy_from_slice(&avail[..n]);
        Src::consume(self, n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Src<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.start == self.end {
            self.fill(1)?;
        }
        Ok(self.avail())
    }

    fn consume(&mut self, amt: usize) {
        Src::consume(self, amt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that returns at most `n` bytes per call, to hit every
    /// buffer boundary.
    struct Trickle<'a>(&'a [u8], usize);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(out.len()).min(self.1);
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn peek_line_across_refills() {
        let data = b"abc\ndefghijkl\nxyz";
        let mut s = Src::new(Trickle(data, 3), 64);
        assert_eq!(s.peek_line(100).unwrap(), Some(4));
        s.consume(4);
        assert_eq!(s.pos(), 4);
        assert_eq!(s.peek_line(100).unwrap(), Some(10));
        assert_eq!(s.peek_line(5).unwrap(), None);
        assert_eq!(
            s.peek_line_at(10, 100).unwrap(),
            None,
            "last line has no LF"
        );
        s.consume(10);
        assert_eq!(s.fill(10).unwrap(), 3);
        assert_eq!(s.avail(), b"xyz");
    }

    #[test]
    fn mark_and_rewind_keep_bytes() {
        let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let mut s = Src::new(Trickle(&data, 7), 64);
        s.fill(10).unwrap();
        s.consume(10);
        s.set_mark();
        let mut sink = vec![];
        (&mut s).take(3000).read_to_end(&mut sink).unwrap();
        assert_eq!(s.pos(), 3010);
        assert!(s.rewind(11));
        assert!(s.fill(1).unwrap() > 0);
        assert_eq!(s.avail()[0], 11);
        s.clear_mark();
    }

    #[test]
    fn unread_puts_bytes_back() {
        let mut s = Src::new(&b"0123456789abcdefghij"[..], 64);
        s.fill(10).unwrap();
        s.consume(6);
        s.unread(b"45");
        assert_eq!(s.pos(), 4);
        s.fill(1).unwrap();
        assert_eq!(&s.avail()[..6], b"456789");
        s.consume(8);
        // A large fill compacts the buffer: the consumed bytes are gone and
        // unread has to make room in front.
        s.fill(60).unwrap();
        s.unread(b"89abcdef");
        assert_eq!(s.pos(), 4);
        assert_eq!(s.avail(), b"89abcdefcdefghij");
    }
}
