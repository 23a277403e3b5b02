//! `ukvs index` through the binary: conformance with CDX-Writer's expected
//! outputs and with cdxj-indexer run live, determinism across `-j`,
//! damaged input, and the command-line contract.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;

pub(crate) fn stdout_of(args: &[&str]) -> (Vec<u8>, String, i32) {
    let out = util::run(args, b"");
    (
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

pub(crate) fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    v.sort();
    v
}

pub(crate) fn show(lines: &[Vec<u8>]) -> String {
    lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs CDX-Writer's tests for every ARC and WARC input: our cdx11 lines
/// must be the expected ones, as sorted line sets.
fn cdx_writer_mode(test: &str, mode: &str) {
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    let root = corpus.join("internetarchive__CDX-Writer");
    let expected_dir = root.join("_expected_from_tests").join(mode);
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(root.join("tests/small_warcs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            [".arc", ".arc.gz", ".warc", ".warc.gz"]
                .iter()
                .any(|ext| n.ends_with(ext))
        })
        .collect();
    names.sort();
    for input in names {
        let name = input.file_name().unwrap().to_string_lossy().to_string();
        let expected = expected_dir.join(format!("{name}.cdx"));
        let Ok(expected) = std::fs::read(&expected) else {
            continue;
        };
        let mut args = vec!["index", "-q", "--format", "cdx11", input.to_str().unwrap()];
        if mode == "all-records" {
            args.push("--all-records");
        }
        let (out, err, _) = stdout_of(&args);
        checked += 1;
        let (ours, theirs) = (lines(&out), lines(&expected));
        if ours != theirs {
            failures.push(format!(
                "{name}:\n--- ours\n{}\n--- CDX-Writer\n{}\n{err}",
                show(&ours),
                show(&theirs)
            ));
        }
    }
    assert!(checked >= 40, "only {checked} ARC and WARC inputs found");
    assert!(
        failures.is_empty(),
        "{} of {checked} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn cdx11_matches_cdx_writer_default() {
    cdx_writer_mode("cdx11_matches_cdx_writer_default", "default");
}

#[test]
fn cdx11_matches_cdx_writer_all_records() {
    cdx_writer_mode("cdx11_matches_cdx_writer_all_records", "all-records");
}

/// Runs the installed `cdxj-indexer` on `inputs`: what it wrote, and
/// whether it finished without an error.
pub(crate) fn cdxj_indexer_run(inputs: &[&Path]) -> (Vec<u8>, bool) {
    let out = Command::new("cdxj-indexer")
        .args(inputs)
        .output()
        .or_else(|_| {
            Command::new("python3")
                .args(["-m", "cdxj_indexer.main"])
                .args(inputs)
                .output()
        })
        .expect("run cdxj-indexer");
    (out.stdout, out.status.success())
}

/// Runs the installed `cdxj-indexer` on `inputs`, which it must read
/// without an error.
fn cdxj_indexer(inputs: &[&Path]) -> Vec<u8> {
    let (out, ok) = cdxj_indexer_run(inputs);
    assert!(ok, "cdxj-indexer failed on {inputs:?}");
    out
}

/// Our cdxj lines for `inputs` must be cdxj-indexer's (as sorted sets), and
/// our exit code `code` (2 where we report damage that cdxj-indexer
/// passes over in silence). Returns the number of lines.
fn assert_same_as_cdxj_indexer_exit(inputs: &[&Path], code: i32) -> usize {
    let mut args = vec!["index", "-q", "--format", "cdxj"];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    let (out, err, got) = stdout_of(&args);
    assert_eq!(got, code, "{inputs:?}: {err}");
    let (ours, theirs) = (lines(&out), lines(&cdxj_indexer(inputs)));
    let only_ours: Vec<_> = ours
        .iter()
        .filter(|l| !theirs.contains(l))
        .cloned()
        .collect();
    let only_theirs: Vec<_> = theirs
        .iter()
        .filter(|l| !ours.contains(l))
        .cloned()
        .collect();
    assert!(
        only_ours.is_empty() && only_theirs.is_empty(),
        "{inputs:?}\n--- only ours\n{}\n--- only cdxj-indexer\n{}",
        show(&only_ours),
        show(&only_theirs)
    );
    ours.len()
}

fn assert_same_as_cdxj_indexer(inputs: &[&Path]) {
    assert!(assert_same_as_cdxj_indexer_exit(inputs, 0) > 0);
}

/// Generates a corpus with the shared generator into a new temporary dir.
pub(crate) fn generate(test: &str, extra: &[&str]) -> Option<tempfile::TempDir> {
    let tools = util::shared_dir("tools", test)?;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c");
    let status = Command::new("python3")
        .arg(tools.join("gen_arc_corpus.py"))
        .args(["--out", out.to_str().unwrap(), "--jobs", "1"])
        .args(extra)
        .output()
        .expect("run gen_arc_corpus.py");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    Some(dir)
}

fn arc_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".arc"))
        .collect();
    v.sort();
    v
}

#[test]
fn cdxj_matches_cdxj_indexer_on_generated_corpora() {
    let test = "cdxj_matches_cdxj_indexer_on_generated_corpora";
    if !util::has_python_module("cdxj_indexer", test) {
        return;
    }
    for flavour in ["--gz", "--plain"] {
        let Some(dir) = generate(
            test,
            &[
                "--files",
                "2",
                "--records-per-file",
                "250",
                "--seed",
                "11",
                flavour,
            ],
        ) else {
            return;
        };
        let files = arc_files(&dir.path().join("c"));
        let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        assert_same_as_cdxj_indexer(&refs);
    }
}

/// Corpus ARC files whose records are well-formed for cdxj-indexer (dates of
/// 14, 16 or 18 digits, parseable header lines): our cdxj output is
/// cdxj-indexer's. `scripts/cdxj_diff.py` lists which files qualify.
/// Files holding only a filedesc give no line on either side.
pub(crate) const WELL_FORMED: &[&str] = &[
    "webrecorder__warcio/test/data/example.arc",
    "webrecorder__warcio/test/data/example.arc.gz",
    "webrecorder__pywb/sample_archive/warcs/example.arc",
    "webrecorder__pywb/sample_archive/warcs/example.arc.gz",
    "webrecorder__cdxj-indexer/test/data/example.arc",
    "archivesunleashed__aut/src/test/resources/arc/example.arc.gz",
    "netarchivesuite__jwat/jwat-arc/src/test/resources/small_BNF.arc",
    "netarchivesuite__jwat/jwat-arc/src/test/resources/1-1-20110922131213-00000-svc-VirtualBox.arc",
    "netarchivesuite__jwat/jwat-arc/src/test/resources/test-arc-1.0-dashed-fields.arc",
    "internetarchive__CDX-Writer/tests/small_warcs/14_digit_plus_text_date.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/16_digit_date.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/18_digit_date.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/alexa_short_header.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/bad_mime_type.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/bad_unicode_host.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/bad_url_with_colon_1.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/bad_url_with_colon_2.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/carriage_return_in_url.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/chardet_failure_url.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/empty_payload_header_ending_with_lf.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/empty_record.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/formfeed_in_url.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/meta_tag_FI.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/meta_tag_I.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/non_ascii_url.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/spaces_in_url.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/uncompressed.arc",
    "ukwa__webarchive-discovery/warc-indexer/src/test/resources/IAH-20080430204825-00000-blackbook-truncated.arc.gz",
    "netarchivesuite__netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/bitarchive/data/admin/originals/CorrectTest1.ARC",
    "netarchivesuite__netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/bitarchive/data/originals/bug830-testmaterial/3-3-20070119143010-00000-sb-test-har-001.statsbiblioteket.dk.arc",
    "netarchivesuite__netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/distribute/arcrepository/data/originals/2-2-20060731110420-00000-sb-test-har-001.statsbiblioteket.dk.arc",
    "netarchivesuite__netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/distribute/arcrepository/data/originals/3-3-20070119143010-00000-sb-test-har-001.statsbiblioteket.dk.arc",
    "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/input/NetarchiveSuite-netarkivet.arc.gz",
    "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/input/fyensdk.arc",
    "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-1.arc",
    "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-2.arc",
    "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-3.arc",
    "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-empty.arc",
    "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-illegal.arc",
    "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/fyensdk.arc",
    "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/input-2.arc",
    "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/input-3.arc",
];

/// Corpus ARC files where both indexers give the same lines but we also
/// report damage (invalid or too long declared lengths, a truncated last
/// record), so our exit code is 2.
const SAME_LINES_DAMAGE_REPORTED: &[&str] = &[
    "webrecorder__warcio/test/data/bad.arc",
    "webrecorder__pywb/sample_archive/warcs/bad.arc",
    "webrecorder__cdxj-indexer/test/data/bad.arc",
    "webrecorder__warcio/test/data/example-space-in-url.arc",
    "internetarchive__CDX-Writer/tests/small_warcs/negative_content_length.arc.gz",
    "netarchivesuite__jwat/jwat-arc/src/test/resources/test-arc-1.0-invalid-fields.arc",
];

#[test]
fn cdxj_matches_cdxj_indexer_on_well_formed_corpus_files() {
    let test = "cdxj_matches_cdxj_indexer_on_well_formed_corpus_files";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    if !util::has_python_module("cdxj_indexer", test) {
        return;
    }
    let mut total = 0;
    for f in WELL_FORMED {
        total += assert_same_as_cdxj_indexer_exit(&[&corpus.join(f)], 0);
    }
    for f in SAME_LINES_DAMAGE_REPORTED {
        total += assert_same_as_cdxj_indexer_exit(&[&corpus.join(f)], 2);
    }
    assert!(total > 700, "only {total} lines compared");
}

/// Records where our repair differs from cdxj-indexer's on purpose
/// (FORMATS.md 2.2 lists each one and why): corpus file, our line for the
/// record, and a piece of what cdxj-indexer writes instead (`None`: it stops
/// with an error before that record).
const INTENDED_DIFFERENCES: &[(&str, &str, Option<&str>)] = &[
    (
        "internetarchive__CDX-Writer/tests/small_warcs/15_digit_date.arc.gz",
        r#"com,twitter)/unesco_fr.xml 20151200000000 {"url": "http://twitter.com/unesco_fr.xml", "mime": "text/xml", "status": "200", "digest": "sha1:Q6TYZPCHPZEMHLLIXWNW6MBBCGAJV3MR", "length": "723272", "offset": "673", "filename": "15_digit_date.arc.gz"}"#,
        Some("com,twitter)/unesco_fr.xml 20151201000000 "),
    ),
    (
        "internetarchive__CDX-Writer/tests/small_warcs/arc_v1_with_v2_header.arc.gz",
        r#"com,cdnow)/cgi-bin/mserver/pagename=/rp/cdn/find/discography.html/artistid=henderson*joe/select=music 20001110112000 {"url": "http://www.cdnow.com:80/cgi-bin/mserver/pagename=/RP/CDN/FIND/discography.html/artistid=HENDERSON*JOE/select=music", "mime": "text/html", "status": "200", "digest": "sha1:Z7XLU7KXZVH3AAC6ZZLMMRVWPHC44ALO", "length": "8884", "offset": "179", "filename": "arc_v1_with_v2_header.arc.gz"}"#,
        Some("/select=music 20001110112059 "),
    ),
    (
        "internetarchive__CDX-Writer/tests/small_warcs/hex_instead_of_date.arc.gz",
        r#"se,ki,cbt)/wwwcnt/staff/bergman.jan - {"url": "http://www.cbt.ki.se:80/wwwCNT/Staff/bergman.jan/", "mime": "text/html", "status": "200", "digest": "sha1:6SIKE3B5MYK545CZXFGHULO6EXKYTCMG", "length": "993", "offset": "161", "filename": "hex_instead_of_date.arc.gz"}"#,
        Some("se,ki,cbt)/wwwcnt/staff/bergman.jan 29991231231659 "),
    ),
    (
        "internetarchive__CDX-Writer/tests/small_warcs/transposed_header.arc.gz",
        r#"com,mp3,play)/cgi-bin/play/play.cgi/aaiaqo93mqdabg5vcm1qbaaaafj88quauqeaaabdnyyxp6sbry55rya.wo2ewl.61xo-/losing_time.mp3 20031219215023 {"url": "http://play.mp3.com/cgi-bin/play/play.cgi/AAIAQo93MQDABG5vcm1QBAAAAFJ88QUAUQEAAABDNyyxP6SbRY55RYa.wO2ewL.61xo-/Losing_Time.mp3", "mime": "text/plain", "status": "302", "digest": "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", "length": "347", "offset": "163", "filename": "transposed_header.arc.gz"}"#,
        Some("/losing_time.mp3 29991231231359 "),
    ),
    (
        "internetarchive__CDX-Writer/tests/small_warcs/alexa_charset_in_header.arc.gz",
        r#"fr,allocine,free)/tv/cineaction.asp 20000824015105 {"url": "http://free.allocine.fr:80/tv/cineaction.asp", "mime": "text/html", "status": "200", "digest": "sha1:YSO3GBFJ7KRO3OPF7J43J4NMM4LVR7ZY", "length": "3974", "offset": "168", "filename": "alexa_charset_in_header.arc.gz"}"#,
        Some("fr,allocine,free)/tv/cineaction.asp%20195.68.112.49 29991231235959 "),
    ),
    (
        "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/2-metadata-1.arc",
        r#"dk,netarkivet)/crawl/index/cdx?harvestid=2&jobid=2&majorversion=1&minorversion=0&serialno=00000&timestamp=20060329081336 26050908173821 {"url": "metadata://netarkivet.dk/crawl/index/cdx?majorversion=1&minorversion=0&harvestid=2&jobid=2&timestamp=20060329081336&serialno=00000", "digest": "sha1:VESYGIEHB4GU2QOXMIMIWBM6JSJQ6Y3D", "length": "17805", "offset": "142", "filename": "2-metadata-1.arc"}"#,
        Some(r#"dk,kaarefc)/robots.txt%2083.92.197.98%2020060329081337%20text/html 29991206032908 "#),
    ),
    (
        "netarchivesuite__netarchivesuite/harvester/harvester-test/tests/dk/netarkivet/harvester/indexserver/data/originals/arcfiles/30-metadata-4.arc",
        r#"dk,netarkivet)/crawl/setup/duplicatereductionjobs?harvestid=1&harvestnum=3&jobid=3&majorversion=1&minorversion=0 20170125093039 {"url": "metadata://netarkivet.dk/crawl/setup/duplicatereductionjobs?majorversion=1&minorversion=0&harvestid=1&harvestnum=3&jobid=3", "digest": "sha1:3JFZEN52ZTG7DHAHMDFLPLWEVA2ZAEFQ", "length": "167", "offset": "220", "filename": "30-metadata-4.arc"}"#,
        Some("dk,netarkivet)/crawl/setup/crawler-beans.cxml"),
    ),
    (
        "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/tools/data/originals/test1.arc",
        r#"dk,netarkivet)/test/foo/1 26050906102242 {"url": "testdata://netarkivet.dk/test/foo/1", "digest": "sha1:RL7JTSC4VL7T67OEQNZGVCZOMCDDPBOP", "length": "100", "offset": "135", "filename": "test1.arc"}"#,
        None,
    ),
    (
        "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/tools/data/originals/test2.arc",
        r#"dk,netarkivet)/test/foo/2 26050906102242 {"url": "testdata://netarkivet.dk/test/foo/2", "digest": "sha1:KZUHHEJX72V34URB24GLV4BHRDFO2TS5", "length": "101", "offset": "135", "filename": "test2.arc"}"#,
        None,
    ),
    (
        "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/tools/data/originals/test3.arc",
        r#"dk,netarkivet)/test/bar/1 26050906102242 {"url": "testdata://netarkivet.dk/test/bar/1", "digest": "sha1:BA4FO4SXTZRL27VWA4APJJCVFEWXTKZ3", "length": "108", "offset": "135", "filename": "test3.arc"}"#,
        None,
    ),
    (
        "iipc__webarchive-commons/src/test/resources/org/archive/format/arc/IAH-20080430204825-00000-blackbook-truncated.arc",
        r#"org,archive)/ 20080430204826 {"url": "http://www.archive.org/", "mime": "text/html", "status": "200", "digest": "sha1:2WAXX5NUWNNCS2BDKCO5OVDQBJVNKIVV", "length": "748", "offset": "2376", "filename": "IAH-20080430204825-00000-blackbook-truncated.arc"}"#,
        None,
    ),
    (
        "ukwa__webarchive-discovery/warc-indexer/src/test/resources/IAH-20080430204825-00000-blackbook-truncated.arc",
        r#"org,archive)/ 20080430204826 {"url": "http://www.archive.org/", "mime": "text/html", "status": "200", "digest": "sha1:2WAXX5NUWNNCS2BDKCO5OVDQBJVNKIVV", "length": "748", "offset": "2376", "filename": "IAH-20080430204825-00000-blackbook-truncated.arc"}"#,
        None,
    ),
    (
        "netarchivesuite__netarchivesuite/harvester/harvester-test/tests/dk/netarkivet/harvester/harvesting/distribute/data/originals/testserverdir1/crawldir/arcs/42-117-20051212141240-00000-sb-test-har-001.statsbiblioteket.dk.ARC",
        r#"dk,computerworld,debat)/robots.txt 20040712071243 {"url": "http://debat.computerworld.dk/robots.txt", "digest": "sha1:R4F6JO5SSSUKGJ3UAOUP37CMQAL4BO7V", "length": "4125", "offset": "1572", "filename": "42-117-20051212141240-00000-sb-test-har-001.statsbiblioteket.dk.ARC"}"#,
        Some(r#""digest": "sha1:WIH6GRJXUSQHRMOFDCVWEBSPWU6S64JQ", "length": "4270", "offset": "1572""#),
    ),
];

#[test]
fn cdxj_intended_differences_from_cdxj_indexer() {
    let test = "cdxj_intended_differences_from_cdxj_indexer";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    let reference = util::has_python_module("cdxj_indexer", test);
    for &(file, ours, theirs) in INTENDED_DIFFERENCES {
        let path = corpus.join(file);
        let (out, err, _) = stdout_of(&["index", "-q", "--format", "cdxj", path.to_str().unwrap()]);
        let out = String::from_utf8_lossy(&out).into_owned();
        assert!(
            out.lines().any(|l| l == ours),
            "{file}: our line changed:\n{out}{err}"
        );
        if !reference {
            continue;
        }
        let (got, ok) = cdxj_indexer_run(&[&path]);
        let got = String::from_utf8_lossy(&got).into_owned();
        assert!(
            !got.lines().any(|l| l == ours),
            "{file}: cdxj-indexer now agrees"
        );
        match theirs {
            Some(piece) => assert!(got.contains(piece), "{file}: cdxj-indexer wrote\n{got}"),
            None => assert!(!ok, "{file}: cdxj-indexer no longer stops:\n{got}"),
        }
    }
    // A text file that is no ARC: cdxj-indexer makes a record of its first
    // line; we report it and write nothing.
    let f = corpus.join(
        "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-nonarc.arc",
    );
    let (out, err, code) = stdout_of(&["index", "--format", "cdxj", f.to_str().unwrap()]);
    assert!(out.is_empty() && code == 2, "{err}");
    assert!(
        err.contains("input-nonarc.arc: offset 0: skipped 30 bytes"),
        "{err}"
    );
    if reference {
        let got = String::from_utf8(cdxj_indexer(&[&f])).unwrap();
        assert!(
            got.starts_with("this%20file%20is)/ 29991231235959 "),
            "{got}"
        );
    }
}

/// FORMATS.md 2.4: short ARC dates are padded to the start of the period;
/// warcio (cdxj-indexer) pads to its end. Pinned on a real record.
#[test]
fn cdxj_short_date_repair_differs_from_cdxj_indexer() {
    let test = "cdxj_short_date_repair_differs_from_cdxj_indexer";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    let f = corpus.join("internetarchive__CDX-Writer/tests/small_warcs/10_digit_date.arc.gz");
    let (out, _, _) = stdout_of(&["index", "-q", "--format", "cdxj", f.to_str().unwrap()]);
    let ours = String::from_utf8(out).unwrap();
    assert_eq!(ours.split(' ').nth(1), Some("20160209000000"), "{ours}");
    let (out, _, _) = stdout_of(&["index", "-q", f.to_str().unwrap()]);
    let ukvs = String::from_utf8(out).unwrap();
    assert!(
        ukvs.contains(" 20160209000000 666 ") && ukvs.contains("\"datetime_raw\":\"2016020900\""),
        "{ukvs}"
    );
    if util::has_python_module("cdxj_indexer", test) {
        let theirs = String::from_utf8(cdxj_indexer(&[&f])).unwrap();
        assert_eq!(theirs.split(' ').nth(1), Some("20160209005959"), "{theirs}");
        // Everything but the datetime agrees.
        let rest = |s: &str| s.split_once(" {").map(|(_, r)| r.to_string());
        assert_eq!(rest(&ours), rest(&theirs));
    }
}

/// Regression: jwat's file ends 25 bytes into the next record's header line
/// (`\nhttp://www.bt.dk/node/100`). Those bytes were read as more block of
/// the good record before them, changing its length (2354) and digest. The
/// good record keeps what cdxj-indexer gives it (2328, I2IK...), the cut
/// header is reported with file and offset and counted as skipped.
#[test]
fn header_cut_by_end_of_file_does_not_join_the_record_before() {
    let f = util::data_dir().join("arc/invalid-arcfile-record-then-garbage.arc");
    let (out, err, code) = stdout_of(&["index", "--format", "cdxj", f.to_str().unwrap()]);
    let out = String::from_utf8(out).unwrap();
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.contains(
            r#""digest": "sha1:I2IKYIGO6W5HS2FTK5347ATUZOQNUTFP", "length": "2328", "offset": "0""#
        ),
        "{out}"
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("invalid-arcfile-record-then-garbage.arc: offset 2329: the file ends inside a record header line (25 bytes"),
        "{err}"
    );
    assert!(
        err.contains("1 records indexed") && err.contains("1 damaged records skipped (25 bytes)"),
        "{err}"
    );
}

/// `gzip -c` of a whole ARC file: one member holds every record. The file
/// is read from the decompressed stream and reported with a message naming
/// it: its line is the plain file's (offsets in the decompressed data);
/// the other inputs are indexed as ever.
#[test]
fn file_gzipped_as_one_stream_is_read_and_reported() {
    use std::io::Write;
    let data = util::data_dir().join("arc");
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("whole.arc.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&std::fs::read(data.join("example.arc")).unwrap())
        .unwrap();
    let gz = enc.finish().unwrap();
    std::fs::write(&single, &gz).unwrap();
    let good = data.join("example.arc.gz");
    let plain = data.join("example.arc");
    let (out, err, code) = stdout_of(&[
        "index",
        "--format",
        "cdxj",
        single.to_str().unwrap(),
        good.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    let out = String::from_utf8(out).unwrap();
    assert_eq!(out.lines().count(), 2, "{out}");
    let (of_plain, _, _) = stdout_of(&["index", "--format", "cdxj", plain.to_str().unwrap()]);
    let of_plain = String::from_utf8(of_plain)
        .unwrap()
        .replace("\"example.arc\"", "\"whole.arc.gz\"");
    assert!(
        out.contains(of_plain.trim_end()) && out.contains("\"filename\": \"example.arc.gz\""),
        "{out}"
    );
    assert!(
        err.contains("whole.arc.gz: offset 0: the file is compressed as a single gzip stream"),
        "{err}"
    );
    assert!(err.contains("0 damaged records skipped"), "{err}");
}

/// An ARC record written without gzip between the members of an `.arc.gz`
/// (gen_arc_corpus `raw-member` damage): reported with file and offset,
/// counted as an error, and indexed at its exact offset; junk there is
/// skipped to the next member.
#[test]
fn plain_bytes_inside_arc_gz_are_reported() {
    let gz = std::fs::read(util::data_dir().join("arc/example.arc.gz")).unwrap();
    // Members at 0 (filedesc, 171 bytes) and 171.
    let plain = b"http://example.org/ 1.2.3.4 20140216050222 text/plain 5\nhello\n";
    let dir = tempfile::tempdir().unwrap();
    for (name, insert) in [
        ("mixed.arc.gz", &plain[..]),
        ("junk.arc.gz", &b"\x00\x01junkjunk\n"[..]),
    ] {
        let mut data = gz[..171].to_vec();
        data.extend_from_slice(insert);
        data.extend_from_slice(&gz[171..]);
        let path = dir.path().join(name);
        std::fs::write(&path, &data).unwrap();
        let (out, err, code) = stdout_of(&["index", "--format", "cdxj", path.to_str().unwrap()]);
        assert_eq!(code, 2, "{err}");
        let out = String::from_utf8(out).unwrap();
        let next = 171 + insert.len();
        assert!(
            out.contains(&format!("\"length\": \"856\", \"offset\": \"{next}\"")),
            "{out}"
        );
        if name == "mixed.arc.gz" {
            assert!(
                out.contains("\"length\": \"61\", \"offset\": \"171\""),
                "{out}"
            );
            assert!(
                err.contains("mixed.arc.gz: offset 171: record of 61 bytes is not gzip-compressed"),
                "{err}"
            );
        } else {
            assert_eq!(out.lines().count(), 1, "{out}");
            assert!(
                err.contains("junk.arc.gz: offset 171: skipped 11 bytes")
                    && err.contains("(11 bytes)"),
                "{err}"
            );
        }
    }
}

/// The `!meta` object written for the input file named `name`.
fn file_meta(index: &str, name: &str) -> serde_json::Value {
    index
        .lines()
        .filter_map(|l| l.strip_prefix("!meta "))
        .map(|m| serde_json::from_str::<serde_json::Value>(m).unwrap())
        .find(|m| m["filename"] == name)
        .unwrap_or_else(|| panic!("no !meta for {name}:\n{index}"))
}

/// The filedesc's field-names line (v1 line 3) goes into `!meta` as
/// written, next to the version line and the `<arcmetadata>` fields.
#[test]
fn filedesc_field_names_go_into_meta() {
    let data = util::data_dir().join("arc");
    let v11 = data.join("IAH-20080430204825-00000-blackbook-truncated.arc");
    let v10 = data.join("example.arc");
    let (out, err, code) =
        stdout_of(&["index", "-q", v11.to_str().unwrap(), v10.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let out = String::from_utf8(out).unwrap();
    let v1_names = "URL IP-address Archive-date Content-type Archive-length";
    let meta = file_meta(&out, "IAH-20080430204825-00000-blackbook-truncated.arc");
    assert_eq!(meta["filedesc"]["field_names"], v1_names, "{meta}");
    assert_eq!(meta["filedesc"]["version"], "1.1");
    assert!(meta["filedesc"]["metadata"]["software"]
        .as_str()
        .is_some_and(|s| s.starts_with("Heritrix")));
    let meta = file_meta(&out, "example.arc");
    assert_eq!(meta["filedesc"]["field_names"], v1_names, "{meta}");
    // A v1.0 file whose filedesc names the ten v2 fields.
    let Some(corpus) = util::shared_corpus("filedesc_field_names_go_into_meta") else {
        return;
    };
    let f =
        corpus.join("internetarchive__CDX-Writer/tests/small_warcs/arc_v1_with_v2_header.arc.gz");
    let (out, _, _) = stdout_of(&["index", "-q", f.to_str().unwrap()]);
    let meta = file_meta(
        &String::from_utf8(out).unwrap(),
        "arc_v1_with_v2_header.arc.gz",
    );
    assert_eq!(
        meta["filedesc"]["field_names"],
        "URL IP-address Archive-date Content-type Result-code Checksum Location Offset Filepath Archive-length",
        "{meta}"
    );
}

#[test]
fn jobs_and_memory_do_not_change_the_bytes() {
    let test = "jobs_and_memory_do_not_change_the_bytes";
    let Some(dir) = generate(
        test,
        &["--files", "4", "--records-per-file", "120", "--seed", "5"],
    ) else {
        return;
    };
    let d = dir.path().join("c");
    let d = d.to_str().unwrap();
    for format in ["ukvs", "cdxj", "cdx11"] {
        let (one, _, c1) = stdout_of(&["index", "-q", "-j", "1", "--format", format, d]);
        let (four, _, c4) = stdout_of(&["index", "-q", "-j", "4", "--format", format, d]);
        let (small, _, cs) = stdout_of(&[
            "index", "-q", "-j", "3", "--mem", "4K", "--format", format, d,
        ]);
        assert_eq!((c1, c4, cs), (0, 0, 0));
        assert!(one.len() > 1000);
        assert!(one == four, "{format}: -j 1 and -j 4 differ");
        assert!(
            one == small,
            "{format}: a 4 KiB sort budget changes the output"
        );
        let sorted = lines(&one);
        let in_order: Vec<Vec<u8>> = one
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        assert_eq!(sorted, in_order, "{format}: output is not in byte order");
    }
}

/// One generated record: host, path, date, HTTP status or none (a `dns:`
/// record), body.
type GenRecord = (usize, u8, usize, Option<u16>, Vec<u8>);

/// Writes a small ARC file: a filedesc, then `recs`, plain or one gzip
/// member per record. Hosts, paths and dates come from small sets so that
/// keys and datetimes repeat across records and files (sort ties).
fn write_arc(path: &Path, recs: &[GenRecord], gz: bool) {
    use std::io::Write;
    const HOSTS: [&str; 3] = ["example.com", "www.example.org", "a.example.net"];
    const DATES: [&str; 3] = ["20010203040506", "20010203040507", "20100101000000"];
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut units: Vec<Vec<u8>> = Vec::new();
    let fd_body = b"1 0 Test\nURL IP-address Archive-date Content-type Archive-length\n";
    let mut fd = format!(
        "filedesc://{name} 0.0.0.0 20010203040506 text/plain {}\n",
        fd_body.len()
    )
    .into_bytes();
    fd.extend_from_slice(fd_body);
    units.push(fd);
    for (host, path_no, date, status, body) in recs {
        let host = HOSTS[host % HOSTS.len()];
        let date = DATES[date % DATES.len()];
        let (url, mime, block) = match status {
            Some(code) => {
                let mut block = format!(
                    "HTTP/1.1 {code} X\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                block.extend_from_slice(body);
                (
                    format!("http://{host}/p{}", path_no % 4),
                    "text/html",
                    block,
                )
            }
            None => (format!("dns:{host}"), "text/dns", body.clone()),
        };
        let mut unit = format!("{url} 192.0.2.1 {date} {mime} {}\n", block.len()).into_bytes();
        unit.extend_from_slice(&block);
        units.push(unit);
    }
    let mut out = Vec::new();
    for mut unit in units {
        unit.push(b'\n');
        if gz {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(&unit).unwrap();
            out.extend_from_slice(&enc.finish().unwrap());
        } else {
            out.extend_from_slice(&unit);
        }
    }
    std::fs::write(path, out).unwrap();
}

mod jobs_prop {
    use super::*;
    use proptest::prelude::*;

    fn record() -> impl Strategy<Value = GenRecord> {
        (
            0usize..3,
            any::<u8>(),
            0usize..3,
            proptest::option::of(prop_oneof![Just(200u16), Just(302), Just(404)]),
            proptest::collection::vec(any::<u8>(), 0..200),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

        /// Sorted and `--no-sort` output, in every profile, is the same
        /// bytes for `-j 1`, `-j 2` and `-j 4` (with `--no-sort`, at a
        /// memory bound that makes it spill) on generated files plus a
        /// random pick of the ARC fixtures in `tests/data/arc`.
        #[test]
        fn jobs_do_not_change_the_output(
            files in proptest::collection::vec(
                (proptest::collection::vec(record(), 0..12), any::<bool>()),
                1..6,
            ),
            fixtures in proptest::sample::subsequence(
                vec!["example.arc", "example.arc.gz", "bad.arc", "badexample.arc.gz",
                     "IAH-20080430204825-00000-blackbook-truncated.arc",
                     "invalid-arcfile-record-then-garbage.arc"],
                0..=3,
            ),
            format in prop_oneof![Just("ukvs"), Just("cdxj"), Just("cdx11")],
            no_sort in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut inputs = Vec::new();
            for (i, (recs, gz)) in files.iter().enumerate() {
                let p = dir.path().join(format!("g{i}.arc{}", if *gz { ".gz" } else { "" }));
                write_arc(&p, recs, *gz);
                inputs.push(p);
            }
            for f in &fixtures {
                inputs.push(util::data_dir().join("arc").join(f));
            }
            let run_with = |jobs: &str, extra: &[&'static str]| {
                let mut args = vec!["index", "-q", "-j", jobs, "--format", format];
                args.extend(extra);
                if no_sort {
                    args.push("--no-sort");
                    if jobs == "4" {
                        // Lines held back for file order spill to disk.
                        args.extend(["--mem", "1"]);
                    }
                }
                args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
                stdout_of(&args)
            };
            let run = |jobs: &str| run_with(jobs, &[]);
            let (one, err, code) = run("1");
            prop_assert!(code == 0 || code == 2, "{}", err);
            // CDXJ has no header lines: only a generated record (each gives
            // a line) makes sure of output; the other formats write their
            // headers whatever the files hold.
            if format == "cdxj" {
                let records = files.iter().any(|(recs, _)| !recs.is_empty());
                prop_assert!(!records || !one.is_empty());
            } else {
                prop_assert!(one.len() > 10);
            }
            // Files read through a buffer instead of a memory map: the same
            // records, and the same damage reported in the same words.
            let (streamed, streamed_err, c) = run_with("1", &["--no-mmap"]);
            prop_assert_eq!(c, code);
            prop_assert!(streamed == one, "{} --no-mmap differs", format);
            prop_assert_eq!(streamed_err, err);
            for jobs in ["2", "4"] {
                let (out, _, c) = run(jobs);
                prop_assert_eq!(c, code);
                prop_assert!(out == one, "{} -j {} differs from -j 1", format, jobs);
            }
        }
    }
}

/// `--no-sort` of one file opens with the file's `!meta` when its first
/// record gives it (a filedesc, or a warcinfo that comes first), as its
/// sorted index does: the same header lines, and the same data lines in
/// file order, whatever `--mem`. A warcinfo after other records comes too
/// late for headers that must come first (the sorted index has it), and
/// a file with none has no `!meta`. Of several files, the headers come
/// before any file is read, with no file's `!meta`.
#[test]
fn no_sort_of_one_file_opens_with_its_meta() {
    let dir = tempfile::tempdir().unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let warc = util::data_dir().join("warc");
    let late = dir.path().join("late.warc.gz");
    let mut bytes = std::fs::read(warc.join("cc.warc.gz")).unwrap();
    bytes.extend(std::fs::read(samples.join("example.warc.gz")).unwrap());
    std::fs::write(&late, bytes).unwrap();
    let split = |out: Vec<u8>| -> (Vec<String>, Vec<String>) {
        let text = String::from_utf8(out).unwrap();
        text.lines()
            .map(String::from)
            .partition(|l| l.starts_with('!'))
    };
    // Whether the sorted index has the file's `!meta`, and the unsorted.
    for (input, sorted_has, unsorted_has) in [
        (samples.join("example.warc.gz"), true, true),
        (samples.join("example.arc.gz"), true, true),
        (late.clone(), true, false),
        (warc.join("post-test.warc.gz"), false, false),
    ] {
        let p = input.to_str().unwrap();
        let (sorted_out, err, code) = stdout_of(&["index", "-q", p]);
        assert_eq!(code, 0, "{p}: {err}");
        let (mut headers, mut lines) = split(sorted_out);
        let name = input.file_name().unwrap().to_str().unwrap();
        let meta = format!("!meta {{\"filename\":\"{name}\"");
        assert_eq!(
            headers.iter().any(|h| h.starts_with(&meta)),
            sorted_has,
            "{p}"
        );
        if !unsorted_has {
            headers.retain(|h| !h.starts_with(&meta));
        }
        lines.sort();
        for mem in [&[][..], &["--mem", "1"]] {
            let mut args = vec!["index", "-q", "--no-sort", p];
            args.extend(mem);
            let (out, err, code) = stdout_of(&args);
            assert_eq!(code, 0, "{args:?}: {err}");
            let (h, mut l) = split(out);
            assert_eq!(h, headers, "{args:?}");
            assert!(!l.is_empty(), "{args:?}");
            l.sort();
            assert_eq!(l, lines, "{args:?}");
        }
    }
    let one = samples.join("example.warc.gz");
    let one = one.to_str().unwrap();
    let (out, _, code) = stdout_of(&["index", "-q", "--no-sort", one, one]);
    assert_eq!(code, 0);
    let (h, _) = split(out);
    assert!(h.iter().all(|h| !h.contains("filename")), "{h:?}");
}

#[test]
fn no_sort_streams_files_in_input_order() {
    let test = "no_sort_streams_files_in_input_order";
    let Some(dir) = generate(
        test,
        &["--files", "3", "--records-per-file", "60", "--seed", "9"],
    ) else {
        return;
    };
    let files = arc_files(&dir.path().join("c"));
    let mut args = vec!["index", "-q", "--no-sort", "-j", "3", "--format", "cdx11"];
    // Reverse order on the command line: output must follow it.
    args.extend(files.iter().rev().map(|p| p.to_str().unwrap()));
    let (out, _, code) = stdout_of(&args);
    assert_eq!(code, 0);
    let text = String::from_utf8(out).unwrap();
    let mut seen = Vec::new();
    let mut last = (String::new(), 0u64);
    for l in text.lines().skip(1) {
        let f: Vec<&str> = l.split(' ').collect();
        let (name, offset) = (f[10].to_string(), f[9].parse::<u64>().unwrap());
        if name != last.0 {
            seen.push(name.clone());
            last = (name, offset);
        } else {
            assert!(offset > last.1, "offsets go backwards in {l}");
            last.1 = offset;
        }
    }
    let expected: Vec<String> = files
        .iter()
        .rev()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(seen, expected);
}

/// Damage from the generator: every record the truth file marks undamaged
/// is indexed with its offset, length and digest; errors name the file and
/// the offset; the exit code is 2.
///
/// One known difference between `truth.tsv` and the bytes on disk is
/// corrected for: in plain `.arc` files the truth length counts the `\n`
/// after the record, which the reference indexers (and this one) leave out.
#[test]
fn corrupt_corpus_keeps_every_good_record() {
    let test = "corrupt_corpus_keeps_every_good_record";
    for flavour in ["--gz", "--plain"] {
        let Some(dir) = generate(
            test,
            &[
                "--files",
                "6",
                "--records-per-file",
                "40",
                "--seed",
                "7",
                "--corrupt",
                "6",
                "--truth",
                flavour,
            ],
        ) else {
            return;
        };
        let root = dir.path().join("c");
        let truth = std::fs::read_to_string(root.join("truth.tsv")).unwrap();
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(root.join("MANIFEST.json")).unwrap()).unwrap();
        let garbage = manifest["damage"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"] == "garbage" && d.get("skipped").is_none())
            .count();
        assert!(garbage > 0, "{flavour}: the corpus has no garbage damage");
        let (out, err, code) = stdout_of(&["index", "--format", "cdxj", root.to_str().unwrap()]);
        assert_eq!(code, 2, "damage must give exit code 2\n{err}");
        assert!(err.contains(".arc") && err.contains(": offset "), "{err}");
        let ours: BTreeSet<(String, u64, u64, String)> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| {
                let json: serde_json::Value =
                    serde_json::from_str(l.split_once(' ').unwrap().1.split_once(' ').unwrap().1)
                        .unwrap();
                let s = |k: &str| json[k].as_str().unwrap_or("").to_string();
                (
                    s("filename"),
                    s("offset").parse().unwrap(),
                    s("length").parse().unwrap(),
                    s("digest"),
                )
            })
            .collect();
        let mut good = 0;
        let mut missing = Vec::new();
        for row in truth.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = row.split('\t').collect();
            if f.len() < 11 || f[10] != "-" || f[9] == "filedesc" {
                continue;
            }
            good += 1;
            let offset: u64 = f[1].parse().unwrap();
            let mut length: u64 = f[2].parse().unwrap();
            if flavour == "--plain" {
                length -= 1;
            }
            let want = (f[0].to_string(), offset, length, format!("sha1:{}", f[8]));
            if !ours.contains(&want) {
                missing.push(row.to_string());
            }
        }
        assert!(
            good > 150,
            "{flavour}: only {good} good records in the truth file"
        );
        assert!(
            missing.is_empty(),
            "{flavour}: {} of {good} good records lost:\n{}\n{err}",
            missing.len(),
            missing.join("\n")
        );
        eprintln!("{flavour}: all {good} undamaged records indexed; reported:\n{err}");
    }
}

#[test]
fn samples_index_matches_expected() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let expected =
        std::fs::read(root.join("samples/expected.ukvs")).expect("samples/expected.ukvs");
    let (out, err, code) = stdout_of(&["index", "-q", root.join("samples").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out == expected,
        "ukvs index samples/ differs from samples/expected.ukvs:\n{}",
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn output_file_is_written_atomically_and_strict_stops() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sample = root.join("samples/example.arc");
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.cdx");
    let missing = dir.path().join("missing.arc");
    let args = |strict: bool| {
        let mut a = vec![
            "index".to_string(),
            "--format".into(),
            "cdx11".into(),
            "-o".into(),
            target.to_string_lossy().into_owned(),
            sample.to_string_lossy().into_owned(),
            missing.to_string_lossy().into_owned(),
        ];
        if strict {
            a.push("--strict".into());
        }
        a
    };
    let strict: Vec<String> = args(true);
    let out = util::run(&strict.iter().map(String::as_str).collect::<Vec<_>>(), b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(!target.exists(), "--strict must not leave an output file");
    let lax = args(false);
    let out = util::run(&lax.iter().map(String::as_str).collect::<Vec<_>>(), b"");
    assert_eq!(out.status.code(), Some(2), "a missing input is an error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing.arc"), "{err}");
    let written = std::fs::read_to_string(&target).unwrap();
    assert_eq!(
        written.lines().count(),
        2,
        "header + the good record:\n{written}"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "temporary files left: {leftovers:?}");
}

#[test]
fn directories_and_stdin_paths() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sub/deeper")).unwrap();
    std::fs::copy(root.join("samples/example.arc"), dir.path().join("A.ARC")).unwrap();
    std::fs::copy(
        root.join("samples/example.arc.gz"),
        dir.path().join("sub/deeper/b.Arc.Gz"),
    )
    .unwrap();
    std::fs::write(dir.path().join("sub/notes.txt"), "not an archive").unwrap();
    let (by_dir, err, code) =
        stdout_of(&["index", "--format", "cdx11", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 files"), "{err}");
    let text = String::from_utf8(by_dir.clone()).unwrap();
    assert!(
        text.contains(" A.ARC\n") && text.contains(" b.Arc.Gz\n"),
        "{text}"
    );
    let list = format!(
        "{}\n{}\n",
        dir.path().join("A.ARC").display(),
        dir.path().join("sub/deeper/b.Arc.Gz").display()
    );
    let out = util::run(&["index", "-q", "--format", "cdx11", "-"], list.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, by_dir);
}

/// A directory without ARC or WARC files is named in a warning; no input at all is
/// an error (exit 2), not a silently empty index.
#[test]
fn empty_directory_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    let empty = dir.path().join("empty");
    let (_, err, code) = stdout_of(&["index", empty.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("empty: no ARC or WARC files (*.arc, *.arc.gz, *.warc"),
        "{err}"
    );
    assert!(err.contains("no ARC or WARC files to index"), "{err}");
    // Beside a real file the empty directory only warns.
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/example.arc");
    let (out, err, code) = stdout_of(&["index", empty.to_str().unwrap(), sample.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("no ARC or WARC files"), "{err}");
    assert!(String::from_utf8(out).unwrap().contains("com,example)/"));
}

/// A URL the reference cannot canonicalise (a port out of range) keeps
/// the URL as its key in every profile, with a warning naming the file
/// and offset, and a count in the summary; the run succeeds.
#[test]
fn uncanonical_urls_are_warned_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let body = "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\nhi";
    let mut arc = Vec::new();
    for (i, url) in ["http://example.com:99999/x", "http://example.com/ok"]
        .iter()
        .enumerate()
    {
        arc.extend_from_slice(
            format!(
                "{url} 1.2.3.4 2008043020482{i} text/html {}\n{body}\n",
                body.len()
            )
            .as_bytes(),
        );
    }
    let path = dir.path().join("ports.arc");
    std::fs::write(&path, &arc).unwrap();
    for format in ["ukvs", "cdxj", "cdx11"] {
        let (out, err, code) = stdout_of(&["index", "--format", format, path.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("ports.arc: offset 0: invalid port \"99999\"")
                && err.contains("the key is the URL"),
            "{format}: {err}"
        );
        assert!(err.contains("1 URLs kept as keys"), "{format}: {err}");
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.lines()
                .any(|l| l.starts_with("http://example.com:99999/x ")),
            "{format}: {out}"
        );
    }
}

/// An input file that another process cuts short while it is indexed is
/// reported by name, mapped (SIGBUS caught) or read (`--no-mmap`), the run
/// ends with exit code 2, and `-o` commits nothing.
#[cfg(target_os = "linux")]
#[test]
fn an_input_cut_short_while_it_is_read_is_reported_by_name() {
    use std::io::Read;
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let mut arc = Vec::new();
    for i in 0..150_000 {
        let body = format!("HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<p>{i}</p>\n");
        arc.extend_from_slice(
            format!(
                "http://h{}.example.com/p/{i} 1.2.3.4 20040101000000 text/html {}\n{body}\n",
                i % 97,
                body.len()
            )
            .as_bytes(),
        );
    }
    let cut_at = arc.len() as u64 / 2;
    for mode in [None, Some("--no-mmap")] {
        let input = dir.path().join("in.arc");
        std::fs::write(&input, &arc).unwrap();
        let mut args = vec!["index", "--no-sort", "-j", "1", "-q"];
        args.extend(mode);
        args.push(input.to_str().unwrap());
        let mut child = Command::new(util::bin())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Output not read yet holds the run back within its first
        // megabytes; once a byte of it comes, the file is being read.
        let mut out = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        out.read_exact(&mut first).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&input)
            .unwrap()
            .set_len(cut_at)
            .unwrap();
        let mut rest = Vec::new();
        out.read_to_end(&mut rest).unwrap();
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{mode:?}: {err}");
        let named = format!("{}: ", input.display());
        let said = match mode {
            None => "the file was cut short while it was read (it is mapped into memory)",
            Some(_) => "the file shrank from",
        };
        assert!(err.contains(&format!("{named}{said}")), "{mode:?}: {err}");
    }
    // With -o, nothing is committed and the next run removes what the
    // stopped one left.
    let input = dir.path().join("in.arc");
    std::fs::write(&input, &arc).unwrap();
    let dest = dir.path().join("out.ukvs");
    std::fs::write(&dest, b"old\n").unwrap();
    let child = Command::new(util::bin())
        .args(["index", "-j", "1", "-q", "-o"])
        .arg(&dest)
        .arg(&input)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the file is mapped.
    let maps = format!("/proc/{}/maps", child.id());
    let shown = input.to_str().unwrap().to_string();
    for _ in 0..2000 {
        if std::fs::read_to_string(&maps).is_ok_and(|m| m.contains(&shown)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(&input)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let dest_now = std::fs::read(&dest).unwrap();
    match o.status.code() {
        // Cut while it was read: the old output stays.
        Some(2) => {
            assert!(
                err.contains(&format!("{shown}: the file was cut short")),
                "{err}"
            );
            assert_eq!(dest_now, b"old\n");
        }
        // Read whole before the cut: the whole new index.
        Some(0) => assert_eq!(dest_now.iter().filter(|&&b| b == b'\n').count(), 150_003),
        other => panic!("{other:?}: {err}"),
    }
    std::fs::write(&input, &arc[..4096]).unwrap();
    let o = util::run(&["index", "-q", "-o", dest.to_str().unwrap(), &shown], b"");
    assert_eq!(o.status.code(), Some(2), "the cut record is reported");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".ukvs-tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `-` reads the paths of the files to index; an archive piped to it is
/// refused with what to do instead, and indexing `/dev/stdin` reads it.
#[test]
fn an_archive_piped_to_the_path_list_is_refused_with_what_to_do() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let warc = std::fs::read(samples.join("example.warc.gz")).unwrap();
    let r = util::run(&["index", "-"], &warc);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(r.stdout.is_empty());
    assert!(
        err.contains("stdin holds WARC records, not paths") && err.contains("/dev/stdin"),
        "{err}"
    );
    let piped = util::run(&["index", "/dev/stdin"], &warc);
    util::assert_ok(&piped);
    let named = util::run(
        &["index", samples.join("example.warc.gz").to_str().unwrap()],
        b"",
    );
    util::assert_ok(&named);
    let data = |o: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.starts_with('!'))
            .map(|l| l.replace("\"filename\":\"stdin\"", "\"filename\":\"example.warc.gz\""))
            .collect()
    };
    assert!(!data(&named).is_empty());
    assert_eq!(data(&piped), data(&named));
    // A list of paths is read as before.
    let list = format!("{}\n", samples.join("example.arc").display());
    let listed = util::run(&["index", "-"], list.as_bytes());
    util::assert_ok(&listed);
    assert!(!data(&listed).is_empty());
}
