//! `/NAME/cdx/search/cdx`, the Wayback CDX server API: real clients
//! (cdx_toolkit, waybackpy, EDGI's `wayback`) pointed at `ukvs serve`
//! and checked against `ukvs lookup` on the same index; the recorded
//! answers of the Internet Archive's server replayed against the
//! captures they list; resume-key paging as a property; bad parameters;
//! gzip on every endpoint.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;

use crate::serve::{agent, Server};
use crate::util::{self, Rng};

/// The CDX11 legend of the generated indexes.
pub(crate) const LEGEND: &str = " CDX N b a m s k r M S V g";

/// A generated index: CDX11 lines in byte order, with what a crawl
/// leaves (revisits, repeated digests, captures in the same second,
/// identical lines from overlapping crawls) over a few hosts.
pub(crate) fn generated_lines(seed: u64, n: usize) -> Vec<String> {
    let mut rng = Rng(seed);
    let hosts = [
        "example.com",
        "www.example.com",
        "a.example.com",
        "other.org",
    ];
    let paths = ["/", "/a", "/a/b", "/a/b/c.html", "/b?x=1", "/c.png", "/z/"];
    let mut urls = Vec::new();
    for h in hosts {
        for p in paths {
            urls.push(format!("http://{h}{p}"));
        }
    }
    let keys = surts(&urls);
    let mut lines = Vec::new();
    while lines.len() < n {
        let i = rng.below(urls.len() as u64) as usize;
        let mime = rng.pick(&["text/html", "text/html", "image/png", "warc/revisit"]);
        let status = if mime == "warc/revisit" {
            "-"
        } else {
            rng.pick(&["200", "200", "301", "404"])
        };
        let ts = format!(
            "20{:02}{:02}{:02}{:02}{:02}{:02}",
            rng.below(3) + 10,
            rng.below(12) + 1,
            rng.below(28) + 1,
            rng.below(24),
            rng.below(2),
            rng.below(60)
        );
        let digest = format!("{}{}", rng.pick(&["AAAA", "BBBB", "CCCC"]), "Q".repeat(28));
        let line = format!(
            "{} {ts} {} {mime} {status} {digest} - - {} {} crawl-{}.warc.gz",
            keys[i],
            urls[i],
            rng.below(900) + 100,
            rng.below(1 << 20),
            rng.below(3)
        );
        if rng.chance(0.08) {
            lines.push(line.clone());
        }
        lines.push(line);
    }
    lines.sort();
    lines
}

/// The SURT keys `ukvs surt` gives these URLs.
fn surts(urls: &[String]) -> Vec<String> {
    let out = util::run(&["surt"], urls.join("\n").as_bytes());
    util::assert_ok(&out);
    let keys: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(keys.len(), urls.len());
    keys
}

pub(crate) fn write_cdx(path: &Path, lines: &[String]) {
    let mut text = format!("{LEGEND}\n");
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

/// A ZipNum cluster of `file` with `per_block` lines a block.
pub(crate) fn cluster(file: &Path, dir: &Path, per_block: usize) -> PathBuf {
    let out = Command::new(util::bin())
        .args(["zipnum", "build"])
        .arg(file)
        .arg("-o")
        .arg(dir)
        .args(["--lines-per-block", &per_block.to_string()])
        .output()
        .unwrap();
    util::assert_ok(&out);
    dir.to_path_buf()
}

/// IA's seven public fields of a CDX11 line.
fn ia7(line: &str) -> Vec<String> {
    let f: Vec<&str> = line.split(' ').collect();
    [0, 1, 2, 3, 4, 5, 8]
        .iter()
        .map(|&i| f[i].to_string())
        .collect()
}

/// What `ukvs lookup` finds for `url` (`--match m`), as IA's seven fields.
fn lookup(index: &Path, url: &str, m: &str) -> Vec<Vec<String>> {
    let out = Command::new(util::bin())
        .arg("lookup")
        .arg(index)
        .arg(url)
        .args(["--match", m])
        .output()
        .unwrap();
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.is_empty())
        .map(ia7)
        .collect()
}

/// The first line of each run of lines with the same value of field `i`
/// (IA's collapse of adjacent lines).
fn collapsed(lines: &[Vec<String>], i: usize) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for l in lines {
        if out.last().map_or(true, |p| p[i] != l[i]) {
            out.push(l.clone());
        }
    }
    out
}

/// Runs a Python script with arguments; its stdout is JSON.
pub(crate) fn python(script: &str, args: &[&str]) -> serde_json::Value {
    // A client that loops on an answer fails the test rather than hang it.
    let out = Command::new("timeout")
        .args(["300", "python3", "-c"])
        // cdx_toolkit waits 3 s between requests to a host unless told.
        .env("CDXT_DEFAULT_MIN_RETRY_INTERVAL", "0")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

pub(crate) fn rows(v: &serde_json::Value) -> Vec<Vec<String>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|x| match x {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .collect()
}

/// The collections every client test reads: one file (`f`), its ZipNum
/// cluster in blocks of 5 lines (`c`), the lines split over a directory
/// of two files (`d`).
pub(crate) struct Fixture {
    _tmp: tempfile::TempDir,
    pub(crate) file: PathBuf,
    pub(crate) server: Server,
}

pub(crate) fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let lines = generated_lines(0x5eed_1a7e, 700);
    let file = tmp.path().join("all.cdx");
    write_cdx(&file, &lines);
    let dir = tmp.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (i, l) in lines.iter().enumerate() {
        if i % 3 == 0 {
            a.push(l.clone());
        } else {
            b.push(l.clone());
        }
    }
    write_cdx(&dir.join("one.cdx"), &a);
    write_cdx(&dir.join("two.cdx"), &b);
    let cl = cluster(&file, &tmp.path().join("cluster"), 5);
    let server = Server::start(&[
        format!("f={}", file.display()),
        format!("c={}", cl.display()),
        format!("d={}", dir.display()),
        "--default".into(),
        "f".into(),
        "-q".into(),
    ]);
    Fixture {
        _tmp: tmp,
        file,
        server,
    }
}

const CDX_TOOLKIT: &str = r#"
import sys, json, cdx_toolkit
base, url, mt, exact = sys.argv[1:5]
cdx = cdx_toolkit.CDXFetcher(source=base)
rec = lambda o: [o['urlkey'], o['timestamp'], o['url'], o['mime'], o['status'], o['digest'], o['length']]
out = {
    'pages': [rec(o) for o in cdx.iter(url, matchType=mt, pageSize=2)],
    'collapse': [rec(o) for o in cdx.iter(url, matchType=mt, collapse='urlkey')],
    'limited': [rec(o) for o in cdx.iter(url, matchType=mt, limit=9)],
    'last': [rec(o) for o in cdx.get(exact, limit=-1)],
    'filtered': [rec(o) for o in cdx.iter(url, matchType=mt, filter=['status:200'])],
}
print(json.dumps(out))
"#;

const WAYBACKPY: &str = r#"
import sys, json
from waybackpy import WaybackMachineCDXServerAPI
base, url, mt, exact = sys.argv[1:5]
def api(u, **kw):
    a = WaybackMachineCDXServerAPI(u, **kw)
    a.endpoint = base
    return a
rec = lambda s: [s.urlkey, s.timestamp, s.original, s.mimetype, s.statuscode, s.digest, s.length]
out = {
    'pages': [rec(s) for s in api(url, match_type=mt, limit=7).snapshots()],
    'collapse': [rec(s) for s in api(url, match_type=mt, limit=4, collapses=['urlkey']).snapshots()],
    'newest': [rec(api(exact).newest())],
    'oldest': [rec(api(exact).oldest())],
}
print(json.dumps(out))
"#;

const EDGI: &str = r#"
import sys, json, wayback
base, url, mt, exact = sys.argv[1:5]
class Session(wayback.WaybackSession):
    def request(self, method, u, **kw):
        return super().request(method, u.replace('https://web.archive.org/cdx/search/cdx', base), **kw)
client = wayback.WaybackClient(session=Session(search_calls_per_second=1000, memento_calls_per_second=1000))
def rec(r):
    return [r.urlkey, r.timestamp.strftime('%Y%m%d%H%M%S'), r.original, r.mimetype,
            '-' if r.statuscode is None else str(r.statuscode), r.digest,
            '-' if r.length is None else str(r.length)]
out = {
    'pages': [rec(r) for r in client.search(url, match_type=mt, limit=6)],
    'collapse': [rec(r) for r in client.search(url, match_type=mt, limit=3, collapse='urlkey')],
    'last': [rec(r) for r in client.search(exact, limit=-1)],
    'latest': [rec(r) for r in client.search(exact, limit=-2, fast_latest=True)],
}
print(json.dumps(out))
"#;

/// Asserts two lists of records are equal, naming the first difference.
#[track_caller]
fn same(got: &[Vec<String>], want: &[Vec<String>], what: &str) {
    if got == want {
        return;
    }
    let i = got
        .iter()
        .zip(want)
        .position(|(g, w)| g != w)
        .unwrap_or(got.len().min(want.len()));
    panic!(
        "{what}: {} records, {} expected; first difference at {i}: {:?} against {:?}",
        got.len(),
        want.len(),
        got.get(i),
        want.get(i)
    );
}

/// The same lines with consecutive repeats dropped (EDGI's client skips
/// a line equal to the one before it).
fn no_repeats(lines: &[Vec<String>]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for l in lines {
        if out.last() != Some(l) {
            out.push(l.clone());
        }
    }
    out
}

/// The capture nearest to now (the newest; the first of equals).
fn newest(lines: &[Vec<String>]) -> Vec<String> {
    let max = lines.iter().map(|l| &l[1]).max().unwrap();
    lines.iter().find(|l| &l[1] == max).unwrap().clone()
}

#[test]
fn wayback_clients_read_every_collection_kind_as_lookup_does() {
    let f = fixture();
    let clients: Vec<(&str, &str)> = [
        ("cdx_toolkit", CDX_TOOLKIT),
        ("waybackpy", WAYBACKPY),
        ("wayback", EDGI),
    ]
    .into_iter()
    .filter(|(m, _)| util::has_python_module(m, "wayback_clients"))
    .collect();
    if clients.is_empty() {
        return;
    }
    let queries = [
        ("example.com/a", "prefix", "http://example.com/a"),
        ("example.com", "host", "http://example.com/"),
        ("example.com", "domain", "http://a.example.com/z/"),
    ];
    let mut checked = 0;
    for coll in ["f", "c", "d"] {
        let base = f.server.url(&format!("/{coll}/cdx/search/cdx"));
        for (url, m, exact) in queries {
            let whole = lookup(&f.file, url, m);
            let last = lookup(&f.file, exact, "exact");
            assert!(whole.len() > 20 && !last.is_empty(), "{url} {m}");
            for (name, script) in &clients {
                let got = python(script, &[&base, url, m, exact]);
                let what = format!("{name} on {coll}: {url} {m}");
                match *name {
                    "cdx_toolkit" => {
                        same(&rows(&got["pages"]), &whole, &format!("{what}: pages"));
                        if coll != "c" {
                            // Over a cluster each page is a query of its own,
                            // collapsed on its own (as IA's are).
                            same(&rows(&got["collapse"]), &collapsed(&whole, 0), &what);
                        }
                        same(&rows(&got["limited"]), &whole[..9], &what);
                        same(&rows(&got["last"]), &[last.last().unwrap().clone()], &what);
                        let ok: Vec<_> = whole.iter().filter(|l| l[4] == "200").cloned().collect();
                        same(&rows(&got["filtered"]), &ok, &format!("{what}: filter"));
                    }
                    "waybackpy" => {
                        same(
                            &rows(&got["pages"]),
                            &whole,
                            &format!("{what}: resume keys"),
                        );
                        same(&rows(&got["collapse"]), &collapsed(&whole, 0), &what);
                        same(&rows(&got["newest"]), &[newest(&last)], &what);
                        assert_eq!(rows(&got["oldest"])[0][1], last[0][1], "{what}");
                    }
                    _ => {
                        same(&rows(&got["pages"]), &no_repeats(&whole), &what);
                        same(
                            &rows(&got["collapse"]),
                            &collapsed(&whole, 0),
                            &format!("{what}: collapse"),
                        );
                        same(&rows(&got["last"]), &[last.last().unwrap().clone()], &what);
                        same(
                            &rows(&got["latest"]),
                            &no_repeats(&last[last.len() - 2..]),
                            &format!("{what}: last two"),
                        );
                    }
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, clients.len() * 9);
}

/// An answer of the Wayback CDX server: its capture rows (IA's seven
/// fields, or those of its JSON header) and its resume key.
struct Answer {
    header: Option<Vec<String>>,
    rows: Vec<Vec<String>>,
    key: Option<String>,
    /// The bytes before the resume key.
    lines_text: String,
}

fn parse_answer(body: &str) -> Answer {
    if body.starts_with('[') {
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        let mut all = rows(&v);
        let mut key = None;
        if all.len() >= 2 && all[all.len() - 2].is_empty() {
            key = all.pop().map(|k| k[0].clone());
            all.pop();
        }
        let header = (!all.is_empty()).then(|| all.remove(0));
        return Answer {
            header,
            rows: all,
            key,
            lines_text: body.split("\n[],\n").next().unwrap().to_string(),
        };
    }
    let (lines_text, key) = match body.split_once("\n\n") {
        Some((l, k)) => (format!("{l}\n"), Some(k.trim().to_string())),
        None => (body.to_string(), None),
    };
    Answer {
        header: None,
        rows: lines_text
            .lines()
            .map(|l| l.split(' ').map(str::to_string).collect())
            .collect(),
        key,
        lines_text,
    }
}

/// IA's recorded answers (tests/data/wayback/ia-answers.jsonl.gz: EDGI's
/// cassettes and cdx_toolkit's mock responses, see the README there),
/// grouped as they were recorded.
fn recorded() -> Vec<(String, Vec<(String, String)>)> {
    let mut text = String::new();
    let f = std::fs::File::open(util::data_dir().join("wayback/ia-answers.jsonl.gz")).unwrap();
    flate2::read::GzDecoder::new(f)
        .read_to_string(&mut text)
        .unwrap();
    let mut groups: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let group = v["group"].as_str().unwrap().to_string();
        let uri = v["uri"].as_str().unwrap().to_string();
        let body = v["body"].as_str().unwrap().to_string();
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, a)) => a.push((uri, body)),
            None => groups.push((group, vec![(uri, body)])),
        }
    }
    groups
}

#[test]
fn wayback_recorded_ia_answers_replay_from_their_captures() {
    let tmp = tempfile::tempdir().unwrap();
    let groups = recorded();
    let mut specs = vec!["-q".to_string()];
    for (i, (_, answers)) in groups.iter().enumerate() {
        // Each capture as often as one answer lists it (IA's index holds
        // copies of a capture, which it lists each time).
        let mut most: std::collections::BTreeMap<String, usize> = Default::default();
        for (_, body) in answers {
            let a = parse_answer(body);
            let names = a.header.clone().unwrap_or_else(|| {
                [
                    "urlkey",
                    "timestamp",
                    "original",
                    "mimetype",
                    "statuscode",
                    "digest",
                    "length",
                ]
                .map(String::from)
                .to_vec()
            });
            let mut here: std::collections::BTreeMap<String, usize> = Default::default();
            for r in &a.rows {
                let get = |n: &str| r[names.iter().position(|x| x == n).unwrap()].clone();
                let line = format!(
                    "{} {} {} {} {} {} - - {} - -",
                    get("urlkey"),
                    get("timestamp"),
                    get("original"),
                    get("mimetype"),
                    get("statuscode"),
                    get("digest"),
                    get("length")
                );
                *here.entry(line).or_default() += 1;
            }
            for (l, n) in here {
                let m = most.entry(l).or_default();
                *m = (*m).max(n);
            }
        }
        let lines: Vec<String> = most
            .into_iter()
            .flat_map(|(l, n)| std::iter::repeat(l).take(n))
            .collect();
        let path = tmp.path().join(format!("g{i}.cdx"));
        write_cdx(&path, &lines);
        specs.push(format!("g{i}={}", path.display()));
    }
    let server = Server::start(&specs);
    let http = agent();
    let (mut same, mut cut) = (0, 0);
    for (i, (group, answers)) in groups.iter().enumerate() {
        for (uri, body) in answers {
            let query = uri.split_once('?').unwrap().1;
            let url = server.url(&format!("/g{i}/cdx/search/cdx?{query}"));
            let mut res = http.get(&url).call().unwrap();
            assert_eq!(res.status().as_u16(), 200, "{group}: {uri}");
            let ours = res.body_mut().read_to_string().unwrap();
            let (want, got) = (parse_answer(body), parse_answer(&ours));
            // Lines, fields and order, byte for byte.
            assert_eq!(got.lines_text, want.lines_text, "{group}: {uri}");
            match (&want.key, &got.key) {
                (Some(_), Some(_)) | (None, None) => same += 1,
                // IA's key leads into captures the recording does not
                // hold (the answer after a limit cut): without them,
                // this answer is complete.
                (Some(_), None) => cut += 1,
                (None, Some(k)) => panic!("{group}: {uri}: a resume key {k} IA did not give"),
            }
        }
    }
    assert!(
        same > 20,
        "{same} answers agreed on their resume key, {cut} cut"
    );
}

/// Text answer lines and resume key of one request.
pub(crate) fn get_text(http: &ureq::Agent, url: &str) -> (Vec<String>, Option<String>) {
    let mut res = http.get(url).call().unwrap();
    let body = res.body_mut().read_to_string().unwrap();
    assert_eq!(res.status().as_u16(), 200, "{url}: {body}");
    let a = parse_answer(&body);
    (a.lines_text.lines().map(str::to_string).collect(), a.key)
}

/// Every page of a query, following resume keys; fails on a loop.
pub(crate) fn all_pages(http: &ureq::Agent, base: &str, query: &str, size: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut key: Option<String> = None;
    for _ in 0..10_000 {
        let mut url = format!("{base}?{query}&limit={size}&showResumeKey=true");
        if let Some(k) = &key {
            let k: String = form_urlencoded::byte_serialize(k.as_bytes()).collect();
            url.push_str(&format!("&resumeKey={k}"));
        }
        let (lines, next) = get_text(http, &url);
        assert!(lines.len() <= size, "{url}: {} lines", lines.len());
        out.extend(lines);
        match next {
            Some(k) => key = Some(k),
            None => return out,
        }
    }
    panic!("{base}?{query}: the resume keys never end");
}

pub(crate) fn query_strategy() -> impl Strategy<Value = String> {
    let url = prop_oneof![
        Just("example.com/a&matchType=prefix"),
        Just("example.com/a"),
        Just("example.com&matchType=host"),
        Just("*.example.com"),
        Just("other.org/*"),
    ];
    let extra = prop::collection::vec(
        prop_oneof![
            Just("&collapse=urlkey"),
            Just("&collapse=timestamp:6"),
            Just("&collapse=digest"),
            Just("&filter=statuscode:200"),
            Just("&filter=!mimetype:warc/revisit"),
            Just("&filter=~original:/a"),
            Just("&from=2011"),
            Just("&to=201106"),
            Just("&showSkipCount=true&lastSkipTimestamp=true"),
            Just("&fl=urlkey,timestamp,digest"),
            Just("&sort=reverse"),
            Just("&showGroupCount=true&showUniqCount=true"),
        ],
        0..4,
    );
    (url, extra).prop_map(|(u, e)| format!("url={u}{}", e.concat()))
}

/// Pages read through resume keys, concatenated, are the whole answer,
/// whatever the page size, on a file, a cluster and a directory (one
/// server for every case, so proptest's runner is driven by hand).
#[test]
fn wayback_resume_key_pages_make_the_whole_answer() {
    let f = fixture();
    let http = agent();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 48,
        ..ProptestConfig::default()
    });
    let cases = (
        query_strategy(),
        1usize..40,
        prop_oneof![Just("f"), Just("c"), Just("d")],
    );
    runner
        .run(&cases, |(query, size, coll)| {
            let base = f.server.url(&format!("/{coll}/cdx/search/cdx"));
            let (whole, key) = get_text(&http, &format!("{base}?{query}"));
            prop_assert!(key.is_none());
            let paged = all_pages(&http, &base, &query, size);
            if paged != whole {
                let i = paged
                    .iter()
                    .zip(&whole)
                    .position(|(p, w)| p != w)
                    .unwrap_or(paged.len().min(whole.len()));
                return Err(proptest::test_runner::TestCaseError::fail(format!(
                    "{base}?{query} by {size}: {} lines paged, {} whole; first difference \
                     at {i}: {:?} against {:?}",
                    paged.len(),
                    whole.len(),
                    paged.get(i),
                    whole.get(i)
                )));
            }
            Ok(())
        })
        .unwrap();
}

/// The parameter parser, as the fuzz target `wayback_params` runs it.
// The fuzz harness (tests/it/fuzz.rs) includes it too.
#[allow(dead_code, clippy::duplicate_mod)]
#[path = "../../src/serve/wayback/params.rs"]
mod params;

proptest! {
    /// Any query string is read or refused with a message, never a panic;
    /// one made of the API's own words as much as of noise.
    #[test]
    fn wayback_params_never_panic(
        words in prop::collection::vec(
            prop_oneof![
                Just("url=".to_string()), Just("&".to_string()), Just("=".to_string()),
                Just("filter=".to_string()), Just("collapse=".to_string()),
                Just("fl=".to_string()), Just("limit=".to_string()),
                Just("sort=".to_string()), Just("closest=".to_string()),
                Just("!".to_string()), Just("~".to_string()), Just(":".to_string()),
                Just("%".to_string()), Just("(".to_string()), Just("*".to_string()),
                "[a-z0-9,.%-]{0,6}",
                any::<String>(),
            ],
            0..12,
        )
    ) {
        let q = words.concat();
        match params::Params::parse(&q) {
            Ok(p) => {
                let _ = p.fields();
                for f in &p.filters {
                    let _ = f.accepts(&q);
                }
            }
            Err(msg) => prop_assert!(!msg.is_empty()),
        }
    }
}

#[test]
fn wayback_bad_parameters_are_400_with_a_message() {
    let f = fixture();
    let http = agent();
    for (q, word) in [
        ("url=example.com&limit=ten", "limit"),
        ("url=example.com&filter=statuscode:[", "filter"),
        ("url=example.com&filter=bogus:200", "bogus"),
        ("url=example.com&collapse=timestamp:four", "collapse"),
        ("url=example.com&matchType=everything", "matchType"),
        ("url=example.com&from=last+year", "from"),
        ("url=example.com&fl=urlkey,nope", "nope"),
        ("url=example.com&output=xml", "output"),
        ("limit=1", "url"),
        ("url=example.com&showPagedIndex=true", "ZipNum"),
    ] {
        let mut res = http
            .get(&f.server.url(&format!("/f/cdx/search/cdx?{q}")))
            .call()
            .unwrap();
        let body = res.body_mut().read_to_string().unwrap();
        assert_eq!(res.status().as_u16(), 400, "{q}: {body}");
        assert!(body.contains(word), "{q}: {body}");
    }
    // Without --default, and past the last page.
    let bare = Server::start(&[format!("f={}", f.file.display()), "-q".into()]);
    let res = http
        .get(&bare.url("/cdx/search/cdx?url=example.com"))
        .call()
        .unwrap();
    assert_eq!(res.status().as_u16(), 404);
    let (lines, _) = get_text(
        &http,
        &f.server.url("/cdx/search/cdx?url=example.com/*&page=1"),
    );
    assert!(lines.is_empty());
    let (lines, _) = get_text(
        &http,
        &f.server.url("/cdx/search/cdx?url=example.com/*&page=0"),
    );
    assert_eq!(lines.len(), lookup(&f.file, "example.com/", "prefix").len());
}

/// A GET over a bare connection (ureq inflates gzip bodies itself):
/// status, headers (lower-case names) and the body, de-chunked.
fn raw_get(addr: &str, path: &str, accept: &str) -> (u16, Vec<(String, String)>, Vec<u8>) {
    use std::io::Write;
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept-Encoding: {accept}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    conn.read_to_end(&mut all).unwrap();
    let end = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(all[..end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = all[end + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked")
    {
        let (mut out, mut at) = (Vec::new(), 0);
        loop {
            let nl = at + body[at..].windows(2).position(|w| w == b"\r\n").unwrap();
            let size = std::str::from_utf8(&body[at..nl]).unwrap();
            let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap();
            if size == 0 {
                break;
            }
            out.extend_from_slice(&body[nl + 2..nl + 2 + size]);
            at = nl + 2 + size + 2;
        }
        body = out;
    }
    (status, headers, body)
}

fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Every endpoint answers gzip to a client that takes it (and the
/// Wayback API's `gzip=false` turns it off): the bytes inflate to the
/// plain answer.
#[test]
fn wayback_gzip_on_every_endpoint() {
    let f = fixture();
    let addr = f.server.url("").trim_start_matches("http://").to_string();
    for path in [
        "/f/cdx/search/cdx?url=example.com/*",
        "/f/cdx?url=example.com/*&output=json",
        "/f/timemap/link/http://example.com/a",
        "/c/cdx?url=example.com/*",
        "/health",
        "/nosuch/cdx",
    ] {
        let (status, headers, plain) = raw_get(&addr, path, "identity");
        assert!(header(&headers, "content-encoding").is_none(), "{path}");
        assert!(!plain.is_empty(), "{path}");
        let (gz_status, gz_headers, raw) = raw_get(&addr, path, "br;q=1, gzip;q=0.5");
        assert_eq!(gz_status, status, "{path}");
        assert_eq!(
            header(&gz_headers, "content-encoding"),
            Some("gzip"),
            "{path}"
        );
        let mut inflated = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut inflated)
            .unwrap();
        assert_eq!(inflated, plain, "{path}");
    }
    let (_, headers, _) = raw_get(
        &addr,
        "/f/cdx/search/cdx?url=example.com/*&gzip=false",
        "gzip",
    );
    assert!(header(&headers, "content-encoding").is_none());
    let (_, headers, _) = raw_get(&addr, "/f/cdx/search/cdx?url=example.com/*", "gzip;q=0");
    assert!(header(&headers, "content-encoding").is_none());
}

/// The fuzz target's seeds (IA's README examples) are all read.
#[test]
fn wayback_params_read_the_readme_examples() {
    let dir = util::data_dir().join("wayback/queries");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let q = std::fs::read_to_string(e.unwrap().path()).unwrap();
        if let Err(msg) = params::Params::parse(&q) {
            panic!("{q}: {msg}");
        }
        n += 1;
    }
    assert!(n >= 5);
}

/// POSTs CDX11 lines to a live collection (`/NAME` or `/NAME/delete`).
pub(crate) fn post(http: &ureq::Agent, url: &str, lines: &[String]) {
    let mut body = format!("{LEGEND}\n");
    for l in lines {
        body.push_str(l);
        body.push('\n');
    }
    let mut res = http.post(url).send(body.as_bytes()).unwrap();
    let text = res.body_mut().read_to_string().unwrap();
    assert_eq!(res.status().as_u16(), 200, "{url}: {text}");
}

/// A live collection (a base file, lines added and deleted): resume-key
/// pages concatenate to the whole answer when nothing is written between
/// them; with writes between pages, every capture there before and after
/// comes exactly once, and nothing that was never there comes.
#[test]
fn wayback_resume_keys_on_a_live_collection_with_writes_between_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let lines = generated_lines(0x11fe, 900);
    let (base, rest): (Vec<String>, Vec<String>) =
        lines.iter().cloned().partition(|l| l.len() % 2 == 0);
    let file = tmp.path().join("base.cdx");
    write_cdx(&file, &base);
    let data = tmp.path().join("data");
    let server = Server::start(&[
        format!("l={}", file.display()),
        "--data".into(),
        data.display().to_string(),
        "-q".into(),
    ]);
    let http = agent();
    let coll = server.url("/l");
    post(&http, &coll, &rest[..rest.len() / 2]);
    post(&http, &format!("{coll}/delete"), &base[..base.len() / 5]);
    let base_url = server.url("/l/cdx/search/cdx");
    // Fields that tell captures apart.
    let fl = "&fl=urlkey,timestamp,original,digest,length,offset,filename";

    // Nothing written between pages: the whole answer.
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 16,
        ..ProptestConfig::default()
    });
    runner
        .run(&(query_strategy(), 1usize..30), |(query, size)| {
            let (whole, _) = get_text(&http, &format!("{base_url}?{query}"));
            let paged = all_pages(&http, &base_url, &query, size);
            prop_assert!(paged == whole, "{}?{} by {}", base_url, query, size);
            Ok(())
        })
        .unwrap();

    // Writes between pages.
    let mut rng = Rng(7);
    let mut later = rest[rest.len() / 2..].to_vec();
    let mut gone = base[base.len() / 5..].to_vec();
    for query in [
        "url=example.com&matchType=domain",
        "url=example.com/a&matchType=prefix&filter=!mimetype:warc/revisit",
        "url=other.org&matchType=host",
    ] {
        let query = format!("{query}{fl}");
        let before = get_text(&http, &format!("{base_url}?{query}")).0;
        let mut paged = Vec::new();
        let mut key: Option<String> = None;
        loop {
            let mut url = format!("{base_url}?{query}&limit=7&showResumeKey=true");
            if let Some(k) = &key {
                let k: String = form_urlencoded::byte_serialize(k.as_bytes()).collect();
                url.push_str(&format!("&resumeKey={k}"));
            }
            let (lines, next) = get_text(&http, &url);
            paged.extend(lines);
            let Some(k) = next else { break };
            key = Some(k);
            // Add a few captures and delete a few, anywhere in the range.
            let n = (rng.below(4) + 1) as usize;
            if later.len() >= n {
                post(&http, &coll, &later.drain(..n).collect::<Vec<_>>());
            }
            if gone.len() >= 2 {
                let at = rng.below(gone.len() as u64 - 1) as usize;
                post(
                    &http,
                    &format!("{coll}/delete"),
                    &gone.drain(at..at + 2).collect::<Vec<_>>(),
                );
            }
        }
        let after = get_text(&http, &format!("{base_url}?{query}")).0;
        let count = |v: &[String]| {
            let mut m = std::collections::BTreeMap::<String, usize>::new();
            for l in v {
                *m.entry(l.clone()).or_default() += 1;
            }
            m
        };
        let (b, a, p) = (count(&before), count(&after), count(&paged));
        for (line, n) in &b {
            if let Some(m) = a.get(line) {
                assert_eq!(p.get(line), Some(&(*n).min(*m)), "{query}: {line}");
            }
        }
        for (line, n) in &p {
            let most = b
                .get(line)
                .copied()
                .unwrap_or(0)
                .max(a.get(line).copied().unwrap_or(0));
            assert!(
                *n <= most,
                "{query}: {line} {n} times, never there as often"
            );
        }
        assert!(paged.len() > 20, "{query}: {} lines", paged.len());
    }
}

/// Every line of `lookup`, all eleven fields.
pub(crate) fn lookup11(index: &Path, url: &str, m: &str) -> Vec<Vec<String>> {
    let out = Command::new(util::bin())
        .arg("lookup")
        .arg(index)
        .arg(url)
        .args(["--match", m])
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.is_empty())
        .map(|l| l.split(' ').map(str::to_string).collect())
        .collect()
}

/// A naive reading of IA's steps (FORMATS.md 5.6) over a whole range:
/// from/to, filters (field, regex as a predicate, invert), collapses
/// (field, first N characters), counters; rows of `fl` fields (CDX11
/// numbers, 11-13 for dupecount, skipcount, endtimestamp).
#[allow(clippy::type_complexity)]
fn oracle(
    lines: &[Vec<String>],
    from: Option<&str>,
    to: Option<&str>,
    filters: &[(usize, &dyn Fn(&str) -> bool)],
    collapses: &[(usize, Option<usize>)],
    fl: &[usize],
) -> Vec<String> {
    let mut kept: Vec<(Vec<String>, u64, u64, String)> = Vec::new();
    let mut prev: Vec<Option<String>> = vec![None; collapses.len()];
    let mut digests = std::collections::HashMap::<String, u64>::new();
    for l in lines {
        let ts = l[1].as_str();
        if from.is_some_and(|f| ts < f) || to.is_some_and(|t| ts > t && !ts.starts_with(t)) {
            continue;
        }
        let mut pass = filters.iter().all(|(i, f)| f(&l[*i]));
        if pass {
            for (j, (i, n)) in collapses.iter().enumerate() {
                let v: String = match n {
                    Some(n) => l[*i].chars().take(*n).collect(),
                    None => l[*i].clone(),
                };
                if prev[j].as_deref() == Some(v.as_str()) {
                    pass = false;
                    break;
                }
                prev[j] = Some(v);
            }
        }
        if !pass {
            if let Some(k) = kept.last_mut() {
                k.2 += 1;
                k.3 = ts.to_string();
            }
            continue;
        }
        let d = digests.entry(l[5].clone()).or_insert(0);
        kept.push((l.clone(), *d, 0, ts.to_string()));
        *d += 1;
    }
    kept.iter()
        .map(|(l, dupes, skipped, end)| {
            fl.iter()
                .map(|&i| match i {
                    11 => dupes.to_string(),
                    12 => skipped.to_string(),
                    13 => end.clone(),
                    i => l[i].clone(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn wayback_steps_answer_as_a_naive_reading_of_ia() {
    let f = fixture();
    let http = agent();
    let lines = lookup11(&f.file, "example.com", "domain");
    assert!(lines.len() > 300);
    let ok = |v: &str| v == "200";
    let not_revisit = |v: &str| v != "warc/revisit";
    let html = |v: &str| v.starts_with("text/");
    let counters = "&showDupeCount=true&showSkipCount=true&lastSkipTimestamp=true";
    let fl = "&fl=urlkey,timestamp,offset,digest,dupecount,skipcount,endtimestamp";
    let cols = [0, 1, 9, 5, 11, 12, 13];
    let cases: Vec<(String, Vec<String>)> = vec![
        (
            format!("url=*.example.com&collapse=timestamp:4{counters}{fl}"),
            oracle(&lines, None, None, &[], &[(1, Some(4))], &cols),
        ),
        (
            format!("url=*.example.com&filter=statuscode:200&collapse=urlkey&collapse=digest{counters}{fl}"),
            oracle(&lines, None, None, &[(4, &ok)], &[(0, None), (5, None)], &cols),
        ),
        (
            format!("url=*.example.com&from=2011&to=201203&filter=!mimetype:warc/revisit&filter=mimetype:text/.*{counters}{fl}"),
            oracle(&lines, Some("2011"), Some("201203"), &[(3, &not_revisit), (3, &html)], &[], &cols),
        ),
    ];
    for (q, want) in &cases {
        let (got, _) = get_text(&http, &f.server.url(&format!("/f/cdx/search/cdx?{q}")));
        assert!(want.len() > 5, "{q}");
        assert_eq!(&got, want, "{q}");
        // The same answer, limited: the first N, the last N, after an offset.
        let (first, _) = get_text(
            &http,
            &f.server.url(&format!("/f/cdx/search/cdx?{q}&limit=4")),
        );
        let (last, _) = get_text(
            &http,
            &f.server.url(&format!("/f/cdx/search/cdx?{q}&limit=-3")),
        );
        let (after, _) = get_text(
            &http,
            &f.server
                .url(&format!("/f/cdx/search/cdx?{q}&offset=0&limit=2")),
        );
        assert_eq!(first, want[..4].to_vec(), "{q}");
        assert_eq!(last, want[want.len() - 3..].to_vec(), "{q}");
        assert_eq!(after, want[..2].to_vec(), "{q}");
    }
    // offset skips lines read, before any step; reverse and closest.
    let all: Vec<String> = lines.iter().map(|l| ia7(&l.join(" ")).join(" ")).collect();
    let (got, _) = get_text(
        &http,
        &f.server
            .url("/f/cdx/search/cdx?url=*.example.com&offset=10&limit=5"),
    );
    assert_eq!(got, all[10..15].to_vec());
    let (got, _) = get_text(
        &http,
        &f.server
            .url("/f/cdx/search/cdx?url=*.example.com&sort=reverse&limit=6"),
    );
    let mut tail: Vec<String> = all[all.len() - 6..].to_vec();
    tail.reverse();
    assert_eq!(got, tail);
    let exact = lookup(&f.file, "http://example.com/a", "exact");
    let (got, _) = get_text(
        &http,
        &f.server
            .url("/f/cdx/search/cdx?url=example.com/a&sort=closest&closest=20110615&limit=3"),
    );
    let target = ukvs_secs("20110615000000");
    let mut by_distance: Vec<(u64, usize, String)> = exact
        .iter()
        .enumerate()
        .map(|(i, l)| (ukvs_secs(&l[1]).abs_diff(target), i, l.join(" ")))
        .collect();
    by_distance.sort();
    let want: Vec<String> = by_distance.into_iter().take(3).map(|(_, _, l)| l).collect();
    assert_eq!(got, want);
}

/// Seconds since 1970 of a 14-digit datetime.
fn ukvs_secs(dt: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| dt[r].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(4..6), n(6..8));
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    days * 86_400 + n(8..10) * 3600 + n(10..12) * 60 + n(12..14)
}
