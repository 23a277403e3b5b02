//! Folding live collections (`POST /NAME/fold`, `ukvs fold`): answers
//! byte-identical to a static collection of the same lines before and
//! after a fold, and after restarts; SIGKILL during concurrent POSTs,
//! deletes and folds; a POST past the batch cap killed while it is
//! applied comes back whole; a store held by a server, or of an older
//! layout, refused with a clear error; a fold into a ZipNum cluster or a
//! file on request, and a cluster refused where it would misread lines.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::live::{
    agent, batch_body, get, kill_rounds, post, sorted_file, start, try_post, Capture, Model, Rng,
};
use crate::serve::Server;
use crate::util;

/// `rounds` random POSTs and deletes to `url` (CDXJ and CDX11, known
/// captures replaced, base and delta lines deleted, missing ones too),
/// kept in `model`.
fn churn(url: &str, rng: &mut Rng, model: &mut Model, rounds: u64) {
    let agent = agent();
    let mut known: Vec<Capture> = Vec::new();
    for round in 0..rounds {
        let n = 1 + rng.below(5) as usize;
        if rng.below(4) == 0 && !model.is_empty() {
            let keys: Vec<_> = model.keys().cloned().collect();
            let (mut cdxj, mut cdx) = (String::new(), String::new());
            let (mut cdxj_n, mut cdx_n) = (0, 0);
            for _ in 0..n {
                let k = &keys[rng.below(keys.len() as u64) as usize];
                if let Some(line) = model.remove(k) {
                    let (body, count) = if line.ends_with('}') {
                        (&mut cdxj, &mut cdxj_n)
                    } else {
                        (&mut cdx, &mut cdx_n)
                    };
                    body.push_str(&line);
                    body.push('\n');
                    *count += 1;
                }
            }
            let mut missing = Capture::random(&mut Rng(round + 99));
            missing.filename = "nowhere.warc.gz".into();
            cdxj.push_str(&missing.cdxj());
            cdxj.push('\n');
            cdxj_n += 1;
            for (body, count) in [(cdxj, cdxj_n), (cdx, cdx_n)] {
                if count > 0 {
                    let (s, answer) = post(&agent, &format!("{url}/delete"), body.as_bytes());
                    assert_eq!((s, answer), (200, format!("Deleted {count} records\n")));
                }
            }
            continue;
        }
        let cdx = rng.below(3) == 0;
        let mut body = String::new();
        for _ in 0..n {
            let c = match (rng.below(4), known.is_empty()) {
                (0, false) => {
                    let mut c = known[rng.below(known.len() as u64) as usize].clone();
                    c.status = 404;
                    c.digest = format!("NEW{round}");
                    c
                }
                (1, false) => known[rng.below(known.len() as u64) as usize].clone(),
                _ => Capture::random(rng),
            };
            model.insert(c.id(), if cdx { c.cdx11() } else { c.cdxj() });
            body.push_str(&if cdx { c.cdx11() } else { c.cdxj_posted() });
            body.push('\n');
            known.push(c);
        }
        let (s, answer) = post(&agent, url, body.as_bytes());
        assert_eq!((s, answer), (200, format!("Added {n} records\n")));
    }
}

fn queries() -> Vec<String> {
    let mut q = Vec::new();
    for h in 0..5 {
        q.push(format!("url=host{h}.example/&matchType=host"));
        q.push(format!("url=host{h}.example/&matchType=host&output=json"));
        q.push(format!("url=host{h}.example/p1*"));
        for p in [0, 3, 7, 11] {
            q.push(format!("url=http://host{h}.example/p{p}"));
        }
        q.push(format!("url=host{h}.example/p3&from=2012&to=2016"));
        q.push(format!(
            "url=host{h}.example/&matchType=host&limit=3&reverse=1"
        ));
        q.push(format!(
            "url=host{h}.example/p2&closest=20150101000000&limit=2"
        ));
        q.push(format!(
            "url=host{h}.example/&matchType=host&output=text&filter=status:404"
        ));
    }
    q.push("url=example&matchType=domain&limit=0".into());
    q.push("url=*.example&sort=reverse&limit=25".into());
    q
}

/// Every query and a few TimeMaps answered by `live` as by `fixed`.
fn same_answers(fixed: &Server, live: &Server, when: &str) {
    let agent = agent();
    let mut nonempty = 0;
    let qs = queries();
    for q in &qs {
        let want = get(&agent, &fixed.url(&format!("/web/cdx?{q}")));
        let got = get(&agent, &live.url(&format!("/web/cdx?{q}")));
        assert_eq!(got, want, "{when}: /web/cdx?{q}");
        nonempty += usize::from(!want.1.is_empty());
    }
    assert!(
        nonempty > qs.len() / 2,
        "{when}: {nonempty} of {}",
        qs.len()
    );
    for p in [1, 5] {
        let path = format!("/web/timemap/link/http://host2.example/p{p}");
        let want = get(&agent, &fixed.url(&path))
            .1
            .replace(&fixed.addr, "HOST");
        let got = get(&agent, &live.url(&path)).1.replace(&live.addr, "HOST");
        assert_eq!(got, want, "{when}: {path}");
    }
}

/// The base file a fold recorded in `DIR/NAME/`.
fn folded_bases(data: &Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(data.join(name))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("base-"))
        })
        .collect();
    found.sort();
    found
}

/// A live collection `web` (`DIR/data`) over a base file of `n` random
/// captures (`DIR/base.cdxj`), after `rounds` of [`churn`].
struct Churned {
    rng: Rng,
    model: Model,
    base: std::path::PathBuf,
    data: std::path::PathBuf,
    spec: String,
    live: Server,
}

fn churned(dir: &Path, seed: u64, n: usize, rounds: u64) -> Churned {
    let mut rng = Rng(seed);
    let mut model = Model::new();
    for _ in 0..n {
        let c = Capture::random(&mut rng);
        model.insert(c.id(), c.cdxj());
    }
    let base = dir.join("base.cdxj");
    sorted_file(&base, &model);
    let data = dir.join("data");
    let spec = format!("web={}", base.display());
    let live = start(&["--data", data.to_str().unwrap(), &spec]);
    churn(&live.url("/web"), &mut rng, &mut model, rounds);
    Churned {
        rng,
        model,
        base,
        data,
        spec,
        live,
    }
}

#[test]
fn a_folded_collection_answers_as_the_static_file_of_its_lines() {
    let dir = tempfile::tempdir().unwrap();
    let Churned {
        mut rng,
        mut model,
        base,
        data,
        spec,
        live,
    } = churned(dir.path(), 0xf01d_0000_0001, 150, 120);
    let data_arg = data.to_str().unwrap();
    let agent = agent();
    let expected = dir.path().join("expected.cdxj");
    sorted_file(&expected, &model);
    let fixed = start(&[&format!("web={}", expected.display())]);
    same_answers(&fixed, &live, "before the fold");

    let (s, answer) = post(&agent, &live.url("/web/fold"), b"");
    assert_eq!(s, 200, "{answer}");
    assert!(
        answer.starts_with(&format!("Folded {} records into ", model.len())),
        "{answer}"
    );
    // The new base holds the lines a static file of them would.
    let bases = folded_bases(&data, "web");
    assert_eq!(bases.len(), 1, "{bases:?}");
    assert_eq!(
        std::fs::read(&bases[0]).unwrap(),
        std::fs::read(&expected).unwrap()
    );
    same_answers(&fixed, &live, "after the fold");
    // Writes after the fold hide the folded base's lines.
    churn(&live.url("/web"), &mut rng, &mut model, 60);
    sorted_file(&expected, &model);
    let fixed = start(&[&format!("web={}", expected.display())]);
    same_answers(&fixed, &live, "writes after the fold");
    // Restarted with the same command line: the folded base, not base.cdxj.
    live.kill();
    let live = start(&["--data", data_arg, &spec]);
    same_answers(&fixed, &live, "restarted after the fold");

    // Offline: refused while the server holds the store.
    let web_dir = format!("{data_arg}/web");
    let held = util::run(&["fold", "--data", &web_dir, base.to_str().unwrap()], b"");
    assert_eq!(held.status.code(), Some(2));
    let said = String::from_utf8_lossy(&held.stderr);
    assert!(said.contains("held by another process"), "{said}");
    live.kill();
    let out = util::run(&["fold", "--data", &web_dir, base.to_str().unwrap()], b"");
    util::assert_ok(&out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with(&format!("Folded {} records into ", model.len())),
        "{said}"
    );
    let bases = folded_bases(&data, "web");
    assert_eq!(bases.len(), 1, "the superseded base is removed: {bases:?}");
    assert_eq!(
        std::fs::read(&bases[0]).unwrap(),
        std::fs::read(&expected).unwrap()
    );
    let live = start(&["--data", data_arg, &spec]);
    same_answers(&fixed, &live, "after an offline fold");
    // Only --data: the collection is its folded base.
    live.kill();
    let live = start(&["--data", data_arg]);
    same_answers(&fixed, &live, "served from --data alone");
}

#[test]
fn a_folded_cluster_is_a_cluster_with_the_same_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xf01d_0000_0002);
    let mut model = Model::new();
    for _ in 0..400 {
        let c = Capture::random(&mut rng);
        model.insert(c.id(), c.cdxj());
    }
    let sorted = dir.path().join("base.cdxj");
    sorted_file(&sorted, &model);
    let cluster = dir.path().join("cluster");
    util::assert_ok(&util::run(
        &[
            "zipnum",
            "build",
            sorted.to_str().unwrap(),
            "-o",
            cluster.to_str().unwrap(),
            "--lines-per-block",
            "50",
        ],
        b"",
    ));
    let data = dir.path().join("data");
    let data_arg = data.to_str().unwrap();
    let spec = format!("web={}", cluster.display());
    let live = start(&["--data", data_arg, &spec]);
    churn(&live.url("/web"), &mut rng, &mut model, 80);
    let (s, answer) = post(&agent(), &live.url("/web/fold"), b"");
    assert_eq!(s, 200, "{answer}");
    let bases = folded_bases(&data, "web");
    assert_eq!(bases.len(), 1, "{bases:?}");
    assert!(bases[0].join("index.idx").is_file(), "{bases:?}");
    // The cluster's lines are the static lines.
    let expected = dir.path().join("expected.cdxj");
    sorted_file(&expected, &model);
    let folded = start(&[&format!("web={}", bases[0].display())]);
    let fixed = start(&[&format!("web={}", expected.display())]);
    let agent = agent();
    let all = "/web/cdx?url=example&matchType=domain&limit=0&output=json&fl=urlkey,timestamp,original,status,digest,offset,filename";
    let want = get(&agent, &fixed.url(all));
    assert!(want.1.lines().count() > 300, "{}", want.1.lines().count());
    assert_eq!(get(&agent, &folded.url(all)), want);
    // And the live collection serves it, with no delta left.
    assert_eq!(get(&agent, &live.url(all)), want);
}

#[test]
fn a_collection_folds_into_a_cluster_and_back_into_a_file_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let Churned {
        mut rng,
        mut model,
        data,
        spec,
        live,
        ..
    } = churned(dir.path(), 0xf01d_0000_0003, 300, 80);
    let data_arg = data.to_str().unwrap();
    let agent = agent();

    let (s, answer) = post(&agent, &live.url("/web/fold?into=zip"), b"");
    assert_eq!(s, 400, "{answer}");
    assert!(answer.contains("into=cluster"), "{answer}");
    let (s, answer) = post(&agent, &live.url("/web/fold?into=cluster"), b"");
    assert_eq!(s, 200, "{answer}");
    assert!(
        answer.starts_with(&format!("Folded {} records into ", model.len())),
        "{answer}"
    );
    let bases = folded_bases(&data, "web");
    assert_eq!(bases.len(), 1, "{bases:?}");
    assert!(bases[0].join("index.idx").is_file(), "{bases:?}");
    let expected = dir.path().join("expected.cdxj");
    sorted_file(&expected, &model);
    let fixed = start(&[&format!("web={}", expected.display())]);
    same_answers(&fixed, &live, "folded into a cluster");
    // Every line of the static file, from the cluster alone.
    let folded = start(&[&format!("web={}", bases[0].display())]);
    let all = "/web/cdx?url=example&matchType=domain&limit=0&output=json\
               &fl=urlkey,timestamp,original,status,digest,offset,filename";
    let want = get(&agent, &fixed.url(all));
    assert!(want.1.lines().count() > 200, "{}", want.1.lines().count());
    assert_eq!(get(&agent, &folded.url(all)), want);
    folded.kill();

    // A fold with no shape asked for keeps the cluster a cluster.
    churn(&live.url("/web"), &mut rng, &mut model, 40);
    let (s, answer) = post(&agent, &live.url("/web/fold"), b"");
    assert_eq!(s, 200, "{answer}");
    // (The cluster it replaces goes once no reader holds it.)
    let bases = folded_bases(&data, "web");
    let newest = bases.last().unwrap();
    assert!(newest.join("index.idx").is_file(), "{bases:?}");
    sorted_file(&expected, &model);
    let fixed = start(&[&format!("web={}", expected.display())]);
    same_answers(&fixed, &live, "a cluster folded again");

    // Offline, back into a file: the static file, byte for byte.
    churn(&live.url("/web"), &mut rng, &mut model, 40);
    live.kill();
    let web_dir = format!("{data_arg}/web");
    let out = util::run(&["fold", "--into", "file", "--data", &web_dir], b"");
    util::assert_ok(&out);
    sorted_file(&expected, &model);
    let bases = folded_bases(&data, "web");
    assert_eq!(bases.len(), 1, "the clusters are removed: {bases:?}");
    assert_eq!(
        std::fs::read(&bases[0]).unwrap(),
        std::fs::read(&expected).unwrap()
    );
    let fixed = start(&[&format!("web={}", expected.display())]);
    let live = start(&["--data", data_arg, &spec]);
    same_answers(&fixed, &live, "folded back into a file");
}

#[test]
fn a_cluster_is_refused_for_bases_that_name_their_values() {
    let dir = tempfile::tempdir().unwrap();
    // A UKVS base whose values are not `offset digest`: a cluster, which
    // keeps no header, would read them under those names.
    let base = dir.path().join("base.ukvs");
    std::fs::write(
        &base,
        "!fields {\"keys\":[\"surt\",\"datetime\"],\"values\":[\"filename\",\"offset\",\"digest\"]}\n\
         com,example)/ 20200101000000 a.warc.gz 10 sha1:AAAA {\"url\":\"http://example.com/\"}\n\
         com,example)/b 20200101000000 a.warc.gz 20 sha1:BBBB {\"url\":\"http://example.com/b\"}\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let data_arg = data.to_str().unwrap();
    let spec = format!("web={}", base.display());
    let live = start(&["--data", data_arg, &spec]);
    let agent = agent();
    let (s, answer) = post(
        &agent,
        &live.url("/web"),
        b"com,example)/c 20200101000000 {\"url\": \"http://example.com/c\", \"filename\": \"b.warc.gz\", \"offset\": \"5\"}\n",
    );
    assert_eq!(s, 200, "{answer}");
    let all = "/web/cdx?url=example.com&matchType=domain&limit=0";
    let before = get(&agent, &live.url(all));
    assert_eq!(before.1.lines().count(), 3, "{before:?}");
    let (s, answer) = post(&agent, &live.url("/web/fold?into=cluster"), b"");
    assert_eq!(s, 400, "{answer}");
    assert!(answer.contains("fold into a file"), "{answer}");
    assert!(folded_bases(&data, "web").is_empty());
    assert_eq!(get(&agent, &live.url(all)), before);
    // Into a file, as the bases are: the fold goes through.
    let (s, answer) = post(&agent, &live.url("/web/fold"), b"");
    assert_eq!(s, 200, "{answer}");
    assert_eq!(get(&agent, &live.url(all)), before);
    live.kill();
    let out = util::run(
        &[
            "fold",
            "--into",
            "cluster",
            "--data",
            &format!("{data_arg}/web"),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("fold into a file"), "{said}");
}

#[test]
fn a_folded_directory_is_one_base_labelled_with_the_collection() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xf01d_0000_0003);
    let (mut a, mut b) = (Model::new(), Model::new());
    for i in 0..200 {
        let c = Capture::random(&mut rng);
        let m = if i % 2 == 0 { &mut a } else { &mut b };
        m.insert(c.id(), c.cdxj());
    }
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    sorted_file(&files.join("a.cdxj"), &a);
    sorted_file(&files.join("b.cdxj"), &b);
    let mut model = a;
    model.extend(b);
    let data = dir.path().join("data");
    let spec = format!("web={}", files.display());
    let live = start(&["--data", data.to_str().unwrap(), &spec]);
    churn(&live.url("/web"), &mut rng, &mut model, 60);
    let agent = agent();
    let all = "/web/cdx?url=example&matchType=domain&limit=0&output=json";
    let lines = |body: String| {
        let mut l: Vec<String> = body
            .lines()
            .map(|l| {
                let mut o: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(l).unwrap();
                o.remove("source");
                o.remove("source-coll");
                serde_json::to_string(&o).unwrap()
            })
            .collect();
        l.sort();
        l
    };
    let before = get(&agent, &live.url(all));
    let (s, answer) = post(&agent, &live.url("/web/fold"), b"");
    assert_eq!(s, 200, "{answer}");
    // The same captures; now one base, labelled as a single file is.
    let after = get(&agent, &live.url(all));
    assert_eq!(lines(after.1.clone()), lines(before.1));
    let expected = dir.path().join("expected.cdxj");
    sorted_file(&expected, &model);
    let fixed = start(&[&format!("web={}", expected.display())]);
    assert_eq!(after, get(&agent, &fixed.url(all)));
    assert!(after.1.contains("\"source\": \"web\""), "{}", after.1);
}

/// What became of a batch when the server was killed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fate {
    /// Its POST (or delete) got no answer: all there or none.
    Either,
    /// Added (answered 200), or in the base: all there.
    There,
    /// Deleted (answered 200): none there.
    Gone,
}

#[test]
fn sigkill_during_concurrent_posts_deletes_and_folds_keeps_every_answered_write() {
    const LINES: usize = 20;
    const BASE_BATCHES: usize = 30;
    let dir = tempfile::tempdir().unwrap();
    // The base: batches of writer 9 (hosts w9bB.example).
    let mut base = String::new();
    for b in 0..BASE_BATCHES {
        base.push_str(&batch_body(9, b, LINES).replace("- 2020", "PLACEHOLDER 2020"));
    }
    let mut lines: Vec<String> = base
        .lines()
        .map(|l| {
            let host = l
                .split("http://")
                .nth(1)
                .unwrap()
                .split('/')
                .next()
                .unwrap();
            let key = format!("example,{})/", host.trim_end_matches(".example"));
            let path = l
                .split("\"url\": \"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let i = path.rsplit('/').next().unwrap();
            l.replace("PLACEHOLDER", &format!("{key}{i}"))
        })
        .collect();
    lines.sort();
    let base_file = dir.path().join("base.cdxj");
    std::fs::write(&base_file, lines.join("\n") + "\n").unwrap();
    let data = dir.path().join("data");
    let data_arg = data.to_str().unwrap().to_string();
    let spec = format!("crash={}", base_file.display());

    let fates: Arc<Mutex<BTreeMap<(usize, usize), Fate>>> = Arc::default();
    for b in 0..BASE_BATCHES {
        fates.lock().unwrap().insert((9, b), Fate::There);
    }
    let mut next = [0usize; 2];
    let (rounds, mut rng) = kill_rounds(24, 7);
    let mut folds_answered = 0;
    let started = Instant::now();
    for round in 0..rounds {
        let server = start(&["--data", &data_arg, &spec]);
        let url = server.url("/crash");
        let mut threads = Vec::new();
        for (w, next) in next.iter_mut().enumerate() {
            let fates = fates.clone();
            let url = url.clone();
            let first = *next;
            *next += 1000;
            threads.push(std::thread::spawn(move || {
                let agent = agent();
                let set = |k, f| fates.lock().unwrap().insert(k, f);
                for b in first..first + 1000 {
                    set((w, b), Fate::Either);
                    let body = batch_body(w, b, LINES);
                    match try_post(&agent, &url, body.as_bytes()) {
                        Ok((200, _)) => set((w, b), Fate::There),
                        Ok((s, a)) => panic!("POST answered {s}: {a}"),
                        Err(_) => return,
                    };
                    // Writer 1 deletes every third of its batches, and
                    // one of the base's now and then.
                    if w == 1 && b % 3 == 0 {
                        let (key, body) = if b % 2 == 0 && (b / 6) % 40 < BASE_BATCHES {
                            let k = (9, (b / 6) % 40);
                            (k, batch_body(9, k.1, LINES))
                        } else {
                            ((w, b), body)
                        };
                        if fates.lock().unwrap().get(&key) == Some(&Fate::Gone) {
                            continue;
                        }
                        set(key, Fate::Either);
                        match try_post(&agent, &format!("{url}/delete"), body.as_bytes()) {
                            Ok((200, _)) => set(key, Fate::Gone),
                            Ok((s, a)) => panic!("delete answered {s}: {a}"),
                            Err(_) => return,
                        };
                    }
                }
            }));
        }
        let folder = {
            let url = url.clone();
            std::thread::spawn(move || {
                let agent = agent();
                let mut n = 0;
                loop {
                    // Into a cluster and into a file by turns.
                    let into = ["cluster", "file"][n % 2];
                    match try_post(&agent, &format!("{url}/fold?into={into}"), b"") {
                        Ok((200, _)) => n += 1,
                        Ok((409, _)) => {}
                        Ok((s, a)) => panic!("fold answered {s}: {a}"),
                        Err(_) => return n,
                    }
                }
            })
        };
        std::thread::sleep(Duration::from_millis(150 + rng.below(400)));
        server.kill();
        for t in threads {
            t.join().expect("a writer failed");
        }
        folds_answered += folder.join().expect("the folder failed");
        assert!(
            round < 2 || fates.lock().unwrap().values().any(|f| *f == Fate::There),
            "round {round}: nothing answered"
        );
    }
    assert!(folds_answered > 0, "no fold finished in {rounds} rounds");
    let server = start(&["--data", &data_arg, &spec]);
    let agent = agent();
    let fates = fates.lock().unwrap();
    let (mut must, mut may, mut gone) = (0, 0, 0);
    for (&(w, b), &fate) in fates.iter() {
        let n = crate::live::batch_lines(&agent, &server, w, b);
        match fate {
            Fate::There => {
                assert_eq!(n, LINES, "batch {w}/{b} was answered 200 but has {n} lines");
                must += 1;
            }
            Fate::Gone => {
                assert_eq!(n, 0, "batch {w}/{b} was deleted (200) but has {n} lines");
                gone += 1;
            }
            Fate::Either => {
                assert!(n == 0 || n == LINES, "batch {w}/{b}: {n} of {LINES} lines");
                may += usize::from(n == LINES);
            }
        }
    }
    assert!(gone > 0, "no delete was answered");
    // Nothing else, nothing twice; the lines in order (OutbackCDX's
    // form: pywb's pages a cluster's lines).
    let (_, all) = get(
        &agent,
        &server.url("/crash?url=example&matchType=domain&limit=10000000"),
    );
    let got: Vec<&str> = all.lines().collect();
    assert_eq!(got.len(), (must + may) * LINES);
    let mut sorted = got.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), got.len(), "a line twice");
    eprintln!(
        "{rounds} rounds, {folds_answered} folds answered, {must} batches there, {may} unanswered there, {gone} deleted, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_post_past_the_batch_cap_killed_while_applied_comes_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_arg = data.to_str().unwrap().to_string();
    // About 50 MB: six times the 8 MiB a batch holds.
    const N: usize = 250_000;
    let mut body = String::with_capacity(N * 200);
    for i in 0..N {
        body.push_str(&format!(
            "- 20200101000000 {{\"url\": \"http://h{}.example/page/{i}\", \"mime\": \"text/html\", \"status\": \"200\", \"digest\": \"SHA1ABCDEFGHIJKLMNOPQRSTUVWXYZ2345\", \"length\": \"1234\", \"offset\": \"{i}\", \"filename\": \"big.warc.gz\"}}\n",
            i / 1000
        ));
    }
    let body = Arc::new(body);
    let mut seen_partial = false;
    for attempt in 0..10 {
        let server = start(&["--data", &data_arg]);
        let url = server.url("/big");
        // The collection exists before the large POST.
        let one = "- 20190101000000 {\"url\": \"http://first.example/\", \"offset\": \"0\", \"filename\": \"a.warc.gz\"}\n";
        assert_eq!(post(&agent(), &url, one.as_bytes()).0, 200);
        let poster = {
            let body = body.clone();
            let url = url.clone();
            std::thread::spawn(move || try_post(&agent(), &url, body.as_bytes()).ok())
        };
        // The first line there and the last not yet: the batch is being
        // applied; kill then.
        let agent = agent();
        let first = server.url("/big/cdx?url=http://h0.example/page/0&output=text");
        let last = server.url(&format!(
            "/big/cdx?url=http://h{}.example/page/{}&output=text",
            (N - 1) / 1000,
            N - 1
        ));
        let t0 = Instant::now();
        let mut killed = false;
        while t0.elapsed() < Duration::from_secs(60) {
            let got = get(&agent, &first);
            assert_eq!(got.0, 200, "{got:?}");
            if got.1.is_empty() {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            let got = get(&agent, &last);
            assert_eq!(got.0, 200, "{got:?}");
            if got.1.is_empty() {
                server.kill();
                killed = true;
            }
            break;
        }
        let answered = poster.join().unwrap();
        if !killed {
            // Applied whole before it was seen in part: try again.
            assert!(matches!(answered, Some((200, _))), "{answered:?}");
            std::fs::remove_dir_all(&data).unwrap();
            eprintln!("attempt {attempt}: the POST was applied before a reader saw it in part");
            continue;
        }
        seen_partial = true;
        let server = start(&["--data", &data_arg]);
        let (_, all) = get(
            &agent,
            &server.url("/big/cdx?url=example&matchType=domain&output=text&limit=0&fl=offset"),
        );
        assert_eq!(all.lines().count(), N + 1, "after the restart");
        break;
    }
    assert!(seen_partial, "never caught the POST while it was applied");
}

#[test]
fn a_store_of_the_older_layout_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("old")).unwrap();
    std::fs::write(data.join("old/delta.redb"), b"redb\x1a\x0a\xa9\x0d\x0a").unwrap();
    let out = util::run(&["serve", "--data", data.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("older layout") && said.contains("old"),
        "{said}"
    );
    let out = util::run(&["fold", "--data", data.join("old").to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("older layout"), "{said}");
    let out = util::run(
        &["fold", "--data", data.join("none").to_str().unwrap()],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no live collection"));
}
