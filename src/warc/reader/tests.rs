use std::io::Write;

use super::*;
use crate::warc::RecordType;
use crate::warc::SharedBytes;

fn record(uri: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "WARC/1.0\r\nWARC-Type: resource\r\nWARC-Target-URI: {uri}\r\n\
         WARC-Date: 2020-01-02T03:04:05Z\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r.extend_from_slice(b"\r\n\r\n");
    r
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zst(data: &[u8]) -> Vec<u8> {
    zstd::stream::encode_all(data, 3).unwrap()
}

/// (offset, length, uri, block) of every record, and the errors, read
/// through a small buffer and from shared bytes; both must agree.
type Got = (Vec<(u64, u64, String, Vec<u8>)>, Vec<String>);

fn read_all(data: &[u8]) -> Got {
    let stream = read_with(Reader::with_options(
        data,
        Options {
            buffer_size: 64,
            ..Options::default()
        },
    ));
    let bytes: SharedBytes = std::sync::Arc::new(data.to_vec());
    let shared = read_with(Reader::from_shared(bytes, Options::default()));
    assert_eq!(stream, shared, "stream and shared readers differ");
    stream
}

fn read_with<R: Read>(mut rdr: Reader<R>) -> Got {
    let mut rec = Record::default();
    let (mut recs, mut errs) = (Vec::new(), Vec::new());
    loop {
        match rdr.read_record(&mut rec) {
            Ok(true) => recs.push((
                rec.offset,
                rec.length,
                String::from_utf8_lossy(rec.header("WARC-Target-URI").unwrap_or(b"")).into_owned(),
                rec.block().to_vec(),
            )),
            Ok(false) => break,
            Err(e) => {
                assert!(!e.is_fatal(), "{e}");
                errs.push(e.to_string());
            }
        }
    }
    (recs, errs)
}

#[test]
fn plain_records_and_offsets() {
    let a = record("http://a/", b"hello");
    let b = record("http://b/", b"");
    let data = [a.clone(), b.clone()].concat();
    let (recs, errs) = read_all(&data);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(recs.len(), 2);
    assert_eq!((recs[0].0, recs[0].1), (0, a.len() as u64 - 4));
    assert_eq!(recs[0].3, b"hello");
    assert_eq!((recs[1].0, recs[1].1), (a.len() as u64, b.len() as u64 - 4));
}

#[test]
fn gzip_and_zstd_members() {
    let a = record("http://a/", b"hello");
    let b = record("http://b/", &[7u8; 3000]);
    for (name, enc) in [("gz", gz as fn(&[u8]) -> Vec<u8>), ("zst", zst)] {
        let (ma, mb) = (enc(&a), enc(&b));
        let data = [ma.clone(), mb.clone()].concat();
        let (recs, errs) = read_all(&data);
        assert!(errs.is_empty(), "{name}: {errs:?}");
        assert_eq!(
            recs.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
            [(0, ma.len() as u64), (ma.len() as u64, mb.len() as u64)],
            "{name}"
        );
        assert_eq!(recs[1].3, vec![7u8; 3000]);
    }
}

#[test]
fn zstd_dictionary_frame() {
    let recs: Vec<Vec<u8>> = (0..20)
        .map(|i| {
            record(
                &format!("http://example.com/{i}"),
                b"<html>same words</html>",
            )
        })
        .collect();
    // A raw-content dictionary: zstd takes any bytes as one.
    let dict = recs[..4].concat();
    let mut data = Vec::new();
    data.extend_from_slice(&DICT_FRAME.to_le_bytes());
    data.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    data.extend_from_slice(&dict);
    let mut offsets = Vec::new();
    for r in &recs {
        offsets.push(data.len() as u64);
        let mut c = zstd::bulk::Compressor::with_dictionary(3, &dict).unwrap();
        data.extend_from_slice(&c.compress(r).unwrap());
    }
    let (got, errs) = read_all(&data);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), offsets);
    assert_eq!(got[3].2, "http://example.com/3");
}

#[test]
fn garbage_between_records_is_skipped_and_reported() {
    let a = record("http://a/", b"hello");
    let b = record("http://b/", b"world");
    let junk = b"\x00\x01junk junk WARC/ no\r\n more junk";
    let data = [a.clone(), junk.to_vec(), b.clone()].concat();
    let (recs, errs) = read_all(&data);
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[1].0, (a.len() + junk.len()) as u64);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with(&format!("offset {}: skipped {} bytes", a.len(), junk.len())),
        "{errs:?}"
    );
}

#[test]
fn wrong_lengths_are_corrected() {
    let a = record("http://a/", b"hello world");
    let b = record("http://b/", b"next");
    // Too long: the next record starts inside the declared block.
    let long = String::from_utf8(a.clone())
        .unwrap()
        .replace("Length: 11", "Length: 30");
    let data = [long.into_bytes(), b.clone()].concat();
    let (recs, errs) = read_all(&data);
    assert_eq!(recs.len(), 2, "{errs:?}");
    assert_eq!(recs[0].3, b"hello world");
    assert_eq!(recs[1].0, a.len() as u64);
    assert!(
        errs[0].contains("Content-Length says 30 bytes but 11"),
        "{errs:?}"
    );
    // Too short: the record ends where the length says, the rest is
    // skipped and reported.
    let short = String::from_utf8(a.clone())
        .unwrap()
        .replace("Length: 11", "Length: 5");
    let data = [short.as_bytes(), &b].concat();
    let (recs, errs) = read_all(&data);
    assert_eq!(recs.len(), 2, "{errs:?}");
    assert_eq!(recs[0].3, b"hello");
    assert!(errs[0].contains("skipped 9 bytes"), "{errs:?}");
    assert_eq!(recs[1].0, short.len() as u64);
    assert_eq!(errs.len(), 1, "{errs:?}");
    // Missing: likewise.
    let none = String::from_utf8(a.clone())
        .unwrap()
        .replace("Content-Length: 11\r\n", "");
    let data = [none.into_bytes(), b.clone()].concat();
    let (recs, errs) = read_all(&data);
    assert_eq!(recs.len(), 2, "{errs:?}");
    assert_eq!(recs[0].3, b"hello world");
    assert!(errs[0].contains("missing or not a number"), "{errs:?}");
}

#[test]
fn truncated_files() {
    let a = record("http://a/", b"hello");
    let b = record("http://b/", b"world, a longer block");
    for cut in [3, 20, a.len() + 10, a.len() + b.len() - 10] {
        let data = [a.clone(), b.clone()].concat();
        let (recs, errs) = read_all(&data[..cut.min(data.len())]);
        assert!(!errs.is_empty(), "cut at {cut}");
        if cut > a.len() {
            assert_eq!(recs[0].3, b"hello");
        }
    }
    let ga = gz(&a);
    let gb = gz(&b);
    let data = [ga.clone(), gb[..gb.len() - 5].to_vec()].concat();
    let (recs, errs) = read_all(&data);
    assert_eq!(recs.len(), 2);
    assert!(errs[0].contains("gzip member truncated"), "{errs:?}");
}

#[test]
fn corrupt_member_is_skipped() {
    let a = gz(&record("http://a/", &[b'x'; 2000]));
    let mut bad = gz(&record("http://bad/", b"some words some words"));
    let n = bad.len();
    bad[n / 2..n / 2 + 6].copy_from_slice(b"\xff\xff\xff\xff\xff\xff");
    let c = gz(&record("http://c/", b"ok"));
    let data = [a.clone(), bad.clone(), c.clone()].concat();
    let (recs, errs) = read_all(&data);
    let uris: Vec<&str> = recs.iter().map(|r| r.2.as_str()).collect();
    assert!(
        uris.contains(&"http://a/") && uris.contains(&"http://c/"),
        "{uris:?} {errs:?}"
    );
    assert_eq!(recs.last().unwrap().0, (a.len() + bad.len()) as u64);
    assert!(!errs.is_empty());
}

#[test]
fn single_stream_file_is_read_and_reported() {
    let a = record("http://a/", b"hello");
    let b = record("http://b/", b"world");
    for (name, data) in [
        ("gz", gz(&[a.clone(), b.clone()].concat())),
        ("zst", zst(&[a.clone(), b.clone()].concat())),
    ] {
        let (recs, errs) = read_all(&data);
        assert_eq!(recs.len(), 2, "{name}: {errs:?}");
        assert_eq!(
            recs[1].0,
            a.len() as u64,
            "{name}: offsets in the decompressed stream"
        );
        assert_eq!(errs.len(), 1, "{name}: {errs:?}");
        assert!(errs[0].contains("single"), "{errs:?}");
    }
}

#[test]
fn record_types() {
    assert_eq!(RecordType::from_name(b"Revisit"), RecordType::Revisit);
    assert_eq!(RecordType::from_name(b"x"), RecordType::Other);
}

#[test]
fn a_first_member_with_two_records_in_a_file_of_members() {
    let (a, b, c) = (
        record("http://a/", b"one"),
        record("http://b/", b"two"),
        record("http://c/", b"three"),
    );
    let first = gz(&[a.clone(), b.clone()].concat());
    let third = gz(&c);
    let data = [first.clone(), third.clone()].concat();
    let (recs, errs) = read_all(&data);
    assert_eq!(recs.len(), 1, "{errs:?}");
    assert_eq!(
        (recs[0].0, recs[0].2.as_str()),
        (first.len() as u64, "http://c/")
    );
    assert!(
        errs[0].contains("holds more than one WARC record"),
        "{errs:?}"
    );
}

#[test]
fn an_empty_member_before_a_single_stream() {
    let (a, b) = (record("http://a/", b"one"), record("http://b/", b"two"));
    let data = [gz(b""), gz(&[a.clone(), b.clone()].concat())].concat();
    let (recs, errs) = read_all(&data);
    assert_eq!(recs.len(), 2, "{errs:?}");
    assert!(errs[0].contains("single gzip stream"), "{errs:?}");
}

#[test]
fn a_failed_checksum_keeps_the_record() {
    let a = gz(&record("http://a/", &[b'x'; 500]));
    let mut bad = gz(&record("http://b/", b"payload"));
    let n = bad.len();
    bad[n - 8] ^= 1; // the CRC-32 in the trailer
    let data = [a.clone(), bad.clone(), a.clone()].concat();
    let (recs, errs) = read_all(&data);
    assert_eq!(recs.len(), 3, "{errs:?}");
    assert_eq!(
        (recs[1].0, recs[1].2.as_str()),
        (a.len() as u64, "http://b/")
    );
    assert!(errs[0].contains("fails its checksum"), "{errs:?}");
}

#[test]
fn junk_without_line_ends_is_passed_in_linear_time() {
    // Every `W` is a candidate record start; none may look further than
    // a few bytes.
    let mut data = vec![b'W'; 4 << 20];
    data.extend_from_slice(&record("http://a/", b"after"));
    let (recs, errs) = read_all(&data);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].0, 4 << 20);
    assert_eq!(errs.len(), 1);
}

/// `record` with its version line written `version`.
fn record_as(version: &str, uri: &str, body: &[u8]) -> Vec<u8> {
    let mut r = record(uri, body);
    r.splice(..8, version.bytes());
    r
}

#[test]
fn version_lines_in_any_case() {
    let a = record_as("warc/1.0", "http://a/", b"hello");
    let b = record_as("Warc/1.1", "http://b/", b"world");
    let c = record_as("WARC/1.0", "http://c/", b"!");
    let data = [a.clone(), b.clone(), c.clone()].concat();
    let (recs, errs) = read_all(&data);
    assert!(errs.is_empty(), "{errs:?}");
    let uris: Vec<_> = recs.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(uris, ["http://a/", "http://b/", "http://c/"]);
    assert_eq!(recs[1].0, a.len() as u64);
    // Found again after junk, and in gzip members.
    let junk = b"\x00junk\r\n";
    let data = [a.clone(), junk.to_vec(), b.clone()].concat();
    let (recs, errs) = read_all(&data);
    assert_eq!(recs.len(), 2, "{errs:?}");
    assert_eq!(recs[1].0, (a.len() + junk.len()) as u64);
    assert!(errs[0].contains(&format!("skipped {} bytes", junk.len())));
    let data = [gz(&a), gz(&b), gz(&c)].concat();
    let (recs, errs) = read_all(&data);
    assert_eq!((recs.len(), errs.len()), (3, 0), "{errs:?}");
    // A lower-case record start inside a block too long cuts it.
    let long = String::from_utf8(a.clone())
        .unwrap()
        .replace("Length: 5", "Length: 20");
    let (recs, errs) = read_all(&[long.into_bytes(), b.clone()].concat());
    assert_eq!(recs.len(), 2, "{errs:?}");
    assert_eq!(recs[0].3, b"hello");
}

#[test]
fn a_length_ending_inside_the_next_version_line() {
    let a = record("http://a/", b"hello world");
    let b = record("http://b/", b"next");
    let c = record("http://c/", b"last");
    // The declared end falls 1 to 12 bytes into the next record: inside
    // `WARC/1.0`, on its CR or LF, or in its first field.
    for k in 1..=12 {
        let long = |r: &[u8], n: usize| {
            String::from_utf8(r.to_vec())
                .unwrap()
                .replacen(
                    &format!("Length: {n}\r"),
                    &format!("Length: {}\r", n + 4 + k),
                    1,
                )
                .into_bytes()
        };
        let (a, b) = (long(&a, 11), long(&b, 4));
        let data = [a.clone(), b.clone(), c.clone()].concat();
        let (recs, errs) = read_all(&data);
        let got: Vec<_> = recs.iter().map(|r| (r.0, r.1, r.3.clone())).collect();
        let (la, lb) = (a.len() as u64, b.len() as u64);
        assert_eq!(
            got,
            [
                (0, la - 4, b"hello world".to_vec()),
                (la, lb - 4, b"next".to_vec()),
                (la + lb, c.len() as u64 - 4, b"last".to_vec()),
            ],
            "k={k} {errs:?}"
        );
        assert_eq!(errs.len(), 2, "k={k} {errs:?}");
        assert!(
            errs[0].starts_with("offset 0: Content-Length says"),
            "{errs:?}"
        );
        assert!(errs[1].starts_with(&format!("offset {la}: Content-Length says")));
    }
    // A last line that only looks like the start of a version line is the
    // block's: the length is trusted and the junk after it skipped.
    let mut w = record("http://a/", b"text\r\nWAR");
    w.truncate(w.len() - 4);
    w.extend_from_slice(b"C is not a record\r\n\r\n");
    let (recs, errs) = read_all(&[w, c.clone()].concat());
    assert_eq!(recs.len(), 2, "{errs:?}");
    assert_eq!(recs[0].3, b"text\r\nWAR");
    assert!(errs[0].contains("skipped"), "{errs:?}");
}
