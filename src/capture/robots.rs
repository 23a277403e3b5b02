//! The `M` field of CDX (CDX-Writer's "AIF meta tags"): robots directives
//! found in the HTML `<head>` and the `X-Robots-Tag` header, written as a
//! combination of `A` (noarchive), `F` (nofollow) and `I` (noindex), in that
//! order.
//!
//! CDX-Writer finds meta tags with regular expressions rather than an HTML
//! parser, and the flags must come out the same, so the same leftmost-first
//! patterns are used (the `regex` crate's alternation order reproduces the
//! back-reference `(['"]?)(.*?)\1` of the original with three branches).
//! `P` (password-protected capture) comes from a WARC header and never
//! applies to ARC records.

use regex::bytes::Regex;

/// Compiled patterns; every parser shares one compiled copy.
#[derive(Debug, Clone)]
pub struct RobotsParser {
    tag: Regex,
    name: Regex,
    content: Regex,
}

/// Pages larger than this are not searched, as in CDX-Writer (its HTML
/// parser used to exhaust memory on huge pages).
pub const PARSE_LIMIT: usize = 5 * 1024 * 1024;

impl Default for RobotsParser {
    fn default() -> Self {
        Self::new()
    }
}

/// The patterns, compiled once per process; parsers share them.
static PATTERNS: std::sync::LazyLock<RobotsParser> = std::sync::LazyLock::new(|| {
    // The patterns are constants; failing to compile them is a bug
    // caught by every test, never an input-dependent condition.
    let attr = |name: &str| {
        Regex::new(&format!(
            r#"(?i-u)\b(?:{name})\s*=\s*(?:"(.*?)"[\s/>]|'(.*?)'[\s/>]|(.*?)[\s/>])"#
        ))
        .expect("constant regex")
    };
    RobotsParser {
        tag: Regex::new(r"(?i-u)(<meta[^>]+?>|</head>)").expect("constant regex"),
        name: attr("name|http-equiv"),
        content: attr("content"),
    }
});

impl RobotsParser {
    /// A parser sharing the process's compiled patterns (cheap).
    pub fn new() -> RobotsParser {
        PATTERNS.clone()
    }

    /// The flags (`A`, `F`, `I` in that order) written into `out`; returns
    /// how many. `html` is the body after the HTTP head, `x_robots` the
    /// first `X-Robots-Tag` header value.
    pub fn flags(&self, html: Option<&[u8]>, x_robots: Option<&[u8]>, out: &mut [u8; 3]) -> usize {
        let mut noarchive = false;
        let mut nofollow = false;
        let mut noindex = false;
        let mut see = |list: &[u8]| {
            for token in list.split(|&b| b == b',') {
                let t = token.trim_ascii();
                noarchive |= t.eq_ignore_ascii_case(b"noarchive");
                nofollow |= t.eq_ignore_ascii_case(b"nofollow");
                noindex |= t.eq_ignore_ascii_case(b"noindex");
            }
        };
        if let Some(html) = html {
            let html = html.trim_ascii();
            for m in self.tag.find_iter(html) {
                let tag = m.as_bytes();
                if tag.eq_ignore_ascii_case(b"</head>") {
                    break;
                }
                let Some(name) = attr_value(&self.name, tag) else {
                    continue;
                };
                let Some(content) = attr_value(&self.content, tag) else {
                    continue;
                };
                if name.eq_ignore_ascii_case(b"robots") {
                    see(content);
                }
            }
        }
        if let Some(x) = x_robots {
            see(x);
        }
        let mut n = 0;
        for (on, flag) in [(noarchive, b'A'), (nofollow, b'F'), (noindex, b'I')] {
            if on {
                out[n] = flag;
                n += 1;
            }
        }
        n
    }
}

/// The value captured by one of the three branches of an attribute pattern.
fn attr_value<'a>(re: &Regex, tag: &'a [u8]) -> Option<&'a [u8]> {
    let caps = re.captures(tag)?;
    (1..=3).find_map(|i| caps.get(i)).map(|m| m.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(html: &str, x: Option<&str>) -> String {
        let mut out = [0; 3];
        let n = RobotsParser::new().flags(Some(html.as_bytes()), x.map(str::as_bytes), &mut out);
        String::from_utf8(out[..n].to_vec()).unwrap()
    }

    #[test]
    fn two_robots_tags_join() {
        // The head of CDX-Writer's meta_tag_FI test page.
        let html = "<html>  \n<head>  \n<meta NAME=\"ROBOTS\" CONTENT=\"NOINDEX\">  \n<meta NAME=\"ROBOTS\" CONTENT=\"NOFOLLOW\">  \n<title>";
        assert_eq!(flags(html, None), "FI");
    }

    #[test]
    fn quotes_and_unquoted_values() {
        assert_eq!(flags("<meta name=robots content=noarchive>", None), "A");
        assert_eq!(
            flags("<meta name='robots' content='noindex, nofollow' />", None),
            "FI"
        );
        assert_eq!(
            flags("<meta http-equiv=\"robots\" content=\"none\">", None),
            ""
        );
    }

    #[test]
    fn stops_at_end_of_head() {
        assert_eq!(
            flags("<head></head><meta name=robots content=noindex>", None),
            ""
        );
    }

    #[test]
    fn x_robots_tag_counts() {
        assert_eq!(flags("", Some("noarchive")), "A");
        assert_eq!(
            flags("<meta name=robots content=noindex>", Some("NoArchive, x")),
            "AI"
        );
    }

    #[test]
    fn missing_content_is_ignored() {
        assert_eq!(flags("<meta name=robots>", None), "");
        assert_eq!(flags("<meta>", None), "");
    }
}
