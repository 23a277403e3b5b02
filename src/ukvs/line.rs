//! Classifying one line and splitting a data line into fields.
//!
//! The tokenizer is the hot path of every reader (`validate`, `cat`,
//! lookups), so it only finds boundaries: memchr for the next space or
//! quote, no copies. Unescaping a quoted value is a separate, allocating
//! step ([`unescape`]) that callers take only when they need the value.

use std::borrow::Cow;

use memchr::{memchr, memchr2};

/// One line of a UKVS file (terminator already removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    /// `!name value`.
    Header(Header<'a>),
    /// Key fields, value fields, optional OSLJ.
    Data(Record<'a>),
    /// Nothing but spaces (and perhaps a `\r`); readers skip it, `validate`
    /// reports it.
    Blank,
}

/// Classifies a line by its first byte: `!` starts a header, anything else
/// that is not blank is data. A trailing `\r` (CRLF files) is not part of
/// the line for readers; `validate` reports it.
pub fn classify(line: &[u8]) -> Line<'_> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match line.first() {
        Some(b'!') => Line::Header(Header::parse(line)),
        _ if line.iter().all(|&b| b == b' ') => Line::Blank,
        _ => Line::Data(Record { line }),
    }
}

/// A header line `!name value`: the name runs from after the `!` to the
/// first space; the value is the rest, spaces trimmed on both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// The name without the `!` (`fields`, `meta`, ...).
    pub name: &'a [u8],
    /// The raw value, usually JSON5 text; may be empty.
    pub value: &'a [u8],
}

impl<'a> Header<'a> {
    /// Splits `!name value`; `line` starts with `!` (checked by
    /// [`classify`]).
    fn parse(line: &'a [u8]) -> Header<'a> {
        let rest = line.get(1..).unwrap_or_default();
        let (name, value) = match memchr(b' ', rest) {
            Some(i) => (&rest[..i], trim_spaces(&rest[i..])),
            None => (rest, &rest[rest.len()..]),
        };
        Header { name, value }
    }

    /// The value parsed as JSON (strict first, JSON5 when that fails).
    pub fn json(&self) -> Result<serde_json::Value, String> {
        super::json::parse_json5(self.value)
    }
}

/// A data line. Its fields are read on demand with [`Record::tokens`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    line: &'a [u8],
}

impl<'a> Record<'a> {
    /// A record over `line` (no terminator). The caller has checked it is
    /// not a header; a line starting with `!` here is read as data.
    pub fn new(line: &'a [u8]) -> Record<'a> {
        Record { line }
    }

    /// The whole line.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.line
    }

    /// The fields and OSLJ, left to right.
    pub fn tokens(&self) -> Tokens<'a> {
        Tokens {
            line: self.line,
            pos: 0,
            done: false,
        }
    }

    /// Splits the record into its fields (appended to `fields`, which is
    /// cleared first so callers can reuse it) and its OSLJ bytes.
    ///
    /// The error is the 0-based byte position and what is wrong, as the
    /// tokenizer reports it; callers add the line number.
    pub fn split_into(
        &self,
        fields: &mut Vec<Field<'a>>,
    ) -> Result<Option<&'a [u8]>, (usize, &'static str)> {
        fields.clear();
        let mut oslj = None;
        for token in self.tokens() {
            match token? {
                Token::Field(f) => fields.push(f),
                Token::Json(j) => oslj = Some(j),
            }
        }
        Ok(oslj)
    }
}

/// What a data line is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token<'a> {
    /// A key or value field.
    Field(Field<'a>),
    /// The OSLJ: from an unquoted `{` to the end of the line, trailing
    /// spaces trimmed. Not parsed here.
    Json(&'a [u8]),
}

/// One field as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field<'a> {
    /// An unquoted token.
    Plain(&'a [u8]),
    /// The bytes between the double quotes, escapes not yet resolved.
    Quoted(&'a [u8]),
    /// The `-` placeholder: value unknown.
    Missing,
}

impl<'a> Field<'a> {
    /// The value: `None` for `-`, the bytes otherwise (unescaped, which
    /// allocates only when the quoted text holds a backslash).
    pub fn value(&self) -> Option<Cow<'a, [u8]>> {
        match *self {
            Field::Plain(b) => Some(Cow::Borrowed(b)),
            Field::Quoted(b) if memchr(b'\\', b).is_none() => Some(Cow::Borrowed(b)),
            // The tokenizer already checked the escapes; a failure here
            // cannot happen for a field it produced, but stay total.
            Field::Quoted(b) => Some(Cow::Owned(unescape(b).unwrap_or_else(|_| b.to_vec()))),
            Field::Missing => None,
        }
    }

    /// Whether this is the `-` placeholder.
    pub fn is_missing(&self) -> bool {
        matches!(self, Field::Missing)
    }
}

/// Iterator over the tokens of a data line; yields an error once (with the
/// 0-based byte position and what is wrong) and then stops.
#[derive(Debug, Clone)]
pub struct Tokens<'a> {
    line: &'a [u8],
    /// Where the next token search starts: just after the previous token.
    pos: usize,
    /// Set after the OSLJ, the end of the line, or an error: nothing can
    /// follow any of them.
    done: bool,
}

impl<'a> Tokens<'a> {
    /// Byte position just after the last token returned: the end of the
    /// key fields once the caller has taken them.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Result<Token<'a>, (usize, &'static str)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let line = self.line;
        // Skip the separator: one space when written by us, runs of spaces
        // accepted from people who align columns.
        let mut start = self.pos;
        while line.get(start) == Some(&b' ') {
            start += 1;
        }
        let Some(&first) = line.get(start) else {
            self.done = true;
            self.pos = line.len();
            return None;
        };
        match first {
            b'{' => {
                self.done = true;
                let json = trim_spaces(&line[start..]);
                self.pos = line.len();
                Some(Ok(Token::Json(json)))
            }
            b'"' => match scan_quoted(line, start + 1) {
                Ok(close) => {
                    // `"a"b` is neither one value nor two: refuse it rather
                    // than guess where the field ends.
                    let after = close + 1;
                    if after < line.len() && line[after] != b' ' {
                        self.done = true;
                        return Some(Err((after, "text right after a closing quote")));
                    }
                    self.pos = after;
                    Some(Ok(Token::Field(Field::Quoted(&line[start + 1..close]))))
                }
                Err(e) => {
                    self.done = true;
                    Some(Err(e))
                }
            },
            _ => {
                // A plain field ends at the next space; quotes and braces
                // inside it are ordinary bytes (`a"b` is the value a"b).
                let end = memchr(b' ', &line[start..]).map_or(line.len(), |i| start + i);
                self.pos = end;
                let raw = &line[start..end];
                if raw == b"-" {
                    Some(Ok(Token::Field(Field::Missing)))
                } else {
                    Some(Ok(Token::Field(Field::Plain(raw))))
                }
            }
        }
    }
}

/// Finds the closing quote of a quoted value whose text starts at `from`;
/// checks the escapes on the way so that [`unescape`] cannot fail later.
fn scan_quoted(line: &[u8], from: usize) -> Result<usize, (usize, &'static str)> {
    let mut i = from;
    // memchr2 jumps to the next quote or backslash, so a long quoted value
    // without escapes is scanned at memchr speed.
    loop {
        let rest = line.get(i..).unwrap_or_default();
        let Some(j) = memchr2(b'"', b'\\', rest) else {
            return Err((from - 1, "unterminated quoted value"));
        };
        let at = i + j;
        if line[at] == b'"' {
            return Ok(at);
        }
        match line.get(at + 1) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i = at + 2,
            Some(b'u') => {
                let hex = line.get(at + 2..at + 6).unwrap_or_default();
                if hex.len() != 4 || !hex.iter().all(u8::is_ascii_hexdigit) {
                    return Err((at, "`\\u` needs four hex digits"));
                }
                i = at + 6;
            }
            Some(_) => return Err((at, "unknown escape in quoted value")),
            None => return Err((at, "unterminated quoted value")),
        }
    }
}

/// Resolves the escapes of a quoted value (the JSON string escapes:
/// `\" \\ \/ \b \f \n \r \t \uXXXX`, surrogate pairs joined). Bytes that
/// are not escapes are kept as they are, valid UTF-8 or not.
pub fn unescape(quoted: &[u8]) -> Result<Vec<u8>, (usize, &'static str)> {
    let mut out = Vec::with_capacity(quoted.len());
    let mut i = 0;
    while let Some(j) = memchr(b'\\', &quoted[i..]) {
        out.extend_from_slice(&quoted[i..i + j]);
        let at = i + j;
        let esc = quoted.get(at + 1).copied();
        i = at + 2;
        let byte = match esc {
            Some(b'"') => b'"',
            Some(b'\\') => b'\\',
            Some(b'/') => b'/',
            Some(b'b') => 0x08,
            Some(b'f') => 0x0c,
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            Some(b'u') => {
                let hi = hex4(quoted, at + 2).ok_or((at, "`\\u` needs four hex digits"))?;
                i = at + 6;
                let mut cp = u32::from(hi);
                if (0xD800..0xDC00).contains(&hi) {
                    // A high surrogate pairs with a following `\uDC00`..;
                    // alone it has no character, so it becomes U+FFFD.
                    if quoted.get(i..i + 2) == Some(b"\\u") {
                        if let Some(lo) =
                            hex4(quoted, i + 2).filter(|lo| (0xDC00..0xE000).contains(lo))
                        {
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (u32::from(lo) - 0xDC00);
                            i += 6;
                        }
                    }
                }
                let c = char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER);
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                continue;
            }
            _ => return Err((at, "unknown escape in quoted value")),
        };
        out.push(byte);
    }
    out.extend_from_slice(quoted.get(i..).unwrap_or_default());
    Ok(out)
}

/// The four hex digits of a `\u` escape at `at`, if they are there.
fn hex4(bytes: &[u8], at: usize) -> Option<u16> {
    let hex = bytes.get(at..at + 4)?;
    let s = std::str::from_utf8(hex).ok()?;
    if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(s, 16).ok()
}

/// Trims spaces (only spaces: tabs are field bytes in UKVS) at both ends.
pub(crate) fn trim_spaces(mut b: &[u8]) -> &[u8] {
    while let [b' ', rest @ ..] = b {
        b = rest;
    }
    while let [rest @ .., b' '] = b {
        b = rest;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(line: &str) -> Vec<Result<Token<'_>, (usize, &'static str)>> {
        Record::new(line.as_bytes()).tokens().collect()
    }

    #[test]
    fn splits_runs_of_spaces_quotes_placeholders_and_oslj() {
        let toks = fields(r#"Doe   John  "Business Consultant" -  {a: 1}  "#);
        assert_eq!(
            toks,
            vec![
                Ok(Token::Field(Field::Plain(b"Doe"))),
                Ok(Token::Field(Field::Plain(b"John"))),
                Ok(Token::Field(Field::Quoted(b"Business Consultant"))),
                Ok(Token::Field(Field::Missing)),
                Ok(Token::Json(b"{a: 1}")),
            ]
        );
    }

    #[test]
    fn quoted_dash_is_a_value_not_a_placeholder() {
        let toks = fields(r#"k "-""#);
        assert_eq!(toks[1], Ok(Token::Field(Field::Quoted(b"-"))));
        assert_eq!(Field::Quoted(b"-").value().as_deref(), Some(&b"-"[..]));
    }

    #[test]
    fn quoting_errors_carry_positions() {
        assert_eq!(
            fields(r#"k "abc"#)[1],
            Err((2, "unterminated quoted value"))
        );
        assert_eq!(
            fields(r#"k "a"b"#)[1],
            Err((5, "text right after a closing quote"))
        );
        assert_eq!(
            fields(r#"k "a\qb""#)[1],
            Err((4, "unknown escape in quoted value"))
        );
        assert_eq!(
            fields(r#"k "a\u12""#)[1],
            Err((4, "`\\u` needs four hex digits"))
        );
    }

    #[test]
    fn unescape_handles_json_escapes_and_surrogates() {
        assert_eq!(unescape(br#"a\"b\\c\/\n\t"#).unwrap(), b"a\"b\\c/\n\t");
        assert_eq!(unescape(br"\u00e9").unwrap(), "é".as_bytes());
        assert_eq!(unescape(br"\ud83d\ude00").unwrap(), "😀".as_bytes());
        assert_eq!(unescape(br"\ud83dx").unwrap(), "\u{fffd}x".as_bytes());
        assert!(unescape(br"\x").is_err());
    }

    #[test]
    fn classify_lines() {
        assert_eq!(
            classify(b"!fields {keys: []}"),
            Line::Header(Header {
                name: b"fields",
                value: b"{keys: []}"
            })
        );
        assert_eq!(
            classify(b"!x"),
            Line::Header(Header {
                name: b"x",
                value: b""
            })
        );
        assert_eq!(classify(b"   "), Line::Blank);
        assert_eq!(classify(b"\r"), Line::Blank);
        assert!(matches!(classify(b"a b\r"), Line::Data(r) if r.as_bytes() == b"a b"));
    }
}
