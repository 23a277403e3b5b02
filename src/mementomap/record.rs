//! One MementoMap data line, `key frequency [OSLJ]`, and how two lines for
//! the same key combine.
//!
//! The OSLJ carries decompositions as objects of frequencies, e.g.
//! `{"datetime":{"2014":"20/10"}}`; combining two lines adds those
//! bucket by bucket with the same algebra as the main frequency. Other OSLJ
//! members are kept when both sides agree and dropped otherwise (a combined
//! line cannot carry two different values for one name).

use serde_json::{Map, Value};

use super::freq::{Frequency, TEXT_MAX};
use super::Error;

/// A parsed map line.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The key (see [`super::key`] for its forms).
    pub key: Vec<u8>,
    /// Its frequency.
    pub freq: Frequency,
    /// The OSLJ, if any.
    pub extra: Option<Map<String, Value>>,
}

impl Record {
    /// A record without OSLJ.
    pub fn new(key: Vec<u8>, freq: Frequency) -> Record {
        Record {
            key,
            freq,
            extra: None,
        }
    }

    /// Parses a data line (no terminator). Fields are separated by runs of
    /// spaces; a bare count (the reference tool's output) is a frequency
    /// too. `line_no` is 1-based and only used in errors.
    pub fn parse(line: &[u8], line_no: u64) -> Result<Record, Error> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let bad = |offset: usize, reason: String| Error::Line {
            line: line_no,
            offset: offset as u64,
            reason,
        };
        let key_end = memchr::memchr(b' ', line).unwrap_or(line.len());
        if key_end == 0 {
            return Err(bad(0, "empty key".into()));
        }
        let key = line[..key_end].to_vec();
        let mut pos = key_end;
        while line.get(pos) == Some(&b' ') {
            pos += 1;
        }
        let freq_end = memchr::memchr(b' ', &line[pos..]).map_or(line.len(), |i| pos + i);
        let freq = Frequency::parse(&line[pos..freq_end]).map_err(|e| bad(pos, e.to_string()))?;
        pos = freq_end;
        while line.get(pos) == Some(&b' ') {
            pos += 1;
        }
        let extra = if pos < line.len() {
            match crate::ukvs::parse_json5(&line[pos..]) {
                Ok(Value::Object(m)) => Some(m),
                Ok(_) => return Err(bad(pos, "the OSLJ is not a JSON object".into())),
                Err(e) => return Err(bad(pos, format!("bad OSLJ: {e}"))),
            }
        } else {
            None
        };
        Ok(Record { key, freq, extra })
    }

    /// Appends the line, with its newline.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        write_line(&self.key, &self.freq, self.extra.as_ref(), out);
    }

    /// The line as bytes, with its newline.
    pub fn to_line(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.key.len() + 24);
        self.write_to(&mut out);
        out
    }

    /// Appends the record in the spec's second organisation: one line per
    /// bucket of the decomposition `dim` with the bucket as a second key
    /// column (`com,x)/ 2014 20/10`), plus a total line whose second column
    /// is `all` (`:` = all time). Other OSLJ members stay on the total
    /// line. Lines come out in byte order.
    pub fn write_columns(&self, dim: &str, all: &str, out: &mut Vec<u8>) {
        let mut rest = self.extra.clone().unwrap_or_default();
        let buckets = rest.remove(dim);
        let mut lines: Vec<Vec<u8>> = Vec::new();
        let mut total = Vec::new();
        let mut key = self.key.clone();
        key.push(b' ');
        key.extend_from_slice(all.as_bytes());
        write_line(&key, &self.freq, Some(&rest), &mut total);
        lines.push(total);
        if let Some(Value::Object(m)) = buckets {
            for (bucket, f) in m {
                let Some(f) = f.as_str().and_then(|t| Frequency::parse(t.as_bytes()).ok()) else {
                    continue;
                };
                let mut key = self.key.clone();
                key.push(b' ');
                key.extend_from_slice(bucket.as_bytes());
                let mut line = Vec::new();
                write_line(&key, &f, None, &mut line);
                lines.push(line);
            }
        }
        lines.sort();
        for l in lines {
            out.extend_from_slice(&l);
        }
    }

    /// Adds `other` (same key) into `self`. URI-R counts are summed as
    /// disjoint sets unless `overlapping`.
    pub fn absorb(&mut self, other: &Record, overlapping: bool) {
        self.freq = add(self.freq, other.freq, overlapping);
        self.extra = combine_extra(self.extra.take(), other.extra.as_ref(), overlapping);
    }
}

/// Writes `key frequency [OSLJ]\n`.
pub(crate) fn write_line(
    key: &[u8],
    freq: &Frequency,
    extra: Option<&Map<String, Value>>,
    out: &mut Vec<u8>,
) {
    // The key, then a space, the frequency and the LF put together.
    let mut text = [0; TEXT_MAX];
    text[0] = b' ';
    let end = freq.put(&mut text, 1);
    out.reserve(key.len() + end + 1);
    out.extend_from_slice(key);
    match extra {
        Some(m) if !m.is_empty() => {
            out.extend_from_slice(&text[..end]);
            out.push(b' ');
            // Serialising a Map of Values cannot fail.
            if let Ok(s) = serde_json::to_string(m) {
                out.extend_from_slice(s.as_bytes());
            }
            out.push(b'\n');
        }
        _ => {
            text[end] = b'\n';
            out.extend_from_slice(&text[..=end]);
        }
    }
}

fn add(a: Frequency, b: Frequency, overlapping: bool) -> Frequency {
    if overlapping {
        a.add_overlapping(b)
    } else {
        a.plus(b)
    }
}

/// Sums two OSLJ objects: decomposition objects bucket by bucket, other
/// members kept when equal.
pub(crate) fn combine_extra(
    a: Option<Map<String, Value>>,
    b: Option<&Map<String, Value>>,
    overlapping: bool,
) -> Option<Map<String, Value>> {
    let b = match b {
        None => return a,
        Some(b) => b,
    };
    let mut a = match a {
        None => return Some(b.clone()),
        Some(a) => a,
    };
    let mut drop = Vec::new();
    for (name, va) in a.iter_mut() {
        match b.get(name) {
            Some(vb) => {
                if let Some(sum) = sum_decomposition(va, vb, overlapping) {
                    *va = sum;
                } else if va != vb {
                    drop.push(name.clone());
                }
            }
            None => {
                // A decomposition missing on one side is still a sum (the
                // other side had nothing to add); a plain member is not.
                if !is_decomposition(va) {
                    drop.push(name.clone());
                }
            }
        }
    }
    for (name, vb) in b {
        if !a.contains_key(name) && is_decomposition(vb) {
            a.insert(name.clone(), vb.clone());
        }
    }
    for name in drop {
        a.remove(&name);
    }
    Some(a)
}

fn is_decomposition(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.values().all(|x| {
            x.as_str()
                .is_some_and(|s| Frequency::parse(s.as_bytes()).is_ok())
        }),
        _ => false,
    }
}

fn sum_decomposition(a: &Value, b: &Value, overlapping: bool) -> Option<Value> {
    let (Value::Object(ma), Value::Object(mb)) = (a, b) else {
        return None;
    };
    if !is_decomposition(a) || !is_decomposition(b) {
        return None;
    }
    let mut out = std::collections::BTreeMap::new();
    for (k, v) in ma.iter().chain(mb.iter()) {
        let f = v
            .as_str()
            .and_then(|s| Frequency::parse(s.as_bytes()).ok())
            .unwrap_or_default();
        let e = out.entry(k.clone()).or_insert(None);
        *e = Some(match e.take() {
            None => f,
            Some(prev) => add(prev, f, overlapping),
        });
    }
    Some(Value::Object(
        out.into_iter()
            .map(|(k, f)| (k, Value::String(f.unwrap_or_default().to_string())))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_reference_and_own_lines() {
        let r = Record::parse(b"com,cnn)/news 5", 1).unwrap();
        assert_eq!(r.key, b"com,cnn)/news");
        assert_eq!(r.freq.to_string(), "5");
        let r =
            Record::parse(br#"com,example)/  100/1   {"datetime":{"2014":"20/1"}}"#, 1).unwrap();
        assert_eq!(r.freq.to_string(), "100/1");
        assert_eq!(
            String::from_utf8(r.to_line()).unwrap(),
            "com,example)/ 100/1 {\"datetime\":{\"2014\":\"20/1\"}}\n"
        );
        assert!(matches!(
            Record::parse(b"com,x)/ abc", 7),
            Err(Error::Line {
                line: 7,
                offset: 8,
                ..
            })
        ));
        assert!(Record::parse(b" 5", 1).is_err());
        assert!(Record::parse(b"k 5 [1]", 1).is_err());
    }

    #[test]
    fn columns_layout() {
        let r = Record::parse(
            br#"com,x)/ 10/2 {"datetime":{"2014":"4/1","2015":"6/1"}}"#,
            1,
        )
        .unwrap();
        let mut out = Vec::new();
        r.write_columns("datetime", ":", &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "com,x)/ 2014 4/1\ncom,x)/ 2015 6/1\ncom,x)/ : 10/2\n"
        );
    }

    #[test]
    fn absorb_sums_decompositions() {
        let mut a = Record::parse(
            br#"k 10/2 {"datetime":{"2014":"4/1","2015":"6/1"},"x":1}"#,
            1,
        )
        .unwrap();
        let b = Record::parse(br#"k 5/1 {"datetime":{"2015":"5/1"},"x":1,"y":2}"#, 2).unwrap();
        a.absorb(&b, false);
        assert_eq!(
            String::from_utf8(a.to_line()).unwrap(),
            "k 15/3 {\"datetime\":{\"2014\":\"4/1\",\"2015\":\"11/2\"},\"x\":1}\n"
        );
    }
}
