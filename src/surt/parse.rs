//! Splitting a raw URL into the parts the reference works with.
//!
//! The reference is its own parser (an RFC 2396 regular expression plus
//! urllib's host/port properties), not a WHATWG or RFC 3986 one, so it is
//! re-implemented here step by step rather than delegated to the `url`
//! crate, whose answers differ on almost every degenerate input.

use super::escape::{find_byte, rfind_byte};
use super::host::MAX_INT_DIGITS;
use super::Error;

/// The parts of a URL, borrowed from the cleaned input.
#[derive(Debug, Default)]
pub(super) struct Parts<'a> {
    /// Scheme exactly as written (case kept).
    pub scheme: &'a [u8],
    /// Raw host; `None` when absent or empty.
    pub host: Option<&'a [u8]>,
    /// Port, `None` when absent or 0.
    pub port: Option<u16>,
    /// Raw path; `None` when empty.
    pub path: Option<&'a [u8]>,
    /// Raw query without `?`; `None` when empty.
    pub query: Option<&'a [u8]>,
}

/// Bytes `bytes.strip()` removes: ASCII whitespace including VT and FF.
/// NUL, NBSP and other Unicode spaces are not stripped; they survive to be
/// percent-encoded, which is what the reference does.
fn is_py_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Whether `s` starts with `[a-zA-Z][a-zA-Z0-9+.-]*:`.
///
/// Any such prefix counts as a scheme, which is why `example.com:8080/x`
/// is taken as scheme `example.com` and keyed almost verbatim, while
/// `bücher.ch:8080` (a non-ASCII byte before the colon) gets `http://`.
fn has_scheme(s: &[u8]) -> bool {
    match s.split_first() {
        Some((first, rest)) if first.is_ascii_alphabetic() => {
            let n = rest
                .iter()
                .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
                .count();
            rest.get(n) == Some(&b':')
        }
        _ => false,
    }
}

/// Fills `clean` with the input as the reference sees it before splitting:
/// trimmed, TAB/CR/LF deleted everywhere, `http://` prepended when there
/// is no scheme. Returns the offset where the URL starts after a run of
/// `http://`/`https://` prefixes is collapsed to its last one.
pub(super) fn clean(url: &[u8], clean: &mut Vec<u8>) -> Result<usize, Error> {
    clean.clear();
    let start = url
        .iter()
        .position(|&b| !is_py_space(b))
        .unwrap_or(url.len());
    let end = url
        .iter()
        .rposition(|&b| !is_py_space(b))
        .map_or(start, |i| i + 1);
    let trimmed = url.get(start..end).unwrap_or_default();
    // The reference fails later (no scheme at all); say why here.
    if trimmed.is_empty() {
        return Err(Error::Blank);
    }
    // TAB/CR/LF vanish even inside the host; other controls stay and are
    // percent-encoded later.
    let mut rest = trimmed;
    while let Some(i) = memchr::memchr3(b'\t', b'\r', b'\n', rest) {
        clean.extend_from_slice(rest.get(..i).unwrap_or_default());
        rest = rest.get(i + 1..).unwrap_or_default();
    }
    clean.extend_from_slice(rest);
    // The scheme test runs after the deletion above, as in the reference,
    // so `ht\ttp://x` has the scheme `http`.
    if !has_scheme(clean) {
        clean.splice(0..0, b"http://".iter().copied());
    }
    // `http://https://x` (seen in crawl logs) means `https://x`. Only the
    // lower-case spellings collapse: `http://HTTPS://x` keeps host `https`.
    let mut off = 0;
    let mut last = None;
    loop {
        let rest = clean.get(off..).unwrap_or_default();
        if rest.starts_with(b"http://") {
            last = Some(off);
            off += 7;
        } else if rest.starts_with(b"https://") {
            last = Some(off);
            off += 8;
        } else {
            break;
        }
    }
    Ok(last.unwrap_or(0))
}

/// Splits a cleaned URL (see [`clean`]) into its parts.
pub(super) fn split(url: &[u8]) -> Result<Parts<'_>, Error> {
    // A scheme is always present after cleaning, and it ends at the first
    // colon because scheme characters exclude `:`.
    let colon = find_byte(b':', url).unwrap_or(0);
    let scheme = url.get(..colon).unwrap_or_default();
    let mut rest = url.get(colon + 1..).unwrap_or_default();

    // RFC 2396 appendix B: `//` starts an authority that runs to the first
    // `/`, `?` or `#`; the path runs to `?` or `#`; the query to `#`. The
    // fragment is never used (the canonicaliser drops it).
    let mut netloc: &[u8] = b"";
    if let Some(after) = rest.strip_prefix(b"//") {
        let n = after
            .iter()
            .position(|&b| matches!(b, b'/' | b'?' | b'#'))
            .unwrap_or(after.len());
        netloc = after.get(..n).unwrap_or_default();
        rest = after.get(n..).unwrap_or_default();
    }
    let n = rest
        .iter()
        .position(|&b| matches!(b, b'?' | b'#'))
        .unwrap_or(rest.len());
    let path = rest.get(..n).unwrap_or_default();
    rest = rest.get(n..).unwrap_or_default();
    let mut query: &[u8] = b"";
    if let Some(after) = rest.strip_prefix(b"?") {
        let n = find_byte(b'#', after).unwrap_or(after.len());
        query = after.get(..n).unwrap_or_default();
    }

    // urllib's `port` then `hostname` on the netloc with trailing `:`s cut
    // (`host:` means no port). Userinfo ends at the last `@` and is
    // dropped: the reference never outputs it. A `[` anywhere opens an
    // IPv6 literal whose brackets are dropped (`a[b]:81` is host `b`);
    // otherwise the port starts at the first `:`, so an unbracketed `::1`
    // has the port `:1`... which fails as a number and raises.
    while let [head @ .., b':'] = netloc {
        netloc = head;
    }
    let hostinfo = match rfind_byte(b'@', netloc) {
        Some(i) => netloc.get(i + 1..).unwrap_or_default(),
        None => netloc,
    };
    let (hostname, port) = match find_byte(b'[', hostinfo) {
        Some(i) => {
            let bracketed = hostinfo.get(i + 1..).unwrap_or_default();
            match find_byte(b']', bracketed) {
                Some(j) => {
                    let after = bracketed.get(j + 1..).unwrap_or_default();
                    let port = match find_byte(b':', after) {
                        Some(k) => after.get(k + 1..).unwrap_or_default(),
                        None => b"",
                    };
                    (bracketed.get(..j).unwrap_or_default(), port)
                }
                None => (bracketed, &b""[..]),
            }
        }
        None => match find_byte(b':', hostinfo) {
            Some(i) => (
                hostinfo.get(..i).unwrap_or_default(),
                hostinfo.get(i + 1..).unwrap_or_default(),
            ),
            None => (hostinfo, &b""[..]),
        },
    };
    // The port is checked first: in the reference a bad port raises even
    // when the host is empty or later replaced.
    let port = parse_port(port)?;

    let mut host = (!hostname.is_empty()).then_some(hostname);
    let mut path = (!path.is_empty()).then_some(path);
    // "http:////host/x", "http:host/x": the first path segment becomes the
    // host, taken whole (a `:port` in it stays part of the host).
    if scheme.starts_with(b"http") && host.is_none() {
        if let Some(p) = path {
            let p = p
                .get(p.iter().take_while(|&&b| b == b'/').count()..)
                .unwrap_or_default();
            match find_byte(b'/', p) {
                Some(k) => {
                    host = Some(p.get(..k).unwrap_or_default());
                    path = p.get(k..);
                }
                None => {
                    host = Some(p);
                    path = Some(b"/");
                }
            }
            host = host.filter(|h| !h.is_empty());
        }
    }
    Ok(Parts {
        scheme,
        host,
        port,
        path,
        query: (!query.is_empty()).then_some(query),
    })
}

/// urllib's port rule: ASCII digits only, 0 to 65535; 0 means no port
/// (the reference writes `port or None`). Leading zeros are fine (`:00080`
/// is 80) but count towards Python's 4300-digit conversion limit.
fn parse_port(port: &[u8]) -> Result<Option<u16>, Error> {
    if port.is_empty() {
        return Ok(None);
    }
    let bad = || Error::Port {
        port: String::from_utf8_lossy(port).into_owned(),
    };
    if !port.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    if port.len() > MAX_INT_DIGITS {
        return Err(Error::TooManyDigits {
            what: "port",
            digits: port.len(),
        });
    }
    let digits = port
        .get(port.iter().take_while(|&&b| b == b'0').count()..)
        .unwrap_or_default();
    if digits.len() > 5 {
        return Err(bad());
    }
    let value = digits
        .iter()
        .fold(0u32, |v, &d| v * 10 + u32::from(d - b'0'));
    match u16::try_from(value) {
        Ok(0) => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(_) => Err(bad()),
    }
}
