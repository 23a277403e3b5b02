//! WARC header blocks and `application/warc-fields` bodies, sans I/O.
//!
//! A header block is a version line (`WARC/1.0`, `WARC/1.1`, ...), named
//! fields (`Name: value`) and an empty line. Lines end with CRLF in the
//! standard and with a bare LF (or CR CR LF) in the wild; all three are
//! read. A line that starts with a blank continues the previous field's
//! value (WARC 1.0 section 5.2), its leading blanks kept. Names and values
//! are kept as written but for the surrounding blanks, as warcio reads
//! them.

use std::ops::Range;

/// The parsed header block of one record: the version and its fields,
/// stored in one buffer that is reused from record to record.
#[derive(Clone, Debug, Default)]
pub struct Head {
    /// Names and values, one after the other.
    text: Vec<u8>,
    version: Range<usize>,
    fields: Vec<(Range<usize>, Range<usize>)>,
}

impl Head {
    /// The version after `WARC/` (`1.0`, `1.1`).
    pub fn version(&self) -> &[u8] {
        &self.text[self.version.clone()]
    }

    /// The value of the first field called `name` (ASCII case ignored).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|(n, _)| self.text[n.clone()].eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| &self.text[v.clone()])
    }

    /// Every field in the order written, repeated names included.
    pub fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields
            .iter()
            .map(|(n, v)| (&self.text[n.clone()], &self.text[v.clone()]))
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.version = 0..0;
        self.fields.clear();
    }

    fn push(&mut self, name: &[u8], value: &[u8]) {
        let n = self.text.len()..self.text.len() + name.len();
        self.text.extend_from_slice(name);
        let v = self.text.len()..self.text.len() + value.len();
        self.text.extend_from_slice(value);
        self.fields.push((n, v));
    }

    /// Appends a continuation line, its leading blanks included, to the
    /// last field's value (it is the last bytes of `text`), as warcio does.
    fn continue_last(&mut self, more: &[u8]) {
        if let Some((_, v)) = self.fields.last_mut() {
            self.text.extend_from_slice(more);
            v.end = self.text.len();
        }
    }
}

/// What [`parse`] found at the start of its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// A whole header block of this many bytes, its blank line included.
    Complete(usize),
    /// A version line, and no blank line yet: more bytes are needed.
    Incomplete,
    /// The input does not start with a WARC version line.
    NotWarc,
}

/// Parses the header block at the start of `data` into `head`.
pub(crate) fn parse(data: &[u8], head: &mut Head) -> Parsed {
    head.clear();
    let Some(first_end) = memchr::memchr(b'\n', data) else {
        return if version_prefix_ok(data) {
            Parsed::Incomplete
        } else {
            Parsed::NotWarc
        };
    };
    let Some(version) = version_of(&data[..first_end]) else {
        return Parsed::NotWarc;
    };
    head.text.extend_from_slice(version);
    head.version = 0..version.len();
    let mut at = first_end + 1;
    // Whether the last line was a field (a line without a colon is none,
    // and neither are the lines that continue it).
    let mut in_field = false;
    loop {
        let Some(i) = memchr::memchr(b'\n', &data[at..]) else {
            return Parsed::Incomplete;
        };
        let line = &data[at..at + i];
        at += i + 1;
        let trimmed = line.trim_ascii_end();
        if trimmed.is_empty() {
            return Parsed::Complete(at);
        }
        if matches!(line[0], b' ' | b'\t') {
            if in_field {
                head.continue_last(trimmed);
            }
            continue;
        }
        // A line without a colon is not a field; it is passed over.
        in_field = match memchr::memchr(b':', trimmed) {
            Some(c) => {
                head.push(
                    trimmed[..c].trim_ascii_end(),
                    trimmed[c + 1..].trim_ascii_start(),
                );
                true
            }
            None => false,
        };
    }
}

/// Whether `b` starts with `WARC/`, ASCII case ignored: warcio and JWAT
/// read `warc/1.0` and `Warc/1.1` version lines too.
pub(crate) fn is_warc_magic(b: &[u8]) -> bool {
    b.get(..5).is_some_and(|m| m.eq_ignore_ascii_case(b"WARC/"))
}

/// The version of a line `WARC/<digits>.<digits>` (`WARC` in any case;
/// blanks and CRs after it ignored).
pub(crate) fn version_of(line: &[u8]) -> Option<&[u8]> {
    if !is_warc_magic(line) {
        return None;
    }
    let v = line[5..].trim_ascii_end();
    let dot = memchr::memchr(b'.', v)?;
    let digits = |s: &[u8]| !s.is_empty() && s.len() <= 4 && s.iter().all(u8::is_ascii_digit);
    (digits(&v[..dot]) && digits(&v[dot + 1..])).then_some(v)
}

/// Whether `data` (with no line end yet) may still become a version line.
pub(crate) fn version_prefix_ok(data: &[u8]) -> bool {
    let n = data.len().min(5);
    data[..n].eq_ignore_ascii_case(&b"WARC/"[..n])
}

/// How far the field line after a version line is looked at.
const FIELD_LOOK: usize = 1024;

/// Whether `data` starts like a WARC record: a version line followed by a
/// line that is a field (`Name:`), as far as `data` goes. Used to find
/// records after damage, so a mention of `WARC/1.0` in a payload that is
/// not followed by a field is not taken for one.
pub(crate) fn looks_like_record(data: &[u8]) -> bool {
    if !is_warc_magic(data) {
        return false;
    }
    // A version line is short: its end is looked for in a few bytes only,
    // and the field line within `FIELD_LOOK`, so that a scan over junk
    // costs the same at every candidate.
    let Some(nl) = memchr::memchr(b'\n', &data[..data.len().min(32)]) else {
        return false;
    };
    if version_of(&data[..nl]).is_none() {
        return false;
    }
    let next = &data[nl + 1..data.len().min(nl + 1 + FIELD_LOOK)];
    let end = memchr::memchr(b'\n', next).unwrap_or(next.len());
    let line = &next[..end];
    match memchr::memchr(b':', line) {
        Some(c) => {
            c > 0
                && line[..c]
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        }
        // The field line is cut by the end of `data`: a name so far.
        None => {
            end == next.len()
                && line
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        }
    }
}

/// The fields of an `application/warc-fields` body (a warcinfo or
/// metadata record): `Name: value` lines, blank and colon-less lines
/// passed over.
pub fn warc_fields(body: &[u8]) -> Vec<(&[u8], &[u8])> {
    body.split(|&b| b == b'\n')
        .filter_map(|line| {
            let c = memchr::memchr(b':', line)?;
            let name = line[..c].trim_ascii();
            (!name.is_empty()).then(|| (name, line[c + 1..].trim_ascii()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_lf_and_continuation() {
        let mut h = Head::default();
        let data = b"WARC/1.1\r\nWARC-Type: response\r\nX-Long: a\r\n  b\nContent-Length:  5 \r\n\r\nhello";
        assert_eq!(parse(data, &mut h), Parsed::Complete(data.len() - 5));
        assert_eq!(h.version(), b"1.1");
        assert_eq!(h.get("warc-type"), Some(&b"response"[..]));
        assert_eq!(h.get("X-Long"), Some(&b"a  b"[..]));
        assert_eq!(h.get("content-length"), Some(&b"5"[..]));
        assert_eq!(h.get("missing"), None);
    }

    #[test]
    fn incomplete_and_foreign() {
        let mut h = Head::default();
        assert_eq!(parse(b"WARC/1.0\r\nA: b\r\n", &mut h), Parsed::Incomplete);
        assert_eq!(parse(b"WAR", &mut h), Parsed::Incomplete);
        assert_eq!(parse(b"W\xffC/1.0\r\n", &mut h), Parsed::NotWarc);
        assert_eq!(parse(b"WARC/x\r\n\r\n", &mut h), Parsed::NotWarc);
        assert_eq!(parse(b"", &mut h), Parsed::Incomplete);
    }

    #[test]
    fn record_starts() {
        assert!(looks_like_record(b"WARC/1.0\r\nWARC-Type: x\r\n"));
        assert!(looks_like_record(b"WARC/1.0\nWARC-Ty"));
        assert!(!looks_like_record(b"WARC/1.0\r\nsome text here\r\n"));
        assert!(!looks_like_record(b"WARC/1.0 is a format\r\nA: b\r\n"));
        assert!(!looks_like_record(b"WARC/1.0"));
    }

    #[test]
    fn version_line_in_any_case() {
        let mut h = Head::default();
        for line in ["warc/1.0", "Warc/1.1", "wArC/0.17"] {
            let data = format!("{line}\r\nWARC-Type: response\r\n\r\n");
            assert_eq!(
                parse(data.as_bytes(), &mut h),
                Parsed::Complete(data.len()),
                "{line}"
            );
            assert_eq!(h.version(), &line.as_bytes()[5..]);
            assert!(looks_like_record(data.as_bytes()), "{line}");
        }
        assert_eq!(parse(b"war", &mut h), Parsed::Incomplete);
        assert_eq!(version_of(b"WARCS/1.0"), None);
        assert_eq!(version_of(b"warc/1.x"), None);
    }

    #[test]
    fn warc_fields_body() {
        let f = warc_fields(b"software: x 1.0\r\nformat: WARC\r\n\r\nnot a field\r\n");
        assert_eq!(
            f,
            vec![(&b"software"[..], &b"x 1.0"[..]), (b"format", b"WARC")]
        );
    }
}
