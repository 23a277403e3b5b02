//! The capture table: one index line -> one row of Common Crawl's flat
//! columnar schema (`cc-index-schema-flat.json` of cc-index-table), plus
//! the columns of ukvs's own after theirs.
//!
//! ```text
//! index line (UKVS, CDXJ, CDX by names) ──► Line {key, datetime, members}
//!                                                 │  url split as java.net.URL does,
//!                                                 │  host by the Public Suffix List
//!                                                 ▼
//!                                           Row {url_*, fetch_*, content_*, warc_*, crawl, subset, extras}
//! ```
//!
//! [`schema`] gives the Arrow schema (names, types and nullability) and
//! [`Row::from_line`] the values; the engine's sink
//! (`engine::table`) turns rows into Parquet files. Nothing here reads or
//! writes a file.
//!
//! The row says what the index line says, nothing more: a column the line
//! cannot fill (charset, languages, detected MIME type in most indexes) is
//! null. Where Common Crawl's own converter puts a fixed value for a
//! missing one, so do we (`fetch_status` -1 without a status).

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, TimeUnit};
use serde_json::{Map, Value};

/// Why a line makes no row.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The line's second field is not a 14-digit datetime: `fetch_time`
    /// cannot be null. Re-index the archive, or repair the line.
    #[error("the datetime {0:?} is not 14 digits (fetch_time needs one)")]
    Datetime(String),
    /// The JSON block of the line is not an object.
    #[error("the line's JSON block cannot be read: {0}")]
    Json(String),
    /// The line has no key (it is empty or a header).
    #[error("the line has no key")]
    NoKey,
}

/// Common Crawl's columns, in their order.
pub const CC_COLUMNS: usize = 32;

/// The columns: Common Crawl's 32, then ukvs's own. The order of the
/// [`Row`] fields and of the builders in the sink follows this list.
pub fn schema(with_partitions: bool) -> Arc<Schema> {
    let s = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
    let mut fields = vec![
        s("url_surtkey", false),
        s("url", false),
        s("url_host_name", false),
        s("url_host_tld", true),
        s("url_host_2nd_last_part", true),
        s("url_host_3rd_last_part", true),
        s("url_host_4th_last_part", true),
        s("url_host_5th_last_part", true),
        s("url_host_registry_suffix", true),
        s("url_host_registered_domain", true),
        s("url_host_private_suffix", true),
        s("url_host_private_domain", true),
        s("url_host_name_reversed", true),
        s("url_protocol", false),
        Field::new("url_port", DataType::Int32, true),
        s("url_path", false),
        s("url_query", true),
        Field::new(
            "fetch_time",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
        Field::new("fetch_status", DataType::Int16, false),
        s("fetch_redirect", true),
        s("content_digest", true),
        s("content_mime_type", true),
        s("content_mime_detected", true),
        s("content_charset", true),
        s("content_languages", true),
        s("content_truncated", true),
        s("warc_filename", false),
        // Null when the offset or length does not fit in Common Crawl's
        // 32 bits: warc_record_offset_long holds it then.
        Field::new("warc_record_offset", DataType::Int32, true),
        Field::new("warc_record_length", DataType::Int32, true),
        // Only Common Crawl's own paths name a segment.
        s("warc_segment", true),
    ];
    if with_partitions {
        fields.push(s("crawl", false));
        fields.push(s("subset", false));
    }
    fields.extend([
        s("record_type", true),
        s("revisit_refers_to_uri", true),
        s("revisit_refers_to_date", true),
        s("revisit_refers_to", true),
        s("revisit_profile", true),
        s("content_payload_digest", true),
        s("fetch_ip", true),
        s("fetch_time_raw", true),
        s("arc_serial", true),
        s("arc_describes", true),
        s("arc_replaces", true),
        Field::new("warc_record_offset_long", DataType::Int64, true),
        Field::new("warc_record_length_long", DataType::Int64, true),
        s("extra_fields", true),
    ]);
    Arc::new(Schema::new(fields))
}

/// Where rows go when the table is written as a directory: Hive-style
/// `crawl=.../subset=...`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Partition {
    pub crawl: String,
    pub subset: String,
}

/// How `crawl` and `subset` are chosen.
#[derive(Debug, Clone, Default)]
pub struct Naming {
    /// The crawl of every row (default: the collection's name, given by
    /// the engine).
    pub crawl: String,
    /// The subset of every row; `None` derives it per row as Common
    /// Crawl sorts its captures: `robotstxt` for a `/robots.txt` URL,
    /// `warc` for 2xx statuses and revisits, `crawldiagnostics` for the
    /// rest.
    pub subset: Option<String>,
}

/// One row. Strings are owned: a row outlives the line's buffer only
/// until it is appended to the column builders.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    pub url_surtkey: String,
    pub url: String,
    pub host: Host,
    pub url_protocol: String,
    pub url_port: Option<i32>,
    pub url_path: String,
    pub url_query: Option<String>,
    /// Microseconds since 1970 (UTC).
    pub fetch_time: i64,
    pub fetch_status: i16,
    pub fetch_redirect: Option<String>,
    /// Base32 SHA-1 without `sha1:`, as Common Crawl writes it.
    pub content_digest: Option<String>,
    pub content_mime_type: Option<String>,
    pub content_mime_detected: Option<String>,
    pub content_charset: Option<String>,
    pub content_languages: Option<String>,
    pub content_truncated: Option<String>,
    pub warc_filename: String,
    pub warc_record_offset: Option<u64>,
    pub warc_record_length: Option<u64>,
    pub warc_segment: Option<String>,
    pub partition: Partition,
    pub record_type: Option<String>,
    pub revisit_refers_to_uri: Option<String>,
    pub revisit_refers_to_date: Option<String>,
    pub revisit_refers_to: Option<String>,
    pub revisit_profile: Option<String>,
    pub content_payload_digest: Option<String>,
    pub fetch_ip: Option<String>,
    pub fetch_time_raw: Option<String>,
    pub arc_serial: Option<String>,
    pub arc_describes: Option<String>,
    pub arc_replaces: Option<String>,
    /// Members of the line no column holds, as a JSON object.
    pub extra_fields: Option<String>,
}

/// The host columns (`url_host_*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    /// Labels from the last: tld, 2nd, 3rd, 4th, 5th last part (null for
    /// an IP address).
    pub parts: [Option<String>; 5],
    pub registry_suffix: Option<String>,
    pub registered_domain: Option<String>,
    pub private_suffix: Option<String>,
    pub private_domain: Option<String>,
    pub reversed: Option<String>,
}

/// Whether a member has a column of its own (the rest go to
/// `extra_fields`). Names are those of every profile: UKVS and CDXJ
/// members, CDX columns as [`crate::ukvs::convert::cdx_letter_name`]
/// names them; `urlkey` and `timestamp` are Common Crawl's own CDX's
/// (the key and datetime again).
fn has_column(member: &str) -> bool {
    matches!(
        member,
        "url"
            | "status"
            | "redirect"
            | "digest"
            | "mime"
            | "mime-detected"
            | "charset"
            | "languages"
            | "truncated"
            | "filename"
            | "offset"
            | "length"
            | "record_type"
            | "refers_to_uri"
            | "refers_to_date"
            | "refers_to"
            | "profile"
            | "payload_digest"
            | "ip"
            | "datetime_raw"
            | "serial"
            | "describes"
            | "replaces"
            | "urlkey"
            | "timestamp"
    )
}

impl Row {
    /// The row of one data line. `names` name the values after key and
    /// datetime when the line has no JSON block (a CDX legend's, or a
    /// UKVS `!fields` header's); a CDX line without a legend is named by
    /// its number of columns, as pywb names it.
    pub fn from_line(line: &[u8], names: &[String], naming: &Naming) -> Result<Row, Error> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let members = members(line, names)?;
        let (key, datetime) = key_datetime(line);
        if key.is_empty() {
            return Err(Error::NoKey);
        }
        let fetch_time = micros(datetime)
            .ok_or_else(|| Error::Datetime(String::from_utf8_lossy(datetime).into_owned()))?;
        let text = |name: &str| -> Option<String> {
            match members.get(name) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s == "-" => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(v) => Some(v.to_string()),
            }
        };
        let number = |name: &str| -> Option<u64> {
            match members.get(name)? {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.parse().ok(),
                _ => None,
            }
        };
        let url = text("url").unwrap_or_default();
        let parts = UrlParts::of(&url);
        let fetch_status = number("status")
            .and_then(|s| i16::try_from(s).ok())
            .unwrap_or(-1);
        let filename = text("filename").unwrap_or_default();
        let (cc_crawl, warc_segment, cc_subset) = match cc_path(&filename) {
            Some((c, g, s)) => (Some(c), Some(g), Some(s)),
            None => (None, None, None),
        };
        let mime = text("mime");
        let partition = Partition {
            crawl: cc_crawl.unwrap_or_else(|| naming.crawl.clone()),
            subset: match (&naming.subset, cc_subset) {
                (Some(s), _) => s.clone(),
                (None, Some(s)) => s,
                (None, None) => subset_of(&parts.path, fetch_status, mime.as_deref()).into(),
            },
        };
        let mut extra = Map::new();
        for (k, v) in &members {
            if !has_column(k) {
                extra.insert(k.clone(), v.clone());
            }
        }
        Ok(Row {
            url_surtkey: String::from_utf8_lossy(key).into_owned(),
            host: Host::of(&parts.host),
            url_protocol: parts.protocol,
            url_port: parts.port,
            url_path: parts.path,
            url_query: parts.query,
            url,
            fetch_time,
            fetch_status,
            fetch_redirect: text("redirect"),
            content_digest: text("digest")
                .map(|d| d.strip_prefix("sha1:").map(str::to_owned).unwrap_or(d)),
            content_mime_type: mime,
            content_mime_detected: text("mime-detected"),
            content_charset: text("charset"),
            content_languages: text("languages"),
            content_truncated: text("truncated"),
            warc_filename: filename,
            warc_record_offset: number("offset"),
            warc_record_length: number("length"),
            warc_segment,
            partition,
            record_type: text("record_type"),
            revisit_refers_to_uri: text("refers_to_uri"),
            revisit_refers_to_date: text("refers_to_date"),
            revisit_refers_to: text("refers_to"),
            revisit_profile: text("profile"),
            content_payload_digest: text("payload_digest"),
            fetch_ip: text("ip"),
            fetch_time_raw: text("datetime_raw"),
            arc_serial: text("serial"),
            arc_describes: text("describes"),
            arc_replaces: text("replaces"),
            extra_fields: (!extra.is_empty()).then(|| Value::Object(extra).to_string()),
        })
    }
}

/// The first two fields of a line.
fn key_datetime(line: &[u8]) -> (&[u8], &[u8]) {
    let mut it = line.splitn(3, |&b| b == b' ');
    (it.next().unwrap_or_default(), it.next().unwrap_or_default())
}

/// The line's members by name: its values after key and datetime named
/// by `names` (`-` left out), then its JSON block's.
fn members(line: &[u8], names: &[String]) -> Result<Map<String, Value>, Error> {
    // The JSON block opens at the first ` {` (keys and datetimes hold
    // neither spaces nor braces).
    let (head, json) = match memchr::memmem::find(line, b" {") {
        Some(i) => (&line[..i], Some(&line[i + 1..])),
        None => (line, None),
    };
    let values: Vec<&[u8]> = head.split(|&b| b == b' ').skip(2).collect();
    let mut map = Map::new();
    let by_count;
    let names: Vec<&str> = if json.is_none() && names.len() != values.len() {
        by_count = crate::ukvs::convert::legend_by_count(line);
        match &by_count {
            Some(legend) => legend.letters[2..]
                .iter()
                .filter_map(|&c| crate::ukvs::convert::cdx_letter_name(c))
                .collect(),
            None => names.iter().map(String::as_str).collect(),
        }
    } else {
        names.iter().map(String::as_str).collect()
    };
    for (i, v) in values.iter().enumerate() {
        if *v == b"-" || v.is_empty() {
            continue;
        }
        let name = names
            .get(i)
            .map_or_else(|| format!("field{}", i + 3), |n| n.to_string());
        map.insert(name, Value::String(unquote(v)));
    }
    if let Some(json) = json {
        let text = String::from_utf8_lossy(json);
        match json5_or_json(text.trim_end()) {
            Ok(Value::Object(obj)) => {
                for (k, v) in obj {
                    map.entry(k).or_insert(v);
                }
            }
            Ok(_) => return Err(Error::Json("not an object".into())),
            Err(e) => return Err(Error::Json(e)),
        }
    }
    Ok(map)
}

/// Strict JSON (what every writer of index lines writes).
fn json5_or_json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// A UKVS field as written: a quoted one unescaped (2 bytes at least).
fn unquote(v: &[u8]) -> String {
    if v.len() >= 2 && v[0] == b'"' && v[v.len() - 1] == b'"' {
        if let Ok(Value::String(s)) = serde_json::from_slice(v) {
            return s;
        }
    }
    String::from_utf8_lossy(v).into_owned()
}

/// Microseconds since 1970 of a 14-digit datetime.
fn micros(datetime: &[u8]) -> Option<i64> {
    if datetime.len() != 14 || !datetime.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(crate::sorted::datetime_to_secs(datetime) * 1_000_000)
}

/// Crawl, segment and subset of a path laid out as Common Crawl's
/// (`crawl-data/CRAWL/segments/SEGMENT/SUBSET/...`).
fn cc_path(filename: &str) -> Option<(String, String, String)> {
    let rest = filename.strip_prefix("common-crawl/").unwrap_or(filename);
    let rest = rest.strip_prefix("crawl-data/")?;
    let mut it = rest.splitn(5, '/');
    let (crawl, segments, segment, subset, _) =
        (it.next()?, it.next()?, it.next()?, it.next()?, it.next()?);
    let known = matches!(subset, "warc" | "crawldiagnostics" | "robotstxt");
    (segments == "segments" && known && !crawl.is_empty() && !segment.is_empty())
        .then(|| (crawl.into(), segment.into(), subset.into()))
}

/// The subset Common Crawl would file a capture under.
pub fn subset_of(path: &str, status: i16, mime: Option<&str>) -> &'static str {
    if path == "/robots.txt" {
        "robotstxt"
    } else if (200..300).contains(&status) || mime == Some("warc/revisit") {
        "warc"
    } else {
        "crawldiagnostics"
    }
}

/// A URL split as `java.net.URL` splits it (what Common Crawl's table
/// holds): scheme lower-cased; host lower-cased, without user info or
/// port; port only when written; path up to `?` or `#` (empty when there
/// is none); query after `?` up to `#`, null without `?`.
#[derive(Debug, Default, PartialEq, Eq)]
struct UrlParts {
    protocol: String,
    host: String,
    port: Option<i32>,
    path: String,
    query: Option<String>,
}

impl UrlParts {
    fn of(url: &str) -> UrlParts {
        let Some(colon) = url.find(':').filter(|&i| {
            i > 0
                && url[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        }) else {
            return UrlParts {
                path: url.to_owned(),
                ..UrlParts::default()
            };
        };
        let protocol = url[..colon].to_ascii_lowercase();
        let rest = &url[colon + 1..];
        let rest = rest.split('#').next().unwrap_or_default();
        let (authority, path_query) = match rest.strip_prefix("//") {
            Some(r) => match r.find(['/', '?']) {
                Some(i) => (&r[..i], &r[i..]),
                None => (r, ""),
            },
            // `dns:host` names its host after the colon.
            None if protocol == "dns" => (rest, ""),
            None => ("", rest),
        };
        let authority = authority.rsplit('@').next().unwrap_or_default();
        let (host, port) = split_port(authority);
        let (path, query) = match path_query.find('?') {
            Some(i) => (&path_query[..i], Some(path_query[i + 1..].to_owned())),
            None => (path_query, None),
        };
        UrlParts {
            protocol,
            host: host.to_ascii_lowercase(),
            port,
            path: path.to_owned(),
            query,
        }
    }
}

/// Host and explicit port of an authority (`[v6]:port` too).
fn split_port(authority: &str) -> (&str, Option<i32>) {
    let port_from = if authority.starts_with('[') {
        authority.find("]:").map(|i| i + 1)
    } else {
        authority.rfind(':')
    };
    match port_from {
        Some(i) => {
            let port = authority[i + 1..].parse().ok();
            (&authority[..i], port)
        }
        None => (authority, None),
    }
}

impl Host {
    /// The host columns of a lower-cased host name, as Common Crawl's
    /// `HostName` fills them: labels and domains null for an IP address;
    /// a trailing dot dropped; suffixes from the Public Suffix List,
    /// private rules included for the private suffix and left out for
    /// the registry suffix; null when the name has no known suffix.
    pub fn of(name: &str) -> Host {
        let mut host = Host {
            name: name.to_owned(),
            ..Host::default()
        };
        if name.is_empty() || name.starts_with('[') || is_ipv4(name) {
            return host;
        }
        let name = name.strip_suffix('.').unwrap_or(name);
        host.name = name.to_owned();
        let mut labels = name.rsplit('.');
        for part in host.parts.iter_mut() {
            *part = labels.next().map(str::to_owned);
        }
        host.reversed = Some(name.rsplit('.').collect::<Vec<_>>().join("."));
        if let Some((suffix, typ)) = suffix(name) {
            host.private_domain = domain_below(name, suffix);
            host.private_suffix = Some(suffix.to_owned());
            // The registry suffix: the longest ICANN rule, found by
            // dropping labels of a private suffix until one is.
            let mut registry = Some((suffix, typ));
            while let Some((s, psl::Type::Private)) = registry {
                registry = s
                    .split_once('.')
                    .and_then(|(_, shorter)| self::suffix(shorter));
            }
            if let Some((s, _)) = registry {
                host.registered_domain = domain_below(name, s);
                host.registry_suffix = Some(s.to_owned());
            }
        }
        host
    }
}

/// The public suffix of `name` by a rule of the list (not the default
/// `*` rule), and the rule's type.
fn suffix(name: &str) -> Option<(&str, psl::Type)> {
    let s = psl::suffix(name.as_bytes())?;
    let typ = s.typ()?;
    let s = std::str::from_utf8(s.trim().as_bytes()).ok()?;
    Some((s, typ))
}

/// The domain one label below `suffix` (None when `name` is the suffix).
fn domain_below(name: &str, suffix: &str) -> Option<String> {
    let above = name.strip_suffix(suffix)?.strip_suffix('.')?;
    let label = above.rsplit('.').next().filter(|l| !l.is_empty())?;
    Some(format!("{label}.{suffix}"))
}

/// A dotted IPv4 address (Common Crawl's decimal variants included:
/// all-digit labels).
fn is_ipv4(name: &str) -> bool {
    let labels: Vec<&str> = name.split('.').collect();
    labels.len() <= 4
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naming() -> Naming {
        Naming {
            crawl: "COLL".into(),
            subset: None,
        }
    }

    #[test]
    fn ukvs_line_fills_the_columns() {
        let line = br#"com,example)/a?b=1 20140216050221 151 sha1:B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A {"url":"http://www.Example.com:8080/a?b=1#frag","mime":"text/html","status":200,"length":1656,"filename":"example.arc","ip":"93.184.216.119","snapshot":"x"}"#;
        let names = vec!["offset".to_string(), "digest".to_string()];
        let row = Row::from_line(line, &names, &naming()).unwrap();
        assert_eq!(row.url_surtkey, "com,example)/a?b=1");
        assert_eq!(row.host.name, "www.example.com");
        assert_eq!(row.host.parts[0].as_deref(), Some("com"));
        assert_eq!(row.host.parts[2].as_deref(), Some("www"));
        assert_eq!(row.host.parts[3], None);
        assert_eq!(row.host.reversed.as_deref(), Some("com.example.www"));
        assert_eq!(row.host.registered_domain.as_deref(), Some("example.com"));
        assert_eq!(row.url_protocol, "http");
        assert_eq!(row.url_port, Some(8080));
        assert_eq!(row.url_path, "/a");
        assert_eq!(row.url_query.as_deref(), Some("b=1"));
        assert_eq!(row.fetch_time, 1_392_526_941_000_000);
        assert_eq!(row.fetch_status, 200);
        assert_eq!(
            row.content_digest.as_deref(),
            Some("B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A")
        );
        assert_eq!(row.warc_record_offset, Some(151));
        assert_eq!(row.warc_record_length, Some(1656));
        assert_eq!(row.fetch_ip.as_deref(), Some("93.184.216.119"));
        assert_eq!(row.partition.crawl, "COLL");
        assert_eq!(row.partition.subset, "warc");
        assert_eq!(row.extra_fields.as_deref(), Some(r#"{"snapshot":"x"}"#));
    }

    #[test]
    fn cdx11_line_without_legend_is_named_by_count() {
        let line = b"com,example)/ 20140216050221 http://example.com/ text/html 404 ABC - - 1656 151 crawl-data/CC-MAIN-2017-39/segments/1505818689752.21/crawldiagnostics/x.warc.gz";
        let row = Row::from_line(line, &[], &naming()).unwrap();
        assert_eq!(row.fetch_status, 404);
        assert_eq!(row.content_digest.as_deref(), Some("ABC"));
        assert_eq!(row.fetch_redirect, None);
        assert_eq!(row.warc_segment.as_deref(), Some("1505818689752.21"));
        assert_eq!(row.partition.crawl, "CC-MAIN-2017-39");
        assert_eq!(row.partition.subset, "crawldiagnostics");
        assert_eq!(row.url_path, "/");
        assert_eq!(row.url_query, None);
    }

    #[test]
    fn cdxj_strings_and_missing_status() {
        let line = br#"org,example)/robots.txt 20200101000000 {"url": "https://example.org/robots.txt", "length": "10", "offset": "0", "filename": "a.warc.gz"}"#;
        let row = Row::from_line(line, &[], &naming()).unwrap();
        assert_eq!(row.fetch_status, -1);
        assert_eq!(row.partition.subset, "robotstxt");
        assert_eq!(row.warc_record_length, Some(10));
        assert_eq!(row.url_port, None);
    }

    #[test]
    fn datetime_must_be_14_digits() {
        let line = br#"com,example)/ - {"url":"http://example.com/"}"#;
        assert!(matches!(
            Row::from_line(line, &[], &naming()),
            Err(Error::Datetime(_))
        ));
    }

    #[test]
    fn hosts_by_the_public_suffix_list() {
        let h = Host::of("myblog.blogspot.com");
        assert_eq!(h.private_suffix.as_deref(), Some("blogspot.com"));
        assert_eq!(h.private_domain.as_deref(), Some("myblog.blogspot.com"));
        assert_eq!(h.registry_suffix.as_deref(), Some("com"));
        assert_eq!(h.registered_domain.as_deref(), Some("blogspot.com"));
        let h = Host::of("news.bbc.co.uk");
        assert_eq!(h.registry_suffix.as_deref(), Some("co.uk"));
        assert_eq!(h.registered_domain.as_deref(), Some("bbc.co.uk"));
        assert_eq!(h.private_domain.as_deref(), Some("bbc.co.uk"));
        let h = Host::of("127.0.0.1");
        assert_eq!(h.parts[0], None);
        assert_eq!(h.reversed, None);
        assert_eq!(h.registered_domain, None);
        let h = Host::of("co.uk");
        assert_eq!(h.registry_suffix.as_deref(), Some("co.uk"));
        assert_eq!(h.registered_domain, None);
        let h = Host::of("host.invalidtld");
        assert_eq!(h.registry_suffix, None);
        assert_eq!(h.parts[1].as_deref(), Some("host"));
    }

    #[test]
    fn urls_split_as_java_does() {
        let u = UrlParts::of("HTTPS://user@host.org");
        assert_eq!(
            (u.protocol.as_str(), u.host.as_str()),
            ("https", "host.org")
        );
        assert_eq!((u.path.as_str(), u.query.as_deref()), ("", None));
        let u = UrlParts::of("http://[::1]:81/x?");
        assert_eq!((u.host.as_str(), u.port), ("[::1]", Some(81)));
        assert_eq!(u.query.as_deref(), Some(""));
        let u = UrlParts::of("dns:www.example.com");
        assert_eq!(u.host, "www.example.com");
    }

    #[test]
    fn schema_has_common_crawls_columns_first() {
        let s = schema(true);
        assert_eq!(s.field(0).name(), "url_surtkey");
        assert_eq!(s.field(CC_COLUMNS - 1).name(), "subset");
        assert_eq!(schema(false).fields().len(), s.fields().len() - 2);
    }
}
