//! Line arithmetic on byte slices.
//!
//! A line is the bytes between two LF terminators; the terminator belongs
//! to the line it ends and is never part of the returned slice. The last
//! line of a file may lack its LF: it is still a line. Every helper works
//! on any position, so a binary search can jump to a byte midpoint and
//! resync from there.

/// What a reader of lines says when reading `name` fails after `line`
/// lines, `at` bytes of them: every line reader says it in these words.
pub fn cannot_read(name: &str, line: u64, at: u64) -> String {
    format!("cannot read {name} after line {line} (near byte {at} of its lines)")
}

/// The lines of the stream `name`, read one at a time into the caller's
/// buffer and counted, so that a failed read can say where it happened
/// ([`Numbered::cannot_read`]).
#[derive(Debug)]
pub struct Numbered<R> {
    rdr: R,
    name: String,
    line: u64,
    at: u64,
}

impl<R: std::io::BufRead> Numbered<R> {
    pub fn new(name: String, rdr: R) -> Numbered<R> {
        Numbered {
            rdr,
            name,
            line: 0,
            at: 0,
        }
    }

    /// Reads the next line into `buf` (cleared first) without its LF;
    /// false at the end. A last line without LF is a line like any other:
    /// files written by other tools (and ZipNum blocks) often end that way.
    pub fn read(&mut self, buf: &mut Vec<u8>) -> std::io::Result<bool> {
        buf.clear();
        let n = self.rdr.read_until(b'\n', buf)?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        self.at += n as u64;
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        Ok(true)
    }

    /// The stream's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lines read: the number of the last one.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Bytes of the lines read, LFs included.
    pub fn at(&self) -> u64 {
        self.at
    }

    /// What a read that fails now says ([`cannot_read`]), before its cause.
    pub fn cannot_read(&self) -> String {
        cannot_read(&self.name, self.line, self.at)
    }
}

/// Start of the line that contains byte `pos`.
///
/// The LF at `pos` itself (if any) ends the line that contains `pos`, so it
/// does not move the answer: `line_start(b"ab\ncd", 2) == 0`. Positions past
/// the end are clamped to the end, whose line is the last (possibly empty)
/// one.
pub fn line_start(buf: &[u8], pos: usize) -> usize {
    let pos = pos.min(buf.len());
    match memchr::memrchr(b'\n', buf.get(..pos).unwrap_or_default()) {
        Some(i) => i + 1,
        None => 0,
    }
}

/// Index of the LF that ends the line containing `pos`, or `buf.len()` when
/// that line is the last one and has no terminator.
pub fn line_end(buf: &[u8], pos: usize) -> usize {
    let tail = buf.get(pos..).unwrap_or_default();
    match memchr::memchr(b'\n', tail) {
        Some(i) => pos + i,
        None => buf.len(),
    }
}

/// Start of the line after the one containing `pos` (`buf.len()` when
/// there is none).
pub fn next_line_start(buf: &[u8], pos: usize) -> usize {
    (line_end(buf, pos) + 1).min(buf.len())
}

/// The line starting at `start` without its terminator, and where the next
/// line starts. `start` must be a line start (as returned by the helpers
/// above); at or past the end the line is empty and the next start is the
/// end.
pub fn line_at(buf: &[u8], start: usize) -> (&[u8], usize) {
    let end = line_end(buf, start);
    let line = buf.get(start..end).unwrap_or_default();
    (line, (end + 1).min(buf.len()))
}

/// Whether a line is a header line that sorts above the data: UKVS
/// headers start with `!`, the CDX legend line with ` CDX`.
pub fn is_header(line: &[u8]) -> bool {
    line.first() == Some(&b'!') || line.starts_with(b" CDX")
}

/// Where the data starts: the offset of the first line that is not a
/// header (`buf.len()` when the file holds headers only).
pub fn header_end(buf: &[u8]) -> usize {
    let mut pos = 0;
    while pos < buf.len() {
        let (line, next) = line_at(buf, pos);
        if !is_header(line) {
            return pos;
        }
        pos = next;
    }
    buf.len()
}

/// The `n`-th (0-based) space-separated field of a line.
///
/// Capture index lines (UKVS, CDXJ, CDX11) all start with `key datetime`,
/// so fields 0 and 1 are the key and the datetime whatever the profile.
pub fn field(line: &[u8], n: usize) -> Option<&[u8]> {
    line.split(|&b| b == b' ').nth(n)
}

/// The key and datetime of an index line (an empty datetime when the line
/// has a single field).
pub fn key_datetime(line: &[u8]) -> (&[u8], &[u8]) {
    let mut it = line.splitn(3, |&b| b == b' ');
    let key = it.next().unwrap_or_default();
    let datetime = it.next().unwrap_or_default();
    (key, datetime)
}

/// Iterator over the lines of a slice (terminators stripped), with the
/// offset where each starts.
#[derive(Clone, Debug)]
pub struct Lines<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Lines<'a> {
    /// Lines of `buf` from offset `pos`, which must be a line start.
    pub fn new(buf: &'a [u8], pos: usize) -> Lines<'a> {
        Lines { buf, pos }
    }

    /// The bytes from the next line on.
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, &'a [u8]);

    fn next(&mut self) -> Option<(usize, &'a [u8])> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let start = self.pos;
        let (line, next) = line_at(self.buf, start);
        // A final LF ends the last line; it does not open an empty one,
        // because `next` is then the end of the buffer.
        self.pos = next;
        Some((start, line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_start_at_zero_and_on_terminators() {
        let buf = b"ab\ncd\n";
        assert_eq!(line_start(buf, 0), 0);
        assert_eq!(line_start(buf, 1), 0);
        // The LF belongs to the line it ends.
        assert_eq!(line_start(buf, 2), 0);
        assert_eq!(line_start(buf, 3), 3);
        assert_eq!(line_start(buf, 5), 3);
        // Past the end: the empty line after the final LF.
        assert_eq!(line_start(buf, 6), 6);
        assert_eq!(line_start(buf, 99), 6);
        assert_eq!(line_start(b"", 0), 0);
    }

    #[test]
    fn last_line_without_newline() {
        let buf = b"ab\ncd";
        assert_eq!(line_start(buf, 4), 3);
        assert_eq!(line_end(buf, 3), 5);
        assert_eq!(line_at(buf, 3), (&b"cd"[..], 5));
        let all: Vec<_> = Lines::new(buf, 0).collect();
        assert_eq!(all, vec![(0, &b"ab"[..]), (3, &b"cd"[..])]);
    }

    #[test]
    fn empty_lines() {
        let buf = b"\n\na\n\n";
        assert_eq!(line_start(buf, 0), 0);
        assert_eq!(line_end(buf, 0), 0);
        assert_eq!(line_start(buf, 1), 1);
        assert_eq!(line_at(buf, 1), (&b""[..], 2));
        assert_eq!(line_start(buf, 3), 2);
        let all: Vec<_> = Lines::new(buf, 0).map(|(_, l)| l).collect();
        assert_eq!(all, vec![&b""[..], b"", b"a", b""]);
        assert_eq!(Lines::new(b"", 0).count(), 0);
        assert_eq!(Lines::new(b"\n", 0).count(), 1);
    }

    #[test]
    fn next_line_start_clamps() {
        assert_eq!(next_line_start(b"ab\ncd", 0), 3);
        assert_eq!(next_line_start(b"ab\ncd", 3), 5);
        assert_eq!(next_line_start(b"ab\n", 1), 3);
    }

    #[test]
    fn headers_are_skipped() {
        assert_eq!(header_end(b"!a\n!b\nc d\n"), 6);
        assert_eq!(header_end(b" CDX N b a\nc d\n"), 11);
        assert_eq!(header_end(b"!only"), 5);
        assert_eq!(header_end(b""), 0);
        assert_eq!(header_end(b"a\n!b\n"), 0);
    }

    #[test]
    fn fields() {
        assert_eq!(key_datetime(b"k 2014 x"), (&b"k"[..], &b"2014"[..]));
        assert_eq!(key_datetime(b"k"), (&b"k"[..], &b""[..]));
        assert_eq!(field(b"a b c", 2), Some(&b"c"[..]));
        assert_eq!(field(b"a b c", 3), None);
    }
}
