//! Sorted files: external sort, merge, lookups and ZipNum clusters, each
//! checked against a naive twin (sort in memory, concatenate and sort, a
//! linear scan with pywb's range arithmetic) with tiny memory bounds and
//! blocks so that run and block boundaries are hit constantly.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use ukvs::sorted::zipnum::{BlockWriter, Cluster};
use ukvs::sorted::{ExternalSorter, KeyRange, MatchType, Merge, Search, TimeFilter};

use crate::util;

// ---------------------------------------------------------------------------
// Oracles

/// pywb's `calc_search_range` on a key, written out independently: the
/// half-open byte range `[start, end)`; `None` is "no end".
fn pywb_range(key: &str, m: MatchType) -> (Vec<u8>, Option<Vec<u8>>) {
    let inc_last = |s: &str| -> Option<Vec<u8>> {
        let mut b = s.as_bytes().to_vec();
        while let Some(last) = b.pop() {
            if last < 0xff {
                b.push(last + 1);
                return Some(b);
            }
        }
        None
    };
    let host = key.split(")/").next().unwrap_or(key);
    match m {
        MatchType::Exact => (key.into(), Some(format!("{key}!").into_bytes())),
        MatchType::Prefix => (key.into(), inc_last(key)),
        MatchType::Host => (
            format!("{host})/").into_bytes(),
            Some(format!("{host}*").into_bytes()),
        ),
        MatchType::Domain => {
            let start = if host.contains(',') {
                format!("{host})/")
            } else {
                format!("{host},")
            };
            (start.into_bytes(), Some(format!("{host}-").into_bytes()))
        }
    }
}

/// Padding as pywb's `pad_timestamp` does it, written out independently.
fn pad(ts: &str, with: &str) -> String {
    if ts.len() >= with.len() {
        ts.to_string()
    } else {
        format!("{ts}{}", &with[ts.len()..])
    }
}

/// Every data line of `lines` in the pywb range, passing from/to: a
/// linear scan.
fn linear(
    lines: &[Vec<u8>],
    key: &str,
    m: MatchType,
    from: Option<&str>,
    to: Option<&str>,
) -> Vec<Vec<u8>> {
    let (start, end) = pywb_range(key, m);
    let from = from.map(|f| pad(f, "10000101000000"));
    let to = to.map(|t| pad(t, "29991231235959"));
    lines
        .iter()
        .filter(|l| l[..] >= start[..] && !end.as_ref().is_some_and(|e| l[..] >= e[..]))
        .filter(|l| {
            let ts = String::from_utf8_lossy(l)
                .split(' ')
                .nth(1)
                .unwrap_or("")
                .to_string();
            !from.as_ref().is_some_and(|f| ts < *f) && !to.as_ref().is_some_and(|t| ts > *t)
        })
        .cloned()
        .collect()
}

// ---------------------------------------------------------------------------
// Generators

const KEYS: &[&str] = &[
    "a",
    "com",
    "com,a)/",
    "com,a)/x",
    "com,a)/x/y",
    "com,a)/x?q=1",
    "com,a,www)/",
    "com,a:8080)/",
    "com,ab)/",
    "com,b)/",
    "org,b)/",
    "org,b)/?q",
    "zz,z)/z",
];
const TIMES: &[&str] = &[
    "19991231235959",
    "20130101000000",
    "20140101000000",
    "20140615120000",
    "20141231235959",
    "20150101000000",
    "20210301000000",
];
const PARTIAL: &[&str] = &["", "2013", "2014", "201406", "20141231", "2015", "2999"];

/// Sorted capture-index lines with many duplicate keys (and some identical
/// lines).
fn index_lines() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec((0..KEYS.len(), 0..TIMES.len(), 0..3u8), 0..60).prop_map(|v| {
        let mut lines: Vec<Vec<u8>> = v
            .into_iter()
            .map(|(k, t, p)| format!("{} {} p{p}", KEYS[k], TIMES[t]).into_bytes())
            .collect();
        lines.sort();
        lines
    })
}

/// A query key: one of the keys, a cut of one, or something absent.
fn query_key() -> impl Strategy<Value = String> {
    prop_oneof![
        (0..KEYS.len()).prop_map(|i| KEYS[i].to_string()),
        (0..KEYS.len(), 0..12usize).prop_map(|(i, n)| KEYS[i][..n.min(KEYS[i].len())].to_string()),
        Just("zzzz".to_string()),
        Just("0".to_string()),
    ]
}

fn match_type() -> impl Strategy<Value = MatchType> {
    prop_oneof![
        Just(MatchType::Exact),
        Just(MatchType::Prefix),
        Just(MatchType::Host),
        Just(MatchType::Domain),
    ]
}

fn opt_partial() -> impl Strategy<Value = Option<&'static str>> {
    (0..PARTIAL.len()).prop_map(|i| Some(PARTIAL[i]).filter(|s| !s.is_empty()))
}

/// The bytes of a file holding `lines`, optionally with headers on top and
/// without the final LF.
fn file_bytes(lines: &[Vec<u8>], headers: bool, final_lf: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if headers {
        out.extend_from_slice(b"!context [\"x\"]\n!meta {type: \"CaptureIndex\"}\n");
    }
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    if !final_lf && !lines.is_empty() {
        out.pop();
    }
    out
}

/// Lines over a tiny alphabet (space, `!`, a high byte, digits), with
/// empty lines and many duplicates.
fn raw_line() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![b'a', b'b', b' ', b'!', 0xff, b'0', b'\t']),
        0..10,
    )
}

// ---------------------------------------------------------------------------
// Library properties

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn external_sort_matches_sorting_in_memory(
        lines in prop::collection::vec(raw_line(), 0..400),
        mem in 0usize..300,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut sorter = ExternalSorter::new(mem, Some(dir.path().to_path_buf()));
        for l in &lines {
            sorter.push(l).unwrap();
        }
        let got: Vec<Vec<u8>> = sorter.finish().unwrap().collect::<Result<_, _>>().unwrap();
        let mut want = lines.clone();
        want.sort();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn merge_matches_concatenate_and_sort(
        inputs in prop::collection::vec(prop::collection::vec(raw_line(), 0..40), 0..7),
        final_lf in any::<bool>(),
    ) {
        let files: Vec<Vec<u8>> = inputs
            .iter()
            .map(|lines| {
                let mut sorted = lines.clone();
                sorted.sort();
                file_bytes(&sorted, false, final_lf)
            })
            .collect();
        let mut merge = Merge::new(
            files.iter().enumerate().map(|(i, f)| (format!("f{i}"), &f[..])),
            false,
        ).unwrap();
        let mut got = Vec::new();
        while let Some(l) = merge.next().unwrap() {
            got.push(l.to_vec());
        }
        // Without a final LF, a last line that is empty is no line at all
        // (sorted, it is last only when every line of the input is empty).
        let mut want: Vec<Vec<u8>> = Vec::new();
        for lines in &inputs {
            let mut lines = lines.clone();
            if !final_lf && lines.iter().all(Vec::is_empty) {
                lines.pop();
            }
            want.extend(lines);
        }
        want.sort();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn binary_search_matches_linear_scan(
        lines in index_lines(),
        key in query_key(),
        m in match_type(),
        from in opt_partial(),
        to in opt_partial(),
        headers in any::<bool>(),
        final_lf in any::<bool>(),
        sample_step in prop::option::of(1usize..80),
    ) {
        let data = file_bytes(&lines, headers, final_lf);
        let mut search = Search::new(data);
        if let Some(step) = sample_step {
            search.sample(step).unwrap();
        }
        let range = KeyRange::new(key.as_bytes(), m);
        let time = TimeFilter::new(from.map(str::as_bytes), to.map(str::as_bytes));
        let got: Vec<Vec<u8>> = search
            .range(&range)
            .unwrap()
            .map(|r| r.unwrap().1)
            .filter(|l| time.accepts(ukvs::sorted::lines::key_datetime(l).1))
            .map(<[u8]>::to_vec)
            .collect();
        prop_assert_eq!(got, linear(&lines, &key, m, from, to));
    }

    #[test]
    fn zipnum_matches_linear_scan(
        lines in index_lines(),
        key in query_key(),
        m in match_type(),
        lines_per_block in 1usize..4,
        blocks_per_shard in 1usize..4,
    ) {
        let (idx, shards) = build_cluster(&lines, lines_per_block, blocks_per_shard);
        let cluster = Cluster::new(idx);
        let range = KeyRange::new(key.as_bytes(), m);
        let got = cluster
            .range(&range, |shard, offset, length| {
                let bytes = &shards[shard];
                Ok(bytes[offset as usize..(offset + length) as usize].to_vec())
            })
            .unwrap();
        prop_assert_eq!(got, linear(&lines, &key, m, None, None));
    }
}

/// A cluster in memory: the `.idx` bytes and the shard bytes by name.
fn build_cluster(
    lines: &[Vec<u8>],
    lines_per_block: usize,
    blocks_per_shard: usize,
) -> (Vec<u8>, HashMap<String, Vec<u8>>) {
    let mut wtr = BlockWriter::new(lines_per_block, 6);
    let mut blocks = Vec::new();
    for l in lines {
        blocks.extend(wtr.push(l).unwrap());
    }
    blocks.extend(wtr.flush().unwrap());
    let mut idx = Vec::new();
    let mut shards: HashMap<String, Vec<u8>> = HashMap::new();
    for (i, b) in blocks.into_iter().enumerate() {
        let name = format!("s{}", i / blocks_per_shard);
        let shard = shards.entry(name.clone()).or_default();
        let entry = ukvs::sorted::zipnum::Block {
            first_key: b.first_key,
            shard: name,
            offset: shard.len() as u64,
            length: b.gzip.len() as u64,
            block_no: i as u64 + 1,
        };
        shard.extend_from_slice(&b.gzip);
        idx.extend_from_slice(&entry.to_line());
        idx.push(b'\n');
    }
    (idx, shards)
}

#[test]
fn search_reports_an_index_out_of_order() {
    let data = b"com,a)/ 2014 x\ncom,c)/ 2014 x\ncom,b)/ 2014 x\ncom,d)/ 2014 x\n".to_vec();
    let search = Search::new(data);
    let range = KeyRange::new(b"com,b)/", MatchType::Exact);
    let err = search
        .range(&range)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .unwrap_err();
    assert!(err.to_string().contains("not sorted near byte"), "{err}");
}

// ---------------------------------------------------------------------------
// Command line

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Deterministic pseudo-random CDXJ-like lines.
fn synthetic_lines(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut x = seed;
    (0..n)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let host = (x >> 33) % 97;
            let path = (x >> 20) % 13;
            let ts = 20000101000000u64 + (x >> 40) % 200000;
            format!("com,h{host})/p{path} {ts} {{\"n\":{}}}", i % 5).into_bytes()
        })
        .collect()
}

#[test]
fn sort_cli_is_byte_order_with_headers_on_top_for_any_threads_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let lines = synthetic_lines(20_000, 7);
    let (a, b) = lines.split_at(12_000);
    let mut fa = b"!context [\"x\"]\n!meta {a: 1}\n".to_vec();
    fa.extend(file_bytes(a, false, true));
    let mut fb = b"!context [\"x\"]\n!meta {b: 2}\n".to_vec();
    fb.extend(file_bytes(b, false, false));
    let pa = write(dir.path(), "a.cdxj", &fa);
    let pb = write(dir.path(), "b.cdxj.gz", &gzip(&fb));
    let mut want_lines = lines.clone();
    want_lines.sort();
    let mut want = b"!context [\"x\"]\n!meta {a: 1}\n!meta {b: 2}\n".to_vec();
    want.extend(file_bytes(&want_lines, false, true));
    let mut outputs = Vec::new();
    for (j, mem) in [("1", "64K"), ("2", "64K"), ("2", "1G"), ("3", "100K")] {
        let out = dir.path().join(format!("out-{j}-{mem}.cdxj"));
        let o = util::run(
            &[
                "sort",
                pa.to_str().unwrap(),
                pb.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
                "-j",
                j,
                "--mem",
                mem,
                "--tmp-dir",
                dir.path().to_str().unwrap(),
            ],
            b"",
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let got = std::fs::read(&out).unwrap();
        assert!(
            got == want,
            "-j {j} --mem {mem} differs from the in-memory sort"
        );
        outputs.push(got);
    }
    // No temporary run file is left behind.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".ukvs-tmp-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // --unique drops repeated lines; stdin works.
    let o = util::run(&["sort", "--unique", "--mem", "64K"], b"b\na\nb\n\na\n");
    assert!(o.status.success());
    assert_eq!(o.stdout, b"\na\nb\n");
}

#[test]
fn merge_cli_combines_sorted_inputs_and_rejects_unsorted_ones() {
    let dir = tempfile::tempdir().unwrap();
    let lines = synthetic_lines(3000, 11);
    let mut parts: Vec<Vec<Vec<u8>>> = vec![Vec::new(); 3];
    for (i, l) in lines.iter().enumerate() {
        parts[i % 3].push(l.clone());
    }
    let mut paths = Vec::new();
    for (i, p) in parts.iter_mut().enumerate() {
        p.sort();
        let mut bytes = format!("!meta {{part: {i}}}\n!context [\"x\"]\n").into_bytes();
        bytes.extend(file_bytes(p, false, i != 1));
        paths.push(write(dir.path(), &format!("p{i}.cdxj"), &bytes));
    }
    let out = dir.path().join("merged.cdxj");
    let mut args = vec!["merge"];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    args.extend(["-o", out.to_str().unwrap()]);
    let o = util::run(&args, b"");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut sorted = lines.clone();
    sorted.sort();
    let mut want =
        b"!context [\"x\"]\n!meta {part: 0}\n!meta {part: 1}\n!meta {part: 2}\n".to_vec();
    want.extend(file_bytes(&sorted, false, true));
    assert!(std::fs::read(&out).unwrap() == want);

    let bad = write(dir.path(), "bad.cdxj", b"!meta {}\na 1\nc 1\nb 1\n");
    let out2 = dir.path().join("never.cdxj");
    let o = util::run(
        &[
            "merge",
            paths[0].to_str().unwrap(),
            bad.to_str().unwrap(),
            "-o",
            out2.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.cdxj: line 4 is out of order"), "{err}");
    assert!(!out2.exists(), "a failed merge must leave no output");
}

#[test]
fn merge_to_stdout_that_stops_does_not_claim_nothing_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.cdxj", b"a 1\nb 1\n");
    let bad = write(dir.path(), "bad.cdxj", b"a 2\nc 1\nb 2\n");
    let (g, b) = (good.to_str().unwrap(), bad.to_str().unwrap());
    let o = util::run(&["merge", g, b], b"");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("no output written"), "{err}");
    assert!(err.contains("the output to stdout is incomplete"), "{err}");
    assert!(err.contains("bad.cdxj: line 3 is out of order"), "{err}");
    let out = dir.path().join("out.cdxj");
    let o = util::run(&["merge", g, b, "-o", out.to_str().unwrap()], b"");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("out.cdxj not written"), "{err}");
    assert!(!out.exists());
}

#[test]
fn sort_and_merge_refuse_inputs_with_different_fields_or_context() {
    let dir = tempfile::tempdir().unwrap();
    let fields_a =
        "!fields {\"keys\":[\"surt\",\"datetime\"],\"values\":[\"offset\",\"digest\"]}\n";
    let fields_b = "!fields {\"keys\":[\"surt\",\"datetime\"],\"values\":[\"digest\"]}\n";
    let ctx_a = "!context [\"https://oduwsdl.github.io/contexts/ukvs\"]\n";
    let ctx_b = "!context [\"https://example.org/other\"]\n";
    let a = write(
        dir.path(),
        "a.ukvs",
        format!("{ctx_a}{fields_a}com,a)/ 1 5 D\n").as_bytes(),
    );
    let same = write(
        dir.path(),
        "same.ukvs",
        format!("{ctx_a}{fields_a}com,b)/ 1 6 E\n").as_bytes(),
    );
    let other_fields = write(
        dir.path(),
        "f.ukvs",
        format!("{ctx_a}{fields_b}com,b)/ 1 E\n").as_bytes(),
    );
    let other_ctx = write(
        dir.path(),
        "c.ukvs",
        format!("{ctx_b}{fields_a}com,b)/ 1 6 E\n").as_bytes(),
    );
    let cdx_a = write(
        dir.path(),
        "a.cdx",
        b" CDX N b a m s k r M S V g\ncom,a)/ 1 x\n",
    );
    let cdx_b = write(
        dir.path(),
        "b.cdx",
        b" CDX N b a m s k r V g\ncom,b)/ 1 x\n",
    );
    for verb in ["sort", "merge"] {
        for (other, what) in [(&other_fields, "`!fields`"), (&other_ctx, "`!context`")] {
            let o = util::run(&[verb, a.to_str().unwrap(), other.to_str().unwrap()], b"");
            assert_eq!(o.status.code(), Some(2), "{verb} {what}");
            assert!(o.stdout.is_empty(), "{verb} {what}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains(&format!(
                    "{} and {} declare different {what} headers",
                    a.display(),
                    other.display()
                )),
                "{verb}: {err}"
            );
        }
        let o = util::run(
            &[verb, cdx_a.to_str().unwrap(), cdx_b.to_str().unwrap()],
            b"",
        );
        assert_eq!(o.status.code(), Some(2), "{verb} CDX legends");
        assert!(String::from_utf8_lossy(&o.stderr).contains("CDX legend"));
        // The same headers combine into one block.
        let o = util::run(&[verb, a.to_str().unwrap(), same.to_str().unwrap()], b"");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            format!("{ctx_a}{fields_a}com,a)/ 1 5 D\ncom,b)/ 1 6 E\n")
        );
    }
}

#[test]
fn sort_writes_the_cdx_legend_once_for_combined_cdx_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let legend = " CDX N b a m s k r M S V g";
    let a = format!(
        "{legend}\ncom,b)/ 20140101000000 http://b.com/ text/html 200 X - - 1 2 f.warc.gz\n"
    );
    let b = format!(
        "{legend}\r\ncom,a)/ 20140101000000 http://a.com/ text/html 200 Y - - 1 9 f.warc.gz\n"
    );
    let pa = write(dir.path(), "a.cdx", a.as_bytes());
    let pb = write(dir.path(), "b.cdx", b.as_bytes());
    // Concatenated on stdin (the second legend mid-stream), and as files
    // (one legend with CRLF).
    let concatenated = format!("{a}{a}");
    for (args, stdin) in [
        (vec!["sort", "--unique"], concatenated.as_bytes()),
        (
            vec!["sort", pa.to_str().unwrap(), pb.to_str().unwrap()],
            &b""[..],
        ),
    ] {
        let o = util::run(&args, stdin);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8(o.stdout).unwrap();
        assert_eq!(text.matches(" CDX ").count(), 1, "{args:?}: {text}");
        assert!(text.starts_with(&format!("{legend}\n")), "{args:?}: {text}");
    }
}

/// The lookup oracle for several files: merge by line (ties in file
/// order), filter, then closest / reverse / limit as pywb orders them.
fn cli_oracle(
    files: &[Vec<Vec<u8>>],
    key: &str,
    m: MatchType,
    closest: Option<&str>,
    reverse: bool,
    limit: Option<usize>,
) -> Vec<Vec<u8>> {
    let mut all: Vec<(Vec<u8>, usize)> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        all.extend(linear(f, key, m, None, None).into_iter().map(|l| (l, i)));
    }
    all.sort();
    let mut found: Vec<Vec<u8>> = all.into_iter().map(|(l, _)| l).collect();
    if let Some(c) = closest {
        let secs = |l: &Vec<u8>| {
            let ts = String::from_utf8_lossy(l)
                .split(' ')
                .nth(1)
                .unwrap_or("")
                .to_string();
            ukvs::sorted::datetime_to_secs(ts.as_bytes())
        };
        let target = ukvs::sorted::datetime_to_secs(c.as_bytes());
        // A stable insertion sort, as pywb's bisect_right insertion.
        let mut out: Vec<(i64, Vec<u8>)> = Vec::new();
        for l in found {
            let d = (secs(&l) - target).abs();
            let at = out.iter().position(|(k, _)| *k > d).unwrap_or(out.len());
            out.insert(at, (d, l));
        }
        found = out.into_iter().map(|(_, l)| l).collect();
        found.truncate(limit.unwrap_or(usize::MAX));
    } else if reverse {
        found.reverse();
        found.truncate(limit.unwrap_or(usize::MAX));
    } else {
        found.truncate(limit.unwrap_or(usize::MAX));
    }
    found
}

#[test]
fn lookup_cli_matches_the_oracle_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = (
        prop::collection::vec(index_lines(), 1..4),
        query_key(),
        match_type(),
        prop::option::of(0..TIMES.len()),
        any::<bool>(),
        prop::option::of(1usize..5),
    );
    for case in 0..40 {
        let (files, key, m, closest, reverse, limit) =
            strategy.new_tree(&mut runner).unwrap().current();
        let mut args: Vec<String> = vec!["lookup".into()];
        for (i, f) in files.iter().enumerate() {
            let p = write(
                dir.path(),
                &format!("c{case}-{i}.cdxj"),
                &file_bytes(f, i == 0, i != 1),
            );
            args.push(p.to_str().unwrap().into());
        }
        let mt = match m {
            MatchType::Exact => "exact",
            MatchType::Prefix => "prefix",
            MatchType::Host => "host",
            _ => "domain",
        };
        args.extend(["--key".into(), key.clone(), "--match".into(), mt.into()]);
        let closest = closest.map(|i| &TIMES[i][..(4 + case % 11)]);
        if let Some(c) = closest {
            args.extend(["--closest".into(), c.into()]);
        }
        if reverse {
            args.push("--reverse".into());
        }
        if let Some(n) = limit {
            args.extend(["--limit".into(), n.to_string()]);
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = util::run(&argv, b"");
        let want = cli_oracle(&files, &key, m, closest, reverse, limit);
        let mut want_bytes = Vec::new();
        for l in &want {
            want_bytes.extend_from_slice(l);
            want_bytes.push(b'\n');
        }
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&want_bytes),
            "case {case}: {argv:?}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            o.status.code(),
            Some(if want.is_empty() { 1 } else { 0 }),
            "{argv:?}"
        );
    }
}

/// A batch large enough to sample the indexes (every line's start kept,
/// searches in lockstep, scans judged by their first bytes) answers what a
/// linear scan answers, over two indexes, in input order; an index out of
/// order anywhere is refused.
#[test]
fn lookup_cli_sampled_batch_equals_linear_scan() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = [Vec::new(), Vec::new()];
    let mut all: Vec<String> = Vec::new();
    for i in 0..6000u32 {
        // Keys that are prefixes of others, repeated keys, long lines.
        let key = format!("com,h{})/p{}", i / 4, (i * 7) % 5);
        let pad = "x".repeat((i as usize * 37) % 700);
        let line = format!("{key} 2014{:010} {{\"n\":{i},\"pad\":\"{pad}\"}}", i % 97);
        all.push(line);
    }
    all.sort();
    for (n, line) in all.iter().enumerate() {
        files[n % 3 / 2].extend_from_slice(line.as_bytes());
        files[n % 3 / 2].push(b'\n');
    }
    let a = write(dir.path(), "a.cdxj", &files[0]);
    let b = write(dir.path(), "b.cdxj", &files[1]);
    let mut queries = String::new();
    let mut want = Vec::new();
    for q in 0..5000u32 {
        let key = match q % 5 {
            0 => format!("com,h{})/p{}", (q * 13) % 1600, q % 5),
            1 => format!("com,h{})/p", q % 1600),
            2 => format!("com,h{}", q % 1600),
            3 => "a".to_string(),
            _ => format!("com,h{})/p{}", (q * 31) % 1500, (q * 3) % 5),
        };
        queries.push_str(&key);
        queries.push('\n');
        for line in &all {
            let rest = line.strip_prefix(key.as_str());
            if rest.is_some_and(|r| r.starts_with(' ')) {
                want.extend_from_slice(line.as_bytes());
                want.push(b'\n');
            }
        }
    }
    let o = util::run(
        &[
            "lookup",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--keys",
            "-",
        ],
        queries.as_bytes(),
    );
    util::assert_ok(&o);
    assert!(
        o.stdout == want,
        "batch answers differ from the linear scan"
    );
    // One line out of place in the middle of a sample window.
    let mut lines: Vec<&[u8]> = files[0].split_inclusive(|&c| c == b'\n').collect();
    lines.swap(1001, 1003);
    let bad = write(dir.path(), "bad.cdxj", &lines.concat());
    let o = util::run(
        &["lookup", bad.to_str().unwrap(), "--keys", "-"],
        queries.as_bytes(),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.cdxj") && err.contains("not sorted"),
        "{err}"
    );
}

#[test]
fn lookup_cli_batch_answers_in_input_order_and_handles_odd_files() {
    let dir = tempfile::tempdir().unwrap();
    let idx = write(
        dir.path(),
        "i.cdxj",
        b"!meta {}\ncom,a)/ 20140101000000 1\ncom,a)/ 20150101000000 2\ncom,b)/ 20140101000000 3\n\
com,c)/ 20140101000000 4",
    );
    let empty = write(dir.path(), "empty.cdxj", b"");
    let i = idx.to_str().unwrap();
    let e = empty.to_str().unwrap();
    let o = util::run(
        &["lookup", i, e, "--keys", "-"],
        b"com,c)/\ncom,zz)/\ncom,a)/\n",
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        o.stdout,
        b"com,c)/ 20140101000000 4\ncom,a)/ 20140101000000 1\ncom,a)/ 20150101000000 2\n"
    );
    // URLs are canonicalised to SURT keys, one query per line.
    let o = util::run(
        &["lookup", i, "--urls", "-"],
        b"http://www.c.com/\nhttps://A.com:443/\n",
    );
    util::assert_ok(&o);
    assert_eq!(
        o.stdout,
        b"com,c)/ 20140101000000 4\ncom,a)/ 20140101000000 1\ncom,a)/ 20150101000000 2\n"
    );
    let o = util::run(&["lookup", i, "*.c.com"], b"");
    assert_eq!(o.stdout, b"com,c)/ 20140101000000 4\n");
    let o = util::run(&["lookup", i, "a.com/*", "--reverse", "--limit", "1"], b"");
    assert_eq!(o.stdout, b"com,a)/ 20150101000000 2\n");
    let o = util::run(&["lookup", e, "--keys", "-"], b"com,c)/\n");
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    // Beyond the last line, before the first, on the last line without LF.
    for (key, code) in [("zzz", 1), ("0", 1), ("com,c)/", 0)] {
        for mmap in [true, false] {
            let mut args = vec!["lookup", i, "--key", key];
            if !mmap {
                args.push("--no-mmap");
            }
            assert_eq!(util::run(&args, b"").status.code(), Some(code), "{key}");
        }
    }
    // Partial datetimes are padded like pywb's.
    let o = util::run(&["lookup", i, "--key", "com,a)/", "--from", "2015"], b"");
    assert_eq!(o.stdout, b"com,a)/ 20150101000000 2\n");
    let o = util::run(&["lookup", i, "--key", "com,a)/", "--to", "2014"], b"");
    assert_eq!(o.stdout, b"com,a)/ 20140101000000 1\n");
    // A missing index is an error.
    let o = util::run(&["lookup", "/nonexistent/x.cdxj", "--key", "a"], b"");
    assert_eq!(o.status.code(), Some(2));
    // Out of order on the search path: exit 2 with the file and position.
    let bad = write(
        dir.path(),
        "bad.cdxj",
        b"com,a)/ 1\ncom,c)/ 1\ncom,b)/ 1\ncom,d)/ 1\n",
    );
    let o = util::run(&["lookup", bad.to_str().unwrap(), "--key", "com,b)/"], b"");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.cdxj") && err.contains("near byte"),
        "{err}"
    );
}

#[test]
fn lookup_cli_output_formats() {
    let dir = tempfile::tempdir().unwrap();
    let idx = write(
        dir.path(),
        "i.cdx",
        b" CDX N b a m s k r M S V g\n\
com,example)/ 20140127171200 http://example.com text/html 200 B2LT - - 1046 334 dupes.warc.gz\n\
com,example)/ 20140127171251 http://example.com warc/revisit - B2LT - - 553 11875 dupes.warc.gz\n",
    );
    let i = idx.to_str().unwrap();
    let o = util::run(
        &[
            "lookup",
            i,
            "--key",
            "com,example)/",
            "--output",
            "json",
            "--limit",
            "1",
        ],
        b"",
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["urlkey"], "com,example)/");
    assert_eq!(v["url"], "http://example.com");
    assert_eq!(v["offset"], "334");
    let o = util::run(
        &[
            "lookup",
            i,
            "--key",
            "com,example)/",
            "--output",
            "cdxj",
            "--reverse",
            "--limit",
            "1",
        ],
        b"",
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("com,example)/ 20140127171251 {\"url\":\"http://example.com\""),
        "{text}"
    );
    let o = util::run(
        &[
            "lookup",
            i,
            "--key",
            "com,example)/",
            "--output",
            "link",
            "--archive-prefix",
            "https://a.example/w/",
        ],
        b"",
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        text,
        "<http://example.com>; rel=\"original\",\n\
<https://a.example/w/20140127171200/http://example.com>; rel=\"first memento\"; datetime=\"Mon, 27 Jan 2014 17:12:00 GMT\",\n\
<https://a.example/w/20140127171251/http://example.com>; rel=\"last memento\"; datetime=\"Mon, 27 Jan 2014 17:12:51 GMT\"\n"
    );
}

/// The TimeMap of RFC 7089 section 5 (its example's datetimes), from a
/// CDX index: original, self, timegate, then the mementos in time order
/// whatever order the lookup found them in.
#[test]
fn lookup_link_output_is_an_rfc7089_timemap() {
    let dir = tempfile::tempdir().unwrap();
    let idx = write(
        dir.path(),
        "i.cdx",
        b" CDX N b a m s k r M S V g\n\
org,example,a)/ 20000620180259 http://a.example.org/ text/html 200 B2LT - - 1046 334 a.warc.gz\n\
org,example,a)/ 20000621011731 http://a.example.org/ text/html 200 B2LT - - 1046 1380 a.warc.gz\n\
org,example,a)/ 20000621011731 http://a.example.org/ warc/revisit - B2LT - - 553 2426 a.warc.gz\n\
org,example,a)/ 20091027204954 https://a.example.org/ text/html 200 C3MU - - 1046 2979 a.warc.gz\n",
    );
    let i = idx.to_str().unwrap();
    let base = [
        "lookup",
        i,
        "a.example.org",
        "--output",
        "link",
        "--archive-prefix",
        "http://arxiv.example.net/web/",
    ];
    let mut args = base.to_vec();
    args.extend([
        "--timemap-url",
        "http://arxiv.example.net/timemap/http://a.example.org",
        "--timegate-url",
        "http://arxiv.example.net/timegate/http://a.example.org",
        // Found nearest first: the TimeMap must still be in time order.
        "--closest",
        "20091027204954",
    ]);
    let o = util::run(&args, b"");
    util::assert_ok(&o);
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        text,
        "<https://a.example.org/>; rel=\"original\",\n\
<http://arxiv.example.net/timemap/http://a.example.org>; rel=\"self\"; type=\"application/link-format\"; \
from=\"Tue, 20 Jun 2000 18:02:59 GMT\"; until=\"Tue, 27 Oct 2009 20:49:54 GMT\",\n\
<http://arxiv.example.net/timegate/http://a.example.org>; rel=\"timegate\",\n\
<http://arxiv.example.net/web/20000620180259/http://a.example.org/>; rel=\"first memento\"; datetime=\"Tue, 20 Jun 2000 18:02:59 GMT\",\n\
<http://arxiv.example.net/web/20000621011731/http://a.example.org/>; rel=\"memento\"; datetime=\"Wed, 21 Jun 2000 01:17:31 GMT\",\n\
<http://arxiv.example.net/web/20091027204954/https://a.example.org/>; rel=\"last memento\"; datetime=\"Tue, 27 Oct 2009 20:49:54 GMT\"\n"
    );
    // Every entry has the link-format shape `<URI>; rel="..."(; k="v")*`.
    for entry in text.trim_end().split(",\n") {
        let (uri, params) = entry.split_once(">; ").expect(entry);
        assert!(
            uri.starts_with('<') && !uri[1..].contains(['<', '>', ' ']),
            "{entry}"
        );
        assert!(params.starts_with("rel=\""), "{entry}");
        for p in params.split("; ") {
            let (k, v) = p.split_once('=').expect(p);
            assert!(
                !k.is_empty() && v.starts_with('"') && v.ends_with('"'),
                "{entry}"
            );
        }
    }

    // Without the TimeMap's and TimeGate's URLs their links are left out;
    // the order of the results does not move `first`/`last`.
    let mut args = base.to_vec();
    args.push("--reverse");
    let o = util::run(&args, b"");
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        !text.contains("rel=\"self\"") && !text.contains("timegate"),
        "{text}"
    );
    let rels: Vec<&str> = text
        .lines()
        .map(|l| l.split("rel=\"").nth(1).unwrap().split('"').next().unwrap())
        .collect();
    assert_eq!(
        rels,
        ["original", "first memento", "memento", "last memento"]
    );

    // A TimeMap is about one URL: other match types are refused.
    for extra in [&["--match", "prefix"][..], &["--keys", "-"][..]] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let o = util::run(&args, b"org,example,a)/\n");
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("TimeMap"),
            "{extra:?}"
        );
    }
    // Nothing found: nothing printed, exit 1.
    let o = util::run(&["lookup", i, "b.example.org", "--output", "link"], b"");
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
}

/// A line out of place that no probe of a search visits: the search alone
/// answers "nothing" for its key; `--check` reads the whole file and names
/// the line, for plain files and ZipNum clusters alike.
#[test]
fn lookup_check_reports_disorder_off_the_search_path() {
    let dir = tempfile::tempdir().unwrap();
    let text = b"!meta {}\ncom,a)/ 1\ncom,b)/ 1\ncom,z)/ 1\ncom,c)/ 1\ncom,d)/ 1\n";
    let bad = write(dir.path(), "bad.cdxj", text);
    let b = bad.to_str().unwrap();
    // The search alone: `com,z)/` and `com,b)/` bound the probes
    // consistently, so the misplaced `com,c)/` would be missed; it lies
    // in the first 64 KiB, whose order is checked when the file is opened.
    let o = util::run(&["lookup", b, "--key", "com,c)/"], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not sorted near byte"));
    // A line misplaced in the middle of a large file, far from the ends
    // and from where its key belongs, is missed.
    let mut big = b"!meta {}\n".to_vec();
    for i in 0..20_000 {
        big.extend_from_slice(format!("com,a)/{i:06} 1\n").as_bytes());
    }
    for i in 0..20_000 {
        if i == 15_000 {
            big.extend_from_slice(b"com,c)/ 1\n");
        }
        big.extend_from_slice(format!("com,e)/{i:06} 1\n").as_bytes());
    }
    let large = write(dir.path(), "large.cdxj", &big);
    let o = util::run(
        &["lookup", large.to_str().unwrap(), "--key", "com,c)/"],
        b"",
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = util::run(&["lookup", "--check", large.to_str().unwrap()], b"");
    assert_eq!(o.status.code(), Some(2));
    let at = text.windows(9).position(|w| w == b"com,c)/ 1").unwrap();
    for args in [
        vec!["lookup", "--check", b, "--key", "com,c)/"],
        vec!["lookup", "--check", b],
    ] {
        let o = util::run(&args, b"");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("bad.cdxj: line 5 (byte {at}) is out of order")),
            "{args:?}: {err}"
        );
        assert!(err.contains("1 lines out of order"), "{err}");
    }
    // A sorted file passes and the query is answered.
    let good = write(
        dir.path(),
        "good.cdxj",
        b"!meta {}\ncom,a)/ 1\ncom,c)/ 1\ncom,c)/ 2",
    );
    let g = good.to_str().unwrap();
    let o = util::run(&["lookup", "--check", g], b"");
    util::assert_ok(&o);
    let o = util::run(&["lookup", "--check", g, "--key", "com,c)/"], b"");
    assert_eq!(o.stdout, b"com,c)/ 1\ncom,c)/ 2\n");

    // A cluster whose second block holds a line out of order.
    let lines: Vec<Vec<u8>> = ["a 1", "b 1", "c 1", "e 1", "d 1", "f 1"]
        .iter()
        .map(|l| l.as_bytes().to_vec())
        .collect();
    let (idx, shards) = build_cluster(&lines, 2, 2);
    let cluster = dir.path().join("cluster");
    std::fs::create_dir(&cluster).unwrap();
    let mut loc = String::new();
    for (name, bytes) in &shards {
        write(&cluster, &format!("{name}.gz"), bytes);
        loc.push_str(&format!("{name}\t{name}.gz\n"));
    }
    write(&cluster, "c.idx", &idx);
    write(&cluster, "c.loc", loc.as_bytes());
    let o = util::run(&["lookup", "--check", cluster.to_str().unwrap()], b"");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("block 3 of shard s1, line 1 (byte 0 of the block) is out of order"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------
// ZipNum against pywb

/// The sample CDX of pywb's own ZipNum fixture, one line per line (its
/// blocks end without LF, so the file cannot simply be gunzipped).
fn pywb_sample_lines(zipcdx: &Path) -> Vec<Vec<u8>> {
    let idx = std::fs::read_to_string(zipcdx.join("zipnum-sample.idx")).unwrap();
    let shard = std::fs::read(zipcdx.join("zipnum-sample.cdx.gz")).unwrap();
    let mut lines = Vec::new();
    for l in idx.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        let (off, len): (usize, usize) = (f[2].parse().unwrap(), f[3].parse().unwrap());
        let mut text = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::MultiGzDecoder::new(&shard[off..off + len]),
            &mut text,
        )
        .unwrap();
        lines.extend(text.split(|&b| b == b'\n').map(<[u8]>::to_vec));
    }
    lines
}

#[test]
fn lookup_reads_pywbs_own_zipnum_fixture() {
    let Some(corpus) = util::shared_corpus("lookup_reads_pywbs_own_zipnum_fixture") else {
        return;
    };
    let zipcdx = corpus.join("webrecorder__pywb/sample_archive/zipcdx");
    let lines = pywb_sample_lines(&zipcdx);
    assert_eq!(lines.len(), 188);
    let idx = zipcdx.join("zipnum-sample.idx");
    for (key, m, mt) in [
        ("org,iana)/", MatchType::Exact, "exact"),
        (
            "org,iana)/_css/2013.1/fonts/opensans-bold.ttf",
            MatchType::Exact,
            "exact",
        ),
        ("org,iana)/_css", MatchType::Prefix, "prefix"),
        ("org,iana)/", MatchType::Host, "host"),
        ("com", MatchType::Domain, "domain"),
        ("com,example)/", MatchType::Exact, "exact"),
        ("zz", MatchType::Exact, "exact"),
    ] {
        let o = util::run(
            &["lookup", idx.to_str().unwrap(), "--key", key, "--match", mt],
            b"",
        );
        let got: Vec<&[u8]> = o
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        let want = linear(&lines, key, m, None, None);
        assert_eq!(
            got,
            want.iter().map(|l| &l[..]).collect::<Vec<_>>(),
            "{key} {mt}"
        );
    }
}

/// The repository's own ARC and WARC files indexed in `format` into
/// `dir/repo.FORMAT`. Some fixtures are damaged on purpose, so `index`
/// reports errors (exit 2) and indexes every good record.
fn index_of_the_repo(dir: &Path, format: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let input = dir.join(format!("repo.{format}"));
    let o = util::run(
        &[
            "index",
            "--format",
            format,
            root.join("samples").to_str().unwrap(),
            util::data_dir().join("arc").to_str().unwrap(),
            "-o",
            input.to_str().unwrap(),
        ],
        b"",
    );
    assert!(
        matches!(o.status.code(), Some(0 | 2)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    input
}

/// A cluster of `input` in `dir/cluster`: 3 lines a block, two shards.
fn small_cluster(dir: &Path, input: &Path) -> PathBuf {
    let cluster = dir.join("cluster");
    let o = util::run(
        &[
            "zipnum",
            "build",
            input.to_str().unwrap(),
            "-o",
            cluster.to_str().unwrap(),
            "--lines-per-block",
            "3",
            "--shards",
            "2",
        ],
        b"",
    );
    util::assert_ok(&o);
    cluster
}

/// `printf 'x\n' | bzip2`: a real bzip2 stream.
const BZIP2_X: [u8; 39] = [
    0x42, 0x5a, 0x68, 0x39, 0x31, 0x41, 0x59, 0x26, 0x53, 0x59, 0x2b, 0x3e, 0xcf, 0x7f, 0x00, 0x00,
    0x00, 0xc0, 0x80, 0x00, 0x10, 0x00, 0x40, 0x20, 0x00, 0x21, 0x00, 0x82, 0xb1, 0x77, 0x24, 0x53,
    0x85, 0x09, 0x02, 0xb3, 0xec, 0xf7, 0xf0,
];

/// Every command that reads indexes or maps refuses a file that holds
/// none (an archive, a compression it does not read), whatever its name,
/// with exit 2, a message naming the file and what to do, and no output:
/// its bytes would otherwise be read as lines, sorted, counted or keyed.
#[test]
fn what_holds_no_index_lines_is_refused_by_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let bz2 = dir.path().join("index.cdxj");
    std::fs::write(&bz2, BZIP2_X).unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let index = samples.join("expected.ukvs");
    let idx = index.to_str().unwrap();
    // What reads maps says what a map is made of.
    for (input, said) in [
        (samples.join("example.warc.gz"), "holds WARC records, not"),
        (samples.join("example.arc"), "holds ARC records, not"),
        (samples.join("example.arc.gz"), "holds ARC records, not"),
        (bz2.clone(), "is bzip2-compressed"),
    ] {
        let p = input.to_str().unwrap();
        let name = input.file_name().unwrap().to_str().unwrap();
        for args in [
            &["sort", p, "-o", o][..],
            &["merge", p, p, "-o", o],
            &["validate", p],
            &["cat", p],
            &["zipnum", "build", p, "-o", o],
            &["lookup", p, "com,example)/"],
            &["stats", p, "-o", o],
            &["mementomap", "generate", p, "-o", o],
            &["mementomap", "compact", p, "-o", o],
            &["mementomap", "merge", p, "-o", o],
            &["mementomap", "lookup", p, "http://example.com/"],
            &[
                "mementomap",
                "evaluate",
                "--sweep",
                "--index",
                p,
                "--queries",
                idx,
            ],
        ] {
            let r = util::run(args, b"");
            let err = String::from_utf8_lossy(&r.stderr);
            assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(&format!("{name} {said}")), "{args:?}: {err}");
            let map = matches!(args[..2], ["mementomap", "lookup" | "merge" | "compact"]);
            if said.ends_with("not") {
                let what = match map {
                    true => "map lines: index it first",
                    false => "index lines: index it first",
                };
                assert!(err.contains(what), "{args:?}: {err}");
                let step = "make a map of the index (`ukvs mementomap generate INDEX -o MAP`), then give MAP";
                assert_eq!(err.contains(step), map, "{args:?}: {err}");
            }
            if args[..2] == ["mementomap", "lookup"] {
                assert!(!err.contains("zipnum"), "{args:?}: {err}");
            }
            assert!(r.stdout.is_empty(), "{args:?}");
            assert!(!out.exists(), "{args:?} wrote its output");
        }
        // Queries are URLs or SURTs: an index's keys are.
        let evaluate = [
            "mementomap",
            "evaluate",
            "--sweep",
            "--index",
            idx,
            "--queries",
            p,
        ];
        for args in [
            &evaluate[..],
            &["lookup", idx, "--keys", p],
            &["lookup", idx, "--urls", p],
        ] {
            let r = util::run(args, b"");
            let err = String::from_utf8_lossy(&r.stderr);
            assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(&format!("{name} {said}")), "{args:?}: {err}");
            if said.ends_with("not") {
                let what = "queries (URLs or SURTs, one per line): index it first";
                assert!(err.contains(what), "{args:?}: {err}");
                let step = "then give the keys of INDEX";
                assert!(err.contains(step), "{args:?}: {err}");
            }
            assert!(r.stdout.is_empty(), "{args:?}");
        }
    }
    // A gzip map is not for a cluster: only index lookups say so.
    let map = dir.path().join("m.map");
    let gz = dir.path().join("m.map.gz");
    let g = util::run(
        &[
            "mementomap",
            "generate",
            index.to_str().unwrap(),
            "-o",
            map.to_str().unwrap(),
        ],
        b"",
    );
    util::assert_ok(&g);
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut z, &std::fs::read(&map).unwrap()).unwrap();
    std::fs::write(&gz, z.finish().unwrap()).unwrap();
    let z = gz.to_str().unwrap();
    for (args, hint) in [
        (
            &["mementomap", "lookup", z, "http://example.com/"][..],
            "(decompress it)",
        ),
        (
            &["lookup", z, "http://example.com/"],
            "(decompress it, or build a cluster with `ukvs zipnum build`)",
        ),
    ] {
        let r = util::run(args, b"");
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("m.map.gz is gzip-compressed"),
            "{args:?}: {err}"
        );
        assert!(err.contains(hint), "{args:?}: {err}");
    }
    // Stdin too.
    let warc = std::fs::read(samples.join("example.warc.gz")).unwrap();
    for args in [
        &["sort", "-"][..],
        &["cat", "-"],
        &["mementomap", "generate", "-"],
    ] {
        let r = util::run(args, &warc);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("<stdin> holds WARC records"),
            "{args:?}: {err}"
        );
    }
}

/// A gzip index cut short is read up to the cut by every job that reads
/// indexes or maps as streams, which then stops with exit 2, naming the file, the
/// last line read and the byte of the text it reached, and leaves no
/// output.
#[test]
fn a_cut_gzip_index_is_reported_with_the_line_it_follows() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..60_000 {
        text += &format!("com,ex{i:06})/ 20200101000000 {{\"url\": \"http://ex{i:06}.com/\"}}\n");
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let cut = dir.path().join("cut.cdxj.gz");
    std::fs::write(&cut, &gz[..gz.len() / 2]).unwrap();
    let (p, out) = (cut.to_str().unwrap(), dir.path().join("out"));
    let o = out.to_str().unwrap();
    for args in [
        &["sort", p, "-o", o][..],
        &["cat", p],
        &["validate", p],
        &["zipnum", "build", p, "-o", o],
        &["stats", p, "-o", o],
        &["mementomap", "generate", p, "-o", o],
        &["merge", p, p, "-o", o],
        &["mementomap", "generate", p, p, "-o", o],
        &["stats", p, p, "-o", o],
        // Index lines read as map lines: a key, a frequency, a block.
        &["mementomap", "merge", p, p, "-o", o],
        &["mementomap", "compact", p, "-o", o],
    ] {
        let r = util::run(args, b"");
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.matches("deflate").count(), 1, "{args:?}: {err}");
        let said = err
            .split(&format!("cannot read {p} after line "))
            .nth(1)
            .unwrap_or_else(|| panic!("{args:?}: {err}"));
        let line: usize = said.split(' ').next().unwrap().parse().unwrap();
        assert!(line > 1000 && line < 60_000, "{args:?}: {err}");
        let byte = format!("(near byte {} of its lines)", line * text.len() / 60_000);
        assert!(said.contains(&byte), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} wrote its output");
    }
}

/// A zstd-compressed index reads as the plain one, whatever its name:
/// the same sorted lines, conversion, validation, statistics and map.
/// (A binary search needs a plain file, and says so.)
#[test]
fn a_zstd_index_reads_as_the_plain_one() {
    let dir = tempfile::tempdir().unwrap();
    let plain = index_of_the_repo(dir.path(), "cdxj");
    let bytes = std::fs::read(&plain).unwrap();
    let zst = dir.path().join("repo.bin");
    std::fs::write(&zst, zstd::stream::encode_all(&bytes[..], 3).unwrap()).unwrap();
    let (p, z) = (plain.to_str().unwrap(), zst.to_str().unwrap());
    let stdout = |args: &[&str]| {
        let r = util::run(args, b"");
        util::assert_ok(&r);
        r.stdout
    };
    let sorted = |input: &str| {
        let out = dir.path().join("sorted");
        stdout(&["sort", input, "-o", out.to_str().unwrap()]);
        std::fs::read(out).unwrap()
    };
    assert_eq!(sorted(z), sorted(p));
    for args in [&["cat"][..], &["cat", "--json"], &["stats", "--json"]] {
        let with = |input: &str| {
            let mut a = args.to_vec();
            a.push(input);
            stdout(&a)
        };
        let (a, b) = (with(z), with(p));
        assert!(!a.is_empty(), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&a).replace(z, p),
            String::from_utf8_lossy(&b),
            "{args:?}"
        );
    }
    let valid = String::from_utf8(stdout(&["validate", z])).unwrap();
    assert!(valid.contains("sorted, 0 problems: valid"), "{valid}");
    let body = |input: &str| {
        let out = dir.path().join("map");
        stdout(&[
            "mementomap",
            "generate",
            "-q",
            input,
            "-o",
            out.to_str().unwrap(),
        ]);
        let map = std::fs::read_to_string(out).unwrap();
        map.lines()
            .filter(|l| !l.starts_with('!'))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let map = body(z);
    assert!(!map.is_empty());
    assert_eq!(map, body(p));
    let r = util::run(&["lookup", z, "com,example)/"], b"");
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("repo.bin is zstd-compressed"), "{err}");
}

/// A directory of sorted indexes, one of them gzipped: `cat` and `stats`
/// read its files front to back, as they read the one index they were cut
/// from; `lookup`, which needs a plain file to search, refuses the
/// compressed one by name.
#[test]
fn cat_and_stats_of_a_directory_read_its_compressed_files() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let input = index_of_the_repo(dir.path(), "cdxj");
    let text = std::fs::read(&input).unwrap();
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    assert!(lines.len() >= 20, "only {} lines", lines.len());
    let (first, second) = lines.split_at(lines.len() / 2);
    let shards = dir.path().join("shards");
    std::fs::create_dir(&shards).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&first.concat()).unwrap();
    std::fs::write(shards.join("a.cdxj"), gz.finish().unwrap()).unwrap();
    std::fs::write(shards.join("b.cdxj"), second.concat()).unwrap();
    read_alike(&shards, &input);
    let r = util::run(&["lookup", shards.to_str().unwrap(), "com,example)/"], b"");
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("a.cdxj is gzip-compressed"), "{err}");
}

/// `cat`, `cat --json` and `stats --json` of `dir` print what they print
/// of `whole`, which is not nothing.
fn read_alike(dir: &Path, whole: &Path) {
    for args in [&["cat"][..], &["cat", "--json"], &["stats", "--json"]] {
        let with = |path: &Path| {
            let mut a = args.to_vec();
            a.push(path.to_str().unwrap());
            let o = util::run(&a, b"");
            util::assert_ok(&o);
            o.stdout
        };
        let want = with(whole);
        assert!(!want.is_empty(), "{args:?}");
        assert!(with(dir) == want, "{args:?}");
    }
}

/// Compressed copies in a directory of indexes (`*.cdxj.gz`, `*.cdxj.zst`)
/// are read by `cat` and `stats`; `lookup` cannot search them, and says
/// which it skipped, searching the plain files; a directory of compressed
/// copies alone is refused, naming one.
#[test]
fn a_directory_compressed_copies_are_read_or_reported_as_skipped() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let input = index_of_the_repo(dir.path(), "cdxj");
    let text = std::fs::read(&input).unwrap();
    let lines: Vec<&[u8]> = text
        .split_inclusive(|&b| b == b'\n')
        .filter(|l| !l.starts_with(b"!"))
        .collect();
    assert!(lines.len() >= 30, "only {} lines", lines.len());
    let key = |l: &[u8]| {
        let end = l.iter().position(|&b| b == b' ').unwrap();
        String::from_utf8_lossy(&l[..end]).into_owned()
    };
    // Cut between two keys near a third and two thirds of the lines.
    let cut = |near: usize| {
        (near..lines.len())
            .find(|&i| key(lines[i - 1]) != key(lines[i]))
            .unwrap()
    };
    let (one, two) = (cut(lines.len() / 3), cut(2 * lines.len() / 3));
    assert!(one < two, "{one} {two}");
    // Keys held only by the gzip, the zstd and the plain file.
    let (gz_key, zst_key, plain_key) = (key(lines[0]), key(lines[one]), key(lines[two]));
    let shards = dir.path().join("shards");
    std::fs::create_dir(&shards).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&lines[..one].concat()).unwrap();
    std::fs::write(shards.join("a.cdxj.gz"), gz.finish().unwrap()).unwrap();
    let zst = zstd::stream::encode_all(&lines[one..two].concat()[..], 3).unwrap();
    std::fs::write(shards.join("b.cdxj.zst"), zst).unwrap();
    std::fs::write(shards.join("c.cdxj"), lines[two..].concat()).unwrap();
    let whole = dir.path().join("whole.cdxj");
    std::fs::write(&whole, lines.concat()).unwrap();
    read_alike(&shards, &whole);
    let lookup =
        |path: &Path, key: &str| util::run(&["lookup", path.to_str().unwrap(), "--key", key], b"");
    let found = lookup(&shards, &plain_key);
    util::assert_ok(&found);
    let out = String::from_utf8_lossy(&found.stdout);
    assert!(out.starts_with(&format!("{plain_key} ")), "{out}");
    let err = String::from_utf8_lossy(&found.stderr);
    for (name, kind) in [("a.cdxj.gz", "gzip"), ("b.cdxj.zst", "zstd")] {
        assert!(
            err.contains(&format!("skipped {}", shards.join(name).display()))
                && err.contains(&format!("{name} is {kind}-compressed")),
            "{err}"
        );
    }
    // What only the skipped copies hold is not found, and that is said.
    for key in [&gz_key, &zst_key] {
        let r = lookup(&shards, key);
        assert_eq!(r.status.code(), Some(1), "{key}");
        assert!(r.stdout.is_empty(), "{key}");
        assert!(
            String::from_utf8_lossy(&r.stderr).contains("skipped"),
            "{key}"
        );
    }
    std::fs::remove_file(shards.join("c.cdxj")).unwrap();
    let r = lookup(&shards, &plain_key);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains("a.cdxj.gz is gzip-compressed: a binary search needs a plain file"),
        "{err}"
    );
}

/// `cat` of a ZipNum cluster (its directory or its `.idx`) prints what
/// `cat` of the sorted index it was built from prints, block after block
/// across shards; a damaged shard stops it with an error naming the
/// cluster.
#[test]
fn cat_of_a_cluster_is_cat_of_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let input = index_of_the_repo(dir.path(), "cdxj");
    let cluster = small_cluster(dir.path(), &input);
    let idx = cluster.join("index.idx");
    let blocks = std::fs::read_to_string(&idx).unwrap().lines().count();
    assert!(blocks >= 6, "only {blocks} blocks");
    for json in [false, true] {
        let cat = |path: &Path| {
            let mut args = vec!["cat"];
            if json {
                args.push("--json");
            }
            args.push(path.to_str().unwrap());
            let o = util::run(&args, b"");
            util::assert_ok(&o);
            o.stdout
        };
        let want = cat(&input);
        let records = want.split(|&b| b == b'\n');
        let records = records.filter(|l| !l.is_empty() && !l.starts_with(b"!"));
        assert!(records.count() >= 10, "--json {json}");
        assert!(cat(&cluster) == want, "cat of the directory, --json {json}");
        assert!(cat(&idx) == want, "cat of the .idx, --json {json}");
    }
    // The second shard cut short: its blocks cannot be read.
    let shard = cluster.join("index-02.cdx.gz");
    let bytes = std::fs::read(&shard).unwrap();
    std::fs::write(&shard, &bytes[..bytes.len() / 2]).unwrap();
    let o = util::run(&["cat", cluster.to_str().unwrap()], b"");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("index.idx"), "{stderr}");
}

/// A free loopback port (bound then released; the server binds it next).
/// GET over plain HTTP/1.0 on loopback; the body, or `None` if the server
/// is not answering.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    let status = resp.split(' ').nth(1)?.parse().ok()?;
    let body = resp.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

/// `ukvs lookup` arguments for pywb CDX-server query parameters: the URL
/// last, `matchType` as `--match`, the rest as flags of the same name.
fn pywb_params_as_args(params: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut url = String::new();
    for kv in params.split('&') {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match k {
            "url" => url = v.to_string(),
            "matchType" => args.extend(["--match".to_string(), v.to_string()]),
            "reverse" => args.push("--reverse".to_string()),
            other => args.extend([format!("--{other}"), v.to_string()]),
        }
    }
    args.push(url);
    args
}

#[test]
fn pywb_serves_a_cluster_we_build_with_the_same_answers_as_lookup() {
    let test = "pywb_serves_a_cluster_we_build_with_the_same_answers_as_lookup";
    if !util::ensure_pywb(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = index_of_the_repo(dir.path(), "cdx11");
    let lines = std::fs::read(&input).unwrap();
    let data_lines = lines
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && !l.starts_with(b" CDX"))
        .count();
    assert!(
        data_lines >= 20,
        "only {data_lines} captures in the repository's ARC files"
    );
    // 3 lines a block gives 8 blocks: within pywb's page of 10 blocks, so
    // pywb answers whole; two shards; the six captures of example.com
    // straddle blocks.
    let cluster = small_cluster(dir.path(), &input);
    std::fs::write(
        dir.path().join("config.yaml"),
        format!(
            "collections:\n  zn: zipnum+{}\n",
            cluster.join("index.idx").display()
        ),
    )
    .unwrap();
    let port = util::free_port();
    let server = Command::new("python3")
        .args(["-c", "from pywb.apps.cli import warcserver; warcserver()"])
        .args(["-p", &port.to_string(), "-b", "127.0.0.1"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start pywb's warcserver");
    let _server = util::KillOnDrop(server);
    let deadline = Instant::now() + Duration::from_secs(60);
    while http_get(port, "/zn/index?url=example.com&output=text").is_none() {
        assert!(
            Instant::now() < deadline,
            "pywb did not answer on port {port} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let queries: &[(&str, &str, &[&str])] = &[
        ("url=example.com", "com,example)/", &["--match", "exact"]),
        (
            "url=archive.org&matchType=prefix",
            "org,archive)/",
            &["--match", "prefix"],
        ),
        (
            "url=archive.org/images/*",
            "org,archive)/images/",
            &["--match", "prefix"],
        ),
        (
            "url=archive.org&matchType=host",
            "org,archive)/",
            &["--match", "host"],
        ),
        ("url=*.umkc.edu", "edu,umkc)/", &["--match", "domain"]),
        (
            "url=example.com&matchType=domain&limit=4",
            "com,example)/",
            &["--match", "domain", "--limit", "4"],
        ),
        (
            "url=archive.org&matchType=prefix&reverse=1&limit=3",
            "org,archive)/",
            &["--match", "prefix", "--reverse", "--limit", "3"],
        ),
        (
            "url=archive.org&matchType=host&from=2008043020482&to=200804302048",
            "org,archive)/",
            &[
                "--match",
                "host",
                "--from",
                "2008043020482",
                "--to",
                "200804302048",
            ],
        ),
        (
            "url=example.com&closest=20140301000000&limit=3",
            "com,example)/",
            &["--closest", "20140301000000", "--limit", "3"],
        ),
        (
            "url=cctr.umkc.edu/user/jbenz/tst.htm",
            "edu,umkc,cctr)/user/jbenz/tst.htm",
            &[],
        ),
        ("url=http://www.archive.org/", "org,archive)/", &[]),
        (
            "url=example.com/nothing-here",
            "com,example)/nothing-here",
            &[],
        ),
    ];
    let mut answered = 0;
    for (params, key, flags) in queries {
        let (status, body) = http_get(port, &format!("/zn/index?{params}&output=text")).unwrap();
        // pywb appends its source fields (`zn zn`) to each line.
        let pywb: Vec<String> = body
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.rsplitn(3, ' ').nth(2).unwrap_or(l).to_string())
            .collect();
        let mut args = vec!["lookup", cluster.to_str().unwrap(), "--key", key];
        args.extend_from_slice(flags);
        let o = util::run(&args, b"");
        let ours: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(ours, pywb, "{params} (pywb status {status})");
        answered += pywb.len();
        // The same query by URL: canonicalisation and pywb's shortcuts.
        let url_args = pywb_params_as_args(params);
        let mut args = vec!["lookup", cluster.to_str().unwrap()];
        args.extend(url_args.iter().map(String::as_str));
        let o = util::run(&args, b"");
        let by_url: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(by_url, pywb, "{params} as {args:?}");
        assert_eq!(
            o.status.code(),
            Some(if ours.is_empty() { 1 } else { 0 }),
            "{params}"
        );
    }
    // The comparison means something only if pywb found captures.
    assert!(answered >= 30, "pywb answered only {answered} lines");
}

#[test]
fn lookup_acl_leaves_out_what_an_exclude_rule_covers() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("i.cdxj");
    std::fs::write(
        &index,
        "com,x)/a 20140101000000 {\"url\":\"http://x.com/a\"}\n\
         com,x)/private/b 20140101000000 {\"url\":\"http://x.com/private/b\"}\n\
         com,x)/private/ok 20140101000000 {\"url\":\"http://x.com/private/ok\"}\n\
         com,x)/private/ok 20200101000000 {\"url\":\"http://x.com/private/ok\"}\n\
         com,y)/ 20140101000000 {\"url\":\"http://y.com/\"}\n",
    )
    .unwrap();
    let acl = dir.path().join("rules.aclj");
    std::fs::write(
        &acl,
        "com,y)/ - {\"access\": \"block\"}\n\
         com,x)/private/ok - {\"access\": \"allow\"}\n\
         com,x)/private - {\"access\": \"exclude\"}\n",
    )
    .unwrap();
    let (i, a) = (index.to_str().unwrap(), acl.to_str().unwrap());
    let keys = |o: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "))
            .collect()
    };
    // The most specific rule wins; blocked captures are listed.
    let o = util::run(
        &["lookup", "--acl", a, "--match", "domain", i, "x.com"],
        b"",
    );
    assert_eq!(
        keys(&o),
        [
            "com,x)/a 20140101000000",
            "com,x)/private/ok 20140101000000",
            "com,x)/private/ok 20200101000000"
        ]
    );
    let o = util::run(&["lookup", "--acl", a, i, "http://y.com/"], b"");
    assert_eq!(keys(&o), ["com,y)/ 20140101000000"]);
    // Everything excluded: nothing found, exit 1; applied before --limit.
    let o = util::run(&["lookup", "--acl", a, i, "http://x.com/private/b"], b"");
    assert_eq!(o.status.code(), Some(1));
    let o = util::run(
        &[
            "lookup",
            "--acl",
            a,
            "--match",
            "prefix",
            "--limit",
            "1",
            i,
            "http://x.com/private/",
        ],
        b"",
    );
    assert_eq!(keys(&o), ["com,x)/private/ok 20140101000000"]);
}
