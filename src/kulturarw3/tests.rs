use proptest::prelude::*;

use super::*;

/// The format description's example object, byte for byte
/// (`tests/data/kulturarw3/README.md`).
const SEED_EXAMPLE: &[u8] = include_bytes!("../../tests/data/kulturarw3/seed004-example.k3");

/// An object as a writer following the format's example makes it; the
/// fields are public so that a test can break one thing at a time.
#[derive(Clone)]
struct Build {
    url: String,
    time: String,
    md5: Option<String>,
    boundary: String,
    header_info: Option<Vec<u8>>,
    content: Vec<u8>,
    content_type: String,
    eol: &'static str,
    /// The archive fields in an Archive-Info part, not the main header.
    three_parts: bool,
    close: bool,
}

impl Build {
    fn new(url: &str, content: &[u8]) -> Build {
        let md5 = hex(&Md5::digest(content));
        Build {
            url: url.to_string(),
            time: "875721538".to_string(),
            boundary: format!("KulturArw3_{md5}"),
            md5: Some(md5),
            header_info: Some(b"HTTP/1.0 200 OK\nContent-Type: text/html\n".to_vec()),
            content: content.to_vec(),
            content_type: "text/html".to_string(),
            eol: "\n",
            three_parts: false,
            close: true,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let e = self.eol;
        let b = &self.boundary;
        let mut archive = format!(
            "HTTP-www-archiver: KulturArw3{e}HTTP-archiver-version: 0.01{e}HTTP-URL: {}{e}",
            self.url
        );
        if let Some(m) = &self.md5 {
            archive += &format!("HTTP-Content-MD5: {m}{e}");
        }
        archive += &format!(
            "HTTP-archive-time: {}{e}HTTP-IP-addr: 193.10.12.150{e}",
            self.time
        );
        let mut out = format!("MIME-version: 1.0{e}Content-Type: multipart/mixed; boundary={b}{e}");
        if self.three_parts {
            out += &format!(
                "{e}--{b}{e}Content-Type: text/plain{e}HTTP-part: Archive-Info{e}{e}{archive}"
            );
        } else {
            out += &format!("HTTP-part: Archive-Info{e}{archive}");
        }
        out += e;
        let mut out = out.into_bytes();
        if let Some(h) = &self.header_info {
            let head = format!(
                "--{b}{e}Content-Type: text/plain; charset=\"US-ascii\"{e}HTTP-part: Header-Info{e}{e}"
            );
            out.extend_from_slice(head.as_bytes());
            out.extend_from_slice(h);
            out.extend_from_slice(e.as_bytes());
        }
        let head = format!(
            "--{b}{e}Content-Type: {}{e}HTTP-part: Content{e}{e}",
            self.content_type
        );
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(&self.content);
        if self.close {
            out.extend_from_slice(format!("{e}--{b}--{e}").as_bytes());
        } else {
            out.extend_from_slice(e.as_bytes());
        }
        out
    }
}

/// Every item of a reader, objects as (offset, length, url, content) and
/// errors as themselves, in order.
#[derive(Debug, PartialEq)]
enum Item {
    Obj(u64, u64, String, Vec<u8>),
    Err(Error),
}

fn read(data: &[u8]) -> Vec<Item> {
    objects(data)
        .map(|r| match r {
            Ok(o) => Item::Obj(
                o.offset,
                o.length,
                String::from_utf8_lossy(o.url).into_owned(),
                o.content.to_vec(),
            ),
            Err(e) => Item::Err(e),
        })
        .collect()
}

fn obj(offset: usize, length: usize, url: &str, content: &[u8]) -> Item {
    Item::Obj(
        offset as u64,
        length as u64,
        url.to_string(),
        content.to_vec(),
    )
}

#[test]
fn the_seed_example_parses_with_its_fields() {
    let mut rdr = objects(SEED_EXAMPLE);
    let o = rdr.next().unwrap().unwrap();
    assert_eq!((o.offset, o.length), (0, SEED_EXAMPLE.len() as u64));
    assert_eq!(o.url, b"http://www.kb.se/ls/fjarr.htm");
    assert_eq!(o.archive_time, Some(875_721_538));
    assert_eq!(&o.datetime.unwrap(), b"19971001155858");
    assert_eq!(o.ip, Some(&b"193.10.12.150"[..]));
    assert_eq!(o.archiver, Some(&b"KulturArw3"[..]));
    assert_eq!(o.boundary, b"KulturArw3_33c6bfbd6f8365a72f333487e7557b58");
    assert_eq!(
        o.content_md5,
        Some(&b"33c6bfbd6f8365a72f333487e7557b58"[..])
    );
    assert_eq!(o.mime, Some(&b"text/html"[..]));
    // libwww-era Header-Info: header fields, no status line.
    assert_eq!(o.status, None);
    let info = o.header_info.unwrap();
    assert!(info.starts_with(b"Date: Wed, 01 Oct 1997 16:03:56 GMT\n"));
    assert!(info.ends_with(b"[Netscape]\n"));
    assert!(o.content.starts_with(b"<!DOCTYPE HTML PUBLIC"));
    // The empty line before the closing delimiter is the content's last
    // line break; the one right before the delimiter is the delimiter's.
    assert!(o.content.ends_with(b"</BODY>\n</HTML>\n"));
    assert_eq!(o.content.len(), 606);
    assert_eq!(&o.sha1_base32(), b"PEJEIQRP2MV7UBJ5OKHRZ2P2LHLVE73X");
    assert!(o.main_header.starts_with(b"MIME-version: 1.0\n"));
    assert!(o.main_header.ends_with(b"HTTP-IP-addr: 193.10.12.150\n"));
    assert_eq!(o.archive_info, o.main_header);
    // The example's body is abridged (`...... etc .....`), so the declared
    // MD5 cannot match: reported after the object, which is kept.
    assert_eq!(o.md5_ok(), Some(false));
    let Some(Err(Error::Md5Mismatch {
        offset: 0,
        declared,
        computed,
    })) = rdr.next()
    else {
        panic!("expected an MD5 mismatch");
    };
    assert_eq!(declared, "33c6bfbd6f8365a72f333487e7557b58");
    assert_eq!(computed, "039bdb0f581ad251f38430a934c0df3b");
    assert!(rdr.next().is_none());
    assert!(looks_like_object(SEED_EXAMPLE));
}

#[test]
fn the_seed_example_with_plain_spaces_reads_the_same() {
    // The seed text has no-break spaces in the Content-Type line.
    let plain: Vec<u8> = String::from_utf8(SEED_EXAMPLE.to_vec())
        .unwrap()
        .replace('\u{a0}', " ")
        .into_bytes();
    assert_ne!(plain, SEED_EXAMPLE);
    let a = objects(SEED_EXAMPLE).next().unwrap().unwrap();
    let b = objects(&plain).next().unwrap().unwrap();
    assert_eq!(
        (a.url, a.content, a.boundary),
        (b.url, b.content, b.boundary)
    );
    assert_eq!(b.length as usize, plain.len());
}

#[test]
fn concatenated_objects_each_have_their_offset_and_length() {
    let a = Build::new("http://a.se/", b"first\n").bytes();
    let b = Build::new("http://a.se/b", b"second").bytes();
    let c = Build::new("http://a.se/c", b"").bytes();
    // Glued, then an empty line between, then trailing blank lines.
    let mut data = a.clone();
    data.extend_from_slice(&b);
    data.extend_from_slice(b"\n");
    data.extend_from_slice(&c);
    data.extend_from_slice(b"\n\n");
    let (ob, oc) = (a.len(), a.len() + b.len() + 1);
    assert_eq!(
        read(&data),
        [
            obj(0, a.len(), "http://a.se/", b"first\n"),
            obj(ob, b.len(), "http://a.se/b", b"second"),
            obj(oc, c.len(), "http://a.se/c", b""),
        ]
    );
    // The same content twice gives the same boundary: still two objects.
    let mut twice = a.clone();
    twice.extend_from_slice(&a);
    assert_eq!(read(&twice).len(), 2);
}

#[test]
fn content_that_looks_like_delimiters_stays_content() {
    let mut b = Build::new("http://a.se/", b"");
    b.boundary = "KulturArw3_x".to_string();
    b.md5 = None;
    b.content = b"--KulturArw3_xy\n--KulturArw3_x--more\n a --KulturArw3_x\r\n\
                  --KulturArw3_00\nMIME-version: 1.0\n\n--KulturArw3_x-"
        .to_vec();
    let data = b.bytes();
    assert_eq!(
        read(&data),
        [obj(0, data.len(), "http://a.se/", &b.content)]
    );
}

#[test]
fn binary_and_crlf_content_keep_every_byte() {
    // In an LF object a CR before the delimiter's LF is content.
    let content: Vec<u8> = (0..=255u8).chain(*b"\r\n\r\n\r").collect();
    let b = Build::new("http://a.se/bin", &content);
    let data = b.bytes();
    let o = objects(&data).next().unwrap().unwrap();
    assert_eq!(o.content, &content[..]);
    assert_eq!(o.md5_ok(), Some(true));
    // In a CRLF object the CRLF before a delimiter is the delimiter's.
    let mut c = Build::new("http://a.se/crlf", b"line\r\nline\r\n");
    c.eol = "\r\n";
    c.header_info =
        Some(b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=x\r\n".to_vec());
    let data = c.bytes();
    let items: Vec<_> = objects(&data).collect();
    assert_eq!(items.len(), 1, "{items:?}");
    let o = items[0].as_ref().unwrap();
    assert_eq!(o.content, b"line\r\nline\r\n");
    assert_eq!((o.status, o.mime), (Some(404), Some(&b"text/plain"[..])));
    assert_eq!(o.length as usize, data.len());
}

#[test]
fn an_archive_info_part_holds_the_fields_in_the_three_part_layout() {
    let mut b = Build::new("http://a.se/3", b"x");
    b.three_parts = true;
    let data = b.bytes();
    let items: Vec<_> = objects(&data).collect();
    assert_eq!(items.len(), 1, "{items:?}");
    let o = items[0].as_ref().unwrap();
    assert_eq!(o.url, b"http://a.se/3");
    assert_eq!(o.archive_time, Some(875_721_538));
    assert!(o
        .archive_info
        .starts_with(b"Content-Type: text/plain\nHTTP-part: Archive-Info\n\n"));
    assert_eq!(o.md5_ok(), Some(true));
}

#[test]
fn mime_falls_back_to_the_content_part_and_status_needs_a_status_line() {
    let mut b = Build::new("http://a.se/", b"GIF89a");
    b.header_info = Some(b"Server: CERN/3.0\nMIME-version: 1.0\n".to_vec());
    b.content_type = "image/gif".to_string();
    let data = b.bytes();
    let o = objects(&data).next().unwrap().unwrap();
    assert_eq!((o.status, o.mime), (None, Some(&b"image/gif"[..])));
    assert_eq!(o.content, b"GIF89a");
}

#[test]
fn a_main_header_without_its_empty_line_ends_at_the_first_delimiter() {
    let data = Build::new("http://a.se/", b"x").bytes();
    let text = String::from_utf8(data).unwrap();
    let data = text.replacen("150\n\n--", "150\n--", 1).into_bytes();
    let o = objects(&data).next().unwrap().unwrap();
    assert_eq!((o.content, o.length as usize), (&b"x"[..], data.len()));
}

#[test]
fn truncation_at_the_end_loses_only_the_last_object() {
    let a = Build::new("http://a.se/1", b"one").bytes();
    let b = Build::new("http://a.se/2", b"two two two").bytes();
    for cut in [20, b.len() / 2, b.len() - 9, b.len() - 3] {
        let mut data = a.clone();
        data.extend_from_slice(&b[..cut]);
        assert_eq!(
            read(&data),
            [
                obj(0, a.len(), "http://a.se/1", b"one"),
                Item::Err(Error::Truncated {
                    offset: a.len() as u64,
                    length: cut as u64
                }),
            ],
            "cut at {cut}"
        );
    }
    // Without the last LF the closing delimiter is still whole.
    assert_eq!(read(&b[..b.len() - 1]).len(), 1);
}

#[test]
fn a_missing_closing_delimiter_loses_that_object_and_keeps_the_next() {
    let mut a = Build::new("http://a.se/1", b"one");
    a.close = false;
    let a = a.bytes();
    let b = Build::new("http://a.se/2", b"two").bytes();
    let mut data = a.clone();
    data.extend_from_slice(&b);
    let want = [
        Item::Err(Error::MissingCloseDelimiter {
            offset: 0,
            length: a.len() as u64,
        }),
        obj(a.len(), b.len(), "http://a.se/2", b"two"),
    ];
    assert_eq!(read(&data), want);
    // The same boundary in the next object does not make them one.
    let mut same = Build::new("http://a.se/1", b"two");
    same.close = false;
    let same = same.bytes();
    let mut data = same.clone();
    data.extend_from_slice(&b);
    assert_eq!(
        read(&data)[1],
        obj(same.len(), b.len(), "http://a.se/2", b"two")
    );
    // Cut in the middle of its content, then the next object on a new line.
    let whole = Build::new("http://a.se/1", b"one one one").bytes();
    let cut = whole.len() - 15;
    let mut data = whole[..cut].to_vec();
    data.push(b'\n');
    data.extend_from_slice(&b);
    let want = [
        Item::Err(Error::MissingCloseDelimiter {
            offset: 0,
            length: cut as u64 + 1,
        }),
        obj(cut + 1, b.len(), "http://a.se/2", b"two"),
    ];
    assert_eq!(read(&data), want);
}

#[test]
fn field_damage_follows_the_kept_object() {
    let good = Build::new("http://a.se/next", b"n").bytes();
    let with_next = |first: Vec<u8>| {
        let n = first.len();
        let mut data = first;
        data.extend_from_slice(&good);
        (data, n)
    };

    let mut b = Build::new("http://a.se/1", b"content");
    b.md5 = Some("0123456789abcdef0123456789abcdef".to_string());
    let (data, n) = with_next(b.bytes());
    let items = read(&data);
    assert_eq!(items.len(), 3, "{items:?}");
    assert_eq!(items[0], obj(0, n, "http://a.se/1", b"content"));
    assert!(
        matches!(&items[1], Item::Err(e @ Error::Md5Mismatch { offset: 0, .. }) if e.keeps_object())
    );
    assert_eq!(items[2], obj(n, good.len(), "http://a.se/next", b"n"));

    for time in ["", "-5", "87572153x", "999999999999999"] {
        let mut b = Build::new("http://a.se/1", b"c");
        b.time = time.to_string();
        let (data, n) = with_next(b.bytes());
        let mut rdr = objects(&data);
        let o = rdr.next().unwrap().unwrap();
        assert_eq!(
            (o.archive_time, o.datetime, o.length as usize),
            (None, None, n)
        );
        let e = rdr.next().unwrap().unwrap_err();
        assert_eq!(
            e,
            Error::BadArchiveTime {
                offset: 0,
                value: time.to_string()
            }
        );
        assert!(rdr.next().unwrap().is_ok());
    }

    let mut b = Build::new("http://a.se/1", b"c");
    b.header_info = None;
    let (data, _) = with_next(b.bytes());
    let items = read(&data);
    assert_eq!(
        items[1],
        Item::Err(Error::MissingPart {
            offset: 0,
            part: Part::HeaderInfo
        })
    );
    assert_eq!(items.len(), 3);

    let mut b = Build::new("http://a.se/1", b"c");
    b.md5 = Some("not an md5".to_string());
    let (data, _) = with_next(b.bytes());
    assert!(matches!(
        read(&data)[1],
        Item::Err(Error::BadContentMd5 { offset: 0, .. })
    ));

    // Base64, as HTTP writes Content-MD5.
    let mut b = Build::new("http://a.se/1", b"c");
    b.md5 = Some(BASE64.encode(&Md5::digest(b"c")));
    let data = b.bytes();
    assert_eq!(objects(&data).next().unwrap().unwrap().md5_ok(), Some(true));
    assert_eq!(read(&data).len(), 1);
}

#[test]
fn frame_damage_loses_the_object_and_keeps_the_next() {
    let good = Build::new("http://a.se/next", b"n").bytes();
    let check = |first: Vec<u8>, want: fn(&Error) -> bool| {
        let n = first.len();
        let mut data = first;
        data.extend_from_slice(&good);
        let items = read(&data);
        assert_eq!(items.len(), 2, "{items:?}");
        let Item::Err(e) = &items[0] else {
            panic!("{items:?}")
        };
        assert!(want(e) && e.offset() == 0 && !e.keeps_object(), "{e}");
        assert_eq!(items[1], obj(n, good.len(), "http://a.se/next", b"n"));
    };
    let mut b = Build::new("", b"c");
    b.url = String::new();
    check(b.bytes(), |e| {
        matches!(
            e,
            Error::MissingField {
                field: "HTTP-URL",
                ..
            }
        )
    });

    let text = String::from_utf8(Build::new("http://a.se/1", b"c").bytes()).unwrap();
    let data = text.replace("HTTP-part: Content", "HTTP-part: x-renamed");
    check(data.into_bytes(), |e| {
        matches!(
            e,
            Error::MissingPart {
                part: Part::Content,
                ..
            }
        )
    });

    let text = String::from_utf8(Build::new("http://a.se/1", b"c").bytes()).unwrap();
    let data = text.replace("; boundary=", "; charset=");
    check(data.into_bytes(), |e| matches!(e, Error::BadHeader { .. }));
}

#[test]
fn junk_between_objects_is_skipped_once() {
    let a = Build::new("http://a.se/1", b"one").bytes();
    let mut data = b"\n\njunk line\nMIME-version: 1.0\nno header\n\n".to_vec();
    let junk = data.len();
    data.extend_from_slice(&a);
    data.extend_from_slice(b"trailing junk");
    let items = read(&data);
    assert_eq!(
        items,
        [
            Item::Err(Error::Garbage {
                offset: 2,
                length: junk as u64 - 2
            }),
            obj(junk, a.len(), "http://a.se/1", b"one"),
            Item::Err(Error::Garbage {
                offset: (junk + a.len()) as u64,
                length: 13
            }),
        ]
    );
}

#[test]
fn sniffing() {
    let a = Build::new("http://a.se/1", b"one").bytes();
    assert!(looks_like_object(&a));
    let mut lead = b"\r\n \n".to_vec();
    lead.extend_from_slice(&a[..200]);
    assert!(looks_like_object(&lead));
    assert!(!looks_like_object(b""));
    assert!(!looks_like_object(
        b"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=x\nFrom: a@b\n\n"
    ));
    assert!(!looks_like_object(b"WARC/1.0\r\n"));
    assert!(!looks_like_object(
        b"MIME-version: 1.0\nContent-Type: text/html\nHTTP-URL: x\n\n"
    ));
}

#[test]
fn tree_path_checks() {
    let url = "http://www.server.at/x.html";
    let mut b = Build::new(url, b"x");
    b.time = "1001186253".to_string();
    let data = b.bytes();
    let o = objects(&data).next().unwrap().unwrap();
    let host_md5 = hex(&Md5::digest(b"www.server.at"));
    let url_md5 = hex(&Md5::digest(url.as_bytes()));
    let good = format!(
        "archive/{}/www.server.at/002/{url_md5}.1001186253",
        &host_md5[..2]
    );
    let p = parse_tree_path(good.as_bytes()).unwrap();
    assert_eq!(check_path(&p, &o), []);
    // Upper-case host directory and hex digits agree too.
    let upper = format!(
        "{}/WWW.server.at/002/{}.1001186253",
        &host_md5[..2].to_uppercase(),
        url_md5.to_uppercase()
    );
    assert_eq!(
        check_path(&parse_tree_path(upper.as_bytes()).unwrap(), &o),
        []
    );

    let bad = format!("archive/zz/www.other.at/002/{}.1001186254", "0".repeat(32));
    assert_eq!(parse_tree_path(bad.as_bytes()), None, "zz is not hex");
    let bad = format!("archive/00/www.other.at/002/{}.1001186254", "0".repeat(32));
    let p = parse_tree_path(bad.as_bytes()).unwrap();
    let fields: Vec<PathField> = check_path(&p, &o)
        .into_iter()
        .map(|e| match e {
            Error::PathMismatch {
                field, offset: 0, ..
            } => field,
            e => panic!("{e}"),
        })
        .collect();
    let other_md5 = hex(&Md5::digest(b"www.other.at"));
    let mut want = vec![PathField::Host, PathField::Md5Url, PathField::Epoch];
    if &other_md5[..2] != "00" {
        want.insert(0, PathField::Xx);
    }
    assert_eq!(fields, want);
    // A later object of a concatenated file is not checked against the name.
    let later = Object {
        offset: 10,
        ..o.clone()
    };
    assert_eq!(check_path(&p, &later).len(), want.len() - 2);
}

#[test]
fn reader_without_md5_check() {
    let mut b = Build::new("http://a.se/1", b"content");
    b.md5 = Some("0123456789abcdef0123456789abcdef".to_string());
    let data = b.bytes();
    let items: Vec<_> = objects(&data).verify_md5(false).collect();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].as_ref().unwrap().md5_ok(), Some(false));
}

/// Bytes rich in what the parser looks at: delimiter dashes, the boundary's
/// letters, line ends, colons and the object-start words.
fn tricky_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    let atom = prop_oneof![
        Just(b"-".to_vec()),
        Just(b"--".to_vec()),
        Just(b"B".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b" ".to_vec()),
        Just(b":".to_vec()),
        Just(b"MIME-version: 1.0\n".to_vec()),
        Just(b"HTTP-URL: u\n".to_vec()),
        Just(b"Content-Type: multipart/mixed; boundary=B\n".to_vec()),
        any::<u8>().prop_map(|b| vec![b]),
    ];
    prop::collection::vec(atom, 0..max).prop_map(|v| v.concat())
}

/// Whether `content` holds a line that is a delimiter of boundary `B`,
/// by a plain line-by-line reading (the oracle for the finder).
fn has_delimiter_line(content: &[u8]) -> bool {
    content.split(|&b| b == b'\n').any(|line| {
        let Some(rest) = line.strip_prefix(b"--B") else {
            return false;
        };
        let rest = rest.strip_prefix(b"--").unwrap_or(rest);
        let rest = rest.strip_suffix(b"\r").unwrap_or(rest);
        rest.iter().all(|&b| b == b' ' || b == b'\t')
    })
}

proptest! {
    #[test]
    fn any_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..2048)) {
        let items: Vec<_> = objects(&data).collect();
        prop_assert!(items.len() <= data.len() + 1);
        let _ = looks_like_object(&data);
    }

    #[test]
    fn tricky_bytes_never_panic_and_objects_stay_in_bounds(data in tricky_bytes(300)) {
        let mut last_end = 0u64;
        for item in objects(&data) {
            match item {
                Ok(o) => {
                    prop_assert!(o.offset >= last_end);
                    last_end = o.offset + o.length;
                    prop_assert!(last_end <= data.len() as u64);
                    // The content is a slice of the object's own bytes.
                    let at = o.content.as_ptr() as usize - data.as_ptr() as usize;
                    prop_assert!(at as u64 >= o.offset);
                    prop_assert!((at + o.content.len()) as u64 <= last_end);
                }
                Err(e) => prop_assert!(e.offset() < data.len() as u64),
            }
        }
    }

    #[test]
    fn mutated_objects_never_panic_and_later_objects_survive(
        content in tricky_bytes(60),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..6),
    ) {
        let mut b = Build::new("http://a.se/1", &content);
        b.boundary = "B".to_string();
        let first = b.bytes();
        let mut data = first.clone();
        for (at, byte, kind) in edits {
            let i = at.index(data.len());
            match kind {
                0 => data[i] = byte,
                1 => data.insert(i, byte),
                _ => { data.remove(i); }
            }
        }
        data.push(b'\n');
        let n = data.len();
        let good = Build::new("http://a.se/last", b"last").bytes();
        data.extend_from_slice(&good);
        let items = read(&data);
        // The intact object after the damage is read whole, whatever the
        // damage did: no object reaches past the next object start.
        let last = obj(n, good.len(), "http://a.se/last", b"last");
        prop_assert!(items.contains(&last), "{:?}", items);
    }

    #[test]
    fn content_round_trips_unless_it_holds_a_delimiter(
        content in tricky_bytes(80),
        crlf in any::<bool>(),
    ) {
        prop_assume!(!has_delimiter_line(&content));
        let mut b = Build::new("http://a.se/", &content);
        b.boundary = "B".to_string();
        b.md5 = None;
        if crlf {
            b.eol = "\r\n";
        }
        let data = b.bytes();
        let items: Vec<_> = objects(&data).collect();
        // Content holding an object start ends the object early: the
        // reader cannot tell it from two objects.
        if content.windows(9).any(|w| w == b"MIME-vers") {
            return Ok(());
        }
        prop_assert_eq!(items.len(), 1, "{:?}", items);
        let o = items[0].as_ref().unwrap();
        prop_assert_eq!(o.content, &content[..]);
        prop_assert_eq!(o.length as usize, data.len());
    }
}
