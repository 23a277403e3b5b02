//! Index dialects found in the wild, read by every command that reads
//! indexes: wget's URL-keyed CDX (a real crawl, `tests/data/cdx`), CDX9,
//! CDX14 and IA's `-` in numeric columns, files sorted in a locale's
//! order, and pywb's own sample archive served as it ships (one of its
//! files out of byte order) compared with pywb run live.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::serve::{agent, get, start_pywb, Server};
use crate::util::{self, assert_ok, data_dir};

fn wget_cdx() -> PathBuf {
    data_dir().join("cdx/wget-site.cdx")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The data lines of wget's file: (url, datetime, columns).
fn wget_lines() -> Vec<Vec<String>> {
    std::fs::read_to_string(wget_cdx())
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(' ').map(str::to_string).collect())
        .collect()
}

fn stats_json(args: &[&str]) -> Value {
    let mut all = vec!["stats", "--json", "--quiet"];
    all.extend_from_slice(args);
    let o = util::run(&all, b"");
    assert_ok(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn wget_cdx_stats_equal_those_of_its_warc_indexed_as_cdxj() {
    let dir = tempfile::tempdir().unwrap();
    let cdxj = dir.path().join("site.cdxj");
    let warc = data_dir().join("cdx/wget-site.warc.gz");
    assert_ok(&util::run(
        &[
            "index",
            "--format",
            "cdxj",
            "-o",
            cdxj.to_str().unwrap(),
            warc.to_str().unwrap(),
        ],
        b"",
    ));
    // The WARC also holds wget's metadata records, which its CDX does not
    // list: the same captures are those of the CDX's URLs.
    let urls: Vec<String> = wget_lines().iter().map(|c| c[0].clone()).collect();
    let index = std::fs::read_to_string(&cdxj).unwrap();
    let same: String = index
        .lines()
        .filter(|l| {
            urls.iter()
                .any(|u| l.contains(&format!("\"url\": \"{u}\"")))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(same.lines().count(), urls.len());
    let same_path = dir.path().join("same.cdxj");
    std::fs::write(&same_path, same).unwrap();
    let mut ours = stats_json(&[wget_cdx().to_str().unwrap()]);
    let mut theirs = stats_json(&[same_path.to_str().unwrap()]);
    // wget writes no length column: its offset (`V`) is not a length.
    assert_eq!(ours["bytes"], 0, "{ours}");
    assert!(theirs["bytes"].as_u64().unwrap() > 0);
    for r in [&mut ours, &mut theirs] {
        r.as_object_mut().unwrap().remove("bytes");
    }
    assert_eq!(ours, theirs);
    assert_eq!(ours["captures"], 13);
    assert_eq!(ours["hosts"], 1, "keys are SURTs of the URLs: {ours}");
    assert_eq!(ours["status"]["301"], 1);
    assert_eq!(ours["with_query"], 1);
}

#[test]
fn wget_cdx_is_read_by_cat_lookup_sort_merge_and_validate() {
    let cdx = wget_cdx();
    let cdx = cdx.to_str().unwrap();
    // cat: one record per line, keyed by the SURT of the URL.
    let o = util::run(&["cat", cdx], b"");
    assert_ok(&o);
    let out = text(&o.stdout);
    let records: Vec<&str> = out.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(records.len(), wget_lines().len());
    assert!(
        out.contains(r#""cdx_legend":"a b a m s k r M V g u""#),
        "{out}"
    );
    assert!(
        records.contains(&r#"1,0,0,127:55035)/docs 20261127115622 5828 sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ {"url":"http://127.0.0.1:55035/docs","status":301,"redirect":"/docs/","filename":"wget-site.warc.gz","record_id":"<urn:uuid:ced30c50-559b-4bc1-baed-183c2392ca2e>"}"#),
        "{out}"
    );

    // lookup: a URL matches as in any other index, although the file is
    // in crawl order.
    let o = util::run(
        &[
            "lookup",
            cdx,
            "http://127.0.0.1:55035/about.html",
            "--output",
            "json",
        ],
        b"",
    );
    assert_ok(&o);
    let found: Vec<Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["urlkey"], "1,0,0,127:55035)/about.html");
    assert_eq!(found[0]["offset"], "2959");
    assert_eq!(found[0]["mime"], "text/html");
    assert!(found[0].get("length").is_none(), "{found:?}");
    for (url, m, n) in [
        ("127.0.0.1:55035", "host", 13),
        ("http://127.0.0.1:55035/docs", "prefix", 3),
        ("http://127.0.0.1:55035/docs", "exact", 2),
        ("http://127.0.0.1:55035/about.html?lang=en", "exact", 1),
    ] {
        let o = util::run(&["lookup", "--match", m, cdx, url], b"");
        assert_ok(&o);
        let lines: Vec<String> = text(&o.stdout).lines().map(str::to_string).collect();
        assert_eq!(lines.len(), n, "{m} {url}: {lines:?}");
        let mut sorted = lines.clone();
        sorted.sort();
        assert_eq!(lines, sorted, "answers in key order");
    }
    let o = util::run(&["lookup", "--check", cdx], b"");
    assert_ok(&o);

    // sort and merge keep the legend on top and the lines whole.
    let o = util::run(&["sort", cdx], b"");
    assert_ok(&o);
    let sorted = text(&o.stdout);
    let mut want: Vec<String> = std::fs::read_to_string(cdx)
        .unwrap()
        .lines()
        .skip(1)
        .map(str::to_string)
        .collect();
    want.sort();
    let got: Vec<&str> = sorted.lines().collect();
    assert_eq!(got[0], " CDX a b a m s k r M V g u");
    assert_eq!(
        got[1..],
        want.iter().map(String::as_str).collect::<Vec<_>>()[..]
    );
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("sorted.cdx");
    std::fs::write(&s, &sorted).unwrap();
    let s = s.to_str().unwrap();
    let o = util::run(&["merge", s, s], b"");
    assert_ok(&o);
    assert_eq!(text(&o.stdout).lines().count(), 1 + 2 * want.len());
    // The merged file is read as the original.
    let m = dir.path().join("merged.cdx");
    std::fs::write(&m, &o.stdout).unwrap();
    let merged = stats_json(&[m.to_str().unwrap()]);
    assert_eq!(merged["captures"], 26);
    assert_eq!(merged["urls"], 12);

    // validate: a CDX file, in crawl order, which is not a problem for a
    // URL-keyed file; a line without the legend's columns is.
    let o = util::run(&["validate", cdx], b"");
    assert_ok(&o);
    let v = text(&o.stdout);
    assert!(
        v.contains("CDX keyed by URL") && v.contains("NOT sorted, 0 problems: valid"),
        "{v}"
    );
    let broken = std::fs::read_to_string(cdx).unwrap() + "http://x/ 2014 http://x/\n";
    let b = dir.path().join("broken.cdx");
    std::fs::write(&b, broken).unwrap();
    let o = util::run(&["validate", b.to_str().unwrap()], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stdout).contains(":15: cannot convert: 3 columns where the CDX legend has 11"),
        "{}",
        text(&o.stdout)
    );
    // lookup answers from the good lines, names the bad one, exits 2.
    let o = util::run(
        &[
            "lookup",
            b.to_str().unwrap(),
            "http://127.0.0.1:55035/about.html",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(text(&o.stdout).lines().count(), 1);
    let at = std::fs::metadata(cdx).unwrap().len();
    assert!(
        text(&o.stderr).contains(&format!("broken.cdx: byte {at}: line 15: cannot convert")),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn wget_cdx_is_served() {
    let server = Server::start(&["--quiet".into(), format!("w={}", wget_cdx().display())]);
    let agent = agent();
    let (status, _, body) = get(
        &agent,
        &server.url("/w/cdx?url=http://127.0.0.1:55035/docs&output=json"),
    );
    assert_eq!(status, 200, "{}", text(&body));
    let found: Vec<Value> = text(&body)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0]["url"], "http://127.0.0.1:55035/docs");
    assert_eq!(
        found[0]["statuscode"]
            .as_str()
            .or(found[0]["status"].as_str()),
        Some("301")
    );
    assert_eq!(found[1]["url"], "http://127.0.0.1:55035/docs/");
    assert_eq!(found[1]["offset"], "6722");
}

/// The same captures in the CDX dialects of other tools, with `-` where a
/// tool writes it for an unknown number.
const CDX9: &str = " CDX N b a m s k r V g
com,example)/ 20140101000000 http://example.com/ text/html 200 AAAA - 10 a.warc.gz
com,example)/x 20140101000001 http://example.com/x - - BBBB - - a.warc.gz
";
const IA_CDX11: &str = " CDX N b a m s k r M S V g
com,example)/ 20140101000000 http://example.com/ text/html 200 AAAA - - 500 10 a.warc.gz
com,example)/x 20140101000001 http://example.com/x - - BBBB - - - - a.warc.gz
";
/// OutbackCDX's CDX14 (its `toString`): no legend, three `orig.*` columns.
const CDX14: &str =
    "com,example)/ 20140101000000 http://example.com/ text/html 200 AAAA - - 500 10 a.warc.gz - - -
com,example)/x 20140101000001 http://example.com/x - - BBBB - - - - a.warc.gz 300 7 b.warc.gz
";

#[test]
fn cdx9_cdx14_and_dashes_in_numbers_are_read_without_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body, bytes) in [
        ("cdx9.cdx", CDX9, 0),
        ("ia.cdx", IA_CDX11, 500),
        ("cdx14.cdx", CDX14, 500),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        let p = p.to_str().unwrap();
        let r = stats_json(&[p]);
        assert_eq!(
            (r["captures"].as_u64(), r["bytes"].as_u64()),
            (Some(2), Some(bytes)),
            "{name}: {r}"
        );
        assert_eq!(r["status"]["-"], 1, "{name}: {r}");
        assert_eq!(r["mime"]["-"], 1, "{name}: {r}");
        let o = util::run(&["lookup", p, "example.com/", "--output", "json"], b"");
        assert_ok(&o);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(
            (&v["url"], &v["offset"], &v["filename"]),
            (
                &"http://example.com/".into(),
                &"10".into(),
                &"a.warc.gz".into()
            ),
            "{name}: {v}"
        );
        let o = util::run(&["lookup", p, "example.com/x"], b"");
        assert_ok(&o);
        assert_eq!(
            text(&o.stdout),
            body.lines().last().unwrap().to_string() + "\n"
        );
        let o = util::run(&["validate", "--quiet", p], b"");
        if body.starts_with(' ') {
            assert_ok(&o);
            // `-` numbers are left out, not strings.
            let o = util::run(&["cat", "--json", p], b"");
            assert_ok(&o);
            let last: Value =
                serde_json::from_str(text(&o.stdout).lines().last().unwrap()).unwrap();
            assert_eq!(last["offset"], Value::Null, "{name}: {last}");
            assert!(
                last.get("status").is_none() && last.get("length").is_none(),
                "{last}"
            );
        }
        let server = Server::start(&["--quiet".into(), format!("c={p}")]);
        let (status, _, body) = get(
            &agent(),
            &server.url("/c/cdx?url=example.com/x&output=json"),
        );
        assert_eq!(status, 200, "{name}: {}", text(&body));
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["filename"], "a.warc.gz", "{name}: {v}");
    }
}

#[test]
fn cat_from_cdx_takes_the_columns_of_a_file_without_legend_from_their_number() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [("cdx9", CDX9), ("ia", IA_CDX11)] {
        let with = dir.path().join(format!("{name}.cdx"));
        std::fs::write(&with, body).unwrap();
        let without = dir.path().join(format!("{name}-bare.cdx"));
        std::fs::write(&without, body.split_once('\n').unwrap().1).unwrap();
        let a = util::run(&["cat", with.to_str().unwrap()], b"");
        let b = util::run(&["cat", "--from", "cdx", without.to_str().unwrap()], b"");
        assert_ok(&a);
        assert_ok(&b);
        assert_eq!(text(&a.stdout), text(&b.stdout), "{name}");
    }
    let bare = dir.path().join("cdx14.cdx");
    std::fs::write(&bare, CDX14).unwrap();
    let o = util::run(&["cat", "--from", "cdx", bare.to_str().unwrap()], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("add the legend line"),
        "{}",
        text(&o.stderr)
    );
}

/// Lines in the order `sort` gives them in a UTF-8 locale, which ignores
/// punctuation at first: `a-b` between `ab` and `ac`.
const LOCALE_SORTED: &str = "com,example)/ab 20140101000000 {\"url\": \"http://example.com/ab\"}
com,example)/a-b 20140101000000 {\"url\": \"http://example.com/a-b\"}
com,example)/ac 20140101000000 {\"url\": \"http://example.com/ac\"}
";

fn locale_file(dir: &Path) -> String {
    let p = dir.join("locale.cdxj");
    std::fs::write(&p, LOCALE_SORTED).unwrap();
    p.display().to_string()
}

#[test]
fn a_file_sorted_in_a_locale_order_is_never_read_wrong_silently() {
    let dir = tempfile::tempdir().unwrap();
    let p = locale_file(dir.path());
    let p = p.as_str();
    // validate names the line and its byte offset, and the fix.
    let o = util::run(&["validate", p], b"");
    assert_eq!(o.status.code(), Some(2));
    let v = text(&o.stdout);
    let offset = LOCALE_SORTED.find("com,example)/a-b").unwrap();
    assert!(
        v.contains(&format!(
            ":2: out of byte order: sorts before line 1 (byte offset {offset}; sort the file with `ukvs sort`"
        )),
        "{v}"
    );
    // lookup --check says where.
    let o = util::run(&["lookup", "--check", p], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains(&format!("byte {offset}")),
        "{}",
        text(&o.stderr)
    );
    // A lookup that meets the disorder fails rather than answer wrong.
    let o = util::run(&["lookup", p, "example.com/a-b"], b"");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert!(text(&o.stderr).contains("ukvs sort"), "{}", text(&o.stderr));
    // merge refuses; sort repairs; stats counts exactly either way.
    let o = util::run(&["merge", p, p], b"");
    assert_eq!(o.status.code(), Some(2));
    let o = util::run(&["sort", p], b"");
    assert_ok(&o);
    let sorted = dir.path().join("sorted.cdxj");
    std::fs::write(&sorted, &o.stdout).unwrap();
    let o = util::run(
        &["lookup", sorted.to_str().unwrap(), "example.com/a-b"],
        b"",
    );
    assert_ok(&o);
    assert_eq!(text(&o.stdout).lines().count(), 1);
    assert_eq!(stats_json(&[p]), stats_json(&[sorted.to_str().unwrap()]));
}

/// pywb's sample archive as it ships: `cdxj/post-test.cdxj` is not in
/// byte order, `cdxj/example.cdx.gz` is compressed.
#[test]
fn pywb_sample_archive_as_it_ships_is_served_as_pywb_serves_it() {
    let test = "pywb_sample_archive_as_it_ships_is_served_as_pywb_serves_it";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    if !util::ensure_pywb(test) {
        return;
    }
    let sample = corpus.join("webrecorder__pywb/sample_archive");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.yaml"),
        format!(
            "collections:\n  cdxj: {}\n  cdx: {}\n  post: {}\n",
            sample.join("cdxj").display(),
            sample.join("cdx").display(),
            sample.join("cdxj/post-test.cdxj").display(),
        ),
    )
    .unwrap();
    let (_pywb, pywb) = start_pywb(dir.path(), "/cdx/cdx?url=example.com/").expect("start pywb");
    let ours = Server::start(&[
        format!("cdxj={}", sample.join("cdxj").display()),
        format!("cdx={}", sample.join("cdx").display()),
        format!("post={}", sample.join("cdxj/post-test.cdxj").display()),
    ]);
    let agent = agent();
    let urls = [
        "httpbin.org/post",
        "httpbin.org/post*",
        "httpbin.org/post?foo=bar&test=abc",
        "httpbin.org/post?__wb_method=post%26foo=bar%26test=abc",
        "httpbin.org/post?__wb_method=post%26a=1%26b=[]%26c=3",
        "httpbin.org/post?__wb_method=post%26data=^%26foo=bar",
        "*.org",
        "*.com",
        "example.com/",
        "example.com/*",
        "iana.org/",
        "*.iana.org",
        "http://www.iana.org/_css/2013.1/screen.css",
        "httpbin.org/get?A=1&B=[]&C=3",
        "nothere.example/",
    ];
    let params = [
        "",
        "&output=json",
        "&output=text",
        "&matchType=prefix",
        "&matchType=host",
        "&matchType=domain&output=json",
        "&sort=reverse&limit=2",
        "&closest=20140610001200&limit=1",
        "&filter=mime:json",
        "&fl=urlkey,timestamp,url",
    ];
    let mut bad = Vec::new();
    let mut found = 0;
    let mut compared = 0;
    for coll in ["cdxj", "cdx", "post"] {
        for url in urls {
            for extra in params {
                let q = format!("/{coll}/cdx?url={url}{extra}");
                let theirs = get(&agent, &format!("{pywb}{q}"));
                let mine = get(&agent, &ours.url(&q));
                compared += 1;
                if theirs.0 == 200 && !theirs.2.is_empty() {
                    found += 1;
                }
                if theirs != mine {
                    bad.push(format!(
                        "{q}\n  pywb: {} {:?}\n  ukvs: {} {:?}",
                        theirs.0,
                        text(&theirs.2[..theirs.2.len().min(300)]),
                        mine.0,
                        text(&mine.2[..mine.2.len().min(300)])
                    ));
                }
            }
        }
    }
    assert!(
        found > compared / 3,
        "too few answers: {found} of {compared}"
    );
    assert!(
        bad.is_empty(),
        "{} of {compared} answers differ:\n{}",
        bad.len(),
        bad[..bad.len().min(6)].join("\n")
    );
}

/// A locale's collation as glibc's UTF-8 locales apply it at first:
/// letters and digits only, case folded; ties in byte order.
fn locale_order(a: &str, b: &str) -> std::cmp::Ordering {
    let first = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == ' ')
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    first(a).cmp(&first(b)).then_with(|| a.cmp(b))
}

#[test]
fn lookups_in_a_locale_sorted_index_fail_or_answer_right_never_wrong() {
    // Keys whose punctuation a locale ignores at first, over many hosts,
    // in the order `sort` gives them outside LC_ALL=C.
    let words = [
        "ab", "a-b", "a_b", "abc", "a.b", "b", "b-a", "ba", "x-y", "xy",
    ];
    let mut rng = util::Rng(0xd1a1ec75);
    let mut lines = std::collections::BTreeSet::new();
    for h in 0..60 {
        let host = match h % 3 {
            0 => format!("com,example{h}"),
            _ => format!("com,exa-mple{},w{h}", h % 7),
        };
        for _ in 0..40 {
            let path: Vec<&str> = (0..=rng.below(2)).map(|_| rng.pick(&words)).collect();
            let query = rng.pick(&["", "?a=1", "?a-b=2", "?ab=3"]);
            lines.insert(format!(
                "{host})/{}{query} 2014{:02}01000000 {{\"url\": \"http://x/\"}}",
                path.join("/"),
                10 + rng.below(3)
            ));
        }
    }
    let mut lines: Vec<String> = lines.into_iter().collect();
    lines.sort_by(|a, b| locale_order(a, b));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("locale.cdxj");
    std::fs::write(
        &p,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let p = p.to_str().unwrap();
    let mut keys: Vec<&str> = lines.iter().map(|l| l.split(' ').next().unwrap()).collect();
    keys.dedup();
    let (mut failed, mut right) = (0, 0);
    for k in keys.iter().step_by(keys.len() / 60) {
        let o = util::run(&["lookup", "--key", k, p], b"");
        match o.status.code() {
            Some(2) => {
                assert!(
                    text(&o.stderr).contains("LC_ALL=C sort"),
                    "{}",
                    text(&o.stderr)
                );
                failed += 1;
            }
            _ => {
                let mut want: Vec<&str> = lines
                    .iter()
                    .filter(|l| l.split(' ').next() == Some(k))
                    .map(String::as_str)
                    .collect();
                want.sort_unstable();
                let out = text(&o.stdout);
                assert_eq!(out.lines().collect::<Vec<_>>(), want, "{k}: a wrong answer");
                right += 1;
            }
        }
    }
    assert!(failed + right >= 60);
    // The server answers, and says once where the file is out of order.
    let mut child = std::process::Command::new(util::bin())
        .args(["serve", "--bind", "127.0.0.1:0", &format!("loc={p}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut log, &mut first).unwrap();
    let child = util::KillOnDrop(child);
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_string();
    let agent = agent();
    for k in ["example1.com/ab", "example1.com/a-b", "w1.exa-mple1.com/b"] {
        let (status, _, _) = get(&agent, &format!("http://{addr}/loc/cdx?url={k}"));
        assert_eq!(status, 200, "{k}");
        // A TimeMap answers what is found (404 for nothing), not a 500.
        let (status, _, body) = get(&agent, &format!("http://{addr}/loc/timemap/link/{k}"));
        assert!(
            status == 200 || status == 404,
            "{k}: {status} {}",
            text(&body)
        );
    }
    drop(child);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut log, &mut rest).unwrap();
    let told: Vec<&str> = rest
        .lines()
        .filter(|l| l.contains("out of byte order"))
        .collect();
    assert_eq!(told.len(), 1, "{rest}");
    assert!(
        told[0].starts_with(&format!("ukvs: {p}: line ")) && told[0].contains("ukvs sort"),
        "{rest}"
    );
}
