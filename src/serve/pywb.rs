//! pywb's model of a CDX line and its renderings, byte for byte.
//!
//! pywb 2.10 parses each index line into an ordered dict (`CDXObject`),
//! adds fields to it (`source`, `source-coll`, `access`, ...) and renders
//! it again with Python's `json.dumps` or `str()`. Replay systems parse
//! those bytes, and tests compare ours with pywb's, so this module copies
//! Python's spellings: `", "` and `": "` separators, `\uXXXX` for every
//! non-ASCII character, `str()` of nested values as Python prints them.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;
use ukvs::sorted::zipnum as crate_zipnum;

/// Column names of classic CDX lines, by column count (pywb's
/// `CDX_FORMATS`; the count alone decides). 12 to 14 columns are 9 to 11
/// with the three `orig.*` columns of resolved revisits after them.
fn cdx_format(n: usize) -> Option<Vec<&'static str>> {
    const HEAD: [&str; 6] = ["urlkey", "timestamp", "url", "mime", "status", "digest"];
    const ORIG: [&str; 3] = ["orig.length", "orig.offset", "orig.filename"];
    let (base, orig) = if n >= 12 { (n - 3, true) } else { (n, false) };
    let tail: &[&str] = match base {
        7 => &["length"],
        9 => &["redirect", "offset", "filename"],
        10 => &["redirect", "robotflags", "offset", "filename"],
        11 => &["redirect", "robotflags", "length", "offset", "filename"],
        _ => return None,
    };
    if orig && base == 7 {
        return None;
    }
    let mut names = HEAD.to_vec();
    names.extend_from_slice(tail);
    if orig {
        names.extend_from_slice(&ORIG);
    }
    Some(names)
}

/// pywb's short field names (`CDX_ALT_FIELDS`), used when a CDXJ block is
/// read and in filters. `s` is `length`: pywb's table names it twice and
/// the second wins.
pub fn alt_field(name: &str) -> &str {
    match name {
        "u" | "original" => "url",
        "statuscode" => "status",
        "mimetype" | "m" => "mime",
        "s" | "l" => "length",
        "o" => "offset",
        "d" => "digest",
        "t" => "timestamp",
        "k" => "urlkey",
        "f" => "filename",
        other => other,
    }
}

/// Ordered, uniquely named fields (Python's `OrderedDict`).
/// Names are borrowed when they are pywb's own (a CDX line's columns):
/// a lookup reads each line into one, and a `String` per name was a third
/// of the allocations of an answer.
#[derive(Clone, Debug, Default)]
pub struct Fields(Vec<(Cow<'static, str>, Value)>);

impl Fields {
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|(k, _)| k == name)
    }

    /// Sets `name`: in place when present, appended otherwise.
    pub fn insert(&mut self, name: Cow<'static, str>, value: Value) {
        match self.index_of(&name) {
            Some(i) => self.0[i].1 = value,
            None => self.0.push((name, value)),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }

    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.0.iter().map(|(_, v)| v)
    }
}

/// One capture as pywb holds it.
#[derive(Clone, Debug)]
pub struct Obj {
    /// In order: `urlkey`, `timestamp`, then the line's fields, then what
    /// was added; names are unique.
    pub fields: Fields,
    /// The line as read, while no field has been set since (pywb then
    /// prints the line itself as text).
    raw: Option<String>,
    from_json: bool,
    /// A secondary-index line (pywb's `IDXObject`), not a capture.
    idx: bool,
}

/// A line pywb cannot read: its message (a `CDXException`, 400 when it is
/// the first line of an answer).
pub type ParseError = String;

impl Obj {
    /// Reads an index line. Lines pywb reads (CDXJ, and CDX with 7, 9-14
    /// columns) are read as pywb reads them; a UKVS line (`key datetime`,
    /// the `value_names` columns, a JSON block), which pywb cannot read, is
    /// read into the same model.
    pub fn parse(line: &[u8], value_names: &[String]) -> Result<Obj, ParseError> {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        let mut head = text.splitn(3, ' ');
        let f0 = head.next().unwrap_or_default();
        let f1 = head.next();
        let rest = head.next();
        let last = rest.or(f1).unwrap_or(f0);
        if last.starts_with('{') && f1.is_some() {
            let mut fields = Fields::default();
            fields.insert("urlkey".into(), Value::String(f0.to_string()));
            fields.insert(
                "timestamp".into(),
                Value::String(f1.unwrap_or_default().to_string()),
            );
            read_json_block(last, &mut fields)?;
            return Ok(Obj {
                fields,
                raw: Some(text.to_string()),
                from_json: true,
                idx: false,
            });
        }
        let cols: Vec<&str> = text.split(' ').collect();
        if let Some(names) = cdx_format(cols.len()) {
            let fields = Fields(
                names
                    .iter()
                    .zip(&cols)
                    .map(|(n, v)| (Cow::Borrowed(*n), Value::String(v.to_string())))
                    .collect(),
            );
            return Ok(Obj {
                fields,
                raw: Some(text.to_string()),
                from_json: false,
                idx: false,
            });
        }
        // A UKVS capture line: key, datetime, values, optional JSON block.
        if let Some((plain, json)) = text.split_once(" {") {
            let cols: Vec<&str> = plain.split(' ').collect();
            if cols.len() >= 2 {
                let mut fields = Fields::default();
                fields.insert("urlkey".into(), Value::String(cols[0].to_string()));
                fields.insert("timestamp".into(), Value::String(cols[1].to_string()));
                for (i, v) in cols[2..].iter().enumerate() {
                    let name = value_names
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| format!("field{}", i + 3));
                    fields.insert(name.into(), Value::String(v.to_string()));
                }
                read_json_block(&format!("{{{json}"), &mut fields)?;
                return Ok(Obj {
                    fields,
                    raw: None,
                    from_json: true,
                    idx: false,
                });
            }
        }
        let reprs: Vec<String> = cols.iter().map(|c| py_bytes_repr(c.as_bytes())).collect();
        Err(format!(
            "unknown {}-field cdx format: [{}]",
            cols.len(),
            reprs.join(", ")
        ))
    }

    /// A ZipNum secondary-index line as pywb's `IDXObject`: `urlkey`,
    /// `part`, and the numbers `offset`, `length` and `lineno`.
    pub fn idx(block: &crate_zipnum::Block) -> Obj {
        let mut fields = Fields::default();
        fields.insert(
            "urlkey".into(),
            Value::String(String::from_utf8_lossy(&block.first_key).into_owned()),
        );
        fields.insert("part".into(), Value::String(block.shard.clone()));
        fields.insert("offset".into(), Value::from(block.offset));
        fields.insert("length".into(), Value::from(block.length));
        fields.insert("lineno".into(), Value::from(block.block_no));
        Obj {
            fields,
            raw: Some(String::from_utf8_lossy(&block.to_line()).into_owned()),
            from_json: false,
            idx: true,
        }
    }

    /// Whether this is a secondary-index line.
    pub fn is_idx(&self) -> bool {
        self.idx
    }

    /// `cdx.get(name)` as a string, as pywb's filters read it
    /// (`str(cdx.get(field, ''))`).
    pub fn get_str(&self, name: &str) -> String {
        self.fields.get(name).map(py_str).unwrap_or_default()
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.get(name)
    }

    /// A string field, if it is one.
    pub fn str_field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).and_then(Value::as_str)
    }

    pub fn timestamp(&self) -> &str {
        self.str_field("timestamp").unwrap_or_default()
    }

    /// Sets a field (appended when new, in place otherwise); the line is
    /// no longer printed as read.
    pub fn set(&mut self, name: &str, value: impl Into<Value>) {
        self.fields.insert(name.to_string().into(), value.into());
        self.raw = None;
    }

    /// `str(cdx)`: the line while unchanged, else the JSON text of every
    /// field (read from CDXJ) or the values joined by spaces (from CDX).
    pub fn whole(&self) -> String {
        if let Some(raw) = &self.raw {
            return raw.clone();
        }
        if self.from_json {
            let mut out = String::new();
            py_json_object(self.fields.iter(), &mut out);
            out
        } else {
            let vals: Vec<String> = self.fields.values().map(py_str).collect();
            vals.join(" ")
        }
    }

    /// `to_json(fields)`, with its newline (an index line ignores `fl`,
    /// as pywb's `IDXObject` does).
    pub fn to_json(&self, fl: Option<&[String]>) -> String {
        let fl = if self.idx { None } else { fl };
        let mut out = String::new();
        match fl {
            None => py_json_object(
                self.fields.iter().filter(|(k, _)| !k.starts_with('_')),
                &mut out,
            ),
            Some(fl) => py_json_object(self.picked(fl, 0), &mut out),
        }
        out.push('\n');
        out
    }

    /// The fields of `fl` that exist, in `fl` order, each once, among the
    /// fields from the `skip`-th on.
    fn picked<'a>(
        &'a self,
        fl: &'a [String],
        skip: usize,
    ) -> impl Iterator<Item = (&'a str, &'a Value)> + 'a {
        let mut seen: Vec<&str> = Vec::new();
        fl.iter().filter_map(move |name| {
            if seen.contains(&name.as_str()) {
                return None;
            }
            let at = self.fields.index_of(name)?;
            if at < skip {
                return None;
            }
            seen.push(name);
            self.fields.0.get(at).map(|(k, v)| (k.as_ref(), v))
        })
    }

    /// `to_cdxj(fields)`: `urlkey timestamp {rest}` with its newline.
    pub fn to_cdxj(&self, fl: Option<&[String]>) -> String {
        let mut out = String::new();
        out.push_str(&self.get_str("urlkey"));
        out.push(' ');
        out.push_str(&self.get_str("timestamp"));
        out.push(' ');
        match fl {
            None => py_json_object(self.fields.iter().skip(2), &mut out),
            Some(fl) => py_json_object(self.picked(fl, 2), &mut out),
        }
        out.push('\n');
        out
    }

    /// `to_text(fields)`, with its newline (an index line is its line).
    pub fn to_text(&self, fl: Option<&[String]>) -> String {
        let fl = if self.idx { None } else { fl };
        let mut out = match (fl, &self.raw) {
            (None, Some(raw)) => raw.clone(),
            (None, None) => {
                let vals: Vec<String> = self.fields.values().map(py_str).collect();
                vals.join(" ")
            }
            (Some(fl), _) => {
                let vals: Vec<String> = fl
                    .iter()
                    .map(|n| {
                        self.fields
                            .get(n.as_str())
                            .map_or_else(|| "-".into(), py_str)
                    })
                    .collect();
                vals.join(" ")
            }
        };
        out.push('\n');
        out
    }

    /// pywb's JSON text of the whole record, by which it orders the lines
    /// of several sources.
    pub fn order_key(&self) -> String {
        self.to_json(None)
    }
}

/// Reads a CDXJ block into `fields` as pywb does: short names mapped, a
/// non-ASCII `url` percent-encoded, an integer `status` made a string.
fn read_json_block(json: &str, fields: &mut Fields) -> Result<(), ParseError> {
    let block: Value = serde_json::from_str(json).map_err(|e| format!("Internal Error: {e}"))?;
    let Value::Object(block) = block else {
        return Err("Internal Error: the JSON block is not an object".into());
    };
    for (name, mut value) in block {
        let name = alt_field(&name).to_string();
        if name == "url" {
            if let Value::String(u) = &value {
                if !u.is_ascii() {
                    value = Value::String(quote_url(u));
                }
            }
        }
        if name == "status" {
            if let Value::Number(n) = &value {
                if n.is_i64() || n.is_u64() {
                    value = Value::String(n.to_string());
                }
            }
        }
        fields.insert(name.into(), value);
    }
    Ok(())
}

/// Python's `quote(s.encode('utf-8'), safe=':/')`.
fn quote_url(s: &str) -> String {
    const SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'_')
        .remove(b'.')
        .remove(b'-')
        .remove(b'~')
        .remove(b':')
        .remove(b'/');
    percent_encoding::utf8_percent_encode(s, SET).to_string()
}

/// Python's `json.dumps` of an object (default separators, ASCII only).
pub fn py_json_object<'a, K: AsRef<str>>(
    members: impl Iterator<Item = (K, &'a Value)>,
    out: &mut String,
) {
    out.push('{');
    for (i, (k, v)) in members.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        py_json_str(k.as_ref(), out);
        out.push_str(": ");
        py_json(v, out);
    }
    out.push('}');
}

/// Python's `json.dumps` of a value.
pub fn py_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => py_json_str(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_json(x, out);
            }
            out.push(']');
        }
        Value::Object(o) => py_json_object(o.iter(), out),
    }
}

/// A JSON string as Python writes it with `ensure_ascii`.
pub fn py_json_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `str()` of a value read from JSON.
pub fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python's `repr()` of a value read from JSON (objects are
/// `OrderedDict`s, as pywb reads them).
fn py_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => py_str_repr(s),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(py_repr).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(o) if o.is_empty() => "OrderedDict()".into(),
        Value::Object(o) => {
            let items: Vec<String> = o
                .iter()
                .map(|(k, v)| format!("({}, {})", py_str_repr(k), py_repr(v)))
                .collect();
            format!("OrderedDict([{}])", items.join(", "))
        }
    }
}

/// Python's `repr()` of a string.
pub fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `repr()` of bytes (`b'...'`).
fn py_bytes_repr(b: &[u8]) -> String {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') {
        b'"'
    } else {
        b'\''
    };
    let mut out = String::from("b");
    out.push(char::from(quote));
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(char::from(c));
            }
            0x20..=0x7e => out.push(char::from(c)),
            c => {
                let _ = write!(out, "\\x{c:02x}");
            }
        }
    }
    out.push(char::from(quote));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdxj_lines_render_as_pywb_renders_them() {
        let line = br#"com,example)/uni 20200101000000 {"url": "http://example.com/\u00fcn i", "mime": "text/h\u00e9", "status": 200, "x": {"a": [1, 2.5, null, true]}, "filename": "f.warc", "title": "a\"b\\c/d\u00e9"}"#;
        let mut o = Obj::parse(line, &[]).unwrap();
        o.set("source", "uni");
        o.set("source-coll", "uni");
        assert_eq!(
            o.to_cdxj(None),
            "com,example)/uni 20200101000000 {\"url\": \"http://example.com/%C3%BCn%20i\", \"mime\": \"text/h\\u00e9\", \"status\": \"200\", \"x\": {\"a\": [1, 2.5, null, true]}, \"filename\": \"f.warc\", \"title\": \"a\\\"b\\\\c/d\\u00e9\", \"source\": \"uni\", \"source-coll\": \"uni\"}\n"
        );
        assert_eq!(
            o.to_text(None),
            "com,example)/uni 20200101000000 http://example.com/%C3%BCn%20i text/hé 200 OrderedDict([('a', [1, 2.5, None, True])]) f.warc a\"b\\c/dé uni uni\n"
        );
    }

    #[test]
    fn cdx_columns_are_named_by_their_count() {
        let o = Obj::parse(
            b"com,example)/odd 20200101000000 http://example.com/odd text/html 200 AAAA 100",
            &[],
        )
        .unwrap();
        assert_eq!(o.get_str("length"), "100");
        assert_eq!(
            o.to_text(None),
            "com,example)/odd 20200101000000 http://example.com/odd text/html 200 AAAA 100\n"
        );
        let e = Obj::parse(b"com,example)/odd2 20200101000000 a b c", &[]).unwrap_err();
        assert_eq!(
            e,
            "unknown 5-field cdx format: [b'com,example)/odd2', b'20200101000000', b'a', b'b', b'c']"
        );
    }

    #[test]
    fn field_lists() {
        let o = Obj::parse(
            br#"com,example)/ 20140216050221 {"url": "http://example.com/", "mime": "text/html"}"#,
            &[],
        )
        .unwrap();
        let fl: Vec<String> = ["timestamp", "url", "bogus", "urlkey"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            o.to_text(Some(&fl)),
            "20140216050221 http://example.com/ - com,example)/\n"
        );
        assert_eq!(
            o.to_json(Some(&fl)),
            "{\"timestamp\": \"20140216050221\", \"url\": \"http://example.com/\", \"urlkey\": \"com,example)/\"}\n"
        );
        assert_eq!(
            o.to_cdxj(Some(&fl)),
            "com,example)/ 20140216050221 {\"url\": \"http://example.com/\"}\n"
        );
    }
}
