//! Host canonicalisation: percent-decoding, IDNA, dots, IPv4 forms,
//! `www` stripping and the reversed SURT form.

use super::escape::{escape_once, unescape_repeatedly};
use super::idna2003;
use super::Error;

/// Python refuses to convert integer strings longer than this
/// (`sys.get_int_max_str_digits()`, CPython >= 3.11), leading zeros counted.
pub(super) const MAX_INT_DIGITS: usize = 4300;

/// Reusable buffers for one host.
#[derive(Default)]
pub(super) struct Scratch {
    decoded: Vec<u8>,
    text: String,
    idna_out: Vec<u8>,
    idna: idna2003::Scratch,
    dots: Vec<u8>,
}

/// Canonicalises a raw host (as taken from the URL) into `out`, as the
/// reference's Google then IA canonicalisers do, up to but excluding the
/// `www` massage. Leaves `out` empty when the host vanishes (for example
/// `...`), which the caller treats as "no host".
pub(super) fn canonicalize(raw: &[u8], out: &mut Vec<u8>, s: &mut Scratch) -> Result<(), Error> {
    out.clear();
    // Decoding first means `%2E` makes a real label separator and `%41`
    // an `A` that is then lowercased.
    s.decoded.clear();
    unescape_repeatedly(raw, &mut s.decoded);

    // Non-ASCII hosts: UTF-8 with invalid bytes dropped, then IDNA 2003;
    // when that fails the decoded raw bytes are kept (and escaped below).
    let mut host: &[u8] = &s.decoded;
    if !host.is_ascii() {
        // Dropping invalid bytes (not replacing them) is what makes
        // `%FFexample.com` come out as `example.com`.
        s.text.clear();
        for chunk in host.utf8_chunks() {
            s.text.push_str(chunk.valid());
        }
        s.idna_out.clear();
        if idna2003::encode(&s.text, &mut s.idna_out, &mut s.idna).is_ok() {
            host = &s.idna_out;
        }
    }

    // `..` -> `.` in one left-to-right pass, then trim dots at both ends.
    s.dots.clear();
    let mut rest = host;
    while let Some((&b, tail)) = rest.split_first() {
        s.dots.push(b);
        rest = if b == b'.' && tail.first() == Some(&b'.') {
            tail.get(1..).unwrap_or_default()
        } else {
            tail
        };
    }
    let trimmed = trim_dots(&s.dots);
    // Address recognition runs on the trimmed host before escaping and
    // before `www` stripping, hence `www.010` stays text while
    // `www.1.2.3.4` is stripped to `1.2.3.4` (as text, same bytes).

    if let Some(ip) = ipv4(trimmed)? {
        // `inet_ntoa` formatting: plain decimal octets.
        let [a, b, c, d] = ip.to_be_bytes();
        use std::io::Write;
        // Writing into a Vec cannot fail.
        let _ = write!(out, "{a}.{b}.{c}.{d}");
    } else {
        // Lowercasing after escaping also lowercases the hex of the
        // escapes (`%C3` -> `%c3`), as the IA canonicaliser's second
        // `lower()` does.
        escape_once(trimmed, out);
        out.make_ascii_lowercase();
    }
    Ok(())
}

/// `bytes.strip(b".")`.
fn trim_dots(mut s: &[u8]) -> &[u8] {
    while let [b'.', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b'.'] = s {
        s = rest;
    }
    s
}

/// The reference's IPv4 recognition.
///
/// * All digits: a decimal integer taken modulo 2^32 (so `010` is
///   `0.0.0.10`); more than 4300 digits makes Python raise.
/// * Otherwise, text shaped like `[1-9]\d*(\.\d+){0,3}` or
///   `0[0-7]*(\.[0-7]+){0,3}` goes to the C resolver, whose numeric parser
///   is `inet_aton`: 1 to 4 parts, a leading `0` means octal, the last part
///   fills the remaining bytes. The resolver is never called here; text it
///   would reject is "not an IP", as on the machine that made the vectors.
/// * Hexadecimal and five or more parts are never addresses.
fn ipv4(host: &[u8]) -> Result<Option<u32>, Error> {
    if host.is_empty() {
        return Ok(None);
    }
    if host.iter().all(u8::is_ascii_digit) {
        if host.len() > MAX_INT_DIGITS {
            return Err(Error::TooManyDigits {
                what: "host",
                digits: host.len(),
            });
        }
        // Arithmetic modulo 2^32 gives the low 32 bits of the exact value
        // without big integers (the reference masks with 0xffffffff).
        let value = host.iter().fold(0u32, |v, &d| {
            v.wrapping_mul(10).wrapping_add(u32::from(d - b'0'))
        });
        return Ok(Some(value));
    }
    // Python's `$` also matches before one final newline; the resolver then
    // sees a name with a newline and fails, so such hosts are not IPs.
    if host.last() == Some(&b'\n') {
        return Ok(None);
    }
    // Only text of these shapes ever reaches the resolver in the reference;
    // everything else (hex, five parts, letters) is a name.
    if !looks_numeric(host) {
        return Ok(None);
    }
    Ok(inet_aton(host))
}

/// Whether the reference's DECIMAL_IP or OCTAL_IP pattern matches.
fn looks_numeric(host: &[u8]) -> bool {
    let mut parts = host.split(|&b| b == b'.');
    let Some(first) = parts.next() else {
        return false;
    };
    let count = host.iter().filter(|&&b| b == b'.').count() + 1;
    if count > 4 {
        return false;
    }
    let is_oct = |p: &[u8]| !p.is_empty() && p.iter().all(|b| (b'0'..=b'7').contains(b));
    let is_dec = |p: &[u8]| !p.is_empty() && p.iter().all(u8::is_ascii_digit);
    match first {
        [b'1'..=b'9', ..] if is_dec(first) => parts.all(is_dec),
        [b'0', ..] if is_oct(first) => parts.all(is_oct),
        _ => false,
    }
}

/// glibc's `inet_aton` on text already known to be digits and dots.
///
/// Each part is octal with a leading `0`, else decimal (hex cannot occur
/// here); a part with an 8 or 9 in octal, or beyond 32 bits, rejects the
/// whole text. All parts but the last must fit a byte; the last fills the
/// remaining 4, 3, 2 or 1 bytes (`127.1` is `127.0.0.1`).
fn inet_aton(host: &[u8]) -> Option<u32> {
    let mut values = [0u64; 4];
    let mut n = 0;
    for part in host.split(|&b| b == b'.') {
        let (digits, radix) = match part {
            [b'0', rest @ ..] if !rest.is_empty() => (rest, 8),
            _ => (part, 10),
        };
        let mut v: u64 = 0;
        for &d in digits {
            let d = u64::from(d - b'0');
            if d >= radix {
                return None;
            }
            v = v.checked_mul(radix)?.checked_add(d)?;
            if v > u64::from(u32::MAX) {
                return None;
            }
        }
        *values.get_mut(n)? = v;
        n += 1;
    }
    let last = *values.get(n.checked_sub(1)?)?;
    let (head, limit) = match n {
        1 => (0u64, 0xffff_ffffu64),
        2 => (values[0] << 24, 0xff_ffff),
        3 => (values[0] << 24 | values[1] << 16, 0xffff),
        4 => (values[0] << 24 | values[1] << 16 | values[2] << 8, 0xff),
        _ => return None,
    };
    if values[..n - 1].iter().any(|&v| v > 0xff) || last > limit {
        return None;
    }
    u32::try_from(head | last).ok()
}

/// Strips one leading `www\d*.` label (the reference's host massage).
///
/// Only one: `www.www2.x.com` keeps `www2`, unlike the Java canonicaliser
/// which repeats. A bare `www` (no dot) and `www-2.` are not stripped.
pub(super) fn massage(host: &[u8]) -> &[u8] {
    let Some(rest) = host.strip_prefix(b"www") else {
        return host;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    match rest.get(digits..) {
        Some([b'.', tail @ ..]) => tail,
        _ => host,
    }
}

/// Appends the SURT form of a canonical host: labels reversed and joined
/// with `,`; a dotted quad of 1-3 digit groups stays as it is when
/// `reverse_ipaddr` is off.
pub(super) fn write_surt(host: &[u8], reverse_ipaddr: bool, out: &mut Vec<u8>) {
    if !reverse_ipaddr && is_quad_shape(host) {
        out.extend_from_slice(host);
        return;
    }
    let mut first = true;
    for label in host.rsplit(|&b| b == b'.') {
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(label);
    }
}

/// `(\d{1,3}\.){3}\d{1,3}` over the whole host; values are not checked.
fn is_quad_shape(host: &[u8]) -> bool {
    let mut n = 0;
    for part in host.split(|&b| b == b'.') {
        n += 1;
        if part.is_empty() || part.len() > 3 || !part.iter().all(u8::is_ascii_digit) {
            return false;
        }
    }
    n == 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<String> {
        ipv4(s.as_bytes())
            .unwrap()
            .map(|v| std::net::Ipv4Addr::from(v).to_string())
    }

    #[test]
    fn ipv4_forms_follow_inet_aton() {
        assert_eq!(ip("3279880203").as_deref(), Some("195.127.0.11"));
        assert_eq!(ip("4294967296").as_deref(), Some("0.0.0.0"));
        assert_eq!(ip("010").as_deref(), Some("0.0.0.10"));
        assert_eq!(ip("10.0.258").as_deref(), Some("10.0.1.2"));
        assert_eq!(ip("127.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(ip("1.2.3.010").as_deref(), Some("1.2.3.8"));
        assert_eq!(ip("017.0.0.1").as_deref(), Some("15.0.0.1"));
        assert_eq!(ip("1.16777215").as_deref(), Some("1.255.255.255"));
        assert_eq!(ip("1.2.3.256"), None);
        assert_eq!(ip("1.2.3.08"), None);
        assert_eq!(ip("1.2.65536"), None);
        assert_eq!(ip("0x7f.0.0.1"), None);
        assert_eq!(ip("1.2.3.4.5"), None);
        assert_eq!(ip("1.2.3.4\n"), None);
    }

    #[test]
    fn massage_strips_one_www_label() {
        assert_eq!(massage(b"www.www.example.com"), b"www.example.com");
        assert_eq!(massage(b"www34.x"), b"x");
        assert_eq!(massage(b"www"), b"www");
        assert_eq!(massage(b"www-2.x"), b"www-2.x");
        assert_eq!(massage(b"wwwexample.com"), b"wwwexample.com");
    }
}
