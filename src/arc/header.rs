//! Sans-I/O parser of ARC header lines.
//!
//! An ARC header line is nominally a few fields separated by single spaces:
//!
//! | layout | fields |
//! |---|---|
//! | v1 (5) | `URL IP date mime length` |
//! | v2 (10) | `URL IP date mime result-code checksum location offset filename length` |
//! | rev-3.0 (7) | `URL IP date mime serial checksum length` |
//!
//! Real files break that grammar in many ways (see FORMATS.md, section 3):
//! spaces inside the URL or inside the mime field, an empty mime field, IP
//! and date swapped, dates of 10 to 18 digits, hex or `null` dates, lengths
//! that are negative or not numbers, stray CR, form feed, NUL and non-UTF-8
//! bytes in URLs. A URL may hold spaces, so the fields are found from the
//! right, anchored on the date field, never by a plain split.
//!
//! [`HeaderView`] borrows its fields from the line, so probing a line (as the
//! reader does when it looks for the next record after damage) allocates
//! nothing; [`Header::parse_into`] copies a view into reusable buffers.

use super::rev3::is_serial;
use super::{Error, Header, HeaderKind};

/// How far right-to-left tokenisation goes. Every known layout has at most
/// ten fields; anything further left is part of the URL.
const MAX_TOKENS: usize = 24;

/// Which rule recognised the line; decides how much the line is trusted
/// when the reader hunts for a record start inside damaged data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// One of the three layouts, field count as specified (URL spaces aside).
    Exact,
    /// v1 with spaces inside the mime field (`text/html; charset=x`).
    MimeWithSpaces,
    /// `URL IP date` or `URL IP date mime`: mime and/or length missing.
    Short,
    /// Five or more fields where neither the date nor the IP looks right;
    /// fields are taken from the right as v1 (`URL IP date mime length`).
    Fallback,
}

/// A parsed header line whose fields borrow from the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderView<'a> {
    pub kind: HeaderKind,
    pub form: Form,
    pub url: &'a [u8],
    pub ip: &'a [u8],
    pub date: &'a [u8],
    pub mime: &'a [u8],
    pub result_code: &'a [u8],
    pub checksum: &'a [u8],
    pub location: &'a [u8],
    /// The v2 offset field, or the rev-3.0 serial field.
    pub offset: &'a [u8],
    pub filename: &'a [u8],
    pub length_raw: &'a [u8],
    /// The IP and date fields were written in swapped order.
    pub transposed: bool,
}

impl<'a> HeaderView<'a> {
    /// Parses one header line (without its line terminator; a trailing CR
    /// is ignored). Returns `None` when the line cannot be an ARC header:
    /// fewer than three fields, or no field that can be the date.
    pub fn parse(line: &'a [u8]) -> Option<HeaderView<'a>> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let toks = Tokens::new(line);
        let t = |i: usize| toks.get(line, i);
        let n = toks.len();
        if n < 3 {
            return None;
        }
        // The URL is everything left of the token at `i` (the IP, or the
        // date when transposed), without the separating space.
        let url_before = |i: usize| &line[..toks.start(i).saturating_sub(1)];
        let span = |from: usize, to_incl: usize| &line[toks.start(from)..toks.end(to_incl)];
        let mut v = HeaderView {
            kind: HeaderKind::V1,
            form: Form::Exact,
            url: b"",
            ip: b"",
            date: b"",
            mime: b"",
            result_code: b"",
            checksum: b"",
            location: b"",
            offset: b"",
            filename: b"",
            length_raw: b"",
            transposed: false,
        };

        // The order matters: each layout is tried where its evidence is
        // strongest, so that a line of one layout is not misread as another
        // with shifted fields (a v2 line's 8-digit offset looks like a date
        // in v1 position; a mime with a space looks like a spaced URL).
        //
        // v2: strong evidence only (a real IP before a real date, numeric
        // offset), because a v2 tail also matches looser v1 readings.
        if n >= 10
            && is_date_like(t(n - 8))
            && leading_digits(t(n - 8)) >= 12
            && is_ip_like(t(n - 9))
            && is_num_or_dash(t(n - 3))
            && is_num_or_dash(t(n - 6))
        {
            v.kind = HeaderKind::V2;
            v.url = url_before(n - 9);
            v.ip = t(n - 9);
            v.date = t(n - 8);
            v.mime = t(n - 7);
            v.result_code = t(n - 6);
            v.checksum = t(n - 5);
            v.location = t(n - 4);
            v.offset = t(n - 3);
            v.filename = t(n - 2);
            v.length_raw = t(n - 1);
            return Some(v);
        }
        // rev-3.0: `... date mime serial checksum length`, checksum with a
        // scheme (`urn:sha1:...`, `sha1:...`), serial in hex (`1FE`).
        if n >= 7
            && is_date_like(t(n - 5))
            && is_ip_like(t(n - 6))
            && (is_num_or_dash(t(n - 3)) || is_serial(t(n - 3)))
            && (t(n - 2).contains(&b':') || t(n - 2) == b"-")
        {
            v.kind = HeaderKind::Rev3;
            v.url = url_before(n - 6);
            v.ip = t(n - 6);
            v.date = t(n - 5);
            v.mime = t(n - 4);
            v.offset = t(n - 3);
            v.checksum = t(n - 2);
            v.length_raw = t(n - 1);
            return Some(v);
        }
        if n >= 5 {
            // v1, date and IP swapped: `URL date IP mime length`.
            if is_date_like(t(n - 4)) && is_dotted_ip(t(n - 3)) && !is_date_like(t(n - 3)) {
                v.url = url_before(n - 4);
                v.date = t(n - 4);
                v.ip = t(n - 3);
                v.mime = t(n - 2);
                v.length_raw = t(n - 1);
                v.transposed = true;
                return Some(v);
            }
            // v1 (spaces in the URL are fine: it is all that is left).
            if is_date_like(t(n - 3)) {
                v.url = url_before(n - 4);
                v.ip = t(n - 4);
                v.date = t(n - 3);
                v.mime = t(n - 2);
                v.length_raw = t(n - 1);
                return Some(v);
            }
        }
        // rev-3.0 without its checksum, as the proposal's examples write
        // it: `... date mime serial length`. The serial must be three
        // upper-case hex digits and the mime one `type/subtype` token, so
        // that a v1 mime with a space (`text/html; charset`) is not taken
        // for one.
        if n >= 6
            && is_date_like(t(n - 4))
            && is_ip_like(t(n - 5))
            && is_rev3_serial(t(n - 2))
            && t(n - 3).contains(&b'/')
            && !t(n - 3).ends_with(b";")
            && is_num_or_dash(t(n - 1))
        {
            v.kind = HeaderKind::Rev3;
            v.url = url_before(n - 5);
            v.ip = t(n - 5);
            v.date = t(n - 4);
            v.mime = t(n - 3);
            v.offset = t(n - 2);
            v.length_raw = t(n - 1);
            return Some(v);
        }
        // v1 with spaces inside the mime field: the rightmost IP + date
        // pair with at least two mime tokens and the length after it.
        if n >= 6 {
            for d in (2..=n - 4).rev() {
                if is_date_like(t(d)) && is_ip_like(t(d - 1)) {
                    v.form = Form::MimeWithSpaces;
                    v.url = url_before(d - 1);
                    v.ip = t(d - 1);
                    v.date = t(d);
                    v.mime = span(d + 1, n - 2);
                    v.length_raw = t(n - 1);
                    return Some(v);
                }
            }
        }
        // Short lines: `URL IP date` and `URL IP date mime`.
        if is_date_like(t(n - 1)) && is_ip_like(t(n - 2)) {
            v.form = Form::Short;
            v.url = url_before(n - 2);
            v.ip = t(n - 2);
            v.date = t(n - 1);
            return Some(v);
        }
        if n >= 4 && is_date_like(t(n - 2)) && is_ip_like(t(n - 3)) {
            v.form = Form::Short;
            v.url = url_before(n - 3);
            v.ip = t(n - 3);
            v.date = t(n - 2);
            v.mime = t(n - 1);
            return Some(v);
        }
        if n >= 5 {
            v.form = Form::Fallback;
            v.url = url_before(n - 4);
            v.ip = t(n - 4);
            v.date = t(n - 3);
            v.mime = t(n - 2);
            v.length_raw = t(n - 1);
            return Some(v);
        }
        None
    }

    /// The declared block length when the length field is a non-negative
    /// decimal number that fits in a `u64`.
    pub fn length(&self) -> Option<u64> {
        parse_length(self.length_raw)
    }

    /// Whether the URL starts with a scheme (`http:`, `dns:`, `filedesc:`,
    /// ...). Every record written by a crawler has one; text that merely
    /// looks like fields does not.
    pub fn has_scheme(&self) -> bool {
        scheme_len(self.url).is_some()
    }

    /// Whether the URL's scheme is one crawlers write (`http`, `dns`,
    /// `filedesc`, ...).
    pub fn has_known_scheme(&self) -> bool {
        scheme_len(self.url).is_some_and(|n| {
            KNOWN_SCHEMES
                .iter()
                .any(|k| k.eq_ignore_ascii_case(&self.url[..n]))
        })
    }

    /// Good enough to be taken as a header where a header is expected (at a
    /// record boundary): a URL with a scheme and a recognised layout; when
    /// neither date nor IP field looks right (the fallback reading), the
    /// scheme must be a known one (so `Date: Fri, 23 Jan 2004 ...` in an
    /// HTTP head is not taken for a record).
    pub fn is_acceptable(&self) -> bool {
        self.has_scheme() && (self.form != Form::Fallback || self.has_known_scheme())
    }

    /// Strict enough to be taken as the start of a record found by scanning
    /// damaged or unknown-length data, where a false positive would cut a
    /// good record in two: a recognised layout with all of a known URL
    /// scheme, IP, date and a numeric (possibly negative) length.
    pub fn is_plausible(&self) -> bool {
        self.has_known_scheme()
            && matches!(self.form, Form::Exact | Form::MimeWithSpaces)
            && is_ip_like(self.ip)
            && is_date_like(self.date)
            && is_signed_num(self.length_raw)
            && (self.form == Form::Exact || looks_like_mime(self.mime))
    }
}

impl Header {
    /// Parses a header line into a new [`Header`]. `offset` only labels the
    /// error.
    pub fn parse(line: &[u8], offset: u64) -> Result<Header, Error> {
        let mut h = Header::default();
        h.parse_into(line, offset)?;
        Ok(h)
    }

    /// Parses a header line into `self`, reusing its buffers (no allocation
    /// once they have grown). On error `self` is left cleared.
    pub fn parse_into(&mut self, line: &[u8], offset: u64) -> Result<(), Error> {
        self.clear();
        match HeaderView::parse(line) {
            Some(v) if v.is_acceptable() => {
                self.set_from(&v);
                Ok(())
            }
            _ => Err(Error::BadHeader {
                offset,
                line: String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned(),
            }),
        }
    }

    pub(crate) fn set_from(&mut self, v: &HeaderView<'_>) {
        fn put(dst: &mut Vec<u8>, src: &[u8]) {
            dst.clear();
            dst.extend_from_slice(src);
        }
        self.kind = v.kind;
        put(&mut self.url, v.url);
        put(&mut self.ip, v.ip);
        put(&mut self.date, v.date);
        put(&mut self.mime, v.mime);
        put(&mut self.result_code, v.result_code);
        put(&mut self.checksum, v.checksum);
        put(&mut self.location, v.location);
        put(&mut self.offset_field, v.offset);
        put(&mut self.filename, v.filename);
        put(&mut self.length_raw, v.length_raw);
        self.length = v.length();
        self.transposed = v.transposed;
    }

    /// Empties every field, keeping the buffers.
    pub fn clear(&mut self) {
        self.kind = HeaderKind::V1;
        for f in [
            &mut self.url,
            &mut self.ip,
            &mut self.date,
            &mut self.mime,
            &mut self.result_code,
            &mut self.checksum,
            &mut self.location,
            &mut self.offset_field,
            &mut self.filename,
            &mut self.length_raw,
        ] {
            f.clear();
        }
        self.length = None;
        self.transposed = false;
    }
}

/// Token spans of a line split on single spaces, counted from the right,
/// at most [`MAX_TOKENS`]; the rest of the line on the left is one more
/// token (always part of the URL). Stack only.
///
/// Splitting on single spaces (not runs) keeps empty tokens: an empty mime
/// field (`date  39`) stays a field, and joining a span of tokens gives
/// back the exact bytes of the line, so a spaced URL or mime is a plain
/// subslice.
struct Tokens {
    /// (start, end) of each token, left to right, in `spans[..n]`.
    spans: [(usize, usize); MAX_TOKENS],
    n: usize,
}

impl Tokens {
    fn new(line: &[u8]) -> Tokens {
        let mut rev = [(0usize, 0usize); MAX_TOKENS];
        let mut n = 0;
        let mut end = line.len();
        loop {
            if n == MAX_TOKENS - 1 {
                // Everything left belongs to the URL.
                rev[n] = (0, end);
                n += 1;
                break;
            }
            match memchr::memrchr(b' ', &line[..end]) {
                Some(sp) => {
                    rev[n] = (sp + 1, end);
                    n += 1;
                    end = sp;
                }
                None => {
                    rev[n] = (0, end);
                    n += 1;
                    break;
                }
            }
        }
        let mut spans = [(0usize, 0usize); MAX_TOKENS];
        for (i, s) in rev[..n].iter().rev().enumerate() {
            spans[i] = *s;
        }
        Tokens { spans, n }
    }

    fn len(&self) -> usize {
        self.n
    }

    fn get<'a>(&self, line: &'a [u8], i: usize) -> &'a [u8] {
        let (s, e) = self.spans[i.min(self.n - 1)];
        &line[s..e]
    }

    fn start(&self, i: usize) -> usize {
        self.spans[i.min(self.n - 1)].0
    }

    fn end(&self, i: usize) -> usize {
        self.spans[i.min(self.n - 1)].1
    }
}

/// Parses a declared length: ASCII digits only, no sign, fits in `u64`.
pub fn parse_length(raw: &[u8]) -> Option<u64> {
    if raw.is_empty() || raw.len() > 19 || !raw.iter().all(u8::is_ascii_digit) {
        return None;
    }
    raw.iter().try_fold(0u64, |acc, &b| {
        acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

fn leading_digits(t: &[u8]) -> usize {
    t.iter().take_while(|b| b.is_ascii_digit()).count()
}

/// A date field as met in the wild: 8 or more leading digits (10-18 digit
/// dates, `20160211000000jpg`), a long hex string (a checksum written in the
/// date's place), `null`, or `-`.
pub fn is_date_like(t: &[u8]) -> bool {
    leading_digits(t) >= 8
        || t == b"-"
        || t.eq_ignore_ascii_case(b"null")
        || (t.len() >= 16 && t.iter().all(u8::is_ascii_hexdigit))
}

/// An IPv4 address written with dots (the only form that tells a
/// transposed date/IP pair apart).
fn is_dotted_ip(t: &[u8]) -> bool {
    !t.is_empty()
        && t.len() <= 15
        && t.iter().filter(|&&b| b == b'.').count() == 3
        && t.iter().all(|&b| b.is_ascii_digit() || b == b'.')
}

/// The IP field: IPv4, IPv6, `-`, or the `None`/`null` some writers put
/// there when the address was unknown.
pub fn is_ip_like(t: &[u8]) -> bool {
    is_dotted_ip(t)
        || t == b"-"
        || t == b"None"
        || t.eq_ignore_ascii_case(b"null")
        || (t.len() >= 2
            && t.len() <= 45
            && t.iter().filter(|&&b| b == b':').count() >= 2
            && t.iter()
                .all(|&b| b.is_ascii_hexdigit() || b == b':' || b == b'.'))
}

fn is_num_or_dash(t: &[u8]) -> bool {
    t == b"-" || (!t.is_empty() && t.iter().all(u8::is_ascii_digit))
}

/// The serial of a rev-3.0 line without checksum: exactly three digits or
/// upper-case hex digits, as the proposal writes them (`1FE`, `210`).
fn is_rev3_serial(t: &[u8]) -> bool {
    t.len() == 3
        && t.iter()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(b))
}

fn is_signed_num(t: &[u8]) -> bool {
    let digits = t.strip_prefix(b"-").unwrap_or(t);
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

/// The first token of a mime field split by spaces: `type/subtype;`, or one
/// of the placeholders crawlers write (`no-type`, `unk`, `-`, empty).
fn looks_like_mime(m: &[u8]) -> bool {
    let first = m.split(|&b| b == b' ').next().unwrap_or(b"");
    first.contains(&b'/') || first.is_empty() || first == b"-" || first == b"no-type"
}

/// Length of the scheme (without the colon) at the start of `url`, if any:
/// a letter, then letters, digits, `+`, `-`, `.`, at most 32 bytes.
pub fn scheme_len(url: &[u8]) -> Option<usize> {
    let colon = url.iter().take(33).position(|&b| b == b':')?;
    let scheme = &url[..colon];
    let first = *scheme.first()?;
    (first.is_ascii_alphabetic()
        && scheme
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')))
    .then_some(colon)
}

/// Byte that may appear in a URL scheme.
pub(crate) fn is_scheme_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')
}

/// Schemes crawlers write, used to find where a header starts when it is
/// glued to preceding bytes (`...\xd9http://...`).
pub(crate) const KNOWN_SCHEMES: &[&[u8]] = &[
    b"filedesc",
    b"https",
    b"http",
    b"ftp",
    b"dns",
    b"metadata",
    b"testdata",
    b"mms",
    b"rtsp",
    b"whois",
    b"urn",
    b"ari",
];

#[cfg(test)]
mod tests {
    //! Header lines taken from real files (source in each comment; the
    //! CDX-Writer lines are from `tests/small_warcs/*.arc.gz`, named after
    //! the file), plus the v2 example of the IA ARC format description and
    //! a rev-3.0 line built from its field list.
    use super::*;

    fn v(line: &[u8]) -> HeaderView<'_> {
        HeaderView::parse(line).expect("parses")
    }

    type Fields<'a> = (&'a [u8], &'a [u8], &'a [u8], &'a [u8], &'a [u8]);

    /// (url, ip, date, mime, length_raw) of a parsed line.
    fn fields(line: &[u8]) -> Fields<'_> {
        let h = v(line);
        (h.url, h.ip, h.date, h.mime, h.length_raw)
    }

    #[test]
    fn v1_plain() {
        // warcio example.arc
        let line = b"http://example.com/ 93.184.216.119 20140216050221 text/html 1591";
        let h = v(line);
        assert_eq!((h.kind, h.form), (HeaderKind::V1, Form::Exact));
        assert_eq!(
            fields(line),
            (
                &b"http://example.com/"[..],
                &b"93.184.216.119"[..],
                &b"20140216050221"[..],
                &b"text/html"[..],
                &b"1591"[..]
            )
        );
        assert_eq!(h.length(), Some(1591));
        assert!(h.is_plausible());
    }

    #[test]
    fn filedesc_and_dns_lines() {
        let h = v(b"filedesc://IAH-20080430204825-00000-blackbook.arc 0.0.0.0 20080430204825 text/plain 1300");
        assert_eq!(h.url, b"filedesc://IAH-20080430204825-00000-blackbook.arc");
        assert_eq!(h.length(), Some(1300));
        let h = v(b"dns:www.archive.org 68.87.76.178 20080430204825 text/dns 56");
        assert_eq!(
            (h.url, h.mime),
            (&b"dns:www.archive.org"[..], &b"text/dns"[..])
        );
        assert!(h.is_plausible());
    }

    #[test]
    fn v2_ten_fields() {
        // The v2 example of the IA ARC file format description.
        let line = b"http://www.dryswamp.edu:80/index.html 127.10.100.2 19961104142103 text/html 200 fac069150613fe55599cc7fa88aa089d - 209 IA-001102.arc 202";
        let h = v(line);
        assert_eq!(h.kind, HeaderKind::V2);
        assert_eq!(h.url, b"http://www.dryswamp.edu:80/index.html");
        assert_eq!(h.result_code, b"200");
        assert_eq!(h.checksum, b"fac069150613fe55599cc7fa88aa089d");
        assert_eq!(h.location, b"-");
        assert_eq!(h.offset, b"209");
        assert_eq!(h.filename, b"IA-001102.arc");
        assert_eq!(h.length(), Some(202));
        assert!(h.is_plausible());
    }

    #[test]
    fn rev3_seven_fields() {
        let line = b"http://example.com/a b 192.0.2.1 20080430204825 text/html 3 urn:sha1:B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A 1591";
        let h = v(line);
        assert_eq!(h.kind, HeaderKind::Rev3);
        assert_eq!(h.url, b"http://example.com/a b");
        assert_eq!(h.offset, b"3");
        assert_eq!(h.checksum, b"urn:sha1:B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A");
        assert_eq!(h.length(), Some(1591));
    }

    /// The record lines of the ARC revision-3.0 proposal (seed 000), and
    /// the checksummed form of its field list with a hex serial.
    #[test]
    fn rev3_lines_of_the_proposal() {
        // line, url, mime, serial, checksum, length
        type Case<'a> = (&'a [u8], &'a [u8], &'a [u8], &'a [u8], &'a [u8], u64);
        let cases: [Case; 6] = [
            (b"http://www.archive.org/index.html 201.201.201.111 20040724100457 text/html 1FE 3043",
             b"http://www.archive.org/index.html", b"text/html", b"1FE", b"", 3043),
            (b"ari:20040724100457;1FE;http://www.archive.org/index.html 192.168.201.167 20040724100888 application/rdf+xml;arcrecordtype=metadata 1FF 5096",
             b"ari:20040724100457;1FE;http://www.archive.org/index.html", b"application/rdf+xml;arcrecordtype=metadata", b"1FF", b"", 5096),
            (b"ari:20040724100457;1FE;http://www.archive.org/index.html 192.168.201.167 20040724100999 message/http;msgtype=request 200 3333",
             b"ari:20040724100457;1FE;http://www.archive.org/index.html", b"message/http;msgtype=request", b"200", b"", 3333),
            (b"http://www.archive.org/index.html 201.201.201.111 20040724104444 message/http;msgtype=response 210 3043",
             b"http://www.archive.org/index.html", b"message/http;msgtype=response", b"210", b"", 3043),
            (b"ari:20040724100888;200;ari:20040724100457;1FE;http://www.archive.org/mydocument.doc 192.168.201.143 20040724109999 application/xml+rdf;arcrecordtype=transform 211 5096",
             b"ari:20040724100888;200;ari:20040724100457;1FE;http://www.archive.org/mydocument.doc", b"application/xml+rdf;arcrecordtype=transform", b"211", b"", 5096),
            (b"http://www.archive.org/index.html 201.201.201.111 20040724100457 text/html 1FE urn:sha1:5RT35RT35RT35RT35RT35RT35RT35RT3 3043",
             b"http://www.archive.org/index.html", b"text/html", b"1FE", b"urn:sha1:5RT35RT35RT35RT35RT35RT35RT35RT3", 3043),
        ];
        for (line, url, mime, serial, checksum, len) in cases {
            let h = v(line);
            let shown = String::from_utf8_lossy(line);
            assert_eq!(h.kind, HeaderKind::Rev3, "{shown}");
            assert_eq!(
                (h.url, h.mime, h.offset, h.checksum),
                (url, mime, serial, checksum),
                "{shown}"
            );
            assert_eq!(h.length(), Some(len), "{shown}");
            assert!(h.is_plausible(), "{shown}");
        }
        // A v1 mime with a space is still a v1 mime.
        let h = v(b"http://a/ 1.2.3.4 20040724100457 text/html; abc 30");
        assert_eq!((h.kind, h.mime), (HeaderKind::V1, &b"text/html; abc"[..]));
    }

    #[test]
    fn odd_date_lengths_are_dates() {
        for (line, date) in [
            // 10_digit_date (and `None` as the IP)
            (&b"https://www.facebook.com/Vanishing-Ireland-110498185666457/ None 2016020900 text/html 408966"[..], &b"2016020900"[..]),
            // arc_v1_with_v2_header: 12 digits
            (b"http://www.cdnow.com:80/cgi-bin/mserver/pagename=/RP/CDN/FIND/discography.html/artistid=HENDERSON*JOE/select=music 209.83.166.84 200011101120 text/html 85623", b"200011101120"),
            // 14_digit_plus_text_date
            (b"https://scontent-cdg2-1.xx.fbcdn.net/300261_10150266886136400_4821326_n. None 20160211000000jpg text/html 1238", b"20160211000000jpg"),
            // 15_digit_date (8-digit length: not taken for the date)
            (b"http://twitter.com/unesco_fr.xml None 201512000000000 text/xml 17327214", b"201512000000000"),
            // 16_digit_date
            (b"http://www.afp.com:80/home/img/es.gif 158.50.204.10 2000082305410049 image/gif 881", b"2000082305410049"),
            // 18_digit_date
            (b"http://mars.spaceports.com:80/~jddp/images/links_off.gif 216.234.161.73 200009180023002953 image/gif 1055", b"200009180023002953"),
            // hex_instead_of_date
            (b"http://www.cbt.ki.se:80/wwwCNT/Staff/bergman.jan/ 130.237.109.120 a0d1fdddf3165d0447b1f7a285c61c1c9 text/html 3016", b"a0d1fdddf3165d0447b1f7a285c61c1c9"),
            // aut badexample.arc.gz: `null`
            (b"http://www.archive.org/ 207.241.229.39 null text/html 680", b"null"),
        ] {
            let h = v(line);
            assert_eq!(h.date, date, "{}", String::from_utf8_lossy(line));
            assert_eq!(h.form, Form::Exact);
            assert!(h.length().is_some());
            assert!(h.is_plausible(), "{}", String::from_utf8_lossy(line));
        }
        assert_eq!(
            v(b"https://www.facebook.com/Vanishing-Ireland-110498185666457/ None 2016020900 text/html 408966").ip,
            b"None"
        );
    }

    #[test]
    fn ip_and_date_transposed() {
        // transposed_header
        let line = b"http://play.mp3.com/cgi-bin/play/play.cgi/AAIAQo93MQDABG5vcm1QBAAAAFJ88QUAUQEAAABDNyyxP6SbRY55RYa.wO2ewL.61xo-/Losing_Time.mp3 20031219215023 63.241.16.130 text/plain 285";
        let h = v(line);
        assert!(h.transposed);
        assert_eq!(
            (h.ip, h.date),
            (&b"63.241.16.130"[..], &b"20031219215023"[..])
        );
        assert!(h.url.ends_with(b"Losing_Time.mp3"));
        assert_eq!((h.mime, h.length()), (&b"text/plain"[..], Some(285)));
    }

    #[test]
    fn spaces_in_url() {
        // warcio example-space-in-url.arc
        let line = b"http://example.com/index.cfm?FuseAction=Email&EmailTitle=Examples From The Live Web&IsPopUp=False 93.184.216.119 20140216050221 text/html 1591";
        let h = v(line);
        assert_eq!(
            h.url,
            b"http://example.com/index.cfm?FuseAction=Email&EmailTitle=Examples From The Live Web&IsPopUp=False"
        );
        assert_eq!((h.ip, h.length()), (&b"93.184.216.119"[..], Some(1591)));
        // spaces_in_url: 67 fields, runs of spaces (more tokens than the
        // parser splits off: the rest is URL).
        let line = b"http://www3.fdic.gov/Call_tfr_rpts/toccallreport1.asp?pCert=16445&pDocket=0&pcmbQtrEnd=09%2F30%2F2002&paddr=MAIN STREET                                                             &pCity=CHENEYVILLE+++++++++++++++++++&pStalp=LA&pzip5=71325&pInstitution=The+Farmers+Bank+%26+Trust+of+Cheneyville+++++++++++++++++++++++++++++++++ 192.147.69.47 20041018000129 text/html 224";
        let h = v(line);
        assert!(h
            .url
            .starts_with(b"http://www3.fdic.gov/Call_tfr_rpts/toccallreport1.asp?pCert=16445"));
        assert!(h
            .url
            .ends_with(b"Cheneyville+++++++++++++++++++++++++++++++++"));
        assert_eq!(
            h.url.len(),
            line.len() - b" 192.147.69.47 20041018000129 text/html 224".len()
        );
        assert_eq!((h.date, h.length()), (&b"20041018000129"[..], Some(224)));
        assert!(h.is_plausible());
    }

    #[test]
    fn space_inside_mime() {
        // alexa_charset_in_header
        let line = b"http://free.allocine.fr:80/tv/cineaction.asp 195.68.112.49 20000824015105 text/html; Charset=iso-8859-1 20567";
        let h = v(line);
        assert_eq!(h.form, Form::MimeWithSpaces);
        assert_eq!(h.url, b"http://free.allocine.fr:80/tv/cineaction.asp");
        assert_eq!(h.mime, b"text/html; Charset=iso-8859-1");
        assert_eq!(h.length(), Some(20567));
        assert!(h.is_plausible());
    }

    #[test]
    fn empty_mime() {
        // alexa_short_header: two spaces between date and length.
        let line = b"http://www.killerjo.net:80/robots.txt 211.111.217.29 20110804181142  39";
        assert_eq!(
            fields(line),
            (
                &b"http://www.killerjo.net:80/robots.txt"[..],
                &b"211.111.217.29"[..],
                &b"20110804181142"[..],
                &b""[..],
                &b"39"[..]
            )
        );
        assert!(v(line).is_plausible());
    }

    #[test]
    fn odd_mime_values() {
        // bad_mime_type (U+FFFD in the mime), empty_payload_header_ending_with_lf
        let h = v(b"http://cafethumb.naver.net/20101223_84/qkrgns3_129303386816936xUq_jpg/imag0030_qkrgns3.jpg 128.241.220.80 20120407152447 imag\xef\xbf\xbdm) 3507");
        assert_eq!(
            (h.mime, h.length()),
            (&b"imag\xef\xbf\xbdm)"[..], Some(3507))
        );
        let h = v(b"http://210.179.120.1/test 210.179.120.1 20030801004548 no-type 188");
        assert_eq!(h.mime, b"no-type");
    }

    #[test]
    fn control_and_non_utf8_bytes_in_url_kept_raw() {
        // carriage_return_in_url
        let h = v(b"http://cheapchicks.org/cgi-\x0dbin/count/slcnt.cgi?c=3 204.13.160.129 20070216134117 text/html 1269");
        assert_eq!(
            h.url,
            b"http://cheapchicks.org/cgi-\rbin/count/slcnt.cgi?c=3"
        );
        // formfeed_in_url (and raw high bytes)
        let line = b"http://www.megaclick.com:80/notf!\xca\x9d\xf5\x99s\x19\xf1d\xef\x96\x03X\x92\x8d\xa7\x1d\x99\xf9!\xd7\x97/\x8c\x1c52\xfa\xf9\xf2b\xe2\x89u\xdc\xad2#l\x8a\xae\xd9\xdf\xbd\x05;2z\x91\x10r\x0c\xcf9\xbe 69.5.88.77 20070519230830 text/html 403";
        let h = v(line);
        assert!(h.url.contains(&0x0c) && h.url.ends_with(b"\x0c\xcf9\xbe"));
        assert_eq!(h.length(), Some(403));
        // chardet_failure_url, non_ascii_url
        let h = v(b"http://guide.pconline.com.cn:80/gamecomment/post.jsp?column=netgame&topic=\xce\xd2\xc3\xc7\xd7\xf6 61.145.113.112 20040711214255 text/html 414");
        assert!(h.url.ends_with(b"\xd7\xf6"));
        let h = v(b"http://arevebebe.free.fr/php3/selcateg.php3?selec=\xe9cole 212.27.35.40 20021108114510 text/html 10371");
        assert_eq!(
            h.url,
            b"http://arevebebe.free.fr/php3/selcateg.php3?selec=\xe9cole"
        );
        // A NUL byte
        let h = v(b"http://a/\x00b 1.2.3.4 20010101000000 text/html 0");
        assert_eq!(h.url, b"http://a/\x00b");
    }

    #[test]
    fn bad_lengths() {
        // negative_content_length
        let h = v(b"http://www.utv.hu//swfs/153.swf?rnd=6102 217.20.138.173 20120420130223 application/x-shockwave-flash -2046788874");
        assert_eq!((h.length_raw, h.length()), (&b"-2046788874"[..], None));
        assert!(h.is_plausible(), "a negative length still marks a header");
        // bad.arc (warcio): -1 and abc, 18-digit dates
        let h = v(b"http://example.com/ 93.184.216.119 201404010000000000 text/html -1");
        assert_eq!(h.length(), None);
        let h = v(b"http://example.com/ 93.184.216.119 201404010000000000 text/html abc");
        assert_eq!((h.length_raw, h.length()), (&b"abc"[..], None));
        assert!(
            !h.is_plausible(),
            "not found by scanning, only at a boundary"
        );
        assert!(h.is_acceptable());
        assert_eq!(parse_length(b"99999999999999999999"), None);
        assert_eq!(parse_length(b"+5"), None);
        assert_eq!(parse_length(b"0"), Some(0));
    }

    #[test]
    fn dashed_and_invalid_fields() {
        // jwat test-arc-1.0-dashed-fields.arc (CRLF line end)
        let h = v(b"filedesc:// - - - 76\r");
        assert_eq!(
            (h.url, h.ip, h.date, h.mime, h.length()),
            (
                &b"filedesc://"[..],
                &b"-"[..],
                &b"-"[..],
                &b"-"[..],
                Some(76)
            )
        );
        // jwat test-arc-1.0-invalid-fields.arc
        let h = v(b"filedesc://horsy|\\hello a.b.c.d blue_monday gif\\image one");
        assert_eq!(h.form, Form::Fallback);
        assert_eq!(h.url, b"filedesc://horsy|\\hello");
        assert_eq!(h.length(), None);
        assert!(h.is_acceptable() && !h.is_plausible());
    }

    #[test]
    fn http_head_lines_are_not_headers() {
        // A declared length ending inside `Date: Fri, 23 Jan 2004 ...`
        // (gen_arc_corpus.py --seed 12 --corrupt 6, bad-length).
        let h = v(b"te: Fri, 23 Jan 2004 21:50:11 GMT\r");
        assert_eq!(h.form, Form::Fallback);
        assert!(!h.is_acceptable());
    }

    #[test]
    fn short_lines() {
        // gen_arc_corpus.py short-header damage: `URL IP date`
        let h = v(b"http://news.example.org/x?start=a 192.0.2.7 20110112103931");
        assert_eq!(
            (h.form, h.mime, h.length_raw),
            (Form::Short, &b""[..], &b""[..])
        );
        let h = v(b"http://x/ 192.0.2.7 20110112103931 text/html");
        assert_eq!(
            (h.form, h.mime, h.length()),
            (Form::Short, &b"text/html"[..], None)
        );
        assert!(!h.is_plausible());
    }

    #[test]
    fn not_headers() {
        for line in [
            &b""[..],
            b"1 1 InternetArchive",
            b"URL IP-address Archive-date Content-type Archive-length",
            b"HTTP/1.1 200 OK",
            b"http://www.bt.dk/node/100",
            b"This file is not an arc file.",
        ] {
            let h = HeaderView::parse(line);
            assert!(
                !h.is_some_and(|h| h.is_acceptable()),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        // A NetarchiveSuite CDX line inside a payload is not a record start.
        let cdx = b"http://www.fyens.dk/a.php?pictureid=379 194.255.126.118 20040511211322 image/jpeg 3144 fyensdk.arc 16519 8d7dd2e8eb8a8f5d8bd3a5c1c0c1b0d3";
        assert!(!HeaderView::parse(cdx).is_some_and(|h| h.is_plausible()));
    }

    #[test]
    fn parse_into_reuses_and_reports() {
        let mut h = Header::default();
        h.parse_into(b"http://a/ 1.2.3.4 20010101000000 text/html 5", 0)
            .unwrap();
        assert_eq!((h.kind, h.length), (HeaderKind::V1, Some(5)));
        let err = h.parse_into(b"junk", 77).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("offset 77: not an ARC header line"));
        assert_eq!(h, Header::default());
        let h = Header::parse(b"dns:x 1.2.3.4 20010101000000 text/dns 3", 0).unwrap();
        assert_eq!(h.url, b"dns:x");
    }
}
