//! `ukvs stats` and `ukvs index --mementomap --stats`: figures against an
//! independent computation, against cdxsummary run live, across index
//! forms and input kinds, merges of shards, and the one-pass outputs
//! against the three-command pipeline.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{self, assert_ok, run};

/// A generated ARC + WARC collection, indexed as CDXJ, UKVS and CDX11.
struct Collection {
    _dir: tempfile::TempDir,
    dir: PathBuf,
}

impl Collection {
    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_string()
    }
}

fn collection(test: &str) -> Option<Collection> {
    let arc = crate::index::generate(test, &["--files", "2", "--records-per-file", "400"])?;
    let warc = crate::index::generate(
        test,
        &[
            "--warc",
            "--files",
            "2",
            "--records-per-file",
            "400",
            "--seed",
            "7",
        ],
    )?;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let (a, w) = (arc.path().join("c"), warc.path().join("c"));
    for (format, name) in [
        ("cdxj", "all.cdxj"),
        ("ukvs", "all.ukvs"),
        ("cdx11", "all.cdx"),
    ] {
        let o = run(
            &[
                "index",
                "-q",
                "--format",
                format,
                a.to_str().unwrap(),
                w.to_str().unwrap(),
                "-o",
                d.join(name).to_str().unwrap(),
            ],
            b"",
        );
        assert_ok(&o);
    }
    Some(Collection { _dir: dir, dir: d })
}

fn stats_json(args: &[&str]) -> Value {
    let mut all = vec!["stats", "--json"];
    all.extend_from_slice(args);
    let o = run(&all, b"");
    assert_ok(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The figures of a CDXJ index computed the plain way: every line parsed
/// as JSON, distinct values in sets, counts in maps.
fn independent(cdxj: &str) -> Value {
    let mut urls = BTreeSet::new();
    let mut hosts: BTreeMap<String, u64> = BTreeMap::new();
    let mut per_url: BTreeMap<String, u64> = BTreeMap::new();
    let (mut captures, mut bytes, mut revisits, mut with_query) = (0u64, 0u64, 0u64, 0u64);
    let mut months: BTreeMap<String, u64> = BTreeMap::new();
    let mut mime: BTreeMap<String, u64> = BTreeMap::new();
    let mut status: BTreeMap<String, u64> = BTreeMap::new();
    let (mut first, mut last) = (None::<String>, None::<String>);
    for line in cdxj.lines().filter(|l| !l.starts_with('!')) {
        let mut parts = line.splitn(3, ' ');
        let key = parts.next().unwrap().to_string();
        let dt = parts.next().unwrap().to_string();
        let json: Value = serde_json::from_str(parts.next().unwrap()).unwrap();
        captures += 1;
        let text = |v: Option<&Value>| match v {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => "-".to_string(),
        };
        bytes += text(json.get("length")).parse::<u64>().unwrap_or(0);
        let m = text(json.get("mime"));
        if m == "warc/revisit" {
            revisits += 1;
        }
        *mime.entry(m).or_default() += 1;
        *status.entry(text(json.get("status"))).or_default() += 1;
        *months.entry(dt[..6].to_string()).or_default() += 1;
        if key.contains('?') {
            with_query += 1;
        }
        first = Some(first.map_or(dt.clone(), |f: String| f.min(dt.clone())));
        last = Some(last.map_or(dt.clone(), |l: String| l.max(dt.clone())));
        let host = key.split(')').next().unwrap().to_string();
        *hosts.entry(host).or_default() += 1;
        *per_url.entry(key.clone()).or_default() += 1;
        urls.insert(key);
    }
    let domains: BTreeSet<String> = hosts
        .keys()
        .map(|h| ukvs::stats::registered_domain(&ukvs::stats::dotted_host(h.as_bytes())))
        .collect();
    let mut top: Vec<(String, u64)> = hosts
        .iter()
        .map(|(h, n)| (ukvs::stats::dotted_host(h.as_bytes()), *n))
        .collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(10);
    let mut years: BTreeMap<String, u64> = BTreeMap::new();
    for (m, n) in &months {
        *years.entry(m[..4].to_string()).or_default() += n;
    }
    let once = per_url.values().filter(|&&n| n == 1).count();
    serde_json::json!({
        "captures": captures, "urls": urls.len(), "hosts": hosts.len(),
        "domains": domains.len(), "bytes": bytes, "revisits": revisits,
        "with_query": with_query, "first": first, "last": last,
        "years": years, "months": months, "mime": mime, "status": status,
        "tophosts": top.into_iter().map(|(h, n)| (h, Value::from(n))).collect::<serde_json::Map<_, _>>(),
        "once": once,
    })
}

#[test]
fn figures_equal_an_independent_computation_on_generated_and_real_indexes() {
    let Some(c) = collection("figures_equal_an_independent_computation") else {
        return;
    };
    let mut cases = vec![c.path("all.cdxj")];
    // Real archives: the repository's samples.
    let samples = tempfile::NamedTempFile::new().unwrap();
    let o = run(
        &[
            "index",
            "-q",
            "--format",
            "cdxj",
            util::data_dir().join("../../samples").to_str().unwrap(),
            "-o",
            samples.path().to_str().unwrap(),
        ],
        b"",
    );
    assert_ok(&o);
    cases.push(samples.path().to_str().unwrap().to_string());
    for path in &cases {
        let want = independent(&std::fs::read_to_string(path).unwrap());
        let got = stats_json(&[path]);
        for field in [
            "captures",
            "urls",
            "hosts",
            "domains",
            "bytes",
            "revisits",
            "with_query",
            "first",
            "last",
            "years",
            "months",
            "mime",
            "status",
            "tophosts",
        ] {
            assert_eq!(got[field], want[field], "{field} of {path}");
        }
        assert_eq!(got["captures_per_url"]["1"], want["once"], "{path}");
        assert!(got["captures"].as_u64().unwrap() > 0);
    }
}

#[test]
fn cdxj_ukvs_gzip_zipnum_shuffled_and_stdin_give_the_same_figures() {
    let Some(c) = collection("cdxj_ukvs_gzip_zipnum_shuffled_and_stdin") else {
        return;
    };
    let whole = stats_json(&[&c.path("all.cdxj")]);
    // The UKVS index gives the same figures, except that it records a
    // mime where cdxj-indexer's profile gives none (DNS and other
    // resource records): those are `-` in the CDXJ's figures.
    let mut ukvs = stats_json(&[&c.path("all.ukvs")]);
    let (um, cm) = (&ukvs["mime"], &whole["mime"]);
    let mut moved = 0;
    for (m, n) in um.as_object().unwrap().iter().filter(|(m, _)| *m != "-") {
        let c = cm[m.as_str()].as_u64().unwrap_or(0);
        let n = n.as_u64().unwrap();
        assert!(n >= c, "{m}");
        moved += n - c;
    }
    assert!(moved > 0);
    assert_eq!(
        cm["-"].as_u64().unwrap() - um["-"].as_u64().unwrap_or(0),
        moved
    );
    let ukvs_figures = ukvs.clone();
    for field in ["mime", "mimestatus"] {
        ukvs[field] = whole[field].clone();
    }
    assert_eq!(ukvs, whole, "ukvs");
    // gzip
    let gz = c.path("all.ukvs.gz");
    let status = Command::new("sh")
        .args(["-c", &format!("gzip -c {} > {gz}", c.path("all.ukvs"))])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(stats_json(&[&gz]), ukvs_figures, "gzip");
    // ZipNum cluster
    let zn = c.path("cluster");
    assert_ok(&run(
        &[
            "zipnum",
            "build",
            &c.path("all.cdxj"),
            "-o",
            &zn,
            "--lines-per-block",
            "50",
        ],
        b"",
    ));
    assert_eq!(stats_json(&[&zn]), whole, "zipnum");
    // Shuffled: found unsorted, read again, still exact.
    let text = std::fs::read_to_string(c.path("all.cdxj")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let mut rng = util::Rng(42);
    for i in (1..lines.len()).rev() {
        lines.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let shuffled = lines.join("\n") + "\n";
    let sh = c.path("shuffled.cdxj");
    std::fs::write(&sh, &shuffled).unwrap();
    let o = run(&["stats", "--json", &sh], b"");
    assert_ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("not sorted"));
    assert_eq!(serde_json::from_slice::<Value>(&o.stdout).unwrap(), whole);
    // Unsorted stdin needs --unsorted, and says so.
    let o = run(&["stats", "--json", "-"], shuffled.as_bytes());
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--unsorted"));
    let o = run(
        &["stats", "--json", "--unsorted", "--mem", "64K", "-"],
        shuffled.as_bytes(),
    );
    assert_ok(&o);
    assert_eq!(serde_json::from_slice::<Value>(&o.stdout).unwrap(), whole);
}

#[test]
fn several_inputs_count_a_url_once_and_threads_do_not_change_figures() {
    let Some(c) = collection("several_inputs_count_a_url_once") else {
        return;
    };
    let whole = stats_json(&[&c.path("all.cdxj")]);
    let twice = stats_json(&[&c.path("all.cdxj"), &c.path("all.ukvs")]);
    for field in ["urls", "hosts", "domains", "first", "last"] {
        assert_eq!(twice[field], whole[field], "{field}");
    }
    let n = whole["captures"].as_u64().unwrap();
    assert_eq!(twice["captures"].as_u64().unwrap(), 2 * n);
    // A file large enough to be read in parts by two threads.
    let big = c.path("big.cdxj");
    let mut text = String::new();
    let mut rng = util::Rng(3);
    for h in 0..5000 {
        for p in 0..(1 + rng.below(60)) {
            for t in 0..(1 + rng.below(3)) {
                text.push_str(&format!(
                    "com,host{h:05},www)/page/{p}?q={t} 20{:02}0{}01000000 {{\"url\": \"http://www.host{h:05}.com/page/{p}?q={t}\", \"mime\": \"text/html\", \"status\": \"200\", \"length\": \"{}\"}}\n",
                    10 + rng.below(15),
                    1 + rng.below(9),
                    rng.below(100000)
                ));
            }
        }
    }
    // Past the size from which a file is read in parts.
    assert!(text.len() > 34 << 20, "{}", text.len());
    let text = sort_lines(&text);
    std::fs::write(&big, &text).unwrap();
    let one = stats_json(&["-j", "1", &big]);
    let two = stats_json(&["-j", "2", &big]);
    assert_eq!(one, two);
    // Read instead of mapped, the parts give the same report.
    assert_eq!(one, stats_json(&["-j", "2", "--no-mmap", &big]));
    assert_eq!(one, independent_subset(&text, &one));
}

fn sort_lines(text: &str) -> String {
    String::from_utf8(sort_bytes(text.as_bytes())).unwrap()
}

/// The lines of `text` in byte order, once each.
fn sort_bytes(text: &[u8]) -> Vec<u8> {
    let mut v: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    v.sort_unstable();
    v.dedup();
    let mut out = v.join(&b'\n');
    out.push(b'\n');
    out
}

/// `report` with the figures the independent computation gives replaced.
fn independent_subset(text: &str, report: &Value) -> Value {
    let want = independent(text);
    let mut r = report.clone();
    for field in [
        "captures", "urls", "hosts", "domains", "bytes", "months", "tophosts",
    ] {
        r[field] = want[field].clone();
    }
    r
}

#[test]
fn merged_shards_equal_the_whole() {
    let Some(c) = collection("merged_shards_equal_the_whole") else {
        return;
    };
    let text = std::fs::read_to_string(c.path("all.cdxj")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Three shards cut at arbitrary lines (a host may be cut in two).
    let cuts = [0, lines.len() / 3, lines.len() / 2 + 7, lines.len()];
    let mut shards = Vec::new();
    let mut partial = Vec::new();
    for (i, w) in cuts.windows(2).enumerate() {
        let p = c.path(&format!("shard{i}.cdxj"));
        std::fs::write(&p, lines[w[0]..w[1]].join("\n") + "\n").unwrap();
        for (top, list) in [("0", &mut shards), ("10", &mut partial)] {
            let o = run(&["stats", "--json", "--top", top, &p], b"");
            assert_ok(&o);
            let j = c.path(&format!("shard{i}.top{top}.json"));
            std::fs::write(&j, &o.stdout).unwrap();
            list.push(j);
        }
    }
    let whole = stats_json(&[&c.path("all.cdxj")]);
    let mut args: Vec<&str> = vec!["--merge"];
    args.extend(shards.iter().rev().map(String::as_str));
    assert_eq!(stats_json(&args), whole, "complete shard lists");
    // Shards listing only their top hosts: what adds up is exact, the
    // rest is named.
    let mut args: Vec<&str> = vec!["stats", "--json", "--merge"];
    args.extend(partial.iter().map(String::as_str));
    let o = run(&args, b"");
    assert_ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("not exact"));
    let merged: Value = serde_json::from_slice(&o.stdout).unwrap();
    for field in [
        "captures",
        "urls",
        "hosts",
        "bytes",
        "months",
        "mimestatus",
        "tlds",
    ] {
        assert_eq!(merged[field], whole[field], "{field}");
    }
    assert_eq!(
        merged["inexact"],
        serde_json::json!(["domains", "topdomains", "tophosts"])
    );
    // The same shard twice overlaps: URLs are not exact, and said so.
    let o = run(&["stats", "--json", "--merge", &shards[0], &shards[0]], b"");
    assert_ok(&o);
    let twice: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(twice["inexact"]
        .as_array()
        .unwrap()
        .contains(&"urls".into()));
    // Not a report: a clear error.
    let o = run(&["stats", "--merge", &c.path("all.cdxj")], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a report"));
}

#[test]
fn one_pass_outputs_equal_the_three_command_pipeline() {
    let Some(arc) = crate::index::generate("one_pass_outputs_equal", &["--files", "3"]) else {
        return;
    };
    let input = arc.path().join("c");
    let out = tempfile::tempdir().unwrap();
    let p = |n: &str| out.path().join(n).to_str().unwrap().to_string();
    let ukvs = |args: &[&str]| {
        let o = Command::new(util::bin())
            .args(args)
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .output()
            .unwrap();
        assert_ok(&o);
    };
    for format in ["ukvs", "cdxj", "cdx11"] {
        let index = p(&format!("one.{format}"));
        ukvs(&[
            "index",
            "-q",
            "--format",
            format,
            input.to_str().unwrap(),
            "-o",
            &index,
            "--mementomap",
            &p("one.map"),
            "--stats",
            &p("one.json"),
        ]);
        ukvs(&[
            "index",
            "-q",
            "--format",
            format,
            input.to_str().unwrap(),
            "-o",
            &p("two.idx"),
        ]);
        ukvs(&["mementomap", "generate", "-q", &index, "-o", &p("two.map")]);
        ukvs(&["stats", "--json", &index, "-o", &p("two.json")]);
        let read = |n: &str| std::fs::read(p(n)).unwrap();
        assert_eq!(
            read(&format!("one.{format}")),
            read("two.idx"),
            "{format} index"
        );
        assert_eq!(read("one.map"), read("two.map"), "{format} map");
        assert_eq!(read("one.json"), read("two.json"), "{format} stats");
        assert!(read("one.map").len() > 100);
    }
    // Other report forms, by the file's name.
    let index = p("three.ukvs");
    ukvs(&[
        "index",
        "-q",
        input.to_str().unwrap(),
        "-o",
        &index,
        "--stats",
        &p("three.csv"),
    ]);
    ukvs(&["stats", "--csv", &index, "-o", &p("four.csv")]);
    assert_eq!(
        std::fs::read(p("three.csv")).unwrap(),
        std::fs::read(p("four.csv")).unwrap()
    );
    // --no-sort cannot make them, and says why.
    let o = run(
        &[
            "index",
            "--no-sort",
            input.to_str().unwrap(),
            "--stats",
            &p("x.json"),
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--no-sort"));
    assert!(!Path::new(&p("x.json")).exists());
}

#[test]
fn bad_lines_are_reported_by_file_and_offset_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.cdx");
    let text = " CDX N b a m s k r M S V g\n\
        com,a)/ 20200101000000 http://a.com/ text/html 200 X - - 10 0 f.warc.gz\n\
        com,b)/ 2020\n\
        com,c)/ 20200101000000 http://c.com/ text/html 404 X - - 5 10 f.warc.gz\n";
    std::fs::write(&f, text).unwrap();
    let o = run(&["stats", "--json", f.to_str().unwrap()], b"");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    let at = text.find("com,b").unwrap();
    assert!(
        err.contains(&format!("bad.cdx: offset {at}: 2 fields")),
        "{err}"
    );
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (r["captures"].as_u64(), r["bytes"].as_u64()),
        (Some(2), Some(15))
    );
    let o = run(&["stats", "--strict", f.to_str().unwrap()], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
}

/// cdxsummary (Internet Archive) reads 11-field CDX; where both report a
/// figure, ours must equal its.
#[test]
fn figures_equal_cdxsummarys_run_live() {
    if Command::new("cdxsummary")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED figures_equal_cdxsummarys_run_live: cdxsummary is not installed (pip install cdxsummary)");
        return;
    }
    let Some(c) = collection("figures_equal_cdxsummarys_run_live") else {
        return;
    };
    let mut cases = vec![c.path("all.cdx")];
    if let Some(corpus) = util::shared_corpus("figures_equal_cdxsummarys_run_live") {
        for entry in walk(&corpus) {
            let name = entry.to_string_lossy();
            if name.ends_with(".cdx") && !name.contains("bad") {
                cases.push(name.into_owned());
            }
        }
    }
    let mut compared = 0;
    for path in &cases {
        let text = std::fs::read(path).unwrap();
        // cdxsummary reads the 11-field form only (in a 9-field file it
        // takes the offset for the length).
        if !text.starts_with(b" CDX N b a m s k r M S V g") {
            continue;
        }
        // cdxsummary counts adjacent keys; ours are exact, and equal on
        // sorted input: give both the file sorted.
        let mut sorted = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut sorted, &sort_bytes(&text)).unwrap();
        let sorted_path = sorted.path().to_str().unwrap().to_string();
        let theirs_sorted = Command::new("cdxsummary")
            .args(["-r", &sorted_path])
            .output()
            .unwrap();
        assert!(theirs_sorted.status.success(), "cdxsummary {path}");
        let theirs_sorted: Value = serde_json::from_slice(&theirs_sorted.stdout).unwrap();
        let o = run(&["stats", "--json", "--top", "0", &sorted_path], b"");
        let ours: Value = serde_json::from_slice(&o.stdout).unwrap();
        if ours["captures"] == 0 {
            continue;
        }
        if theirs_sorted["captures"] != ours["captures"] {
            // Lines cdxsummary cannot read (no `)`, other columns): not
            // comparable.
            eprintln!(
                "{path}: cdxsummary read {} of {} captures; not compared",
                theirs_sorted["captures"], ours["captures"]
            );
            continue;
        }
        for field in [
            "captures",
            "urls",
            "hosts",
            "bytes",
            "first",
            "last",
            "mimestatus",
            "pathquery",
        ] {
            assert_eq!(ours[field], theirs_sorted[field], "{field} of {path}");
        }
        let mut months = BTreeMap::new();
        for (y, ms) in theirs_sorted["yearmonth"].as_object().unwrap() {
            for (m, n) in ms.as_object().unwrap() {
                months.insert(format!("{y}{m}"), n.clone());
            }
        }
        assert_eq!(
            ours["months"],
            serde_json::json!(months),
            "months of {path}"
        );
        // Hosts: cdxsummary writes `com,example:8080` as `example:8080.com`.
        let hosts = |v: &Value| -> BTreeMap<String, u64> {
            v.as_object()
                .unwrap()
                .iter()
                .filter(|(h, _)| !h.contains(':'))
                .map(|(h, n)| (h.clone(), n.as_u64().unwrap()))
                .collect()
        };
        assert_eq!(
            hosts(&ours["tophosts"]),
            hosts(&theirs_sorted["tophosts"]),
            "{path}"
        );
        compared += 1;
    }
    assert!(compared >= 1, "nothing compared");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A line of many megabytes in a file read in parts: the cut search gives
/// up on it and reads the file as one part, so `stats` and `mementomap
/// generate` finish with the figures of the three lines (a probe used to
/// run on for ever past the last cut).
#[test]
fn a_line_of_megabytes_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("long.cdxj");
    let mut text = String::from("com,a)/ 20040101000000 {\"url\":\"http://a/\"}\n");
    text.push_str("com,b)/ 20040101000000 {\"url\":\"http://b/");
    text.push_str(&"x".repeat(12 << 20));
    text.push_str("\"}\ncom,c)/ 20040101000000 {\"url\":\"http://c/\"}\n");
    std::fs::write(&f, &text).unwrap();
    let name = f.to_str().unwrap();
    let report = stats_json(&["-j", "2", name]);
    assert_eq!(report["captures"], 3, "{report}");
    let o = run(&["mementomap", "generate", "-q", "-j", "2", name], b"");
    assert_ok(&o);
    let map = String::from_utf8(o.stdout).unwrap();
    let keys: Vec<&str> = map.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(keys, ["com,a)/ 1/1", "com,b)/ 1/1", "com,c)/ 1/1"]);
}
