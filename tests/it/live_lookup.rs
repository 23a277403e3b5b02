//! `ukvs lookup --data DIR/NAME` (a live collection read offline) with
//! `--digest` and `--resolve-revisits`: the answers of a file holding the
//! collection's lines, bases less deletes plus posts.

use std::collections::BTreeSet;
use std::path::Path;

use crate::serve::{agent, Server};
use crate::util::{self, assert_ok};
use crate::wayback::{generated_lines, post, write_cdx};

/// A live collection made by a server, then stopped: a base file, lines
/// posted and base lines deleted. Gives the base, the data directory
/// and the collection's lines.
fn live(tmp: &Path) -> (String, String, Vec<String>) {
    let lines = generated_lines(0x00d1_9e57, 600);
    // A capture is stored once: lines with copies stay in the base.
    let (base, posted): (Vec<String>, Vec<String>) = lines
        .iter()
        .cloned()
        .partition(|l| l.len() % 2 == 0 || lines.iter().filter(|m| *m == l).count() > 1);
    let gone: Vec<String> = base.iter().step_by(9).cloned().collect();
    let base_file = tmp.join("base.cdx");
    write_cdx(&base_file, &base);
    let data = tmp.join("data");
    let server = Server::start(&[
        format!("l={}", base_file.display()),
        "--data".into(),
        data.display().to_string(),
        "-q".into(),
    ]);
    let http = agent();
    post(&http, &server.url("/l"), &posted);
    post(&http, &server.url("/l/delete"), &gone);
    server.kill();
    let mut now: Vec<String> = base
        .iter()
        .filter(|l| !gone.contains(l))
        .cloned()
        .chain(posted)
        .collect();
    now.sort();
    (
        base_file.display().to_string(),
        data.join("l").display().to_string(),
        now,
    )
}

fn stdout(args: &[&str]) -> String {
    let out = util::run(args, b"");
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `--digest` over a live collection: the digest file of its base less
/// what its delta deleted, with what was posted, oldest first; equal to
/// the digest lookup of a file of its lines.
#[test]
fn live_lookup_by_digest_answers_as_a_file_of_its_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, data, now) = live(tmp.path());
    let base_digests = tmp.path().join("base.digests").display().to_string();
    assert_ok(&util::run(
        &["digests", "-q", &base, "-o", &base_digests],
        b"",
    ));
    let all = tmp.path().join("all.cdx");
    write_cdx(&all, &now);
    let all_digests = tmp.path().join("all.digests").display().to_string();
    let all = all.display().to_string();
    assert_ok(&util::run(
        &["digests", "-q", &all, "-o", &all_digests],
        b"",
    ));
    for digest in ["AAAA", "BBBB", "CCCC"] {
        let d = format!("sha1:{digest}{}", "Q".repeat(28));
        let got = stdout(&["lookup", &base_digests, "--digest", &d, "--data", &data]);
        let want = stdout(&["lookup", &all_digests, "--digest", &d]);
        if got != want {
            let g: BTreeSet<&str> = got.lines().collect();
            let w: BTreeSet<&str> = want.lines().collect();
            let extra: Vec<_> = g.difference(&w).take(3).collect();
            let missing: Vec<_> = w.difference(&g).take(3).collect();
            panic!(
                "{d}: {} lines, {} wanted; extra {extra:?}; missing {missing:?}",
                got.lines().count(),
                want.lines().count()
            );
        }
        // One line a line of the collection (copies too).
        let n = now.iter().filter(|l| l.contains(&d[5..])).count();
        assert!(n > 50, "{d}");
        assert_eq!(got.lines().count(), n, "{d}");
        // Without the delta, the base's captures, deleted ones too.
        let base_only = stdout(&["lookup", &base_digests, "--digest", &d]);
        assert_ne!(base_only, got, "{d}");
    }
}

/// `--resolve-revisits` over a live collection resolves as over a file
/// of its lines (originals posted, or left in the base).
#[test]
fn live_lookup_resolves_revisits_as_a_file_of_its_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, data, now) = live(tmp.path());
    let all = tmp.path().join("all.cdx");
    write_cdx(&all, &now);
    let all = all.display().to_string();
    let mut resolved = BTreeSet::new();
    for (url, m) in [
        ("example.com", "domain"),
        ("http://example.com/a", "exact"),
        ("other.org/", "prefix"),
    ] {
        let got = stdout(&[
            "lookup",
            &base,
            url,
            "--match",
            m,
            "--data",
            &data,
            "--resolve-revisits",
            "--output",
            "json",
        ]);
        let want = stdout(&[
            "lookup",
            &all,
            url,
            "--match",
            m,
            "--resolve-revisits",
            "--output",
            "json",
        ]);
        assert!(got.lines().count() > 10, "{url}");
        assert_eq!(got, want, "{url}");
        for l in got.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v["orig.offset"].as_str().is_some_and(|o| o != "-") {
                resolved.insert(l.to_string());
            }
        }
    }
    assert!(resolved.len() > 10, "{} revisits resolved", resolved.len());
}
