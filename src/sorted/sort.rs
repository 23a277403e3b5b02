//! External sort: in-memory runs, spilled to temporary files, merged.
//!
//! A [`Run`] packs lines into one arena with a fixed-size [`Span`] per line,
//! so a run of n lines costs its bytes plus 24 bytes a line and no
//! allocation per line. Spans carry the first eight bytes of their line as
//! a big-endian integer: the sort compares those integers, and only the
//! lines that tie on them are read again, eight bytes further on, to sort
//! the tied group the same way (a radix step on eight bytes at a time).
//!
//! [`ExternalSorter`] fills a run up to its memory bound, sorts it, writes
//! it to an anonymous temporary file and starts the next; at the end it
//! merges the runs with [`Merge`] (several passes when there are more runs
//! than [`MAX_FAN_IN`], so the number of open files stays bounded). Equal
//! lines are equal bytes, so the output does not depend on where the runs
//! were cut: the bytes are the same for any memory bound and any number of
//! threads building runs.

use std::cmp::Ordering;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use super::merge::Merge;

/// Most runs merged at once; more are merged in several passes.
pub const MAX_FAN_IN: usize = 64;

/// Bytes of I/O buffer per run file during a merge.
const RUN_BUF: usize = 64 * 1024;

/// One line of a [`Run`]: where its bytes are, plus a sort prefix.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    prefix: u64,
    start: usize,
    len: usize,
}

/// Bytes a run spends on each line besides the line itself.
pub const SPAN_BYTES: usize = std::mem::size_of::<Span>();

/// Lines held in one arena, sortable in place.
#[derive(Debug, Default)]
pub struct Run {
    arena: Vec<u8>,
    spans: Vec<Span>,
}

impl Run {
    /// An empty run whose arena is reserved for `bytes` (the reservation
    /// is virtual memory until lines are written into it).
    pub fn with_capacity(bytes: usize) -> Run {
        Run {
            arena: Vec::with_capacity(bytes),
            spans: Vec::new(),
        }
    }

    /// Adds a line (no terminator).
    pub fn push(&mut self, line: &[u8]) {
        // Zero padding keeps the prefix order right for short lines: `ab`
        // (0x6162000000000000) sorts before `ab\0` only through the full
        // comparison, which `compare` falls back to on equal prefixes.
        let mut prefix = [0u8; 8];
        let n = line.len().min(8);
        prefix[..n].copy_from_slice(&line[..n]);
        self.spans.push(Span {
            prefix: u64::from_be_bytes(prefix),
            start: self.arena.len(),
            len: line.len(),
        });
        self.arena.extend_from_slice(line);
    }

    /// Bytes of lines plus spans: what the memory bound is counted against.
    /// Spans count at their capacity, as the vector holds that much.
    pub fn mem_used(&self) -> usize {
        self.arena.len() + self.spans.capacity() * SPAN_BYTES
    }

    /// What [`Run::mem_used`] would be after pushing a line of `len` bytes,
    /// counting the span vector's growth when it is full.
    pub fn mem_after_push(&self, len: usize) -> usize {
        let spans = if self.spans.len() == self.spans.capacity() {
            (self.spans.capacity() * 2).max(4)
        } else {
            self.spans.capacity()
        };
        self.arena.len() + len + spans * SPAN_BYTES
    }

    /// Number of lines.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether the run holds no line.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Forgets every line, keeping the allocations.
    pub fn clear(&mut self) {
        self.arena.clear();
        self.spans.clear();
    }

    /// The arena and the spans, for sorting with another strategy using
    /// [`Run::compare`] ([`Run::sort`] and [`Run::par_sort`] are the two
    /// this crate uses).
    pub fn parts_mut(&mut self) -> (&[u8], &mut [Span]) {
        (&self.arena, &mut self.spans)
    }

    /// Byte order of two spans of `arena`: the prefixes first, the full
    /// lines only when the prefixes tie. A shorter line whose bytes are a
    /// prefix of another sorts first, as in `LC_ALL=C sort`.
    pub fn compare(arena: &[u8], a: &Span, b: &Span) -> Ordering {
        a.prefix
            .cmp(&b.prefix)
            .then_with(|| Run::bytes(arena, a).cmp(Run::bytes(arena, b)))
    }

    fn bytes<'a>(arena: &'a [u8], span: &Span) -> &'a [u8] {
        arena
            .get(span.start..span.start + span.len)
            .unwrap_or_default()
    }

    /// Sorts the lines in byte order (single-threaded).
    ///
    /// Spans are sorted by their prefixes; each group of spans whose
    /// prefixes tie is then sorted by the next eight bytes of its lines,
    /// and so on (see `refine`): comparisons stay integer compares on
    /// the spans, and the arena is read once per line and tie level, in
    /// span order, instead of twice per comparison at random. Unstable is
    /// fine: spans with equal bytes are indistinguishable in the output,
    /// and it sorts in place (no scratch memory beyond the bound).
    pub fn sort(&mut self) {
        let (arena, spans) = self.parts_mut();
        spans.sort_unstable_by_key(|s| level_key(s, 0));
        for group in spans.chunk_by_mut(|a, b| level_key(a, 0) == level_key(b, 0)) {
            refine(arena, group);
        }
    }

    /// Sorts the lines in byte order on the current rayon pool: for a
    /// caller whose pool has idle threads (a pool whose threads wait on
    /// the caller would never run it). The same steps as [`Run::sort`],
    /// the tie groups refined in parallel.
    pub fn par_sort(&mut self) {
        use rayon::prelude::*;
        let (arena, spans) = self.parts_mut();
        spans.par_sort_unstable_by_key(|s| level_key(s, 0));
        spans
            .par_chunk_by_mut(|a, b| level_key(a, 0) == level_key(b, 0))
            .for_each(|group| refine(arena, group));
    }

    /// The lines in their current order.
    ///
    /// Sorted, the order jumps around the arena: each line read also
    /// touches the line a few places ahead, so that its cache misses
    /// overlap with the work on the lines before it.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.spans.iter().enumerate().map(|(i, s)| {
            if let Some(ahead) = self.spans.get(i + AHEAD) {
                std::hint::black_box(self.arena.get(ahead.start).copied());
            }
            Run::bytes(&self.arena, s)
        })
    }

    /// Writes the lines, LF-terminated, in their current order.
    pub fn write_to(&self, wtr: &mut impl Write) -> io::Result<()> {
        for line in self.iter() {
            wtr.write_all(line)?;
            wtr.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// Lines ahead that [`Run::iter`] touches.
const AHEAD: usize = 8;

/// Eight bytes of `span`'s line from byte `8 * depth`, zero-padded, as a
/// big-endian integer (at depth 0, the span's prefix).
fn chunk(arena: &[u8], span: &Span, depth: usize) -> u64 {
    let from = (8 * depth).min(span.len);
    let bytes = arena
        .get(span.start + from..span.start + span.len.min(from + 8))
        .unwrap_or_default();
    let mut word = [0u8; 8];
    word[..bytes.len()].copy_from_slice(bytes);
    u64::from_be_bytes(word)
}

/// The sort key of a span whose `prefix` holds its line's bytes from
/// `8 * depth` ([`chunk`]), among spans whose lines agree before that:
/// those bytes, then how many of them the line has, 9 for a line that goes
/// on past them. Zero padding makes `ab` and `ab\0` tie on the bytes; the
/// count puts the shorter first. Spans with equal keys below 9 hold equal
/// lines; spans with equal keys of 9 are told apart by the next level.
fn level_key(span: &Span, depth: usize) -> (u64, usize) {
    (span.prefix, span.len.saturating_sub(8 * depth).min(9))
}

/// Sorts a group of spans that tie on their prefixes (all with one
/// [`level_key`] at depth 0): by the next eight bytes of their lines, then
/// the groups that tie again by the eight after, and so on, with a stack
/// rather than recursion (a long common prefix makes a deep one). The
/// prefixes are put back when done, so that [`Run::compare`] still holds.
fn refine(arena: &[u8], group: &mut [Span]) {
    let Some(first) = group.first() else { return };
    if group.len() < 2 || level_key(first, 0).1 < 9 {
        return;
    }
    let prefix = first.prefix;
    // Sub-ranges of `group` whose lines agree on their first `8 * depth`
    // bytes and go on past them.
    let mut todo = vec![(0, group.len(), 1)];
    while let Some((from, to, depth)) = todo.pop() {
        let part = &mut group[from..to];
        for i in 0..part.len() {
            // The next spans' lines are read next: ask for them early.
            if let Some(ahead) = part.get(i + AHEAD) {
                std::hint::black_box(arena.get(ahead.start + 8 * depth).copied());
            }
            let next = chunk(arena, &part[i], depth);
            part[i].prefix = next;
        }
        part.sort_unstable_by_key(|s| level_key(s, depth));
        let mut at = from;
        for tie in part.chunk_by(|a, b| level_key(a, depth) == level_key(b, depth)) {
            if tie.len() > 1 && level_key(&tie[0], depth).1 == 9 {
                todo.push((at, at + tie.len(), depth + 1));
            }
            at += tie.len();
        }
    }
    for span in group {
        span.prefix = prefix;
    }
}

/// Writes a sorted run to a new anonymous temporary file (deleted when
/// dropped) and returns it rewound.
pub fn spill(run: &Run, tmp_dir: Option<&Path>) -> io::Result<File> {
    let file = match tmp_dir {
        Some(dir) => tempfile::tempfile_in(dir)?,
        None => tempfile::tempfile()?,
    };
    let mut wtr = BufWriter::with_capacity(RUN_BUF, file);
    run.write_to(&mut wtr)?;
    let mut file = wtr.into_inner().map_err(|e| e.into_error())?;
    file.rewind()?;
    Ok(file)
}

/// Merges sorted run files down to at most [`MAX_FAN_IN`] files, merging
/// the excess in passes through new temporary files.
///
/// Each pass cuts the number of runs by the fan-in, so even a tiny memory
/// bound on a huge input needs few passes, and open files stay bounded.
pub fn reduce_runs(mut runs: Vec<File>, tmp_dir: Option<&Path>) -> io::Result<Vec<File>> {
    while runs.len() > MAX_FAN_IN {
        let mut next = Vec::new();
        let mut rest = runs.into_iter().peekable();
        while rest.peek().is_some() {
            let group: Vec<File> = rest.by_ref().take(MAX_FAN_IN).collect();
            let mut merge = merge_runs(group)?;
            let file = match tmp_dir {
                Some(dir) => tempfile::tempfile_in(dir)?,
                None => tempfile::tempfile()?,
            };
            let mut wtr = BufWriter::with_capacity(RUN_BUF, file);
            merge.write_to(&mut wtr, false).map_err(io::Error::other)?;
            let mut file = wtr.into_inner().map_err(|e| e.into_error())?;
            file.rewind()?;
            next.push(file);
        }
        runs = next;
    }
    Ok(runs)
}

/// A merge over run files (no headers: runs hold data lines only).
pub fn merge_runs(runs: Vec<File>) -> io::Result<Merge<BufReader<File>>> {
    let inputs = runs.into_iter().enumerate().map(|(i, f)| {
        (
            format!("temporary run {i}"),
            BufReader::with_capacity(RUN_BUF, f),
        )
    });
    Merge::new(inputs, false).map_err(io::Error::other)
}

/// Sorts lines (without terminators) in byte order with bounded memory.
///
/// Lines are kept in memory until about `mem_limit` bytes (lines plus
/// [`SPAN_BYTES`] each) are held, then the run is sorted and spilled to a
/// temporary file in `tmp_dir` (the system's when `None`). Single-threaded;
/// the CLI builds runs in parallel from the same parts ([`Run`], [`spill`],
/// [`reduce_runs`], [`merge_runs`]).
#[derive(Debug)]
pub struct ExternalSorter {
    mem_limit: usize,
    tmp_dir: Option<PathBuf>,
    run: Run,
    spilled: Vec<File>,
}

impl ExternalSorter {
    /// A sorter holding at most about `mem_limit` bytes of lines in memory.
    pub fn new(mem_limit: usize, tmp_dir: Option<PathBuf>) -> ExternalSorter {
        ExternalSorter {
            mem_limit,
            tmp_dir,
            run: Run::default(),
            spilled: Vec::new(),
        }
    }

    /// Adds one line (no terminator).
    pub fn push(&mut self, line: &[u8]) -> io::Result<()> {
        // Spill before the push that would cross the bound, so the bound
        // holds; a single line larger than the bound still gets a run of
        // its own rather than an error.
        if !self.run.is_empty() && self.run.mem_after_push(line.len()) > self.mem_limit {
            self.run.sort();
            let file = spill(&self.run, self.tmp_dir.as_deref())?;
            self.spilled.push(file);
            self.run.clear();
        }
        self.run.push(line);
        Ok(())
    }

    /// Number of runs written to temporary files so far.
    pub fn spilled_runs(&self) -> usize {
        self.spilled.len()
    }

    /// All lines pushed, in byte order.
    pub fn finish(mut self) -> io::Result<impl Iterator<Item = io::Result<Vec<u8>>>> {
        // Everything fitted: no file was touched and none will be.
        if self.spilled.is_empty() {
            self.run.sort();
            return Ok(Sorted::Memory {
                run: self.run,
                next: 0,
            });
        }
        Ok(Sorted::Merged(Box::new(self.finish_merge()?)))
    }

    /// Hands every line pushed to `f`, in byte order, without copying the
    /// lines held in memory; those are sorted on the current rayon pool
    /// (see [`Run::par_sort`]).
    pub fn par_for_each_sorted<E: From<io::Error>>(
        mut self,
        mut f: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.spilled.is_empty() {
            self.run.par_sort();
            let spans = &self.run.spans;
            for (i, span) in spans.iter().enumerate() {
                // Touch a line a few ahead: the sorted order jumps around
                // the arena, and this overlaps those cache misses.
                if let Some(ahead) = spans.get(i + 8) {
                    std::hint::black_box(self.run.arena.get(ahead.start).copied());
                }
                f(Run::bytes(&self.run.arena, span))?;
            }
            return Ok(());
        }
        let mut merge = self.finish_merge()?;
        while let Some(line) = merge.next().map_err(io::Error::other)? {
            f(line)?;
        }
        Ok(())
    }

    /// Spills the lines still held and merges every run.
    fn finish_merge(mut self) -> io::Result<Merge<BufReader<File>>> {
        if !self.run.is_empty() {
            self.run.sort();
            let file = spill(&self.run, self.tmp_dir.as_deref())?;
            self.spilled.push(file);
        }
        drop(self.run);
        let runs = reduce_runs(self.spilled, self.tmp_dir.as_deref())?;
        merge_runs(runs)
    }
}

/// The output of [`ExternalSorter::finish`].
enum Sorted {
    Memory { run: Run, next: usize },
    Merged(Box<Merge<BufReader<File>>>),
}

impl Iterator for Sorted {
    type Item = io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<io::Result<Vec<u8>>> {
        match self {
            Sorted::Memory { run, next } => {
                let span = run.spans.get(*next)?;
                *next += 1;
                Some(Ok(Run::bytes(&run.arena, span).to_vec()))
            }
            Sorted::Merged(merge) => match merge.next() {
                Ok(line) => line.map(|l| Ok(l.to_vec())),
                Err(err) => Some(Err(io::Error::other(err))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ties_fall_back_to_bytes() {
        let mut run = Run::default();
        for l in [
            &b"abcdefgh2"[..],
            b"abcdefgh",
            b"abcdefgh1",
            b"",
            b"abc",
            b"\xff",
        ] {
            run.push(l);
        }
        run.sort();
        let got: Vec<&[u8]> = run.iter().collect();
        assert_eq!(
            got,
            vec![
                &b""[..],
                b"abc",
                b"abcdefgh",
                b"abcdefgh1",
                b"abcdefgh2",
                b"\xff"
            ]
        );
    }

    #[test]
    fn spills_and_merges() {
        let mut s = ExternalSorter::new(100, None);
        let mut want = Vec::new();
        for i in 0..500u32 {
            let line = format!("k{} {}", (i * 7919) % 263, i).into_bytes();
            s.push(&line).unwrap();
            want.push(line);
        }
        assert!(s.spilled_runs() > MAX_FAN_IN, "{}", s.spilled_runs());
        want.sort();
        let got: Vec<Vec<u8>> = s.finish().unwrap().collect::<io::Result<_>>().unwrap();
        assert_eq!(got, want);
    }

    /// The lines in byte order, held in memory or spilled (the parallel
    /// sort runs on rayon's global pool here).
    #[test]
    fn par_for_each_sorted_in_memory_and_spilled() {
        for mem in [100, 1 << 20] {
            let mut s = ExternalSorter::new(mem, None);
            let mut want = Vec::new();
            for i in 0..5000u32 {
                let line = format!("com,k{})/{} {}", (i * 7919) % 263, i % 7, i).into_bytes();
                s.push(&line).unwrap();
                want.push(line);
            }
            assert_eq!(s.spilled_runs() > 0, mem == 100);
            want.sort();
            let mut got = Vec::new();
            s.par_for_each_sorted(|l| {
                got.push(l.to_vec());
                Ok::<_, io::Error>(())
            })
            .unwrap();
            assert_eq!(got, want, "memory bound {mem}");
        }
    }

    /// Lines over a tiny alphabet (zero bytes included) share long
    /// prefixes and tie at every level: both sorts agree with a plain sort
    /// of the bytes, and leave the prefixes as [`Run::compare`] reads them.
    #[test]
    fn refined_sorts_match_plain_sort() {
        use proptest::prelude::*;
        let line = proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), Just(b'b')], 0..40);
        let lines = proptest::collection::vec(line, 0..300);
        proptest!(ProptestConfig::with_cases(200), |(lines in lines, par in any::<bool>())| {
            let mut run = Run::default();
            for l in &lines {
                run.push(l);
            }
            if par {
                run.par_sort();
            } else {
                run.sort();
            }
            let mut want = lines.clone();
            want.sort();
            let got: Vec<&[u8]> = run.iter().collect();
            prop_assert_eq!(got, want.iter().map(Vec::as_slice).collect::<Vec<_>>());
            let (arena, spans) = run.parts_mut();
            for w in spans.windows(2) {
                prop_assert_ne!(Run::compare(arena, &w[0], &w[1]), Ordering::Greater);
            }
        });
    }
}
