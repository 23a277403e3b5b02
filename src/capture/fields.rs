//! cdxj-indexer's index options for the `cdxj` profile: which records
//! (`--records`), which fields (`--fields`, `--replace-fields`,
//! `--digest-records`) and its CDX9 and 11-field CDX lines; for the `ukvs`
//! profile, its records and the fields added to its JSON.
//!
//! ```text
//! Custom::new(records, fields, replace, digests, shape)
//!   └─ Indexer::write_custom_warc / write_custom_arc
//!      (ukvs: ukvs_fields_warc / ukvs_fields_arc after its own line)
//!        ├─ View: the record as warcio shows it (type, header fields,
//!        │        HTTP head); the paired request and stored digest come
//!        │        from the engine (Indexer::give)
//!        ├─ Indexer::entries: each field's value, in order ──► Entries
//!        └─ write_line: Shape::Json   key datetime {json.dumps of them}
//!                       Shape::Cdx9 / Shape::Cdx11  the CDX columns
//!           append_ukvs: members added to the ukvs line's JSON
//! ```
//!
//! Without options the `cdxj` profile writes its lines on its own faster
//! path ([`super::warc`], [`super::Indexer::write`]); this module is taken
//! only when an option asks for something else, and gives the same bytes
//! for the default fields and, on WARC records, for `--records all` and
//! `--all-records` (tested below on every fixture, and against
//! cdxj-indexer in `tests/it/cdxj_options.rs`).
//! A field's value follows cdxj-indexer 1.5.0's `get_field`: field names
//! are WARC header names (any case), `http:NAME` for a field of the HTTP
//! head, `req.http:NAME` for one of the request paired with a response,
//! and the specials `mime`, `offset`, `length`, `filename`,
//! `warc-payload-digest`, `http:status`, `record-digest`; the short names
//! `url`, `status`, `digest`, `method`, `referrer`, `recordDigest` stand for
//! their long forms and are what the JSON calls them. FORMATS.md 2.2 states
//! the rules and where we differ.

use std::borrow::Cow;
use std::sync::Arc;

use super::json::{self, Escape};
use super::{http, Indexer, Outcome};
use crate::arc::rev3::Role;

/// The record types cdxj-indexer indexes by default, in its order (a
/// `--records` list equal to it is the default, warc-fields rule included).
const DEFAULT_RECORDS: [&str; 4] = ["response", "revisit", "resource", "metadata"];

/// The fields cdxj-indexer writes by default, in its order.
const DEFAULT_FIELDS: [&str; 7] = [
    "warc-target-uri",
    "mime",
    "http:status",
    "warc-payload-digest",
    "length",
    "offset",
    "filename",
];

/// cdxj-indexer's short names: (field, name in the JSON).
const SHORT_NAMES: [(&str, &str); 6] = [
    ("warc-target-uri", "url"),
    ("http:status", "status"),
    ("warc-payload-digest", "digest"),
    ("req.http:referer", "referrer"),
    ("req.http:method", "method"),
    ("record-digest", "recordDigest"),
];

/// Which records make lines (`--records`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Records {
    /// cdxj-indexer's default: response, revisit, resource and metadata,
    /// but resource and metadata records of type `application/warc-fields`.
    #[default]
    Default,
    /// Every record (`all`).
    All,
    /// The records whose `WARC-Type` is one of these, as written.
    Only(Vec<Vec<u8>>),
}

impl Records {
    /// Reads a `--records` value as cdxj-indexer does: `all`, or a comma
    /// list of WARC types (the default list itself means the default).
    pub fn parse(s: &str) -> Records {
        if s == "all" {
            return Records::All;
        }
        if s.is_empty() || s.split(',').eq(DEFAULT_RECORDS) {
            return Records::Default;
        }
        Records::Only(s.split(',').map(|t| t.as_bytes().to_vec()).collect())
    }

    /// Whether a record of type `rec_type` with WARC `Content-Type`
    /// `content_type` makes a line.
    pub fn takes(&self, rec_type: &[u8], content_type: Option<&[u8]>) -> bool {
        match self {
            Records::All => true,
            Records::Only(types) => types.iter().any(|t| t == rec_type),
            Records::Default => match rec_type {
                b"response" | b"revisit" => true,
                b"resource" | b"metadata" => content_type != Some(b"application/warc-fields"),
                _ => false,
            },
        }
    }
}

/// The line cdxj-indexer writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shape {
    /// `key datetime {json}` (its default).
    #[default]
    Json,
    /// ` CDX N b a m s k r V g` (its `-9`).
    Cdx9,
    /// ` CDX N b a m s k r M S V g` (its `-11`; `r` and `M` always `-`).
    Cdx11,
}

impl Shape {
    /// The header line of the shape's files.
    pub fn header(self) -> Option<&'static [u8]> {
        match self {
            Shape::Json => None,
            Shape::Cdx9 => Some(b" CDX N b a m s k r V g"),
            Shape::Cdx11 => Some(b" CDX N b a m s k r M S V g"),
        }
    }
}

/// One field of a line: what cdxj-indexer's `get_field` is asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Field {
    Url,
    Mime,
    Status,
    Digest,
    Length,
    Offset,
    Filename,
    RecordDigest,
    /// `req.http:method`.
    RequestMethod,
    /// `req.http:NAME`: a field of the paired request's HTTP head.
    Request(Vec<u8>),
    /// `http:NAME`: a field of the record's HTTP head.
    Http(Vec<u8>),
    /// Any other name: a field of the record's WARC header.
    Warc(String),
}

impl Field {
    /// One of cdxj-indexer's default fields.
    fn is_default(&self) -> bool {
        matches!(
            self,
            Field::Url
                | Field::Mime
                | Field::Status
                | Field::Digest
                | Field::Length
                | Field::Offset
                | Field::Filename
        )
    }

    fn of(name: &str) -> Field {
        match name {
            "warc-target-uri" => Field::Url,
            "mime" => Field::Mime,
            "http:status" => Field::Status,
            "warc-payload-digest" => Field::Digest,
            "length" => Field::Length,
            "offset" => Field::Offset,
            "filename" => Field::Filename,
            "record-digest" => Field::RecordDigest,
            "req.http:method" => Field::RequestMethod,
            _ => {
                if let Some(h) = name.strip_prefix("req.http:") {
                    Field::Request(h.as_bytes().to_vec())
                } else if let Some(h) = name.strip_prefix("http:") {
                    Field::Http(h.as_bytes().to_vec())
                } else {
                    Field::Warc(name.to_string())
                }
            }
        }
    }
}

/// What the `cdxj` profile writes when an option changes its lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Custom {
    pub records: Records,
    pub shape: Shape,
    /// (field, name in the JSON), in cdxj-indexer's order.
    fields: Vec<(Field, String)>,
    /// A field reads the request paired with a response.
    needs_request: bool,
    /// A field is the stored record's SHA-256.
    needs_record_digest: bool,
}

impl Custom {
    /// The options as cdxj-indexer combines them: `fields` adds to its
    /// default fields, `replace` (which wins) replaces them, `digests`
    /// adds `record-digest` after the default fields. `None` when they ask
    /// for cdxj-indexer's default lines.
    pub fn new(
        records: Records,
        fields: Option<&str>,
        replace: Option<&str>,
        digests: bool,
        shape: Shape,
    ) -> Option<Custom> {
        let added = replace.or(fields).filter(|s| !s.is_empty());
        if records == Records::Default && added.is_none() && !digests && shape == Shape::Json {
            return None;
        }
        let mut names: Vec<String> = match replace.filter(|s| !s.is_empty()) {
            Some(_) => Vec::new(),
            None => DEFAULT_FIELDS.iter().map(|s| s.to_string()).collect(),
        };
        if digests && !names.iter().any(|n| n == "record-digest") {
            names.push("record-digest".into());
        }
        for name in added.into_iter().flat_map(|s| s.split(',')) {
            let long = SHORT_NAMES
                .iter()
                .find(|(_, short)| *short == name)
                .map_or(name, |(long, _)| long);
            names.push(long.to_string());
        }
        let fields: Vec<(Field, String)> = names
            .iter()
            .map(|n| {
                let json = SHORT_NAMES
                    .iter()
                    .find(|(long, _)| long == n)
                    .map_or(n.as_str(), |(_, short)| short);
                (Field::of(n), json.to_string())
            })
            .collect();
        let needs_request = fields
            .iter()
            .any(|(f, _)| matches!(f, Field::Request(_) | Field::RequestMethod));
        let needs_record_digest = fields.iter().any(|(f, _)| *f == Field::RecordDigest);
        Some(Custom {
            records,
            shape,
            fields,
            needs_request,
            needs_record_digest,
        })
    }

    /// Whether a response's line needs the request record paired with it
    /// (a `req.http:` field).
    pub fn needs_request(&self) -> bool {
        self.needs_request
    }

    /// Whether lines need the SHA-256 of each stored record
    /// ([`record_digest`]).
    pub fn needs_record_digest(&self) -> bool {
        self.needs_record_digest
    }

    /// Whether a field needs the payload digest (its computing can be
    /// skipped otherwise).
    fn needs_digest(&self) -> bool {
        self.shape != Shape::Json || self.fields.iter().any(|(f, _)| *f == Field::Digest)
    }
}

/// `sha256:` and the hex SHA-256 of a stored record's bytes (what
/// cdxj-indexer's `--digest-records` writes as `recordDigest`).
pub fn record_digest(stored: &[u8]) -> String {
    let mut h = RecordHasher::default();
    h.update(stored);
    h.finish()
}

/// [`record_digest`] of bytes given in pieces (`io::Write`).
#[derive(Default)]
pub struct RecordHasher(sha2::Sha256);

impl RecordHasher {
    pub fn update(&mut self, bytes: &[u8]) {
        sha2::Digest::update(&mut self.0, bytes);
    }

    pub fn finish(self) -> String {
        let hash = sha2::Digest::finalize(self.0);
        format!("sha256:{}", data_encoding::HEXLOWER.encode(&hash))
    }
}

impl std::io::Write for RecordHasher {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The HTTP head of a request record, for the `req.http:` fields of the
/// response it is paired with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The method (warcio's `protocol` of a request).
    method: Vec<u8>,
    /// The head's bytes, searched for fields when asked.
    head: Vec<u8>,
}

impl Request {
    /// The request head of a `request` record with an HTTP head, as warcio
    /// reads one.
    pub fn of(rec: &crate::warc::Record) -> Option<Request> {
        if rec.header("WARC-Type") != Some(b"request") {
            return None;
        }
        let block = rec.block();
        let head = request_head(rec)?;
        Some(Request {
            method: head.protocol.to_vec(),
            head: block[..head.payload_start.min(block.len())].to_vec(),
        })
    }

    fn field(&self, name: &[u8]) -> Option<Cow<'_, [u8]>> {
        http::field(&self.head, name)
    }
}

/// The HTTP head warcio reads in a request record.
fn request_head(rec: &crate::warc::Record) -> Option<http::Head<'_>> {
    let uri = super::warc::target_uri(rec);
    super::warc::cdxj_head(rec, crate::warc::RecordType::Request, uri.as_deref())
}

/// Whether two adjacent WARC records are a request and its response as
/// cdxj-indexer pairs them (either first; the same `WARC-Target-URI` as
/// warcio reads it, the second `WARC-Concurrent-To` the first): the
/// request record.
pub fn exchange<'r>(
    first: &'r crate::warc::Record,
    second: &'r crate::warc::Record,
) -> Option<&'r crate::warc::Record> {
    use super::warc::target_uri;
    if target_uri(first) != target_uri(second)
        || second.header("WARC-Concurrent-To") != first.header("WARC-Record-ID")
    {
        return None;
    }
    match (first.header("WARC-Type")?, second.header("WARC-Type")?) {
        (b"response", b"request") => Some(second),
        (b"request", b"response") => Some(first),
        _ => None,
    }
}

/// What the engine hands the indexer with a record.
#[derive(Clone, Debug, Default)]
pub(super) struct Given {
    /// The request paired with this response.
    request: Option<Arc<Request>>,
    /// The stored record's [`record_digest`].
    record_digest: Option<String>,
}

/// A value in a line.
enum Value<'a> {
    Text(Cow<'a, [u8]>),
    Null,
}

/// The fields of one line, in order, each name once (a name set twice
/// keeps its first place, as in a Python dict).
#[derive(Default)]
struct Entries<'a>(Vec<(Cow<'a, str>, Value<'a>)>);

impl<'a> Entries<'a> {
    fn set(&mut self, name: Cow<'a, str>, value: Value<'a>) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(e) => e.1 = value,
            None => self.0.push((name, value)),
        }
    }

    fn get(&self, name: &str) -> Option<&[u8]> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| match v {
                Value::Text(t) => Some(&t[..]),
                Value::Null => None,
            })
    }
}

/// A record as warcio shows it to cdxj-indexer (ARC records converted
/// to WARC headers, as its `arc2warc` does).
struct View<'a> {
    /// `WARC-Type`.
    rec_type: &'a [u8],
    /// A WARC header field by name (any case).
    header: &'a dyn Fn(&str) -> Option<Cow<'a, [u8]>>,
    block: &'a [u8],
    /// The HTTP head warcio reads, when it reads one.
    head: Option<&'a http::Head<'a>>,
    /// The media type cdxj-indexer gives (its `mime`).
    mime: Option<Cow<'a, [u8]>>,
    /// The payload digest as written or computed.
    digest: Option<Cow<'a, [u8]>>,
    offset: u64,
    length: u64,
}

impl Indexer {
    /// The records and fields of the `cdxj` profile, when options change
    /// them.
    pub(super) fn custom(&self) -> Option<&Custom> {
        self.opts.cdxj.as_deref()
    }

    /// Whether the `cdxj` profile (and the `ukvs` profile, which takes the
    /// same WARC records) makes a line of this WARC record.
    pub(super) fn takes_warc(&self, rec: &crate::warc::Record) -> bool {
        let t = rec.header("WARC-Type").unwrap_or_default();
        match self.custom() {
            Some(c) if c.records != Records::Default => {
                c.records.takes(t, rec.header("Content-Type"))
            }
            _ => self.opts.all_records || Records::Default.takes(t, rec.header("Content-Type")),
        }
    }

    /// Whether the `cdxj` profile makes a line of this ARC record: warcio
    /// gives the filedesc the type `warcinfo`, every other record
    /// `response`.
    pub(super) fn takes_arc(&self, rec: &crate::arc::Record, role: Role) -> bool {
        let records = self.custom().map_or(&Records::Default, |c| &c.records);
        if super::is_filedesc(rec) {
            return records.takes(b"warcinfo", Some(&rec.header.mime));
        }
        (role.is_capture() || self.opts.all_records || *records == Records::All)
            && records.takes(b"response", Some(b"application/http;msgtype=response"))
    }

    /// Sets what the engine knows of the next record beyond its bytes:
    /// the request paired with it (for `req.http:` fields) and the SHA-256
    /// of its stored bytes (for `record-digest`).
    pub fn give(&mut self, request: Option<Arc<Request>>, record_digest: Option<String>) {
        self.given = Given {
            request,
            record_digest,
        };
    }

    /// The `cdxj` line of a WARC record with custom options.
    pub(super) fn write_custom_warc(
        &mut self,
        rec: &crate::warc::Record,
        hashed: Option<[u8; 20]>,
        out: &mut Vec<u8>,
    ) -> Outcome {
        if !self.takes_warc(rec) {
            self.given = Given::default();
            return Outcome::Filtered;
        }
        self.custom_warc(rec, hashed, None, out)
    }

    /// `ukvs` profile: adds the fields asked for to the line of a WARC
    /// record that `out[start..]` holds (what the line has already is not
    /// written again).
    pub(super) fn ukvs_fields_warc(
        &mut self,
        rec: &crate::warc::Record,
        hashed: Option<[u8; 20]>,
        start: usize,
        out: &mut Vec<u8>,
    ) {
        if self.custom().is_some() {
            self.custom_warc(rec, hashed, Some(start), out);
        }
    }

    /// A line of custom fields for a WARC record, or (`ukvs_start`) the
    /// fields added to the `ukvs` line there.
    fn custom_warc(
        &mut self,
        rec: &crate::warc::Record,
        hashed: Option<[u8; 20]>,
        ukvs_start: Option<usize>,
        out: &mut Vec<u8>,
    ) -> Outcome {
        let given = std::mem::take(&mut self.given);
        let Some(custom) = self.opts.cdxj.clone() else {
            return Outcome::Filtered;
        };
        let t = rec.record_type();
        let rec_type = rec.header("WARC-Type").unwrap_or_default();
        let uri = super::warc::target_uri(rec);
        let head = super::warc::cdxj_head(rec, t, uri.as_deref());
        let post = self.post.take();
        let keyed = post
            .as_ref()
            .map(|p| Cow::Borrowed(&p.key_url[..]))
            .or_else(|| uri.clone());
        let (key, key_error) = match ukvs_start {
            // The `ukvs` line has its key.
            Some(_) => (Vec::new(), None),
            None => self.cdxj_line_key(keyed.as_deref()),
        };
        if ukvs_start.is_none() {
            self.key_error = key_error;
        }
        let mime: Option<Cow<[u8]>> = match rec_type {
            b"revisit" => Some(Cow::Borrowed(b"warc/revisit")),
            b"response" | b"request" => head.as_ref().and_then(http::Head::mime_cow),
            _ => rec
                .header("Content-Type")
                .map(|v| Cow::Borrowed(super::warc::media_type(v))),
        };
        let digest: Option<Cow<[u8]>> = match rec.header("WARC-Payload-Digest") {
            Some(d) => Some(Cow::Borrowed(d)),
            None if matches!(rec_type, b"warcinfo" | b"revisit") => None,
            None if !custom.needs_digest() || ukvs_start.is_some() => None,
            None => {
                let mut s = b"sha1:".to_vec();
                s.extend_from_slice(
                    data_encoding::BASE32
                        .encode(&self.computed(rec, hashed))
                        .as_bytes(),
                );
                Some(Cow::Owned(s))
            }
        };
        // warcio has the target as it reads it (`<...>` removed, spaces
        // `%20`), every other field as written.
        let header = |name: &str| match name.eq_ignore_ascii_case("WARC-Target-URI") {
            true => uri.clone(),
            false => rec.header(name).map(Cow::Borrowed),
        };
        let own_request;
        let request = match rec_type {
            b"request" => {
                own_request = Request::of(rec);
                own_request.as_ref()
            }
            _ => given.request.as_deref(),
        };
        let view = View {
            rec_type,
            header: &header,
            block: rec.block(),
            head: head.as_ref(),
            mime,
            digest,
            // warcio counts empty gzip members before a record as its own.
            offset: rec.offset - rec.empty_lead,
            length: rec.length + rec.empty_lead,
        };
        let ukvs = ukvs_start.is_some();
        let mut entries = self.entries(&custom, &view, request, given.record_digest, ukvs);
        if let Some(start) = ukvs_start {
            append_ukvs(&entries, start, out);
            return Outcome::Indexed;
        }
        if let Some(p) = post.as_ref().filter(|_| rec_type == b"response") {
            let body = match &p.body {
                Some(b) => Value::Text(Cow::Borrowed(b.as_bytes())),
                None => Value::Null,
            };
            entries.set(Cow::Borrowed("requestBody"), body);
            entries.set(
                Cow::Borrowed("method"),
                Value::Text(Cow::Borrowed(p.method.as_bytes())),
            );
        }
        let datetime = rec.header("WARC-Date").and_then(super::warc::timestamp);
        write_line(custom.shape, &key, datetime, &entries, out);
        Outcome::Indexed
    }

    /// The `cdxj` line of an ARC record with custom options (warcio's
    /// `arc2warc` reading: the header line becomes WARC header fields).
    pub(super) fn write_custom_arc(
        &mut self,
        rec: &crate::arc::Record,
        role: Role,
        hashed: Option<[u8; 20]>,
        out: &mut Vec<u8>,
    ) -> Outcome {
        if !self.takes_arc(rec, role) {
            self.given = Given::default();
            return Outcome::Filtered;
        }
        self.custom_arc(rec, role, hashed, None, out)
    }

    /// `ukvs` profile: whether an ARC record makes a line: as `--records`
    /// says when given, as for `cdxj` (the filedesc is `warcinfo`, every
    /// other record `response`); else every record but the filedesc, which
    /// `--all-records` adds.
    pub(super) fn ukvs_takes_arc(&self, rec: &crate::arc::Record) -> bool {
        let filedesc = super::is_filedesc(rec);
        match self.custom() {
            Some(c) if c.records != Records::Default => c
                .records
                .takes(if filedesc { b"warcinfo" } else { b"response" }, None),
            _ => !filedesc || self.opts.all_records,
        }
    }

    /// `ukvs` profile: adds the fields asked for to the line of an ARC
    /// record that `out[start..]` holds.
    pub(super) fn ukvs_fields_arc(
        &mut self,
        rec: &crate::arc::Record,
        role: Role,
        hashed: Option<[u8; 20]>,
        start: usize,
        out: &mut Vec<u8>,
    ) {
        if self.custom().is_some() {
            self.custom_arc(rec, role, hashed, Some(start), out);
        }
    }

    /// A line of custom fields for an ARC record, or (`ukvs_start`) the
    /// fields added to the `ukvs` line there.
    fn custom_arc(
        &mut self,
        rec: &crate::arc::Record,
        role: Role,
        hashed: Option<[u8; 20]>,
        ukvs_start: Option<usize>,
        out: &mut Vec<u8>,
    ) -> Outcome {
        let given = std::mem::take(&mut self.given);
        let Some(custom) = self.opts.cdxj.clone() else {
            return Outcome::Filtered;
        };
        let h = &rec.header;
        let filedesc = super::is_filedesc(rec);
        let line = if rec.header_line.is_empty() {
            &h.url
        } else {
            &rec.header_line
        };
        let line_utf8 = std::str::from_utf8(line).is_ok();
        let mut url: Vec<u8> = match super::described_url(&h.url) {
            [b'<', inner @ .., b'>'] => inner.to_vec(),
            u => u.to_vec(),
        };
        if url.contains(&b' ') {
            url = url
                .iter()
                .flat_map(|&b| match b {
                    b' ' => b"%20".to_vec(),
                    b => vec![b],
                })
                .collect();
        }
        let (key, key_error) = if ukvs_start.is_some() {
            // The `ukvs` line has its key.
            (Vec::new(), None)
        } else if filedesc {
            (b"-".to_vec(), None)
        } else {
            super::cdxj_key(&url, line_utf8, &self.opts.surt)
        };
        if ukvs_start.is_none() {
            self.key_error = key_error;
        }
        let head = if !filedesc && super::cdxj_parses_http(h) {
            http::Head::parse(rec.block()).filter(http::Head::is_present)
        } else {
            None
        };
        let datetime = super::record_datetime(rec);
        let rec_type: &[u8] = if filedesc { b"warcinfo" } else { b"response" };
        let mime: Option<Cow<[u8]>> = if filedesc {
            Some(Cow::Borrowed(super::warc::media_type(&h.mime)))
        } else if role == Role::Revisit && head.is_some() {
            // A revision-3.0 revisit (FORMATS 3.7), as the profile's own
            // lines type it.
            Some(Cow::Borrowed(b"warc/revisit"))
        } else {
            head.as_ref().and_then(http::Head::mime_cow)
        };
        let digest = if filedesc || !custom.needs_digest() || ukvs_start.is_some() {
            None
        } else {
            let mut b32 = [0; 32];
            let d = match super::declared_sha1(&h.checksum) {
                Some(d) => super::Digest::Declared(d),
                None => super::Digest::Sha1(hashed.unwrap_or_else(|| {
                    let start = super::payload_start(rec.block(), head.as_ref());
                    super::sha1(&rec.block()[start..])
                })),
            };
            let mut s = b"sha1:".to_vec();
            s.extend_from_slice(d.base32(&mut b32));
            Some(Cow::Owned(s))
        };
        let iso = datetime.map(|d| {
            let d = String::from_utf8_lossy(&d).into_owned();
            format!(
                "{}-{}-{}T{}:{}:{}Z",
                &d[..4],
                &d[4..6],
                &d[6..8],
                &d[8..10],
                &d[10..12],
                &d[12..14]
            )
        });
        let header = |name: &str| -> Option<Cow<[u8]>> {
            let v: &[u8] = match name.to_ascii_lowercase().as_str() {
                "warc-type" => rec_type,
                "warc-target-uri" if !filedesc => &url,
                "warc-filename" if filedesc => h.url.get(11..).unwrap_or_default(),
                "warc-ip-address" => &h.ip,
                "warc-date" => return iso.as_ref().map(|s| Cow::Owned(s.as_bytes().to_vec())),
                "content-type" if filedesc => &h.mime,
                "content-type" => b"application/http;msgtype=response",
                "content-length" => &h.length_raw,
                _ => return None,
            };
            Some(Cow::Borrowed(v))
        };
        let view = View {
            rec_type,
            header: &header,
            block: rec.block(),
            head: head.as_ref(),
            mime,
            digest,
            offset: rec.offset,
            length: rec.length,
        };
        let entries = self.entries(
            &custom,
            &view,
            None,
            given.record_digest,
            ukvs_start.is_some(),
        );
        match ukvs_start {
            Some(start) => append_ukvs(&entries, start, out),
            None => write_line(custom.shape, &key, datetime, &entries, out),
        }
        Outcome::Indexed
    }

    /// The fields of a line, as cdxj-indexer's `get_field` gives them
    /// (without the default ones when `added`: the `ukvs` line has its
    /// own).
    fn entries<'a>(
        &'a self,
        custom: &'a Custom,
        v: &View<'a>,
        request: Option<&'a Request>,
        record_digest: Option<String>,
        added: bool,
    ) -> Entries<'a> {
        let mut entries = Entries::default();
        let number = |n: u64| Some(Cow::Owned(n.to_string().into_bytes()));
        for (field, name) in &custom.fields {
            if added && field.is_default() {
                continue;
            }
            let value: Option<Cow<[u8]>> = match field {
                Field::Url => (v.header)("WARC-Target-URI"),
                Field::Mime => v.mime.clone(),
                Field::Status => match v.rec_type {
                    b"response" | b"revisit" => v.head.map(|h| Cow::Borrowed(h.status)),
                    _ => None,
                },
                Field::Digest => v.digest.clone(),
                Field::Length => number(v.length),
                Field::Offset => number(v.offset),
                Field::Filename => Some(Cow::Borrowed(&self.filename[..])),
                Field::RecordDigest => record_digest.clone().map(|s| Cow::Owned(s.into_bytes())),
                Field::RequestMethod => request.map(|r| Cow::Borrowed(&r.method[..])),
                Field::Request(h) => request.and_then(|r| r.field(h)),
                Field::Http(h) => v.head.and_then(|_| http::field(v.block, h)),
                Field::Warc(h) => (v.header)(h),
            };
            if let Some(value) = value {
                entries.set(Cow::Borrowed(name.as_str()), Value::Text(value));
            }
        }
        entries
    }
}

impl super::object::Object<'_> {
    /// Appends the object's line as `opts` ask: with cdxj-indexer's
    /// options, an object of a seed format is a `response` with the
    /// default fields' values and no header fields (`ukvs`: its own line,
    /// when `--records` takes responses); else
    /// [`super::object::Object::write`]'s line. Returns why its URL has no
    /// SURT key when it has none.
    pub fn write_as(
        &self,
        opts: &super::Options,
        filename: &[u8],
        out: &mut Vec<u8>,
    ) -> Option<crate::surt::Error> {
        let custom = match (&opts.cdxj, opts.profile) {
            (Some(c), super::Profile::Cdxj) => c,
            // `ukvs`: the object's line has every field an object has.
            (Some(c), _) if !c.records.takes(b"response", None) => return None,
            _ => return self.write(opts.profile, &opts.surt, filename, out),
        };
        // The key and the default line as the profile writes them.
        let mut line = Vec::new();
        let key_error = self.write(opts.profile, &opts.surt, filename, &mut line);
        if !custom.records.takes(b"response", None) {
            return key_error;
        }
        let key = line.split(|&b| b == b' ').next().unwrap_or_default();
        let url = super::safe_url(self.url);
        let digest = self.digest();
        let status = self.status.map(|s| s.to_string());
        let number = |n: u64| Some(Cow::Owned(n.to_string().into_bytes()));
        let mut entries = Entries::default();
        for (field, name) in &custom.fields {
            let value: Option<Cow<[u8]>> = match field {
                Field::Url => Some(Cow::Borrowed(&url[..])),
                Field::Mime => self.mime.clone(),
                Field::Status => status.as_ref().map(|s| Cow::Borrowed(s.as_bytes())),
                Field::Digest => Some(Cow::Borrowed(digest.as_bytes())),
                Field::Length => number(self.length),
                Field::Offset => number(self.offset),
                Field::Filename => Some(Cow::Borrowed(filename)),
                Field::Warc(h) if h.eq_ignore_ascii_case("warc-type") => {
                    Some(Cow::Borrowed(b"response"))
                }
                _ => None,
            };
            if let Some(value) = value {
                entries.set(Cow::Borrowed(name.as_str()), Value::Text(value));
            }
        }
        write_line(custom.shape, key, self.datetime, &entries, out);
        key_error
    }
}

/// Adds `entries` to the `ukvs` line at `out[start..]` (ending `}\n`) as
/// compact JSON members, but the names the line has already.
fn append_ukvs(entries: &Entries, start: usize, out: &mut Vec<u8>) {
    if entries.0.is_empty() || !out[start..].ends_with(b"}\n") {
        return;
    }
    out.truncate(out.len() - 2);
    for (name, value) in &entries.0 {
        // A name in the line is `{"name":` or `,"name":` (a `"` inside a
        // value is escaped).
        let mut member = Vec::with_capacity(name.len() + 4);
        json::write_str(&mut member, name.as_bytes(), true, Escape::Utf8);
        member.push(b':');
        let line = &out[start..];
        let has = memchr::memmem::find_iter(line, &member)
            .any(|i| i > 0 && matches!(line[i - 1], b'{' | b','));
        if has {
            continue;
        }
        out.push(b',');
        out.extend_from_slice(&member);
        match value {
            Value::Text(t) => json::write_str(out, t, std::str::from_utf8(t).is_ok(), Escape::Utf8),
            Value::Null => out.extend_from_slice(b"null"),
        }
    }
    out.extend_from_slice(b"}\n");
}

/// Appends a line in `shape`.
fn write_line(
    shape: Shape,
    key: &[u8],
    datetime: Option<[u8; 14]>,
    entries: &Entries,
    out: &mut Vec<u8>,
) {
    let datetime: &[u8] = datetime.as_ref().map_or(b"-", |d| &d[..]);
    match shape {
        Shape::Json => {
            out.extend_from_slice(key);
            out.push(b' ');
            out.extend_from_slice(datetime);
            out.extend_from_slice(b" {");
            for (i, (name, value)) in entries.0.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                json::write_str(out, name.as_bytes(), true, Escape::Ascii);
                out.extend_from_slice(b": ");
                match value {
                    Value::Text(t) => {
                        json::write_str(out, t, std::str::from_utf8(t).is_ok(), Escape::Ascii)
                    }
                    Value::Null => out.extend_from_slice(b"null"),
                }
            }
            out.extend_from_slice(b"}\n");
        }
        Shape::Cdx9 | Shape::Cdx11 => {
            // The digest without its algorithm, as cdxj-indexer cuts it.
            let digest = entries
                .get("digest")
                .map(|d| match memchr::memrchr(b':', d) {
                    Some(i) => &d[i + 1..],
                    None => d,
                });
            let mut columns: Vec<Option<&[u8]>> = vec![
                Some(key),
                Some(datetime),
                entries.get("url"),
                entries.get("mime"),
                entries.get("status"),
                digest,
                None,
            ];
            if shape == Shape::Cdx11 {
                columns.extend([None, entries.get("length")]);
            }
            columns.extend([entries.get("offset"), entries.get("filename")]);
            for (i, c) in columns.iter().enumerate() {
                if i > 0 {
                    out.push(b' ');
                }
                match c {
                    // Python writes text read as Latin-1 back as UTF-8.
                    Some(c) if std::str::from_utf8(c).is_err() => json::decode_to_utf8(out, c),
                    Some(c) => out.extend_from_slice(c),
                    None => out.push(b'-'),
                }
            }
            out.push(b'\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_lists_as_cdxj_indexer_reads_them() {
        assert_eq!(Records::parse("all"), Records::All);
        assert_eq!(Records::parse(""), Records::Default);
        assert_eq!(
            Records::parse("response,revisit,resource,metadata"),
            Records::Default
        );
        let r = Records::parse("metadata,response,revisit,resource");
        assert!(r.takes(b"metadata", Some(b"application/warc-fields")));
        assert!(!Records::Default.takes(b"metadata", Some(b"application/warc-fields")));
        assert!(!Records::parse("request").takes(b"response", None));
        assert!(Records::parse("request").takes(b"request", None));
    }

    #[test]
    fn field_names_as_cdxj_indexer_reads_them() {
        let c = Custom::new(
            Records::Default,
            Some("method,referrer,http:date"),
            None,
            false,
            Shape::Json,
        )
        .unwrap();
        let names: Vec<&str> = c.fields.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "url",
                "mime",
                "status",
                "digest",
                "length",
                "offset",
                "filename",
                "method",
                "referrer",
                "http:date"
            ]
        );
        assert!(c.needs_request());
        assert_eq!(c.fields[8].0, Field::Request(b"referer".to_vec()));
        let c = Custom::new(
            Records::All,
            Some("x"),
            Some("warc-type,url"),
            true,
            Shape::Json,
        )
        .unwrap();
        let names: Vec<&str> = c.fields.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, ["recordDigest", "warc-type", "url"]);
        assert!(c.needs_record_digest() && !c.needs_request());
        assert_eq!(
            Custom::new(Records::Default, None, Some(""), false, Shape::Json),
            None
        );
    }

    #[test]
    fn record_digests_are_hex_sha256() {
        assert_eq!(
            record_digest(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    /// Lines of every record of `bytes` (a WARC or ARC file) with `opts`.
    fn lines_of(bytes: &[u8], opts: &super::super::Options) -> Vec<u8> {
        let mut ix = Indexer::new(opts.clone(), b"f.warc");
        let mut out = Vec::new();
        if crate::warc::is_warc(bytes) {
            let mut rdr = crate::warc::Reader::new(bytes);
            let mut rec = crate::warc::Record::default();
            while rdr.read_record(&mut rec).unwrap_or(false) {
                ix.write_warc(&rec, None, &mut out);
            }
        } else {
            let mut rdr = crate::arc::Reader::new(bytes);
            let mut rec = crate::arc::Record::default();
            while rdr.read_record(&mut rec).unwrap_or(false) {
                ix.write(&rec, &mut out);
            }
        }
        out
    }

    /// The general path asked for the default fields gives the bytes of
    /// the profile's own path, on every fixture of the repository.
    #[test]
    fn default_fields_by_name_are_the_default_lines() {
        let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let named = Custom::new(
            Records::Default,
            None,
            Some("url,mime,status,digest,length,offset,filename"),
            false,
            Shape::Json,
        );
        let default = super::super::Options {
            profile: super::super::Profile::Cdxj,
            ..Default::default()
        };
        let general = super::super::Options {
            cdxj: named.map(Arc::new),
            ..default.clone()
        };
        let mut lines = 0;
        for dir in ["warc", "arc"] {
            for e in std::fs::read_dir(data.join(dir)).unwrap() {
                let path = e.unwrap().path();
                let Ok(bytes) = std::fs::read(&path) else {
                    continue;
                };
                let want = lines_of(&bytes, &default);
                assert_eq!(
                    String::from_utf8_lossy(&lines_of(&bytes, &general)),
                    String::from_utf8_lossy(&want),
                    "{}",
                    path.display()
                );
                lines += want.iter().filter(|&&b| b == b'\n').count();
                if dir == "warc" {
                    // `--records all` is `--all-records` on WARC records.
                    let all = super::super::Options {
                        all_records: true,
                        ..default.clone()
                    };
                    let records_all = super::super::Options {
                        cdxj: Custom::new(Records::All, None, None, false, Shape::Json)
                            .map(Arc::new),
                        ..default.clone()
                    };
                    assert_eq!(
                        String::from_utf8_lossy(&lines_of(&bytes, &records_all)),
                        String::from_utf8_lossy(&lines_of(&bytes, &all)),
                        "{} --records all",
                        path.display()
                    );
                }
            }
        }
        assert!(lines > 50, "{lines} lines");
    }

    #[test]
    fn a_name_set_twice_keeps_its_place() {
        let mut e = Entries::default();
        e.set("method".into(), Value::Text(Cow::Borrowed(b"get")));
        e.set("x".into(), Value::Null);
        e.set("method".into(), Value::Text(Cow::Borrowed(b"POST")));
        let mut out = Vec::new();
        write_line(Shape::Json, b"k", None, &e, &mut out);
        assert_eq!(out, b"k - {\"method\": \"POST\", \"x\": null}\n");
    }
}
