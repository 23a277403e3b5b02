//! K-way merge of sorted record streams, summing the records of one key.
//!
//! Used to merge maps of shards (`ukvs mementomap merge`) and, inside
//! generation, to fold late records back into the in-order stream.
//!
//! URI-M counts of different shards never overlap (a memento lives in one
//! shard), so they add exactly. URI-R counts may: the same URL can be
//! captured in two shards. Unless the caller asserts that the shards are
//! key-disjoint, summed URI-R counts become upper bounds (`-`). Wildcard
//! keys of different shards are kept side by side; lookup picks the most
//! specific.

use std::io::{self, BufRead, Read, Write};

use super::record::Record;
use super::Error;

/// One sorted input stream.
pub type Source = Box<dyn Iterator<Item = Result<Record, Error>>>;

/// Merges sorted streams into one strictly increasing stream.
pub struct Merger {
    sources: Vec<Source>,
    heads: Vec<Option<Record>>,
    overlapping: bool,
    started: bool,
    error: Option<Error>,
    counts: Vec<u64>,
    /// Key of the record last taken from each source, for the order check.
    last: Vec<Vec<u8>>,
}

impl Merger {
    /// Merges `sources`; `disjoint` asserts no URL is in two sources.
    pub fn new(sources: Vec<Source>, disjoint: bool) -> Merger {
        let n = sources.len();
        Merger {
            sources,
            heads: (0..n).map(|_| None).collect(),
            overlapping: !disjoint,
            started: false,
            error: None,
            counts: vec![0; n],
            last: vec![Vec::new(); n],
        }
    }

    /// Pulls the next record of source `i` into its head slot, checking
    /// that the source is sorted.
    fn advance(&mut self, i: usize) -> Result<(), Error> {
        let next = match self.sources[i].next() {
            None => None,
            Some(r) => Some(r?),
        };
        if let Some(next) = &next {
            if self.counts[i] > 0 && next.key < self.last[i] {
                return Err(Error::Unsorted {
                    line: self.counts[i] + 1,
                    previous: String::from_utf8_lossy(&self.last[i]).into_owned(),
                    key: String::from_utf8_lossy(&next.key).into_owned(),
                });
            }
            self.last[i].clear();
            self.last[i].extend_from_slice(&next.key);
        }
        self.counts[i] += 1;
        self.heads[i] = next;
        Ok(())
    }

    fn next_record(&mut self) -> Result<Option<Record>, Error> {
        if !self.started {
            self.started = true;
            for i in 0..self.sources.len() {
                self.advance(i)?;
            }
        }
        // The smallest head; k is small (shards), so a scan beats a heap.
        let mut min: Option<usize> = None;
        for (i, h) in self.heads.iter().enumerate() {
            if let Some(h) = h {
                if min.map_or(true, |m| {
                    self.heads[m].as_ref().is_some_and(|mh| h.key < mh.key)
                }) {
                    min = Some(i);
                }
            }
        }
        let Some(first) = min else {
            return Ok(None);
        };
        let Some(mut out) = self.heads[first].take() else {
            return Ok(None);
        };
        self.advance(first)?;
        // Fold every record with the same key, from any source (a source
        // may itself repeat a key: late records of generation do).
        loop {
            let mut found = false;
            for i in 0..self.heads.len() {
                while self.heads[i].as_ref().is_some_and(|h| h.key == out.key) {
                    if let Some(h) = self.heads[i].take() {
                        // Repeats inside one source are disjoint runs of
                        // one generation; across sources they may overlap.
                        let overlap = self.overlapping && i != first;
                        out.absorb(&h, overlap);
                        self.advance(i)?;
                        found = true;
                    }
                }
            }
            if !found {
                break;
            }
        }
        Ok(Some(out))
    }
}

impl Iterator for Merger {
    type Item = Result<Record, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.error.is_some() {
            return self.error.take().map(Err);
        }
        match self.next_record() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => None,
            Err(e) => {
                // Report once, then end.
                self.heads.iter_mut().for_each(|h| *h = None);
                self.sources.clear();
                Some(Err(e))
            }
        }
    }
}

/// Folds `late` records (sorted by key; a key may repeat) of disjoint URLs
/// into the map lines `main` (strictly increasing keys), writing one
/// sorted stream to `out`. The lines between two late keys are found by
/// binary search and copied in one piece, so the cost grows with the late
/// records, not with `main`.
pub fn fold_records(
    main: &[u8],
    late: impl IntoIterator<Item = Result<Record, Error>>,
    out: &mut impl Write,
) -> Result<Summary, Error> {
    let mut lines = memchr::memchr_iter(b'\n', main).count() as u64;
    lines += u64::from(!main.is_empty() && !main.ends_with(b"\n"));
    let body = main.strip_suffix(b"\n").unwrap_or(main);
    let last = memchr::memrchr(b'\n', body).map_or(0, |i| i + 1);
    let search = |pos: usize, key: &[u8]| pos + key_lower_bound(&main[pos..], key);
    fold_with(main, lines, last, search, late, out)
}

/// [`fold_records`] for map lines whose starts are known (`starts`, in
/// order, one per line of `main`, every line ending in LF): the searches
/// compare keys at those starts, with no scan for the lines' ends.
pub fn fold_indexed_records(
    main: &[u8],
    starts: &[u32],
    late: impl IntoIterator<Item = Result<Record, Error>>,
    out: &mut impl Write,
) -> Result<Summary, Error> {
    let last = starts.last().map_or(0, |&s| s as usize);
    // Searches move forward: each starts at the line the last one found,
    // and gallops, as late keys land a few lines apart.
    let mut from = 0;
    let search = |_pos: usize, key: &[u8]| {
        from += gallop(&starts[from..], |&s| key_below(main, s as usize, key));
        starts.get(from).map_or(main.len(), |&s| s as usize)
    };
    fold_with(main, starts.len() as u64, last, search, late, out)
}

/// [`slice::partition_point`] found from the front: `below` is tested at
/// 1, 2, 4, ... elements, then the last of those steps is searched. An
/// answer `n` elements in costs about 2 log2(n) tests, all near the front
/// of `v` (in the CPU's cache when the front was just read), where a
/// search of the whole of `v` costs log2(v.len()) tests across all of it.
fn gallop<T>(v: &[T], mut below: impl FnMut(&T) -> bool) -> usize {
    // Everything before `lo` is below.
    let mut lo = 0;
    let mut step = 1;
    loop {
        let probe = lo + step - 1;
        match v.get(probe) {
            Some(x) if below(x) => {
                lo = probe + 1;
                step *= 2;
            }
            Some(_) => return lo + v[lo..probe].partition_point(below),
            None => return lo + v[lo..].partition_point(below),
        }
    }
}

/// Whether the key of the map line that starts at `start` of `text` sorts
/// below `key`: the line's first bytes compared with `key`, with a search
/// for the end of the line's key only when they compare greater (a key
/// that ends there, before a byte of `key` below the space, is below it).
pub(crate) fn key_below(text: &[u8], start: usize, key: &[u8]) -> bool {
    let line = &text[start..];
    let head = &line[..key.len().min(line.len())];
    match head.cmp(key) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Equal => false,
        std::cmp::Ordering::Greater => match memchr::memchr2(b' ', b'\n', head) {
            Some(end) => head[..end] == key[..end],
            None => false,
        },
    }
}

/// The key of the map line that starts at `start` of `text`.
pub(crate) fn key_at(text: &[u8], start: usize) -> &[u8] {
    let line = &text[start..];
    &line[..memchr::memchr2(b' ', b'\n', line).unwrap_or(line.len())]
}

/// The fold of [`fold_records`] over `main` of `lines` lines, the last
/// starting at `last`; `search(pos, key)` gives the start of the first
/// line from `pos` on whose key is `>= key`.
fn fold_with(
    main: &[u8],
    lines: u64,
    last: usize,
    mut search: impl FnMut(usize, &[u8]) -> usize,
    late: impl IntoIterator<Item = Result<Record, Error>>,
    out: &mut impl Write,
) -> Result<Summary, Error> {
    let mut done = Summary {
        lines,
        ..Summary::default()
    };
    if !main.is_empty() {
        done.first = Some(key_at(main, 0).to_vec());
        done.last = key_at(main, last).to_vec();
    }
    let mut late = late.into_iter().peekable();
    let mut pos = 0;
    let mut buf = Vec::new();
    let mut prev: Option<Vec<u8>> = None;
    while let Some(rec) = late.next() {
        let mut rec = rec?;
        absorb_equal(&mut rec, &mut late)?;
        if prev.as_ref().is_some_and(|p| rec.key < *p) {
            return Err(Error::Unsorted {
                line: 0,
                previous: String::from_utf8_lossy(prev.as_deref().unwrap_or_default()).into_owned(),
                key: String::from_utf8_lossy(&rec.key).into_owned(),
            });
        }
        let at = search(pos, &rec.key);
        out.write_all(&main[pos..at])?;
        if at == main.len() && at > pos && !main.ends_with(b"\n") {
            // A last line without LF, followed by a late record.
            out.write_all(b"\n")?;
        }
        pos = at;
        let line_end = memchr::memchr(b'\n', &main[pos..]).map_or(main.len(), |i| pos + i);
        let line = &main[pos..line_end];
        if !line.is_empty() && key_at(line, 0) == rec.key {
            let mut held = Record::parse(line, 0)?;
            held.absorb(&rec, false);
            rec = held;
            pos = (line_end + 1).min(main.len());
        } else {
            done.lines += 1;
            if done.first.as_ref().map_or(true, |f| rec.key < *f) {
                done.first = Some(rec.key.clone());
            }
            if rec.key > done.last {
                done.last.clone_from(&rec.key);
            }
        }
        buf.clear();
        rec.write_to(&mut buf);
        out.write_all(&buf)?;
        prev = Some(rec.key);
    }
    out.write_all(&main[pos..])?;
    if pos < main.len() && !main.ends_with(b"\n") {
        out.write_all(b"\n")?;
    }
    Ok(done)
}

/// [`fold_records`] for map lines read from `main`, a window of about
/// `window` bytes of whole lines at a time: each window takes the late
/// records up to its last key (the last window all that are left), so
/// memory stays bounded by the window and the longest line, and a few
/// late records cost little more than a copy of the map.
pub fn fold_records_from(
    main: impl Read,
    window: usize,
    late: impl IntoIterator<Item = Result<Record, Error>>,
    out: &mut impl Write,
) -> Result<Summary, Error> {
    let mut late = late.into_iter().peekable();
    let mut summary = Summary::default();
    let mut fold_window = |lines: &[u8], last: bool| -> Result<(), Error> {
        let body = lines.strip_suffix(b"\n").unwrap_or(lines);
        let last_line = &body[memchr::memrchr(b'\n', body).map_or(0, |i| i + 1)..];
        let last_key = &last_line[..memchr::memchr(b' ', last_line).unwrap_or(last_line.len())];
        let taken = std::iter::from_fn(|| {
            late.next_if(|r| last || r.as_ref().map_or(true, |r| r.key.as_slice() <= last_key))
        });
        summary.append(fold_records(lines, taken, out)?)
    };
    let mut r = io::BufReader::with_capacity(window.max(1), main);
    let mut long = Vec::new();
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        match memchr::memrchr(b'\n', chunk) {
            Some(i) => {
                fold_window(&chunk[..=i], false)?;
                r.consume(i + 1);
            }
            None => {
                // The rest of a line the buffer cut (the buffer keeps it
                // without refilling), a line longer than the buffer, or a
                // last line without LF.
                long.clear();
                r.read_until(b'\n', &mut long)?;
                fold_window(&long, false)?;
            }
        }
    }
    fold_window(b"", true)?;
    Ok(summary)
}

/// The start of the first line of `text` (map lines in key order) whose
/// key is `>= key`, by binary search (the end when none). Keys are
/// compared, not whole lines: a key may go on with a byte below the space
/// that ends another.
pub(crate) fn key_lower_bound(text: &[u8], key: &[u8]) -> usize {
    // Lines starting before `lo` have smaller keys, lines starting at or
    // after `hi` do not; `lo` is a line start.
    let (mut lo, mut hi) = (0, text.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let start = memchr::memrchr(b'\n', &text[lo..mid]).map_or(lo, |i| lo + i + 1);
        let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |i| start + i);
        let line = &text[start..end];
        if key_at(line, 0) < key {
            lo = (end + 1).min(text.len());
        } else {
            hi = start;
        }
    }
    lo
}

/// Adds into `rec` the records at the head of `late` with its key.
fn absorb_equal(
    rec: &mut Record,
    late: &mut std::iter::Peekable<impl Iterator<Item = Result<Record, Error>>>,
) -> Result<(), Error> {
    while late
        .peek()
        .is_some_and(|h| h.as_ref().is_ok_and(|h| h.key == rec.key))
    {
        if let Some(h) = late.next() {
            rec.absorb(&h?, false);
        }
    }
    Ok(())
}

/// A sorted stream of map lines written: how many lines, their first and
/// last keys.
#[derive(Debug, Default, PartialEq)]
pub struct Summary {
    pub lines: u64,
    pub first: Option<Vec<u8>>,
    pub last: Vec<u8>,
}

/// One sorted stream of map lines for [`fold`].
pub enum Lines<'a> {
    /// Lines of a reader.
    Read(Box<dyn BufRead + 'a>),
    /// Lines one by one (no terminator).
    Iter(Box<dyn Iterator<Item = io::Result<Vec<u8>>> + 'a>),
}

impl Lines<'_> {
    /// The next line, without its LF, into `buf`; false at the end.
    fn next_into(&mut self, buf: &mut Vec<u8>) -> io::Result<bool> {
        match self {
            Lines::Read(r) => {
                buf.clear();
                if r.read_until(b'\n', buf)? == 0 {
                    return Ok(false);
                }
                if buf.last() == Some(&b'\n') {
                    buf.pop();
                }
                Ok(true)
            }
            Lines::Iter(it) => match it.next() {
                None => Ok(false),
                Some(line) => {
                    *buf = line?;
                    Ok(true)
                }
            },
        }
    }
}

/// The head line of one source of [`fold`].
struct Head {
    line: Vec<u8>,
    key_end: usize,
    line_no: u64,
    live: bool,
}

impl Head {
    fn key(&self) -> &[u8] {
        &self.line[..self.key_end]
    }
}

/// Merges sorted map lines of disjoint URL sets (the parts of one
/// generation, or its in-order lines and the late ones) into one strictly
/// increasing stream on `out`; a source may repeat a key. Records of one
/// key add exactly. A line whose key no other line has is copied as it is,
/// unparsed, so that folding costs far less than a [`Merger`] over parsed
/// records.
pub fn fold(mut sources: Vec<Lines<'_>>, out: &mut impl Write) -> Result<Summary, Error> {
    let mut heads: Vec<Head> = (0..sources.len())
        .map(|_| Head {
            line: Vec::new(),
            key_end: 0,
            line_no: 0,
            live: true,
        })
        .collect();
    let advance = |i: usize, heads: &mut [Head], sources: &mut [Lines<'_>]| -> Result<(), Error> {
        let h = &mut heads[i];
        h.live = sources[i].next_into(&mut h.line)?;
        if h.live {
            h.line_no += 1;
            h.key_end = memchr::memchr(b' ', &h.line).unwrap_or(h.line.len());
        }
        Ok(())
    };
    for i in 0..heads.len() {
        advance(i, &mut heads, &mut sources)?;
    }
    // The line last taken is written once the next one has another key
    // (an unsorted source then shows as a key below it).
    let mut held = Held {
        line: Vec::new(),
        key_end: 0,
        line_no: 0,
        rec: None,
        done: Summary::default(),
        buf: Vec::new(),
    };
    loop {
        let mut min: Option<usize> = None;
        for (i, h) in heads.iter().enumerate() {
            if h.live && min.map_or(true, |m| h.key() < heads[m].key()) {
                min = Some(i);
            }
        }
        let Some(m) = min else { break };
        let h = &mut heads[m];
        if held.key() == Some(h.key()) {
            let mut rec = match held.rec.take() {
                Some(rec) => rec,
                None => Record::parse(&held.line, held.line_no)?,
            };
            rec.absorb(&Record::parse(&h.line, h.line_no)?, false);
            held.rec = Some(rec);
        } else {
            held.write(out)?;
            std::mem::swap(&mut held.line, &mut h.line);
            held.key_end = h.key_end;
            held.line_no = h.line_no;
        }
        advance(m, &mut heads, &mut sources)?;
    }
    held.write(out)?;
    Ok(held.done)
}

/// The line [`fold`] holds back: as read, or parsed and combined.
struct Held {
    line: Vec<u8>,
    key_end: usize,
    /// Its line number in its source.
    line_no: u64,
    rec: Option<Record>,
    done: Summary,
    buf: Vec<u8>,
}

impl Held {
    fn key(&self) -> Option<&[u8]> {
        match &self.rec {
            Some(r) => Some(&r.key),
            None if self.line.is_empty() => None,
            None => Some(&self.line[..self.key_end]),
        }
    }

    /// Writes the held line out; nothing is held after.
    fn write(&mut self, out: &mut impl Write) -> Result<(), Error> {
        if let Some(rec) = self.rec.take() {
            self.buf.clear();
            rec.write_to(&mut self.buf);
            out.write_all(&self.buf)?;
            self.done.note(&rec.key)?;
        } else if !self.line.is_empty() {
            out.write_all(&self.line)?;
            out.write_all(b"\n")?;
            self.done.note(&self.line[..self.key_end])?;
        }
        self.line.clear();
        Ok(())
    }
}

impl Summary {
    /// Counts a line with key `key`, which must follow the last one.
    pub fn note(&mut self, key: &[u8]) -> Result<(), Error> {
        if self.first.is_some() && key <= self.last.as_slice() {
            return Err(Error::Unsorted {
                line: self.lines + 1,
                previous: String::from_utf8_lossy(&self.last).into_owned(),
                key: String::from_utf8_lossy(key).into_owned(),
            });
        }
        if self.first.is_none() {
            self.first = Some(key.to_vec());
        }
        self.last.clear();
        self.last.extend_from_slice(key);
        self.lines += 1;
        Ok(())
    }

    /// Counts the lines `next` summarises, written after these.
    pub fn append(&mut self, next: Summary) -> Result<(), Error> {
        if let Some(first) = &next.first {
            if self.first.is_some() && *first <= self.last {
                return Err(Error::Unsorted {
                    line: self.lines + 1,
                    previous: String::from_utf8_lossy(&self.last).into_owned(),
                    key: String::from_utf8_lossy(first).into_owned(),
                });
            }
            if self.first.is_none() {
                self.first = next.first;
            }
            self.last = next.last;
            self.lines += next.lines;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src<S: AsRef<str>>(lines: &[S]) -> Source {
        let v: Vec<Result<Record, Error>> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| Record::parse(l.as_ref().as_bytes(), i as u64 + 1))
            .collect();
        Box::new(v.into_iter())
    }

    fn merged(sources: Vec<Source>, disjoint: bool) -> Vec<String> {
        Merger::new(sources, disjoint)
            .map(|r| String::from_utf8(r.unwrap().to_line()).unwrap())
            .collect()
    }

    #[test]
    fn gallop_finds_the_partition_point() {
        for len in 0..70usize {
            let v: Vec<usize> = (0..len).collect();
            for split in 0..=len {
                let mut tests = 0;
                let got = gallop(&v, |&x| {
                    tests += 1;
                    x < split
                });
                assert_eq!(got, split, "len {len}");
                // About 2 log2(split) tests, whatever the length.
                let bound = 2 * (usize::BITS - split.leading_zeros()) + 2;
                assert!(
                    tests <= bound as usize,
                    "len {len} split {split}: {tests} tests"
                );
            }
        }
    }

    #[test]
    fn sums_equal_keys_with_overlap_rules() {
        let a = src(&["com,a)/ 2/1", "com,b)/ 1/1"]);
        let b = src(&["com,a)/ 3/1", "com,c)/ 1/1"]);
        assert_eq!(
            merged(vec![a, b], false),
            ["com,a)/ 5/2-\n", "com,b)/ 1/1\n", "com,c)/ 1/1\n"]
        );
        let a = src(&["com,a)/ 2/1"]);
        let b = src(&["com,a)/ 3/1"]);
        assert_eq!(merged(vec![a, b], true), ["com,a)/ 5/2\n"]);
    }

    #[test]
    fn detects_unsorted_sources() {
        let a = src(&["com,b)/ 1", "com,a)/ 1"]);
        let out: Vec<_> = Merger::new(vec![a], true).collect();
        assert!(out.iter().any(|r| matches!(r, Err(Error::Unsorted { .. }))));
    }

    #[test]
    fn empty_and_single_sources() {
        assert!(merged(vec![], true).is_empty());
        assert_eq!(
            merged(vec![src::<&str>(&[]), src(&["k 1"])], true),
            ["k 1\n"]
        );
    }

    /// Sorted map lines in `k` sources: keys from a small alphabet, so
    /// that sources share keys and one source repeats a key (as the late
    /// records of a generation do); some lines carry a decomposition.
    fn sources() -> impl proptest::strategy::Strategy<Value = Vec<Vec<String>>> {
        use proptest::prelude::*;
        // A byte below the space in keys: a key that goes on past another
        // with it sorts after it, though its byte sorts before the space.
        let line = (
            "com,[ab]\\)/[ab\\x01-]{0,2}",
            1u64..9,
            0u64..3,
            any::<bool>(),
        )
            .prop_map(|(key, m, r, by)| match by {
                true => format!("{key} {m}/{r} {{\"datetime\":{{\"2014\":\"{m}/{r}\"}}}}"),
                false => format!("{key} {m}/{r}"),
            });
        proptest::collection::vec(proptest::collection::vec(line, 0..12), 1..4).prop_map(|mut v| {
            for (i, s) in v.iter_mut().enumerate() {
                s.sort_by(|a, b| a.split(' ').next().cmp(&b.split(' ').next()));
                if i > 0 {
                    // Later sources: one line per key.
                    s.dedup_by(|a, b| a.split(' ').next() == b.split(' ').next());
                }
            }
            v
        })
    }

    /// Keys, not whole lines, are compared: a late key that goes on past
    /// a held key with a byte below the space sorts after it.
    #[test]
    fn fold_records_compares_keys() {
        let main = b"com,a)/a 1/1\ncom,a)/b 1/1\n";
        let late = || vec![Record::parse(b"com,a)/a\x01 2/1", 1)];
        let mut out = Vec::new();
        let done = fold_records(main, late(), &mut out).unwrap();
        assert_eq!(out, b"com,a)/a 1/1\ncom,a)/a\x01 2/1\ncom,a)/b 1/1\n");
        assert_eq!(done.lines, 3);
        assert_eq!(done.first.as_deref(), Some(&b"com,a)/a"[..]));
        let mut indexed = Vec::new();
        let again = fold_indexed_records(main, &[0, 13], late(), &mut indexed).unwrap();
        assert_eq!(indexed, out);
        assert_eq!(again, done);
    }

    proptest::proptest! {
        /// Folding text lines gives what the record merger gives for
        /// disjoint URLs, and counts what it wrote.
        #[test]
        fn fold_equals_merger(srcs in sources()) {
            let expected = merged(srcs.iter().map(|s| src(s)).collect(), true);
            let texts: Vec<String> = srcs.iter().map(|s| s.iter().map(|l| format!("{l}\n")).collect()).collect();
            let mut out = Vec::new();
            let done = fold(
                texts.iter().map(|t| Lines::Read(Box::new(t.as_bytes()))).collect(),
                &mut out,
            )
            .unwrap();
            let got: Vec<String> = String::from_utf8(out).unwrap().lines().map(|l| format!("{l}\n")).collect();
            proptest::prop_assert_eq!(&got, &expected);
            proptest::prop_assert_eq!(done.lines as usize, expected.len());
            let key = |l: &String| l.split(' ').next().unwrap_or_default().as_bytes().to_vec();
            proptest::prop_assert_eq!(done.first, expected.first().map(key));
            proptest::prop_assert_eq!(done.last, expected.last().map(key).unwrap_or_default());
        }

        /// Folding records into lines by binary search gives the same.
        #[test]
        fn fold_records_equals_merger(srcs in sources(), lf_at_end in proptest::prelude::any::<bool>()) {
            let main: Vec<String> = srcs.get(1).cloned().unwrap_or_default();
            let late: Vec<String> = srcs[0].clone();
            let expected = merged(vec![src(&main), src(&late)], true);
            let mut text: String = main.iter().map(|l| format!("{l}\n")).collect();
            if !lf_at_end {
                text.pop();
            }
            let mut out = Vec::new();
            let late_recs = || late.iter().map(|l| Record::parse(l.as_bytes(), 1));
            let done = fold_records(text.as_bytes(), late_recs(), &mut out).unwrap();
            proptest::prop_assert_eq!(String::from_utf8(out.clone()).unwrap(), expected.concat());
            proptest::prop_assert_eq!(done.lines as usize, expected.len());
            if lf_at_end {
                // With the lines' starts given, the same fold.
                let mut starts = vec![0u32];
                starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i as u32 + 1));
                starts.pop();
                let mut indexed = Vec::new();
                let again = fold_indexed_records(text.as_bytes(), &starts, late_recs(), &mut indexed).unwrap();
                proptest::prop_assert_eq!(indexed, out);
                proptest::prop_assert_eq!(again, done);
            }
        }

        /// Folding a map read a few bytes at a time gives what folding it
        /// whole gives: late keys equal to the first or last key of a
        /// window, before the first line and past the last, an empty map,
        /// a last line without LF.
        #[test]
        fn fold_records_from_equals_fold_records(
            srcs in sources(),
            window in 1usize..48,
            lf_at_end in proptest::prelude::any::<bool>(),
        ) {
            let mut text: String = srcs.get(1).cloned().unwrap_or_default().iter().map(|l| format!("{l}\n")).collect();
            if !lf_at_end {
                text.pop();
            }
            let late = || srcs[0].iter().map(|l| Record::parse(l.as_bytes(), 1)).collect::<Vec<_>>();
            let mut whole = Vec::new();
            let expected = fold_records(text.as_bytes(), late(), &mut whole).unwrap();
            let mut out = Vec::new();
            let done = fold_records_from(text.as_bytes(), window, late(), &mut out).unwrap();
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), String::from_utf8(whole).unwrap());
            proptest::prop_assert_eq!(done.lines, expected.lines);
            proptest::prop_assert_eq!(done.first, expected.first);
            proptest::prop_assert_eq!(done.last, expected.last);
        }
    }
}
