//! The capture table: one index line -> one row of Common Crawl's flat
//! columnar schema (`cc-index-schema-flat.json` of cc-index-table), plus
//! the columns of ukvs's own after theirs.
//!
//! ```text
//! index line (UKVS, CDXJ, CDX by names) ──► Line {key, datetime, members}
//!                                                 │  url split as java.net.URL does,
//!                                                 │  host by the Public Suffix List
//!                                                 ▼
//!                                           Row {url_*, fetch_*, content_*, warc_*, crawl, subset, extras}
//! ```
//!
//! [`schema`] gives the Arrow schema (names, types and nullability) and
//! [`Row::from_line`] the values; the engine's sink
//! (`engine::table`) turns rows into Parquet files. Nothing here reads or
//! writes a file.
//!
//! The row says what the index line says, nothing more: a column the line
//! cannot fill (charset, languages, detected MIME type in most indexes) is
//! null. Where Common Crawl's own converter puts a fixed value for a
//! missing one, so do we (`fetch_status` -1 without a status).

use std::borrow::Cow;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, TimeUnit};
use serde_json::{Map, Value};

/// Why a line makes no row.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The line's second field is not a 14-digit datetime: `fetch_time`
    /// cannot be null. Re-index the archive, or repair the line.
    #[error("the datetime {0:?} is not 14 digits (fetch_time needs one)")]
    Datetime(String),
    /// The JSON block of the line is not an object.
    #[error("the line's JSON block cannot be read: {0}")]
    Json(String),
    /// The line has no key (it is empty or a header).
    #[error("the line has no key")]
    NoKey,
}

/// Common Crawl's columns, in their order.
pub const CC_COLUMNS: usize = 32;

/// The columns: Common Crawl's 32, then ukvs's own. The order of the
/// [`Row`] fields and of the builders in the sink follows this list.
pub fn schema(with_partitions: bool) -> Arc<Schema> {
    let s = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
    let mut fields = vec![
        s("url_surtkey", false),
        s("url", false),
        s("url_host_name", false),
        s("url_host_tld", true),
        s("url_host_2nd_last_part", true),
        s("url_host_3rd_last_part", true),
        s("url_host_4th_last_part", true),
        s("url_host_5th_last_part", true),
        s("url_host_registry_suffix", true),
        s("url_host_registered_domain", true),
        s("url_host_private_suffix", true),
        s("url_host_private_domain", true),
        s("url_host_name_reversed", true),
        s("url_protocol", false),
        Field::new("url_port", DataType::Int32, true),
        s("url_path", false),
        s("url_query", true),
        Field::new(
            "fetch_time",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
        Field::new("fetch_status", DataType::Int16, false),
        s("fetch_redirect", true),
        s("content_digest", true),
        s("content_mime_type", true),
        s("content_mime_detected", true),
        s("content_charset", true),
        s("content_languages", true),
        s("content_truncated", true),
        s("warc_filename", false),
        // Null when the offset or length does not fit in Common Crawl's
        // 32 bits: warc_record_offset_long holds it then.
        Field::new("warc_record_offset", DataType::Int32, true),
        Field::new("warc_record_length", DataType::Int32, true),
        // Only Common Crawl's own paths name a segment.
        s("warc_segment", true),
    ];
    if with_partitions {
        fields.push(s("crawl", false));
        fields.push(s("subset", false));
    }
    fields.extend([
        s("record_type", true),
        s("revisit_refers_to_uri", true),
        s("revisit_refers_to_date", true),
        s("revisit_refers_to", true),
        s("revisit_profile", true),
        s("content_payload_digest", true),
        s("fetch_ip", true),
        s("fetch_time_raw", true),
        s("arc_serial", true),
        s("arc_describes", true),
        s("arc_replaces", true),
        Field::new("warc_record_offset_long", DataType::Int64, true),
        Field::new("warc_record_length_long", DataType::Int64, true),
        s("extra_fields", true),
    ]);
    Arc::new(Schema::new(fields))
}

/// Where rows go when the table is written as a directory: Hive-style
/// `crawl=.../subset=...`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Partition {
    pub crawl: String,
    pub subset: String,
}

/// How `crawl` and `subset` are chosen.
#[derive(Debug, Clone, Default)]
pub struct Naming {
    /// The crawl of every row (default: the collection's name, given by
    /// the engine).
    pub crawl: String,
    /// The subset of every row; `None` derives it per row as Common
    /// Crawl sorts its captures: `robotstxt` for a `/robots.txt` URL,
    /// `warc` for 2xx statuses and revisits, `crawldiagnostics` for the
    /// rest.
    pub subset: Option<String>,
}

/// One row, borrowing from its line (and from the naming) wherever the
/// line holds the value as written: a row costs no allocation unless a
/// value must be lower-cased, unescaped or rebuilt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row<'a> {
    pub url_surtkey: Cow<'a, str>,
    pub url: Cow<'a, str>,
    /// The URL's host, lower-cased: the `url_host_*` columns are
    /// [`Host::of`] it (the sink computes them once per run of a host).
    pub host_name: Cow<'a, str>,
    pub url_protocol: Cow<'a, str>,
    pub url_port: Option<i32>,
    pub url_path: Cow<'a, str>,
    pub url_query: Option<Cow<'a, str>>,
    /// Microseconds since 1970 (UTC).
    pub fetch_time: i64,
    pub fetch_status: i16,
    pub fetch_redirect: Option<Cow<'a, str>>,
    /// Base32 SHA-1 without `sha1:`, as Common Crawl writes it.
    pub content_digest: Option<Cow<'a, str>>,
    pub content_mime_type: Option<Cow<'a, str>>,
    pub content_mime_detected: Option<Cow<'a, str>>,
    pub content_charset: Option<Cow<'a, str>>,
    pub content_languages: Option<Cow<'a, str>>,
    pub content_truncated: Option<Cow<'a, str>>,
    pub warc_filename: Cow<'a, str>,
    pub warc_record_offset: Option<u64>,
    pub warc_record_length: Option<u64>,
    pub warc_segment: Option<Cow<'a, str>>,
    pub crawl: Cow<'a, str>,
    pub subset: Cow<'a, str>,
    pub record_type: Option<Cow<'a, str>>,
    pub revisit_refers_to_uri: Option<Cow<'a, str>>,
    pub revisit_refers_to_date: Option<Cow<'a, str>>,
    pub revisit_refers_to: Option<Cow<'a, str>>,
    pub revisit_profile: Option<Cow<'a, str>>,
    pub content_payload_digest: Option<Cow<'a, str>>,
    pub fetch_ip: Option<Cow<'a, str>>,
    pub fetch_time_raw: Option<Cow<'a, str>>,
    pub arc_serial: Option<Cow<'a, str>>,
    pub arc_describes: Option<Cow<'a, str>>,
    pub arc_replaces: Option<Cow<'a, str>>,
    /// Members of the line no column holds, as a JSON object.
    pub extra_fields: Option<String>,
}

/// The host columns (`url_host_*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    /// Labels from the last: tld, 2nd, 3rd, 4th, 5th last part (null for
    /// an IP address).
    pub parts: [Option<String>; 5],
    pub registry_suffix: Option<String>,
    pub registered_domain: Option<String>,
    pub private_suffix: Option<String>,
    pub private_domain: Option<String>,
    pub reversed: Option<String>,
}

/// The members that have a column of their own (the rest go to
/// `extra_fields`), each at its slot ([`slot`]). Names are those of
/// every profile: UKVS and CDXJ members, CDX columns as
/// [`crate::ukvs::convert::cdx_letter_name`] names them; `urlkey` and
/// `timestamp` are Common Crawl's own CDX's (the key and datetime
/// again, which no column takes from the members).
mod m {
    pub const URL: usize = 0;
    pub const STATUS: usize = 1;
    pub const REDIRECT: usize = 2;
    pub const DIGEST: usize = 3;
    pub const MIME: usize = 4;
    pub const MIME_DETECTED: usize = 5;
    pub const CHARSET: usize = 6;
    pub const LANGUAGES: usize = 7;
    pub const TRUNCATED: usize = 8;
    pub const FILENAME: usize = 9;
    pub const OFFSET: usize = 10;
    pub const LENGTH: usize = 11;
    pub const RECORD_TYPE: usize = 12;
    pub const REFERS_TO_URI: usize = 13;
    pub const REFERS_TO_DATE: usize = 14;
    pub const REFERS_TO: usize = 15;
    pub const PROFILE: usize = 16;
    pub const PAYLOAD_DIGEST: usize = 17;
    pub const IP: usize = 18;
    pub const DATETIME_RAW: usize = 19;
    pub const SERIAL: usize = 20;
    pub const DESCRIBES: usize = 21;
    pub const REPLACES: usize = 22;
    pub const URLKEY: usize = 23;
    pub const TIMESTAMP: usize = 24;
}

/// How many members have a column.
const SLOTS: usize = 25;

/// The slot of a member with a column of its own.
fn slot(member: &str) -> Option<usize> {
    Some(match member {
        "url" => m::URL,
        "status" => m::STATUS,
        "redirect" => m::REDIRECT,
        "digest" => m::DIGEST,
        "mime" => m::MIME,
        "mime-detected" => m::MIME_DETECTED,
        "charset" => m::CHARSET,
        "languages" => m::LANGUAGES,
        "truncated" => m::TRUNCATED,
        "filename" => m::FILENAME,
        "offset" => m::OFFSET,
        "length" => m::LENGTH,
        "record_type" => m::RECORD_TYPE,
        "refers_to_uri" => m::REFERS_TO_URI,
        "refers_to_date" => m::REFERS_TO_DATE,
        "refers_to" => m::REFERS_TO,
        "profile" => m::PROFILE,
        "payload_digest" => m::PAYLOAD_DIGEST,
        "ip" => m::IP,
        "datetime_raw" => m::DATETIME_RAW,
        "serial" => m::SERIAL,
        "describes" => m::DESCRIBES,
        "replaces" => m::REPLACES,
        "urlkey" => m::URLKEY,
        "timestamp" => m::TIMESTAMP,
        _ => return None,
    })
}

/// Whether a member has a column of its own.
fn has_column(member: &str) -> bool {
    slot(member).is_some()
}

/// A member's value: a string (unescaped), the JSON text of any other
/// value (a number as written, `true`, an array), or null.
#[derive(Debug, Clone, PartialEq)]
enum Val<'a> {
    Str(Cow<'a, str>),
    Json(Cow<'a, str>),
    Null,
}

/// A line's members by name, each name once, in the order a JSON object
/// of them would list them.
type Members<'a> = Vec<(Cow<'a, str>, Val<'a>)>;

/// A line's members with a column, by slot: the first member of each
/// name, found in one pass.
struct Slots<'a>([Option<Val<'a>>; SLOTS]);

impl<'a> Slots<'a> {
    fn of(members: &Members<'a>) -> Self {
        let mut slots: [Option<Val<'a>>; SLOTS] = std::array::from_fn(|_| None);
        for (k, v) in members {
            if let Some(i) = slot(k) {
                slots[i].get_or_insert_with(|| v.clone());
            }
        }
        Slots(slots)
    }

    /// The value at `slot`: `-` and null are no value, a string is
    /// itself, anything else its JSON text.
    fn text(&self, slot: usize) -> Option<Cow<'a, str>> {
        match self.0[slot].as_ref()? {
            Val::Null => None,
            Val::Str(s) if s == "-" => None,
            Val::Str(s) | Val::Json(s) => Some(s.clone()),
        }
    }

    /// The value at `slot` as a whole number (a JSON number or a string
    /// of digits).
    fn number(&self, slot: usize) -> Option<u64> {
        match self.0[slot].as_ref()? {
            Val::Null => None,
            Val::Str(s) | Val::Json(s) => s.parse().ok(),
        }
    }
}

impl<'a> Row<'a> {
    /// The row of one data line. `names` name the values after key and
    /// datetime when the line has no JSON block (a CDX legend's, or a
    /// UKVS `!fields` header's); a CDX line without a legend is named by
    /// its number of columns, as pywb names it.
    pub fn from_line(
        line: &'a [u8],
        names: &'a [String],
        naming: &'a Naming,
    ) -> Result<Row<'a>, Error> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // Most lines are plain: their members go to their slots as they
        // are read.
        let (slots, extra) = match plain_slots(line, names) {
            Some(slots) => (slots, None),
            None => {
                let (members, extra) = members(line, names)?;
                (Slots::of(&members), extra)
            }
        };
        let (key, datetime) = key_datetime(line);
        if key.is_empty() {
            return Err(Error::NoKey);
        }
        let fetch_time = micros(datetime)
            .ok_or_else(|| Error::Datetime(String::from_utf8_lossy(datetime).into_owned()))?;
        let text = |slot: usize| slots.text(slot);
        let url = text(m::URL).unwrap_or_default();
        // Parts of a value the row owns are owned too.
        let parts = match &url {
            Cow::Borrowed(u) => UrlParts::of(u),
            Cow::Owned(u) => UrlParts::of(u).into_owned(),
        };
        let fetch_status = slots
            .number(m::STATUS)
            .and_then(|s| i16::try_from(s).ok())
            .unwrap_or(-1);
        let filename = text(m::FILENAME).unwrap_or_default();
        let own = |v: Cow<'_, str>| -> Cow<'a, str> { Cow::Owned(v.into_owned()) };
        let cc = match &filename {
            Cow::Borrowed(f) => cc_path(f),
            Cow::Owned(f) => cc_path(f).map(|(c, g, s)| (own(c), own(g), own(s))),
        };
        let (cc_crawl, warc_segment, cc_subset) = match cc {
            Some((c, g, s)) => (Some(c), Some(g), Some(s)),
            None => (None, None, None),
        };
        let mime = text(m::MIME);
        let crawl = cc_crawl.unwrap_or(Cow::Borrowed(naming.crawl.as_str()));
        let subset = match (&naming.subset, cc_subset) {
            (Some(s), _) => Cow::Borrowed(s.as_str()),
            (None, Some(s)) => s,
            (None, None) => Cow::Borrowed(subset_of(&parts.path, fetch_status, mime.as_deref())),
        };
        let digest = text(m::DIGEST).map(|d| match d {
            Cow::Borrowed(d) => Cow::Borrowed(d.strip_prefix("sha1:").unwrap_or(d)),
            Cow::Owned(d) => match d.strip_prefix("sha1:") {
                Some(s) => Cow::Owned(s.to_owned()),
                None => Cow::Owned(d),
            },
        });
        Ok(Row {
            url_surtkey: String::from_utf8_lossy(key),
            host_name: parts.host,
            url_protocol: parts.protocol,
            url_port: parts.port,
            url_path: parts.path,
            url_query: parts.query,
            fetch_time,
            fetch_status,
            fetch_redirect: text(m::REDIRECT),
            content_digest: digest,
            content_mime_type: mime,
            content_mime_detected: text(m::MIME_DETECTED),
            content_charset: text(m::CHARSET),
            content_languages: text(m::LANGUAGES),
            content_truncated: text(m::TRUNCATED),
            warc_record_offset: slots.number(m::OFFSET),
            warc_record_length: slots.number(m::LENGTH),
            warc_segment,
            crawl,
            subset,
            record_type: text(m::RECORD_TYPE),
            revisit_refers_to_uri: text(m::REFERS_TO_URI),
            revisit_refers_to_date: text(m::REFERS_TO_DATE),
            revisit_refers_to: text(m::REFERS_TO),
            revisit_profile: text(m::PROFILE),
            content_payload_digest: text(m::PAYLOAD_DIGEST),
            fetch_ip: text(m::IP),
            fetch_time_raw: text(m::DATETIME_RAW),
            arc_serial: text(m::SERIAL),
            arc_describes: text(m::DESCRIBES),
            arc_replaces: text(m::REPLACES),
            extra_fields: extra,
            url,
            warc_filename: filename,
        })
    }

    /// The partition the row belongs to.
    pub fn partition(&self) -> Partition {
        Partition {
            crawl: self.crawl.clone().into_owned(),
            subset: self.subset.clone().into_owned(),
        }
    }
}

/// The first two fields of a line.
fn key_datetime(line: &[u8]) -> (&[u8], &[u8]) {
    let mut it = line.splitn(3, |&b| b == b' ');
    (it.next().unwrap_or_default(), it.next().unwrap_or_default())
}

/// The line's members by name: its values after key and datetime named
/// by `names` (`-` left out), then its JSON block's; and those no column
/// holds, as a JSON object.
///
/// A JSON block of plain members (strings without escapes, whole
/// numbers, booleans, null; each name once, each with a column: what
/// every index writer writes) is read in place by [`scan_object`]; any
/// other goes through serde_json, which gives the same members.
fn members<'a>(
    line: &'a [u8],
    names: &'a [String],
) -> Result<(Members<'a>, Option<String>), Error> {
    // The JSON block opens at the first ` {` (keys and datetimes hold
    // neither spaces nor braces).
    let (head, json) = split_json(line);
    let values: Vec<&[u8]> = head.split(|&b| b == b' ').skip(2).collect();
    // Room for the members of every profile's line, without regrowing.
    let mut members = Members::with_capacity(16);
    let legend_names: Vec<&'static str> = if json.is_none() && names.len() != values.len() {
        match crate::ukvs::convert::legend_by_count(line) {
            Some(legend) => legend.letters[2..]
                .iter()
                .filter_map(|&c| crate::ukvs::convert::cdx_letter_name(c))
                .collect(),
            None => Vec::new(),
        }
    } else {
        Vec::new()
    };
    let name_at = |i: usize| -> Option<&'a str> {
        if legend_names.is_empty() {
            names.get(i).map(String::as_str)
        } else {
            legend_names.get(i).copied()
        }
    };
    for (i, v) in values.iter().enumerate() {
        if *v == b"-" || v.is_empty() {
            continue;
        }
        let name = match name_at(i) {
            Some(n) => Cow::Borrowed(n),
            None => Cow::Owned(format!("field{}", i + 3)),
        };
        let v = Val::Str(unquote(v));
        // A name met again takes the later value, in the first's place.
        match members.iter_mut().find(|(k, _)| *k == name) {
            Some(m) => m.1 = v,
            None => members.push((name, v)),
        }
    }
    let Some(json) = json else {
        return Ok(extra_of(members));
    };
    let fast = members.len();
    if let Ok(text) = std::str::from_utf8(json) {
        if scan_object(text, &mut members).is_some() && plain(&members) {
            return Ok((members, None));
        }
    }
    members.truncate(fast);
    serde_members(json, &mut members)?;
    Ok(extra_of(members))
}

/// The line's head (key, datetime, values) and its JSON block, which
/// opens at the first ` {` (keys and datetimes hold neither spaces nor
/// braces).
fn split_json(line: &[u8]) -> (&[u8], Option<&[u8]>) {
    let mut from = 0;
    while let Some(i) = memchr::memchr(b' ', &line[from..]) {
        let at = from + i;
        if line.get(at + 1) == Some(&b'{') {
            return (&line[..at], Some(&line[at + 1..]));
        }
        from = at + 1;
    }
    (line, None)
}

/// The slots of a line whose members are all plain (see [`members`]):
/// named values after key and datetime, then a JSON block read in
/// place, every member with a column and named once. None for any
/// other line, which [`members`] reads.
fn plain_slots<'a>(line: &'a [u8], names: &'a [String]) -> Option<Slots<'a>> {
    let mut slots: [Option<Val<'a>>; SLOTS] = std::array::from_fn(|_| None);
    let (head, json) = split_json(line);
    let mut values = head.split(|&b| b == b' ').skip(2);
    let mut count = 0;
    // Values named by `names` alone (a CDX line without a legend goes
    // the long way).
    for (i, v) in values.by_ref().enumerate() {
        count = i + 1;
        if v == b"-" || v.is_empty() {
            continue;
        }
        if v[0] == b'"' {
            return None;
        }
        let at = slot(names.get(i)?)?;
        if slots[at].is_some() {
            return None;
        }
        slots[at] = Some(Val::Str(Cow::Borrowed(std::str::from_utf8(v).ok()?)));
    }
    if json.is_none() && count != names.len() {
        return None;
    }
    if let Some(json) = json {
        let text = std::str::from_utf8(json).ok()?;
        scan_object_with(text, |key, val| {
            let at = slot(key)?;
            if slots[at].is_some() {
                return None;
            }
            slots[at] = Some(val);
            Some(())
        })?;
    }
    Some(Slots(slots))
}

/// The members of a JSON block read by serde_json, after those of the
/// line's head (which a member of the same name does not replace).
fn serde_members<'a>(json: &[u8], members: &mut Members<'a>) -> Result<(), Error> {
    let text = String::from_utf8_lossy(json);
    match serde_json::from_str::<Value>(text.trim_end()) {
        Ok(Value::Object(obj)) => {
            for (k, v) in obj {
                if members.iter().any(|(name, _)| *name == k) {
                    continue;
                }
                let v = match v {
                    Value::Null => Val::Null,
                    Value::String(s) => Val::Str(Cow::Owned(s)),
                    v => Val::Json(Cow::Owned(v.to_string())),
                };
                members.push((Cow::Owned(k), v));
            }
            Ok(())
        }
        Ok(_) => Err(Error::Json("not an object".into())),
        Err(e) => Err(Error::Json(e.to_string())),
    }
}

/// Whether members read in place need nothing more: every one has a
/// column and is named once.
fn plain(members: &Members<'_>) -> bool {
    let mut seen = 0u32;
    members.iter().all(|(k, _)| match slot(k) {
        Some(i) if seen & (1 << i) == 0 => {
            seen |= 1 << i;
            true
        }
        _ => false,
    })
}

/// Members, and those no column holds as a JSON object.
fn extra_of(members: Members<'_>) -> (Members<'_>, Option<String>) {
    let mut extra = Map::new();
    for (k, v) in &members {
        if !has_column(k) {
            let v = match v {
                Val::Null => Value::Null,
                Val::Str(s) => Value::String(s.to_string()),
                Val::Json(s) => serde_json::from_str(s).unwrap_or(Value::String(s.to_string())),
            };
            extra.insert(k.to_string(), v);
        }
    }
    let extra = (!extra.is_empty()).then(|| Value::Object(extra).to_string());
    (members, extra)
}

/// Reads a JSON object of plain members in place, appending them to
/// `out`: None (and `out` partly filled) for anything else (an escape,
/// a control character, a fraction or exponent, an array or object,
/// text after the object), which serde_json reads instead.
fn scan_object<'a>(text: &'a str, out: &mut Members<'a>) -> Option<()> {
    scan_object_with(text, |key, val| {
        out.push((Cow::Borrowed(key), val));
        Some(())
    })
}

/// [`scan_object`], handing each member to `put` (which may refuse it).
fn scan_object_with<'a>(
    text: &'a str,
    mut put: impl FnMut(&'a str, Val<'a>) -> Option<()>,
) -> Option<()> {
    let b = text.as_bytes();
    let ws = |i: &mut usize| {
        while b
            .get(*i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            *i += 1;
        }
    };
    // Whether the block holds no backslash and no control byte (tabs
    // and line ends between tokens included), as index writers write
    // it: a string then ends at the next quote, which memchr finds.
    // One pass over the whole block costs less than testing each byte
    // of each string for three bytes (it vectorises: no early exit).
    let clean = !b
        .iter()
        .fold(false, |dirty, &c| dirty | (c == b'\\') | (c < 0x20));
    // A string without escapes, from its opening quote.
    let string = |i: &mut usize| -> Option<&'a str> {
        if b.get(*i) != Some(&b'"') {
            return None;
        }
        let start = *i + 1;
        let end = if clean {
            start + memchr::memchr(b'"', &b[start..])?
        } else {
            start
                + b[start..]
                    .iter()
                    .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?
        };
        if b[end] != b'"' {
            return None;
        }
        *i = end + 1;
        Some(&text[start..end])
    };
    let mut i = 0;
    ws(&mut i);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    ws(&mut i);
    if b.get(i) == Some(&b'}') {
        i += 1;
    } else {
        loop {
            let key = string(&mut i)?;
            ws(&mut i);
            if b.get(i) != Some(&b':') {
                return None;
            }
            i += 1;
            ws(&mut i);
            let val = match *b.get(i)? {
                b'"' => Val::Str(Cow::Borrowed(string(&mut i)?)),
                b'-' | b'0'..=b'9' => {
                    let start = i;
                    if b[i] == b'-' {
                        i += 1;
                    }
                    let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
                    if digits == 0 || (digits > 1 && b[i] == b'0') {
                        return None;
                    }
                    i += digits;
                    if matches!(b.get(i), Some(b'.' | b'e' | b'E')) {
                        return None;
                    }
                    Val::Json(Cow::Borrowed(&text[start..i]))
                }
                _ if b[i..].starts_with(b"true") => {
                    i += 4;
                    Val::Json(Cow::Borrowed("true"))
                }
                _ if b[i..].starts_with(b"false") => {
                    i += 5;
                    Val::Json(Cow::Borrowed("false"))
                }
                _ if b[i..].starts_with(b"null") => {
                    i += 4;
                    Val::Null
                }
                _ => return None,
            };
            put(key, val)?;
            ws(&mut i);
            match b.get(i)? {
                b',' => {
                    i += 1;
                    ws(&mut i);
                }
                b'}' => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    ws(&mut i);
    (i == b.len()).then_some(())
}

/// A UKVS field as written: a quoted one unescaped (2 bytes at least).
fn unquote(v: &[u8]) -> Cow<'_, str> {
    if v.len() >= 2 && v[0] == b'"' && v[v.len() - 1] == b'"' {
        if let Ok(Value::String(s)) = serde_json::from_slice(v) {
            return Cow::Owned(s);
        }
    }
    String::from_utf8_lossy(v)
}

/// Microseconds since 1970 of a 14-digit datetime.
fn micros(datetime: &[u8]) -> Option<i64> {
    if datetime.len() != 14 || !datetime.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(crate::sorted::datetime_to_secs(datetime) * 1_000_000)
}

/// Crawl, segment and subset of a path laid out as Common Crawl's
/// (`crawl-data/CRAWL/segments/SEGMENT/SUBSET/...`).
#[allow(clippy::type_complexity)]
fn cc_path(filename: &str) -> Option<(Cow<'_, str>, Cow<'_, str>, Cow<'_, str>)> {
    let rest = filename.strip_prefix("common-crawl/").unwrap_or(filename);
    let rest = rest.strip_prefix("crawl-data/")?;
    let mut it = rest.splitn(5, '/');
    let (crawl, segments, segment, subset, _) =
        (it.next()?, it.next()?, it.next()?, it.next()?, it.next()?);
    let known = matches!(subset, "warc" | "crawldiagnostics" | "robotstxt");
    (segments == "segments" && known && !crawl.is_empty() && !segment.is_empty()).then_some((
        crawl.into(),
        segment.into(),
        subset.into(),
    ))
}

/// The subset Common Crawl would file a capture under.
pub fn subset_of(path: &str, status: i16, mime: Option<&str>) -> &'static str {
    if path == "/robots.txt" {
        "robotstxt"
    } else if (200..300).contains(&status) || mime == Some("warc/revisit") {
        "warc"
    } else {
        "crawldiagnostics"
    }
}

/// `s` lower-cased (ASCII), borrowed when it is already.
fn ascii_lower(s: &str) -> Cow<'_, str> {
    if s.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(s.to_ascii_lowercase())
    } else {
        Cow::Borrowed(s)
    }
}

/// A URL split as `java.net.URL` splits it (what Common Crawl's table
/// holds): scheme lower-cased; host lower-cased, without user info or
/// port; port only when written; path up to `?` or `#` (empty when there
/// is none); query after `?` up to `#`, null without `?`.
#[derive(Debug, Default, PartialEq, Eq)]
struct UrlParts<'a> {
    protocol: Cow<'a, str>,
    host: Cow<'a, str>,
    port: Option<i32>,
    path: Cow<'a, str>,
    query: Option<Cow<'a, str>>,
}

impl UrlParts<'_> {
    fn of(url: &str) -> UrlParts<'_> {
        let Some(colon) = url.find(':').filter(|&i| {
            i > 0
                && url[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        }) else {
            return UrlParts {
                path: Cow::Borrowed(url),
                ..UrlParts::default()
            };
        };
        let protocol = ascii_lower(&url[..colon]);
        let rest = &url[colon + 1..];
        let rest = match memchr::memchr(b'#', rest.as_bytes()) {
            Some(i) => &rest[..i],
            None => rest,
        };
        let (authority, path_query) = match rest.strip_prefix("//") {
            Some(r) => match memchr::memchr2(b'/', b'?', r.as_bytes()) {
                Some(i) => (&r[..i], &r[i..]),
                None => (r, ""),
            },
            // `dns:host` names its host after the colon.
            None if protocol == "dns" => (rest, ""),
            None => ("", rest),
        };
        let authority = authority.rsplit('@').next().unwrap_or_default();
        let (host, port) = split_port(authority);
        let (path, query) = match memchr::memchr(b'?', path_query.as_bytes()) {
            Some(i) => (&path_query[..i], Some(Cow::Borrowed(&path_query[i + 1..]))),
            None => (path_query, None),
        };
        UrlParts {
            protocol,
            host: ascii_lower(host),
            port,
            path: Cow::Borrowed(path),
            query,
        }
    }

    fn into_owned(self) -> UrlParts<'static> {
        let own = |v: Cow<'_, str>| Cow::Owned(v.into_owned());
        UrlParts {
            protocol: own(self.protocol),
            host: own(self.host),
            port: self.port,
            path: own(self.path),
            query: self.query.map(own),
        }
    }
}

/// Host and explicit port of an authority (`[v6]:port` too).
fn split_port(authority: &str) -> (&str, Option<i32>) {
    let port_from = if authority.starts_with('[') {
        authority.find("]:").map(|i| i + 1)
    } else {
        authority.rfind(':')
    };
    match port_from {
        Some(i) => {
            let port = authority[i + 1..].parse().ok();
            (&authority[..i], port)
        }
        None => (authority, None),
    }
}

impl Host {
    /// The host columns of a lower-cased host name, as Common Crawl's
    /// `HostName` fills them: labels and domains null for an IP address;
    /// a trailing dot dropped; suffixes from the Public Suffix List,
    /// private rules included for the private suffix and left out for
    /// the registry suffix; null when the name has no known suffix.
    pub fn of(name: &str) -> Host {
        let mut host = Host {
            name: name.to_owned(),
            ..Host::default()
        };
        if name.is_empty() || name.starts_with('[') || is_ipv4(name) {
            return host;
        }
        let name = name.strip_suffix('.').unwrap_or(name);
        host.name = name.to_owned();
        let mut labels = name.rsplit('.');
        for part in host.parts.iter_mut() {
            *part = labels.next().map(str::to_owned);
        }
        host.reversed = Some(name.rsplit('.').collect::<Vec<_>>().join("."));
        if let Some((suffix, typ)) = suffix(name) {
            host.private_domain = domain_below(name, suffix);
            host.private_suffix = Some(suffix.to_owned());
            // The registry suffix: the longest ICANN rule, found by
            // dropping labels of a private suffix until one is.
            let mut registry = Some((suffix, typ));
            while let Some((s, psl::Type::Private)) = registry {
                registry = s
                    .split_once('.')
                    .and_then(|(_, shorter)| self::suffix(shorter));
            }
            if let Some((s, _)) = registry {
                host.registered_domain = domain_below(name, s);
                host.registry_suffix = Some(s.to_owned());
            }
        }
        host
    }
}

/// The public suffix of `name` by a rule of the list (not the default
/// `*` rule), and the rule's type.
fn suffix(name: &str) -> Option<(&str, psl::Type)> {
    let s = psl::suffix(name.as_bytes())?;
    let typ = s.typ()?;
    let s = std::str::from_utf8(s.trim().as_bytes()).ok()?;
    Some((s, typ))
}

/// The domain one label below `suffix` (None when `name` is the suffix).
fn domain_below(name: &str, suffix: &str) -> Option<String> {
    let above = name.strip_suffix(suffix)?.strip_suffix('.')?;
    let label = above.rsplit('.').next().filter(|l| !l.is_empty())?;
    Some(format!("{label}.{suffix}"))
}

/// A dotted IPv4 address (Common Crawl's decimal variants included:
/// all-digit labels).
fn is_ipv4(name: &str) -> bool {
    let labels: Vec<&str> = name.split('.').collect();
    labels.len() <= 4
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naming() -> Naming {
        Naming {
            crawl: "COLL".into(),
            subset: None,
        }
    }

    #[test]
    fn ukvs_line_fills_the_columns() {
        let line = br#"com,example)/a?b=1 20140216050221 151 sha1:B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A {"url":"http://www.Example.com:8080/a?b=1#frag","mime":"text/html","status":200,"length":1656,"filename":"example.arc","ip":"93.184.216.119","snapshot":"x"}"#;
        let names = vec!["offset".to_string(), "digest".to_string()];
        let naming = naming();
        let row = Row::from_line(line, &names, &naming).unwrap();
        let host = Host::of(&row.host_name);
        assert_eq!(row.url_surtkey, "com,example)/a?b=1");
        assert_eq!(host.name, "www.example.com");
        assert_eq!(host.parts[0].as_deref(), Some("com"));
        assert_eq!(host.parts[2].as_deref(), Some("www"));
        assert_eq!(host.parts[3], None);
        assert_eq!(host.reversed.as_deref(), Some("com.example.www"));
        assert_eq!(host.registered_domain.as_deref(), Some("example.com"));
        assert_eq!(row.url_protocol, "http");
        assert_eq!(row.url_port, Some(8080));
        assert_eq!(row.url_path, "/a");
        assert_eq!(row.url_query.as_deref(), Some("b=1"));
        assert_eq!(row.fetch_time, 1_392_526_941_000_000);
        assert_eq!(row.fetch_status, 200);
        assert_eq!(
            row.content_digest.as_deref(),
            Some("B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A")
        );
        assert_eq!(row.warc_record_offset, Some(151));
        assert_eq!(row.warc_record_length, Some(1656));
        assert_eq!(row.fetch_ip.as_deref(), Some("93.184.216.119"));
        assert_eq!(row.crawl, "COLL");
        assert_eq!(row.subset, "warc");
        assert_eq!(row.extra_fields.as_deref(), Some(r#"{"snapshot":"x"}"#));
    }

    #[test]
    fn cdx11_line_without_legend_is_named_by_count() {
        let line = b"com,example)/ 20140216050221 http://example.com/ text/html 404 ABC - - 1656 151 crawl-data/CC-MAIN-2017-39/segments/1505818689752.21/crawldiagnostics/x.warc.gz";
        let naming = naming();
        let row = Row::from_line(line, &[], &naming).unwrap();
        assert_eq!(row.fetch_status, 404);
        assert_eq!(row.content_digest.as_deref(), Some("ABC"));
        assert_eq!(row.fetch_redirect, None);
        assert_eq!(row.warc_segment.as_deref(), Some("1505818689752.21"));
        assert_eq!(row.crawl, "CC-MAIN-2017-39");
        assert_eq!(row.subset, "crawldiagnostics");
        assert_eq!(row.url_path, "/");
        assert_eq!(row.url_query, None);
    }

    #[test]
    fn cdxj_strings_and_missing_status() {
        let line = br#"org,example)/robots.txt 20200101000000 {"url": "https://example.org/robots.txt", "length": "10", "offset": "0", "filename": "a.warc.gz"}"#;
        let naming = naming();
        let row = Row::from_line(line, &[], &naming).unwrap();
        assert_eq!(row.fetch_status, -1);
        assert_eq!(row.subset, "robotstxt");
        assert_eq!(row.warc_record_length, Some(10));
        assert_eq!(row.url_port, None);
    }

    #[test]
    fn datetime_must_be_14_digits() {
        let line = br#"com,example)/ - {"url":"http://example.com/"}"#;
        let naming = naming();
        assert!(matches!(
            Row::from_line(line, &[], &naming),
            Err(Error::Datetime(_))
        ));
    }

    #[test]
    fn hosts_by_the_public_suffix_list() {
        let h = Host::of("myblog.blogspot.com");
        assert_eq!(h.private_suffix.as_deref(), Some("blogspot.com"));
        assert_eq!(h.private_domain.as_deref(), Some("myblog.blogspot.com"));
        assert_eq!(h.registry_suffix.as_deref(), Some("com"));
        assert_eq!(h.registered_domain.as_deref(), Some("blogspot.com"));
        let h = Host::of("news.bbc.co.uk");
        assert_eq!(h.registry_suffix.as_deref(), Some("co.uk"));
        assert_eq!(h.registered_domain.as_deref(), Some("bbc.co.uk"));
        assert_eq!(h.private_domain.as_deref(), Some("bbc.co.uk"));
        let h = Host::of("127.0.0.1");
        assert_eq!(h.parts[0], None);
        assert_eq!(h.reversed, None);
        assert_eq!(h.registered_domain, None);
        let h = Host::of("co.uk");
        assert_eq!(h.registry_suffix.as_deref(), Some("co.uk"));
        assert_eq!(h.registered_domain, None);
        let h = Host::of("host.invalidtld");
        assert_eq!(h.registry_suffix, None);
        assert_eq!(h.parts[1].as_deref(), Some("host"));
    }

    #[test]
    fn urls_split_as_java_does() {
        let u = UrlParts::of("HTTPS://user@host.org");
        assert_eq!((&*u.protocol, &*u.host), ("https", "host.org"));
        assert_eq!((&*u.path, u.query.as_deref()), ("", None));
        let u = UrlParts::of("http://[::1]:81/x?");
        assert_eq!((&*u.host, u.port), ("[::1]", Some(81)));
        assert_eq!(u.query.as_deref(), Some(""));
        let u = UrlParts::of("dns:www.example.com");
        assert_eq!(u.host, "www.example.com");
    }

    #[test]
    fn json_read_in_place_equals_serde_json() {
        let blocks = [
            r#"{"url": "http://a.com/", "status": "200", "length": 12, "offset": 0}"#,
            r#"{"url":"http://a.com/","status":-3,"length":123456789012345678901234}"#,
            r#" { "url" : "x" , "mime" : null , "truncated" : true, "charset": false }  "#,
            r#"{}"#,
            r#"{"url": "caf\u00e9"}"#,
            r#"{"url": "a\"b"}"#,
            r#"{"length": 1.5}"#,
            r#"{"length": 1e3}"#,
            r#"{"length": 012}"#,
            r#"{"length": -}"#,
            r#"{"url": ["a"], "mime": {"x": 1}}"#,
            r#"{"url": "a", "url": "b"}"#,
            r#"{"url": "a", "snapshot": "b"}"#,
            r#"{"url": "a"} x"#,
            r#"{"url": "a",}"#,
            r#"{"url": "a""#,
            "{\"url\": \"a\tb\"}",
            r#"[1]"#,
        ];
        for block in blocks {
            let mut fast = Members::new();
            let mut slow = Members::new();
            let slow_ok = serde_members(block.as_bytes(), &mut slow).is_ok();
            if scan_object(block, &mut fast).is_some() && plain(&fast) {
                assert!(slow_ok, "{block}: read in place, refused by serde_json");
                assert_eq!(fast, slow, "{block}");
            }
        }
        // The plain ones are read in place.
        let mut m = Members::new();
        assert!(scan_object(blocks[0], &mut m).is_some() && plain(&m));
        let slots = Slots::of(&m);
        assert_eq!(slots.text(m::STATUS).as_deref(), Some("200"));
        assert_eq!(slots.number(m::LENGTH), Some(12));
        assert_eq!(slots.text(m::MIME), None);
        assert!(matches!(m[0].0, Cow::Borrowed(_)));
    }

    #[test]
    fn plain_lines_fill_the_slots_as_the_long_way_does() {
        let ukvs = vec!["offset".to_string(), "digest".to_string()];
        let cdx9: Vec<String> = [
            "url", "mime", "status", "digest", "length", "offset", "filename",
        ]
        .map(String::from)
        .to_vec();
        let cases: [(&[u8], &[String], bool); 9] = [
            (
                br#"a)/ 20200101000000 {"url": "http://a/", "status": "200"}"#,
                &[],
                true,
            ),
            (
                br#"a)/ 20200101000000 151 sha1:X {"url": "http://a/", "length": 5}"#,
                &ukvs,
                true,
            ),
            (
                br#"a)/ 20200101000000 - sha1:X {"url": "http://a/"}"#,
                &ukvs,
                true,
            ),
            (
                b"a)/ 20200101000000 http://a/ text/html 200 X 5 151 f.warc.gz",
                &cdx9,
                true,
            ),
            // Named by its count (a legend), a quoted value, a name met
            // twice, a member without a column, an escape: the long way.
            (
                b"a)/ 20200101000000 http://a/ text/html 200 X - - 5 151 f.warc.gz",
                &[],
                false,
            ),
            (
                br#"a)/ 20200101000000 "1\u0035" sha1:X {"url": "u"}"#,
                &ukvs,
                false,
            ),
            (
                br#"a)/ 20200101000000 151 sha1:X {"offset": 3}"#,
                &ukvs,
                false,
            ),
            (
                br#"a)/ 20200101000000 {"url": "u", "snapshot": "s"}"#,
                &[],
                false,
            ),
            (br#"a)/ 20200101000000 {"url": "a\"b"}"#, &[], false),
        ];
        for (line, names, plain) in cases {
            let fast = plain_slots(line, names);
            assert_eq!(fast.is_some(), plain, "{}", String::from_utf8_lossy(line));
            let (members, extra) = members(line, names).unwrap();
            if let Some(fast) = fast {
                assert_eq!(fast.0, Slots::of(&members).0);
                assert_eq!(extra, None);
            }
        }
    }

    #[test]
    fn schema_has_common_crawls_columns_first() {
        let s = schema(true);
        assert_eq!(s.field(0).name(), "url_surtkey");
        assert_eq!(s.field(CC_COLUMNS - 1).name(), "subset");
        assert_eq!(schema(false).fields().len(), s.fields().len() - 2);
    }
}
