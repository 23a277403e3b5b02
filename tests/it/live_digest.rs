//! Digest lookups (`/NAME/digest`) of live collections: POSTs, deletes
//! and replacements of captures are seen at once, over a base file and
//! its digest file and over a delta alone, after a SIGKILL, after folds
//! and a restart after one; every answer equals a scan of the model's
//! captures for that digest, oldest first.

use std::collections::BTreeMap;

use crate::live::{agent, get, post, start, Rng};
use crate::util;

/// A capture of the model: its line (CDX11, keyed as the server keys
/// it) and its digest.
#[derive(Clone)]
struct Cap {
    key: String,
    datetime: String,
    filename: String,
    offset: u64,
    url: String,
    digest: String,
}

type Id = (String, String, String, u64);

impl Cap {
    fn id(&self) -> Id {
        (
            self.key.clone(),
            self.datetime.clone(),
            self.filename.clone(),
            self.offset,
        )
    }

    fn cdx11(&self) -> String {
        format!(
            "{} {} {} text/html 200 {} - - 500 {} {}",
            self.key, self.datetime, self.url, self.digest, self.offset, self.filename
        )
    }
}

/// One of `n` payload digests: 32 base32 letters (a SHA-1).
fn digest(n: u64) -> String {
    const B32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut s = String::new();
    let mut v = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for i in 0..32 {
        s.push(B32[(v % 32) as usize] as char);
        v = v.rotate_right(5) ^ (i + n);
    }
    s
}

/// A capture of one of a few URLs, with one of a few digests (so that a
/// payload is found at several URLs).
fn random_cap(rng: &mut Rng, digests: u64) -> Cap {
    let (host, path) = (rng.below(4), rng.below(6));
    Cap {
        key: format!("example,host{host})/p{path}"),
        datetime: format!(
            "20{:02}{:02}{:02}{:02}0000",
            10 + rng.below(10),
            1 + rng.below(12),
            1 + rng.below(28),
            rng.below(24)
        ),
        filename: format!("crawl-{}.warc.gz", rng.below(3)),
        offset: rng.below(30) * 1000,
        url: format!("http://host{host}.example/p{path}"),
        digest: digest(rng.below(digests)),
    }
}

/// The captures `/NAME/digest` gives for `d`: (id, datetime order kept).
fn served(agent: &ureq::Agent, base: &str, d: &str) -> Vec<Id> {
    let (status, body) = get(
        agent,
        &format!("{base}/digest?digest=sha1:{d}&output=json&fl=urlkey,timestamp,filename,offset"),
    );
    assert_eq!(status, 200, "{body}");
    body.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (
                s("urlkey"),
                s("timestamp"),
                s("filename"),
                s("offset").parse().unwrap(),
            )
        })
        .collect()
}

/// Every digest of `digests`: the server's answer is the model's
/// captures of that digest, oldest first.
fn check(agent: &ureq::Agent, base: &str, model: &BTreeMap<Id, Cap>, digests: u64, when: &str) {
    for n in 0..digests {
        let d = digest(n);
        let got = served(agent, base, &d);
        let mut want: Vec<&Cap> = model.values().filter(|c| c.digest == d).collect();
        want.sort_by(|a, b| a.datetime.cmp(&b.datetime));
        let datetimes: Vec<&str> = got.iter().map(|id| id.1.as_str()).collect();
        let mut sorted = datetimes.clone();
        sorted.sort();
        assert_eq!(datetimes, sorted, "{when}: {d} not oldest first");
        let mut got_ids = got.clone();
        got_ids.sort();
        let mut want_ids: Vec<Id> = want.iter().map(|c| c.id()).collect();
        want_ids.sort();
        assert_eq!(got_ids, want_ids, "{when}: digest {d}");
    }
}

/// Random POSTs (new captures, and captures of the model posted again
/// with another digest) and deletes (of base and delta captures, and of
/// captures not there) on `base`, kept in `model`.
fn mutate(
    agent: &ureq::Agent,
    base: &str,
    model: &mut BTreeMap<Id, Cap>,
    rng: &mut Rng,
    digests: u64,
) {
    for _ in 0..40 {
        let mut lines = vec![" CDX N b a m s k r M S V g".to_string()];
        match rng.below(3) {
            0 | 1 => {
                for _ in 0..1 + rng.below(8) {
                    let mut c = random_cap(rng, digests);
                    if rng.below(3) == 0 && !model.is_empty() {
                        // A capture there already, replaced by one of
                        // another digest.
                        let i = rng.below(model.len() as u64) as usize;
                        let old = model.values().nth(i).unwrap().clone();
                        c = Cap {
                            digest: digest(rng.below(digests)),
                            ..old
                        };
                    }
                    lines.push(c.cdx11());
                    model.insert(c.id(), c);
                }
                let (status, answer) = post(agent, base, lines.join("\n").as_bytes());
                assert_eq!(status, 200, "{answer}");
            }
            _ => {
                for _ in 0..1 + rng.below(4) {
                    let c = if rng.below(4) > 0 && !model.is_empty() {
                        let i = rng.below(model.len() as u64) as usize;
                        model.values().nth(i).unwrap().clone()
                    } else {
                        random_cap(rng, digests)
                    };
                    lines.push(c.cdx11());
                    model.remove(&c.id());
                }
                let url = format!("{base}/delete");
                let (status, answer) = post(agent, &url, lines.join("\n").as_bytes());
                assert_eq!(status, 200, "{answer}");
            }
        }
    }
}

#[test]
fn a_live_collections_digest_lookups_follow_its_posts_and_deletes() {
    const DIGESTS: u64 = 12;
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(7);
    // A base of 120 captures and its digest file.
    let mut model: BTreeMap<Id, Cap> = BTreeMap::new();
    for _ in 0..120 {
        let c = random_cap(&mut rng, DIGESTS);
        model.insert(c.id(), c);
    }
    let mut lines: Vec<String> = model.values().map(Cap::cdx11).collect();
    lines.sort();
    let index = dir.path().join("base.cdx");
    let text = format!(" CDX N b a m s k r M S V g\n{}\n", lines.join("\n"));
    std::fs::write(&index, text).unwrap();
    let digests = dir.path().join("base.digests");
    let (idx, dig) = (
        index.to_str().unwrap().to_string(),
        digests.to_str().unwrap().to_string(),
    );
    util::assert_ok(&util::run(&["digests", "-q", &idx, "-o", &dig], b""));
    let data = dir.path().join("data");
    let args = [
        "--data".to_string(),
        data.to_str().unwrap().to_string(),
        format!("c={idx}"),
        format!("c=digests:{dig}"),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let agent = agent();

    let server = start(&args);
    let base = server.url("/c");
    check(&agent, &base, &model, DIGESTS, "the base alone");
    mutate(&agent, &base, &mut model, &mut rng, DIGESTS);
    check(&agent, &base, &model, DIGESTS, "after writes");
    // Killed: every answered write is there after a restart.
    server.kill();
    let server = start(&args);
    let base = server.url("/c");
    check(&agent, &base, &model, DIGESTS, "after SIGKILL");
    mutate(&agent, &base, &mut model, &mut rng, DIGESTS);
    check(&agent, &base, &model, DIGESTS, "after more writes");
    // Folded into a new base: the same answers, and writes go on.
    let (status, answer) = post(&agent, &format!("{base}/fold"), b"");
    assert_eq!(status, 200, "{answer}");
    check(&agent, &base, &model, DIGESTS, "after a fold");
    mutate(&agent, &base, &mut model, &mut rng, DIGESTS);
    check(&agent, &base, &model, DIGESTS, "writes after a fold");
    server.kill();
    let server = start(&args);
    let base = server.url("/c");
    check(&agent, &base, &model, DIGESTS, "a restart after a fold");
    let (status, answer) = post(&agent, &format!("{base}/fold"), b"");
    assert_eq!(status, 200, "{answer}");
    check(&agent, &base, &model, DIGESTS, "after a second fold");
    // Each fold keeps its generations' digest partitions, and past
    // eight merges them all into one: the answers stay, a restart too.
    for fold in 3..=11 {
        mutate(&agent, &base, &mut model, &mut rng, DIGESTS);
        let (status, answer) = post(&agent, &format!("{base}/fold"), b"");
        assert_eq!(status, 200, "{answer}");
        check(
            &agent,
            &base,
            &model,
            DIGESTS,
            &format!("after fold {fold}"),
        );
    }
    let merged = std::fs::read_dir(data.join("c/store/partitions"))
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().starts_with("dig_base_"));
    assert!(merged, "the digest partitions were merged");
    server.kill();
    let server = start(&args);
    let base = server.url("/c");
    check(
        &agent,
        &base,
        &model,
        DIGESTS,
        "a restart after eleven folds",
    );

    // A delta alone (a collection a POST created) answers too, folded
    // or not.
    let mut alone: BTreeMap<Id, Cap> = BTreeMap::new();
    let fresh = server.url("/fresh");
    mutate(&agent, &fresh, &mut alone, &mut rng, DIGESTS);
    check(&agent, &fresh, &alone, DIGESTS, "a delta alone");
    let (status, answer) = post(&agent, &format!("{fresh}/fold"), b"");
    assert_eq!(status, 200, "{answer}");
    check(&agent, &fresh, &alone, DIGESTS, "a delta alone folded");
    mutate(&agent, &fresh, &mut alone, &mut rng, DIGESTS);
    check(
        &agent,
        &fresh,
        &alone,
        DIGESTS,
        "a delta alone folded, then written",
    );
}

/// `--no-digest-index`: the collections a server makes keep no digest
/// index (the store says so for its life, whatever a later server is
/// given), serve their lines as any other, fold, and answer a digest
/// lookup with 400 and why; a collection made by a server without the
/// option indexes its digests.
#[test]
fn a_collection_made_without_a_digest_index_says_so_and_serves_on() {
    const DIGESTS: u64 = 5;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let agent = agent();
    let mut rng = Rng(11);
    let refused = |base: &str, when: &str| {
        let (status, body) = get(&agent, &format!("{base}/digest?digest=sha1:{}", digest(0)));
        assert_eq!(status, 400, "{when}: {body}");
        assert!(
            body.contains("no index of its live captures' digests"),
            "{when}: {body}"
        );
    };
    let lookups = |base: &str, model: &BTreeMap<Id, Cap>, when: &str| {
        for c in model.values() {
            let (status, body) = get(
                &agent,
                &format!(
                    "{base}/cdx?url={}&output=json&fl=urlkey,timestamp,digest",
                    c.url
                ),
            );
            assert_eq!(status, 200, "{when}: {body}");
            let want = format!(
                r#"{{"urlkey": "{}", "timestamp": "{}", "digest": "{}"}}"#,
                c.key, c.datetime, c.digest
            );
            assert!(body.contains(&want), "{when}: {want} not in {body}");
        }
    };

    let server = start(&["--data", data, "--no-digest-index"]);
    let plain = server.url("/plain");
    let mut model: BTreeMap<Id, Cap> = BTreeMap::new();
    mutate(&agent, &plain, &mut model, &mut rng, DIGESTS);
    assert!(!model.is_empty());
    lookups(&plain, &model, "made without the index");
    refused(&plain, "made without the index");
    let (status, answer) = post(&agent, &format!("{plain}/fold"), b"");
    assert_eq!(status, 200, "{answer}");
    lookups(&plain, &model, "folded");
    refused(&plain, "folded");
    server.kill();

    // A server without the option: the collection keeps its choice, and
    // one it makes indexes.
    let server = start(&["--data", data]);
    let plain = server.url("/plain");
    refused(&plain, "reopened without the option");
    mutate(&agent, &plain, &mut model, &mut rng, DIGESTS);
    lookups(&plain, &model, "written after the reopen");
    let indexed = server.url("/indexed");
    let mut other: BTreeMap<Id, Cap> = BTreeMap::new();
    mutate(&agent, &indexed, &mut other, &mut rng, DIGESTS);
    check(
        &agent,
        &indexed,
        &other,
        DIGESTS,
        "made by a server without the option",
    );
}
