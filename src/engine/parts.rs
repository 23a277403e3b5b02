//! Reading one large sorted file with several threads: where to cut it
//! into parts (between hosts, or at least between SURTs, so that no URL
//! is in two parts), how each part's lines are read (in place from the
//! file's map, or through one small buffer), and how the parts are shared
//! out among threads, the largest first, and shared again when a thread
//! runs out.

use std::fs::File;
use std::io::{self, Read};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use memmap2::Mmap;

use super::fs::{map_file, read_full_at, Behind};
use crate::ukvs::LineReader;

/// What the parts of a file are read from: its map, which it holds for
/// as long as the parts are read, or the file.
pub enum PartInput<'a> {
    /// The file's map: lines are read in place ([`for_each_mapped_line`]).
    Mapped(Arc<Mmap>),
    /// The file, with positioned reads through a buffer
    /// ([`for_each_read_line`]).
    Read(&'a File),
}

impl<'a> PartInput<'a> {
    /// `file`'s parts read from its map; from the file itself with
    /// `no_mmap`, or when it cannot be mapped. Mapped once the cuts are
    /// found, so that every cut lies within the map.
    pub fn open(file: &'a File, no_mmap: bool) -> PartInput<'a> {
        let map = match no_mmap {
            true => None,
            false => map_file(file, memmap2::Advice::Normal).ok().flatten(),
        };
        map.map_or(PartInput::Read(file), |m| PartInput::Mapped(Arc::new(m)))
    }

    /// Whether the parts are read from a map.
    pub fn is_mapped(&self) -> bool {
        matches!(self, PartInput::Mapped(_))
    }
}

/// The lines of part `span` of `input`, each with its 1-based number in
/// the part (see [`for_each_mapped_line`] and [`for_each_read_line`]).
pub fn for_each_part_line<E: From<io::Error>>(
    input: &PartInput<'_>,
    span: &Span,
    f: impl FnMut(&[u8], u64) -> Result<(), E>,
) -> Result<(), E> {
    match input {
        PartInput::Mapped(map) => for_each_mapped_line(map, span, f),
        PartInput::Read(file) => for_each_read_line(file, span, f),
    }
}

/// What a part's reader says when the file ends before the part does:
/// another process cut it short after the parts were cut.
const CUT_SHORT: &str = "the file was cut short while it was read";

/// The error a part's reader gives when the file ends before the part.
fn cut_short() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, CUT_SHORT)
}

/// Bytes a mapped part's reader takes from its span at a time: a thread
/// that shares the part cuts it after them.
const MAPPED_STEP: usize = 256 << 10;

/// Bytes of a mapped part left mapped behind its reader before they are
/// given back.
const MAPPED_BEHIND: usize = 1 << 20;

/// The lines of a part of the file mapped as `map` (starting at a line
/// start), each with its 1-based number in the part, read in place: the
/// bytes are read once, by the line search, and never copied. The pages
/// read are given back every [`MAPPED_BEHIND`] bytes ([`Behind`]), so the
/// resident memory of a thread stays within a few MiB however large the
/// file; each release stops the other threads to flush their TLBs, about
/// a hundred times for 100 MB.
///
/// Against [`for_each_read_line`], which copies each byte into its buffer
/// before the line search reads it again, this saves about a tenth of
/// MementoMap generation's time, both for a file just written (cached in
/// 4 KiB pages, where a fault maps 16 of them) and for one read back from
/// the disk (in large folios, where a fault maps hundreds of KiB).
///
/// The part is `span`, whose end another thread may move back while it
/// is read (see [`shared_parts`]): the reader asks the span how far it may
/// go every [`MAPPED_STEP`] bytes.
pub fn for_each_mapped_line<E: From<io::Error>>(
    map: &Arc<Mmap>,
    span: &Span,
    mut f: impl FnMut(&[u8], u64) -> Result<(), E>,
) -> Result<(), E> {
    let bytes: &[u8] = map;
    let mut behind = Behind::starting_at(Arc::clone(map), span.from, MAPPED_BEHIND);
    let Ok(from) = usize::try_from(span.from) else {
        return Err(cut_short().into());
    };
    // The next line starts at `start`; no LF lies in `start..scanned`.
    let (mut start, mut scanned, mut end) = (from, from, from);
    let mut no = 0;
    loop {
        let got = span.reserve(end as u64, MAPPED_STEP);
        if got == 0 {
            break;
        }
        if got > bytes.len().saturating_sub(end) {
            return Err(cut_short().into());
        }
        end += got;
        while let Some(i) = memchr::memchr(b'\n', &bytes[scanned..end]) {
            let nl = scanned + i;
            no += 1;
            f(&bytes[start..nl], no)?;
            start = nl + 1;
            scanned = start;
        }
        scanned = end;
        behind.release_below(start as u64);
    }
    if start < end {
        no += 1;
        f(&bytes[start..end], no)?;
    }
    behind.release_all_below(end as u64);
    Ok(())
}

/// The lines of a part of `file` (starting at a line start), each with
/// its 1-based number in the part, read through one buffer of a few
/// hundred KiB (positioned reads, so threads share the file), for files
/// that are not mapped: a part is read once, front to back, into a buffer
/// that stays in the CPU's cache. The resident memory stays flat however
/// large the file.
///
/// The part is `span`, whose end another thread may move back while it
/// is read (see [`shared_parts`]): each read asks the span how far it may go.
pub fn for_each_read_line<E: From<io::Error>>(
    file: &File,
    span: &Span,
    mut f: impl FnMut(&[u8], u64) -> Result<(), E>,
) -> Result<(), E> {
    const BUF: usize = 256 << 10;
    let part = PartRead {
        file,
        span,
        pos: span.from,
    };
    let mut lines = LineReader::starting_at(BUF, part, span.from);
    let mut no = 0;
    while let Some(line) = lines.next_line()? {
        no += 1;
        f(line, no)?;
    }
    Ok(())
}

/// The bytes of a part, as a stream read with `pread` from `pos` to the
/// part's end as it is at each read.
struct PartRead<'a> {
    file: &'a File,
    span: &'a Span,
    pos: u64,
}

impl Read for PartRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // Nothing after the reserved bytes is moved away from this part,
        // so once they reach its end, that end stays: none are left, and
        // the read gives 0 bytes, the end of the stream.
        let want = self.span.reserve(self.pos, buf.len());
        let got = read_full_at(self.file, &mut buf[..want], self.pos)?;
        if got < want {
            // The part's bytes were there when it was cut.
            return Err(cut_short());
        }
        self.pos += got as u64;
        Ok(got)
    }
}

/// Bytes `from..end` of a file, read by one thread as a part. With
/// [`shared_parts`], another thread may take the rest of the part from a
/// cut ahead of what was read, moving `end` back to that cut.
pub struct Span {
    pub from: u64,
    bounds: Mutex<Bounds>,
}

#[derive(Clone, Copy)]
struct Bounds {
    /// Bytes up to here were handed to the reader: a cut goes after them.
    reserved: u64,
    end: u64,
}

impl Span {
    /// The bytes `from..end` of a file (`from` a line start), read by one
    /// reader unless [`shared_parts`] shares them.
    pub fn new(from: u64, end: u64) -> Span {
        let bounds = Bounds {
            reserved: from,
            end,
        };
        Span {
            from,
            bounds: Mutex::new(bounds),
        }
    }

    fn bounds(&self) -> std::sync::MutexGuard<'_, Bounds> {
        lock(&self.bounds)
    }

    /// The end of the part as it is now.
    #[cfg(test)]
    fn end(&self) -> u64 {
        self.bounds().end
    }

    /// How many of `want` bytes from `pos` (where the reader is) it may
    /// read; they are its own from now on.
    pub fn reserve(&self, pos: u64, want: usize) -> usize {
        let mut b = self.bounds();
        let n = usize::try_from(b.end.saturating_sub(pos)).map_or(want, |n| n.min(want));
        b.reserved = b.reserved.max(pos + n as u64);
        n
    }
}

/// A part is shared only when this much of it is still unread: less takes
/// too little time to be worth a search for a cut and a part of its own.
const SHARE_FROM: u64 = 2 << 20;

/// How many times, at most, the threads of [`shared_parts`] share a part.
pub const SHARES_MAX: usize = 4;

/// `work` on every part of `parts` of `file` on `threads` threads, the
/// largest first, so that a large part does not start last; then a thread
/// left without a part takes the rest of the part with the most left to
/// read from the edge of a host near the middle of that rest, at most
/// [`SHARES_MAX`] times: the threads then end together, not one of them a
/// part's worth later (or later still, when the machine gave it less
/// time). Parts cut between hosts give maps that follow each other, as
/// the first cuts do ([`cuts_between_surts`]). The results are in the
/// order of the parts in the file, with what `meanwhile` gave, run by
/// the calling thread while the others read.
pub fn shared_parts<T: Send, E: Send, R>(
    file: &File,
    parts: &[(u64, u64)],
    threads: usize,
    work: impl Fn(&Span) -> Result<T, E> + Sync,
    meanwhile: impl FnOnce() -> R,
) -> (Vec<Result<T, E>>, R) {
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(parts[i].1 - parts[i].0));
    let next = AtomicUsize::new(0);
    let shares = AtomicUsize::new(SHARES_MAX);
    let running: Mutex<Vec<Arc<Span>>> = Mutex::new(Vec::new());
    let results: Mutex<Vec<(u64, Result<T, E>)>> = Mutex::new(Vec::new());
    let done = std::thread::scope(|scope| {
        for _ in 0..threads.min(parts.len()) {
            scope.spawn(|| loop {
                let span = match order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    Some(&i) => Arc::new(Span::new(parts[i].0, parts[i].1)),
                    None => {
                        let busiest = lock(&running)
                            .iter()
                            .max_by_key(|s| {
                                let b = s.bounds();
                                b.end.saturating_sub(b.reserved)
                            })
                            .cloned();
                        match busiest.and_then(|s| share(file, &s, &shares)) {
                            Some(span) => Arc::new(span),
                            None => break,
                        }
                    }
                };
                lock(&running).push(Arc::clone(&span));
                let r = work(&span);
                lock(&running).retain(|s| !Arc::ptr_eq(s, &span));
                lock(&results).push((span.from, r));
            });
        }
        meanwhile()
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(from, _)| *from);
    (results.into_iter().map(|(_, r)| r).collect(), done)
}

/// The value `m` guards, whether or not a thread panicked holding it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The rest of `span` from a host's edge near the middle of what is left
/// of it to read, taken from it (its end moves back to the edge); `None`
/// when too little is left, no host's edge is in it, or the reader got
/// past the edge while it was searched.
fn share(file: &File, span: &Span, shares: &AtomicUsize) -> Option<Span> {
    let Bounds { reserved, end } = *span.bounds();
    let left = end.saturating_sub(reserved);
    if left < SHARE_FROM {
        return None;
    }
    let cut = Probe::new(file).ok()?.host_edge_within(reserved, end)?;
    let mut b = span.bounds();
    if cut <= b.reserved || cut >= b.end {
        return None;
    }
    shares
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
        .ok()?;
    let end = std::mem::replace(&mut b.end, cut);
    Some(Span::new(cut, end))
}

/// Parts of a large input per thread.
const PARTS_PER_THREAD: usize = 4;

/// Files smaller than this are read in one part by the MementoMap jobs.
pub const PARALLEL_FROM: u64 = 32 << 20;

/// Where to cut a sorted file into about `parts` parts read in parallel:
/// offsets from 0 to the end of the file, each at the start of a line
/// whose SURT (first field) differs from the line before, so that every
/// URL is in one part. Files smaller than `parallel_from` give one part.
///
/// Cuts fall between two hosts (SURTs up to their `)`) where one is near:
/// keys the query cut moves back stay within their host, so such parts
/// give maps that follow each other in key order. The searches read the
/// file a few KiB at a time (a memory map would keep the page-cache
/// folios around every probe resident).
pub fn cuts_between_surts(file: &File, threads: usize, parallel_from: u64) -> io::Result<Vec<u64>> {
    match cuts(file, threads, parallel_from) {
        // A line too long to probe cheaply: one part (such lines are
        // absurd input, not worth a parallel read).
        Err(e) if e.get_ref().is_some_and(|i| i.is::<LongLine>()) => {
            Ok(vec![0, file.metadata()?.len()])
        }
        other => other,
    }
}

fn cuts(file: &File, threads: usize, parallel_from: u64) -> io::Result<Vec<u64>> {
    let mut f = Probe::new(file)?;
    let len = f.len;
    let mut cuts = vec![0];
    if threads >= 2 && len >= parallel_from {
        let parts = (threads * PARTS_PER_THREAD) as u64;
        let span = len / parts;
        for i in 1..parts {
            let prev = cuts.last().copied().unwrap_or(0);
            if let Some(at) = f.host_edge_near(span * i)?.filter(|&e| e > prev && e < len) {
                cuts.push(at);
            }
        }
        cuts.push(len);
        // A host of more than a thread's share is cut between SURTs
        // (its parts' maps then fold together).
        let share = len / threads as u64;
        let mut fine = vec![0];
        for w in cuts.windows(2) {
            let (from, to) = (w[0], w[1]);
            if to - from > share {
                let mut at = from;
                while at < to && to - at > span {
                    at = f.next_surt_start(at + span)?;
                    if at < to {
                        fine.push(at);
                    }
                }
            }
            fine.push(to);
        }
        fine.dedup();
        return Ok(fine);
    }
    cuts.push(len);
    Ok(cuts)
}

/// Bytes a cut search reads at a time.
const PROBE_READ: u64 = 2 << 10;

/// The longest line a cut search reads; a longer one gives up the search
/// ([`LongLine`]) and the file is read as one part.
const PROBE_LINE_MAX: usize = 1 << 20;

/// A line over [`PROBE_LINE_MAX`] met by a cut search.
#[derive(Debug)]
struct LongLine;

impl std::fmt::Display for LongLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a line too long to cut the file beside")
    }
}

impl std::error::Error for LongLine {}

/// Reads lines of a sorted file at chosen offsets, for the cuts.
struct Probe<'f> {
    file: &'f File,
    len: u64,
    /// The bytes last read, from file offset `buf_at`: a binary search
    /// step reads the line after an offset, then that line again.
    buf: Vec<u8>,
    buf_at: u64,
}

impl<'f> Probe<'f> {
    fn new(file: &'f File) -> io::Result<Probe<'f>> {
        Ok(Probe {
            file,
            len: file.metadata()?.len(),
            buf: Vec::new(),
            buf_at: 0,
        })
    }

    /// The line that starts at `at` (without its LF), read in blocks.
    fn line_at(&mut self, at: u64) -> io::Result<&[u8]> {
        let held = at
            .checked_sub(self.buf_at)
            .and_then(|off| usize::try_from(off).ok())
            .filter(|&off| off <= self.buf.len());
        if let Some(off) = held {
            let at_end = self.buf_at + self.buf.len() as u64 >= self.len;
            match memchr::memchr(b'\n', &self.buf[off..]) {
                Some(i) => return Ok(&self.buf[off..off + i]),
                None if at_end => return Ok(&self.buf[off..]),
                None => {}
            }
        }
        self.buf.clear();
        self.buf_at = at;
        loop {
            let have = self.buf.len();
            self.buf.resize(have + PROBE_READ as usize, 0);
            let n = read_full_at(self.file, &mut self.buf[have..], at + have as u64)?;
            self.buf.truncate(have + n);
            if let Some(i) = memchr::memchr(b'\n', &self.buf[have..]) {
                return Ok(&self.buf[..have + i]);
            }
            if n == 0 {
                return Ok(&self.buf);
            }
            if self.buf.len() > PROBE_LINE_MAX {
                return Err(io::Error::other(LongLine));
            }
        }
    }

    /// The start of the first line after offset `at` (the end when none).
    fn line_start_after(&mut self, at: u64) -> io::Result<u64> {
        let len = self.line_at(at)?.len() as u64;
        Ok((at + len + 1).min(self.len))
    }

    /// The first line start whose line is `>= key` (a binary search over
    /// line starts; headers sort before any SURT).
    fn lower_bound(&mut self, key: &[u8]) -> io::Result<u64> {
        // Lines starting before `lo` are < key, those starting at or after
        // `hi` are >= key; `lo` is a line start.
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let at = match mid {
                0 => 0,
                _ => self.line_start_after(mid - 1)?,
            };
            if at >= hi {
                // No line starts in mid..hi.
                hi = mid;
                continue;
            }
            let line = self.line_at(at)?;
            if line < key {
                lo = (at + line.len() as u64 + 1).min(self.len);
            } else {
                hi = at;
            }
        }
        Ok(lo)
    }

    /// The edge of the run of lines of the host of the line after
    /// `target` nearer to `target` (`None` when the first field is no
    /// SURT).
    fn host_edge_near(&mut self, target: u64) -> io::Result<Option<u64>> {
        let Some([first, end]) = self.host_edges(target)? else {
            return Ok(None);
        };
        Ok(Some(
            if target - first.min(target) <= end.saturating_sub(target) {
                first
            } else {
                end
            },
        ))
    }

    /// Where the run of lines of the host of the line after `target`
    /// starts and ends (`None` when the first field is no SURT).
    fn host_edges(&mut self, target: u64) -> io::Result<Option<[u64; 2]>> {
        let start = self.line_start_after(target)?;
        let line = self.line_at(start)?;
        let field = &line[..memchr::memchr(b' ', line).unwrap_or(line.len())];
        let Some(close) = memchr::memchr(b')', field) else {
            return Ok(None);
        };
        let mut host = field[..=close].to_vec();
        let first = self.lower_bound(&host)?;
        // Every line of the host starts with `host)`; `host*` follows them.
        host[close] = b')' + 1;
        let end = self.lower_bound(&host)?;
        Ok(Some([first, end]))
    }

    /// The edge of the host of the line after the middle of `lo..hi`
    /// nearer to that middle, of those strictly inside `lo..hi`.
    fn host_edge_within(&mut self, lo: u64, hi: u64) -> Option<u64> {
        let middle = lo + (hi - lo) / 2;
        let edges = self.host_edges(middle).ok()??;
        edges
            .into_iter()
            .filter(|&e| e > lo && e < hi)
            .min_by_key(|e| e.abs_diff(middle))
    }

    /// The first line start after `at` where the SURT changes (the end
    /// when none).
    fn next_surt_start(&mut self, at: u64) -> io::Result<u64> {
        let pos = self.line_start_after(at)?;
        if pos >= self.len {
            return Ok(self.len);
        }
        // The lines of one SURT are `surt ...`, and `surt!` follows them
        // (`!` is the byte after the space).
        let line = self.line_at(pos)?;
        let mut past = line[..memchr::memchr(b' ', line).unwrap_or(line.len())].to_vec();
        past.push(b'!');
        let end = self.lower_bound(&past)?;
        match end > pos {
            true => Ok(end),
            // Not sorted here: the next line.
            false => self.line_start_after(pos),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ukvs::LINE_ALIGN;
    use std::io::Write;

    /// A thread left without a part takes the rest of a part from the
    /// edge of a host: every line is read once, in the part it falls in,
    /// and the results come in the order of the file; so with parts read
    /// or mapped.
    #[test]
    fn an_idle_thread_takes_the_rest_of_a_part() {
        for mapped in [false, true] {
            idle_thread_takes_the_rest(mapped);
        }
    }

    fn idle_thread_takes_the_rest(mapped: bool) {
        let mut data = Vec::new();
        for i in 0..120_000u32 {
            let line = format!("com,h{:04})/p{:06} 20200101000000 {{}}\n", i / 40, i);
            data.extend_from_slice(line.as_bytes());
        }
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&data).unwrap();
        // The first host's 40 lines.
        let small = memchr::memchr_iter(b'\n', &data).nth(39).unwrap() as u64 + 1;
        let parts = [(0, small), (small, data.len() as u64)];
        let input = PartInput::open(&file, !mapped);
        assert_eq!(input.is_mapped(), mapped);
        let input = &input;
        let read = |span: &Span| {
            // The large part (from `small`) waits before its first read,
            // long enough for the thread of the small one to share it.
            let wait = if span.from == small { 300 } else { 50 };
            std::thread::sleep(std::time::Duration::from_millis(wait));
            let mut lines = Vec::new();
            for_each_part_line::<anyhow::Error>(input, span, |line, _| {
                lines.push(line.to_vec());
                Ok(())
            })?;
            Ok::<_, anyhow::Error>((span.from, span.end(), lines))
        };
        let (results, ()) = shared_parts(&file, &parts, 2, read, || ());
        let parts: Vec<(u64, u64, Vec<Vec<u8>>)> =
            results.into_iter().map(Result::unwrap).collect();
        assert!(parts.len() > 2, "no part was shared (mapped: {mapped})");
        let host = |line: &[u8]| line[..line.iter().position(|&b| b == b')').unwrap()].to_vec();
        let mut all = Vec::new();
        for w in parts.windows(2) {
            // Each part ends where the next starts, between two hosts.
            assert_eq!(w[0].1, w[1].0);
            assert_ne!(host(w[0].2.last().unwrap()), host(&w[1].2[0]));
        }
        for (_, _, lines) in parts {
            all.extend(lines);
        }
        let expected: Vec<Vec<u8>> = data
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        assert!(all == expected, "mapped: {mapped}");
    }

    /// A thread that shares a part moves its end back while it is read:
    /// the reader, mapped or not, stops at the new end, however far it
    /// has read past what it took from the span before.
    #[test]
    fn a_reader_stops_where_its_end_was_moved_back() {
        let mut data = Vec::new();
        for i in 0..40_000u32 {
            data.extend_from_slice(
                format!("com,h{:05})/p{i:06} 20200101000000 {{}}\n", i).as_bytes(),
            );
        }
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&data).unwrap();
        let starts: Vec<usize> = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', &data).map(|i| i + 1))
            .collect();
        // A line start well past the first steps of either reader.
        let cut = starts[starts.partition_point(|&s| s < data.len() * 3 / 4)];
        assert!(cut > 4 * MAPPED_STEP && cut < data.len());
        let inputs = [PartInput::open(&file, false), PartInput::Read(&file)];
        assert!(inputs[0].is_mapped(), "a regular file maps");
        for input in inputs {
            let mapped = input.is_mapped();
            let span = Span::new(0, data.len() as u64);
            let mut got = Vec::new();
            for_each_part_line::<anyhow::Error>(&input, &span, |line, _| {
                if got.is_empty() {
                    let mut b = span.bounds();
                    assert!(
                        b.reserved < cut as u64,
                        "mapped {mapped}: all taken at once"
                    );
                    b.end = cut as u64;
                }
                got.extend_from_slice(line);
                got.push(b'\n');
                Ok(())
            })
            .unwrap();
            assert!(
                got == data[..cut],
                "mapped {mapped}: {} bytes read, cut at {cut}",
                got.len()
            );
        }
    }

    /// A span past the end of the file (the file was cut short after the
    /// cuts were found) is an error, mapped or read, not a read out of
    /// bounds nor a part that ends early unnoticed.
    #[test]
    fn a_span_past_the_files_end_is_an_error() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"a 1\nb 2\n").unwrap();
        let inputs = [PartInput::open(&file, false), PartInput::Read(&file)];
        assert!(inputs[0].is_mapped(), "a regular file maps");
        for input in inputs {
            let mut lines = 0;
            let err = for_each_part_line::<anyhow::Error>(&input, &Span::new(4, 20), |_, _| {
                lines += 1;
                Ok(())
            })
            .unwrap_err();
            assert!(format!("{err:#}").contains("cut short"), "{err:#}");
            assert_eq!(lines, 0);
        }
    }

    /// A part, read through the buffer or mapped, gives its lines with
    /// their numbers: lines across buffer fills and the mapped reader's
    /// steps, a line longer than either, empty lines, a last line without
    /// LF, parts inside the file. Every line lies at an address congruent
    /// to its offset in the file modulo [`LINE_ALIGN`], as the reads that
    /// bring it land (see `read_gap`), or as the map holds it.
    #[test]
    fn read_lines_are_the_parts_lines() {
        let mut data = Vec::new();
        for i in 0..20_000u32 {
            data.extend_from_slice(format!("com,h{})/p{} {}\n", i % 977, i, i * 7).as_bytes());
            if i % 5000 == 0 {
                data.push(b'\n');
                data.extend(std::iter::repeat(b'x').take(700 << 10));
                data.push(b'\n');
            }
        }
        data.extend_from_slice(b"zz,last)/ no-lf");
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&data).unwrap();
        let len = data.len();
        let mid = data[..len / 2].iter().rposition(|&b| b == b'\n').unwrap() + 1;
        let inputs = [PartInput::Read(&file), PartInput::open(&file, false)];
        assert!(inputs[1].is_mapped(), "a regular file maps");
        for ((from, to), input) in [(0, len), (0, mid), (mid, len)]
            .into_iter()
            .flat_map(|part| inputs.iter().map(move |input| (part, input)))
        {
            let mapped = input.is_mapped();
            let mut got: Vec<(Vec<u8>, u64)> = Vec::new();
            let (mut offset, mut misaligned) = (from, 0);
            let span = Span::new(from as u64, to as u64);
            for_each_part_line::<anyhow::Error>(input, &span, |line, no| {
                misaligned +=
                    usize::from((line.as_ptr() as usize).wrapping_sub(offset) % LINE_ALIGN != 0);
                offset += line.len() + 1;
                got.push((line.to_vec(), no));
                Ok(())
            })
            .unwrap();
            assert_eq!(
                misaligned, 0,
                "part {from}..{to}, mapped {mapped}: lines off their file offsets"
            );
            let part = &data[from..to];
            let part = part.strip_suffix(b"\n").unwrap_or(part);
            let expected: Vec<(Vec<u8>, u64)> = part
                .split(|&b| b == b'\n')
                .map(<[u8]>::to_vec)
                .zip(1..)
                .collect();
            assert_eq!(
                got.len(),
                expected.len(),
                "part {from}..{to}, mapped {mapped}"
            );
            assert!(got == expected, "part {from}..{to}, mapped {mapped}");
        }
    }
}
