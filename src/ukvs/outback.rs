//! OutbackCDX's query form (`GET /NAME?url=...` and OpenWayback's XML
//! query `?q=type:urlquery+url:...`): parameters in, key ranges and
//! answers out. Bytes only; which lines a range holds is the caller's.
//!
//! ```text
//! query string ─► Params (last value of each name, every `filter`)
//!   ├─► Query::parse: matchType sort closest from to filter collapse fl
//!   │     limit output urlkey ─► Query::range (the key range to read)
//!   │     each line ─► Capture::from_line ─► from/to, filters, collapse
//!   │     ─► (closest | reverse ordering) ─► limit ─► TextRows | JsonRows
//!   └─► XmlQuery::parse: q=type:urlquery|prefixquery url:.. count
//!         start_page ─► xml_capture / xml_resource, xml_request
//! ```
//!
//! OutbackCDX keeps a capture as 14 typed fields (`Capture.java`) and
//! renders them back: numbers as numbers in JSON, GSON's pretty printing
//! with its HTML-safe escapes, Java's XML writer for the XML answer. The
//! fields here are read from the stored line (CDX of 7 to 14 columns,
//! CDXJ, or UKVS with its value columns) and rendered the same way, with
//! the differences FORMATS.md 2.7 lists: a field the line does not have
//! is `-` (text) or `null` (JSON), never OutbackCDX's `-1`/`0`
//! placeholders, and the digest is kept as written (less a `sha1:`
//! prefix) rather than re-encoded from bytes.

use std::fmt::Write as _;

use crate::sorted::{KeyRange, Upper};

/// Captures an XML query counts past the page it returns (OutbackCDX's
/// `maxNumResults`).
pub const XML_MAX_COUNTED: u64 = 10_000;

/// Results of an XML query when neither `count` nor `limit` is given.
const XML_DEFAULT_LIMIT: i64 = 10_000;

/// The fields of a CDX11 answer when `fl` is not given.
const CDX11: &str = "urlkey,timestamp,original,mimetype,statuscode,digest,redirecturl,robotflags,length,offset,filename";

/// The longest regular expression a `filter` may compile to: a bound on
/// what one request can make the server build.
const REGEX_SIZE: usize = 1 << 20;

/// The query string: the last value of each name (`filter` keeps all).
#[derive(Clone, Debug, Default)]
pub struct Params {
    values: Vec<(String, String)>,
}

impl Params {
    pub fn parse(query: &str) -> Params {
        Params {
            values: form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        }
    }

    /// The last value given for `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value given for `name`, in order.
    pub fn all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s str> + 's {
        self.values
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// OutbackCDX's match types; `default` becomes one of them by the URL's
/// wildcards (`prefix*`, `*.domain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchType {
    Exact,
    Prefix,
    Host,
    Domain,
    /// Every key from the URL's on.
    Range,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    /// Index order.
    Default,
    /// Nearest to `closest` first (exact queries).
    Closest,
    /// Newest first (exact queries).
    Reverse,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Fields joined by spaces, a line each.
    Text,
    /// A JSON array of arrays.
    Json,
    /// A JSON array of objects.
    JsonDict,
}

/// A field of OutbackCDX's capture, by any of the names it answers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Urlkey,
    Timestamp,
    Original,
    Mimetype,
    Status,
    Digest,
    Redirect,
    Robotflags,
    Length,
    Offset,
    Filename,
    OriginalLength,
    OriginalOffset,
    OriginalFilename,
    /// `bytes=OFFSET-END`, a Range header for the record.
    Range,
}

impl Field {
    /// The field `name` names (OutbackCDX's and pywb's spellings).
    pub fn from_name(name: &str) -> Option<Field> {
        Some(match name {
            "urlkey" => Field::Urlkey,
            "timestamp" => Field::Timestamp,
            "url" | "original" => Field::Original,
            "mime" | "mimetype" => Field::Mimetype,
            "status" | "statuscode" => Field::Status,
            "digest" => Field::Digest,
            "redirect" | "redirecturl" => Field::Redirect,
            "robotflags" => Field::Robotflags,
            "length" => Field::Length,
            "offset" => Field::Offset,
            "filename" => Field::Filename,
            "originalLength" => Field::OriginalLength,
            "originalOffset" => Field::OriginalOffset,
            "originalFilename" => Field::OriginalFilename,
            "range" => Field::Range,
            _ => return None,
        })
    }

    fn named(name: &str) -> Result<Field, String> {
        Field::from_name(name).ok_or_else(|| {
            format!(
                "no such capture field: {name:?} (fields: urlkey, timestamp, original, mimetype, \
                 statuscode, digest, redirecturl, robotflags, length, offset, filename, \
                 originalLength, originalOffset, originalFilename, range)"
            )
        })
    }
}

/// A `filter`: `[~][!]field:value`: `~` a substring, else a regular
/// expression matching the whole value; `!` inverts.
#[derive(Clone, Debug)]
pub struct Filter {
    field: Field,
    invert: bool,
    test: FilterTest,
}

#[derive(Clone, Debug)]
enum FilterTest {
    Substring(String),
    Regex(regex::Regex),
}

impl Filter {
    pub fn parse(spec: &str) -> Result<Filter, String> {
        let bad = || {
            format!(
                "Invalid filter: {spec:?} (give [~][!]field:value: `~` for a substring, \
                 else a regular expression of the whole value; `!` inverts)"
            )
        };
        let (substring, rest) = match spec.strip_prefix('~') {
            Some(r) => (true, r),
            None => (false, spec),
        };
        let (invert, rest) = match rest.strip_prefix('!') {
            Some(r) => (true, r),
            None => (false, rest),
        };
        let (name, value) = rest.split_once(':').ok_or_else(bad)?;
        // Java's `\w+`.
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(bad());
        }
        let field = Field::named(name)?;
        let test = if substring {
            FilterTest::Substring(value.to_string())
        } else {
            let rx = regex::RegexBuilder::new(&format!("^(?:{value})$"))
                .size_limit(REGEX_SIZE)
                .build()
                .map_err(|e| {
                    let last = e.to_string();
                    let last = last.lines().last().unwrap_or("invalid").trim().to_string();
                    format!("Invalid filter: {spec:?}: bad regular expression: {last}")
                })?;
            FilterTest::Regex(rx)
        };
        Ok(Filter {
            field,
            invert,
            test,
        })
    }

    pub fn accepts(&self, c: &Capture) -> bool {
        let v = c.value(self.field);
        let text = v.as_filter_text();
        let hit = match &self.test {
            FilterTest::Substring(s) => text.contains(s.as_str()),
            FilterTest::Regex(rx) => rx.is_match(&text),
        };
        hit != self.invert
    }
}

/// `collapse=field[:n]`: of adjacent captures whose field (its first `n`
/// characters) is the same, the first (or, `collapseToLast`, the last).
#[derive(Clone, Debug)]
pub struct Collapse {
    field: Field,
    chars: Option<usize>,
    pub to_last: bool,
}

impl Collapse {
    fn parse(spec: &str, to_last: bool) -> Result<Collapse, String> {
        let (name, n) = match spec.split_once(':') {
            Some((f, n)) => (f, Some(n)),
            None => (spec, None),
        };
        let field = Field::named(name)?;
        let chars = match n {
            None => None,
            Some(n) => Some(n.trim().parse::<usize>().map_err(|_| {
                format!("Invalid collapse: {spec:?}: {n:?} is not a number of characters")
            })?),
        };
        Ok(Collapse {
            field,
            chars,
            to_last,
        })
    }

    /// What two captures are compared by.
    pub fn token(&self, c: &Capture) -> String {
        let text = c.value(self.field).as_filter_text().into_owned();
        match self.chars {
            Some(n) => text.chars().take(n).collect(),
            None => text,
        }
    }
}

/// A `GET /NAME?url=...` query, checked.
#[derive(Clone, Debug)]
pub struct Query {
    pub url: Option<String>,
    pub urlkey: Option<String>,
    pub match_type: MatchType,
    pub sort: Sort,
    /// `closest`, as 14 digits (sort=closest only).
    pub closest: Option<String>,
    /// `from` and `to` as 14-digit numbers (0 and 99999999999999 when not
    /// given).
    pub from: u64,
    pub to: u64,
    pub filters: Vec<Filter>,
    pub collapse: Option<Collapse>,
    /// Field names as asked (`jsondict` names its members with them).
    pub field_names: Vec<String>,
    pub fields: Vec<Field>,
    /// Most captures answered (negative: none).
    pub limit: i64,
    pub output: Output,
}

/// The largest 14-digit timestamp (`to` when not given).
pub const MAX_TIMESTAMP: u64 = 99_999_999_999_999;

impl Query {
    /// Reads and checks the parameters as OutbackCDX does; an error says
    /// which parameter is wrong and what it takes (a 400).
    pub fn parse(params: &Params) -> Result<Query, String> {
        let url = params.get("url").map(str::to_string);
        let urlkey = params.get("urlkey").map(str::to_string);
        if url.is_some() == urlkey.is_some() {
            return Err("exactly one of 'url' or 'urlkey' is required".into());
        }
        let match_type = match params
            .get("matchType")
            .unwrap_or("default")
            .to_ascii_lowercase()
            .as_str()
        {
            "default" => None,
            "exact" => Some(MatchType::Exact),
            "prefix" => Some(MatchType::Prefix),
            "host" => Some(MatchType::Host),
            "domain" => Some(MatchType::Domain),
            "range" => Some(MatchType::Range),
            _ => {
                return Err(format!(
                    "matchType={} is not taken: use exact, prefix, host, domain or range",
                    params.get("matchType").unwrap_or_default()
                ))
            }
        };
        let mut sort = match params
            .get("sort")
            .unwrap_or("default")
            .to_ascii_lowercase()
            .as_str()
        {
            "default" => Sort::Default,
            "closest" => Sort::Closest,
            "reverse" => Sort::Reverse,
            _ => {
                return Err(format!(
                    "sort={} is not taken: use closest or reverse, or leave it out",
                    params.get("sort").unwrap_or_default()
                ))
            }
        };
        let closest = params.get("closest").filter(|c| !c.is_empty());
        // pywb 2.0 sends `sort=closest&closest=` when it has no date.
        if sort == Sort::Closest && closest.is_none() {
            sort = Sort::Default;
        }
        let closest = match closest {
            Some(c) if sort == Sort::Closest => Some(closest_14(c)?),
            _ => None,
        };
        let from = match params.get("from") {
            Some(f) => timestamp_14("from", f, b'0')?,
            None => 0,
        };
        let to = match params.get("to") {
            Some(t) => timestamp_14("to", t, b'9')?,
            None => MAX_TIMESTAMP,
        };
        let mut filters = Vec::new();
        for spec in params.all("filter") {
            filters.push(Filter::parse(spec)?);
        }
        let collapse = match (
            params.get("collapseToFirst").or(params.get("collapse")),
            params.get("collapseToLast"),
        ) {
            (Some(spec), _) => Some(Collapse::parse(spec, false)?),
            (None, Some(spec)) => Some(Collapse::parse(spec, true)?),
            (None, None) => None,
        };
        let fl = params.get("fl").unwrap_or(CDX11);
        let field_names: Vec<String> = fl.split(',').map(str::to_string).collect();
        let fields = field_names
            .iter()
            .map(|n| Field::named(n))
            .collect::<Result<Vec<_>, _>>()?;
        let limit = match params.get("limit") {
            None => i64::MAX,
            Some(l) => l.trim().parse::<i64>().map_err(|_| {
                format!("limit={l} is not a number: give the most captures to answer")
            })?,
        };
        let output = match params.get("output") {
            Some("json") => Output::Json,
            Some("jsondict") => Output::JsonDict,
            _ => Output::Text,
        };
        // The URL's wildcards, when no match type is given.
        let (url, match_type) = match (url, match_type) {
            (url, Some(m)) => (url, m),
            (Some(u), None) => match (u.strip_suffix('*'), u.strip_prefix("*.")) {
                (Some(rest), _) => (Some(rest.to_string()), MatchType::Prefix),
                (None, Some(rest)) => (Some(rest.to_string()), MatchType::Domain),
                _ => (Some(u), MatchType::Exact),
            },
            (None, None) => (None, MatchType::Exact),
        };
        match sort {
            Sort::Closest if match_type != MatchType::Exact => {
                return Err("sort=closest is only taken for exact matches".into())
            }
            Sort::Reverse if match_type != MatchType::Exact => {
                return Err("sort=reverse is only taken for exact matches".into())
            }
            Sort::Default
                if (from != 0 || to != MAX_TIMESTAMP) && match_type != MatchType::Exact =>
            {
                return Err("from= and to= are only taken for exact matches".into())
            }
            _ => {}
        }
        Ok(Query {
            url,
            urlkey,
            match_type,
            sort,
            closest,
            from,
            to,
            filters,
            collapse,
            field_names,
            fields,
            limit,
            output,
        })
    }

    /// The SURT key of the query: `urlkey` as given, else the URL's key
    /// with `surt` (a prefix query of a URL ending in `/` keeps the `/`).
    pub fn key(&self, surt: &crate::surt::Options) -> String {
        if let Some(k) = &self.urlkey {
            return k.clone();
        }
        let url = self.url.as_deref().unwrap_or_default();
        let mut key =
            String::from_utf8_lossy(&crate::surt::key(url.as_bytes(), surt).0).into_owned();
        if self.match_type == MatchType::Prefix && url.ends_with('/') && !key.ends_with('/') {
            key.push('/');
        }
        key
    }

    /// The lines to read for `key`: OutbackCDX's scans as a range of
    /// lines (`key datetime ...`).
    pub fn range(&self, key: &str) -> KeyRange {
        let key = key.as_bytes();
        let host = match memchr::memmem::find(key, b")/") {
            Some(i) => &key[..i],
            None => key,
        };
        match self.match_type {
            MatchType::Exact => KeyRange::new(key, crate::sorted::MatchType::Exact),
            MatchType::Prefix => KeyRange::new(key, crate::sorted::MatchType::Prefix),
            MatchType::Host => {
                KeyRange::new(&[host, b")/"].concat(), crate::sorted::MatchType::Prefix)
            }
            // Keys from the host up to `host-`: its subdomains and paths.
            MatchType::Domain => KeyRange {
                start: host.to_vec(),
                upper: Upper::Before([host, b"-"].concat()),
            },
            MatchType::Range => KeyRange {
                start: key.to_vec(),
                upper: Upper::Before(b"~".to_vec()),
            },
        }
    }

    /// Whether a capture passes `from`, `to` and the filters (collapse
    /// apart: it depends on the captures before).
    pub fn accepts(&self, c: &Capture) -> bool {
        if self.from != 0 || self.to != MAX_TIMESTAMP {
            let ts = c.timestamp_u64();
            if ts < self.from || ts > self.to {
                return false;
            }
        }
        self.filters.iter().all(|f| f.accepts(c))
    }
}

/// A `from`/`to` value as OutbackCDX reads it: padded with `pad` to 14
/// digits, cut at 14.
fn timestamp_14(name: &str, v: &str, pad: u8) -> Result<u64, String> {
    let mut digits = v.as_bytes().to_vec();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(format!("{name}={v} is not a timestamp (up to 14 digits)"));
    }
    digits.resize(14, pad);
    Ok(std::str::from_utf8(&digits)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0))
}

/// `closest` as 14 digits: a shorter date is its first second (`2019` is
/// 20190101000000).
fn closest_14(v: &str) -> Result<String, String> {
    if v.is_empty() || v.len() > 14 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("closest={v} is not a timestamp (up to 14 digits)"));
    }
    Ok(format!("{v}{}", &"00000101000000"[v.len()..]))
}

/// Seconds since 1970 of a 14-digit timestamp (a shorter one padded with
/// zeros), `None` when it is no date.
pub fn epoch_seconds(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    if b.len() > 14 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut d = [b'0'; 14];
    d[..b.len()].copy_from_slice(b);
    let num = |r: std::ops::Range<usize>| -> i64 {
        d[r].iter().fold(0, |n, &c| n * 10 + i64::from(c - b'0'))
    };
    let (y, m, day) = (num(0..4), num(4..6), num(6..8));
    let (hh, mm, ss) = (num(8..10), num(10..12), num(12..14));
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 59 {
        return None;
    }
    // Days from 1970-01-01 of a proleptic Gregorian date.
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// Captures of one URL in index order, put in OutbackCDX's closest order:
/// from the first at or after `closest` forwards and from the one before
/// it backwards, the nearer in time next (the later on a tie).
pub fn closest_order<T>(items: Vec<T>, closest: &str, timestamp: impl Fn(&T) -> u64) -> Vec<T> {
    let target_num: u64 = closest.parse().unwrap_or(0);
    let target = epoch_seconds(closest);
    let split = items.partition_point(|t| timestamp(t) < target_num);
    let secs = |t: &T| epoch_seconds(&format!("{:014}", timestamp(t)));
    let mut items: Vec<Option<T>> = items.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(items.len());
    let (mut fwd, mut bwd) = (split, split);
    loop {
        let f = items.get(fwd).and_then(Option::as_ref);
        let b = bwd.checked_sub(1).and_then(|i| items[i].as_ref());
        let take_fwd = match (f, b) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(f), Some(b)) => match (target, secs(f), secs(b)) {
                (Some(t), Some(fs), Some(bs)) => fs - t <= t - bs,
                _ => timestamp(f) - target_num <= target_num - timestamp(b),
            },
        };
        if take_fwd {
            out.extend(items[fwd].take());
            fwd += 1;
        } else {
            bwd -= 1;
            out.extend(items[bwd].take());
        }
    }
    out
}

/// A field's value, typed as OutbackCDX types it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// A number (written without quotes in JSON).
    Num(i64),
    Str(std::borrow::Cow<'a, str>),
    /// Not in the line (`-` in text, `null` in JSON).
    Null,
}

impl Value<'_> {
    /// As text in a CDX answer.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Value::Num(n) => n.to_string().into(),
            Value::Str(s) => s.as_ref().into(),
            Value::Null => "-".into(),
        }
    }

    /// As filters and collapse compare it (`null` is empty).
    fn as_filter_text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Value::Null => "".into(),
            other => other.text(),
        }
    }

    fn json(&self, out: &mut String) {
        match self {
            Value::Num(n) => {
                let _ = write!(out, "{n}");
            }
            Value::Str(s) => gson_str(s, out),
            Value::Null => out.push_str("null"),
        }
    }
}

/// One line read into OutbackCDX's capture fields (`-` where the line
/// has none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capture {
    pub urlkey: String,
    pub timestamp: String,
    pub original: String,
    pub mimetype: String,
    pub status: String,
    pub digest: String,
    pub redirect: String,
    pub robotflags: String,
    pub length: String,
    pub offset: String,
    pub filename: String,
    pub orig_length: String,
    pub orig_offset: String,
    pub orig_filename: String,
}

/// Columns of a CDX line by their count (as pywb names them).
fn cdx_columns(n: usize) -> Option<&'static [&'static str]> {
    Some(match n {
        7 => &["k", "t", "a", "m", "s", "d", "S"],
        9 => &["k", "t", "a", "m", "s", "d", "r", "V", "g"],
        10 => &["k", "t", "a", "m", "s", "d", "r", "M", "V", "g"],
        11 => &["k", "t", "a", "m", "s", "d", "r", "M", "S", "V", "g"],
        12 => &[
            "k", "t", "a", "m", "s", "d", "r", "V", "g", "oS", "oV", "og",
        ],
        13 => &[
            "k", "t", "a", "m", "s", "d", "r", "M", "V", "g", "oS", "oV", "og",
        ],
        14 => &[
            "k", "t", "a", "m", "s", "d", "r", "M", "S", "V", "g", "oS", "oV", "og",
        ],
        _ => return None,
    })
}

impl Capture {
    /// Reads a stored line: CDX (7, 9 to 14 columns), CDXJ (`key
    /// datetime {json}`) or UKVS (`key datetime` + the `value_names`
    /// columns + a JSON block).
    pub fn from_line(line: &[u8], value_names: &[String]) -> Result<Capture, String> {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches(['\r', '\n']);
        let dash = || "-".to_string();
        let mut c = Capture {
            urlkey: dash(),
            timestamp: dash(),
            original: dash(),
            mimetype: dash(),
            status: dash(),
            digest: dash(),
            redirect: dash(),
            robotflags: dash(),
            length: dash(),
            offset: dash(),
            filename: dash(),
            orig_length: dash(),
            orig_offset: dash(),
            orig_filename: dash(),
        };
        let mut head = text.splitn(3, ' ');
        let key = head.next().unwrap_or_default();
        let datetime = head.next();
        let rest = head.next().unwrap_or_default();
        let Some(datetime) = datetime else {
            return Err(format!("no datetime after the key: {text:?}"));
        };
        c.urlkey = key.to_string();
        c.timestamp = datetime.to_string();
        if rest.starts_with('{') {
            c.json_block(rest)?;
            return Ok(c);
        }
        let cols: Vec<&str> = text.split(' ').collect();
        if let Some(names) = cdx_columns(cols.len()) {
            for (name, v) in names.iter().zip(&cols).skip(2) {
                c.set_letter(name, v);
            }
            return Ok(c);
        }
        if let Some((plain, json)) = text.split_once(" {") {
            for (name, v) in value_names.iter().zip(plain.split(' ').skip(2)) {
                c.set_named(name, v);
            }
            c.json_block(&format!("{{{json}"))?;
            return Ok(c);
        }
        Err(format!(
            "a line of {} columns is neither CDX, CDXJ nor UKVS: {text:?}",
            cols.len()
        ))
    }

    fn json_block(&mut self, json: &str) -> Result<(), String> {
        let o: serde_json::Map<String, serde_json::Value> = serde_json::from_str(json)
            .map_err(|e| format!("the JSON block cannot be read: {e}"))?;
        for (k, v) in &o {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Null => "-".into(),
                other => other.to_string(),
            };
            self.set_named(k, &v);
        }
        Ok(())
    }

    fn set_letter(&mut self, letter: &str, v: &str) {
        let slot = match letter {
            "a" => &mut self.original,
            "m" => &mut self.mimetype,
            "s" => &mut self.status,
            "d" => &mut self.digest,
            "r" => &mut self.redirect,
            "M" => &mut self.robotflags,
            "S" => &mut self.length,
            "V" => &mut self.offset,
            "g" => &mut self.filename,
            "oS" => &mut self.orig_length,
            "oV" => &mut self.orig_offset,
            "og" => &mut self.orig_filename,
            _ => return,
        };
        *slot = v.to_string();
    }

    fn set_named(&mut self, name: &str, v: &str) {
        let letter = match name {
            "url" | "original" | "u" => "a",
            "mime" | "mimetype" | "m" => "m",
            "status" | "statuscode" | "s" => "s",
            "digest" | "d" => "d",
            "redirect" | "redirecturl" => "r",
            "robotflags" => "M",
            "length" | "l" => "S",
            "offset" | "o" => "V",
            "filename" | "f" => "g",
            "orig.length" | "originalLength" => "oS",
            "orig.offset" | "originalOffset" => "oV",
            "orig.filename" | "originalFilename" => "og",
            _ => return,
        };
        self.set_letter(letter, v);
    }

    /// The timestamp as a number (padded with zeros to 14 digits; 0 when
    /// it is none).
    pub fn timestamp_u64(&self) -> u64 {
        let t = &self.timestamp;
        if t.is_empty() || t.len() > 14 || !t.bytes().all(|b| b.is_ascii_digit()) {
            return 0;
        }
        let mut d = t.as_bytes().to_vec();
        d.resize(14, b'0');
        std::str::from_utf8(&d)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    /// The value of `field`.
    pub fn value(&self, field: Field) -> Value<'_> {
        fn num_or_str(s: &str) -> Value<'_> {
            match s.parse::<i64>() {
                Ok(n) if !s.starts_with('+') => Value::Num(n),
                _ => Value::Str(s.into()),
            }
        }
        fn num_or_null(s: &str) -> Value<'_> {
            if s == "-" || s.is_empty() {
                Value::Null
            } else {
                num_or_str(s)
            }
        }
        match field {
            Field::Urlkey => Value::Str(self.urlkey.as_str().into()),
            Field::Timestamp => match self.timestamp.bytes().all(|b| b.is_ascii_digit()) {
                true if !self.timestamp.is_empty() && self.timestamp.len() <= 14 => {
                    Value::Num(self.timestamp_u64() as i64)
                }
                _ => Value::Str(self.timestamp.as_str().into()),
            },
            Field::Original => Value::Str(self.original.as_str().into()),
            Field::Mimetype => Value::Str(self.mimetype.as_str().into()),
            Field::Status => num_or_str(&self.status),
            // OutbackCDX keeps a digest without its `sha1:` scheme.
            Field::Digest => match self.digest.split_once(':') {
                Some((_, d)) => Value::Str(d.split(':').next().unwrap_or_default().into()),
                None => Value::Str(self.digest.as_str().into()),
            },
            Field::Redirect => Value::Str(self.redirect.as_str().into()),
            Field::Robotflags => Value::Str(self.robotflags.as_str().into()),
            Field::Length => num_or_null(&self.length),
            Field::Offset => num_or_null(&self.offset),
            Field::Filename => Value::Str(self.filename.as_str().into()),
            Field::OriginalLength => num_or_null(&self.orig_length),
            Field::OriginalOffset => num_or_null(&self.orig_offset),
            Field::OriginalFilename => Value::Str(self.orig_filename.as_str().into()),
            Field::Range => match (num_or_null(&self.offset), num_or_null(&self.length)) {
                (Value::Num(o), Value::Num(l)) => Value::Str(
                    format!("bytes={o}-{}", o.saturating_add(l).saturating_sub(1)).into(),
                ),
                (Value::Num(o), _) => Value::Str(format!("bytes={o}-").into()),
                _ => Value::Null,
            },
        }
    }

    /// The CDX text line of `fields` (without its newline).
    pub fn text(&self, fields: &[Field]) -> String {
        let mut out = String::new();
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(&self.value(*f).text());
        }
        out
    }
}

/// An answer of JSON arrays (or objects) written a capture at a time,
/// laid out as GSON's pretty printer lays them out.
#[derive(Debug, Default)]
pub struct JsonRows {
    rows: u64,
}

impl JsonRows {
    pub fn start(&self) -> &'static str {
        "["
    }

    /// One capture: `[` + values + `]`, or `{` + `"name": value` + `}`
    /// with `names` (`jsondict`).
    pub fn row(&mut self, c: &Capture, fields: &[Field], names: Option<&[String]>) -> String {
        let mut out = String::new();
        if self.rows > 0 {
            out.push(',');
        }
        self.rows += 1;
        out.push_str(if names.is_some() { "\n  {" } else { "\n  [" });
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("\n    ");
            if let Some(names) = names {
                gson_str(names.get(i).map_or("", String::as_str), &mut out);
                out.push_str(": ");
            }
            c.value(*f).json(&mut out);
        }
        out.push_str(if names.is_some() { "\n  }" } else { "\n  ]" });
        out
    }

    pub fn finish(&self) -> &'static str {
        if self.rows > 0 {
            "\n]"
        } else {
            "]"
        }
    }
}

/// A JSON string as GSON writes it by default (HTML-safe: `<`, `>`, `&`,
/// `=` and `'` escaped too).
pub fn gson_str(s: &str, out: &mut String) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '=' | '\'' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", ch as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// OpenWayback's XML query (`?q=type:urlquery url:...`), checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XmlQuery {
    /// `urlquery`, `prefixquery`, or another (answered with an error
    /// element).
    pub kind: String,
    pub url: String,
    /// Results per page.
    pub limit: i64,
    /// Results skipped before the page.
    pub offset: i64,
}

impl XmlQuery {
    /// Reads `q` (space-separated `name:value` pairs, each URL-decoded
    /// again), `count` and `start_page`.
    pub fn parse(params: &Params) -> Result<XmlQuery, String> {
        let q = params.get("q").unwrap_or_default();
        let mut kind = "urlquery".to_string();
        let mut url = None;
        let mut q_limit = None;
        let mut q_offset = None;
        for entry in q.split(' ').filter(|e| !e.is_empty()) {
            let (k, v) = entry.split_once(':').ok_or_else(|| {
                format!("q: {entry:?} is not name:value (e.g. q=type:urlquery url:http://...)")
            })?;
            let k = url_decode(k)?;
            let v = url_decode(v)?;
            match k.as_str() {
                "type" => kind = v.to_ascii_lowercase(),
                "url" => url = Some(v),
                "limit" => q_limit = Some(v),
                "offset" => q_offset = Some(v),
                _ => {}
            }
        }
        let url = url.ok_or("q gives no url: (e.g. q=type:urlquery url:http://...)")?;
        let number = |name: &str, v: &str| {
            v.trim()
                .parse::<i64>()
                .map_err(|_| format!("{name}={v} is not a number"))
        };
        let limit = match (params.get("count"), q_limit) {
            (Some(c), _) => number("count", c)?,
            (None, Some(l)) => number("limit", &l)?,
            (None, None) => XML_DEFAULT_LIMIT,
        };
        let offset = match (params.get("start_page"), q_offset) {
            (Some(p), _) => limit.saturating_mul(number("start_page", p)?.max(1) - 1),
            (None, Some(o)) => number("offset", &o)?,
            (None, None) => 0,
        };
        Ok(XmlQuery {
            kind,
            url,
            limit,
            offset,
        })
    }
}

/// Java's `URLDecoder.decode`: `+` is a space, `%XX` a byte.
fn url_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = b
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("q: {s:?} holds a bad %-escape"))?;
                out.push(hex);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Text escaped as Java's XML writer escapes it.
pub fn xml_text(s: &str, out: &mut String) {
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

fn element(out: &mut String, name: &str, value: &str) {
    let _ = write!(out, "<{name}>");
    xml_text(value, out);
    let _ = write!(out, "</{name}>");
}

/// The head of every XML answer.
pub const XML_START: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><wayback>";
pub const XML_END: &str = "</wayback>";

/// A capture of a `urlquery` (`<result>`).
pub fn xml_capture(c: &Capture) -> String {
    let mut out = String::from("<result>");
    let v = |f| c.value(f).text().into_owned();
    element(&mut out, "compressedoffset", &v(Field::Offset));
    if c.value(Field::Length) != Value::Null {
        element(&mut out, "compressedendoffset", &v(Field::Length));
    }
    element(&mut out, "mimetype", &v(Field::Mimetype));
    element(&mut out, "file", &v(Field::Filename));
    element(&mut out, "redirecturl", &v(Field::Redirect));
    element(&mut out, "urlkey", &v(Field::Urlkey));
    element(&mut out, "digest", &v(Field::Digest));
    element(&mut out, "httpresponsecode", &v(Field::Status));
    element(&mut out, "robotflags", &v(Field::Robotflags));
    element(&mut out, "url", &v(Field::Original));
    element(&mut out, "capturedate", &v(Field::Timestamp));
    out.push_str("</result>");
    out
}

/// The captures of one URL key, for a `prefixquery`.
#[derive(Clone, Debug)]
pub struct Resource {
    pub first: Capture,
    pub last: Capture,
    pub captures: u64,
    /// Runs of one digest.
    pub versions: u64,
    previous_digest: String,
}

impl Resource {
    pub fn new(c: Capture) -> Resource {
        Resource {
            previous_digest: c.digest.clone(),
            first: c.clone(),
            last: c,
            captures: 1,
            versions: 1,
        }
    }

    /// Takes `c` when it has the same key, else gives it back.
    pub fn add(&mut self, c: Capture) -> Option<Capture> {
        if c.urlkey != self.first.urlkey {
            return Some(c);
        }
        if c.digest != self.previous_digest {
            self.versions += 1;
            self.previous_digest = c.digest.clone();
        }
        self.captures += 1;
        self.last = c;
        None
    }

    /// Its `<result>`.
    pub fn xml(&self) -> String {
        let mut out = String::from("<result>");
        element(&mut out, "urlkey", &self.last.urlkey);
        element(&mut out, "originalurl", &self.last.original);
        element(&mut out, "numversions", &self.versions.to_string());
        element(&mut out, "numcaptures", &self.captures.to_string());
        element(
            &mut out,
            "firstcapturets",
            &self.first.value(Field::Timestamp).text(),
        );
        element(
            &mut out,
            "lastcapturets",
            &self.last.value(Field::Timestamp).text(),
        );
        out.push_str("</result>");
        out
    }
}

/// The `<request>` element after the results: what was asked and how
/// much was found; `now` is the current time as 14 digits.
pub fn xml_request(
    q: &XmlQuery,
    key: &str,
    results_type: &str,
    returned: u64,
    found: u64,
    now: &str,
) -> String {
    let mut out = String::from("<request>");
    element(&mut out, "startdate", "19960101000000");
    element(&mut out, "enddate", now);
    element(&mut out, "type", &q.kind);
    element(&mut out, "firstreturned", &q.offset.to_string());
    element(&mut out, "url", key);
    element(&mut out, "resultsrequested", &q.limit.to_string());
    element(&mut out, "resultstype", results_type);
    element(&mut out, "numreturned", &returned.to_string());
    element(&mut out, "numresults", &found.to_string());
    out.push_str("</request>");
    out
}

/// The error element of an answer with no result.
pub fn xml_error(title: &str, message: &str) -> String {
    let mut out = String::from("<error>");
    element(&mut out, "title", title);
    element(&mut out, "message", message);
    out.push_str("</error>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Result<Query, String> {
        Query::parse(&Params::parse(s))
    }

    #[test]
    fn wildcards_and_checks_as_outbackcdx_reads_them() {
        let a = q("url=http://example.org/a*").unwrap();
        assert_eq!(a.match_type, MatchType::Prefix);
        assert_eq!(a.url.as_deref(), Some("http://example.org/a"));
        let d = q("url=*.example.org").unwrap();
        assert_eq!(
            (d.match_type, d.url.as_deref()),
            (MatchType::Domain, Some("example.org"))
        );
        assert_eq!(
            q("url=x&matchType=RANGE").unwrap().match_type,
            MatchType::Range
        );
        assert!(q("url=x&matchType=nope").unwrap_err().contains("matchType"));
        assert!(q("").unwrap_err().contains("exactly one"));
        assert!(q("url=a&urlkey=b").unwrap_err().contains("exactly one"));
        assert!(q("url=a&sort=reverse&matchType=prefix").is_err());
        assert!(q("url=a&from=2019&matchType=prefix").is_err());
        // An empty closest turns sort=closest off (pywb 2.0 sends it).
        assert_eq!(
            q("url=a&sort=closest&closest=").unwrap().sort,
            Sort::Default
        );
        let f = q("url=a&from=2019&to=2019").unwrap();
        assert_eq!((f.from, f.to), (20190000000000, 20199999999999));
        assert!(q("url=a&limit=ten").unwrap_err().contains("limit"));
        assert!(q("url=a&fl=urlkey,nope").unwrap_err().contains("nope"));
        assert!(q("url=a&filter=!~status:2")
            .unwrap_err()
            .contains("Invalid filter"));
        assert!(q("url=a&filter=status:(").unwrap_err().contains("regular"));
        assert!(q("url=a&collapse=timestamp:x")
            .unwrap_err()
            .contains("collapse"));
    }

    #[test]
    fn ranges_are_outbackcdx_scans() {
        let surt = crate::surt::Options::default();
        let p = q("url=http://example.org/abc/&matchType=prefix").unwrap();
        assert_eq!(p.key(&surt), "org,example)/abc/");
        let d = q("url=example.org&matchType=domain").unwrap();
        let r = d.range(&d.key(&surt));
        assert!(r.contains(b"org,example)/ 2020"));
        assert!(r.contains(b"org,example,www)/ 2020"));
        assert!(!r.contains(b"org,examples)/ 2020"));
        let g = q("url=example.org/b&matchType=range").unwrap();
        let r = g.range(&g.key(&surt));
        assert!(!r.contains(b"org,example)/a 2020"));
        assert!(r.contains(b"org,example)/b 2020"));
        assert!(r.contains(b"uk,zzz)/ 2020"));
    }

    #[test]
    fn captures_read_from_every_shape_render_as_outbackcdx() {
        let names = vec!["offset".to_string(), "digest".to_string()];
        let cdx = Capture::from_line(
            b"org,example)/ 20030402160014 http://example.org/?a=1&b=<2> text/html 200 sha1:MOH7 - - 2248 396 my.warc.gz",
            &names,
        )
        .unwrap();
        let cdxj = Capture::from_line(
            br#"org,example)/ 20030402160014 {"url": "http://example.org/?a=1&b=<2>", "mime": "text/html", "status": "200", "digest": "sha1:MOH7", "length": "2248", "offset": "396", "filename": "my.warc.gz"}"#,
            &names,
        )
        .unwrap();
        let fields = q("url=a").unwrap().fields;
        assert_eq!(
            cdx.text(&fields),
            "org,example)/ 20030402160014 http://example.org/?a=1&b=<2> text/html 200 MOH7 - - 2248 396 my.warc.gz"
        );
        assert_eq!(cdxj.text(&fields), cdx.text(&fields));
        let mut rows = JsonRows::default();
        let one = rows.row(&cdx, &fields[..3], None);
        assert_eq!(
            one,
            "\n  [\n    \"org,example)/\",\n    20030402160014,\n    \"http://example.org/?a\\u003d1\\u0026b\\u003d\\u003c2\\u003e\"\n  ]"
        );
        assert!(rows.row(&cdx, &fields[..1], None).starts_with(",\n  ["));
        assert_eq!(rows.finish(), "\n]");
        assert_eq!(JsonRows::default().finish(), "]");
        // Fields the line lacks: `-` in text, null in JSON, no end offset.
        let short = Capture::from_line(
            b"org,example)/ 20030402160014 http://example.org/ text/html - AAAA - 396 my.warc.gz",
            &names,
        )
        .unwrap();
        assert_eq!(short.value(Field::Length), Value::Null);
        assert_eq!(short.value(Field::Range), Value::Str("bytes=396-".into()));
        assert_eq!(cdx.value(Field::Range), Value::Str("bytes=396-2643".into()));
        assert!(!xml_capture(&short).contains("compressedendoffset"));
        assert!(xml_capture(&cdx).contains("<url>http://example.org/?a=1&amp;b=&lt;2&gt;</url>"));
    }

    #[test]
    fn filters_collapse_and_closest_follow_outbackcdx() {
        let c = Capture::from_line(
            b"a)/ 20200101000000 http://a/ text/html 200 D1 - - 10 0 f.warc.gz",
            &[],
        )
        .unwrap();
        assert!(Filter::parse("status:2..").unwrap().accepts(&c));
        assert!(
            !Filter::parse("status:2").unwrap().accepts(&c),
            "regex: whole value"
        );
        assert!(
            Filter::parse("~status:2").unwrap().accepts(&c),
            "~: substring"
        );
        assert!(!Filter::parse("~!mimetype:html").unwrap().accepts(&c));
        let col = Collapse::parse("timestamp:4", false).unwrap();
        assert_eq!(col.token(&c), "2020");
        // One second before beats a minute after; ties go forward.
        let ts = vec![
            20191231235959u64,
            20200101000100,
            20200101000000,
            20191231235900,
        ];
        let mut sorted = ts.clone();
        sorted.sort();
        let got = closest_order(sorted, "20200101000000", |t| *t);
        assert_eq!(
            got,
            vec![
                20200101000000,
                20191231235959,
                20200101000100,
                20191231235900
            ]
        );
        assert_eq!(epoch_seconds("19700101000001"), Some(1));
        assert_eq!(epoch_seconds("20000301000000"), Some(951868800));
        assert_eq!(epoch_seconds("20001301000000"), None);
    }

    #[test]
    fn xml_queries_read_q_count_and_start_page() {
        let p = Params::parse(
            "q=type:urlquery+url:http%253A%252F%252Fexample.org%252F&count=5&start_page=3",
        );
        let x = XmlQuery::parse(&p).unwrap();
        assert_eq!(
            x,
            XmlQuery {
                kind: "urlquery".into(),
                url: "http://example.org/".into(),
                limit: 5,
                offset: 10
            }
        );
        let p = Params::parse("q=type:PrefixQuery%20url:example.org%20limit:7%20offset:2");
        let x = XmlQuery::parse(&p).unwrap();
        assert_eq!((x.kind.as_str(), x.limit, x.offset), ("prefixquery", 7, 2));
        assert!(XmlQuery::parse(&Params::parse("q=type:urlquery")).is_err());
        assert!(XmlQuery::parse(&Params::parse("q=urlquery")).is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Query strings made of the form's pieces, and lines of every
        /// shape with odd bytes: no panic; every JSON row is JSON, every
        /// text row one line, closest keeps every capture.
        #[test]
        fn any_query_and_line_answers_without_panic(
            pieces in proptest::collection::vec(0usize..24, 0..8),
            values in proptest::collection::vec("[a-z0-9:~!.*,<>&='\\\"()\\[\\]{}%+ -]{0,12}", 8),
            lines in proptest::collection::vec(
                proptest::collection::vec("[a-z0-9,)/.:<>&=\\\\-]{0,9}", 2..15), 0..6),
            json in proptest::collection::vec("[a-z0-9 .:<>&=-]{0,9}", 3),
        ) {
            const NAMES: [&str; 24] = [
                "url", "urlkey", "matchType", "sort", "closest", "from", "to", "filter",
                "collapse", "collapseToLast", "fl", "limit", "output", "q", "count",
                "start_page", "matchType", "sort", "filter", "fl", "output", "limit",
                "url", "collapseToFirst",
            ];
            let query: Vec<String> = pieces
                .iter()
                .zip(values.iter().cycle())
                .map(|(&i, v)| {
                    let v: String = form_urlencoded::byte_serialize(v.as_bytes()).collect();
                    format!("{}={v}", NAMES[i])
                })
                .collect();
            let params = Params::parse(&query.join("&"));
            let _ = XmlQuery::parse(&params);
            let names = vec!["offset".to_string(), "digest".to_string()];
            if let Ok(q) = Query::parse(&params) {
                let key = q.key(&crate::surt::Options::default());
                let range = q.range(&key);
                let mut rows = JsonRows::default();
                let mut kept = Vec::new();
                // Column lines of every count, and a CDXJ line.
                let mut lines: Vec<String> = lines.iter().map(|t| t.join(" ")).collect();
                lines.push(format!(
                    "{} 2020 {{\"url\": \"{}\", \"length\": \"{}\", \"status\": 7}}",
                    json[0], json[1], json[2]
                ));
                for l in &lines {
                    let _ = range.contains(l.as_bytes());
                    let Ok(c) = Capture::from_line(l.as_bytes(), &names) else { continue };
                    let _ = q.accepts(&c);
                    if let Some(col) = &q.collapse {
                        let _ = col.token(&c);
                    }
                    proptest::prop_assert!(!c.text(&q.fields).contains('\n'));
                    let row = rows.row(&c, &q.fields, Some(&q.field_names));
                    let row = row.trim_start_matches(',');
                    proptest::prop_assert!(
                        serde_json::from_str::<serde_json::Value>(row).is_ok(),
                        "not JSON: {}", row
                    );
                    let _ = xml_capture(&c);
                    kept.push(c);
                }
                if let Some(at) = &q.closest {
                    let n = kept.len();
                    kept.sort_by_key(Capture::timestamp_u64);
                    proptest::prop_assert_eq!(closest_order(kept, at, Capture::timestamp_u64).len(), n);
                }
            }
        }
    }
}
