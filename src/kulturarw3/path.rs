//! The storage tree `archive/XX/HOST/SNAPSHOT/MD5URL.EPOCH` and its
//! cross-check against the object stored there.
//!
//! The tree groups a host's objects under `XX/HOST`, `XX` being the first
//! two hex digits of the MD5 of the host name (256 top directories), then
//! under the snapshot (crawl) id; the file is named by the MD5 of the URL
//! and the archive time in seconds since 1970. The names are redundant
//! with the object's own fields, so a disagreement tells of a file moved
//! or renamed by hand: it is reported and the object kept, since the
//! object's bytes, not its name, are what was archived.

use md5::{Digest as _, Md5};

use super::{hex, Error, Object, PathField};

/// The components of a tree path, borrowed from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreePath<'a> {
    /// Two hex digits.
    pub xx: &'a [u8],
    pub host: &'a [u8],
    /// The snapshot id as written (`002`), which the index keeps.
    pub snapshot: &'a [u8],
    /// Thirty-two hex digits.
    pub md5url: &'a [u8],
    /// The digits after the `.`.
    pub epoch: i64,
}

/// Splits a path relative to the input directory into its tree
/// components, taken from the end, so that the path may start at
/// `archive/`, below it or above it. `/` and `\` both separate; empty
/// components (`a//b`) are passed over. `None` when the last four
/// components are not `XX/HOST/SNAPSHOT/MD5URL.EPOCH` (two hex digits, a
/// host, a snapshot id, 32 hex digits, `.`, 1 to 12 digits).
///
/// Paths are bytes because file names need not be UTF-8; the caller
/// passes the OS bytes of a relative path.
pub fn parse_tree_path(rel: &[u8]) -> Option<TreePath<'_>> {
    let mut comps = rel
        .split(|&b| b == b'/' || b == b'\\')
        .filter(|c| !c.is_empty())
        .rev();
    let name = comps.next()?;
    let snapshot = comps.next()?;
    let host = comps.next()?;
    let xx = comps.next()?;
    let dot = memchr::memchr(b'.', name)?;
    let (md5url, digits) = (&name[..dot], &name[dot + 1..]);
    let is_hex = |s: &[u8], n: usize| s.len() == n && s.iter().all(u8::is_ascii_hexdigit);
    if !is_hex(xx, 2) || !is_hex(md5url, 32) || snapshot == b"." || host == b"." {
        return None;
    }
    Some(TreePath {
        xx,
        host,
        snapshot,
        md5url,
        epoch: super::epoch::parse(digits)?,
    })
}

/// The host of a URL as the tree names its directories: the authority
/// after `scheme://` without userinfo, lower-cased; with and without its
/// port.
fn url_host(url: &[u8]) -> (&[u8], &[u8]) {
    let Some(i) = memchr::memmem::find(url, b"://") else {
        return (b"", b"");
    };
    let rest = &url[i + 3..];
    let end = rest
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let authority = &rest[..end];
    let authority = match memchr::memrchr(b'@', authority) {
        Some(at) => &authority[at + 1..],
        None => authority,
    };
    // A port follows the last `:` unless it sits inside `[v6]`.
    let host = match memchr::memrchr(b':', authority) {
        Some(c) if !authority[c..].contains(&b']') => &authority[..c],
        _ => authority,
    };
    (host, authority)
}

fn md5_hex(data: &[u8]) -> String {
    hex(&Md5::digest(data))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The disagreements between a tree path and an object read from the file
/// at that path, as [`Error::PathMismatch`] values for the caller to
/// report (none when they agree):
///
/// * `XX` against the first two hex digits of the MD5 of `HOST` (the
///   tree's own consistency; case ignored);
/// * `HOST` against the host of `HTTP-URL`, case ignored, with or without
///   its port;
/// * `MD5URL` against the MD5 of the `HTTP-URL` value as stored, and
///   `EPOCH` against `HTTP-archive-time`: only for the object at offset 0,
///   since a file of concatenated objects keeps the name of its first one.
pub fn check_path(path: &TreePath<'_>, obj: &Object<'_>) -> Vec<Error> {
    let mut out = Vec::new();
    let mut report = |field, in_path: &[u8], expected: String| {
        out.push(Error::PathMismatch {
            offset: obj.offset,
            field,
            in_path: text(in_path),
            expected,
        });
    };
    let host_md5 = md5_hex(&path.host.to_ascii_lowercase());
    if !path.xx.eq_ignore_ascii_case(&host_md5.as_bytes()[..2]) {
        report(PathField::Xx, path.xx, host_md5[..2].to_string());
    }
    let (host, host_port) = url_host(obj.url);
    if !path.host.eq_ignore_ascii_case(host) && !path.host.eq_ignore_ascii_case(host_port) {
        report(PathField::Host, path.host, text(host).to_ascii_lowercase());
    }
    if obj.offset == 0 {
        let url_md5 = md5_hex(obj.url);
        if !path.md5url.eq_ignore_ascii_case(url_md5.as_bytes()) {
            report(PathField::Md5Url, path.md5url, url_md5);
        }
        if obj.archive_time != Some(path.epoch) {
            let expected = obj.archive_time.map_or_else(String::new, |t| t.to_string());
            report(
                PathField::Epoch,
                path.epoch.to_string().as_bytes(),
                expected,
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_example_path() {
        let p = b"archive/bd/www.server.at/002/0aca879afd45103783c3990636c860ac.1001186253";
        let t = parse_tree_path(p).unwrap();
        assert_eq!(t.xx, b"bd");
        assert_eq!(t.host, b"www.server.at");
        assert_eq!(t.snapshot, b"002");
        assert_eq!(t.md5url, b"0aca879afd45103783c3990636c860ac");
        assert_eq!(t.epoch, 1_001_186_253);
        // Below `archive/`, with a doubled separator and Windows ones.
        let q = b"bd\\www.server.at//002/0aca879afd45103783c3990636c860ac.1001186253";
        assert_eq!(parse_tree_path(q), Some(t));
    }

    #[test]
    fn not_tree_paths() {
        for p in [
            &b"0aca879afd45103783c3990636c860ac.1001186253"[..],
            b"www.server.at/002/0aca879afd45103783c3990636c860ac.1001186253",
            b"bdx/www.server.at/002/0aca879afd45103783c3990636c860ac.1001186253",
            b"bd/www.server.at/002/0aca879afd45103783c3990636c860a.1001186253",
            b"bd/www.server.at/002/0aca879afd45103783c3990636c860ac",
            b"bd/www.server.at/002/0aca879afd45103783c3990636c860ac.",
            b"bd/www.server.at/002/0aca879afd45103783c3990636c860ac.-1",
            b"bd/www.server.at/002/0aca879afd45103783c3990636c860ac.1.gz",
            b"",
        ] {
            assert_eq!(parse_tree_path(p), None, "{}", String::from_utf8_lossy(p));
        }
    }

    #[test]
    fn hosts_of_urls() {
        assert_eq!(url_host(b"http://www.kb.se/ls/x.htm").0, b"www.kb.se");
        assert_eq!(url_host(b"http://u:p@WWW.kb.se:8080?q").0, b"WWW.kb.se");
        assert_eq!(
            url_host(b"http://u:p@WWW.kb.se:8080?q").1,
            b"WWW.kb.se:8080"
        );
        assert_eq!(url_host(b"http://[::1]/").0, b"[::1]");
        assert_eq!(url_host(b"http://[::1]:81/").0, b"[::1]");
        assert_eq!(url_host(b"mailto:x@y").0, b"");
    }
}
