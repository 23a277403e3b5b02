//! ARC revision-3.0 files (seed 000): the proposal's own example records
//! (`rev3-proposal.arc`) and files of `scripts/gen_arc_rev3.py` checked
//! against its truth, in every profile.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util;

/// One row of the generator's truth.
#[derive(Debug, Clone)]
struct Truth {
    offset: u64,
    length: u64,
    role: String,
    url: String,
    datetime: String,
    serial: String,
    digest: String,
    mime: String,
    status: String,
    refers_to: String,
    ari: String,
    damage: String,
}

fn read_truth(path: &Path) -> Vec<Truth> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 12, "truth line {l:?}");
            Truth {
                offset: f[0].parse().unwrap(),
                length: f[1].parse().unwrap(),
                role: f[2].into(),
                url: f[3].into(),
                datetime: f[4].into(),
                serial: f[5].into(),
                digest: f[6].into(),
                mime: f[7].into(),
                status: f[8].into(),
                refers_to: f[9].into(),
                ari: f[10].into(),
                damage: f[11].into(),
            }
        })
        .collect()
}

/// `ukvs index ARGS FILE` (without sorting): exit code, lines, stderr.
fn index(file: &Path, args: &[&str]) -> (Option<i32>, Vec<String>, String) {
    let mut all = vec!["index", "--no-sort", "-q"];
    all.extend_from_slice(args);
    all.push(file.to_str().unwrap());
    let o = util::run(&all, b"");
    let lines = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('!') && !l.starts_with(" CDX"))
        .map(String::from)
        .collect();
    (
        o.status.code(),
        lines,
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// The `ukvs` lines of `file` by offset: (key, datetime, digest, OSLJ).
fn ukvs_by_offset(lines: &[String]) -> BTreeMap<u64, (String, String, String, Value)> {
    lines
        .iter()
        .filter(|l| !l.starts_with("filedesc:"))
        .map(|l| {
            let mut f = l.splitn(5, ' ');
            let key = f.next().unwrap().to_string();
            let dt = f.next().unwrap().to_string();
            let off: u64 = f.next().unwrap().parse().unwrap();
            let digest = f.next().unwrap().to_string();
            let json: Value = serde_json::from_str(f.next().unwrap()).unwrap();
            (off, (key, dt, digest, json))
        })
        .collect()
}

fn surt(url: &str) -> String {
    String::from_utf8(ukvs::surt::key(url.as_bytes(), &ukvs::surt::Options::default()).0).unwrap()
}

fn is_capture(role: &str) -> bool {
    matches!(role, "content" | "revisit" | "transform")
}

/// Every truth row against the `ukvs`, `cdxj` and `cdx11` lines of `file`.
fn check_against_truth(file: &Path, truth: &[Truth]) {
    let shown = file.display();
    let damaged: Vec<u64> = truth
        .iter()
        .filter(|t| !t.damage.is_empty())
        .map(|t| t.offset)
        .collect();

    // ukvs, every record.
    let (code, lines, err) = index(file, &["--all-records"]);
    assert_eq!(code, Some(0), "{shown}: {err}");
    let got = ukvs_by_offset(&lines);
    assert_eq!(got.len(), truth.len(), "{shown}: one line per record");
    for t in truth {
        let (key, dt, digest, j) = &got[&t.offset];
        let at = format!("{shown}: offset {}", t.offset);
        assert_eq!(key, &surt(&t.url), "{at}: filed under the described URL");
        assert!(!key.starts_with("ari"), "{at}: an ari is never a key");
        assert_eq!(dt, &t.datetime, "{at}");
        assert_eq!(digest, &format!("sha1:{}", t.digest), "{at}");
        assert_eq!(j["url"], t.url, "{at}");
        assert_eq!(j["length"], t.length, "{at}");
        assert_eq!(j["serial"], t.serial, "{at}");
        assert_eq!(j["mime"], t.mime, "{at}");
        match t.status.as_str() {
            "" => assert!(j.get("status").is_none(), "{at}"),
            s => assert_eq!(j["status"].to_string(), s, "{at}"),
        }
        let record_type = match t.role.as_str() {
            "content" | "revisit" => Value::Null,
            "duplicate" => "metadata".into(),
            r => r.into(),
        };
        assert_eq!(
            j.get("record_type").cloned().unwrap_or(Value::Null),
            record_type,
            "{at}"
        );
        let ari_field = if t.role == "transform" {
            "replaces"
        } else {
            "describes"
        };
        match t.ari.as_str() {
            "" => assert!(
                j.get("describes").is_none() && j.get("replaces").is_none(),
                "{at}"
            ),
            ari => assert_eq!(j[ari_field], ari, "{at}"),
        }
        if t.role == "revisit" {
            let uri = if t.refers_to.starts_with("ari:") {
                // The ari's URL part: after its first two `;`.
                t.refers_to.splitn(3, ';').nth(2).unwrap()
            } else {
                &t.refers_to
            };
            assert_eq!(
                j["refers_to_uri"], uri,
                "{at}: the duplicate record's pointer"
            );
            if t.refers_to.starts_with("ari:") {
                assert_eq!(j["refers_to"], t.refers_to, "{at}");
                assert_eq!(j["refers_to_date"], t.refers_to[4..18], "{at}");
            }
        }
    }

    // ukvs by default: the captures only.
    let (code, lines, err) = index(file, &[]);
    assert_eq!(code, Some(0), "{shown}: {err}");
    let got = ukvs_by_offset(&lines);
    let want: Vec<u64> = truth
        .iter()
        .filter(|t| is_capture(&t.role))
        .map(|t| t.offset)
        .collect();
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), want, "{shown}");

    // --verify-digests reports exactly the damaged checksums, by offset.
    let (code, _, err) = index(file, &["--verify-digests", "--all-records"]);
    let reported: Vec<u64> = err
        .lines()
        .filter(|l| l.contains("the checksum is"))
        .map(|l| {
            let rest = l.split("offset ").nth(1).unwrap();
            rest.split(':').next().unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(reported, damaged, "{shown}: {err}");
    assert_eq!(
        code,
        Some(if damaged.is_empty() { 0 } else { 2 }),
        "{shown}"
    );

    // cdxj and cdx11: the same captures, keyed alike; revisits typed.
    for profile in ["cdxj", "cdx11"] {
        for all in [false, true] {
            let mut args = vec!["--format", profile];
            if all {
                args.push("--all-records");
            }
            let (code, lines, err) = index(file, &args);
            assert_eq!(code, Some(0), "{shown} {profile}: {err}");
            let want: Vec<&Truth> = truth
                .iter()
                .filter(|t| all || is_capture(&t.role))
                .collect();
            let lines: Vec<&String> = lines
                .iter()
                .filter(|l| !l.starts_with("filedesc:"))
                .collect();
            assert_eq!(lines.len(), want.len(), "{shown} {profile} all={all}");
            for (line, t) in lines.iter().zip(&want) {
                let key = line.split(' ').next().unwrap();
                assert_eq!(key, surt(&t.url), "{shown} {profile}: {line}");
                let revisit_mime = if profile == "cdxj" {
                    line.contains("\"mime\": \"warc/revisit\"")
                } else {
                    line.split(' ').nth(3) == Some("warc/revisit")
                };
                assert_eq!(
                    revisit_mime,
                    t.role == "revisit",
                    "{shown} {profile}: {line}"
                );
                assert!(line.contains(&t.digest), "{shown} {profile}: {line}");
            }
        }
    }
}

#[test]
fn generated_rev3_file_matches_its_truth() {
    let data = util::data_dir().join("arc");
    let truth = read_truth(&data.join("rev3-generated.tsv"));
    assert!(truth.iter().any(|t| !t.damage.is_empty()));
    for role in [
        "content",
        "request",
        "metadata",
        "duplicate",
        "revisit",
        "transform",
    ] {
        assert!(
            truth.iter().any(|t| t.role == role),
            "the fixture has no {role}"
        );
    }
    check_against_truth(&data.join("rev3-generated.arc.gz"), &truth);
}

/// Runs the generator; `None` (with a message) when python3 cannot run.
fn generate(test: &str, dir: &Path, name: &str, args: &[&str]) -> Option<(PathBuf, Vec<Truth>)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen_arc_rev3.py");
    let out = dir.join(name);
    let truth = dir.join(format!("{name}.tsv"));
    let run = Command::new("python3")
        .arg(&script)
        .arg("--out")
        .arg(&out)
        .arg("--truth")
        .arg(&truth)
        .args(args)
        .output();
    match run {
        Ok(o) if o.status.success() => Some((out.clone(), read_truth(&truth))),
        Ok(o) => panic!(
            "gen_arc_rev3.py failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => {
            eprintln!("SKIPPED {test}: cannot run python3: {e}");
            None
        }
    }
}

#[test]
fn generated_rev3_files_of_every_kind_match_their_truth() {
    let dir = tempfile::tempdir().unwrap();
    let kinds: [(&str, &[&str]); 4] = [
        ("a.arc", &["--captures", "300", "--seed", "1", "--damage"]),
        ("b.arc.gz", &["--captures", "300", "--seed", "2"]),
        (
            "c.arc",
            &[
                "--captures",
                "200",
                "--seed",
                "3",
                "--covers",
                "content",
                "--damage",
            ],
        ),
        // Serials roll over at FFF within one file.
        ("d.arc", &["--captures", "2000", "--seed", "4"]),
    ];
    for (name, args) in kinds {
        let test = "generated_rev3_files_of_every_kind_match_their_truth";
        let Some((file, truth)) = generate(test, dir.path(), name, args) else {
            return;
        };
        if name == "d.arc" {
            let serials: Vec<&str> = truth.iter().map(|t| t.serial.as_str()).collect();
            let wraps = serials.windows(2).filter(|w| w == &["FFF", "000"]).count();
            assert!(wraps >= 1, "the serials never roll over");
        }
        check_against_truth(&file, &truth);
    }
}

/// The proposal's own records, each with what the proposal says of it.
#[test]
fn proposal_examples() {
    let file = util::data_dir().join("arc/rev3-proposal.arc");
    let (code, lines, err) = index(&file, &["--all-records", "--verify-digests"]);
    assert_eq!(code, Some(0), "{err}");
    let got: Vec<(String, String, Value)> = ukvs_by_offset(&lines)
        .into_values()
        .map(|(k, d, _, j)| (k, d, j))
        .collect();
    let find = |dt: &str| {
        got.iter()
            .find(|(_, d, _)| d == dt)
            .unwrap_or_else(|| panic!("{dt}"))
    };
    let home = "org,archive)/index.html";
    let doc = "org,archive)/mydocument.doc";
    // The response, its metadata and its request, all under its key.
    let (k, _, j) = find("20040724100457");
    assert_eq!(
        (k.as_str(), &j["mime"], &j["status"], &j["serial"]),
        (home, &"text/html".into(), &200.into(), &"1FE".into())
    );
    let (k, _, _) = find("20040724100888");
    assert!(k == home || k == doc);
    let metadata = got
        .iter()
        .filter(|(_, _, j)| j["record_type"] == "metadata")
        .count();
    assert_eq!(metadata, 3, "metadata, duplicate and transform metadata");
    let (k, _, j) = find("20040724100999");
    assert_eq!(
        (k.as_str(), &j["record_type"], &j["serial"]),
        (home, &"request".into(), &"200".into())
    );
    // The head-only response of duplicate reduction is a revisit pointed
    // at its original by the duplicate record that follows it.
    let (k, _, j) = find("20040724104444");
    assert_eq!(k, home);
    assert_eq!(j["mime"], "warc/revisit");
    assert_eq!(j["status"], 200);
    assert_eq!(j["refers_to_uri"], "http://www.archive.org/index.html");
    let (k, _, j) = find("20040724105555");
    assert_eq!((k.as_str(), &j["record_type"]), (home, &"metadata".into()));
    assert_eq!(
        j["describes"],
        "ari:20040724104444;210;http://www.archive.org/index.html"
    );
    // The transformed document, filed under the original's key with its
    // own date, and its transform metadata (a nested ari).
    let transform: Vec<&(String, String, Value)> = got
        .iter()
        .filter(|(_, _, j)| j["record_type"] == "transform")
        .collect();
    assert_eq!(transform.len(), 1);
    let (k, dt, j) = transform[0];
    assert_eq!((k.as_str(), dt.as_str()), (doc, "20040724100888"));
    assert_eq!(j["mime"], "application/openoffice.org");
    assert_eq!(
        j["replaces"],
        "ari:20040724100457;1FE;http://www.archive.org/mydocument.doc"
    );
    let (k, _, j) = find("20040724109999");
    assert_eq!((k.as_str(), &j["record_type"]), (doc, &"metadata".into()));
    assert_eq!(
        j["describes"],
        "ari:20040724100888;200;ari:20040724100457;1FE;http://www.archive.org/mydocument.doc"
    );
    // By default only the captures: two responses, the revisit, the
    // transformed copy.
    let (_, lines, _) = self::index(&file, &[]);
    assert_eq!(ukvs_by_offset(&lines).len(), 4);
}
