//! Holdings statistics of capture indexes: what a collection holds, by
//! time, type, status, host and domain, in one scan of its index.
//!
//! ```text
//! index line ──► Layout::fields ──► Fields {key, datetime, mime, status, length}
//!                                      │
//!                    ┌─────────────────┴──────────────────┐
//!                    ▼                                    ▼
//!         Counts::add (per capture:           KeyRuns::add (per key, in byte
//!         time, mime × status, bytes,         order: URLs, hosts, domains,
//!         path depth, query)                  TLDs, captures per URL, top hosts)
//!                    └─────────────────┬──────────────────┘
//!                                      ▼
//!                        Scan::finish ──► Report (JSON, text, CSV, HTML)
//!                        Report::merge (shards: sums, and what cannot be summed)
//! ```
//!
//! Everything that depends on one capture alone adds up in any order. The
//! distinct counts (URLs, hosts) need the keys in byte order: then a URL's
//! captures are adjacent, and so are a host's (every key of a host starts
//! with the same text, up to its `)`), so they are counted as runs with no
//! memory of past keys. A [`Scan`] notices keys out of order
//! ([`Scan::out_of_order`]); the engine then sorts the keys and feeds them
//! to [`KeyRuns`] itself. Registered domains are not adjacent in key order
//! (`com,example,www)` and `com,example:8080)` are apart), so they are
//! tallied in a map with one entry per domain.
//!
//! Nothing here reads files: the engine (`engine::stats`) opens inputs,
//! splits them among threads and combines the parts.

pub mod html;
mod render;

use std::borrow::Cow;
use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

pub use render::{write_csv, write_text};

/// The version of the JSON report's layout, written as `"format"`.
pub const FORMAT: &str = "ukvs-stats/1";

/// Why a data line gave no capture.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The line has no datetime field after its key.
    #[error("no datetime after the key")]
    NoDatetime,
    /// A CDX line has fewer fields than its legend names.
    #[error("{found} fields where the CDX legend names {wanted}")]
    ShortCdx { found: usize, wanted: usize },
}

/// Where the fields of an index's data lines are: in an OSLJ block (UKVS,
/// CDXJ) or in the columns of a CDX legend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// `key datetime ... {json}`: mime, status and length are members of
    /// the first field that opens with `{`.
    Json,
    /// Classic CDX: column numbers of each field (by legend letter).
    Cdx {
        delimiter: u8,
        date: usize,
        mime: Option<usize>,
        status: Option<usize>,
        /// `S`: the compressed record's length.
        length: Option<usize>,
        /// Columns a line needs.
        columns: usize,
        /// The first column is a URL, not a SURT (wget's legend): the key
        /// is its SURT ([`Layout::key`]).
        url_key: bool,
    },
}

/// The 11 columns of CDX-Writer and IA's `cdx` files.
const CDX11: &[u8] = b"NbamskrMSVg";
/// The 9 columns of older Wayback files.
const CDX9: &[u8] = b"NbamskrVg";
/// The 10 columns of files with robot flags and no length.
const CDX10: &[u8] = b"NbamskrMVg";

impl Layout {
    /// The layout a CDX legend line gives, `None` when `line` is not one.
    pub fn from_legend(line: &[u8]) -> Option<Layout> {
        let legend = crate::ukvs::convert::CdxLegend::parse(line)?.ok()?;
        let mut layout = Layout::cdx(legend.delimiter, &legend.letters);
        if let Layout::Cdx { url_key, .. } = &mut layout {
            *url_key = legend.is_url_keyed();
        }
        Some(layout)
    }

    /// The key a line's fields are counted under: the key column, or the
    /// SURT of the URL there when the legend keys on URLs (wget), so that
    /// its hosts, paths and URLs count as those of any other index.
    pub fn key<'l>(&self, f: &Fields<'l>) -> Cow<'l, [u8]> {
        match self {
            Layout::Cdx { url_key: true, .. } if f.key != b"-" => {
                Cow::Owned(crate::ukvs::convert::url_key(f.key))
            }
            _ => Cow::Borrowed(f.key),
        }
    }

    fn cdx(delimiter: u8, letters: &[u8]) -> Layout {
        let at = |c: u8| letters.iter().position(|&l| l == c);
        let date = at(b'b').unwrap_or(1);
        let (mime, status, length) = (at(b'm'), at(b's'), at(b'S'));
        let columns = ([Some(date), mime, status, length]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(1)
            + 1)
        .min(16);
        Layout::Cdx {
            delimiter,
            date,
            mime,
            status,
            length,
            columns,
            url_key: false,
        }
    }

    /// The layout of a file without a legend, from its first data line:
    /// JSON when a field opens with `{`, else CDX by its number of fields
    /// as pywb reads them: 9 (no robot flags, no length), 10 (no length),
    /// anything else 11 (14-field CDX, as OutbackCDX and pywb write it,
    /// adds three columns after the 11).
    pub fn guess(line: &[u8]) -> Layout {
        if json_block(line).is_some() {
            return Layout::Json;
        }
        let fields = line.split(|&b| b == b' ').count();
        let letters = match fields {
            9 => CDX9,
            10 => CDX10,
            _ => CDX11,
        };
        Layout::cdx(b' ', letters)
    }

    /// The fields of one data line.
    pub fn fields<'l>(&self, line: &'l [u8]) -> Result<Fields<'l>, Error> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match self {
            Layout::Json => {
                let (key, rest) = split_space(line);
                let (datetime, _) = split_space(rest.ok_or(Error::NoDatetime)?);
                if datetime.is_empty() {
                    return Err(Error::NoDatetime);
                }
                let mut f = Fields {
                    key,
                    datetime,
                    mime: None,
                    status: None,
                    length: None,
                };
                if let Some(json) = json_block(line) {
                    let [mime, status, length] = json_members(json);
                    (f.mime, f.status) = (mime, status);
                    f.length = length.and_then(parse_u64);
                }
                Ok(f)
            }
            Layout::Cdx {
                delimiter,
                date,
                mime,
                status,
                length,
                columns,
                ..
            } => {
                // Only the columns up to the last one used are cut out.
                let mut cols = [&b""[..]; 16];
                let mut n = 0;
                let mut start = 0;
                for end in memchr::memchr_iter(*delimiter, line) {
                    if n == *columns {
                        break;
                    }
                    cols[n] = &line[start..end];
                    n += 1;
                    start = end + 1;
                }
                if n < *columns {
                    cols[n] = &line[start..];
                    n += 1;
                }
                if n < *columns {
                    return Err(Error::ShortCdx {
                        found: n,
                        wanted: *columns,
                    });
                }
                let get = |i: &Option<usize>| i.and_then(|i| cols.get(i).copied());
                Ok(Fields {
                    key: cols[0],
                    datetime: cols.get(*date).copied().unwrap_or(b""),
                    mime: get(mime),
                    status: get(status),
                    length: get(length).and_then(parse_u64),
                })
            }
        }
    }
}

/// What one capture line says that statistics use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields<'l> {
    /// The SURT key.
    pub key: &'l [u8],
    /// The datetime as written (14 digits in every index made today).
    pub datetime: &'l [u8],
    /// `None`, or `-` in CDX, when the line gives none.
    pub mime: Option<&'l [u8]>,
    pub status: Option<&'l [u8]>,
    /// The record's length in the archive file.
    pub length: Option<u64>,
}

/// Whether a line is a header (or blank) rather than a capture: UKVS and
/// CDXJ headers open with `!`, a CDX legend with its delimiter.
pub fn is_header(line: &[u8]) -> bool {
    matches!(line.first(), None | Some(b'!') | Some(b' ') | Some(b'\r'))
}

fn split_space(s: &[u8]) -> (&[u8], Option<&[u8]>) {
    match memchr::memchr(b' ', s) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    }
}

/// The OSLJ block: from the first field that opens with `{`.
fn json_block(line: &[u8]) -> Option<&[u8]> {
    // Keys and datetimes hold no `{`: the first one after a space opens
    // the block (a searcher for ` {` would be built for every line).
    memchr::memchr_iter(b'{', line)
        .find(|&i| i > 0 && line[i - 1] == b' ')
        .map(|i| &line[i..])
}

/// The `mime`, `status` and `length` members of a one-line JSON object,
/// in one pass over its strings: each value a plain string (no escapes)
/// or a bare number, what index lines hold there. Anything else (absent,
/// null, an escaped string) is `None`, which the statistics count as "no
/// value". The first member of a name counts.
///
/// Strings are skipped whole, escapes included, so a name inside a value
/// (`"url": "http://x/?\"mime\": 1"`) is never taken for a member.
fn json_members(json: &[u8]) -> [Option<&[u8]>; 3] {
    let mut found: [Option<&[u8]>; 3] = [None; 3];
    let mut seen = [false; 3];
    let mut pos = 0;
    while let Some(q) = memchr::memchr(b'"', &json[pos..]) {
        let start = pos + q + 1;
        let Some(end) = string_end(json, start) else {
            break;
        };
        pos = end + 1;
        let rest = trim_start(&json[pos..]);
        let Some(value) = rest.strip_prefix(b":") else {
            // A value, not a member's name.
            continue;
        };
        let slot = match &json[start..end] {
            b"mime" => 0,
            b"status" => 1,
            b"length" => 2,
            _ => continue,
        };
        if !seen[slot] {
            seen[slot] = true;
            found[slot] = scalar(trim_start(value));
            if seen == [true; 3] {
                break;
            }
        }
        // Past the colon: a string value is the next string read.
        pos = json.len() - value.len();
    }
    found
}

/// Where the string that starts at `start` (past its opening quote) ends:
/// its closing quote, escapes skipped.
fn string_end(json: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    loop {
        let at = i + memchr::memchr2(b'"', b'\\', json.get(i..)?)?;
        if json[at] == b'"' {
            return Some(at);
        }
        i = at + 2;
    }
}

/// A plain string (its text) or a bare number at the start of `v`.
fn scalar(v: &[u8]) -> Option<&[u8]> {
    match v.first()? {
        b'"' => {
            let end = memchr::memchr2(b'"', b'\\', &v[1..])?;
            (v[1 + end] == b'"').then(|| &v[1..1 + end])
        }
        b'-' | b'0'..=b'9' => {
            let end = v
                .iter()
                .position(|b| !(b.is_ascii_digit() || *b == b'-' || *b == b'.'))
                .unwrap_or(v.len());
            Some(&v[..end])
        }
        _ => None,
    }
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &s[n..]
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |n, &d| n * 10 + u64::from(d - b'0')))
}

/// The host part of a SURT key: up to its `)` (without it), or the whole
/// key when it has none (`dns:...`, `filedesc:...`).
pub fn surt_host(key: &[u8]) -> &[u8] {
    match memchr::memchr(b')', key) {
        Some(i) => &key[..i],
        None => key,
    }
}

/// A SURT host written the usual way: `com,example,www` -> `www.example.com`,
/// `com,example:8080` -> `example.com:8080`; a key without `)` as it is.
/// A scheme kept in the key (`http://(com,example,`) is dropped.
pub fn dotted_host(host: &[u8]) -> String {
    let host = String::from_utf8_lossy(host);
    let host = match host.find("://(") {
        Some(i) => &host[i + 4..],
        None => &host,
    };
    let host = host.trim_end_matches(',');
    if !host.contains(',') && is_ip(host.split(':').next().unwrap_or("")) {
        return host.to_string();
    }
    let (name, port) = match host.rfind(':') {
        Some(i) if host[i + 1..].bytes().all(|b| b.is_ascii_digit()) => host.split_at(i),
        _ => (host, ""),
    };
    let mut labels: Vec<&str> = name.split(',').collect();
    labels.reverse();
    format!("{}{port}", labels.join("."))
}

fn is_ip(s: &str) -> bool {
    s.parse::<std::net::IpAddr>().is_ok() || s.starts_with('[')
}

/// The registered domain (Public Suffix List) of a dotted host, without
/// its port; the host itself for an IP address, a name the list cannot
/// split, or a key that is not a URL's.
pub fn registered_domain(dotted: &str) -> String {
    let name = match dotted.rfind(':') {
        Some(i) if dotted[i + 1..].bytes().all(|b| b.is_ascii_digit()) => &dotted[..i],
        _ => dotted,
    };
    if name.contains(':') || is_ip(name) {
        return name.to_string();
    }
    match psl::domain_str(name) {
        Some(d) => d.to_string(),
        None => name.to_string(),
    }
}

/// The top-level domain of a dotted host: its last label; `-` for an IP
/// address or a key that is not a URL's.
pub fn tld(dotted: &str) -> &str {
    let name = match dotted.rfind(':') {
        Some(i) if dotted[i + 1..].bytes().all(|b| b.is_ascii_digit()) => &dotted[..i],
        _ => dotted,
    };
    if name.contains(':') || is_ip(name) || name.is_empty() {
        return "-";
    }
    name.rsplit('.').next().unwrap_or("-")
}

/// Path segments and query parameters of a SURT key, as cdxsummary counts
/// them: `/a/b/` has 2 segments, `/` none; `a=1&b=2` 2 parameters.
pub fn path_query_depth(key: &[u8]) -> (u32, u32) {
    let (path, query, _) = depths(key);
    (path, query)
}

/// [`path_query_depth`], and whether `key` holds a `?` at all (a query,
/// even an empty one, or a `?` before the `)` of an odd key).
fn depths(key: &[u8]) -> (u32, u32, bool) {
    let Some(i) = memchr::memchr(b')', key) else {
        return (0, 0, memchr::memchr(b'?', key).is_some());
    };
    let rest = &key[i + 1..];
    match memchr::memchr(b'?', rest) {
        Some(q) => (
            segments(&rest[..q], b'/'),
            segments(&rest[q + 1..], b'&'),
            true,
        ),
        None => (
            segments(rest, b'/'),
            0,
            memchr::memchr(b'?', &key[..i]).is_some(),
        ),
    }
}

fn segments(s: &[u8], sep: u8) -> u32 {
    let start = s.iter().position(|&b| b != sep);
    let end = s.iter().rposition(|&b| b != sep);
    match (start, end) {
        (Some(a), Some(b)) => memchr::memchr_iter(sep, &s[a..=b]).count() as u32 + 1,
        _ => 0,
    }
}

// ------------------------------------------------------------- per capture

/// Figures of single captures: they add up in any order and across shards.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub captures: u64,
    pub bytes: u64,
    pub revisits: u64,
    pub with_query: u64,
    /// Smallest and largest datetime seen.
    pub first: Option<Vec<u8>>,
    pub last: Option<Vec<u8>>,
    /// `mime status` -> captures (mime and status totals derive from it).
    mimestatus: FxHashMap<Vec<u8>, u64>,
    /// YYYYMM as a number (0 when the datetime has none) -> captures.
    months: FxHashMap<u32, u64>,
    /// (path segments, query parameters) -> captures.
    pathquery: FxHashMap<(u32, u32), u64>,
    scratch: Vec<u8>,
}

impl Counts {
    /// Counts one capture.
    pub fn add(&mut self, f: &Fields<'_>) {
        self.captures += 1;
        self.bytes += f.length.unwrap_or(0);
        let mime = f.mime.filter(|m| !m.is_empty()).unwrap_or(b"-");
        let status = f.status.filter(|s| !s.is_empty()).unwrap_or(b"-");
        if mime == b"warc/revisit" {
            self.revisits += 1;
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(mime);
        self.scratch.push(b' ');
        self.scratch.extend_from_slice(status);
        match self.mimestatus.get_mut(self.scratch.as_slice()) {
            Some(n) => *n += 1,
            None => {
                self.mimestatus.insert(self.scratch.clone(), 1);
            }
        }
        *self.months.entry(yyyymm(f.datetime)).or_insert(0) += 1;
        let dt = f.datetime;
        if self.first.as_deref().map_or(true, |d| dt < d) {
            self.first = Some(dt.to_vec());
        }
        if self.last.as_deref().map_or(true, |d| dt > d) {
            self.last = Some(dt.to_vec());
        }
        let (p, q, query) = depths(f.key);
        if query {
            self.with_query += 1;
        }
        *self.pathquery.entry((p, q)).or_insert(0) += 1;
    }

    /// Adds the counts of another part.
    pub fn absorb(&mut self, o: Counts) {
        self.captures += o.captures;
        self.bytes += o.bytes;
        self.revisits += o.revisits;
        self.with_query += o.with_query;
        for (k, n) in o.mimestatus {
            *self.mimestatus.entry(k).or_insert(0) += n;
        }
        for (k, n) in o.months {
            *self.months.entry(k).or_insert(0) += n;
        }
        for (k, n) in o.pathquery {
            *self.pathquery.entry(k).or_insert(0) += n;
        }
        self.first = min_opt(self.first.take(), o.first);
        self.last = max_opt(self.last.take(), o.last);
    }
}

fn min_opt(a: Option<Vec<u8>>, b: Option<Vec<u8>>) -> Option<Vec<u8>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<Vec<u8>>, b: Option<Vec<u8>>) -> Option<Vec<u8>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// YYYYMM of a datetime as a number; 0 when it does not start with six
/// digits.
fn yyyymm(dt: &[u8]) -> u32 {
    match dt.get(..6) {
        Some(d) if d.iter().all(u8::is_ascii_digit) => {
            d.iter().fold(0, |n, &b| n * 10 + u32::from(b - b'0'))
        }
        _ => 0,
    }
}

// ------------------------------------------------------------- per key

/// Figures of keys, fed in byte order: distinct URLs and hosts as runs,
/// captures per URL, the largest hosts, domains and TLDs.
#[derive(Debug, Clone)]
pub struct KeyRuns {
    /// Largest hosts kept (0 = all).
    top: usize,
    urls: u64,
    hosts: u64,
    /// Captures per URL, by power-of-two bucket (bucket i: 2^(i-1) < n <= 2^i).
    per_url: [u64; 64],
    /// The URL being counted, and its captures so far.
    key: Vec<u8>,
    key_n: u64,
    /// The host being counted, its captures so far, and whether its keys
    /// are URLs' (with a `)`).
    host: Vec<u8>,
    host_n: u64,
    host_is_url: bool,
    /// The first key seen, for order checks between parts and shards.
    first_key: Option<Vec<u8>>,
    /// Captures of the first host, once it ended: a part whose first host
    /// continues the part before adds them to that host's entry.
    first_host_n: Option<u64>,
    /// The first key found below the one before it.
    out_of_order: Option<Vec<u8>>,
    /// Largest hosts (dotted) -> captures: all of them when `top` is 0,
    /// else the `top` largest, trimmed now and then.
    top_hosts: Vec<(u64, String)>,
    domains: FxHashMap<String, u64>,
    tlds: FxHashMap<String, u64>,
}

impl KeyRuns {
    /// Counts keys, keeping the `top` largest hosts (0 = all of them).
    pub fn new(top: usize) -> KeyRuns {
        KeyRuns {
            top,
            urls: 0,
            hosts: 0,
            per_url: [0; 64],
            key: Vec::new(),
            key_n: 0,
            host: Vec::new(),
            host_n: 0,
            host_is_url: false,
            first_key: None,
            first_host_n: None,
            out_of_order: None,
            top_hosts: Vec::new(),
            domains: FxHashMap::default(),
            tlds: FxHashMap::default(),
        }
    }

    /// One capture of `key`.
    #[inline]
    pub fn add(&mut self, key: &[u8]) {
        if self.key_n > 0 && key == self.key.as_slice() {
            self.key_n += 1;
            self.host_n += 1;
        } else {
            self.add_run(key, 1);
        }
    }

    /// `n` captures of `key` (the next key in byte order, or the same one).
    pub fn add_run(&mut self, key: &[u8], n: u64) {
        if self.key_n > 0 && key == self.key.as_slice() {
            self.key_n += n;
            self.host_n += n;
            return;
        }
        if self.key_n > 0 && key < self.key.as_slice() && self.out_of_order.is_none() {
            self.out_of_order = Some(key.to_vec());
        }
        if self.first_key.is_none() {
            self.first_key = Some(key.to_vec());
        }
        self.end_url();
        self.key.clear();
        self.key.extend_from_slice(key);
        self.key_n = n;
        let host = surt_host(key);
        if self.host_n > 0 && host == self.host.as_slice() {
            self.host_n += n;
        } else {
            self.end_host();
            self.host.clear();
            self.host.extend_from_slice(host);
            self.host_n = n;
            self.host_is_url = host.len() < key.len();
        }
    }

    /// The first key that came below the key before it, if one did: the
    /// distinct counts are then wrong, and the keys must be sorted first.
    pub fn out_of_order(&self) -> Option<&[u8]> {
        self.out_of_order.as_deref()
    }

    fn end_url(&mut self) {
        if self.key_n > 0 {
            self.urls += 1;
            let bucket = 64 - (self.key_n - 1).leading_zeros() as usize;
            self.per_url[bucket.min(63)] += 1;
            self.key_n = 0;
        }
    }

    fn end_host(&mut self) {
        if self.host_n == 0 {
            return;
        }
        self.hosts += 1;
        let dotted = dotted_host(&self.host);
        let (domain, tld) = match self.host_is_url {
            true => (registered_domain(&dotted), tld(&dotted).to_string()),
            false => (dotted.clone(), "-".to_string()),
        };
        *self.domains.entry(domain).or_insert(0) += self.host_n;
        *self.tlds.entry(tld).or_insert(0) += self.host_n;
        // Trimmed before the push: the host just ended stays listed until
        // the next one, for a part after it that continues it.
        if self.top > 0 && self.top_hosts.len() >= self.top * 8 + 64 {
            trim_top(&mut self.top_hosts, self.top);
        }
        self.top_hosts.push((self.host_n, dotted));
        self.first_host_n.get_or_insert(self.host_n);
        self.host_n = 0;
    }

    /// Adds a part whose keys all come after this one's (the engine cuts
    /// parts between hosts, so no URL or host is in two parts).
    pub fn absorb(&mut self, mut o: KeyRuns) {
        o.end_url();
        o.end_host();
        if let (Some(first), false) = (&o.first_key, self.key.is_empty()) {
            if first.as_slice() < self.key.as_slice() && self.out_of_order.is_none() {
                self.out_of_order = Some(first.clone());
            }
        }
        if self.first_key.is_none() {
            self.first_key = o.first_key.take();
        }
        self.out_of_order = self.out_of_order.take().or(o.out_of_order);
        // A host cut in two is counted once: the part before ends where
        // the part after begins.
        let joined = o
            .first_key
            .as_deref()
            .is_some_and(|k| self.host_n > 0 && surt_host(k) == self.host.as_slice());
        self.end_url();
        self.end_host();
        if joined {
            // One entry for the host, with both parts' captures: this
            // part's is the last listed, the other's may be trimmed away.
            self.hosts -= 1;
            let first_host = dotted_host(surt_host(o.first_key.as_deref().unwrap_or(b"")));
            if let Some(j) = o.top_hosts.iter().position(|(_, h)| *h == first_host) {
                o.top_hosts.remove(j);
            }
            if let Some(last) = self.top_hosts.last_mut() {
                last.0 += o.first_host_n.unwrap_or(0);
            }
        }
        self.urls += o.urls;
        self.hosts += o.hosts;
        for (a, b) in self.per_url.iter_mut().zip(o.per_url) {
            *a += b;
        }
        self.top_hosts.extend(o.top_hosts);
        for (k, n) in o.domains {
            *self.domains.entry(k).or_insert(0) += n;
        }
        for (k, n) in o.tlds {
            *self.tlds.entry(k).or_insert(0) += n;
        }
        if !o.key.is_empty() {
            self.key = o.key;
            self.host = o.host;
        }
        if self.first_host_n.is_none() {
            self.first_host_n = o.first_host_n;
        }
    }

    fn finish(mut self) -> KeyFigures {
        self.end_url();
        let last_key = (!self.key.is_empty()).then(|| self.key.clone());
        self.end_host();
        let mut hosts = std::mem::take(&mut self.top_hosts);
        trim_top(&mut hosts, self.top);
        let domains_n = self.domains.len() as u64;
        let mut domains: Vec<(u64, String)> =
            self.domains.into_iter().map(|(d, n)| (n, d)).collect();
        trim_top(&mut domains, self.top);
        let mut per_url = BTreeMap::new();
        for (i, &n) in self.per_url.iter().enumerate().filter(|(_, &n)| n > 0) {
            per_url.insert(bucket_name(i), n);
        }
        KeyFigures {
            urls: self.urls,
            hosts: self.hosts,
            domains: domains_n,
            captures_per_url: per_url,
            tophosts: hosts.into_iter().map(|(n, h)| (h, n)).collect(),
            topdomains: domains.into_iter().map(|(n, d)| (d, n)).collect(),
            tlds: self.tlds.into_iter().collect(),
            first_key: self.first_key,
            last_key,
        }
    }
}

/// Keeps the `top` largest entries (all when `top` is 0), largest first,
/// ties by name.
fn trim_top(v: &mut Vec<(u64, String)>, top: usize) {
    v.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    if top > 0 {
        v.truncate(top);
    }
}

/// The name of a captures-per-URL bucket: `1`, `2`, `3-4`, `5-8`, ...
fn bucket_name(i: usize) -> String {
    match i {
        0 => "1".into(),
        1 => "2".into(),
        _ => format!("{}-{}", (1u64 << (i - 1)) + 1, 1u64 << i.min(63)),
    }
}

/// The lower bound of a bucket name, to order them.
fn bucket_low(name: &str) -> u64 {
    name.split('-')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

struct KeyFigures {
    urls: u64,
    hosts: u64,
    domains: u64,
    captures_per_url: BTreeMap<String, u64>,
    tophosts: Vec<(String, u64)>,
    topdomains: Vec<(String, u64)>,
    tlds: Vec<(String, u64)>,
    first_key: Option<Vec<u8>>,
    last_key: Option<Vec<u8>>,
}

// ------------------------------------------------------------- a whole scan

/// One scan of index lines: [`Counts`] and, unless the engine sorts the
/// keys itself, [`KeyRuns`].
#[derive(Debug, Clone)]
pub struct Scan {
    pub counts: Counts,
    pub keys: KeyRuns,
}

impl Scan {
    /// A scan keeping the `top` largest hosts and domains (0 = all).
    pub fn new(top: usize) -> Scan {
        Scan {
            counts: Counts::default(),
            keys: KeyRuns::new(top),
        }
    }

    /// Counts one capture line of the given layout. Headers are skipped
    /// (`Ok(false)`); a line that is not a capture is an error, and counts
    /// nothing.
    pub fn line(&mut self, layout: &Layout, line: &[u8]) -> Result<bool, Error> {
        if is_header(line) {
            return Ok(false);
        }
        let f = layout.fields(line)?;
        let key = layout.key(&f);
        let f = Fields { key: &key, ..f };
        self.counts.add(&f);
        self.keys.add(f.key);
        Ok(true)
    }

    /// See [`KeyRuns::out_of_order`].
    pub fn out_of_order(&self) -> Option<&[u8]> {
        self.keys.out_of_order()
    }

    /// Adds a part whose keys come after this one's.
    pub fn absorb(&mut self, o: Scan) {
        self.counts.absorb(o.counts);
        self.keys.absorb(o.keys);
    }

    /// The report.
    pub fn finish(self) -> Report {
        let top = self.keys.top as u64;
        let k = self.keys.finish();
        let c = self.counts;
        let mut mimestatus: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for (ms, n) in c.mimestatus {
            let ms = String::from_utf8_lossy(&ms);
            let (m, s) = ms.rsplit_once(' ').unwrap_or((&ms, "-"));
            *mimestatus
                .entry(m.to_string())
                .or_default()
                .entry(s.to_string())
                .or_insert(0) += n;
        }
        let mut months = BTreeMap::new();
        for (m, n) in c.months {
            let name = match m {
                0 => "-".to_string(),
                m => format!("{m:06}"),
            };
            *months.entry(name).or_insert(0) += n;
        }
        let mut pathquery: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for ((p, q), n) in c.pathquery {
            *pathquery
                .entry(format!("P{p}"))
                .or_default()
                .entry(format!("Q{q}"))
                .or_insert(0) += n;
        }
        let text = |v: Option<Vec<u8>>| v.map(|v| String::from_utf8_lossy(&v).into_owned());
        let mut r = Report {
            format: FORMAT.to_string(),
            captures: c.captures,
            urls: k.urls,
            hosts: k.hosts,
            domains: k.domains,
            bytes: c.bytes,
            revisits: c.revisits,
            with_query: c.with_query,
            first: text(c.first),
            last: text(c.last),
            first_key: text(k.first_key),
            last_key: text(k.last_key),
            top,
            years: BTreeMap::new(),
            months,
            mime: BTreeMap::new(),
            status: BTreeMap::new(),
            mimestatus,
            pathquery,
            captures_per_url: Vec::new(),
            tlds: Vec::new(),
            tophosts: k.tophosts,
            topdomains: k.topdomains,
            inexact: Vec::new(),
        };
        r.captures_per_url = sorted_buckets(k.captures_per_url);
        r.tlds = by_count(k.tlds);
        r.derive();
        r
    }
}

fn sorted_buckets(m: BTreeMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = m.into_iter().collect();
    v.sort_by_key(|(b, _)| bucket_low(b));
    v
}

/// Counts by count, largest first, ties by name (the order of every
/// listed count: the report's lists, the text and HTML renderings).
fn by_count(v: impl IntoIterator<Item = (String, u64)>) -> Vec<(String, u64)> {
    let mut v: Vec<(u64, String)> = v.into_iter().map(|(k, n)| (n, k)).collect();
    trim_top(&mut v, 0);
    v.into_iter().map(|(n, k)| (k, n)).collect()
}

// ------------------------------------------------------------- the report

/// The statistics of one or more indexes, as `ukvs stats --json` writes
/// them. Maps are ordered by key, lists (`tophosts`, `topdomains`, `tlds`,
/// `captures_per_url`) by count, largest first (buckets by size).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`FORMAT`].
    pub format: String,
    /// Data lines (captures).
    pub captures: u64,
    /// Distinct SURT keys.
    pub urls: u64,
    /// Distinct SURT hosts (the key before `)`, the whole key without one).
    pub hosts: u64,
    /// Distinct registered domains (Public Suffix List).
    pub domains: u64,
    /// Sum of record lengths.
    pub bytes: u64,
    /// Captures with mime `warc/revisit`.
    pub revisits: u64,
    /// Captures whose key has a query.
    pub with_query: u64,
    /// Smallest and largest datetime.
    pub first: Option<String>,
    pub last: Option<String>,
    /// Smallest and largest key (for merging shards).
    pub first_key: Option<String>,
    pub last_key: Option<String>,
    /// How many hosts and domains `tophosts` and `topdomains` keep (0 = all).
    pub top: u64,
    /// YYYY -> captures.
    pub years: BTreeMap<String, u64>,
    /// YYYYMM -> captures.
    pub months: BTreeMap<String, u64>,
    /// mime (or `-`) -> captures.
    pub mime: BTreeMap<String, u64>,
    /// status (or `-`) -> captures.
    pub status: BTreeMap<String, u64>,
    /// mime -> status -> captures.
    pub mimestatus: BTreeMap<String, BTreeMap<String, u64>>,
    /// `P<path segments>` -> `Q<query parameters>` -> captures.
    pub pathquery: BTreeMap<String, BTreeMap<String, u64>>,
    /// Bucket of captures per URL (`1`, `2`, `3-4`, ...) -> URLs.
    #[serde(with = "pairs")]
    pub captures_per_url: Vec<(String, u64)>,
    /// Top-level domain -> captures.
    #[serde(with = "pairs")]
    pub tlds: Vec<(String, u64)>,
    /// Host -> captures, largest first.
    #[serde(with = "pairs")]
    pub tophosts: Vec<(String, u64)>,
    /// Registered domain -> captures, largest first.
    #[serde(with = "pairs")]
    pub topdomains: Vec<(String, u64)>,
    /// Figures of a merge that are not exact (see [`Report::merge`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inexact: Vec<String>,
}

/// Lists of pairs as JSON objects, in list order.
mod pairs {
    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[(String, u64)], s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(v.len()))?;
        for (k, n) in v {
            m.serialize_entry(k, n)?;
        }
        m.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, u64)>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<(String, u64)>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of counts")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = a.next_entry()? {
                    v.push(e);
                }
                Ok(v)
            }
        }
        d.deserialize_map(V)
    }
}

impl Report {
    /// Fills the figures that derive from others: years from months, mime
    /// and status totals from mime × status.
    fn derive(&mut self) {
        self.years.clear();
        for (m, n) in &self.months {
            let y = if m == "-" { "-" } else { &m[..4.min(m.len())] };
            *self.years.entry(y.to_string()).or_insert(0) += n;
        }
        self.mime.clear();
        self.status.clear();
        for (m, by) in &self.mimestatus {
            for (s, n) in by {
                *self.mime.entry(m.clone()).or_insert(0) += n;
                *self.status.entry(s.clone()).or_insert(0) += n;
            }
        }
    }

    /// Adds the reports of shards into one, keeping the `top` largest
    /// hosts and domains (0 = all).
    ///
    /// Captures, bytes, revisits, time, mime, status, path and TLD figures
    /// add up. The distinct counts are exact when the shards hold disjoint
    /// key ranges in order (as a range-partitioned cluster's do): URLs add
    /// up, and a host cut between two neighbouring shards counts once.
    /// Hosts and domains are exact, whatever the shards, when every shard
    /// lists them all (`top` 0): they are then the names listed. What is
    /// not exact is named in [`Report::inexact`].
    pub fn merge(mut parts: Vec<Report>, top: usize) -> Report {
        parts.retain(|p| p.captures > 0 || p.first_key.is_some());
        parts.sort_by(|a, b| a.first_key.cmp(&b.first_key));
        let ordered = parts
            .windows(2)
            .all(|w| match (&w[0].last_key, &w[1].first_key) {
                (Some(a), Some(b)) => a < b,
                _ => true,
            });
        let complete = parts.iter().all(|p| p.top == 0);
        let mut out = Report {
            format: FORMAT.to_string(),
            top: top as u64,
            ..Report::default()
        };
        let mut hosts: BTreeMap<String, u64> = BTreeMap::new();
        let mut domains: BTreeMap<String, u64> = BTreeMap::new();
        let mut tlds: BTreeMap<String, u64> = BTreeMap::new();
        let mut per_url: BTreeMap<String, u64> = BTreeMap::new();
        let mut prev_last: Option<String> = None;
        for p in parts {
            out.captures += p.captures;
            out.urls += p.urls;
            out.hosts += p.hosts;
            out.bytes += p.bytes;
            out.revisits += p.revisits;
            out.with_query += p.with_query;
            out.first = min_text(out.first.take(), p.first);
            out.last = max_text(out.last.take(), p.last);
            if out.first_key.is_none() {
                out.first_key = p.first_key.clone();
            }
            out.last_key = max_text(out.last_key.take(), p.last_key.clone());
            if let (Some(a), Some(b)) = (&prev_last, &p.first_key) {
                if surt_host(a.as_bytes()) == surt_host(b.as_bytes()) {
                    out.hosts -= 1;
                }
            }
            prev_last = p.last_key;
            add_nested(&mut out.mimestatus, p.mimestatus);
            add_nested(&mut out.pathquery, p.pathquery);
            add_map(&mut out.months, p.months);
            add_map(&mut per_url, p.captures_per_url);
            add_map(&mut tlds, p.tlds);
            add_map(&mut hosts, p.tophosts);
            add_map(&mut domains, p.topdomains);
            out.domains += p.domains;
            out.inexact.extend(p.inexact);
        }
        if complete {
            out.hosts = hosts.len() as u64;
            out.domains = domains.len() as u64;
        } else {
            out.inexact
                .extend(["domains", "tophosts", "topdomains"].map(String::from));
            if !ordered {
                out.inexact.push("hosts".into());
            }
        }
        if !ordered {
            out.inexact
                .extend(["urls", "captures_per_url"].map(String::from));
        }
        out.inexact.sort();
        out.inexact.dedup();
        let mut h: Vec<(u64, String)> = hosts.into_iter().map(|(k, n)| (n, k)).collect();
        trim_top(&mut h, top);
        out.tophosts = h.into_iter().map(|(n, k)| (k, n)).collect();
        let mut d: Vec<(u64, String)> = domains.into_iter().map(|(k, n)| (n, k)).collect();
        trim_top(&mut d, top);
        out.topdomains = d.into_iter().map(|(n, k)| (k, n)).collect();
        out.tlds = by_count(tlds);
        out.captures_per_url = sorted_buckets(per_url);
        out.derive();
        out
    }

    /// The JSON text (pretty, ending in a newline).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

fn min_text(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_text(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn add_map(to: &mut BTreeMap<String, u64>, from: impl IntoIterator<Item = (String, u64)>) {
    for (k, n) in from {
        *to.entry(k).or_insert(0) += n;
    }
}

fn add_nested(
    to: &mut BTreeMap<String, BTreeMap<String, u64>>,
    from: BTreeMap<String, BTreeMap<String, u64>>,
) {
    for (k, m) in from {
        add_map(to.entry(k).or_default(), m);
    }
}

#[cfg(test)]
mod tests;
