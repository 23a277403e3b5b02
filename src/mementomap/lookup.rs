//! Looking a URL up in a MementoMap: binary search for each candidate key,
//! most specific first; the first entry found decides.
//!
//! The map is any `AsRef<[u8]>` (a memory map in production, a `Vec` in
//! tests); nothing is loaded or parsed up front except the header lines.
//! A `0` / `0/N` entry found before any wider entry means "not held", which
//! is how archives publish exclusions under a positive wildcard.
//!
//! Unlike the reference, a key sorting after the last line is simply not
//! found, and the search never needs the map to be a file.

use super::freq::{Count, Frequency};
use super::key::{candidates, first_candidate};
use super::record::Record;
use super::Error;
use crate::sorted::lines::line_at;
use crate::sorted::Search;

/// A map ready for lookups.
pub struct Map<D: AsRef<[u8]>> {
    search: Search<D>,
    keep_query: bool,
    /// Answers for the widest candidates (`tld,*`, `*`), which every miss
    /// asks again: few distinct keys, so a small memo saves two full
    /// searches per uncovered query.
    /// Behind a lock so that one map serves lookups from many threads.
    memo: std::sync::Mutex<std::collections::HashMap<Vec<u8>, Option<usize>>>,
    /// On a sampled map: every key ending in `*` with the offset of its
    /// first line (see [`wild_keys`]). Every candidate but the first is
    /// such a key, so a query the map does not hold as it is costs one
    /// search, not one per candidate.
    wild: Option<rustc_hash::FxHashMap<Vec<u8>, usize>>,
    /// Key columns per `!fields` (2 in the columns layout, where a key has
    /// one line per bucket and a total line).
    key_columns: usize,
    /// The `!fields` key names (empty when the map does not say).
    key_names: Vec<String>,
}

/// The lines of `key` in the columns layout from `offset` on: each line's
/// bucket (second column) and frequency (third).
fn bucket_lines<'a>(
    data: &'a [u8],
    offset: usize,
    key: &'a [u8],
) -> impl Iterator<Item = (&'a [u8], Frequency)> + 'a {
    let mut pos = offset;
    std::iter::from_fn(move || {
        if pos >= data.len() {
            return None;
        }
        let (line, next) = line_at(data, pos);
        if key_of(line) != key {
            return None;
        }
        pos = if next > pos { next } else { data.len() };
        let mut fields = line.split(|&b| b == b' ').filter(|f| !f.is_empty());
        let _ = fields.next();
        let bucket = fields.next().unwrap_or_default();
        let freq = fields
            .next()
            .and_then(|f| Frequency::parse(f).ok())
            .unwrap_or_default();
        Some((bucket, freq))
    })
}

/// The entry that answered a lookup.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The matched key.
    pub key: Vec<u8>,
    /// Its frequency.
    pub freq: Frequency,
    /// Generalisation steps: 0 = exact key, 1 = `key/*`, ...
    pub steps: usize,
    /// Byte offset of the matched line.
    pub offset: usize,
}

impl Hit {
    /// Whether the archive may hold the URL (a zero entry says no).
    pub fn covered(&self) -> bool {
        !self.freq.is_zero()
    }
}

impl<D: AsRef<[u8]>> Map<D> {
    /// Wraps map bytes; header lines at the top are skipped.
    pub fn new(data: D) -> Map<D> {
        let search = Search::new(data);
        let key_names: Vec<String> = search
            .headers()
            .find_map(|h| h.strip_prefix(b"!fields "))
            .and_then(|v| crate::ukvs::parse_json5(v).ok())
            .and_then(|v| {
                v.get("keys").and_then(|k| k.as_array()).map(|k| {
                    k.iter()
                        .map(|n| n.as_str().unwrap_or_default().to_string())
                        .collect()
                })
            })
            .unwrap_or_default();
        Map {
            search,
            keep_query: false,
            memo: Default::default(),
            wild: None,
            key_columns: key_names.len().max(1),
            key_names,
        }
    }

    /// Looks keys up with their query kept (maps generated with
    /// `--keep-query`).
    pub fn keep_query(mut self, yes: bool) -> Self {
        self.keep_query = yes;
        self
    }

    /// Samples the map for many lookups (see [`Search::sample`]): each
    /// candidate is then searched from samples in memory. Fails when the
    /// map is not sorted.
    pub fn sample(&mut self, step: usize) -> Result<(), Error>
    where
        D: Sync,
    {
        self.search.sample(step).map_err(search_error)?;
        self.wild = wild_keys(self.search.as_bytes(), self.search.body_start());
        Ok(())
    }

    /// The most specific entry for a SURT, if any. Fails only when the
    /// search meets lines out of order (the map is not sorted).
    pub fn lookup(&self, surt: &[u8]) -> Result<Option<Hit>, Error> {
        // All candidates but `tld,*` and `*` start with the first two host
        // labels (`com,example`): find that block of lines once and search
        // it, a few lines instead of the whole map (a sampled map searches
        // the whole map as fast).
        let data = self.search.as_bytes();
        let prefix = two_labels(surt).filter(|_| !self.search.is_sampled());
        let window = match prefix.and_then(successor) {
            Some(upper) if prefix.is_some_and(|p| !p.is_empty()) => {
                let lo = self.lower_bound(prefix.unwrap_or_default())?;
                let hi = self.lower_bound(&upper)?;
                Some((lo, hi.max(lo)))
            }
            _ => None,
        };
        let hit = first_candidate(surt, self.keep_query, |steps, alt| {
            let found = match (window, prefix) {
                _ if alt.ends_with(b"*") && self.wild.is_some() => {
                    Ok(self.wild.as_ref().and_then(|w| w.get(alt).copied()))
                }
                (Some((lo, hi)), Some(p)) if alt.starts_with(p) => {
                    find_in(&Search::new(&data[lo..hi]), alt).map(|o| o.map(|o| o + lo))
                }
                _ => self.find_memo(alt),
            };
            match found {
                Err(e) => Some(Err(e)),
                Ok(None) => None,
                Ok(Some(offset)) => Some(Ok(Hit {
                    key: alt.to_vec(),
                    freq: self.frequency_at(offset, alt),
                    steps,
                    offset,
                })),
            }
        });
        hit.transpose()
    }

    /// The frequency of the key whose first line is at `offset`: its only
    /// line, or in the columns layout its total line (second column `:` or
    /// `*`), else the sum of its bucket lines.
    fn frequency_at(&self, offset: usize, key: &[u8]) -> Frequency {
        let data = self.search.as_bytes();
        if self.key_columns < 2 {
            let line = line_at(data, offset).0;
            return Record::parse(line, 0).map(|r| r.freq).unwrap_or_default();
        }
        let mut sum: Option<Frequency> = None;
        for (bucket, freq) in bucket_lines(data, offset, key) {
            if bucket == b":" || bucket == b"*" {
                return freq;
            }
            sum = Some(sum.map_or(freq, |s| s.plus(freq)));
        }
        sum.unwrap_or_default()
    }

    /// Whether a datetime breakdown can be read: the columns layout with a
    /// `datetime` key column, or the OSLJ layout (whose lines may carry a
    /// `datetime` object).
    pub fn has_datetime(&self) -> bool {
        self.key_columns < 2 || self.key_names.get(1).is_some_and(|n| n == "datetime")
    }

    /// [`Map::lookup`], counting only the captures made during `range`.
    ///
    /// The most specific entry still decides; its frequency is the sum of
    /// its datetime buckets (key column or OSLJ `datetime` member) that
    /// overlap `range`. A bucket inside the range counts as it is; one
    /// that only overlaps it (or has no datetime, `-`), or an entry without
    /// buckets, counts as an upper bound (`n-`). URI-R sums over buckets are
    /// upper bounds too (a URL can be captured in several). No bucket in
    /// the range gives `0`: not held during the range.
    pub fn lookup_during(&self, surt: &[u8], range: &DatetimeRange) -> Result<Option<Hit>, Error> {
        let Some(mut hit) = self.lookup(surt)? else {
            return Ok(None);
        };
        let (buckets, total) = self.buckets_at(hit.offset, &hit.key);
        let mut sum: Option<Frequency> = None;
        let mut all_in = true;
        for (bucket, freq) in buckets {
            let overlap = bucket.map_or(Overlap::Partial, |b| range.overlap(&b));
            all_in &= overlap == Overlap::Full;
            let part = match overlap {
                Overlap::None => continue,
                Overlap::Full => freq,
                Overlap::Partial => Frequency {
                    urim: freq.urim.overlapping(),
                    urir: freq.urir.overlapping(),
                },
            };
            sum = Some(sum.map_or(part, |s| s.add_overlapping(part)));
        }
        // Every bucket in range: the total line counts the same captures,
        // with an exact URI-R.
        if all_in && total.is_some() {
            sum = total;
        }
        hit.freq = sum.unwrap_or(Frequency {
            urim: Count::exact(0),
            urir: Count::UNKNOWN,
        });
        Ok(Some(hit))
    }

    /// The datetime buckets of the key whose first line is at `offset`
    /// (`None` = a bucket without datetime) and, in the columns layout, its
    /// total line. Without a breakdown, the entry's frequency as one bucket
    /// of all time.
    fn buckets_at(&self, offset: usize, key: &[u8]) -> (Buckets, Option<Frequency>) {
        let data = self.search.as_bytes();
        let mut buckets = Vec::new();
        if self.key_columns < 2 {
            let Ok(rec) = Record::parse(line_at(data, offset).0, 0) else {
                return (buckets, None);
            };
            match rec.extra.as_ref().and_then(|e| e.get("datetime")) {
                Some(serde_json::Value::Object(m)) if !rec.freq.is_zero() => {
                    for (b, f) in m {
                        let f = f.as_str().and_then(|t| Frequency::parse(t.as_bytes()).ok());
                        buckets.push((DatetimeRange::parse(b.as_bytes()), f.unwrap_or_default()));
                    }
                }
                _ => buckets.push((Some(DatetimeRange::ALL), rec.freq)),
            }
            return (buckets, None);
        }
        let mut total = None;
        for (bucket, freq) in bucket_lines(data, offset, key) {
            if bucket == b":" || bucket == b"*" {
                total = Some(freq);
            } else {
                buckets.push((DatetimeRange::parse(bucket), freq));
            }
        }
        if buckets.is_empty() {
            buckets.extend(total.map(|t| (Some(DatetimeRange::ALL), t)));
        }
        (buckets, total)
    }

    /// [`Map::find`] remembering wide keys (no `)`: `tld,*`, `*`).
    fn find_memo(&self, key: &[u8]) -> Result<Option<usize>, Error> {
        if memchr::memchr(b')', key).is_some() {
            return self.find(key);
        }
        let memo = || self.memo.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&hit) = memo().get(key) {
            return Ok(hit);
        }
        let hit = self.find(key)?;
        let mut memo = memo();
        if memo.len() < 4096 {
            memo.insert(key.to_vec(), hit);
        }
        Ok(hit)
    }

    fn lower_bound(&self, probe: &[u8]) -> Result<usize, Error> {
        self.search.lower_bound(probe).map_err(search_error)
    }

    /// Offset of the line whose key is exactly `key`.
    pub fn find(&self, key: &[u8]) -> Result<Option<usize>, Error> {
        find_in(&self.search, key)
    }
}

/// A datetime interval as the spec writes datetime keys: 1-14 digits
/// (`2014` = all of 2014), or `from:to` with either end open
/// (`2010:2012`, `:2009`, `201603:`, `:`). Ends are padded to 14 digits,
/// `from` with `0`s and `to` with `9`s, and compared as bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DatetimeRange {
    lo: [u8; 14],
    hi: [u8; 14],
}

/// Datetime buckets of one entry with their frequencies.
type Buckets = Vec<(Option<DatetimeRange>, Frequency)>;

/// How a bucket lies against a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Overlap {
    None,
    Partial,
    Full,
}

impl DatetimeRange {
    /// All time (`:`).
    pub const ALL: DatetimeRange = DatetimeRange {
        lo: [b'0'; 14],
        hi: [b'9'; 14],
    };

    /// Parses `2014`, `2010:2012`, `:2009`, `201603:` or `:`; `None` for
    /// anything else (`-`, letters, more than 14 digits, from > to).
    pub fn parse(s: &[u8]) -> Option<DatetimeRange> {
        let (from, to) = match memchr::memchr(b':', s) {
            Some(i) => (&s[..i], &s[i + 1..]),
            None if s.is_empty() => return None,
            None => (s, s),
        };
        let end = |d: &[u8], fill: u8| -> Option<[u8; 14]> {
            if d.len() > 14 || !d.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let mut v = [fill; 14];
            v[..d.len()].copy_from_slice(d);
            Some(v)
        };
        let r = DatetimeRange {
            lo: end(from, b'0')?,
            hi: end(to, b'9')?,
        };
        (r.lo <= r.hi).then_some(r)
    }

    fn overlap(&self, b: &DatetimeRange) -> Overlap {
        if b.hi < self.lo || b.lo > self.hi {
            Overlap::None
        } else if self.lo <= b.lo && b.hi <= self.hi {
            Overlap::Full
        } else {
            Overlap::Partial
        }
    }
}

/// Offset (in `search`) of the line whose key is exactly `key`.
fn find_in<D: AsRef<[u8]>>(search: &Search<D>, key: &[u8]) -> Result<Option<usize>, Error> {
    // Lines of `key` are `key ...`; a space sorts below every key byte, so
    // the first line >= `key ` is the one if it exists.
    let mut probe = Vec::with_capacity(key.len() + 1);
    probe.extend_from_slice(key);
    probe.push(b' ');
    let data = search.as_bytes();
    let at = search.lower_bound(&probe).map_err(search_error)?;
    Ok((at < data.len() && key_of(line_at(data, at).0) == key).then_some(at))
}

fn search_error(e: crate::sorted::Error) -> Error {
    match e {
        crate::sorted::Error::Unsorted { offset, line } => Error::UnsortedMap { offset, line },
        other => Error::UnsortedMap {
            offset: 0,
            line: other.to_string(),
        },
    }
}

/// Wildcard keys held at most by [`wild_keys`]: past them, wildcard
/// candidates are searched like the others.
const WILD_MAX: usize = 1 << 20;

/// Every key of the sorted map body from `body` on that ends in `*`, with
/// the offset of its first line `key ...` ([`find_in`]'s answer for it),
/// found from the `*` bytes of the map (a map without rollups has none to
/// speak of); `None` when there are more than [`WILD_MAX`].
fn wild_keys(data: &[u8], body: usize) -> Option<rustc_hash::FxHashMap<Vec<u8>, usize>> {
    let mut keys = rustc_hash::FxHashMap::default();
    let body_bytes = data.get(body..).unwrap_or_default();
    // Lines before `done` have been looked at.
    let mut done = body;
    for star in memchr::memchr_iter(b'*', body_bytes) {
        let at = body + star;
        if at < done {
            continue;
        }
        let start = memchr::memrchr(b'\n', &data[body..at]).map_or(body, |i| body + i + 1);
        let (line, next) = line_at(data, start);
        done = next.max(at + 1);
        let key = key_of(line);
        // Only a line with a space after its key answers `find_in`.
        if key.ends_with(b"*") && line.len() > key.len() && !keys.contains_key(key) {
            if keys.len() == WILD_MAX {
                return None;
            }
            keys.insert(key.to_vec(), start);
        }
    }
    Some(keys)
}

/// `com,example` of `com,example,www)/...`: the first two host labels,
/// when the host has at least two.
fn two_labels(surt: &[u8]) -> Option<&[u8]> {
    let host = &surt[..memchr::memchr(b')', surt)?];
    let first = memchr::memchr(b',', host)?;
    let second = memchr::memchr(b',', &host[first + 1..]).map_or(host.len(), |i| first + 1 + i);
    Some(&host[..second])
}

/// The smallest byte string greater than every string starting with `p`.
fn successor(p: &[u8]) -> Option<Vec<u8>> {
    let mut v = p.to_vec();
    while let Some(last) = v.pop() {
        if last < u8::MAX {
            v.push(last + 1);
            return Some(v);
        }
    }
    None
}

fn key_of(line: &[u8]) -> &[u8] {
    &line[..memchr::memchr(b' ', line).unwrap_or(line.len())]
}

/// The answer of a linear scan (the oracle of the binary search in tests).
pub fn lookup_linear(map: &[u8], surt: &[u8], keep_query: bool) -> Option<(Vec<u8>, usize)> {
    for (steps, alts) in candidates(surt, keep_query).iter().enumerate() {
        for alt in alts {
            for line in map.split(|&b| b == b'\n') {
                if !line.starts_with(b"!") && key_of(line) == alt.as_slice() {
                    return Some((alt.clone(), steps));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MAP: &str = "!context [\"x\"]\n!fields {}\ncom,cnn)/* 400\ncom,cnn)/world 0\ncom,example)/ 3\ncom,example)/a/* 5/2\ncom,news,* 7\norg,z)/last 1\n";

    #[test]
    fn most_specific_wins_and_zero_overrides() {
        let m = Map::new(MAP.as_bytes());
        let h = m.lookup(b"com,cnn)/world").unwrap().unwrap();
        assert_eq!(
            (h.key.as_slice(), h.steps, h.covered()),
            (&b"com,cnn)/world"[..], 0, false)
        );
        let h = m.lookup(b"com,cnn)/sport/x").unwrap().unwrap();
        assert_eq!(
            (h.key.as_slice(), h.steps, h.covered()),
            (&b"com,cnn)/*"[..], 3, true)
        );
        let h = m.lookup(b"com,example)/a/b/c?q").unwrap().unwrap();
        assert_eq!((h.key.as_slice(), h.steps), (&b"com,example)/a/*"[..], 3));
        let h = m.lookup(b"com,news,www)/x").unwrap().unwrap();
        assert_eq!(h.key, b"com,news,*");
        assert!(m.lookup(b"com,other)/").unwrap().is_none());
        // Past the last line: not found, no error.
        assert!(m.lookup(b"zz,x)/").unwrap().is_none());
        assert!(m.lookup(b"org,z)/last").unwrap().is_some());
    }

    #[test]
    fn reference_root_form_matches() {
        let m = Map::new(&b"com,cnn) 200\ncom,cnn)/images 100\n"[..]);
        let h = m.lookup(b"com,cnn)/").unwrap().unwrap();
        assert_eq!((h.key.as_slice(), h.steps), (&b"com,cnn)"[..], 0));
    }

    #[test]
    fn empty_and_header_only_maps() {
        assert!(Map::new(&b""[..]).lookup(b"com,x)/").unwrap().is_none());
        assert!(Map::new(&b"!meta {}\n"[..])
            .lookup(b"com,x)/")
            .unwrap()
            .is_none());
        assert!(Map::new(&b"!meta {}"[..])
            .lookup(b"com,x)/")
            .unwrap()
            .is_none());
    }

    #[test]
    fn columns_layout_reads_the_total_line() {
        let map = "!fields {\"keys\":[\"surt\",\"datetime\"],\"values\":[\"frequency\"]}\ncom,x)/ 2014 4/1\ncom,x)/ 2015 6/1\ncom,x)/ : 10/2\ncom,x)/a 2014 0/1\ncom,x)/a : 0/1\ncom,y)/ 2014 3\ncom,y)/ 2015 4\n";
        let m = Map::new(map.as_bytes());
        let h = m.lookup(b"com,x)/").unwrap().unwrap();
        assert_eq!(h.freq.to_string(), "10/2");
        assert!(!m.lookup(b"com,x)/a").unwrap().unwrap().covered());
        assert_eq!(m.lookup(b"com,y)/").unwrap().unwrap().freq.to_string(), "7");
    }

    #[test]
    fn datetime_ranges_parse_and_overlap() {
        let r = |s: &str| DatetimeRange::parse(s.as_bytes());
        assert_eq!(r(":"), Some(DatetimeRange::ALL));
        assert_eq!(r("2014"), r("2014:2014"));
        for bad in [
            "",
            "-",
            "20x4",
            "2015:2014",
            "123456789012345",
            "2014:2015:2016",
        ] {
            assert_eq!(r(bad), None, "{bad}");
        }
        let q = r("2010:2012").unwrap();
        assert_eq!(q.overlap(&r("2011").unwrap()), Overlap::Full);
        assert_eq!(q.overlap(&r("201212").unwrap()), Overlap::Full);
        assert_eq!(q.overlap(&r("2012:2013").unwrap()), Overlap::Partial);
        assert_eq!(q.overlap(&r(":2009").unwrap()), Overlap::None);
        assert_eq!(
            r(":2009").unwrap().overlap(&r("2009").unwrap()),
            Overlap::Full
        );
        assert_eq!(
            r("201603:").unwrap().overlap(&r("2016").unwrap()),
            Overlap::Partial
        );
        assert_eq!(
            r("201603:").unwrap().overlap(&r("201602").unwrap()),
            Overlap::None
        );
        assert_eq!(
            r("201603:").unwrap().overlap(&r("2099").unwrap()),
            Overlap::Full
        );
    }

    #[test]
    fn lookup_during_sums_the_buckets_in_range() {
        let map = "!fields {\"keys\":[\"surt\",\"datetime\"],\"values\":[\"frequency\"]}\ncom,x)/ 2009 1/1\ncom,x)/ 2010 2/1\ncom,x)/ 2012 4/2\ncom,x)/ 2016:2018 8/3\ncom,x)/ : 15/3\ncom,x)/a 2014 0/1\ncom,x)/a : 0/1\ncom,y)/ : 5/2\n";
        let m = Map::new(map.as_bytes());
        assert!(m.has_datetime());
        let during = |q: &str, r: &str| {
            let h = m
                .lookup_during(q.as_bytes(), &DatetimeRange::parse(r.as_bytes()).unwrap())
                .unwrap()
                .unwrap();
            (h.freq.to_string(), h.covered())
        };
        assert_eq!(during("com,x)/", ":"), ("15/3".to_string(), true));
        assert_eq!(during("com,x)/", "2010:2012"), ("6/3-".to_string(), true));
        assert_eq!(during("com,x)/", "2012"), ("4/2".to_string(), true));
        assert_eq!(during("com,x)/", ":2009"), ("1/1".to_string(), true));
        assert_eq!(during("com,x)/", "201603:"), ("8-/3-".to_string(), true));
        assert_eq!(during("com,x)/", "2013:2015"), ("0".to_string(), false));
        assert!(!during("com,x)/a", "2014").1);
        // Only a total line: all time, so any narrower range is a bound.
        assert_eq!(during("com,y)/", "2014"), ("5-/2-".to_string(), true));
        // The OSLJ layout reads the `datetime` member.
        let m = Map::new(&b"com,x)/ 3/2 {\"datetime\":{\"2014\":\"1/1\",\"2015\":\"2/2\"}}\n"[..]);
        let h = m
            .lookup_during(b"com,x)/", &DatetimeRange::parse(b"2015:").unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(h.freq.to_string(), "2/2");
        let cols = Map::new(&b"!fields {\"keys\":[\"surt\",\"status\"]}\ncom,x)/ 200 1\n"[..]);
        assert!(!cols.has_datetime());
    }

    #[test]
    fn unsorted_map_is_reported() {
        let m = Map::new(&b"com,d)/ 1\ncom,c)/ 1\ncom,b)/ 1\ncom,a)/ 1\ncom,e)/ 1\n"[..]);
        let any_err = [&b"com,a)/"[..], b"com,b)/", b"com,c)/", b"com,d)/"]
            .iter()
            .any(|q| m.lookup(q).is_err());
        assert!(any_err);
    }

    proptest! {
        #[test]
        fn binary_search_equals_linear_scan(
            mut keys in proptest::collection::btree_set("(com|org),[a-c]{1,2}(,[a-c])?\\)/([a-c]{1,2}(/[a-c])?)?(/\\*)?", 0..30),
            hosts in proptest::collection::btree_set("\\*|(com|org)(,[a-c]{1,2})?,\\*", 0..4),
            queries in proptest::collection::vec("(com|org),[a-c]{1,2}(,[a-c])?\\)/([a-c]{1,2}(/[a-c]){0,2})?", 1..20),
            noeol in any::<bool>(),
            step in 1usize..64,
        ) {
            keys.extend(hosts);
            let mut map = String::new();
            for k in &keys {
                map.push_str(k);
                map.push_str(" 1\n");
            }
            if noeol { map.pop(); }
            let m = Map::new(map.as_bytes());
            // Sampled for a batch: the same answers.
            let mut sampled = Map::new(map.as_bytes());
            sampled.sample(step).unwrap();
            for q in &queries {
                let fast = m.lookup(q.as_bytes()).unwrap().map(|h| (h.key, h.steps));
                let slow = lookup_linear(map.as_bytes(), q.as_bytes(), false);
                prop_assert_eq!(&fast, &slow, "query {}", q);
                let batch = sampled.lookup(q.as_bytes()).unwrap();
                let at = m.lookup(q.as_bytes()).unwrap().map(|h| h.offset);
                prop_assert_eq!(batch.as_ref().map(|h| h.offset), at, "sampled, query {}", q);
                let batch = batch.map(|h| (h.key, h.steps));
                prop_assert_eq!(&batch, &slow, "sampled, query {}", q);
            }
        }
    }
}
