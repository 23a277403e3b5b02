//! WARC records as real files write them and the standard does not:
//! version lines in any case, lengths that end inside the next version
//! line, WARC/1.1 dates of reduced precision and dates with a zone offset,
//! HTTP heads warcio finds empty, and the `cdx11` fields of responses that
//! are not `application/http` or have no status line. Each is compared
//! with cdxj-indexer run live where it reads the file.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha1::Digest;

use crate::index::{cdxj_indexer_run, lines, show, stdout_of};
use crate::util;

/// A plain WARC record, its block and the two CRLFs after it.
/// `content_length` overrides the declared length.
fn record(
    version: &str,
    uri: &str,
    date: &str,
    content_type: &str,
    block: &[u8],
    content_length: Option<usize>,
) -> Vec<u8> {
    let mut r = format!(
        "{version}\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nWARC-Date: {date}\r\n\
         WARC-Record-ID: <urn:uuid:{}>\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\n\r\n",
        uri.len(),
        content_length.unwrap_or(block.len())
    )
    .into_bytes();
    r.extend_from_slice(block);
    r.extend_from_slice(b"\r\n\r\n");
    r
}

const HTTP_TYPE: &str = "application/http; msgtype=response";
const PAGE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>hello, world</p>";

fn response(version: &str, uri: &str, date: &str, len: Option<usize>) -> Vec<u8> {
    record(version, uri, date, HTTP_TYPE, PAGE, len)
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

/// `ukvs index` with `args` then `file`: stdout, stderr, exit code.
fn index(args: &[&str], file: &Path) -> (Vec<u8>, String, i32) {
    let mut a = vec!["index", "--no-sort"];
    a.extend_from_slice(args);
    a.push(file.to_str().unwrap());
    stdout_of(&a)
}

fn base32_sha1(data: &[u8]) -> String {
    data_encoding::BASE32.encode(&sha1::Sha1::digest(data))
}

/// Our cdxj lines of `ours` must be cdxj-indexer's of `theirs` (the same
/// file, or its repaired twin of the same name), as sorted sets.
fn assert_cdxj_as_cdxj_indexer(ours: &Path, theirs: &Path, code: i32) {
    let (out, err, got) = index(&["--format", "cdxj"], ours);
    assert_eq!(got, code, "{}: {err}", ours.display());
    let (reference, ok) = cdxj_indexer_run(&[theirs]);
    assert!(ok, "cdxj-indexer failed on {}", theirs.display());
    let (a, b) = (lines(&out), lines(&reference));
    assert!(
        a == b,
        "{}\n--- ours\n{}\n--- cdxj-indexer\n{}",
        ours.display(),
        show(&a),
        show(&b)
    );
}

#[test]
fn version_lines_in_any_case_are_read_as_warcio_reads_them() {
    let test = "version_lines_in_any_case_are_read_as_warcio_reads_them";
    let dir = tempfile::tempdir().unwrap();
    let date = "2014-01-03T04:05:06Z";
    let recs = [
        response("warc/1.0", "http://a.example/", date, None),
        response("Warc/1.1", "http://b.example/", date, None),
        response("WARC/1.0", "http://c.example/", date, None),
        response("wArC/1.0", "http://d.example/", date, None),
    ];
    let plain = write(dir.path(), "case.warc", &recs.concat());
    let members: Vec<u8> = recs.iter().flat_map(|r| gz(r)).collect();
    let gzipped = write(dir.path(), "case.warc.gz", &members);
    // After junk the scan finds a lower-case record too.
    let junky = [&recs[0][..], b"\x00\x01junk\r\n", &recs[1][..]].concat();
    let junky = write(dir.path(), "junk.warc", &junky);
    for f in [&plain, &gzipped] {
        let (out, err, code) = index(&["--format", "cdxj"], f);
        assert_eq!(code, 0, "{err}");
        assert_eq!(lines(&out).len(), 4, "{}", String::from_utf8_lossy(&out));
    }
    let (out, err, code) = index(&["--format", "cdxj"], &junky);
    assert_eq!(code, 2, "{err}");
    assert_eq!(lines(&out).len(), 2);
    assert!(
        err.contains(&format!("offset {}: skipped 8 bytes", recs[0].len())),
        "{err}"
    );
    if util::has_python_module("cdxj_indexer", test) {
        assert_cdxj_as_cdxj_indexer(&plain, &plain, 0);
        assert_cdxj_as_cdxj_indexer(&gzipped, &gzipped, 0);
    }
}

#[test]
fn a_length_ending_inside_the_next_version_line_loses_no_record() {
    let test = "a_length_ending_inside_the_next_version_line_loses_no_record";
    let has_reference = util::has_python_module("cdxj_indexer", test);
    let date = "2014-01-03T04:05:06Z";
    let uris = [
        "http://a.example/",
        "http://b.example/",
        "http://c.example/",
    ];
    let good: Vec<Vec<u8>> = uris
        .iter()
        .map(|u| response("WARC/1.0", u, date, None))
        .collect();
    // The declared length runs over the two CRLFs and 1 to 8 bytes into
    // `WARC/1.0` (the number keeps its width, so offsets do not move).
    for k in 1..=8 {
        let dir = tempfile::tempdir().unwrap();
        let long = |u: &str| response("WARC/1.0", u, date, Some(PAGE.len() + 4 + k));
        let bad = [long(uris[0]), long(uris[1]), good[2].clone()].concat();
        let bad_file = write(dir.path(), "long.warc", &bad);
        for mmap in [&[][..], &["--no-mmap"][..]] {
            let mut args = vec!["--format", "cdxj"];
            args.extend_from_slice(mmap);
            let (out, err, code) = index(&args, &bad_file);
            assert_eq!(code, 2, "k={k}: {err}");
            assert_eq!(lines(&out).len(), 3, "k={k}: {err}");
            let second = good[0].len();
            for offset in [0, second] {
                let want = format!(
                    "{}: offset {offset}: Content-Length says {} bytes but {} belong",
                    bad_file.display(),
                    PAGE.len() + 4 + k,
                    PAGE.len()
                );
                assert!(err.contains(&want), "k={k}: {err}");
            }
        }
        // The lines are those of the file with the right lengths.
        if has_reference {
            let twin = tempfile::tempdir().unwrap();
            let fixed = write(twin.path(), "long.warc", &good.concat());
            assert_cdxj_as_cdxj_indexer(&bad_file, &fixed, 2);
        }
    }
}

/// What each `WARC-Date` gives: the `ukvs` and `cdxj` datetime, whether
/// the `ukvs` line keeps `datetime_raw`, whether a warning is given, what
/// cdxj-indexer 1.5.0 makes of it (`None`: it stops with an error), and
/// the `cdx11` datetime (CDX-Writer's first 19 characters).
type DateCase = (
    &'static str,
    &'static str,
    bool,
    bool,
    Option<&'static str>,
    &'static str,
);

#[rustfmt::skip]
const DATES: &[DateCase] = &[
    ("2014-01-03T04:05:06Z", "20140103040506", false, false, Some("20140103040506"), "20140103040506"),
    ("2014-01-03T04:05:06.25Z", "20140103040506", false, false, Some("20140103040506"), "20140103040506"),
    ("2014-01-03", "20140103000000", true, false, Some("20140103000000"), "-"),
    ("2014-01-03T04Z", "20140103040000", true, false, Some("20140103040000"), "-"),
    ("2014-01-03T04:05Z", "20140103040500", true, false, Some("20140103040500"), "-"),
    ("2014", "20140101000000", true, false, None, "-"),
    ("2014-01", "20140101000000", true, false, None, "-"),
    ("2014-01-03T04:05:06+02:00", "20140103020506", true, true, None, "20140103040506"),
    ("2014-01-03T04:05:06.123-0700", "20140103110506", true, true, None, "20140103040506"),
    ("2014-01-03T04:05:06-0700", "20140103110506", true, true, Some("20140103040506"), "20140103040506"),
    ("2014-01-03T04:05:06+0200", "20140103020506", true, true, Some("20140103040506"), "20140103040506"),
    ("2014-01-03T04:05:06-07", "20140103110506", true, true, Some("20140103040506"), "20140103040506"),
    ("2014-01-03T04:05+02:00", "20140103020500", true, true, Some("20140103040502"), "-"),
    ("2014-01-01T01:00:00+02:00", "20131231230000", true, true, None, "20140101010000"),
    ("2014-01-03T04:05:06+2", "-", true, false, Some("20140103040506"), "20140103040506"),
];

#[test]
fn reduced_precision_and_zoned_dates() {
    let test = "reduced_precision_and_zoned_dates";
    let has_reference = util::has_python_module("cdxj_indexer", test);
    for &(date, want, raw, warns, reference, cdx11) in DATES {
        let dir = tempfile::tempdir().unwrap();
        let file = write(
            dir.path(),
            "d.warc",
            &response("WARC/1.1", "http://a.example/", date, None),
        );
        let (out, err, code) = index(&["--format", "cdxj"], &file);
        assert_eq!(code, 0, "{date}: {err}");
        let line = String::from_utf8(out).unwrap();
        assert!(
            line.starts_with(&format!("example,a)/ {want} {{")),
            "{date}: {line}"
        );
        let warning = format!(
            "{}: offset 0: WARC-Date {date:?} has a zone offset",
            file.display()
        );
        assert_eq!(err.contains(&warning), warns, "{date}: {err}");
        let (out, err, code) = index(&[], &file);
        assert_eq!(code, 0, "{date}: {err}");
        let text = String::from_utf8(out).unwrap();
        let line = text.lines().last().unwrap();
        assert!(
            line.starts_with(&format!("example,a)/ {want} 0 ")),
            "{date}: {line}"
        );
        let kept = format!(",\"datetime_raw\":\"{date}\"}}");
        assert_eq!(line.ends_with(&kept), raw, "{date}: {line}");
        assert_eq!(err.contains(&warning), warns, "{date}: {err}");
        let (out, err, code) = index(&["--format", "cdx11"], &file);
        assert_eq!(code, 0, "{date}: {err}");
        let text = String::from_utf8(out).unwrap();
        let b = text.lines().last().unwrap().split(' ').nth(1).unwrap();
        assert_eq!(b, cdx11, "{date}");
        assert!(!err.contains("zone offset"), "{date}: {err}");
        if has_reference {
            let (theirs, ok) = cdxj_indexer_run(&[&file]);
            let theirs = String::from_utf8(theirs).unwrap();
            match reference {
                Some(r) => {
                    assert!(ok, "{date}");
                    assert!(
                        theirs.starts_with(&format!("example,a)/ {r} ")),
                        "{date}: {theirs}"
                    );
                }
                None => assert!(!ok, "{date}: cdxj-indexer now reads it: {theirs}"),
            }
        }
    }
}

#[test]
fn payload_after_a_head_warcio_finds_empty_matches_cdxj_indexer() {
    let test = "payload_after_a_head_warcio_finds_empty_matches_cdxj_indexer";
    // Blocks whose first line warcio consumes as a status line and then
    // finds no status in: it digests what follows its head.
    let blocks: [(&[u8], &[u8]); 7] = [
        (b"HTTP/1.\r\n\r\nbody", b"body"),
        (b"HTTP/1.\nbody", b""),
        (b"HTTP/1.1\r\n<html>x</html>\r\n\r\nrest", b"rest"),
        (b"HTTP/1.1 \r\n\r\nrest", b"rest"),
        (b"XXXX\nXX\n\nrest", b"rest"),
        (b"\r\nrest", b"rest"),
        (b"HTTP/1.1\r\n", b""),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut data = Vec::new();
    for (i, (block, _)) in blocks.iter().enumerate() {
        let uri = format!("http://a.example/{i}");
        data.extend(record(
            "WARC/1.0",
            &uri,
            "2014-01-03T04:05:06Z",
            HTTP_TYPE,
            block,
            None,
        ));
    }
    let file = write(dir.path(), "heads.warc", &data);
    let (cdxj, err, code) = index(&["--format", "cdxj"], &file);
    assert_eq!(code, 0, "{err}");
    let (ukvs, err, code) = index(&[], &file);
    assert_eq!(code, 0, "{err}");
    let ukvs = String::from_utf8(ukvs).unwrap();
    let cdxj = String::from_utf8(cdxj).unwrap();
    for (i, (block, payload)) in blocks.iter().enumerate() {
        let digest = base32_sha1(payload);
        assert_ne!(digest, base32_sha1(block));
        let key = format!("example,a)/{i} ");
        let line = cdxj.lines().find(|l| l.starts_with(&key)).unwrap();
        assert!(
            line.contains(&format!("\"digest\": \"sha1:{digest}\"")),
            "{line}"
        );
        // Neither mime nor status: warcio's head is empty.
        assert!(
            !line.contains("\"status\"") && !line.contains("\"mime\""),
            "{line}"
        );
        let line = ukvs.lines().find(|l| l.starts_with(&key)).unwrap();
        assert!(line.contains(&format!(" sha1:{digest} ")), "{line}");
    }
    if util::has_python_module("cdxj_indexer", test) {
        assert_cdxj_as_cdxj_indexer(&file, &file, 0);
    }
}

#[test]
fn cdx11_digest_and_mime_of_responses_cdx_writer_reads_differently() {
    let dir = tempfile::tempdir().unwrap();
    let date = "2014-01-03T04:05:06Z";
    let converted = b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<p>hi</p>";
    let no_http = b"<p>no head</p>";
    let no_status = b"Content-Type: text/html\r\n\r\n<p>x</p>";
    let bad_digests = [
        "sha1:0123456789abcdef0123456789abcdef012",
        "sha1:0123456789ABCDEF0123456789ABCDEF",
        "sha1:2jmj7l5rSw0yVb/vlWAYkK/YBwk=",
    ];
    let mut data = Vec::new();
    // A WARC/0.17 conversion: the WARC Content-Type is the ARC media type.
    data.extend(record(
        "WARC/0.17",
        "http://a.example/converted",
        date,
        "text/html; charset=utf-8",
        converted,
        None,
    ));
    for (i, d) in bad_digests.iter().enumerate() {
        let mut r = record(
            "WARC/1.0",
            &format!("http://a.example/malformed{i}"),
            date,
            "text/html",
            no_http,
            None,
        );
        let at = r
            .windows(16)
            .position(|w| w == b"Content-Length: ")
            .unwrap();
        r.splice(at..at, format!("WARC-Payload-Digest: {d}\r\n").into_bytes());
        data.extend(r);
    }
    data.extend(record(
        "WARC/1.0",
        "http://a.example/nostatus",
        date,
        HTTP_TYPE,
        no_status,
        None,
    ));
    // A well-formed stated digest is still written as stated.
    let mut stated = record(
        "WARC/1.0",
        "http://a.example/stated",
        date,
        HTTP_TYPE,
        PAGE,
        None,
    );
    let at = stated
        .windows(16)
        .position(|w| w == b"Content-Length: ")
        .unwrap();
    let declared = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    stated.splice(
        at..at,
        format!("WARC-Payload-Digest: {declared}\r\n").into_bytes(),
    );
    data.extend(stated);
    let file = write(dir.path(), "odd.warc", &data);
    let (out, err, code) = index(&["--format", "cdx11"], &file);
    assert_eq!(code, 0, "{err}");
    let out = String::from_utf8(out).unwrap();
    let fields = |path: &str| -> Vec<String> {
        let key = format!("example,a)/{path} ");
        let line = out.lines().find(|l| l.starts_with(&key)).unwrap();
        let f: Vec<String> = line.split(' ').map(str::to_string).collect();
        assert_eq!(f.len(), 11, "{line}");
        f
    };
    // m, s, k of each.
    let msk = |path: &str| {
        let f = fields(path);
        (f[3].clone(), f[4].clone(), f[5].clone())
    };
    assert_eq!(
        msk("converted"),
        ("text/html".into(), "200".into(), base32_sha1(b"<p>hi</p>"))
    );
    for i in 0..bad_digests.len() {
        assert_eq!(
            msk(&format!("malformed{i}")),
            ("text/html".into(), "-".into(), base32_sha1(no_http))
        );
    }
    assert_eq!(
        msk("nostatus"),
        ("unk".into(), "-".into(), base32_sha1(no_status))
    );
    assert_eq!(
        msk("stated"),
        ("text/html".into(), "200".into(), declared[5..].to_string())
    );
}

#[test]
fn python_blanks_in_http_heads_match_cdxj_indexer() {
    let test = "python_blanks_in_http_heads_match_cdxj_indexer";
    // warcio strips a head line of Python's blanks for its decoding: NEL
    // and NBSP in a Latin-1 line, any Unicode blank in a UTF-8 one.
    let blocks: [&[u8]; 4] = [
        b"HTTP/1.1 200 OK\r\nA: b\r\n\xa0\r\nbody",
        b"HTTP/1.1 200 OK\r\nA: b\r\n\xc2\xa0\r\nbody",
        b"HTTP/1.1 200 OK\xa0\r\nContent-Type: text/html\x85\r\n\r\nbody",
        "HTTP/1.1 200 OK\r\nContent-Type: text/\u{3a0}\u{a0}x\r\n\r\nbody".as_bytes(),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut data = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let uri = format!("http://a.example/{i}");
        data.extend(record(
            "WARC/1.0",
            &uri,
            "2014-01-03T04:05:06Z",
            HTTP_TYPE,
            block,
            None,
        ));
    }
    let file = write(dir.path(), "blanks.warc", &data);
    let (out, err, code) = index(&["--format", "cdxj"], &file);
    assert_eq!(code, 0, "{err}");
    let out = String::from_utf8(out).unwrap();
    let body = format!("\"digest\": \"sha1:{}\"", base32_sha1(b"body"));
    assert_eq!(out.matches(&body).count(), 4, "{out}");
    assert!(out.contains("\"mime\": \"text/html\""), "{out}");
    assert!(out.contains("\"mime\": \"text/\\u03a0\""), "{out}");
    if util::has_python_module("cdxj_indexer", test) {
        assert_cdxj_as_cdxj_indexer(&file, &file, 0);
    }
}
