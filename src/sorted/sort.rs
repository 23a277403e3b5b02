//! External sort: in-memory runs, spilled to temporary files, merged.
//!
//! A [`Run`] packs lines into one arena with a fixed-size [`Span`] per line,
//! so a run of n lines costs its bytes plus 24 bytes a line and no
//! allocation per line. Spans carry the first eight bytes of their line as
//! a big-endian integer: most comparisons are settled by one integer
//! compare without touching the arena.
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
    /// Unstable is fine: spans with equal bytes are indistinguishable in
    /// the output, and it sorts in place (no scratch memory beyond the
    /// bound).
    pub fn sort(&mut self) {
        let (arena, spans) = self.parts_mut();
        spans.sort_unstable_by(|a, b| Run::compare(arena, a, b));
    }

    /// Sorts the lines in byte order on the current rayon pool: for a
    /// caller whose pool has idle threads (a pool whose threads wait on
    /// the caller would never run it).
    pub fn par_sort(&mut self) {
        use rayon::slice::ParallelSliceMut;
        let (arena, spans) = self.parts_mut();
        spans.par_sort_unstable_by(|a, b| Run::compare(arena, a, b));
    }

    /// The lines in their current order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.spans.iter().map(|s| Run::bytes(&self.arena, s))
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
    let inputs = runs
        .into_iter()
        .enumerate()
        .map(|(i, f)| (format!("run {i}"), BufReader::with_capacity(RUN_BUF, f)));
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
}
