//! Query canonicalisation: session-id stripping and the (key, value) sort.

/// The reference's query session-id patterns, applied in this order, each
/// once. Every pattern is anchored as `^(.*)ID(&(.*))?$`, greedy, so the
/// rightmost occurrence followed by `&` or the end is the one removed.
#[derive(Clone, Copy)]
enum SessionId {
    /// `<prefix>=` then exactly 32 ASCII letters or digits.
    Alnum32(&'static [u8]),
    /// `ASPSESSIONID` + 8 letters + `=` + 24 letters.
    AspSession,
    /// `cfid=<v>&cftoken=<v>`, values without `&`.
    ColdFusion,
}

const SESSION_IDS: [SessionId; 5] = [
    SessionId::Alnum32(b"jsessionid="),
    SessionId::Alnum32(b"phpsessid="),
    SessionId::Alnum32(b"sid="),
    SessionId::AspSession,
    SessionId::ColdFusion,
];

/// Case-insensitive `starts_with` for ASCII patterns.
fn starts_with_ci(s: &[u8], prefix: &[u8]) -> bool {
    s.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// Length of a run of bytes satisfying `pred` at the start of `s`.
fn run(s: &[u8], pred: impl Fn(&u8) -> bool) -> usize {
    s.iter().take_while(|b| pred(b)).count()
}

impl SessionId {
    /// Offset of the `=` that every match of this pattern has at a fixed
    /// place, used to find candidates quickly.
    fn eq_offset(self) -> usize {
        match self {
            SessionId::Alnum32(prefix) => prefix.len() - 1,
            SessionId::AspSession => 20,
            SessionId::ColdFusion => 4,
        }
    }

    /// Length of the id at the start of `s` when it is followed by `&` or
    /// the end of the query.
    fn match_len(self, s: &[u8]) -> Option<usize> {
        let len = match self {
            SessionId::Alnum32(prefix) => {
                if !starts_with_ci(s, prefix) {
                    return None;
                }
                let value = s.get(prefix.len()..)?;
                if run(value, u8::is_ascii_alphanumeric) < 32 {
                    return None;
                }
                prefix.len() + 32
            }
            SessionId::AspSession => {
                if !starts_with_ci(s, b"aspsessionid") {
                    return None;
                }
                let rest = s.get(12..)?;
                if run(rest, u8::is_ascii_alphabetic) < 8 || rest.get(8) != Some(&b'=') {
                    return None;
                }
                if run(rest.get(9..)?, u8::is_ascii_alphabetic) < 24 {
                    return None;
                }
                12 + 9 + 24
            }
            SessionId::ColdFusion => {
                // Both values are runs without `&`, so each ends exactly
                // at the next `&` (or the end): no backtracking choices.
                if !starts_with_ci(s, b"cfid=") {
                    return None;
                }
                let id = run(s.get(5..)?, |&b| b != b'&');
                let after = s.get(5 + id..)?;
                if id == 0 || !starts_with_ci(after, b"&cftoken=") {
                    return None;
                }
                let token = run(after.get(9..)?, |&b| b != b'&');
                if token == 0 {
                    return None;
                }
                5 + id + 9 + token
            }
        };
        // `(?:&(.*))?$`: the id must end the query or be followed by `&`;
        // a longer run of id characters is therefore no match at all.
        match s.get(len) {
            None | Some(b'&') => Some(len),
            Some(_) => None,
        }
    }
}

/// Removes session ids from a query the way the reference does: the id is
/// cut out, the `&` after it is eaten, an `&` before it stays.
pub(super) fn strip_session_ids(query: &mut Vec<u8>, eqs: &mut Vec<usize>) {
    // The shortest id (`cfid=x&cftoken=y`) has 16 bytes.
    if query.len() < 16 {
        return;
    }
    // Every pattern has an `=` at a fixed offset from its start: collect
    // the `=` positions once and try them right to left, as the greedy
    // `^(.*)` does.
    eqs.clear();
    eqs.extend(memchr::memchr_iter(b'=', query));
    for pattern in SESSION_IDS {
        let offset = pattern.eq_offset();
        let found = eqs.iter().rev().find_map(|&eq| {
            let start = eq.checked_sub(offset)?;
            Some((start, pattern.match_len(query.get(start..)?)?))
        });
        if let Some((start, len)) = found {
            let end = start + len;
            // `(?:&(.*))?`: with a non-empty tail the `&` goes; an empty
            // tail after `&` leaves nothing either.
            let cut_end = if end < query.len() { end + 1 } else { end };
            query.drain(start..cut_end);
            eqs.clear();
            eqs.extend(memchr::memchr_iter(b'=', query));
        }
    }
}

/// Sorts `&`-separated pieces by (key, value), key and value split at the
/// first `=`; a piece without `=` sorts before the same key with one.
/// Empty pieces are kept (and sort first). Queries of 0 or 1 bytes are
/// left alone, as in the reference.
pub(super) fn sort(query: &[u8], pieces: &mut Vec<(usize, usize, usize)>, out: &mut Vec<u8>) {
    if query.len() <= 1 {
        out.extend_from_slice(query);
        return;
    }
    // Pieces are ranges into `query` (reused vector): no allocation per
    // parameter. Python compares `(key,)` < `(key, value)`, i.e. a piece
    // without `=` before the same key with any value, even an empty one.
    pieces.clear();
    let mut pos = 0;
    for piece in query.split(|&b| b == b'&') {
        // (start, end of key, end); a value exists when end > key end.
        let key_end = super::escape::find_byte(b'=', piece).map_or(pos + piece.len(), |i| pos + i);
        pieces.push((pos, key_end, pos + piece.len()));
        pos += piece.len() + 1;
    }
    let split = |&(a, k, b): &(usize, usize, usize)| {
        (
            query.get(a..k).unwrap_or_default(),
            query.get(k + 1..b).filter(|_| k < b),
        )
    };
    // Equal (key, value) pairs are equal bytes, so stability is moot.
    pieces.sort_unstable_by(|x, y| split(x).cmp(&split(y)));
    for (n, &(a, _, b)) in pieces.iter().enumerate() {
        if n > 0 {
            out.push(b'&');
        }
        out.extend_from_slice(query.get(a..b).unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(q: &str) -> String {
        let mut v = q.as_bytes().to_vec();
        strip_session_ids(&mut v, &mut Vec::new());
        String::from_utf8(v).unwrap()
    }

    fn sorted(q: &str) -> String {
        let mut out = Vec::new();
        sort(q.as_bytes(), &mut Vec::new(), &mut out);
        String::from_utf8(out).unwrap()
    }

    const ID32: &str = "0123456789abcdef0123456789ABCDEF";

    #[test]
    fn session_ids_follow_the_greedy_patterns() {
        assert_eq!(strip(&format!("xjsessionid={ID32}&b=1")), "xb=1");
        assert_eq!(strip(&format!("one=two&jsessionid={ID32}")), "one=two&");
        assert_eq!(
            strip(&format!("jsessionid={ID32}x")),
            format!("jsessionid={ID32}x")
        );
        assert_eq!(strip(&format!("jsessionid={ID32}&")), "");
        assert_eq!(strip("a=1&CFID=12&cftoken=ab&z"), "a=1&z");
        assert_eq!(
            strip("ASPSESSIONIDabcdefgh=abcdefghijklmnopqrstuvwx&q=1"),
            "q=1"
        );
    }

    #[test]
    fn sort_by_key_then_value() {
        assert_eq!(sorted("a-b=1&a=2"), "a=2&a-b=1");
        assert_eq!(sorted("a=1&a&a="), "a&a=&a=1");
        assert_eq!(sorted("a=1&"), "&a=1");
        assert_eq!(sorted("&"), "&");
    }
}
