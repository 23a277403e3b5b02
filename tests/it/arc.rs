//! ARC reader on real files: the corpus, generated corpora with ground
//! truth, damaged files.

use std::path::Path;

use ukvs::arc::{Reader, Record};

/// What reading a whole file gives: records as (offset, length, url) and
/// errors as their display strings.
#[derive(Debug, Default)]
struct Read {
    recs: Vec<(u64, u64, Vec<u8>)>,
    errors: Vec<String>,
    truncated: usize,
}

fn read_bytes(data: &[u8]) -> Read {
    let mut rdr = Reader::new(data);
    let mut rec = Record::default();
    let mut out = Read::default();
    loop {
        match rdr.read_record(&mut rec) {
            Ok(true) => {
                out.recs
                    .push((rec.offset, rec.length, rec.header.url.clone()));
                out.truncated += usize::from(rec.truncated);
            }
            Ok(false) => break,
            Err(e) => {
                let fatal = e.is_fatal();
                out.errors.push(e.to_string());
                if fatal {
                    break;
                }
            }
        }
    }
    out
}

fn read_path(path: &Path) -> Read {
    read_bytes(&std::fs::read(path).expect("read fixture"))
}

/// Prints the records of the file named by `$ARC_DUMP` (debugging aid).
#[test]
#[ignore]
fn dump_env() {
    let Ok(p) = std::env::var("ARC_DUMP") else {
        return;
    };
    let r = read_path(Path::new(&p));
    for (o, l, u) in &r.recs {
        println!("{o}\t{l}\t{}", String::from_utf8_lossy(u));
    }
    for e in &r.errors {
        println!("ERR {e}");
    }
}

fn fixture(name: &str) -> std::path::PathBuf {
    crate::util::data_dir().join("arc").join(name)
}

fn offsets(r: &Read) -> Vec<(u64, u64)> {
    r.recs.iter().map(|(o, l, _)| (*o, *l)).collect()
}

#[test]
fn example_arc_plain_offsets_match_pywb() {
    let r = read_path(&fixture("example.arc"));
    assert_eq!(offsets(&r), [(0, 149), (151, 1656)]);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.recs[1].2, b"http://example.com/");
}

#[test]
fn example_arc_gz_members_match_pywb() {
    let r = read_path(&fixture("example.arc.gz"));
    assert_eq!(offsets(&r), [(0, 171), (171, 856)]);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
}

#[test]
fn gz_and_plain_give_the_same_records() {
    let data = std::fs::read(fixture("example.arc.gz")).unwrap();
    let plain = std::fs::read(fixture("example.arc")).unwrap();
    let (mut a, mut b) = (Reader::new(&data[..]), Reader::new(&plain[..]));
    let (mut ra, mut rb) = (Record::default(), Record::default());
    let mut n = 0;
    while a.read_record(&mut ra).unwrap() {
        assert!(b.read_record(&mut rb).unwrap());
        assert!(ra.compressed && !rb.compressed);
        assert_eq!(ra.header, rb.header);
        assert_eq!(ra.header_line, rb.header_line);
        assert_eq!(ra.block, rb.block);
        n += 1;
    }
    assert!(!b.read_record(&mut rb).unwrap());
    assert_eq!(n, 2);
}

#[test]
fn bad_arc_lengths_match_pywb() {
    // pywb include_all and cdxj-indexer: 134/67, 202/59, 262/68.
    let r = read_path(&fixture("bad.arc"));
    assert_eq!(offsets(&r)[1..], [(134, 67), (202, 59), (262, 68)]);
    assert_eq!(r.recs[0].2, b"filedesc://bad.arc.gz");
    // -1 (filedesc), -1 and abc: three invalid lengths reported.
    assert_eq!(r.errors.len(), 3, "{:?}", r.errors);
    assert!(r.errors[2].starts_with("offset 262: "), "{}", r.errors[2]);
}

#[test]
fn whole_file_in_one_member_gives_no_offsets() {
    let r = read_path(&fixture("badexample.arc.gz"));
    assert!(r.recs.is_empty());
    assert_eq!(r.errors.len(), 1);
    assert!(
        r.errors[0].contains("more than one ARC record") && r.errors[0].starts_with("offset 0:"),
        "{}",
        r.errors[0]
    );
}

#[test]
fn spaces_in_url_and_truncated_last_record() {
    let r = read_path(&fixture("example-space-in-url.arc"));
    // cdxj-indexer: offset 151 length 1722 (the file is 12 bytes short).
    assert_eq!(offsets(&r), [(0, 149), (151, 1722)]);
    assert_eq!(
        r.recs[1].2,
        &b"http://example.com/index.cfm?FuseAction=Email&EmailTitle=Examples From The Live Web&IsPopUp=False"[..]
    );
    assert_eq!(r.truncated, 1);
    assert_eq!(r.errors.len(), 1);
    assert!(
        r.errors[0].starts_with("offset 151: record truncated"),
        "{}",
        r.errors[0]
    );
}
