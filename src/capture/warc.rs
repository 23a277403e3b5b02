//! WARC record -> index line, in the three profiles.
//!
//! * `cdxj`: cdxj-indexer 1.5.0 (warcio's reading). Response, revisit,
//!   resource and metadata records make lines, but for resource and
//!   metadata records whose WARC `Content-Type` is exactly
//!   `application/warc-fields`; `--all-records` takes every record (its
//!   `--records all`). HTTP heads are read in response, request and
//!   revisit records with an `http:`/`https:` target and a non-zero
//!   length; the digest is `WARC-Payload-Digest` as written, else the SHA-1
//!   of the bytes after the HTTP head (none for revisit and warcinfo).
//! * `cdx11`: CDX-Writer. Responses (not 304, not `text/dns`), revisits
//!   (not `server-not-modified`), resources with an `ftp://`, `http://` or
//!   `https://` target; `--all-records` adds every other record, typed
//!   `warc/<type>`, and warcinfo as CDX-Writer names it.
//! * `ukvs`: the captures (response, resource, revisit) and the metadata
//!   records cdxj-indexer keeps, with `--all-records` every record; the
//!   digest is a well-formed `WARC-Payload-Digest` (`sha1:` + base32), else
//!   computed as for `cdxj`; revisits carry what they refer to.
//!
//! FORMATS.md section 2 gives the rules and where the peers differ.

use std::borrow::Cow;

use data_encoding::BASE32;

use super::datetime::{self, WarcDateForm};
use super::json::{self, Escape};
use super::post::{self, PostAppend};
use super::{
    base32_sha1, cdxj_key, escape_key, http, needs_key_escape, robots, safe_url, sha1, Capture,
    Cdx11Line, Digest, Indexer, Outcome, Profile,
};
use crate::surt;
use crate::warc::{Record, RecordType};

/// `Content-Type` of WARC field lists, left out by cdxj-indexer.
const WARC_FIELDS: &[u8] = b"application/warc-fields";

/// `WARC-Target-URI` as warcio reads it: `<...>` dropped when the value
/// both starts and ends with them, spaces written `%20`.
pub fn target_uri(rec: &Record) -> Option<Cow<'_, [u8]>> {
    let raw = rec.header("WARC-Target-URI")?;
    let u = match raw {
        [b'<', inner @ .., b'>'] => inner,
        u => u,
    };
    if !u.contains(&b' ') {
        return Some(Cow::Borrowed(u));
    }
    let mut v = Vec::with_capacity(u.len() + 16);
    for &b in u {
        if b == b' ' {
            v.extend_from_slice(b"%20");
        } else {
            v.push(b);
        }
    }
    Some(Cow::Owned(v))
}

/// `WARC-Date` as 14 digits in UTC: as warcio reads it where it can,
/// reduced precision padded and zone offsets applied
/// ([`datetime::warc_date`]); `None` when it cannot be read.
pub fn timestamp(date: &[u8]) -> Option<[u8; 14]> {
    datetime::warc_date(date).map(|(d, _)| d)
}

/// CDX-Writer's timestamp: the first 19 characters of `WARC-Date` as
/// `%Y-%m-%dT%H:%M:%S`.
fn cdx_writer_timestamp(date: &[u8]) -> Option<[u8; 14]> {
    let d = date.get(..19)?;
    let digits = |r: std::ops::Range<usize>| d[r].iter().all(u8::is_ascii_digit);
    let shape = d[4] == b'-' && d[7] == b'-' && d[10] == b'T' && d[13] == b':' && d[16] == b':';
    if !shape || !digits(0..4) || !digits(5..7) || !digits(8..10) {
        return None;
    }
    if !digits(11..13) || !digits(14..16) || !digits(17..19) {
        return None;
    }
    timestamp(d)
}

/// A media type as cdxj-indexer cuts a WARC `Content-Type`: up to the
/// first `;` or blank, trimmed.
pub(super) fn media_type(v: &[u8]) -> &[u8] {
    // Python's `\s` on text: blanks, VT and the separators 0x1c-0x1f too.
    let end = v
        .iter()
        .position(|&b| b == b';' || http::is_py_space(b))
        .unwrap_or(v.len());
    v[..end].trim_ascii()
}

/// A base32 SHA-1 `WARC-Payload-Digest` (`sha1:` + 32 base32 characters).
fn well_formed_sha1(v: &[u8]) -> Option<&[u8]> {
    let prefix = v.get(..5)?;
    prefix
        .eq_ignore_ascii_case(b"sha1:")
        .then(|| base32_sha1(&v[5..]))
        .flatten()
}

/// A stated digest: `None` when it is not SHA-1 (not checked), else its
/// bytes, or `Err` when they cannot be read. Base32 (either case), hex and
/// base64 (standard or URL-safe, padded or not) are read, as warcio does.
fn stated_sha1(v: &[u8]) -> Option<Result<[u8; 20], ()>> {
    let colon = memchr::memchr(b':', v)?;
    if !v[..colon].eq_ignore_ascii_case(b"sha1") {
        return None;
    }
    let d = v[colon + 1..].trim_ascii();
    let decoded = match d.len() {
        32 => data_encoding::BASE32.decode(&d.to_ascii_uppercase()).ok(),
        40 => data_encoding::HEXLOWER_PERMISSIVE.decode(d).ok(),
        _ => [
            data_encoding::BASE64,
            data_encoding::BASE64URL,
            data_encoding::BASE64_NOPAD,
            data_encoding::BASE64URL_NOPAD,
        ]
        .iter()
        .find_map(|e| e.decode(d).ok()),
    };
    Some(decoded.and_then(|b| <[u8; 20]>::try_from(b).ok()).ok_or(()))
}

/// What to say of a record stored in segments (WARC 1.1 section 6.9):
/// each segment is indexed as a record of its own, and they are not joined.
fn segment_notice(rec: &Record) -> Option<String> {
    let n = rec.header("WARC-Segment-Number")?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let origin = rec
        .header("WARC-Segment-Origin-ID")
        .or_else(|| rec.header("WARC-Record-ID"))
        .map_or_else(String::new, |o| format!(" of {}", text(o)));
    Some(format!(
        "{} record, segment {}{origin}: segments are indexed as they are, not joined \
         (a digest computed here covers this segment only)",
        rec.record_type().name(),
        text(n),
    ))
}

/// What to say of a `WARC-Date` in local time with a zone offset, which
/// the `ukvs` and `cdxj` lines give in UTC.
fn zone_notice(rec: &Record) -> Option<String> {
    let date = rec.header("WARC-Date")?;
    let (d, form) = datetime::warc_date(date)?;
    (form == WarcDateForm::Zoned).then(|| {
        format!(
            "WARC-Date {:?} has a zone offset (ISO 28500 wants UTC): indexed as {} UTC",
            String::from_utf8_lossy(date),
            String::from_utf8_lossy(&d)
        )
    })
}

/// The POST or PUT exchange two adjacent records make, as cdxj-indexer
/// pairs them: a request and a response (either first) with the same
/// `WARC-Target-URI`, the second `WARC-Concurrent-To` the first; `None`
/// when they are not one, or the request is not a POST or PUT with an
/// HTTP head.
pub fn post_pair(first: &Record, second: &Record) -> Option<PostAppend> {
    if target_uri(first) != target_uri(second)
        || second.header("WARC-Concurrent-To") != first.header("WARC-Record-ID")
    {
        return None;
    }
    let types = (first.header("WARC-Type")?, second.header("WARC-Type")?);
    let req = match types {
        (b"response", b"request") => second,
        (b"request", b"response") => first,
        _ => return None,
    };
    let uri = target_uri(req)?;
    if !cdxj_parses_http(req, RecordType::Request, Some(&uri)) {
        return None;
    }
    post::post_append(&uri, req.block())
}

/// Whether warcio reads an HTTP head in this record.
pub(super) fn cdxj_parses_http(rec: &Record, t: RecordType, uri: Option<&[u8]>) -> bool {
    let typed = matches!(
        t,
        RecordType::Response | RecordType::Request | RecordType::Revisit
    ) && rec
        .header("WARC-Type")
        .is_some_and(|v| v == t.name().as_bytes());
    let declared_zero = rec
        .header("Content-Length")
        .is_some_and(|v| v.iter().all(|&b| b == b'0') || !v.iter().all(u8::is_ascii_digit));
    typed
        && !declared_zero
        && uri.is_some_and(|u| u.starts_with(b"http:") || u.starts_with(b"https:"))
}

/// The HTTP head warcio reads in `rec`: none where [`cdxj_parses_http`]
/// says it reads none, or where it finds no head there.
pub(super) fn cdxj_head<'r>(
    rec: &'r Record,
    t: RecordType,
    uri: Option<&[u8]>,
) -> Option<http::Head<'r>> {
    if !cdxj_parses_http(rec, t, uri) {
        return None;
    }
    http::Head::parse(rec.block()).filter(http::Head::is_present)
}

/// Which records cdxj-indexer (and the `ukvs` profile) index by default:
/// the type name as written, case included.
fn cdxj_default_record(rec: &Record) -> bool {
    let t = rec.header("WARC-Type").unwrap_or_default();
    match t {
        b"response" | b"revisit" => true,
        b"resource" | b"metadata" => rec.header("Content-Type") != Some(WARC_FIELDS),
        _ => false,
    }
}

/// CDX-Writer's record choice, and how it reads the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cdx11Kind {
    Response,
    Revisit,
    Ftp,
    Resource,
    Warcinfo,
    Generic,
}

fn cdx11_kind(rec: &Record, all: bool) -> Option<Cdx11Kind> {
    let t = rec.header("WARC-Type").unwrap_or_default();
    let raw_uri = rec.header("WARC-Target-URI").unwrap_or_default();
    let kind = match t {
        b"response" => {
            let dns = rec.header("Content-Type") == Some(b"text/dns");
            let not_modified =
                http::cdx_writer_status(rec.block()).is_some_and(|(c, _)| c == b"304");
            if (dns || not_modified) && !all {
                return None;
            }
            Cdx11Kind::Response
        }
        b"revisit" => {
            let nm = rec
                .header("WARC-Profile")
                .is_some_and(|p| p.ends_with(b"/revisit/server-not-modified"));
            if nm && !all {
                return None;
            }
            Cdx11Kind::Revisit
        }
        b"resource" if raw_uri.starts_with(b"ftp://") => Cdx11Kind::Ftp,
        b"resource" if raw_uri.starts_with(b"http://") || raw_uri.starts_with(b"https://") => {
            Cdx11Kind::Resource
        }
        b"warcinfo" => Cdx11Kind::Warcinfo,
        _ => Cdx11Kind::Generic,
    };
    if !all && matches!(kind, Cdx11Kind::Warcinfo | Cdx11Kind::Generic) {
        return None;
    }
    Some(kind)
}

/// Where CDX-Writer's made-up payload digest starts: after the first line
/// (lines end at LF) that is a lone LF or starts with CR; the block's end
/// when there is none.
fn cdx_writer_made_up_start(block: &[u8]) -> usize {
    let mut pos = 0;
    while pos < block.len() {
        let end = memchr::memchr(b'\n', &block[pos..]).map_or(block.len(), |i| pos + i + 1);
        let line = &block[pos..end];
        if line == b"\n" || line.first() == Some(&b'\r') {
            return end;
        }
        pos = end;
    }
    block.len()
}

/// Where the bytes of a response's computed `k` start: after the HTTP
/// head when the block starts with `HTTP` (read as CDX-Writer reads it for
/// `application/http` records, and as it reads ARC records for any other
/// WARC Content-Type: WARC/0.17 and 0.18 conversions from ARC), else the
/// whole block.
fn cdx11_payload_start(rec: &Record) -> usize {
    let block = rec.block();
    if !block.starts_with(b"HTTP") {
        0
    } else if cdx11_response_is_http(rec) {
        cdx_writer_made_up_start(block)
    } else {
        http::cdx_writer_payload_start(block)
    }
}

/// A stated SHA-1 digest as `cdx11` writes it: the 32 base32 characters
/// after `sha1:`; `None` when absent or malformed.
fn stated_digest<'r>(rec: &'r Record, field: &str) -> Option<&'r [u8]> {
    rec.header(field).and_then(well_formed_sha1)
}

fn cdx11_response_is_http(rec: &Record) -> bool {
    let ct = rec.header("Content-Type").unwrap_or_default();
    let Some(rest) = ct
        .get(..17)
        .filter(|p| p.eq_ignore_ascii_case(b"application/http;"))
        .map(|_| &ct[17..])
    else {
        return false;
    };
    let rest = rest.trim_ascii_start();
    rest.eq_ignore_ascii_case(b"msgtype=response")
}

/// CDX-Writer's `m` from an HTTP head: the first `Content-Type` line's
/// value up to `;`, when it is lower-case letters, digits and `-.+/`.
fn cdx11_http_mime(block: &[u8]) -> &[u8] {
    let (head, _) = http::cdx_writer_split(block);
    let Some(v) = http::cdx_writer_header(head, b"content-type") else {
        return b"unk";
    };
    let v = v.trim_ascii();
    let v = match memchr::memchr(b';', v) {
        Some(i) if i > 0 => &v[..i],
        _ => v,
    };
    let ok = !v.is_empty()
        && v.iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.+/".contains(&b));
    if ok {
        v
    } else {
        b"unk"
    }
}

impl Indexer {
    /// The key of a cdxj line keyed by `keyed` (the target URI, or the
    /// URL a POST body was appended to): its SURT, `-` without one.
    pub(super) fn cdxj_line_key(&self, keyed: Option<&[u8]>) -> (Vec<u8>, Option<surt::Error>) {
        match keyed {
            // warcio decodes header values as UTF-8, else Latin-1.
            Some(u) if !u.is_empty() => {
                cdxj_key(u, std::str::from_utf8(u).is_ok(), &self.opts.surt)
            }
            _ => (b"-".to_vec(), None),
        }
    }

    /// Where the bytes whose SHA-1 is `rec`'s digest in this profile start
    /// in its block (they run to its end), or `None` when its line needs
    /// none (the header carries it, or the record makes no line).
    pub fn warc_digest_start(&self, rec: &Record) -> Option<usize> {
        self.profile_digest_start(rec)
            .or_else(|| self.verify_start(rec))
    }

    /// With `verify_digests`, where the payload whose SHA-1 the record
    /// states starts (warcio's reading: after the HTTP head of response,
    /// request and revisit records with an HTTP target). Revisits have no
    /// payload of their own and truncated records are reported already.
    fn verify_start(&self, rec: &Record) -> Option<usize> {
        if !self.opts.verify_digests || rec.truncated {
            return None;
        }
        stated_sha1(rec.header("WARC-Payload-Digest")?)?.ok()?;
        let t = rec.record_type();
        if t == RecordType::Revisit {
            return None;
        }
        let uri = target_uri(rec);
        Some(self.cdxj_payload_start(rec, t, uri.as_deref()))
    }

    /// Compares the stated SHA-1 digests (`WARC-Payload-Digest`,
    /// `WARC-Block-Digest`) with the bytes, as `warcio check` does; `hashed`
    /// is what the caller hashed from [`Indexer::warc_digest_start`].
    fn verify(&mut self, rec: &Record, hashed: Option<[u8; 20]>) {
        if !self.opts.verify_digests || rec.truncated {
            return;
        }
        let block = rec.block();
        let mut problems = Vec::new();
        let mut check = |field: &str, what: &str, got: &dyn Fn() -> [u8; 20]| {
            let Some(value) = rec.header(field) else {
                return;
            };
            let text = String::from_utf8_lossy(value);
            match stated_sha1(value) {
                None => {}
                Some(Err(())) => problems.push(format!("{field} {text:?} is not a SHA-1 digest")),
                Some(Ok(d)) => {
                    let got = got();
                    if d != got {
                        let mut b32 = [0; 32];
                        BASE32.encode_mut(&got, &mut b32);
                        problems.push(format!(
                            "{field} is {text} but the {what}'s SHA-1 is sha1:{}",
                            String::from_utf8_lossy(&b32)
                        ));
                    }
                }
            }
        };
        match self.verify_start(rec) {
            Some(start) => {
                let got = match (hashed, self.profile_digest_start(rec)) {
                    (Some(h), None) => h,
                    (Some(h), Some(p)) if p == start => h,
                    _ => sha1(&block[start.min(block.len())..]),
                };
                check("WARC-Payload-Digest", "payload", &|| got);
            }
            // Nothing to hash: only an unreadable digest is reported.
            None if rec.record_type() != RecordType::Revisit => {
                check("WARC-Payload-Digest", "payload", &|| [0; 20]);
            }
            None => {}
        }
        check("WARC-Block-Digest", "block", &|| sha1(block));
        if !problems.is_empty() {
            self.digest_error = Some(problems.join("; "));
        }
    }

    /// Where the profile's own computed digest starts, if it needs one.
    fn profile_digest_start(&self, rec: &Record) -> Option<usize> {
        let all = self.opts.all_records;
        let t = rec.record_type();
        match self.opts.profile {
            Profile::Cdxj => {
                if !self.takes_warc(rec) {
                    return None;
                }
                let declared = rec.header("WARC-Payload-Digest");
                if declared.is_some() || matches!(t, RecordType::Warcinfo | RecordType::Revisit) {
                    return None;
                }
                let uri = target_uri(rec);
                Some(self.cdxj_payload_start(rec, t, uri.as_deref()))
            }
            Profile::Ukvs => {
                if !self.takes_warc(rec) {
                    return None;
                }
                if rec
                    .header("WARC-Payload-Digest")
                    .and_then(well_formed_sha1)
                    .is_some()
                {
                    return None;
                }
                let uri = target_uri(rec);
                Some(self.cdxj_payload_start(rec, t, uri.as_deref()))
            }
            Profile::Cdx11 => match cdx11_kind(rec, all)? {
                Cdx11Kind::Response => match stated_digest(rec, "WARC-Payload-Digest") {
                    Some(_) => None,
                    None => Some(cdx11_payload_start(rec)),
                },
                Cdx11Kind::Revisit => None,
                Cdx11Kind::Ftp => {
                    let declared = stated_digest(rec, "WARC-Payload-Digest")
                        .or_else(|| stated_digest(rec, "WARC-Block-Digest"));
                    declared.is_none().then_some(0)
                }
                Cdx11Kind::Resource | Cdx11Kind::Warcinfo | Cdx11Kind::Generic => Some(0),
            },
        }
    }

    /// Where warcio's payload starts: after what its HTTP parser consumed,
    /// even a head it then finds empty (a status line without a status,
    /// `HTTP/1.` alone, and the lines up to the first blank one).
    fn cdxj_payload_start(&self, rec: &Record, t: RecordType, uri: Option<&[u8]>) -> usize {
        if cdxj_parses_http(rec, t, uri) {
            http::Head::parse(rec.block()).map_or(0, |h| h.payload_start.min(rec.block().len()))
        } else {
            0
        }
    }

    /// Appends the line for a WARC record to `out` (with `\n`), or nothing
    /// when the profile leaves the record out. `hashed` is the SHA-1 of
    /// `rec.block()[warc_digest_start(rec)..]` when the caller has it.
    pub fn write_warc(
        &mut self,
        rec: &Record,
        hashed: Option<[u8; 20]>,
        out: &mut Vec<u8>,
    ) -> Outcome {
        self.write_warc_post(rec, hashed, None, out)
    }

    /// As [`Indexer::write_warc`], for a record of a POST or PUT exchange
    /// ([`post_pair`]): its key is the URL with the request appended, and a
    /// response's line says the method and body.
    pub fn write_warc_post(
        &mut self,
        rec: &Record,
        hashed: Option<[u8; 20]>,
        post: Option<&PostAppend>,
        out: &mut Vec<u8>,
    ) -> Outcome {
        self.post = post.cloned();
        self.notice = segment_notice(rec);
        self.key_error = None;
        self.digest_error = None;
        self.verify(rec, hashed);
        // From here `hashed` serves the profile's digest only (without
        // verification it never served anything else).
        let hashed = if self.opts.verify_digests {
            hashed.filter(|_| self.profile_digest_start(rec).is_some())
        } else {
            hashed
        };
        let outcome = match self.opts.profile {
            Profile::Cdxj => self.warc_cdxj(rec, hashed, out),
            Profile::Cdx11 => self.warc_cdx11(rec, hashed, out),
            Profile::Ukvs => self.warc_ukvs(rec, hashed, out),
        };
        if outcome == Outcome::Indexed && self.opts.profile != Profile::Cdx11 {
            if let Some(n) = zone_notice(rec) {
                self.notice = Some(match self.notice.take() {
                    Some(first) => format!("{first}; {n}"),
                    None => n,
                });
            }
        }
        outcome
    }

    pub(super) fn computed(&self, rec: &Record, hashed: Option<[u8; 20]>) -> [u8; 20] {
        hashed.unwrap_or_else(|| {
            let start = self.profile_digest_start(rec).unwrap_or(0);
            sha1(&rec.block()[start.min(rec.block().len())..])
        })
    }

    fn warc_cdxj(&mut self, rec: &Record, hashed: Option<[u8; 20]>, out: &mut Vec<u8>) -> Outcome {
        if self.custom().is_some() {
            return self.write_custom_warc(rec, hashed, out);
        }
        if !self.opts.all_records && !cdxj_default_record(rec) {
            return Outcome::Filtered;
        }
        let t = rec.record_type();
        let typed = |name: &[u8]| rec.header("WARC-Type") == Some(name);
        let uri = target_uri(rec);
        let head = cdxj_head(rec, t, uri.as_deref());
        let post = self.post.take();
        let keyed = post
            .as_ref()
            .map(|p| Cow::Borrowed(&p.key_url[..]))
            .or_else(|| uri.clone());
        let (key, key_error) = self.cdxj_line_key(keyed.as_deref());
        self.key_error = key_error;
        out.extend_from_slice(&key);
        out.push(b' ');
        match rec.header("WARC-Date").and_then(timestamp) {
            Some(d) => out.extend_from_slice(&d),
            None => out.push(b'-'),
        }
        out.extend_from_slice(b" {");
        let mut first = true;
        let mut field = |out: &mut Vec<u8>, name: &[u8]| {
            if !first {
                out.extend_from_slice(b", ");
            }
            first = false;
            out.push(b'"');
            out.extend_from_slice(name);
            out.extend_from_slice(b"\": ");
        };
        let text = |out: &mut Vec<u8>, v: &[u8]| {
            json::write_str(out, v, std::str::from_utf8(v).is_ok(), Escape::Ascii);
        };
        if let Some(u) = &uri {
            field(out, b"url");
            text(out, u);
        }
        let mime: Option<Cow<[u8]>> = if typed(b"revisit") {
            Some(Cow::Borrowed(b"warc/revisit"))
        } else if typed(b"response") || typed(b"request") {
            head.as_ref().and_then(http::Head::mime_cow)
        } else {
            rec.header("Content-Type")
                .map(|v| Cow::Borrowed(media_type(v)))
        };
        if let Some(m) = mime {
            field(out, b"mime");
            text(out, &m);
        }
        if typed(b"response") || typed(b"revisit") {
            if let Some(h) = &head {
                field(out, b"status");
                text(out, h.status);
            }
        }
        let declared = rec.header("WARC-Payload-Digest");
        let no_digest = typed(b"warcinfo") || typed(b"revisit");
        match declared {
            Some(d) => {
                field(out, b"digest");
                text(out, d);
            }
            None if no_digest => {}
            None => {
                field(out, b"digest");
                out.extend_from_slice(b"\"sha1:");
                let mut b32 = [0; 32];
                BASE32.encode_mut(&self.computed(rec, hashed), &mut b32);
                out.extend_from_slice(&b32);
                out.push(b'"');
            }
        }
        // warcio counts empty gzip members before a record as its own.
        field(out, b"length");
        write_quoted_number(out, rec.length + rec.empty_lead);
        field(out, b"offset");
        write_quoted_number(out, rec.offset - rec.empty_lead);
        field(out, b"filename");
        json::write_str(out, &self.filename, true, Escape::Ascii);
        if let Some(p) = post.as_ref().filter(|_| typed(b"response")) {
            field(out, b"requestBody");
            match &p.body {
                Some(b) => json::write_str(out, b.as_bytes(), true, Escape::Ascii),
                None => out.extend_from_slice(b"null"),
            }
            field(out, b"method");
            json::write_str(out, p.method.as_bytes(), true, Escape::Ascii);
        }
        out.extend_from_slice(b"}\n");
        Outcome::Indexed
    }

    fn warc_cdx11(&mut self, rec: &Record, hashed: Option<[u8; 20]>, out: &mut Vec<u8>) -> Outcome {
        let Some(kind) = cdx11_kind(rec, self.opts.all_records) else {
            return Outcome::Filtered;
        };
        let block = rec.block();
        let warcinfo_url;
        let url: Cow<[u8]> = if kind == Cdx11Kind::Warcinfo {
            let mut u = b"warcinfo:/".to_vec();
            u.extend_from_slice(&self.filename);
            u.extend_from_slice(b"/archive-commons.0.0.1-SNAPSHOT-20120112102659-python");
            warcinfo_url = u;
            Cow::Borrowed(&warcinfo_url[..])
        } else {
            match rec.header("WARC-Target-URI") {
                Some(u) => safe_url(u),
                None => Cow::Borrowed(&b"-"[..]),
            }
        };
        let status: Option<&[u8]> = match kind {
            Cdx11Kind::Response => http::cdx_writer_status(block).map(|(c, _)| c),
            Cdx11Kind::Ftp => Some(b"226"),
            _ => None,
        };
        // A stated digest is written without its `sha1:`; one that is not
        // `sha1:` and 32 base32 characters is passed over (2.7).
        let payload_digest = stated_digest(rec, "WARC-Payload-Digest");
        let computed = |me: &Self| -> Vec<u8> {
            let mut b32 = [0; 32];
            BASE32.encode_mut(&me.computed(rec, hashed), &mut b32);
            b32.to_vec()
        };
        let digest: Vec<u8> = match kind {
            Cdx11Kind::Response => payload_digest.map_or_else(|| computed(self), <[u8]>::to_vec),
            Cdx11Kind::Revisit => payload_digest.unwrap_or(b"-").to_vec(),
            Cdx11Kind::Ftp => payload_digest
                .or_else(|| stated_digest(rec, "WARC-Block-Digest"))
                .map_or_else(|| computed(self), <[u8]>::to_vec),
            _ => computed(self),
        };
        let mime: Cow<[u8]> = match kind {
            // Without a status line, CDX-Writer reads no HTTP head.
            Cdx11Kind::Response if cdx11_response_is_http(rec) && block.starts_with(b"HTTP") => {
                Cow::Borrowed(cdx11_http_mime(block))
            }
            Cdx11Kind::Response if cdx11_response_is_http(rec) => Cow::Borrowed(b"unk"),
            Cdx11Kind::Response => match rec.header("Content-Type").map(media_type) {
                Some(m) if !m.is_empty() && m != b"no-type" && m.is_ascii() => Cow::Borrowed(m),
                _ => Cow::Borrowed(b"unk"),
            },
            Cdx11Kind::Revisit => Cow::Borrowed(b"warc/revisit"),
            Cdx11Kind::Ftp | Cdx11Kind::Resource => {
                Cow::Borrowed(rec.header("Content-Type").unwrap_or(b"-"))
            }
            Cdx11Kind::Warcinfo => Cow::Borrowed(b"warc-info"),
            Cdx11Kind::Generic => {
                let mut m = b"warc/".to_vec();
                m.extend_from_slice(rec.header("WARC-Type").unwrap_or(b"None"));
                Cow::Owned(m)
            }
        };
        let mut flags = [0u8; 4];
        let mut n_flags = 0;
        if kind == Cdx11Kind::Response {
            let mut afi = [0u8; 3];
            if block.starts_with(b"HTTP") {
                let (head, content) = http::cdx_writer_split(block);
                let declared = rec
                    .header("Content-Length")
                    .and_then(|v| std::str::from_utf8(v).ok()?.parse::<u64>().ok())
                    .unwrap_or(block.len() as u64);
                let html = (&mime[..] == b"text/html"
                    && declared <= robots::PARSE_LIMIT as u64
                    && !content.trim_ascii().is_empty())
                .then_some(content);
                n_flags = self.robots.flags(
                    html,
                    http::cdx_writer_header(head, b"x-robots-tag"),
                    &mut afi,
                );
            }
            flags[..n_flags].copy_from_slice(&afi[..n_flags]);
            let province = rec
                .header("WARC-Simple-Form-Province-Status")
                .map(|v| {
                    v.split(|&b| b == b',')
                        .next()
                        .unwrap_or_default()
                        .trim_ascii()
                })
                .and_then(|v| std::str::from_utf8(v).ok()?.parse::<i64>().ok());
            if province.is_some_and(|p| p > 0) {
                flags[n_flags] = b'P';
                n_flags += 1;
            }
        }
        let post = self.post.take();
        let key = if kind == Cdx11Kind::Warcinfo {
            url.to_vec()
        } else {
            let keyed = post.as_ref().map_or(&url[..], |p| &p.key_url[..]);
            let (key, key_error) = surt::key(keyed, &self.opts.surt);
            self.key_error = key_error;
            key
        };
        let line = Cdx11Line {
            key: &key,
            datetime: rec.header("WARC-Date").and_then(cdx_writer_timestamp),
            url: &url,
            mime: &mime,
            status,
            digest: &digest,
            flags: &flags[..n_flags],
            length: rec.length,
            offset: rec.offset,
        };
        line.write(&self.filename, out);
        Outcome::Indexed
    }

    fn warc_ukvs(&mut self, rec: &Record, hashed: Option<[u8; 20]>, out: &mut Vec<u8>) -> Outcome {
        if !self.takes_warc(rec) {
            return Outcome::Filtered;
        }
        let post = self.post.take();
        let mut capture = Capture::from_warc(rec, &self.opts.surt, || self.computed(rec, hashed));
        if let Some(p) = &post {
            let (mut key, key_error) = surt::key(&p.key_url, &self.opts.surt);
            if needs_key_escape(&key) {
                key = escape_key(&key);
            }
            capture.key = key;
            capture.key_error = key_error;
            if rec.record_type() == RecordType::Response {
                capture
                    .extra
                    .push(("method", Cow::Owned(p.method.clone().into_bytes())));
                if let Some(b) = &p.body {
                    capture
                        .extra
                        .push(("request_body", Cow::Owned(b.clone().into_bytes())));
                }
            }
        }
        let start = out.len();
        capture.write_ukvs(&self.filename, out);
        self.key_error = capture.key_error.take();
        // `--fields`, `--digest-records` (capture::fields).
        self.ukvs_fields_warc(rec, hashed, start, out);
        Outcome::Indexed
    }
}

impl<'a> Capture<'a> {
    /// Reads one WARC record the `ukvs` profile's way; `computed` gives the
    /// payload's SHA-1 when the record declares no well-formed one.
    pub fn from_warc(
        rec: &'a Record,
        surt_opts: &surt::Options,
        computed: impl FnOnce() -> [u8; 20],
    ) -> Capture<'a> {
        let t = rec.record_type();
        let uri = target_uri(rec).map(|u| match u {
            Cow::Borrowed(b) => safe_url(b),
            Cow::Owned(v) => Cow::Owned(safe_url(&v).into_owned()),
        });
        let url = uri.unwrap_or(Cow::Borrowed(&b""[..]));
        let head = cdxj_head(rec, t, Some(&url));
        let digest = match rec.header("WARC-Payload-Digest").and_then(well_formed_sha1) {
            Some(d) => Digest::Declared(d),
            None => Digest::Sha1(computed()),
        };
        let (mut key, key_error) = if url.is_empty() {
            (b"-".to_vec(), None)
        } else {
            surt::key(&url, surt_opts)
        };
        if needs_key_escape(&key) {
            key = escape_key(&key);
        }
        let mime: Option<Cow<[u8]>> = match t {
            RecordType::Revisit => Some(Cow::Borrowed(&b"warc/revisit"[..])),
            RecordType::Response | RecordType::Request => {
                head.as_ref().and_then(http::Head::mime_cow)
            }
            _ => None,
        }
        .filter(|m| !m.is_empty())
        .or_else(|| {
            rec.header("Content-Type")
                .map(media_type)
                .filter(|m| !m.is_empty() && !m.eq_ignore_ascii_case(b"application/http"))
                .map(Cow::Borrowed)
        });
        let record_type: Option<Cow<[u8]>> = match t {
            RecordType::Response | RecordType::Revisit if head.is_some() => None,
            RecordType::Resource => None,
            RecordType::Response => {
                let scheme_end = memchr::memchr(b':', &url).unwrap_or(0);
                Some(if scheme_end == 0 {
                    Cow::Borrowed(&b"unknown"[..])
                } else {
                    Cow::Owned(url[..scheme_end].to_ascii_lowercase())
                })
            }
            RecordType::Revisit => None,
            RecordType::Other => Some(Cow::Borrowed(rec.header("WARC-Type").unwrap_or(b"unknown"))),
            other => Some(Cow::Borrowed(other.name().as_bytes())),
        };
        let date = rec.header("WARC-Date").unwrap_or_default();
        let read = datetime::warc_date(date);
        let datetime = read.map(|(d, _)| d);
        let mut extra: Vec<(&'static str, Cow<'a, [u8]>)> = Vec::new();
        if t == RecordType::Revisit {
            for (name, field) in [
                ("refers_to_uri", "WARC-Refers-To-Target-URI"),
                ("refers_to_date", "WARC-Refers-To-Date"),
                ("refers_to", "WARC-Refers-To"),
                ("profile", "WARC-Profile"),
            ] {
                if let Some(v) = rec.header(field) {
                    extra.push((name, Cow::Borrowed(v)));
                }
            }
        }
        // A stated digest the `digest` field does not give (browsertrix
        // states `sha256:` in hex): kept, so that lookups by it find the
        // capture.
        if let Some(stated) = rec.header("WARC-Payload-Digest") {
            if well_formed_sha1(stated).is_none() {
                extra.push(("payload_digest", Cow::Borrowed(stated)));
            }
        }
        if rec.truncated || rec.header("WARC-Truncated").is_some() {
            let why = rec.header("WARC-Truncated").unwrap_or(b"length");
            extra.push(("truncated", Cow::Borrowed(why)));
        }
        Capture {
            key,
            datetime,
            // A date read to the second in UTC is not kept as written.
            datetime_raw: match read {
                Some((_, WarcDateForm::Full)) => b"",
                _ => date,
            },
            offset: rec.offset,
            length: rec.length,
            digest,
            status: head.as_ref().and_then(http::Head::status_code),
            redirect: head.and_then(|hd| hd.location),
            mime,
            ip: rec.header("WARC-IP-Address").unwrap_or_default(),
            record_type,
            url,
            key_error,
            extra,
        }
    }
}

fn write_quoted_number(out: &mut Vec<u8>, n: u64) {
    out.push(b'"');
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_as_warcio_reads_them() {
        let t = |s: &str| timestamp(s.as_bytes()).map(|d| String::from_utf8(d.to_vec()).unwrap());
        assert_eq!(
            t("2019-11-18T12:56:03.352903999Z").as_deref(),
            Some("20191118125603")
        );
        assert_eq!(t("2008-04-30T20:48Z").as_deref(), Some("20080430204800"));
        assert_eq!(t("2008-04-30").as_deref(), Some("20080430000000"));
        assert_eq!(t("2019-1-2T3:4:5Z").as_deref(), Some("20190102030405"));
        assert_eq!(t("2019-02-30T00:00:00Z"), None);
        assert_eq!(
            t("2019-01-01T00:00:00+01:00").as_deref(),
            Some("20181231230000")
        );
        assert_eq!(t("20190101000000"), None);
        assert_eq!(t(""), None);
        let c = |s: &str| {
            cdx_writer_timestamp(s.as_bytes()).map(|d| String::from_utf8(d.to_vec()).unwrap())
        };
        assert_eq!(
            c("2019-11-18T12:56:03.352903Z").as_deref(),
            Some("20191118125603")
        );
        assert_eq!(c("2019-11-18T12:56Z"), None);
    }

    #[test]
    fn payload_digest_forms() {
        assert!(well_formed_sha1(b"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ").is_some());
        assert!(well_formed_sha1(b"sha1:2jmj7l5rSw0yVb/vlWAYkK/YBwk=").is_none());
        assert!(well_formed_sha1(b"sha256:abc").is_none());
    }

    #[test]
    fn stated_digests_in_every_spelling() {
        let empty = sha1(b"");
        for v in [
            "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
            "SHA1:3i42h3s6nnfq2msvx7xzkyayscx5qbyj",
            "sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709",
            "sha1:2jmj7l5rSw0yVb/vlWAYkK/YBwk=",
            "sha1:2jmj7l5rSw0yVb_vlWAYkK_YBwk=",
        ] {
            assert_eq!(stated_sha1(v.as_bytes()), Some(Ok(empty)), "{v}");
        }
        assert_eq!(
            stated_sha1(b"sha1:1112H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"),
            Some(Err(()))
        );
        assert_eq!(stated_sha1(b"sha256:abc"), None);
        assert_eq!(stated_sha1(b"nonsense"), None);
    }

    #[test]
    fn made_up_digest_start() {
        assert_eq!(
            cdx_writer_made_up_start(b"HTTP/1.1 200\r\nA: b\r\n\r\nbody"),
            22
        );
        assert_eq!(cdx_writer_made_up_start(b"HTTP/1.1 200\nA: b\n\nbody"), 19);
        assert_eq!(cdx_writer_made_up_start(b"no blank line"), 13);
    }
}
