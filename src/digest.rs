//! Payload digests as users spell them, and the digest file: one line per
//! capture keyed by its payload digest, for lookups across URLs
//! (deduplication, revisits that name another URL).
//!
//! | type | role |
//! |---|---|
//! | [`Digest`] | an algorithm and the digest's bytes; [`Digest::parse`] reads every spelling, [`Digest::canonical`] writes the one the digest file is keyed by |
//! | [`Error`] | a spelling that is no digest, saying what was expected |
//! | [`IndexRecord`] | the members of one capture-index line (UKVS, CDXJ or CDX) that the digest file and revisit resolution need |
//! | [`Entry`] | one digest-file line read back |
//!
//! The spellings met in indexes and crawler logs: `sha1:` and 32 base32
//! characters (WARC, pywb, cdxj-indexer), the same without `sha1:` (CDX
//! `k` columns), in lower case, as 40 hex digits (Heritrix logs,
//! `sha1sum`), and `sha256:` with 64 hex digits (browsertrix-crawler) or
//! base32. Every spelling of one digest gives the same [`Digest`], and so
//! the same key. The grammar is in `FORMATS.md`, section 11.

use std::borrow::Cow;
use std::fmt;

use data_encoding::{BASE32_NOPAD, HEXLOWER_PERMISSIVE};
use serde_json::{Map, Value};

use crate::ukvs::{parse_json5, Record, Token};

/// A payload digest: the algorithm and the bytes it gave.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Digest {
    algo: Algo,
    bytes: Vec<u8>,
}

/// The algorithms a spelling may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algo {
    Sha1,
    Sha256,
    Sha512,
    Md5,
}

impl Algo {
    /// The name written before the `:`.
    pub fn name(self) -> &'static str {
        match self {
            Algo::Sha1 => "sha1",
            Algo::Sha256 => "sha256",
            Algo::Sha512 => "sha512",
            Algo::Md5 => "md5",
        }
    }

    /// Bytes of a digest.
    pub fn digest_len(self) -> usize {
        match self {
            Algo::Sha1 => 20,
            Algo::Sha256 => 32,
            Algo::Sha512 => 64,
            Algo::Md5 => 16,
        }
    }

    /// The algorithm a label names (`sha1`, `SHA-256`, ...).
    fn from_label(label: &str) -> Option<Algo> {
        let l = label.to_ascii_lowercase().replace('-', "");
        Some(match l.as_str() {
            "sha1" => Algo::Sha1,
            "sha256" => Algo::Sha256,
            "sha512" => Algo::Sha512,
            "md5" => Algo::Md5,
            _ => return None,
        })
    }

    /// Characters of the base32 spelling without padding.
    fn base32_len(self) -> usize {
        (self.digest_len() * 8).div_ceil(5)
    }
}

/// A spelling that is no digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("no digest given")]
    Empty,
    #[error("unknown digest algorithm {label:?}: use sha1, sha256, sha512 or md5 before the `:`")]
    Algorithm { label: String },
    #[error(
        "{given:?} is no {algo} digest: expected {b32} base32 characters (A-Z, 2-7) or {hex} \
         hex digits"
    )]
    Value {
        given: String,
        algo: &'static str,
        b32: usize,
        hex: usize,
    },
    #[error(
        "{given:?} is no digest: expected `sha1:` and 32 base32 characters, 40 hex digits, or \
         an algorithm and `:` before the value (`sha256:` and 64 hex digits)"
    )]
    Unknown { given: String },
}

impl Digest {
    /// Reads any spelling users have (module docs). Spaces around the
    /// value are ignored; `urn:` before the algorithm is allowed (ARC
    /// revision-3 records write `urn:sha1:`).
    pub fn parse(text: &str) -> Result<Digest, Error> {
        let t = text.trim();
        if t.is_empty() {
            return Err(Error::Empty);
        }
        let t = t
            .get(..4)
            .filter(|p| p.eq_ignore_ascii_case("urn:"))
            .map_or(t, |_| &t[4..]);
        match t.split_once(':') {
            Some((label, value)) => {
                let algo = Algo::from_label(label).ok_or_else(|| Error::Algorithm {
                    label: label.to_string(),
                })?;
                decode(algo, value).ok_or_else(|| Error::Value {
                    given: text.to_string(),
                    algo: algo.name(),
                    b32: algo.base32_len(),
                    hex: algo.digest_len() * 2,
                })
            }
            None => {
                // No algorithm: judged by length. A 32-character value is
                // SHA-1 in base32 (the CDX `k` column), never MD5 in hex,
                // which needs its `md5:`.
                let algo = match t.trim_end_matches('=').len() {
                    32 | 40 => Algo::Sha1,
                    52 | 64 => Algo::Sha256,
                    103 | 128 => Algo::Sha512,
                    _ => {
                        return Err(Error::Unknown {
                            given: text.to_string(),
                        })
                    }
                };
                decode(algo, t).ok_or_else(|| Error::Unknown {
                    given: text.to_string(),
                })
            }
        }
    }

    /// The digest as the digest file keys it: `sha1:` and upper-case
    /// base32 for SHA-1 (the spelling of WARC files and CDX servers), the
    /// algorithm and lower-case hex for the others (browsertrix-crawler's
    /// spelling of SHA-256).
    pub fn canonical(&self) -> String {
        let value = match self.algo {
            Algo::Sha1 => BASE32_NOPAD.encode(&self.bytes),
            _ => HEXLOWER_PERMISSIVE.encode(&self.bytes),
        };
        format!("{}:{value}", self.algo.name())
    }

    pub fn algo(&self) -> Algo {
        self.algo
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// The bytes of `value` for `algo`: hex when it has twice the digest's
/// length in hex digits, else base32 (any case, `=` padding optional,
/// unused trailing bits zero).
fn decode(algo: Algo, value: &str) -> Option<Digest> {
    let v = value.as_bytes();
    let bytes = if v.len() == algo.digest_len() * 2 {
        HEXLOWER_PERMISSIVE.decode(v).ok()?
    } else {
        let unpadded = value.trim_end_matches('=');
        let padded_len = algo.base32_len().div_ceil(8) * 8;
        if unpadded.len() != algo.base32_len()
            || (unpadded.len() != value.len() && value.len() != padded_len)
        {
            return None;
        }
        BASE32_NOPAD
            .decode(unpadded.to_ascii_uppercase().as_bytes())
            .ok()?
    };
    (bytes.len() == algo.digest_len()).then_some(Digest { algo, bytes })
}

/// The header lines of a digest file, in written order.
pub fn header_lines() -> Vec<Vec<u8>> {
    vec![
        br#"!context ["https://oduwsdl.github.io/contexts/ukvs"]"#.to_vec(),
        br#"!fields {"keys":["digest"],"values":["surt","datetime"]}"#.to_vec(),
        format!(
            r#"!meta {{"type":"DigestIndex","generator":"ukvs {}"}}"#,
            env!("CARGO_PKG_VERSION")
        )
        .into_bytes(),
    ]
}

/// What a capture-index line says of one capture, as far as digests and
/// revisits go. Members are strings as written (numbers as their digits);
/// `None` when the line has none or `-`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexRecord {
    pub surt: Option<String>,
    pub datetime: Option<String>,
    pub url: Option<String>,
    pub mime: Option<String>,
    pub status: Option<String>,
    pub digest: Option<String>,
    pub length: Option<String>,
    pub offset: Option<String>,
    pub filename: Option<String>,
    /// `WARC-Refers-To-Target-URI` of a revisit (the `ukvs` profile).
    pub refers_to_uri: Option<String>,
    /// `WARC-Refers-To-Date` of a revisit, as written.
    pub refers_to_date: Option<String>,
    /// A stated payload digest the `digest` field does not give (a
    /// `sha256:` digest in the `ukvs` profile).
    pub payload_digest: Option<String>,
}

impl IndexRecord {
    /// Reads a data line: `key datetime`, then the value fields named by
    /// `value_names` (UKVS, or CDX columns after a legend), then a JSON
    /// block (UKVS OSLJ, CDXJ). `None` for a line with fewer than two
    /// fields or a JSON block that does not parse.
    pub fn parse(line: &[u8], value_names: &[String]) -> Option<IndexRecord> {
        let mut rec = IndexRecord::default();
        let mut n = 0;
        for token in Record::new(line).tokens() {
            match token.ok()? {
                Token::Field(f) => {
                    let value = f.value().map(|v| String::from_utf8_lossy(&v).into_owned());
                    match n {
                        0 => rec.surt = value,
                        1 => rec.datetime = value,
                        i => {
                            if let Some(name) = value_names.get(i - 2) {
                                rec.set(name, value);
                            }
                        }
                    }
                    n += 1;
                }
                Token::Json(j) => {
                    let Value::Object(obj) = parse_json5(j).ok()? else {
                        return None;
                    };
                    for (name, v) in obj {
                        let text = match v {
                            Value::Null => None,
                            Value::String(s) => Some(s),
                            other => Some(other.to_string()),
                        };
                        rec.set(&name, text);
                    }
                }
            }
        }
        (n >= 2).then_some(rec)
    }

    fn set(&mut self, name: &str, value: Option<String>) {
        let value = value.filter(|v| v != "-");
        let slot = match name {
            "url" => &mut self.url,
            "mime" => &mut self.mime,
            "status" => &mut self.status,
            "digest" => &mut self.digest,
            "length" => &mut self.length,
            "offset" => &mut self.offset,
            "filename" => &mut self.filename,
            "refers_to_uri" => &mut self.refers_to_uri,
            "refers_to_date" => &mut self.refers_to_date,
            "payload_digest" => &mut self.payload_digest,
            _ => return,
        };
        *slot = value;
    }

    /// Whether the line is a revisit (pywb's test: `warc/revisit`).
    pub fn is_revisit(&self) -> bool {
        self.mime.as_deref() == Some("warc/revisit")
    }

    /// The digests this capture is known by, each once: its `digest`, and
    /// a stated payload digest of another algorithm. Spellings that are
    /// no digest are left out (counted by the caller).
    pub fn digests(&self) -> (Vec<Digest>, usize) {
        let mut out: Vec<Digest> = Vec::new();
        let mut bad = 0;
        for d in [&self.digest, &self.payload_digest].into_iter().flatten() {
            match Digest::parse(d) {
                Ok(d) if !out.contains(&d) => out.push(d),
                Ok(_) => {}
                Err(_) => bad += 1,
            }
        }
        (out, bad)
    }

    /// Appends this capture's digest-file lines to `out`, each ending in
    /// `\n` (none without a digest); gives how many digests were
    /// unreadable.
    pub fn digest_lines(&self, out: &mut Vec<u8>) -> usize {
        let (digests, bad) = self.digests();
        if digests.is_empty() {
            return bad;
        }
        let mut oslj = Map::new();
        let mut put = |name: &str, v: &Option<String>, numeric: bool| {
            if let Some(v) = v {
                oslj.insert(name.to_string(), typed(v, numeric));
            }
        };
        put("url", &self.url, false);
        put("mime", &self.mime, false);
        put("status", &self.status, true);
        put("length", &self.length, true);
        put("offset", &self.offset, true);
        put("filename", &self.filename, false);
        let oslj = Value::Object(oslj);
        let mut line = Vec::new();
        for d in digests {
            let key = d.canonical();
            crate::ukvs::format_record(
                &mut line,
                &[
                    Some(key.as_bytes()),
                    self.surt.as_deref().map(str::as_bytes),
                    self.datetime.as_deref().map(str::as_bytes),
                ],
                Some(&oslj),
            );
            out.extend_from_slice(&line);
            out.push(b'\n');
        }
        bad
    }
}

/// A number when `v` is a plain decimal number that reads back to the same
/// digits (so `007` stays a string), else the string.
fn typed(v: &str, numeric: bool) -> Value {
    if numeric && !v.is_empty() && v.len() < 19 && v.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = v.parse::<u64>() {
            if n.to_string() == v {
                return Value::from(n);
            }
        }
    }
    Value::String(v.to_string())
}

/// One line of a digest file read back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// The canonical digest (the key).
    pub digest: String,
    pub record: IndexRecord,
}

impl Entry {
    /// Reads `digest surt datetime {oslj}`.
    pub fn parse(line: &[u8]) -> Option<Entry> {
        let mut tokens = Record::new(line).tokens();
        let digest = match tokens.next()?.ok()? {
            Token::Field(f) => String::from_utf8_lossy(&f.value()?).into_owned(),
            Token::Json(_) => return None,
        };
        let rest = &line[tokens.position()..];
        let mut record = IndexRecord::parse(rest.trim_ascii_start(), &[])?;
        record.digest = Some(digest.clone());
        Some(Entry { digest, record })
    }

    /// The capture as a CDXJ line as pywb writes one (`urlkey timestamp`
    /// and a JSON block of strings: `url`, `mime`, `status`, `digest`,
    /// `length`, `offset`, `filename`, as far as known).
    pub fn to_cdxj(&self) -> String {
        let r = &self.record;
        let mut obj = Map::new();
        for (name, v) in [
            ("url", &r.url),
            ("mime", &r.mime),
            ("status", &r.status),
            ("digest", &r.digest),
            ("length", &r.length),
            ("offset", &r.offset),
            ("filename", &r.filename),
        ] {
            if let Some(v) = v {
                obj.insert(name.into(), Value::String(v.clone()));
            }
        }
        format!(
            "{} {} {}",
            r.surt.as_deref().unwrap_or("-"),
            r.datetime.as_deref().unwrap_or("-"),
            Value::Object(obj)
        )
    }
}

/// Text of an optional member, `-` when absent (pywb's `orig.*` spelling).
pub fn or_dash(v: &Option<String>) -> Cow<'_, str> {
    v.as_deref().map_or(Cow::Borrowed("-"), Cow::Borrowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const B32: &str = "B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A";

    #[test]
    fn every_sha1_spelling_is_one_digest() {
        let want = Digest::parse(&format!("sha1:{B32}")).unwrap();
        let hex = HEXLOWER_PERMISSIVE.encode(want.bytes());
        for s in [
            B32.to_string(),
            B32.to_lowercase(),
            format!("SHA1:{B32}"),
            format!("sha-1:{}", B32.to_lowercase()),
            format!("urn:sha1:{B32}"),
            format!("  sha1:{B32}\n"),
            hex.clone(),
            hex.to_uppercase(),
            format!("sha1:{hex}"),
        ] {
            assert_eq!(Digest::parse(&s), Ok(want.clone()), "{s}");
        }
        assert_eq!(want.canonical(), format!("sha1:{B32}"));
    }

    #[test]
    fn sha256_in_hex_and_base32() {
        let hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let d = Digest::parse(&format!("sha256:{hex}")).unwrap();
        assert_eq!(d.canonical(), format!("sha256:{hex}"));
        let b32 = BASE32_NOPAD.encode(d.bytes());
        assert_eq!(b32.len(), 52);
        for s in [
            format!("sha256:{b32}"),
            format!("sha256:{b32}===="),
            format!("SHA-256:{}", hex.to_uppercase()),
            hex.to_string(),
            b32.to_lowercase(),
        ] {
            assert_eq!(Digest::parse(&s).as_ref(), Ok(&d), "{s}");
        }
    }

    #[test]
    fn bad_spellings_say_what_is_expected() {
        assert_eq!(Digest::parse(" "), Err(Error::Empty));
        assert!(matches!(
            Digest::parse("sha3:abc"),
            Err(Error::Algorithm { .. })
        ));
        // 0, 1, 8, 9 are not base32; 31 characters; wrong padding.
        for s in [
            "sha1:B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC360",
            "sha1:B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36",
            "sha1:B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A=",
            "sha256:B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A",
        ] {
            let e = Digest::parse(s).unwrap_err();
            assert!(matches!(e, Error::Value { .. }), "{s}: {e}");
            assert!(e.to_string().contains("base32"), "{e}");
        }
        assert!(matches!(Digest::parse("abc"), Err(Error::Unknown { .. })));
        // Unused trailing bits must be zero, so one digest has one spelling
        // in base32.
        let hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let b32 = BASE32_NOPAD.encode(&HEXLOWER_PERMISSIVE.decode(hex.as_bytes()).unwrap());
        let mut odd = b32.clone().into_bytes();
        *odd.last_mut().unwrap() = if b32.ends_with('Q') { b'R' } else { b'Q' };
        assert!(Digest::parse(&format!("sha256:{}", String::from_utf8(odd).unwrap())).is_err());
    }

    #[test]
    fn index_lines_of_each_profile_give_the_same_digest_line() {
        let ukvs = format!(
            "com,example)/ 20140216050221 151 sha1:{B32} {{\"url\":\"http://example.com/\",\"mime\":\"text/html\",\"status\":200,\"length\":1656,\"filename\":\"example.arc\"}}"
        );
        let names = vec!["offset".to_string(), "digest".to_string()];
        let cdxj = format!(
            "com,example)/ 20140216050221 {{\"url\": \"http://example.com/\", \"mime\": \"text/html\", \"status\": \"200\", \"digest\": \"sha1:{B32}\", \"length\": \"1656\", \"offset\": \"151\", \"filename\": \"example.arc\"}}"
        );
        let cdx = format!(
            "com,example)/ 20140216050221 http://example.com/ text/html 200 {B32} - - 1656 151 example.arc"
        );
        let cdx_names: Vec<String> = b"amskrMSVg"
            .iter()
            .map(|&c| crate::ukvs::convert::cdx_column_name(c))
            .collect();
        let mut lines = Vec::new();
        for (line, names) in [(&ukvs, &names), (&cdxj, &vec![]), (&cdx, &cdx_names)] {
            let rec = IndexRecord::parse(line.as_bytes(), names).unwrap();
            let mut out = Vec::new();
            assert_eq!(rec.digest_lines(&mut out), 0);
            lines.push(String::from_utf8(out).unwrap());
        }
        let want = format!(
            "sha1:{B32} com,example)/ 20140216050221 {{\"url\":\"http://example.com/\",\"mime\":\"text/html\",\"status\":200,\"length\":1656,\"offset\":151,\"filename\":\"example.arc\"}}\n"
        );
        assert_eq!(lines, [want.clone(), want.clone(), want.clone()]);
        let entry = Entry::parse(want.trim_end().as_bytes()).unwrap();
        assert_eq!(entry.digest, format!("sha1:{B32}"));
        assert_eq!(entry.record.offset.as_deref(), Some("151"));
        assert_eq!(entry.record.surt.as_deref(), Some("com,example)/"));
        assert_eq!(entry.record.datetime.as_deref(), Some("20140216050221"));
    }

    #[test]
    fn a_stated_sha256_gives_a_second_line_and_bad_digests_none() {
        let hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let line = format!(
            "com,example)/ 20200101000000 {{\"digest\": \"sha1:{B32}\", \"payload_digest\": \"sha256:{hex}\"}}"
        );
        let rec = IndexRecord::parse(line.as_bytes(), &[]).unwrap();
        let mut out = Vec::new();
        rec.digest_lines(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.contains(&format!("sha256:{hex} com,example)/")));
        let bad = IndexRecord::parse(b"a)/ 2020 {\"digest\": \"sha1:nope\"}", &[]).unwrap();
        let mut out = Vec::new();
        assert_eq!(bad.digest_lines(&mut out), 1);
        assert!(out.is_empty());
    }

    proptest::proptest! {
        /// Every spelling of random digests reads to the digest; any text
        /// reads without panic, and what reads has a canonical form that
        /// reads back to it.
        #[test]
        fn spellings_of_random_digests_agree(
            sha1 in proptest::collection::vec(proptest::num::u8::ANY, 20),
            sha256 in proptest::collection::vec(proptest::num::u8::ANY, 32),
            junk in ".{0,80}",
        ) {
            let b32 = BASE32_NOPAD.encode(&sha1);
            let hex = HEXLOWER_PERMISSIVE.encode(&sha1);
            let want = Digest { algo: Algo::Sha1, bytes: sha1 };
            for s in [format!("sha1:{b32}"), b32.to_lowercase(), hex.clone(), format!("SHA1:{}", hex.to_uppercase())] {
                proptest::prop_assert_eq!(Digest::parse(&s), Ok(want.clone()));
            }
            let b32 = BASE32_NOPAD.encode(&sha256);
            let hex = HEXLOWER_PERMISSIVE.encode(&sha256);
            let want = Digest { algo: Algo::Sha256, bytes: sha256 };
            for s in [format!("sha256:{hex}"), format!("sha256:{b32}"), format!("sha-256:{}====", b32.to_lowercase()), hex] {
                proptest::prop_assert_eq!(Digest::parse(&s), Ok(want.clone()));
            }
            if let Ok(d) = Digest::parse(&junk) {
                proptest::prop_assert_eq!(Digest::parse(&d.canonical()), Ok(d));
            }
        }
    }
}
