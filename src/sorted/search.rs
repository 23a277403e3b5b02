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
//! path of a query, not everywhere: a line out of place that no probe
//! visits can make a lookup of its own key miss it. [`Search::check_order`]
//! (`ukvs lookup --check`) reads the whole file to prove its order.

use std::cmp::Ordering;

use super::lines::{header_end, line_at, line_start, next_line_start, Lines};
use super::query::KeyRange;
use super::Error;

/// A data line that sorts before the line above it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disorder {
    /// 1-based line number (in the file, or in the block for a ZipNum
    /// block).
    pub line_no: u64,
    /// Byte offset of the line (in the file, or in the uncompressed block).
    pub offset: u64,
    /// For a ZipNum cluster: the shard and block number holding the line.
    pub block: Option<(String, u64)>,
    /// The line out of order.
    pub line: Vec<u8>,
    /// The line above it.
    pub previous: Vec<u8>,
}

/// Result of a full order check: the first disorders found and how many
/// lines in all sort before the line above them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrderReport {
    /// The first places where the order breaks (at most the `max` asked).
    pub found: Vec<Disorder>,
    /// Lines out of order in all.
    pub count: u64,
}

impl OrderReport {
    /// Checks `line` (at `offset`, line `line_no`) against `previous`.
    pub(crate) fn check(
        &mut self,
        max: usize,
        previous: Option<&[u8]>,
        line: &[u8],
        at: (u64, u64),
        block: impl FnOnce() -> Option<(String, u64)>,
    ) {
        let Some(previous) = previous else { return };
        if line >= previous {
            return;
        }
        self.count += 1;
        if self.found.len() < max {
            self.found.push(Disorder {
                line_no: at.0,
                offset: at.1,
                block: block(),
                line: line.to_vec(),
                previous: previous.to_vec(),
            });
        }
    }
}

/// Bytes of each sampled line kept in memory by [`Search::sample`].
const SAMPLE_PREFIX: usize = 32;

/// A sorted line file ready for lookups.
#[derive(Clone, Debug)]
pub struct Search<D> {
    data: D,
    /// Offset of the first data line: header lines (`!...`, ` CDX ...`)
    /// sit above the sorted body and never take part in the search.
    body: usize,
    samples: Samples,
    /// Where the part of a line that must ascend ends (see
    /// [`Search::order_by_prefix_before`]); `None`: the whole line.
    order_end: Option<u8>,
}

/// The part of `line` that must ascend: up to the first `end` byte.
fn order_key(line: &[u8], end: Option<u8>) -> &[u8] {
    match end.and_then(|e| memchr::memchr(e, line)) {
        Some(i) => &line[..i],
        None => line,
    }
}

/// Line starts sampled at a fixed byte step, with the first bytes of each
/// line copied into one dense array. The first levels of every search then
/// run in a few megabytes of cache instead of one page fault and cache
/// miss per probe of a huge map; only the last window (one step wide) is
/// searched in the map.
#[derive(Clone, Debug, Default)]
struct Samples {
    starts: Vec<usize>,
    prefixes: Vec<[u8; SAMPLE_PREFIX]>,
    /// Bytes of the line in `prefixes` (less than the prefix size when the
    /// whole line is there).
    lens: Vec<u8>,
    /// Every [`SAMPLE_FANOUT`]-th prefix again, densely: small enough to
    /// stay in cache, it narrows a search to one run of samples before the
    /// big arrays are touched (two cache-friendly levels instead of one
    /// bisection missing the cache at every level).
    top: Vec<[u8; SAMPLE_PREFIX]>,
    top_lens: Vec<u8>,
}

/// Bodies larger than this are sampled in parallel parts.
const SAMPLE_PARALLEL_FROM: usize = 64 << 20;

/// Samples of the lines starting in `[pos, end)` (`pos` a line start), a
/// line every `step` bytes; sampled lines out of order are an error.
fn sample_part(
    buf: &[u8],
    mut pos: usize,
    end: usize,
    step: usize,
    order_end: Option<u8>,
) -> Result<Samples, Error> {
    let mut samples = Samples::default();
    let mut prev: &[u8] = &[];
    while pos < end {
        let (line, _) = line_at(buf, pos);
        if order_key(line, order_end) < order_key(prev, order_end) {
            return Err(Error::Unsorted {
                offset: pos as u64,
                line: String::from_utf8_lossy(line).into_owned(),
            });
        }
        prev = line;
        let n = line.len().min(SAMPLE_PREFIX);
        let mut prefix = [0u8; SAMPLE_PREFIX];
        prefix[..n].copy_from_slice(&line[..n]);
        samples.starts.push(pos);
        samples.prefixes.push(prefix);
        samples.lens.push(n as u8);
        let target = pos.saturating_add(step);
        if target >= end {
            break;
        }
        let at = line_start(buf, target);
        // A line longer than the step: sample the one after it.
        pos = if at > pos {
            at
        } else {
            next_line_start(buf, target)
        };
    }
    Ok(samples)
}

/// Samples per entry of [`Samples::top`].
const SAMPLE_FANOUT: usize = 64;

/// Byte order of a sampled line against `key`, from its copied prefix;
/// reads the line in `buf` at `start` only when the prefix ties.
fn cmp_sample(
    prefix: &[u8; SAMPLE_PREFIX],
    len: u8,
    start: usize,
    buf: &[u8],
    key: &[u8],
) -> Ordering {
    let len = usize::from(len);
    let n = len.min(key.len());
    match prefix[..n].cmp(&key[..n]) {
        Ordering::Equal if len < SAMPLE_PREFIX => len.cmp(&key.len()),
        Ordering::Equal => line_at(buf, start).0.cmp(key),
        other => other,
    }
}

impl Samples {
    /// Byte order of sampled line `j` against `key`.
    fn cmp(&self, buf: &[u8], j: usize, key: &[u8]) -> Ordering {
        cmp_sample(&self.prefixes[j], self.lens[j], self.starts[j], buf, key)
    }

    /// Index of the first sample `>= key` (`starts.len()` when none).
    fn find(&self, buf: &[u8], key: &[u8]) -> usize {
        let n = self.starts.len();
        let t = partition(self.top.len(), |t| {
            let j = t * SAMPLE_FANOUT;
            cmp_sample(&self.top[t], self.top_lens[t], self.starts[j], buf, key) == Ordering::Less
        });
        // Top entry t is sample t * FANOUT: the answer lies after the
        // previous top entry and at or before this one.
        let lo = if t == 0 {
            0
        } else {
            (t - 1) * SAMPLE_FANOUT + 1
        };
        let hi = (t * SAMPLE_FANOUT).min(n);
        let lo = lo.min(hi);
        lo + partition(hi - lo, |i| self.cmp(buf, lo + i, key) == Ordering::Less)
    }
}

impl<D: AsRef<[u8]>> Search<D> {
    /// Wraps the bytes of a sorted file (headers first, then lines in byte
    /// order; the last line may lack its LF; the file may be empty).
    pub fn new(data: D) -> Search<D> {
        let body = header_end(data.as_ref());
        Search {
            data,
            body,
            samples: Samples::default(),
            order_end: None,
        }
    }

    /// Order checks compare lines only up to the first `end` byte. A ZipNum
    /// `.idx` is ordered by its first keys (before the TAB): two blocks
    /// that start with the same key are listed in block order, whose
    /// shard and offset columns need not ascend as text (`s10` < `s9`,
    /// `100` < `42`).
    pub fn order_by_prefix_before(mut self, end: u8) -> Search<D> {
        self.order_end = Some(end);
        self
    }

    /// Samples a line every `step` bytes to speed up many lookups (a batch
    /// over a huge file). Costs one pass touching a page per `step` bytes
    /// and about 40 bytes of memory per sample; answers do not change.
    /// Sampled lines out of order are reported as [`Error::Unsorted`].
    pub fn sample(&mut self, step: usize) -> Result<(), Error>
    where
        D: Sync,
    {
        // A big file is sampled in parts on every core.
        let parts = if self.data.as_ref().len() - self.body > SAMPLE_PARALLEL_FROM {
            rayon::current_num_threads().max(1)
        } else {
            1
        };
        self.sample_in_parts(step, parts)
    }

    /// [`Search::sample`] in `parts` parts sampled in parallel; each part
    /// starts at a line start and the parts' samples join in file order.
    fn sample_in_parts(&mut self, step: usize, parts: usize) -> Result<(), Error>
    where
        D: Sync,
    {
        let buf = self.data.as_ref();
        let step = step.max(1);
        let order_end = self.order_end;
        let parts = parts.max(1);
        let mut bounds = vec![self.body];
        for i in 1..parts {
            let target = self.body + (buf.len() - self.body) / parts * i;
            let at = if line_start(buf, target) == target {
                target
            } else {
                next_line_start(buf, target)
            };
            bounds.push(at.max(*bounds.last().unwrap_or(&self.body)));
        }
        bounds.push(buf.len());
        let pieces: Vec<Result<Samples, Error>> = {
            use rayon::prelude::*;
            bounds
                .par_windows(2)
                .map(|w| sample_part(buf, w[0], w[1], step, order_end))
                .collect()
        };
        let mut samples = Samples::default();
        for piece in pieces {
            let piece = piece?;
            // The joint between two parts is checked like any other pair.
            if let (Some(&last), Some(&first)) = (samples.starts.last(), piece.starts.first()) {
                let (a, _) = line_at(buf, last);
                let (b, _) = line_at(buf, first);
                if order_key(b, order_end) < order_key(a, order_end) {
                    return Err(Error::Unsorted {
                        offset: first as u64,
                        line: String::from_utf8_lossy(b).into_owned(),
                    });
                }
            }
            samples.starts.extend(piece.starts);
            samples.prefixes.extend(piece.prefixes);
            samples.lens.extend(piece.lens);
        }
        for j in (0..samples.starts.len()).step_by(SAMPLE_FANOUT) {
            samples.top.push(samples.prefixes[j]);
            samples.top_lens.push(samples.lens[j]);
        }
        self.samples = samples;
        Ok(())
    }

    /// Reads every data line and checks it against the one before: the
    /// order a binary search assumes, proven for the whole file (O(n), one
    /// sequential pass). Reports the first `max` disorders and their count.
    pub fn check_order(&self, max: usize) -> OrderReport {
        let buf = self.data.as_ref();
        let mut report = OrderReport::default();
        let headers = buf.get(..self.body).unwrap_or_default();
        let mut line_no = memchr::memchr_iter(b'\n', headers).count() as u64;
        let mut prev: Option<&[u8]> = None;
        for (at, line) in Lines::new(buf, self.body) {
            line_no += 1;
            report.check(
                max,
                prev.map(|p| order_key(p, self.order_end)),
                order_key(line, self.order_end),
                (line_no, at as u64),
                || None,
            );
            prev = Some(line);
        }
        report
    }

    /// The whole file.
    pub fn as_bytes(&self) -> &[u8] {
        self.data.as_ref()
    }

    /// Offset of the first data line (after the headers).
    pub fn body_start(&self) -> usize {
        self.body
    }

    /// The header lines above the data.
    pub fn headers(&self) -> impl Iterator<Item = &[u8]> {
        let buf = self.data.as_ref();
        Lines::new(buf.get(..self.body).unwrap_or_default(), 0).map(|(_, l)| l)
    }

    /// Offset of the first data line that is `>= key` in byte order
    /// (the file length when every line is smaller).
    ///
    /// Headers never take part: the window starts at the body. An empty
    /// file, a file of headers only and a key beyond the last line all
    /// return the end of the file, which the range scan then reads as "no
    /// line". The comparison is of the whole line with the key, so
    /// `lower_bound(b"com,a)/")` lands on `com,a)/ 2014...` (a longer line
    /// with the key as prefix sorts after the key).
    pub fn lower_bound(&self, key: &[u8]) -> Result<usize, Error> {
        let buf = self.data.as_ref();
        // Invariant: lines starting in [body, lo) are < key, lines starting
        // at or after hi are >= key; lo and hi are line starts (or the end).
        let (mut lo, mut hi) = (self.body, buf.len());
        let s = &self.samples;
        if !s.starts.is_empty() {
            // The first sample >= key bounds the window above; the sample
            // before it (< key) bounds it below.
            let j = s.find(buf, key);
            if j > 0 {
                lo = s.starts[j - 1];
            }
            if j < s.starts.len() {
                hi = s.starts[j];
            }
            // The window is one step: a forward scan reads it sequentially
            // (prefetched, one page or two) where bisecting it would miss
            // the cache at every probe. It checks the order as it goes.
            let mut prev: &[u8] = &[];
            let mut pos = lo;
            while pos < hi {
                let (line, next) = line_at(buf, pos);
                if order_key(line, self.order_end) < order_key(prev, self.order_end) {
                    return Err(Error::Unsorted {
                        offset: pos as u64,
                        line: String::from_utf8_lossy(line).into_owned(),
                    });
                }
                if line >= key {
                    return Ok(pos);
                }
                prev = line;
                pos = if next > pos { next } else { buf.len() };
            }
            return Ok(hi);
        }
        let mut below: Option<&[u8]> = None;
        let mut above: Option<&[u8]> = None;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // mid >= lo and lo is a line start, so the resync cannot fall
            // below the window.
            let start = line_start(buf, mid).max(lo);
            let (line, next) = line_at(buf, start);
            // In a sorted file every line between two probes lies between
            // them; a probe outside its bounds proves the file unsorted
            // here, at the cost of two comparisons.
            let k = order_key(line, self.order_end);
            if below.is_some_and(|b| k < order_key(b, self.order_end))
                || above.is_some_and(|a| k > order_key(a, self.order_end))
            {
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
        // The scan keeps checking order line by line, so the answer is
        // either right or an error, also where the bisection never looked.
        Ok(Range {
            lines: Lines::new(buf, pos),
            range,
            prev,
            order_end: self.order_end,
            done: false,
        })
    }
}

/// The first index in `0..n` where `is_below` turns false (it must be true
/// then false along the indexes, as it is over sorted samples).
fn partition(n: usize, is_below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if is_below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Iterator over the lines of a [`KeyRange`], checking their order.
#[derive(Debug)]
pub struct Range<'s, 'r> {
    lines: Lines<'s>,
    range: &'r KeyRange,
    prev: Option<&'s [u8]>,
    order_end: Option<u8>,
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
        if self
            .prev
            .is_some_and(|p| order_key(line, self.order_end) < order_key(p, self.order_end))
        {
            self.done = true;
            return Some(Err(Error::Unsorted {
                offset: offset as u64,
                line: String::from_utf8_lossy(line).into_owned(),
            }));
        }
        self.prev = Some(line);
        // The first line past the range ends the scan; it has been checked
        // against the line before it, which closes the last gap.
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
    fn sampling_in_parts_gives_the_same_answers() {
        let mut data = Vec::new();
        for i in 0..400u32 {
            // Varying lengths, some longer than the step, repeated keys.
            let k = i / 3;
            data.extend_from_slice(
                format!("k{k:04} {}\n", "x".repeat((i % 3 * 20 + k % 7) as usize)).as_bytes(),
            );
        }
        let plain = Search::new(&data[..]);
        for parts in [1, 2, 3, 7, 50] {
            for step in [1, 16, 64, 300] {
                let mut s = Search::new(&data[..]);
                s.sample_in_parts(step, parts).unwrap();
                for k in 0..140u32 {
                    for key in [
                        format!("k{k:04}"),
                        format!("k{k:04} xx"),
                        format!("k{k:04}~"),
                    ] {
                        assert_eq!(
                            s.lower_bound(key.as_bytes()).unwrap(),
                            plain.lower_bound(key.as_bytes()).unwrap(),
                            "{key} parts {parts} step {step}"
                        );
                    }
                }
            }
        }
        // Disorder at the joint of two parts is found.
        let bad = b"a\nb\nc\nd\nA\ne\nf\ng\n";
        let mut s = Search::new(&bad[..]);
        assert!(matches!(
            s.sample_in_parts(1, 2),
            Err(Error::Unsorted { .. })
        ));
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
