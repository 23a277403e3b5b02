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
    // Kept segments are ranges into `path`, reused across calls, so the
    // rebuild needs no per-segment allocation.
    kept.clear();
    let mut pos = 0;
    let mut first = true;
    for seg in path.split(|&b| b == b'/') {
        let range = (pos, pos + seg.len());
        pos += seg.len() + 1;
        // The piece before the first `/` is dropped: with a host the path
        // starts with `/` anyway, and the reference splits this way.
        if first {
            first = false;
            continue;
        }
        match seg {
            b"." => {}
            // Unlike RFC 3986, a `..` at the root is kept, and the kept
            // `..` is itself a segment a later `..` may pop.
            b".." => {
                if kept.pop().is_none() {
                    kept.push(range);
                }
            }
            _ => kept.push(range),
        }
    }
    // Empty segments are skipped except the last one, which keeps a
    // trailing slash for the IA step to remove.
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

/// Whether [`normalize`] would return `path` unchanged: it starts with
/// `/` and has no empty, `.` or `..` segment except an empty last one.
pub(super) fn is_normal(path: &[u8]) -> bool {
    if path.first() != Some(&b'/') {
        return false;
    }
    let mut segments = path.split(|&b| b == b'/').skip(1).peekable();
    while let Some(seg) = segments.next() {
        let last = segments.peek().is_none();
        match seg {
            b"." | b".." => return false,
            b"" if !last => return false,
            _ => {}
        }
    }
    true
}

/// Removes an ASP.NET cookieless session segment, `(S(<24>))/` style or
/// `(<24>)/`, when a later name ends in `.aspx` (before any `?`). Works on
/// the lowercased path; the rightmost qualifying segment goes, first for
/// the nested form, then for the plain one.
pub(super) fn strip_session_id(path: &mut Vec<u8>) {
    // Both patterns need a `(` and `.aspx`; almost no path has both, so
    // test that first (the cheap byte test before the substring one).
    if memchr::memchr(b'(', path).is_none() || memchr::memmem::find(path, b".aspx").is_none() {
        return;
    }
    for nested in [true, false] {
        if let Some((start, end)) = find_session_segment(path, nested) {
            path.drain(start..end);
        }
    }
}

/// The range of the session segment (after its preceding `/`, through its
/// trailing `/`) of the rightmost match, if any.
fn find_session_segment(path: &[u8], nested: bool) -> Option<(usize, usize)> {
    // Where `?` and `.aspx` occur, so that each candidate's tail test is a
    // binary search rather than a scan (a long path of many id-shaped
    // segments would otherwise be quadratic). Only reached for the rare
    // paths that contain `.aspx`.
    let questions: Vec<usize> = memchr::memchr_iter(b'?', path).collect();
    let aspx: Vec<usize> = memchr::memmem::find_iter(path, b".aspx").collect();
    // `[^?]+\.aspx.*` after the segment ending at `end`: some `.aspx`
    // starting at `end + 1` or later, before the first `?` from `end`.
    let has_aspx_name = |end: usize| {
        let q = questions
            .get(questions.partition_point(|&p| p < end))
            .copied()
            .unwrap_or(path.len());
        aspx.get(aspx.partition_point(|&p| p < end + 1))
            .is_some_and(|&a| a < q)
    };
    // Candidate starts right after a `/`, tried from the right as a greedy
    // `^(.*/)` would.
    for i in memchr::memrchr_iter(b'/', path) {
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
            if has_aspx_name(start + len) {
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
///
/// The groups are unambiguous (each starts with a letter and ends with
/// `)`), so no backtracking is needed to match the regular expression.
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
    fn is_normal_agrees_with_normalize() {
        for p in [
            "/", "/a", "/a/", "/a/b", "//", "/a//b", "/.", "/..", "/a/.", "/a/..", "/./a", "/.a",
            "/a.", "/...", "a", "", "/a/b/", "/a/../",
        ] {
            // `is_normal` may be conservative, never wrong.
            assert!(!is_normal(p.as_bytes()) || norm(p) == p, "{p:?}");
        }
    }

    #[test]
    fn aspx_must_follow_the_segment_before_any_question_mark() {
        let id = "(4hqa0555fwsecu455xqckv45)";
        for (path, stripped) in [
            (format!("/{id}/.aspx"), false),
            (format!("/{id}/a.aspx"), true),
            (format!("/{id}/a?b.aspx"), false),
            (format!("/x.aspx/{id}/a"), false),
            (format!("/{id}/{id}/{id}/m.aspx?q"), true),
        ] {
            let mut p = path.clone().into_bytes();
            strip_session_id(&mut p);
            assert_eq!(p != path.as_bytes(), stripped, "{path}");
        }
        // Only the rightmost qualifying segment goes (each pattern once).
        let mut p = format!("/{id}/a/{id}/m.aspx").into_bytes();
        strip_session_id(&mut p);
        assert_eq!(p, format!("/{id}/a/m.aspx").into_bytes());
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
