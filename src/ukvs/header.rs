//! What the header lines of a file say: the field names (`!fields`) and
//! the provenance (`!context`, `!id`, `!meta`).

use serde_json::{json, Value};

use super::{Error, Header};

/// The field names a `!fields {keys: [...], values: [...]}` header
/// declares, keys first. Without `!fields` a file has one key and any
/// number of values ([`Schema::undeclared`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// Names of the key fields, in order.
    pub keys: Vec<String>,
    /// Names of the value fields, in order.
    pub values: Vec<String>,
    /// Whether a `!fields` header declared these (arity is then checked on
    /// every line) or they are the default.
    pub declared: bool,
}

impl Schema {
    /// A declared schema.
    pub fn new<K: Into<String>, V: Into<String>>(
        keys: impl IntoIterator<Item = K>,
        values: impl IntoIterator<Item = V>,
    ) -> Schema {
        Schema {
            keys: keys.into_iter().map(Into::into).collect(),
            values: values.into_iter().map(Into::into).collect(),
            declared: true,
        }
    }

    /// The schema of a file without `!fields`: one key named `key`, values
    /// named `value1`, `value2`, ... as many as the widest line needs.
    pub fn undeclared() -> Schema {
        Schema {
            keys: vec!["key".into()],
            values: Vec::new(),
            declared: false,
        }
    }

    /// Number of key fields.
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Number of fields a data line must have (declared schemas only).
    pub fn arity(&self) -> usize {
        self.keys.len() + self.values.len()
    }

    /// Name of field `i` (0-based, keys first). Past the declared names
    /// (only possible without `!fields`) the name is `value<n>` counting
    /// value fields from 1.
    pub fn name(&self, i: usize) -> std::borrow::Cow<'_, str> {
        // Borrowed for declared names, which is every field of a file with
        // `!fields`; only undeclared extra columns allocate a name.
        let nk = self.keys.len();
        if let Some(k) = self.keys.get(i) {
            k.into()
        } else if let Some(v) = self.values.get(i - nk) {
            v.into()
        } else {
            format!("value{}", i + 1 - nk).into()
        }
    }

    /// Whether `name` names one of the fields of a line with `fields`
    /// fields: a declared name, or without `!fields` one of `key`,
    /// `value1` .. `value<fields-1>` (what [`Schema::name`] gives them).
    pub fn names_field(&self, name: &str, fields: usize) -> bool {
        if self.declared {
            return self.position(name).is_some();
        }
        if name == "key" {
            return fields >= 1;
        }
        name.strip_prefix("value")
            .filter(|d| !d.starts_with('0') && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<usize>().ok())
            .is_some_and(|i| i >= 1 && i < fields)
    }

    /// Position of a field by name, keys first.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.keys
            .iter()
            .chain(self.values.iter())
            .position(|n| n == name)
    }

    /// Reads a `!fields` header value. `line` is for the error.
    pub fn from_header(value: &[u8], line: u64) -> Result<Schema, Error> {
        let v = super::parse_json5(value).map_err(|message| Error::Json { line, message })?;
        Schema::from_json(&v).map_err(|what| Error::BadFields { line, what })
    }

    /// Reads the JSON form `{keys: [...], values: [...]}`; `values` may be
    /// absent (keys only), `keys` must hold at least one name, and no name
    /// may repeat (expansion maps names to values).
    pub fn from_json(v: &Value) -> Result<Schema, String> {
        let obj = v.as_object().ok_or("not an object")?;
        let names = |member: &str, required: bool| -> Result<Vec<String>, String> {
            match obj.get(member) {
                None if !required => Ok(Vec::new()),
                None => Err(format!("no `{member}` array")),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|n| {
                        n.as_str()
                            .filter(|s| !s.is_empty())
                            .map(str::to_owned)
                            .ok_or_else(|| format!("`{member}` holds {n}, not a field name"))
                    })
                    .collect(),
                Some(other) => Err(format!("`{member}` is {other}, not an array")),
            }
        };
        let schema = Schema {
            keys: names("keys", true)?,
            values: names("values", false)?,
            declared: true,
        };
        if schema.keys.is_empty() {
            return Err("`keys` is empty; a record needs at least one key".into());
        }
        // A repeated name would make expansion ambiguous (which value does
        // the name map to?), so it is refused where the schema is read.
        let mut all: Vec<&String> = schema.keys.iter().chain(schema.values.iter()).collect();
        all.sort();
        if let Some(w) = all.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("field name `{}` appears twice", w[0]));
        }
        Ok(schema)
    }

    /// The JSON form written after `!fields`.
    pub fn to_json(&self) -> Value {
        json!({"keys": self.keys, "values": self.values})
    }
}

/// All headers of one file, values parsed. Unknown `!names` are kept raw
/// (in order) so that a rewrite loses nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Headers {
    /// `!context`: a JSON-LD context (usually an array of URLs).
    pub context: Option<Value>,
    /// `!id`: what the file is about (`{uri: ...}`).
    pub id: Option<Value>,
    /// `!fields`.
    pub fields: Option<Schema>,
    /// Every `!meta` object, in file order.
    pub meta: Vec<Value>,
    /// Other header lines, name and raw value, in file order.
    pub other: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Headers {
    /// Adds one header line. A repeated `!context`, `!id` or `!fields` is an
    /// error unless it says the same thing again (files concatenated from
    /// shards repeat them).
    pub fn add(&mut self, h: &Header<'_>, line: u64) -> Result<(), Error> {
        let json = || h.json().map_err(|message| Error::Json { line, message });
        // Only the headers whose meaning we use are parsed; unknown ones are
        // copied byte for byte so that a rewrite cannot change them.
        match h.name {
            b"fields" => {
                let s = Schema::from_header(h.value, line)?;
                match &self.fields {
                    Some(old) if *old != s => {
                        return Err(Error::BadFields {
                            line,
                            what: "a second `!fields` that differs from the first".into(),
                        })
                    }
                    _ => self.fields = Some(s),
                }
            }
            b"context" | b"id" => {
                let v = json()?;
                let slot = if h.name == b"id" {
                    &mut self.id
                } else {
                    &mut self.context
                };
                match slot {
                    Some(old) if *old != v => {
                        return Err(Error::InvalidLine {
                            line,
                            what: format!(
                                "a second `!{}` that differs from the first",
                                String::from_utf8_lossy(h.name)
                            ),
                        })
                    }
                    _ => *slot = Some(v),
                }
            }
            b"meta" => {
                // `!meta` members are looked up by name (`type`), and the
                // schema and FORMATS.md define it as an object.
                let v = json()?;
                if !v.is_object() {
                    return Err(Error::InvalidLine {
                        line,
                        what: format!("`!meta` must be a JSON object, not {v}"),
                    });
                }
                self.meta.push(v);
            }
            _ => self.other.push((h.name.to_vec(), h.value.to_vec())),
        }
        Ok(())
    }

    /// Reads the header block at the start of `data` (a whole file in
    /// memory or a memory map) and returns the headers with the byte
    /// offset of the first data line, where a binary search over the
    /// records starts. Blank lines among the headers are skipped; a `\r`
    /// before a newline is ignored.
    pub fn read_block(data: &[u8]) -> Result<(Headers, usize), Error> {
        let mut headers = Headers::default();
        let mut pos = 0;
        let mut line_no = 0;
        while pos < data.len() {
            let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
            line_no += 1;
            match super::classify(&data[pos..end]) {
                super::Line::Header(h) => headers.add(&h, line_no)?,
                super::Line::Blank => {}
                super::Line::Data(_) => break,
            }
            pos = (end + 1).min(data.len());
        }
        Ok((headers, pos))
    }

    /// The schema in force: `!fields` or the undeclared default.
    pub fn schema(&self) -> Schema {
        self.fields.clone().unwrap_or_else(Schema::undeclared)
    }

    /// The `type` member of the first `!meta` that has one
    /// (`CaptureIndex`, `MementoMap`).
    pub fn meta_type(&self) -> Option<&str> {
        self.meta.iter().find_map(|m| m.get("type")?.as_str())
    }

    /// Whether this file is a MementoMap: `!meta {type: "MementoMap"}` or a
    /// `frequency` field.
    pub fn is_mementomap(&self) -> bool {
        self.meta_type() == Some("MementoMap")
            || self
                .fields
                .as_ref()
                .is_some_and(|s| s.position("frequency").is_some())
    }

    /// The header lines in the order we write them: `!context`, `!id`,
    /// `!fields`, each `!meta`, then the others. Values are strict JSON.
    pub fn lines(&self) -> Vec<Vec<u8>> {
        // A fixed order makes `cat` output of the same headers identical
        // whatever order the input had them in.
        let mut out = Vec::new();
        let mut push = |name: &str, v: &Value| {
            out.push(format!("!{name} {}", super::to_compact(v)).into_bytes());
        };
        if let Some(c) = &self.context {
            push("context", c);
        }
        if let Some(i) = &self.id {
            push("id", i);
        }
        if let Some(f) = &self.fields {
            push("fields", &f.to_json());
        }
        for m in &self.meta {
            push("meta", m);
        }
        for (name, value) in &self.other {
            let mut l = vec![b'!'];
            l.extend_from_slice(name);
            if !value.is_empty() {
                l.push(b' ');
                l.extend_from_slice(value);
            }
            out.push(l);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_header_forms() {
        let s =
            Schema::from_header(br#"{keys: ["lname", "fname"], values: ["q", "p"]}"#, 1).unwrap();
        assert_eq!(s.arity(), 4);
        assert_eq!(s.name(2), "q");
        assert!(Schema::from_header(br#"{keys: []}"#, 3).is_err());
        assert!(Schema::from_header(br#"{keys: ["a"], values: ["a"]}"#, 3).is_err());
        assert!(Schema::from_header(br#"{keys: "a"}"#, 3).is_err());
        let u = Schema::undeclared();
        assert_eq!(u.name(0), "key");
        assert_eq!(u.name(2), "value2");
        assert!(u.names_field("key", 1) && u.names_field("value2", 3));
        assert!(!u.names_field("value3", 3) && !u.names_field("value02", 3));
        assert!(!u.names_field("value", 3) && !u.names_field("value+1", 3));
        assert!(s.names_field("q", 4) && !s.names_field("key", 4));
    }

    #[test]
    fn header_block_of_a_slice() {
        let data =
            b"!fields {keys: [\"surt\"]}\r\n\n!meta {type: \"MementoMap\"}\ncom,a)/ 1\n!meta {}\n";
        let (h, at) = Headers::read_block(data).unwrap();
        assert_eq!(&data[at..at + 9], b"com,a)/ 1");
        assert!(h.is_mementomap());
        assert_eq!(h.schema().keys, ["surt"]);
        let (h, at) = Headers::read_block(b"!meta {}").unwrap();
        assert_eq!((h.meta.len(), at), (1, 8));
        assert_eq!(Headers::read_block(b"").unwrap().1, 0);
        assert!(matches!(
            Headers::read_block(b"!meta {\n"),
            Err(Error::Json { line: 1, .. })
        ));
    }

    #[test]
    fn repeated_headers() {
        let mut h = Headers::default();
        let f = Header {
            name: b"fields",
            value: br#"{keys: ["surt"]}"#,
        };
        h.add(&f, 1).unwrap();
        h.add(&f, 2).unwrap();
        let g = Header {
            name: b"fields",
            value: br#"{keys: ["other"]}"#,
        };
        assert!(matches!(
            h.add(&g, 3),
            Err(Error::BadFields { line: 3, .. })
        ));
        let m = Header {
            name: b"meta",
            value: b"[1]",
        };
        assert!(matches!(
            h.add(&m, 4),
            Err(Error::InvalidLine { line: 4, .. })
        ));
    }
}
