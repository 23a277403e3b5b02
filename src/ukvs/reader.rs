//! Lines out of any `Read` through one reused buffer.
//!
//! `BufRead::read_until` copies every line into the caller's `Vec`; this
//! reader instead hands out slices of its own buffer, copying only the
//! unfinished tail of a block when it refills. That keeps `validate` near
//! memory speed on plain and gzip input alike.

use std::io::{self, Read};

use memchr::memchr;

/// Default block size: large enough that refills are rare, small enough
/// to stay in cache.
const BLOCK: usize = 1 << 20;

/// Bytes of a cache line: see [`read_gap`].
pub const LINE_ALIGN: usize = 64;

/// Where in a buffer to put `held` bytes kept from the last read so that
/// the next read, of the stream's byte `next`, lands right after them at
/// an address congruent to `next` modulo a cache line: the bytes before
/// the held ones (fewer than [`LINE_ALIGN`]) are left unused.
///
/// The kernel copies a read from the page cache with `rep movsb`, which
/// on AMD Zen CPUs runs about four times slower when the destination is 1
/// to 31 bytes past the source modulo a page (113 MB from a cached file:
/// 65 ms against 15 ms). That is where a large heap block, which with
/// glibc often starts 16 bytes into a page, takes a read of a
/// page-aligned block; a destination congruent to the source modulo 64
/// never is.
pub fn read_gap(buf: &[u8], held: usize, next: u64) -> usize {
    let dst = (buf.as_ptr() as usize).wrapping_add(held);
    // Both wrap modulo a power of two above 64: the residue is exact.
    (next as usize).wrapping_sub(dst) % LINE_ALIGN
}

/// Splits a byte stream into lines (terminator `\n` removed; a last line
/// without terminator is returned too).
pub struct LineReader<R> {
    /// The underlying stream; read in blocks of the buffer's free space.
    rdr: R,
    /// Holds at least one whole line between `pos` and `end` after a
    /// refill, or the partial last line at the end of the stream.
    buf: Vec<u8>,
    /// Start of the unread part of `buf`.
    pos: usize,
    /// End of the valid part of `buf`.
    end: usize,
    eof: bool,
    /// Bytes handed out so far, terminators included: the offset of the
    /// next line.
    offset: u64,
}

impl<R: Read> LineReader<R> {
    /// A reader with the default block size.
    pub fn new(rdr: R) -> LineReader<R> {
        LineReader::with_capacity(BLOCK, rdr)
    }

    /// A reader with a given initial block size. Lines longer than the
    /// block grow the buffer, and so does a block smaller than two cache
    /// lines.
    pub fn with_capacity(cap: usize, rdr: R) -> LineReader<R> {
        LineReader::starting_at(cap, rdr, 0)
    }

    /// A reader of a stream whose first byte is byte `offset` of a file
    /// (a part read with `pread`, say): its reads land aligned with the
    /// file (see [`read_gap`]), and [`offset`](LineReader::offset) counts
    /// from `offset`.
    pub fn starting_at(cap: usize, rdr: R, offset: u64) -> LineReader<R> {
        LineReader {
            rdr,
            buf: vec![0; cap.max(1)],
            pos: 0,
            end: 0,
            eof: false,
            offset,
        }
    }

    /// Byte offset of the next line in the stream.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next line, or `None` at the end of the stream.
    #[inline]
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        // Most lines are whole in the buffer: their search is all there
        // is, inlined into the caller's loop.
        if let Some(i) = memchr(b'\n', &self.buf[self.pos..self.end]) {
            let start = self.pos;
            self.pos = start + i + 1;
            self.offset += (i + 1) as u64;
            return Ok(Some(&self.buf[start..start + i]));
        }
        self.refill_for_line()
    }

    /// [`next_line`](LineReader::next_line) when no whole line is left in
    /// the buffer.
    #[inline(never)]
    fn refill_for_line(&mut self) -> io::Result<Option<&[u8]>> {
        let mut scanned = self.end;
        loop {
            if let Some(i) = memchr(b'\n', &self.buf[scanned..self.end]) {
                let start = self.pos;
                let nl = scanned + i;
                self.pos = nl + 1;
                self.offset += (nl + 1 - start) as u64;
                return Ok(Some(&self.buf[start..nl]));
            }
            if self.eof {
                if self.pos == self.end {
                    return Ok(None);
                }
                let start = self.pos;
                self.offset += (self.end - start) as u64;
                self.pos = self.end;
                return Ok(Some(&self.buf[start..self.end]));
            }
            // No newline in what is left: move the partial line to the
            // front, after a gap that makes the read land aligned (see
            // `read_gap`), grow the buffer if that leaves little room, and
            // read more.
            let already = self.end - self.pos;
            if already + 2 * LINE_ALIGN > self.buf.len() {
                let n = self.buf.len();
                self.buf.resize((n * 2).max(already + 2 * LINE_ALIGN), 0);
            }
            let gap = read_gap(&self.buf, already, self.offset + already as u64);
            self.buf.copy_within(self.pos..self.end, gap);
            self.pos = gap;
            self.end = gap + already;
            scanned = self.end;
            loop {
                match self.rdr.read(&mut self.buf[self.end..]) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(n) => {
                        self.end += n;
                        break;
                    }
                    // A signal interrupted the read; nothing was lost.
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
        }
    }
}

/// A stream, for tests, that gives at most `step` bytes a read and counts
/// the reads whose buffer was not aligned with it (see [`read_gap`]).
#[cfg(test)]
pub(crate) struct Noting<'a> {
    data: &'a [u8],
    pos: usize,
    step: usize,
    pub(crate) misaligned: usize,
}

#[cfg(test)]
impl Noting<'_> {
    pub(crate) fn new(data: &[u8], step: usize) -> Noting<'_> {
        Noting {
            data,
            pos: 0,
            step,
            misaligned: 0,
        }
    }
}

#[cfg(test)]
impl Read for Noting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if (buf.as_ptr() as usize) % LINE_ALIGN != self.pos % LINE_ALIGN {
            self.misaligned += 1;
        }
        let n = buf.len().min(self.step).min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of `input`, read `step` bytes at a time into a buffer of
    /// `cap` bytes at first.
    fn all(input: &[u8], cap: usize, step: usize) -> Vec<Vec<u8>> {
        let stream = Noting::new(input, step);
        let mut r = LineReader::with_capacity(cap, stream);
        let mut out = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            out.push(l.to_vec());
        }
        assert_eq!(r.offset(), input.len() as u64);
        out
    }

    #[test]
    fn matches_split_on_every_block_size() {
        let inputs: &[&[u8]] = &[
            b"",
            b"\n",
            b"a",
            b"a\n",
            b"a\n\nbcd\nef",
            b"long line here\nx\n",
        ];
        for input in inputs {
            let mut want: Vec<Vec<u8>> = input.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
            if input.ends_with(b"\n") || input.is_empty() {
                want.pop();
            }
            for cap in 1..8 {
                for step in 1..8 {
                    assert_eq!(
                        all(input, cap, step),
                        want,
                        "{input:?} cap {cap} step {step}"
                    );
                }
            }
        }
    }

    #[test]
    fn reads_land_aligned_with_the_stream() {
        // Lines of 0 to 299 bytes, and one longer than the buffer.
        let mut input = Vec::new();
        let mut x = 7u32;
        for i in 0..400 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let len = match i {
                200 => 3000,
                _ => (x >> 16) as usize % 300,
            };
            input.extend((0..len).map(|j| b'a' + (j % 26) as u8));
            input.push(b'\n');
        }
        input.extend_from_slice(b"last");
        let want: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
        for step in [1, 100, 777, 1 << 20] {
            let mut r = LineReader::with_capacity(1024, Noting::new(&input, step));
            let mut got = Vec::new();
            while let Some(l) = r.next_line().unwrap() {
                got.push(l.to_vec());
            }
            assert_eq!(got, want, "step {step}");
            assert_eq!(r.offset(), input.len() as u64);
            assert_eq!(r.rdr.misaligned, 0, "step {step}");
        }
    }
}
