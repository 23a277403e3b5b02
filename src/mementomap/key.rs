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
    let Some(key) = map_key(surt, keep_query) else {
        // Not a page SURT: only an exact match or the whole archive.
        out.push(vec![surt.to_vec()]);
        out.push(vec![b"*".to_vec()]);
        return out;
    };
    let close = memchr::memchr(b')', &key).unwrap_or(key.len());
    let host = &key[..close];
    let path = &key[close..]; // starts with ')'
    if path == b")/" {
        out.push(vec![key.clone(), key[..key.len() - 1].to_vec()]);
    } else {
        out.push(vec![key.clone()]);
        // `key/*`, then each shorter path prefix with `/*`.
        let mut p = &key[..];
        loop {
            let mut c = p.to_vec();
            c.extend_from_slice(b"/*");
            out.push(vec![c]);
            match memchr::memrchr(b'/', &p[close..]) {
                Some(i) if close + i > close + 1 => p = &p[..close + i],
                _ => break,
            }
        }
    }
    // The host root's subtree `host)/*`.
    let mut root = host.to_vec();
    root.extend_from_slice(b")/*");
    if out.last().map(|c| &c[0]) != Some(&root) {
        out.push(vec![root]);
    }
    // `host,*` and each parent domain up to the top-level label.
    let mut h = host;
    loop {
        let mut c = h.to_vec();
        c.extend_from_slice(b",*");
        out.push(vec![c]);
        match memchr::memrchr(b',', h) {
            Some(i) => h = &h[..i],
            None => break,
        }
    }
    out.push(vec![b"*".to_vec()]);
    out
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
