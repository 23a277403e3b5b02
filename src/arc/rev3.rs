//! ARC revision 3.0: record addresses (`ari:`) and the record roles of the
//! proposal (seed 000).
//!
//! A revision-3.0 record line carries a serial number (three hex digits,
//! rolling over at `FFF`) and a checksum (`urn:sha1:BASE32`). A record that
//! is about another record (its metadata, the request that fetched it, the
//! pointer of a duplicate, a transformed copy) is addressed by the other's
//! `ari`: `ari:DATE;SERIAL;URL`, where URL may itself be an ari. The media
//! type tells the roles apart:
//!
//! | media type | role |
//! |---|---|
//! | `message/http;msgtype=request` | [`Role::Request`] |
//! | `message/http;msgtype=response` | [`Role::Revisit`]: the HTTP head of a fetch whose content the archive holds already |
//! | `...;arcrecordtype=metadata` | [`Role::Metadata`] |
//! | `...;arcrecordtype=duplicate` | [`Role::Duplicate`]: metadata pointing at the original of a revisit |
//! | `...;arcrecordtype=transform` | [`Role::Metadata`] (metadata about a transform) |
//! | `application/rdf+xml`, `application/xml+rdf`, `text/rfc822-headers` on an ari | [`Role::Metadata`] |
//! | anything else on an ari | [`Role::Transform`]: a transformed copy of the addressed record |
//! | anything else | [`Role::Content`] |
//!
//! Nothing here allocates; every value borrows from the header line.

/// One record address: `ari:DATE;SERIAL;TARGET`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ari<'a> {
    /// The addressed record's date, as written.
    pub date: &'a [u8],
    /// The addressed record's serial, as written (`1FE`, or the
    /// `C0A8C9A7.1FE` form with a writer prefix).
    pub serial: &'a [u8],
    /// What the address points into: a URL, or another ari.
    pub target: &'a [u8],
}

/// How deeply aris may nest before an address is refused (metadata about
/// metadata about ... a record); real files nest two or three deep.
pub const MAX_NESTING: usize = 64;

impl<'a> Ari<'a> {
    /// Reads `url` as an ari: `None` unless it starts `ari:` (any case) and
    /// has a date of digits, a serial ([`is_serial`]) and a non-empty
    /// target, split at the first two `;` (the target URL may hold `;`).
    pub fn parse(url: &'a [u8]) -> Option<Ari<'a>> {
        let rest = strip_ari(url)?;
        let semi = memchr::memchr(b';', rest)?;
        let (date, rest) = (&rest[..semi], &rest[semi + 1..]);
        let semi = memchr::memchr(b';', rest)?;
        let (serial, target) = (&rest[..semi], &rest[semi + 1..]);
        let well_formed = !date.is_empty()
            && date.iter().all(u8::is_ascii_digit)
            && is_serial(serial)
            && !target.is_empty();
        well_formed.then_some(Ari {
            date,
            serial,
            target,
        })
    }

    /// The URL the address finally describes, nested aris peeled; `None`
    /// when a level is not a well-formed ari or they nest deeper than
    /// [`MAX_NESTING`].
    pub fn described_url(url: &'a [u8]) -> Option<&'a [u8]> {
        let mut at = url;
        for _ in 0..=MAX_NESTING {
            if strip_ari(at).is_none() {
                return Some(at);
            }
            at = Ari::parse(at)?.target;
        }
        None
    }
}

/// Whether `url` starts with the `ari:` scheme (any case).
pub fn is_ari(url: &[u8]) -> bool {
    strip_ari(url).is_some()
}

fn strip_ari(url: &[u8]) -> Option<&[u8]> {
    (url.len() >= 4 && url[..4].eq_ignore_ascii_case(b"ari:")).then(|| &url[4..])
}

/// A record serial: one to three hex digits (`1FE`), optionally after a
/// writer prefix of hex digits and a dot (`C0A8C9A7.1FE`, the form of the
/// proposal's `dcterms:replaces` example).
pub fn is_serial(t: &[u8]) -> bool {
    let hex = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_hexdigit);
    let serial = match memchr::memrchr(b'.', t) {
        Some(dot) => {
            let prefix = &t[..dot];
            if !hex(prefix) || prefix.len() > 16 {
                return false;
            }
            &t[dot + 1..]
        }
        None => t,
    };
    hex(serial) && serial.len() <= 3
}

/// What a record is, by the proposal's media types and addressing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A fetched resource (every v1 and v2 record, and revision-3.0
    /// records addressed by a URL).
    Content,
    /// `message/http;msgtype=request`: the request that fetched a record.
    Request,
    /// `message/http;msgtype=response`: the HTTP head of a fetch whose
    /// content is held already (duplicate reduction).
    Revisit,
    /// Metadata about a record (`arcrecordtype=metadata` or `=transform`,
    /// or an RDF or RFC 822 media type on an ari).
    Metadata,
    /// Metadata that points a revisit at its original
    /// (`arcrecordtype=duplicate`).
    Duplicate,
    /// A transformed copy of the record its ari addresses.
    Transform,
}

impl Role {
    /// The role of a record with this URL and media-type field.
    pub fn of(url: &[u8], mime: &[u8]) -> Role {
        match param(mime, b"arcrecordtype") {
            Some(v) if v.eq_ignore_ascii_case(b"duplicate") => return Role::Duplicate,
            Some(v)
                if v.eq_ignore_ascii_case(b"metadata") || v.eq_ignore_ascii_case(b"transform") =>
            {
                return Role::Metadata
            }
            _ => {}
        }
        let base = media_type(mime);
        if base.eq_ignore_ascii_case(b"message/http") {
            match param(mime, b"msgtype") {
                Some(v) if v.eq_ignore_ascii_case(b"request") => return Role::Request,
                Some(v) if v.eq_ignore_ascii_case(b"response") => return Role::Revisit,
                _ => {}
            }
        }
        if !is_ari(url) {
            return Role::Content;
        }
        let metadata_type = [
            &b"application/rdf+xml"[..],
            b"application/xml+rdf",
            b"text/rfc822-headers",
        ]
        .iter()
        .any(|t| base.eq_ignore_ascii_case(t));
        if metadata_type {
            Role::Metadata
        } else {
            Role::Transform
        }
    }

    /// The `record_type` an index gives records of this role (`None`:
    /// a capture, typed by its media type).
    pub fn record_type(self) -> Option<&'static [u8]> {
        match self {
            Role::Content | Role::Revisit => None,
            Role::Request => Some(b"request"),
            Role::Metadata | Role::Duplicate => Some(b"metadata"),
            Role::Transform => Some(b"transform"),
        }
    }

    /// Whether the role is a capture (indexed by default) rather than a
    /// record about one (indexed with `--all-records`).
    pub fn is_capture(self) -> bool {
        matches!(self, Role::Content | Role::Revisit | Role::Transform)
    }
}

/// The media type without parameters, trimmed.
fn media_type(mime: &[u8]) -> &[u8] {
    let end = memchr::memchr(b';', mime).unwrap_or(mime.len());
    mime[..end].trim_ascii()
}

/// The value of parameter `name` (any case) of a media-type field.
fn param<'a>(mime: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    mime.split(|&b| b == b';').skip(1).find_map(|p| {
        let eq = memchr::memchr(b'=', p)?;
        let (k, v) = (p[..eq].trim_ascii(), p[eq + 1..].trim_ascii());
        k.eq_ignore_ascii_case(name).then_some(v)
    })
}

/// The pointer a duplicate record's metadata gives to the original: the
/// text of its first `isVersionOf` element (any namespace prefix; the
/// proposal's example is `<dcterms:isVersionOf>URL</dcterms:isVersionOf>`),
/// trimmed, when it is one line.
pub fn duplicate_pointer(block: &[u8]) -> Option<&[u8]> {
    element_text(block, b"isVersionOf")
}

/// The text of the first element whose local name is `local`, trimmed;
/// `None` when absent, empty, or holding markup or a line break.
pub fn element_text<'a>(xml: &'a [u8], local: &[u8]) -> Option<&'a [u8]> {
    let mut at = 0;
    while let Some(lt) = memchr::memchr(b'<', &xml[at..]) {
        let start = at + lt + 1;
        let gt = start + memchr::memchr(b'>', &xml[start..])?;
        let tag = &xml[start..gt];
        at = gt + 1;
        let name_end = tag
            .iter()
            .position(|&b| b.is_ascii_whitespace() || b == b'/')
            .unwrap_or(tag.len());
        let name = &tag[..name_end];
        let local_name = name.rsplit(|&b| b == b':').next().unwrap_or(name);
        if local_name != local || tag.ends_with(b"/") || name.starts_with(b"/") {
            continue;
        }
        let close = memchr::memchr(b'<', &xml[at..]).map_or(xml.len(), |i| at + i);
        let text = xml[at..close].trim_ascii();
        let one_line = !text.is_empty() && !text.iter().any(|&b| b == b'\n' || b == b'\r');
        return one_line.then_some(text);
    }
    None
}

#[cfg(test)]
mod tests {
    //! The addresses and media types of the proposal's examples (seed 000).
    use super::*;

    #[test]
    fn aris_of_the_proposal() {
        let a = Ari::parse(b"ari:20040724100457;1FE;http://www.archive.org/index.html").unwrap();
        assert_eq!(a.date, b"20040724100457");
        assert_eq!(a.serial, b"1FE");
        assert_eq!(a.target, b"http://www.archive.org/index.html");
        // The URL keeps its own `;`.
        let long = b"ari:20040728195737;1FF;http://www.dh.gov.uk/x/fs/en?CONTENT_ID=4082690&chk=/DU1UD;a=b";
        assert_eq!(
            Ari::described_url(long),
            Some(&b"http://www.dh.gov.uk/x/fs/en?CONTENT_ID=4082690&chk=/DU1UD;a=b"[..])
        );
        // Metadata about metadata: nested aris are peeled.
        let nested =
            b"ari:20040724100888;1FF;ari:20040724100457;1FE;http://www.archive.org/index.html";
        assert_eq!(
            Ari::described_url(nested),
            Some(&b"http://www.archive.org/index.html"[..])
        );
        assert_eq!(Ari::parse(nested).unwrap().target, &nested[23..]);
        // The serial with a writer prefix.
        let prefixed = b"ari:20040724100457;C0A8C9A7.1FE;http://www.archive.org/mydocument.doc";
        assert_eq!(Ari::parse(prefixed).unwrap().serial, b"C0A8C9A7.1FE");
        // A URL is its own description.
        assert_eq!(Ari::described_url(b"http://a/"), Some(&b"http://a/"[..]));
    }

    #[test]
    fn malformed_aris_are_refused() {
        for bad in [
            &b"ari:20040724100457;1FE"[..],
            b"ari:2004072410045x;1FE;http://a/",
            b"ari:20040724100457;1FEE;http://a/",
            b"ari:20040724100457;;http://a/",
            b"ari:;1FE;http://a/",
            b"ari:20040724100457;1FE;",
            b"ari:1;1;ari:2;2",
        ] {
            assert_eq!(
                Ari::described_url(bad),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let mut deep = Vec::new();
        for _ in 0..=MAX_NESTING {
            deep.extend_from_slice(b"ari:1;1;");
        }
        deep.extend_from_slice(b"http://a/");
        assert_eq!(Ari::described_url(&deep), None);
        assert_eq!(Ari::described_url(&deep[8..]), Some(&b"http://a/"[..]));
    }

    #[test]
    fn serials() {
        for ok in [&b"1FE"[..], b"000", b"fff", b"7", b"210", b"C0A8C9A7.1FE"] {
            assert!(is_serial(ok), "{}", String::from_utf8_lossy(ok));
        }
        for bad in [&b""[..], b"1000", b"G12", b".1FE", b"C0A8C9A7.", b"1.2.3x"] {
            assert!(!is_serial(bad), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn roles_of_the_proposal() {
        let ari = b"ari:20040724100457;1FE;http://www.archive.org/index.html";
        let url = b"http://www.archive.org/index.html";
        assert_eq!(Role::of(url, b"text/html"), Role::Content);
        assert_eq!(
            Role::of(ari, b"application/rdf+xml;arcrecordtype=metadata"),
            Role::Metadata
        );
        assert_eq!(
            Role::of(ari, b"application/xml+rdf;arcrecordtype=metadata"),
            Role::Metadata
        );
        assert_eq!(Role::of(ari, b"application/rdf+xml"), Role::Metadata);
        assert_eq!(
            Role::of(ari, b"message/http;msgtype=request"),
            Role::Request
        );
        assert_eq!(
            Role::of(url, b"message/http;msgtype=response"),
            Role::Revisit
        );
        assert_eq!(
            Role::of(ari, b"application/xml+rdf;arcrecordtype=duplicate"),
            Role::Duplicate
        );
        assert_eq!(
            Role::of(ari, b"application/xml+rdf; ArcRecordType=Transform"),
            Role::Metadata
        );
        assert_eq!(
            Role::of(ari, b"application/openoffice.org"),
            Role::Transform
        );
        assert_eq!(Role::of(url, b"message/http"), Role::Content);
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        /// Any bytes: no panic, and a described URL is never an ari.
        #[test]
        fn any_bytes(url in proptest::collection::vec(any::<u8>(), 0..200),
                     mime in proptest::collection::vec(any::<u8>(), 0..60)) {
            if let Some(d) = Ari::described_url(&url) {
                prop_assert!(!is_ari(d));
            }
            let _ = Ari::parse(&url);
            let _ = Role::of(&url, &mime);
            let _ = duplicate_pointer(&url);
        }

        /// Aris nested around a URL holding `;` peel back to that URL.
        #[test]
        fn nested_aris_peel_to_their_url(
            url in "http://[a-z]{1,8}\\.org/[a-z;=&?/]{0,20}",
            levels in proptest::collection::vec((0u64..99_999_999_999_999, 0u16..0x1000), 0..6),
        ) {
            let mut addr = url.clone();
            for (date, serial) in &levels {
                addr = format!("ari:{date:014};{serial:03X};{addr}");
            }
            prop_assert_eq!(Ari::described_url(addr.as_bytes()), Some(url.as_bytes()));
            if let Some((date, serial)) = levels.last() {
                let a = Ari::parse(addr.as_bytes()).unwrap();
                let (d, s) = (format!("{date:014}"), format!("{serial:03X}"));
                prop_assert_eq!(a.date, d.as_bytes());
                prop_assert_eq!(a.serial, s.as_bytes());
            }
        }
    }

    #[test]
    fn duplicate_pointers() {
        let rdf = b"<?xml version='1.0'?>\n<rdf:RDF xmlns:rdf='x'>\n  <rdf:Description>\n    \
                    <dcterms:isVersionOf>http://www.archive.org/index.html\n    </dcterms:isVersionOf>\n";
        assert_eq!(
            duplicate_pointer(rdf),
            Some(&b"http://www.archive.org/index.html"[..])
        );
        assert_eq!(duplicate_pointer(b"<isVersionOf/><x>y</x>"), None);
        assert_eq!(
            duplicate_pointer(b"<a:isVersionOf>  </a:isVersionOf>"),
            None
        );
        assert_eq!(duplicate_pointer(b"<isVersionOf>a\nb</isVersionOf>"), None);
        assert_eq!(duplicate_pointer(b"<isVersionOf"), None);
    }
}
