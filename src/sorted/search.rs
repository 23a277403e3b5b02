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
//!
//! For a batch of many queries, [`Search::sample`] pays one pass over the
//! file that proves its order and keeps a sample of lines plus every line
//! start; searches then need no checks, and [`Search::lower_bounds`] runs
//! several of them in lockstep so that their cache misses overlap.

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
/// line copied into one dense array, and the start of every other line as
/// a short offset from its window's sample. The first levels of every
/// search then run in a few megabytes of cache instead of one page fault
/// and cache miss per probe of a huge map; in the last window (one step
/// wide) the search bisects the known line starts, touching a few lines of
/// the map instead of reading the window through.
#[derive(Clone, Debug, Default)]
struct Samples {
    starts: Vec<usize>,
    /// The lines after sample `j` and before sample `j + 1` start at
    /// `starts[j] + offsets[k]` for `k` in `first[j]..first[j + 1]`.
    offsets: Vec<u16>,
    /// One entry per sample, and one more.
    first: Vec<usize>,
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
const SAMPLE_PARALLEL_FROM: usize = 1 << 20;

/// Samples of the lines starting in `[pos, end)` (`pos` a line start): the
/// first line at least `step` bytes after the last sample is sampled, and
/// every line is checked against the one before it (an error when out of
/// order). `first` is left without its closing entry.
fn sample_part(
    buf: &[u8],
    pos: usize,
    end: usize,
    step: usize,
    order_end: Option<u8>,
) -> Result<Samples, Error> {
    let mut samples = Samples::default();
    let mut prev: Option<&[u8]> = None;
    let mut window = pos;
    for (at, line) in Lines::new(&buf[..end], pos) {
        if prev.is_some_and(|p| order_key(line, order_end) < order_key(p, order_end)) {
            return Err(Error::Unsorted {
                offset: at as u64,
                line: String::from_utf8_lossy(line).into_owned(),
            });
        }
        match u16::try_from(at - window) {
            Ok(off) if prev.is_some() && at - window < step => samples.offsets.push(off),
            _ => {
                let n = line.len().min(SAMPLE_PREFIX);
                let mut prefix = [0u8; SAMPLE_PREFIX];
                prefix[..n].copy_from_slice(&line[..n]);
                samples.starts.push(at);
                samples.prefixes.push(prefix);
                samples.lens.push(n as u8);
                samples.first.push(samples.offsets.len());
                window = at;
            }
        }
        prev = Some(line);
    }
    Ok(samples)
}

/// Searches run in lockstep by [`Search::lower_bounds`]: enough to keep
/// the memory system busy with one probe of each while the others compare.
const LOCKSTEP: usize = 16;

/// Bytes at a lower bound that [`Search::lower_bounds`] asks the cache for.
const ANSWER_PREFETCH: usize = 384;

/// Hints the CPU to load the cache line of `data[at]` (nothing past the end).
#[allow(unsafe_code)]
fn prefetch<T>(data: &[T], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(item) = data.get(at) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it never faults and changes nothing
        // the program can observe; the address is inside `data` anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(item).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, at);
}

/// One search of [`Search::lower_bounds`] inside its sample window: the
/// window's line starts and the part of them still in question.
struct Window<'a> {
    base: usize,
    end: usize,
    offsets: &'a [u16],
    lo: usize,
    hi: usize,
}

impl Window<'_> {
    /// Start of line `k` of the window (`end` past the last).
    fn start(&self, k: usize) -> usize {
        self.offsets
            .get(k)
            .map_or(self.end, |&o| self.base + usize::from(o))
    }

    /// Line `k` of the window, without its LF.
    fn line<'b>(&self, buf: &'b [u8], k: usize) -> &'b [u8] {
        let line = &buf[self.start(k)..self.start(k + 1)];
        line.strip_suffix(b"\n").unwrap_or(line)
    }

    fn mid(&self) -> usize {
        self.lo + (self.hi - self.lo) / 2
    }
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
        let (lo, hi) = self.find_run(buf, key);
        lo + partition(hi - lo, |i| self.cmp(buf, lo + i, key) == Ordering::Less)
    }

    /// The run of samples `lo..hi` where [`Samples::find`] ends for `key`,
    /// from the top level alone (in cache).
    fn find_run(&self, buf: &[u8], key: &[u8]) -> (usize, usize) {
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
        (lo.min(hi), hi)
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
    /// over a huge file). Costs one pass over the whole file (on every
    /// core when it is large), about 40 bytes of memory per sample and 2
    /// per line; answers do not change. The pass checks every line against
    /// the one before, so it proves the order of the whole file (an
    /// [`Error::Unsorted`] otherwise) and later searches need no checks.
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
            let base = samples.offsets.len();
            samples.first.extend(piece.first.iter().map(|f| f + base));
            samples.starts.extend(piece.starts);
            samples.prefixes.extend(piece.prefixes);
            samples.lens.extend(piece.lens);
            samples.offsets.extend(piece.offsets);
        }
        samples.first.push(samples.offsets.len());
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

    /// The first line out of order among the data lines that start in
    /// the first `window` bytes of the body or in its last `window` bytes
    /// (O(window)), as `(offset, line)`. A search checks only the lines it
    /// looks at, so disorder elsewhere can make it miss lines silently;
    /// this cheap look at both ends, taken when a file is opened, catches
    /// a file sorted in a locale's order (`sort` without `LC_ALL=C`),
    /// whose disorder is everywhere, before any answer is given.
    pub fn disorder_near_ends(&self, window: usize) -> Option<(u64, Vec<u8>)> {
        let buf = self.data.as_ref();
        let head_end = self.body.saturating_add(window).min(buf.len());
        let tail = buf.len().saturating_sub(window).max(self.body);
        let tail = if tail > self.body {
            line_start(buf, tail)
        } else {
            tail
        };
        let check = |from: usize, to: usize| {
            let mut prev: Option<&[u8]> = None;
            for (at, line) in Lines::new(buf, from) {
                if at >= to {
                    break;
                }
                if prev
                    .is_some_and(|p| order_key(line, self.order_end) < order_key(p, self.order_end))
                {
                    return Some((at as u64, line.to_vec()));
                }
                prev = Some(line);
            }
            None
        };
        // The head's last line is checked against the line after it too.
        check(self.body, head_end.saturating_add(1))
            .or_else(|| (tail > head_end).then(|| check(tail, buf.len())).flatten())
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
            return Ok(match self.window(key) {
                Ok(at) => at,
                Err(w) => w.start(partition(w.offsets.len(), |k| w.line(buf, k) < key)),
            });
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

    /// Whether [`Search::sample`] has run (and so proved the file's order).
    pub fn is_sampled(&self) -> bool {
        !self.samples.starts.is_empty()
    }

    /// For a sampled search: the sample window that holds the lower bound
    /// of `key`, its lines after the sample still to bisect, or the answer
    /// itself when no window is needed. The first sample >= key ends the
    /// window; the sample before it (< key) opens it. Sampling proved the
    /// order of every line, and the known line starts delimit the lines:
    /// a bisection reads the head of a few lines of the map, nothing else.
    fn window(&self, key: &[u8]) -> Result<usize, Window<'_>> {
        self.window_before(self.samples.find(self.data.as_ref(), key))
    }

    /// [`Search::window`] from `j`, the first sample `>= key`.
    fn window_before(&self, j: usize) -> Result<usize, Window<'_>> {
        let s = &self.samples;
        if j == 0 {
            return Ok(s.starts[0]);
        }
        let offsets = &s.offsets[s.first[j - 1]..s.first[j]];
        Err(Window {
            base: s.starts[j - 1],
            end: s.starts.get(j).copied().unwrap_or(self.data.as_ref().len()),
            offsets,
            lo: 0,
            hi: offsets.len(),
        })
    }

    /// [`Search::lower_bound`] of each key, in order. On a sampled search
    /// the searches run several at a time in lockstep, and every step asks
    /// the memory system for what each search reads next (its window's
    /// line starts, the line it probes, the lines it lands on) before any
    /// of them reads it, so the cache misses of a batch overlap instead of
    /// following each other. The answers' lines are left in the cache for
    /// the range scans that follow.
    pub fn lower_bounds(&self, keys: &[&[u8]]) -> Result<Vec<usize>, Error> {
        if !self.is_sampled() {
            return keys.iter().map(|k| self.lower_bound(k)).collect();
        }
        let buf = self.data.as_ref();
        let s = &self.samples;
        let mut out = vec![0; keys.len()];
        let mut found = Vec::with_capacity(LOCKSTEP);
        let mut open: Vec<(usize, Window<'_>)> = Vec::with_capacity(LOCKSTEP);
        for (keys, out) in keys.chunks(LOCKSTEP).zip(out.chunks_mut(LOCKSTEP)) {
            // The samples: top level in cache, then the runs in lockstep.
            found.clear();
            for key in keys {
                let (lo, hi) = s.find_run(buf, key);
                prefetch(&s.prefixes, lo + (hi - lo) / 2);
                found.push((lo, hi));
            }
            let mut busy = true;
            while busy {
                busy = false;
                for ((lo, hi), key) in found.iter_mut().zip(keys) {
                    if *lo < *hi {
                        let mid = *lo + (*hi - *lo) / 2;
                        if s.cmp(buf, mid, key) == Ordering::Less {
                            *lo = mid + 1;
                        } else {
                            *hi = mid;
                        }
                        if *lo < *hi {
                            prefetch(&s.prefixes, *lo + (*hi - *lo) / 2);
                            busy = true;
                        } else if *lo > 0 {
                            prefetch(&s.first, *lo - 1);
                        }
                    }
                }
            }
            let found = found.iter().map(|&(j, _)| j);
            for j in found.clone() {
                if j > 0 {
                    prefetch(&s.offsets, s.first[j - 1]);
                }
            }
            open.clear();
            for (i, j) in found.enumerate() {
                match self.window_before(j) {
                    Ok(at) => out[i] = at,
                    Err(w) => {
                        prefetch(buf, w.start(w.mid()));
                        open.push((i, w));
                    }
                }
            }
            while !open.is_empty() {
                open.retain_mut(|(i, w)| {
                    if w.lo < w.hi {
                        let mid = w.mid();
                        if w.line(buf, mid) < keys[*i] {
                            w.lo = mid + 1;
                        } else {
                            w.hi = mid;
                        }
                    }
                    if w.lo < w.hi {
                        prefetch(buf, w.start(w.mid()));
                        true
                    } else {
                        let at = w.start(w.lo);
                        // The range scan reads this line and the next.
                        for line in (0..ANSWER_PREFETCH).step_by(64) {
                            prefetch(buf, at + line);
                        }
                        out[*i] = at;
                        false
                    }
                });
            }
        }
        Ok(out)
    }

    /// The lines in `range`, in file order, each with its offset.
    pub fn range<'s, 'r>(&'s self, range: &'r KeyRange) -> Result<Range<'s, 'r>, Error> {
        let pos = self.lower_bound(&range.start)?;
        self.range_from(range, pos)
    }

    /// [`Search::range`] from `pos`, which must be
    /// `lower_bound(&range.start)` (as [`Search::lower_bounds`] gives it).
    pub fn range_from<'s, 'r>(
        &'s self,
        range: &'r KeyRange,
        pos: usize,
    ) -> Result<Range<'s, 'r>, Error> {
        let buf = self.data.as_ref();
        // The line before the answer must be below the range; if it is not,
        // the file is out of order right where we are asked to answer
        // (sampling proved the order of the whole file).
        let prev = if pos > self.body && !self.is_sampled() {
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
            proven: self.is_sampled(),
            done: false,
        })
    }
}

impl<D: AsRef<[u8]>> Search<D> {
    /// The lines in `range` no greater than `at_most` (when given), last
    /// first, each with its offset: two bisections (the range's start,
    /// and its end or `at_most`), then a scan backwards that checks each
    /// line against the one after it. The forward scan's answer
    /// ([`Search::range`]) reversed, read from the end: the last lines of
    /// a long range cost what its first ones do.
    pub fn range_rev(
        &self,
        range: &KeyRange,
        at_most: Option<&[u8]>,
    ) -> Result<RangeRev<'_>, Error> {
        let buf = self.data.as_ref();
        let lo = self.lower_bound(&range.start)?;
        let mut hi = match range.end_key() {
            Some(end) => self.lower_bound(&end)?,
            None => buf.len(),
        };
        if let Some(most) = at_most {
            // The smallest bytes above `most`.
            hi = hi.min(self.lower_bound(&[most, &[0][..]].concat())?);
        }
        // The line after the answer (if any) must not sort below its last
        // line: it is the scan's first comparison.
        let after = (hi < buf.len() && !self.is_sampled()).then(|| line_at(buf, hi).0);
        Ok(RangeRev {
            buf,
            lo: lo.max(self.body),
            end: hi.max(lo),
            after,
            order_end: self.order_end,
            proven: self.is_sampled(),
            done: false,
        })
    }
}

/// The line that ends at `end` (a line start, or the end of `buf`): its
/// start and its bytes without the LF.
fn line_before(buf: &[u8], end: usize) -> (usize, &[u8]) {
    let stop = if end > 0 && buf.get(end - 1) == Some(&b'\n') {
        end - 1
    } else {
        end
    };
    let start = line_start(buf, stop);
    (start, &buf[start..stop])
}

/// Iterator over the lines of a [`KeyRange`], last first (see
/// [`Search::range_rev`]), checking their order.
#[derive(Debug)]
pub struct RangeRev<'s> {
    buf: &'s [u8],
    /// The first line of the answer starts here.
    lo: usize,
    /// The next line handed out ends here.
    end: usize,
    /// The line handed out before (at first, the one after the range).
    after: Option<&'s [u8]>,
    order_end: Option<u8>,
    proven: bool,
    done: bool,
}

impl<'s> Iterator for RangeRev<'s> {
    type Item = Result<(usize, &'s [u8]), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.end <= self.lo {
            self.done = true;
            return None;
        }
        let (start, line) = line_before(self.buf, self.end);
        self.end = start;
        if !self.proven
            && self
                .after
                .is_some_and(|a| order_key(line, self.order_end) > order_key(a, self.order_end))
        {
            self.done = true;
            return Some(Err(Error::Unsorted {
                offset: start as u64,
                line: String::from_utf8_lossy(line).into_owned(),
            }));
        }
        self.after = Some(line);
        Some(Ok((start, line)))
    }
}

impl<D: AsRef<[u8]>> Search<D> {
    /// The lines pywb 2.10 answers for `range` from this file, in order or
    /// not (`pywb.utils.binsearch.iter_range`): a bisection over 8192-byte
    /// blocks comparing the key with the first whole line of each block,
    /// then a scan from the block it settles on that skips lines below the
    /// key and stops at the first line not below the range's end. Nothing
    /// is checked: on a sorted file the answer is [`Search::range`]'s, on
    /// one out of order it is what pywb finds there (for the CDX server,
    /// which answers as pywb does rather than fail). Lines come without
    /// trailing whitespace, as pywb strips them.
    pub fn pywb_range<'s, 'r>(&'s self, range: &'r KeyRange) -> PywbRange<'s, 'r> {
        const BLOCK: usize = 8192;
        let buf = self.data.as_ref();
        let key = &range.start[..];
        let (mut lo, mut hi) = (0, buf.len() / BLOCK);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let mut pos = mid * BLOCK;
            if mid > 0 {
                // The partial line at the block's start.
                pos = read_line(buf, pos).1;
            }
            // Python compares the key with the line and its LF.
            if key > read_line(buf, pos).0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let mut pos = lo * BLOCK;
        if lo > 0 {
            pos = read_line(buf, pos).1;
        }
        PywbRange {
            buf,
            pos,
            range,
            started: false,
            done: false,
        }
    }
}

/// Python's `readline` at `pos`: the line with its LF, and where the next
/// starts (empty at the end).
fn read_line(buf: &[u8], pos: usize) -> (&[u8], usize) {
    if pos >= buf.len() {
        return (&[], buf.len());
    }
    let end = memchr::memchr(b'\n', &buf[pos..]).map_or(buf.len(), |i| pos + i + 1);
    (&buf[pos..end], end)
}

/// The lines of [`Search::pywb_range`], each with its offset.
#[derive(Debug)]
pub struct PywbRange<'s, 'r> {
    buf: &'s [u8],
    pos: usize,
    range: &'r KeyRange,
    /// A line at or above the key was met.
    started: bool,
    done: bool,
}

impl<'s> Iterator for PywbRange<'s, '_> {
    type Item = (usize, &'s [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let at = self.pos;
            let (line, next) = read_line(self.buf, at);
            if line.is_empty() {
                self.done = true;
                break;
            }
            self.pos = next;
            let line = line.trim_ascii_end();
            if !self.started {
                if line < &self.range.start[..] {
                    continue;
                }
                self.started = true;
            }
            if !self.range.is_below_end(line) {
                self.done = true;
                break;
            }
            return Some((at, line));
        }
        None
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
    /// Sampling proved the file's order: no line needs checking, and the
    /// line after the range is judged by its first bytes.
    proven: bool,
    done: bool,
}

impl<'s> Iterator for Range<'s, '_> {
    type Item = Result<(usize, &'s [u8]), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.proven && self.range.is_past_head(self.lines.rest()) == Some(true) {
            self.done = true;
            return None;
        }
        let Some((offset, line)) = self.lines.next() else {
            self.done = true;
            return None;
        };
        if !self.proven
            && self
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
    fn disorder_near_the_ends_is_found_and_the_middle_is_not_read() {
        let s = Search::new(&b"!h\na 1\nc 1\nb 1\nd 1\n"[..]);
        assert_eq!(s.disorder_near_ends(1 << 10), Some((11, b"b 1".to_vec())));
        // Windows of 4 bytes: the head's first line and the line after it,
        // the tail's last line; `c b` is in neither.
        let s = Search::new(&b"a 1\nb 1\nd 1\nc 1\ne 1\nf 1\ng 1\n"[..]);
        assert_eq!(s.disorder_near_ends(4), None);
        assert_eq!(s.disorder_near_ends(14), Some((12, b"c 1".to_vec())));
        // At the very end, and without a last LF.
        let s = Search::new(&b"a 1\nb 1\nd 1\ne 1\nf 1\ng 1\nc 1"[..]);
        assert_eq!(s.disorder_near_ends(4), Some((24, b"c 1".to_vec())));
        for sorted in [&b""[..], b"!h\n", b"a 1", b"a 1\nb 2\n"] {
            assert_eq!(Search::new(sorted).disorder_near_ends(2), None);
        }
    }

    #[test]
    fn pywb_range_is_range_on_a_sorted_file_and_pywb_scan_on_another() {
        // More than two 8192-byte blocks, so the bisection runs.
        let mut data = Vec::new();
        for i in 0..3000 {
            data.extend_from_slice(format!("k{i:05} 2014\n").as_bytes());
        }
        let s = Search::new(&data[..]);
        for key in ["k00000", "k01234", "k02999", "k03000", "k0123", "a", "z"] {
            for m in [MatchType::Exact, MatchType::Prefix] {
                let r = KeyRange::new(key.as_bytes(), m);
                let checked: Vec<_> = s.range(&r).unwrap().map(|l| l.unwrap()).collect();
                let pywb: Vec<_> = s.pywb_range(&r).collect();
                assert_eq!(checked, pywb, "{key} {m:?}");
            }
        }
        // pywb's scan of a small file: lines below the key skipped, then
        // every line below the end, in file order.
        let s = Search::new(&b"b 1\na 1\nc 1\nb 2\nd 1\n"[..]);
        let r = KeyRange::new(b"b", MatchType::Exact);
        let got: Vec<&[u8]> = s.pywb_range(&r).map(|(_, l)| l).collect();
        assert_eq!(got, [&b"b 1"[..], b"a 1"]);
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
    fn sampling_reads_every_line_and_long_ones() {
        // A line longer than a window offset can hold, a last line without
        // LF, a header block and CR before the LF.
        let long = format!("c {}\n", "y".repeat(70_000));
        let data = format!("!h x\na 1\r\nb 2\n{long}d 1\nd 2\ne 3\nf");
        let plain = Search::new(data.as_bytes());
        for step in [1, 8, 1 << 20] {
            let mut s = Search::new(data.as_bytes());
            s.sample_in_parts(step, 1).unwrap();
            let keys = [
                "", "a", "a 1", "a 1\r", "b", "c", "c z", "d", "d 2", "e 3", "f", "f ", "g",
            ];
            for key in keys {
                assert_eq!(
                    s.lower_bound(key.as_bytes()).unwrap(),
                    plain.lower_bound(key.as_bytes()).unwrap(),
                    "{key:?} step {step}"
                );
            }
            let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
            let want: Vec<usize> = refs.iter().map(|k| plain.lower_bound(k).unwrap()).collect();
            assert_eq!(s.lower_bounds(&refs).unwrap(), want, "step {step}");
        }
        // Disorder inside a window, which no search would visit, is found.
        let mut s = Search::new(&b"a\nb\nd\nc\ne\n"[..]);
        assert!(matches!(
            s.sample_in_parts(1 << 20, 1),
            Err(Error::Unsorted { offset: 6, .. })
        ));
    }

    proptest::proptest! {
        #[test]
        fn sampled_lower_bound_equals_plain(
            mut lines in proptest::collection::vec("[a-c]{0,4}( [0-9]{1,3})?", 0..60),
            keys in proptest::collection::vec("[a-c]{0,5}", 1..20),
            step in 1usize..80,
            parts in 1usize..5,
            final_lf: bool,
        ) {
            lines.sort();
            let mut data = lines.join("\n");
            if final_lf && !data.is_empty() {
                data.push('\n');
            }
            let plain = Search::new(data.as_bytes());
            let mut s = Search::new(data.as_bytes());
            s.sample_in_parts(step, parts).unwrap();
            for key in &keys {
                proptest::prop_assert_eq!(
                    s.lower_bound(key.as_bytes()).unwrap(),
                    plain.lower_bound(key.as_bytes()).unwrap(),
                    "{:?}", key
                );
            }
            let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
            let one_by_one: Vec<usize> = refs.iter().map(|k| plain.lower_bound(k).unwrap()).collect();
            proptest::prop_assert_eq!(&s.lower_bounds(&refs).unwrap(), &one_by_one);
            proptest::prop_assert_eq!(&plain.lower_bounds(&refs).unwrap(), &one_by_one);
        }
    }

    proptest::proptest! {
        /// The backward scan is the forward one reversed, with or without
        /// a last LF, headers, empty lines, copies of a line, sampling, and
        /// an inclusive upper bound anywhere.
        #[test]
        fn range_rev_is_range_reversed(
            mut lines in proptest::collection::vec("[a-c]{0,4}( [0-9]{1,2})?", 0..50),
            key in "[a-c]{0,3}",
            most in proptest::option::of("[a-c]{0,4}( [0-9]{1,2})?"),
            m in 0usize..4,
            headers: bool,
            final_lf: bool,
            sampled: bool,
        ) {
            lines.sort();
            let mut data = if headers { "!meta x\n".to_string() } else { String::new() };
            data.push_str(&lines.join("\n"));
            if final_lf && !lines.is_empty() {
                data.push('\n');
            }
            let mut s = Search::new(data.as_bytes());
            if sampled {
                s.sample(8).unwrap();
            }
            let m = [MatchType::Exact, MatchType::Prefix, MatchType::Host, MatchType::Domain][m];
            let r = KeyRange::new(key.as_bytes(), m);
            let mut want: Vec<(usize, &[u8])> = s
                .range(&r)
                .unwrap()
                .map(Result::unwrap)
                .filter(|(_, l)| most.as_ref().map_or(true, |x| *l <= x.as_bytes()))
                .collect();
            want.reverse();
            let got: Vec<(usize, &[u8])> = s
                .range_rev(&r, most.as_deref().map(str::as_bytes))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn range_rev_reports_lines_out_of_order() {
        // Out of order where the bisections never look: the scan finds it.
        let s = Search::new(&b"a 1\nb 2\nb 1\nb 3\nc 1\nc 2\nc 3\nd 1\n"[..]);
        let r = KeyRange::new(b"b", MatchType::Exact);
        let got: Result<Vec<_>, _> = s.range_rev(&r, None).and_then(|it| it.collect());
        assert!(matches!(got, Err(Error::Unsorted { .. })), "{got:?}");
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
