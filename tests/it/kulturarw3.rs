//! Kulturarw3 trees from `scripts/gen_kulturarw3.py`, read with the library
//! and checked against the generator's `truth.tsv`; the format's own
//! example from `tests/data/kulturarw3`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ukvs::kulturarw3::{check_path, looks_like_object, objects, parse_tree_path, Error};

/// One line of `truth.tsv`.
#[derive(Debug, Clone)]
struct Truth {
    path: String,
    offset: u64,
    length: u64,
    url: String,
    datetime: String,
    sha1: String,
    mime: String,
    status: String,
    damage: String,
    ip: String,
    redirect: String,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen_kulturarw3.py")
}

/// Runs the generator into `out`; `false` (with a message) when python3
/// cannot be started.
fn generate(test: &str, out: &Path, args: &[&str]) -> bool {
    let run = Command::new("python3")
        .arg(script())
        .arg("--out")
        .arg(out)
        .args(args)
        .output();
    match run {
        Ok(o) if o.status.success() => true,
        Ok(o) => panic!(
            "gen_kulturarw3.py failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => {
            eprintln!("SKIPPED {test}: cannot run python3: {e}");
            false
        }
    }
}

fn truth(out: &Path) -> Vec<Truth> {
    let tsv = std::fs::read_to_string(out.join("truth.tsv")).unwrap();
    tsv.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 11, "{l}");
            Truth {
                path: f[0].to_string(),
                offset: f[1].parse().unwrap(),
                length: f[2].parse().unwrap(),
                url: f[3].to_string(),
                datetime: f[4].to_string(),
                sha1: f[5].to_string(),
                mime: f[6].to_string(),
                status: f[7].to_string(),
                damage: f[8].to_string(),
                ip: f[9].to_string(),
                redirect: f[10].to_string(),
            }
        })
        .collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What the reader gives for one object, as truth.tsv writes it.
#[derive(Debug, PartialEq)]
struct Got {
    length: u64,
    url: String,
    datetime: String,
    sha1: String,
    mime: String,
    status: String,
    ip: String,
    redirect: String,
    md5_ok: Option<bool>,
}

#[test]
fn generated_tree_matches_truth() {
    let test = "kulturarw3::generated_tree_matches_truth";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tree");
    let args = [
        "--objects",
        "400",
        "--seed",
        "16",
        "--concatenated",
        "40",
        "--damage",
    ];
    if !generate(test, &out, &args) {
        return;
    }
    let rows = truth(&out);
    assert_eq!(rows.len(), 400);
    let mut by_file: BTreeMap<&str, Vec<&Truth>> = BTreeMap::new();
    for t in &rows {
        by_file.entry(&t.path).or_default().push(t);
    }
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for (path, want) in &by_file {
        let data = std::fs::read(out.join(path)).unwrap();
        let tree = parse_tree_path(path.as_bytes()).expect("a tree path");
        let mut got = BTreeMap::new();
        let mut errors = Vec::new();
        for item in objects(&data) {
            match item {
                Ok(o) => {
                    // Every object agrees with its path (later objects of a
                    // concatenated file only on the host).
                    let mismatches = check_path(&tree, &o);
                    assert!(mismatches.is_empty(), "{path}: {mismatches:?}");
                    let g = Got {
                        length: o.length,
                        url: text(o.url),
                        datetime: o.datetime.map_or("-".into(), |d| text(&d)),
                        sha1: text(&o.sha1_base32()),
                        mime: o.mime.map_or("-".into(), text),
                        status: o.status.map_or("-".into(), |s| s.to_string()),
                        ip: o.ip.map_or(String::new(), text),
                        redirect: o.redirect.map_or(String::new(), text),
                        md5_ok: o.md5_ok(),
                    };
                    got.insert(o.offset, g);
                }
                Err(e) => errors.push(e),
            }
        }
        if want[0].damage != "truncated" {
            let head = &data[..data.len().min(8192)];
            assert!(looks_like_object(head), "{path} not sniffed");
        }
        for t in want {
            *kinds.entry(&t.damage).or_default() += 1;
            let at = |e: &Error| e.offset() == t.offset;
            match t.damage.as_str() {
                "" | "md5_mismatch" => {
                    let g = got
                        .get(&t.offset)
                        .unwrap_or_else(|| panic!("{path}: no object at {}: {errors:?}", t.offset));
                    let sound = t.damage.is_empty();
                    let want = Got {
                        length: t.length,
                        url: t.url.clone(),
                        datetime: t.datetime.clone(),
                        sha1: t.sha1.clone(),
                        mime: t.mime.clone(),
                        status: t.status.clone(),
                        ip: t.ip.clone(),
                        redirect: t.redirect.clone(),
                        md5_ok: Some(sound),
                    };
                    assert_eq!(g, &want, "{path} at {}", t.offset);
                    let reported = errors
                        .iter()
                        .any(|e| at(e) && matches!(e, Error::Md5Mismatch { .. }));
                    assert_eq!(reported, !sound, "{path} at {}: {errors:?}", t.offset);
                }
                "truncated" => {
                    assert!(
                        errors.contains(&Error::Truncated {
                            offset: t.offset,
                            length: t.length
                        }),
                        "{path} at {}: {errors:?}",
                        t.offset
                    );
                    assert!(!got.contains_key(&t.offset));
                }
                "missing_close" => {
                    assert!(
                        errors.contains(&Error::MissingCloseDelimiter {
                            offset: t.offset,
                            length: t.length
                        }),
                        "{path} at {}: {errors:?}",
                        t.offset
                    );
                    assert!(!got.contains_key(&t.offset));
                }
                other => panic!("unknown damage kind {other:?}"),
            }
        }
        // Nothing more than the truth: one object per row left whole, one
        // error per damaged row.
        let kept = want
            .iter()
            .filter(|t| t.damage.is_empty() || t.damage == "md5_mismatch")
            .count();
        assert_eq!(got.len(), kept, "{path}");
        let damaged = want.iter().filter(|t| !t.damage.is_empty()).count();
        assert_eq!(errors.len(), damaged, "{path}: {errors:?}");
    }
    // The seed and size above give every damage kind and several
    // concatenated files.
    for kind in ["", "truncated", "missing_close", "md5_mismatch"] {
        assert!(
            kinds.get(kind).is_some_and(|&n| n > 0),
            "no {kind:?} in {kinds:?}"
        );
    }
    assert!(by_file.values().filter(|v| v.len() > 1).count() >= 20);
}

#[test]
fn generator_is_deterministic() {
    let test = "kulturarw3::generator_is_deterministic";
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--objects",
        "40",
        "--seed",
        "5",
        "--concatenated",
        "4",
        "--damage",
    ];
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    if !generate(test, &a, &args) || !generate(test, &b, &args) {
        return;
    }
    let ta = std::fs::read(a.join("truth.tsv")).unwrap();
    assert_eq!(ta, std::fs::read(b.join("truth.tsv")).unwrap());
    for t in truth(&a) {
        let x = std::fs::read(a.join(&t.path)).unwrap();
        assert_eq!(x, std::fs::read(b.join(&t.path)).unwrap(), "{}", t.path);
    }
}

#[test]
fn seed_example_fixture() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kulturarw3/seed004-example.k3");
    let data = std::fs::read(path).unwrap();
    assert!(looks_like_object(&data));
    let items: Vec<_> = objects(&data).collect();
    assert_eq!(items.len(), 2, "{items:?}");
    let o = items[0].as_ref().unwrap();
    assert_eq!((o.offset, o.length), (0, data.len() as u64));
    assert_eq!(o.url, b"http://www.kb.se/ls/fjarr.htm");
    assert_eq!(&o.datetime.unwrap(), b"19971001155858");
    assert_eq!(&o.sha1_base32(), b"PEJEIQRP2MV7UBJ5OKHRZ2P2LHLVE73X");
    // The example's content is abridged, so its MD5 cannot match.
    assert!(matches!(
        items[1],
        Err(Error::Md5Mismatch { offset: 0, .. })
    ));
}
