//! The lines a client POSTs to a live collection (OutbackCDX's write API):
//! CDX (with or without its ` CDX ...` legend line), CDXJ or UKVS lines,
//! each checked, re-keyed and given its capture id.
//!
//! ```text
//! body line ─► blank? skipped ─► ` CDX N b a ...`? the legend (again: the same one)
//!          └─► shape: CDXJ `key datetime {json}` | UKVS `key datetime values.. {json}`
//!                     | CDX by column count (9, 10 or 11, as pywb reads them)
//!          ─► checks (text, no control bytes, datetime digits, a URL)
//!          ─► the key recomputed from the URL with the collection's SURT
//!             profile, the rest of the line kept byte for byte
//!          ─► capture id: key, datetime, filename, offset
//! ```
//!
//! Every line of a body has the shape of its first data line: a body is
//! CDX, CDXJ or UKVS, not a mix. The module only turns bytes into lines
//! and ids; storing them is [`crate::engine::live`]'s.

use std::borrow::Cow;

use serde_json::Value;

/// Longest line taken, in bytes (without its newline). A capture line is
/// far shorter; a longer line is refused rather than held.
pub const MAX_LINE: usize = 64 << 10;

/// The legends taken, by column count: pywb's CDX formats.
const LEGENDS: [&str; 3] = [
    "N b a m s k r V g",
    "N b a m s k r M V g",
    "N b a m s k r M S V g",
];

/// The shape of a body's lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// CDX, with this many columns.
    Cdx(usize),
    Cdxj,
    Ukvs,
}

impl Shape {
    fn name(self) -> String {
        match self {
            Shape::Cdx(n) => format!("a {n}-column CDX line"),
            Shape::Cdxj => "a CDXJ line".into(),
            Shape::Ukvs => "a UKVS line".into(),
        }
    }
}

/// A line made ready for a live collection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ready {
    /// The capture id ([`capture_id`]).
    pub id: Vec<u8>,
    /// The line as stored: re-keyed, otherwise as posted.
    pub line: Vec<u8>,
}

/// A capture's identity as OutbackCDX has it: key, datetime, filename
/// and offset (`-` or empty when a line has none).
pub fn capture_id(key: &[u8], datetime: &[u8], filename: &[u8], offset: &[u8]) -> Vec<u8> {
    let mut id = Vec::with_capacity(key.len() + datetime.len() + filename.len() + offset.len() + 3);
    id.extend_from_slice(key);
    id.push(b' ');
    id.extend_from_slice(datetime);
    id.push(0);
    id.extend_from_slice(filename);
    id.push(0);
    id.extend_from_slice(offset);
    id
}

/// The lines of one body, read in order.
pub struct Body<'a> {
    surt: &'a crate::surt::Options,
    value_names: &'a [String],
    shape: Option<Shape>,
}

impl<'a> Body<'a> {
    /// A body for a collection keyed with `surt`, whose UKVS lines name
    /// their values `value_names` (`offset`, `digest` by default).
    pub fn new(surt: &'a crate::surt::Options, value_names: &'a [String]) -> Body<'a> {
        Body {
            surt,
            value_names,
            shape: None,
        }
    }

    /// A body whose lines were found to have `shape` (from
    /// [`Body::shape`]), to read on where another `Body` stopped.
    pub fn resume(
        surt: &'a crate::surt::Options,
        value_names: &'a [String],
        shape: Option<Shape>,
    ) -> Body<'a> {
        Body {
            surt,
            value_names,
            shape,
        }
    }

    /// The shape of the body's lines, once its legend or first data line
    /// said it.
    pub fn shape(&self) -> Option<Shape> {
        self.shape
    }

    /// Reads one line (no newline; trailing white space, a `\r` or
    /// spaces, is dropped, as pywb's reader drops it): `Ok(None)` for a
    /// blank line or the legend, the line ready to store, or why it
    /// cannot be taken.
    pub fn line(&mut self, line: &[u8]) -> Result<Option<Ready>, String> {
        let line = line.trim_ascii_end();
        if line.len() > MAX_LINE {
            return Err(format!(
                "{} bytes long, longer than the {MAX_LINE} bytes a line may have",
                line.len()
            ));
        }
        if line.iter().all(|&b| b == b' ' || b == b'\t') {
            return Ok(None);
        }
        if let Some(letters) = line.strip_prefix(b" CDX ") {
            let letters = String::from_utf8_lossy(letters);
            let letters = letters.trim();
            let Some(i) = LEGENDS.iter().position(|l| *l == letters) else {
                return Err(format!(
                    "the CDX legend ` CDX {letters}` is not one taken: use ` CDX {}` \
                     (CDX11), ` CDX {}` or ` CDX {}`",
                    LEGENDS[2], LEGENDS[1], LEGENDS[0]
                ));
            };
            // Files joined into one body repeat their legend: the same
            // one again is taken.
            let shape = Shape::Cdx(9 + i);
            match self.shape {
                None => self.shape = Some(shape),
                Some(s) if s == shape => {}
                Some(s) => {
                    return Err(format!(
                        "a CDX legend of {} columns where this body's lines are each {}",
                        9 + i,
                        s.name()
                    ))
                }
            }
            return Ok(None);
        }
        let text = std::str::from_utf8(line).map_err(|e| format!("not UTF-8 text ({e})"))?;
        if let Some(b) = text.bytes().find(|&b| b < 0x20 || b == 0x7f) {
            return Err(format!("holds the control byte 0x{b:02x}"));
        }
        let shape = shape_of(text)?;
        match self.shape {
            None => self.shape = Some(shape),
            Some(s) if s == shape => {}
            Some(s) => {
                return Err(format!(
                    "{} where this body's lines are each {}",
                    shape.name(),
                    s.name()
                ))
            }
        }
        ready(text, shape, self.surt, self.value_names).map(Some)
    }
}

/// The shape of a data line.
fn shape_of(text: &str) -> Result<Shape, String> {
    let mut head = text.splitn(3, ' ');
    let _key = head.next();
    let _datetime = head.next();
    match head.next() {
        Some(rest) if rest.starts_with('{') => return Ok(Shape::Cdxj),
        Some(rest) if rest.contains(" {") => return Ok(Shape::Ukvs),
        _ => {}
    }
    let n = memchr::memchr_iter(b' ', text.as_bytes()).count() + 1;
    match n {
        9..=11 => Ok(Shape::Cdx(n)),
        _ => Err(format!(
            "{n} space-separated columns: not a CDX line (9, 10 or 11 columns), \
             a CDXJ line (`key datetime {{json}}`) or a UKVS line"
        )),
    }
}

/// A JSON block's object.
fn json_object(json: &str) -> Result<serde_json::Map<String, Value>, String> {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err("the JSON block is not an object".into()),
        Err(e) => Err(format!("the JSON block cannot be read: {e}")),
    }
}

/// A JSON member as field text: a string as it is, a number as written,
/// null `-`.
fn member(o: &serde_json::Map<String, Value>, names: &[&str]) -> String {
    names.iter().find_map(|n| o.get(*n)).map_or_else(
        || "-".to_string(),
        |v| match v {
            Value::String(s) => s.clone(),
            Value::Null => "-".into(),
            other => other.to_string(),
        },
    )
}

fn check_datetime(dt: &str) -> Result<(), String> {
    if (4..=14).contains(&dt.len()) && dt.bytes().all(|b| b.is_ascii_digit()) {
        Ok(())
    } else {
        Err(format!(
            "the datetime {dt:?} is not 4 to 14 digits (YYYYMMDDhhmmss)"
        ))
    }
}

/// The fields of a line that make its id, and its URL: `(key, datetime,
/// url, filename, offset, the line after the key)`. A CDX line's fields
/// are borrowed; only a JSON block's are made.
struct Parts<'t> {
    key: &'t str,
    datetime: &'t str,
    url: Cow<'t, str>,
    filename: Cow<'t, str>,
    offset: Cow<'t, str>,
    after_key: &'t str,
}

/// The columns of a CDX line, borrowed, with their count: at most 11 are
/// kept, which is all a CDX line taken has (a longer line is refused by
/// its count).
fn cdx_columns(text: &str) -> ([&str; 11], usize) {
    let mut cols = [""; 11];
    let mut n = 0;
    let mut start = 0;
    for end in memchr::memchr_iter(b' ', text.as_bytes()).chain(std::iter::once(text.len())) {
        if let Some(c) = cols.get_mut(n) {
            // Spaces are ASCII: the cuts fall between characters.
            *c = &text[start..end];
        }
        n += 1;
        start = end + 1;
    }
    (cols, n)
}

fn parts<'t>(text: &'t str, shape: Shape, value_names: &[String]) -> Result<Parts<'t>, String> {
    let (key, after_key) = text.split_once(' ').ok_or("no datetime after the key")?;
    let datetime = after_key.split(' ').next().unwrap_or_default();
    match shape {
        Shape::Cdx(n) => {
            let (cols, count) = cdx_columns(text);
            if count != n {
                return Err(format!("{count} columns where this body's CDX has {n}"));
            }
            Ok(Parts {
                key,
                datetime,
                url: Cow::Borrowed(cols[2]),
                filename: Cow::Borrowed(cols[n - 1]),
                offset: Cow::Borrowed(cols[n - 2]),
                after_key,
            })
        }
        Shape::Cdxj => {
            let json = after_key.split_once(' ').map_or("", |(_, j)| j);
            let o = json_object(json)?;
            Ok(Parts {
                key,
                datetime,
                url: member(&o, &["url", "u"]).into(),
                filename: member(&o, &["filename", "f"]).into(),
                offset: member(&o, &["offset", "o"]).into(),
                after_key,
            })
        }
        Shape::Ukvs => {
            let (plain, json) = text.split_once(" {").ok_or("no JSON block")?;
            let o = json_object(&format!("{{{json}"))?;
            let values: Vec<&str> = plain.split(' ').skip(2).collect();
            let named = |name: &str| {
                value_names
                    .iter()
                    .position(|n| n == name)
                    .and_then(|i| values.get(i))
                    .map(|v| v.to_string())
            };
            Ok(Parts {
                key,
                datetime,
                url: member(&o, &["url"]).into(),
                filename: named("filename")
                    .unwrap_or_else(|| member(&o, &["filename"]))
                    .into(),
                offset: named("offset")
                    .unwrap_or_else(|| member(&o, &["offset"]))
                    .into(),
                after_key,
            })
        }
    }
}

/// A data line re-keyed, with its id.
fn ready(
    text: &str,
    shape: Shape,
    surt: &crate::surt::Options,
    value_names: &[String],
) -> Result<Ready, String> {
    let p = parts(text, shape, value_names)?;
    check_datetime(p.datetime)?;
    // The id separates its parts with NUL bytes: one inside a part (a
    // JSON `\u0000`) would make two captures one.
    if p.filename.contains('\0') || p.offset.contains('\0') {
        return Err("the filename or offset holds a NUL character".into());
    }
    if p.url == "-" || p.url.is_empty() {
        return Err("no URL to key the capture with".into());
    }
    if p.url.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err("the URL holds a space or a control character".into());
    }
    // The key is written straight into the stored line (a URL that
    // cannot be keyed keys itself, as `surt::key` has it).
    let mut line = Vec::with_capacity(p.url.len() + 16 + p.after_key.len());
    if crate::surt::key_into(p.url.as_bytes(), surt, &mut line).is_err() {
        line.extend_from_slice(p.url.as_bytes());
    }
    let key_len = line.len();
    if line.iter().any(|&b| b <= b' ' || b == 0x7f) {
        return Err("the URL's SURT key would hold a space or a control character".into());
    }
    line.push(b' ');
    line.extend_from_slice(p.after_key.as_bytes());
    let id = capture_id(
        &line[..key_len],
        p.datetime.as_bytes(),
        p.filename.as_bytes(),
        p.offset.as_bytes(),
    );
    Ok(Ready { id, line })
}

/// The capture id of a stored line (of a base or the delta), keyed as it
/// is; `None` when the line is none of the shapes taken.
pub fn line_id(line: &[u8], value_names: &[String]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(line.trim_ascii_end()).ok()?;
    let shape = shape_of(text).ok()?;
    let p = parts(text, shape, value_names).ok()?;
    Some(capture_id(
        p.key.as_bytes(),
        p.datetime.as_bytes(),
        p.filename.as_bytes(),
        p.offset.as_bytes(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["offset".into(), "digest".into()]
    }

    #[test]
    fn cdx11_lines_are_rekeyed_and_identified() {
        let opts = crate::surt::Options::default();
        let names = names();
        let mut body = Body::new(&opts, &names);
        assert_eq!(body.line(b" CDX N b a m s k r M S V g").unwrap(), None);
        let r = body
            .line(b"wrong)/key 20200101000000 http://www.Example.com/a text/html 200 ABC - - 100 42 f.warc.gz\r")
            .unwrap()
            .unwrap();
        assert_eq!(
            String::from_utf8(r.line).unwrap(),
            "com,example)/a 20200101000000 http://www.Example.com/a text/html 200 ABC - - 100 42 f.warc.gz"
        );
        assert_eq!(
            r.id,
            b"com,example)/a 20200101000000\0f.warc.gz\x0042".to_vec()
        );
        // Files joined: their legend again is taken.
        assert_eq!(body.line(b" CDX N b a m s k r M S V g").unwrap(), None);
        // The same capture as a CDXJ line has the same id.
        let mut cdxj = Body::new(&opts, &names);
        let j = cdxj
            .line(br#"x 20200101000000 {"url": "http://example.com/a", "offset": "42", "filename": "f.warc.gz"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(j.id, r.id);
        assert_eq!(line_id(&j.line, &names), Some(r.id.clone()));
    }

    #[test]
    fn bad_lines_say_why() {
        let opts = crate::surt::Options::default();
        let names = names();
        let mut body = Body::new(&opts, &names);
        let e = |b: &mut Body, l: &[u8]| b.line(l).unwrap_err();
        assert!(e(&mut body, b"a b c").contains("3 space-separated columns"));
        assert!(e(&mut body, b"\x00\x01binary").contains("control byte"));
        assert!(e(&mut body, &[b'a'; MAX_LINE + 1]).contains("longer than"));
        assert!(e(&mut body, b"k 2020x {\"url\": \"http://a/\"}").contains("datetime"));
        assert!(e(&mut body, b"k 2020 {\"url\": 1").contains("JSON block"));
        assert!(e(&mut body, b"k 2020 {\"mime\": \"x\"}").contains("no URL"));
        assert!(e(&mut body, b"\xff\xfe 2020 {}").contains("UTF-8"));
        let nul =
            br#"k 20200101000000 {"url": "http://a/", "filename": "f\u0000g", "offset": "1"}"#;
        assert!(e(&mut body, nul).contains("NUL"));
        // A CDXJ body: a CDX line in it is refused.
        body.line(b"k 20200101 {\"url\": \"http://a/\"}").unwrap();
        assert!(e(&mut body, b"k 2020 http://a/ m 200 d - - 1 2 f").contains("CDXJ"));
        assert!(e(&mut body, b" CDX N b a m s k r M S V g").contains("legend of 11 columns"));
        let mut other = Body::new(&opts, &names);
        assert!(e(&mut other, b" CDX A b e a m s c k r V v D d g M n").contains("not one taken"));
    }

    #[test]
    fn trailing_white_space_is_dropped_as_pywb_drops_it() {
        let opts = crate::surt::Options::default();
        let names = names();
        let line = "com,a)/ 20200101000000 http://a.com/ text/html 200 D - - 1 2 f.warc.gz";
        let mut body = Body::new(&opts, &names);
        let r = body
            .line(format!("{line}  \r").as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(String::from_utf8(r.line.clone()).unwrap(), line);
        assert_eq!(line_id(format!("{line} ").as_bytes(), &names), Some(r.id));
        // Kept, the spaces would make empty columns that pywb's reader
        // drops, reading a line of 3 columns where 10 were taken.
        let mut body = Body::new(&opts, &names);
        let r = body.line(b" 2145 h       ").unwrap_err();
        assert!(r.contains("3 space-separated columns"), "{r}");
    }

    #[test]
    fn ukvs_lines_take_the_offset_from_their_values() {
        let opts = crate::surt::Options::default();
        let names = names();
        let mut body = Body::new(&opts, &names);
        let r = body
            .line(
                br#"k 20200101000000 42 sha1:AB {"url": "http://a.com/", "filename": "f.warc.gz"}"#,
            )
            .unwrap()
            .unwrap();
        assert!(r.line.starts_with(b"com,a)/ 20200101000000 42 sha1:AB {"));
        assert_eq!(r.id, b"com,a)/ 20200101000000\0f.warc.gz\x0042".to_vec());
    }

    proptest::proptest! {
        /// Lines made of the pieces capture lines are made of: whatever
        /// is taken is stored under the id its stored form has, with a
        /// key free of spaces.
        #[test]
        fn a_taken_line_keeps_its_id(pieces in proptest::collection::vec(0usize..16, 0..14)) {
            const P: [&str; 16] = [
                " ", "- ", "20200101000000 ", "http://a.example/%20x?y=1 ", "{\"url\": \"http://B.example/\", ",
                "\"offset\": 7, ", "\"filename\": \"f g\"}", "}", "text/html 200 D - - 1 2 f.warc.gz",
                "{", "\"u\": \"HTTP://c/\"}", "dns:a.example ", "12 sha1:X ", "\t", "é", "\"",
            ];
            let line: String = pieces.iter().map(|&i| P[i]).collect();
            let opts = crate::surt::Options::default();
            let names = names();
            let mut body = Body::new(&opts, &names);
            if let Ok(Some(r)) = body.line(line.as_bytes()) {
                let key_end = r.line.iter().position(|&b| b == b' ').unwrap();
                proptest::prop_assert!(key_end > 0);
                proptest::prop_assert_eq!(line_id(&r.line, &names), Some(r.id));
            }
        }
    }
}
