//! The UKVS header lines of a MementoMap.
//!
//! Written in byte order (`!context`, `!fields`, `!id`, `!meta`) so that a
//! byte-order sort of the whole file leaves it unchanged, as every UKVS
//! file must be. JSON is strict and compact.

use serde_json::{json, Map, Value};

use super::freq::Frequency;

/// The JSON-LD context of UKVS files.
pub const CONTEXT: &str = "https://oduwsdl.github.io/contexts/ukvs";

/// What goes into the headers.
#[derive(Clone, Debug, Default)]
pub struct Header {
    /// `!id {"uri": ...}`: the archive the map describes.
    pub id: Option<String>,
    /// `!meta` name.
    pub name: Option<String>,
    /// Input files (or `-`).
    pub source: Vec<String>,
    /// `YYYY-MM-DDThh:mm:ssZ`.
    pub updated_at: Option<String>,
    /// Total counts of the archive (sum of all entries before rollup).
    pub total: Option<Frequency>,
    /// Extra `!meta` members (compaction parameters, decompositions).
    pub extra: Map<String, Value>,
    /// Key columns (default `["surt"]`).
    pub keys: Vec<String>,
}

impl Header {
    /// The header lines, each ending in a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(format!("!context [{}]\n", json!(CONTEXT)).as_bytes());
        let keys: Vec<&str> = if self.keys.is_empty() {
            vec!["surt"]
        } else {
            self.keys.iter().map(String::as_str).collect()
        };
        let fields = json!({"keys": keys, "values": ["frequency"]});
        out.extend_from_slice(format!("!fields {fields}\n").as_bytes());
        if let Some(id) = &self.id {
            out.extend_from_slice(format!("!id {}\n", json!({ "uri": id })).as_bytes());
        }
        let mut meta = Map::new();
        meta.insert("type".into(), json!("MementoMap"));
        if let Some(n) = &self.name {
            meta.insert("name".into(), json!(n));
        }
        meta.insert(
            "generator".into(),
            json!(concat!("ukvs ", env!("CARGO_PKG_VERSION"))),
        );
        if !self.source.is_empty() {
            meta.insert("source".into(), json!(self.source));
        }
        if let Some(t) = &self.updated_at {
            meta.insert("updated_at".into(), json!(t));
        }
        if let Some(f) = &self.total {
            meta.insert("frequency".into(), json!(f.to_string()));
        }
        for (k, v) in &self.extra {
            meta.insert(k.clone(), v.clone());
        }
        out.extend_from_slice(format!("!meta {}\n", Value::Object(meta)).as_bytes());
        out
    }
}

/// `YYYY-MM-DDThh:mm:ssZ` of a Unix time (proleptic Gregorian, UTC).
pub fn iso8601(unix_secs: u64) -> String {
    let (y, m, d, secs) =
        crate::sorted::civil_from_secs(i64::try_from(unix_secs).unwrap_or(i64::MAX));
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_sorted_strict_json() {
        let h = Header {
            id: Some("https://archive.example.org/".into()),
            name: Some("x".into()),
            source: vec!["a.cdxj".into()],
            updated_at: Some(iso8601(0)),
            total: Some(Frequency::exact(3, 2)),
            ..Header::default()
        };
        let text = String::from_utf8(h.to_bytes()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut sorted = lines.clone();
        sorted.sort();
        assert_eq!(lines, sorted);
        assert_eq!(
            lines[0],
            "!context [\"https://oduwsdl.github.io/contexts/ukvs\"]"
        );
        assert_eq!(
            lines[1],
            "!fields {\"keys\":[\"surt\"],\"values\":[\"frequency\"]}"
        );
        assert_eq!(lines[2], "!id {\"uri\":\"https://archive.example.org/\"}");
        assert!(lines[3]
            .starts_with("!meta {\"type\":\"MementoMap\",\"name\":\"x\",\"generator\":\"ukvs "));
        assert!(lines[3].contains("\"updated_at\":\"1970-01-01T00:00:00Z\""));
        assert!(lines[3].contains("\"frequency\":\"3/2\""));
    }

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00Z");
    }
}
