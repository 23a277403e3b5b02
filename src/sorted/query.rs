//! What a lookup asks for: a key range (pywb's CDX-server match types) and
//! the datetime filters and orderings applied to the lines in it.
//!
//! The ranges are those of pywb's `calc_search_range`, so a cluster served
//! by pywb and `ukvs lookup` answer the same query with the same lines:
//!
//! | match | start | lines taken while |
//! |---|---|---|
//! | exact | `key` | line < `key!` (the first field is `key`) |
//! | prefix | `key` | line starts with `key` |
//! | host | `host)/` | line < `host*` |
//! | domain | `host)/` (`tld,` for a bare TLD) | line < `host-` |
//!
//! where `host` is the key up to its first `)/`.

use std::collections::VecDeque;

/// How a query key selects lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchType {
    /// Lines whose key is the query key.
    Exact,
    /// Lines starting with the query key.
    Prefix,
    /// Every path of the query key's host.
    Host,
    /// The host and all its subdomains.
    Domain,
}

/// Where a range stops. Kept symbolic so the common cases need no
/// allocation and no byte-successor arithmetic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Upper {
    /// Below `start + "!"`: the line's first field is `start` (pywb's exact
    /// range).
    Exact,
    /// The line starts with `start`.
    Prefix,
    /// Strictly below these bytes.
    Before(Vec<u8>),
    /// To the end of the file.
    Unbounded,
}

/// A half-open range of lines in byte order: `start <= line`, and `upper`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    /// The smallest line (as bytes) the range can hold.
    pub start: Vec<u8>,
    /// Where the range stops.
    pub upper: Upper,
}

impl KeyRange {
    /// The range pywb's CDX server scans for `key` under `match_type`.
    pub fn new(key: &[u8], match_type: MatchType) -> KeyRange {
        match match_type {
            MatchType::Exact => KeyRange {
                start: key.to_vec(),
                upper: Upper::Exact,
            },
            MatchType::Prefix => KeyRange {
                start: key.to_vec(),
                upper: Upper::Prefix,
            },
            MatchType::Host => {
                let host = host_part(key);
                KeyRange {
                    start: [host, b")/"].concat(),
                    upper: Upper::Before([host, b"*"].concat()),
                }
            }
            MatchType::Domain => {
                let host = host_part(key);
                // A bare TLD (`com`) has no `)/` form of its own: start at
                // its first subdomain instead.
                let start = if host.contains(&b',') {
                    [host, b")/"].concat()
                } else {
                    [host, b","].concat()
                };
                KeyRange {
                    start,
                    upper: Upper::Before([host, b"-"].concat()),
                }
            }
        }
    }

    /// Everything: `start` empty, no upper bound.
    pub fn all() -> KeyRange {
        KeyRange {
            start: Vec::new(),
            upper: Upper::Unbounded,
        }
    }

    /// Whether `line`, known to be `>= start`, is past the range's end.
    pub fn is_past(&self, line: &[u8]) -> bool {
        match &self.upper {
            Upper::Exact => match line.strip_prefix(&self.start[..]) {
                // pywb's end key is `key!`: only bytes below `!` (the
                // space before the datetime) may follow the key.
                Some(rest) => rest.first().is_some_and(|&b| b >= b'!'),
                None => true,
            },
            Upper::Prefix => !line.starts_with(&self.start),
            Upper::Before(end) => line >= &end[..],
            Upper::Unbounded => false,
        }
    }

    /// [`KeyRange::is_past`] of the line that starts `rest`, decided from
    /// its first bytes alone when they suffice (`None` when the line is
    /// too short to tell, or `rest` ends first): a scan can stop without
    /// reading the rest of the line after the range.
    pub fn is_past_head(&self, rest: &[u8]) -> Option<bool> {
        let n = match &self.upper {
            Upper::Exact => self.start.len() + 1,
            Upper::Prefix => self.start.len(),
            Upper::Before(end) => end.len(),
            Upper::Unbounded => return Some(false),
        };
        let head = rest.get(..n)?;
        (memchr::memchr(b'\n', head).is_none()).then(|| self.is_past(head))
    }

    /// Whether `line` is below the range's end key, whatever its start:
    /// pywb's `line < end` (its end key for an exact match is `key!`, for a
    /// prefix the key with its last byte + 1), the test that ends its scan
    /// of a file that is not in order ([`Search::pywb_range`](super::Search::pywb_range)).
    pub fn is_below_end(&self, line: &[u8]) -> bool {
        match &self.upper {
            Upper::Exact => line < &[&self.start[..], b"!"].concat()[..],
            Upper::Prefix => match self.start.split_last() {
                Some((&last, head)) if last < u8::MAX => line < &[head, &[last + 1]].concat()[..],
                _ => true,
            },
            Upper::Before(end) => line < &end[..],
            Upper::Unbounded => true,
        }
    }

    /// Whether the range holds `line`.
    pub fn contains(&self, line: &[u8]) -> bool {
        line >= &self.start[..] && !self.is_past(line)
    }

    /// The smallest bytes above every line of the range, where a scan
    /// backwards starts (`None`: the range runs to the end of the file).
    /// An exact range ends at `start!`, a prefix at `start` with its last
    /// byte below 0xFF raised by one (0xFF bytes at its end dropped).
    pub fn end_key(&self) -> Option<Vec<u8>> {
        match &self.upper {
            Upper::Exact => Some([&self.start[..], b"!"].concat()),
            Upper::Prefix => {
                let mut end = self.start.clone();
                while end.last() == Some(&u8::MAX) {
                    end.pop();
                }
                let last = end.last_mut()?;
                *last += 1;
                Some(end)
            }
            Upper::Before(end) => Some(end.clone()),
            Upper::Unbounded => None,
        }
    }
}

/// The key up to its first `)/` (the whole key when there is none).
fn host_part(key: &[u8]) -> &[u8] {
    match memchr::memmem::find(key, b")/") {
        Some(i) => &key[..i],
        None => key,
    }
}

/// A URL query as pywb's CDX server reads it: `*.example.com` asks for the
/// domain, a trailing `*` for a prefix, unless the match type is given.
/// Returns the URL to canonicalise and the match type.
pub fn url_shortcut(url: &str, match_type: Option<MatchType>) -> (&str, MatchType) {
    if let Some(m) = match_type {
        return (url, m);
    }
    if let Some(rest) = url.strip_prefix("*.") {
        (rest, MatchType::Domain)
    } else if let Some(rest) = url.strip_suffix('*') {
        (rest, MatchType::Prefix)
    } else {
        (url, MatchType::Exact)
    }
}

/// pywb keeps a trailing `/` or `?` of a prefix URL that canonicalisation
/// dropped, so `example.com/path/` does not also match `path2`.
pub fn prefix_key_for_url(url: &str, mut key: Vec<u8>) -> Vec<u8> {
    if url.ends_with('/') && key.last() != Some(&b'/') {
        key.push(b'/');
    }
    if url.ends_with('?') && key.last() != Some(&b'?') {
        key.push(b'?');
    }
    key
}

/// Lowest 14-digit datetime, used to pad a partial `from`.
const PAD_LOW: &[u8; 14] = b"10000101000000";
/// Highest 14-digit datetime, used to pad a partial `to`.
const PAD_HIGH: &[u8; 14] = b"29991231235959";

/// Pads a partial datetime with the tail of `pad` (pywb's `pad_timestamp`):
/// `2014` becomes `20140101000000` as a lower bound and `20141231235959`
/// as an upper one. Datetimes of 14 digits or more are kept as they are.
fn pad(datetime: &[u8], pad: &[u8]) -> Vec<u8> {
    let mut out = datetime.to_vec();
    if let Some(tail) = pad.get(datetime.len()..) {
        out.extend_from_slice(tail);
    }
    out
}

/// Datetime bounds (inclusive), compared as bytes like pywb does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimeFilter {
    from: Option<Vec<u8>>,
    to: Option<Vec<u8>>,
}

impl TimeFilter {
    /// Bounds from partial datetimes, padded low (`from`) and high (`to`).
    pub fn new(from: Option<&[u8]>, to: Option<&[u8]>) -> TimeFilter {
        TimeFilter {
            from: from.filter(|f| !f.is_empty()).map(|f| pad(f, PAD_LOW)),
            to: to.filter(|t| !t.is_empty()).map(|t| pad(t, PAD_HIGH)),
        }
    }

    /// Whether a filter is set at all.
    pub fn is_active(&self) -> bool {
        self.from.is_some() || self.to.is_some()
    }

    /// Whether a line with this datetime passes.
    pub fn accepts(&self, datetime: &[u8]) -> bool {
        if self.from.as_deref().is_some_and(|f| datetime < f) {
            return false;
        }
        !self.to.as_deref().is_some_and(|t| datetime > t)
    }
}

/// Seconds since 1970 of a (possibly partial or damaged) datetime, read the
/// way pywb reads `closest`: missing parts take their highest value
/// (`2014` is the last second of 2014), out-of-range parts are clamped and
/// non-digits count as the highest value.
pub fn datetime_to_secs(datetime: &[u8]) -> i64 {
    let padded = pad(datetime, b"299912");
    // Each part: its digits, clamped to [min, max]; absent or not a number
    // gives max.
    let part = |start: usize, end: usize, min: i64, max: i64| -> i64 {
        match padded.get(start..end) {
            Some(digits) if digits.iter().all(u8::is_ascii_digit) => {
                let v = digits
                    .iter()
                    .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'));
                v.clamp(min, max)
            }
            _ => max,
        }
    };
    let year = part(0, 4, 1900, 2999);
    let month = part(4, 6, 1, 12);
    let day = part(6, 8, 1, days_in_month(year, month));
    let hour = part(8, 10, 0, 23);
    let minute = part(10, 12, 0, 59);
    let second = part(12, 14, 0, 59);
    days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Year, month, day and seconds into the day of a time in seconds since
/// 1970 (UTC, proleptic Gregorian): the inverse of [`datetime_to_secs`]'s
/// arithmetic (Howard Hinnant's civil-calendar algorithm).
pub fn civil_from_secs(secs: i64) -> (i64, i64, i64, i64) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, rem)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// civil-calendar arithmetic; exact for every year this code sees).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The order of an answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Index order (byte order of the lines).
    #[default]
    Index,
    /// The last matches first.
    Reverse,
    /// Nearest in time to this (possibly partial) datetime first; equal
    /// distances keep index order.
    Closest(Vec<u8>),
}

/// `items` in `order`, at most `limit` of them, as pywb's CDX server
/// orders them. Index order streams; reverse and closest order wait for
/// the end of `items` and hold at most `limit` items (all of them without
/// a limit). `datetime` gives an item's 14-digit datetime.
pub fn ordered<'a, T: 'a, E: 'a>(
    items: impl Iterator<Item = Result<T, E>> + 'a,
    order: &Order,
    limit: Option<usize>,
    datetime: impl Fn(&T) -> &[u8] + 'a,
) -> Box<dyn Iterator<Item = Result<T, E>> + 'a> {
    match order {
        Order::Index => match limit {
            Some(n) => Box::new(items.take(n)),
            None => Box::new(items),
        },
        Order::Reverse => {
            let mut kept = VecDeque::new();
            for item in items {
                match item {
                    Ok(t) => {
                        if limit == Some(0) {
                            continue;
                        }
                        if limit.is_some_and(|n| kept.len() == n) {
                            kept.pop_back();
                        }
                        kept.push_front(t);
                    }
                    Err(e) => return Box::new(std::iter::once(Err(e))),
                }
            }
            Box::new(kept.into_iter().map(Ok))
        }
        Order::Closest(target) => {
            let target = datetime_to_secs(target);
            // Sorted by distance; an insertion after the last equal
            // distance keeps index order among equals.
            let mut kept: Vec<(i64, T)> = Vec::new();
            for item in items {
                match item {
                    Ok(t) => {
                        let d = (datetime_to_secs(datetime(&t)) - target).abs();
                        if limit.is_some_and(|n| kept.len() >= n)
                            && kept.last().map_or(true, |(last, _)| d >= *last)
                        {
                            continue;
                        }
                        let at = kept.partition_point(|(k, _)| *k <= d);
                        kept.insert(at, (d, t));
                        if limit.is_some_and(|n| kept.len() > n) {
                            kept.pop();
                        }
                    }
                    Err(e) => return Box::new(std::iter::once(Err(e))),
                }
            }
            Box::new(kept.into_iter().map(|(_, t)| Ok(t)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(order: Order, limit: Option<usize>, items: &[&'static str]) -> Vec<&'static str> {
        let it = items.iter().map(|s| Ok::<_, ()>(*s));
        ordered(it, &order, limit, |s: &&str| s.as_bytes())
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn reverse_keeps_the_last_limit_items() {
        let items = ["2001", "2002", "2003", "2004"];
        assert_eq!(run(Order::Reverse, Some(2), &items), ["2004", "2003"]);
        assert_eq!(
            run(Order::Reverse, None, &items),
            ["2004", "2003", "2002", "2001"]
        );
        assert!(run(Order::Reverse, Some(0), &items).is_empty());
    }

    #[test]
    fn closest_is_a_stable_sort_by_distance() {
        let items = [
            "20010101000000",
            "20030101000000",
            "20020101000000",
            "20030101000000",
        ];
        let c = Order::Closest(b"2003".to_vec());
        // `2003` is the last second of 2003: both 2003 captures tie.
        assert_eq!(
            run(c.clone(), Some(3), &items),
            ["20030101000000", "20030101000000", "20020101000000"]
        );
        assert_eq!(run(c.clone(), Some(1), &items), ["20030101000000"]);
        assert!(run(c, Some(0), &items).is_empty());
    }

    #[test]
    fn ranges_match_pywb_doc_examples() {
        // pywb's calc_search_range doctests, on the canonical keys.
        let r = KeyRange::new(b"com,example)/path/file.html", MatchType::Host);
        assert_eq!(r.start, b"com,example)/");
        assert_eq!(r.upper, Upper::Before(b"com,example*".to_vec()));
        let r = KeyRange::new(b"com,example)/path/file.html", MatchType::Domain);
        assert_eq!(r.start, b"com,example)/");
        assert_eq!(r.upper, Upper::Before(b"com,example-".to_vec()));
        let r = KeyRange::new(b"com", MatchType::Domain);
        assert_eq!(r.start, b"com,");
        assert_eq!(r.upper, Upper::Before(b"com-".to_vec()));
    }

    #[test]
    fn exact_takes_the_key_field_only() {
        let r = KeyRange::new(b"com,a)/", MatchType::Exact);
        assert!(r.contains(b"com,a)/ 2014"));
        assert!(r.contains(b"com,a)/"));
        assert!(!r.contains(b"com,a)/x 2014"));
        assert!(!r.contains(b"com,a) 2014"));
    }

    #[test]
    fn shortcuts() {
        assert_eq!(
            url_shortcut("*.example.com", None),
            ("example.com", MatchType::Domain)
        );
        assert_eq!(
            url_shortcut("example.com/*", None),
            ("example.com/", MatchType::Prefix)
        );
        assert_eq!(
            url_shortcut("example.com/*", Some(MatchType::Exact)),
            ("example.com/*", MatchType::Exact)
        );
        assert_eq!(
            prefix_key_for_url("http://e.com/path/", b"com,e)/path".to_vec()),
            b"com,e)/path/"
        );
    }

    #[test]
    fn padding_like_pywb() {
        let f = TimeFilter::new(Some(b"2014"), Some(b"2015"));
        assert!(f.accepts(b"20140101000000"));
        assert!(!f.accepts(b"20131231235959"));
        assert!(f.accepts(b"20151231235959"));
        assert!(!f.accepts(b"20160101000000"));
    }

    #[test]
    fn secs_like_warcio() {
        // warcio.timeutils.timestamp_to_sec doctests.
        assert_eq!(datetime_to_secs(b"20131226095010"), 1_388_051_410);
        assert_eq!(datetime_to_secs(b"2014"), 1_420_070_399);
        assert_eq!(datetime_to_secs(b"19700101000000"), 0);
        // Bad month clamps to 12; day 09.
        assert_eq!(
            datetime_to_secs(b"20131709005601"),
            datetime_to_secs(b"20131209005601")
        );
        assert_eq!(datetime_to_secs(b"2010abc"), datetime_to_secs(b"2010"));
    }
}
