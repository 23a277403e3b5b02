//! The MIME pieces of an object: header lines, the boundary parameter,
//! delimiter lines and object starts, all over borrowed bytes.
//!
//! Lines end at LF; a CR before it, and spaces or tabs at the ends of a
//! field value, are not part of the value. The line terminator belongs to
//! the line it ends, except before a delimiter, where RFC 2046 gives it to
//! the delimiter (see [`Delimiters`]).

use memchr::memmem::Finder;

/// Longest main header the reader looks through for its empty line. Real
/// ones are a few hundred bytes; the cap keeps a file of junk that starts
/// with `MIME-version:` from being scanned as one header.
pub(super) const MAX_HEADER: usize = 64 * 1024;

/// The line at `pos`: its bytes without the LF and a CR before it, and
/// the position after its LF (the end of `data` for a last line without
/// one).
pub(super) fn line_at(data: &[u8], pos: usize) -> (&[u8], usize) {
    let rest = data.get(pos..).unwrap_or_default();
    let (line, next) = match memchr::memchr(b'\n', rest) {
        Some(i) => (&rest[..i], pos + i + 1),
        None => (rest, data.len()),
    };
    (line.strip_suffix(b"\r").unwrap_or(line), next)
}

/// Whether a line counts as empty (ends a header block): nothing but
/// spaces, tabs and CRs, which a writer may leave behind.
pub(super) fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\r'))
}

pub(super) fn trim(s: &[u8]) -> &[u8] {
    let is_sp = |b: &u8| matches!(*b, b' ' | b'\t' | b'\r' | b'\n');
    let start = s.iter().position(|b| !is_sp(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !is_sp(b)).map_or(start, |i| i + 1);
    &s[start..end]
}

pub(super) fn starts_with_ci(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// `name: value` of a header line (value trimmed), or `None` for a line
/// without a colon or one that continues the previous field (leading
/// space or tab: folded values are rare here and only their first line
/// is read).
pub(super) fn split_field(line: &[u8]) -> Option<(&[u8], &[u8])> {
    if matches!(line.first(), Some(b' ' | b'\t')) {
        return None;
    }
    let colon = memchr::memchr(b':', line)?;
    Some((trim(&line[..colon]), trim(&line[colon + 1..])))
}

/// The value of the first field named `name` (case ignored) among the
/// lines of `block`, up to its first empty line when `stop_at_blank`.
pub(super) fn field<'a>(block: &'a [u8], name: &[u8], stop_at_blank: bool) -> Option<&'a [u8]> {
    let mut pos = 0;
    while pos < block.len() {
        let (line, next) = line_at(block, pos);
        pos = next;
        if stop_at_blank && is_blank(line) {
            return None;
        }
        if let Some((n, v)) = split_field(line) {
            if n.eq_ignore_ascii_case(name) {
                return Some(v);
            }
        }
    }
    None
}

/// `s` without spaces at either end, no-break spaces (U+00A0, in UTF-8 or
/// Latin-1) counted: text copied from a web page, the format's own
/// example among them, has them where a header had spaces.
fn trim_param(s: &[u8]) -> &[u8] {
    let mut s = s;
    loop {
        s = match s {
            [0xc2, 0xa0, rest @ ..] | [b' ' | b'\t' | b'\r' | b'\n' | 0xa0, rest @ ..] => rest,
            [rest @ .., 0xc2, 0xa0] | [rest @ .., b' ' | b'\t' | b'\r' | b'\n' | 0xa0] => rest,
            _ => return s,
        };
    }
}

/// The `boundary` parameter of a `Content-Type` value, quotes removed;
/// `None` when absent or empty.
pub(super) fn boundary_param(content_type: &[u8]) -> Option<&[u8]> {
    let mut rest = content_type;
    // Parameters follow the media type, each after a `;`. A quoted value
    // may hold `;`, so values are skipped as tokens, not by splitting.
    while let Some(semi) = memchr::memchr(b';', rest) {
        rest = &rest[semi + 1..];
        let eq = memchr::memchr(b'=', rest)?;
        let name = trim_param(&rest[..eq]);
        rest = trim_param(&rest[eq + 1..]);
        let value = if let Some(q) = rest.strip_prefix(b"\"") {
            let close = memchr::memchr(b'"', q).unwrap_or(q.len());
            rest = q.get(close + 1..).unwrap_or_default();
            &q[..close]
        } else {
            // Boundary characters are ASCII (RFC 2046 `bchars`).
            let end = rest
                .iter()
                .position(|&b| matches!(b, b';' | b' ' | b'\t') || !b.is_ascii())
                .unwrap_or(rest.len());
            let v = &rest[..end];
            rest = &rest[end..];
            v
        };
        if name.eq_ignore_ascii_case(b"boundary") {
            return (!value.is_empty()).then_some(value);
        }
    }
    None
}

/// A media type as the index reports it: the `Content-Type` value up to
/// its first `;` or whitespace; `None` when that is empty.
pub(super) fn media_type(content_type: &[u8]) -> Option<&[u8]> {
    let v = trim(content_type);
    let end = v
        .iter()
        .position(|&b| b == b';' || b.is_ascii_whitespace())
        .unwrap_or(v.len());
    let m = &v[..end];
    (!m.is_empty()).then_some(m)
}

/// The status code of an HTTP status line (`HTTP/1.0 200 OK`): three
/// digits after the protocol token.
pub(super) fn status_code(line: &[u8]) -> Option<u16> {
    if !starts_with_ci(line, b"HTTP/") {
        return None;
    }
    let sp = memchr::memchr(b' ', line)?;
    let rest = &line[sp..];
    let rest = &rest[rest.iter().position(|&b| b != b' ')?..];
    let digits = rest.get(..3)?;
    let after = rest.get(3).copied();
    if digits.iter().all(u8::is_ascii_digit) && matches!(after, None | Some(b' ' | b'\t')) {
        Some(
            digits
                .iter()
                .fold(0u16, |n, d| n * 10 + u16::from(d - b'0')),
        )
    } else {
        None
    }
}

/// A delimiter line found by [`Delimiters::next`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Delimiter {
    /// The first `-` of `--BOUNDARY`.
    pub start: usize,
    /// After the line's LF (the end of the data when it has none).
    pub end: usize,
    /// `--BOUNDARY--`, the last delimiter of the object.
    pub close: bool,
}

/// Finds the delimiter lines of one boundary.
///
/// A delimiter is `--BOUNDARY` at the start of a line, then `--` for the
/// closing one, then only spaces or tabs (RFC 2046's transport padding)
/// up to the line end or the end of the data. `--BOUNDARYx` at a line
/// start is content: a writer that picks its boundary from the content's
/// MD5, as Kulturarw3 did, never meets it, and content that merely looks
/// like a delimiter must not end a part.
pub(super) struct Delimiters<'b> {
    finder: Finder<'b>,
    len: usize,
}

impl<'b> Delimiters<'b> {
    pub fn new(boundary: &'b [u8]) -> Delimiters<'b> {
        Delimiters {
            finder: Finder::new(boundary),
            len: boundary.len(),
        }
    }

    /// The first delimiter line starting at or after `from`, which must be
    /// a line start.
    pub fn next(&self, data: &[u8], from: usize) -> Option<Delimiter> {
        let mut at = from.saturating_add(2);
        loop {
            // The boundary follows `--`, so it cannot start before from + 2.
            let hit = at + self.finder.find(data.get(at..)?)?;
            let start = hit - 2;
            if &data[start..hit] == b"--" && (start == from || data[start - 1] == b'\n') {
                if let Some((end, close)) = self.tail(data, hit + self.len) {
                    return Some(Delimiter { start, end, close });
                }
            }
            at = hit + 1;
        }
    }

    /// The delimiter line at `pos`, if the line there is one.
    pub fn at(&self, data: &[u8], pos: usize) -> Option<Delimiter> {
        let b = data.get(pos..)?.strip_prefix(b"--")?;
        if !b.starts_with(self.finder.needle()) {
            return None;
        }
        let (end, close) = self.tail(data, pos + 2 + self.len)?;
        Some(Delimiter {
            start: pos,
            end,
            close,
        })
    }

    /// What follows the boundary at `pos`: the line end and whether it
    /// was a closing delimiter, or `None` when the line goes on with
    /// something else.
    fn tail(&self, data: &[u8], pos: usize) -> Option<(usize, bool)> {
        let close = data.get(pos..pos + 2) == Some(b"--");
        let mut p = if close { pos + 2 } else { pos };
        while matches!(data.get(p), Some(b' ' | b'\t')) {
            p += 1;
        }
        if data.get(p) == Some(&b'\r') {
            p += 1;
        }
        match data.get(p) {
            None => Some((data.len(), close)),
            Some(b'\n') => Some((p + 1, close)),
            Some(_) => None,
        }
    }
}

/// Whether an object starts at `pos`: a `MIME-version:` line (case
/// ignored) opening a header that, within [`MAX_HEADER`] bytes and before
/// its empty line, has a `Content-Type` with a boundary and either an
/// archive field (`HTTP-URL`, `HTTP-www-archiver`, `HTTP-archive-time`)
/// or a `KulturArw3` boundary.
///
/// Stricter than what the reader parses at its own position: this is
/// what it resynchronises on after damage, inside bytes that may be
/// content, and what sniffs a file. An HTTP response archived with a
/// `MIME-version: 1.0` header (common in 1990s servers), an e-mail or an
/// MHTML page has no archive field and another boundary.
pub(super) fn is_object_start(data: &[u8], pos: usize) -> bool {
    let (first, mut p) = line_at(data, pos);
    if !starts_with_ci(first, b"MIME-version:") {
        return false;
    }
    let limit = pos.saturating_add(MAX_HEADER).min(data.len());
    let (mut boundary, mut archive_field) = (None, false);
    while p < limit {
        let (line, next) = line_at(data, p);
        p = next;
        if is_blank(line) {
            break;
        }
        let Some((name, value)) = split_field(line) else {
            continue;
        };
        if name.eq_ignore_ascii_case(b"Content-Type") && boundary.is_none() {
            boundary = boundary_param(value);
        } else if [&b"HTTP-URL"[..], b"HTTP-www-archiver", b"HTTP-archive-time"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
        {
            archive_field = true;
        }
    }
    boundary.is_some_and(|b| archive_field || starts_with_ci(b, b"KulturArw3"))
}

/// Finds object starts ([`is_object_start`]) at line starts inside a
/// range of bytes.
///
/// Every object start holds `MIME-version:` in some capitalisation; the
/// two common ones (`MIME-version`, `MIME-Version`) share `ersion:`, and
/// all-capitals `MIME-VERSION:` has `ERSION:`. Searching for those two
/// with memmem keeps the scan over content as fast as the delimiter scan;
/// a mixed spelling like `MIME-VeRsion:` is only recognised where the
/// reader stands, not when resynchronising.
pub(super) struct Starts {
    lower: Finder<'static>,
    upper: Finder<'static>,
}

impl Starts {
    pub fn new() -> Starts {
        Starts {
            lower: Finder::new(b"ersion:"),
            upper: Finder::new(b"ERSION:"),
        }
    }

    /// The first object start in `data[from..to]`.
    pub fn first(&self, data: &[u8], from: usize, to: usize) -> Option<usize> {
        let to = to.min(data.len());
        let a = Self::first_with(&self.lower, data, from, to);
        let b = Self::first_with(&self.upper, data, from, a.unwrap_or(to));
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn first_with(finder: &Finder<'_>, data: &[u8], from: usize, to: usize) -> Option<usize> {
        // `MIME-v` comes before the needle.
        let mut at = from.saturating_add(6);
        while at < to {
            let hit = at + finder.find(data.get(at..to)?)?;
            let start = hit - 6;
            if (start == 0 || data[start - 1] == b'\n') && is_object_start(data, start) {
                return Some(start);
            }
            at = hit + 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_at_strips_cr_and_reports_the_next_line() {
        assert_eq!(line_at(b"ab\r\ncd", 0), (&b"ab"[..], 4));
        assert_eq!(line_at(b"ab\r\ncd", 4), (&b"cd"[..], 6));
        assert_eq!(line_at(b"\n", 0), (&b""[..], 1));
        assert_eq!(line_at(b"", 0), (&b""[..], 0));
        assert_eq!(line_at(b"x", 5), (&b""[..], 1));
    }

    #[test]
    fn boundary_forms() {
        let b =
            |v: &str| boundary_param(v.as_bytes()).map(|b| String::from_utf8_lossy(b).into_owned());
        assert_eq!(b("multipart/mixed; boundary=K_1").as_deref(), Some("K_1"));
        assert_eq!(
            b("multipart/mixed;boundary=\"a;b c\"; x=y").as_deref(),
            Some("a;b c")
        );
        assert_eq!(
            b("multipart/mixed; charset=\"x;boundary=no\"; BOUNDARY = z").as_deref(),
            Some("z")
        );
        assert_eq!(
            b("multipart/mixed; boundary=K_1 ; x=y").as_deref(),
            Some("K_1")
        );
        assert_eq!(b("multipart/mixed; boundary="), None);
        assert_eq!(b("multipart/mixed"), None);
        assert_eq!(
            b("multipart/mixed; boundary=\"unclosed").as_deref(),
            Some("unclosed")
        );
        // No-break spaces, as the format's example has them.
        assert_eq!(
            b("multipart/mixed;\u{a0}boundary=K\u{a0}").as_deref(),
            Some("K")
        );
    }

    #[test]
    fn status_lines() {
        assert_eq!(status_code(b"HTTP/1.0 200 OK"), Some(200));
        assert_eq!(status_code(b"http/1.1  404"), Some(404));
        assert_eq!(status_code(b"HTTP/1.0 2000 OK"), None);
        assert_eq!(status_code(b"HTTP/1.0 20"), None);
        assert_eq!(status_code(b"Date: Wed, 01 Oct 1997 16:03:56 GMT"), None);
        assert_eq!(status_code(b"HTTP/1.0"), None);
    }

    #[test]
    fn media_types() {
        assert_eq!(
            media_type(b" text/html; charset=x"),
            Some(&b"text/html"[..])
        );
        assert_eq!(media_type(b"text/plain"), Some(&b"text/plain"[..]));
        assert_eq!(media_type(b" ; x"), None);
    }

    #[test]
    fn delimiters_need_a_line_start_and_a_clean_tail() {
        let d = Delimiters::new(b"B");
        let data = b"x--B\n--Bx\n --B\n--B \t\r\nbody\n--B--";
        let first = d.next(data, 0).unwrap();
        assert_eq!((first.start, first.close), (15, false));
        assert_eq!(&data[first.end..first.end + 4], b"body");
        let last = d.next(data, first.end).unwrap();
        assert_eq!((last.start, last.end, last.close), (27, data.len(), true));
        assert_eq!(d.next(data, last.end), None);
        // At the search start itself, and a boundary that starts with dashes.
        let d = Delimiters::new(b"---=_x");
        let data = b"-----=_x\n";
        assert_eq!(
            d.next(data, 0),
            Some(Delimiter {
                start: 0,
                end: 9,
                close: false
            })
        );
    }

    #[test]
    fn object_starts_need_a_boundary_and_an_archive_field() {
        let good = b"MIME-version: 1.0\nContent-Type: multipart/mixed; boundary=x\nHTTP-URL: http://a/\n\n";
        assert!(is_object_start(good, 0));
        let http = b"MIME-version: 1.0\nContent-Type: text/html\nServer: x\n\n";
        assert!(!is_object_start(http, 0));
        let mail = b"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=x\n\n";
        assert!(!is_object_start(mail, 0));
        let k3 = b"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=KulturArw3_00\n\n";
        assert!(is_object_start(k3, 0));
        let mut text = b"junk\nMIME-version: 1.0\nServer: x\n\nmore\n".to_vec();
        let at = text.len();
        text.extend_from_slice(good);
        let starts = Starts::new();
        assert_eq!(starts.first(&text, 0, text.len()), Some(at));
        assert_eq!(starts.first(&text, 0, at + 5), None);
        let upper =
            b"x\nMIME-VERSION: 1.0\nContent-Type: multipart/mixed; boundary=x\nHTTP-URL: u\n";
        assert_eq!(starts.first(upper, 0, upper.len()), Some(2));
    }
}
