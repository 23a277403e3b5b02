//! Output formats of lookups: index lines as they are, CDXJ, JSON lines,
//! and RFC 7089 TimeMaps in link format.

use std::borrow::Cow;
use std::io::{self, Write};

/// How found lines are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The index lines as they are.
    Ukvs,
    /// `key datetime {json}`.
    Cdxj,
    /// One JSON object per line.
    Json,
    /// An RFC 7089 TimeMap in link format.
    Link,
}

/// CDX11 value letters after key and datetime (` CDX N b a m s k r M S V g`),
/// named as `ukvs cat` names them.
const CDX11_VALUES: &[u8] = b"amskrMSVg";
/// CDX9 (` CDX N b a m s k r V g`) and CDX10 (` CDX N b a m s k r M V g`).
const CDX9_VALUES: &[u8] = b"amskrVg";
const CDX10_VALUES: &[u8] = b"amskrMVg";
/// The three columns 14-field CDX (OutbackCDX, pywb) adds after the 11,
/// named as pywb names them.
const CDX14_MORE: &[&str] = &["orig.length", "orig.offset", "orig.filename"];

/// Key, datetime and the other fields of an index line as JSON.
pub fn to_json(
    line: &[u8],
    names: &[String],
) -> (String, String, serde_json::Map<String, serde_json::Value>) {
    let text = String::from_utf8_lossy(line);
    let (head, json) = match text.find(" {") {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (&text[..], None),
    };
    let mut parts = head.split(' ');
    let key = parts.next().unwrap_or_default().to_string();
    let datetime = parts.next().unwrap_or_default().to_string();
    let rest: Vec<&str> = parts.collect();
    let mut map = serde_json::Map::new();
    // Names for every value (a CDX legend's) win; else a line without
    // JSON is CDX named by its number of columns, as pywb reads them.
    let by_count = match rest.len() {
        _ if json.is_some() || names.len() == rest.len() => None,
        7 => Some((CDX9_VALUES, &[][..])),
        8 => Some((CDX10_VALUES, &[][..])),
        9 => Some((CDX11_VALUES, &[][..])),
        12 => Some((CDX11_VALUES, CDX14_MORE)),
        _ => None,
    };
    let names: Vec<&str> = match by_count {
        Some((letters, more)) => letters
            .iter()
            .filter_map(|&c| crate::ukvs::convert::cdx_letter_name(c))
            .chain(more.iter().copied())
            .collect(),
        None => names.iter().map(String::as_str).collect(),
    };
    for (i, v) in rest.iter().enumerate() {
        if *v == "-" {
            continue;
        }
        let name = names
            .get(i)
            .map_or_else(|| format!("field{}", i + 3), |n| n.to_string());
        map.insert(name, serde_json::Value::String(v.to_string()));
    }
    if let Some(json) = json {
        if let Ok(serde_json::Value::Object(obj)) = serde_json::from_str::<serde_json::Value>(json)
        {
            map.extend(obj);
        }
    }
    (key, datetime, map)
}

/// Writes one found line in `format` (`Link` writes the line as it is;
/// a TimeMap is [`write_timemap`]'s); `names` are the value fields'
/// names (see [`to_json`]).
pub fn write_line(
    wtr: &mut (impl Write + ?Sized),
    line: &[u8],
    format: Format,
    names: &[String],
) -> io::Result<()> {
    match format {
        Format::Ukvs | Format::Link => {
            wtr.write_all(line)?;
        }
        Format::Cdxj => {
            if crate::sorted::lines::field(line, 2).is_some_and(|f| f.first() == Some(&b'{')) {
                wtr.write_all(line)?;
            } else {
                let (key, datetime, map) = to_json(line, names);
                write!(wtr, "{key} {datetime} {}", serde_json::Value::Object(map))?;
            }
        }
        Format::Json => {
            let (key, datetime, map) = to_json(line, names);
            let mut obj = serde_json::Map::new();
            obj.insert("urlkey".into(), key.into());
            obj.insert("timestamp".into(), datetime.into());
            obj.extend(map);
            write!(wtr, "{}", serde_json::Value::Object(obj))?;
        }
    }
    wtr.write_all(b"\n")
}

/// RFC 1123 date of a 14-digit datetime (`Mon, 27 Jan 2014 17:12:00 GMT`).
pub fn http_date(datetime: &str) -> String {
    let secs = crate::sorted::datetime_to_secs(datetime.as_bytes());
    let (year, month, day, rem) = crate::sorted::civil_from_secs(secs);
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[secs.div_euclid(86_400).rem_euclid(7) as usize],
        day,
        MONTHS[(month - 1).clamp(0, 11) as usize],
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The 14-digit datetime of seconds since 1970 (UTC).
pub fn datetime_14(secs: i64) -> String {
    let (year, month, day, rem) = crate::sorted::civil_from_secs(secs);
    format!(
        "{year:04}{month:02}{day:02}{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The URLs a TimeMap links to besides its mementos.
pub struct TimeMapLinks<'a> {
    /// Memento URLs are `{prefix}{datetime}/{url}`.
    pub prefix: &'a str,
    /// The TimeMap's own URL (`rel="self"`), when known.
    pub timemap: Option<&'a str>,
    /// The TimeGate (`rel="timegate"`), when known.
    pub timegate: Option<&'a str>,
}

/// An RFC 7089 TimeMap (application/link-format) of the results, shaped
/// like the example of RFC 7089 section 5: the original resource, the
/// TimeMap itself (with `from`/`until`) and the TimeGate when their URLs
/// are given, then the mementos in time order, the earliest marked
/// `first memento` and the latest `last memento`.
///
/// The original is the URL captured by the latest memento (captures of one
/// SURT key may differ in scheme or `www.`); each memento links to its own
/// captured URL. Lines without a `url` field (the default UKVS profile
/// keeps it in the JSON block, CDX11 in a column) fall back to the URL
/// asked for, else to the key. Repeated `(datetime, url)` pairs, such as a
/// response and its revisit in the same second, are one memento. Nothing
/// is printed when nothing was found.
pub fn write_timemap(
    wtr: &mut impl Write,
    found: &[Cow<[u8]>],
    url: Option<&str>,
    links: &TimeMapLinks,
    names: &[String],
) -> io::Result<()> {
    let mut mementos: Vec<(String, String)> = found
        .iter()
        .map(|l| {
            let (key, datetime, map) = to_json(l, names);
            let original = match map.get("url").and_then(|v| v.as_str()) {
                Some(u) => u.to_string(),
                None => url.map_or(key, str::to_string),
            };
            (datetime, original)
        })
        .collect();
    // Time order (stable, so equal datetimes keep index order).
    mementos.sort_by(|a, b| a.0.cmp(&b.0));
    mementos.dedup();
    let (Some(first), Some(last)) = (mementos.first(), mementos.last()) else {
        return Ok(());
    };
    write!(wtr, "<{}>; rel=\"original\"", link_uri(&last.1))?;
    if let Some(timemap) = links.timemap {
        write!(
            wtr,
            ",\n<{}>; rel=\"self\"; type=\"application/link-format\"; from=\"{}\"; until=\"{}\"",
            link_uri(timemap),
            http_date(&first.0),
            http_date(&last.0)
        )?;
    }
    if let Some(timegate) = links.timegate {
        write!(wtr, ",\n<{}>; rel=\"timegate\"", link_uri(timegate))?;
    }
    let n = mementos.len();
    for (i, (datetime, orig)) in mementos.iter().enumerate() {
        let rel = match (i == 0, i + 1 == n) {
            (true, true) => "first last memento",
            (true, false) => "first memento",
            (false, true) => "last memento",
            (false, false) => "memento",
        };
        write!(
            wtr,
            ",\n<{}>; rel=\"{rel}\"; datetime=\"{}\"",
            link_uri(&format!("{}{datetime}/{orig}", links.prefix)),
            http_date(datetime)
        )?;
    }
    wtr.write_all(b"\n")?;
    Ok(())
}

/// A URI made safe between `<` and `>` of a link-format entry: bytes a URI
/// cannot hold (controls, space, `<`, `>`, `"`, non-ASCII) percent-encoded,
/// everything else (including `%` escapes already there) kept.
pub fn link_uri(uri: &str) -> Cow<'_, str> {
    let unsafe_byte = |b: u8| b <= b' ' || b >= 0x7f || matches!(b, b'<' | b'>' | b'"');
    if !uri.bytes().any(unsafe_byte) {
        return Cow::Borrowed(uri);
    }
    let mut out = String::with_capacity(uri.len() + 8);
    for b in uri.bytes() {
        if unsafe_byte(b) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(char::from(b));
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_of_seconds() {
        for dt in [
            "20140127171200",
            "19700101000000",
            "20000229235959",
            "21000301000000",
        ] {
            let secs = crate::sorted::datetime_to_secs(dt.as_bytes());
            assert_eq!(datetime_14(secs), dt);
        }
    }

    #[test]
    fn http_dates() {
        assert_eq!(http_date("20140127171200"), "Mon, 27 Jan 2014 17:12:00 GMT");
        assert_eq!(http_date("19700101000000"), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date("20000229235959"), "Tue, 29 Feb 2000 23:59:59 GMT");
    }

    #[test]
    fn link_uris_escape_what_would_end_the_link() {
        assert_eq!(
            link_uri("http://a.example/x?q=1%20"),
            "http://a.example/x?q=1%20"
        );
        assert_eq!(
            link_uri("http://a.example/<b> \"c\""),
            "http://a.example/%3Cb%3E%20%22c%22"
        );
        assert_eq!(link_uri("http://a.example/é"), "http://a.example/%C3%A9");
    }
}
