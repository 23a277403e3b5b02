//! Percent-decoding and percent-encoding as the reference does them.
//!
//! The reference decodes a component "repeatedly" (one pass of
//! `unquote_to_bytes` after another until nothing changes) and then encodes
//! it "once" with a very small set of bytes to escape. Both directions work
//! on raw bytes: no UTF-8 interpretation, no `+` to space.

/// Upper-case hex digits, as Python's `quote_from_bytes` writes them.
const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// The value of an ASCII hex digit, either case.
fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// First position of `b`: a plain loop for the short slices URL parts
/// usually are (where `memchr`'s set-up costs more than it saves).
pub(super) fn find_byte(b: u8, s: &[u8]) -> Option<usize> {
    if s.len() < 32 {
        s.iter().position(|&x| x == b)
    } else {
        memchr::memchr(b, s)
    }
}

/// Last position of `b`, as [`find_byte`].
pub(super) fn rfind_byte(b: u8, s: &[u8]) -> Option<usize> {
    if s.len() < 32 {
        s.iter().rposition(|&x| x == b)
    } else {
        memchr::memrchr(b, s)
    }
}

/// Appends `src` to `out`, percent-decoded until no `%HH` is left.
///
/// Repeated decoding passes reach a unique fixed point: a `%HH` triple can
/// never overlap another (`%` is not a hex digit), so the order in which
/// triples are decoded does not matter. That lets one left-to-right pass
/// with a stack do the work of the reference's repeated passes in linear
/// time: the output never holds a `%HH`, so after pushing a byte only a
/// triple ending at that byte can appear, and decoding it can only create
/// another triple ending at the same place.
pub(super) fn unescape_repeatedly(src: &[u8], out: &mut Vec<u8>) {
    if find_byte(b'%', src).is_none() {
        out.extend_from_slice(src);
        return;
    }
    let start = out.len();
    for &b in src {
        out.push(b);
        while let [.., b'%', hi, lo] = out[start..] {
            match (hex_value(hi), hex_value(lo)) {
                (Some(hi), Some(lo)) => {
                    out.truncate(out.len() - 3);
                    out.push(hi << 4 | lo);
                }
                _ => break,
            }
        }
    }
}

/// Whether the reference's `escapeOnce` percent-encodes this byte: controls,
/// space, DEL, every non-ASCII byte, `#` and `%`. All other printable ASCII
/// (including `?`, `&`, `=`, `/`, `\`) is left alone.
pub(super) fn needs_escape(b: u8) -> bool {
    ESCAPE[usize::from(b)]
}

/// [`needs_escape`] as a table: this test runs on every byte of every key.
static ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = b <= 0x20 || b >= 0x7f || b == b'#' as usize || b == b'%' as usize;
        b += 1;
    }
    table
};

/// Appends `src` to `out`, percent-encoding the bytes of [`needs_escape`]
/// with upper-case hex.
pub(super) fn escape_once(src: &[u8], out: &mut Vec<u8>) {
    out.reserve(src.len());
    let mut rest = src;
    // Copy runs of safe bytes whole; URLs are mostly safe bytes.
    while let Some(i) = rest.iter().position(|&b| needs_escape(b)) {
        let (plain, tail) = rest.split_at(i);
        out.extend_from_slice(plain);
        let Some((&b, tail)) = tail.split_first() else {
            break;
        };
        out.extend_from_slice(&[
            b'%',
            HEX_UPPER[usize::from(b >> 4)],
            HEX_UPPER[usize::from(b & 0x0f)],
        ]);
        rest = tail;
    }
    out.extend_from_slice(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unescape(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        unescape_repeatedly(s, &mut out);
        out
    }

    /// The reference's definition: whole passes until stable.
    fn unescape_by_passes(s: &[u8]) -> Vec<u8> {
        let mut cur = s.to_vec();
        loop {
            let mut next = Vec::new();
            let mut i = 0;
            while i < cur.len() {
                if cur[i] == b'%' && i + 2 < cur.len() {
                    if let (Some(h), Some(l)) = (hex_value(cur[i + 1]), hex_value(cur[i + 2])) {
                        next.push(h << 4 | l);
                        i += 3;
                        continue;
                    }
                }
                next.push(cur[i]);
                i += 1;
            }
            if next == cur {
                return cur;
            }
            cur = next;
        }
    }

    #[test]
    fn nested_escapes_collapse() {
        assert_eq!(unescape(b"%2525252525"), b"%");
        assert_eq!(unescape(b"%25%32%35"), b"%");
        assert_eq!(unescape(b"%%32%35"), b"%");
        assert_eq!(unescape(b"%zz%2%"), b"%zz%2%");
        assert_eq!(unescape(b"a%2Fb%2fc"), b"a/b/c");
    }

    #[test]
    fn stack_decoding_equals_repeated_passes() {
        let alphabet = b"%25aF3z";
        // Every string of length <= 6 over a small alphabet.
        let mut stack = vec![Vec::new()];
        while let Some(s) = stack.pop() {
            assert_eq!(unescape(&s), unescape_by_passes(&s), "{s:?}");
            if s.len() < 6 {
                for &c in alphabet {
                    let mut t = s.clone();
                    t.push(c);
                    stack.push(t);
                }
            }
        }
    }

    #[test]
    fn escape_set_is_minimal() {
        let mut out = Vec::new();
        escape_once(b"a b#%?&=/\\~\x7f\xc3\xa9\x00", &mut out);
        assert_eq!(out, b"a%20b%23%25?&=/\\~%7F%C3%A9%00");
    }
}
