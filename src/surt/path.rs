//! Path canonicalisation: dot segments, ASP.NET session ids, trailing
//! slash.

/// Appends the reference's normalised form of a decoded path to `out`.
///
/// Everything before the first `/` is ignored; `.` segments go; `..` pops
/// the last kept segment or, when there is none, is itself kept (and can be
/// popped by a later `..`); empty segments collapse except the last, so a
/// trailing slash survives. An empty path becomes `/`.
pub(super) fn normalize(path: &[u8], kept: &mut Vec<(usize, usize)>, out: &mut Vec<u8>) {
    if path.is_empty() {
        out.push(b'/');
        return;
    }
    kept.clear();
    let mut pos = 0;
    let mut first = true;
    for seg in path.split(|&b| b == b'/') {
        let range = (pos, pos + seg.len());
        pos += seg.len() + 1;
        if first {
            first = false;
            continue;
        }
        match seg {
            b"." => {}
            b".." => {
                if kept.pop().is_none() {
                    kept.push(range);
                }
            }
            _ => kept.push(range),
        }
    }
    out.push(b'/');
    if let Some((&last, init)) = kept.split_last() {
        for &(a, b) in init {
            if b > a {
                out.extend_from_slice(path.get(a..b).unwrap_or_default());
                out.push(b'/');
            }
        }
        out.extend_from_slice(path.get(last.0..last.1).unwrap_or_default());
    }
}

/// Removes an ASP.NET cookieless session segment, `(S(<24>))/` style or
/// `(<24>)/`, when a later name ends in `.aspx` (before any `?`). Works on
/// the lowercased path; the rightmost qualifying segment goes, first for
/// the nested form, then for the plain one.
pub(super) fn strip_session_id(path: &mut Vec<u8>) {
    for nested in [true, false] {
        if let Some((start, end)) = find_session_segment(path, nested) {
            path.drain(start..end);
        }
    }
}

/// The range of the session segment (after its preceding `/`, through its
/// trailing `/`) of the rightmost match, if any.
fn find_session_segment(path: &[u8], nested: bool) -> Option<(usize, usize)> {
    // Candidate starts right after a `/`, tried from the right as a greedy
    // `^(.*/)` would.
    let mut i = path.len();
    while i > 0 {
        i -= 1;
        if path.get(i) != Some(&b'/') {
            continue;
        }
        let start = i + 1;
        let Some(rest) = path.get(start..) else {
            continue;
        };
        let len = if nested {
            nested_segment_len(rest)
        } else {
            plain_segment_len(rest)
        };
        if let Some(len) = len {
            if has_aspx_name(rest.get(len..).unwrap_or_default()) {
                return Some((start, start + len));
            }
        }
    }
    None
}

fn is_alnum24(s: &[u8]) -> bool {
    s.len() == 24 && s.iter().all(u8::is_ascii_alphanumeric)
}

/// Length of `(` (`letter(24 alnum)`)+ `)/` at the start of `s`.
fn nested_segment_len(s: &[u8]) -> Option<usize> {
    let mut rest = s.strip_prefix(b"(")?;
    let mut groups = 0;
    while let [l, b'(', tail @ ..] = rest {
        if !l.is_ascii_alphabetic() {
            break;
        }
        let id = tail.get(..24)?;
        if !is_alnum24(id) || tail.get(24) != Some(&b')') {
            return None;
        }
        rest = tail.get(25..)?;
        groups += 1;
    }
    if groups == 0 {
        return None;
    }
    rest.strip_prefix(b")/")?;
    Some(s.len() - rest.len() + 2)
}

/// Length of `(24 alnum)/` at the start of `s`.
fn plain_segment_len(s: &[u8]) -> Option<usize> {
    let rest = s.strip_prefix(b"(")?;
    if is_alnum24(rest.get(..24)?) && rest.get(24..26) == Some(b")/") {
        Some(27)
    } else {
        None
    }
}

/// `[^?]+\.aspx.*`: a non-empty run without `?` followed by `.aspx`.
fn has_aspx_name(s: &[u8]) -> bool {
    let end = memchr::memchr(b'?', s).unwrap_or(s.len());
    let head = s.get(..end).unwrap_or_default();
    memchr::memmem::find_iter(head, b".aspx").any(|i| i >= 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(p: &str) -> String {
        let mut out = Vec::new();
        normalize(p.as_bytes(), &mut Vec::new(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn dot_segments_keep_reference_quirks() {
        assert_eq!(norm("/../b"), "/../b");
        assert_eq!(norm("/a/../../b"), "/../b");
        assert_eq!(norm("/../../b"), "/b");
        assert_eq!(norm("/a/b/c/../../../.."), "/..");
        assert_eq!(norm("/./../c"), "/../c");
        assert_eq!(norm("//a//b/"), "/a/b/");
        assert_eq!(norm(""), "/");
    }

    #[test]
    fn aspnet_session_segments() {
        let mut p = b"/(s(4hqa0555fwsecu455xqckv45))/mileg.aspx".to_vec();
        strip_session_id(&mut p);
        assert_eq!(p, b"/mileg.aspx");
        let mut p = b"/x/(4hqa0555fwsecu455xqckv45)/a.aspx?b".to_vec();
        strip_session_id(&mut p);
        assert_eq!(p, b"/x/a.aspx?b");
        let mut p = b"/(s(4hqa0555fwsecu455xqckv45))/mileg.asp".to_vec();
        strip_session_id(&mut p);
        assert_eq!(p, b"/(s(4hqa0555fwsecu455xqckv45))/mileg.asp");
    }
}
