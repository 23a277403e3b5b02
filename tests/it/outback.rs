//! OutbackCDX's query form (`GET /NAME?url=...`, `?q=...`): answers
//! compared with what OutbackCDX's code gives, worked out here from the
//! index lines by a plain model (scan everything, select, sort), over
//! every kind of collection (a sorted file, a directory, a ZipNum
//! cluster, a delta alone, a file with lines added and deleted), and
//! with pywb's API (`/NAME/cdx`) where both apply.

use std::collections::BTreeMap;
use std::path::Path;

use crate::serve::{agent, Server};
use crate::util::{self, Rng};

fn start(args: &[&str]) -> Server {
    Server::start(&[&["--quiet"], args].concat())
}

fn get(agent: &ureq::Agent, url: &str) -> (u16, String) {
    let mut res = agent
        .get(url)
        .call()
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = res.status().as_u16();
    (status, res.body_mut().read_to_string().unwrap_or_default())
}

fn post(agent: &ureq::Agent, url: &str, body: &str) -> (u16, String) {
    let mut res = agent
        .post(url)
        .send(body.as_bytes())
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = res.status().as_u16();
    (status, res.body_mut().read_to_string().unwrap_or_default())
}

/// One CDX11 line as OutbackCDX holds it: its eleven columns.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Cap {
    cols: Vec<String>,
}

const NAMES: [&str; 11] = [
    "urlkey",
    "timestamp",
    "original",
    "mimetype",
    "statuscode",
    "digest",
    "redirecturl",
    "robotflags",
    "length",
    "offset",
    "filename",
];

impl Cap {
    fn parse(line: &str) -> Cap {
        let cols: Vec<String> = line.split(' ').map(str::to_string).collect();
        assert_eq!(cols.len(), 11, "{line}");
        Cap { cols }
    }

    fn line(&self) -> String {
        self.cols.join(" ")
    }

    fn key(&self) -> &str {
        &self.cols[0]
    }

    fn ts(&self) -> u64 {
        self.cols[1].parse().unwrap()
    }

    /// A field by any of OutbackCDX's names, as text.
    fn field(&self, name: &str) -> String {
        let alias = match name {
            "url" => "original",
            "mime" => "mimetype",
            "status" => "statuscode",
            "redirect" => "redirecturl",
            n => n,
        };
        if alias == "range" {
            let o: u64 = self.cols[9].parse().unwrap();
            let l: u64 = self.cols[8].parse().unwrap();
            return format!("bytes={o}-{}", o + l - 1);
        }
        let i = NAMES.iter().position(|n| *n == alias).expect(name);
        self.cols[i].clone()
    }

    /// A field as OutbackCDX's JSON holds it: numbers for the numeric
    /// fields.
    fn json(&self, name: &str) -> serde_json::Value {
        let v = self.field(name);
        let numeric = matches!(
            name,
            "timestamp" | "statuscode" | "status" | "length" | "offset"
        );
        match v.parse::<i64>() {
            Ok(n) if numeric => serde_json::Value::from(n),
            _ => serde_json::Value::from(v),
        }
    }
}

/// Seconds from 1970, counted the long way (days of each year and month
/// before the date), to order `closest` answers.
fn seconds(ts: u64) -> i64 {
    let s = format!("{ts:014}");
    let n = |a: usize, b: usize| s[a..b].parse::<i64>().unwrap();
    let (y, m, d) = (n(0, 4), n(4, 6), n(6, 8));
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mut days = 0;
    for year in 1970..y {
        days += if leap(year) { 366 } else { 365 };
    }
    let months = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    for (i, len) in months.iter().enumerate().take((m - 1) as usize) {
        days += len + i64::from(i == 1 && leap(y));
    }
    days += d - 1;
    days * 86400 + n(8, 10) * 3600 + n(10, 12) * 60 + n(12, 14)
}

/// A query as the model reads it.
#[derive(Default, Clone)]
struct Ask {
    key: String,
    url_ends_slash: bool,
    match_type: &'static str,
    sort: &'static str,
    closest: Option<u64>,
    from: Option<u64>,
    to: Option<u64>,
    /// (substring?, invert, field, value)
    filters: Vec<(bool, bool, String, String)>,
    collapse: Option<(String, Option<usize>)>,
    fl: Option<Vec<String>>,
    limit: Option<i64>,
}

/// What OutbackCDX answers to `ask` over `caps` (any order).
fn model(caps: &[Cap], ask: &Ask) -> Vec<Cap> {
    let mut all = caps.to_vec();
    // OutbackCDX's keys: urlkey, then the timestamp as a number.
    all.sort_by(|a, b| (a.key(), a.ts(), a.line()).cmp(&(b.key(), b.ts(), b.line())));
    let host = ask.key.split(")/").next().unwrap().to_string();
    let mut key = ask.key.clone();
    if ask.match_type == "prefix" && ask.url_ends_slash && !key.ends_with('/') {
        key.push('/');
    }
    let mut found: Vec<Cap> = all
        .into_iter()
        .filter(|c| match ask.match_type {
            "exact" => c.key() == key,
            "prefix" => c.key().starts_with(&key),
            "host" => c.key().starts_with(&format!("{host})/")),
            "domain" => c.key() >= host.as_str() && c.key() < format!("{host}-").as_str(),
            "range" => c.key() >= key.as_str() && c.key() < "~",
            other => panic!("{other}"),
        })
        .filter(|c| {
            ask.sort == "closest"
                || (ask.from.map_or(true, |f| c.ts() >= f) && ask.to.map_or(true, |t| c.ts() <= t))
        })
        .filter(|c| {
            ask.filters.iter().all(|(sub, inv, f, v)| {
                let val = c.field(f);
                let hit = if *sub {
                    val.contains(v.as_str())
                } else {
                    regex::Regex::new(&format!("^(?:{v})$"))
                        .unwrap()
                        .is_match(&val)
                };
                hit != *inv
            })
        })
        .collect();
    match ask.sort {
        "reverse" => found.reverse(),
        "closest" => {
            let at = seconds(ask.closest.unwrap());
            // Nearest first; of two as near, the later (no two captures
            // of a URL share a second here).
            found.sort_by_key(|c| ((seconds(c.ts()) - at).abs(), c.ts() < ask.closest.unwrap()));
        }
        _ => {}
    }
    if let Some((f, n)) = &ask.collapse {
        let mut last: Option<String> = None;
        found.retain(|c| {
            let mut t = c.field(f);
            if let Some(n) = n {
                t = t.chars().take(*n).collect();
            }
            let keep = last.as_ref() != Some(&t);
            last = Some(t);
            keep
        });
    }
    let limit = ask.limit.unwrap_or(i64::MAX);
    found.truncate(usize::try_from(limit.max(0)).unwrap_or(usize::MAX));
    found
}

/// The model's answer as CDX text.
fn text(found: &[Cap], ask: &Ask) -> String {
    found
        .iter()
        .map(|c| match &ask.fl {
            None => format!("{}\n", c.line()),
            Some(fl) => format!(
                "{}\n",
                fl.iter().map(|f| c.field(f)).collect::<Vec<_>>().join(" ")
            ),
        })
        .collect()
}

fn json(found: &[Cap], ask: &Ask) -> serde_json::Value {
    let fl: Vec<String> = ask
        .fl
        .clone()
        .unwrap_or_else(|| NAMES.iter().map(|s| s.to_string()).collect());
    serde_json::Value::Array(
        found
            .iter()
            .map(|c| serde_json::Value::Array(fl.iter().map(|f| c.json(f)).collect()))
            .collect(),
    )
}

/// The query string of `ask`, with `url` as the client gives it.
fn query_string(url: &str, ask: &Ask) -> String {
    let enc = |s: &str| -> String { form_urlencoded::byte_serialize(s.as_bytes()).collect() };
    let mut q = format!("url={}", enc(url));
    if ask.match_type != "exact" {
        q.push_str(&format!("&matchType={}", ask.match_type));
    }
    if !ask.sort.is_empty() {
        q.push_str(&format!("&sort={}", ask.sort));
    }
    if let Some(c) = ask.closest {
        q.push_str(&format!("&closest={c}"));
    }
    if let Some(f) = ask.from {
        q.push_str(&format!("&from={}", f.to_string().trim_end_matches('0')));
    }
    if let Some(t) = ask.to {
        q.push_str(&format!("&to={t}"));
    }
    for (sub, inv, f, v) in &ask.filters {
        let spec = format!(
            "{}{}{f}:{v}",
            if *sub { "~" } else { "" },
            if *inv { "!" } else { "" }
        );
        q.push_str(&format!("&filter={}", enc(&spec)));
    }
    if let Some((f, n)) = &ask.collapse {
        match n {
            Some(n) => q.push_str(&format!("&collapse={f}:{n}")),
            None => q.push_str(&format!("&collapse={f}")),
        }
    }
    if let Some(fl) = &ask.fl {
        q.push_str(&format!("&fl={}", fl.join(",")));
    }
    if let Some(l) = ask.limit {
        q.push_str(&format!("&limit={l}"));
    }
    q
}

/// Generated captures: a few hosts and paths, no two of a URL in one
/// second.
fn generated(rng: &mut Rng, n: usize) -> Vec<Cap> {
    let mut by_id = BTreeMap::new();
    while by_id.len() < n {
        let host = rng.below(5);
        let path = rng.below(8);
        let ts = format!(
            "20{:02}{:02}{:02}{:02}{:02}{:02}",
            10 + rng.below(10),
            1 + rng.below(12),
            1 + rng.below(28),
            rng.below(24),
            rng.below(60),
            rng.below(60)
        );
        let key = format!("example,host{host})/p{path}");
        let line = format!(
            "{key} {ts} http://host{host}.example/p{path} {} {} D{}X - - {} {} crawl-{}.warc.gz",
            ["text/html", "image/png"][rng.below(2) as usize],
            [200, 301, 404][rng.below(3) as usize],
            rng.below(4),
            100 + rng.below(900),
            rng.below(100_000),
            rng.below(3)
        );
        by_id.entry((key, ts)).or_insert_with(|| Cap::parse(&line));
    }
    by_id.into_values().collect()
}

fn write_cdx(path: &Path, caps: &[Cap]) {
    let mut lines: Vec<String> = caps.iter().map(Cap::line).collect();
    lines.sort();
    let mut text = String::from(" CDX N b a m s k r M S V g\n");
    for l in lines {
        text.push_str(&l);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

/// The queries every collection is asked, with the URL a client sends.
fn asks(caps: &[Cap], rng: &mut Rng) -> Vec<(String, Ask)> {
    let mut out = Vec::new();
    let exact = |h: u64, p: u64| {
        (
            format!("http://host{h}.example/p{p}"),
            Ask {
                key: format!("example,host{h})/p{p}"),
                match_type: "exact",
                ..Ask::default()
            },
        )
    };
    for i in 0..12 {
        let (url, mut a) = exact(rng.below(5), rng.below(8));
        match i % 12 {
            0 => {}
            1 => a.sort = "reverse",
            2 => {
                a.sort = "reverse";
                a.from = Some(20150000000000);
                a.to = Some(20171231235959);
            }
            3 | 4 => {
                a.sort = "closest";
                let near = caps[rng.below(caps.len() as u64) as usize].ts();
                // A real second, near a capture but not on it.
                a.closest = Some(near - near % 100 + if near % 100 == 30 { 31 } else { 30 });
                a.limit = Some(3 + i64::from(i == 4) * 100);
            }
            5 => {
                a.from = Some(20130000000000);
                a.to = Some(20160630000000);
            }
            6 => a.filters = vec![(false, false, "statuscode".into(), "[23]0.".into())],
            7 => a.filters = vec![(true, true, "mimetype".into(), "html".into())],
            8 => a.collapse = Some(("digest".into(), None)),
            9 => a.fl = Some(vec!["timestamp".into(), "status".into(), "range".into()]),
            10 => a.limit = Some(2),
            _ => a.limit = Some(-1),
        }
        out.push((url, a));
    }
    let other = |url: &str, key: &str, m: &'static str| {
        (
            url.to_string(),
            Ask {
                key: key.to_string(),
                match_type: m,
                ..Ask::default()
            },
        )
    };
    out.push(other(
        "http://host1.example/p",
        "example,host1)/p",
        "prefix",
    ));
    out.push(other("host2.example", "example,host2)/", "host"));
    out.push(other("example", "example", "domain"));
    out.push(other("host3.example", "example,host3)/", "domain"));
    out.push(other(
        "http://host2.example/p5",
        "example,host2)/p5",
        "range",
    ));
    let (url, mut a) = other("http://host4.example/", "example,host4)/", "prefix");
    a.url_ends_slash = true;
    a.collapse = Some(("timestamp".into(), Some(4)));
    out.push((url, a));
    let (url, mut a) = other("host0.example", "example,host0)/", "host");
    a.filters = vec![(false, false, "filename".into(), "crawl-[01].warc.gz".into())];
    a.limit = Some(9);
    out.push((url, a));
    out
}

/// Asks `server`'s collection `name` every query and compares with the
/// model of `caps`; with `pywb`, also with `/NAME/cdx` where both apply.
fn check(server: &Server, name: &str, caps: &[Cap], asks: &[(String, Ask)], pywb: bool) {
    let agent = agent();
    for (url, ask) in asks {
        let qs = query_string(url, ask);
        let want = model(caps, ask);
        let (s, got) = get(&agent, &server.url(&format!("/{name}?{qs}")));
        assert_eq!(s, 200, "{name}?{qs}: {got}");
        assert_eq!(got, text(&want, ask), "{name}?{qs}");
        let (s, got) = get(&agent, &server.url(&format!("/{name}?{qs}&output=json")));
        assert_eq!(s, 200, "{name}?{qs}: {got}");
        let got: serde_json::Value = serde_json::from_str(&got).unwrap();
        assert_eq!(got, json(&want, ask), "{name}?{qs}&output=json");
        // pywb's API gives the same lines for the queries both take the
        // same way (not closest, collapse, OutbackCDX's filters or range).
        let same = ask.sort != "closest"
            && ask.collapse.is_none()
            && ask.filters.is_empty()
            && ask.fl.is_none()
            && ask.match_type != "range"
            && (ask.match_type != "domain" || ask.key.contains(','))
            && ask.limit.map_or(true, |l| l >= 0);
        if pywb && same {
            let mut pq = qs.replace("sort=reverse", "reverse=true");
            pq.push_str("&output=text&nosource=true");
            let (s, p) = get(&agent, &server.url(&format!("/{name}/cdx?{pq}")));
            assert_eq!(s, 200, "{name}/cdx?{pq}");
            assert_eq!(text(&want, ask), p, "{name}/cdx?{pq} (pywb's API)");
        }
    }
}

#[test]
fn every_kind_of_collection_answers_outbackcdx_queries_as_outbackcdx() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x0bac_cdc0_ffee);
    let caps = generated(&mut rng, 400);
    // A sorted file; a directory of two; a ZipNum cluster.
    let file = dir.path().join("all.cdx");
    write_cdx(&file, &caps);
    let split = dir.path().join("split");
    std::fs::create_dir(&split).unwrap();
    let (a, b): (Vec<Cap>, Vec<Cap>) = caps.iter().cloned().partition(|c| c.ts() % 2 == 0);
    write_cdx(&split.join("a.cdx"), &a);
    write_cdx(&split.join("b.cdx"), &b);
    let cluster = dir.path().join("cluster");
    util::assert_ok(&util::run(
        &[
            "zipnum",
            "build",
            "--lines-per-block",
            "7",
            "-o",
            cluster.to_str().unwrap(),
            file.to_str().unwrap(),
        ],
        b"",
    ));
    // A live collection over a base of 300 captures: 150 more posted,
    // 50 of the base and 50 of the posted deleted.
    let more = generated(&mut Rng(77), 150);
    let more: Vec<Cap> = more
        .into_iter()
        .filter(|m| !caps.iter().any(|c| c.key() == m.key() && c.ts() == m.ts()))
        .collect();
    let base = dir.path().join("base.cdx");
    write_cdx(&base, &caps[..300]);
    let data = dir.path().join("data");
    let server = start(&[
        "--data",
        data.to_str().unwrap(),
        &format!("file={}", file.display()),
        &format!("dir={}", split.display()),
        &format!("zip={}", cluster.display()),
        &format!("live={}", base.display()),
    ]);
    let agent = agent();
    let body = |cs: &[Cap]| -> String { cs.iter().map(|c| c.line() + "\n").collect() };
    let mut live: Vec<Cap> = caps[..300].to_vec();
    for chunk in caps[300..].chunks(30).chain(more.chunks(40)) {
        let (s, a) = post(&agent, &server.url("/live"), &body(chunk));
        assert_eq!((s, a), (200, format!("Added {} records\n", chunk.len())));
        live.extend_from_slice(chunk);
    }
    let gone: Vec<Cap> = live.iter().step_by(9).cloned().collect();
    let (s, _) = post(&agent, &server.url("/live/delete"), &body(&gone));
    assert_eq!(s, 200);
    live.retain(|c| !gone.contains(c));
    // And a collection that is a delta alone.
    for chunk in caps.chunks(100) {
        let (s, _) = post(&agent, &server.url("/posted"), &body(chunk));
        assert_eq!(s, 200);
    }
    let asks = asks(&caps, &mut rng);
    assert!(asks.len() > 15);
    for name in ["file", "dir", "zip", "posted"] {
        check(&server, name, &caps, &asks, name == "file");
    }
    check(&server, "live", &live, &asks, true);
    // The answers are not empty by chance.
    let hits: usize = asks.iter().map(|(_, a)| model(&caps, a).len()).sum();
    assert!(hits > 200, "{hits}");
}

#[test]
fn outbackcdx_integration_data_answers_its_queries_and_xml() {
    let data_dir = util::data_dir().join("outbackcdx");
    let mut caps = Vec::new();
    let mut bodies = Vec::new();
    for f in ["test1.cdx", "test2.cdx"] {
        let text = std::fs::read_to_string(data_dir.join(f)).unwrap();
        caps.extend(text.lines().skip(1).map(Cap::parse));
        bodies.push(text);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sorted.cdx");
    write_cdx(&file, &caps);
    let data = dir.path().join("data");
    let server = start(&[
        "--data",
        data.to_str().unwrap(),
        &format!("file={}", file.display()),
    ]);
    let agent = agent();
    for b in &bodies {
        let (s, a) = post(&agent, &server.url("/outback"), b);
        assert_eq!((s, a.as_str()), (200, "Added 3 records\n"));
    }
    let page = "http://data.webarchive.org.uk/crawl-test-site/";
    let page_key = "uk,org,webarchive,data)/crawl-test-site";
    let asks = vec![
        (
            page.to_string(),
            Ask {
                key: page_key.into(),
                match_type: "exact",
                ..Ask::default()
            },
        ),
        (
            page.to_string(),
            Ask {
                key: page_key.into(),
                match_type: "exact",
                sort: "closest",
                closest: Some(20161016214150),
                ..Ask::default()
            },
        ),
        (
            "gnu.org".to_string(),
            Ask {
                key: "org,gnu)/".into(),
                match_type: "domain",
                filters: vec![(true, false, "original".into(), "MANIFEST".into())],
                ..Ask::default()
            },
        ),
        (
            "metadata://gnu.org/software/wget/warc/".to_string(),
            Ask {
                key: "org,gnu)/software/wget/warc/".into(),
                url_ends_slash: true,
                match_type: "prefix",
                collapse: Some(("urlkey".into(), None)),
                ..Ask::default()
            },
        ),
        (
            "http://data.webarchive.org.uk/".to_string(),
            Ask {
                key: "uk,org,webarchive,data)/".into(),
                match_type: "range",
                fl: Some(vec!["urlkey".into(), "statuscode".into(), "range".into()]),
                ..Ask::default()
            },
        ),
    ];
    for name in ["file", "outback"] {
        check(&server, name, &caps, &asks, name == "file");
    }
    // OpenWayback's XML query: a URL's captures, then the page's request.
    let q = format!(
        "q=type:urlquery+url:{}",
        form_urlencoded::byte_serialize(page.as_bytes()).collect::<String>()
    );
    let want_results: String = model(&caps, &asks[0].1)
        .iter()
        .map(|c| {
            format!(
                "<result><compressedoffset>{}</compressedoffset><compressedendoffset>{}</compressedendoffset>\
                 <mimetype>{}</mimetype><file>{}</file><redirecturl>{}</redirecturl><urlkey>{}</urlkey>\
                 <digest>{}</digest><httpresponsecode>{}</httpresponsecode><robotflags>{}</robotflags>\
                 <url>{}</url><capturedate>{}</capturedate></result>",
                c.field("offset"),
                c.field("length"),
                c.field("mimetype"),
                c.field("filename"),
                c.field("redirecturl"),
                c.field("urlkey"),
                c.field("digest"),
                c.field("statuscode"),
                c.field("robotflags"),
                c.field("original"),
                c.field("timestamp")
            )
        })
        .collect();
    let request = |kind: &str, rtype: &str, first: u64, asked: u64, n: u64, of: u64, url: &str| {
        format!(
            "<request><startdate>19960101000000</startdate><enddate>NOW</enddate><type>{kind}</type>\
             <firstreturned>{first}</firstreturned><url>{url}</url><resultsrequested>{asked}</resultsrequested>\
             <resultstype>{rtype}</resultstype><numreturned>{n}</numreturned><numresults>{of}</numresults></request>"
        )
    };
    let head = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><wayback>";
    let now = regex::Regex::new("<enddate>[0-9]{14}</enddate>").unwrap();
    let xml = |name: &str, q: &str| {
        let (s, body) = get(&agent, &server.url(&format!("/{name}?{q}")));
        assert_eq!(s, 200, "{q}");
        now.replace(&body, "<enddate>NOW</enddate>").into_owned()
    };
    for name in ["file", "outback"] {
        assert_eq!(
            xml(name, &q),
            format!(
                "{head}<results>{want_results}</results>{}</wayback>",
                request("urlquery", "resultstypecapture", 0, 10000, 2, 2, page_key)
            )
        );
        // The second page of one result each.
        let second = xml(name, &format!("{q}&count=1&start_page=2"));
        assert!(second.contains("<capturedate>20161016214156</capturedate>"));
        assert!(!second.contains("<capturedate>20161016214133</capturedate>"));
        assert!(second.ends_with(&format!(
            "{}</wayback>",
            request("urlquery", "resultstypecapture", 1, 1, 1, 2, page_key)
        )));
        // URLs under a prefix, one result each: versions count digests.
        let prefix = xml(
            name,
            "q=type:prefixquery+url:metadata%3A%2F%2Fgnu.org%2Fsoftware%2F",
        );
        assert_eq!(
            prefix,
            format!(
                "{head}<results><result><urlkey>org,gnu)/software/wget/warc/manifest.txt</urlkey>\
                 <originalurl>metadata://gnu.org/software/wget/warc/MANIFEST.txt</originalurl>\
                 <numversions>2</numversions><numcaptures>2</numcaptures>\
                 <firstcapturets>20161016214133</firstcapturets><lastcapturets>20161016214156</lastcapturets></result>\
                 <result><urlkey>org,gnu)/software/wget/warc/wget_arguments.txt</urlkey>\
                 <originalurl>metadata://gnu.org/software/wget/warc/wget_arguments.txt</originalurl>\
                 <numversions>2</numversions><numcaptures>2</numcaptures>\
                 <firstcapturets>20161016214133</firstcapturets><lastcapturets>20161016214156</lastcapturets></result>\
                 </results>{}</wayback>",
                // The key as Python's `surt` gives it: no trailing `/`.
                request("prefixquery", "resultstypeurl", 0, 10000, 2, 2, "org,gnu)/software")
            )
        );
        assert_eq!(
            xml(name, "q=type:urlquery+url:http%3A%2F%2Fnowhere.example%2F"),
            format!(
                "{head}<error><title>Resource Not In Archive</title><message>The Resource you \
                 requested is not in this archive.</message></error></wayback>"
            )
        );
        assert!(xml(name, "q=type:replay+url:x").contains("<title>Unsupported query type</title>"));
    }
    // GSON's layout, byte for byte, on one known answer.
    let (_, j) = get(
        &agent,
        &server.url(&format!(
            "/outback?url={page}&output=json&fl=timestamp,original&limit=1"
        )),
    );
    assert_eq!(
        j,
        "[\n  [\n    20161016214133,\n    \"http://data.webarchive.org.uk/crawl-test-site/\"\n  ]\n]"
    );
}

#[test]
fn bad_parameters_get_400_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.cdx");
    write_cdx(&file, &generated(&mut Rng(5), 10));
    let server = start(&[&format!("a={}", file.display())]);
    let agent = agent();
    for (q, says) in [
        ("url=a&matchType=wide", "matchType"),
        ("url=a&sort=random", "sort"),
        ("url=a&limit=ten", "limit"),
        ("url=a&from=yesterday", "from"),
        ("url=a&closest=now&sort=closest", "closest"),
        ("url=a&fl=urlkey,size", "size"),
        ("url=a&filter=status", "Invalid filter"),
        ("url=a&filter=statuscode:(", "regular expression"),
        ("url=a&collapse=timestamp:four", "collapse"),
        ("url=a&urlkey=b", "exactly one"),
        ("url=a&matchType=prefix&sort=reverse", "exact"),
        ("url=a&matchType=host&from=2010", "exact"),
        ("q=type:urlquery", "url"),
        ("q=type:urlquery+url:x&count=many", "count"),
        ("q=urlquery", "name:value"),
    ] {
        let (s, body) = get(&agent, &server.url(&format!("/a?{q}")));
        assert_eq!(s, 400, "{q}: {body}");
        assert!(body.contains(says), "{q}: {body}");
    }
    let (s, body) = get(&agent, &server.url("/a"));
    assert_eq!(s, 200);
    assert!(body.contains("collection a"), "{body}");
}

/// A server started here, on every address, its log kept in a file.
struct Logged {
    _child: util::KillOnDrop,
    port: u16,
    log: std::path::PathBuf,
}

fn start_logged(dir: &Path, args: &[&str]) -> Logged {
    let port = util::free_port();
    let log = dir.join(format!("serve-{port}.log"));
    let child = util::KillOnDrop(
        std::process::Command::new(util::bin())
            .arg("serve")
            .args(["--bind", &format!("0.0.0.0:{port}")])
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let agent = agent();
    for _ in 0..200 {
        if agent
            .get(&format!("http://127.0.0.1:{port}/health"))
            .call()
            .is_ok()
        {
            return Logged {
                _child: child,
                port,
                log,
            };
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!(
        "the server did not start: {:?}",
        std::fs::read_to_string(&log)
    );
}

/// This machine's address on its default route, if it has one that is
/// not loopback (no packet is sent).
fn outside_address() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.77:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

fn post_with(agent: &ureq::Agent, url: &str, auth: Option<&str>, body: &str) -> (u16, String) {
    let mut req = agent.post(url);
    if let Some(a) = auth {
        req = req.header("Authorization", a);
    }
    let mut res = req
        .send(body.as_bytes())
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = res.status().as_u16();
    let www = res
        .headers()
        .get("WWW-Authenticate")
        .map(|v| v.to_str().unwrap_or_default().to_string());
    let body = res.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        format!("{}{body}", www.map_or(String::new(), |w| format!("[{w}] "))),
    )
}

#[test]
fn writes_need_the_token_or_loopback_and_read_only_collections_refuse_them() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "s3cr3t-Token_value";
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{secret}\n")).unwrap();
    let config = dir.path().join("config");
    std::fs::write(&config, "# no writes here\nfrozen=writes:off\n").unwrap();
    let line = generated(&mut Rng(9), 1)[0].line() + "\n";
    let agent = agent();
    let with_token = start_logged(
        dir.path(),
        &[
            "--data",
            dir.path().join("d1").to_str().unwrap(),
            "--write-token",
            token.to_str().unwrap(),
            "--read-only",
            "ro",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    let url = |path: &str| format!("http://127.0.0.1:{}{path}", with_token.port);
    let count = |name: &str| {
        let (s, t) = get(
            &agent,
            &url(&format!("/{name}?url=example&matchType=domain")),
        );
        assert_eq!(s, 200, "{t}");
        t.lines().count()
    };
    // No token: 401 and the scheme to use; loopback is not enough.
    let (s, said) = post_with(&agent, &url("/web"), None, &line);
    assert_eq!(s, 401, "{said}");
    assert!(said.starts_with("[Bearer] "), "{said}");
    for wrong in [
        "Bearer s3cr3t-Token_valuf",
        "Bearer s3cr3t",
        "Bearer s3cr3t-Token_value-and-more",
        "Basic czNjcjN0",
        "Bearer",
    ] {
        let (s, said) = post_with(&agent, &url("/web"), Some(wrong), &line);
        assert!(s == 401 || s == 403, "{wrong}: {s} {said}");
        let (s, said) = post_with(&agent, &url("/web/delete"), Some(wrong), &line);
        assert!(s == 401 || s == 403, "{wrong}: {s} {said}");
    }
    assert_eq!(
        get(&agent, &url("/web")).0,
        404,
        "a refused POST created nothing"
    );
    let right = format!("Bearer {secret}");
    let (s, said) = post_with(&agent, &url("/web"), Some(&right), &line);
    assert_eq!((s, said.as_str()), (200, "Added 1 records\n"));
    let (s, _) = post_with(
        &agent,
        &url("/web"),
        Some(&format!("bearer  {secret} ")),
        &line,
    );
    assert_eq!(s, 200);
    assert_eq!(count("web"), 1);
    // Read-only collections refuse even the token: by --read-only and by
    // the config.
    for name in ["ro", "frozen"] {
        for path in [format!("/{name}"), format!("/{name}/delete")] {
            let (s, said) = post_with(&agent, &url(&path), Some(&right), &line);
            assert_eq!(s, 403, "{path}: {said}");
            assert!(said.contains("read-only"), "{said}");
        }
    }
    let (s, said) = post_with(&agent, &url("/web/delete"), Some(&right), &line);
    assert_eq!((s, said.as_str()), (200, "Deleted 1 records\n"));
    assert_eq!(count("web"), 0);
    let log = with_token.log.clone();
    drop(with_token);
    let log = std::fs::read_to_string(log).unwrap();
    assert!(log.contains("POST /web"), "{log}");
    assert!(!log.contains("s3cr3t"), "the token is in the log: {log}");

    // No token: loopback writes, other addresses are refused.
    let open = start_logged(
        dir.path(),
        &["--data", dir.path().join("d2").to_str().unwrap()],
    );
    let (s, said) = post_with(
        &agent,
        &format!("http://127.0.0.1:{}/web", open.port),
        None,
        &line,
    );
    assert_eq!((s, said.as_str()), (200, "Added 1 records\n"));
    match outside_address() {
        None => eprintln!("SKIPPED the non-loopback part: no address but loopback here"),
        Some(ip) => {
            let host = match ip {
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
                v4 => v4.to_string(),
            };
            let (s, said) = post_with(
                &agent,
                &format!("http://{host}:{}/web/delete", open.port),
                None,
                &line,
            );
            assert_eq!(s, 403, "{said}");
            assert!(said.contains("loopback"), "{said}");
            // Reads stay open to everyone.
            let (s, _) = get(
                &agent,
                &format!(
                    "http://{host}:{}/web?url=example&matchType=domain",
                    open.port
                ),
            );
            assert_eq!(s, 200);
        }
    }
}

#[test]
fn a_refused_write_leaves_the_connection_usable() {
    // A write refused before its body is read (read-only, no token, a bad
    // route): the client, still sending, gets the answer, and its kept-
    // alive connection takes the next request.
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "t0ken\n").unwrap();
    let server = start(&[
        "--data",
        dir.path().join("d").to_str().unwrap(),
        "--write-token",
        token.to_str().unwrap(),
        "--read-only",
        "ro",
    ]);
    let agent = agent();
    let lines: String = generated(&mut Rng(11), 3000)
        .iter()
        .map(|c| c.line() + "\n")
        .collect();
    assert!(lines.len() > 200 << 10, "{}", lines.len());
    let front = get(&agent, &server.url("/"));
    for round in 0..4 {
        for (path, auth, want) in [
            ("/web", None, 401),
            ("/web", Some("Bearer wrong"), 403),
            ("/ro", Some("Bearer t0ken"), 403),
            ("/web/nowhere", Some("Bearer t0ken"), 405),
            ("/web?badLines=maybe", Some("Bearer t0ken"), 400),
        ] {
            let (s, said) = post_with(&agent, &server.url(path), auth, &lines);
            assert_eq!(s, want, "round {round} {path}: {said}");
            let next = get(&agent, &server.url("/"));
            assert_eq!(next, front, "round {round}: the next request after {path}");
        }
    }
    let (s, said) = post_with(&agent, &server.url("/web"), Some("Bearer t0ken"), &lines);
    assert_eq!((s, said.as_str()), (200, "Added 3000 records\n"));
}

#[test]
fn a_refused_write_whose_body_comes_late_keeps_its_connection() {
    // The headers come first and the body a moment later, as clients on
    // real networks send them: the refusal waits for the body, so the
    // connection takes a second request.
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let server = start(&[
        "--data",
        dir.path().join("d").to_str().unwrap(),
        "--read-only",
        "ro",
    ]);
    let line = generated(&mut Rng(12), 1)[0].line() + "\n";
    let mut stream = std::net::TcpStream::connect(server.addr.as_str()).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut answer = |stream: &mut std::net::TcpStream, head: String, body: &str| -> String {
        stream.write_all(head.as_bytes()).unwrap();
        stream.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        stream.write_all(body.as_bytes()).unwrap();
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let mut len = 0;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h == "\r\n" || h.is_empty() {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut text = vec![0; len];
        reader.read_exact(&mut text).unwrap();
        format!("{}{}", status.trim_end(), String::from_utf8(text).unwrap())
    };
    let post = |path: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
            line.len()
        )
    };
    let first = answer(&mut stream, post("/ro"), &line);
    assert!(first.starts_with("HTTP/1.1 403"), "{first}");
    let second = answer(&mut stream, post("/web"), &line);
    assert_eq!(second, "HTTP/1.1 200 OKAdded 1 records\n");
}

/// stdout of a `ukvs` run that must succeed.
fn ukvs_ok(args: &[&str]) -> String {
    let out = util::run(args, b"");
    util::assert_ok(&out);
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn offline_tools_read_a_live_collection_as_the_server_serves_it() {
    let dir = tempfile::tempdir().unwrap();
    let caps = generated(&mut Rng(0x7001), 260);
    let base = dir.path().join("base.cdx");
    write_cdx(&base, &caps[..200]);
    let data = dir.path().join("data");
    let coll = data.join("web");
    let (b, c) = (base.to_str().unwrap(), coll.to_str().unwrap());
    let server = start(&["--data", data.to_str().unwrap(), &format!("web={b}")]);
    let agent = agent();
    let body = |cs: &[Cap]| -> String { cs.iter().map(|c| c.line() + "\n").collect() };
    assert_eq!(
        post(&agent, &server.url("/web"), &body(&caps[200..])).0,
        200
    );
    let gone: Vec<Cap> = caps.iter().skip(3).step_by(11).cloned().collect();
    assert_eq!(
        post(&agent, &server.url("/web/delete"), &body(&gone)).0,
        200
    );
    let kept: Vec<Cap> = caps.iter().filter(|c| !gone.contains(c)).cloned().collect();
    // What the server answers, and the lookups that ask the same.
    let queries: Vec<(String, Vec<&str>)> = vec![
        (
            "url=http://host1.example/p3".into(),
            vec!["http://host1.example/p3"],
        ),
        (
            "url=host2.example&matchType=host".into(),
            vec!["--match", "host", "host2.example"],
        ),
        (
            "url=example&matchType=domain&from=2012&to=2016".into(),
            vec![
                "--match", "domain", "--from", "2012", "--to", "2016", "example",
            ],
        ),
        (
            "url=http://host4.example/p1&reverse=true&limit=3".into(),
            vec!["--reverse", "--limit", "3", "http://host4.example/p1"],
        ),
    ];
    let served: Vec<String> = queries
        .iter()
        .map(|(q, _)| {
            let (s, t) = get(
                &agent,
                &server.url(&format!("/web/cdx?{q}&output=text&nosource=true")),
            );
            assert_eq!(s, 200, "{q}");
            t
        })
        .collect();
    assert!(served.iter().map(|s| s.lines().count()).sum::<usize>() > 40);
    // While the server holds the store, the tools say so.
    let held = util::run(&["lookup", "--data", c, b, "http://host1.example/p3"], b"");
    assert_eq!(held.status.code(), Some(2));
    let said = String::from_utf8_lossy(&held.stderr);
    assert!(said.contains("server running"), "{said}");
    server.kill();

    for ((q, args), want) in queries.iter().zip(&served) {
        let mut all = vec!["lookup", "--data", c, b];
        all.extend(args);
        assert_eq!(&ukvs_ok(&all), want, "{q}");
    }
    // A batch of URLs, one exact answer after another.
    let urls = dir.path().join("urls");
    std::fs::write(&urls, "http://host0.example/p1\nhttp://host3.example/p6\n").unwrap();
    let batch = ukvs_ok(&["lookup", "--data", c, "--urls", urls.to_str().unwrap(), b]);
    let want: String = ["example,host0)/p1 ", "example,host3)/p6 "]
        .iter()
        .flat_map(|k| {
            let mut l: Vec<String> = kept
                .iter()
                .map(Cap::line)
                .filter(|l| l.starts_with(k))
                .collect();
            l.sort();
            l
        })
        .map(|l| l + "\n")
        .collect();
    assert_eq!(batch, want);

    // cat, stats and mementomap generate: as on a file of the same lines.
    let fixed = dir.path().join("fixed.cdx");
    write_cdx(&fixed, &kept);
    let f = fixed.to_str().unwrap();
    assert_eq!(ukvs_ok(&["cat", "--data", c, b]), ukvs_ok(&["cat", f]));
    assert_eq!(
        ukvs_ok(&["cat", "--json", "--data", c, b]),
        ukvs_ok(&["cat", "--json", f])
    );
    let stats = |args: &[&str]| -> serde_json::Value {
        let mut all = vec!["stats", "--json", "--quiet"];
        all.extend(args);
        serde_json::from_str(&ukvs_ok(&all)).unwrap()
    };
    let (live_stats, file_stats) = (stats(&["--data", c, b]), stats(&[f]));
    assert_eq!(live_stats["captures"], file_stats["captures"]);
    assert_eq!(live_stats, file_stats);
    let map = |args: &[&str]| {
        let mut all = vec![
            "mementomap",
            "generate",
            "--quiet",
            "--source",
            "web",
            "-o",
            "-",
        ];
        all.extend(args);
        let text = ukvs_ok(&all);
        // `!meta` says when it was made.
        text.lines()
            .filter(|l| !l.starts_with("!meta"))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    };
    let live_map = map(&["--data", c, b]);
    assert!(live_map.lines().count() > 5, "{live_map}");
    assert_eq!(live_map, map(&[f]));

    // A collection made by POSTs alone: no bases to give.
    let alone = ukvs_ok(&["lookup", "--data", c, "--match", "domain", "example"]);
    assert!(alone.lines().all(|l| !gone.iter().any(|g| g.line() == l)));
    assert_eq!(
        alone.lines().count(),
        kept.len() - caps[..200].iter().filter(|c| !gone.contains(c)).count()
    );
    // Not a collection's directory: said so.
    let wrong = util::run(&["lookup", "--data", data.to_str().unwrap(), "x"], b"");
    assert_eq!(wrong.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("DIR/NAME"));
}

#[test]
fn offline_cat_converts_a_collection_of_mixed_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let caps = generated(&mut Rng(0x7002), 30);
    // A UKVS capture-index base (as `ukvs cat` makes one), CDX11 lines
    // posted.
    let cdx = dir.path().join("first.cdx");
    write_cdx(&cdx, &caps[..20]);
    let cdxj = dir.path().join("base.ukvs");
    let json = ukvs_ok(&["cat", cdx.to_str().unwrap()]);
    std::fs::write(&cdxj, &json).unwrap();
    let data = dir.path().join("data");
    let server = start(&[
        "--data",
        data.to_str().unwrap(),
        &format!("web={}", cdxj.display()),
    ]);
    let agent = agent();
    let body: String = caps[20..].iter().map(|c| c.line() + "\n").collect();
    assert_eq!(post(&agent, &server.url("/web"), &body).0, 200);
    server.kill();
    let c = data.join("web");
    let all = dir.path().join("all.cdx");
    write_cdx(&all, &caps);
    // Every capture once, as `cat` gives the same captures from CDX.
    let records = |text: &str| -> Vec<String> {
        let mut r: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with('!'))
            .map(str::to_string)
            .collect();
        r.sort();
        r
    };
    assert_eq!(
        records(&ukvs_ok(&[
            "cat",
            "--data",
            c.to_str().unwrap(),
            cdxj.to_str().unwrap()
        ])),
        records(&ukvs_ok(&["cat", all.to_str().unwrap()]))
    );
}
