//! WARC input: the reader on real and generated files, `ukvs index` on
//! WARC against cdxj-indexer run live, CDX-Writer's and pywb's expected
//! outputs and the generator's truth, damage, zstd, single-stream files,
//! mixed inputs, and no panic on any bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;
use ukvs::capture::{self, Indexer, Profile};
use ukvs::warc::{self, Reader, Record};

use crate::index::{cdxj_indexer_run, generate, lines, show, stdout_of};
use crate::util;

fn warc_dir() -> PathBuf {
    util::data_dir().join("warc")
}

/// WARC files of a directory, sorted.
fn warc_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".warc"))
        .collect();
    v.sort();
    v
}

/// Every WARC file of the shared corpus (by name: `.warc` in it, and no
/// text index).
pub(crate) fn corpus_warcs(root: &Path) -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                let n = p.file_name().unwrap().to_string_lossy().to_lowercase();
                if n.contains(".warc") && !n.ends_with(".cdx") && !n.ends_with(".cdxj") {
                    out.push(p);
                }
            }
        }
    }
    let mut v = Vec::new();
    walk(root, &mut v);
    v.sort();
    v
}

/// Our cdxj lines for `inputs` (extra arguments first), with the exit code
/// and stderr.
fn ours(extra: &[&str], inputs: &[&Path]) -> (Vec<Vec<u8>>, String, i32) {
    let mut args = vec!["index", "-q", "--format", "cdxj"];
    args.extend_from_slice(extra);
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    let (out, err, code) = stdout_of(&args);
    (lines(&out), err, code)
}

fn diff(ours: &[Vec<u8>], theirs: &[Vec<u8>]) -> Option<String> {
    let a: BTreeSet<_> = ours.iter().collect();
    let b: BTreeSet<_> = theirs.iter().collect();
    if a == b && ours.len() == theirs.len() {
        return None;
    }
    let only = |x: &BTreeSet<&Vec<u8>>, y: &BTreeSet<&Vec<u8>>| {
        show(&x.difference(y).map(|l| l.to_vec()).collect::<Vec<_>>())
    };
    Some(format!(
        "--- only ours\n{}\n--- only the peer\n{}",
        only(&a, &b),
        only(&b, &a)
    ))
}

/// Every WARC file of the shared corpus that cdxj-indexer reads without
/// an error gives its lines exactly; on the ones it fails on, we exit 0
/// or 2, never panic, and say why on stderr when we exit 2.
#[test]
fn cdxj_matches_cdxj_indexer_on_every_corpus_warc() {
    let test = "cdxj_matches_cdxj_indexer_on_every_corpus_warc";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    if !util::has_python_module("cdxj_indexer", test) {
        return;
    }
    let (mut same, mut peer_fails, mut total) = (0, 0, 0);
    let mut failures = Vec::new();
    for f in corpus_warcs(&corpus) {
        let (theirs, ok) = cdxj_indexer_run(&[&f]);
        let (mine, err, code) = ours(&[], &[&f]);
        assert!(
            code == 0 || code == 2,
            "{}: exit {code}\n{err}",
            f.display()
        );
        if code == 2 {
            assert!(err.contains(": offset "), "{}: {err}", f.display());
        }
        if !ok {
            peer_fails += 1;
            continue;
        }
        total += mine.len();
        match diff(&mine, &lines(&theirs)) {
            None => same += 1,
            Some(d) => failures.push(format!("{}\n{d}", f.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(same >= 60 && total >= 700, "{same} files, {total} lines");
    assert!(peer_fails <= 6, "cdxj-indexer failed on {peer_fails} files");
}

/// `--all-records` is cdxj-indexer's `--records all` on the repository's
/// own WARC files.
#[test]
fn cdxj_all_records_matches_records_all() {
    let test = "cdxj_all_records_matches_records_all";
    if !util::has_python_module("cdxj_indexer", test) {
        return;
    }
    let mut n = 0;
    for f in warc_files(&warc_dir()) {
        let out = Command::new("cdxj-indexer")
            .args(["--records", "all"])
            .arg(&f)
            .output()
            .expect("run cdxj-indexer");
        if !out.status.success() {
            continue;
        }
        let (mine, err, _) = ours(&["--all-records"], &[&f]);
        if let Some(d) = diff(&mine, &lines(&out.stdout)) {
            panic!("{}\n{d}\n{err}", f.display());
        }
        n += mine.len();
    }
    assert!(n > 40, "only {n} lines");
}

/// pywb's expected 11-field CDX of its sample WARCs (made by pywb's
/// indexer; our cdx11 follows CDX-Writer, which agrees on these).
#[test]
fn cdx11_matches_pywb_expected_cdx() {
    let test = "cdx11_matches_pywb_expected_cdx";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    let root = corpus.join("webrecorder__pywb/sample_archive");
    for (cdx, warcs) in [
        ("example.cdx", &["example.warc.gz"][..]),
        ("dupes.cdx", &["dupes.warc.gz"]),
        ("iana.cdx", &["iana.warc.gz"]),
        (
            "url-agnost-example.cdx",
            &[
                "example-url-agnostic-orig.warc.gz",
                "example-url-agnostic-revisit.warc.gz",
            ],
        ),
    ] {
        let mut args = vec!["index", "-q", "--format", "cdx11"];
        let paths: Vec<String> = warcs
            .iter()
            .map(|w| root.join("warcs").join(w).to_string_lossy().into_owned())
            .collect();
        args.extend(paths.iter().map(String::as_str));
        let (out, err, code) = stdout_of(&args);
        assert_eq!(code, 0, "{cdx}: {err}");
        let expected = std::fs::read(root.join("cdx").join(cdx)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&expected),
            "{cdx}"
        );
    }
}

/// Lines of the truth file of a generated WARC corpus.
struct Truth {
    file: String,
    offset: u64,
    length: u64,
    warc_type: String,
    digest: String,
    damage: String,
}

fn truth(root: &Path) -> Vec<Truth> {
    std::fs::read_to_string(root.join("truth.tsv"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(f.len() >= 12, "truth line {l:?}");
            Truth {
                file: f[0].into(),
                offset: f[1].parse().unwrap(),
                length: f[2].parse().unwrap(),
                warc_type: f[3].into(),
                digest: f[9].into(),
                damage: f[11].into(),
            }
        })
        .collect()
}

/// (filename, offset, length, digest) of our cdxj lines.
fn located(lines: &[Vec<u8>]) -> BTreeSet<(String, u64, u64, String)> {
    lines
        .iter()
        .map(|l| {
            let text = String::from_utf8_lossy(l);
            let json = &text[text.find('{').unwrap()..];
            let v: serde_json::Value = serde_json::from_str(json).unwrap();
            let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
            (
                s("filename"),
                s("offset").parse().unwrap(),
                s("length").parse().unwrap(),
                s("digest"),
            )
        })
        .collect()
}

/// Generated corpora (gzip and plain): the lines are cdxj-indexer's, and
/// every record it indexes sits where the truth file says, with its
/// digest.
#[test]
fn generated_warc_corpora_match_cdxj_indexer_and_truth() {
    let test = "generated_warc_corpora_match_cdxj_indexer_and_truth";
    let peer = util::has_python_module("cdxj_indexer", test);
    for flavour in ["--gz", "--plain"] {
        let Some(dir) = generate(
            test,
            &[
                "--warc",
                "--files",
                "2",
                "--records-per-file",
                "150",
                "--seed",
                "5",
                "--truth",
                flavour,
            ],
        ) else {
            return;
        };
        let root = dir.path().join("c");
        let files = warc_files(&root);
        let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        let (mine, err, code) = ours(&[], &refs);
        assert_eq!(code, 0, "{flavour}: {err}");
        if peer {
            let (theirs, ok) = cdxj_indexer_run(&refs);
            assert!(ok);
            if let Some(d) = diff(&mine, &lines(&theirs)) {
                panic!("{flavour}\n{d}");
            }
        }
        let got = located(&mine);
        let mut checked = 0;
        for t in truth(&root) {
            if !matches!(t.warc_type.as_str(), "response" | "revisit" | "resource") {
                continue;
            }
            let length = if flavour == "--plain" {
                t.length - 4
            } else {
                t.length
            };
            let want = (
                t.file.clone(),
                t.offset,
                length,
                format!("sha1:{}", t.digest),
            );
            assert!(got.contains(&want), "{flavour}: {want:?} missing");
            checked += 1;
        }
        assert!(checked > 250, "{flavour}: only {checked} records");
        assert_eq!(checked, mine.len(), "{flavour}: lines beyond the truth");
    }
}

/// Damaged corpora (every WARC damage kind): exit 2, each damaged file
/// named with an offset on stderr, every intact record indexed with its
/// offset, length and digest.
#[test]
fn damaged_warc_corpora_keep_every_intact_record() {
    let test = "damaged_warc_corpora_keep_every_intact_record";
    for flavour in ["--gz", "--plain"] {
        let Some(dir) = generate(
            test,
            &[
                "--warc",
                "--files",
                "7",
                "--records-per-file",
                "60",
                "--seed",
                "7",
                "--corrupt",
                "7",
                "--truth",
                flavour,
            ],
        ) else {
            return;
        };
        let root = dir.path().join("c");
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(root.join("MANIFEST.json")).unwrap()).unwrap();
        let (out, err, code) = stdout_of(&["index", "--format", "cdxj", root.to_str().unwrap()]);
        assert_eq!(code, 2, "{flavour}: damage must give exit code 2\n{err}");
        let mut kinds = 0;
        for d in manifest["damage"].as_array().unwrap() {
            // A URL with spaces is read as warcio reads it, and a gzip
            // member in a plain file is read like any record: neither is
            // damage to report.
            let harmless =
                d["kind"] == "space-in-url" || (flavour == "--plain" && d["kind"] == "raw-member");
            if d.get("skipped").is_some() || harmless {
                continue;
            }
            kinds += 1;
            let file = d["file"].as_str().unwrap();
            assert!(
                err.lines()
                    .any(|l| l.contains(file) && l.contains(": offset ")),
                "{flavour}: {} in {file} not reported\n{err}",
                d["kind"]
            );
        }
        assert!(kinds >= 5, "{flavour}: only {kinds} damage kinds placed");
        let got = located(&lines(&out));
        let mut missing = Vec::new();
        let mut good = 0;
        for t in truth(&root) {
            if t.damage != "-"
                || !matches!(t.warc_type.as_str(), "response" | "revisit" | "resource")
            {
                continue;
            }
            good += 1;
            let length = if flavour == "--plain" {
                t.length - 4
            } else {
                t.length
            };
            let want = (
                t.file.clone(),
                t.offset,
                length,
                format!("sha1:{}", t.digest),
            );
            if !got.contains(&want) {
                missing.push(format!("{want:?}"));
            }
        }
        assert!(good > 300, "{flavour}: only {good} intact records");
        assert!(
            missing.is_empty(),
            "{flavour}: intact records missing:\n{}\n{err}",
            missing.join("\n")
        );
    }
}

/// Each gzip member of `data`: its decoded bytes.
fn members(data: &[u8]) -> Vec<Vec<u8>> {
    let mut rest = data;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let mut dec = flate2::bufread::GzDecoder::new(rest);
        let mut m = Vec::new();
        dec.read_to_end(&mut m).unwrap();
        rest = dec.into_inner();
        out.push(m);
    }
    out
}

/// The same records as per-record zstd, with and without a dictionary
/// frame, index like the gzip file: the same lines but for offset, length
/// and file name, and each offset is its frame's.
#[test]
fn zstd_files_index_like_gzip() {
    let test = "zstd_files_index_like_gzip";
    let Some(dir) = generate(
        test,
        &[
            "--warc",
            "--files",
            "1",
            "--records-per-file",
            "120",
            "--seed",
            "9",
        ],
    ) else {
        return;
    };
    let root = dir.path().join("c");
    let gz = warc_files(&root).remove(0);
    let recs = members(&std::fs::read(&gz).unwrap());
    let dict = recs[..8].concat();
    for with_dict in [false, true] {
        let mut data = Vec::new();
        if with_dict {
            data.extend_from_slice(&0x184D_2A5Du32.to_le_bytes());
            let compressed = zstd::stream::encode_all(&dict[..], 3).unwrap();
            data.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
            data.extend_from_slice(&compressed);
        }
        let mut frames = BTreeMap::new();
        for r in &recs {
            let start = data.len() as u64;
            let frame = if with_dict {
                zstd::bulk::Compressor::with_dictionary(3, &dict)
                    .unwrap()
                    .compress(r)
                    .unwrap()
            } else {
                zstd::stream::encode_all(&r[..], 3).unwrap()
            };
            data.extend_from_slice(&frame);
            frames.insert(start, frame.len() as u64);
        }
        let zst = root.join("x.warc.zst");
        std::fs::File::create(&zst)
            .unwrap()
            .write_all(&data)
            .unwrap();
        let strip = |ls: Vec<Vec<u8>>| -> Vec<String> {
            ls.iter()
                .map(|l| {
                    let t = String::from_utf8_lossy(l);
                    t[..t.find(", \"length\"").unwrap()].to_string()
                })
                .collect()
        };
        let (a, err, code) = ours(&[], &[&zst]);
        assert_eq!(code, 0, "{err}");
        for (_, offset, length, _) in located(&a) {
            assert_eq!(frames.get(&offset), Some(&length), "frame at {offset}");
        }
        let (b, _, _) = ours(&[], &[&gz]);
        assert_eq!(strip(a), strip(b), "dictionary: {with_dict}");
        let (read, err, code) = ours(&["--no-mmap"], &[&zst]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(read, ours(&[], &[&zst]).0, "read and mapped differ");
    }
}

/// A WARC gzipped as one stream is read and reported: its records are
/// indexed with offsets in the decompressed stream, and the exit code is 2.
#[test]
fn single_stream_warc_is_read_and_reported() {
    let f = warc_dir().join("example-bad-non-chunked.warc.gz");
    let (mine, err, code) = ours(&["--all-records"], &[&f]);
    assert_eq!(code, 2);
    assert!(
        err.contains("offset 0: the file is compressed as a single gzip stream"),
        "{err}"
    );
    assert_eq!(mine.len(), 6, "{}", show(&mine));
}

/// ARC and WARC files mixed in one run (directories, a `-` list, a gzip
/// WARC named `.warc`), the same bytes for any `-j`, mapped or read.
#[test]
fn arc_and_warc_mixed_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (from, to) in [
        (
            util::data_dir().join("arc/example.arc.gz"),
            "a/example.arc.gz",
        ),
        (warc_dir().join("example.warc.gz"), "a/b/example.warc.gz"),
        (
            warc_dir().join("example-iana.org-chunked.warc"),
            "a/chunked.WARC",
        ),
        (
            warc_dir().join("post-test-more.warc"),
            "a/post-test-more.warc",
        ),
    ] {
        let to = d.join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    }
    std::fs::write(d.join("a/notes.txt"), b"not an archive").unwrap();
    let a = d.join("a");
    let base = stdout_of(&["index", "-q", a.to_str().unwrap()]);
    assert_eq!(base.2, 0, "{}", base.1);
    let text = String::from_utf8_lossy(&base.0);
    for name in [
        "example.arc.gz",
        "example.warc.gz",
        "chunked.WARC",
        "post-test-more.warc",
    ] {
        assert!(
            text.contains(&format!("\"filename\":\"{name}\"")),
            "{name}\n{text}"
        );
    }
    for extra in [&["-j", "1"][..], &["-j", "2", "--no-mmap"], &["--no-sort"]] {
        let mut args = vec!["index", "-q"];
        args.extend_from_slice(extra);
        args.push(a.to_str().unwrap());
        let (out, err, code) = stdout_of(&args);
        assert_eq!(code, 0, "{err}");
        // Streamed output has no per-file `!meta` lines.
        let data = |b: &[u8]| {
            let mut v = lines(b);
            v.retain(|l| !l.starts_with(b"!"));
            v
        };
        assert_eq!(data(&out), data(&base.0), "{extra:?}");
        if extra != ["--no-sort"] {
            assert_eq!(out, base.0, "{extra:?}");
        }
    }
    let list = ["example.arc.gz", "b/example.warc.gz", "chunked.WARC"]
        .map(|f| a.join(f).to_string_lossy().into_owned())
        .join("\n");
    let out = util::run(&["index", "-q", "--format", "cdxj", "-"], list.as_bytes());
    util::assert_ok(&out);
    assert_eq!(lines(&out.stdout).len(), 1 + 2 + 1);
}

/// The `ukvs` profile: revisits say what they refer to, warcinfo fields go
/// to `!meta`, and the output validates.
#[test]
fn ukvs_profile_on_warc() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.ukvs");
    let f = warc_dir().join("example.warc.gz");
    let (_, err, code) = stdout_of(&[
        "index",
        "-q",
        f.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    let meta = text
        .lines()
        .find(|l| l.starts_with("!meta {\"filename\""))
        .expect("warcinfo !meta");
    let v: serde_json::Value = serde_json::from_str(&meta[6..]).unwrap();
    assert_eq!(v["filename"], "example.warc.gz");
    assert_eq!(v["warcinfo"]["fields"]["format"], "WARC File Format 1.0");
    let revisit = text
        .lines()
        .find(|l| l.contains("warc/revisit"))
        .expect("a revisit line");
    for k in ["refers_to_uri", "refers_to_date", "profile"] {
        assert!(revisit.contains(&format!("\"{k}\":")), "{revisit}");
    }
    let o = util::run(&["validate", out.to_str().unwrap()], b"");
    util::assert_ok(&o);
}

/// Reads every record of `data` through the reader and every profile's
/// indexer; returns (records, errors). Panics only on a bug.
fn read_everything(data: &[u8]) -> (usize, usize) {
    let mut rdr = Reader::with_options(
        data,
        warc::Options {
            buffer_size: 256,
            ..warc::Options::default()
        },
    );
    let mut rec = Record::default();
    let mut indexers: Vec<Indexer> = [Profile::Ukvs, Profile::Cdxj, Profile::Cdx11]
        .into_iter()
        .flat_map(|profile| {
            [false, true].map(|all_records| {
                let opts = capture::Options {
                    profile,
                    all_records,
                    ..capture::Options::default()
                };
                Indexer::new(opts, b"f.warc")
            })
        })
        .collect();
    let (mut n, mut errors) = (0, 0);
    // Every call consumes bytes or ends the file: far fewer calls than
    // bytes end it.
    for _ in 0..(4 * data.len() + 16) {
        match rdr.read_record(&mut rec) {
            Ok(true) => {
                n += 1;
                let mut line = Vec::new();
                for ix in &mut indexers {
                    ix.write_warc(&rec, None, &mut line);
                }
            }
            Ok(false) => return (n, errors),
            Err(e) => {
                assert!(!e.is_fatal(), "{e}");
                errors += 1;
            }
        }
    }
    panic!("the reader did not reach the end of {} bytes", data.len());
}

fn real_warcs() -> Vec<Vec<u8>> {
    warc_files(&warc_dir())
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        read_everything(&data);
        let mut framed = b"WARC/1.0\r\nContent-Length: 10\r\n\r\n".to_vec();
        framed.extend_from_slice(&data);
        read_everything(&framed);
    }

    #[test]
    fn mutated_real_warcs_never_panic(
        which in 0usize..16,
        edits in proptest::collection::vec((any::<u16>(), any::<u8>(), 0u8..4), 1..8),
        cut in any::<u16>(),
    ) {
        let files = real_warcs();
        let mut data = files[which % files.len()].clone();
        for (at, byte, op) in edits {
            let i = usize::from(at) % (data.len() + 1);
            match op {
                0 if i < data.len() => data[i] = byte,
                1 => data.insert(i, byte),
                2 if i < data.len() => { data.remove(i); }
                _ => data.truncate(i.max(1)),
            }
        }
        if cut % 3 == 0 {
            let n = data.len();
            data.truncate(usize::from(cut) % (n + 1));
        }
        read_everything(&data);
    }
}

/// Every record (offset, length, block) and error of a reader, in order.
fn everything<R: Read>(mut rdr: Reader<R>) -> Vec<(u64, u64, Vec<u8>)> {
    let mut rec = Record::default();
    let mut v = Vec::new();
    loop {
        match rdr.read_record(&mut rec) {
            Ok(true) => v.push((rec.offset, rec.length, rec.block().to_vec())),
            Ok(false) => return v,
            Err(e) => v.push((e.offset(), u64::MAX, e.to_string().into_bytes())),
        }
    }
}

/// The repository's WARC fixtures read through the stream and the shared
/// path give the same records and errors.
#[test]
fn fixtures_read_the_same_mapped_and_streamed() {
    for p in warc_files(&warc_dir()) {
        let data = std::fs::read(&p).unwrap();
        let shared: warc::SharedBytes = std::sync::Arc::new(data.clone());
        let streamed = everything(Reader::new(&data[..]));
        let mapped = everything(Reader::from_shared(shared, warc::Options::default()));
        assert_eq!(streamed, mapped, "{}", p.display());
        assert!(!streamed.is_empty(), "{}", p.display());
    }
}

/// `--verify-digests` reports what `warcio check` reports: a stated digest
/// that is not a SHA-1 and a payload that does not hash to its digest, at
/// the record's offset (exit 2); well-formed files pass.
#[test]
fn verify_digests_reports_mismatches() {
    let f = warc_dir().join("example-digest.warc");
    let (_, err, code) = ours(&["--verify-digests", "--all-records"], &[&f]);
    assert_eq!(code, 2, "{err}");
    let reported: Vec<&str> = err.lines().filter(|l| l.contains("Digest")).collect();
    assert_eq!(reported.len(), 1, "{err}");
    assert!(
        reported[0].contains("example-digest.warc: offset 0: WARC-Payload-Digest"),
        "{err}"
    );
    // Without the flag nothing is checked.
    assert_eq!(ours(&["--all-records"], &[&f]).2, 0);
    let f = warc_dir().join("missing-http.warc.gz");
    let (_, err, code) = ours(&["--verify-digests"], &[&f]);
    assert_eq!(code, 2);
    assert!(
        err.contains("but the payload's SHA-1 is sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"),
        "{err}"
    );
    for good in [
        "example.warc.gz",
        "example-iana.org-chunked.warc",
        "cc.warc.gz",
    ] {
        let (_, err, code) = ours(
            &["--verify-digests", "--all-records"],
            &[&warc_dir().join(good)],
        );
        assert_eq!(code, 0, "{good}: {err}");
    }
}

/// On a generated corpus every stated digest holds; one changed payload
/// byte is reported at its record, and the line is still written.
#[test]
fn verify_digests_on_generated_corpus() {
    let test = "verify_digests_on_generated_corpus";
    let Some(dir) = generate(
        test,
        &[
            "--warc",
            "--plain",
            "--files",
            "1",
            "--records-per-file",
            "80",
            "--seed",
            "4",
            "--truth",
        ],
    ) else {
        return;
    };
    let root = dir.path().join("c");
    let file = warc_files(&root).remove(0);
    let (before, err, code) = ours(&["--verify-digests", "--all-records"], &[&file]);
    assert_eq!(code, 0, "{err}");
    let t = truth(&root)
        .into_iter()
        .filter(|t| t.warc_type == "response" && t.length > 2000)
        .nth(3)
        .unwrap();
    let mut data = std::fs::read(&file).unwrap();
    let at = (t.offset + t.length - 10) as usize;
    data[at] ^= 0x20;
    std::fs::write(&file, &data).unwrap();
    let (after, err, code) = ours(&["--verify-digests", "--all-records"], &[&file]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("offset {}: WARC-Payload-Digest is", t.offset)),
        "{err}"
    );
    assert_eq!(before.len(), after.len());
}

/// `--post-append` keys POST and PUT exchanges as cdxj-indexer's
/// `--post-append` does, on every corpus WARC it reads. One difference is
/// ours on purpose: cdxj-indexer drains each record before hashing it in
/// that mode, so every record without a `WARC-Payload-Digest` gets the
/// SHA-1 of nothing; ours is the digest it gives without the option.
#[test]
fn post_append_matches_cdxj_indexer() {
    let test = "post_append_matches_cdxj_indexer";
    if !util::has_python_module("cdxj_indexer", test) {
        return;
    }
    let mut files = warc_files(&warc_dir());
    if let Some(corpus) = util::shared_corpus(test) {
        files.extend(corpus_warcs(&corpus));
    }
    const EMPTY: &str = "\"digest\": \"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\"";
    let (mut compared, mut posts) = (0, 0);
    for f in &files {
        let peer = |extra: &[&str]| {
            let out = Command::new("cdxj-indexer")
                .args(extra)
                .arg(f)
                .output()
                .expect("run cdxj-indexer");
            out.status.success().then_some(out.stdout)
        };
        let (Some(with_p), Some(without)) = (peer(&["-p"]), peer(&[])) else {
            continue;
        };
        // offset -> digest field as cdxj-indexer writes it without -p.
        let digests: BTreeMap<String, String> = String::from_utf8_lossy(&without)
            .lines()
            .filter_map(|l| {
                let d = l[l.find("\"digest\": ")?..].split(',').next()?.to_string();
                let o = l[l.find("\"offset\": ")?..].split(',').next()?.to_string();
                Some((o, d))
            })
            .collect();
        let theirs: Vec<Vec<u8>> = lines(&with_p)
            .into_iter()
            .map(|l| {
                let text = String::from_utf8_lossy(&l).into_owned();
                let offset = text
                    .find("\"offset\": ")
                    .map(|i| text[i..].split(',').next().unwrap().to_string());
                match offset.and_then(|o| digests.get(&o)) {
                    Some(d) if text.contains(EMPTY) => text.replace(EMPTY, d).into_bytes(),
                    _ => l,
                }
            })
            .collect();
        let (mine, err, _) = ours(&["--post-append"], &[f]);
        if let Some(d) = diff(&mine, &theirs) {
            panic!("{}\n{d}\n{err}", f.display());
        }
        compared += mine.len();
        posts += mine
            .iter()
            .filter(|l| l.windows(12).any(|w| w == b"__wb_method="))
            .count();
    }
    assert!(
        compared > 100 && posts >= 6,
        "{compared} lines, {posts} POST lines"
    );
}

/// A record in segments: each segment is indexed as a record of its own,
/// and each is named in a warning (the run succeeds).
#[test]
fn segmented_records_are_reported() {
    let rec = |fields: &str, block: &[u8]| {
        let mut r = format!(
            "WARC/1.1\r\n{fields}WARC-Date: 2020-01-02T03:04:05Z\r\nContent-Length: {}\r\n\r\n",
            block.len()
        )
        .into_bytes();
        r.extend_from_slice(block);
        r.extend_from_slice(b"\r\n\r\n");
        r
    };
    let first = rec(
        "WARC-Type: response\r\nWARC-Record-ID: <urn:uuid:1>\r\nWARC-Target-URI: http://example.com/big\r\n\
         Content-Type: application/http;msgtype=response\r\nWARC-Segment-Number: 1\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nfirst half ",
    );
    let second = rec(
        "WARC-Type: continuation\r\nWARC-Record-ID: <urn:uuid:2>\r\nWARC-Target-URI: http://example.com/big\r\n\
         WARC-Segment-Origin-ID: <urn:uuid:1>\r\nWARC-Segment-Number: 2\r\nWARC-Segment-Total-Length: 60\r\n",
        b"second half",
    );
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("seg.warc");
    std::fs::write(&f, [first, second].concat()).unwrap();
    let (mine, err, code) = ours(&["--all-records"], &[&f]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(mine.len(), 2);
    assert!(
        err.contains("seg.warc: offset 0: response record, segment 1 of <urn:uuid:1>"),
        "{err}"
    );
    assert!(
        err.contains("continuation record, segment 2 of <urn:uuid:1>"),
        "{err}"
    );
}

/// cdxj-indexer's own expected outputs (its test suite) for the options we
/// share: default, `--records all`, `--sort`, `--post-append`.
#[test]
fn cdxj_matches_cdxj_indexer_expected_outputs() {
    let test = "cdxj_matches_cdxj_indexer_expected_outputs";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    let root = corpus.join("webrecorder__cdxj-indexer");
    for (expected, extra, input, sorted) in [
        ("test_warc_cdxj.cdxj", &[][..], "example.warc.gz", false),
        (
            "test_warc_cdxj_cli_main.cdxj",
            &[],
            "example.warc.gz",
            false,
        ),
        (
            "test_warc_all_cdxj.cdxj",
            &["--all-records"],
            "example.warc.gz",
            false,
        ),
        ("test_warc_cdxj_sorted.cdxj", &[], "cc.warc.gz", true),
        ("test_missing_http.cdxj", &[], "missing-http.warc.gz", false),
        (
            "test_warc_post_query_append.cdxj",
            &["--post-append"],
            "post-test.warc.gz",
            false,
        ),
        (
            "test_warc_post_query_append_2.cdxj",
            &[],
            "post-test.warc.gz",
            false,
        ),
        (
            "test_warc_post_query_append_multi_and_json.cdxj",
            &["--post-append"],
            "post-test-more.warc",
            false,
        ),
    ] {
        let want = std::fs::read(root.join("_expected_from_tests").join(expected)).unwrap();
        let input = root.join("test/data").join(input);
        let mut args = vec!["index", "-q", "--format", "cdxj"];
        args.extend_from_slice(extra);
        args.push(input.to_str().unwrap());
        let (out, err, code) = stdout_of(&args);
        assert_eq!(code, 0, "{expected}: {err}");
        if sorted {
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&want),
                "{expected}"
            );
        } else {
            assert_eq!(lines(&out), lines(&want), "{expected}");
        }
    }
}

/// A record whose header goes on past the 1 MiB limit (here 2 million
/// fields) is reported and skipped, memory bounded, and the next record is
/// read; plain, mapped or read.
#[test]
fn a_header_past_the_limit_loses_only_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut data =
        b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.example/\r\n".to_vec();
    for i in 0..200_000 {
        data.extend_from_slice(format!("X-Field-{i}: v\r\n").as_bytes());
    }
    data.extend_from_slice(b"Content-Length: 5\r\n\r\nhello\r\n\r\n");
    let next = data.len();
    let body = b"HTTP/1.0 200 OK\r\n\r\nhello";
    data.extend_from_slice(
        format!(
            "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://b.example/\r\n\
             WARC-Date: 2004-01-01T00:00:00Z\r\nContent-Type: application/http; msgtype=response\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    data.extend_from_slice(body);
    data.extend_from_slice(b"\r\n\r\n");
    let f = dir.path().join("long-header.warc");
    std::fs::write(&f, &data).unwrap();
    for mode in [None, Some("--no-mmap")] {
        let mut args = vec!["index", "--no-sort", "-q", "--format", "cdxj"];
        args.extend(mode);
        args.push(f.to_str().unwrap());
        let o = util::run(&args, b"");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("long-header.warc: offset 0: the WARC header is longer than 1048576 bytes (the limit); that record is lost"),
            "{mode:?}: {err}"
        );
        let out = String::from_utf8(o.stdout).unwrap();
        assert_eq!(out.lines().count(), 1, "{out}");
        assert!(out.starts_with("example,b)/ 20040101000000 "), "{out}");
        assert!(out.contains(&format!("\"offset\": \"{next}\"")), "{out}");
    }
}
