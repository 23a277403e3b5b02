//! Binary search over a sorted line file held in any byte container.
//!
//! [`Search`] is generic over `D: AsRef<[u8]>`: production code hands it a
//! memory map, tests a `Vec<u8>`. A search jumps to the byte midpoint of the
//! remaining window, resyncs to the start of the line there, compares that
//! line with the key and narrows the window to one side, so it needs no
//! line index and touches O(log n) pages.
//!
//! A binary search trusts the order of the file. Rather than answer wrongly
//! from an unsorted file, the search checks every line it looks at against
//! the bounds it has already established (each probe must fall between the
//! last line found below the key and the last found above it) and the
//! range scan checks that consecutive lines ascend; a violation is an
//! [`Error::Unsorted`] naming the byte offset. This catches disorder on the
//! path of a query, not everywhere: `ukvs merge` or `ukvs sort` prove a
//! whole file.

use super::lines::{header_end, line_at, line_start, Lines};
use super::query::KeyRange;
use super::Error;

/// A sorted line file ready for lookups.
#[derive(Clone, Debug)]
pub struct Search<D> {
    data: D,
    /// Offset of the first data line: header lines (`!...`, ` CDX ...`)
    /// sit above the sorted body and never take part in the search.
    body: usize,
}

impl<D: AsRef<[u8]>> Search<D> {
    /// Wraps the bytes of a sorted file (headers first, then lines in byte
    /// order; the last line may lack its LF; the file may be empty).
    pub fn new(data: D) -> Search<D> {
        let body = header_end(data.as_ref());
        Search { data, body }
    }

    /// The whole file.
    pub fn as_bytes(&self) -> &[u8] {
        self.data.as_ref()
    }

    /// The header lines above the data.
    pub fn headers(&self) -> impl Iterator<Item = &[u8]> {
        let buf = self.data.as_ref();
        Lines::new(buf.get(..self.body).unwrap_or_default(), 0).map(|(_, l)| l)
    }

    /// Offset of the first data line that is `>= key` in byte order
    /// (the file length when every line is smaller).
    pub fn lower_bound(&self, key: &[u8]) -> Result<usize, Error> {
        let buf = self.data.as_ref();
        // Invariant: lines starting in [body, lo) are < key, lines starting
        // at or after hi are >= key; lo and hi are line starts (or the end).
        let (mut lo, mut hi) = (self.body, buf.len());
        let mut below: Option<&[u8]> = None;
        let mut above: Option<&[u8]> = None;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // mid >= lo and lo is a line start, so the resync cannot fall
            // below the window.
            let start = line_start(buf, mid).max(lo);
            let (line, next) = line_at(buf, start);
            if below.is_some_and(|b| line < b) || above.is_some_and(|a| line > a) {
                return Err(Error::Unsorted {
                    offset: start as u64,
                    line: String::from_utf8_lossy(line).into_owned(),
                });
            }
            if line < key {
                below = Some(line);
                // `next` is past `mid`, so the window shrinks.
                lo = if next > start { next } else { buf.len() };
            } else {
                above = Some(line);
                hi = start;
            }
        }
        Ok(lo)
    }

    /// The lines in `range`, in file order, each with its offset.
    pub fn range<'s, 'r>(&'s self, range: &'r KeyRange) -> Result<Range<'s, 'r>, Error> {
        let buf = self.data.as_ref();
        let pos = self.lower_bound(&range.start)?;
        // The line before the answer must be below the range; if it is not,
        // the file is out of order right where we are asked to answer.
        let prev = if pos > self.body {
            let start = line_start(buf, pos - 1);
            let (line, _) = line_at(buf, start);
            if line >= &range.start[..] {
                return Err(Error::Unsorted {
                    offset: pos as u64,
                    line: String::from_utf8_lossy(line).into_owned(),
                });
            }
            Some(line)
        } else {
            None
        };
        Ok(Range {
            lines: Lines::new(buf, pos),
            range,
            prev,
            done: false,
        })
    }
}

/// Iterator over the lines of a [`KeyRange`], checking their order.
#[derive(Debug)]
pub struct Range<'s, 'r> {
    lines: Lines<'s>,
    range: &'r KeyRange,
    prev: Option<&'s [u8]>,
    done: bool,
}

impl<'s> Iterator for Range<'s, '_> {
    type Item = Result<(usize, &'s [u8]), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let Some((offset, line)) = self.lines.next() else {
            self.done = true;
            return None;
        };
        if self.prev.is_some_and(|p| line < p) {
            self.done = true;
            return Some(Err(Error::Unsorted {
                offset: offset as u64,
                line: String::from_utf8_lossy(line).into_owned(),
            }));
        }
        self.prev = Some(line);
        if self.range.is_past(line) {
            self.done = true;
            return None;
        }
        Some(Ok((offset, line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sorted::query::MatchType;

    fn exact(data: &[u8], key: &[u8]) -> Vec<Vec<u8>> {
        let s = Search::new(data);
        let r = KeyRange::new(key, MatchType::Exact);
        s.range(&r)
            .unwrap()
            .map(|l| l.unwrap().1.to_vec())
            .collect()
    }

    #[test]
    fn empty_file_and_keys_beyond_the_end() {
        assert!(exact(b"", b"a").is_empty());
        assert!(exact(b"!h\n", b"a").is_empty());
        assert!(exact(b"a 1\nb 2", b"c").is_empty());
        assert_eq!(Search::new(&b"a 1\nb 2"[..]).lower_bound(b"zz").unwrap(), 7);
    }

    #[test]
    fn last_line_without_newline_is_found() {
        assert_eq!(exact(b"a 1\nb 2", b"b"), vec![b"b 2".to_vec()]);
        assert_eq!(exact(b"a 1\nb 2\n", b"b"), vec![b"b 2".to_vec()]);
        assert_eq!(exact(b"b 2", b"b"), vec![b"b 2".to_vec()]);
    }

    #[test]
    fn headers_are_not_data() {
        let data = b"!context x\n!meta {}\na 1\na 2\nb 1\n";
        assert_eq!(exact(data, b"a").len(), 2);
        assert!(exact(data, b"!meta").is_empty());
        let s = Search::new(&data[..]);
        assert_eq!(s.headers().count(), 2);
    }

    #[test]
    fn unsorted_file_is_reported() {
        let data = b"a 1\nc 1\nb 1\nd 1\n";
        let s = Search::new(&data[..]);
        let r = KeyRange::new(b"b", MatchType::Prefix);
        let got: Result<Vec<_>, _> = s.range(&r).and_then(|it| it.collect());
        assert!(matches!(got, Err(Error::Unsorted { .. })), "{got:?}");
    }
}
