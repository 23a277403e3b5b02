//! HTTP response heads inside ARC record blocks.
//!
//! Two readings of the same bytes are needed because the reference indexers
//! split head and payload differently, and the digest of the payload must
//! match theirs byte for byte:
//!
//! * [`Head::parse`] reads like warcio (used by pywb's and cdxj-indexer's
//!   indexers, and by the `ukvs` and `cdxj` profiles): lines end at `\n`,
//!   trailing whitespace is stripped, the head ends at the first line that is
//!   empty after stripping, header lines may continue on lines starting with
//!   a space or tab.
//! * [`cdx_writer_payload_start`] reads like CDX-Writer (`cdx11` profile):
//!   `\r`, `\n` and `\r\n` all end a line, so `HTTP/1.1 410 Gone\r\r\n\r\n`
//!   has the payload `\r\n`; its status comes from [`cdx_writer_status`].
//!
//! Everything borrows from the block; only folded (continued) header values
//! are copied.

use std::borrow::Cow;

/// A warcio-style parsed HTTP head.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Head<'a> {
    /// The status line's first token (`HTTP/1.1`), as warcio's "protocol".
    pub protocol: &'a [u8],
    /// What warcio reports as the status code: the first token after the
    /// protocol (may be empty or non-numeric on broken heads).
    pub status: &'a [u8],
    /// The first `Content-Type` header's value, left-trimmed.
    pub content_type: Option<Cow<'a, [u8]>>,
    /// The first `Location` header's value, left-trimmed.
    pub location: Option<Cow<'a, [u8]>>,
    /// Where the payload starts in the block.
    pub payload_start: usize,
    /// At least one `name: value` line was read.
    pub has_fields: bool,
    /// Whether the `Content-Type` line is read as UTF-8 (else Latin-1).
    content_type_utf8: bool,
}

/// Python's `str.isspace` on the code points an ASCII or Latin-1 header can
/// hold at a line end (what `rstrip()` removes).
pub(crate) fn is_py_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1f)
}

/// Python's `str.isspace` on a character (Rust's whitespace and the
/// separators `0x1c`-`0x1f`).
fn is_py_space_char(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\x1c'..='\x1f')
}

/// Python's `str.isspace` on a byte of a line warcio decodes as Latin-1
/// (one that is not valid UTF-8): NEL and NBSP are blanks too.
fn is_latin1_space(b: u8) -> bool {
    is_py_space(b) || b == 0x85 || b == 0xa0
}

/// The text of a header line as warcio decodes it: UTF-8 when the line is
/// valid UTF-8, else Latin-1. Blanks are Python's for that text, so a line
/// of one NBSP ends the head as a blank line does. An ASCII line (nearly
/// every one) is stripped byte by byte: Python's blanks among ASCII are
/// [`is_py_space`]'s, whichever way the line is decoded.
#[derive(Clone, Copy)]
struct Text {
    utf8: bool,
    /// The line is ASCII: the byte rules hold, no decoding needed.
    ascii: bool,
}

impl Text {
    #[inline]
    fn of(line: &[u8]) -> Text {
        let ascii = line.is_ascii();
        Text {
            utf8: ascii || std::str::from_utf8(line).is_ok(),
            ascii,
        }
    }

    /// The text to apply Python's Unicode rules to, when they differ from
    /// the byte rules.
    #[inline]
    fn unicode(self, s: &[u8]) -> Option<&str> {
        match self.ascii || !self.utf8 {
            true => None,
            false => std::str::from_utf8(s).ok(),
        }
    }

    #[inline]
    fn rstrip(self, s: &[u8]) -> &[u8] {
        match self.unicode(s) {
            Some(t) => t.trim_end_matches(is_py_space_char).as_bytes(),
            _ => {
                let end = s
                    .iter()
                    .rposition(|&b| !is_latin1_space(b))
                    .map_or(0, |i| i + 1);
                &s[..end]
            }
        }
    }

    #[inline]
    fn lstrip(self, s: &[u8]) -> &[u8] {
        match self.unicode(s) {
            Some(t) => t.trim_start_matches(is_py_space_char).as_bytes(),
            _ => {
                let start = s
                    .iter()
                    .position(|&b| !is_latin1_space(b))
                    .unwrap_or(s.len());
                &s[start..]
            }
        }
    }

    fn strip(self, s: &[u8]) -> &[u8] {
        self.lstrip(self.rstrip(s))
    }

    /// Where the first `;` or blank is (`[;\s]`), or the end.
    fn media_type_end(self, v: &[u8]) -> usize {
        match self.unicode(v) {
            Some(t) => t
                .find(|c| c == ';' || is_py_space_char(c))
                .unwrap_or(t.len()),
            _ => v
                .iter()
                .position(|&b| b == b';' || is_latin1_space(b))
                .unwrap_or(v.len()),
        }
    }
}

/// Splits `block[pos..]` at the next `\n` (kept in the consumed count):
/// returns the line without trailing whitespace, how it is decoded, and
/// the next position.
#[inline]
fn read_line(block: &[u8], pos: usize) -> (&[u8], Text, usize) {
    let rest = block.get(pos..).unwrap_or_default();
    let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
    let text = Text::of(&rest[..end]);
    (text.rstrip(&rest[..end]), text, pos + end)
}

impl<'a> Head<'a> {
    /// Parses the head at the start of `block` the way warcio does; `None`
    /// for an empty block (warcio finds no head there).
    pub fn parse(block: &'a [u8]) -> Option<Head<'a>> {
        if block.is_empty() {
            return None;
        }
        let (status_line, status_text, mut pos) = read_line(block, 0);
        let mut head = Head {
            payload_start: pos,
            ..Head::default()
        };
        if status_line.is_empty() {
            return Some(head);
        }
        match memchr::memchr(b' ', status_line) {
            Some(sp) => {
                head.protocol = &status_line[..sp];
                let text = status_text.strip(&status_line[sp + 1..]);
                let code_end = memchr::memchr(b' ', text).unwrap_or(text.len());
                head.status = &text[..code_end];
            }
            None => head.protocol = status_line,
        }
        pos = for_each_field(block, pos, |name, v, text| {
            head.has_fields = true;
            if head.content_type.is_none() && name.eq_ignore_ascii_case(b"content-type") {
                head.content_type = Some(v);
                head.content_type_utf8 = text.utf8;
            } else if head.location.is_none() && name.eq_ignore_ascii_case(b"location") {
                head.location = Some(v);
            }
        });
        head.payload_start = pos.min(block.len());
        Some(head)
    }

    /// Whether warcio counts this head as present: a status text or at
    /// least one header field. A block whose first line is a single token
    /// (`XXXX`, a bare `HTTP/1.0`) with no field after it is no HTTP head,
    /// and cdxj-indexer then prints neither status nor mime.
    pub fn is_present(&self) -> bool {
        !self.status.is_empty() || self.has_fields
    }

    /// The media type as cdxj-indexer prints it: the Content-Type value up
    /// to the first `;` or whitespace.
    pub fn mime(&self) -> Option<&[u8]> {
        let text = self.content_type_text();
        self.content_type.as_deref().map(|v| media_type(v, text))
    }

    /// [`Head::mime`] borrowing from the block when the field was not
    /// folded (the usual case), so it outlives the head.
    pub fn mime_cow(&self) -> Option<Cow<'a, [u8]>> {
        let text = self.content_type_text();
        Some(match self.content_type.as_ref()? {
            Cow::Borrowed(v) => Cow::Borrowed(media_type(v, text)),
            Cow::Owned(v) => Cow::Owned(media_type(v, text).to_vec()),
        })
    }

    fn content_type_text(&self) -> Text {
        Text {
            utf8: self.content_type_utf8,
            ascii: false,
        }
    }

    /// The status as a number, when it is one of three digits.
    pub fn status_code(&self) -> Option<u16> {
        parse_status(self.status)
    }
}

/// Calls `f` with the name and value of each `name: value` line of the
/// head whose fields start at `block[pos..]`, as warcio reads them (a line
/// starting with a space or tab continues the value before it), and how
/// the value's line is decoded; returns where the payload starts.
fn for_each_field<'a>(
    block: &'a [u8],
    mut pos: usize,
    mut f: impl FnMut(&'a [u8], Cow<'a, [u8]>, Text),
) -> usize {
    let (mut line, mut text, next) = read_line(block, pos);
    pos = next;
    while !line.is_empty() {
        let colon = memchr::memchr(b':', line);
        let (name, value) = match colon {
            Some(c) => (rstrip_sp_tab(&line[..c]), Some(text.lstrip(&line[c + 1..]))),
            None => (line, None),
        };
        let value_text = text;
        let (mut next_line, mut next_text, after) = read_line(block, pos);
        pos = after;
        let mut folded: Option<Vec<u8>> = None;
        while next_line.first().is_some_and(|&b| b == b' ' || b == b'\t') {
            if let Some(v) = value {
                folded
                    .get_or_insert_with(|| v.to_vec())
                    .extend_from_slice(next_line);
            }
            let (l, t, after) = read_line(block, pos);
            next_line = l;
            next_text = t;
            pos = after;
        }
        if let Some(v) = value {
            let v = match folded {
                Some(v) => Cow::Owned(v),
                None => Cow::Borrowed(v),
            };
            f(name, v, value_text);
        }
        line = next_line;
        text = next_text;
    }
    pos
}

/// The value of the first field called `name` (any case) in the HTTP head
/// at the start of `block`, as warcio's `get_header` gives it: what
/// cdxj-indexer writes for an `http:NAME` field.
pub fn field<'a>(block: &'a [u8], name: &[u8]) -> Option<Cow<'a, [u8]>> {
    let (status_line, _, pos) = read_line(block, 0);
    if status_line.is_empty() {
        return None;
    }
    let mut found = None;
    for_each_field(block, pos, |n, v, _| {
        if found.is_none() && n.eq_ignore_ascii_case(name) {
            found = Some(v);
        }
    });
    found
}

/// A Content-Type value up to the first `;` or whitespace, trimmed.
fn media_type(v: &[u8], text: Text) -> &[u8] {
    text.strip(&v[..text.media_type_end(v)])
}

/// A three-digit status code, or `None`.
pub fn parse_status(s: &[u8]) -> Option<u16> {
    if s.len() == 3 && s.iter().all(u8::is_ascii_digit) {
        std::str::from_utf8(s).ok()?.parse().ok()
    } else {
        None
    }
}

fn rstrip_sp_tab(s: &[u8]) -> &[u8] {
    let end = s
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(0, |i| i + 1);
    &s[..end]
}

/// CDX-Writer's status: the digits after `HTTP`, an optional `/d.d` and one
/// space at the very start of the block, and whether the version was there.
pub fn cdx_writer_status(block: &[u8]) -> Option<(&[u8], bool)> {
    let rest = block.strip_prefix(b"HTTP")?;
    let (rest, has_version) = match rest {
        [b'/', a, b'.', c, tail @ ..] if a.is_ascii_digit() && c.is_ascii_digit() => (tail, true),
        _ => (rest, false),
    };
    let rest = rest.strip_prefix(b" ")?;
    let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    (n > 0).then(|| (&rest[..n], has_version))
}

/// Where CDX-Writer's payload starts in a block that begins with `HTTP`:
/// after the first empty line, with `\r`, `\n` and `\r\n` all ending lines.
/// A head with no empty line has an empty payload (the block's end).
pub fn cdx_writer_payload_start(block: &[u8]) -> usize {
    let mut pos = 0;
    while pos < block.len() {
        let line_end =
            memchr::memchr2(b'\r', b'\n', &block[pos..]).map_or(block.len(), |i| pos + i);
        let next = match block.get(line_end..line_end + 2) {
            Some(b"\r\n") => line_end + 2,
            _ => (line_end + 1).min(block.len()),
        };
        if line_end == pos && line_end < block.len() {
            return next;
        }
        pos = next;
    }
    block.len()
}

/// CDX-Writer's split of a block into header lines and content: at the
/// first `\r?\n\r?\n`; without one the whole block is head and the content
/// is empty.
pub fn cdx_writer_split(block: &[u8]) -> (&[u8], &[u8]) {
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'\n', &block[from..]) {
        let nl = from + i;
        let head_end = if nl > 0 && block[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        let after = &block[nl + 1..];
        let skip = match after {
            [b'\n', ..] => Some(1),
            [b'\r', b'\n', ..] => Some(2),
            _ => None,
        };
        if let Some(skip) = skip {
            return (&block[..head_end], &block[nl + 1 + skip..]);
        }
        from = nl + 1;
    }
    (block, &[])
}

/// The value of the first header line of `head` that starts with `name:`
/// (case-insensitive) and has at least one byte after the colon, with
/// leading whitespace skipped unless that is all there is, as CDX-Writer's `parse_http_header` finds it. Lines end at `\r`, `\n` or
/// `\r\n`.
pub fn cdx_writer_header<'a>(head: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let mut pos = 0;
    while pos < head.len() {
        let end = memchr::memchr2(b'\r', b'\n', &head[pos..]).map_or(head.len(), |i| pos + i);
        let line = &head[pos..end];
        if line.len() > name.len()
            && line[..name.len()].eq_ignore_ascii_case(name)
            && line[name.len()] == b':'
        {
            let value = &line[name.len() + 1..];
            let start = value
                .iter()
                .position(|&b| !matches!(b, b' ' | b'\t' | 0x0b | 0x0c))
                .unwrap_or(value.len());
            // `\s*(.+)`: at least one byte after the colon; an all-blank
            // value still matches (and carries no flags).
            if !value.is_empty() {
                return Some(if start < value.len() {
                    &value[start..]
                } else {
                    value
                });
            }
        }
        pos = match head.get(end..end + 2) {
            Some(b"\r\n") => end + 2,
            _ => end + 1,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warcio_head_on_a_plain_response() {
        let block = b"HTTP/1.1 301 Moved Permanently\r\nContent-Type: text/html; charset=UTF-8\r\nLocation: http://x/\r\n\r\nbody";
        let h = Head::parse(block).unwrap();
        assert_eq!(h.protocol, b"HTTP/1.1");
        assert_eq!(h.status, b"301");
        assert_eq!(h.status_code(), Some(301));
        assert_eq!(h.mime(), Some(&b"text/html"[..]));
        assert_eq!(h.location.as_deref(), Some(&b"http://x/"[..]));
        assert_eq!(&block[h.payload_start..], b"body");
    }

    #[test]
    fn warcio_head_ends_at_whitespace_only_line_and_bare_lf() {
        let block = b"HTTP/1.0 200 OK\nContent-type: text/xml\n  \t\r\n<x/>";
        let h = Head::parse(block).unwrap();
        assert_eq!(h.mime(), Some(&b"text/xml"[..]));
        assert_eq!(&block[h.payload_start..], b"<x/>");
    }

    #[test]
    fn warcio_and_cdx_writer_disagree_on_cr_cr_lf() {
        // The empty_record.arc.gz response of CDX-Writer's tests.
        let block = b"HTTP/1.1 410 Gone\r\r\n\r\n";
        let h = Head::parse(block).unwrap();
        assert_eq!(h.status, b"410");
        assert_eq!(&block[h.payload_start..], b"");
        assert_eq!(&block[cdx_writer_payload_start(block)..], b"\r\n");
    }

    #[test]
    fn warcio_head_without_blank_line_takes_the_whole_block() {
        let block = b"HTTP/1.1 200 OK\r\nServer: x";
        let h = Head::parse(block).unwrap();
        assert_eq!(h.payload_start, block.len());
        assert_eq!(h.content_type, None);
    }

    #[test]
    fn warcio_folded_header_and_first_wins() {
        let block =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/\r\n html\r\nContent-Type: image/png\r\n\r\n";
        let h = Head::parse(block).unwrap();
        assert_eq!(h.content_type.as_deref(), Some(&b"text/ html"[..]));
        assert_eq!(h.mime(), Some(&b"text/"[..]));
    }

    #[test]
    fn warcio_non_http_first_line() {
        // alexa_short_header.arc.gz: an SSH banner stored as the response.
        let block = b"SSH-2.0-OpenSSH_5.3p1 Debian-3ubuntu3\r\n\n";
        let h = Head::parse(block).unwrap();
        assert_eq!(h.status, b"Debian-3ubuntu3");
        assert_eq!(h.status_code(), None);
        assert_eq!(h.payload_start, block.len());
        assert!(Head::parse(b"").is_none());
        let h = Head::parse(b"\nrest").unwrap();
        assert_eq!((h.status, h.payload_start), (&b""[..], 1));
        assert!(!h.is_present());
        let h = Head::parse(b"XXXX\nXX\n\nrest").unwrap();
        assert!(!h.is_present());
        assert_eq!(h.payload_start, 9);
        assert!(Head::parse(b"HTTP/1.0\nA: b\n\n").unwrap().is_present());
    }

    #[test]
    fn warcio_blanks_are_python_blanks_of_the_decoded_line() {
        // A line of one NBSP is blank: Latin-1 (the line is not UTF-8) or
        // UTF-8, the head ends there.
        for blank in [&b"\xa0"[..], b"\xc2\xa0", b"\x85", b"\xe3\x80\x80"] {
            let block = [&b"HTTP/1.1 200 OK\r\nA: b\r\n"[..], blank, b"\r\nbody"].concat();
            let h = Head::parse(&block).unwrap();
            assert_eq!(&block[h.payload_start..], b"body", "{blank:?}");
        }
        // Trailing NEL and NBSP are stripped, and cut a media type.
        let block = b"HTTP/1.1 200 OK\xa0\r\nContent-Type: \xa0text/html\x85\r\n\r\n";
        let h = Head::parse(block).unwrap();
        assert_eq!((h.status, h.mime()), (&b"200"[..], Some(&b"text/html"[..])));
        let block = "HTTP/1.1 200 OK\r\nContent-Type: text/html\u{a0}x; a=b\r\n\r\n";
        let h = Head::parse(block.as_bytes()).unwrap();
        assert_eq!(h.mime(), Some(&b"text/html"[..]));
        // In a UTF-8 line, a byte 0x85 or 0xa0 is part of a character.
        let block = "HTTP/1.1 200 OK\r\nContent-Type: text/\u{e0}\u{3a0}\r\n\r\n";
        let h = Head::parse(block.as_bytes()).unwrap();
        assert_eq!(h.mime(), Some("text/\u{e0}\u{3a0}".as_bytes()));
    }

    #[test]
    fn cdx_writer_status_forms() {
        assert_eq!(
            cdx_writer_status(b"HTTP/1.1 200 OK"),
            Some((&b"200"[..], true))
        );
        assert_eq!(
            cdx_writer_status(b"HTTP 502 Bad Gateway"),
            Some((&b"502"[..], false))
        );
        assert_eq!(cdx_writer_status(b"HTTP/1.1  200"), None);
        assert_eq!(cdx_writer_status(b"SSH-2.0"), None);
        assert_eq!(
            cdx_writer_status(b"HTTP/1.0 400 \xea"),
            Some((&b"400"[..], true))
        );
    }

    #[test]
    fn cdx_writer_split_forms() {
        assert_eq!(
            cdx_writer_split(b"A\r\nB\r\n\r\nC"),
            (&b"A\r\nB"[..], &b"C"[..])
        );
        assert_eq!(cdx_writer_split(b"A\nB\n\nC"), (&b"A\nB"[..], &b"C"[..]));
        assert_eq!(cdx_writer_split(b"A\r\n\nC"), (&b"A"[..], &b"C"[..]));
        assert_eq!(cdx_writer_split(b"A\nB"), (&b"A\nB"[..], &b""[..]));
        assert_eq!(cdx_writer_payload_start(b"A\nB"), 3);
        assert_eq!(cdx_writer_payload_start(b"A\n\nB"), 3);
    }

    #[test]
    fn cdx_writer_header_lookup() {
        let head = b"HTTP/1.1 200 OK\r\nX-Robots-Tag:  noarchive\r\nx-robots-tag: noindex";
        assert_eq!(
            cdx_writer_header(head, b"x-robots-tag"),
            Some(&b"noarchive"[..])
        );
        assert_eq!(
            cdx_writer_header(b"X-Robots-Tag: \r\nX-Robots-Tag: noindex", b"x-robots-tag"),
            Some(&b" "[..])
        );
        assert_eq!(
            cdx_writer_header(b"X-Robots-Tag:\r\n", b"x-robots-tag"),
            None
        );
    }
}
