//! ARC record -> capture record, and its output profiles (`ukvs`, `cdxj`,
//! `cdx11`).
//!
//! ```text
//! arc::Record ──► Indexer::write(record, &mut line_buffer)
//!                   │  ukvs : Capture::from_record ──► Capture::write_ukvs
//!                   │  cdxj : cdxj-indexer 1.5's rules, byte for byte
//!                   └─ cdx11: CDX-Writer's rules, byte for byte
//! ```
//!
//! * [`Capture`] is the profile-neutral model of one capture (DESIGN 3.2):
//!   SURT key, repaired 14-digit datetime (raw value kept when changed),
//!   offset and length in the stored file, payload digest, URL, media type,
//!   status, redirect.
//! * [`Indexer`] holds what is reused from record to record (compiled
//!   patterns, the file name) and appends one line per indexed record to a
//!   caller's buffer, so the hot path allocates only the SURT key.
//! * [`header_lines`] gives the lines that open an index file.
//!
//! The three profiles read the same record differently on purpose: each
//! reference tool has its own idea of where an HTTP head ends (see
//! [`http`]), which media type to report, and which records to keep. The
//! `ukvs` profile follows the warcio reading (pywb, cdxj-indexer) for the
//! payload, with the ARC header's media type as fallback, and the date
//! repair rule of [`datetime`]. FORMATS.md section 2 states every rule.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::VecDeque;

use data_encoding::BASE32;

use crate::arc::rev3::{Ari, Role};
use crate::arc::{Header, HeaderKind, Record};
use crate::surt;

pub mod datetime;
pub mod fields;
pub mod hash;
pub use crate::http;
pub mod json;
pub mod object;
pub mod post;
pub mod robots;
pub mod warc;

use json::Escape;

/// Output profile of an index (`ukvs index --format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Profile {
    /// UKVS capture index (DESIGN 3.2): `key datetime offset digest {OSLJ}`.
    Ukvs,
    /// CDXJ exactly as cdxj-indexer 1.5 writes it.
    Cdxj,
    /// 11-field CDX (` CDX N b a m s k r M S V g`) exactly as CDX-Writer
    /// writes it.
    Cdx11,
}

impl Profile {
    /// The name used on the command line and in `!meta`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Ukvs => "ukvs",
            Profile::Cdxj => "cdxj",
            Profile::Cdx11 => "cdx11",
        }
    }
}

/// What to index and how.
#[derive(Clone, Debug)]
pub struct Options {
    pub profile: Profile,
    /// Also index the records the profile leaves out by default: the
    /// `filedesc` record (`ukvs`, `cdx11`) and, for `cdx11`, `text/dns`
    /// records and `304 Not Modified` responses, as CDX-Writer's
    /// `--all-records` does; in every profile, the request and metadata
    /// records of ARC revision 3.0 (FORMATS.md 3.7). Among other ARC
    /// records `cdxj` ignores it (cdxj-indexer's default record set
    /// already holds every ARC record but the filedesc). WARC records: see
    /// [`warc`].
    pub all_records: bool,
    /// SURT options of the keys.
    pub surt: surt::Options,
    /// Recompute the payload of every WARC record that states a SHA-1
    /// `WARC-Payload-Digest` and report a mismatch
    /// ([`Indexer::take_digest_error`]).
    pub verify_digests: bool,
    /// cdxj-indexer's records, fields and line shapes for the `cdxj`
    /// profile (records and added fields for `ukvs`), when options change
    /// them ([`fields`]).
    pub cdxj: Option<std::sync::Arc<fields::Custom>>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            profile: Profile::Ukvs,
            all_records: false,
            surt: surt::Options::default(),
            verify_digests: false,
            cdxj: None,
        }
    }
}

/// What [`Indexer::write`] did with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// One line was appended.
    Indexed,
    /// The profile leaves this record out (filedesc, DNS, 304, a negative
    /// declared length, ...); nothing was appended.
    Filtered,
}

/// The first lines of an index file in `profile`; `meta` holds extra JSON
/// objects for `!meta` lines (the `ukvs` profile only), already serialised.
pub fn header_lines(profile: Profile, surt: &surt::Options, extra_meta: &[String]) -> Vec<Vec<u8>> {
    match profile {
        Profile::Cdxj => Vec::new(),
        Profile::Cdx11 => vec![b" CDX N b a m s k r M S V g".to_vec()],
        Profile::Ukvs => {
            let mut meta = serde_json::Map::new();
            meta.insert("type".into(), "CaptureIndex".into());
            meta.insert(
                "generator".into(),
                concat!("ukvs ", env!("CARGO_PKG_VERSION")).into(),
            );
            meta.insert("surt".into(), surt_profile(surt));
            let mut lines = vec![
                br#"!context ["https://oduwsdl.github.io/contexts/ukvs"]"#.to_vec(),
                br#"!fields {"keys":["surt","datetime"],"values":["offset","digest"]}"#.to_vec(),
                format!("!meta {}", serde_json::Value::Object(meta)).into_bytes(),
            ];
            lines.extend(extra_meta.iter().map(|m| format!("!meta {m}").into_bytes()));
            // Header lines are in byte order too, so the whole file is.
            lines.sort();
            lines.dedup();
            lines
        }
    }
}

/// The `surt` member of a `!meta` object: the SURT options keys were made
/// with (read back by [`surt_options_from_meta`]).
pub fn surt_profile(o: &surt::Options) -> serde_json::Value {
    serde_json::json!({
        "reference": "surt 0.3.1",
        "with_scheme": o.with_scheme,
        "trailing_comma": o.trailing_comma,
        "reverse_ipaddr": o.reverse_ipaddr,
        "host_massage": o.host_massage,
    })
}

/// The SURT profile that the `!meta` lines among `headers` (pairs of a
/// source name and a header line) record, `None` when none records one.
/// Sources that record different profiles are refused: their keys do not
/// meet, so neither a lookup key nor a merge can serve both.
pub fn surt_profile_in_headers<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<Option<surt::Options>, String> {
    let mut found: Option<(surt::Options, &str)> = None;
    for (name, h) in headers {
        let Some(body) = h.strip_prefix(b"!meta ") else {
            continue;
        };
        let Ok(meta) = crate::ukvs::parse_json5(body) else {
            continue;
        };
        let opts = match surt_options_from_meta(&meta) {
            Ok(Some(o)) => o,
            Ok(None) => continue,
            Err(e) => return Err(format!("{name}: {e}")),
        };
        match &found {
            Some((o, first)) if *o != opts => {
                return Err(format!(
                    "{first} and {name} record different SURT profiles in !meta ({} and {}): \
                 their keys do not meet; use them separately",
                    o.profile_name(),
                    opts.profile_name()
                ))
            }
            Some(_) => {}
            None => found = Some((opts, name)),
        }
    }
    Ok(found.map(|(o, _)| o))
}

/// The SURT options an index's `!meta` object records under `surt` (as
/// [`header_lines`] writes it): `None` when the object has no `surt`
/// member, an error when a member is not a boolean. Absent members take
/// the reference's defaults.
pub fn surt_options_from_meta(meta: &serde_json::Value) -> Result<Option<surt::Options>, String> {
    let Some(p) = meta.get("surt") else {
        return Ok(None);
    };
    if !p.is_object() {
        return Err(format!("`surt` in !meta is not an object: {p}"));
    }
    let flag = |name: &str, default: bool| match p.get(name) {
        None => Ok(default),
        Some(serde_json::Value::Bool(b)) => Ok(*b),
        Some(v) => Err(format!("`surt.{name}` in !meta is not a boolean: {v}")),
    };
    let d = surt::Options::default();
    Ok(Some(surt::Options {
        with_scheme: flag("with_scheme", d.with_scheme)?,
        trailing_comma: flag("trailing_comma", d.trailing_comma)?,
        reverse_ipaddr: flag("reverse_ipaddr", d.reverse_ipaddr)?,
        host_massage: flag("host_massage", d.host_massage)?,
    }))
}

/// A SHA-1, or the checksum the record declares for itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Digest<'a> {
    /// SHA-1 computed here.
    Sha1([u8; 20]),
    /// Base32 SHA-1 taken from the header line (`urn:sha1:...`).
    Declared(&'a [u8]),
}

impl Digest<'_> {
    /// The base32 text (32 bytes) into `out`; returns the used slice.
    pub fn base32<'o>(&'o self, out: &'o mut [u8; 32]) -> &'o [u8] {
        match self {
            Digest::Sha1(h) => {
                BASE32.encode_mut(h, out);
                &out[..]
            }
            Digest::Declared(d) => d,
        }
    }
}

pub use hash::sha1;

/// A base32 SHA-1 checksum carried by the header line (`urn:sha1:` or
/// `sha1:` prefix, the ARC revision-3 proposal's form).
fn declared_sha1(checksum: &[u8]) -> Option<&[u8]> {
    let lower_starts =
        |p: &[u8]| checksum.len() >= p.len() && checksum[..p.len()].eq_ignore_ascii_case(p);
    let rest = if lower_starts(b"urn:sha1:") {
        &checksum[9..]
    } else if lower_starts(b"sha1:") {
        &checksum[5..]
    } else {
        return None;
    };
    base32_sha1(rest)
}

/// `rest` when it is a SHA-1 in upper-case base32 (32 characters).
fn base32_sha1(rest: &[u8]) -> Option<&[u8]> {
    let is_b32 = rest.len() == 32
        && rest
            .iter()
            .all(|b| b.is_ascii_uppercase() || (b'2'..=b'7').contains(b));
    is_b32.then_some(rest)
}

fn starts_with_ci(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn is_http_url(url: &[u8]) -> bool {
    starts_with_ci(url, b"http:") || starts_with_ci(url, b"https:")
}

fn is_filedesc(rec: &Record) -> bool {
    starts_with_ci(&rec.header.url, b"filedesc:")
}

/// The URL a record is filed under: the one its `ari:` address finally
/// describes (an ari is never a key), else the URL itself (a malformed
/// ari too: [`Indexer::write`] tells about it).
fn described_url(url: &[u8]) -> &[u8] {
    Ari::described_url(url).unwrap_or(url)
}

/// What a revision-3.0 file's checksums cover, by its filedesc metadata
/// (FORMATS.md 3.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Covers {
    /// The payload after the HTTP head of responses, the whole content of
    /// other records (the default).
    Payload,
    /// The whole content of every record.
    Content,
    /// Something this reader cannot recompute: checksums are not verified.
    Unknown,
}

impl Covers {
    /// Reads the `checksum-covers` element of a filedesc block's metadata.
    fn of_filedesc(block: &[u8]) -> Covers {
        let fd = crate::arc::FileDesc::parse(block);
        let Some((_, v)) = fd.metadata.iter().find(|(k, _)| k == "checksum-covers") else {
            return Covers::Payload;
        };
        match v.trim().to_ascii_lowercase().as_str() {
            "payload" => Covers::Payload,
            "content" | "content only" => Covers::Content,
            _ => Covers::Unknown,
        }
    }
}

/// A revisit line held back until the duplicate record that points it at
/// its original is read (or the file ends).
#[derive(Clone, Debug)]
struct HeldRevisit {
    /// Date, serial and URL of the revisit: its ari.
    date: Vec<u8>,
    serial: Vec<u8>,
    url: Vec<u8>,
    /// The line, with its `}\n`.
    line: Vec<u8>,
}

/// How many revisit lines wait for their duplicate record at most; the
/// proposal writes it right after the revisit.
const MAX_HELD_REVISITS: usize = 256;

/// Whether the serial of an ari (maybe with a writer prefix,
/// `C0A8C9A7.1FE`) names the serial field `serial`.
fn same_serial(ari_serial: &[u8], serial: &[u8]) -> bool {
    let own = memchr::memrchr(b'.', ari_serial).map_or(ari_serial, |d| &ari_serial[d + 1..]);
    own.eq_ignore_ascii_case(serial)
}

/// The URL made safe for space-separated lines, as CDX-Writer does: a
/// `<...>` wrapper dropped, CR removed, space, LF, form feed and backspace
/// percent-encoded (`%20`, `%0A`, `%0C`, `%08`).
pub fn safe_url(url: &[u8]) -> Cow<'_, [u8]> {
    let url = match url {
        [b'<', inner @ .., b'>'] => inner,
        _ => url,
    };
    if !url
        .iter()
        .any(|&b| matches!(b, b'\r' | b' ' | b'\n' | 0x0c | 0x08))
    {
        return Cow::Borrowed(url);
    }
    let mut out = Vec::with_capacity(url.len() + 16);
    for &b in url {
        match b {
            b'\r' => {}
            b' ' | b'\n' | 0x0c | 0x08 => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
            }
            _ => out.push(b),
        }
    }
    Cow::Owned(out)
}

/// Where the payload of a block whose HTTP head was read as `head` starts:
/// after the head, or at 0 when there is none.
fn payload_start(block: &[u8], head: Option<&http::Head>) -> usize {
    head.map_or(0, |hd| hd.payload_start.min(block.len()))
}

/// Whether cdxj-indexer reads an HTTP head in the block: records with a
/// non-zero declared length and an `http:`/`https:` URL (a `<...>`
/// wrapper dropped).
fn cdxj_parses_http(h: &Header) -> bool {
    let url = match &h.url[..] {
        [b'<', inner @ .., b'>'] => inner,
        u => u,
    };
    h.length.unwrap_or(0) != 0 && (url.starts_with(b"http:") || url.starts_with(b"https:"))
}

/// Where the bytes CDX-Writer digests start (they run to the end of the
/// block): after the version and field-name lines of a filedesc block,
/// after the head of a block that starts with `HTTP`, else at 0.
fn cdx11_digest_start(rec: &Record) -> usize {
    let block = rec.block();
    if is_filedesc(rec) {
        let mut start = 0;
        for _ in 0..2 {
            start = memchr::memchr(b'\n', &block[start..]).map_or(block.len(), |i| start + i + 1);
        }
        start
    } else if block.starts_with(b"HTTP") {
        http::cdx_writer_payload_start(block).min(block.len())
    } else {
        0
    }
}

/// The record's date as a 14-digit datetime; when the date field cannot
/// be repaired but the IP field holds 14 digits, the two were swapped by
/// the writer and the IP field's value is used.
fn record_datetime(rec: &Record) -> Option<[u8; 14]> {
    datetime::repair(&rec.header.date).or_else(|| {
        let ip = &rec.header.ip;
        (ip.len() == 14 && ip.iter().all(u8::is_ascii_digit))
            .then(|| datetime::repair(ip))
            .flatten()
    })
}

/// A declared length that is a negative number (`-1`, `-2046788874`).
fn declares_negative_length(rec: &Record) -> bool {
    match rec.header.length_raw.trim_ascii().split_first() {
        Some((b'-', digits)) => !digits.is_empty() && digits.iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

/// One capture, profile-neutral (the `ukvs` profile's reading).
#[derive(Clone, Debug)]
pub struct Capture<'a> {
    /// SURT key (the URL itself when it cannot be canonicalised).
    pub key: Vec<u8>,
    /// 14-digit datetime, `None` when the ARC date cannot be repaired.
    pub datetime: Option<[u8; 14]>,
    /// The ARC date as written.
    pub datetime_raw: &'a [u8],
    pub offset: u64,
    pub length: u64,
    pub digest: Digest<'a>,
    /// The URL, made safe for space-separated lines ([`safe_url`]).
    pub url: Cow<'a, [u8]>,
    /// Media type: HTTP Content-Type, else the ARC header's.
    pub mime: Option<Cow<'a, [u8]>>,
    /// HTTP status when the record holds an HTTP response with a 3-digit
    /// status.
    pub status: Option<u16>,
    /// HTTP `Location`.
    pub redirect: Option<Cow<'a, [u8]>>,
    pub ip: &'a [u8],
    /// The URL scheme of records that do not hold an HTTP response (`dns`,
    /// `ftp`, `filedesc`, ...).
    pub record_type: Option<Cow<'a, [u8]>>,
    /// Why the URL could not be canonicalised, when `key` is the URL.
    pub key_error: Option<surt::Error>,
    /// More OSLJ fields, written last in this order (a WARC revisit's
    /// `refers_to_*`, `profile`; `truncated`).
    pub extra: Vec<(&'static str, Cow<'a, [u8]>)>,
}

impl<'a> Capture<'a> {
    /// Reads one record the `ukvs` profile's way.
    pub fn from_record(rec: &'a Record, surt_opts: &surt::Options) -> Capture<'a> {
        let role = Role::of(&rec.header.url, &rec.header.mime);
        Capture::from_hashed(rec, role, surt_opts, None)
    }

    /// As [`Capture::from_record`], with the SHA-1 of the record's
    /// the bytes [`Indexer::digest_start`] names when the caller has it already.
    fn from_hashed(
        rec: &'a Record,
        role: Role,
        surt_opts: &surt::Options,
        hashed: Option<[u8; 20]>,
    ) -> Capture<'a> {
        let h = &rec.header;
        let url = safe_url(described_url(&h.url));
        let http = is_http_url(&url);
        // Requests, metadata and transformed copies hold no HTTP response.
        let head = if http && matches!(role, Role::Content | Role::Revisit) {
            http::Head::parse(rec.block())
        } else {
            None
        };
        let digest = match declared_sha1(&h.checksum) {
            Some(d) => Digest::Declared(d),
            None => Digest::Sha1(hashed.unwrap_or_else(|| {
                sha1(&rec.block()[payload_start(rec.block(), head.as_ref())..])
            })),
        };
        let (mut key, key_error) = surt::key(&url, surt_opts);
        if needs_key_escape(&key) {
            key = escape_key(&key);
        }
        let mime = if role == Role::Revisit {
            Some(Cow::Borrowed(&b"warc/revisit"[..]))
        } else {
            head.as_ref()
                .and_then(http::Head::mime_cow)
                .filter(|m| !m.is_empty())
                .or_else(|| arc_mime(&h.mime).map(Cow::Borrowed))
        };
        let record_type = if let Some(t) = role.record_type() {
            Some(Cow::Borrowed(t))
        } else if http && head.is_some() {
            None
        } else {
            let scheme_end = memchr::memchr(b':', &url).unwrap_or(0);
            let scheme = &url[..scheme_end];
            Some(if scheme.is_empty() {
                Cow::Borrowed(&b"unknown"[..])
            } else {
                Cow::Owned(scheme.to_ascii_lowercase())
            })
        };
        let mut extra: Vec<(&'static str, Cow<'a, [u8]>)> = Vec::new();
        if h.kind == HeaderKind::Rev3 && !h.offset_field.is_empty() {
            extra.push(("serial", Cow::Borrowed(&h.offset_field)));
        }
        if crate::arc::rev3::is_ari(&h.url) {
            let name = if role == Role::Transform {
                "replaces"
            } else {
                "describes"
            };
            extra.push((name, Cow::Borrowed(&h.url)));
        }
        Capture {
            key,
            datetime: record_datetime(rec),
            datetime_raw: &h.date,
            offset: rec.offset,
            length: rec.length,
            digest,
            mime,
            status: head.as_ref().and_then(http::Head::status_code),
            redirect: head.and_then(|hd| hd.location),
            ip: &h.ip,
            record_type,
            url,
            key_error,
            extra,
        }
    }

    /// Appends the `ukvs` line (with its `\n`).
    pub fn write_ukvs(&self, filename: &[u8], out: &mut Vec<u8>) {
        if self.key.is_empty() {
            out.push(b'-');
        } else {
            out.extend_from_slice(&self.key);
        }
        out.push(b' ');
        match &self.datetime {
            Some(d) => out.extend_from_slice(d),
            None => out.push(b'-'),
        }
        out.push(b' ');
        out.extend_from_slice(itoa::Buffer::new().format(self.offset).as_bytes());
        out.extend_from_slice(b" sha1:");
        let mut b32 = [0; 32];
        out.extend_from_slice(self.digest.base32(&mut b32));
        out.extend_from_slice(b" {\"url\":");
        json::write_str(out, &self.url, true, Escape::Utf8);
        if let Some(m) = &self.mime {
            out.extend_from_slice(b",\"mime\":");
            json::write_str(out, m, true, Escape::Utf8);
        }
        if let Some(s) = self.status {
            out.extend_from_slice(b",\"status\":");
            out.extend_from_slice(itoa::Buffer::new().format(s).as_bytes());
        }
        out.extend_from_slice(b",\"length\":");
        out.extend_from_slice(itoa::Buffer::new().format(self.length).as_bytes());
        out.extend_from_slice(b",\"filename\":");
        json::write_str(out, filename, true, Escape::Utf8);
        if let Some(r) = &self.redirect {
            out.extend_from_slice(b",\"redirect\":");
            json::write_str(out, r, true, Escape::Utf8);
        }
        if !self.ip.is_empty() && self.ip != b"-" {
            out.extend_from_slice(b",\"ip\":");
            json::write_str(out, self.ip, true, Escape::Utf8);
        }
        if let Some(t) = &self.record_type {
            out.extend_from_slice(b",\"record_type\":");
            json::write_str(out, t, true, Escape::Utf8);
        }
        // A WARC date that was read leaves `datetime_raw` empty.
        let read_warc_date = self.datetime.is_some() && self.datetime_raw.is_empty();
        if !read_warc_date && self.datetime.as_ref().map(|d| &d[..]) != Some(self.datetime_raw) {
            out.extend_from_slice(b",\"datetime_raw\":");
            json::write_str(out, self.datetime_raw, true, Escape::Utf8);
        }
        for (name, value) in &self.extra {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            json::write_str(out, value, true, Escape::Utf8);
        }
        out.extend_from_slice(b"}\n");
    }
}

/// A UKVS key field must not hold blanks, and must not start with `!`
/// (a header) or `"` (a quoted value); such keys only come from URLs that
/// cannot be canonicalised.
fn needs_key_escape(key: &[u8]) -> bool {
    matches!(key.first(), Some(b'!' | b'"')) || key.iter().any(|&b| b <= b' ')
}

/// Percent-encodes what [`needs_key_escape`] objects to.
fn escape_key(key: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(key.len() + 8);
    for (i, &b) in key.iter().enumerate() {
        if b <= b' ' || (i == 0 && (b == b'!' || b == b'"')) {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        } else {
            out.push(b);
        }
    }
    out
}

/// The ARC header's media type when it says something: up to the first
/// `;` or blank, and not one of the "unknown" spellings.
fn arc_mime(mime: &[u8]) -> Option<&[u8]> {
    let end = mime
        .iter()
        .position(|&b| b == b';' || b.is_ascii_whitespace())
        .unwrap_or(mime.len());
    let m = &mime[..end];
    let unknown = m.is_empty()
        || m == b"-"
        || m.eq_ignore_ascii_case(b"no-type")
        || m.eq_ignore_ascii_case(b"unk");
    (!unknown).then_some(m)
}

/// CDX-Writer's `m` for an ARC record: the header's media type up to `;`,
/// `unk` when empty, `no-type` or not ASCII.
fn cdx11_mime(mime: &[u8]) -> &[u8] {
    let end = mime
        .iter()
        .position(|&b| b == b';' || b.is_ascii_whitespace())
        .unwrap_or(mime.len());
    let m = &mime[..end];
    if m.is_empty() || m == b"no-type" || !m.is_ascii() {
        b"unk"
    } else {
        m
    }
}

/// Appends index lines for records of one file.
#[derive(Debug, Clone)]
pub struct Indexer {
    opts: Options,
    filename: Vec<u8>,
    robots: robots::RobotsParser,
    /// Why the last record's URL could not be canonicalised.
    key_error: Option<surt::Error>,
    /// How the last record's stated payload digest disagrees with its
    /// payload (`verify_digests`).
    digest_error: Option<String>,
    /// The POST or PUT exchange of the WARC record being written.
    post: Option<post::PostAppend>,
    /// Something to tell about the last record that is not damage.
    notice: Option<String>,
    /// What the file's checksums cover (read from its filedesc record
    /// when digests are verified).
    covers: Cell<Covers>,
    /// Revisit lines waiting for their duplicate record ([`Indexer::finish`]).
    held: VecDeque<HeldRevisit>,
    /// What the caller knows of the next record ([`Indexer::give`]).
    given: fields::Given,
}

impl Indexer {
    /// An indexer for records of the file called `filename` (written into
    /// every line; callers pass the base name, as the reference tools do).
    pub fn new(opts: Options, filename: &[u8]) -> Indexer {
        Indexer {
            opts,
            filename: filename.to_vec(),
            robots: robots::RobotsParser::new(),
            key_error: None,
            digest_error: None,
            post: None,
            notice: None,
            covers: Cell::new(Covers::Payload),
            held: VecDeque::new(),
            given: fields::Given::default(),
        }
    }

    /// Appends the lines still held back: revisits of ARC revision-3.0
    /// files wait for the duplicate record that points them at their
    /// original, and come out of [`Indexer::write`] when it is read. Call
    /// after the file's last record (an `Indexer` indexes one file).
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        for h in self.held.drain(..) {
            out.extend_from_slice(&h.line);
        }
        self.covers.set(Covers::Payload);
    }

    /// Holds the line of a revisit until its duplicate record is read.
    fn hold(&mut self, rec: &Record, line: Vec<u8>, out: &mut Vec<u8>) {
        let h = &rec.header;
        self.held.push_back(HeldRevisit {
            date: h.date.clone(),
            serial: h.offset_field.clone(),
            url: h.url.clone(),
            line,
        });
        if self.held.len() > MAX_HELD_REVISITS {
            if let Some(oldest) = self.held.pop_front() {
                out.extend_from_slice(&oldest.line);
            }
        }
    }

    /// Gives the held revisit that the duplicate record `rec` is about the
    /// pointer to its original, and writes its line out.
    fn point_revisit(&mut self, rec: &Record, out: &mut Vec<u8>) {
        let Some(ari) = Ari::parse(&rec.header.url) else {
            return;
        };
        let Some(at) = self.held.iter().position(|h| {
            h.date == ari.date && h.url == ari.target && same_serial(ari.serial, &h.serial)
        }) else {
            return;
        };
        let Some(pointer) = crate::arc::rev3::duplicate_pointer(rec.block()) else {
            return;
        };
        let Some(mut held) = self.held.remove(at) else {
            return;
        };
        let line = &mut held.line;
        line.truncate(line.len() - 2);
        let mut field = |name: &str, value: &[u8]| {
            line.extend_from_slice(b",\"");
            line.extend_from_slice(name.as_bytes());
            line.extend_from_slice(b"\":");
            json::write_str(line, value, true, Escape::Utf8);
        };
        match Ari::parse(pointer) {
            Some(original) => {
                field("refers_to_uri", described_url(pointer));
                field("refers_to_date", original.date);
                field("refers_to", pointer);
            }
            None => field("refers_to_uri", pointer),
        }
        line.extend_from_slice(b"}\n");
        out.extend_from_slice(line);
    }

    /// Why the URL of the record just written could not be canonicalised
    /// (its key is then the URL itself, as the reference indexers write
    /// it), once.
    pub fn take_key_error(&mut self) -> Option<surt::Error> {
        self.key_error.take()
    }

    /// With `verify_digests`: how the payload of the record just written
    /// disagrees with the digest it states, once.
    pub fn take_digest_error(&mut self) -> Option<String> {
        self.digest_error.take()
    }

    /// Something the user should know about the record just written that
    /// is not damage (a WARC record in segments), once.
    pub fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Appends the line for `rec` to `out` (with `\n`), or nothing when the
    /// profile leaves the record out.
    pub fn write(&mut self, rec: &Record, out: &mut Vec<u8>) -> Outcome {
        self.write_hashed(rec, None, out)
    }

    /// Where the bytes whose SHA-1 is `rec`'s digest in this profile start
    /// in its block (they run to its end), or `None` when its line needs
    /// none (the header line carries a checksum, or the profile leaves
    /// filedesc records out). Callers that index many records hash these
    /// inputs together ([`hash::Lanes`]) and pass each digest to
    /// [`Indexer::write_hashed`].
    pub fn digest_start(&self, rec: &Record) -> Option<usize> {
        let role = Role::of(&rec.header.url, &rec.header.mime);
        if is_filedesc(rec) && self.opts.verify_digests {
            self.covers.set(Covers::of_filedesc(rec.block()));
        }
        if !role.is_capture() && !self.opts.all_records {
            return None;
        }
        if declared_sha1(&rec.header.checksum).is_some() {
            return self.arc_verify_start(rec, role);
        }
        match self.opts.profile {
            Profile::Ukvs => {
                if is_filedesc(rec) && !self.opts.all_records {
                    return None;
                }
                Some(self.payload_start(rec, role))
            }
            Profile::Cdxj => {
                if is_filedesc(rec) {
                    return None;
                }
                let head = if cdxj_parses_http(&rec.header) {
                    http::Head::parse(rec.block())
                } else {
                    None
                };
                Some(payload_start(rec.block(), head.as_ref()))
            }
            Profile::Cdx11 => {
                if is_filedesc(rec) && !self.opts.all_records {
                    return None;
                }
                Some(cdx11_digest_start(rec))
            }
        }
    }

    /// Where the `ukvs` profile's payload of `rec` starts: after the HTTP
    /// head of a response or revisit with an HTTP URL, else at 0 (requests,
    /// metadata and transformed copies are digested whole).
    fn payload_start(&self, rec: &Record, role: Role) -> usize {
        let url = safe_url(described_url(&rec.header.url));
        let head = if is_http_url(&url) && matches!(role, Role::Content | Role::Revisit) {
            http::Head::parse(rec.block())
        } else {
            None
        };
        payload_start(rec.block(), head.as_ref())
    }

    /// With `verify_digests`, where the bytes a record's checksum covers
    /// start (FORMATS.md 3.6); `None` for a revisit (its checksum is its
    /// original's), a truncated record and a file whose checksums cover
    /// something else.
    fn arc_verify_start(&self, rec: &Record, role: Role) -> Option<usize> {
        if !self.opts.verify_digests || rec.truncated || role == Role::Revisit {
            return None;
        }
        match self.covers.get() {
            Covers::Payload => Some(self.payload_start(rec, role)),
            Covers::Content => Some(0),
            Covers::Unknown => None,
        }
    }

    /// Compares the checksum of `rec` with `hashed`, what the caller hashed
    /// from [`Indexer::digest_start`].
    fn arc_verify(&mut self, rec: &Record, role: Role, hashed: [u8; 20]) {
        let Some(declared) = declared_sha1(&rec.header.checksum) else {
            return;
        };
        let Some(start) = self.arc_verify_start(rec, role) else {
            return;
        };
        let mut got = [0; 32];
        BASE32.encode_mut(&hashed, &mut got);
        if declared != got {
            // The hashed bytes: the payload, after an HTTP head, or the
            // whole content.
            let covered = if start > 0 { "payload" } else { "content" };
            self.digest_error = Some(format!(
                "the checksum is {} but the {covered}'s SHA-1 is sha1:{}",
                String::from_utf8_lossy(&rec.header.checksum),
                String::from_utf8_lossy(&got)
            ));
        }
    }

    /// As [`Indexer::write`], with `hashed` the SHA-1 of
    /// `rec.block()[digest_start(rec)..]` when the caller has it (`None`: the
    /// digest is computed here).
    pub fn write_hashed(
        &mut self,
        rec: &Record,
        hashed: Option<[u8; 20]>,
        out: &mut Vec<u8>,
    ) -> Outcome {
        self.key_error = None;
        self.digest_error = None;
        self.notice = None;
        let h = &rec.header;
        let role = Role::of(&h.url, &h.mime);
        if crate::arc::rev3::is_ari(&h.url) && Ari::described_url(&h.url).is_none() {
            self.notice = Some(format!(
                "{:?} is not a record address (ari:DATE;SERIAL;URL): the key is made of it as written",
                String::from_utf8_lossy(&h.url[..h.url.len().min(200)])
            ));
        }
        if is_filedesc(rec) && self.opts.verify_digests && self.covers.get() == Covers::Unknown {
            self.notice = Some(
                "the filedesc's checksum-covers names no coverage this reader knows \
                 (payload, content): the file's checksums are not verified"
                    .into(),
            );
        }
        if role == Role::Duplicate && self.opts.profile == Profile::Ukvs {
            self.point_revisit(rec, out);
        }
        if !role.is_capture() && !self.opts.all_records {
            return Outcome::Filtered;
        }
        let hashed = match hashed {
            Some(d) if self.opts.verify_digests && declared_sha1(&h.checksum).is_some() => {
                self.arc_verify(rec, role, d);
                None
            }
            other => other,
        };
        match self.opts.profile {
            Profile::Ukvs => {
                if !self.ukvs_takes_arc(rec) {
                    return Outcome::Filtered;
                }
                let mut capture = Capture::from_hashed(rec, role, &self.opts.surt, hashed);
                self.key_error = capture.key_error.take();
                // `--fields`, `--digest-records` (fields.rs) are added to
                // the line.
                if role == Role::Revisit {
                    let mut line = Vec::new();
                    capture.write_ukvs(&self.filename, &mut line);
                    self.ukvs_fields_arc(rec, role, hashed, 0, &mut line);
                    self.hold(rec, line, out);
                } else {
                    let start = out.len();
                    capture.write_ukvs(&self.filename, out);
                    self.ukvs_fields_arc(rec, role, hashed, start, out);
                }
                Outcome::Indexed
            }
            Profile::Cdxj => self.write_cdxj(rec, role, hashed, out),
            Profile::Cdx11 => self.write_cdx11(rec, role, hashed, out),
        }
    }

    /// cdxj-indexer 1.5 (warcio ARC reading): every record but the filedesc;
    /// values are JSON strings, keys in its order, `json.dumps` spacing.
    fn write_cdxj(
        &mut self,
        rec: &Record,
        role: Role,
        hashed: Option<[u8; 20]>,
        out: &mut Vec<u8>,
    ) -> Outcome {
        if self.custom().is_some() {
            return self.write_custom_arc(rec, role, hashed, out);
        }
        if is_filedesc(rec) {
            return Outcome::Filtered;
        }
        let h = &rec.header;
        // warcio decodes the whole header line as UTF-8, else Latin-1.
        let line = if rec.header_line.is_empty() {
            &h.url
        } else {
            &rec.header_line
        };
        let line_utf8 = std::str::from_utf8(line).is_ok();
        let revisit = role == Role::Revisit;
        let mut url: Cow<[u8]> = match described_url(&h.url) {
            [b'<', inner @ .., b'>'] => Cow::Borrowed(inner),
            u => Cow::Borrowed(u),
        };
        if url.contains(&b' ') {
            let mut v = Vec::with_capacity(url.len() + 16);
            for &b in url.iter() {
                if b == b' ' {
                    v.extend_from_slice(b"%20");
                } else {
                    v.push(b);
                }
            }
            url = Cow::Owned(v);
        }
        // The key is computed on the decoded text, so Latin-1 bytes reach
        // the SURT code as their UTF-8 spelling.
        let (key, key_error) = cdxj_key(&url, line_utf8, &self.opts.surt);
        self.key_error = key_error;
        let head = if cdxj_parses_http(h) {
            http::Head::parse(rec.block())
        } else {
            None
        };
        let digest = match declared_sha1(&h.checksum) {
            Some(d) => Digest::Declared(d),
            None => Digest::Sha1(hashed.unwrap_or_else(|| {
                sha1(&rec.block()[payload_start(rec.block(), head.as_ref())..])
            })),
        };

        out.extend_from_slice(&key);
        out.push(b' ');
        match record_datetime(rec) {
            Some(d) => out.extend_from_slice(&d),
            None => out.push(b'-'),
        }
        out.extend_from_slice(b" {\"url\": ");
        json::write_str(out, &url, line_utf8, Escape::Ascii);
        if let Some(hd) = head.as_ref().filter(|hd| hd.is_present()) {
            let mime = if revisit {
                Some(&b"warc/revisit"[..])
            } else {
                hd.mime()
            };
            if let Some(m) = mime {
                out.extend_from_slice(b", \"mime\": ");
                json::write_str(out, m, true, Escape::Ascii);
            }
            out.extend_from_slice(b", \"status\": ");
            json::write_str(out, hd.status, true, Escape::Ascii);
        }
        out.extend_from_slice(b", \"digest\": \"sha1:");
        let mut b32 = [0; 32];
        out.extend_from_slice(digest.base32(&mut b32));
        out.extend_from_slice(b"\", \"length\": \"");
        out.extend_from_slice(itoa::Buffer::new().format(rec.length).as_bytes());
        out.extend_from_slice(b"\", \"offset\": \"");
        out.extend_from_slice(itoa::Buffer::new().format(rec.offset).as_bytes());
        out.extend_from_slice(b"\", \"filename\": ");
        json::write_str(out, &self.filename, true, Escape::Ascii);
        out.extend_from_slice(b"}\n");
        Outcome::Indexed
    }

    /// CDX-Writer's default (`N b a m s k r M S V g`) line.
    fn write_cdx11(
        &mut self,
        rec: &Record,
        role: Role,
        hashed: Option<[u8; 20]>,
        out: &mut Vec<u8>,
    ) -> Outcome {
        let h = &rec.header;
        let filedesc = is_filedesc(rec);
        if filedesc && !self.opts.all_records {
            return Outcome::Filtered;
        }
        // CDX-Writer's ARC reader gives a record that declares no bytes no
        // content, and with it no content type: its `m` is `unk`, and it is
        // no DNS record to leave out.
        let declares_nothing = h.length == Some(0);
        let block = rec.block();
        let status = if filedesc {
            None
        } else {
            http::cdx_writer_status(block)
        };
        if !filedesc {
            // The reference drops failed live-web proxy fetches in every mode.
            if let Some((code, false)) = status {
                if &h.ip[..] == b"0.0.0.0" && (code == b"502" || code == b"504") {
                    return Outcome::Filtered;
                }
            }
            let dns = h.mime == b"text/dns" && !declares_nothing;
            if !self.opts.all_records && (dns || status.is_some_and(|(code, _)| code == b"304")) {
                return Outcome::Filtered;
            }
        }
        if declares_negative_length(rec) {
            return Outcome::Filtered;
        }
        let url = safe_url(described_url(&h.url));
        let is_http_block = !filedesc && block.starts_with(b"HTTP");
        let digest = match declared_sha1(&h.checksum) {
            Some(d) => Digest::Declared(d),
            None => Digest::Sha1(
                hashed.unwrap_or_else(|| sha1(&rec.block()[cdx11_digest_start(rec)..])),
            ),
        };
        let mime: &[u8] = if filedesc {
            b"warc/filedesc"
        } else if role == Role::Revisit {
            b"warc/revisit"
        } else if declares_nothing {
            b"unk"
        } else {
            cdx11_mime(&h.mime)
        };
        let mut flags = [0u8; 3];
        let n_flags = if is_http_block {
            let (head, content) = http::cdx_writer_split(block);
            let html =
                (mime == b"text/html" && block.len() <= robots::PARSE_LIMIT).then_some(content);
            self.robots.flags(
                html,
                http::cdx_writer_header(head, b"x-robots-tag"),
                &mut flags,
            )
        } else {
            0
        };

        let (key, key_error) = surt::key(&url, &self.opts.surt);
        self.key_error = key_error;
        let mut b32 = [0; 32];
        let line = Cdx11Line {
            key: &key,
            datetime: record_datetime(rec),
            url: &url,
            mime,
            status: status.map(|(code, _)| code),
            digest: digest.base32(&mut b32),
            flags: &flags[..n_flags],
            length: rec.length,
            offset: rec.offset,
        };
        line.write(&self.filename, out);
        Outcome::Indexed
    }
}

/// The fields of one CDX-Writer line (` CDX N b a m s k r M S V g`); `r`
/// is always `-`.
struct Cdx11Line<'a> {
    key: &'a [u8],
    datetime: Option<[u8; 14]>,
    url: &'a [u8],
    mime: &'a [u8],
    status: Option<&'a [u8]>,
    digest: &'a [u8],
    flags: &'a [u8],
    length: u64,
    offset: u64,
}

impl Cdx11Line<'_> {
    /// Appends the line (with its `\n`); `-` stands for an unknown
    /// datetime or status and for no flags.
    fn write(&self, filename: &[u8], out: &mut Vec<u8>) {
        let field = |out: &mut Vec<u8>, v: &[u8]| {
            out.extend_from_slice(v);
            out.push(b' ');
        };
        field(out, self.key);
        field(out, self.datetime.as_ref().map_or(&b"-"[..], |d| &d[..]));
        field(out, self.url);
        field(out, self.mime);
        field(out, self.status.unwrap_or(b"-"));
        field(out, self.digest);
        field(out, b"-");
        field(
            out,
            if self.flags.is_empty() {
                b"-"
            } else {
                self.flags
            },
        );
        field(out, itoa::Buffer::new().format(self.length).as_bytes());
        field(out, itoa::Buffer::new().format(self.offset).as_bytes());
        out.extend_from_slice(filename);
        out.push(b'\n');
    }
}

/// cdxj-indexer's key of `url`: its SURT, computed on the text warcio
/// decoded (Latin-1 bytes reach the SURT code as their UTF-8 spelling when
/// `utf8` is false). The reference writes a key it cannot canonicalise as
/// the URL; a LF there (only a hand-built record can carry one) would split
/// the line, so it is written `%0A`.
fn cdxj_key(url: &[u8], utf8: bool, opts: &surt::Options) -> (Vec<u8>, Option<surt::Error>) {
    let (key, key_error) = if utf8 {
        surt::key(url, opts)
    } else {
        let mut text = Vec::with_capacity(url.len() * 2);
        for &b in url {
            let mut buf = [0; 4];
            text.extend_from_slice(char::from(b).encode_utf8(&mut buf).as_bytes());
        }
        surt::key(&text, opts)
    };
    if !key.contains(&b'\n') {
        return (key, key_error);
    }
    let mut v = Vec::with_capacity(key.len() + 8);
    for &b in &key {
        if b == b'\n' {
            v.extend_from_slice(b"%0A");
        } else {
            v.push(b);
        }
    }
    (v, key_error)
}

#[cfg(test)]
mod tests;
