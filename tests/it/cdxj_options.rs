//! cdxj-indexer's index options (`--fields`, `--replace-fields`,
//! `--records`, `--digest-records`, `--dir-root`, `--format cdx9` and
//! `cdxj-indexer-cdx11`): its own test suite's expected outputs byte for
//! byte, cdxj-indexer run live on the corpus WARC files, and the same
//! bytes for any `-j`, sorted or not.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::index::stdout_of;
use crate::util;
use crate::warc::corpus_warcs;

/// Every expected output of cdxj-indexer's tests (the test named, its
/// input in `test/data`, our arguments); `test_warc_cdxj_dir_root` is
/// [`dir_root_names_files_from_the_root`]'s.
const EXPECTED: &[(&str, &str, &[&str])] = &[
    (
        "test_warc_cdxj.cdxj",
        "example.warc.gz",
        &["--format", "cdxj"],
    ),
    (
        "test_warc_cdxj_cli_main.cdxj",
        "example.warc.gz",
        &["--format", "cdxj"],
    ),
    (
        "test_warc_all_cdxj.cdxj",
        "example.warc.gz",
        &["--format", "cdxj", "--records", "all"],
    ),
    (
        "test_warc_all_cdxj.cdxj",
        "example.warc.gz",
        &["--format", "cdxj", "--all-records"],
    ),
    // Sorted by cdxj-indexer (`--sort`): only our sorted output is it.
    (
        "test_warc_cdxj_sorted.cdxj",
        "cc.warc.gz",
        &["--format", "cdxj"],
    ),
    (
        "test_missing_http.cdxj",
        "missing-http.warc.gz",
        &["--format", "cdxj"],
    ),
    (
        "test_warc_post_query_append.cdxj",
        "post-test.warc.gz",
        &["--format", "cdxj", "--post-append"],
    ),
    (
        "test_warc_post_query_append_2.cdxj",
        "post-test.warc.gz",
        &["--format", "cdxj"],
    ),
    (
        "test_warc_post_query_append_multi_and_json.cdxj",
        "post-test-more.warc",
        &["--format", "cdxj", "--post-append"],
    ),
    ("test_arc_cdxj.cdxj", "example.arc", &["--format", "cdxj"]),
    (
        "test_arc_bad_edgecase.cdx",
        "bad.arc",
        &["--format", "cdxj-indexer-cdx11", "--post-append"],
    ),
    (
        "test_warc_cdx_11.cdx",
        "example.warc.gz",
        &["--format", "cdxj-indexer-cdx11"],
    ),
    (
        "test_warc_cdx_9.cdx",
        "example.warc.gz",
        &["--format", "cdx9"],
    ),
    (
        "test_warc_cdxj_cli_main_with_record_digests.cdxj",
        "example.warc.gz",
        &["--format", "cdxj", "-d", "-p"],
    ),
    (
        "test_warc_cdxj_with_record_digests.cdxj",
        "example.warc.gz",
        &["--format", "cdxj", "--digest-records", "--post-append"],
    ),
    (
        "test_warc_index_add_custom_fields.cdxj",
        "example.warc.gz",
        &["--format", "cdxj", "--fields", "method,referrer,http:date"],
    ),
    (
        "test_warc_index_custom_fields_1.cdxj",
        "example.warc.gz",
        &[
            "--format",
            "cdxj",
            "--records",
            "response,request,revisit",
            "--replace-fields",
            "warc-type",
        ],
    ),
    (
        "test_warc_index_custom_fields_2.cdxj",
        "cc.warc.gz",
        &[
            "--format",
            "cdxj",
            "--records",
            "all",
            "--replace-fields",
            "method,mime,warc-type,date",
        ],
    ),
    (
        "test_warc_request_only.cdxj",
        "example.warc.gz",
        &["--format", "cdxj", "--records", "request", "-f", "method"],
    ),
];

/// The lines of `out` in byte order, header lines (` CDX ...`) first as
/// they sort (cdxj-indexer's `--sort` also drops repeated lines; its
/// expected outputs have none).
fn sorted(out: &[u8]) -> Vec<u8> {
    let mut lines: Vec<&[u8]> = out.split_inclusive(|&b| b == b'\n').collect();
    lines.sort();
    lines.concat()
}

fn ukvs_index(args: &[&str], input: &Path) -> Vec<u8> {
    let mut all = vec!["index", "-q"];
    all.extend_from_slice(args);
    all.push(input.to_str().unwrap());
    let (out, err, code) = stdout_of(&all);
    // Exit 2 says what damage was passed over (`bad.arc`).
    assert!(
        code == 0 || (code == 2 && err.contains(": offset ")),
        "{all:?}: {err}"
    );
    out
}

/// Every expected output of cdxj-indexer's tests is ours byte for byte
/// with `--no-sort` (its tests do not sort, but one), and sorted it is the
/// same lines in byte order, for `-j 1` and `-j 4`.
#[test]
fn cdxj_options_match_cdxj_indexer_expected_outputs() {
    let test = "cdxj_options_match_cdxj_indexer_expected_outputs";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    let root = corpus.join("webrecorder__cdxj-indexer");
    // None is left out.
    for e in std::fs::read_dir(root.join("_expected_from_tests")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            name == "test_warc_cdxj_dir_root.cdxj" || EXPECTED.iter().any(|(n, ..)| *n == name),
            "{name} is compared nowhere"
        );
    }
    for (expected, input, args) in EXPECTED {
        let want = std::fs::read(root.join("_expected_from_tests").join(expected)).unwrap();
        let input = root.join("test/data").join(input);
        if !expected.ends_with("_sorted.cdxj") {
            let mut unsorted = args.to_vec();
            unsorted.push("--no-sort");
            let got = ukvs_index(&unsorted, &input);
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
                "{expected}"
            );
        }
        for j in ["1", "4"] {
            let mut threaded = args.to_vec();
            threaded.extend(["-j", j]);
            let got = ukvs_index(&threaded, &input);
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&sorted(&want)),
                "{expected} sorted, -j {j}"
            );
        }
    }
}

/// `--dir-root` names the file by its path from the root, as
/// cdxj-indexer's test (run from its repository with `./`) expects, and
/// with `../` for a file outside the root.
#[test]
fn dir_root_names_files_from_the_root() {
    let test = "dir_root_names_files_from_the_root";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    let root = corpus.join("webrecorder__cdxj-indexer");
    let want =
        std::fs::read(root.join("_expected_from_tests/test_warc_cdxj_dir_root.cdxj")).unwrap();
    let out = Command::new(util::bin())
        .current_dir(&root)
        .args(["index", "-q", "--no-sort", "--format", "cdxj"])
        .args(["--dir-root", "./", "test/data/example.warc.gz"])
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&want)
    );
    // The same from elsewhere, with absolute paths.
    let input = root.join("test/data/example.warc.gz");
    let got = ukvs_index(
        &[
            "--format",
            "cdxj",
            "--no-sort",
            "--dir-root",
            root.to_str().unwrap(),
        ],
        &input,
    );
    assert_eq!(got, want);
    // A root below the file: one `..` for each step up; every profile.
    let below = root.join("test/data/sub/dir");
    for format in ["cdxj", "ukvs", "cdx11", "cdx9"] {
        let got = ukvs_index(
            &["--format", format, "--dir-root", below.to_str().unwrap()],
            &input,
        );
        let text = String::from_utf8(got).unwrap();
        assert!(text.contains("../../example.warc.gz"), "{format}: {text}");
        assert!(!text.contains(" example.warc.gz"), "{format}: {text}");
    }
}

/// Runs cdxj-indexer once per (arguments, file) in one Python process:
/// what it wrote for each, `None` where it failed.
fn cdxj_indexer_batch(jobs: &[(Vec<&str>, &Path)]) -> Vec<Option<Vec<u8>>> {
    const SCRIPT: &str = r#"
import sys, io, json, base64, contextlib
from cdxj_indexer.main import main
for line in sys.stdin:
    args = json.loads(line)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            main(args)
        out = base64.b64encode(buf.getvalue().encode('utf-8', 'surrogateescape')).decode()
    except BaseException:
        out = None
    print(json.dumps(out), flush=True)
"#;
    let mut input = String::new();
    for (args, file) in jobs {
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.push(file.to_str().unwrap().to_string());
        input.push_str(&serde_json::to_string(&all).unwrap());
        input.push('\n');
    }
    let mut child = Command::new("python3")
        .args(["-W", "ignore", "-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run python3");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(input.as_bytes()).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .map(|l| {
            let v: Option<String> = serde_json::from_str(l).unwrap();
            v.map(|b| data_encoding::BASE64.decode(b.as_bytes()).unwrap())
        })
        .collect()
}

/// cdxj-indexer's options and ours for the same output, compared live.
const LIVE: &[(&[&str], &[&str])] = &[
    // The default fields asked for by name take the general path: the
    // same bytes as the default lines.
    (
        &["-rf", "url,mime,status,digest,length,offset,filename"],
        &[
            "--format",
            "cdxj",
            "--replace-fields",
            "url,mime,status,digest,length,offset,filename",
        ],
    ),
    (
        &[
            "-f",
            "warc-type,content-type,http:date,http:server,WARC-IP-Address,warc-record-id,http:content-length",
        ],
        &[
            "--format",
            "cdxj",
            "-f",
            "warc-type,content-type,http:date,http:server,WARC-IP-Address,warc-record-id,http:content-length",
        ],
    ),
    (
        &[
            "--records",
            "all",
            "-rf",
            "warc-type,method,referrer,req.http:user-agent,mime",
        ],
        &[
            "--format",
            "cdxj",
            "--records",
            "all",
            "--replace-fields",
            "warc-type,method,referrer,req.http:user-agent,mime",
        ],
    ),
    (&["-9"], &["--format", "cdx9"]),
    (
        &["-11", "--records", "response,revisit"],
        &[
            "--format",
            "cdxj-indexer-cdx11",
            "--records",
            "response,revisit",
        ],
    ),
    (
        &["--records", "request,response,metadata", "-f", "status,http:location"],
        &[
            "--format",
            "cdxj",
            "--records",
            "request,response,metadata",
            "-f",
            "status,http:location",
        ],
    ),
    // Requests paired with responses, record digests, post-append keys.
    (
        &[
            "-p",
            "-d",
            "--records",
            "request,response",
            "-rf",
            "referrer,method,url",
        ],
        &[
            "--format",
            "cdxj",
            "-p",
            "-d",
            "--records",
            "request,response",
            "--replace-fields",
            "referrer,method,url",
        ],
    ),
];

/// On every corpus WARC file that cdxj-indexer reads, each option set
/// gives its output byte for byte (`--no-sort`: in file order).
#[test]
fn cdxj_options_match_cdxj_indexer_live() {
    let test = "cdxj_options_match_cdxj_indexer_live";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    if !util::has_python_module("cdxj_indexer", test) {
        return;
    }
    let files = corpus_warcs(&corpus);
    let mut jobs = Vec::new();
    for (theirs, ours) in LIVE {
        for f in &files {
            jobs.push((theirs.to_vec(), f.as_path(), *ours));
        }
    }
    let peer = cdxj_indexer_batch(
        &jobs
            .iter()
            .map(|(t, f, _)| (t.clone(), *f))
            .collect::<Vec<_>>(),
    );
    assert_eq!(peer.len(), jobs.len());
    let (mut same, mut lines) = (0, 0);
    let mut failures = Vec::new();
    for ((theirs, f, ours), want) in jobs.iter().zip(peer) {
        let Some(want) = want else { continue };
        let mut args = vec!["index", "-q", "--no-sort"];
        args.extend_from_slice(ours);
        args.push(f.to_str().unwrap());
        let (got, err, code) = stdout_of(&args);
        assert!(code == 0 || code == 2, "{args:?}: {err}");
        if got == want {
            same += 1;
            lines += got.iter().filter(|&&b| b == b'\n').count();
        } else {
            failures.push(format!(
                "{} {theirs:?}\n--- ours\n{}--- cdxj-indexer\n{}",
                f.display(),
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        same >= 300 && lines >= 2500,
        "{same} outputs, {lines} lines"
    );
}

/// cdxj-indexer's options on ARC files, read as warcio's `arc2warc`
/// converts them.
const LIVE_ARC: &[(&[&str], &[&str])] = &[
    (
        &["-rf", "url,mime,status,digest,length,offset,filename"],
        &[
            "--format",
            "cdxj",
            "--replace-fields",
            "url,mime,status,digest,length,offset,filename",
        ],
    ),
    (
        &[
            "-f",
            "warc-type,content-type,WARC-IP-Address,content-length,http:server,warc-date,warc-target-uri",
        ],
        &[
            "--format",
            "cdxj",
            "-f",
            "warc-type,content-type,WARC-IP-Address,content-length,http:server,warc-date,warc-target-uri",
        ],
    ),
    (&["-9"], &["--format", "cdx9"]),
    // Not with `-p`: cdxj-indexer then digests nothing (FORMATS 2.7).
    (&["-11"], &["--format", "cdxj-indexer-cdx11"]),
    (&["--records", "revisit"], &["--format", "cdxj", "--records", "revisit"]),
];

/// On the corpus ARC files whose records are well-formed for
/// cdxj-indexer, each option set gives its output byte for byte.
#[test]
fn cdxj_options_match_cdxj_indexer_live_on_arc() {
    let test = "cdxj_options_match_cdxj_indexer_live_on_arc";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    if !util::has_python_module("cdxj_indexer", test) {
        return;
    }
    let files: Vec<PathBuf> = crate::index::WELL_FORMED
        .iter()
        .map(|f| corpus.join(f))
        .collect();
    let mut jobs = Vec::new();
    for (theirs, ours) in LIVE_ARC {
        for f in &files {
            jobs.push((theirs.to_vec(), f.as_path(), *ours));
        }
    }
    let peer = cdxj_indexer_batch(
        &jobs
            .iter()
            .map(|(t, f, _)| (t.clone(), *f))
            .collect::<Vec<_>>(),
    );
    let mut lines = 0;
    for ((theirs, f, ours), want) in jobs.iter().zip(peer) {
        let want = want.unwrap_or_else(|| panic!("cdxj-indexer failed on {}", f.display()));
        let mut args = vec!["index", "-q", "--no-sort"];
        args.extend_from_slice(ours);
        args.push(f.to_str().unwrap());
        let (got, err, code) = stdout_of(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{} {theirs:?}",
            f.display()
        );
        lines += got.iter().filter(|&&b| b == b'\n').count();
    }
    assert!(lines >= 1000, "{lines} lines");
}

/// The options give the same bytes for any `-j`, and sorted they are the
/// `--no-sort` lines in byte order, over several files at once.
#[test]
fn cdxj_options_are_deterministic_across_threads() {
    let test = "cdxj_options_are_deterministic_across_threads";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    let files: Vec<PathBuf> = corpus_warcs(&corpus.join("webrecorder__warcio/test/data"))
        .into_iter()
        .chain(corpus_warcs(
            &corpus.join("webrecorder__cdxj-indexer/test/data"),
        ))
        .collect();
    assert!(files.len() >= 10);
    for opts in [
        &["--format", "cdxj", "-d", "-p", "-f", "referrer,http:date"][..],
        &[
            "--format",
            "cdxj",
            "--records",
            "all",
            "--replace-fields",
            "warc-type,method",
        ],
        &["--format", "cdx9", "--records", "all"],
        &["--format", "cdxj-indexer-cdx11"],
        &[
            "--format",
            "ukvs",
            "-d",
            "--records",
            "all",
            "-f",
            "referrer,warc-type",
        ],
    ] {
        let run = |extra: &[&str]| {
            let mut args = vec!["index", "-q"];
            args.extend_from_slice(opts);
            args.extend_from_slice(extra);
            args.extend(files.iter().map(|f| f.to_str().unwrap()));
            stdout_of(&args)
        };
        let (one, err, code) = run(&["-j", "1"]);
        assert!(code == 0 || code == 2, "{opts:?}: {err}");
        assert!(one.len() > 1000, "{opts:?}");
        let (four, _, _) = run(&["-j", "4"]);
        assert_eq!(one, four, "{opts:?}: -j 1 and -j 4");
        if opts[1] == "ukvs" {
            // Its headers differ unsorted (no per-file `!meta`).
            continue;
        }
        let (streamed, _, _) = run(&["-j", "3", "--no-sort"]);
        assert_eq!(sorted(&streamed), one, "{opts:?}: --no-sort, sorted");
    }
}

/// A record's SHA-256 needs the file read again: a stream is reported
/// (exit 2) and its lines come without it.
#[test]
fn digest_records_of_a_stream_are_reported() {
    let file = util::data_dir().join("warc/cc.warc.gz");
    let bytes = std::fs::read(&file).unwrap();
    let out = util::run(
        &["index", "-q", "--format", "cdxj", "-d", "/dev/stdin"],
        &bytes,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--digest-records needs a file"), "{err}");
    assert!(!out.stdout.is_empty());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("recordDigest"));
    // From the file itself, every line has it, and it is the SHA-256 of
    // the bytes its offset and length name.
    let out = util::run(
        &[
            "index",
            "-q",
            "--format",
            "cdxj",
            "-d",
            file.to_str().unwrap(),
        ],
        b"",
    );
    util::assert_ok(&out);
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let json: serde_json::Value =
            serde_json::from_str(&line[line.find('{').unwrap()..]).unwrap();
        let num = |k: &str| json[k].as_str().unwrap().parse::<usize>().unwrap();
        let stored = &bytes[num("offset")..num("offset") + num("length")];
        let want = format!(
            "sha256:{}",
            data_encoding::HEXLOWER.encode(&sha2_of(stored))
        );
        assert_eq!(json["recordDigest"], want.as_str(), "{line}");
    }
}

/// SHA-256 by `sha256sum` (an oracle outside the crate).
fn sha2_of(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    let hex = String::from_utf8(out.stdout).unwrap();
    data_encoding::HEXLOWER
        .decode(hex.split_whitespace().next().unwrap().as_bytes())
        .unwrap()
}

/// Options a profile does not take are refused with a message naming
/// them, and nothing is written.
#[test]
fn options_other_profiles_do_not_take_are_refused() {
    let input = util::data_dir().join("warc");
    let input = input.to_str().unwrap();
    for (args, says) in [
        (
            &["--replace-fields", "warc-type"][..],
            "the ukvs line has its own members",
        ),
        (
            &["--format", "cdx11", "--records", "all"],
            "--records is cdxj-indexer's",
        ),
        (
            &["--format", "cdx11", "-d"],
            "--digest-records is cdxj-indexer's",
        ),
        (
            &["--format", "cdx11", "-f", "x"],
            "--fields is cdxj-indexer's",
        ),
        (&["--format", "cdx9", "-f", "warc-type"], "the CDX columns"),
        (
            &["--format", "cdxj-indexer-cdx11", "--replace-fields", "url"],
            "the CDX columns",
        ),
    ] {
        let mut all = vec!["index", "-q"];
        all.extend_from_slice(args);
        all.push(input);
        let (out, err, code) = stdout_of(&all);
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}");
    }
    let (_, err, code) = stdout_of(&["index", "--records", "all", "--all-records", input]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot be used with"), "{err}");
}

/// Objects of the seed formats (Kulturarw3, Nedlib) take the options too:
/// the default fields named are the default lines, the CDX shapes have
/// their columns, `--records` without `response` leaves them out, and
/// `--dir-root` names the data file from the root.
#[test]
fn seed_objects_take_the_options() {
    let data = util::data_dir();
    let inputs = [data.join("nedlib"), data.join("kulturarw3")];
    let run = |extra: &[&str]| {
        let mut args = vec!["index", "-q", "--format"];
        args.extend_from_slice(extra);
        args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
        let (out, err, code) = stdout_of(&args);
        assert!(code == 0 || code == 2, "{extra:?}: {err}");
        String::from_utf8(out).unwrap()
    };
    let default = run(&["cdxj"]);
    assert!(default.lines().count() >= 3, "{default}");
    let named = run(&[
        "cdxj",
        "--replace-fields",
        "url,mime,status,digest,length,offset,filename",
    ]);
    assert_eq!(named, default);
    let cdx9 = run(&["cdx9"]);
    let mut lines = cdx9.lines();
    assert_eq!(lines.next(), Some(" CDX N b a m s k r V g"));
    for (line, json) in lines.zip(default.lines()) {
        let cols: Vec<&str> = line.split(' ').collect();
        assert_eq!(cols.len(), 9, "{line}");
        let v: serde_json::Value = serde_json::from_str(&json[json.find('{').unwrap()..]).unwrap();
        assert_eq!(cols[2], v["url"], "{line}");
        assert_eq!(format!("sha1:{}", cols[5]), v["digest"].as_str().unwrap());
        assert_eq!(cols[7], v["offset"], "{line}");
    }
    assert_eq!(run(&["cdxj", "--records", "request"]), "");
    let rooted = run(&["cdxj", "--dir-root", data.to_str().unwrap()]);
    assert!(
        rooted.contains("\"filename\": \"nedlib/harvest/"),
        "{rooted}"
    );
    assert!(
        rooted.contains("\"filename\": \"kulturarw3/seed004-example.k3\""),
        "{rooted}"
    );
}

/// The `ukvs` profile takes `--records`, `--fields` and
/// `--digest-records`: the same records as `cdxj`, and the added fields'
/// values there as members of its JSON (those it has already keep its
/// own values).
#[test]
fn ukvs_lines_take_records_and_added_fields() {
    let test = "ukvs_lines_take_records_and_added_fields";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    let data = corpus.join("webrecorder__cdxj-indexer/test/data");
    let inputs: Vec<PathBuf> = ["example.warc.gz", "post-test.warc.gz", "example.arc"]
        .iter()
        .map(|f| data.join(f))
        .collect();
    let added = "method,referrer,http:date,warc-type,status";
    for records in ["request,response,revisit", "all"] {
        let run = |format: &str| {
            let mut args = vec!["index", "-q", "--format", format, "-p", "-d"];
            args.extend(["--records", records, "-f", added]);
            args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
            let (out, err, code) = stdout_of(&args);
            assert_eq!(code, 0, "{format}: {err}");
            String::from_utf8(out).unwrap()
        };
        // Lines by (file, offset), their JSON.
        let by_offset = |text: &str, offset: &dyn Fn(&str) -> String| {
            text.lines()
                .filter(|l| !l.starts_with('!'))
                .map(|l| {
                    let json: serde_json::Value =
                        serde_json::from_str(&l[l.find('{').unwrap()..]).unwrap();
                    let at = format!("{} {}", json["filename"], offset(l));
                    (at, json)
                })
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let ukvs = by_offset(&run("ukvs"), &|l| l.split(' ').nth(2).unwrap().to_string());
        let cdxj = by_offset(&run("cdxj"), &|l| {
            let json: serde_json::Value = serde_json::from_str(&l[l.find('{').unwrap()..]).unwrap();
            json["offset"].as_str().unwrap().to_string()
        });
        assert_eq!(
            ukvs.keys().collect::<Vec<_>>(),
            cdxj.keys().collect::<Vec<_>>(),
            "--records {records}: the same records"
        );
        let mut seen = 0;
        for (at, u) in &ukvs {
            let c = &cdxj[at];
            assert_eq!(u["recordDigest"], c["recordDigest"], "{at}");
            assert!(u["recordDigest"].as_str().unwrap().starts_with("sha256:"));
            for name in ["referrer", "http:date", "warc-type"] {
                assert_eq!(u[name], c[name], "{at} {name}");
                seen += usize::from(!u[name].is_null());
            }
            // `method`: the ukvs line's own (the POST of an exchange) or
            // the request's; `status` stays a number.
            assert_eq!(
                u["method"].as_str().map(str::to_ascii_uppercase),
                c["method"].as_str().map(str::to_ascii_uppercase),
                "{at}"
            );
            assert!(u["status"].is_null() || u["status"].is_number(), "{at}");
        }
        assert!(seen >= 10, "--records {records}: {seen} added values");
    }
}
