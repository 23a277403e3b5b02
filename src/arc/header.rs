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
        // scheme (`urn:sha1:...`, `sha1:...`).
        if n >= 7
            && is_date_like(t(n - 5))
            && is_ip_like(t(n - 6))
            && is_num_or_dash(t(n - 3))
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

    /// Good enough to be taken as a header where a header is expected (at a
    /// record boundary): a URL with a scheme and a recognised layout.
    pub fn is_acceptable(&self) -> bool {
        self.has_scheme()
    }

    /// Strict enough to be taken as the start of a record found by scanning
    /// damaged or unknown-length data, where a false positive would cut a
    /// good record in two: a recognised layout with all of URL scheme, IP,
    /// date and a numeric (possibly negative) length.
    pub fn is_plausible(&self) -> bool {
        self.has_scheme()
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
];
