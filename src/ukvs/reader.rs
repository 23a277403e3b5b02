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

    /// A reader with a given initial block size (tests use tiny ones so
    /// lines straddle refills constantly). Lines longer than the block grow
    /// the buffer.
    pub fn with_capacity(cap: usize, rdr: R) -> LineReader<R> {
        LineReader {
            rdr,
            buf: vec![0; cap.max(1)],
            pos: 0,
            end: 0,
            eof: false,
            offset: 0,
        }
    }

    /// Byte offset of the next line in the stream.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next line, or `None` at the end of the stream.
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        let mut scanned = self.pos;
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
            // front, grow if it fills the buffer, and read more.
            let already = self.end - self.pos;
            self.buf.copy_within(self.pos..self.end, 0);
            self.pos = 0;
            self.end = already;
            if self.end == self.buf.len() {
                let n = self.buf.len();
                self.buf.resize(n * 2, 0);
            }
            scanned = already;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], cap: usize) -> Vec<Vec<u8>> {
        let mut r = LineReader::with_capacity(cap, input);
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
                assert_eq!(all(input, cap), want, "{input:?} cap {cap}");
            }
        }
    }
}
