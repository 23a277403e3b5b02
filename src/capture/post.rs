//! POST and PUT request bodies appended to the key, as cdxj-indexer's
//! `--post-append` (and pywb) do it.
//!
//! A replay system tells apart captures of one URL made with different
//! request bodies by a query appended to the URL before it is keyed:
//! `?__wb_method=post&<canonical body>`. The body is canonicalised by its
//! `Content-Type`, after the transfer and content codings are undone:
//!
//! * `application/x-www-form-urlencoded`: percent-decoded, `+` as space;
//! * `multipart/...`: the fields, form-encoded (a file's raw bytes too);
//! * `application/json` (and `text/plain` that parses as JSON): the leaves,
//!   form-encoded under their keys (a repeated key gets `.2_`, `.3_`, ...);
//! * anything else: `__wb_post_data=` and the body in base64.
//!
//! The canonical body is cut to 4,096 characters. cdxj-indexer also reads
//! AMF bodies; they are taken as binary here.

use std::io::Read;

use data_encoding::BASE64;
use percent_encoding::{percent_decode, percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::http;

/// Characters Python's `quote_plus` leaves as they are (space aside).
const QUOTE_PLUS: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'_')
    .remove(b'.')
    .remove(b'-')
    .remove(b'~')
    .remove(b' ');

/// The longest canonical body, in characters.
const MAX_QUERY: usize = 4096;

/// What a POST or PUT request adds to its capture's line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostAppend {
    /// The URL with `?__wb_method=...` appended: what is keyed.
    pub key_url: Vec<u8>,
    /// The method, upper-cased (`POST`, `PUT`).
    pub method: String,
    /// The canonical body; `None` when the request's `Content-Length` is
    /// not a number (cdxj-indexer writes `null`).
    pub body: Option<String>,
}

/// `url` with the request's method and canonical body appended, when the
/// request (`block` is its HTTP message) is a POST or PUT; `None` for other
/// methods or a block with no HTTP head.
pub fn post_append(url: &[u8], block: &[u8]) -> Option<PostAppend> {
    let head = http::Head::parse(block).filter(http::Head::is_present)?;
    // warcio's "protocol" of a request line is its method.
    let method = String::from_utf8_lossy(head.protocol).into_owned();
    let upper = method.to_ascii_uppercase();
    if upper != "POST" && upper != "PUT" {
        return None;
    }
    let head_text = &block[..head.payload_start.min(block.len())];
    let header = |name: &[u8]| http::cdx_writer_header(head_text, name);
    // The body is read only for the exact spellings, and only as many
    // bytes of it as the request's Content-Length says (8192 without one;
    // none when it is not a number).
    let body = if method == "POST" || method == "PUT" {
        body_length(header(b"content-length").map(|v| v.trim_ascii())).map(|n| {
            let payload = &block[head.payload_start.min(block.len())..];
            let data = decoded_payload(payload, &header, n);
            canonical_body(header(b"content-type").map(|v| v.trim_ascii()), &data)
        })
    } else {
        Some(String::new())
    };
    let mut key_url = url.to_vec();
    key_url.push(if url.contains(&b'?') { b'&' } else { b'?' });
    key_url.extend_from_slice(b"__wb_method=");
    key_url.extend_from_slice(method.as_bytes());
    if let Some(b) = body.as_deref().filter(|b| !b.is_empty()) {
        key_url.push(b'&');
        key_url.extend_from_slice(b.as_bytes());
    }
    Some(PostAppend {
        key_url,
        method: upper,
        body,
    })
}

/// How many bytes of the body cdxj-indexer reads: the Content-Length, 8192
/// without one, `None` when it is not a number.
fn body_length(v: Option<&[u8]>) -> Option<usize> {
    match v {
        None => Some(8192),
        Some(l) => {
            let n = std::str::from_utf8(l).ok()?.trim().parse::<i64>().ok()?;
            Some(usize::try_from(n).unwrap_or(0))
        }
    }
}

/// The first `n` bytes of the payload as warcio's content stream gives
/// them: `Transfer-Encoding: chunked` undone, then a `gzip` (one member)
/// or `deflate` (zlib, else raw) `Content-Encoding`; what decodes before an
/// error is kept, and a payload that does not decode at all is left as it
/// is. Other codings are left as they are.
fn decoded_payload<'a>(
    payload: &[u8],
    header: &dyn Fn(&[u8]) -> Option<&'a [u8]>,
    n: usize,
) -> Vec<u8> {
    let mut data = payload.to_vec();
    if header(b"transfer-encoding").is_some_and(|v| v.trim_ascii() == b"chunked") {
        if let Some(d) = dechunk(&data) {
            data = d;
        }
    }
    let limit = n as u64;
    let coding = header(b"content-encoding").map(|v| v.trim_ascii().to_ascii_lowercase());
    let decoded = match coding.as_deref() {
        Some(b"gzip") => read_some(flate2::read::GzDecoder::new(&data[..]).take(limit)),
        Some(b"deflate") => read_some(flate2::read::ZlibDecoder::new(&data[..]).take(limit))
            .or_else(|| read_some(flate2::read::DeflateDecoder::new(&data[..]).take(limit))),
        _ => None,
    };
    let mut out = decoded.unwrap_or(data);
    out.truncate(n);
    out
}

/// What a decoder gives before it ends or fails; `None` when it fails at
/// once.
fn read_some(mut r: impl Read) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match r.read(&mut chunk) {
            Ok(0) => return Some(out),
            Ok(k) => out.extend_from_slice(&chunk[..k]),
            Err(_) if out.is_empty() => return None,
            Err(_) => return Some(out),
        }
    }
}

/// The data of a chunked body; `None` when it is not one.
fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let nl = memchr::memchr(b'\n', b)?;
        let line = b[..nl].trim_ascii();
        let size = line.split(|&c| c == b';').next()?.trim_ascii();
        let n = usize::from_str_radix(std::str::from_utf8(size).ok()?, 16).ok()?;
        b = &b[nl + 1..];
        if n == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..n)?);
        b = &b[n..];
        b = b
            .strip_prefix(b"\r\n")
            .or_else(|| b.strip_prefix(b"\n"))
            .unwrap_or(b);
    }
}

/// cdxj-indexer's `query_extract`: the canonical form of a body of type
/// `mime`.
fn canonical_body(mime: Option<&[u8]>, data: &[u8]) -> String {
    let mime = mime.unwrap_or_default();
    let binary = || format!("__wb_post_data={}", BASE64.encode(data));
    let query = if mime.starts_with(b"application/x-www-form-urlencoded") {
        match std::str::from_utf8(data) {
            Ok(text) => unquote_plus(text),
            Err(_) => binary(),
        }
    } else if mime.starts_with(b"multipart/") {
        multipart_query(mime, data).unwrap_or_else(binary)
    } else if mime.starts_with(b"application/json") {
        json_query(data).unwrap_or_default()
    } else if mime.starts_with(b"text/plain") {
        json_query(data).unwrap_or_else(binary)
    } else {
        binary()
    };
    query.chars().take(MAX_QUERY).collect()
}

/// Python's `unquote_plus`: `+` is a space, `%XX` a byte, and the bytes
/// are read as UTF-8 (invalid ones replaced).
fn unquote_plus(s: &str) -> String {
    let plus = s.replace('+', " ");
    percent_decode(plus.as_bytes())
        .decode_utf8_lossy()
        .into_owned()
}

/// Python's `quote_plus` of bytes (a text value is its UTF-8 bytes).
fn quote_plus(b: &[u8]) -> String {
    percent_encode(b, QUOTE_PLUS).to_string().replace(' ', "+")
}

/// Python's `urlencode` of name-value pairs.
fn urlencode(pairs: &[(Vec<u8>, Vec<u8>)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", quote_plus(k), quote_plus(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The fields of a multipart body, form-encoded; `None` without a
/// boundary.
fn multipart_query(mime: &[u8], data: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(mime);
    let boundary = text.split("boundary=").nth(1)?.trim_matches('"');
    if boundary.is_empty() {
        return None;
    }
    let delim = format!("--{boundary}").into_bytes();
    let finder = memchr::memmem::Finder::new(&delim);
    let mut cuts: Vec<usize> = finder.find_iter(data).collect();
    cuts.push(data.len());
    let mut pairs = Vec::new();
    for w in cuts.windows(2) {
        let part = &data[w[0] + delim.len()..w[1]];
        if part.starts_with(b"--") {
            break;
        }
        let part = part.strip_prefix(b"\r\n").unwrap_or(part);
        let Some(end) = memchr::memmem::find(part, b"\r\n\r\n") else {
            continue;
        };
        let (head, body) = (&part[..end], &part[end + 4..]);
        let body = body.strip_suffix(b"\r\n").unwrap_or(body);
        let disposition = head
            .split(|&b| b == b'\n')
            .map(<[u8]>::trim_ascii)
            .find(|l| l.len() > 20 && l[..20].eq_ignore_ascii_case(b"content-disposition:"));
        let Some(disposition) = disposition else {
            continue;
        };
        let param = |name: &str| -> Option<Vec<u8>> {
            let d = String::from_utf8_lossy(disposition);
            d.split(';').skip(1).find_map(|p| {
                let (k, v) = p.trim().split_once('=')?;
                (k.trim().eq_ignore_ascii_case(name))
                    .then(|| v.trim().trim_matches('"').as_bytes().to_vec())
            })
        };
        let Some(name) = param("name") else {
            continue;
        };
        let value = if param("filename").is_some() {
            body.to_vec()
        } else {
            String::from_utf8_lossy(body).into_owned().into_bytes()
        };
        pairs.push((name, value));
    }
    Some(urlencode(&pairs))
}

/// The leaves of a JSON body as name-value pairs, a repeated name made
/// unique as cdxj-indexer does (`a`, `a.2_`, `a.3_`).
#[derive(Default)]
struct Leaves {
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
    seen: std::collections::HashMap<String, usize>,
}

impl Leaves {
    fn add(&mut self, name: &str, value: String) {
        let key = match self.seen.get_mut(name) {
            None => {
                self.seen.insert(name.to_string(), 1);
                name.to_string()
            }
            Some(n) => {
                *n += 1;
                format!("{name}.{n}_")
            }
        };
        self.pairs.push((key.into_bytes(), value.into_bytes()));
    }

    /// Objects give their members under their own names; arrays give
    /// their items under the array's name.
    fn walk(&mut self, v: &serde_json::Value, name: &str) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    self.walk(v, k);
                }
            }
            serde_json::Value::Array(a) => {
                for v in a {
                    self.walk(v, name);
                }
            }
            leaf if !name.is_empty() => self.add(name, python_str(leaf)),
            _ => {}
        }
    }
}

/// cdxj-indexer's `json_parse`: the leaves of a JSON body (or of each
/// line of newline-delimited JSON), form-encoded under their keys.
fn json_query(data: &[u8]) -> Option<String> {
    let mut leaves = Leaves::default();
    match serde_json::from_slice::<serde_json::Value>(data) {
        Ok(v) => leaves.walk(&v, ""),
        Err(_) if data.contains(&b'\n') => {
            for line in data.split(|&b| b == b'\n') {
                let v: serde_json::Value = serde_json::from_slice(line).ok()?;
                leaves.walk(&v, "");
            }
        }
        Err(_) => return None,
    }
    Some(urlencode(&leaves.pairs))
}

/// Python's `str()` of a JSON leaf as `json.loads` gives it.
fn python_str(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "None".into(),
        serde_json::Value::Bool(true) => "True".into(),
        serde_json::Value::Bool(false) => "False".into(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => {
            let text = n.to_string();
            if text.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
                // An integer: Python keeps every digit.
                text
            } else {
                python_float(text.parse::<f64>().unwrap_or(f64::NAN))
            }
        }
        other => other.to_string(),
    }
}

/// Python's `repr` of a float: the shortest digits that read back, fixed
/// notation for exponents from -4 to 15, else `1e+16` style.
fn python_float(f: f64) -> String {
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f.is_nan() {
        return "nan".into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&exp) {
        let fixed = format!("{f}");
        if fixed.contains('.') {
            fixed
        } else {
            format!("{fixed}.0")
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_bodies() {
        let req = b"POST /post HTTP/1.1\r\ncontent-type: application/x-www-form-urlencoded\r\n\
                    Content-Length: 16\r\n\r\nfoo=bar&test=abc";
        let p = post_append(b"http://httpbin.org/post", req).unwrap();
        assert_eq!(
            p.key_url,
            b"http://httpbin.org/post?__wb_method=POST&foo=bar&test=abc"
        );
        assert_eq!(p.body.as_deref(), Some("foo=bar&test=abc"));
        assert_eq!(unquote_plus("a=1+x%20y&b=%5E"), "a=1 x y&b=^");
        let get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(post_append(b"http://x/", get), None);
    }

    #[test]
    fn json_leaves_and_python_spellings() {
        let q = json_query(br#"{"a": 1, "b": [true, null, 1.5, 1e16], "c": {"a": "x y"}}"#);
        assert_eq!(
            q.as_deref(),
            Some("a=1&b=True&b.2_=None&b.3_=1.5&b.4_=1e%2B16&a.2_=x+y")
        );
        assert_eq!(
            json_query(b"{\"a\": 1}\n{\"a\": 2}").as_deref(),
            Some("a=1&a.2_=2")
        );
        assert_eq!(json_query(b"not json"), None);
        assert_eq!(python_float(100000.0), "100000.0");
        assert_eq!(python_float(1.5e-5), "1.5e-05");
        assert_eq!(python_float(0.0001), "0.0001");
    }

    #[test]
    fn multipart_fields() {
        let body = b"--XX\r\nContent-Disposition: form-data; name=\"test\"\r\n\r\nsome data\r\n\
                     --XX\r\nContent-Disposition: form-data; name=\"another\"\r\n\r\nmore^data\r\n--XX--\r\n";
        let q = multipart_query(b"multipart/form-data; boundary=XX", body);
        assert_eq!(q.as_deref(), Some("test=some+data&another=more%5Edata"));
    }

    #[test]
    fn chunked_and_binary_bodies() {
        assert_eq!(
            dechunk(b"4\r\nsome\r\n5\r\nchunk\r\n0\r\n\r\n").as_deref(),
            Some(&b"somechunk"[..])
        );
        assert_eq!(dechunk(b"zz\r\n"), None);
        assert_eq!(canonical_body(None, b"\x00\x01\x02"), "__wb_post_data=AAEC");
        assert_eq!(body_length(Some(b"x")), None);
        assert_eq!(body_length(None), Some(8192));
        // A gzip bomb is read no further than the Content-Length.
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut e, &vec![b'a'; 50 << 20]).unwrap();
        let bomb = e.finish().unwrap();
        let gzip = |n: &[u8]| (n == b"content-encoding").then_some(&b"gzip"[..]);
        assert_eq!(decoded_payload(&bomb, &gzip, 10), b"aaaaaaaaaa");
        assert_eq!(quote_plus(b"\xff\xfe\x00 ~*"), "%FF%FE%00+~%2A");
    }
}
