//! ARC reader on real files: the corpus, generated corpora with ground
//! truth, damaged files.

use std::path::Path;

use ukvs::arc::{Options, Reader, Record};

/// What reading a whole file gives: records as (offset, length, url) and
/// errors as their display strings.
#[derive(Debug, Default)]
struct Read {
    recs: Vec<(u64, u64, Vec<u8>)>,
    errors: Vec<String>,
    truncated: usize,
}

/// Reads a whole file as a stream, and again from shared bytes (the way
/// `ukvs index` reads a memory-mapped file), which must give exactly the
/// same records (header line, block and flags included) and errors.
fn read_bytes(data: &[u8]) -> Read {
    let (out, streamed) = read_all(Reader::new(data));
    let shared = Reader::from_shared(std::sync::Arc::new(data.to_vec()), Options::default());
    let (_, from_shared) = read_all(shared);
    assert!(
        streamed == from_shared,
        "shared bytes read differently from the stream"
    );
    out
}

/// Reads every record of `rdr`; also gives everything it read as text.
fn read_all<R: std::io::Read>(mut rdr: Reader<R>) -> (Read, Vec<String>) {
    let mut rec = Record::default();
    let mut out = Read::default();
    let mut all = Vec::new();
    loop {
        match rdr.read_record(&mut rec) {
            Ok(true) => {
                out.recs
                    .push((rec.offset, rec.length, rec.header.url.clone()));
                out.truncated += usize::from(rec.truncated);
                all.push(format!(
                    "{} {} {:?} {:?} {} {}",
                    rec.offset,
                    rec.length,
                    rec.header_line,
                    rec.block(),
                    rec.truncated,
                    rec.compressed
                ));
            }
            Ok(false) => break,
            Err(e) => {
                let fatal = e.is_fatal();
                out.errors.push(e.to_string());
                all.push(e.to_string());
                if fatal {
                    break;
                }
            }
        }
    }
    all.push(format!("{:?}", rdr.stats()));
    (out, all)
}

fn read_path(path: &Path) -> Read {
    read_bytes(&std::fs::read(path).expect("read fixture"))
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
        assert_eq!(ra.block(), rb.block());
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

/// aut's `badexample.arc.gz` is one gzip member: its records are read
/// from the decompressed stream, as from the decompressed file, after one
/// report.
#[test]
fn whole_file_in_one_member_is_read_from_the_stream() {
    let gz = std::fs::read(fixture("badexample.arc.gz")).unwrap();
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut plain).unwrap();
    let r = read_bytes(&gz);
    let p = read_bytes(&plain);
    assert_eq!(r.recs, p.recs);
    assert_eq!(r.recs.len(), 6);
    assert!(
        r.errors[0].starts_with("offset 0: the file is compressed as a single gzip stream"),
        "{}",
        r.errors[0]
    );
    assert_eq!(r.errors[1..], p.errors[..]);
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

/// Record counts of every ARC file in the shared corpus, from its
/// MANIFEST.md (records found by walking header line + declared length),
/// and how many errors reading it must report. Where the walk in the
/// manifest derails, the comment says what the manifest lists.
const CORPUS: &[(&str, usize, usize)] = &[
    // whole file in one gzip member: read from the stream and reported;
    // two wrong lengths and a truncated last record, as when gunzipped
    ("archivesunleashed__aut/src/test/resources/arc/badexample.arc.gz", 6, 4),
    ("archivesunleashed__aut/src/test/resources/arc/example.arc.gz", 300, 0),
    ("iipc__webarchive-commons/src/test/resources/org/archive/format/arc/IAH-20080430204825-00000-blackbook-truncated.arc", 9, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/10_digit_date.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/14_digit_plus_text_date.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/15_digit_date.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/16_digit_date.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/18_digit_date.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/alexa_charset_in_header.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/alexa_short_header.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/arc_v1_with_v2_header.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/bad_mime_type.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/bad_unicode_host.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/bad_url_with_colon_1.arc.gz", 1, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/bad_url_with_colon_2.arc.gz", 1, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/carriage_return_in_url.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/chardet_failure_url.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/empty_payload_header_ending_with_lf.arc.gz", 1, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/empty_record.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/formfeed_in_url.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/hex_instead_of_date.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/meta_tag_FI.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/meta_tag_I.arc.gz", 2, 0),
    // 4 members; record 3 declares -2046788874 (reported, kept)
    ("internetarchive__CDX-Writer/tests/small_warcs/negative_content_length.arc.gz", 4, 1),
    ("internetarchive__CDX-Writer/tests/small_warcs/non_ascii_url.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/spaces_in_url.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/transposed_header.arc.gz", 2, 0),
    ("internetarchive__CDX-Writer/tests/small_warcs/uncompressed.arc", 4, 0),
    ("netarchivesuite__jwat/jwat-arc/src/test/resources/1-1-20110922131213-00000-svc-VirtualBox.arc", 102, 0),
    // a record, then an incomplete header without LF (reported as junk)
    ("netarchivesuite__jwat/jwat-arc/src/test/resources/invalid-arcfile-record-then-garbage.arc", 1, 1),
    ("netarchivesuite__jwat/jwat-arc/src/test/resources/small_BNF.arc", 6, 0),
    // 2 records and a whitespace-only line (a separator, not an error)
    ("netarchivesuite__jwat/jwat-arc/src/test/resources/test-arc-1.0-dashed-fields.arc", 2, 0),
    // 2 header lines; the filedesc length is `one`
    ("netarchivesuite__jwat/jwat-arc/src/test/resources/test-arc-1.0-invalid-fields.arc", 2, 1),
    ("netarchivesuite__netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/bitarchive/data/admin/originals/CorrectTest1.ARC", 4, 0),
    ("netarchivesuite__netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/bitarchive/data/originals/bug830-testmaterial/3-3-20070119143010-00000-sb-test-har-001.statsbiblioteket.dk.arc", 5, 0),
    ("netarchivesuite__netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/distribute/arcrepository/data/originals/2-2-20060731110420-00000-sb-test-har-001.statsbiblioteket.dk.arc", 85, 0),
    ("netarchivesuite__netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/distribute/arcrepository/data/originals/3-3-20070119143010-00000-sb-test-har-001.statsbiblioteket.dk.arc", 5, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/tools/data/originals/test1.arc", 2, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/tools/data/originals/test2.arc", 2, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/tools/data/originals/test3.arc", 2, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/input/NetarchiveSuite-netarkivet.arc.gz", 66, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/input/fyensdk.arc", 190, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/2-metadata-1.arc", 2, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-1.arc", 4, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-2.arc", 1, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-3.arc", 3, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-empty.arc", 0, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-illegal.arc", 1, 0),
    // not an ARC: one junk report
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-nonarc.arc", 0, 1),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/fyensdk.arc", 7, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/input-2.arc", 6, 0),
    ("netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/input-3.arc", 1, 0),
    // "6 header-like lines (length walk derails)": three wrong lengths and
    // a truncated last record (header glued after a `!`), all six kept
    ("netarchivesuite__netarchivesuite/harvester/harvester-test/tests/dk/netarkivet/harvester/harvesting/distribute/data/originals/testserverdir1/crawldir/arcs/42-117-20051212141240-00000-sb-test-har-001.statsbiblioteket.dk.ARC", 6, 4),
    ("netarchivesuite__netarchivesuite/harvester/harvester-test/tests/dk/netarkivet/harvester/indexserver/data/originals/arcfiles/30-metadata-4.arc", 30, 0),
    ("ukwa__webarchive-discovery/warc-indexer/src/test/resources/IAH-20080430204825-00000-blackbook-truncated.arc", 9, 0),
    ("ukwa__webarchive-discovery/warc-indexer/src/test/resources/IAH-20080430204825-00000-blackbook-truncated.arc.gz", 9, 0),
    // filedesc -1, then -1 and abc
    ("webrecorder__cdxj-indexer/test/data/bad.arc", 4, 3),
    ("webrecorder__cdxj-indexer/test/data/example.arc", 2, 0),
    ("webrecorder__pywb/sample_archive/warcs/bad.arc", 4, 3),
    ("webrecorder__pywb/sample_archive/warcs/example.arc", 2, 0),
    ("webrecorder__pywb/sample_archive/warcs/example.arc.gz", 2, 0),
    ("webrecorder__warcio/test/data/bad.arc", 4, 3),
    // truncated last record (12 bytes short)
    ("webrecorder__warcio/test/data/example-space-in-url.arc", 2, 1),
    ("webrecorder__warcio/test/data/example.arc", 2, 0),
    ("webrecorder__warcio/test/data/example.arc.gz", 2, 0),
];

#[test]
fn corpus_record_counts_match_manifest() {
    let Some(corpus) = crate::util::shared_corpus("corpus_record_counts_match_manifest") else {
        return;
    };
    let mut failures = vec![];
    for &(path, records, errors) in CORPUS {
        let r = read_path(&corpus.join(path));
        if r.recs.len() != records || r.errors.len() != errors {
            failures.push(format!(
                "{path}: {} records (want {records}), errors {:?} (want {errors})",
                r.recs.len(),
                r.errors
            ));
        }
        // Offsets increase and records do not overlap.
        for w in r.recs.windows(2) {
            assert!(
                w[0].0 + w[0].1 <= w[1].0,
                "{path}: overlap {:?} {:?}",
                w[0],
                w[1]
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every ARC of the corpus is in the table.
    let mut seen = 0;
    for entry in walk(&corpus) {
        let name = entry.to_string_lossy().to_lowercase();
        if name.ends_with(".arc") || name.ends_with(".arc.gz") {
            seen += 1;
        }
    }
    assert_eq!(
        seen,
        CORPUS.len(),
        "an ARC file of the corpus is missing from the table"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `(offset, length)` of each line of an expected CDX-11 output
/// (` CDX N b a m s k r M S V g`: S and V are third and second from the
/// right; fields before them may hold raw bytes).
fn cdx11_offsets(path: &Path) -> Vec<(u64, u64)> {
    let data = std::fs::read(path).unwrap();
    data.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && !l.starts_with(b" CDX"))
        .map(|l| {
            let f: Vec<&[u8]> = l.split(|&b| b == b' ').collect();
            let num = |b: &[u8]| std::str::from_utf8(b).unwrap().parse::<u64>().unwrap();
            (num(f[f.len() - 2]), num(f[f.len() - 3]))
        })
        .collect()
}

#[test]
fn offsets_match_cdx_writer_expected_outputs() {
    let Some(corpus) = crate::util::shared_corpus("offsets_match_cdx_writer_expected_outputs")
    else {
        return;
    };
    let cw = corpus.join("internetarchive__CDX-Writer");
    let mut checked = 0;
    for mode in ["all-records", "default"] {
        for exp in walk(&cw.join("_expected_from_tests").join(mode)) {
            let name = exp.file_name().unwrap().to_string_lossy().into_owned();
            let Some(arc) = name.strip_suffix(".cdx") else {
                continue;
            };
            if !(arc.ends_with(".arc") || arc.ends_with(".arc.gz")) {
                continue;
            }
            let r = read_path(&cw.join("tests/small_warcs").join(arc));
            let ours = offsets(&r);
            let want = cdx11_offsets(&exp);
            assert!(!want.is_empty(), "{name}");
            for w in &want {
                assert!(
                    ours.contains(w),
                    "{mode}/{name}: CDX-Writer has {w:?}, we have {ours:?}"
                );
            }
            if mode == "all-records" && arc != "negative_content_length.arc.gz" {
                // CDX-Writer lists every record; it drops the two records
                // after the negative length, which we keep.
                assert_eq!(ours.len(), want.len(), "{name}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 45, "only {checked} expected outputs found");
}

#[test]
fn offsets_match_pywb_expected_outputs() {
    let Some(corpus) = crate::util::shared_corpus("offsets_match_pywb_expected_outputs") else {
        return;
    };
    let pywb = corpus.join("webrecorder__pywb");
    let mut checked = 0;
    for exp in walk(&pywb.join("_expected_from_tests/cdx11")) {
        let name = exp.file_name().unwrap().to_string_lossy().into_owned();
        let arc = name
            .split(".cdx")
            .next()
            .unwrap()
            .split("__")
            .next()
            .unwrap();
        if !(arc.ends_with(".arc") || arc.ends_with(".arc.gz")) {
            continue;
        }
        let ours = offsets(&read_path(&pywb.join("sample_archive/warcs").join(arc)));
        for w in cdx11_offsets(&exp) {
            assert!(
                ours.contains(&w),
                "{name}: pywb has {w:?}, we have {ours:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 7, "only {checked} lines checked");
}

/// NetarchiveSuite's CDX of the full `fyensdk.arc` (fields `URL IP date
/// mime length arcfile offset md5`) points at every header line.
#[test]
fn offsets_match_netarchivesuite_cdx() {
    let Some(corpus) = crate::util::shared_corpus("offsets_match_netarchivesuite_cdx") else {
        return;
    };
    let dir = corpus.join(
        "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils",
    );
    let r = read_path(&dir.join("arc/data/input/fyensdk.arc"));
    let ours: std::collections::HashMap<u64, &[u8]> =
        r.recs.iter().map(|(o, _, u)| (*o, &u[..])).collect();
    let cdx = std::fs::read(dir.join("cdx/data/input/fyensdk.cdx")).unwrap();
    let mut n = 0;
    for line in cdx.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let f: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        let off: u64 = std::str::from_utf8(f[f.len() - 2])
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(ours.get(&off), Some(&f[0]), "offset {off}");
        n += 1;
    }
    assert_eq!(n, 189);
}

/// One line of a generated corpus' `truth.tsv`.
#[derive(Debug, Clone)]
struct Truth {
    file: String,
    offset: u64,
    length: u64,
    url: String,
    sha1: String,
    kind: String,
    damage: String,
}

/// Runs `gen_arc_corpus.py ARGS --truth` into a temp dir; `None` (with a
/// message) when python3 or the generator is missing.
fn generate(test: &str, args: &[&str]) -> Option<(tempfile::TempDir, Vec<Truth>)> {
    let tools = crate::util::shared_dir("tools", test)?;
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("python3")
        .arg(tools.join("gen_arc_corpus.py"))
        .arg("--out")
        .arg(dir.path().join("c"))
        .args(args)
        .args(["--truth", "--jobs", "1"])
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "gen_arc_corpus.py failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => {
            eprintln!("SKIPPED {test}: cannot run python3: {e}");
            return None;
        }
    }
    let tsv = std::fs::read_to_string(dir.path().join("c/truth.tsv")).unwrap();
    let truth = tsv
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Truth {
                file: f[0].to_string(),
                offset: f[1].parse().unwrap(),
                length: f[2].parse().unwrap(),
                url: f[3].to_string(),
                sha1: f[8].to_string(),
                kind: f[9].to_string(),
                damage: f[10].to_string(),
            }
        })
        .collect();
    Some((dir, truth))
}

/// The payload of a generated record: the block after the HTTP head for
/// `http` records, the whole block otherwise.
fn payload<'a>(kind: &str, block: &'a [u8]) -> &'a [u8] {
    if kind != "http" {
        return block;
    }
    let crlf = memchr::memmem::find(block, b"\r\n\r\n").map(|i| i + 4);
    let lf = memchr::memmem::find(block, b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => &block[a.min(b)..],
        (Some(a), None) | (None, Some(a)) => &block[a..],
        (None, None) => &block[block.len()..],
    }
}

fn b32sha1(data: &[u8]) -> String {
    use sha1::Digest;
    data_encoding::BASE32.encode(&sha1::Sha1::digest(data))
}

/// Reads every file of a generated corpus and checks each record of the
/// truth: found at its offset with the expected length and payload digest.
/// Returns the number of errors reported per file.
fn check_generated(dir: &Path, truth: &[Truth]) -> std::collections::BTreeMap<String, usize> {
    let mut errors = std::collections::BTreeMap::new();
    let mut files: Vec<&str> = truth.iter().map(|t| t.file.as_str()).collect();
    files.dedup();
    for file in files {
        let data = std::fs::read(dir.join("c").join(file)).unwrap();
        let gz = file.ends_with(".gz");
        let mut rdr = Reader::new(&data[..]);
        let mut rec = Record::default();
        let mut got = std::collections::BTreeMap::new();
        let mut nerr = 0;
        loop {
            match rdr.read_record(&mut rec) {
                Ok(true) => {
                    let v = (
                        rec.length,
                        rec.header.url.clone(),
                        rec.block().to_vec(),
                        rec.truncated,
                    );
                    got.insert(rec.offset, v);
                }
                Ok(false) => break,
                Err(e) => {
                    assert!(!e.is_fatal(), "{file}: {e}");
                    nerr += 1;
                }
            }
        }
        let want: Vec<&Truth> = truth.iter().filter(|t| t.file == file).collect();
        for t in &want {
            let starts = |o: u64| {
                let b = &data[o as usize..];
                b.starts_with(&[0x1f, 0x8b, 0x08]) || b.starts_with(t.url.as_bytes())
            };
            let offset = t.offset;
            assert!(
                starts(offset),
                "{file}: truth offset {} is not a record start",
                t.offset
            );
            let Some((length, url, block, truncated)) = got.get(&offset) else {
                panic!(
                    "{file}: record at {offset} ({} {}) not found",
                    t.url, t.damage
                );
            };
            assert_eq!(url, t.url.as_bytes(), "{file} @{offset}");
            let member = data[offset as usize..].starts_with(&[0x1f, 0x8b, 0x08]);
            // A plain record's length excludes its separator LF (as pywb
            // reports it); truth.tsv counts it, except when the file was cut.
            let expect = if member || t.damage == "truncated-tail" {
                t.length
            } else {
                t.length - 1
            };
            assert_eq!(*length, expect, "{file} @{offset} {} gz={gz}", t.damage);
            assert_eq!(*truncated, t.damage == "truncated-tail", "{file} @{offset}");
            if !truncated {
                let (kind, blk) = (&t.kind, block);
                assert_eq!(
                    b32sha1(payload(kind, blk)),
                    t.sha1,
                    "{file} @{offset} {}",
                    t.damage
                );
            }
        }
        assert_eq!(got.len(), want.len(), "{file}: extra records");
        errors.insert(file.to_string(), nerr);
    }
    errors
}

#[test]
fn generated_gz_offsets_equal_truth() {
    let Some((dir, truth)) = generate(
        "generated_gz_offsets_equal_truth",
        &[
            "--gz",
            "--files",
            "2",
            "--records-per-file",
            "60",
            "--seed",
            "3",
        ],
    ) else {
        return;
    };
    let errors = check_generated(dir.path(), &truth);
    assert_eq!(truth.len(), 122);
    assert!(errors.values().all(|&n| n == 0), "{errors:?}");
}

#[test]
fn generated_plain_offsets_equal_truth() {
    let Some((dir, truth)) = generate(
        "generated_plain_offsets_equal_truth",
        &[
            "--plain",
            "--files",
            "2",
            "--records-per-file",
            "60",
            "--seed",
            "3",
        ],
    ) else {
        return;
    };
    let errors = check_generated(dir.path(), &truth);
    assert!(errors.values().all(|&n| n == 0), "{errors:?}");
}

/// Every kind of damage, in gz and plain: every record of the truth
/// survives (damaged ones included) with its offset, length and payload,
/// each damaged file reports errors and the others none.
fn check_corrupt(test: &str, format: &str, seed: &str) {
    let Some((dir, truth)) = generate(
        test,
        &[
            format,
            "--files",
            "6",
            "--records-per-file",
            "40",
            "--seed",
            seed,
            "--corrupt",
            "6",
        ],
    ) else {
        return;
    };
    let errors = check_generated(dir.path(), &truth);
    assert_eq!(truth.len(), 6 * 41);
    let manifest = std::fs::read_to_string(dir.path().join("c/MANIFEST.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    for (file, n) in &errors {
        let kinds: Vec<&str> = manifest["damage"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["file"] == file.as_str() && d.get("skipped").is_none())
            .map(|d| d["kind"].as_str().unwrap())
            .collect();
        // A gzip member in a plain file and a space in the URL are read
        // without complaint; everything else is reported, a plain record
        // in an `.arc.gz` included (it is indexed all the same).
        let silent = kinds
            .iter()
            .all(|k| *k == "space-in-url" || (*k == "raw-member" && format == "--plain"));
        assert_eq!(*n == 0, silent, "{file}: {n} errors for damage {kinds:?}");
    }
}

#[test]
fn generated_corrupt_gz_keeps_every_record() {
    check_corrupt("generated_corrupt_gz_keeps_every_record", "--gz", "7");
}

#[test]
fn generated_corrupt_plain_keeps_every_record() {
    check_corrupt("generated_corrupt_plain_keeps_every_record", "--plain", "7");
}

#[test]
fn generated_corrupt_other_seed() {
    check_corrupt("generated_corrupt_other_seed", "--gz", "11");
    check_corrupt("generated_corrupt_other_seed", "--plain", "11");
}

/// More seeds: `ARC_SEEDS="1 2 3" cargo test --test it arc::generated_corrupt_seeds -- --ignored`.
#[test]
#[ignore]
fn generated_corrupt_seeds_from_env() {
    let seeds = std::env::var("ARC_SEEDS").unwrap_or_default();
    for seed in seeds.split_whitespace() {
        eprintln!("seed {seed}");
        check_corrupt("generated_corrupt_seeds_from_env", "--gz", seed);
        check_corrupt("generated_corrupt_seeds_from_env", "--plain", seed);
    }
}

/// Everything a read gives, for comparing two reads of one file.
fn read_full(data: &[u8], buffer_size: usize) -> Vec<String> {
    let opts = ukvs::arc::Options {
        buffer_size,
        ..ukvs::arc::Options::default()
    };
    let mut rdr = Reader::with_options(data, opts);
    let mut rec = Record::default();
    let mut out = vec![];
    loop {
        match rdr.read_record(&mut rec) {
            Ok(true) => out.push(format!(
                "{} {} {} {:?} {} {}",
                rec.offset,
                rec.length,
                rec.truncated,
                rec.header,
                rec.block().len(),
                b32sha1(rec.block())
            )),
            Ok(false) => break,
            Err(e) => out.push(e.to_string()),
        }
    }
    out.push(format!("{:?}", rdr.stats()));
    out
}

/// Tiny buffers hit every refill and lookahead boundary: the result must
/// not depend on the buffer size.
#[test]
fn buffer_size_does_not_change_results() {
    let Some(corpus) = crate::util::shared_corpus("buffer_size_does_not_change_results") else {
        return;
    };
    for &(path, _, _) in CORPUS {
        let data = std::fs::read(corpus.join(path)).unwrap();
        if data.len() > 3_000_000 {
            continue;
        }
        let big = read_full(&data, 1 << 20);
        for size in [64, 100, 4096] {
            assert_eq!(
                read_full(&data, size),
                big,
                "{path} with a {size}-byte buffer"
            );
        }
    }
}

#[test]
fn filedesc_metadata_of_real_files() {
    // warcio example.arc: v1.0, no XML.
    let data = std::fs::read(fixture("example.arc")).unwrap();
    let mut rdr = Reader::new(&data[..]);
    let mut rec = Record::default();
    assert!(rdr.read_record(&mut rec).unwrap() && rec.is_filedesc());
    let fd = ukvs::arc::FileDesc::parse(rec.block());
    assert_eq!(
        (fd.version.as_str(), fd.origin.as_str()),
        ("1.0", "LiveWeb Capture")
    );
    assert!(fd.metadata.is_empty());
    // webarchive-commons blackbook ARC: v1.1 with Heritrix <arcmetadata>.
    let data = std::fs::read(fixture("IAH-20080430204825-00000-blackbook-truncated.arc")).unwrap();
    let mut rdr = Reader::new(&data[..]);
    assert!(rdr.read_record(&mut rec).unwrap() && rec.is_filedesc());
    let fd = ukvs::arc::FileDesc::parse(rec.block());
    assert_eq!(
        (fd.version.as_str(), fd.origin.as_str()),
        ("1.1", "InternetArchive")
    );
    assert_eq!(
        fd.fields,
        "URL IP-address Archive-date Content-type Archive-length"
    );
    let get = |k: &str| {
        fd.metadata
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    assert!(
        get("software").is_some_and(|s| s.starts_with("Heritrix")),
        "{:?}",
        fd.metadata
    );
    assert!(
        get("format").is_some_and(|s| s.contains("ARC file version 1.1")),
        "{:?}",
        fd.metadata
    );
    assert!(fd.metadata.len() >= 8, "{:?}", fd.metadata);
}
