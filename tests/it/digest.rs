//! Digest files and lookups by payload digest (`ukvs index --digests`,
//! `ukvs digests`, `ukvs lookup --digest`, `/NAME/digest`), and revisits
//! of another URL resolved (`resolveRevisits`, `lookup
//! --resolve-revisits`, pywb's replay through `ukvs serve`), on WARCs
//! written by warcio with payloads repeated across URLs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use data_encoding::{BASE32_NOPAD, HEXLOWER};
use serde_json::Value;

use crate::serve::{agent, get, start_pywb, Server};
use crate::util::{self, assert_ok};

/// Writes the corpus with warcio: three files of responses whose bodies
/// come from a pool of twelve (so one payload is captured at many URLs
/// and times), a fifth with a `sha256:` payload digest in hex as
/// browsertrix-crawler states it, revisits of the same URL made as
/// warcio makes them, and `agnostic.warc.gz`: an original at
/// `http://orig.example/a`, a revisit of it at `http://copy.example/b`
/// naming it (`WARC-Refers-To-Target-URI` and `-Date`), and one at
/// `http://copy.example/c` that names nothing (a url-agnostic revisit
/// as early deduplicating crawlers wrote them).
const GENERATE: &str = r#"
import hashlib, io, random, sys
from warcio.warcwriter import WARCWriter
from warcio.statusandheaders import StatusAndHeaders

out, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
pool = [(b'payload %d ' % i) * rng.randint(1, 60) for i in range(12)]
urls = ['http://h%d.example/p%d' % (rng.randint(0, 4), i) for i in range(40)]

def http(body, ctype='text/plain'):
    return StatusAndHeaders('200 OK', [('Content-Type', ctype),
                                       ('Content-Length', str(len(body)))],
                            protocol='HTTP/1.1')

for f in range(3):
    seen = {}
    with open('%s/dup-%d.warc.gz' % (out, f), 'wb') as fh:
        w = WARCWriter(fh, gzip=True)
        for i in range(60):
            url = rng.choice(urls)
            body = rng.choice(pool)
            # Dates ascend through a file, as a crawl writes them.
            date = '20%02d-%02d-%02dT%02d:%02d:%02dZ' % (
                12 + f, 1 + i // 6, 1 + i % 6, i % 24, i % 60, (7 * i) % 60)
            heads = {'WARC-Date': date}
            if url in seen and rng.random() < 0.4:
                # The URL again, its payload unchanged: a revisit.
                orig_date, digest, body = seen[url]
                rec = w.create_revisit_record(url, digest, url, orig_date,
                                              http_headers=http(body),
                                              warc_headers_dict={'WARC-Date': date})
            else:
                rec = w.create_warc_record(url, 'response', payload=io.BytesIO(body),
                                           http_headers=http(body), warc_headers_dict=heads)
                if rng.random() < 0.2:
                    # Digests computed now, so that the writer keeps the
                    # one stated here.
                    w.ensure_digest(rec, block=True, payload=True)
                    rec.length = rec.payload_length
                    rec.rec_headers.replace_header(
                        'WARC-Payload-Digest', 'sha256:' + hashlib.sha256(body).hexdigest())
                seen[url] = (date, rec.rec_headers.get_header('WARC-Payload-Digest'), body)
            w.write_record(rec)

body = b'<html>the one payload captured once and revisited at two other URLs</html>'
with open('%s/agnostic.warc.gz' % out, 'wb') as fh:
    w = WARCWriter(fh, gzip=True)
    orig = w.create_warc_record('http://orig.example/a', 'response',
                                payload=io.BytesIO(body), http_headers=http(body, 'text/html'),
                                warc_headers_dict={'WARC-Date': '2015-05-05T05:05:05Z'})
    w.write_record(orig)
    digest = orig.rec_headers.get_header('WARC-Payload-Digest')
    rev = w.create_revisit_record('http://copy.example/b', digest, 'http://orig.example/a',
                                  '2015-05-05T05:05:05Z', http_headers=http(body, 'text/html'),
                                  warc_headers_dict={'WARC-Date': '2016-06-06T06:06:06Z'})
    w.write_record(rev)
    bare = w.create_warc_record('http://copy.example/c', 'revisit',
                                http_headers=http(body, 'text/html'),
                                warc_headers_dict={'WARC-Date': '2016-07-07T07:07:07Z',
                                                   'WARC-Payload-Digest': digest})
    bare.rec_headers.add_header('WARC-Profile',
        'http://netpreserve.org/warc/1.0/revisit/identical-payload-digest')
    w.write_record(bare)
"#;

/// The one payload of `agnostic.warc.gz`.
const AGNOSTIC_BODY: &[u8] =
    b"<html>the one payload captured once and revisited at two other URLs</html>";

/// A generated corpus in a temporary directory, or `None` (with a skip
/// message) without warcio.
fn corpus(test: &str, seed: u64) -> Option<tempfile::TempDir> {
    if !util::has_python_module("warcio", test) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("python3")
        .args(["-c", GENERATE])
        .arg(dir.path())
        .arg(seed.to_string())
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(dir)
}

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

/// The archives of the corpus, in name order.
fn warcs(dir: &Path) -> Vec<String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .collect();
    v.sort();
    v.iter().map(|p| p.to_string_lossy().into_owned()).collect()
}

/// `ukvs index FORMAT -o OUT` of the corpus, with `extra` arguments.
fn index(dir: &Path, format: &str, out: &str, extra: &[&str]) {
    let mut args = vec!["index", "-q", "--format", format, "-o", out];
    args.extend_from_slice(extra);
    let files = warcs(dir);
    args.extend(files.iter().map(String::as_str));
    assert_ok(&util::run(&args, b""));
}

/// One capture as a test compares it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Cap {
    timestamp: String,
    url: String,
    filename: String,
    offset: String,
    length: String,
}

fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A capture of a JSON object (pywb's field names).
fn cap(o: &serde_json::Map<String, Value>) -> Cap {
    let f = |n: &str| o.get(n).map(s).unwrap_or_default();
    Cap {
        timestamp: f("timestamp"),
        url: f("url"),
        filename: f("filename"),
        offset: f("offset"),
        length: f("length"),
    }
}

/// Reads a CDXJ index as cdxj-indexer writes it, by digest as written.
fn scan_cdxj(path: &str) -> BTreeMap<String, Vec<Cap>> {
    let mut by = BTreeMap::<String, Vec<Cap>>::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let mut parts = line.splitn(3, ' ');
        let (_, ts, json) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let mut o: serde_json::Map<String, Value> = serde_json::from_str(json).unwrap();
        o.insert("timestamp".into(), ts.into());
        if let Some(d) = o.get("digest").map(s) {
            by.entry(d).or_default().push(cap(&o));
        }
    }
    by
}

/// Parses NDJSON answers into captures, in answer order.
fn caps_of_json(body: &[u8]) -> Vec<Cap> {
    String::from_utf8_lossy(body)
        .lines()
        .map(|l| cap(&serde_json::from_str(l).unwrap()))
        .collect()
}

/// The spellings of a digest as written in a CDXJ index that users have.
fn spellings(d: &str) -> Vec<String> {
    if let Some(b32) = d.strip_prefix("sha1:") {
        let bytes = data_encoding::BASE32.decode(b32.as_bytes()).unwrap();
        let hex = HEXLOWER.encode(&bytes);
        vec![
            d.to_string(),
            b32.to_string(),
            b32.to_lowercase(),
            hex.clone(),
            format!("SHA1:{}", hex.to_uppercase()),
        ]
    } else if let Some(hex) = d.strip_prefix("sha256:") {
        let bytes = HEXLOWER.decode(hex.as_bytes()).unwrap();
        let b32 = BASE32_NOPAD.encode(&bytes);
        vec![
            d.to_string(),
            hex.to_string(),
            format!("sha256:{b32}"),
            format!("sha-256:{}====", b32.to_lowercase()),
        ]
    } else {
        panic!("a digest the corpus should not have: {d}")
    }
}

/// Checks one answer against the scan: the same captures, oldest first.
fn same_as_scan(what: &str, got: &[Cap], want: &[Cap]) {
    let times: Vec<&str> = got.iter().map(|c| c.timestamp.as_str()).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "{what}: not oldest first: {times:?}"
    );
    let mut a = got.to_vec();
    let mut b = want.to_vec();
    a.sort();
    b.sort();
    assert_eq!(a, b, "{what}: not the captures of the index");
}

#[test]
fn digest_lookups_equal_a_scan_of_the_index_in_every_spelling() {
    let test = "digest_lookups_equal_a_scan_of_the_index_in_every_spelling";
    let Some(tmp) = corpus(test, 7) else { return };
    let dir = tmp.path();
    let (idx, dig) = (p(dir, "idx.cdxj"), p(dir, "idx.dig"));
    index(dir, "cdxj", &idx, &["--digests", &dig]);
    let scan = scan_cdxj(&idx);
    // The corpus is what the test needs: payloads at several URLs, and
    // stated SHA-256 digests.
    let across = scan
        .values()
        .filter(|caps| {
            let urls: std::collections::BTreeSet<_> = caps.iter().map(|c| &c.url).collect();
            urls.len() > 1
        })
        .count();
    assert!(across >= 8, "only {across} payloads at several URLs");
    assert!(scan.keys().filter(|d| d.starts_with("sha256:")).count() >= 5);

    let server = Server::start(&[
        "--quiet".into(),
        format!("d={idx}"),
        format!("d=digests:{dig}"),
    ]);
    let agent = agent();
    let mut checked = 0;
    for (digest, want) in &scan {
        let mut answers = Vec::new();
        for spelling in spellings(digest) {
            let out = util::run(
                &["lookup", &dig, "--digest", &spelling, "--output", "json"],
                b"",
            );
            assert_ok(&out);
            let got = caps_of_json(&out.stdout);
            same_as_scan(&format!("lookup --digest {spelling}"), &got, want);
            answers.push(out.stdout);
            let q = form_urlencoded::Serializer::new(String::new())
                .append_pair("digest", &spelling)
                .append_pair("output", "json")
                .finish();
            let (status, ctype, body) = get(&agent, &server.url(&format!("/d/digest?{q}")));
            assert_eq!(
                status,
                200,
                "{spelling}: {}",
                String::from_utf8_lossy(&body)
            );
            assert_eq!(ctype, "text/x-ndjson");
            let served = caps_of_json(&body);
            assert_eq!(served, got, "/d/digest?digest={spelling} and lookup differ");
            checked += 1;
        }
        assert!(
            answers.windows(2).all(|w| w[0] == w[1]),
            "{digest}: spellings give different answers"
        );
        // `limit` keeps the oldest; `fl` picks fields; cdxj by default.
        let q = format!("/d/digest?digest={digest}&limit=1&fl=filename,offset&output=json");
        let (_, _, body) = get(&agent, &server.url(&q));
        let first = &caps_of_json(&answers[0])[0];
        let text = String::from_utf8(body).unwrap();
        assert_eq!(
            text,
            format!(
                "{{\"filename\": \"{}\", \"offset\": \"{}\"}}\n",
                first.filename, first.offset
            )
        );
        let (_, ctype, body) = get(&agent, &server.url(&format!("/d/digest?digest={digest}")));
        assert_eq!(ctype, "text/x-cdxj");
        assert_eq!(String::from_utf8(body).unwrap().lines().count(), want.len());
    }
    assert!(checked > 100, "only {checked} lookups");

    // The `ukvs` profile digests the payload with SHA-1 and keeps a stated
    // `sha256:` digest beside it: its digest file finds those captures by
    // it too.
    let (uidx, udig) = (p(dir, "idx.ukvs"), p(dir, "u.dig"));
    index(dir, "ukvs", &uidx, &["--digests", &udig]);
    let mut sha256 = 0;
    for (digest, want) in scan.iter().filter(|(d, _)| d.starts_with("sha256:")) {
        for spelling in spellings(digest) {
            let out = util::run(
                &["lookup", &udig, "--digest", &spelling, "--output", "json"],
                b"",
            );
            assert_ok(&out);
            same_as_scan(
                &format!("ukvs: {spelling}"),
                &caps_of_json(&out.stdout),
                want,
            );
            sha256 += 1;
        }
    }
    assert!(sha256 >= 20, "only {sha256} sha256 lookups");

    // A payload nobody captured: nothing, exit 1 / an empty answer.
    let none = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let out = util::run(&["lookup", &dig, "--digest", none], b"");
    assert_eq!(out.status.code(), Some(1));
    let (status, _, body) = get(&agent, &server.url(&format!("/d/digest?digest={none}")));
    assert_eq!((status, body.len()), (200, 0));
    // Bad spellings: 400 with a message, exit 2 with one.
    for bad in [
        "sha1:123",
        "md5:zz",
        "B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36",
        "sha9:AAAA",
        "",
    ] {
        let (status, ctype, body) = get(
            &agent,
            &server.url(&format!("/d/digest?digest={}", bad.replace(':', "%3A"))),
        );
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, 400, "{bad:?}: {text}");
        assert_eq!(ctype, "application/json; charset=utf-8");
        assert!(text.contains("digest"), "{bad:?}: {text}");
        if !bad.is_empty() {
            let out = util::run(&["lookup", &dig, "--digest", bad], b"");
            assert_eq!(out.status.code(), Some(2));
            assert!(String::from_utf8_lossy(&out.stderr).contains("digest"));
        }
    }
    for q in [
        "/d/digest",
        "/d/digest?digest=sha1:x&limit=0",
        "/d/digest?output=xml",
    ] {
        assert_eq!(get(&agent, &server.url(q)).0, 400, "{q}");
    }
}

#[test]
fn digest_file_of_the_scan_equals_the_later_conversion() {
    let test = "digest_file_of_the_scan_equals_the_later_conversion";
    let Some(tmp) = corpus(test, 11) else { return };
    let dir = tmp.path();
    for format in ["ukvs", "cdxj", "cdx11"] {
        let ext = match format {
            "cdx11" => "cdx",
            other => other,
        };
        let idx = p(dir, &format!("index.{ext}"));
        let (a, b, c, d) = (
            p(dir, &format!("{format}.a")),
            p(dir, &format!("{format}.b")),
            p(dir, &format!("{format}.c")),
            p(dir, &format!("{format}.d")),
        );
        let (map, stats) = (p(dir, "map.ukvs"), p(dir, "stats.json"));
        // Beside the map and the statistics, on four threads.
        index(
            dir,
            format,
            &idx,
            &[
                "--digests",
                &a,
                "--mementomap",
                &map,
                "--stats",
                &stats,
                "-j",
                "4",
            ],
        );
        // Alone, one thread, runs spilled every 4 KiB.
        let other = p(dir, &format!("again.{ext}"));
        index(
            dir,
            format,
            &other,
            &["--digests", &b, "-j", "1", "--mem", "4K"],
        );
        assert_eq!(std::fs::read(&idx).unwrap(), std::fs::read(&other).unwrap());
        // Made later from the index, and from its ZipNum cluster.
        assert_ok(&util::run(
            &["digests", "-q", &idx, "-o", &c, "--mem", "4K"],
            b"",
        ));
        let cluster = p(dir, &format!("{format}.zip"));
        assert_ok(&util::run(
            &[
                "zipnum",
                "build",
                &idx,
                "-o",
                &cluster,
                "--lines-per-block",
                "7",
            ],
            b"",
        ));
        assert_ok(&util::run(&["digests", "-q", &cluster, "-o", &d], b""));
        let bytes = std::fs::read(&a).unwrap();
        for other in [&b, &c, &d] {
            assert!(
                bytes == std::fs::read(other).unwrap(),
                "{format}: {a} and {other} differ"
            );
        }
        // One line per capture with a digest, plus the headers; valid
        // UKVS, sorted.
        let text = String::from_utf8(bytes).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('!')).collect();
        assert!(lines.len() > 150, "{format}: {} lines", lines.len());
        assert!(text.starts_with(
            "!context [\"https://oduwsdl.github.io/contexts/ukvs\"]\n!fields {\"keys\":[\"digest\"],\"values\":[\"surt\",\"datetime\"]}\n"
        ));
        assert_ok(&util::run(&["validate", &a], b""));
        assert!(lines.windows(2).all(|w| w[0] <= w[1]));
    }
}

/// The line of the index whose URL is `url`, as JSON with its timestamp.
fn line_of(cdxj: &str, url: &str) -> serde_json::Map<String, Value> {
    for line in std::fs::read_to_string(cdxj).unwrap().lines() {
        let mut parts = line.splitn(3, ' ');
        let (_, ts, json) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let mut o: serde_json::Map<String, Value> = serde_json::from_str(json).unwrap();
        if o.get("url").map(s).as_deref() == Some(url) {
            o.insert("timestamp".into(), ts.into());
            return o;
        }
    }
    panic!("no line for {url} in {cdxj}");
}

/// `orig.filename`, `orig.offset`, `orig.length` of a JSON answer line.
fn orig(o: &serde_json::Map<String, Value>) -> (String, String, String) {
    let f = |n: &str| o.get(n).map(s).unwrap_or_else(|| "absent".into());
    (f("orig.filename"), f("orig.offset"), f("orig.length"))
}

#[test]
fn revisits_of_another_url_resolve_to_their_original() {
    let test = "revisits_of_another_url_resolve_to_their_original";
    let Some(tmp) = corpus(test, 3) else { return };
    let dir = tmp.path();
    let (ukvs, udig) = (p(dir, "idx.ukvs"), p(dir, "u.dig"));
    let (cdxj, cdig) = (p(dir, "idx.cdxj"), p(dir, "c.dig"));
    index(dir, "ukvs", &ukvs, &["--digests", &udig]);
    index(dir, "cdxj", &cdxj, &["--digests", &cdig]);
    let o = line_of(&cdxj, "http://orig.example/a");
    let want = (s(&o["filename"]), s(&o["offset"]), s(&o["length"]));
    let dash = ("-".to_string(), "-".to_string(), "-".to_string());

    let server = Server::start(&[
        "--quiet".to_string(),
        format!("u={ukvs}"),
        format!("ud={ukvs}"),
        format!("ud=digests:{udig}"),
        format!("c={cdxj}"),
        format!("cd={cdxj}"),
        format!("cd=digests:{cdig}"),
    ]);
    let agent = agent();
    let ask = |coll: &str, url: &str| {
        let q = format!("/{coll}/cdx?url={url}&resolveRevisits=true&output=json");
        let (status, _, body) = get(&agent, &server.url(&q));
        assert_eq!(status, 200, "{q}");
        let lines: Vec<serde_json::Map<String, Value>> = String::from_utf8_lossy(&body)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "{q}: {lines:?}");
        lines.into_iter().next().unwrap()
    };
    // `b` names its original: found by URL and date in the ukvs index,
    // which keeps the refers-to fields, with or without a digest file.
    // `c` names nothing: only a digest file finds it. The cdxj index
    // keeps no refers-to fields: a digest file finds both; without one
    // the answer is pywb's (`-`, mime kept).
    let cases = [
        ("u", "http://copy.example/b", &want),
        ("u", "http://copy.example/c", &dash),
        ("ud", "http://copy.example/b", &want),
        ("ud", "http://copy.example/c", &want),
        ("c", "http://copy.example/b", &dash),
        ("c", "http://copy.example/c", &dash),
        ("cd", "http://copy.example/b", &want),
        ("cd", "http://copy.example/c", &want),
    ];
    for (coll, url, expect) in cases {
        let got = ask(coll, url);
        assert_eq!(&orig(&got), expect, "{coll} {url}");
        // A resolved revisit takes the original's mime and status, as
        // pywb gives a revisit it resolves.
        let mime = got.get("mime").map(s).unwrap();
        if *expect == want {
            assert_eq!(mime, "text/html", "{coll} {url}");
        } else {
            assert_eq!(mime, "warc/revisit", "{coll} {url}");
        }
    }

    // The same from `ukvs lookup --resolve-revisits`.
    let lookup = |args: &[&str]| {
        let mut a = vec!["lookup", "--resolve-revisits", "--output", "json"];
        a.extend_from_slice(args);
        let out = util::run(&a, b"");
        assert_ok(&out);
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<serde_json::Map<String, Value>> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "{args:?}: {text}");
        orig(&lines[0])
    };
    assert_eq!(lookup(&[&ukvs, "http://copy.example/b"]), want);
    assert_eq!(lookup(&[&ukvs, "http://copy.example/c"]), dash);
    assert_eq!(
        lookup(&["--digests", &udig, &ukvs, "http://copy.example/c"]),
        want
    );
    assert_eq!(lookup(&[&cdxj, "http://copy.example/b"]), dash);
    assert_eq!(
        lookup(&["--digests", &cdig, &cdxj, "http://copy.example/b"]),
        want
    );
    assert_eq!(
        lookup(&["--digests", &cdig, &cdxj, "http://copy.example/c"]),
        want
    );

    // Revisits of their own URL: every one the corpus has resolves to the
    // first capture of its URL with its digest, from the server and the
    // lookup alike, as pywb resolves them.
    let scan = std::fs::read_to_string(&cdxj).unwrap();
    let mut same_url = 0;
    for line in scan.lines() {
        let mut parts = line.splitn(3, ' ');
        let (_, ts, json) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let rec: serde_json::Map<String, Value> = serde_json::from_str(json).unwrap();
        let url = s(&rec["url"]);
        if s(&rec["mime"]) != "warc/revisit" || !url.contains("://h") {
            continue;
        }
        let first = scan
            .lines()
            .map(|l| {
                let json = l.splitn(3, ' ').nth(2).unwrap();
                serde_json::from_str::<serde_json::Map<String, Value>>(json).unwrap()
            })
            .find(|r| {
                r["url"] == rec["url"]
                    && r["digest"] == rec["digest"]
                    && s(&r["mime"]) != "warc/revisit"
            })
            .expect("the original of a same-URL revisit");
        let want = (
            s(&first["filename"]),
            s(&first["offset"]),
            s(&first["length"]),
        );
        let q = format!("/cd/cdx?url={url}&resolveRevisits=true&output=json&from={ts}&to={ts}");
        let (_, _, body) = get(&agent, &server.url(&q));
        let got: Vec<(String, String, String)> = String::from_utf8_lossy(&body)
            .lines()
            .map(|l| orig(&serde_json::from_str(l).unwrap()))
            .collect();
        assert!(got.contains(&want), "{q}: {got:?}, want {want:?}");
        let out = util::run(
            &[
                "lookup",
                "--resolve-revisits",
                "--output",
                "json",
                "--from",
                ts,
                "--to",
                ts,
                &cdxj,
                &url,
            ],
            b"",
        );
        let got: Vec<(String, String, String)> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| orig(&serde_json::from_str(l).unwrap()))
            .collect();
        assert!(
            got.contains(&want),
            "lookup {url} {ts}: {got:?}, want {want:?}"
        );
        same_url += 1;
    }
    assert!(same_url >= 5, "only {same_url} same-URL revisits");

    // Without refers-to fields or a digest file, the answer is pywb's own,
    // byte for byte (same-URL revisits resolved, the others `-`).
    if util::ensure_pywb(test) {
        std::fs::write(
            dir.join("config.yaml"),
            format!("collections:\n  c: {cdxj}\n"),
        )
        .unwrap();
        let (_pywb, pywb) = start_pywb(dir, "/c/cdx?url=copy.example/b").expect("start pywb");
        for q in [
            "/c/cdx?url=copy.example/b&resolveRevisits=true",
            "/c/cdx?url=copy.example/*&resolveRevisits=true&output=json",
            "/c/cdx?url=*.example&resolveRevisits=true&output=json",
            "/c/cdx?url=*.example&resolveRevisits=true&output=text&fl=urlkey,orig.offset,mime",
        ] {
            let theirs = get(&agent, &format!("{pywb}{q}"));
            let ours = get(&agent, &server.url(q));
            assert_eq!(theirs.0, 200, "{q}");
            assert!(theirs == ours, "{q}: pywb and ukvs serve differ");
        }
    }
}

#[test]
fn pywb_replays_a_revisit_of_another_url_through_our_cdx_server() {
    let test = "pywb_replays_a_revisit_of_another_url_through_our_cdx_server";
    if !util::ensure_pywb(test) {
        return;
    }
    let Some(tmp) = corpus(test, 5) else { return };
    let dir = tmp.path();
    let ukvs = p(dir, "idx.ukvs");
    index(dir, "ukvs", &ukvs, &[]);
    let server = Server::start(&["--quiet".to_string(), format!("u={ukvs}")]);
    std::fs::write(
        dir.join("config.yaml"),
        format!(
            "collections:\n  remote: cdx+http://{}/u/cdx\narchive_paths:\n  - {}/\n",
            server.addr,
            dir.display()
        ),
    )
    .unwrap();
    let (_pywb, pywb) =
        start_pywb(dir, "/remote/20150505050505id_/http://orig.example/a").expect("start pywb");
    let agent = agent();
    let original = get(
        &agent,
        &format!("{pywb}/remote/20150505050505id_/http://orig.example/a"),
    );
    assert_eq!(original.0, 200);
    assert_eq!(original.2, AGNOSTIC_BODY);
    // pywb reads the revisit, asks our server for the capture it refers
    // to (by URL, closest to the refers-to date, filtered by digest) and
    // replays that payload.
    let revisit = get(
        &agent,
        &format!("{pywb}/remote/20160606060606id_/http://copy.example/b"),
    );
    assert_eq!(revisit.0, 200, "{}", String::from_utf8_lossy(&revisit.2));
    assert_eq!(revisit.2, AGNOSTIC_BODY);
}

/// On a live collection the original of a revisit of another URL is
/// found in its delta too: the index less the original's line as the
/// base, that line POSTed; deleted again, the revisit is left as pywb
/// leaves it.
#[test]
fn a_live_collection_resolves_revisits_to_originals_posted_to_it() {
    let test = "a_live_collection_resolves_revisits_to_originals_posted_to_it";
    let Some(tmp) = corpus(test, 3) else { return };
    let dir = tmp.path();
    let (ukvs, cdxj) = (p(dir, "idx.ukvs"), p(dir, "idx.cdxj"));
    index(dir, "ukvs", &ukvs, &[]);
    index(dir, "cdxj", &cdxj, &[]);
    let o = line_of(&cdxj, "http://orig.example/a");
    let want = (s(&o["filename"]), s(&o["offset"]), s(&o["length"]));
    let dash = ("-".to_string(), "-".to_string(), "-".to_string());
    let text = std::fs::read_to_string(&ukvs).unwrap();
    let (posted, rest): (Vec<&str>, Vec<&str>) = text
        .lines()
        .partition(|l| l.starts_with("example,orig)/a "));
    assert_eq!(posted.len(), 1, "{text}");
    let base = p(dir, "base.ukvs");
    std::fs::write(&base, rest.join("\n") + "\n").unwrap();
    let data = p(dir, "data");
    let server = Server::start(&[
        "--quiet".to_string(),
        format!("l={base}"),
        "--data".to_string(),
        data,
    ]);
    let agent = agent();
    let ask = || {
        let q = "/l/cdx?url=http://copy.example/b&resolveRevisits=true&output=json";
        let (status, _, body) = get(&agent, &server.url(q));
        assert_eq!(status, 200, "{q}");
        let line = String::from_utf8_lossy(&body)
            .lines()
            .next()
            .map(str::to_string);
        orig(&serde_json::from_str(&line.unwrap_or_default()).unwrap())
    };
    assert_eq!(ask(), dash, "the base alone has no original");
    let send = |path: &str| {
        let mut res = agent
            .post(&server.url(path))
            .send(format!("{}\n", posted[0]).as_bytes())
            .unwrap();
        let answer = res.body_mut().read_to_string().unwrap();
        assert_eq!(res.status().as_u16(), 200, "{path}: {answer}");
    };
    send("/l");
    assert_eq!(ask(), want, "the original posted");
    send("/l/delete");
    assert_eq!(ask(), dash, "the original deleted");
}
