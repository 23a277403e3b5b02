//! `ukvs index` through the binary: conformance with CDX-Writer's expected
//! outputs and with cdxj-indexer run live, determinism across `-j`,
//! damaged input, and the command-line contract.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;

fn stdout_of(args: &[&str]) -> (Vec<u8>, String, i32) {
    let out = util::run(args, b"");
    (
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    v.sort();
    v
}

fn show(lines: &[Vec<u8>]) -> String {
    lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs CDX-Writer's tests for every ARC input: our cdx11 lines must be
/// the expected ones, as sorted line sets.
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
            n.ends_with(".arc") || n.ends_with(".arc.gz")
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
    assert!(checked >= 20, "only {checked} ARC inputs found");
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

/// Runs the installed `cdxj-indexer` on `inputs`.
fn cdxj_indexer(inputs: &[&Path]) -> Vec<u8> {
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
    assert!(
        out.status.success(),
        "cdxj-indexer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn assert_same_as_cdxj_indexer(inputs: &[&Path]) {
    let mut args = vec!["index", "-q", "--format", "cdxj"];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    let (out, err, code) = stdout_of(&args);
    assert_eq!(code, 0, "{err}");
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
    assert!(!ours.is_empty());
}

/// Generates a corpus with the shared generator into a new temporary dir.
fn generate(test: &str, extra: &[&str]) -> Option<tempfile::TempDir> {
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
/// 14, 16 or 18 digits, parseable header lines).
const WELL_FORMED: &[&str] = &[
    "webrecorder__warcio/test/data/example.arc",
    "webrecorder__warcio/test/data/example.arc.gz",
    "netarchivesuite__jwat/jwat-arc/src/test/resources/small_BNF.arc",
    "netarchivesuite__jwat/jwat-arc/src/test/resources/1-1-20110922131213-00000-svc-VirtualBox.arc",
    "internetarchive__CDX-Writer/tests/small_warcs/16_digit_date.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/18_digit_date.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/bad_mime_type.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/carriage_return_in_url.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/chardet_failure_url.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/empty_record.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/formfeed_in_url.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/meta_tag_FI.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/meta_tag_I.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/non_ascii_url.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/spaces_in_url.arc.gz",
    "internetarchive__CDX-Writer/tests/small_warcs/uncompressed.arc",
    "netarchivesuite__netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/bitarchive/data/admin/originals/CorrectTest1.ARC",
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
    for f in WELL_FORMED {
        assert_same_as_cdxj_indexer(&[&corpus.join(f)]);
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
/// is refused with a message naming it, and no line (no bogus offset) is
/// written for it; the other inputs are indexed.
#[test]
fn file_gzipped_as_one_stream_is_refused() {
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
    let (out, err, code) = stdout_of(&[
        "index",
        "--format",
        "cdxj",
        single.to_str().unwrap(),
        good.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    let out = String::from_utf8(out).unwrap();
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.contains("\"filename\": \"example.arc.gz\"") && !out.contains("whole.arc.gz"),
        "{out}"
    );
    let want = format!(
        "whole.arc.gz: offset 0: the file is compressed as a single gzip stream \
         (its first gzip member holds more than one ARC record): record offsets \
         cannot be given, so its {} bytes from here were not indexed",
        gz.len()
    );
    assert!(err.contains(&want), "{err}");
    assert!(err.contains("1 damaged records skipped"), "{err}");
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
/// Two known differences between `truth.tsv` and the bytes on disk are
/// corrected for: in plain `.arc` files the truth length counts the `\n`
/// after the record, which the reference indexers (and this one) leave out;
/// and the generator writes one byte more garbage than it records (its
/// 25-byte marker goes into a 24-byte slice of the junk), so records after
/// a garbage spot sit one byte later than the truth says.
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
        let garbage: Vec<(String, u64)> = manifest["damage"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"] == "garbage" && d.get("skipped").is_none())
            .map(|d| {
                (
                    d["file"].as_str().unwrap().to_string(),
                    d["offset"].as_u64().unwrap(),
                )
            })
            .collect();
        assert!(
            !garbage.is_empty(),
            "{flavour}: the corpus has no garbage damage"
        );
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
            let mut offset: u64 = f[1].parse().unwrap();
            let mut length: u64 = f[2].parse().unwrap();
            offset += garbage
                .iter()
                .filter(|(file, at)| file == f[0] && *at < offset)
                .count() as u64;
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
