//! MementoMap keys: how a capture's SURT becomes a map key, and the
//! candidate keys a lookup tries, most specific first.
//!
//! Key forms: an exact SURT without query and trailing slashes
//! (`com,example)/a/b`, the root page written `com,example)/`), a host
//! subtree `com,example,*` (the host and all its sub-domains), a path
//! subtree `com,example)/a/*` (the page `/a` and everything below it), and
//! `*` for the whole archive.

/// The map key of a capture SURT, or `None` when the SURT names no page
/// (no `)`), which the reference skips too.
///
/// As the reference: cut at the first `?` (queries are not kept), strip
/// `/` and `,` at both ends. Unlike the reference the root page keeps its
/// slash (`com,example)/`, the spec's form) so that it sorts before its
/// own path entries. With `keep_query` the query stays and only trailing
/// slashes of the path part are stripped.
pub fn map_key(surt: &[u8], keep_query: bool) -> Option<Vec<u8>> {
    let mut key = Vec::with_capacity(surt.len() + 1);
    map_key_into(surt, keep_query, &mut key).then_some(key)
}

/// [`map_key`] into a reused buffer (the per-capture hot path); false
/// when the SURT names no page.
pub fn map_key_into(surt: &[u8], keep_query: bool, key: &mut Vec<u8>) -> bool {
    let (path, query) = match memchr::memchr(b'?', surt) {
        Some(q) if !keep_query => (&surt[..q], &b""[..]),
        Some(q) => (&surt[..q], &surt[q..]),
        None => (surt, &b""[..]),
    };
    let trimmed = trim(path);
    key.clear();
    if memchr::memchr(b')', trimmed).is_none() {
        return false;
    }
    key.extend_from_slice(trimmed);
    if key.last() == Some(&b')') {
        key.push(b'/');
    }
    key.extend_from_slice(query);
    true
}

/// Strips `/` and `,` at both ends (the reference's `strip(b"/,")`).
pub(crate) fn trim(mut s: &[u8]) -> &[u8] {
    while let [b'/' | b',', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b'/' | b','] = s {
        s = rest;
    }
    s
}

/// Candidate keys for a lookup of `surt`, from most to least specific; the
/// index of a candidate is its number of generalisation steps.
///
/// For `com,example,www)/a/b`: the exact key, `com,example,www)/a/b/*`,
/// `com,example,www)/a/*`, `com,example,www)/*`, `com,example,www,*`,
/// `com,example,*`, `com,*`, `*`. The root page is also looked up in the
/// reference's form `com,example)` at step 0, so maps it wrote still match.
pub fn candidates(surt: &[u8], keep_query: bool) -> Vec<Vec<Vec<u8>>> {
    let mut out: Vec<Vec<Vec<u8>>> = Vec::new();
    first_candidate(surt, keep_query, |steps, alt| {
        match out.get_mut(steps) {
            Some(alts) => alts.push(alt.to_vec()),
            None => out.push(vec![alt.to_vec()]),
        }
        None::<()>
    });
    out
}

/// The first of [`candidates`] (in their order, each with its steps) for
/// which `f` gives an answer, and that answer. Builds each candidate in
/// one buffer, so a lookup allocates twice, not once per candidate.
pub fn first_candidate<T>(
    surt: &[u8],
    keep_query: bool,
    mut f: impl FnMut(usize, &[u8]) -> Option<T>,
) -> Option<T> {
    let mut key = Vec::with_capacity(surt.len() + 1);
    if !map_key_into(surt, keep_query, &mut key) {
        return f(0, surt).or_else(|| f(1, b"*"));
    }
    let close = memchr::memchr(b')', &key).unwrap_or(key.len());
    let host = &key[..close];
    let path = &key[close..]; // starts with ')'
    let mut buf = Vec::with_capacity(key.len() + 3);
    let mut steps = 0;
    // Whether the last candidate so far is `host)/*`.
    let is_root =
        |alt: &[u8]| alt.len() == close + 3 && alt.starts_with(host) && alt.ends_with(b")/*");
    let last_is_root;
    if path == b")/" {
        if let Some(t) = f(0, &key).or_else(|| f(0, &key[..key.len() - 1])) {
            return Some(t);
        }
        last_is_root = is_root(&key);
    } else {
        if let Some(t) = f(0, &key) {
            return Some(t);
        }
        let mut p = &key[..];
        loop {
            steps += 1;
            buf.clear();
            buf.extend_from_slice(p);
            buf.extend_from_slice(b"/*");
            if let Some(t) = f(steps, &buf) {
                return Some(t);
            }
            match memchr::memrchr(b'/', &p[close..]) {
                Some(i) if close + i > close + 1 => p = &p[..close + i],
                _ => break,
            }
        }
        last_is_root = is_root(&buf);
    }
    if !last_is_root {
        steps += 1;
        buf.clear();
        buf.extend_from_slice(host);
        buf.extend_from_slice(b")/*");
        if let Some(t) = f(steps, &buf) {
            return Some(t);
        }
    }
    let mut h = host;
    loop {
        steps += 1;
        buf.clear();
        buf.extend_from_slice(h);
        buf.extend_from_slice(b",*");
        if let Some(t) = f(steps, &buf) {
            return Some(t);
        }
        match memchr::memrchr(b',', h) {
            Some(i) => h = &h[..i],
            None => break,
        }
    }
    f(steps + 1, b"*")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[u8]) -> String {
        String::from_utf8_lossy(v).into_owned()
    }

    #[test]
    fn map_key_follows_the_reference_trimming() {
        let cases: &[(&str, Option<&str>)] = &[
            ("com,example)/", Some("com,example)/")),
            ("com,example)/?a=1", Some("com,example)/")),
            ("com,example)/a/b/", Some("com,example)/a/b")),
            ("com,example)/a//?x", Some("com,example)/a")),
            ("com,example)/a?b/c", Some("com,example)/a")),
            ("com,example)", Some("com,example)/")),
            ("com,example", None),
            ("", None),
            ("?", None),
            (",com,example)/x,", Some("com,example)/x")),
        ];
        for (input, want) in cases {
            let got = map_key(input.as_bytes(), false).map(|k| s(&k));
            assert_eq!(got.as_deref(), *want, "{input}");
        }
        assert_eq!(
            s(&map_key(b"com,example)/a/?b=1", true).unwrap()),
            "com,example)/a?b=1"
        );
    }

    #[test]
    fn candidates_go_from_specific_to_general() {
        let c: Vec<String> = candidates(b"com,example,www)/a/b?q", false)
            .iter()
            .map(|alts| s(&alts[0]))
            .collect();
        assert_eq!(
            c,
            [
                "com,example,www)/a/b",
                "com,example,www)/a/b/*",
                "com,example,www)/a/*",
                "com,example,www)/*",
                "com,example,www,*",
                "com,example,*",
                "com,*",
                "*"
            ]
        );
        let root = candidates(b"com,example)/", false);
        assert_eq!(s(&root[0][1]), "com,example)");
        let c: Vec<String> = root.iter().map(|alts| s(&alts[0])).collect();
        assert_eq!(
            c,
            [
                "com,example)/",
                "com,example)/*",
                "com,example,*",
                "com,*",
                "*"
            ]
        );
        let c: Vec<String> = candidates(b"com,example)/a", false)
            .iter()
            .map(|alts| s(&alts[0]))
            .collect();
        assert_eq!(
            c,
            [
                "com,example)/a",
                "com,example)/a/*",
                "com,example)/*",
                "com,example,*",
                "com,*",
                "*"
            ]
        );
    }
}
