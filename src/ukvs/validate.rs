//! Everything `ukvs validate` checks, one line at a time.
//!
//! The validator is fed lines (no terminator) in file order and reports
//! the problems of each line as it goes, so a caller can print them with
//! the file name while streaming. Per data line it does one pass over the
//! fields (memchr), one comparison with the previous line and, when the
//! line has an OSLJ, a non-allocating strict JSON check with a scan of its
//! member names (repeated names, names that clash with a field); JSON5 and
//! full parsing happen only when that check cannot vouch for the text (see
//! `json::check_json5`) or a MementoMap breakdown has to be inspected.
//! Whatever `ukvs cat --json` refuses in a record, `validate` reports on
//! that record's line.

use std::fmt;

use serde_json::Value;

use super::frequency;
use super::{classify, Error, Field, Headers, Line, Schema, Token};

/// One problem, on one line (1-based, header lines counted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Line number.
    pub line: u64,
    /// What is wrong.
    pub kind: ProblemKind,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.line, self.kind)
    }
}

/// The classes of problems `validate` finds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProblemKind {
    /// A header line after the first data line (`first_data_line`); it is
    /// not applied, as readers skip it.
    HeaderAfterData { name: String, first_data_line: u64 },
    /// A header whose value is wrong (bad JSON, bad `!fields`, a second
    /// `!fields`/`!context`/`!id` that differs, no name).
    Header { what: String },
    /// Wrong number of fields for the declared `!fields`.
    Arity { expected: usize, got: usize },
    /// A data line with no field before its OSLJ.
    NoKey,
    /// Quoting or escape error at a byte column (1-based).
    Syntax { column: usize, what: String },
    /// The OSLJ is not a JSON(5) object (or repeats a member name, holds a
    /// lone surrogate, bytes that are not UTF-8, `Infinity` or `NaN`).
    Json { message: String },
    /// An OSLJ member named like one of the line's fields: expansion
    /// would have two values for one name.
    Clash { name: String },
    /// The line sorts before the previous data line.
    OutOfOrder { previous_line: u64 },
    /// Same key as the previous data line, in a file where keys are unique
    /// (MementoMaps).
    DuplicateKey { previous_line: u64 },
    /// A MementoMap `frequency` (field or OSLJ breakdown) with bad syntax.
    Frequency { value: String, what: String },
    /// A MementoMap datetime key (field or OSLJ breakdown) with bad syntax.
    DatetimeKey { value: String, what: String },
    /// An empty line (or only spaces).
    Blank,
    /// A `\r` before the newline (CRLF file).
    CarriageReturn,
    /// A data line that starts with a space (a classic CDX header line, or
    /// an empty first key).
    LeadingSpace,
    /// A classic CDX line that does not fit its legend (`ukvs cat` could
    /// not convert it).
    Cdx { what: String },
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ProblemKind::*;
        match self {
            HeaderAfterData {
                name,
                first_data_line,
            } => write!(
                f,
                "header `!{name}` after the first data line (line {first_data_line}); ignored"
            ),
            Header { what } => write!(f, "bad header: {what}"),
            Arity { expected, got } => {
                write!(f, "{got} fields where `!fields` declares {expected}")
            }
            NoKey => write!(f, "no key field before the JSON block"),
            Syntax { column, what } => write!(f, "column {column}: {what}"),
            Json { message } => write!(f, "invalid JSON block: {message}"),
            Clash { name } => write!(
                f,
                "name `{name}` appears both as a field and in the JSON block"
            ),
            OutOfOrder { previous_line } => {
                write!(f, "out of byte order: sorts before line {previous_line}")
            }
            DuplicateKey { previous_line } => {
                write!(f, "duplicate key (same as line {previous_line})")
            }
            Frequency { value, what } => write!(f, "bad frequency {value:?}: {what}"),
            DatetimeKey { value, what } => write!(f, "bad datetime key {value:?}: {what}"),
            Blank => write!(f, "empty line"),
            CarriageReturn => write!(f, "carriage return before the newline (CRLF)"),
            LeadingSpace => write!(f, "data line starts with a space"),
            Cdx { what } => write!(f, "{what}"),
        }
    }
}

/// Counts over a whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Every line, headers and blank lines included.
    pub lines: u64,
    /// Header lines.
    pub headers: u64,
    /// Data lines.
    pub records: u64,
    /// Data lines whose key differs from the previous line's: the number of
    /// distinct keys when the file is sorted.
    pub keys: u64,
    /// Data lines with the same key as the previous one.
    pub duplicate_keys: u64,
    /// Data lines identical to the previous one.
    pub identical_lines: u64,
    /// Problems found.
    pub problems: u64,
    /// Whether every data line was in byte order.
    pub sorted: bool,
    /// Whether the headers declare a MementoMap.
    pub mementomap: bool,
}

/// Checks a file line by line; see the module docs.
#[derive(Debug)]
pub struct Validator {
    headers: Headers,
    schema: Schema,
    /// Index of the `frequency` field and of a `datetime` key field, in
    /// MementoMaps.
    freq_at: Option<usize>,
    datetime_at: Option<usize>,
    mementomap: bool,
    /// Whether the missing `frequency` of a MementoMap was reported.
    reported_no_frequency: bool,
    /// Line number of the first data line (0 before it).
    first_data_line: u64,
    /// Reused buffers of the OSLJ member scan.
    members: super::json::Members,
    /// First bytes of the field names: most OSLJ member names are ruled
    /// out as clashes by one lookup.
    field_initials: [bool; 256],
    /// Number of the line being checked (1-based).
    line: u64,
    /// Copy of the previous data line: the order check and the duplicate
    /// count compare against it. One reused buffer, so no allocation per
    /// line once it has grown to the longest line.
    previous: Vec<u8>,
    /// Length of the key fields of `previous` (bytes, separators
    /// included), so duplicate keys are found with one slice comparison.
    previous_key_len: usize,
    /// Line number of `previous`, for messages that name both lines.
    previous_line: u64,
    summary: Summary,
    /// Problems of the current line; cleared at each call and handed out
    /// as a slice, so a clean line costs no allocation.
    problems: Vec<Problem>,
}

impl Default for Validator {
    fn default() -> Self {
        Validator::new()
    }
}

impl Validator {
    /// A validator at line 1 of a file.
    pub fn new() -> Validator {
        Validator {
            headers: Headers::default(),
            schema: Schema::undeclared(),
            freq_at: None,
            datetime_at: None,
            mementomap: false,
            reported_no_frequency: false,
            first_data_line: 0,
            members: super::json::Members::default(),
            field_initials: initials(&Schema::undeclared()),
            line: 0,
            previous: Vec::new(),
            previous_key_len: 0,
            previous_line: 0,
            summary: Summary {
                sorted: true,
                ..Summary::default()
            },
            problems: Vec::new(),
        }
    }

    /// The headers read so far.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// Checks the next line (without its `\n`) and returns its problems
    /// (empty when it is fine). The slice is valid until the next call.
    pub fn line(&mut self, raw: &[u8]) -> &[Problem] {
        self.problems.clear();
        self.line += 1;
        self.summary.lines += 1;
        // Readers tolerate CRLF (classify strips the `\r`), but a file we
        // call valid must be what our writers produce, so report it.
        if raw.last() == Some(&b'\r') {
            self.report(ProblemKind::CarriageReturn);
        }
        match classify(raw) {
            Line::Blank => self.report(ProblemKind::Blank),
            Line::Header(h) => {
                self.summary.headers += 1;
                if self.first_data_line > 0 {
                    // Readers (`cat`, lookups) read the header block only,
                    // so a late header changes nothing for them: it is
                    // reported and not applied here either.
                    self.report(ProblemKind::HeaderAfterData {
                        name: String::from_utf8_lossy(h.name).into_owned(),
                        first_data_line: self.first_data_line,
                    });
                } else if h.name.is_empty() {
                    self.report(ProblemKind::Header {
                        what: "`!` without a name".into(),
                    });
                } else if let Err(e) = self.headers.add(&h, self.line) {
                    // The line number is already on the problem; keep only
                    // what is wrong.
                    let what = match e {
                        Error::Json { message, .. } => format!("invalid JSON: {message}"),
                        Error::BadFields { what, .. } => format!("`!fields`: {what}"),
                        Error::InvalidLine { what, .. } => what,
                        other => other.detail(),
                    };
                    self.report(ProblemKind::Header { what });
                } else {
                    // Headers may come in any order, so what the records
                    // mean (arity, MementoMap checks) is recomputed after
                    // each one.
                    self.refresh_schema();
                }
            }
            Line::Data(r) => {
                self.summary.records += 1;
                if self.first_data_line == 0 {
                    self.first_data_line = self.line;
                }
                self.data(r.as_bytes());
            }
        }
        self.summary.problems += self.problems.len() as u64;
        &self.problems
    }

    /// The counts, once every line has been fed.
    pub fn finish(self) -> Summary {
        self.summary
    }

    /// Derives from the headers what the data lines are checked against:
    /// the schema, whether this is a MementoMap, and where its
    /// `frequency` and datetime key columns are.
    fn refresh_schema(&mut self) {
        self.schema = self.headers.schema();
        self.field_initials = initials(&self.schema);
        self.mementomap = self.headers.is_mementomap();
        self.summary.mementomap = self.mementomap;
        self.freq_at = None;
        self.datetime_at = None;
        if self.mementomap {
            self.freq_at = self.schema.position("frequency");
            if !self.schema.declared {
                // A MementoMap without `!fields` is `surt frequency`.
                self.freq_at = Some(1);
            }
            self.datetime_at = self.schema.keys.iter().position(|k| k == "datetime");
            // `!meta {type: "MementoMap"}` with a `!fields` that has no
            // `frequency`: no line could be read as a MementoMap entry.
            if self.schema.declared && self.freq_at.is_none() && !self.reported_no_frequency {
                self.reported_no_frequency = true;
                self.report(ProblemKind::Header {
                    what: "a MementoMap's `!fields` must name a `frequency` value \
                           (`{keys: [\"surt\"], values: [\"frequency\"]}`)"
                        .into(),
                });
            }
        }
    }

    /// Records a problem on the current line.
    fn report(&mut self, kind: ProblemKind) {
        self.problems.push(Problem {
            line: self.line,
            kind,
        });
    }

    /// Checks one data line: one tokenizer pass that also validates the
    /// MementoMap columns it passes, then arity, the OSLJ and the order.
    fn data(&mut self, line: &[u8]) {
        // The tokenizer would skip the leading spaces and read the line
        // fine, but a line starting with a space is a CDX legend or a lost
        // first key, and it breaks the "key is a prefix" order argument.
        if line.first() == Some(&b' ') {
            self.report(ProblemKind::LeadingSpace);
        }
        let nkeys = self.schema.key_count();
        let mut n = 0usize;
        let mut key_end = 0usize;
        let mut oslj = None;
        let mut tokens = super::Record::new(line).tokens();
        while let Some(t) = tokens.next() {
            match t {
                Ok(Token::Field(f)) => {
                    if Some(n) == self.freq_at {
                        self.check_frequency(&f);
                    } else if Some(n) == self.datetime_at {
                        self.check_datetime_key(&f);
                    }
                    n += 1;
                    // The key is the line prefix up to the end of the last
                    // key field; remember where that is for duplicates.
                    if n <= nkeys {
                        key_end = tokens.position();
                    }
                }
                Ok(Token::Json(j)) => oslj = Some(j),
                Err((at, what)) => {
                    self.report(ProblemKind::Syntax {
                        column: at + 1,
                        what: what.into(),
                    });
                    // The rest of the line cannot be split reliably.
                    n = usize::MAX;
                    break;
                }
            }
        }
        // Arity only means something when the line could be split.
        if n != usize::MAX {
            if n == 0 {
                self.report(ProblemKind::NoKey);
            } else if self.schema.declared && n != self.schema.arity() {
                self.report(ProblemKind::Arity {
                    expected: self.schema.arity(),
                    got: n,
                });
            }
        }
        if let Some(j) = oslj {
            self.check_oslj(j, n);
        }
        // A line that could not be split (or had fewer fields than keys)
        // counts as its own key: it still takes part in the order check.
        if n == usize::MAX || key_end == 0 {
            key_end = line.len();
        }
        self.order(line, key_end);
    }

    /// Byte order against the previous data line, and the key counts.
    /// Whole lines are compared (as `LC_ALL=C sort` does), not keys: two
    /// lines with equal keys must still be in order by their values, so
    /// that any sorted merge of the same lines gives the same bytes.
    fn order(&mut self, line: &[u8], key_end: usize) {
        if self.summary.records > 1 {
            let prev = self.previous.as_slice();
            if line < prev {
                self.summary.sorted = false;
                let previous_line = self.previous_line;
                self.report(ProblemKind::OutOfOrder { previous_line });
            }
            // Equal keys are adjacent in a sorted file (see FORMATS.md
            // 1.4), so comparing with the previous line finds them all.
            let prev = self.previous.as_slice();
            if line.get(..key_end) == prev.get(..self.previous_key_len) {
                self.summary.duplicate_keys += 1;
                if line == prev {
                    self.summary.identical_lines += 1;
                }
                if self.mementomap {
                    let previous_line = self.previous_line;
                    self.report(ProblemKind::DuplicateKey { previous_line });
                }
            } else {
                self.summary.keys += 1;
            }
        } else {
            self.summary.keys += 1;
        }
        self.previous.clear();
        self.previous.extend_from_slice(line);
        self.previous_key_len = key_end;
        self.previous_line = self.line;
    }

    /// Checks a `frequency` column value.
    fn check_frequency(&mut self, f: &Field<'_>) {
        let Some(v) = f.value() else {
            return; // `-`: unknown is allowed anywhere.
        };
        if let Err(what) = frequency::parse(&v) {
            self.report(ProblemKind::Frequency {
                value: String::from_utf8_lossy(&v).into_owned(),
                what: what.into(),
            });
        }
    }

    /// Checks a `datetime` key column value (MementoMaps only: in a
    /// capture index the datetime is 14 digits, checked by its producer).
    fn check_datetime_key(&mut self, f: &Field<'_>) {
        let Some(v) = f.value() else { return };
        if let Err(what) = frequency::check_datetime_key(&v) {
            self.report(ProblemKind::DatetimeKey {
                value: String::from_utf8_lossy(&v).into_owned(),
                what: what.into(),
            });
        }
    }

    /// Checks the OSLJ of a line with `fields` fields. Outside MementoMaps
    /// validity and member names are all that matter, so the cheap
    /// non-allocating check is enough; MementoMap breakdowns need the
    /// parsed value to look at their keys and frequencies.
    fn check_oslj(&mut self, j: &[u8], fields: usize) {
        let mut clash: Option<String> = None;
        if !self.mementomap {
            let schema = &self.schema;
            let initials = &self.field_initials;
            let mut top = |name: &str| {
                let maybe = name
                    .bytes()
                    .next()
                    .is_some_and(|b| initials[usize::from(b)]);
                if maybe && clash.is_none() && schema.names_field(name, fields) {
                    clash = Some(name.to_owned());
                }
            };
            let checked = super::json::check_json5(j, &mut self.members, &mut top);
            if let Err(message) = checked {
                self.report(ProblemKind::Json { message });
            }
            if let Some(name) = clash {
                self.report(ProblemKind::Clash { name });
            }
            return;
        }
        let v = match super::parse_json5(j) {
            Ok(v) => v,
            Err(message) => return self.report(ProblemKind::Json { message }),
        };
        let Value::Object(members) = v else {
            return self.report(ProblemKind::Json {
                message: "not a JSON object".into(),
            });
        };
        if let Some(name) = members
            .keys()
            .find(|name| self.schema.names_field(name, fields))
        {
            self.report(ProblemKind::Clash { name: name.clone() });
        }
        // A MementoMap breakdown is an object of `key: frequency`; under
        // `datetime` the keys are datetime prefixes or ranges.
        for (name, inner) in &members {
            let Value::Object(parts) = inner else {
                continue;
            };
            for (k, freq) in parts {
                if name == "datetime" {
                    if let Err(what) = frequency::check_datetime_key(k.as_bytes()) {
                        self.report(ProblemKind::DatetimeKey {
                            value: k.clone(),
                            what: what.into(),
                        });
                    }
                }
                // Counts written as JSON numbers (`{"2014": 20}`) are read
                // as the exact count they denote.
                let text = match freq {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    other => other.to_string(),
                };
                if let Err(what) = frequency::parse(text.as_bytes()) {
                    self.report(ProblemKind::Frequency {
                        value: text,
                        what: what.into(),
                    });
                }
            }
        }
    }
}

/// Which bytes start a field name of `schema` (`key` and `value<n>`
/// without `!fields`).
fn initials(schema: &Schema) -> [bool; 256] {
    let mut out = [false; 256];
    if schema.declared {
        for name in schema.keys.iter().chain(&schema.values) {
            if let Some(b) = name.bytes().next() {
                out[usize::from(b)] = true;
            }
        }
    } else {
        out[usize::from(b'k')] = true;
        out[usize::from(b'v')] = true;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<(u64, ProblemKind)> {
        let mut v = Validator::new();
        let mut out = Vec::new();
        for l in text.lines() {
            out.extend(
                v.line(l.as_bytes())
                    .iter()
                    .map(|p| (p.line, p.kind.clone())),
            );
        }
        out
    }

    #[test]
    fn clean_capture_index() {
        let text =
            "!fields {\"keys\":[\"surt\",\"datetime\"],\"values\":[\"offset\",\"digest\"]}\n\
                    com,a)/ 2004 1 sha1:A {\"status\":200}\n\
                    com,a)/ 2004 9 sha1:B {\"status\":200}\n\
                    com,b)/ 2005 2 - {\"status\":200}\n";
        let mut v = Validator::new();
        for l in text.lines() {
            assert!(v.line(l.as_bytes()).is_empty(), "{l}");
        }
        let s = v.finish();
        assert_eq!(
            (s.lines, s.headers, s.records, s.keys, s.duplicate_keys),
            (4, 1, 3, 2, 1)
        );
        assert!(s.sorted);
    }

    #[test]
    fn each_class_on_its_line() {
        let p = problems("!fields {keys: [\"a\"], values: [\"b\"]}\nx 1\nw 2\ny\n!meta {}\nz 1 {bad\nzz \"open\n");
        assert_eq!(
            p,
            vec![
                (3, ProblemKind::OutOfOrder { previous_line: 2 }),
                (
                    4,
                    ProblemKind::Arity {
                        expected: 2,
                        got: 1
                    }
                ),
                (
                    5,
                    ProblemKind::HeaderAfterData {
                        name: "meta".into(),
                        first_data_line: 2
                    }
                ),
                (
                    6,
                    ProblemKind::Json {
                        message: p[3].1.json_message()
                    }
                ),
                (
                    7,
                    ProblemKind::Syntax {
                        column: 4,
                        what: "unterminated quoted value".into()
                    }
                ),
            ]
        );
    }

    impl ProblemKind {
        fn json_message(&self) -> String {
            match self {
                ProblemKind::Json { message } => message.clone(),
                _ => String::new(),
            }
        }
    }

    #[test]
    fn mementomap_checks() {
        let p = problems(
            "!fields {keys: [\"surt\"], values: [\"frequency\"]}\ncom,a)/ 3x\ncom,a)/ 4\ncom,b)/ 1 {datetime: {\"20x\": \"1/\", \"2015\": \"q\"}}\n",
        );
        let kinds: Vec<_> = p
            .iter()
            .map(|(l, k)| (*l, std::mem::discriminant(k)))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (
                    2,
                    std::mem::discriminant(&ProblemKind::Frequency {
                        value: String::new(),
                        what: String::new()
                    })
                ),
                (
                    3,
                    std::mem::discriminant(&ProblemKind::DuplicateKey { previous_line: 2 })
                ),
                (
                    4,
                    std::mem::discriminant(&ProblemKind::DatetimeKey {
                        value: String::new(),
                        what: String::new()
                    })
                ),
                (
                    4,
                    std::mem::discriminant(&ProblemKind::Frequency {
                        value: String::new(),
                        what: String::new()
                    })
                ),
            ]
        );
    }
}
