//! Sorted capture lines -> MementoMap records, in one pass.
//!
//! Accepted input lines (detected per line, so concatenations work):
//! * our capture index (UKVS): `surt datetime offset digest {OSLJ}`;
//! * CDXJ: `surt datetime {OSLJ}`;
//! * CDX: `surt datetime original mime status ...` (CDX 9/11 and kin);
//! * a plain SURT list: `surt` (one per capture, or per URI).
//!
//! Header lines (`!...`, ` CDX ...`) and empty lines are skipped.
//!
//! Counting. URI-M = captures. URI-R = distinct original URLs, taken from
//! the OSLJ `url` or the CDX `original` field (a SURT list has none, so its
//! distinct SURTs count). Equal SURTs are adjacent in a sorted index and
//! different SURTs never share a URL, so distinct URLs only need to be
//! remembered within one run of equal SURTs: memory O(URL variants of one
//! SURT), not O(archive). Past [`GROUP_URL_CAP`] variants the URI-R count
//! becomes an upper bound (`-`) rather than grow memory.
//!
//! Ordering. Cutting the query and trailing slashes can move a key before
//! keys already written (`/a`, `/a-b`, `/a?x` give `/a`, `/a-b`, `/a`).
//! Such a key is a prefix of a SURT before it, so it stays within its host:
//! the [`Generator`] holds the lines of the current host and folds the
//! host's out-of-order ("late") records into them when the host ends,
//! summing equal keys (their URLs are disjoint, so the sums stay exact).
//! Past [`HOLD_MAX`] bytes it writes out the lines no late record to come
//! can precede (see `late_bound`). Late records it cannot hold go to an
//! external sort, folded in after the pass. The reference writes such
//! keys twice and out of order instead.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;

use serde_json::{Map, Value};

use super::freq::{Bound, Count, Frequency};
use super::key::{candidates, map_key, map_key_into};
use super::merge::{fold_indexed_records, key_at, key_below, Summary};
use super::record::Record;
use super::Error;

/// Distinct URLs remembered per SURT before the URI-R count turns into an
/// upper bound.
pub const GROUP_URL_CAP: usize = 4096;

/// A decomposition of the counts, written into the OSLJ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dimension {
    /// `datetime` by year (`2014`).
    Year,
    /// `datetime` by month (`201403`).
    Month,
    /// HTTP status (`200`, `-` when none).
    Status,
    /// MIME type (`text/html`).
    Mime,
}

impl Dimension {
    /// Parses `datetime:year`, `datetime:month`, `status` or `mime`.
    pub fn parse(s: &str) -> Option<Dimension> {
        match s {
            "datetime:year" | "year" | "datetime" => Some(Dimension::Year),
            "datetime:month" | "month" => Some(Dimension::Month),
            "status" => Some(Dimension::Status),
            "mime" => Some(Dimension::Mime),
            _ => None,
        }
    }

    /// The OSLJ member name.
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Year | Dimension::Month => "datetime",
            Dimension::Status => "status",
            Dimension::Mime => "mime",
        }
    }
}

/// What to generate.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Keep the query in keys (the reference always drops it).
    pub keep_query: bool,
    /// Decompositions to write into the OSLJ.
    pub by: Vec<Dimension>,
    /// Excluded subtrees, as map keys (see [`exclusion_key`]).
    pub exclude: Vec<Vec<u8>>,
}

/// Counts of one generation pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GenStats {
    /// Lines read.
    pub lines: u64,
    /// Captures counted (excluded ones included).
    pub captures: u64,
    /// Header and empty lines skipped.
    pub headers: u64,
    /// Lines skipped as unusable (reported one by one), by reason.
    pub skipped: Skipped,
    /// Captures under an excluded prefix.
    pub excluded: u64,
    /// Records that arrived out of order and went through the sort.
    pub late: u64,
    /// SURTs whose URL variants passed [`GROUP_URL_CAP`].
    pub capped: u64,
    /// The sum of the frequencies of the records made (zero entries left
    /// out, as the compactor leaves them out): the map's total.
    pub total: Option<Frequency>,
}

/// Unusable input lines, by reason. None of them names a page, so each is
/// skipped whatever the reason; the reasons tell the user what to fix.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// The first field is a URL (`http://...`): the input was not indexed
    /// into SURTs.
    pub url: u64,
    /// Control bytes or invalid UTF-8 in a line that names no page: a
    /// corrupt or binary input.
    pub binary: u64,
    /// Any other first field without `)`.
    pub not_surt: u64,
}

impl std::ops::AddAssign for GenStats {
    /// The counts of two passes over different lines.
    fn add_assign(&mut self, o: GenStats) {
        self.lines += o.lines;
        self.captures += o.captures;
        self.headers += o.headers;
        self.skipped += o.skipped;
        self.excluded += o.excluded;
        self.late += o.late;
        self.capped += o.capped;
        self.total = sum(self.total, o.total);
    }
}

/// `a + b`, where `None` adds nothing.
fn sum(a: Option<Frequency>, b: Option<Frequency>) -> Option<Frequency> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.plus(b)),
        (a, b) => a.or(b),
    }
}

impl std::ops::AddAssign for Skipped {
    fn add_assign(&mut self, o: Skipped) {
        self.url += o.url;
        self.binary += o.binary;
        self.not_surt += o.not_surt;
    }
}

impl Skipped {
    /// All skipped lines.
    pub fn total(&self) -> u64 {
        self.url + self.binary + self.not_surt
    }
}

impl std::fmt::Display for Skipped {
    /// `3 bad lines skipped (2 URLs instead of SURTs, 1 binary or
    /// corrupt)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bad lines skipped", self.total())?;
        let parts: Vec<String> = [
            (self.url, "URLs instead of SURTs"),
            (self.binary, "binary or corrupt"),
            (self.not_surt, "first field without `)`"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if !parts.is_empty() {
            write!(f, " ({})", parts.join(", "))?;
        }
        Ok(())
    }
}

/// The map key of an exclusion line: `com,example,` or `com,example`
/// (host subtree) -> `com,example,*`; `com,example)/private` ->
/// `com,example)/private/*`; `com,example)/` -> `com,example)/*`; keys
/// already ending in `*` stay.
pub fn exclusion_key(line: &[u8]) -> Option<Vec<u8>> {
    let line = line.trim_ascii();
    if line.is_empty() || line.starts_with(b"#") {
        return None;
    }
    if line == b"*" || line.ends_with(b",*") || line.ends_with(b"/*") {
        return Some(line.to_vec());
    }
    if line.ends_with(b",") {
        let mut k = line.to_vec();
        k.push(b'*');
        return Some(k);
    }
    match map_key(line, false) {
        Some(mut k) => {
            if !k.ends_with(b"/") {
                k.push(b'/');
            }
            k.push(b'*');
            Some(k)
        }
        None => {
            let mut k = line.to_vec();
            k.extend_from_slice(b",*");
            Some(k)
        }
    }
}

/// Folds sorted capture lines into one record per map key.
pub struct Aggregator {
    opts: Options,
    exclude: HashMap<Vec<u8>, u64>,
    run_key: Vec<u8>,
    run_active: bool,
    run_excluded: Option<Vec<u8>>,
    run_urim: u64,
    run_urir: u64,
    run_capped: bool,
    run_buckets: Vec<BTreeMap<Vec<u8>, (u64, u64)>>,
    group_surt: Vec<u8>,
    /// URL slots, reused across groups: the first `group_len` are live.
    group_urls: Vec<Vec<u8>>,
    group_len: usize,
    key_buf: Vec<u8>,
    group_capped: bool,
    /// For each URL slot: whether its URL came from an OSLJ `url` with no
    /// quote or escape in it, so that a line repeating it byte for byte
    /// names the same URL.
    group_plain: Vec<bool>,
    group_bucket_urls: HashSet<Vec<u8>>,
    /// The record of the run that ended last (see [`Aggregator::done`]).
    done: Record,
    /// Counters.
    pub stats: GenStats,
}

/// The parts of a capture line the map needs.
struct Capture<'a> {
    surt: &'a [u8],
    datetime: &'a [u8],
    url: Option<std::borrow::Cow<'a, [u8]>>,
    json: Option<&'a [u8]>,
    cdx_rest: &'a [u8],
}

fn split_capture(line: &[u8]) -> Capture<'_> {
    let f_end = memchr::memchr(b' ', line).unwrap_or(line.len());
    let surt = &line[..f_end];
    let rest = line.get(f_end + 1..).unwrap_or(b"");
    // A 14-digit datetime needs no search.
    let d_end = match rest.get(..15) {
        Some([digits @ .., b' ']) if is_14_digits(digits) => 14,
        _ => memchr::memchr(b' ', rest).unwrap_or(rest.len()),
    };
    let datetime = &rest[..d_end];
    let rest = rest.get(d_end + 1..).unwrap_or(b"");
    let json_at = if rest.first() == Some(&b'{') {
        Some(0)
    } else {
        // The OSLJ is the first field that opens with `{`.
        memchr::memchr_iter(b'{', rest).find(|&i| i > 0 && rest[i - 1] == b' ')
    };
    match json_at {
        Some(j) => {
            let json = &rest[j..];
            Capture {
                surt,
                datetime,
                url: json_url(json),
                json: Some(json),
                cdx_rest: b"",
            }
        }
        None => {
            let u_end = memchr::memchr(b' ', rest).unwrap_or(rest.len());
            let url = &rest[..u_end];
            Capture {
                surt,
                datetime,
                url: (!url.is_empty()).then_some(std::borrow::Cow::Borrowed(url)),
                json: None,
                cdx_rest: rest.get(u_end + 1..).unwrap_or(b""),
            }
        }
    }
}

/// Whether the OSLJ string `value` (past its opening quote) is `url`, a
/// URL with no quote or escape in it (`plain`).
#[inline(always)]
fn names(value: &[u8], url: &[u8], plain: bool) -> bool {
    plain && value.len() > url.len() && value[url.len()] == b'"' && &value[..url.len()] == url
}

/// Whether `b` is 14 ASCII digits (a full datetime), tested eight bytes
/// at a time.
fn is_14_digits(b: &[u8]) -> bool {
    fn digits8(b: &[u8]) -> bool {
        let w = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
        const ZEROS: u64 = 0x3030_3030_3030_3030;
        // Bytes 0x30..=0x3F, and still below 0x40 after adding 6: 0-9.
        w & HIGH == ZEROS && w.wrapping_add(0x0606_0606_0606_0606) & HIGH == ZEROS
    }
    b.len() == 14 && digits8(&b[..8]) && digits8(&b[6..])
}

thread_local! {
    static URL_FINDER: memchr::memmem::Finder<'static> = memchr::memmem::Finder::new(b"\"url\"");
}

/// The `url` member of an OSLJ, with a searcher built once per thread.
fn json_url(json: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
    // The usual first member (pywb, cdxj-indexer, ukvs) needs no search.
    for head in [&b"{\"url\": \""[..], b"{\"url\":\""] {
        if let Some(rest) = json.strip_prefix(head) {
            if let Some(end) = memchr::memchr2(b'"', b'\\', rest) {
                if rest[end] == b'"' {
                    return Some(std::borrow::Cow::Borrowed(&rest[..end]));
                }
            }
            break;
        }
    }
    URL_FINDER.with(|f| json_string_member_with(json, f))
}

/// The value of a top-level string member `"name":"..."` of a JSON object,
/// found without parsing the whole object (the hot path of generation).
/// Falls back to a full parse when the fast scan is unsure.
#[cfg(test)]
fn json_string_member<'a>(json: &'a [u8], name: &[u8]) -> Option<std::borrow::Cow<'a, [u8]>> {
    let mut pat = Vec::with_capacity(name.len() + 2);
    pat.push(b'"');
    pat.extend_from_slice(name);
    pat.push(b'"');
    json_string_member_with(json, &memchr::memmem::Finder::new(&pat))
}

fn json_string_member_with<'a>(
    json: &'a [u8],
    finder: &memchr::memmem::Finder<'_>,
) -> Option<std::borrow::Cow<'a, [u8]>> {
    let pat_len = finder.needle().len();
    let mut from = 0;
    while let Some(i) = finder.find(&json[from..]) {
        let at = from + i;
        from = at + pat_len;
        // Must follow `{` or `,` (a member name), not `:` or `[`.
        let before = json[..at].iter().rev().find(|b| !b.is_ascii_whitespace());
        if !matches!(before, Some(b'{') | Some(b',')) {
            continue;
        }
        let mut p = from;
        while json.get(p).is_some_and(u8::is_ascii_whitespace) {
            p += 1;
        }
        if json.get(p) != Some(&b':') {
            continue;
        }
        p += 1;
        while json.get(p).is_some_and(u8::is_ascii_whitespace) {
            p += 1;
        }
        if json.get(p) != Some(&b'"') {
            return None;
        }
        let start = p + 1;
        let len = memchr::memchr2(b'"', b'\\', &json[start..])?;
        if json[start + len] == b'"' {
            return Some(std::borrow::Cow::Borrowed(&json[start..start + len]));
        }
        // An escape: let serde decode the string.
        let mut de = serde_json::Deserializer::from_slice(&json[p..]).into_iter::<String>();
        return de
            .next()
            .and_then(Result::ok)
            .map(|s| std::borrow::Cow::Owned(s.into_bytes()));
    }
    None
}

impl Aggregator {
    /// A fresh aggregator.
    pub fn new(opts: Options) -> Aggregator {
        let exclude = opts.exclude.iter().map(|k| (k.clone(), 0)).collect();
        let buckets = vec![BTreeMap::new(); opts.by.len()];
        Aggregator {
            opts,
            exclude,
            run_key: Vec::new(),
            run_active: false,
            run_excluded: None,
            run_urim: 0,
            run_urir: 0,
            run_capped: false,
            run_buckets: buckets,
            group_surt: Vec::new(),
            group_urls: Vec::new(),
            group_len: 0,
            key_buf: Vec::new(),
            group_capped: false,
            group_plain: Vec::new(),
            group_bucket_urls: HashSet::new(),
            done: Record::new(Vec::new(), Frequency::default()),
            stats: GenStats::default(),
        }
    }

    /// Reads one line (no terminator). Returns the record of the previous
    /// key when this line starts a new one. A line that cannot be used is
    /// an error naming it; the state is unchanged, so the caller can report
    /// it and go on.
    pub fn push_line(&mut self, line: &[u8], line_no: u64) -> Result<bool, Error> {
        self.stats.lines += 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line[0] == b'!' || line[0] == b' ' {
            self.stats.headers += 1;
            return Ok(false);
        }
        if self.repeats_a_url(line) {
            // Another capture of a URL of the group.
            self.stats.captures += 1;
            self.run_urim += 1;
            if self.run_excluded.is_some() {
                self.stats.excluded += 1;
            }
            return Ok(false);
        }
        self.push_capture(&split_capture(line), line, line_no)
    }

    /// Whether `line` is one more capture of the SURT and of a URL already
    /// counted for it, in the usual form `SURT DATETIME {"url": "URL",
    /// ...}`: most lines of an index are, and they need no search. Anything
    /// else (a new URL, decompositions to fill, another form) takes the
    /// full parse.
    fn repeats_a_url(&self, line: &[u8]) -> bool {
        const URL_HEAD: &[u8] = b"{\"url\": \"";
        if self.group_len == 0 || self.group_capped || !self.opts.by.is_empty() {
            return false;
        }
        let n = self.group_surt.len();
        let Some((surt, rest)) = line.split_at_checked(n) else {
            return false;
        };
        let Some((datetime, rest)) = rest.get(1..).and_then(|r| r.split_at_checked(14)) else {
            return false;
        };
        let head_ok = line[n] == b' '
            && surt == self.group_surt.as_slice()
            && is_14_digits(datetime)
            && rest
                .get(..1 + URL_HEAD.len())
                .is_some_and(|h| h[0] == b' ' && &h[1..] == URL_HEAD);
        if !head_ok {
            return false;
        }
        let value = &rest[1 + URL_HEAD.len()..];
        let urls = &self.group_urls[..self.group_len];
        let plain = &self.group_plain[..self.group_len];
        // The URL counted last first: captures of one URL are often adjacent.
        let last = self.group_len - 1;
        names(value, &urls[last], plain[last])
            || (0..last).rev().any(|i| names(value, &urls[i], plain[i]))
    }

    fn push_capture(
        &mut self,
        cap: &Capture<'_>,
        line: &[u8],
        line_no: u64,
    ) -> Result<bool, Error> {
        // Captures of one SURT are adjacent and share its key.
        let same_surt = self.run_active && cap.surt == self.group_surt.as_slice();
        let done = !same_surt && self.next_surt(cap, line, line_no)?;
        self.stats.captures += 1;
        self.count(cap);
        Ok(done)
    }

    /// Starts the group of a new SURT (and the run of a new key, giving the
    /// record of the run it ends).
    fn next_surt(&mut self, cap: &Capture<'_>, line: &[u8], line_no: u64) -> Result<bool, Error> {
        let mut key = std::mem::take(&mut self.key_buf);
        // A key is text: control bytes or invalid UTF-8 in the first
        // field are damage, whatever else it holds.
        let is_page = map_key_into(cap.surt, self.opts.keep_query, &mut key) && is_text(cap.surt);
        self.key_buf = key;
        if !is_page {
            return Err(self.not_a_page(cap.surt, line, line_no));
        }
        let mut done = false;
        if !self.run_active || self.key_buf != self.run_key {
            done = self.finish_run();
            self.start_run();
        }
        self.group_surt.clear();
        self.group_surt.extend_from_slice(cap.surt);
        self.group_len = 0;
        self.group_capped = false;
        self.group_bucket_urls.clear();
        Ok(done)
    }

    /// The error for a line whose first field `surt` names no page,
    /// counted by reason.
    #[cold]
    #[inline(never)]
    fn not_a_page(&mut self, surt: &[u8], line: &[u8], line_no: u64) -> Error {
        let shown = String::from_utf8_lossy(&surt[..surt.len().min(80)]);
        let binary = !is_text(line);
        let reason = if memchr::memmem::find(surt, b"://").is_some() {
            self.stats.skipped.url += 1;
            format!("first field {shown:?} is a URL, not a SURT (index the captures, or convert with `ukvs surt`)")
        } else if binary {
            self.stats.skipped.binary += 1;
            format!(
                "binary or corrupt line (control bytes or invalid UTF-8), first field {shown:?}"
            )
        } else {
            self.stats.skipped.not_surt += 1;
            format!("first field {shown:?} is not a SURT (no `)`)")
        };
        Error::Line {
            line: line_no,
            offset: 0,
            reason,
        }
    }

    /// Counts the capture `cap` into the current group and run.
    fn count(&mut self, cap: &Capture<'_>) {
        let url: &[u8] = cap.url.as_deref().unwrap_or(cap.surt);
        let live = &self.group_urls[..self.group_len];
        let new_url = if self.group_capped {
            true
        } else if live.iter().any(|u| u.as_slice() == url) {
            false
        } else if self.group_len >= GROUP_URL_CAP {
            self.group_capped = true;
            self.run_capped = true;
            self.stats.capped += 1;
            true
        } else {
            match self.group_urls.get_mut(self.group_len) {
                Some(slot) => {
                    slot.clear();
                    slot.extend_from_slice(url);
                }
                None => self.group_urls.push(url.to_vec()),
            }
            // A URL borrowed from an OSLJ ends at its first quote and has
            // no escape (see `json_url`).
            let plain =
                cap.json.is_some() && matches!(cap.url, Some(std::borrow::Cow::Borrowed(_)));
            match self.group_plain.get_mut(self.group_len) {
                Some(slot) => *slot = plain,
                None => self.group_plain.push(plain),
            }
            self.group_len += 1;
            true
        };
        self.run_urim += 1;
        self.run_urir += u64::from(new_url);
        if self.run_excluded.is_some() {
            self.stats.excluded += 1;
        }
        if !self.opts.by.is_empty() {
            let parsed: Option<Map<String, Value>> = cap
                .json
                .and_then(|j| serde_json::from_slice::<Map<String, Value>>(j).ok());
            let cdx: Vec<&[u8]> = cap.cdx_rest.split(|&b| b == b' ').collect();
            for (d, dim) in self.opts.by.clone().into_iter().enumerate() {
                let bucket = bucket_of(dim, cap, parsed.as_ref(), &cdx);
                let mut id = Vec::with_capacity(bucket.len() + url.len() + 2);
                id.push(d as u8);
                id.extend_from_slice(&bucket);
                id.push(0);
                id.extend_from_slice(url);
                let fresh = self.group_bucket_urls.insert(id);
                let e = self.run_buckets[d].entry(bucket).or_insert((0, 0));
                e.0 += 1;
                e.1 += u64::from(fresh);
            }
        }
    }

    /// Ends the input: true when the last key gave a record
    /// ([`Aggregator::done`]).
    pub fn finish(&mut self) -> bool {
        let r = self.finish_run();
        self.run_active = false;
        // A line pushed after this starts a new group and run.
        self.group_len = 0;
        r
    }

    /// The record of the key whose run ended last: valid after
    /// [`Aggregator::push_line`] or [`Aggregator::finish`] returned true,
    /// until the next call.
    pub fn done(&self) -> &Record {
        &self.done
    }

    /// The exclusion entries (`0` or `0/N`, N = distinct URI-Rs withheld),
    /// in key order.
    pub fn exclusions(&self) -> Vec<Record> {
        let mut v: Vec<Record> = self
            .exclude
            .iter()
            .map(|(k, &n)| {
                let freq = Frequency {
                    urim: Count::exact(0),
                    urir: if n == 0 {
                        Count::UNKNOWN
                    } else {
                        Count::exact(n)
                    },
                };
                Record::new(k.clone(), freq)
            })
            .collect();
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v
    }

    /// Starts the run of the key in `key_buf` (taking it from there).
    fn start_run(&mut self) {
        self.run_excluded = if self.exclude.is_empty() {
            None
        } else {
            candidates(&self.key_buf, self.opts.keep_query)
                .into_iter()
                .flatten()
                .find(|c| self.exclude.contains_key(c))
        };
        // The key moves in; `key_buf` is refilled for the next SURT.
        std::mem::swap(&mut self.run_key, &mut self.key_buf);
        self.run_active = true;
        self.run_urim = 0;
        self.run_urir = 0;
        self.run_capped = false;
        for b in &mut self.run_buckets {
            b.clear();
        }
        // A new key always means a new SURT group too.
        self.group_surt.clear();
    }

    /// Ends the current run: true when it gave a record (into `done`).
    fn finish_run(&mut self) -> bool {
        if !self.run_active {
            return false;
        }
        if let Some(ex) = self.run_excluded.take() {
            if let Some(n) = self.exclude.get_mut(&ex) {
                *n += self.run_urir;
            }
            return false;
        }
        let urir_bound = if self.run_capped {
            Bound::Upper
        } else {
            Bound::Exact
        };
        let freq = Frequency {
            urim: Count::exact(self.run_urim),
            urir: Count::new(self.run_urir, urir_bound),
        };
        let mut extra = None;
        if !self.opts.by.is_empty() {
            let mut m = Map::new();
            for (d, dim) in self.opts.by.iter().enumerate() {
                let obj: Map<String, Value> = self.run_buckets[d]
                    .iter()
                    .map(|(b, &(m, r))| {
                        (
                            String::from_utf8_lossy(b).into_owned(),
                            Value::String(Frequency::exact(m, r).to_string()),
                        )
                    })
                    .collect();
                m.insert(dim.name().to_string(), Value::Object(obj));
            }
            extra = Some(m);
        }
        std::mem::swap(&mut self.done.key, &mut self.run_key);
        self.done.freq = freq;
        self.done.extra = extra;
        true
    }
}

fn bucket_of(
    dim: Dimension,
    cap: &Capture<'_>,
    json: Option<&Map<String, Value>>,
    cdx: &[&[u8]],
) -> Vec<u8> {
    let dash = || b"-".to_vec();
    match dim {
        Dimension::Year | Dimension::Month => {
            let n = if dim == Dimension::Year { 4 } else { 6 };
            match cap.datetime.get(..n) {
                Some(p) if p.iter().all(u8::is_ascii_digit) => p.to_vec(),
                _ => dash(),
            }
        }
        Dimension::Status | Dimension::Mime => {
            let name = dim.name();
            if let Some(j) = json {
                match j.get(name) {
                    Some(Value::String(s)) if !s.is_empty() => s.as_bytes().to_vec(),
                    Some(Value::Number(n)) => n.to_string().into_bytes(),
                    _ => dash(),
                }
            } else {
                // CDX: original mime status ...; cdx holds mime, status, ...
                let i = if dim == Dimension::Mime { 0 } else { 1 };
                match cdx.get(i) {
                    Some(v) if !v.is_empty() => v.to_vec(),
                    _ => dash(),
                }
            }
        }
    }
}

/// Where a finished record goes.
pub enum Routed {
    /// After every record written so far: write it out.
    InOrder(Record),
    /// At or before the last written key: sort it in later.
    Late(Record),
}

/// Splits records into the in-order stream and the late ones.
#[derive(Default)]
pub struct Orderer {
    last: Option<Vec<u8>>,
}

impl Orderer {
    /// Routes one record.
    pub fn route(&mut self, rec: Record) -> Routed {
        match self.admit(&rec.key) {
            true => Routed::InOrder(rec),
            false => Routed::Late(rec),
        }
    }

    /// Whether `key` comes after every key admitted so far (it is then
    /// the last one).
    pub fn admit(&mut self, key: &[u8]) -> bool {
        match &mut self.last {
            Some(last) if key <= last.as_slice() => false,
            Some(last) => {
                last.clear();
                last.extend_from_slice(key);
                true
            }
            None => {
                self.last = Some(key.to_vec());
                true
            }
        }
    }
}

/// Where late records go when they should not stay in memory.
pub type LateSink = Box<dyn FnMut(&Record) -> std::io::Result<()>>;

/// Aggregator + orderer: in-order records are written as map lines to
/// `main`, late ones are returned by [`Generator::finish`] for sorting.
///
/// Most late records never reach that sort: a key the query cut moves
/// back stays within its host, so the lines of the current host are held
/// (up to [`HOLD_MAX`] bytes) and its late records folded into them when
/// the host ends.
pub struct Generator<W: Write> {
    agg: Aggregator,
    /// The length of the last key admitted in order: the key of the last
    /// line of `held` while it holds one, so it is compared there, not
    /// copied.
    last_len: usize,
    /// That key once its line left `held`.
    last_out: Option<Vec<u8>>,
    main: W,
    late: Vec<Record>,
    late_sink: Option<LateSink>,
    /// Lines of the current host, not yet written to `main`.
    held: Vec<u8>,
    /// That host (its keys up to `)`).
    held_host: Vec<u8>,
    /// Its late records, and their keys' bytes.
    held_late: Vec<Record>,
    held_late_bytes: usize,
    /// Where each line of `held` starts: the searches of a fold compare
    /// the keys there, with no scan for the lines.
    held_starts: Vec<u32>,
    /// Whether the host's lines outgrew [`HOLD_MAX`] and went out: its
    /// later late records go to the sort.
    held_out: bool,
    /// What was written to `main`.
    written: Summary,
    /// Bytes of lines held for one host at most.
    hold_max: usize,
}

/// Bytes of map lines (and late keys) held for one host before they are
/// written out.
pub const HOLD_MAX: usize = 1 << 20;

impl<W: Write> Generator<W> {
    /// A generator writing in-order records to `main`. Late records are
    /// kept in memory unless [`Generator::with_late_sink`] is given.
    pub fn new(opts: Options, main: W) -> Generator<W> {
        Generator {
            agg: Aggregator::new(opts),
            last_len: 0,
            last_out: None,
            main,
            late: Vec::new(),
            late_sink: None,
            held: Vec::new(),
            held_host: Vec::new(),
            held_late: Vec::new(),
            held_late_bytes: 0,
            held_starts: Vec::new(),
            held_out: false,
            written: Summary::default(),
            hold_max: HOLD_MAX,
        }
    }

    /// Holds at most `bytes` of lines for one host (default [`HOLD_MAX`]):
    /// late records past that go to the sort.
    pub fn with_hold_max(mut self, bytes: usize) -> Self {
        self.hold_max = bytes;
        self
    }

    /// Sends late records to `sink` (an external sorter) instead of memory.
    pub fn with_late_sink(mut self, sink: LateSink) -> Self {
        self.late_sink = Some(sink);
        self
    }

    /// Reads one capture line; see [`Aggregator::push_line`].
    pub fn push_line(&mut self, line: &[u8], line_no: u64) -> Result<(), Error> {
        if self.agg.push_line(line, line_no)? {
            self.route()?;
        }
        Ok(())
    }

    /// Writes out or holds back the record the aggregator finished.
    fn route(&mut self) -> Result<(), Error> {
        let freq = self.agg.done().freq;
        if !freq.is_zero() {
            self.agg.stats.total = sum(self.agg.stats.total, Some(freq));
        }
        let key = &self.agg.done().key;
        // When the held host ends with `)`, that is its only `)`: a key
        // that starts with it is of that host, with no search for its `)`.
        let same_host = self.held_host.last() == Some(&b')') && key.starts_with(&self.held_host);
        if !same_host {
            let host = &key[..memchr::memchr(b')', key).map_or(key.len(), |i| i + 1)];
            if host != self.held_host.as_slice() {
                self.held_host.clear();
                self.held_host.extend_from_slice(host);
                self.release()?;
                self.held_out = false;
            }
        }
        if u32::try_from(self.held.len()).is_err() {
            // Past what a line start can say (only lines of absurd
            // length get here): out with what is held.
            self.release()?;
            self.held_out = true;
        }
        let rec = self.agg.done();
        if self
            .last_admitted()
            .map_or(true, |last| rec.key.as_slice() > last)
        {
            self.held_starts.push(self.held.len() as u32);
            self.last_len = rec.key.len();
            rec.write_to(&mut self.held);
            if self.held.len() + self.held_late_bytes > self.hold_max {
                self.make_room()?;
            }
        } else {
            let rec = rec.clone();
            self.agg.stats.late += 1;
            let foldable =
                !self.held_out && (self.written.first.is_none() || rec.key > self.written.last);
            if foldable {
                self.held_late_bytes += rec.key.len() + 32;
                self.held_late.push(rec);
                if self.held.len() + self.held_late_bytes > self.hold_max {
                    self.make_room()?;
                }
            } else {
                self.send_to_sort(rec)?;
            }
        }
        Ok(())
    }

    /// The last key admitted in order, if any.
    fn last_admitted(&self) -> Option<&[u8]> {
        match self.held_starts.last() {
            Some(&s) => Some(&self.held[s as usize..s as usize + self.last_len]),
            None => self.last_out.as_deref(),
        }
    }

    /// Keeps the last key admitted before the lines of `held` leave it.
    fn keep_last(&mut self) {
        if let Some(&s) = self.held_starts.last() {
            let key = &self.held[s as usize..s as usize + self.last_len];
            let last = self.last_out.get_or_insert_with(Vec::new);
            last.clear();
            last.extend_from_slice(key);
        }
    }

    fn send_to_sort(&mut self, r: Record) -> Result<(), Error> {
        match &mut self.late_sink {
            Some(sink) => sink(&r)?,
            None => self.late.push(r),
        }
        Ok(())
    }

    /// Writes out the held lines that no late record to come can precede
    /// (keys below [`late_bound`] of the SURT read last), with the late
    /// records among them folded in. When they are less than half of what
    /// is held, writes out all of it instead; the host's later late records
    /// then go to the sort.
    fn make_room(&mut self) -> Result<(), Error> {
        let bound = late_bound(&self.agg.group_surt);
        let (held, starts) = (&self.held, &self.held_starts);
        let lines = starts.partition_point(|&s| key_below(held, s as usize, &bound));
        let split = starts.get(lines).map_or(held.len(), |&s| s as usize);
        if split < self.held.len() / 2 {
            self.release()?;
            self.held_out = true;
            return Ok(());
        }
        self.held_late.sort_by(|a, b| a.key.cmp(&b.key));
        let later = self.held_late.partition_point(|r| r.key < bound);
        let later = self.held_late.split_off(later);
        let early = std::mem::replace(&mut self.held_late, later);
        let (out, starts) = (&self.held[..split], &self.held_starts[..lines]);
        let summary = fold_indexed_records(out, starts, early.into_iter().map(Ok), &mut self.main)?;
        self.written.append(summary)?;
        if lines == self.held_starts.len() {
            self.keep_last();
        }
        self.held.drain(..split);
        self.held_starts.drain(..lines);
        // `split` is a line start, so it fits.
        let split = split as u32;
        self.held_starts.iter_mut().for_each(|s| *s -= split);
        self.held_late_bytes = self.held_late.iter().map(|r| r.key.len() + 32).sum();
        Ok(())
    }

    /// Writes the held lines out, with the late records of their host
    /// folded in.
    fn release(&mut self) -> Result<(), Error> {
        self.keep_last();
        if self.held_late.is_empty() {
            // In order as they are: the last one is the last admitted.
            if self.held.is_empty() {
                return Ok(());
            }
            if self.written.first.is_none() {
                self.written.first = Some(key_at(&self.held, 0).to_vec());
            }
            self.written.lines += self.held_starts.len() as u64;
            if let Some(last) = &self.last_out {
                self.written.last.clear();
                self.written.last.extend_from_slice(last);
            }
            self.main.write_all(&self.held)?;
        } else {
            self.held_late.sort_by(|a, b| a.key.cmp(&b.key));
            let late = std::mem::take(&mut self.held_late).into_iter().map(Ok);
            let summary =
                fold_indexed_records(&self.held, &self.held_starts, late, &mut self.main)?;
            self.written.append(summary)?;
        }
        self.held.clear();
        self.held_starts.clear();
        self.held_late_bytes = 0;
        Ok(())
    }

    /// Ends the input: returns the main sink, the late records kept in
    /// memory (sorted by key; exclusion entries included), the counters
    /// and what was written to the main sink.
    pub fn finish(mut self) -> Result<(W, Vec<Record>, GenStats, Summary), Error> {
        if self.agg.finish() {
            self.route()?;
        }
        self.release()?;
        for r in self.agg.exclusions() {
            self.agg.stats.late += 1;
            self.send_to_sort(r)?;
        }
        self.main.flush()?;
        let mut late = self.late;
        late.sort_by(|a, b| a.key.cmp(&b.key));
        Ok((self.main, late, self.agg.stats, self.written))
    }
}

/// Whether `bytes` are text: UTF-8 without control bytes but the tab.
fn is_text(bytes: &[u8]) -> bool {
    // Keys are printable ASCII as a rule, tested eight bytes at a time.
    is_printable_ascii(bytes)
        || (!bytes.iter().any(|&b| b < 0x20 && b != b'\t') && std::str::from_utf8(bytes).is_ok())
}

/// Whether every byte of `bytes` is in 0x20..=0x7F.
fn is_printable_ascii(bytes: &[u8]) -> bool {
    const LOW: u64 = 0x2020_2020_2020_2020;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte below 0x20 sets the high bit of `w - LOW` where `w` has it
    // clear (a borrow it makes may set a later byte's too, which is
    // still a byte below 0x20 found); a byte from 0x80 has it set.
    let flags = |w: u64| (w.wrapping_sub(LOW) & !w) | w;
    let mut seen = 0;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        seen |= flags(u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        // The last eight bytes, or the rest after spaces.
        let mut last = [b' '; 8];
        match bytes.len().checked_sub(8) {
            Some(from) => last.copy_from_slice(&bytes[from..]),
            None => last[..rest.len()].copy_from_slice(rest),
        }
        seen |= flags(u64::from_le_bytes(last));
    }
    seen & HIGH == 0
}

/// A lower bound of the keys that captures sorting at or after `surt` (in
/// the same host) give, for SURTs whose path starts with `/`: such a key
/// that is late is a prefix of `surt`'s path followed, in its own SURT, by
/// `?`, `/` or `,`; so the prefix is at least as long as the shortest one
/// that `surt` goes on from with a byte up to `?`.
///
/// Only a bound on what is held: a late record below it (an odd SURT such
/// as `com,example)?a`, or an unsorted input) goes to the sort.
fn late_bound(surt: &[u8]) -> Vec<u8> {
    let mut key = Vec::new();
    let Some(close) = memchr::memchr(b')', surt) else {
        return key;
    };
    let path = &surt[close + 1..];
    let end = (1..path.len())
        .find(|&i| path[i] <= b'?')
        .unwrap_or(path.len());
    map_key_into(&surt[..close + 1 + end], false, &mut key);
    key
}

/// Generates the records of `input` (whole capture index in memory),
/// sorted and with equal keys combined. Bad lines are skipped and counted
/// in the stats. For tests, evaluation and small inputs.
pub fn records_of(input: &[u8], opts: &Options) -> Result<(Vec<Record>, GenStats), Error> {
    records_held(input, opts, HOLD_MAX)
}

/// [`records_of`] with at most `hold_max` bytes held per host.
pub fn records_held(
    input: &[u8],
    opts: &Options,
    hold_max: usize,
) -> Result<(Vec<Record>, GenStats), Error> {
    let mut g = Generator::new(opts.clone(), Vec::new()).with_hold_max(hold_max);
    for (i, line) in input.split(|&b| b == b'\n').enumerate() {
        match g.push_line(line, i as u64 + 1) {
            Ok(()) | Err(Error::Line { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let (main, late, stats, _) = g.finish()?;
    let mut main_recs = Vec::new();
    for (i, line) in main.split(|&b| b == b'\n').enumerate() {
        if !line.is_empty() {
            main_recs.push(Record::parse(line, i as u64 + 1)?);
        }
    }
    let merged = super::merge::Merger::new(
        vec![
            Box::new(main_recs.into_iter().map(Ok)) as super::merge::Source,
            Box::new(late.into_iter().map(Ok)),
        ],
        true,
    )
    .collect::<Result<Vec<_>, _>>()?;
    Ok((merged, stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(recs: &[Record]) -> String {
        recs.iter()
            .map(|r| String::from_utf8(r.to_line()).unwrap())
            .collect()
    }

    #[test]
    fn cdxj_counts_urim_and_distinct_urls() {
        let input = br#"!context ["x"]
com,example)/ 20140101000000 {"url":"http://example.com/","status":"200"}
com,example)/ 20150101000000 {"url":"https://example.com/","status":"200"}
com,example)/ 20150201000000 {"url":"http://example.com/","status":"404"}
com,example)/?a=1 20150201000000 {"url":"http://example.com/?a=1"}
com,example)/a 20150201000000 {"url":"http://example.com/a"}
com,example)/a-b 20150201000000 {"url":"http://example.com/a-b"}
com,example)/a/ 20150201000000 {"url":"http://example.com/a/"}
com,example)/a?x 20150201000000 {"url":"http://example.com/a?x"}
"#;
        let (recs, stats) = records_of(input, &Options::default()).unwrap();
        assert_eq!(
            lines(&recs),
            "com,example)/ 4/3\ncom,example)/a 3/3\ncom,example)/a-b 1/1\n"
        );
        assert_eq!(stats.late, 1);
        assert_eq!(stats.headers, 2);
    }

    #[test]
    fn cdx_and_surt_list() {
        let cdx = b" CDX N b a m s k r M S V g\ncom,x)/ 2014 http://x.com/ text/html 200 - - - 1 0 f\ncom,x)/ 2015 http://www.x.com/ text/html 301 - - - 1 0 f\n";
        let opts = Options {
            by: vec![Dimension::Status, Dimension::Year],
            ..Options::default()
        };
        let (recs, _) = records_of(cdx, &opts).unwrap();
        assert_eq!(
            lines(&recs),
            "com,x)/ 2/2 {\"status\":{\"200\":\"1/1\",\"301\":\"1/1\"},\"datetime\":{\"2014\":\"1/1\",\"2015\":\"1/1\"}}\n"
        );
        let (recs, _) =
            records_of(b"com,x)/a\ncom,x)/a\ncom,x)/a?b\n", &Options::default()).unwrap();
        assert_eq!(lines(&recs), "com,x)/a 3/2\n");
    }

    #[test]
    fn exclusions_write_zero_entries() {
        let opts = Options {
            exclude: vec![exclusion_key(b"com,x)/private").unwrap()],
            ..Options::default()
        };
        let input = b"com,x)/a\ncom,x)/private\ncom,x)/private/b\ncom,x)/private/b\ncom,x)/z\n";
        let (recs, stats) = records_of(input, &opts).unwrap();
        assert_eq!(
            lines(&recs),
            "com,x)/a 1/1\ncom,x)/private/* 0/2\ncom,x)/z 1/1\n"
        );
        assert_eq!(stats.excluded, 3);
    }

    #[test]
    fn printable_ascii_is_found_eight_bytes_at_a_time() {
        for len in 0..=24 {
            for at in 0..len {
                for bad in [0x00, 0x09, 0x1f, 0x80, 0xc3, 0xff] {
                    let mut b = vec![b'a'; len];
                    b[at] = bad;
                    assert!(!is_printable_ascii(&b), "{len} {at} {bad:#x}");
                }
                for good in [0x20, 0x29, 0x7e, 0x7f] {
                    let mut b = vec![b'~'; len];
                    b[at] = good;
                    assert!(is_printable_ascii(&b), "{len} {at} {good:#x}");
                }
            }
        }
        assert!(is_printable_ascii(b""));
        assert!(is_text("com,x)/caf\u{e9}\t".as_bytes()));
        assert!(!is_text(b"com,x)/caf\xe9"));
        assert!(!is_text(b"com,x)/\x1b[0m"));
    }

    #[test]
    fn bad_lines_are_counted_by_reason() {
        // Binary lines with a `)` in their first field too.
        let input =
            b"com,x)/ 2014\nhttp://x.com/ 2014\nnot-a-surt 2014\n\x00\x01junk\nbad\xff 2014\n\
                      com,x\x01)/ 2014\ncom,x)/\xff\xfe 2014\ncom,x)/\tok 2014\ncom,y)/ 2015\n";
        let (recs, stats) = records_of(input, &Options::default()).unwrap();
        assert_eq!(lines(&recs), "com,x)/ 1/1\ncom,x)/\tok 1/1\ncom,y)/ 1/1\n");
        assert_eq!(
            stats.skipped,
            Skipped {
                url: 1,
                binary: 4,
                not_surt: 1
            }
        );
        assert_eq!(
            stats.skipped.to_string(),
            "6 bad lines skipped (1 URLs instead of SURTs, 4 binary or corrupt, 1 first field without `)`)"
        );
        assert_eq!(Skipped::default().to_string(), "0 bad lines skipped");
    }

    #[test]
    fn exclusion_key_forms() {
        for (i, o) in [
            ("com,x,", "com,x,*"),
            ("com,x", "com,x,*"),
            ("com,x)/", "com,x)/*"),
            ("com,x)/p/", "com,x)/p/*"),
            ("com,x)/p/*", "com,x)/p/*"),
            ("*", "*"),
        ] {
            assert_eq!(exclusion_key(i.as_bytes()).unwrap(), o.as_bytes(), "{i}");
        }
        assert_eq!(exclusion_key(b"# comment"), None);
    }

    use proptest::prelude::*;

    /// Sorted capture lines from a small alphabet, so that keys collide,
    /// queries and trailing slashes reorder them, and URLs repeat.
    fn capture_lines() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::vec(
            (
                "(com|org),[ab](,[ab])?\\)(/([ab]{1,2}(/[ab-]{1,2}){0,2})?/?)?(\\?[xy])?",
                0..3u8,
            ),
            1..60,
        )
        .prop_map(|v| {
            let mut lines: Vec<String> = v
                .into_iter()
                .map(|(surt, variant)| {
                    format!("{surt} 2014 {{\"url\":\"http://{variant}/{surt}\"}}")
                })
                .collect();
            lines.sort();
            lines
        })
    }

    /// Capture lines in the usual form (14-digit datetime, `url` first)
    /// whose URLs repeat, sometimes written with escapes that decode to
    /// the same URL or to another one.
    fn usual_capture_lines() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::vec(
            (
                "com,[ab]\\)/[ab]{0,2}(\\?[xy])?",
                0..3u8,
                0..8u8,
                "(20140101000000|2014|2014010100000x)",
            ),
            1..40,
        )
        .prop_map(|v| {
            let mut lines: Vec<String> = v
                .into_iter()
                .map(|(surt, variant, form, datetime)| {
                    let url = format!("http://{variant}/{surt}");
                    let quoted = serde_json::to_string(&url).unwrap_or_default();
                    let json = match form {
                        0 => quoted,
                        // The same URL, its slashes escaped.
                        1 => quoted.replace('/', "\\/"),
                        // Another URL that starts alike.
                        2 => serde_json::to_string(&format!("{url}\"q")).unwrap_or_default(),
                        3 => serde_json::to_string(&format!("{url}\\")).unwrap_or_default(),
                        // Other forms of the same capture, which the
                        // repeat shortcut must leave to the full parse.
                        4 => return format!("{surt} {datetime} {{\"url\":{quoted}}}"),
                        5 => {
                            return format!(
                                "{surt} {datetime} {{\"mime\": \"text/html\", \"url\": {quoted}}}"
                            )
                        }
                        6 => {
                            return format!(
                                "{surt} {datetime} {url} text/html 200 AAAA - - 100 0 f.arc"
                            )
                        }
                        _ => return format!("{surt} {datetime}"),
                    };
                    format!("{surt} {datetime} {{\"url\": {json}, \"mime\": \"text/html\"}}")
                })
                .collect();
            lines.sort();
            lines
        })
    }

    /// URI-M and URI-R counts per key as the spec defines them, from lines
    /// parsed whole: captures, and distinct (SURT, URL) pairs.
    fn counted_by_oracle(lines: &[String]) -> Vec<(Vec<u8>, u64, u64)> {
        let mut urim: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        let mut urls = HashSet::new();
        for l in lines {
            let (surt, rest) = l.split_once(' ').unwrap_or((l, ""));
            let fields: Vec<&str> = rest.splitn(3, ' ').collect();
            // The URL of the OSLJ, or the CDX field after the datetime;
            // the SURT where there is none.
            let url = match fields.get(1) {
                Some(f) if !f.starts_with('{') => f.to_string(),
                _ => {
                    let json = &rest[rest.find('{').unwrap_or(rest.len())..];
                    let v: Value = serde_json::from_str(json).unwrap_or(Value::Null);
                    v["url"].as_str().unwrap_or(surt).to_string()
                }
            };
            let key = map_key(surt.as_bytes(), false).unwrap_or_default();
            *urim.entry(key.clone()).or_default() += 1;
            urls.insert((key, surt.to_string(), url));
        }
        urim.into_iter()
            .map(|(k, m)| {
                let urir = urls.iter().filter(|(key, _, _)| *key == k).count();
                (k, m, urir as u64)
            })
            .collect()
    }

    proptest! {
        /// Lines that repeat the URL before them (counted without a full
        /// parse) give the counts of parsing every line whole.
        #[test]
        fn repeated_urls_count_as_parsed(lines in usual_capture_lines()) {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let (recs, _) = records_of(text.as_bytes(), &Options::default()).unwrap();
            let got: Vec<(Vec<u8>, u64, u64)> = recs
                .iter()
                .map(|r| {
                    let (m, u) = (r.freq.urim.value, r.freq.urir.value);
                    (r.key.clone(), m.unwrap_or(0), u.unwrap_or(0))
                })
                .collect();
            prop_assert_eq!(got, counted_by_oracle(&lines));
        }

        /// Merging the maps of two parts of an index (cut between SURTs)
        /// with --disjoint gives the map of the whole.
        #[test]
        fn merge_of_split_equals_whole(lines in capture_lines(), cut in 0usize..60) {
            let surt = |l: &String| l.split(' ').next().unwrap_or("").to_string();
            let mut cut = cut.min(lines.len());
            while cut > 0 && cut < lines.len() && surt(&lines[cut]) == surt(&lines[cut - 1]) {
                cut += 1;
            }
            let text = |ls: &[String]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
            let opts = Options::default();
            let (whole, _) = records_of(text(&lines).as_bytes(), &opts).unwrap();
            let (a, _) = records_of(text(&lines[..cut]).as_bytes(), &opts).unwrap();
            let (b, _) = records_of(text(&lines[cut..]).as_bytes(), &opts).unwrap();
            let merged: Vec<Record> = super::super::merge::Merger::new(
                vec![
                    Box::new(a.into_iter().map(Ok)),
                    Box::new(b.into_iter().map(Ok)),
                ],
                true,
            )
            .collect::<Result<_, _>>()
            .unwrap();
            prop_assert_eq!(merged, whole);
        }

        /// However few lines of a host are held back for its late records
        /// (none: all of them go through the sort), the records are the
        /// same, and so are the counters but the late ones.
        #[test]
        fn holding_does_not_change_the_records(
            lines in capture_lines(),
            hold in 0usize..400,
            keep_query in proptest::prelude::any::<bool>(),
        ) {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let opts = Options { keep_query, ..Options::default() };
            let (held, held_stats) = records_held(text.as_bytes(), &opts, HOLD_MAX).unwrap();
            let (sorted, sorted_stats) = records_held(text.as_bytes(), &opts, hold).unwrap();
            prop_assert_eq!(held, sorted);
            prop_assert_eq!(
                GenStats { late: 0, ..held_stats },
                GenStats { late: 0, ..sorted_stats }
            );
            // The lines written in order have strictly increasing keys, and
            // the summary counts them (both are what `make_room` relies on).
            let mut g = Generator::new(opts, Vec::new()).with_hold_max(hold);
            for (i, line) in text.as_bytes().split(|&b| b == b'\n').enumerate() {
                let _ = g.push_line(line, i as u64 + 1);
            }
            let (main, _, _, written) = g.finish().unwrap();
            let keys: Vec<&[u8]> = main
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| l.split(|&b| b == b' ').next().unwrap_or_default())
                .collect();
            prop_assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys in order");
            prop_assert_eq!(written.lines as usize, keys.len());
            prop_assert_eq!(written.first.as_deref(), keys.first().copied());
            prop_assert_eq!(written.last.as_slice(), keys.last().copied().unwrap_or_default());
        }

        /// Every captured page is still covered after compaction at any
        /// factor (rollups only generalise), and keys stay sorted.
        #[test]
        fn recall_is_full_at_any_factor(lines in capture_lines(), f in 0.0f64..3.0) {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let (recs, _) = records_of(text.as_bytes(), &Options::default()).unwrap();
            let (body, _) = super::super::compact::compact_records(
                &recs,
                super::super::Params::COMPACT.with_factor(f),
            )
            .unwrap();
            let keys: Vec<&[u8]> = body
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| l.split(|&b| b == b' ').next().unwrap_or(b""))
                .collect();
            prop_assert!(keys.windows(2).all(|w| w[0] < w[1]), "sorted unique keys");
            let map = super::super::lookup::Map::new(body.as_slice());
            for l in &lines {
                let surt = l.split(' ').next().unwrap_or("");
                let hit = map.lookup(surt.as_bytes()).unwrap();
                prop_assert!(hit.is_some_and(|h| h.covered()), "{} lost at factor {}", surt, f);
            }
        }
    }

    proptest! {
        /// Exclusions through generation and compaction at any factor: keys
        /// unique and in order, zero entries only for the excluded prefixes
        /// (each written once), every excluded capture answered "not held",
        /// every other one covered, and the non-zero counts add up to the
        /// captures not excluded.
        #[test]
        fn exclusions_survive_compaction(
            lines in capture_lines(),
            excl in proptest::collection::btree_set(
                "(com|org),a(,[ab])?(\\)/([ab]{1,2})?)?",
                1..6,
            ),
            f in prop_oneof![Just(f64::INFINITY), Just(0.0), 0.0f64..2.0, 0.0f64..0.2],
        ) {
            let exclude: Vec<Vec<u8>> =
                excl.iter().filter_map(|e| exclusion_key(e.as_bytes())).collect();
            let opts = Options { exclude: exclude.clone(), ..Options::default() };
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let (recs, stats) = records_of(text.as_bytes(), &opts).unwrap();
            let (body, _) = super::super::compact::compact_records(
                &recs,
                super::super::Params::COMPACT.with_factor(f),
            )
            .unwrap();
            let shown = String::from_utf8_lossy(&body).into_owned();
            let out: Vec<Record> = body
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| Record::parse(l, 0).unwrap())
                .collect();
            prop_assert!(out.windows(2).all(|w| w[0].key < w[1].key), "order: {}", shown);
            let zeros: Vec<&[u8]> =
                out.iter().filter(|r| r.freq.is_zero()).map(|r| &r.key[..]).collect();
            let mut want_zeros: Vec<&[u8]> = exclude.iter().map(Vec::as_slice).collect();
            want_zeros.sort();
            want_zeros.dedup();
            prop_assert_eq!(zeros, want_zeros, "{}", shown);
            let total: u64 = out.iter().map(|r| r.freq.urim.value.unwrap_or(0)).sum();
            prop_assert_eq!(total, stats.captures - stats.excluded, "{}", shown);
            let map = super::super::lookup::Map::new(body.as_slice());
            for l in &lines {
                let surt = l.split(' ').next().unwrap_or("");
                let key = map_key(surt.as_bytes(), false).unwrap_or_default();
                let excluded = candidates(&key, false)
                    .into_iter()
                    .flatten()
                    .any(|c| exclude.contains(&c));
                let hit = map.lookup(surt.as_bytes()).unwrap();
                prop_assert_eq!(
                    hit.is_some_and(|h| h.covered()),
                    !excluded,
                    "{} at factor {}: {}", surt, f, shown
                );
            }
        }
    }

    /// A datetime of other than 14 digits is the field up to the space,
    /// even when byte 14 is a space.
    #[test]
    fn short_datetimes_end_at_their_space() {
        let cap = split_capture(b"com,a)/ 201501010000 - text/html 200");
        assert_eq!(cap.datetime, b"201501010000");
        assert_eq!(cap.url.as_deref(), Some(&b"-"[..]));
        let cap = split_capture(b"com,a)/ 20150101000000 http://a.com/ text/html");
        assert_eq!(cap.datetime, b"20150101000000");
        assert_eq!(cap.url.as_deref(), Some(&b"http://a.com/"[..]));
    }

    /// A line pushed after the end of the input starts a run of its own,
    /// even with the SURT and URL of the last run.
    #[test]
    fn pushing_after_finish_starts_a_new_run() {
        let line = br#"com,a)/ 20140101000000 {"url": "http://a/"}"#;
        let mut agg = Aggregator::new(Options::default());
        for n in 1..=2 {
            assert!(!agg.push_line(line, n).unwrap());
        }
        assert!(agg.finish());
        assert_eq!(agg.done().to_line(), b"com,a)/ 2/1\n");
        assert!(!agg.push_line(line, 3).unwrap());
        assert!(agg.finish());
        assert_eq!(agg.done().to_line(), b"com,a)/ 1/1\n");
    }

    #[test]
    fn fourteen_digits() {
        assert!(is_14_digits(b"20140101000000"));
        assert!(is_14_digits(b"99999999999999"));
        for bad in [
            &b"2014010100000"[..],
            b"201401010000000",
            b"2014010100000/",
            b"2014010100000:",
            b"/0140101000000",
            b"201401:1000000",
            b"2014\xb001000000",
        ] {
            assert!(!is_14_digits(bad), "{}", String::from_utf8_lossy(bad));
        }
    }

    /// The bound of late keys: the shortest path prefix that the SURT goes
    /// on from with a byte up to `?`.
    #[test]
    fn late_bounds() {
        for (surt, bound) in [
            // `com,a)/s?q` sorts after `com,a)/s31/...` and has key `com,a)/s`.
            (&b"com,a)/s31/user/s13"[..], &b"com,a)/s"[..]),
            (b"com,a)/sun/user/s13", b"com,a)/sun"),
            (b"com,a)/wiki/user?id=4", b"com,a)/wiki"),
            (b"com,a)/2014/a", b"com,a)/"),
            (b"com,a)/a.html", b"com,a)/a"),
            (b"com,a)/abc", b"com,a)/abc"),
            (b"com,a)/", b"com,a)/"),
            (b"com,a)", b"com,a)/"),
            (b"no-page", b""),
        ] {
            assert_eq!(
                String::from_utf8_lossy(&late_bound(surt)),
                String::from_utf8_lossy(bound)
            );
        }
    }

    #[test]
    fn json_member_scan() {
        let j = br#"{"note":"url","u":["url"],"url" : "http://a/\"b"}"#;
        assert_eq!(
            json_string_member(j, b"url").unwrap().as_ref(),
            br#"http://a/"b"#
        );
        assert_eq!(
            json_string_member(br#"{"url":"x"}"#, b"url")
                .unwrap()
                .as_ref(),
            b"x"
        );
        assert!(json_string_member(br#"{"urlx":"x"}"#, b"url").is_none());
    }
}
