//! The Wayback CDX API read backwards: `sort=reverse` (IA's steps taken
//! on the lines newest first), the last N of `limit=-N` read from the end
//! of the range (`fastLatest`), and the group counters (`showGroupCount`,
//! `showUniqCount`, `showSkipCount`, `lastSkipTimestamp`), on a file, a
//! ZipNum cluster, a directory and a live collection, against a naive
//! reading of IA's steps over the whole range.

use std::collections::{HashMap, HashSet};

use crate::serve::{agent, Server};
use crate::util;
use crate::wayback::{cluster, generated_lines, get_text, lookup11, post, python, rows, write_cdx};

/// A live collection beside the fixture's kinds: a base file, lines
/// posted and some of the base deleted.
struct Kinds {
    _tmp: tempfile::TempDir,
    server: Server,
    /// The whole collection's lines, as `ukvs lookup` reads them from a
    /// file holding them all.
    all: std::path::PathBuf,
}

fn kinds() -> Kinds {
    let tmp = tempfile::tempdir().unwrap();
    let lines = generated_lines(0x0dde_c0de, 800);
    let file = tmp.path().join("all.cdx");
    write_cdx(&file, &lines);
    let dir = tmp.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    let (a, b): (Vec<String>, Vec<String>) = lines.iter().cloned().partition(|l| l.len() % 3 == 0);
    write_cdx(&dir.join("one.cdx"), &a);
    write_cdx(&dir.join("two.cdx"), &b);
    let cl = cluster(&file, &tmp.path().join("cluster"), 7);
    // The live collection: half the lines as its base, the other half
    // posted (a capture is stored once: lines with copies stay in the
    // base), and captures of the base deleted.
    let mut copies = HashMap::<&String, usize>::new();
    for l in &lines {
        *copies.entry(l).or_default() += 1;
    }
    let (base, posted): (Vec<String>, Vec<String>) = lines
        .iter()
        .cloned()
        .partition(|l| l.len() % 2 == 0 || copies[l] > 1);
    let base_file = tmp.path().join("base.cdx");
    let mut with_gone = base.clone();
    let gone: Vec<String> = (0..40)
        .map(|i| {
            let mut f: Vec<String> = base[i * 7].split(' ').map(str::to_string).collect();
            f[9] = format!("{}9", f[9]);
            f.join(" ")
        })
        .collect();
    with_gone.extend(gone.iter().cloned());
    with_gone.sort();
    write_cdx(&base_file, &with_gone);
    let data = tmp.path().join("data");
    let server = Server::start(&[
        format!("f={}", file.display()),
        format!("c={}", cl.display()),
        format!("d={}", dir.display()),
        format!("l={}", base_file.display()),
        "--data".into(),
        data.display().to_string(),
        "-q".into(),
    ]);
    let http = agent();
    post(&http, &server.url("/l"), &posted);
    post(&http, &server.url("/l/delete"), &gone);
    Kinds {
        _tmp: tmp,
        server,
        all: file,
    }
}

/// A naive reading of IA's steps over `lines` in the order given: from/to,
/// filters, collapses, then the counters of each line kept (its group:
/// the lines filters and collapses drop after it); rows of `fl` fields
/// (CDX11 numbers; 11 dupecount, 12 skipcount, 13 groupcount, 14
/// endtimestamp, 15 uniqcount).
#[allow(clippy::type_complexity)]
fn steps(
    lines: &[Vec<String>],
    from: Option<&str>,
    to: Option<&str>,
    filters: &[(usize, &dyn Fn(&str) -> bool)],
    collapses: &[(usize, Option<usize>)],
    fl: &[usize],
) -> Vec<String> {
    struct Group {
        line: Vec<String>,
        dupes: u64,
        dropped: u64,
        end: String,
        digests: HashSet<String>,
    }
    let mut kept: Vec<Group> = Vec::new();
    let mut prev: Vec<Option<String>> = vec![None; collapses.len()];
    let mut seen = HashMap::<String, u64>::new();
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
            if let Some(g) = kept.last_mut() {
                g.dropped += 1;
                g.end = ts.to_string();
                g.digests.insert(l[5].clone());
            }
            continue;
        }
        let d = seen.entry(l[5].clone()).or_insert(0);
        kept.push(Group {
            line: l.clone(),
            dupes: *d,
            dropped: 0,
            end: ts.to_string(),
            digests: [l[5].clone()].into_iter().collect(),
        });
        *d += 1;
    }
    kept.iter()
        .map(|g| {
            fl.iter()
                .map(|&i| match i {
                    11 => g.dupes.to_string(),
                    12 => g.dropped.to_string(),
                    13 => (g.dropped + 1).to_string(),
                    14 => g.end.clone(),
                    15 => g.digests.len().to_string(),
                    i => g.line[i].clone(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn get(server: &Server, coll: &str, q: &str) -> Vec<String> {
    get_text(
        &agent(),
        &server.url(&format!("/{coll}/cdx/search/cdx?{q}")),
    )
    .0
}

const COLLS: [&str; 4] = ["f", "c", "d", "l"];

/// `limit=-N` read from the end of the range is the tail of the whole
/// answer, with and without `fastLatest`, whatever N, on every kind of
/// collection; so is `limit=-N` with the steps that make it read
/// forwards (a collapse, counters, an offset).
#[test]
fn wayback_last_n_read_from_the_end_is_the_tail_of_the_whole_answer() {
    let k = kinds();
    let queries = [
        "url=example.com/a&matchType=prefix",
        "url=example.com/a",
        "url=example.com/a&to=2011",
        "url=example.com/a&from=201106&to=201203",
        "url=*.example.com&filter=statuscode:200&filter=!mimetype:warc/revisit",
        "url=other.org&matchType=host&fl=timestamp,digest,offset",
        "url=example.com&matchType=domain&filter=~original:/a/b&from=2011",
        "url=nothing.example.net",
        "url=*.example.com&collapse=urlkey&showSkipCount=true",
    ];
    let mut checked = 0;
    for coll in COLLS {
        for q in queries {
            let whole = get(&k.server, coll, q);
            for n in [1usize, 2, 5, 40, 5000] {
                let want = &whole[whole.len().saturating_sub(n)..];
                for fast in ["", "&fastLatest=true"] {
                    let got = get(&k.server, coll, &format!("{q}&limit=-{n}{fast}"));
                    if n == 1 && q.contains("collapse") {
                        // IA's limit=-1 is the newest line, collapsed
                        // newest first: checked below.
                        continue;
                    }
                    assert_eq!(got, want, "{coll}: {q}&limit=-{n}{fast}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 250);
    // The live collection answers as a file of its lines would.
    for q in queries {
        let whole = get(&k.server, "f", q);
        assert_eq!(get(&k.server, "l", q), whole, "{q}");
    }
}

/// `sort=reverse` answers IA's steps taken on the lines newest first: a
/// collapse keeps the newest of a run, a group's counters are of the
/// older lines after it, `offset` skips the newest, `limit` keeps the
/// newest N; `limit=-1` is the newest line of the answer so read.
#[test]
fn wayback_reverse_takes_ia_steps_on_the_lines_newest_first() {
    let k = kinds();
    let mut lines = lookup11(&k.all, "example.com", "domain");
    assert!(lines.len() > 300);
    lines.reverse();
    let ok = |v: &str| v == "200";
    let html = |v: &str| v.starts_with("text/");
    let fl =
        "&fl=urlkey,timestamp,offset,digest,dupecount,skipcount,groupcount,endtimestamp,uniqcount";
    let counters = "&showDupeCount=true&showSkipCount=true&showGroupCount=true&lastSkipTimestamp=true&showUniqCount=true";
    let cols = [0, 1, 9, 5, 11, 12, 13, 14, 15];
    let cases: Vec<(String, Vec<String>)> = vec![
        (
            format!("url=*.example.com&sort=reverse&collapse=timestamp:4{counters}{fl}"),
            steps(&lines, None, None, &[], &[(1, Some(4))], &cols),
        ),
        (
            format!("url=*.example.com&sort=reverse&filter=statuscode:200&collapse=urlkey&collapse=digest{counters}{fl}"),
            steps(&lines, None, None, &[(4, &ok)], &[(0, None), (5, None)], &cols),
        ),
        (
            format!("url=*.example.com&sort=reverse&from=2011&to=201203&filter=mimetype:text/.*{fl}"),
            steps(&lines, Some("2011"), Some("201203"), &[(3, &html)], &[], &cols),
        ),
        (
            // Counters named in `fl` alone are counted.
            format!("url=*.example.com&sort=reverse&collapse=digest{fl}"),
            steps(&lines, None, None, &[], &[(5, None)], &cols),
        ),
    ];
    // A cluster's pages read backwards: each page's lines, newest first
    // (IA reverses the lines of the page it reads), pages in their order.
    let q = "url=*.example.com&pageSize=3&fl=timestamp,offset";
    let pages: usize = get(&k.server, "c", &format!("{q}&showNumPages=true"))[0]
        .parse()
        .unwrap();
    assert!(pages > 3);
    for page in 0..pages {
        let mut want = get(&k.server, "c", &format!("{q}&page={page}"));
        want.reverse();
        let got = get(&k.server, "c", &format!("{q}&page={page}&sort=reverse"));
        assert!(!got.is_empty());
        assert_eq!(got, want, "page {page}");
    }
    for coll in COLLS {
        for (q, want) in &cases {
            assert!(want.len() > 5, "{q}");
            assert_eq!(&get(&k.server, coll, q), want, "{coll}: {q}");
            assert_eq!(
                get(&k.server, coll, &format!("{q}&limit=4")),
                want[..4].to_vec(),
                "{coll}: {q}"
            );
            assert_eq!(
                get(&k.server, coll, &format!("{q}&limit=-3")),
                want[want.len() - 3..].to_vec(),
                "{coll}: {q}"
            );
        }
        // An exact URL, newest first, between from and to; offset skips
        // the newest lines.
        let exact = lookup11(&k.all, "http://example.com/a", "exact");
        let mut newest_first: Vec<Vec<String>> = exact.clone();
        newest_first.reverse();
        let q = "url=example.com/a&sort=reverse&from=2011&to=201202&fl=timestamp,offset";
        let want = steps(
            &newest_first,
            Some("2011"),
            Some("201202"),
            &[],
            &[],
            &[1, 9],
        );
        assert!(want.len() > 3);
        assert_eq!(get(&k.server, coll, q), want, "{coll}: {q}");
        assert_eq!(
            get(&k.server, coll, &format!("{q}&offset=2")),
            want[2..].to_vec(),
            "{coll}: {q}"
        );
        // limit=-1: the first line read backwards (a collapse keeps the
        // newest of the last run).
        let q = "url=*.example.com&collapse=digest&fl=timestamp,offset,digest";
        let want = steps(&lines, None, None, &[], &[(5, None)], &[1, 9, 5]);
        assert_eq!(
            get(&k.server, coll, &format!("{q}&limit=-1")),
            want[..1].to_vec(),
            "{coll}: {q}"
        );
    }
}

/// The group counters read forwards: `groupcount` is the line and the
/// lines dropped after it, `uniqcount` their distinct digests,
/// `endtimestamp` the last one's datetime (IA's `GroupCountProcessor`
/// counts, less its off-by-one at the end of an answer; FORMATS.md 2.7).
#[test]
fn wayback_group_counters_count_each_group_whole() {
    let k = kinds();
    let lines = lookup11(&k.all, "example.com", "domain");
    let ok = |v: &str| v == "200";
    let q = "url=example.com&matchType=domain&filter=statuscode:200&collapse=timestamp:6\
             &showGroupCount=true&showUniqCount=true&lastSkipTimestamp=true\
             &fl=timestamp,groupcount,endtimestamp,uniqcount";
    let want = steps(
        &lines,
        None,
        None,
        &[(4, &ok)],
        &[(1, Some(6))],
        &[1, 13, 14, 15],
    );
    assert!(want.len() > 5);
    assert!(want.iter().any(|w| w.split(' ').nth(3) != Some("1")));
    for coll in COLLS {
        assert_eq!(get(&k.server, coll, q), want, "{coll}");
        // Without fl: IA's seven fields, then the counters in IA's order.
        let json = get(
            &k.server,
            coll,
            "url=other.org&matchType=host&showGroupCount=true&showUniqCount=true\
             &lastSkipTimestamp=true&output=json&limit=1",
        );
        assert!(
            json[0].contains(r#""length","groupcount","endtimestamp","uniqcount"]"#),
            "{coll}: {json:?}"
        );
    }
}

const WAYBACKPY_SORTS: &str = r#"
import sys, json
from waybackpy import WaybackMachineCDXServerAPI
base, url, mt = sys.argv[1:4]
def api(u, **kw):
    a = WaybackMachineCDXServerAPI(u, **kw)
    a.endpoint = base
    return a
rec = lambda s: [s.urlkey, s.timestamp, s.original, s.mimetype, s.statuscode, s.digest, s.length]
out = {
    'reverse': [rec(s) for s in api(url, match_type=mt, limit=6, sort='reverse').snapshots()],
    'collapse': [rec(s) for s in api(url, match_type=mt, limit=4, sort='reverse', collapses=['urlkey']).snapshots()],
    'default': [rec(s) for s in api(url, match_type=mt, limit=9, sort='default').snapshots()],
}
print(json.dumps(out))
"#;

/// waybackpy's `sort='reverse'` pages newest first through resume keys
/// (with and without a collapse), and its `sort='default'` is index order.
#[test]
fn wayback_waybackpy_sorts_page_as_ia_reads_them() {
    if !util::has_python_module("waybackpy", "wayback_waybackpy_sorts_page_as_ia_reads_them") {
        return;
    }
    let k = kinds();
    let ia7 = |l: &Vec<String>| -> Vec<String> {
        [0, 1, 2, 3, 4, 5, 8]
            .iter()
            .map(|&i| l[i].clone())
            .collect()
    };
    for coll in COLLS {
        let base = k.server.url(&format!("/{coll}/cdx/search/cdx"));
        let got = python(WAYBACKPY_SORTS, &[&base, "example.com/a", "prefix"]);
        let whole: Vec<Vec<String>> = lookup11(&k.all, "example.com/a", "prefix")
            .iter()
            .map(ia7)
            .collect();
        assert!(whole.len() > 20);
        let mut reversed = whole.clone();
        reversed.reverse();
        assert_eq!(rows(&got["reverse"]), reversed, "{coll}: reverse");
        let mut newest_per_url: Vec<Vec<String>> = Vec::new();
        for l in &reversed {
            if newest_per_url.last().map_or(true, |p| p[0] != l[0]) {
                newest_per_url.push(l.clone());
            }
        }
        assert_eq!(rows(&got["collapse"]), newest_per_url, "{coll}: collapse");
        assert_eq!(rows(&got["default"]), whole, "{coll}: default");
    }
}

/// A query whose lines are held by a delta larger than a reversed answer
/// holds still answers: `limit=-N` reads forwards, `sort=reverse` the
/// newest lines.
#[test]
fn wayback_reverse_over_a_large_delta_reads_forwards() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let server = Server::start(&["--data".into(), data.display().to_string(), "-q".into()]);
    // 10,500 captures of one URL, posted (more than the 10,000 held).
    let lines: Vec<String> = (0..10_500)
        .map(|i| {
            format!(
                "com,example)/ 2020{:02}{:02}{:02}{:02}{:02} http://example.com/ text/html 200 \
                 D{i:031} - - 100 {i} f.warc.gz",
                i / 5000 + 1,
                i % 28 + 1,
                (i / 28) % 24,
                (i / 672) % 60,
                i % 60
            )
        })
        .collect();
    let http = agent();
    let mut sorted = lines.clone();
    sorted.sort();
    for chunk in sorted.chunks(2000) {
        post(&http, &server.url("/big"), chunk);
    }
    let q = |s: &str| {
        get_text(
            &http,
            &server.url(&format!("/big/cdx/search/cdx?url=example.com{s}")),
        )
        .0
    };
    let whole = q("&fl=timestamp,offset");
    assert_eq!(whole.len(), 10_500);
    assert_eq!(
        q("&fl=timestamp,offset&limit=-3"),
        whole[whole.len() - 3..].to_vec()
    );
    let mut newest: Vec<String> = whole[whole.len() - 5..].to_vec();
    newest.reverse();
    assert_eq!(q("&fl=timestamp,offset&sort=reverse&limit=5"), newest);
}

/// Regression: a page resumed at a line whose second holds a deleted
/// capture (its tombstone sorts below the line) left it out.
#[test]
fn wayback_resume_key_skips_a_deleted_capture_of_the_same_second() {
    let k = kinds();
    let http = agent();
    let base = k.server.url("/l/cdx/search/cdx");
    for q in [
        "url=example.com/a&matchType=prefix",
        "url=example.com&matchType=domain&fl=timestamp,offset",
    ] {
        let whole = get_text(&http, &format!("{base}?{q}")).0;
        for size in [1, 2, 9] {
            let paged = crate::wayback::all_pages(&http, &base, q, size);
            assert_eq!(paged, whole, "{q} by {size}");
        }
    }
}
