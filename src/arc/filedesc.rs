//! The `filedesc://` record: the ARC file's own description.
//!
//! Its block starts with a version line (`1 0 InternetArchive`: major,
//! minor, origin code) and a line naming the header fields (`URL IP-address
//! Archive-date Content-type Archive-length`, or the ten v2 names). Version
//! 1.1 files written by Heritrix follow them with an XML `<arcmetadata>`
//! document whose leaf elements (`<arc:software>`, `<dc:description>`, ...)
//! describe the crawl; those go into the index's `!meta`.
//!
//! The metadata is read with a deliberately small scanner: leaf elements of
//! `<arcmetadata>` with their text, entities decoded. It never fails: what
//! it cannot read is left out.

/// Version block and metadata of a `filedesc://` record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileDesc {
    /// `major.minor` from the version line (`1.0`, `1.1`), empty if absent.
    pub version: String,
    /// The origin code after the version numbers (`InternetArchive`).
    pub origin: String,
    /// The field-names line as written.
    pub fields: String,
    /// `(local element name, text)` of each leaf element of `<arcmetadata>`,
    /// in file order (`("software", "Heritrix 1.14.0 ...")`).
    pub metadata: Vec<(String, String)>,
}

impl FileDesc {
    /// Reads the block of a `filedesc://` record. Never fails; fields that
    /// are absent stay empty.
    pub fn parse(block: &[u8]) -> FileDesc {
        let mut lines = block.splitn(3, |&b| b == b'\n');
        let version_line = lines.next().unwrap_or(b"");
        let fields = lines.next().unwrap_or(b"");
        let rest = lines.next().unwrap_or(b"");
        let mut words = version_line
            .split(|&b| b == b' ' || b == b'\r')
            .filter(|w| !w.is_empty());
        let mut fd = FileDesc::default();
        if let (Some(major), Some(minor)) = (words.next(), words.next()) {
            if major.iter().all(u8::is_ascii_digit) && minor.iter().all(u8::is_ascii_digit) {
                fd.version = format!("{}.{}", lossy(major), lossy(minor));
                let origin: Vec<&[u8]> = words.collect();
                fd.origin = origin
                    .iter()
                    .map(|w| lossy(w))
                    .collect::<Vec<_>>()
                    .join(" ");
            }
        }
        fd.fields = lossy(strip_cr(fields));
        fd.metadata = arcmetadata(rest);
        fd
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn strip_cr(b: &[u8]) -> &[u8] {
    b.strip_suffix(b"\r").unwrap_or(b)
}

/// Leaf elements inside `<arcmetadata ...> ... </arcmetadata>`.
fn arcmetadata(xml: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(open) = memchr::memmem::find(xml, b"<arcmetadata") else {
        return out;
    };
    let body = &xml[open..];
    let Some(gt) = memchr::memchr(b'>', body) else {
        return out;
    };
    let body = &body[gt + 1..];
    let body = match memchr::memmem::find(body, b"</arcmetadata") {
        Some(end) => &body[..end],
        None => body,
    };
    let mut at = 0;
    while let Some(lt) = memchr::memchr(b'<', &body[at..]) {
        let tag_start = at + lt + 1;
        let Some(gt) = memchr::memchr(b'>', &body[tag_start..]) else {
            break;
        };
        let tag = &body[tag_start..tag_start + gt];
        at = tag_start + gt + 1;
        if tag.starts_with(b"/") || tag.starts_with(b"?") || tag.starts_with(b"!") {
            continue;
        }
        let name_end = tag
            .iter()
            .position(|&b| b.is_ascii_whitespace() || b == b'/')
            .unwrap_or(tag.len());
        let qname = &tag[..name_end];
        let local = match memchr::memrchr(b':', qname) {
            Some(c) => &qname[c + 1..],
            None => qname,
        };
        if local.is_empty() {
            continue;
        }
        if tag.ends_with(b"/") {
            out.push((lossy(local), String::new()));
            continue;
        }
        // A leaf: text up to the next `<`, which must close this element.
        let text_end = memchr::memchr(b'<', &body[at..]).map_or(body.len(), |i| at + i);
        let after = &body[text_end..];
        let mut close = Vec::with_capacity(qname.len() + 2);
        close.extend_from_slice(b"</");
        close.extend_from_slice(qname);
        if after.starts_with(&close) {
            let text = unescape(&lossy(body[at..text_end].trim_ascii()));
            out.push((lossy(local), text));
            at = text_end;
        }
    }
    out
}

/// Decodes the five predefined XML entities and numeric references.
fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let Some(semi) = rest.find(';').filter(|&i| i <= 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let ent = &rest[1..semi];
        let ch = match ent {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => ent
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| ent.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_1_0_without_metadata() {
        let fd = FileDesc::parse(
            b"1 0 LiveWeb Capture\nURL IP-address Archive-date Content-type Archive-length",
        );
        assert_eq!(fd.version, "1.0");
        assert_eq!(fd.origin, "LiveWeb Capture");
        assert_eq!(
            fd.fields,
            "URL IP-address Archive-date Content-type Archive-length"
        );
        assert!(fd.metadata.is_empty());
    }

    #[test]
    fn heritrix_arcmetadata_leaves() {
        let block = b"1 1 InternetArchive\r\nURL IP-address Archive-date Content-type Archive-length\r\n\
<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n<arcmetadata xmlns:dc=\"http://purl.org/dc/elements/1.1/\" xmlns=\"http://archive.org/arc/1.0/\">\r\n\
<arc:software>Heritrix 1.14.0 http://crawler.archive.org</arc:software>\r\n\
<dc:description>a &amp; b &lt;c&gt;</dc:description>\r\n<arc:empty/>\r\n\
<ns0:date xmlns:ns0=\"http://purl.org/dc/elements/1.1/\" xsi:type=\"dcterms:W3CDTF\">2007-01-02T10:04:07+00:00</ns0:date>\r\n\
</arcmetadata>\r\n";
        let fd = FileDesc::parse(block);
        assert_eq!(fd.version, "1.1");
        assert_eq!(fd.origin, "InternetArchive");
        assert_eq!(
            fd.metadata,
            vec![
                (
                    "software".to_string(),
                    "Heritrix 1.14.0 http://crawler.archive.org".to_string()
                ),
                ("description".to_string(), "a & b <c>".to_string()),
                ("empty".to_string(), String::new()),
                ("date".to_string(), "2007-01-02T10:04:07+00:00".to_string()),
            ]
        );
    }

    #[test]
    fn garbage_never_fails() {
        for b in [
            &b""[..],
            b"\n\n<arcmetadata",
            b"x y\n<arcmetadata><a>&#xZZ;</a>",
            b"1",
        ] {
            let _ = FileDesc::parse(b);
        }
        let fd = FileDesc::parse(b"1 0\n\n<arcmetadata><a>&#x41;&#66;&bogus;</a></arcmetadata>");
        assert_eq!(
            fd.metadata,
            vec![("a".to_string(), "AB&bogus;".to_string())]
        );
    }
}
