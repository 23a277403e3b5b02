//! JSON string writing for the OSLJ of index lines, without allocating.
//!
//! ARC headers are bytes of unknown encoding. Like warcio (and so
//! cdxj-indexer), a header is read as UTF-8 when it is valid UTF-8 and as
//! Latin-1 otherwise, which maps every byte to one character and never
//! fails. Two spellings are written:
//!
//! * [`Escape::Ascii`]: Python's `json.dumps` default (`ensure_ascii`):
//!   everything outside printable ASCII as `\uXXXX` with lowercase hex and
//!   surrogate pairs; needed for byte-identical `cdxj`.
//! * [`Escape::Utf8`]: compact strict JSON for the `ukvs` profile: UTF-8
//!   text as is, only `"`, `\` and control characters escaped.

/// How to spell non-ASCII characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escape {
    Ascii,
    Utf8,
}

/// Appends `raw` as a quoted JSON string. `as_utf8` says whether to read
/// `raw` as UTF-8 (it must then be valid UTF-8; invalid sequences are read
/// as Latin-1 byte by byte, which is also what `false` asks for).
pub fn write_str(out: &mut Vec<u8>, raw: &[u8], as_utf8: bool, escape: Escape) {
    out.push(b'"');
    // Printable ASCII other than `"` and `\` is itself in every spelling
    // and reading: copied as one run. The rest starts at a character
    // boundary and is valid UTF-8 exactly when the whole is.
    let plain = raw
        .iter()
        .position(|&b| !(0x20..0x7f).contains(&b) || b == b'"' || b == b'\\')
        .unwrap_or(raw.len());
    out.extend_from_slice(&raw[..plain]);
    let raw = &raw[plain..];
    match (as_utf8, std::str::from_utf8(raw)) {
        (true, Ok(s)) => {
            for c in s.chars() {
                write_char(out, c, escape);
            }
        }
        _ => {
            for &b in raw {
                write_char(out, char::from(b), escape);
            }
        }
    }
    out.push(b'"');
}

fn write_char(out: &mut Vec<u8>, c: char, escape: Escape) {
    match c {
        '"' => out.extend_from_slice(b"\\\""),
        '\\' => out.extend_from_slice(b"\\\\"),
        '\n' => out.extend_from_slice(b"\\n"),
        '\r' => out.extend_from_slice(b"\\r"),
        '\t' => out.extend_from_slice(b"\\t"),
        '\u{8}' => out.extend_from_slice(b"\\b"),
        '\u{c}' => out.extend_from_slice(b"\\f"),
        c if (c as u32) < 0x20 => write_u16(out, c as u16),
        // Python's ensure_ascii spells DEL as an escape too.
        '\u{7f}' if escape == Escape::Ascii => write_u16(out, 0x7f),
        c if c.is_ascii() => out.push(c as u8),
        c => match escape {
            Escape::Utf8 => {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            Escape::Ascii => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    write_u16(out, *unit);
                }
            }
        },
    }
}

fn write_u16(out: &mut Vec<u8>, unit: u16) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[usize::from((unit >> shift) & 0xf)]);
    }
}

/// Appends `raw` read as UTF-8, or as Latin-1 when it is not valid UTF-8,
/// re-encoded as UTF-8 (what Python's `str` holds after warcio decodes a
/// header).
pub fn decode_to_utf8(out: &mut Vec<u8>, raw: &[u8]) {
    if std::str::from_utf8(raw).is_ok() {
        out.extend_from_slice(raw);
    } else {
        for &b in raw {
            let mut buf = [0; 4];
            out.extend_from_slice(char::from(b).encode_utf8(&mut buf).as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(raw: &[u8], utf8: bool, e: Escape) -> String {
        let mut out = Vec::new();
        write_str(&mut out, raw, utf8, e);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn python_ensure_ascii_spelling() {
        // Compared with python3 -c 'import json; print(json.dumps(...))'.
        assert_eq!(
            s(b"a\"b\\c\x0c\x01\x7f", true, Escape::Ascii),
            "\"a\\\"b\\\\c\\f\\u0001\\u007f\""
        );
        assert_eq!(
            s("é😀".as_bytes(), true, Escape::Ascii),
            r#""\u00e9\ud83d\ude00""#
        );
        assert_eq!(s(b"imag\xd1m)", true, Escape::Ascii), r#""imag\u00d1m)""#);
    }

    #[test]
    fn utf8_spelling_keeps_text() {
        assert_eq!(s("é".as_bytes(), true, Escape::Utf8), "\"é\"");
        assert_eq!(s(b"\xe9cole", true, Escape::Utf8), "\"école\"");
        assert_eq!(s(b"\t", true, Escape::Utf8), "\"\\t\"");
    }

    #[test]
    fn latin1_fallback_transcodes() {
        let mut out = Vec::new();
        decode_to_utf8(&mut out, b"\xe9");
        assert_eq!(out, "é".as_bytes());
        out.clear();
        decode_to_utf8(&mut out, "é".as_bytes());
        assert_eq!(out, "é".as_bytes());
    }
}
