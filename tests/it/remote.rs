//! ZipNum clusters kept elsewhere: served by a loopback HTTP server that
//! honours Range (scripts/range_server.py, which can log, fail and
//! refuse) and by moto's S3 server; in Common Crawl's layout, written by
//! `zipnum build --layout cc` and by a script of its own. Every answer is
//! compared with the same cluster's read from local disk.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;

use crate::serve::{agent, get, Server};
use crate::util::{self, assert_ok, bin, KillOnDrop, Rng};

/// Settings of the S3 store for the runs of `ukvs` (moto's endpoint and
/// its fake credentials), set by the test that starts moto.
static S3_ENV: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A running scripts/range_server.py.
struct RangeServer {
    _proc: KillOnDrop,
    port: u16,
    log: PathBuf,
}

impl RangeServer {
    fn start(root: &Path, log: &Path, extra: &[&str]) -> Option<RangeServer> {
        let mut child = Command::new("python3")
            .arg(repo().join("scripts/range_server.py"))
            .arg(root)
            .arg("--log")
            .arg(log)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let stdout = child.stdout.take()?;
        let mut first = String::new();
        BufReader::new(stdout).read_line(&mut first).ok()?;
        let port = first.trim().parse().ok()?;
        Some(RangeServer {
            _proc: KillOnDrop(child),
            port,
            log: log.to_path_buf(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// The requests logged so far (`METHOD PATH RANGE STATUS`), and the
    /// log emptied.
    fn take_log(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        std::fs::write(&self.log, "").unwrap();
        text.lines().map(str::to_string).collect()
    }
}

/// A range server, or `None` with a skip message when python3 is missing.
fn range_server(root: &Path, log: &Path, extra: &[&str], test: &str) -> Option<RangeServer> {
    let s = RangeServer::start(root, log, extra);
    if s.is_none() {
        eprintln!("SKIPPED {test}: python3 cannot run scripts/range_server.py");
    }
    s
}

/// `n` sorted lines (from `seed`) built into both cluster layouts under
/// `dir` (`lines_per_block` a block), and a range server over them
/// logging to `dir/log`; `None` (the test skipped) without python3.
fn served_clusters(
    dir: &Path,
    n: usize,
    seed: u64,
    lines_per_block: usize,
    test: &str,
) -> Option<(Vec<String>, PathBuf, RangeServer)> {
    let lines = sorted_lines(n, seed);
    let root = clusters(dir, &lines, lines_per_block);
    let srv = range_server(&root, &dir.join("log"), &[], test)?;
    Some((lines, root, srv))
}

/// Sorted CDXJ lines: a few hundred hosts, repeated keys across block
/// boundaries.
fn sorted_lines(n: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut lines: Vec<String> = (0..n)
        .map(|i| {
            let host = rng.below(150);
            let path = rng.below(6);
            let ts = 20100101000000u64 + rng.below(9_000_000);
            format!(
                "com,example,h{host})/p{path} {ts} {{\"url\": \"http://h{host}.example.com/p{path}\", \"status\": \"200\", \"n\": {i}}}"
            )
        })
        .collect();
    lines.sort();
    lines.dedup();
    lines
}

/// `dir/in.cdxj` and its clusters in both layouts: `dir/remote/pywb`,
/// `dir/remote/cc` (`lines_per_block` lines a block, 3 shards).
fn clusters(dir: &Path, lines: &[String], lines_per_block: usize) -> PathBuf {
    let input = dir.join("in.cdxj");
    std::fs::write(
        &input,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let root = dir.join("remote");
    for layout in ["pywb", "cc"] {
        let out = root.join(layout);
        let lpb = lines_per_block.to_string();
        let o = util::run(
            &[
                "zipnum",
                "build",
                input.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
                "--lines-per-block",
                &lpb,
                "--shards",
                "3",
                "--layout",
                layout,
            ],
            b"",
        );
        assert_ok(&o);
    }
    root
}

fn ukvs(args: &[&str]) -> Output {
    ukvs_env(args, &[])
}

/// [`ukvs`] with more settings in the environment.
fn ukvs_env(args: &[&str], more: &[(&str, &str)]) -> Output {
    let env = S3_ENV.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Command::new(bin())
        .args(args)
        .envs(env)
        .envs(more.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run ukvs")
}

/// Queries to ask of every cluster: (key, extra args).
fn queries(lines: &[String], rng: &mut Rng) -> Vec<(String, Vec<&'static str>)> {
    let mut out = Vec::new();
    for _ in 0..12 {
        let line = &lines[rng.below(lines.len() as u64) as usize];
        let key = line.split(' ').next().unwrap().to_string();
        out.push((key.clone(), vec![]));
        out.push((
            key.clone(),
            vec!["--closest", "20120101000000", "--limit", "3"],
        ));
        out.push((key, vec!["--reverse"]));
    }
    out.push(("com,example,h1".into(), vec!["--match", "prefix"]));
    out.push((
        "com,example,h7".into(),
        vec!["--match", "prefix", "--from", "2011"],
    ));
    out.push(("com,example)/".into(), vec!["--match", "domain"]));
    out.push(("com,example,h99)/".into(), vec!["--match", "host"]));
    // Before every line, after every line, between two.
    out.push(("a".into(), vec![]));
    out.push(("zzz".into(), vec![]));
    out.push(("com,example,h1)/p9".into(), vec![]));
    out
}

/// `ukvs lookup SOURCE --key K ARGS` (with more flags), as (stdout, exit).
fn lookup(source: &str, key: &str, args: &[&str], more: &[&str]) -> (Vec<u8>, Option<i32>) {
    let mut a = vec!["lookup", source, "--key", key];
    a.extend_from_slice(args);
    a.extend_from_slice(more);
    let o = ukvs(&a);
    assert!(
        o.status.code() != Some(2),
        "{a:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (o.stdout, o.status.code())
}

/// Every query, `cat` and `stats` give the same over `remote` as over
/// `local`.
fn assert_same_answers(local: &str, remote: &str, lines: &[String], more: &[&str]) {
    let mut rng = Rng(0x5eed);
    let mut matched = 0;
    for (key, args) in queries(lines, &mut rng) {
        let want = lookup(local, &key, &args, more);
        let got = lookup(remote, &key, &args, more);
        assert_eq!(
            String::from_utf8_lossy(&got.0),
            String::from_utf8_lossy(&want.0),
            "{remote} {key} {args:?}"
        );
        assert_eq!(got.1, want.1, "{remote} {key} {args:?}");
        matched += usize::from(!want.0.is_empty());
    }
    assert!(
        matched > 20,
        "the queries hardly match anything ({matched})"
    );
    for cmd in [&["cat"][..], &["stats"][..], &["stats", "--json"][..]] {
        let run = |src: &str| {
            let mut a = cmd.to_vec();
            a.push(src);
            let o = ukvs(&a);
            assert_ok(&o);
            o.stdout
        };
        let want = run(local);
        assert!(!want.is_empty());
        assert_eq!(run(remote), want, "{cmd:?} {remote}");
    }
    let want = mementomap(local, &[]);
    assert!(want.lines().count() > 100, "{want}");
    assert_eq!(
        mementomap(remote, &[]),
        want,
        "mementomap generate {remote}"
    );
}

/// `ukvs mementomap generate INPUTS ARGS` (the map's `source` and time
/// fixed, so that maps of different inputs can be compared).
fn mementomap(inputs: &str, args: &[&str]) -> String {
    let mut a = vec!["mementomap", "generate", "-q", "--source", "idx"];
    a.extend(inputs.split(' '));
    a.extend_from_slice(args);
    let o = ukvs_env(&a, &[("SOURCE_DATE_EPOCH", "0")]);
    assert_ok(&o);
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn remote_http_clusters_answer_as_local_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let test = "remote_http_clusters_answer_as_local_ones";
    let Some((lines, root, srv)) = served_clusters(tmp.path(), 3000, 7, 40, test) else {
        return;
    };
    for layout in ["pywb", "cc"] {
        let local = root.join(layout);
        let local = local.to_str().unwrap();
        // The directory's URL with and without its slash, and the idx's.
        let idx = match layout {
            "pywb" => "index.idx",
            _ => "cluster.idx",
        };
        for remote in [
            srv.url(&format!("{layout}/")),
            srv.url(layout),
            srv.url(&format!("{layout}/{idx}")),
        ] {
            assert_same_answers(local, &remote, &lines, &[]);
        }
        // Without the cache, blocks are streamed: the same answers.
        assert_same_answers(local, &srv.url(layout), &lines, &["--cache", "0"]);
    }
    // Both layouts hold the same lines.
    let a = ukvs(&["cat", root.join("pywb").to_str().unwrap()]);
    let b = ukvs(&["cat", &srv.url("cc/")]);
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn remote_mementomap_generate_is_the_local_clusters_map() {
    let tmp = tempfile::tempdir().unwrap();
    let test = "remote_mementomap_generate_is_the_local_clusters_map";
    let Some((lines, root, srv)) = served_clusters(tmp.path(), 3000, 23, 40, test) else {
        return;
    };
    let plain = tmp.path().join("in.cdxj");
    let plain = plain.to_str().unwrap();
    for layout in ["pywb", "cc"] {
        let local = root.join(layout);
        let local = local.to_str().unwrap();
        let remote = srv.url(&format!("{layout}/"));
        // Every URL and capture counted: the map of the lines the cluster
        // was built from, as it is, rolled up and with a decomposition.
        for args in [
            &[][..],
            &["--hcf", "0.5", "--pcf", "0.5"],
            &["--by", "status"],
        ] {
            let want = mementomap(plain, args);
            let total = format!("\"frequency\":\"{}/", lines.len());
            assert!(want.contains(&total), "{want}");
            assert_eq!(mementomap(local, args), want, "{local} {args:?}");
            assert_eq!(mementomap(&remote, args), want, "{remote} {args:?}");
        }
        // A remote cluster merged with a file: as the file twice.
        assert_eq!(
            mementomap(&format!("{remote} {plain}"), &[]),
            mementomap(&format!("{plain} {plain}"), &[]),
        );
    }
    // A refused shard: exit 2, naming its URL and the status; no map.
    let Some(refusing) = range_server(
        &root,
        &tmp.path().join("log2"),
        &["--forbid", "index-02"],
        test,
    ) else {
        return;
    };
    let out = tmp.path().join("out.map");
    let o = ukvs(&[
        "mementomap",
        "generate",
        &refusing.url("pywb/"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&refusing.url("pywb/index-02.cdx.gz")) && err.contains("403"),
        "{err}"
    );
    assert!(!out.exists());
    // A missing cluster: exit 2 naming the URL.
    let o = ukvs(&["mementomap", "generate", &refusing.url("nothing/")]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&refusing.url("nothing/")), "{err}");
}

/// Keys whose lines lie inside one block, away from its first and last
/// lines: an exact lookup of one reads that block alone.
fn keys_inside_blocks(lines: &[String], lines_per_block: usize) -> Vec<String> {
    let key = |i: usize| lines[i].split(' ').next().unwrap().to_string();
    let mut out = Vec::new();
    let mut i = lines_per_block / 2;
    while i + lines_per_block / 2 < lines.len() {
        let first = i - lines_per_block / 2;
        let last = (first + lines_per_block - 1).min(lines.len() - 1);
        let k = key(i);
        if key(first) != k && key(last) != k {
            out.push(k);
        }
        i += lines_per_block;
    }
    out
}

#[test]
fn remote_exact_lookup_is_one_ranged_get_with_the_idx_local() {
    let tmp = tempfile::tempdir().unwrap();
    let test = "remote_exact_lookup_is_one_ranged_get_with_the_idx_local";
    let Some((lines, root, srv)) = served_clusters(tmp.path(), 3000, 11, 40, test) else {
        return;
    };
    // The idx local, a .loc pointing at the shards on the server; each
    // shard's first location does not answer (pywb: the first that
    // answers is read).
    let here = tmp.path().join("here");
    std::fs::create_dir(&here).unwrap();
    std::fs::copy(root.join("pywb/index.idx"), here.join("index.idx")).unwrap();
    let loc: String = (1..=3)
        .map(|i| {
            format!(
                "index-{i:02}\tmissing-{i}.cdx.gz\t{}\n",
                srv.url(&format!("pywb/index-{i:02}.cdx.gz"))
            )
        })
        .collect();
    std::fs::write(here.join("index.loc"), loc).unwrap();
    let here = here.to_str().unwrap();
    let local = root.join("pywb");
    let local = local.to_str().unwrap();
    srv.take_log();
    let keys = keys_inside_blocks(&lines, 40);
    assert!(keys.len() > 30, "{}", keys.len());
    for key in &keys {
        let want = lookup(local, key, &[], &[]);
        let got = lookup(here, key, &[], &["--cache", "0"]);
        assert_eq!(got, want, "{key}");
        let log = srv.take_log();
        assert_eq!(log.len(), 1, "{key}: {log:?}");
        assert!(
            log[0].contains(" bytes=") && log[0].ends_with(" 206"),
            "{log:?}"
        );
    }
    // A range scan reads each block once, however many are in flight.
    let (out, _) = lookup(
        here,
        "com,example,h",
        &["--match", "prefix"],
        &["--cache", "0"],
    );
    assert_eq!(
        out,
        lookup(local, "com,example,h", &["--match", "prefix"], &[]).0
    );
    let log = srv.take_log();
    let blocks = std::fs::read_to_string(root.join("pywb/index.idx"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(log.len(), blocks, "one GET per block: {log:?}");
    let mut ranges: Vec<&str> = log.iter().map(|l| l.split(' ').nth(2).unwrap()).collect();
    ranges.sort();
    ranges.dedup();
    assert_eq!(ranges.len(), blocks, "no block fetched twice");
}

#[test]
fn remote_http_failures_are_retried_and_refusals_named() {
    let tmp = tempfile::tempdir().unwrap();
    let lines = sorted_lines(2000, 13);
    let root = clusters(tmp.path(), &lines, 40);
    let test = "remote_http_failures_are_retried_and_refusals_named";
    // Every third request fails with a 503.
    let Some(flaky) = range_server(
        &root,
        &tmp.path().join("log1"),
        &["--fail-every", "3"],
        test,
    ) else {
        return;
    };
    let local = root.join("pywb");
    assert_same_answers(local.to_str().unwrap(), &flaky.url("pywb/"), &lines, &[]);
    let failed = flaky
        .take_log()
        .iter()
        .filter(|l| l.ends_with(" 503"))
        .count();
    assert!(failed > 10, "the server failed {failed} times");

    // A shard that the server refuses: exit 2, naming URL and status.
    let Some(refusing) = range_server(
        &root,
        &tmp.path().join("log2"),
        &["--forbid", "index-02"],
        test,
    ) else {
        return;
    };
    let o = ukvs(&[
        "lookup",
        &refusing.url("pywb/"),
        "--key",
        "com,example,h",
        "--match",
        "prefix",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&refusing.url("pywb/index-02.cdx.gz")) && err.contains("403"),
        "{err}"
    );
    // Refused at once: no block asked twice (no retries; the scan's
    // next blocks were already in flight).
    let log = refusing.take_log();
    let mut refused: Vec<&String> = log.iter().filter(|l| l.ends_with(" 403")).collect();
    assert!(!refused.is_empty());
    let n = refused.len();
    refused.sort();
    refused.dedup();
    assert_eq!(refused.len(), n, "{log:?}");
    // A missing cluster: exit 2 naming the URL.
    let o = ukvs(&["lookup", &refusing.url("nothing/"), "--key", "a"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&refusing.url("nothing/")), "{err}");
}

#[test]
fn remote_clusters_serve_as_local_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let test = "remote_clusters_serve_as_local_ones";
    let Some((lines, root, srv)) = served_clusters(tmp.path(), 3000, 17, 30, test) else {
        return;
    };
    let Some(refusing) = range_server(
        &root,
        &tmp.path().join("log2"),
        &["--forbid", "cdx-00001"],
        test,
    ) else {
        return;
    };
    let local = format!("here={}", root.join("pywb").display());
    let remote = format!("there={}", srv.url("pywb/"));
    let cc = format!("cc={}", srv.url("cc"));
    let bad = format!("bad={}", refusing.url("cc/"));
    let server = Server::start(&[local.as_str(), &remote, &cc, &bad, "--cache", "64M"]);
    let a = agent();
    let mut rng = Rng(3);
    let mut asked = Vec::new();
    for _ in 0..10 {
        let line = &lines[rng.below(lines.len() as u64) as usize];
        let url = line.split('"').nth(3).unwrap().to_string();
        asked.push(format!("cdx?url={url}&output=json"));
        asked.push(format!(
            "cdx?url={url}&closest=20120101&sort=closest&limit=2"
        ));
        asked.push(format!("cdx/search/cdx?url={url}&output=json"));
        asked.push(format!("timemap/link/{url}"));
    }
    for q in [
        "url=example.com&matchType=domain",
        "url=h1*.example.com&matchType=domain",
    ] {
        asked.push(format!("cdx?{q}&showNumPages=true"));
        asked.push(format!("cdx?{q}&showNumPages=true&pageSize=2"));
        for page in 0..6 {
            asked.push(format!("cdx?{q}&page={page}&pageSize=2&output=json"));
        }
        asked.push(format!("cdx?{q}&showPagedIndex=true&page=1&pageSize=3"));
        asked.push(format!("cdx/search/cdx?{q}&limit=50&showResumeKey=true"));
    }
    let mut found = 0;
    for q in &asked {
        let want = get(&a, &server.url(&format!("/here/{q}")));
        for coll in ["there", "cc"] {
            let got = get(&a, &server.url(&format!("/{coll}/{q}")));
            // Answers name their collection (`source`, the timemap's
            // links).
            let body = String::from_utf8_lossy(&got.2)
                .replace(&format!("/{coll}/"), "/here/")
                .replace(&format!("\"{coll}\""), "\"here\"");
            assert_eq!(
                (got.0, body.as_str()),
                (want.0, &*String::from_utf8_lossy(&want.2)),
                "/{coll}/{q}"
            );
        }
        found += usize::from(want.0 == 200 && want.2.len() > 10);
    }
    assert!(found > asked.len() / 2, "{found} of {}", asked.len());
    // The same exact lookups again are answered from the cache (scans
    // of more than 32 blocks, the domain queries, add nothing to it).
    let stats = |coll: &str| -> serde_json::Value {
        let (status, _, body) = get(&a, &server.url(&format!("/{coll}/stats")));
        assert_eq!(status, 200);
        serde_json::from_slice(&body).unwrap()
    };
    let before = stats("there")["blockCache"].clone();
    for q in asked.iter().filter(|q| !q.contains("matchType")) {
        get(&a, &server.url(&format!("/there/{q}")));
    }
    let after = stats("there")["blockCache"].clone();
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap();
    assert!(n(&after, "hits") > n(&before, "hits"), "{before} {after}");
    assert_eq!(
        n(&after, "misses"),
        n(&before, "misses"),
        "{before} {after}"
    );
    assert!(n(&after, "bytes") > 0 && n(&after, "bytes") <= 64 << 20);
    // A shard the store refuses: 502, naming the URL and the status
    // (a URL whose captures are all in the middle shard, so that the
    // failure comes before the answer starts).
    let middle = lines[lines.len() / 2].split('"').nth(3).unwrap();
    let (status, _, body) = get(
        &a,
        &server.url(&format!("/bad/cdx?url={middle}&output=json")),
    );
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, 502, "{body}");
    assert!(
        body.contains("cdx-00001.gz") && body.contains("403"),
        "{body}"
    );
    // The Wayback Machine's API answers the same failure the same way.
    let (status, _, body) = get(
        &a,
        &server.url(&format!("/bad/cdx/search/cdx?url={middle}")),
    );
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, 502, "{body}");
    assert!(
        body.contains("cdx-00001.gz") && body.contains("403"),
        "{body}"
    );
}

/// moto's S3 server on a free port, or `None` (skip) without moto.
fn moto(test: &str) -> Option<(KillOnDrop, String)> {
    if !util::has_python_module("moto.server", test) || !util::has_python_module("boto3", test) {
        return None;
    }
    let port = util::free_port();
    let child = Command::new("python3")
        .args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let guard = KillOnDrop(child);
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some((guard, url));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    eprintln!("SKIPPED {test}: moto's server did not start");
    None
}

#[test]
fn remote_s3_clusters_answer_as_local_ones() {
    let test = "remote_s3_clusters_answer_as_local_ones";
    let Some((_moto, endpoint)) = moto(test) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let lines = sorted_lines(2000, 19);
    let root = clusters(tmp.path(), &lines, 40);
    let env = [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
    ];
    let upload = Command::new("python3")
        .arg("-c")
        .arg(
            "import boto3, os, sys\n\
             s3 = boto3.client('s3', endpoint_url=os.environ['AWS_ENDPOINT_URL'])\n\
             s3.create_bucket(Bucket='archive')\n\
             root = sys.argv[1]\n\
             for layout in os.listdir(root):\n\
             \x20   for f in os.listdir(os.path.join(root, layout)):\n\
             \x20       s3.upload_file(os.path.join(root, layout, f), 'archive', f'idx/{layout}/{f}')\n",
        )
        .arg(&root)
        .envs(env)
        .status()
        .unwrap();
    assert!(upload.success());
    // The CLI reads the store's settings from the environment.
    *S3_ENV.lock().unwrap() = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for layout in ["pywb", "cc"] {
        let local = root.join(layout);
        assert_same_answers(
            local.to_str().unwrap(),
            &format!("s3://archive/idx/{layout}/"),
            &lines,
            &[],
        );
    }
    let o = ukvs(&["lookup", "s3://archive/none/", "--key", "a"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("s3://archive/none/"));
    let o = ukvs(&["lookup", "s3://no-such-bucket/idx/", "--key", "a"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("s3://no-such-bucket/idx/"), "{err}");
    assert!(!err.contains("testing"), "credentials printed: {err}");
}

#[test]
fn common_crawl_layout_from_its_own_description_answers_as_the_lines() {
    // Common Crawl's index lines, cut into a cluster by a script written
    // from CC's description of cluster.idx (every line LF-terminated,
    // blocks of 5 lines, 2 shards, no .loc), read as the plain file is.
    let tmp = tempfile::tempdir().unwrap();
    let sample = util::data_dir().join("cc/cc-index-sample.cdxj");
    let cc = tmp.path().join("cc");
    let made = Command::new("python3")
        .arg(repo().join("scripts/cc_cluster.py"))
        .arg(&sample)
        .arg(&cc)
        .args(["--lines", "5", "--shards", "2"])
        .status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED common_crawl_layout...: python3 cannot run scripts/cc_cluster.py");
        return;
    }
    assert!(cc.join("cdx-00001.gz").is_file() && !cc.join("cluster.loc").exists());
    let ours = tmp.path().join("ours");
    assert_ok(&ukvs(&[
        "zipnum",
        "build",
        sample.to_str().unwrap(),
        "-o",
        ours.to_str().unwrap(),
        "--lines-per-block",
        "3",
        "--layout",
        "cc",
    ]));
    let text = std::fs::read_to_string(&sample).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut keys: Vec<&str> = lines.iter().map(|l| l.split(' ').next().unwrap()).collect();
    keys.dedup();
    assert!(keys.len() >= 10);
    let plain = sample.to_str().unwrap();
    for dir in [&cc, &ours] {
        let dir = dir.to_str().unwrap();
        for key in &keys {
            let want = lookup(plain, key, &[], &[]);
            assert!(!want.0.is_empty());
            assert_eq!(lookup(dir, key, &[], &[]), want, "{dir} {key}");
            assert_eq!(
                lookup(dir, key, &["--reverse"], &["--cache", "0"]),
                lookup(plain, key, &["--reverse"], &[]),
            );
        }
        for (key, m) in [("org,", "prefix"), ("com,example)/", "domain")] {
            let want = lookup(plain, key, &["--match", m], &[]);
            assert!(!want.0.is_empty(), "{key}");
            assert_eq!(lookup(dir, key, &["--match", m], &[]), want);
        }
        let o = ukvs(&["cat", dir]);
        assert_ok(&o);
        assert_eq!(o.stdout, ukvs(&["cat", plain]).stdout);
    }
    // Served over HTTP as well.
    let Some(srv) = range_server(
        tmp.path(),
        &tmp.path().join("log"),
        &[],
        "common_crawl_layout",
    ) else {
        return;
    };
    for key in &keys {
        assert_eq!(
            lookup(&srv.url("cc/"), key, &[], &[]),
            lookup(plain, key, &[], &[])
        );
    }
}

#[test]
fn remote_lookup_needs_no_credentials_printed_and_rejects_bad_urls() {
    let o = ukvs(&["lookup", "s3://", "--key", "a"]);
    assert_eq!(o.status.code(), Some(2));
    let o = ukvs(&["lookup", "http://127.0.0.1:1/x/", "--key", "a"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("http://127.0.0.1:1/x/"), "{err}");
}
