//! Classic CDX and CDXJ lines -> UKVS capture-index records, so that
//! indexes made by other tools flow into lookups and MementoMaps.
//!
//! Both become the capture-index profile: keys `surt datetime`, values
//! `offset digest`, everything else in the OSLJ under the names the
//! capture indexer uses (`url`, `mime`, `status`, `length`, `filename`,
//! `redirect`, ...). A value of `-` is left out of the OSLJ rather than
//! written as a string, because `-` means "unknown" in every one of these
//! formats.

use serde_json::{json, Map, Number, Value};

use super::{Error, Headers, Schema, Token};

/// What kind of file a stream holds, judged from its first non-blank line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// UKVS (headers with `!`, or plain records).
    Ukvs,
    /// CDXJ: `surt datetime {json}` (pywb, cdxj-indexer).
    Cdxj,
    /// Classic CDX with its legend line.
    Cdx(CdxLegend),
}

/// Guesses the format from the first non-blank line (number `line`, for
/// the error): a CDX legend (` CDX ...`), a CDXJ `!meta 0 {...}` line
/// ([`cdxj_meta`]), another header (`!`: UKVS), or a line shaped like CDXJ
/// (three tokens, the second all digits, the third a JSON object).
/// Anything else is UKVS. A legend that cannot be used (a letter twice, no
/// key or date column) is an error: no line of that file can be read.
pub fn sniff(first: &[u8], line: u64) -> Result<Source, Error> {
    // The legend test comes first: it is the only unambiguous signature.
    if let Some(legend) = CdxLegend::parse(first) {
        return legend.map(Source::Cdx).map_err(|what| Error::Convert {
            line,
            what: format!("bad CDX legend: {what}"),
        });
    }
    if cdxj_meta(first).is_some() {
        return Ok(Source::Cdxj);
    }
    if first.first() == Some(&b'!') {
        return Ok(Source::Ukvs);
    }
    let mut tokens = super::Record::new(first).tokens();
    Ok(match (tokens.next(), tokens.next(), tokens.next()) {
        (
            Some(Ok(Token::Field(_))),
            Some(Ok(Token::Field(super::Field::Plain(dt)))),
            Some(Ok(Token::Json(_))),
        ) if dt.iter().all(u8::is_ascii_digit) => Source::Cdxj,
        _ => Source::Ukvs,
    })
}

/// The JSON text of a CDXJ `!meta` line, or `None` when `line` is not one.
///
/// pywb and cdxj-indexer (`--compress`, the index of a ZipNum cluster)
/// start a CDXJ file with `!meta 0 {"format": "cdxj-gzip-1.0", ...}`: a
/// header named `meta`, a number (it sorts the line first), then a JSON
/// object. A UKVS `!meta` value is a JSON object itself, so a number in
/// front of the object marks the CDXJ form.
pub fn cdxj_meta(line: &[u8]) -> Option<&[u8]> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let rest = super::line::trim_spaces(line.strip_prefix(b"!meta ")?);
    let digits = rest.iter().position(|b| !b.is_ascii_digit())?;
    let json = rest[digits..].strip_prefix(b" ")?;
    let json = super::line::trim_spaces(json);
    (digits > 0 && json.first() == Some(&b'{')).then_some(json)
}

/// The legend line of a classic CDX file: its first byte is the field
/// delimiter (normally a space), then `CDX`, then one letter per column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CdxLegend {
    /// The field delimiter.
    pub delimiter: u8,
    /// One letter per column, in order.
    pub letters: Vec<u8>,
}

impl CdxLegend {
    /// Reads a legend line: `None` when the line is not one (no delimiter
    /// byte and `CDX` at its start), an error saying why when it is one
    /// that cannot be used: a token that is not one letter, a letter
    /// twice (two columns for one name), no key column (`N`, or the `A`
    /// of old files) or no date column (`b`).
    pub fn parse(line: &[u8]) -> Option<Result<CdxLegend, String>> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let (&delimiter, rest) = line.split_first()?;
        // The delimiter is whatever byte precedes `CDX` (a space in every
        // file seen in practice); a letter or digit there means data.
        if delimiter.is_ascii_alphanumeric() {
            return None;
        }
        // Legends are hand-written often enough to carry doubled spaces;
        // empty parts are ignored here (data lines are split strictly).
        let mut parts = rest.split(|&b| b == delimiter).filter(|p| !p.is_empty());
        if parts.next()? != b"CDX" {
            return None;
        }
        Some(CdxLegend::from_parts(delimiter, parts))
    }

    /// Checks the letters after `CDX` (see [`CdxLegend::parse`]).
    fn from_parts<'a>(
        delimiter: u8,
        parts: impl Iterator<Item = &'a [u8]>,
    ) -> Result<CdxLegend, String> {
        let mut letters = Vec::new();
        for p in parts {
            let &[c] = p else {
                return Err(format!(
                    "`{}` is not one letter",
                    String::from_utf8_lossy(p)
                ));
            };
            if !(c.is_ascii_alphabetic() || c == b'#') {
                return Err(format!("`{}` is not a legend letter", c as char));
            }
            // wget (`--warc-cdx`) writes ` CDX a b a m s k r M V g u`: its
            // first column is the URL standing in for the key, the second
            // `a` the URL itself. That one repeat has a meaning; any other
            // would give two columns one name.
            let url_again = c == b'a'
                && letters.first() == Some(&b'a')
                && letters.iter().filter(|&&l| l == b'a').count() == 1;
            if letters.contains(&c) && !url_again {
                return Err(format!(
                    "letter `{}` ({}) appears twice",
                    c as char,
                    cdx_column_name(c)
                ));
            }
            letters.push(c);
        }
        let legend = CdxLegend { delimiter, letters };
        if legend.key_column().is_none() {
            return Err(
                "no key column: neither N (massaged url), A (canonized url) nor a URL (a) first"
                    .into(),
            );
        }
        if !legend.letters.contains(&b'b') {
            return Err("no date column: no b".into());
        }
        // wget's repeat only: with an N or A key, two `a` name two columns.
        if !legend.is_url_keyed() && legend.letters.iter().filter(|&&c| c == b'a').count() > 1 {
            return Err("letter `a` (url) appears twice".into());
        }
        Ok(legend)
    }

    /// What the first column holds as the key: `N` (a SURT), else `A` (the
    /// canonized URL of old files), else, when the first column is `a`,
    /// the URL itself (wget), keyed by its SURT when read. `None` when the
    /// legend has no key.
    pub fn key_column(&self) -> Option<KeyColumn> {
        if self.letters.contains(&b'N') {
            Some(KeyColumn::Surt)
        } else if self.letters.contains(&b'A') {
            Some(KeyColumn::Canonized)
        } else if self.letters.first() == Some(&b'a') {
            Some(KeyColumn::Url)
        } else {
            None
        }
    }

    /// Whether the key is a URL, not a SURT (wget's legend): such files
    /// are in crawl order, or in the byte order of their URLs, never in
    /// SURT order, so a search must key and sort their lines first
    /// ([`surt_keyed_cdxj`]).
    pub fn is_url_keyed(&self) -> bool {
        self.key_column() == Some(KeyColumn::Url)
    }

    /// The legend as written after `CDX`, for provenance in `!meta`.
    pub fn to_text(&self) -> String {
        let letters: Vec<String> = self
            .letters
            .iter()
            .map(|&c| (c as char).to_string())
            .collect();
        letters.join(" ")
    }
}

/// The legend a CDX line without one has, by its number of
/// space-separated columns as pywb reads them: 9 ` CDX N b a m s k r V g`,
/// 10 ` CDX N b a m s k r M V g`, 11 ` CDX N b a m s k r M S V g`; `None`
/// for any other number (or a line starting with `!`, a header).
pub fn legend_by_count(line: &[u8]) -> Option<CdxLegend> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.first() == Some(&b'!') {
        return None;
    }
    let letters: &[u8] = match line.split(|&b| b == b' ').count() {
        9 => b"NbamskrVg",
        10 => b"NbamskrMVg",
        11 => b"NbamskrMSVg",
        _ => return None,
    };
    Some(CdxLegend {
        delimiter: b' ',
        letters: letters.to_vec(),
    })
}

/// What a CDX file's key column holds ([`CdxLegend::key_column`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyColumn {
    /// `N`: a SURT (massaged URL).
    Surt,
    /// `A`: the canonized URL of old files, used as the key as it is.
    Canonized,
    /// `a` first: the original URL (wget); its SURT is the key.
    Url,
}

/// The name a CDX legend letter gets in the OSLJ, `None` for a letter the
/// legend does not define. The letters are those of the Internet
/// Archive's CDX legend (FORMATS.md 1.9 lists them with their meaning);
/// the names follow the capture index where one exists (`a` url, `m`
/// mime, `s` status, `S` length, `g` filename, `r` redirect, `e` ip, `M`
/// robotflags as pywb calls it).
pub fn cdx_letter_name(letter: u8) -> Option<&'static str> {
    Some(match letter {
        b'A' => "canonized_url",
        b'B' => "news_group",
        b'C' => "rulespace_category",
        b'D' => "dat_offset",
        b'F' => "canonized_frame",
        b'G' => "language_description",
        b'H' => "canonized_host",
        b'I' => "canonized_image",
        b'J' => "canonized_jump_point",
        b'K' => "fbis_changed",
        b'L' => "canonized_link",
        b'M' => "robotflags",
        b'N' => "surt",
        b'P' => "canonized_path",
        b'Q' => "language",
        b'R' => "canonized_redirect",
        b'S' => "length",
        b'U' => "uniqueness",
        b'V' => "offset",
        b'X' => "canonized_href_urls",
        b'Y' => "canonized_src_urls",
        b'Z' => "canonized_script_urls",
        b'a' => "url",
        b'b' => "datetime",
        b'c' => "old_checksum",
        b'd' => "uncompressed_dat_offset",
        b'e' => "ip",
        b'f' => "frame",
        b'g' => "filename",
        b'h' => "original_host",
        b'i' => "image",
        b'j' => "jump_point",
        b'k' => "digest",
        b'l' => "link",
        b'm' => "mime",
        b'n' => "arc_length",
        b'o' => "port",
        b'p' => "original_path",
        b'r' => "redirect",
        b's' => "status",
        b't' => "title",
        b'v' => "uncompressed_offset",
        b'x' => "href_urls",
        b'y' => "src_urls",
        b'z' => "script_urls",
        b'#' => "comment",
        // Not in IA's legend: wget's WARC-Record-ID column.
        b'u' => "record_id",
        _ => return None,
    })
}

/// The OSLJ name of a column: its legend name, or `cdx_` and the letter
/// for a letter the legend does not define (kept rather than refused:
/// some tools add their own).
pub fn cdx_column_name(letter: u8) -> String {
    match cdx_letter_name(letter) {
        Some(name) => name.to_owned(),
        None => format!("cdx_{}", letter as char),
    }
}

/// The schema of converted records.
pub fn capture_schema() -> Schema {
    Schema::new(["surt", "datetime"], ["offset", "digest"])
}

/// The headers written before converted records; `source_meta` holds the
/// objects of the input's CDXJ `!meta` lines ([`cdxj_meta`]), kept in
/// `!meta` as `source_meta` so that what they say (a ZipNum index's data
/// file) is not lost.
pub fn capture_headers(source: &Source, source_meta: &[Value]) -> Headers {
    let mut meta =
        json!({"type": "CaptureIndex", "generator": concat!("ukvs ", env!("CARGO_PKG_VERSION"))});
    match source {
        Source::Cdx(legend) => {
            meta["source_format"] = json!("cdx");
            meta["cdx_legend"] = json!(legend.to_text());
        }
        Source::Cdxj => {
            meta["source_format"] = json!("cdxj");
            if !source_meta.is_empty() {
                meta["source_meta"] = Value::Array(source_meta.to_vec());
            }
        }
        Source::Ukvs => {}
    }
    Headers {
        context: Some(json!(["https://oduwsdl.github.io/contexts/ukvs"])),
        fields: Some(capture_schema()),
        meta: vec![meta],
        ..Headers::default()
    }
}

/// One converted record: the four fields and the OSLJ members.
#[derive(Debug, Clone, PartialEq)]
pub struct Capture {
    /// SURT key; `None` (written `-`) for records without a URL, such as
    /// `warcinfo` and `filedesc` records that some indexers list.
    pub surt: Option<Vec<u8>>,
    /// Timestamp as written (normally 14 digits), `None` when unknown.
    pub datetime: Option<Vec<u8>>,
    /// Byte offset, when known.
    pub offset: Option<Vec<u8>>,
    /// `sha1:` + base32, when known.
    pub digest: Option<Vec<u8>>,
    /// Everything else.
    pub extra: Map<String, Value>,
}

impl Capture {
    /// Formats the record as a UKVS line into `buf` (cleared first).
    pub fn format(&self, buf: &mut Vec<u8>) {
        let oslj = Value::Object(self.extra.clone());
        super::format_record(
            buf,
            &[
                self.surt.as_deref(),
                self.datetime.as_deref(),
                self.offset.as_deref(),
                self.digest.as_deref(),
            ],
            (!self.extra.is_empty()).then_some(&oslj),
        );
    }
}

/// Converts one CDX data line. The delimiter splits columns exactly (no
/// runs: an empty column is an error, as CDX writes `-` for unknown).
pub fn from_cdx(legend: &CdxLegend, line: &[u8], line_no: u64) -> Result<Capture, Error> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // Columns are split on every delimiter: CDX has no quoting and writes
    // `-` for empty values, so a run of delimiters is a broken line that
    // must not be silently realigned.
    let cols: Vec<&[u8]> = line.split(|&b| b == legend.delimiter).collect();
    if cols.len() != legend.letters.len() {
        return Err(Error::Convert {
            line: line_no,
            what: format!(
                "{} columns where the CDX legend has {}",
                cols.len(),
                legend.letters.len()
            ),
        });
    }
    let url_keyed = legend.is_url_keyed();
    // wget repeats the URL in a second `a` column; a legend with `a` first
    // and once only has the URL there alone.
    let url_again = url_keyed && legend.letters[1..].contains(&b'a');
    let mut key_url = None;
    let mut surt = None;
    let mut canon = None;
    let mut datetime = None;
    let mut offset = None;
    let mut uoffset = None;
    let mut digest = None;
    let mut extra = Map::new();
    for (i, (&letter, &col)) in legend.letters.iter().zip(&cols).enumerate() {
        // `-` is CDX for "unknown": the member is left out rather than
        // stored as the string "-".
        if col == b"-" {
            continue;
        }
        if i == 0 && url_keyed {
            key_url = Some(col);
            if url_again {
                continue;
            }
        }
        match letter {
            b'N' => surt = Some(col),
            b'A' => canon = Some(col),
            b'b' => datetime = Some(col),
            b'V' => offset = Some(col),
            b'v' => uoffset = Some(col),
            b'k' => digest = Some(col),
            _ => {
                let name = cdx_column_name(letter);
                let v = typed(&name, col);
                extra.insert(name, v);
            }
        }
    }
    // Keep the canonized URL when it is not the key, and the uncompressed
    // offset when a compressed one is the record's offset.
    if let (Some(_), Some(a)) = (surt, canon) {
        extra.insert("canonized_url".into(), typed("canonized_url", a));
    }
    if let (Some(_), Some(v)) = (offset, uoffset) {
        extra.insert(
            "uncompressed_offset".into(),
            typed("uncompressed_offset", v),
        );
    }
    // Old CDX files (` CDX A b e a m s c k r V v D d g M n`) key on the
    // canonized URL instead of a SURT; it is the best key they have. A
    // legend with neither cannot make a capture index at all, whereas a `-`
    // in the column is one record without a URL (a `filedesc` line).
    if legend.key_column().is_none() {
        return Err(Error::Convert {
            line: line_no,
            what: "no key: the CDX legend has neither N (massaged url), A (canonized url) \
                   nor a URL (a) first"
                .into(),
        });
    }
    if !legend.letters.contains(&b'b') {
        return Err(Error::Convert {
            line: line_no,
            what: "no date: the CDX legend has no b column".into(),
        });
    }
    Ok(Capture {
        surt: surt
            .or(canon)
            .map(<[u8]>::to_vec)
            .or_else(|| key_url.map(url_key)),
        datetime: datetime.map(<[u8]>::to_vec),
        offset: offset.or(uoffset).map(<[u8]>::to_vec),
        digest: digest.map(prefixed_digest),
        extra,
    })
}

/// The SURT key of a URL written where a CDX file's key belongs (wget),
/// with the default SURT options every lookup keys its URLs with; a URL
/// the canonicaliser refuses is its own key, as cdxj-indexer keys it.
pub fn url_key(url: &[u8]) -> Vec<u8> {
    crate::surt::key(url, &crate::surt::Options::default()).0
}

/// Writes a line of a URL-keyed CDX file (wget's, [`CdxLegend::is_url_keyed`])
/// into `out` (cleared first) as the CDXJ line a search reads:
/// `surt datetime {json}`, the SURT of the URL first, the other columns
/// as JSON strings named as [`cdx_column_name`] names them, in legend
/// order, `-` columns left out (pywb's CDXJ, as cdxj-indexer writes it:
/// `{"url": "...", "mime": "..."}`). Sorted in byte order, such lines
/// make a searchable index of a file that is not in SURT order.
pub fn surt_keyed_cdxj(
    legend: &CdxLegend,
    line: &[u8],
    line_no: u64,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    out.clear();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let cols: Vec<&[u8]> = line.split(|&b| b == legend.delimiter).collect();
    if cols.len() != legend.letters.len() {
        return Err(Error::Convert {
            line: line_no,
            what: format!(
                "{} columns where the CDX legend has {}",
                cols.len(),
                legend.letters.len()
            ),
        });
    }
    let date = legend.letters.iter().position(|&c| c == b'b');
    let url_again = legend.letters[1..].contains(&b'a');
    match cols[0] {
        b"-" => out.push(b'-'),
        url => out.extend_from_slice(&url_key(url)),
    }
    out.push(b' ');
    out.extend_from_slice(date.map_or(&b"-"[..], |d| cols[d]));
    out.extend_from_slice(b" {");
    let mut first = true;
    for (i, (&letter, &col)) in legend.letters.iter().zip(&cols).enumerate() {
        if col == b"-" || Some(i) == date || (i == 0 && url_again) {
            continue;
        }
        if !first {
            out.extend_from_slice(b", ");
        }
        first = false;
        let name = cdx_column_name(letter);
        let value = String::from_utf8_lossy(col);
        // Strings serialise without fail.
        let _ = serde_json::to_writer(&mut *out, &name);
        out.extend_from_slice(b": ");
        let _ = serde_json::to_writer(&mut *out, &value);
    }
    out.push(b'}');
    Ok(())
}

/// Converts one CDXJ line `surt datetime {json}`: `offset` and `digest`
/// move out of the JSON into fields; `status` and `length` become numbers
/// when they are digits (cdxj-indexer writes them as strings).
pub fn from_cdxj(line: &[u8], line_no: u64) -> Result<Capture, Error> {
    let bad = |what: &str| Error::Convert {
        line: line_no,
        what: what.into(),
    };
    let mut tokens = super::Record::new(line.strip_suffix(b"\r").unwrap_or(line)).tokens();
    // `-` stays unknown: cdxj-indexer lists `warcinfo` records with `-`
    // as their key.
    let mut field = |what: &str| -> Result<Option<Vec<u8>>, Error> {
        match tokens.next() {
            Some(Ok(Token::Field(f))) => Ok(f.value().map(|v| v.into_owned())),
            _ => Err(bad(&format!("no {what}"))),
        }
    };
    let surt = field("SURT key")?;
    let datetime = field("datetime")?;
    let json = match tokens.next() {
        Some(Ok(Token::Json(j))) => j,
        _ => return Err(bad("no JSON block after the datetime")),
    };
    let Value::Object(mut obj) = super::parse_json5(json).map_err(|message| Error::Json {
        line: line_no,
        message,
    })?
    else {
        return Err(bad("the JSON block is not an object"));
    };
    // pywb and cdxj-indexer write offsets as strings, others as numbers;
    // fields are text either way. `null` and `-` are unknown: the field
    // is `-`. Numbers keep their exact text, however large.
    let text = |v: Value| match v {
        Value::Null => None,
        Value::String(s) => Some(s.into_bytes()),
        other => Some(other.to_string().into_bytes()),
    };
    let offset = obj
        .shift_remove("offset")
        .and_then(text)
        .filter(|v| v != b"-");
    let digest = obj
        .shift_remove("digest")
        .and_then(text)
        .filter(|v| v != b"-")
        .map(|d| prefixed_digest(&d));
    // A `null` member is unknown too, like a `-` column of a CDX file,
    // which is left out: the CDX and CDXJ forms of one index convert to
    // the same records.
    obj.retain(|_, v| !v.is_null());
    // The capture-index schema types these as numbers (CDXJ writers
    // disagree); values that are not plain digits are kept as written.
    for name in ["status", "length"] {
        if let Some(Value::String(s)) = obj.get(name) {
            let v = typed(name, s.as_bytes());
            obj.insert(name.into(), v);
        }
    }
    Ok(Capture {
        surt,
        datetime,
        offset,
        digest,
        extra: obj,
    })
}

/// `sha1:` + the base32 digest, unless it already names its algorithm.
fn prefixed_digest(d: &[u8]) -> Vec<u8> {
    if d.contains(&b':') {
        d.to_vec()
    } else {
        let mut out = b"sha1:".to_vec();
        out.extend_from_slice(d);
        out
    }
}

/// Numbers stay numbers for the members the capture index types as such
/// (`status`, `length`, `arc_length`), with their exact digits however
/// many; everything else is a string, and so is a number with a leading
/// zero (JSON has no such number).
fn typed(name: &str, col: &[u8]) -> Value {
    let s = String::from_utf8_lossy(col);
    if matches!(name, "status" | "length" | "arc_length")
        && !col.is_empty()
        && col.iter().all(u8::is_ascii_digit)
    {
        if let Ok(n) = s.parse::<Number>() {
            return Value::Number(n);
        }
    }
    Value::String(s.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdx11_line() {
        let legend = CdxLegend::parse(b" CDX N b a m s k r M S V g")
            .unwrap()
            .unwrap();
        assert_eq!(
            sniff(b" CDX N b a m s k r M S V g", 1).unwrap(),
            Source::Cdx(legend.clone())
        );
        let c = from_cdx(
            &legend,
            b"com,example)/ 20140216050221 http://example.com/ text/html 200 B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A - - 1656 151 example.arc",
            2,
        )
        .unwrap();
        let mut buf = Vec::new();
        c.format(&mut buf);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            r#"com,example)/ 20140216050221 151 sha1:B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A {"url":"http://example.com/","mime":"text/html","status":200,"length":1656,"filename":"example.arc"}"#
        );
        let e = from_cdx(&legend, b"com,example)/ 2014 x", 7).unwrap_err();
        assert!(matches!(e, Error::Convert { line: 7, .. }), "{e}");
    }

    #[test]
    fn cdxj_line() {
        let line = br#"com,example)/ 20140216050221 {"url": "http://example.com/", "mime": "text/html", "status": "200", "digest": "sha1:B2LT", "length": "856", "offset": "171", "filename": "example.arc.gz"}"#;
        assert_eq!(sniff(line, 1).unwrap(), Source::Cdxj);
        let c = from_cdxj(line, 1).unwrap();
        let mut buf = Vec::new();
        c.format(&mut buf);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            r#"com,example)/ 20140216050221 171 sha1:B2LT {"url":"http://example.com/","mime":"text/html","status":200,"length":856,"filename":"example.arc.gz"}"#
        );
        assert!(from_cdxj(b"com,a)/ 2014", 3).is_err());
    }

    #[test]
    fn unknown_keys_stay_placeholders() {
        let legend = CdxLegend::parse(b" CDX N b a m s k r M V g")
            .unwrap()
            .unwrap();
        let c = from_cdx(
            &legend,
            b"- 20081119011153 filedesc://x.arc arc/filedesc0.1.0 - MJ4Q - - 0 x.arc",
            2,
        )
        .unwrap();
        let mut buf = Vec::new();
        c.format(&mut buf);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            r#"- 20081119011153 0 sha1:MJ4Q {"url":"filedesc://x.arc","mime":"arc/filedesc0.1.0","filename":"x.arc"}"#
        );
        let c = from_cdxj(
            br#"- 20170306040353 {"mime": "application/warc-fields", "offset": "0"}"#,
            1,
        )
        .unwrap();
        assert_eq!((c.surt, c.offset), (None, Some(b"0".to_vec())));
        // A legend made by hand without its checks is still refused
        // line by line.
        let no_key = CdxLegend {
            delimiter: b' ',
            letters: b"mb".to_vec(),
        };
        assert!(matches!(
            from_cdx(&no_key, b"http://a/ 2014", 4),
            Err(Error::Convert { line: 4, .. })
        ));
    }

    #[test]
    fn sniffs_ukvs() {
        assert_eq!(sniff(b"!fields {}", 1).unwrap(), Source::Ukvs);
        assert_eq!(sniff(b"!meta {\"a\": 0}", 1).unwrap(), Source::Ukvs);
        assert_eq!(sniff(b"com,a)/ 300", 1).unwrap(), Source::Ukvs);
        assert_eq!(CdxLegend::parse(b"CDX N b"), None);
        assert_eq!(CdxLegend::parse(b"xCDX N b"), None);
    }

    #[test]
    fn sniffs_cdxj_with_its_meta_line() {
        let meta = br#"!meta 0 {"format": "cdxj-gzip-1.0", "filename": "data.cdxj.gz"}"#;
        assert_eq!(sniff(meta, 1).unwrap(), Source::Cdxj);
        assert_eq!(
            cdxj_meta(meta),
            Some(&br#"{"format": "cdxj-gzip-1.0", "filename": "data.cdxj.gz"}"#[..])
        );
        assert_eq!(cdxj_meta(b"!meta 12  {}\r"), Some(&b"{}"[..]));
        for not in [
            &b"!meta {}"[..],
            b"!meta 0{}",
            b"!meta x {}",
            b"!meta 0 x",
            b"!metax 0 {}",
            b"!meta",
        ] {
            assert_eq!(cdxj_meta(not), None, "{}", String::from_utf8_lossy(not));
        }
    }

    #[test]
    fn unusable_legends_are_refused_with_the_reason() {
        let err = |l: &[u8]| CdxLegend::parse(l).unwrap().unwrap_err();
        assert_eq!(err(b" CDX N b bb"), "`bb` is not one letter");
        assert_eq!(err(b" CDX N b a m a"), "letter `a` (url) appears twice");
        assert_eq!(err(b" CDX N b N"), "letter `N` (surt) appears twice");
        assert!(err(b" CDX m b a").starts_with("no key column"));
        assert_eq!(err(b" CDX a b a a"), "letter `a` (url) appears twice");
        assert_eq!(err(b" CDX N b a a"), "letter `a` (url) appears twice");
        assert_eq!(err(b" CDX a b a N"), "letter `a` (url) appears twice");
        assert!(err(b" CDX N a m").starts_with("no date column"));
        assert_eq!(err(b" CDX N b 1"), "`1` is not a legend letter");
        let e = sniff(b" CDX N b a a", 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1: cannot convert: bad CDX legend: letter `a` (url) appears twice"
        );
        // Old files key on A; unknown letters are kept under `cdx_<letter>`.
        let old = CdxLegend::parse(b" CDX A b e a m s c k r V v D d g M n")
            .unwrap()
            .unwrap();
        assert_eq!(old.letters.len(), 16);
        let odd = CdxLegend::parse(b" CDX N b E").unwrap().unwrap();
        let c = from_cdx(&odd, b"com,a)/ 2014 x", 2).unwrap();
        assert_eq!(c.extra["cdx_E"], "x");
    }

    #[test]
    fn every_letter_of_the_ia_legend_has_its_own_name() {
        // The Internet Archive's legend: these letters and no others.
        let ia = b"ABCDFGHIJKLMNPQRSUVXYZabcdefghijklmnoprstvxyz#";
        let mut names: Vec<&str> = ia.iter().map(|&c| cdx_letter_name(c).unwrap()).collect();
        for c in 0u8..=255 {
            // And wget's record id.
            let known = ia.contains(&c) || c == b'u';
            assert_eq!(cdx_letter_name(c).is_some(), known, "{c}");
        }
        assert_eq!(cdx_letter_name(b'u'), Some("record_id"));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ia.len(), "two letters share a name");
        // The CDX-11 legend of pywb and cdxj-indexer.
        let eleven: Vec<&str> = b"NbamskrMSVg"
            .iter()
            .map(|&c| cdx_letter_name(c).unwrap())
            .collect();
        assert_eq!(
            eleven,
            [
                "surt",
                "datetime",
                "url",
                "mime",
                "status",
                "digest",
                "redirect",
                "robotflags",
                "length",
                "offset",
                "filename"
            ]
        );
    }

    /// A line of `wget --warc-cdx` (see tests/data/cdx/README.md).
    const WGET_LEGEND: &[u8] = b" CDX a b a m s k r M V g u";
    const WGET_LINE: &[u8] = b"http://127.0.0.1:55035/docs 20261127115622 http://127.0.0.1:55035/docs - 301 3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ /docs/ - 5828 wget-site.warc.gz <urn:uuid:ced30c50-559b-4bc1-baed-183c2392ca2e>";

    #[test]
    fn wget_legend_keys_on_the_surt_of_its_url() {
        let legend = CdxLegend::parse(WGET_LEGEND).unwrap().unwrap();
        assert!(legend.is_url_keyed());
        assert_eq!(legend.key_column(), Some(KeyColumn::Url));
        let c = from_cdx(&legend, WGET_LINE, 3).unwrap();
        let mut buf = Vec::new();
        c.format(&mut buf);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            r#"1,0,0,127:55035)/docs 20261127115622 5828 sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ {"url":"http://127.0.0.1:55035/docs","status":301,"redirect":"/docs/","filename":"wget-site.warc.gz","record_id":"<urn:uuid:ced30c50-559b-4bc1-baed-183c2392ca2e>"}"#
        );
        let mut out = Vec::new();
        surt_keyed_cdxj(&legend, WGET_LINE, 3, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"1,0,0,127:55035)/docs 20261127115622 {"url": "http://127.0.0.1:55035/docs", "status": "301", "digest": "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", "redirect": "/docs/", "offset": "5828", "filename": "wget-site.warc.gz", "record_id": "<urn:uuid:ced30c50-559b-4bc1-baed-183c2392ca2e>"}"#
        );
        let mut out = Vec::new();
        assert!(surt_keyed_cdxj(&legend, b"http://a/ 2014", 9, &mut out).is_err());
        // A URL-keyed legend with one `a` keeps it as the url too; SURT
        // and canonized keys are not URL keys.
        let one = CdxLegend::parse(b" CDX a b m").unwrap().unwrap();
        let c = from_cdx(&one, b"http://www.example.com/A 2014 text/html", 1).unwrap();
        assert_eq!(c.surt.as_deref(), Some(&b"com,example)/a"[..]));
        assert_eq!(c.extra["url"], "http://www.example.com/A");
        for not in [
            &b" CDX N b a m"[..],
            b" CDX A b a m",
            b" CDX N b a m s k r M S V g",
        ] {
            assert!(!CdxLegend::parse(not).unwrap().unwrap().is_url_keyed());
        }
    }

    #[test]
    fn a_line_without_legend_gets_pywbs_columns_for_its_number() {
        let nine = b"com,a)/ 2014 http://a/ text/html 200 AAAA - 10 f.warc.gz";
        let legend = legend_by_count(nine).unwrap();
        assert_eq!(legend.to_text(), "N b a m s k r V g");
        let c = from_cdx(&legend, nine, 1).unwrap();
        assert_eq!(c.offset.as_deref(), Some(&b"10"[..]));
        assert_eq!(
            legend_by_count(b"a b c d e f g h i j k").map(|l| l.letters.len()),
            Some(11)
        );
        assert_eq!(legend_by_count(b"a b c d e f g h i j k l m n"), None);
        assert_eq!(legend_by_count(b"!fields {} a b c d e f g h"), None);
    }

    #[test]
    fn dashes_in_numeric_columns_are_missing() {
        // IA's files write `-` for an unknown length, offset or status.
        let legend = CdxLegend::parse(b" CDX N b a m s k r M S V g")
            .unwrap()
            .unwrap();
        let c = from_cdx(
            &legend,
            b"com,example)/ 20140216050221 http://example.com/ text/html - - - - - - x.arc",
            2,
        )
        .unwrap();
        let mut buf = Vec::new();
        c.format(&mut buf);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            r#"com,example)/ 20140216050221 - - {"url":"http://example.com/","mime":"text/html","filename":"x.arc"}"#
        );
    }

    #[test]
    fn cdxj_nulls_are_unknown_and_numbers_keep_their_digits() {
        let c = from_cdxj(
            br#"com,a)/ 2014 {"offset": null, "digest": null, "mime": null, "length": 123456789012345678901234567890, "x": -0.10}"#,
            3,
        )
        .unwrap();
        let mut buf = Vec::new();
        c.format(&mut buf);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            r#"com,a)/ 2014 - - {"length":123456789012345678901234567890,"x":-0.10}"#
        );
        let c = from_cdxj(br#"com,a)/ 2014 {"offset": 98765432109876543210987}"#, 1).unwrap();
        assert_eq!(c.offset.as_deref(), Some(&b"98765432109876543210987"[..]));
        let e = from_cdxj(b"com,a)/ 2014 {offset: Infinity}", 7).unwrap_err();
        assert!(
            matches!(&e, Error::Json { line: 7, message } if message.contains("no strict JSON form")),
            "{e}"
        );
        let legend = CdxLegend::parse(b" CDX N b S").unwrap().unwrap();
        let c = from_cdx(&legend, b"com,a)/ 2014 98765432109876543210987", 1).unwrap();
        assert_eq!(
            serde_json::to_string(&c.extra).unwrap(),
            r#"{"length":98765432109876543210987}"#
        );
    }
}
