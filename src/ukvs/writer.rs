//! Strict UKVS output: headers first, one space between fields, quoting
//! only where needed, compact strict JSON, and byte order checked as lines
//! go out, so a file this writer finishes is known to be sorted.

use std::io::Write;

use serde_json::Value;

use super::{Error, Schema};

/// Writes a UKVS file: header lines, then data lines.
///
/// ```
/// use serde_json::json;
/// let mut w = ukvs::ukvs::Writer::new(Vec::new());
/// w.header("fields", &json!({"keys": ["surt"], "values": ["frequency"]})).unwrap();
/// w.write_record(&[Some(&b"com,example)/"[..]), Some(&b"12/3"[..])], None).unwrap();
/// let out = w.finish().unwrap();
/// assert_eq!(out, b"!fields {\"keys\":[\"surt\"],\"values\":[\"frequency\"]}\ncom,example)/ 12/3\n");
/// ```
///
/// Data lines must come in byte order (`LC_ALL=C sort` of whole lines;
/// equal lines are allowed); a line that sorts before the previous one is
/// refused with [`Error::OutOfOrder`] naming both, and nothing of it is
/// written. [`Writer::unsorted`] turns the check off for outputs that are
/// sorted later.
pub struct Writer<W: Write> {
    wtr: W,
    check_order: bool,
    /// The previous data line (reused buffer), for the order check.
    previous: Vec<u8>,
    has_data: bool,
    /// Lines written so far, headers included (for error messages).
    line: u64,
    /// Arity declared by a `!fields` header written here, checked by
    /// `write_record`.
    arity: Option<usize>,
    /// Scratch buffer for `write_record`.
    buf: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// A writer that checks byte order.
    pub fn new(wtr: W) -> Writer<W> {
        Writer {
            wtr,
            check_order: true,
            previous: Vec::new(),
            has_data: false,
            line: 0,
            arity: None,
            buf: Vec::new(),
        }
    }

    /// A writer that does not check byte order (for runs that an external
    /// sort orders afterwards, or for `ukvs cat` of unsorted input).
    pub fn unsorted(wtr: W) -> Writer<W> {
        Writer {
            check_order: false,
            ..Writer::new(wtr)
        }
    }

    /// Writes `!name value` with the value as compact strict JSON. A
    /// `!fields` header also sets the arity [`Writer::write_record`] checks.
    pub fn header(&mut self, name: &str, value: &Value) -> Result<(), Error> {
        if name == "fields" {
            let schema = Schema::from_json(value).map_err(|what| Error::BadFields {
                line: self.line + 1,
                what,
            })?;
            self.arity = Some(schema.arity());
        }
        let mut line = Vec::with_capacity(64);
        line.push(b'!');
        line.extend_from_slice(name.as_bytes());
        line.push(b' ');
        serde_json::to_writer(&mut line, value).map_err(std::io::Error::from)?;
        self.raw_header(&line)
    }

    /// Writes a header line as given (it must start with `!`); for headers
    /// copied from another file.
    pub fn raw_header(&mut self, line: &[u8]) -> Result<(), Error> {
        let next = self.line + 1;
        if line.first() != Some(&b'!') {
            return Err(Error::InvalidLine {
                line: next,
                what: "a header line must start with `!`".into(),
            });
        }
        if self.has_data {
            let name = line[1..].split(|&b| b == b' ').next().unwrap_or_default();
            return Err(Error::HeaderAfterData {
                name: String::from_utf8_lossy(name).into_owned(),
                line: next,
            });
        }
        check_one_line(line, next)?;
        // A raw `!fields` sets the arity as `header("fields", ..)` does.
        if let Some(value) = line.strip_prefix(b"!fields ") {
            self.arity = Some(Schema::from_header(value, next)?.arity());
        }
        self.wtr.write_all(line)?;
        self.wtr.write_all(b"\n")?;
        self.line = next;
        Ok(())
    }

    /// Writes a data line as given (no terminator), after the order check.
    pub fn write_line(&mut self, line: &[u8]) -> Result<(), Error> {
        let next = self.line + 1;
        check_one_line(line, next)?;
        // A data line starting with `!` would be read back as a header
        // (format_field quotes such a first field; raw lines are checked),
        // and an empty line or a leading space would lose the first key.
        let what = match line.first() {
            Some(b'!') => Some("a data line cannot start with `!` (quote the first field)"),
            Some(b' ') => Some("a data line cannot start with a space (the first key is empty)"),
            None => Some("an empty data line"),
            _ => None,
        };
        if let Some(what) = what {
            return Err(Error::InvalidLine {
                line: next,
                what: what.into(),
            });
        }
        // Nothing is written before the check passes, so a refused line
        // leaves the output a valid sorted prefix.
        if self.check_order && self.has_data && line < self.previous.as_slice() {
            return Err(Error::OutOfOrder {
                previous: String::from_utf8_lossy(&self.previous).into_owned(),
                got: String::from_utf8_lossy(line).into_owned(),
                line: next,
            });
        }
        self.wtr.write_all(line)?;
        self.wtr.write_all(b"\n")?;
        if self.check_order {
            self.previous.clear();
            self.previous.extend_from_slice(line);
        }
        self.has_data = true;
        self.line = next;
        Ok(())
    }

    /// Formats and writes one record: `fields` keys first (`None` = `-`),
    /// then the OSLJ if given (it must be a JSON object). When this writer
    /// wrote `!fields`, the number of fields must match it.
    pub fn write_record(
        &mut self,
        fields: &[Option<&[u8]>],
        oslj: Option<&Value>,
    ) -> Result<(), Error> {
        let next = self.line + 1;
        if let Some(expected) = self.arity {
            if fields.len() != expected {
                return Err(Error::Arity {
                    line: next,
                    expected,
                    got: fields.len(),
                });
            }
        }
        if oslj.is_some_and(|v| !v.is_object()) {
            return Err(Error::Json {
                line: next,
                message: "the OSLJ must be a JSON object".into(),
            });
        }
        // The scratch buffer is taken out for the call and put back, so
        // records are formatted without allocating once it has grown.
        let mut buf = std::mem::take(&mut self.buf);
        format_record(&mut buf, fields, oslj);
        let r = self.write_line(&buf);
        self.buf = buf;
        r
    }

    /// The inner writer, for output that bypasses the UKVS rules (NDJSON
    /// expansion writes objects, not lines of this file).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.wtr
    }

    /// Number of lines written, headers included.
    pub fn lines_written(&self) -> u64 {
        self.line
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> Result<W, Error> {
        self.wtr.flush()?;
        Ok(self.wtr)
    }
}

/// Refuses a line with an embedded newline: it would become two lines, the
/// second one unchecked.
fn check_one_line(line: &[u8], at: u64) -> Result<(), Error> {
    if memchr::memchr(b'\n', line).is_some() {
        return Err(Error::InvalidLine {
            line: at,
            what: "a line cannot contain a newline".into(),
        });
    }
    Ok(())
}

/// Appends one record line (no terminator) to `buf`, cleared first: fields
/// separated by one space, `None` as `-`, values quoted where needed
/// ([`format_field`]), then the OSLJ as compact JSON. For callers that
/// feed an external sort before writing.
pub fn format_record(buf: &mut Vec<u8>, fields: &[Option<&[u8]>], oslj: Option<&Value>) {
    buf.clear();
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            buf.push(b' ');
        }
        match f {
            None => buf.push(b'-'),
            Some(v) => format_field(buf, v),
        }
    }
    if let Some(j) = oslj {
        if !fields.is_empty() {
            buf.push(b' ');
        }
        // Writing a `Value` into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *buf, j);
    }
}

/// Appends one field value, quoted when it would otherwise read back
/// differently: empty, exactly `-`, starting with `"`, `{` or `!`, or
/// holding a space, a backslash or a control byte. Inside quotes `"` and
/// `\` are escaped, as are control bytes (`\n`, `\r`, `\t`, `\u00XX`);
/// all other bytes, UTF-8 or not, are copied.
pub fn format_field(buf: &mut Vec<u8>, v: &[u8]) {
    // Quote only when needed: most values (SURTs, digests, offsets) are
    // plain tokens and stay as short and as greppable as possible.
    let needs = match v.first() {
        None => true,
        Some(b'"' | b'{' | b'!') => true,
        _ => {
            v == b"-"
                || v.iter()
                    .any(|&b| b == b' ' || b == b'\\' || b < 0x20 || b == 0x7f)
        }
    };
    if !needs {
        buf.extend_from_slice(v);
        return;
    }
    buf.push(b'"');
    for &b in v {
        match b {
            b'"' => buf.extend_from_slice(b"\\\""),
            b'\\' => buf.extend_from_slice(b"\\\\"),
            b'\n' => buf.extend_from_slice(b"\\n"),
            b'\r' => buf.extend_from_slice(b"\\r"),
            b'\t' => buf.extend_from_slice(b"\\t"),
            b if b < 0x20 || b == 0x7f => {
                let _ = write!(buf, "\\u{:04x}", b);
            }
            b => buf.push(b),
        }
    }
    buf.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quotes_only_what_needs_it() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"plain", b"plain"),
            (b"", b"\"\""),
            (b"-", b"\"-\""),
            (b"a-b", b"a-b"),
            (b"two words", b"\"two words\""),
            (b"{x}", b"\"{x}\""),
            (b"a\"b", b"a\"b"),
            (b"\"a", b"\"\\\"a\""),
            (b"a\\b\n", b"\"a\\\\b\\n\""),
            (b"\x01", b"\"\\u0001\""),
        ];
        for (v, want) in cases {
            let mut buf = Vec::new();
            format_field(&mut buf, v);
            assert_eq!(&buf, want, "{:?}", String::from_utf8_lossy(v));
        }
    }

    #[test]
    fn rejects_out_of_order_naming_both_lines() {
        let mut w = Writer::new(Vec::new());
        w.header("meta", &json!({"type": "CaptureIndex"})).unwrap();
        w.write_line(b"com,b)/ 1").unwrap();
        w.write_line(b"com,b)/ 1").unwrap();
        match w.write_line(b"com,a)/ 2") {
            Err(Error::OutOfOrder {
                previous,
                got,
                line,
            }) => {
                assert_eq!(
                    (previous.as_str(), got.as_str(), line),
                    ("com,b)/ 1", "com,a)/ 2", 4)
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            w.header("meta", &json!({})),
            Err(Error::HeaderAfterData { line: 4, .. })
        ));
        let out = w.finish().unwrap();
        assert_eq!(
            out,
            b"!meta {\"type\":\"CaptureIndex\"}\ncom,b)/ 1\ncom,b)/ 1\n"
        );
    }

    #[test]
    fn raw_fields_header_sets_the_arity() {
        let mut w = Writer::new(Vec::new());
        w.raw_header(br#"!fields {keys: ["a", "b"]}"#).unwrap();
        assert!(matches!(
            w.write_record(&[Some(b"x")], None),
            Err(Error::Arity {
                expected: 2,
                got: 1,
                line: 2
            })
        ));
        assert!(matches!(
            Writer::new(Vec::new()).raw_header(b"!fields {keys: 3}"),
            Err(Error::BadFields { line: 1, .. })
        ));
    }

    #[test]
    fn unsorted_writer_and_arity() {
        let mut w = Writer::unsorted(Vec::new());
        w.header("fields", &json!({"keys": ["a"], "values": ["b"]}))
            .unwrap();
        w.write_record(&[Some(b"z"), None], Some(&json!({"k": 1})))
            .unwrap();
        w.write_record(&[Some(b"a"), Some(b"x y")], None).unwrap();
        assert!(matches!(
            w.write_record(&[Some(b"a")], None),
            Err(Error::Arity {
                expected: 2,
                got: 1,
                line: 4
            })
        ));
        assert!(w.write_line(b"!x").is_err());
        assert!(w.write_line(b"").is_err());
        assert!(w.write_line(b" a").is_err());
        assert!(w.write_line(b"a\nb").is_err());
        let out = w.finish().unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "!fields {\"keys\":[\"a\"],\"values\":[\"b\"]}\nz - {\"k\":1}\na \"x y\"\n"
        );
    }
}
