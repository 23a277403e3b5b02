use super::*;

use std::borrow::Cow;

/// The hand-written tree of `tests/data/nedlib` (see its README).
mod fixture {
    pub const ROOT_META: &[u8] = include_bytes!(
        "../../tests/data/nedlib/harvest/2001-09-22/1/c8b6fe0f4078df975a08f72485ca32e2.meta"
    );
    pub const ROOT_DATA: &[u8] = include_bytes!(
        "../../tests/data/nedlib/harvest/2001-09-22/1/c8b6fe0f4078df975a08f72485ca32e2"
    );
    pub const GIF_META: &[u8] = include_bytes!(
        "../../tests/data/nedlib/harvest/2001-09-22/1/d90c3d30ea25e846b740d8e93793472e.meta"
    );
    pub const GIF_DATA: &[u8] = include_bytes!(
        "../../tests/data/nedlib/harvest/2001-09-22/1/d90c3d30ea25e846b740d8e93793472e"
    );
    pub const OLD_META: &[u8] = include_bytes!(
        "../../tests/data/nedlib/harvest/2001-09-23/2/d61966f47f6dfd0e6a663cdc78916d9f.meta"
    );
    pub const OLD_DATA: &[u8] = include_bytes!(
        "../../tests/data/nedlib/harvest/2001-09-23/2/d61966f47f6dfd0e6a663cdc78916d9f"
    );
    pub const ACCESS: &[u8] = include_bytes!("../../tests/data/nedlib/harvest/access1.data");

    /// One object of the tree and what it must give.
    pub struct Object {
        pub rel: &'static str,
        pub meta: &'static [u8],
        pub data: &'static [u8],
        pub digest: &'static str,
        pub mime: Option<&'static str>,
        pub status: u16,
    }

    pub const OBJECTS: [Object; 3] = [
        Object {
            rel: "2001-09-22/1/c8b6fe0f4078df975a08f72485ca32e2",
            meta: ROOT_META,
            data: ROOT_DATA,
            digest: "sha1:TT2G4QHQF2AA4443PVR4Y462RGCIUD3W",
            mime: Some("text/html"),
            status: 200,
        },
        Object {
            rel: "2001-09-22/1/d90c3d30ea25e846b740d8e93793472e",
            meta: GIF_META,
            data: GIF_DATA,
            digest: "sha1:SOPUBPT7DKXWEP3CRBW6JKV2HCDN7G3F",
            mime: Some("image/gif"),
            status: 200,
        },
        Object {
            rel: "2001-09-23/2/d61966f47f6dfd0e6a663cdc78916d9f",
            meta: OLD_META,
            data: OLD_DATA,
            digest: "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
            mime: Some("text/html"),
            status: 302,
        },
    ];
}

const HEAD: &[u8] = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n";

/// A `.meta` file of `fields` lines (each given its `\n`), an empty line
/// and `head`.
fn meta_of(fields: &[&str], head: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fields {
        out.extend_from_slice(f.as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
    out.extend_from_slice(head);
    out
}

const URL: &str = "URL: http://example.com/";
const TIME: &str = "Harvest-Time: 20000823054100";

fn err(bytes: &[u8]) -> Error {
    parse_meta(bytes).expect_err("should not parse")
}

#[test]
fn fixture_meta_parses_to_every_field() {
    let meta = parse_meta(fixture::ROOT_META).unwrap();
    let f = &meta.fields;
    assert_eq!(f.url, b"http://www.server.at/");
    assert_eq!(&f.harvest_time, b"20010922191733");
    assert_eq!(f.ip, Some(&b"192.0.2.17"[..]));
    assert_eq!(f.content_length, Some(136));
    assert_eq!(
        f.md5.map(|m| md5_hex(&m)).as_deref(),
        Some("da47b5d13f2296ae4fc808920aca5e32")
    );
    assert_eq!(f.extra, [(&b"Harvester"[..], &b"Nedlib/1.2"[..])]);
    assert!(meta.head.starts_with(b"HTTP/1.0 200 OK\r\nDate: "));
    assert!(meta.head.ends_with(b"Content-Length: 136\r\n\r\n"));
    assert_eq!(
        &fixture::ROOT_META[meta.head_offset as usize..],
        meta.head,
        "the head runs to the end of the file"
    );
    assert_eq!(meta.status, Some(200));
    assert_eq!(meta.mime.as_deref(), Some(&b"text/html"[..]));
    assert_eq!(meta.redirect, None);
}

#[test]
fn fixture_objects_check_clean_and_give_their_captures() {
    for fixture::Object {
        rel,
        meta,
        data,
        digest,
        mime,
        status,
    } in fixture::OBJECTS
    {
        let meta = parse_meta(meta).unwrap();
        let path = parse_path(rel).unwrap();
        assert!(!path.is_meta);
        assert_eq!(path.md5url, md5(meta.fields.url), "{rel}");
        assert_eq!(path.to_string(), rel);
        let name = rel.rsplit('/').next().unwrap();
        assert_eq!(check(&meta, data, name), [], "{rel}");
        assert_eq!(
            check(&meta, data, &format!("{name}.meta")),
            [],
            "either name"
        );
        assert_eq!(path.check_day(&meta.fields.harvest_time), None, "{rel}");
        let c = crate::capture::object::Object::of_nedlib(&meta, data);
        assert_eq!(c.digest(), digest, "{rel}");
        assert_eq!((c.offset, c.length), (0, data.len() as u64));
        assert_eq!(c.mime.as_deref(), mime.map(str::as_bytes));
        assert_eq!(c.status, Some(status));
        assert_eq!(c.datetime, Some(meta.fields.harvest_time));
        assert_eq!(c.ip, Some(&b"192.0.2.17"[..]));
    }
    let old = parse_meta(fixture::OLD_META).unwrap();
    assert_eq!(old.redirect.as_deref(), Some(&b"http://www.server.at/"[..]));
}

#[test]
fn fixture_access_list_agrees_with_the_meta_files() {
    let entries: Vec<AccessEntry> = parse_access_list(fixture::ACCESS)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(entries.len(), 3);
    for (entry, object) in entries.iter().zip(fixture::OBJECTS) {
        assert_eq!(Some(entry.path), parse_path(object.rel));
        assert_eq!(entry.check(&parse_meta(object.meta).unwrap()), []);
    }
    assert_eq!(entries[0].offset, 0);
    assert_eq!(entries[0].fields.extra.len(), 1);
    assert!(fixture::ACCESS[entries[1].offset as usize..].starts_with(b"Path: 2001-09-22/1/d9"));
}

#[test]
fn harvester_lines_may_end_in_crlf_and_heads_in_lf() {
    let bytes = b"URL: http://a/ \r\nHarvest-Time:20000101000000\r\n\r\nHTTP/1.1 404 Not Found\nContent-Type:  TEXT/HTML ;x=y\n\n";
    let meta = parse_meta(bytes).unwrap();
    assert_eq!(meta.fields.url, b"http://a/");
    assert_eq!(&meta.fields.harvest_time, b"20000101000000");
    assert_eq!(meta.status, Some(404));
    // The media type as the ARC and WARC readers give it: case kept.
    assert_eq!(meta.mime.as_deref(), Some(&b"TEXT/HTML"[..]));
    assert_eq!(meta.head_offset, 48);
}

#[test]
fn field_names_ignore_case_and_unknown_fields_are_kept_in_order() {
    let bytes = meta_of(
        &[
            "url: http://a/",
            "X-B: 2",
            "HARVEST-TIME: 20000101000000",
            "X-A: 1",
            "ip-address:",
        ],
        HEAD,
    );
    let meta = parse_meta(&bytes).unwrap();
    assert_eq!(meta.fields.url, b"http://a/");
    assert_eq!(meta.fields.ip, None, "an empty IP-Address is no IP");
    assert_eq!(
        meta.fields.extra,
        [(&b"X-B"[..], &b"2"[..]), (&b"X-A"[..], &b"1"[..])]
    );
}

#[test]
fn no_head_after_the_fields_is_an_http_0_9_response() {
    for tail in [&b""[..], b"\n", b"\r\n  \n"] {
        let bytes = meta_of(&[URL, TIME], tail);
        let meta = parse_meta(&bytes).unwrap();
        assert_eq!((meta.head, meta.status, meta.mime), (&b""[..], None, None));
    }
}

#[test]
fn folded_content_type_is_read_as_the_other_readers_read_it() {
    let head = b"HTTP/1.0 200 OK\r\nContent-Type: text/\r\n html\r\n\r\n";
    let bytes = meta_of(&[URL, TIME], head);
    let meta = parse_meta(&bytes).unwrap();
    assert_eq!(meta.mime, Some(Cow::Owned(b"text/".to_vec())));
    assert_eq!(meta.head, head);
}

#[test]
fn missing_and_empty_fields() {
    let bytes = meta_of(&[TIME], HEAD);
    assert_eq!(
        err(&bytes),
        Error::MissingField {
            offset: 29,
            name: "URL"
        }
    );
    let bytes = meta_of(&[URL, "IP-Address: 1.2.3.4"], HEAD);
    assert!(matches!(
        err(&bytes),
        Error::MissingField {
            name: "Harvest-Time",
            ..
        }
    ));
    let bytes = meta_of(&["URL:   ", TIME], HEAD);
    assert_eq!(
        err(&bytes),
        Error::EmptyField {
            offset: 0,
            name: "URL"
        }
    );
}

#[test]
fn repeated_known_field() {
    let bytes = meta_of(&[URL, TIME, "url: http://b/"], HEAD);
    assert_eq!(
        err(&bytes),
        Error::RepeatedField {
            offset: 54,
            name: "URL"
        }
    );
}

#[test]
fn bad_field_lines() {
    for line in ["no colon here", " URL: http://a/", "Two words: x", ": x"] {
        let bytes = meta_of(&[URL, line, TIME], HEAD);
        match err(&bytes) {
            Error::BadFieldLine { offset, line: l } => {
                assert_eq!((offset, l.as_str()), (25, line));
            }
            e => panic!("{line:?}: {e}"),
        }
    }
}

#[test]
fn bad_harvest_times() {
    for value in [
        "2000082305410",
        "200008230541001",
        "2000-08-23T05:41:00Z",
        "967009260",
        "",
    ] {
        let time = format!("Harvest-Time: {value}");
        let bytes = meta_of(&[URL, &time], HEAD);
        assert_eq!(
            err(&bytes),
            Error::BadHarvestTime {
                offset: 25,
                value: value.into()
            }
        );
    }
    // Digits only are checked: an impossible date is kept as written.
    let bytes = meta_of(&[URL, "Harvest-Time: 20001399999999"], HEAD);
    assert_eq!(
        &parse_meta(&bytes).unwrap().fields.harvest_time,
        b"20001399999999"
    );
}

#[test]
fn bad_content_length_and_md5() {
    for value in ["-1", "12a", "", "+5", "99999999999999999999999"] {
        let f = format!("Content-Length: {value}");
        let bytes = meta_of(&[URL, TIME, &f], HEAD);
        assert!(
            matches!(err(&bytes), Error::BadContentLength { offset: 54, .. }),
            "{value}"
        );
    }
    let bytes = meta_of(&[URL, TIME, "Content-Length: 007"], HEAD);
    assert_eq!(parse_meta(&bytes).unwrap().fields.content_length, Some(7));
    for value in [
        "d41d8cd98f00b204e9800998ecf8427",
        "d41d8cd98f00b204e9800998ecf8427e0",
        "g41d8cd98f00b204e9800998ecf8427e",
    ] {
        let f = format!("MD5: {value}");
        let bytes = meta_of(&[URL, TIME, &f], HEAD);
        assert!(matches!(err(&bytes), Error::BadMd5 { offset: 54, .. }));
    }
    let bytes = meta_of(&[URL, TIME, "MD5: D41D8CD98F00B204E9800998ECF8427E"], HEAD);
    assert_eq!(
        parse_meta(&bytes).unwrap().fields.md5,
        Some(md5(b"")),
        "upper-case hex"
    );
}

#[test]
fn missing_empty_line() {
    // The file ends after the fields, or inside one.
    for bytes in [
        &b"URL: http://a/\nHarvest-Time: 20000101000000\n"[..],
        b"URL: http://a/\nHarvest-Time: 20000101000000",
        b"URL: http://a/\nHarvest-Ti",
    ] {
        assert_eq!(
            err(bytes),
            Error::MissingEmptyLine {
                offset: bytes.len() as u64
            }
        );
    }
    // The head follows the fields directly.
    let bytes = b"URL: http://a/\nHarvest-Time: 20000101000000\nHTTP/1.0 200 OK\r\n\r\n";
    assert_eq!(err(bytes), Error::MissingEmptyLine { offset: 44 });
    assert_eq!(err(b""), Error::MissingEmptyLine { offset: 0 });
}

#[test]
fn bad_status_lines() {
    for head in [
        &b"HTTP/1.0 OK\r\n\r\n"[..],
        b"HTTP/1.0 2000 OK\r\n\r\n",
        b"ICY 200 OK\r\n\r\n",
        b"HTTP/x 200 OK\r\n\r\n",
        b"HTTP 200 OK\r\n\r\n",
        b"<html>body</html>\n\n",
        b"\x00\xff\n\n",
    ] {
        let bytes = meta_of(&[URL, TIME], head);
        assert!(
            matches!(err(&bytes), Error::BadStatusLine { offset: 55, .. }),
            "{head:?}"
        );
    }
    let bytes = meta_of(&[URL, TIME], b"HTTP/1.1 200\r\n\r\n");
    assert_eq!(parse_meta(&bytes).unwrap().status, Some(200), "no reason");
}

#[test]
fn unterminated_head_and_trailing_bytes() {
    for head in [
        &b"HTTP/1.0 200 OK"[..],
        b"HTTP/1.0 200 OK\r\n",
        b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n",
        b"HTTP/1.0 200 OK\r\nContent-Type: text/ht",
    ] {
        let bytes = meta_of(&[URL, TIME], head);
        assert_eq!(
            err(&bytes),
            Error::UnterminatedHead {
                offset: bytes.len() as u64
            },
            "{head:?}"
        );
    }
    let bytes = meta_of(&[URL, TIME], b"HTTP/1.0 200 OK\r\n\r\n<html>");
    assert_eq!(
        err(&bytes),
        Error::TrailingBytes {
            offset: 74,
            length: 6
        }
    );
    // Blanks after the head are no body.
    let bytes = meta_of(&[URL, TIME], b"HTTP/1.0 200 OK\r\n\r\n\r\n");
    assert_eq!(parse_meta(&bytes).unwrap().head, b"HTTP/1.0 200 OK\r\n\r\n");
}

#[test]
fn errors_say_where_and_what() {
    let e = err(&meta_of(&[URL, "Harvest-Time: 1999"], HEAD));
    assert_eq!(e.offset(), 25);
    let text = e.to_string();
    assert!(
        text.starts_with("offset 25: Harvest-Time \"1999\""),
        "{text}"
    );
    // A line shown in a message is cut, however long it is.
    let long = format!("{}\n\n", "x".repeat(10_000));
    let text = err(long.as_bytes()).to_string();
    assert!(text.len() < 300, "{text}");
}

#[test]
fn check_reports_each_mismatch() {
    let data = b"hello";
    let url = "http://example.com/";
    let name = md5_hex(&md5(url.as_bytes()));
    let good = format!("MD5: {}", md5_hex(&md5(data)));
    let bytes = meta_of(&[URL, TIME, "Content-Length: 5", &good], HEAD);
    let meta = parse_meta(&bytes).unwrap();
    assert_eq!(check(&meta, data, &name), []);
    assert_eq!(check(&meta, data, &name.to_uppercase()), [], "hex case");

    let found = check(&meta, b"hellO", "0aca879afd45103783c3990636c860ac");
    assert_eq!(
        found,
        [
            Mismatch::UrlMd5 {
                name: "0aca879afd45103783c3990636c860ac".into(),
                url: url.into(),
                url_md5: name.clone(),
            },
            Mismatch::DataMd5 {
                declared: md5_hex(&md5(data)),
                actual: md5_hex(&md5(b"hellO")),
            },
        ]
    );
    let found = check(&meta, b"hell", &name);
    assert!(found.contains(&Mismatch::DataLength {
        declared: 5,
        actual: 4
    }));
    assert_eq!(found.len(), 2, "a cut file fails its MD5 too");
    assert!(found[1].to_string().contains("holds 4 bytes"));
    // Without MD5 and Content-Length only the name is checked.
    let bytes = meta_of(&[URL, TIME], HEAD);
    let bare = parse_meta(&bytes).unwrap();
    assert_eq!(check(&bare, b"anything", &name), []);
    assert_eq!(check(&bare, b"", "not-a-name").len(), 1);
}

#[test]
fn day_directory_against_harvest_time() {
    let p = parse_path("2000-08-23/1/d41d8cd98f00b204e9800998ecf8427e").unwrap();
    for near in ["20000822000000", "20000823235959", "20000824235959"] {
        let t: [u8; 14] = near.as_bytes().try_into().unwrap();
        assert_eq!(p.check_day(&t), None, "{near}");
    }
    for far in ["20000821235959", "20000825000000", "19990823000000"] {
        let t: [u8; 14] = far.as_bytes().try_into().unwrap();
        assert_eq!(
            p.check_day(&t),
            Some(Mismatch::Day {
                day: "2000-08-23".into(),
                harvest_time: far.into()
            }),
            "{far}"
        );
    }
    // Across a month and a year end.
    let p = parse_path("2001-01-01/9/d41d8cd98f00b204e9800998ecf8427e").unwrap();
    assert_eq!(p.check_day(b"20001231230000"), None);
}

#[test]
fn tree_paths() {
    let md5 = "0aca879afd45103783c3990636c860ac";
    let rel = format!("harvests/nl/1999-10-05/0017/{md5}.meta");
    let p = parse_path(&rel).unwrap();
    assert_eq!((p.day, p.number, p.is_meta), ("1999-10-05", 17, true));
    assert_eq!(md5_hex(&p.md5url), md5);
    assert_eq!(p.to_string(), format!("1999-10-05/17/{md5}.meta"));
    let rel = format!("1999-10-05/1/{}", md5.to_uppercase());
    let upper = parse_path(&rel).unwrap();
    assert_eq!(upper.md5url, p.md5url);
    for bad in [
        format!("1999-10-05/{md5}"),
        format!("1999-13-05/1/{md5}"),
        format!("1999-10-00/1/{md5}"),
        format!("99-10-05/1/{md5}"),
        format!("1999-10-05/x1/{md5}"),
        format!("1999-10-05/-1/{md5}"),
        format!("1999-10-05/1/{md5}.data"),
        format!("1999-10-05/1/{md5}x"),
        format!("1999-10-05/1/{}", &md5[1..]),
        format!("1999-10-05/../{md5}"),
        "access1.data".into(),
        String::new(),
    ] {
        assert_eq!(parse_path(&bad), None, "{bad}");
    }
    assert!(is_day_dir("2001-09-22") && !is_day_dir("2001-9-22"));
    assert_eq!(number_dir("000"), Some(0));
    assert_eq!(number_dir("1e3"), None);
    assert_eq!(number_dir("99999999999999999999999"), None);
    assert_eq!(access_list_number("access12.data"), Some(12));
    for bad in ["access.data", "accessX.data", "access1.dat", "Access1.data"] {
        assert_eq!(access_list_number(bad), None, "{bad}");
    }
    assert_eq!(object_name(md5).map(|(_, m)| m), Some(false));
    assert_eq!(
        object_name(&format!("{md5}.meta")).map(|(_, m)| m),
        Some(true)
    );
}

#[test]
fn pairing_finds_pairs_orphans_and_strangers() {
    let a = "0aca879afd45103783c3990636c860ac";
    let b = "1d41d8cd98f00b204e9800998ecf8427";
    let c = "ffffffffffffffffffffffffffffffff";
    let names = [
        format!("{c}.meta"),
        "Thumbs.db".into(),
        a.to_string(),
        format!("{b}.meta"),
        format!("{a}.meta"),
        c.to_string(),
        format!("{a}.meta"),
        "x.meta".into(),
        "z".into(),
        format!("{b}0"),
    ];
    let p = pair(&names);
    let ameta = format!("{a}.meta");
    let cmeta = format!("{c}.meta");
    let bmeta = format!("{b}.meta");
    assert_eq!(
        p.pairs,
        [
            Pair {
                data: a,
                meta: &ameta
            },
            Pair {
                data: c,
                meta: &cmeta
            }
        ]
    );
    assert_eq!(
        p.orphans,
        [Orphan {
            name: &bmeta,
            kind: OrphanKind::MetaWithoutData
        }]
    );
    assert_eq!(p.others, [&format!("{b}0"), "Thumbs.db", "x.meta", "z"]);
    assert!(p.orphans[0]
        .to_string()
        .contains(".meta file without its data file"));
    let names = [a];
    let lone = pair(&names);
    assert_eq!(
        lone.orphans,
        [Orphan {
            name: a,
            kind: OrphanKind::DataWithoutMeta
        }]
    );
    assert_eq!(pair::<&str>(&[]), Pairing::default());
}

#[test]
fn access_list_goes_on_after_a_bad_entry() {
    let md5 = "0aca879afd45103783c3990636c860ac";
    let list = format!(
        "\n\nPath: 1999-10-05/1/{md5}\n{URL}\n{TIME}\n\n\
         URL: http://b/\n{TIME}\n\n\
         Path: 1999-10-05/1/{md5}.meta\n{URL}\n{TIME}\n\n\
         Path: 1999-10-05/2/{md5}\n{URL}\nHarvest-Time: x\nIP-Address: 1\n\n\
         Path: 1999-10-06/3/{md5}\r\n{URL}\r\n{TIME}"
    );
    let got: Vec<_> = parse_access_list(list.as_bytes()).collect();
    assert_eq!(got.len(), 5, "{got:?}");
    let first = got[0].as_ref().unwrap();
    assert_eq!((first.offset, first.path.number), (2, 1));
    assert!(matches!(
        got[1],
        Err(Error::MissingPath { offset: 109, .. })
    ));
    assert!(matches!(got[2], Err(Error::BadPath { .. })), "a .meta path");
    assert!(matches!(got[3], Err(Error::BadHarvestTime { .. })));
    // The last entry may end with the file, and in CRLF.
    let last = got[4].as_ref().unwrap();
    assert_eq!(
        (last.path.day, last.fields.url),
        ("1999-10-06", &b"http://example.com/"[..])
    );
    assert_eq!(parse_access_list(b"").count(), 0);
    assert_eq!(parse_access_list(b"\n \n\t\n").count(), 0);
}

#[test]
fn access_entry_check_names_each_differing_field() {
    let list = b"Path: 2000-08-23/1/d41d8cd98f00b204e9800998ecf8427e\n\
                 URL: http://example.com/\nHarvest-Time: 20000823054100\nIP-Address: 1.2.3.4\n\
                 Content-Length: 5\n\n";
    let entry = parse_access_list(list).next().unwrap().unwrap();
    let bytes = meta_of(
        &[
            URL,
            "Harvest-Time: 20000823054101",
            "Content-Length: 5",
            "X: y",
        ],
        HEAD,
    );
    let meta = parse_meta(&bytes).unwrap();
    assert_eq!(
        entry.check(&meta),
        [
            Mismatch::Listed {
                field: "Harvest-Time",
                listed: "20000823054100".into(),
                found: "20000823054101".into()
            },
            Mismatch::Listed {
                field: "IP-Address",
                listed: "1.2.3.4".into(),
                found: "(none)".into()
            },
        ]
    );
    // Long URLs differing late are still told apart.
    let long = "a".repeat(300);
    let l =
        format!("Path: 2000-08-23/1/d41d8cd98f00b204e9800998ecf8427e\nURL: {long}1\n{TIME}\n\n");
    let m = meta_of(&[&format!("URL: {long}2"), TIME], HEAD);
    let entry = parse_access_list(l.as_bytes()).next().unwrap().unwrap();
    assert_eq!(entry.check(&parse_meta(&m).unwrap()).len(), 1);
}

#[test]
fn sniffing_by_content() {
    assert!(looks_like_meta(fixture::ROOT_META));
    assert!(looks_like_meta(fixture::OLD_META));
    assert!(!looks_like_meta(fixture::ROOT_DATA));
    assert!(!looks_like_meta(fixture::GIF_DATA));
    assert!(
        !looks_like_meta(fixture::ACCESS),
        "an access list opens with Path"
    );
    assert!(looks_like_access_list(fixture::ACCESS));
    assert!(!looks_like_access_list(fixture::ROOT_META));
    // A prefix cut anywhere still sniffs as a .meta file once the first
    // field's name is whole.
    for n in 4..fixture::ROOT_META.len() {
        assert!(looks_like_meta(&fixture::ROOT_META[..n]), "{n}");
    }
    for not_meta in [
        &b""[..],
        b"URL",
        b"WARC/1.0\r\nWARC-Type: response\r\n",
        b"filedesc://x.arc 0.0.0.0 20040101000000 text/plain 3\n",
        b"http://www.server.at/ 192.0.2.17 20010922191733 text/html 136\n",
        b"MIME-version: 1.0\nContent-type: multipart/mixed; boundary=x\n",
        b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        b"Content-Length: 5\n\nhello",
        b"URL: http://a/\nthis is text\n",
    ] {
        assert!(!looks_like_meta(not_meta), "{not_meta:?}");
        assert!(!looks_like_access_list(not_meta), "{not_meta:?}");
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    /// A field value: printable ASCII without line ends, blanks not at
    /// its ends (they are trimmed).
    fn value() -> impl Strategy<Value = String> {
        "[!-~]([ -~]{0,30}[!-~])?"
    }

    fn head() -> impl Strategy<Value = Vec<u8>> {
        (
            100u16..600,
            proptest::option::of("[a-z]{1,8}/[a-z0-9.+-]{1,12}"),
            proptest::option::of(value()),
            any::<bool>(),
        )
            .prop_map(|(status, mime, location, crlf)| {
                let eol = if crlf { "\r\n" } else { "\n" };
                let mut h = format!("HTTP/1.1 {status} Whatever{eol}");
                if let Some(m) = mime {
                    h += &format!("Content-Type: {m}; charset=x{eol}");
                }
                if let Some(l) = location {
                    h += &format!("Location: {l}{eol}");
                }
                h += eol;
                h.into_bytes()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Arbitrary bytes: no panic anywhere, and what parses lies
        /// within the bytes.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(meta) = parse_meta(&bytes) {
                let start = meta.head_offset as usize;
                prop_assert_eq!(&bytes[start..start + meta.head.len()], meta.head);
                let _ = check(&meta, &bytes, "x");
                let _ = crate::capture::object::Object::of_nedlib(&meta, &bytes).digest();
            }
            let _ = looks_like_meta(&bytes);
            let _ = looks_like_access_list(&bytes);
            let mut n = 0;
            for entry in parse_access_list(&bytes) {
                n += 1;
                prop_assert!(n <= bytes.len(), "the list makes progress");
                if let Err(e) = entry {
                    prop_assert!(e.offset() <= bytes.len() as u64);
                    let _ = e.to_string();
                }
            }
        }

        /// Bytes shaped like a .meta file, then changed here and there.
        #[test]
        fn mutated_meta_never_panics(
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut bytes = fixture::ROOT_META.to_vec();
            for (i, b) in edits {
                let i = i.index(bytes.len());
                bytes[i] = b;
            }
            let cut = cut.index(bytes.len() + 1);
            for b in [&bytes[..], &bytes[..cut]] {
                if let Ok(meta) = parse_meta(b) {
                    let _ = check(&meta, fixture::ROOT_DATA, "c8b6fe0f4078df975a08f72485ca32e2");
                }
                let _ = looks_like_meta(b);
                let list = [fixture::ACCESS, b].concat();
                prop_assert!(parse_access_list(&list).count() <= list.len());
            }
        }

        /// Paths and listings of any names: no panic, and every name of a
        /// listing lands in exactly one place.
        #[test]
        fn any_names_never_panic(names in proptest::collection::vec("[0-9a-f./x-]{0,40}", 0..12)) {
            for n in &names {
                let _ = parse_path(n);
                let _ = access_list_number(n);
                let _ = is_day_dir(n);
            }
            let p = pair(&names);
            let mut distinct: Vec<&str> = names.iter().map(String::as_str).collect();
            distinct.sort_unstable();
            distinct.dedup();
            let placed = 2 * p.pairs.len() + p.orphans.len() + p.others.len();
            prop_assert_eq!(placed, distinct.len());
        }

        /// Written fields and heads read back as written: the parser
        /// against the form it reads.
        #[test]
        fn written_meta_reads_back(
            url in value(), time in "[0-9]{14}", ip in proptest::option::of(value()),
            length in proptest::option::of(any::<u64>()), md5 in proptest::option::of(any::<[u8; 16]>()),
            head in head(), crlf in any::<bool>(),
        ) {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut text = format!("URL: {url}{eol}Harvest-Time: {time}{eol}");
            if let Some(ip) = &ip { text += &format!("IP-Address: {ip}{eol}"); }
            if let Some(n) = length { text += &format!("Content-Length: {n}{eol}"); }
            if let Some(m) = &md5 { text += &format!("MD5: {}{eol}", md5_hex(m)); }
            text += eol;
            let mut bytes = text.into_bytes();
            bytes.extend_from_slice(&head);
            let meta = parse_meta(&bytes).unwrap();
            prop_assert_eq!(meta.fields.url, url.as_bytes());
            prop_assert_eq!(&meta.fields.harvest_time[..], time.as_bytes());
            prop_assert_eq!(meta.fields.ip, ip.as_deref().map(str::as_bytes));
            prop_assert_eq!(meta.fields.content_length, length);
            prop_assert_eq!(meta.fields.md5, md5);
            prop_assert_eq!(meta.head, &head[..]);
            let h = crate::http::Head::parse(&head).unwrap();
            prop_assert_eq!(meta.status, h.status_code());
            prop_assert_eq!(meta.mime, h.mime_cow());
            prop_assert!(looks_like_meta(&bytes));
        }
    }
}
